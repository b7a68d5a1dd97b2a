package plan

import (
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/over"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// OverAggNode is an OVER aggregation: each input row with the aggregates of
// its frame appended. Insert-only in and out.
type OverAggNode struct {
	base
	PartitionCols []int
	OrderCol      int  // the ORDER BY time attribute
	EventTime     bool // ORDER BY a rowtime attribute (else proctime)
	Rows          bool // ROWS frame; else RANGE
	Preceding     int64
	Aggs          []AggCall
	// Batch: the sort-based batch OVER (exec/over.NewBatch), with any
	// order keys and frame.
	Batch     bool
	OrderKeys []exec.SortKey
	Frame     over.Frame
}

func (n *OverAggNode) Describe() string {
	in := n.inputs[0].Schema()
	var b strings.Builder
	if n.Batch {
		return n.describeBatch(in)
	}
	b.WriteString("OverAggregate(")
	if len(n.PartitionCols) > 0 {
		b.WriteString("partitionBy=[" + colNames(in, n.PartitionCols) + "], ")
	}
	b.WriteString("orderBy=[" + in[n.OrderCol].Name + " ASC], window=[")
	// Flink prints a RANGE frame as RANG.
	if n.Rows {
		b.WriteString("ROWS")
	} else {
		b.WriteString("RANG")
	}
	b.WriteString(" BETWEEN ")
	if n.Preceding < 0 {
		b.WriteString("UNBOUNDED")
	} else {
		b.WriteString(strconv.FormatInt(n.Preceding, 10))
	}
	b.WriteString(" PRECEDING AND CURRENT ROW], select=[")
	items := in.Names()
	for _, a := range n.Aggs {
		items = append(items, a.Text+" AS "+a.Name)
	}
	b.WriteString(strings.Join(items, ", ") + "])")
	return b.String()
}

// isOverAggregate reports whether f is an aggregate function, or a ranking
// or offset function, with OVER.
func isOverAggregate(f *parser.FuncCall) bool {
	name := strings.ToUpper(f.FuncName())
	return f.Over != nil && (agg.IsAggregate(name) || agg.IsOverFunction(name))
}

// isRankFunction reports whether f is ROW_NUMBER, RANK or DENSE_RANK with
// OVER: alone in a SELECT it may become a Top-N.
func isRankFunction(f *parser.FuncCall) bool {
	switch strings.ToUpper(f.FuncName()) {
	case "ROW_NUMBER", "RANK", "DENSE_RANK":
		return f.Over != nil
	}
	return false
}

// overFrame is the frame an over function runs with. Calcite forbids one
// (they compute over the partition up to the current row) and gives
// ROW_NUMBER ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW, the others
// the default RANGE frame, so peers (rows of one timestamp) share RANK,
// DENSE_RANK and LAG values but not row numbers.
func overFrame(f *parser.FuncCall, w *parser.WindowSpec) (*parser.WindowSpec, error) {
	name := strings.ToUpper(f.FuncName())
	if !agg.IsOverFunction(name) {
		return w, nil
	}
	if w.Frame != nil {
		return nil, errAt(f, "ROW/RANGE not allowed with RANK, DENSE_RANK or ROW_NUMBER functions")
	}
	if name != "ROW_NUMBER" {
		return w, nil
	}
	r := *w
	r.Frame = &parser.WindowFrame{Unit: "ROWS", Start: parser.FrameBound{Kind: "UNBOUNDED PRECEDING"}}
	return &r, nil
}

// overAggregates lists the aggregate calls with OVER in the select items.
func overAggregates(s *parser.Select) []*parser.FuncCall {
	var calls []*parser.FuncCall
	for _, it := range s.Items {
		walkExpr(it.Expr, func(x parser.Expr) {
			if f, ok := x.(*parser.FuncCall); ok && isOverAggregate(f) {
				calls = append(calls, f)
			}
		})
	}
	return calls
}

// resolveWindow replaces a reference to a WINDOW clause item by its
// specification (with what the OVER adds to it).
func resolveWindow(s *parser.Select, spec *parser.WindowSpec) (*parser.WindowSpec, error) {
	if spec.Ref == "" {
		return spec, nil
	}
	for _, w := range s.Windows {
		if strings.EqualFold(w.Name, spec.Ref) {
			base, err := resolveWindow(s, w.Spec)
			if err != nil {
				return nil, err
			}
			r := *base
			r.Ref = ""
			if len(spec.PartitionBy) > 0 {
				if len(base.PartitionBy) > 0 {
					return nil, errAt(spec, "PARTITION BY not allowed with existing window reference")
				}
				r.PartitionBy = spec.PartitionBy
			}
			if len(spec.OrderBy) > 0 {
				if len(base.OrderBy) > 0 {
					return nil, errAt(spec, "ORDER BY not allowed in both base and referenced windows")
				}
				r.OrderBy = spec.OrderBy
			}
			if spec.Frame != nil {
				r.Frame = spec.Frame
			}
			return &r, nil
		}
	}
	return nil, errAt(spec, "Window '%s' not found", spec.Ref)
}

func overWindowKey(w *parser.WindowSpec) string {
	var parts []string
	for _, e := range w.PartitionBy {
		parts = append(parts, parser.FormatExpr(e))
	}
	s := strings.Join(parts, ",") + "|"
	for _, o := range w.OrderBy {
		s += parser.FormatExpr(o.Expr) + " " + strconv.FormatBool(o.Desc) + o.Nulls + ","
	}
	if f := w.Frame; f != nil {
		s += "|" + f.Unit + " " + f.Start.Kind
		if f.Start.Offset != nil {
			s += parser.FormatExpr(f.Start.Offset)
		}
		if f.End != nil {
			s += " " + f.End.Kind
			if f.End.Offset != nil {
				s += parser.FormatExpr(f.End.Offset)
			}
		} else {
			s += " CURRENT ROW"
		}
	}
	return s
}

// planOver plans a SELECT whose items hold aggregates with OVER: a
// projection of the input plus the aggregates' arguments, hashed by the
// PARTITION BY columns into an OverAggregate, then the select items.
func (pc *planContext) planOver(s *parser.Select, from *relation, calls []*parser.FuncCall) (*relation, error) {
	if len(s.GroupBy) > 0 || s.Having != nil || s.Distinct || hasAggregate(s) {
		return nil, unsupportedAt(calls[0], "OVER aggregates together with GROUP BY, HAVING, DISTINCT or other aggregates in the same SELECT are not supported; aggregate in a subquery first")
	}
	for _, it := range s.Items {
		var err error
		walkExpr(it.Expr, func(x parser.Expr) {
			if f, ok := x.(*parser.FuncCall); ok && f.Over != nil && !isOverAggregate(f) && err == nil {
				err = unsupportedAt(f, "%s() OVER (...) together with OVER aggregates is not supported yet", strings.ToUpper(f.FuncName()))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	var win *parser.WindowSpec
	// In batch mode the ranking and offset functions ignore the frame, so
	// they share a window with aggregates of the same partition and order.
	winIsFunc := false
	for _, f := range calls {
		w, err := resolveWindow(s, f.Over)
		if err != nil {
			return nil, err
		}
		if w, err = overFrame(f, w); err != nil {
			return nil, err
		}
		isFunc := pc.batchMode() && agg.IsOverFunction(strings.ToUpper(f.FuncName()))
		same := win == nil || overWindowKey(w) == overWindowKey(win)
		if !same && (isFunc || winIsFunc) {
			same = overWindowKey(withoutFrame(w)) == overWindowKey(withoutFrame(win))
		}
		if !same {
			if pc.batchMode() {
				return nil, unsupportedAt(f, "OVER aggregates over different windows in one SELECT are not supported yet in batch mode; compute them over one window, or each in its own subquery")
			}
			return nil, tableError("Over Agg: Unsupported use of OVER windows. All aggregates must be computed on the same window. please re-check the over window statement.")
		}
		if win == nil || winIsFunc && !isFunc {
			win, winIsFunc = w, isFunc
		}
	}
	node := from.node
	if s.Where != nil {
		cond, err := pc.bindCondition(from.scope, s.Where)
		if err != nil {
			return nil, err
		}
		node = newCalc(node, nil, cond, node.Schema())
	}
	node = pc.final(node) // batch mode: the final rows of an updating input
	if err := requireInsertOnly("OverAggregate", node); err != nil {
		return nil, err
	}
	inSchema := node.Schema()
	pre := make([]expr.Expr, len(inSchema))
	preSchema := append(types.Schema(nil), inSchema...)
	for i, c := range inSchema {
		pre[i] = expr.Column(i, c.Name, c.Type)
	}
	add := func(x expr.Expr) int {
		if ref, ok := x.(*expr.ColumnRef); ok && ref.Index < len(inSchema) {
			return ref.Index
		}
		for i, p := range pre {
			if p.String() == x.String() {
				return i
			}
		}
		pre = append(pre, x)
		preSchema = append(preSchema, types.Column{Name: "$" + strconv.Itoa(len(pre)-1), Type: x.Type()})
		return len(pre) - 1
	}
	b := &binder{scope: from.scope, clause: "OVER", cancel: pc.cancel}
	n := &OverAggNode{}
	if pc.batchMode() {
		if err := pc.batchOverWindow(n, win, calls, b, add); err != nil {
			return nil, err
		}
	} else if err := pc.streamOverWindow(n, win, b, add); err != nil {
		return nil, err
	}
	// The aggregates, in the order written; equal calls share one column.
	cols := map[*parser.FuncCall]int{}
	byText := map[string]int{}
	for _, f := range calls {
		plain := *f
		plain.Over = nil
		text := parser.FormatExpr(&plain)
		if i, ok := byText[text]; ok {
			cols[f] = i
			continue
		}
		var r *aggRecord
		var err error
		if agg.IsOverFunction(strings.ToUpper(f.FuncName())) {
			var order expr.Expr = expr.Literal(types.NullValue, types.BigIntType)
			if n.OrderCol >= 0 {
				order = expr.Column(n.OrderCol, preSchema[n.OrderCol].Name, preSchema[n.OrderCol].Type)
			}
			r, err = pc.bindOverFunction(&plain, from.scope, order, pc.batchMode())
		} else {
			r, err = pc.bindAggregate(&plain, from.scope)
		}
		if err != nil {
			return nil, err
		}
		c := agg.Call{Name: r.fn, Distinct: r.distinct, FilterCol: -1, ResultType: r.result, ConstArgs: r.consts}
		for _, a := range r.args {
			c.ArgCols = append(c.ArgCols, add(a))
			c.ArgTypes = append(c.ArgTypes, a.Type())
		}
		if r.filter != nil {
			c.FilterCol = add(r.filter)
		}
		byText[text] = len(n.Aggs)
		cols[f] = len(n.Aggs)
		n.Aggs = append(n.Aggs, AggCall{Call: c, Text: text, Name: "w0$o" + strconv.Itoa(len(n.Aggs))})
	}
	var in Node = node
	if len(pre) > len(inSchema) {
		in = newCalc(node, pre, nil, preSchema)
	}
	n.inputs = []Node{pc.keyedExchange(in, n.PartitionCols)}
	n.schema = append(types.Schema(nil), preSchema...)
	for _, a := range n.Aggs {
		n.schema = append(n.schema, types.Column{Name: a.Name, Type: a.Call.ResultType})
	}
	n.mode = types.InsertOnly
	aggBase := len(preSchema)
	sb := &binder{scope: from.scope, clause: "SELECT", cancel: pc.cancel}
	sb.hook = func(e parser.Expr) (expr.Expr, bool, error) {
		f, ok := e.(*parser.FuncCall)
		if !ok {
			return nil, false, nil
		}
		i, ok := cols[f]
		if !ok {
			return nil, false, nil
		}
		c := n.schema[aggBase+i]
		return expr.Column(aggBase+i, c.Name, c.Type), true, nil
	}
	items := *s
	items.Where = nil
	proj, out, err := pc.bindSelectList(&items, from.scope, sb)
	if err != nil {
		return nil, err
	}
	calc := newCalc(n, proj, nil, out)
	return &relation{node: calc, scope: newScope("", out)}, nil
}

// constantInt evaluates a constant integer expression.
func (pc *planContext) constantInt(e parser.Expr) (int64, bool) {
	b := &binder{scope: &scope{}}
	x, err := b.bind(e)
	if err != nil || !expr.IsConstant(x) {
		return 0, false
	}
	v, err := expr.EvalConstant(x, pc.p.exprConfig())
	if err != nil || v.K != types.KindInt {
		return 0, false
	}
	return v.Int(), true
}

// overOperator builds the operator of an OverAggNode.
func (gb *graphBuilder) overOperator(x *OverAggNode) func() (exec.Operator, error) {
	calls := make([]agg.Call, len(x.Aggs))
	for i, a := range x.Aggs {
		calls[i] = a.Call
	}
	if x.Batch {
		return batchOverOperator(x, calls)
	}
	spec := over.Spec{KeyCols: x.PartitionCols, TimeCol: -1, Rows: x.Rows, Preceding: x.Preceding}
	if x.EventTime {
		spec.TimeCol = x.OrderCol
	}
	return func() (exec.Operator, error) {
		h, err := agg.NewOverHandle(calls, agg.Options{NeedsRetraction: spec.Preceding >= 0})
		if err != nil {
			return nil, err
		}
		sp := spec
		sp.Aggs = h
		return over.New(sp)
	}
}

// tableError is an error Flink's planner raises as a TableException: no
// source position, its message as is.
func tableError(msg string) error { return &UnsupportedError{Msg: msg} }

// bindOverFunction binds ROW_NUMBER(), RANK(), DENSE_RANK() (their
// argument is the ORDER BY key, order) or LAG(x [, offset [, default]]).
func (pc *planContext) bindOverFunction(f *parser.FuncCall, sc *scope, order expr.Expr, batch bool) (*aggRecord, error) {
	name := strings.ToUpper(f.FuncName())
	if msg := agg.StreamOverError(name); msg != "" && !batch {
		return nil, tableError(msg)
	}
	if f.Distinct || f.Filter != nil {
		return nil, errAt(f, "DISTINCT and FILTER are not allowed with %s", name)
	}
	r := &aggRecord{fn: name}
	args := f.ArgExprs()
	b := &binder{scope: sc, clause: name, cancel: pc.cancel}
	switch name {
	case "ROW_NUMBER", "RANK", "DENSE_RANK", "CUME_DIST", "PERCENT_RANK":
		if len(args) != 0 {
			return nil, errAt(f, "Invalid number of arguments to function '%s'. Was expecting 0 arguments", name)
		}
		if name == "RANK" || name == "DENSE_RANK" {
			r.args = []expr.Expr{order}
		}
		if name == "CUME_DIST" || name == "PERCENT_RANK" {
			r.result = types.DoubleType.WithNullable(false)
			return r, nil
		}
	case "NTILE":
		// Batch mode only (StreamOverError refuses it in streaming).
		if len(args) != 1 {
			return nil, errAt(f, "Invalid number of arguments to function 'NTILE'. Was expecting 1 arguments")
		}
		v, ok := pc.constantInt(args[0])
		if !ok || v <= 0 {
			return nil, errAt(args[0], "The argument of NTILE must be a positive integer literal")
		}
		r.consts = []types.Value{types.Int(v)}
	case "LAG", "LEAD":
		if len(args) == 0 || len(args) > 3 {
			return nil, errAt(f, "Invalid number of arguments to function '%s'. Was expecting 1 to 3 arguments", name)
		}
		x, err := b.bind(args[0])
		if err != nil {
			return nil, err
		}
		r.args = []expr.Expr{x}
		argTypes := []types.Type{x.Type()}
		if len(args) >= 2 {
			off, err := b.bind(args[1])
			if err != nil {
				return nil, err
			}
			v, cerr := types.Value{}, error(nil)
			if expr.IsConstant(off) {
				v, cerr = expr.EvalConstant(off, pc.p.exprConfig())
			}
			if !expr.IsConstant(off) || cerr != nil || v.K != types.KindInt || v.Int() < 0 {
				return nil, errAt(args[1], "The offset of %s must be a non-negative integer literal", name)
			}
			r.consts = []types.Value{v}
			argTypes = append(argTypes, off.Type())
		}
		if len(args) == 3 {
			d, err := b.bind(args[2])
			if err != nil {
				return nil, err
			}
			if d, err = expr.CastIfNeeded(d, x.Type().WithoutTimeAttr().WithNullable(true)); err != nil {
				return nil, errAt(args[2], "%s", err.Error())
			}
			r.args = append(r.args, d)
			argTypes = append(argTypes, d.Type())
		}
		t, err := agg.OverResultType(name, argTypes)
		if err != nil {
			return nil, errAt(f, "%s", err.Error())
		}
		r.result = t
		return r, nil
	}
	r.result = types.BigIntType.WithNullable(false)
	return r, nil
}

// streamOverWindow plans the ORDER BY, PARTITION BY and frame of a
// streaming OVER window: one time attribute, ascending, frames up to the
// current row.
func (pc *planContext) streamOverWindow(n *OverAggNode, win *parser.WindowSpec, b *binder, add func(expr.Expr) int) error {
	// ORDER BY: one time attribute, ascending.
	if len(win.OrderBy) != 1 {
		if len(win.OrderBy) == 0 {
			return tableError("OVER windows' ordering in stream mode must be defined on a time attribute.")
		}
		return tableError("The window can only be ordered by a single time column.")
	}
	ord, err := b.bind(win.OrderBy[0].Expr)
	if err != nil {
		return err
	}
	ref, ok := ord.(*expr.ColumnRef)
	if !ok || !ord.Type().IsTimeAttr() {
		return tableError("OVER windows' ordering in stream mode must be defined on a time attribute.")
	}
	if win.OrderBy[0].Desc {
		return tableError("The window can only be ordered in ASCENDING mode.")
	}
	n.OrderCol = ref.Index
	n.EventTime = ord.Type().TimeAttr == types.RowtimeAttr
	for _, e := range win.PartitionBy {
		x, err := b.bind(e)
		if err != nil {
			return err
		}
		n.PartitionCols = append(n.PartitionCols, add(x))
	}
	// The frame; without one, RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
	n.Preceding = -1
	if fr := win.Frame; fr != nil {
		n.Rows = strings.EqualFold(fr.Unit, "ROWS")
		unit := "RANGE"
		if n.Rows {
			unit = "ROWS"
		}
		if fr.End != nil && fr.End.Kind != "CURRENT ROW" || fr.Start.Kind == "FOLLOWING" || fr.Start.Kind == "UNBOUNDED FOLLOWING" {
			return tableError("OVER " + unit + " FOLLOWING windows are not supported yet.")
		}
		switch fr.Start.Kind {
		case "UNBOUNDED PRECEDING":
		case "CURRENT ROW":
			n.Preceding = 0
		case "PRECEDING":
			if n.Rows {
				v, ok := pc.constantInt(fr.Start.Offset)
				if !ok || v < 0 {
					return errAt(fr.Start.Offset, "ROWS frame offset must be a non-negative integer literal, such as 2 PRECEDING")
				}
				n.Preceding = v
			} else {
				ms, err := pc.intervalMillis(fr.Start.Offset, "a RANGE frame")
				if err != nil {
					return err
				}
				if ms < 0 {
					return errAt(fr.Start.Offset, "RANGE frame offset must not be negative")
				}
				n.Preceding = ms
			}
		}
	}
	return nil
}

// batchOverWindow plans the window of a batch OVER (Flink's sort-based
// OverAggregate): any ORDER BY keys, ASC or DESC, NULLS FIRST for ASC and
// LAST for DESC unless written, and ROWS or RANGE frames reaching
// PRECEDING and FOLLOWING rows.
func (pc *planContext) batchOverWindow(n *OverAggNode, win *parser.WindowSpec, calls []*parser.FuncCall, b *binder, add func(expr.Expr) int) error {
	n.Batch = true
	n.OrderCol = -1
	for _, f := range calls {
		switch name := strings.ToUpper(f.FuncName()); name {
		case "RANK", "DENSE_RANK":
			if len(win.OrderBy) == 0 {
				return errAt(f, "RANK or DENSE_RANK functions require ORDER BY clause in window specification")
			}
		}
	}
	for _, e := range win.PartitionBy {
		x, err := b.bind(e)
		if err != nil {
			return err
		}
		n.PartitionCols = append(n.PartitionCols, add(x))
	}
	var orderTypes []types.Type
	for _, o := range win.OrderBy {
		x, err := b.bind(o.Expr)
		if err != nil {
			return err
		}
		nullsFirst := !o.Desc
		switch o.Nulls {
		case "FIRST":
			nullsFirst = true
		case "LAST":
			nullsFirst = false
		}
		col := add(x)
		if n.OrderCol < 0 {
			n.OrderCol = col
		}
		n.OrderKeys = append(n.OrderKeys, exec.SortKey{Col: col, Desc: o.Desc, NullsFirst: nullsFirst})
		orderTypes = append(orderTypes, x.Type())
	}
	fr := over.Frame{Start: over.Bound{Kind: over.UnboundedPreceding}, End: over.Bound{Kind: over.CurrentRow}}
	w := win.Frame
	if w == nil {
		n.Frame = fr
		return nil
	}
	fr.Rows = strings.EqualFold(w.Unit, "ROWS")
	bound := func(fb *parser.FrameBound) (over.Bound, error) {
		switch fb.Kind {
		case "UNBOUNDED PRECEDING":
			return over.Bound{Kind: over.UnboundedPreceding}, nil
		case "UNBOUNDED FOLLOWING":
			return over.Bound{Kind: over.UnboundedFollowing}, nil
		case "CURRENT ROW":
			return over.Bound{Kind: over.CurrentRow}, nil
		}
		kind := over.Preceding
		if fb.Kind == "FOLLOWING" {
			kind = over.Following
		}
		if fr.Rows {
			v, ok := pc.constantInt(fb.Offset)
			if !ok || v < 0 {
				return over.Bound{}, errAt(fb.Offset, "ROWS frame offset must be a non-negative integer literal, such as 2 PRECEDING")
			}
			return over.Bound{Kind: kind, Offset: v}, nil
		}
		if len(n.OrderKeys) != 1 {
			return over.Bound{}, errAt(fb.Offset, "RANGE clause with a PRECEDING or FOLLOWING offset requires exactly one ORDER BY column")
		}
		t := orderTypes[0]
		switch {
		case t.IsInteger():
			v, ok := pc.constantInt(fb.Offset)
			if !ok || v < 0 {
				return over.Bound{}, errAt(fb.Offset, "RANGE frame offset over an integer ORDER BY column must be a non-negative integer literal")
			}
			return over.Bound{Kind: kind, Offset: v}, nil
		case t.Root == types.RootTimestamp || t.Root == types.RootTimestampLTZ:
			ms, err := pc.intervalMillis(fb.Offset, "a RANGE frame")
			if err != nil {
				return over.Bound{}, err
			}
			if ms < 0 {
				return over.Bound{}, errAt(fb.Offset, "RANGE frame offset must not be negative")
			}
			return over.Bound{Kind: kind, Offset: ms}, nil
		}
		return over.Bound{}, unsupportedAt(fb.Offset, "a RANGE frame with an offset over an ORDER BY column of type %s is not supported yet in batch mode; order by an integer or timestamp column, or use a ROWS frame", t)
	}
	var err error
	if fr.Start, err = bound(&w.Start); err != nil {
		return err
	}
	if w.End != nil {
		if fr.End, err = bound(w.End); err != nil {
			return err
		}
	}
	if fr.Start.Kind == over.UnboundedFollowing {
		return errAt(win, "UNBOUNDED FOLLOWING cannot be specified for the lower frame boundary")
	}
	if fr.End.Kind == over.UnboundedPreceding {
		return errAt(win, "UNBOUNDED PRECEDING cannot be specified for the upper frame boundary")
	}
	n.Frame = fr
	return nil
}

// describeBatch prints a batch OverAggregate.
func (n *OverAggNode) describeBatch(in types.Schema) string {
	var b strings.Builder
	b.WriteString("OverAggregate(")
	if len(n.PartitionCols) > 0 {
		b.WriteString("partitionBy=[" + colNames(in, n.PartitionCols) + "], ")
	}
	if len(n.OrderKeys) > 0 {
		var keys []string
		for _, k := range n.OrderKeys {
			s := in[k.Col].Name + " ASC"
			if k.Desc {
				s = in[k.Col].Name + " DESC"
			}
			// Only a NULL order other than the default (first for ASC,
			// last for DESC) is printed.
			switch {
			case k.NullsFirst && k.Desc:
				s += " NULLS FIRST"
			case !k.NullsFirst && !k.Desc:
				s += " NULLS LAST"
			}
			keys = append(keys, s)
		}
		b.WriteString("orderBy=[" + strings.Join(keys, ", ") + "], ")
	}
	b.WriteString("window=[")
	if n.Frame.Rows {
		b.WriteString("ROWS")
	} else {
		b.WriteString("RANG")
	}
	b.WriteString(" BETWEEN " + boundText(n.Frame.Start) + " AND " + boundText(n.Frame.End) + "], select=[")
	items := in.Names()
	for _, a := range n.Aggs {
		items = append(items, a.Text+" AS "+a.Name)
	}
	b.WriteString(strings.Join(items, ", ") + "])")
	return b.String()
}

func boundText(b over.Bound) string {
	switch b.Kind {
	case over.UnboundedPreceding:
		return "UNBOUNDED PRECEDING"
	case over.UnboundedFollowing:
		return "UNBOUNDED FOLLOWING"
	case over.Preceding:
		return strconv.FormatInt(b.Offset, 10) + " PRECEDING"
	case over.Following:
		return strconv.FormatInt(b.Offset, 10) + " FOLLOWING"
	}
	return "CURRENT ROW"
}

// batchOverOperator builds the batch OVER operator: the aggregate
// functions go to an agg.Handle, the ranking and offset functions are
// evaluated by the operator over the sorted partition.
func batchOverOperator(x *OverAggNode, calls []agg.Call) func() (exec.Operator, error) {
	var aggCalls []agg.Call
	var funcs []over.Func
	slots := make([]int, len(calls))
	for i, c := range calls {
		if !agg.IsOverFunction(c.Name) {
			slots[i] = len(aggCalls)
			aggCalls = append(aggCalls, c)
			continue
		}
		f := over.Func{Name: c.Name, ArgCol: -1, DefCol: -1, Offset: 1}
		if c.Name == "NTILE" {
			f.Offset = int(min(c.ConstArgs[0].Int(), 1<<30))
		}
		if c.Name == "LAG" || c.Name == "LEAD" {
			f.ArgCol = c.ArgCols[0]
			if len(c.ArgCols) > 1 {
				f.DefCol = c.ArgCols[1]
			}
			if len(c.ConstArgs) > 0 {
				f.Offset = int(c.ConstArgs[0].Int())
			}
		}
		slots[i] = -len(funcs) - 1
		funcs = append(funcs, f)
	}
	retract := x.Frame.Start.Kind != over.UnboundedPreceding
	return func() (exec.Operator, error) {
		h, err := agg.NewHandle(aggCalls, agg.Options{NeedsRetraction: retract})
		if err != nil {
			return nil, err
		}
		return over.NewBatch(over.BatchSpec{KeyCols: x.PartitionCols, Order: x.OrderKeys, Frame: x.Frame, Aggs: h, Funcs: funcs, Slots: slots})
	}
}

func withoutFrame(w *parser.WindowSpec) *parser.WindowSpec {
	r := *w
	r.Frame = nil
	return &r
}
