package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/types"
)

// Changelog modes are inferred in two steps, as Flink does. While a plan is
// built every node records the kinds of change it may produce (insert,
// update, delete), counting updates as full retractions. Once the consumer is
// known, resolveChangelog walks the plan from the sink down and decides where
// -U (update-before) rows are really needed: a retracting sink or an
// aggregation over updates needs them; an upsert sink keyed like the stream
// does not, and the producers then skip them.

// updating reports whether a mode has any change besides inserts.
func updating(m types.ChangelogMode) bool {
	return m.UpdateBefore || m.UpdateAfter || m.Delete
}

// resolveChangelog fixes the update-before decision of n and everything below
// it; needUB says whether n's consumer needs -U rows.
func resolveChangelog(n Node, needUB bool) {
	switch x := n.(type) {
	case *GroupAggNode:
		in := x.inputs[0]
		inUpdating := updating(in.Mode())
		// Retracting an old value needs the old row: ask the input for -U.
		resolveChangelog(in, inUpdating)
		x.InputRetracts = inUpdating
		x.GenerateUpdateBefore = needUB
		x.mode = types.ChangelogMode{Insert: true, UpdateBefore: needUB, UpdateAfter: true, Delete: inUpdating}
	case *RankNode:
		in := x.inputs[0]
		inUpdating := updating(in.Mode())
		resolveChangelog(in, inUpdating)
		x.InputRetracts = inUpdating
		x.GenerateUpdateBefore = needUB
		// The operator updates rows in place per rank position when it
		// outputs the row number or the range starts after 1 (an offset);
		// otherwise rows enter and leave the range as inserts and deletes.
		inPlace := x.OutputRankNumber || x.RankStart > 1
		x.mode = types.ChangelogMode{Insert: true, UpdateBefore: needUB && inPlace, UpdateAfter: inPlace, Delete: true}
	case *DedupNode:
		resolveChangelog(x.inputs[0], false)
		x.GenerateUpdateBefore = needUB && x.Updates()
		if x.Updates() {
			x.mode = types.ChangelogMode{Insert: true, UpdateBefore: needUB, UpdateAfter: true}
		} else {
			x.mode = types.InsertOnly
		}
	case *ChangelogNormalizeNode:
		resolveChangelog(x.inputs[0], false)
		x.GenerateUpdateBefore = needUB
		x.mode = types.ChangelogMode{Insert: true, UpdateBefore: needUB, UpdateAfter: true, Delete: x.inputs[0].Mode().Delete}
	case *SinkMaterializerNode:
		// Removing a row from a key's history needs the row: -U is required.
		resolveChangelog(x.inputs[0], true)
		x.mode = types.Upsert
	case *CalcNode:
		// A filter over updates must see the old row to drop it when the new
		// one no longer passes: it needs -U whatever its consumer wants.
		in := x.inputs[0]
		resolveChangelog(in, needUB || (x.Filter != nil && updating(in.Mode())))
		x.mode = in.Mode()
	case *ExchangeNode, *LimitNode:
		resolveChangelog(n.Inputs()[0], needUB)
		setMode(n, n.Inputs()[0].Mode())
	case *SetOpNode:
		// Retracting an update needs the old row.
		for _, in := range x.inputs {
			resolveChangelog(in, updating(in.Mode()))
		}
	case *UnionNode:
		for _, in := range x.inputs {
			resolveChangelog(in, needUB)
		}
		x.mode = unionMode(x.inputs)
	case *JoinNode:
		resolveJoinChangelog(x)
	case *FinalNode:
		resolveFinal(x)
	case changeForwarder:
		resolveChangelog(x.Inputs()[0], needUB)
		x.forwardChanges(x.Inputs()[0].Mode())
	default:
		// Sources and insert-only operators (windows, sort).
		for _, in := range n.Inputs() {
			resolveChangelog(in, false)
		}
	}
}

func setMode(n Node, m types.ChangelogMode) {
	switch x := n.(type) {
	case *ExchangeNode:
		x.mode = m
	case *LimitNode:
		x.mode = m
	}
}

// upsertKey returns the columns that identify a row of an updating stream,
// when known.
func upsertKey(n Node) ([]int, bool) {
	switch x := n.(type) {
	case *GroupAggNode:
		k := make([]int, len(x.KeyCols))
		for i := range k {
			k[i] = i
		}
		return k, true
	case *ChangelogNormalizeNode:
		return x.KeyCols, true
	case *DedupNode:
		return x.KeyCols, x.Updates()
	case *RankNode:
		if x.OutputRankNumber {
			return append(append([]int(nil), x.PartitionCols...), len(x.schema)-1), true
		}
		if x.RankStart == 1 && x.RankEnd == 1 {
			// A Top-1 holds one row per partition: the partition key is unique.
			return x.PartitionCols, true
		}
		return nil, false
	case *SinkMaterializerNode:
		return x.KeyCols, true
	case *ScanNode:
		if x.Table.PrimaryKey == nil {
			return nil, false
		}
		var k []int
		for _, name := range x.Table.PrimaryKey.Columns {
			k = append(k, x.schema.Index(name))
		}
		return k, true
	case *ExchangeNode, *DropUpdateBeforeNode:
		return upsertKey(n.Inputs()[0])
	case *JoinNode:
		return joinUpsertKey(x)
	case *LookupJoinNode:
		if x.DimUnique {
			return upsertKey(x.inputs[0])
		}
		return nil, false
	case *CalcNode:
		k, ok := upsertKey(x.inputs[0])
		if !ok || x.Project == nil {
			return k, ok
		}
		// The key survives a projection that keeps every key column, as is
		// or widened by an implicit cast (to a sink's column type), which
		// keeps distinct keys distinct.
		in := x.inputs[0].Schema()
		out := make([]int, len(k))
		for i, c := range k {
			out[i] = -1
			for j, p := range x.Project {
				if keepsColumn(p, c, in) {
					out[i] = j
					break
				}
			}
			if out[i] < 0 {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// keepsColumn reports whether projection p is input column c itself or an
// implicit cast of it within its type family (numeric or decimal widening,
// CHAR to VARCHAR, a finer timestamp): those are the casts the expression
// printer shows as the bare column, and each maps distinct values to
// distinct values.
func keepsColumn(p expr.Expr, c int, in types.Schema) bool {
	if ref, isRef := p.(*expr.ColumnRef); isRef {
		return ref.Index == c
	}
	cols := expr.UsesColumns(p)
	return len(cols) == 1 && cols[0] == c && p.String() == in[c].Name
}

// changeKinds names the kinds of change in m that accepted lacks, as Flink's
// messages do: "update", "delete" or "update and delete".
func changeKinds(m, accepted types.ChangelogMode) string {
	var kinds []string
	if (m.UpdateAfter || m.UpdateBefore) && !(accepted.UpdateAfter || accepted.UpdateBefore) {
		kinds = append(kinds, "update")
	}
	if m.Delete && !accepted.Delete {
		kinds = append(kinds, "delete")
	}
	return strings.Join(kinds, " and ")
}

// producer returns the node whose own semantics produce the changes that
// reach n, looking through nodes that only forward them.
func producer(n Node) Node {
	for {
		switch n.(type) {
		case *CalcNode, *ExchangeNode, *LimitNode:
			n = n.Inputs()[0]
			continue
		case *UnionNode:
			for _, in := range n.Inputs() {
				if updating(in.Mode()) {
					n = in
					break
				}
			}
			if _, still := n.(*UnionNode); still {
				return n
			}
			continue
		}
		return n
	}
}

// requireInsertOnly fails when an operator that consumes only insert-only
// streams is fed updates, with Flink's message.
func requireInsertOnly(consumer string, in Node) error {
	if !updating(in.Mode()) {
		return nil
	}
	return fmt.Errorf("%s doesn't support consuming %s changes which is produced by node %s",
		consumer, changeKinds(in.Mode(), types.InsertOnly), producer(in).Describe())
}

// addSinkMaterializer puts a SinkUpsertMaterializer in front of a sink with a
// primary key when the updating input is keyed differently (or unknown).
// A non-empty reason forces one.
func (pc *planContext) addSinkMaterializer(in Node, pk []int, reason string) Node {
	if len(pk) == 0 || !updating(in.Mode()) {
		return in
	}
	key, ok := upsertKey(in)
	if reason == "" {
		if ok && slices.Equal(sortedCopy(key), sortedCopy(pk)) {
			return in
		}
		reason = "the input has no upsert key"
		if ok {
			reason = "the input's upsert key [" + colNames(in.Schema(), key) + "] differs from the sink's primary key"
		}
	}
	ex := pc.exchange(in, exec.Partitioner{Kind: exec.Hash, KeyCols: pk})
	m := &SinkMaterializerNode{KeyCols: pk, Reason: reason}
	if ok {
		m.UpsertKey = key
	}
	m.inputs, m.schema, m.mode = []Node{ex}, in.Schema(), types.Upsert
	return m
}

func sortedCopy(s []int) []int {
	c := append([]int(nil), s...)
	slices.Sort(c)
	return c
}
