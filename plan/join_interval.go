package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// IntervalJoinNode is a join of two insert-only streams whose condition
// bounds the time attributes of both sides: left.time - right.time in
// [LowerBound, UpperBound] milliseconds. Output: the left columns, then the
// right ones, insert-only, with the time attributes kept (those of a side
// an outer join pads become plain timestamps).
type IntervalJoinNode struct {
	base
	Type                      join.Type
	LeftKeys, RightKeys       []int
	NullSafe                  []bool
	RowTime                   bool
	LeftTimeCol, RightTimeCol int
	LowerBound, UpperBound    int64
	Cond, Residual            expr.Expr
}

func (n *IntervalJoinNode) Describe() string {
	where := "true"
	if n.Cond != nil {
		where = n.Cond.String()
	}
	return fmt.Sprintf("IntervalJoin(joinType=[%s], windowBounds=[isRowTime=%t, leftLowerBound=%d, leftUpperBound=%d, leftTimeIndex=%d, rightTimeIndex=%d], where=[%s], select=[%s])",
		n.Type, n.RowTime, n.LowerBound, n.UpperBound, n.LeftTimeCol, n.RightTimeCol, where, strings.Join(n.schema.Names(), ", "))
}

// timeBound is one bound the condition puts on left.time - right.time.
type timeBound struct {
	leftCol, rightCol int // the right column relative to the right input
	lower             bool
	ms                int64
}

// planIntervalJoin plans the join as an interval join when its residual
// condition bounds the difference of a time attribute of each side from
// below and from above (BETWEEN, or two of <, <=, >, >=), both rowtime or
// both proctime, as Flink's interval join rule does; ok is false when it
// does not, and the join is then a regular one (bounds on plain
// timestamps, or on one side only, stay in its residual condition).
func (pc *planContext) planIntervalJoin(at parser.Node, typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, bool, error) {
	lw := len(left.scope.cols)
	ls, rs := left.node.Schema(), right.node.Schema()
	var bounds []timeBound
	var used []int // residual conjuncts that are bounds
	for i, c := range residual {
		bs, ok := timeBounds(c, lw, ls, rs)
		if !ok {
			continue
		}
		bounds = append(bounds, bs...)
		used = append(used, i)
	}
	if len(bounds) == 0 {
		return nil, false, nil
	}
	// The bounds must be on one pair of columns, of one kind of time.
	lc, rc := bounds[0].leftCol, bounds[0].rightCol
	lower, upper := int64(0), int64(0)
	hasLower, hasUpper := false, false
	for _, b := range bounds {
		if b.leftCol != lc || b.rightCol != rc {
			return nil, false, nil
		}
		if b.lower {
			if !hasLower || b.ms > lower {
				lower = b.ms
			}
			hasLower = true
		} else {
			if !hasUpper || b.ms < upper {
				upper = b.ms
			}
			hasUpper = true
		}
	}
	lt, rt := ls[lc].Type.TimeAttr, rs[rc].Type.TimeAttr
	if !hasLower || !hasUpper || lt == types.NoTimeAttr || lt != rt {
		return nil, false, nil
	}
	for _, in := range []Node{left.node, right.node} {
		if err := requireInsertOnly("IntervalJoin", in); err != nil {
			return nil, true, err
		}
	}
	if lower > upper {
		return nil, true, &UnsupportedError{Msg: fmt.Sprintf("The time bounds of the interval join are empty: left time - right time must be at least %d ms and at most %d ms", lower, upper)}
	}
	var rest []expr.Expr
	for i, c := range residual {
		isBound := false
		for _, u := range used {
			if u == i {
				isBound = true
			}
		}
		if !isBound {
			rest = append(rest, c)
		}
	}
	sc := joinScope(left.scope, right.scope, typ)
	for i := range sc.cols {
		padded := (i < lw && (typ == join.RightOuter || typ == join.FullOuter)) || (i >= lw && (typ == join.LeftOuter || typ == join.FullOuter))
		if padded {
			sc.cols[i].Type = sc.cols[i].Type.WithoutTimeAttr()
		}
	}
	names, out := joinOutput(sc)
	n := &IntervalJoinNode{Type: typ, LeftKeys: jc.LeftKeys, RightKeys: jc.RightKeys, NullSafe: jc.NullSafe,
		RowTime: lt == types.RowtimeAttr, LeftTimeCol: lc, RightTimeCol: rc, LowerBound: lower, UpperBound: upper}
	all := append(append([]expr.Expr(nil), jc.Equi...), residual...)
	n.Cond = expr.ShiftColumns(andExprs(all), 0, names)
	if len(rest) > 0 {
		n.Residual = andExprs(rest)
	}
	lpart, rpart := joinPartitioners(jc.LeftKeys, jc.RightKeys)
	n.inputs = []Node{pc.exchange(left.node, lpart), pc.exchange(right.node, rpart)}
	n.schema, n.mode = out, types.InsertOnly
	return &relation{node: n, scope: sc}, true, nil
}

// timeBounds reads a conjunct as bounds on left.time - right.time: a
// comparison (or BETWEEN) between a time column of each side, each
// possibly plus or minus an interval literal.
func timeBounds(c expr.Expr, lw int, ls, rs types.Schema) ([]timeBound, bool) {
	name := expr.CallName(c)
	args := expr.CallArgs(c)
	switch name {
	case "BETWEEN":
		if len(args) != 3 {
			return nil, false
		}
		lo, ok1 := compareBound(">=", args[0], args[1], lw, ls, rs)
		hi, ok2 := compareBound("<=", args[0], args[2], lw, ls, rs)
		if !ok1 || !ok2 {
			return nil, false
		}
		return []timeBound{lo, hi}, true
	case ">", ">=", "<", "<=":
		if len(args) != 2 {
			return nil, false
		}
		b, ok := compareBound(name, args[0], args[1], lw, ls, rs)
		if !ok {
			return nil, false
		}
		return []timeBound{b}, true
	}
	return nil, false
}

// compareBound reads `a op b` as a bound on left.time - right.time.
func compareBound(op string, a, b expr.Expr, lw int, ls, rs types.Schema) (timeBound, bool) {
	ca, oa, ok1 := timeOffset(a)
	cb, ob, ok2 := timeOffset(b)
	if !ok1 || !ok2 {
		return timeBound{}, false
	}
	isTime := func(col int) bool {
		if col < lw {
			return ls[col].Type.Root == types.RootTimestamp || ls[col].Type.Root == types.RootTimestampLTZ
		}
		return col-lw < len(rs) && (rs[col-lw].Type.Root == types.RootTimestamp || rs[col-lw].Type.Root == types.RootTimestampLTZ)
	}
	if !isTime(ca) || !isTime(cb) {
		return timeBound{}, false
	}
	// ca + oa op cb + ob.
	var c int64
	switch {
	case ca < lw && cb >= lw: // l - r op ob - oa
		c = ob - oa
	case ca >= lw && cb < lw: // r + oa op l + ob  ⇔  l - r op' oa - ob
		c = oa - ob
		op = map[string]string{">": "<", ">=": "<=", "<": ">", "<=": ">="}[op]
		ca, cb = cb, ca
	default:
		return timeBound{}, false
	}
	tb := timeBound{leftCol: ca, rightCol: cb - lw}
	switch op {
	case ">=":
		tb.lower, tb.ms = true, c
	case ">":
		tb.lower, tb.ms = true, c+1
	case "<=":
		tb.ms = c
	case "<":
		tb.ms = c - 1
	}
	return tb, true
}

// timeOffset reads e as column ± interval literals (day-time, in ms).
func timeOffset(e expr.Expr) (col int, ms int64, ok bool) {
	if ref, isRef := e.(*expr.ColumnRef); isRef {
		return ref.Index, 0, true
	}
	name := expr.CallName(e)
	args := expr.CallArgs(e)
	if (name != "+" && name != "-") || len(args) != 2 {
		return 0, 0, false
	}
	interval := func(x expr.Expr) (int64, bool) {
		v, isLit := expr.LiteralValue(x)
		if !isLit || x.Type().Root != types.RootIntervalDayTime || v.K != types.KindInt {
			return 0, false
		}
		return v.N, true
	}
	if c, o, ok := timeOffset(args[0]); ok {
		if d, ok := interval(args[1]); ok {
			if name == "-" {
				d = -d
			}
			return c, o + d, true
		}
		return 0, 0, false
	}
	if name == "+" {
		if d, ok := interval(args[0]); ok {
			if c, o, ok := timeOffset(args[1]); ok {
				return c, o + d, true
			}
		}
	}
	return 0, 0, false
}

// buildIntervalJoin adds the vertex of an interval join.
func (gb *graphBuilder) buildIntervalJoin(x *IntervalJoinNode) (*exec.Vertex, error) {
	v, err := gb.twoInputVertex(x)
	if err != nil {
		return nil, err
	}
	spec := join.IntervalSpec{
		Type:        x.Type,
		Left:        join.Side{Width: len(x.inputs[0].Schema()), Keys: x.LeftKeys},
		Right:       join.Side{Width: len(x.inputs[1].Schema()), Keys: x.RightKeys},
		NullSafe:    x.NullSafe,
		EventTime:   x.RowTime,
		LeftTimeCol: x.LeftTimeCol, RightTimeCol: x.RightTimeCol,
		LowerBound: x.LowerBound, UpperBound: x.UpperBound,
	}
	residual, cfg := x.Residual, gb.cfg
	return appendOp(v, x.Describe(), func() (exec.Operator, error) {
		sp := spec
		if residual != nil {
			sp.Residual = expr.NewPredicate(residual, cfg)
		}
		return join.NewInterval(sp)
	}), nil
}
