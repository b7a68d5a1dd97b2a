package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// WindowJoinNode joins two window table functions' rows per window (equal
// window_start and window_end) and key; it emits when the watermark
// passes the window's end. Output: the left columns, then the right ones,
// insert-only.
type WindowJoinNode struct {
	base
	Type                    join.Type
	LeftKeys, RightKeys     []int // besides the window
	NullSafe                []bool
	LeftEndCol, RightEndCol int
	LeftWindow, RightWindow string // EXPLAIN form
	Cond, Residual          expr.Expr
	// Loc is the session zone when a window is over a TIMESTAMP_LTZ time
	// attribute: window ends are then local wall-clock times.
	Loc *time.Location
}

func (n *WindowJoinNode) Describe() string {
	where := "true"
	if n.Cond != nil {
		where = n.Cond.String()
	}
	return fmt.Sprintf("WindowJoin(leftWindow=[%s], rightWindow=[%s], joinType=[%s], where=[%s], select=[%s])",
		n.LeftWindow, n.RightWindow, n.Type, where, strings.Join(n.schema.Names(), ", "))
}

// windowOf finds the window table function under n whose window_start and
// window_end n's rows carry unchanged, and their positions in n's row.
func windowOf(n Node) (w *WindowTVFNode, start, end int, ok bool) {
	switch x := n.(type) {
	case *WindowTVFNode:
		in := len(x.inputs[0].Schema())
		return x, in, in + 1, true
	case *WindowAggNode:
		// [keys..., aggregates..., window_start, window_end, window_time]:
		// a window join may follow a window aggregation, as in Flink.
		s := len(x.KeyCols) + len(x.Aggs)
		return &WindowTVFNode{Window: x.Window, WindowFn: x.WindowFn}, s, s + 1, true
	case *CalcNode:
		w, s, e, ok := windowOf(x.inputs[0])
		if !ok || x.Project == nil {
			return w, s, e, ok
		}
		ns, ne := -1, -1
		for i, p := range x.Project {
			if ref, isRef := p.(*expr.ColumnRef); isRef {
				if ref.Index == s && ns < 0 {
					ns = i
				}
				if ref.Index == e && ne < 0 {
					ne = i
				}
			}
		}
		return w, ns, ne, ns >= 0 && ne >= 0
	}
	return nil, 0, 0, false
}

// windowText is a window's EXPLAIN form in a window join:
// TUMBLE(win_start=[window_start], win_end=[window_end], size=[5 s]).
func windowText(w *WindowTVFNode, names []string, start, end int) string {
	fn := w.WindowFn
	open := strings.Index(fn, "(")
	rest := fn[open+1:]
	if strings.HasPrefix(rest, "time_col=[") {
		if i := strings.Index(rest, "], "); i >= 0 {
			rest = rest[i+3:]
		} else {
			rest = ")"
		}
	}
	return fn[:open+1] + "win_start=[" + names[start] + "], win_end=[" + names[end] + "], " + rest
}

// planWindowJoin plans a join of two window table functions whose
// condition equates both window_start and window_end as a window join;
// ok is false otherwise (a regular join of the windowed rows).
func (pc *planContext) planWindowJoin(at parser.Node, typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, bool, error) {
	lw, ls, le, lok := windowOf(left.node)
	rw, rs, re, rok := windowOf(right.node)
	if !lok || !rok {
		return nil, false, nil
	}
	hasStart, hasEnd := false, false
	var lkeys, rkeys []int
	var nullSafe []bool
	var equi []expr.Expr
	for i := range jc.LeftKeys {
		l, r := jc.LeftKeys[i], jc.RightKeys[i]
		switch {
		case l == ls && r == rs:
			hasStart = true
		case l == le && r == re:
			hasEnd = true
		default:
			lkeys, rkeys = append(lkeys, l), append(rkeys, r)
			nullSafe = append(nullSafe, jc.NullSafe[i])
			equi = append(equi, jc.Equi[i])
		}
	}
	if !hasStart || !hasEnd {
		return nil, false, nil
	}
	lnames, rnames := left.node.Schema().Names(), right.node.Schema().Names()
	lt, rt := windowText(lw, lnames, ls, le), windowText(rw, rnames, rs, re)
	a, b := lw.Window, rw.Window
	if (a.Loc == nil) != (b.Loc == nil) {
		// One side's window ends are local times, the other's UTC ones.
		return nil, true, fmt.Errorf("Currently, window join doesn't support different time attribute type of left and right inputs.\n"+
			"The left time attribute type is %s.\nThe right time attribute type is %s.",
			lw.inputs[0].Schema()[a.TimeCol].Type, rw.inputs[0].Schema()[b.TimeCol].Type)
	}
	if a.Kind != b.Kind || a.Size != b.Size || a.Slide != b.Slide || a.Step != b.Step || a.Gap != b.Gap || a.Offset != b.Offset {
		return nil, true, fmt.Errorf("Currently, window join doesn't support different window table function of left and right inputs.\n"+
			"The left window table function is %s, the right window table function is %s.", lt, rt)
	}
	if a.Kind == exec.Session {
		return nil, true, &UnsupportedError{Msg: "A window join over SESSION windows is not supported; the windowing TVF of a window join must be TUMBLE, HOP or CUMULATE"}
	}
	if !a.EventTime || !b.EventTime {
		return nil, true, &UnsupportedError{Msg: "Processing time Window Join is not supported yet."}
	}
	for _, in := range []Node{left.node, right.node} {
		if err := requireInsertOnly("WindowJoin", in); err != nil {
			return nil, true, err
		}
	}
	sc := joinScope(left.scope, right.scope, typ)
	for i := range sc.cols {
		sc.cols[i].Type = sc.cols[i].Type.WithoutTimeAttr()
	}
	names, out := joinOutput(sc)
	n := &WindowJoinNode{Type: typ, LeftKeys: lkeys, RightKeys: rkeys, NullSafe: nullSafe,
		LeftEndCol: le, RightEndCol: re, LeftWindow: lt, RightWindow: rt, Loc: a.Loc}
	if all := append(equi, residual...); len(all) > 0 {
		n.Cond = expr.ShiftColumns(andExprs(all), 0, names)
	}
	if len(residual) > 0 {
		n.Residual = andExprs(residual)
	}
	lpart, rpart := joinPartitioners(lkeys, rkeys)
	n.inputs = []Node{pc.exchange(left.node, lpart), pc.exchange(right.node, rpart)}
	n.schema, n.mode = out, types.InsertOnly
	return &relation{node: n, scope: sc}, true, nil
}

// buildWindowJoin adds the vertex of a window join.
func (gb *graphBuilder) buildWindowJoin(x *WindowJoinNode) (*exec.Vertex, error) {
	v, err := gb.twoInputVertex(x)
	if err != nil {
		return nil, err
	}
	spec := join.WindowSpec{
		Type:       x.Type,
		Left:       join.Side{Width: len(x.inputs[0].Schema()), Keys: x.LeftKeys},
		Right:      join.Side{Width: len(x.inputs[1].Schema()), Keys: x.RightKeys},
		NullSafe:   x.NullSafe,
		LeftEndCol: x.LeftEndCol, RightEndCol: x.RightEndCol,
		Loc: x.Loc,
	}
	residual, cfg := x.Residual, gb.cfg
	return appendOp(v, x.Describe(), func() (exec.Operator, error) {
		sp := spec
		if residual != nil {
			sp.Residual = expr.NewPredicate(residual, cfg)
		}
		return join.NewWindow(sp)
	}), nil
}
