package plan

import (
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/setop"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// SetOpNode is INTERSECT [ALL] or EXCEPT [ALL] of its two inputs, each
// hash-partitioned on the whole row. It emits inserts and deletes as a
// row's multiplicity in the result changes (see exec/setop).
type SetOpNode struct {
	base
	Op  string // "INTERSECT" or "EXCEPT"
	All bool
}

func (n *SetOpNode) Describe() string {
	name := "Intersect"
	if n.Op == "EXCEPT" {
		name = "Minus"
	}
	all := "false"
	if n.All {
		all = "true"
	}
	return name + "(all=[" + all + "], " + strings.ToLower(name) + "=[" + strings.Join(n.schema.Names(), ", ") + "])"
}

// planDistinctSetOp plans UNION (distinct) as DISTINCT over UNION ALL, as
// Flink does, and INTERSECT / EXCEPT [ALL] as a SetOpNode.
func (pc *planContext) planDistinctSetOp(s *parser.SetOp, env *cteEnv) (*relation, error) {
	if s.Op == "UNION" {
		all := *s
		all.All = true
		rel, err := pc.planSetOp(&all, env)
		if err != nil {
			return nil, err
		}
		return pc.distinct(rel), nil
	}
	left, err := pc.planQueryExpr(s.Left, env)
	if err != nil {
		return nil, err
	}
	right, err := pc.planQueryExpr(s.Right, env)
	if err != nil {
		return nil, err
	}
	width := len(left.scope.cols)
	if len(right.scope.cols) != width {
		return nil, errAt(s, "Set operator cannot combine expressions with different numbers of columns (%d and %d)", width, len(right.scope.cols))
	}
	out := make(types.Schema, width)
	for c := 0; c < width; c++ {
		t, err := expr.LeastRestrictive(left.scope.cols[c].Type.WithoutTimeAttr(), right.scope.cols[c].Type.WithoutTimeAttr())
		if err != nil {
			return nil, errAt(s, "Type mismatch in column %d of %s: %s", c+1, s.Op, err.Error())
		}
		out[c] = types.Column{Name: left.scope.cols[c].Name, Type: t}
	}
	keys := make([]int, width)
	for i := range keys {
		keys[i] = i
	}
	n := &SetOpNode{Op: s.Op, All: s.All}
	for _, in := range []*relation{left, right} {
		cast, err := castTo(in.node, out)
		if err != nil {
			return nil, errAt(s, "%s", err.Error())
		}
		n.inputs = append(n.inputs, pc.exchange(cast, exec.Partitioner{Kind: exec.Hash, KeyCols: keys}))
	}
	n.schema = out
	n.mode = types.ChangelogMode{Insert: true, Delete: true}
	return &relation{node: n, scope: newScope("", out)}, nil
}

// setOpVertex builds the two-input vertex of a SetOpNode: each input keeps
// its hash exchange, input 0 is the left side.
func (gb *graphBuilder) setOpVertex(x *SetOpNode) (*exec.Vertex, error) {
	var inputs []exec.Input
	for i, in := range x.inputs {
		ex := in.(*ExchangeNode)
		iv, err := gb.build(ex.inputs[0])
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, exec.Input{From: iv.ID, InputIndex: i, Partitioner: ex.Partitioner})
	}
	v := gb.newVertex("", gb.p.cfg.Parallelism)
	v.Inputs = inputs
	spec := setop.Spec{Kind: setop.Intersect, All: x.All, Width: len(x.schema), StateTTL: gb.p.cfg.StateTTL}
	if x.Op == "EXCEPT" {
		spec.Kind = setop.Except
	}
	return appendOp(v, x.Describe(), func() (exec.Operator, error) { return setop.New(spec) }), nil
}
