package plan

import (
	"slices"

	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/types"
)

// pruneJoinInputs narrows each input of a regular, interval or window join
// to the columns the query reads from it, as Flink's optimizer does by
// pushing projections below a join: the join condition's columns (and an
// interval join's time attributes, a window join's window ends), the
// input's upsert key (a regular join's state layout depends on it), and
// whatever the Calcs above the join read. A join keeps every row of both inputs in its state, so a
// column it stores and nobody reads costs memory on hashmap and bytes
// written and compacted on rocksdb: Nexmark q4 reads 3 of a bid's 7
// columns and 4 of an auction's 10, and the ones it skips hold the long
// strings.
//
// The narrowing projection goes below the input's exchange (fewer bytes
// shuffled as well), fused with a Calc already there. A join whose output
// is not read by a Calc (a sink, another join) keeps its inputs whole.
// Rewritten nodes are new; the parents of a rewritten Calc get the new
// one in their inputs.
func pruneJoinInputs(n Node) Node {
	p := &joinPruner{done: map[Node]Node{}}
	return p.visit(n)
}

type joinPruner struct {
	done map[Node]Node
}

func (p *joinPruner) visit(n Node) Node {
	if r, ok := p.done[n]; ok {
		return r
	}
	r := n
	if c, ok := n.(*CalcNode); ok {
		// A chain of Calcs over the join (a filter over a projection, or
		// the Calc that drops a computed join key) reads of the join what
		// their merge reads, as the job graph will run them.
		top := mergeCalcs(c)
		if j, ok := prunableJoin(top.inputs[0]); ok {
			if pruned := pruneJoin(top, j); pruned != nil {
				r = pruned
			}
		}
	}
	ins := r.Inputs()
	for i, in := range ins {
		ins[i] = p.visit(in)
	}
	p.done[n] = r
	return r
}

// joinShape is what pruneJoin needs of a join node: its inputs, the
// columns of each it reads itself besides the residual condition (keys,
// time attributes, window ends), its conditions over the combined row,
// and how to make the node again over narrowed inputs.
type joinShape struct {
	node     Node
	typ      join.Type
	reads    [2][]int
	cond     expr.Expr // EXPLAIN's whole condition
	residual expr.Expr
	// rebuild returns the node over inputs, with a column c of input i
	// now at pos[i][c], its conditions remapped, and schema as its output.
	rebuild func(inputs [2]Node, pos [2][]int, cond, residual expr.Expr, schema types.Schema) Node
}

// prunableJoin describes n when it is a join pruneJoin narrows.
func prunableJoin(n Node) (joinShape, bool) {
	switch j := n.(type) {
	case *JoinNode:
		return joinShape{node: j, typ: j.Type, reads: [2][]int{j.LeftKeys, j.RightKeys}, cond: j.Cond, residual: j.Residual,
			rebuild: func(ins [2]Node, pos [2][]int, cond, residual expr.Expr, schema types.Schema) Node {
				nj := *j
				nj.inputs, nj.schema, nj.Cond, nj.Residual = []Node{ins[0], ins[1]}, schema, cond, residual
				nj.LeftKeys, nj.RightKeys = remapCols(j.LeftKeys, pos[0]), remapCols(j.RightKeys, pos[1])
				if ins[0] != j.inputs[0] {
					nj.LeftSpec, nj.LeftUnique = inputSpec(ins[0], nj.LeftKeys)
				}
				if ins[1] != j.inputs[1] {
					nj.RightSpec, nj.RightUnique = inputSpec(ins[1], nj.RightKeys)
				}
				return &nj
			}}, true
	case *IntervalJoinNode:
		return joinShape{node: j, typ: j.Type, cond: j.Cond, residual: j.Residual,
			reads: [2][]int{append([]int{j.LeftTimeCol}, j.LeftKeys...), append([]int{j.RightTimeCol}, j.RightKeys...)},
			rebuild: func(ins [2]Node, pos [2][]int, cond, residual expr.Expr, schema types.Schema) Node {
				nj := *j
				nj.inputs, nj.schema, nj.Cond, nj.Residual = []Node{ins[0], ins[1]}, schema, cond, residual
				nj.LeftKeys, nj.RightKeys = remapCols(j.LeftKeys, pos[0]), remapCols(j.RightKeys, pos[1])
				nj.LeftTimeCol, nj.RightTimeCol = pos[0][j.LeftTimeCol], pos[1][j.RightTimeCol]
				return &nj
			}}, true
	case *WindowJoinNode:
		return joinShape{node: j, typ: j.Type, cond: j.Cond, residual: j.Residual,
			reads: [2][]int{append([]int{j.LeftEndCol}, j.LeftKeys...), append([]int{j.RightEndCol}, j.RightKeys...)},
			rebuild: func(ins [2]Node, pos [2][]int, cond, residual expr.Expr, schema types.Schema) Node {
				nj := *j
				nj.inputs, nj.schema, nj.Cond, nj.Residual = []Node{ins[0], ins[1]}, schema, cond, residual
				nj.LeftKeys, nj.RightKeys = remapCols(j.LeftKeys, pos[0]), remapCols(j.RightKeys, pos[1])
				nj.LeftEndCol, nj.RightEndCol = pos[0][j.LeftEndCol], pos[1][j.RightEndCol]
				return &nj
			}}, true
	}
	return joinShape{}, false
}

// pruneJoin returns calc over j with j's inputs narrowed; nil when every
// column of both inputs is read.
func pruneJoin(calc *CalcNode, j joinShape) *CalcNode {
	if calc.Project == nil {
		return nil
	}
	ins := j.node.Inputs()
	sides := [2]Node{ins[0], ins[1]}
	widths := [2]int{len(sides[0].Schema()), len(sides[1].Schema())}
	rightOut := j.typ != join.Semi && j.typ != join.Anti // the output has the right columns

	var need [2][]bool
	for i := range need {
		need[i] = make([]bool, widths[i])
	}
	mark := func(c int) { // a column of the join's combined row
		if c < widths[0] {
			need[0][c] = true
		} else if c-widths[0] < widths[1] {
			need[1][c-widths[0]] = true
		}
	}
	for _, e := range calc.Project {
		for _, c := range expr.UsesColumns(e) {
			mark(c)
		}
	}
	if calc.Filter != nil {
		for _, c := range expr.UsesColumns(calc.Filter) {
			mark(c)
		}
	}
	// The whole condition, not only its residual part: with keys on
	// computed columns (joinkeys.go) it names the columns they were
	// computed from, and EXPLAIN and the join's identity print it.
	for _, e := range []expr.Expr{j.cond, j.residual} {
		if e != nil {
			for _, c := range expr.UsesColumns(e) {
				mark(c)
			}
		}
	}
	for i, cols := range j.reads {
		for _, c := range cols {
			need[i][c] = true
		}
	}
	for i, s := range sides {
		if uk, ok := upsertKey(s); ok {
			for _, k := range uk {
				need[i][k] = true
			}
		}
		if x, ok := s.(*ExchangeNode); ok {
			for _, k := range x.Partitioner.KeyCols { // the join keys, as planned
				need[i][k] = true
			}
		}
	}

	// keep[i] lists side i's kept columns; pos[i] maps an old column of
	// side i to its new position (-1: dropped).
	var keep, pos [2][]int
	pruned := false
	for i := range sides {
		pos[i] = make([]int, widths[i])
		for c, ok := range need[i] {
			pos[i][c] = -1
			if ok {
				pos[i][c] = len(keep[i])
				keep[i] = append(keep[i], c)
			}
		}
		pruned = pruned || len(keep[i]) < widths[i]
	}
	if !pruned {
		return nil
	}

	var newSides [2]Node
	for i, s := range sides {
		if len(keep[i]) == widths[i] {
			newSides[i] = s
			continue
		}
		x, ok := s.(*ExchangeNode)
		if !ok {
			return nil // planJoinKind always puts an exchange there
		}
		narrowed := narrow(x.inputs[0], keep[i])
		nx := &ExchangeNode{Partitioner: x.Partitioner}
		if len(x.Partitioner.KeyCols) > 0 {
			nx.Partitioner.KeyCols = remapCols(x.Partitioner.KeyCols, pos[i])
		}
		nx.inputs, nx.schema, nx.mode = []Node{narrowed}, narrowed.Schema(), narrowed.Mode()
		newSides[i] = nx
	}

	// outPos maps a column of the old combined row to the new one.
	newLeft := len(keep[0])
	outPos := make([]int, widths[0]+widths[1])
	for c := range outPos {
		if c < widths[0] {
			outPos[c] = pos[0][c]
		} else if p := pos[1][c-widths[0]]; p >= 0 {
			outPos[c] = newLeft + p
		} else {
			outPos[c] = -1
		}
	}
	remap := func(e expr.Expr) expr.Expr {
		if e == nil {
			return nil
		}
		return expr.MapColumns(e, func(c *expr.ColumnRef) expr.Expr {
			if c.Index < 0 || c.Index >= len(outPos) || outPos[c.Index] < 0 {
				return c // cannot happen: every read column is kept
			}
			return &expr.ColumnRef{Index: outPos[c.Index], Name: c.Name, T: c.T}
		})
	}
	outWidth := widths[0]
	if rightOut {
		outWidth += widths[1]
	}
	var schema types.Schema
	old := j.node.Schema()
	for c := range outWidth {
		if outPos[c] >= 0 {
			schema = append(schema, old[c])
		}
	}
	nj := j.rebuild(newSides, pos, remap(j.cond), remap(j.residual), schema)

	proj := make([]expr.Expr, len(calc.Project))
	for i, e := range calc.Project {
		proj[i] = remap(e)
	}
	nc := newCalc(nj, proj, remap(calc.Filter), calc.schema)
	nc.mode = calc.mode
	return nc
}

// narrow returns in projected to its columns keep, fused with in when in
// is a Calc that allows it.
func narrow(in Node, keep []int) Node {
	schema := in.Schema()
	proj := make([]expr.Expr, len(keep))
	out := make(types.Schema, len(keep))
	for i, c := range keep {
		proj[i] = expr.Column(c, schema[c].Name, schema[c].Type)
		out[i] = schema[c]
	}
	top := newCalc(in, proj, nil, out)
	if bottom, ok := in.(*CalcNode); ok {
		if merged, ok := mergeCalc(top, bottom); ok {
			return merged
		}
	}
	return top
}

func remapCols(cols, pos []int) []int {
	out := slices.Clone(cols)
	for i, c := range out {
		out[i] = pos[c]
	}
	return out
}
