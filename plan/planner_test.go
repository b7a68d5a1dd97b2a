package plan

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
)

// TestPlanner runs the data-driven planner tests in testdata: the plan,
// changelog modes, upsert keys, exchanges and operator chaining the planner
// produces for each kind of operator, checked against expectations worked
// out from Flink's documented rules (each case says why in a comment).
// The planner is built directly over a catalog and the built-in connectors,
// as a session builds it, so the tests move with the package. Commands:
//
//	config k=v ...  planner options for the following cases (see plannerConfig);
//	                "config" alone restores the defaults
//	exec            DDL statements (CREATE TABLE / VIEW, DROP); prints "ok"
//	explain         one statement (query, INSERT, statement set) or an EXPLAIN
//	                statement: prints EXPLAIN CHANGELOG_MODE's optimized
//	                physical plan (changelog mode and upsert key per node) and
//	                the job graph (vertices, chains, parallelism, partitioners);
//	                with "raw", the planner's EXPLAIN text as is instead
//	error           one statement that the planner must refuse; prints its message
func TestPlanner(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		cat := catalog.New()
		reg := builtin.NewRegistry(io.Discard, io.Discard)
		cfg := Config{Loc: time.UTC}
		newPlanner := func() *Planner { return New(cat, reg, cfg) }
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				c, err := plannerConfig(d)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				cfg = c
				return "ok"
			case "exec":
				if err := execDDL(newPlanner(), cat, d.Input); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "explain":
				out, err := explainCase(newPlanner(), d.Input, d.HasArg("raw"))
				if err != nil {
					d.Fatalf(t, "%s: %v", d.Pos, err)
				}
				return out
			case "error":
				_, err := explainCase(newPlanner(), d.Input, false)
				if err == nil {
					d.Fatalf(t, "%s: the statement was planned; want an error", d.Pos)
				}
				return err.Error()
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// plannerConfig reads the options of a config command:
//
//	parallelism=N                parallelism.default
//	mini-batch=(LATENCY,SIZE)    table.exec.mini-batch.enabled = true with allow-latency and size
//	state-ttl=DURATION           table.exec.state.ttl
//	idle-timeout=DURATION        table.exec.source.idle-timeout
//	allow-lateness=DURATION      table.exec.emit.allow-lateness
//	early-fire, late-fire        table.exec.emit.early-fire.enabled / late-fire.enabled = true
func plannerConfig(d *datadriven.TestData) (Config, error) {
	cfg := Config{Loc: time.UTC}
	for _, a := range d.CmdArgs {
		val := func(i int) string {
			if i < len(a.Vals) {
				return a.Vals[i]
			}
			return ""
		}
		switch a.Key {
		case "parallelism":
			n, err := strconv.Atoi(val(0))
			if err != nil {
				return cfg, fmt.Errorf("parallelism: %w", err)
			}
			cfg.Parallelism = n
		case "mini-batch":
			lat, err := time.ParseDuration(val(0))
			if err != nil {
				return cfg, fmt.Errorf("mini-batch latency: %w", err)
			}
			size, err := strconv.Atoi(val(1))
			if err != nil {
				return cfg, fmt.Errorf("mini-batch size: %w", err)
			}
			cfg.MiniBatch = MiniBatch{Enabled: true, AllowLatency: lat, Size: size}
		case "state-ttl":
			ttl, err := time.ParseDuration(val(0))
			if err != nil {
				return cfg, fmt.Errorf("state-ttl: %w", err)
			}
			cfg.StateTTL = ttl
		case "idle-timeout":
			idle, err := time.ParseDuration(val(0))
			if err != nil {
				return cfg, fmt.Errorf("idle-timeout: %w", err)
			}
			cfg.IdleTimeout = idle
		case "allow-lateness":
			d, err := time.ParseDuration(val(0))
			if err != nil {
				return cfg, fmt.Errorf("allow-lateness: %w", err)
			}
			cfg.Emit.AllowLateness, cfg.Emit.AllowLatenessText = d, val(0)
		case "early-fire":
			cfg.Emit.EarlyFire = true
		case "late-fire":
			cfg.Emit.LateFire = true
		default:
			return cfg, fmt.Errorf("unknown config option %q", a.Key)
		}
	}
	return cfg, nil
}

// execDDL runs DDL statements against the catalog, as a session does.
func execDDL(p *Planner, cat *catalog.Catalog, script string) error {
	stmts, err := parser.ParseScript(script)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		switch x := st.(type) {
		case *parser.CreateTable:
			t, err := p.CreateTable(x)
			if err != nil {
				return err
			}
			if err := cat.CreateTable(t, x.IfNotExists); err != nil {
				return err
			}
		case *parser.CreateView:
			v, err := p.CreateView(x)
			if err != nil {
				return err
			}
			if err := cat.CreateView(v, x.IfNotExists); err != nil {
				return err
			}
		case *parser.Drop:
			id, err := cat.Qualify(x.Name)
			if err != nil {
				return err
			}
			if x.Object == "VIEW" {
				err = cat.DropView(id, x.Temporary, x.IfExists)
			} else {
				err = cat.DropTable(id, x.Temporary, x.IfExists)
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("exec takes DDL statements, not %T", st)
		}
	}
	return nil
}

// explainCase plans one statement and renders its plan and job graph (or,
// with raw, the EXPLAIN text alone).
func explainCase(p *Planner, text string, raw bool) (string, error) {
	st, err := parser.ParseStatement(text)
	if err != nil {
		return "", err
	}
	ex, isExplain := st.(*parser.Explain)
	if !isExplain {
		ex = &parser.Explain{Details: []string{"CHANGELOG_MODE"}, Statement: st}
	}
	plainText, err := p.Explain(ex)
	if err != nil {
		return "", err
	}
	if raw {
		return plainText, nil
	}
	// The physical plan with changelog modes; the execution plan below it is
	// the same tree without them.
	physical, _, _ := strings.Cut(plainText, "\n== Optimized Execution Plan ==")
	var plan *Plan
	switch s := ex.Statement.(type) {
	case *parser.QueryStmt:
		plan, err = p.PlanQuery(s.Query, nil)
	case *parser.Insert:
		plan, err = p.PlanInsert(s)
	case *parser.StatementSet:
		plan, err = p.PlanStatementSet(s)
	default:
		return "", fmt.Errorf("explain takes a query, INSERT or statement set, not %T", s)
	}
	if err != nil {
		return "", err
	}
	g, err := plan.JobGraph("test")
	if err != nil {
		return "", err
	}
	return physical + "\n== Job Graph ==\n" + jobGraphText(g), nil
}

// jobGraphText prints a job graph one vertex a line: its id, the kinds of
// its chained operators (the source first), its parallelism and its inputs
// with their partitioners (hash keys are column positions of the input rows).
func jobGraphText(g *exec.JobGraph) string {
	var b strings.Builder
	for _, v := range g.Vertices {
		var ops []string
		if v.Source != nil {
			src := strings.TrimSuffix(v.Name, " -> "+strings.Join(v.ChainNames, " -> "))
			ops = append(ops, kind(src))
		}
		for _, n := range v.ChainNames {
			ops = append(ops, kind(n))
		}
		fmt.Fprintf(&b, "%d: %s, parallelism=%d", v.ID, strings.Join(ops, " -> "), v.Parallelism)
		if len(v.Inputs) > 0 {
			ins := make([]string, len(v.Inputs))
			for i, in := range v.Inputs {
				ins[i] = fmt.Sprintf("%d %s", in.From, in.Partitioner.Kind)
				if in.Partitioner.Kind == exec.Hash {
					keys := make([]string, len(in.Partitioner.KeyCols))
					for j, k := range in.Partitioner.KeyCols {
						keys[j] = strconv.Itoa(k)
					}
					ins[i] += "[" + strings.Join(keys, ", ") + "]"
				}
			}
			b.WriteString(", inputs=[" + strings.Join(ins, ", ") + "]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// kind is the operator name of a plan node's description: "Calc" for
// "Calc(select=[a])".
func kind(desc string) string {
	k, _, _ := strings.Cut(desc, "(")
	return k
}
