package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// aggRecord is one distinct aggregate call found in a grouped query.
type aggRecord struct {
	text     string
	name     string
	args     []expr.Expr
	consts   []types.Value
	filter   expr.Expr
	distinct bool
	fn       string
	result   types.Type
}

// planAggregate plans a grouped SELECT. Window aggregations (over a window
// TVF grouped by window_start and window_end, or with a legacy
// TUMBLE/HOP/SESSION group window) are insert-only; any other grouping
// produces an updating changelog.
func (pc *planContext) planAggregate(s *parser.Select, from *relation) (*relation, error) {
	var keyASTs []parser.Expr
	var legacy *parser.FuncCall
	winCols := map[string]bool{}
	winIdx := map[string]int{}
	// A window TVF (directly or through projections and filters) is taken
	// over by the aggregation; rows that carry the window columns of a
	// window operator that runs on its own (a window aggregation, or a TVF
	// whose columns a projection computes with) are aggregated per the
	// window they carry (Flink's window-attached strategy).
	tvf, isTVF := pc.windowedFrom(from)
	attached := !isTVF && hasWindowKeys(from, s.GroupBy)
	winKind := func(idx int) string {
		switch {
		case isTVF:
			return tvf.kind(idx)
		case attached:
			return windowProperty(from.node, idx)
		}
		return ""
	}
	hasSets := false
	for _, g := range s.GroupBy {
		switch x := g.(type) {
		case *parser.GroupingSet:
			hasSets = true
		case *parser.RowExpr:
			hasSets = hasSets || !x.Explicit
		case *parser.FuncCall:
			if isGroupWindowFunction(strings.ToUpper(x.FuncName())) {
				if legacy != nil {
					return nil, errAt(x, "Multiple group window functions in GROUP BY are not supported")
				}
				legacy = x
				continue
			}
		case *parser.Ident:
			idx, used, msg := from.scope.resolve(x.Parts)
			if msg == "" && used == len(x.Parts) && winKind(idx) != "" {
				winCols[winKind(idx)] = true
				winIdx[winKind(idx)] = idx
				continue
			}
		}
		keyASTs = append(keyASTs, g)
	}
	// Grouping sets: the grouping columns are the distinct expressions of
	// all sets; sets[i] holds the columns of set i. Without grouping sets
	// the one set holds every GROUP BY expression.
	var sets []uint64
	if hasSets {
		var err error
		if keyASTs, sets, err = flattenGroupBy(keyASTs); err != nil {
			return nil, err
		}
		if isTVF || attached {
			// The window columns of a window TVF written inside the sets
			// window the aggregation when every set holds them.
			for i := len(keyASTs) - 1; i >= 0; i-- {
				id, ok := keyASTs[i].(*parser.Ident)
				if !ok {
					continue
				}
				idx, used, msg := from.scope.resolve(id.Parts)
				if msg != "" || used != len(id.Parts) || winKind(idx) == "" || !inEverySet(sets, i) {
					continue
				}
				winCols[winKind(idx)] = true
				winIdx[winKind(idx)] = idx
				keyASTs, sets = removeGroupingColumn(keyASTs, sets, i)
			}
			if !winCols["window_start"] || !winCols["window_end"] {
				// Not a window aggregation after all: the window columns
				// found stay grouping columns of a plain aggregation.
				var err error
				if keyASTs, sets, err = flattenGroupBy(s.GroupBy); err != nil {
					return nil, err
				}
				winCols = map[string]bool{}
			}
		}
	} else {
		sets = []uint64{1<<uint(min(len(keyASTs), 64)) - 1}
	}
	expandSets := len(sets) > 1
	var at parser.Node = s
	if len(s.GroupBy) > 0 {
		at = s.GroupBy[0]
	}
	setIDs, setDups, err := groupingSetIDs(at, sets, len(keyASTs))
	if err != nil {
		return nil, err
	}

	var input Node
	var inScope *scope
	var w windowInfo
	grouped := false // an unwindowed, updating aggregation
	switch {
	case legacy != nil && isTVF:
		return nil, errAt(legacy, "A group window function cannot be combined with a window table function")
	case legacy != nil:
		input, inScope = from.node, from.scope
		var err error
		if w, err = pc.legacyWindow(legacy, from.scope); err != nil {
			return nil, err
		}
	case isTVF && winCols["window_start"] && winCols["window_end"]:
		input, inScope, w = tvf.input, tvf.inScope, tvf.info
	case attached && winCols["window_start"] && winCols["window_end"]:
		spec, fn, ok := attachedWindow(from.node, winIdx["window_end"])
		if !ok || windowProperty(from.node, winIdx["window_start"]) != "window_start" {
			return nil, unsupportedAt(s.GroupBy[0], "a window aggregation over window_start and window_end that do not come from the same window is not supported")
		}
		if spec.Kind == exec.Session {
			return nil, unsupportedAt(s.GroupBy[0], "a window aggregation over the output of a SESSION window aggregation is not supported yet; "+
				"group by window_start and window_end of a window table function over its window_time instead")
		}
		spec.Attached = true
		input, inScope = from.node, from.scope
		w = windowInfo{spec: spec, fn: windowText(&WindowTVFNode{Window: spec, WindowFn: fn}, from.node.Schema().Names(), winIdx["window_start"], winIdx["window_end"])}
		// window_time keeps the type of the window's time attribute.
		w.time = types.Type{Root: types.RootTimestamp, Precision: 3}
		if spec.Loc != nil {
			w.time.Root = types.RootTimestampLTZ
		}
	default:
		isTVF, attached = false, false
		// No window: an updating GROUP BY over the FROM relation (a window
		// TVF grouped without both window_start and window_end is read as a
		// plain table with window columns, as in Flink).
		input, inScope, grouped = from.node, from.scope, true
	}
	if !grouped {
		if err := pc.checkEmit(legacy); err != nil {
			return nil, err
		}
		if legacy != nil {
			// Flink's legacy GroupWindowAggregate takes an updating input:
			// retractions leave their windows again (and a window left
			// without rows emits nothing).
			w.spec.Retracting = updating(input.Mode())
		} else if err := requireInsertOnly("WindowAggregate", input); err != nil {
			return nil, err
		}
	}

	// Group keys over the aggregation input.
	keyBinder := &binder{scope: inScope, clause: "GROUP BY", cancel: pc.cancel}
	keyExprs := make([]expr.Expr, len(keyASTs))
	keyNames := make([]string, len(keyASTs))
	for i, k := range keyASTs {
		x, err := keyBinder.bind(k)
		if err != nil {
			return nil, err
		}
		keyExprs[i] = x
		if id, ok := k.(*parser.Ident); ok {
			keyNames[i] = id.Parts[len(id.Parts)-1]
		} else {
			keyNames[i] = "$f" + strconv.Itoa(i)
		}
	}
	if w.spec.Kind == exec.Session && len(w.partitionBy) > 0 {
		// Sessions are kept per PARTITION BY key, which must be grouped.
		for _, pk := range w.partitionBy {
			x, err := keyBinder.bind(pk)
			if err != nil {
				return nil, err
			}
			found := false
			for _, k := range keyExprs {
				found = found || k.String() == x.String()
			}
			if !found {
				return nil, errAt(pk, "The SESSION window partition key %s must be in the GROUP BY clause", parser.FormatExpr(pk))
			}
		}
	}

	// Pass 1: find the aggregate calls of the select list and HAVING.
	var aggs []*aggRecord
	aggIndex := map[string]int{}
	register := func(f *parser.FuncCall) (int, error) {
		text := parser.FormatExpr(f)
		if i, ok := aggIndex[text]; ok {
			return i, nil
		}
		r, err := pc.bindAggregate(f, inScope)
		if err != nil {
			return 0, err
		}
		r.text = text
		aggIndex[text] = len(aggs)
		aggs = append(aggs, r)
		return len(aggs) - 1, nil
	}
	collect := func(e parser.Expr) error {
		var err error
		walkExpr(e, func(x parser.Expr) {
			if f, ok := x.(*parser.FuncCall); ok && err == nil && f.Over == nil && isAggregateName(f.FuncName()) {
				for _, a := range f.ArgExprs() {
					walkExpr(a, func(y parser.Expr) {
						if g, ok := y.(*parser.FuncCall); ok && err == nil && g != f && isAggregateName(g.FuncName()) {
							err = errAt(g, "Aggregate expressions cannot be nested")
						}
					})
				}
				if err == nil {
					_, err = register(f)
				}
			}
		})
		return err
	}
	for _, it := range s.Items {
		if err := collect(it.Expr); err != nil {
			return nil, err
		}
	}
	if s.Having != nil {
		if err := collect(s.Having); err != nil {
			return nil, err
		}
	}
	// Name aggregates after the select item they are, when they are one.
	for pos, it := range s.Items {
		if f, ok := it.Expr.(*parser.FuncCall); ok {
			if i, ok := aggIndex[parser.FormatExpr(f)]; ok && aggs[i].name == "" {
				if it.Alias != "" {
					aggs[i].name = it.Alias
				} else {
					aggs[i].name = "EXPR$" + strconv.Itoa(pos)
				}
			}
		}
	}
	for i, a := range aggs {
		if a.name == "" {
			a.name = "$f" + strconv.Itoa(len(keyExprs)+i)
		}
	}

	// The pre-aggregation projection: keys, aggregate arguments, filters, time.
	pre := append([]expr.Expr(nil), keyExprs...)
	preSchema := make(types.Schema, 0, len(pre))
	for i, k := range keyExprs {
		preSchema = append(preSchema, types.Column{Name: keyNames[i], Type: k.Type()})
	}
	add := func(x expr.Expr) int {
		pre = append(pre, x)
		preSchema = append(preSchema, types.Column{Name: "$f" + strconv.Itoa(len(pre)-1), Type: x.Type()})
		return len(pre) - 1
	}
	calls := make([]AggCall, len(aggs))
	for i, a := range aggs {
		c := agg.Call{Name: a.fn, Distinct: a.distinct, FilterCol: -1, ResultType: a.result, ConstArgs: a.consts}
		for _, arg := range a.args {
			c.ArgCols = append(c.ArgCols, add(arg))
			c.ArgTypes = append(c.ArgTypes, arg.Type())
		}
		if a.filter != nil {
			c.FilterCol = add(a.filter)
		}
		calls[i] = AggCall{Call: c, Text: a.text, Name: a.name}
	}
	spec := w.spec
	if grouped {
		spec.TimeCol = -1
	} else if spec.Attached {
		ec := from.scope.cols[winIdx["window_end"]]
		pre = append(pre, expr.Column(winIdx["window_end"], ec.Name, ec.Type))
		preSchema = append(preSchema, types.Column{Name: ec.Name, Type: ec.Type})
		spec.EndCol = len(pre) - 1
	} else if spec.EventTime {
		tc := inScope.cols[spec.TimeCol]
		pre = append(pre, expr.Column(spec.TimeCol, input.Schema()[spec.TimeCol].Name, tc.Type))
		preSchema = append(preSchema, types.Column{Name: input.Schema()[spec.TimeCol].Name, Type: tc.Type})
		spec.TimeCol = len(pre) - 1
	} else {
		spec.TimeCol = -1
	}
	// WHERE over a window TVF: conditions on input columns filter rows before
	// the aggregation; conditions only on window_start/window_end/window_time
	// hold for all rows of a window alike, so they filter the aggregated
	// windows instead (the same result); a condition mixing both is refused.
	var cond expr.Expr
	var windowConds []parser.Expr
	if s.Where != nil {
		var inputConds []parser.Expr
		for _, c := range splitAnd(s.Where) {
			onWindow, onInput := false, false
			if isTVF {
				walkExpr(c, func(e parser.Expr) {
					if id, ok := e.(*parser.Ident); ok {
						if idx, _, msg := from.scope.resolve(id.Parts); msg == "" && winKind(idx) != "" {
							onWindow = true
						} else {
							onInput = true
						}
					}
				})
			}
			switch {
			case onWindow && onInput:
				return nil, unsupportedAt(c, "a WHERE condition on both window columns and other columns of a window table function is not supported yet; split it into separate AND-ed conditions")
			case onWindow:
				windowConds = append(windowConds, c)
			default:
				inputConds = append(inputConds, c)
			}
		}
		if len(inputConds) > 0 {
			c, err := pc.bindCondition(inScope, andAll(inputConds))
			if err != nil {
				return nil, err
			}
			cond = c
		}
	}
	hintSkip(input, cond)
	var aggInput Node = newCalc(input, pre, cond, preSchema)

	keyCols := make([]int, len(keyExprs))
	for i := range keyCols {
		keyCols[i] = i
	}
	ecol := -1 // the grouping id $e in the aggregate's output
	if expandSets {
		e := newExpand(aggInput, len(keyExprs), sets, setIDs)
		aggInput = e
		ecol = len(keyExprs)
		keyCols = append(keyCols, len(pre))
	}
	ex := pc.keyedExchange(aggInput, keyCols)
	var aggSchema types.Schema
	for i := range keyExprs {
		aggSchema = append(aggSchema, types.Column{Name: keyNames[i], Type: aggInput.Schema()[i].Type.WithoutTimeAttr()})
	}
	if expandSets {
		aggSchema = append(aggSchema, aggInput.Schema()[len(pre)])
	}
	for _, a := range aggs {
		aggSchema = append(aggSchema, types.Column{Name: a.name, Type: a.result})
	}
	var aggNode Node
	var wcols types.Schema
	if grouped {
		g := &GroupAggNode{KeyCols: keyCols, Aggs: calls}
		g.inputs, g.schema = []Node{ex}, aggSchema
		g.mode = types.ChangelogMode{Insert: true, UpdateBefore: true, UpdateAfter: true, Delete: updating(input.Mode())}
		aggNode = g
	} else {
		wagg := &WindowAggNode{Window: spec, WindowFn: w.fn, KeyCols: keyCols, Aggs: calls}
		wcols = windowColumns(w)
		aggSchema = append(aggSchema, wcols...)
		wagg.inputs, wagg.schema, wagg.mode = []Node{ex}, aggSchema, types.InsertOnly
		aggNode = wagg
	}
	nk, na := len(keyCols), len(aggs)

	// Pass 2: bind the select list and HAVING over the aggregation's output.
	legacyArgs := ""
	if legacy != nil {
		legacyArgs = argsText(legacy)
	}
	probe := &binder{scope: inScope, clause: "SELECT", cancel: pc.cancel}
	keyOf := func(a parser.Expr) (int, error) {
		if id, ok := a.(*parser.Ident); ok && (isTVF || attached) {
			// A window column of the aggregation is in every set.
			if idx, used, msg := from.scope.resolve(id.Parts); msg == "" && used == len(id.Parts) && winCols[winKind(idx)] {
				return inEverySetColumn, nil
			}
		}
		px, err := probe.bind(a)
		if err != nil {
			return 0, err
		}
		for k, kx := range keyExprs {
			if kx.String() == px.String() {
				return k, nil
			}
		}
		return -1, nil
	}
	hook := func(e parser.Expr) (expr.Expr, bool, error) {
		switch x := e.(type) {
		case *parser.FuncCall:
			name := strings.ToUpper(x.FuncName())
			if isGroupingFunction(name) {
				g, err := groupingCall(x, keyOf, sets, setIDs, setDups, ecol)
				return g, true, err
			}
			if x.Over == nil && isAggregateName(name) {
				i := aggIndex[parser.FormatExpr(x)]
				return expr.Column(nk+i, aggs[i].name, aggs[i].result), true, nil
			}
			if legacy != nil && isWindowProperty(name) {
				prefix, suffix, _ := strings.Cut(name, "_")
				if prefix != strings.ToUpper(legacy.FuncName()) || argsText(x) != legacyArgs {
					return nil, true, errAt(x, "%s must be called with the same arguments as the %s group window in GROUP BY", name, strings.ToUpper(legacy.FuncName()))
				}
				switch suffix {
				case "START":
					return expr.Column(nk+na, "window_start", wcols[0].Type), true, nil
				case "END":
					return expr.Column(nk+na+1, "window_end", wcols[1].Type), true, nil
				case "ROWTIME":
					if !w.spec.EventTime {
						return nil, true, errAt(x, "%s requires an event-time (rowtime) window", name)
					}
					return expr.Column(nk+na+2, "window_time", wcols[2].Type), true, nil
				case "PROCTIME":
					if w.spec.EventTime {
						return nil, true, errAt(x, "%s requires a processing-time window", name)
					}
					return expr.Column(nk+na+2, "window_time", wcols[2].Type), true, nil
				}
			}
		case *parser.Ident:
			if isTVF || attached {
				if idx, used, msg := from.scope.resolve(x.Parts); msg == "" && used == len(x.Parts) && winKind(idx) != "" {
					name := winKind(idx)
					if name == "window_time" && !winCols["window_time"] {
						return nil, true, errAt(x, "Expression 'window_time' is not being grouped; add window_time to the GROUP BY clause")
					}
					j := map[string]int{"window_start": 0, "window_end": 1, "window_time": 2}[name]
					return expr.Column(nk+na+j, name, wcols[j].Type), true, nil
				}
			}
		}
		px, err := probe.bind(e)
		if err != nil {
			if _, isIdent := e.(*parser.Ident); isIdent {
				return nil, true, err
			}
			return nil, false, nil
		}
		text := px.String()
		for k, kx := range keyExprs {
			if kx.String() == text {
				return expr.Column(k, keyNames[k], aggSchema[k].Type), true, nil
			}
		}
		if expr.IsConstant(px) {
			return px, true, nil
		}
		if _, isIdent := e.(*parser.Ident); isIdent {
			return nil, true, errAt(e, "Expression '%s' is not being grouped", parser.FormatExpr(e))
		}
		return nil, false, nil
	}
	post := &binder{scope: newScope("", aggSchema), clause: "SELECT", hook: hook, cancel: pc.cancel}
	proj, out, err := pc.bindSelectList(s, from.scope, post)
	if err != nil {
		return nil, err
	}
	var having expr.Expr
	if s.Having != nil || len(windowConds) > 0 {
		var conds []parser.Expr
		if s.Having != nil {
			conds = append(conds, s.Having)
		}
		post.clause = "HAVING"
		h, err := post.bind(andAll(append(conds, windowConds...)))
		if err != nil {
			return nil, err
		}
		if t := h.Type(); t.Root != types.RootBoolean {
			return nil, errAt(s.Having, "HAVING clause must be a condition")
		}
		having = h
	}
	if having == nil && isIdentity(proj, aggSchema, out) {
		return &relation{node: aggNode, scope: newScope("", out)}, nil
	}
	calc := newCalc(aggNode, proj, having, out)
	return &relation{node: calc, scope: newScope("", out)}, nil
}

func argsText(f *parser.FuncCall) string {
	parts := make([]string, len(f.Args))
	for i, a := range f.Args {
		parts[i] = parser.FormatExpr(a.Value)
	}
	return strings.Join(parts, ", ")
}

// bindAggregate binds the arguments and FILTER of one aggregate call.
func (pc *planContext) bindAggregate(f *parser.FuncCall, sc *scope) (*aggRecord, error) {
	name := strings.ToUpper(f.FuncName())
	r := &aggRecord{fn: name, distinct: f.Distinct}
	b := &binder{scope: sc, clause: "aggregate argument", cancel: pc.cancel}
	args := f.ArgExprs()
	if len(args) == 1 {
		if _, star := args[0].(*parser.Star); star {
			if name != "COUNT" {
				return nil, errAt(f, "Unknown identifier '*'")
			}
			args = nil
		}
	}
	for i, a := range args {
		if name == "LISTAGG" && i == 1 {
			x, err := b.bind(a)
			if err != nil {
				return nil, err
			}
			if !expr.IsConstant(x) {
				return nil, errAt(a, "The separator of LISTAGG must be a string literal")
			}
			v, err := expr.EvalConstant(x, pc.p.exprConfig())
			if err != nil {
				return nil, errAt(a, "%s", err.Error())
			}
			r.consts = append(r.consts, v)
			continue
		}
		x, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		r.args = append(r.args, x)
	}
	argTypes := make([]types.Type, len(r.args))
	for i, a := range r.args {
		argTypes[i] = a.Type()
	}
	t, err := agg.ResultTypeIn(name, argTypes, f.Distinct, agg.Context{Filtered: f.Filter != nil})
	if err != nil {
		return nil, errAt(f, "%s", err.Error())
	}
	r.result = t
	if f.Filter != nil {
		fb := &binder{scope: sc, clause: "FILTER", cancel: pc.cancel}
		x, err := fb.bind(f.Filter)
		if err != nil {
			return nil, err
		}
		if x.Type().Root != types.RootBoolean {
			return nil, errAt(f.Filter, "FILTER expression must be of type BOOLEAN")
		}
		r.filter = x
	}
	return r, nil
}

// legacyWindow resolves TUMBLE(ts, size), HOP(ts, slide, size) or SESSION(ts, gap) in GROUP BY.
func (pc *planContext) legacyWindow(f *parser.FuncCall, sc *scope) (windowInfo, error) {
	name := strings.ToUpper(f.FuncName())
	args := f.ArgExprs()
	want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2}[name]
	if name == "CUMULATE" {
		return windowInfo{}, errAt(f, "CUMULATE is only available as a window table function: TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size))")
	}
	if len(args) != want && !(name == "TUMBLE" && len(args) == 3) {
		return windowInfo{}, errAt(f, "Invalid number of arguments to function '%s'. Was expecting %d arguments", name, want)
	}
	id, ok := args[0].(*parser.Ident)
	if !ok {
		return windowInfo{}, errAt(args[0], "Window aggregate can only be defined over a time attribute column, but %s encountered.", parser.FormatExpr(args[0]))
	}
	idx, _, msg := sc.resolve(id.Parts)
	if msg != "" {
		return windowInfo{}, errAt(id, "%s", msg)
	}
	t := sc.cols[idx].Type
	if t.TimeAttr == types.NoTimeAttr {
		return windowInfo{}, errAt(id, "Window aggregate can only be defined over a time attribute column, but %s encountered.", t)
	}
	w := windowInfo{time: t}
	w.spec.Legacy = true
	w.spec.TimeCol = idx
	w.spec.EventTime = t.TimeAttr == types.RowtimeAttr
	if t.Root == types.RootTimestampLTZ {
		w.spec.Loc = pc.p.cfg.Loc
	}
	var err error
	col := id.Parts[len(id.Parts)-1]
	switch name {
	case "TUMBLE":
		w.spec.Kind = exec.Tumble
		if w.spec.Size, err = pc.intervalMillis(args[1], name); err != nil {
			return w, err
		}
		if len(args) == 3 {
			if w.spec.Offset, err = pc.intervalMillis(args[2], name); err != nil {
				return w, err
			}
		}
		w.fn = fmt.Sprintf("TumblingGroupWindow('w$, %s, %d)", col, w.spec.Size)
	case "HOP":
		w.spec.Kind = exec.Hop
		if w.spec.Slide, err = pc.intervalMillis(args[1], name); err != nil {
			return w, err
		}
		if w.spec.Size, err = pc.intervalMillis(args[2], name); err != nil {
			return w, err
		}
		w.fn = fmt.Sprintf("SlidingGroupWindow('w$, %s, %d, %d)", col, w.spec.Size, w.spec.Slide)
	case "SESSION":
		w.spec.Kind = exec.Session
		if w.spec.Gap, err = pc.intervalMillis(args[1], name); err != nil {
			return w, err
		}
		w.fn = fmt.Sprintf("SessionGroupWindow('w$, %s, %d)", col, w.spec.Gap)
	}
	if err := validateWindow(f, w.spec); err != nil {
		return w, err
	}
	return w, nil
}

// hasWindowKeys reports whether GROUP BY names both window_start and
// window_end columns that come from a window operator below a projection.
func hasWindowKeys(from *relation, groupBy []parser.Expr) bool {
	seen := map[string]bool{}
	for _, g := range groupBy {
		id, ok := g.(*parser.Ident)
		if !ok {
			continue
		}
		if idx, used, msg := from.scope.resolve(id.Parts); msg == "" && used == len(id.Parts) {
			seen[windowProperty(from.node, idx)] = true
		}
	}
	return seen["window_start"] && seen["window_end"]
}

// andAll joins conditions with AND.
func andAll(cs []parser.Expr) parser.Expr {
	out := cs[0]
	for _, c := range cs[1:] {
		out = &parser.BinaryExpr{Op: "AND", L: out, R: c}
	}
	return out
}

// checkEmit refuses a window aggregation while a table.exec.emit.* option is
// on: legacy names the group window function, nil means a window TVF. The
// TVF message for early and late firing is Flink's own; Flink ignores
// allow-lateness there, which would silently drop the late rows the user
// asked to keep, so it is refused too.
func (pc *planContext) checkEmit(legacy *parser.FuncCall) error {
	e := pc.p.cfg.Emit
	if legacy == nil {
		if e.EarlyFire || e.LateFire {
			return &UnsupportedError{Msg: "Currently, window table function based aggregate doesn't support early-fire and late-fire configuration " +
				"'table.exec.emit.early-fire.enabled' and 'table.exec.emit.late-fire.enabled'."}
		}
		if e.AllowLateness > 0 {
			return &UnsupportedError{Msg: fmt.Sprintf("Currently, window table function based aggregate doesn't support 'table.exec.emit.allow-lateness' = '%s'; "+
				"it drops rows that arrive after the watermark passed their window's end. RESET 'table.exec.emit.allow-lateness' (or set it to '0 ms') to run this window aggregation.", e.AllowLatenessText)}
		}
		return nil
	}
	const fires = "a group window fires once, when the watermark passes its end, and drops rows that arrive later; "
	switch {
	case e.AllowLateness > 0:
		return unsupportedAt(legacy, "'table.exec.emit.allow-lateness' = '%s' is not supported yet: "+fires+
			"updating a fired window for late rows is not implemented. RESET 'table.exec.emit.allow-lateness' (or set it to '0 ms') to run this window aggregation.", e.AllowLatenessText)
	case e.LateFire:
		return unsupportedAt(legacy, "'table.exec.emit.late-fire.enabled' = 'true' is not supported yet: "+fires+
			"updating a fired window for late rows is not implemented. RESET 'table.exec.emit.late-fire.enabled' (or set it to 'false') to run this window aggregation.")
	case e.EarlyFire:
		return unsupportedAt(legacy, "'table.exec.emit.early-fire.enabled' = 'true' is not supported yet: "+fires+
			"firing a window before its end is not implemented. RESET 'table.exec.emit.early-fire.enabled' (or set it to 'false') to run this window aggregation.")
	}
	return nil
}
