package plan

import (
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/types"
)

// windowNames are the window columns in the order a window TVF appends them.
var windowNames = [...]string{"window_start", "window_end", "window_time"}

// tvfFrom is a window aggregation's view of a FROM relation that is a window
// TVF, directly or through projections and filters (a subquery, view or CTE
// of the TVF): the aggregation reads the rows before windowing (input,
// visible through inScope) and assigns the windows itself, as Flink's planner
// does when it pulls the window table function up into the aggregate.
type tvfFrom struct {
	input   Node
	inScope *scope
	// kinds holds, per column of the FROM relation, which window column it
	// is ("" for the others).
	kinds []string
	info  windowInfo
}

func (t *tvfFrom) kind(idx int) string {
	if t == nil || idx < 0 || idx >= len(t.kinds) {
		return ""
	}
	return t.kinds[idx]
}

// pulledTVF is a window TVF with the projections and filters above it moved
// below it: n's column i is input column cols[i], or the window column
// kinds[i].
type pulledTVF struct {
	input Node
	cols  []int
	kinds []string
	info  windowInfo
}

// windowedFrom recognises a FROM relation whose window TVF a window
// aggregation can take over.
func (pc *planContext) windowedFrom(from *relation) (*tvfFrom, bool) {
	p, ok := pc.pullUpTVF(from.node)
	if !ok {
		return nil, false
	}
	t := &tvfFrom{input: p.input, kinds: p.kinds, info: p.info, inScope: &scope{}}
	in := p.input.Schema()
	t.inScope.cols = make([]scopeColumn, len(in))
	for i, c := range in {
		// Columns the FROM relation does not show (the time column a
		// projection dropped) cannot be named.
		t.inScope.cols[i] = scopeColumn{Name: "$" + c.Name + "$hidden", Type: c.Type}
	}
	for i, c := range p.cols {
		if c >= 0 {
			sc := from.scope.cols[i]
			t.inScope.cols[c] = scopeColumn{Qualifier: sc.Qualifier, Name: sc.Name, Type: sc.Type}
		}
	}
	return t, true
}

// pullUpTVF rewrites Calc(...Calc(WindowTableFunction(input))) into the
// window table function over Calc(input), when the projections pass the
// window columns on unchanged and neither they nor the filters compute with
// them. The time column is kept (hidden) when a projection dropped it.
func (pc *planContext) pullUpTVF(n Node) (*pulledTVF, bool) {
	if r, ok := pc.tvfInfo(n); ok {
		w := len(r.node.Inputs()[0].Schema())
		p := &pulledTVF{input: r.node.Inputs()[0], info: r.info}
		for i := range n.Schema() {
			if i < w {
				p.cols, p.kinds = append(p.cols, i), append(p.kinds, "")
			} else {
				p.cols, p.kinds = append(p.cols, -1), append(p.kinds, windowNames[i-w])
			}
		}
		return p, true
	}
	c, ok := n.(*CalcNode)
	if !ok {
		return nil, false
	}
	below, ok := pc.pullUpTVF(c.inputs[0])
	if !ok {
		return nil, false
	}
	usesWindow := func(x expr.Expr) bool {
		for _, i := range expr.UsesColumns(x) {
			if below.kinds[i] != "" {
				return true
			}
		}
		return false
	}
	in := below.input.Schema()
	rewrite := func(x expr.Expr) expr.Expr {
		return expr.MapColumns(x, func(r *expr.ColumnRef) expr.Expr {
			j := below.cols[r.Index]
			return expr.Column(j, in[j].Name, in[j].Type)
		})
	}
	proj := c.Project
	if proj == nil {
		for i, col := range c.inputs[0].Schema() {
			proj = append(proj, expr.Column(i, col.Name, col.Type))
		}
	}
	var filter expr.Expr
	if c.Filter != nil {
		if usesWindow(c.Filter) {
			return nil, false
		}
		filter = rewrite(c.Filter)
	}
	p := &pulledTVF{info: below.info}
	var pre []expr.Expr
	var schema types.Schema
	timeCol := -1
	for i, x := range proj {
		if ref, isRef := x.(*expr.ColumnRef); isRef && below.kinds[ref.Index] != "" {
			p.cols, p.kinds = append(p.cols, -1), append(p.kinds, below.kinds[ref.Index])
			continue
		}
		if usesWindow(x) {
			return nil, false
		}
		y := rewrite(x)
		if ref, isRef := y.(*expr.ColumnRef); isRef && ref.Index == below.info.spec.TimeCol && timeCol < 0 {
			timeCol = len(pre)
		}
		p.cols, p.kinds = append(p.cols, len(pre)), append(p.kinds, "")
		pre = append(pre, y)
		schema = append(schema, types.Column{Name: c.schema[i].Name, Type: y.Type()})
	}
	if below.info.spec.EventTime && timeCol < 0 {
		tc := below.info.spec.TimeCol
		timeCol = len(pre)
		pre = append(pre, expr.Column(tc, in[tc].Name, in[tc].Type))
		schema = append(schema, in[tc])
	}
	if timeCol >= 0 {
		p.info.spec.TimeCol = timeCol
	}
	p.input = newCalc(below.input, pre, filter, schema)
	return p, true
}

// attachedWindow finds the window whose window_end is column end of n (a
// window aggregation's or a window TVF's output, through projections and
// filters): a window aggregation over n groups by that window (Flink's
// window-attached strategy).
func attachedWindow(n Node, end int) (exec.WindowSpec, string, bool) {
	switch x := n.(type) {
	case *WindowAggNode:
		if end == len(x.schema)-2 {
			return x.Window, x.WindowFn, true
		}
	case *WindowTVFNode:
		if end == len(x.inputs[0].Schema())+1 {
			return x.Window, x.WindowFn, true
		}
	case *CalcNode:
		if x.Project == nil {
			return attachedWindow(x.inputs[0], end)
		}
		if ref, ok := x.Project[end].(*expr.ColumnRef); ok {
			return attachedWindow(x.inputs[0], ref.Index)
		}
	case *ExchangeNode:
		return attachedWindow(x.inputs[0], end)
	}
	return exec.WindowSpec{}, "", false
}
