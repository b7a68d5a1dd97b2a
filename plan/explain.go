package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/flinksql/flinksql/sql/parser"
)

// Explain renders the plan of an EXPLAIN statement: the optimized physical
// plan (with the changelog mode of every node when CHANGELOG_MODE is asked
// for) and the execution plan.
func (p *Planner) Explain(st *parser.Explain) (string, error) {
	changelog := false
	for _, d := range st.Details {
		switch d {
		case "CHANGELOG_MODE":
			changelog = true
		case "ESTIMATED_COST", "JSON_EXECUTION_PLAN", "PLAN_ADVICE":
			return "", &UnsupportedError{Msg: "EXPLAIN " + d + " is not supported yet; EXPLAIN and EXPLAIN CHANGELOG_MODE are"}
		}
	}
	var roots []Node
	switch s := st.Statement.(type) {
	case *parser.QueryStmt:
		plan, err := p.PlanQuery(s.Query, nil)
		if err != nil {
			return "", err
		}
		roots = []Node{plan.Sinks[0].inputs[0]}
	case *parser.Insert:
		plan, err := p.PlanInsert(s)
		if err != nil {
			return "", err
		}
		roots = sinkRoots(plan)
	case *parser.StatementSet:
		plan, err := p.PlanStatementSet(s)
		if err != nil {
			return "", err
		}
		roots = sinkRoots(plan)
	default:
		return "", errAt(st.Statement, "EXPLAIN supports queries, INSERT statements and STATEMENT SETs")
	}
	var b strings.Builder
	b.WriteString("== Optimized Physical Plan ==\n")
	for _, r := range roots {
		writeTree(&b, r, "", "", changelog)
	}
	b.WriteString("\n== Optimized Execution Plan ==\n")
	for _, r := range roots {
		writeTree(&b, r, "", "", false)
	}
	return b.String(), nil
}

func sinkRoots(pl *Plan) []Node {
	roots := make([]Node, len(pl.Sinks))
	for i, s := range pl.Sinks {
		roots[i] = s
	}
	return roots
}

// writeTree prints a node and its inputs with Flink's "+- " / ":- " layout.
func writeTree(b *strings.Builder, n Node, first, rest string, changelog bool) {
	b.WriteString(first)
	line := n.Describe()
	if changelog {
		mode := n.Mode().String()
		if _, isSink := n.(*SinkNode); isSink {
			mode = "[NONE]"
		}
		if updating(n.Mode()) {
			if key, ok := upsertKey(n); ok {
				mode += ", upsertKey=[" + colNames(n.Schema(), key) + "]"
			}
		}
		if strings.HasSuffix(line, ")") {
			line = strings.TrimSuffix(line, ")") + ", changelogMode=" + mode + ")"
		} else {
			line += "(changelogMode=" + mode + ")" // a node without attributes
		}
	}
	b.WriteString(line)
	b.WriteString("\n")
	ins := n.Inputs()
	for i, in := range ins {
		if i == len(ins)-1 {
			writeTree(b, in, rest+"+- ", rest+"   ", changelog)
		} else {
			writeTree(b, in, rest+":- ", rest+":  ", changelog)
		}
	}
}

// Fingerprint identifies the plan's shape: the execution plan's text (every
// node with its parameters), hashed. A named job resumes its latest
// checkpoint only with the same fingerprint, and snapshots of builds whose
// operator ids were plan positions restore only into the same one;
// otherwise state is mapped by operator identity (stateid.go).
func (pl *Plan) Fingerprint() string {
	var b strings.Builder
	for _, s := range pl.Sinks {
		var n Node = s
		if s.Name == "collect" {
			n = s.inputs[0]
		}
		writeTree(&b, n, "", "", false)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}
