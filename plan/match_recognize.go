package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/cep"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// MatchNode is a MATCH_RECOGNIZE: per partition, rows in time order
// matched against a pattern, one row per match (the partition columns,
// then the measures). Insert-only in and out.
type MatchNode struct {
	base
	PartitionCols []int
	OrderCol      int
	EventTime     bool
	SortCols      []cep.SortKey
	// Args are what the pattern reads of an input row: the partition
	// columns, then the navigations' arguments.
	Args     []expr.Expr
	Pattern  []cep.Element
	Defines  []matchDefine
	Navs     []matchNav
	Measures []expr.Expr // over the slot row
	// MeasureNavs lists the navigations the measures read.
	MeasureNavs []int
	Skip        cep.SkipKind
	SkipVar     int
	Within      int64
	// text is the EXPLAIN detail, written from the statement.
	text string
}

type matchDefine struct {
	name string
	cond expr.Expr // over the slot row; nil: TRUE
	navs []int
}

type matchNav struct {
	nav  cep.Nav
	typ  types.Type
	key  string
	call *agg.Call
}

func (n *MatchNode) Describe() string { return "Match(" + n.text + ")" }

// matchBinder binds the expressions of DEFINE and MEASURES: column
// references through pattern variables, FIRST/LAST, aggregates and
// MATCH_ROWTIME/MATCH_PROCTIME become navigations (columns of the slot
// row the operator fills per match).
type matchBinder struct {
	pc    *planContext
	in    *scope
	node  *MatchNode
	vars  map[string]int
	argIx map[string]int
	navIx map[string]int
	used  map[int]bool
}

func (mb *matchBinder) addArg(x expr.Expr) int {
	k := x.String()
	if i, ok := mb.argIx[k]; ok {
		return i
	}
	mb.node.Args = append(mb.node.Args, x)
	mb.argIx[k] = len(mb.node.Args) - 1
	return len(mb.node.Args) - 1
}

func (mb *matchBinder) addNav(n cep.Nav, t types.Type, key string, call *agg.Call) expr.Expr {
	i, ok := mb.navIx[key]
	if !ok {
		mb.node.Navs = append(mb.node.Navs, matchNav{nav: n, typ: t, key: key, call: call})
		i = len(mb.node.Navs) - 1
		mb.navIx[key] = i
	}
	mb.used[i] = true
	return expr.Column(i, "$nav"+strconv.Itoa(i), mb.node.Navs[i].typ)
}

// bindRow binds an expression over one row of a pattern variable: V.col
// is the row's column; it returns the variable (-1: none named, every
// variable) and fails if the expression names more than one.
func (mb *matchBinder) bindRow(e parser.Expr, what string) (expr.Expr, int, error) {
	v := -1
	var verr error
	b := &binder{scope: mb.in, clause: "MATCH_RECOGNIZE", cancel: mb.pc.cancel}
	b.hook = func(x parser.Expr) (expr.Expr, bool, error) {
		id, ok := x.(*parser.Ident)
		if !ok || len(id.Parts) < 2 {
			if f, ok := x.(*parser.FuncCall); ok && isMatchNavigation(f) {
				return nil, true, errAt(f, "%s cannot be nested in %s", strings.ToUpper(f.FuncName()), what)
			}
			return nil, false, nil
		}
		vi, ok := mb.vars[id.Parts[0]]
		if !ok {
			return nil, false, nil
		}
		if v >= 0 && v != vi && verr == nil {
			verr = errAt(id, "%s must be applied to a single pattern variable, but references %s and %s", what,
				mb.node.Defines[v].name, id.Parts[0])
		}
		v = vi
		plain := &parser.Ident{Parts: id.Parts[1:]}
		plain.P = id.P
		r, err := b.bind(plain)
		return r, true, err
	}
	x, err := b.bind(e)
	if err == nil {
		err = verr
	}
	return x, v, err
}

func isMatchNavigation(f *parser.FuncCall) bool {
	switch strings.ToUpper(f.FuncName()) {
	case "FIRST", "LAST", "PREV", "NEXT":
		return true
	}
	return agg.IsAggregate(strings.ToUpper(f.FuncName())) && f.Over == nil
}

// bind binds a DEFINE condition or a measure; used collects the
// navigations it reads.
func (mb *matchBinder) bind(e parser.Expr, clause string) (expr.Expr, error) {
	b := &binder{scope: mb.in, clause: clause, cancel: mb.pc.cancel}
	b.hook = func(x parser.Expr) (expr.Expr, bool, error) {
		switch n := x.(type) {
		case *parser.Ident:
			r, v, err := mb.bindRow(n, "a column reference")
			if err != nil {
				return nil, true, err
			}
			return mb.last(r, v, 0, false), true, nil
		case *parser.FuncCall:
			r, ok, err := mb.call(n, b)
			return r, ok, err
		}
		return nil, false, nil
	}
	return b.bind(e)
}

func (mb *matchBinder) last(arg expr.Expr, v, off int, first bool) expr.Expr {
	kind, k := cep.NavLast, "L"
	if first {
		kind, k = cep.NavFirst, "F"
	}
	a := mb.addArg(arg)
	key := fmt.Sprintf("%s/%d/%d/%d", k, v, off, a)
	t := arg.Type().WithNullable(true)
	return mb.addNav(cep.Nav{Kind: kind, Var: v, Offset: off, Arg: a}, t, key, nil)
}

func (mb *matchBinder) offset(f *parser.FuncCall, args []parser.Expr, def int64) (int64, error) {
	if len(args) < 2 {
		return def, nil
	}
	v, ok := mb.pc.constantInt(args[1])
	if !ok || v < 0 {
		return 0, errAt(args[1], "The offset of %s must be a non-negative integer literal", strings.ToUpper(f.FuncName()))
	}
	return v, nil
}

func (mb *matchBinder) call(f *parser.FuncCall, outer *binder) (expr.Expr, bool, error) {
	name := strings.ToUpper(f.FuncName())
	args := f.ArgExprs()
	switch name {
	case "FIRST", "LAST":
		if len(args) < 1 || len(args) > 2 {
			return nil, true, errAt(f, "Invalid number of arguments to function '%s'. Was expecting 1 or 2 arguments", name)
		}
		off, err := mb.offset(f, args, 0)
		if err != nil {
			return nil, true, err
		}
		r, v, err := mb.bindRow(args[0], name)
		if err != nil {
			return nil, true, err
		}
		return mb.last(r, v, int(off), name == "FIRST"), true, nil
	case "PREV", "NEXT":
		if len(args) < 1 || len(args) > 2 {
			return nil, true, errAt(f, "Invalid number of arguments to function '%s'. Was expecting 1 or 2 arguments", name)
		}
		off, err := mb.offset(f, args, 1)
		if err != nil {
			return nil, true, err
		}
		if off != 0 {
			return nil, true, tableError("Flink does not support physical offsets within partition.")
		}
		r, err := outer.bind(args[0])
		return r, true, err
	case "FINAL", "RUNNING":
		if len(args) != 1 {
			return nil, true, errAt(f, "Invalid number of arguments to function '%s'. Was expecting 1 arguments", name)
		}
		r, err := outer.bind(args[0])
		return r, true, err
	case "CLASSIFIER", "MATCH_NUMBER":
		return nil, true, unsupportedAt(f, "%s() is not supported in MATCH_RECOGNIZE (Flink 1.20 does not support it)", name)
	case "MATCH_ROWTIME":
		if !mb.node.EventTime {
			return nil, true, errAt(f, "MATCH_ROWTIME() needs a MATCH_RECOGNIZE ordered by a rowtime attribute")
		}
		col := expr.Column(mb.node.OrderCol, mb.in.cols[mb.node.OrderCol].Name, mb.in.cols[mb.node.OrderCol].Type)
		if len(args) == 1 {
			r, _, err := mb.bindRow(args[0], name)
			if err != nil {
				return nil, true, err
			}
			if ref, ok := r.(*expr.ColumnRef); !ok || ref.Type().TimeAttr != types.RowtimeAttr {
				return nil, true, errAt(args[0], "The argument of MATCH_ROWTIME must be a rowtime attribute")
			}
			col = r.(*expr.ColumnRef)
		} else if len(args) > 1 {
			return nil, true, errAt(f, "Invalid number of arguments to function 'MATCH_ROWTIME'. Was expecting 0 or 1 arguments")
		}
		a := mb.addArg(col)
		return mb.addNav(cep.Nav{Kind: cep.NavLast, Var: -1, Arg: a}, col.Type(), fmt.Sprintf("R/%d", a), nil), true, nil
	case "MATCH_PROCTIME":
		if len(args) != 0 {
			return nil, true, errAt(f, "Invalid number of arguments to function 'MATCH_PROCTIME'. Was expecting 0 arguments")
		}
		t := types.Type{Root: types.RootTimestampLTZ, Precision: 3, TimeAttr: types.ProctimeAttr}
		return mb.addNav(cep.Nav{Kind: cep.NavProctime, Var: -1}, t, "P", nil), true, nil
	}
	if !agg.IsAggregate(name) || f.Over != nil {
		return nil, false, nil
	}
	if f.Distinct {
		return nil, true, errAt(f, "DISTINCT aggregations are not supported in MATCH_RECOGNIZE")
	}
	if f.Filter != nil {
		return nil, true, errAt(f, "FILTER is not supported with aggregations in MATCH_RECOGNIZE")
	}
	call := agg.Call{Name: name, FilterCol: -1}
	v := -1
	star := len(args) == 1
	if star {
		_, star = args[0].(*parser.Star)
	}
	if !star {
		if len(args) != 1 {
			return nil, true, errAt(f, "Aggregations in MATCH_RECOGNIZE take one argument")
		}
		r, rv, err := mb.bindRow(args[0], "An aggregation")
		if err != nil {
			return nil, true, err
		}
		v = rv
		call.ArgCols = []int{mb.addArg(r)}
		call.ArgTypes = []types.Type{r.Type().WithoutTimeAttr()}
	} else if name != "COUNT" {
		return nil, true, errAt(f, "Only COUNT accepts * as its argument")
	}
	t, err := agg.ResultType(name, call.ArgTypes, false)
	if err != nil {
		return nil, true, errAt(f, "%s", err.Error())
	}
	call.ResultType = t
	key := fmt.Sprintf("A/%s/%d/%v", name, v, call.ArgCols)
	return mb.addNav(cep.Nav{Kind: cep.NavAgg, Var: v}, t, key, &call), true, nil
}

// planMatchRecognize plans `input MATCH_RECOGNIZE (...)`.
func (pc *planContext) planMatchRecognize(m *parser.MatchRecognize, env *cteEnv) (*relation, error) {
	in, err := pc.planFrom(m.Input, env)
	if err != nil {
		return nil, err
	}
	if m.AllRows {
		return nil, unsupportedAt(m, "ALL ROWS PER MATCH is not supported; Flink runs MATCH_RECOGNIZE with ONE ROW PER MATCH only")
	}
	if err := requireInsertOnly("Match Recognize", in.node); err != nil {
		return nil, err
	}
	inSchema := in.node.Schema()
	n := &MatchNode{SkipVar: -1}
	mb := &matchBinder{pc: pc, in: in.scope, node: n, vars: map[string]int{}, argIx: map[string]int{}, navIx: map[string]int{}}

	// ORDER BY: a time attribute first, ascending.
	ob := &binder{scope: in.scope, clause: "ORDER BY", cancel: pc.cancel}
	if len(m.OrderBy) == 0 {
		return nil, tableError("You must specify either rowtime or proctime for order by.")
	}
	for i, o := range m.OrderBy {
		x, err := ob.bind(o.Expr)
		if err != nil {
			return nil, err
		}
		ref, ok := x.(*expr.ColumnRef)
		if i == 0 {
			if !ok || !x.Type().IsTimeAttr() {
				return nil, tableError("You must specify either rowtime or proctime for order by as the first one.")
			}
			if o.Desc {
				return nil, tableError("Primary sort order of a streaming table must be ascending on time.")
			}
			n.OrderCol = ref.Index
			n.EventTime = x.Type().TimeAttr == types.RowtimeAttr
			continue
		}
		if !ok {
			return nil, errAt(o, "ORDER BY of MATCH_RECOGNIZE takes columns")
		}
		if !n.EventTime {
			// Flink buffers rows for a millisecond to sort them; rows here
			// are matched on arrival, so a secondary order would be ignored.
			return nil, unsupportedAt(o, "a secondary ORDER BY key after a processing-time attribute is not supported in MATCH_RECOGNIZE; order by the proctime attribute alone, or by a rowtime attribute")
		}
		n.SortCols = append(n.SortCols, cep.SortKey{Col: ref.Index, Desc: o.Desc})
	}
	// PARTITION BY columns; they are the first arguments.
	var outSchema types.Schema
	for _, e := range m.PartitionBy {
		x, err := ob.bind(e)
		if err != nil {
			return nil, err
		}
		ref, ok := x.(*expr.ColumnRef)
		if !ok {
			return nil, errAt(e, "PARTITION BY of MATCH_RECOGNIZE takes columns")
		}
		n.PartitionCols = append(n.PartitionCols, ref.Index)
		n.Args = append(n.Args, x)
		mb.argIx[x.String()] = len(n.Args) - 1
		outSchema = append(outSchema, types.Column{Name: inSchema[ref.Index].Name, Type: inSchema[ref.Index].Type.WithoutTimeAttr()})
	}

	// The pattern.
	last := len(m.Pattern) - 1
	empty := true
	for i, pe := range m.Pattern {
		if _, dup := mb.vars[pe.Var]; dup {
			return nil, tableError("Pattern variables must be unique. That might change in the future.")
		}
		mb.vars[pe.Var] = len(n.Defines)
		n.Defines = append(n.Defines, matchDefine{name: pe.Var})
		if pe.Reluctant && pe.Min == 0 && pe.Max == 1 {
			return nil, tableError("Reluctant optional variables are not supported yet.")
		}
		el := cep.Element{Var: mb.vars[pe.Var], Min: pe.Min, Max: pe.Max}
		if el.Max < 0 {
			el.Max = cep.Unbounded
		}
		// Flink's translation: *, +, {n,} and {n,m} are greedy unless
		// reluctant; ? and {n} are not (optional / fixed).
		el.Greedy = !pe.Reluctant && (pe.Max < 0 || pe.Max > pe.Min) && !(pe.Min == 0 && pe.Max == 1)
		if i == last && el.Greedy {
			return nil, tableError("Greedy quantifiers are not allowed as the last element of a Pattern yet. Finish your pattern with either a simple variable or reluctant quantifier.")
		}
		if pe.Min > 0 {
			empty = false
		}
		n.Pattern = append(n.Pattern, el)
	}
	if empty {
		return nil, tableError("Patterns that can produce empty matches are not supported. There must be at least one non-optional state.")
	}
	// AFTER MATCH SKIP; Flink's default is TO NEXT ROW.
	switch m.Skip {
	case parser.SkipPastLastRow:
		n.Skip = cep.SkipPastLastRow
	case parser.SkipToFirst, parser.SkipToLast:
		n.Skip = cep.SkipToLast
		if m.Skip == parser.SkipToFirst {
			n.Skip = cep.SkipToFirst
		}
		v, ok := mb.vars[m.SkipVar]
		if !ok {
			at := &parser.Ident{Parts: []string{m.SkipVar}}
			at.P = m.SkipVarPos
			return nil, errAt(at, "Unknown pattern '%s' in AFTER MATCH SKIP %s", m.SkipVar, m.Skip)
		}
		n.SkipVar = v
	default:
		n.Skip = cep.SkipToNextRow
	}
	if m.Within != nil {
		b := &binder{scope: &scope{}, clause: "WITHIN"}
		x, err := b.bind(m.Within)
		if err != nil {
			return nil, err
		}
		if x.Type().Root != types.RootIntervalDayTime || !expr.IsConstant(x) {
			return nil, tableError("Only constant intervals with millisecond resolution are supported as time constraints of patterns.")
		}
		v, err := expr.EvalConstant(x, pc.p.exprConfig())
		if err != nil {
			return nil, errAt(m.Within, "%s", err.Error())
		}
		if v.Int() <= 0 {
			return nil, errAt(m.Within, "The time constraint of a pattern must be positive")
		}
		n.Within = v.Int()
	}
	// DEFINE.
	for _, d := range m.Defines {
		vi, ok := mb.vars[d.Var]
		if !ok {
			return nil, errAt(d, "Unknown pattern '%s'", d.Var)
		}
		if n.Defines[vi].cond != nil {
			return nil, errAt(d, "Pattern variable '%s' is defined twice", d.Var)
		}
		mb.used = map[int]bool{}
		c, err := mb.bind(d.Cond, "DEFINE")
		if err != nil {
			return nil, err
		}
		if c.Type().Root != types.RootBoolean {
			return nil, errAt(d.Cond, "The condition of pattern variable '%s' must be BOOLEAN, but is %s", d.Var, c.Type())
		}
		n.Defines[vi].cond = c
		n.Defines[vi].navs = usedList(mb.used)
	}
	// MEASURES.
	mb.used = map[int]bool{}
	for _, it := range m.Measures {
		x, err := mb.bind(it.Expr, "MEASURES")
		if err != nil {
			return nil, err
		}
		t := x.Type()
		if !isMatchRowtime(it.Expr) {
			t = t.WithoutTimeAttr()
		}
		for _, c := range outSchema {
			if c.Name == it.Alias {
				return nil, errAt(it, "Duplicate column name '%s' in the output of MATCH_RECOGNIZE", it.Alias)
			}
		}
		n.Measures = append(n.Measures, x)
		outSchema = append(outSchema, types.Column{Name: it.Alias, Type: t})
	}
	n.MeasureNavs = usedList(mb.used)
	n.text = matchText(m, inSchema, n)
	n.inputs = []Node{pc.keyedExchange(in.node, n.PartitionCols)}
	n.schema = outSchema
	n.mode = types.InsertOnly
	rel := &relation{node: n, scope: newScope("", outSchema)}
	return aliasRelation(m, rel, m.Alias, m.ColumnAliases)
}

func isMatchRowtime(e parser.Expr) bool {
	f, ok := e.(*parser.FuncCall)
	return ok && strings.EqualFold(f.FuncName(), "MATCH_ROWTIME")
}

func usedList(used map[int]bool) []int {
	var out []int
	for i := range used {
		out = append(out, i)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// matchText is the EXPLAIN detail of a MATCH_RECOGNIZE, in Flink's
// layout, with the clauses as written.
func matchText(m *parser.MatchRecognize, in types.Schema, n *MatchNode) string {
	var b strings.Builder
	if len(n.PartitionCols) > 0 {
		b.WriteString("partitionBy=[" + colNames(in, n.PartitionCols) + "], ")
	}
	var order []string
	for _, o := range m.OrderBy {
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		order = append(order, parser.FormatExpr(o.Expr)+dir)
	}
	b.WriteString("orderBy=[" + strings.Join(order, ", ") + "], measures=[")
	for i, it := range m.Measures {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("FINAL(" + parser.FormatExpr(it.Expr) + ") AS " + it.Alias)
	}
	b.WriteString("], rowsPerMatch=[ONE ROW PER MATCH], after=[SKIP ")
	switch n.Skip {
	case cep.SkipPastLastRow:
		b.WriteString("PAST LAST ROW")
	case cep.SkipToNextRow:
		b.WriteString("TO NEXT ROW")
	case cep.SkipToFirst:
		b.WriteString("TO FIRST " + m.SkipVar)
	case cep.SkipToLast:
		b.WriteString("TO LAST " + m.SkipVar)
	}
	b.WriteString("], pattern=[")
	for i, e := range m.Pattern {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Var + e.Quant)
	}
	b.WriteString("]")
	if n.Within > 0 {
		b.WriteString(", within=[" + formatDuration(n.Within) + "]")
	}
	b.WriteString(", define=[")
	first := true
	for _, d := range m.Defines {
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(d.Var + " AS " + parser.FormatExpr(d.Cond))
	}
	b.WriteString("]")
	return b.String()
}

// matchOperator builds the operator of a MatchNode.
func (gb *graphBuilder) matchOperator(x *MatchNode) func() (exec.Operator, error) {
	cfg := gb.cfg
	spec := cep.Spec{KeyCols: x.PartitionCols, TimeCol: -1, SortCols: x.SortCols, ArgWidth: len(x.Args),
		Pattern: x.Pattern, Skip: x.Skip, SkipVar: x.SkipVar, Within: x.Within,
		MeasureWidth: len(x.Measures), MeasureNavs: x.MeasureNavs}
	if x.EventTime {
		spec.TimeCol = x.OrderCol
	}
	args, measures := x.Args, x.Measures
	spec.Args = func() (exec.Projector, error) { return expr.NewProjector(args, cfg), nil }
	spec.Measures = func() (exec.Projector, error) { return expr.NewProjector(measures, cfg), nil }
	for _, d := range x.Defines {
		def := cep.Define{Name: d.name, Navs: d.navs}
		if cond := d.cond; cond != nil {
			def.Cond = func() (exec.Predicate, error) { return expr.NewPredicate(cond, cfg), nil }
		}
		spec.Defines = append(spec.Defines, def)
	}
	for _, nv := range x.Navs {
		nav := nv.nav
		if c := nv.call; c != nil {
			call := *c
			nav.Agg = func() (exec.AggsHandle, error) { return agg.NewHandle([]agg.Call{call}, agg.Options{}) }
		}
		spec.Navs = append(spec.Navs, nav)
	}
	return func() (exec.Operator, error) { return cep.New(spec) }
}
