package plan

import (
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
)

// JoinNode is a regular join of its two inputs (both hash-partitioned by
// their join keys, or gathered into one task when there are none). Output:
// the left columns, then the right ones.
type JoinNode struct {
	base
	Type                join.Type
	LeftKeys, RightKeys []int
	NullSafe            []bool
	// Cond is the whole join condition over the output row, for EXPLAIN
	// (nil: true); Residual its non-equi part, evaluated per pair.
	Cond, Residual          expr.Expr
	LeftSpec, RightSpec     join.InputSpec
	LeftUnique, RightUnique []int
	LeftTTL, RightTTL       time.Duration
}

func (n *JoinNode) Describe() string {
	where := "true"
	if n.Cond != nil {
		where = n.Cond.String()
	}
	return "Join(joinType=[" + n.Type.String() + "], where=[" + where + "], select=[" + strings.Join(n.schema.Names(), ", ") +
		"], leftInputSpec=[" + n.LeftSpec.String() + "], rightInputSpec=[" + n.RightSpec.String() + "])"
}

// resolveJoinChangelog asks the inputs of a join for full retractions: a
// join removes a retracted row from its state and retracts its pairs, so
// it needs the old row of every update.
func resolveJoinChangelog(n Node) {
	for _, in := range n.Inputs() {
		resolveChangelog(in, updating(in.Mode()))
	}
}

// joinUpsertKey derives the upsert key of a regular join's output from
// its inputs', as Flink's upsert-key metadata does: only input keys that
// contain the join key count (the rows of one key then stay in one task);
// the left key stays unique when each left row matches at most one right
// row (the right's key is within the join key) and left rows are never
// padded, and likewise for the right; both keys together are unique.
func joinUpsertKey(n *JoinNode) ([]int, bool) {
	lw := len(n.inputs[0].Schema())
	lk, lok := upsertKey(n.inputs[0])
	rk, rok := upsertKey(n.inputs[1])
	lok = lok && len(lk) > 0 && subset(n.LeftKeys, lk)
	rok = rok && len(rk) > 0 && subset(n.RightKeys, rk)
	if n.Type == join.Semi || n.Type == join.Anti {
		return lk, lok // the output is left rows
	}
	leftUnique := lok && subset(lk, n.LeftKeys)
	rightUnique := rok && subset(rk, n.RightKeys)
	shift := func(k []int) []int {
		out := make([]int, len(k))
		for i, c := range k {
			out[i] = c + lw
		}
		return out
	}
	switch {
	case lok && rightUnique && n.Type != join.RightOuter && n.Type != join.FullOuter:
		return lk, true
	case rok && leftUnique && n.Type != join.LeftOuter && n.Type != join.FullOuter:
		return shift(rk), true
	case lok && rok:
		return append(append([]int(nil), lk...), shift(rk)...), true
	}
	return nil, false
}

// buildJoin adds the vertex of a regular join: its two inputs come from
// the exchanges in front of it, as input 0 and 1 of its first operator.
func (gb *graphBuilder) buildJoin(x *JoinNode) (*exec.Vertex, error) {
	v, err := gb.twoInputVertex(x)
	if err != nil {
		return nil, err
	}
	spec := join.RegularSpec{
		Type:     x.Type,
		Left:     join.Side{Width: len(x.inputs[0].Schema()), Keys: x.LeftKeys, Spec: x.LeftSpec, UniqueKey: x.LeftUnique, TTL: x.LeftTTL},
		Right:    join.Side{Width: len(x.inputs[1].Schema()), Keys: x.RightKeys, Spec: x.RightSpec, UniqueKey: x.RightUnique, TTL: x.RightTTL},
		NullSafe: x.NullSafe,
	}
	residual, cfg := x.Residual, gb.cfg
	return appendOp(v, x.Describe(), func() (exec.Operator, error) {
		sp := spec
		if residual != nil {
			sp.Residual = expr.NewPredicate(residual, cfg)
		}
		return join.NewRegular(sp)
	}), nil
}

// twoInputVertex returns a new vertex reading input i of n (an
// ExchangeNode, whose partitioner routes it) as its input i.
func (gb *graphBuilder) twoInputVertex(n Node) (*exec.Vertex, error) {
	par := gb.p.cfg.Parallelism
	var inputs []exec.Input
	for i, in := range n.Inputs() {
		x, ok := in.(*ExchangeNode)
		if !ok {
			return nil, errInternal("a join input is not an exchange")
		}
		if x.Partitioner.Kind == exec.Global {
			par = 1
		}
		iv, err := gb.build(x.inputs[0])
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, exec.Input{From: iv.ID, InputIndex: i, Partitioner: x.Partitioner})
	}
	v := gb.newVertex("", par)
	v.Inputs = inputs
	return v, nil
}

type internalError string

func (e internalError) Error() string { return "internal error: " + string(e) }

func errInternal(msg string) error { return internalError(msg) }
