package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// overRankMarker stands for SELECT …, ROW_NUMBER() OVER (PARTITION BY …
// ORDER BY …) AS rn FROM …: it becomes a Top-N, a deduplication or a window
// Top-N once the enclosing query filters on rn. Left alone it is an unbounded
// OVER aggregation, which is not supported.
type overRankMarker struct {
	base
	input         Node // projection: the select items, then extra key columns
	visible       int  // number of select items (rn excluded)
	rnCol         int  // position of the row number among the marker's columns
	partitionCols []int
	sortKeys      []exec.SortKey
	fn            string // ROW_NUMBER, RANK or DENSE_RANK
	// over is the query as an OVER aggregation, used when the enclosing
	// query does not filter on the rank (nil when it cannot be one: not
	// ordered by a time attribute); err is the error otherwise.
	over *relation
	err  error
}

// isSelectItem reports whether f is a whole select item.
func isSelectItem(s *parser.Select, f *parser.FuncCall) bool {
	for _, it := range s.Items {
		if it.Expr == parser.Expr(f) {
			return true
		}
	}
	return false
}

// resolveMarkers replaces, in the finished plan of rel, every ranking
// subquery no enclosing query filtered on by its OVER aggregation, or
// fails with its error.
func resolveMarkers(rel *relation) error {
	if m, ok := rel.node.(*overRankMarker); ok {
		if m.over == nil {
			return m.err
		}
		rel.node = m.over.node
	}
	var walk func(n Node) error
	walk = func(n Node) error {
		ins := n.Inputs()
		for i, in := range ins {
			if m, ok := in.(*overRankMarker); ok {
				if m.over == nil {
					return m.err
				}
				ins[i] = m.over.node
				in = ins[i]
			}
			if err := walk(in); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(rel.node)
}

func (m *overRankMarker) Describe() string {
	return "OverAggregate(partitionBy=[" + colNames(m.input.Schema(), m.partitionCols) + "], orderBy=[" +
		sortKeyNames(m.input.Schema(), m.sortKeys) + "], select=[ROW_NUMBER()])"
}

// rowNumberItem returns the select item holding ROW_NUMBER() OVER (…), if any.
func rowNumberItem(s *parser.Select) (int, *parser.FuncCall, error) {
	pos, call := -1, (*parser.FuncCall)(nil)
	for i, it := range s.Items {
		f, ok := it.Expr.(*parser.FuncCall)
		if !ok || f.Over == nil {
			continue
		}
		name := strings.ToUpper(f.FuncName())
		if !isRankFunction(f) {
			return 0, nil, unsupportedAt(f, "%s() OVER (...) is not supported; the functions with OVER are the aggregate functions, ROW_NUMBER, RANK, DENSE_RANK and LAG", name)
		}
		if pos >= 0 {
			return 0, nil, unsupportedAt(f, "only one ROW_NUMBER() per query is supported")
		}
		pos, call = i, f
	}
	return pos, call, nil
}

// planRowNumber plans a SELECT whose items include ROW_NUMBER() OVER (…).
func (pc *planContext) planRowNumber(s *parser.Select, from *relation, pos int, call *parser.FuncCall) (*relation, error) {
	if len(s.GroupBy) > 0 || s.Having != nil || s.Distinct {
		return nil, unsupportedAt(call, "ROW_NUMBER() together with GROUP BY or DISTINCT in the same SELECT is not supported; aggregate in a subquery first")
	}
	fn := strings.ToUpper(call.FuncName())
	over := call.Over
	if over.Frame != nil {
		return nil, errAt(call, "ROW/RANGE not allowed with RANK, DENSE_RANK or ROW_NUMBER functions")
	}
	if over.Ref == "" && len(over.OrderBy) == 0 && fn != "ROW_NUMBER" {
		return nil, errAt(call, "RANK or DENSE_RANK functions require ORDER BY clause in window specification")
	}
	if over.Ref != "" || len(over.OrderBy) == 0 {
		if pc.batchMode() {
			// A named window or no order: batch mode's OVER evaluates it.
			return pc.planOver(s, from, []*parser.FuncCall{call})
		}
		return nil, errAt(call, "%s() needs OVER (PARTITION BY … ORDER BY …)", fn)
	}
	// Unfiltered by the enclosing query, the call is an OVER aggregation
	// (Flink runs one when the ORDER BY is a time attribute).
	alt, altErr := pc.planOver(s, from, []*parser.FuncCall{call})
	node := from.node
	if s.Where != nil {
		cond, err := pc.bindCondition(from.scope, s.Where)
		if err != nil {
			return nil, err
		}
		node = newCalc(node, nil, cond, node.Schema())
	}
	b := &binder{scope: from.scope, clause: "SELECT"}
	// The select items without ROW_NUMBER.
	items := *s
	items.Items = append(append([]*parser.SelectItem(nil), s.Items[:pos]...), s.Items[pos+1:]...)
	proj, out, err := pc.bindSelectList(&items, from.scope, b)
	if err != nil {
		return nil, err
	}
	visible := len(proj)
	// Partition and order keys: reuse a projected column when it is one,
	// else project the expression as an extra column.
	colFor := func(e parser.Expr) (int, error) {
		x, err := b.bind(e)
		if err != nil {
			return 0, err
		}
		for i, p := range proj {
			if p.String() == x.String() {
				return i, nil
			}
		}
		proj = append(proj, x)
		out = append(out, types.Column{Name: "$f" + strconv.Itoa(len(proj)-1), Type: x.Type()})
		return len(proj) - 1, nil
	}
	// The row number's column: after every column the items before it
	// expand to (a star is one item but many columns).
	rnCol := 0
	for _, it := range s.Items[:pos] {
		rnCol += itemColumns(it, from.scope)
	}
	m := &overRankMarker{visible: visible, rnCol: rnCol, fn: fn, over: alt}
	for _, e := range over.PartitionBy {
		c, err := colFor(e)
		if err != nil {
			return nil, err
		}
		m.partitionCols = append(m.partitionCols, c)
	}
	for _, o := range over.OrderBy {
		c, err := colFor(o.Expr)
		if err != nil {
			return nil, err
		}
		nullsFirst := !o.Desc
		switch o.Nulls {
		case "FIRST":
			nullsFirst = true
		case "LAST":
			nullsFirst = false
		}
		m.sortKeys = append(m.sortKeys, exec.SortKey{Col: c, Desc: o.Desc, NullsFirst: nullsFirst})
	}
	m.input = newCalc(node, proj, nil, out)
	name := s.Items[pos].Alias
	if name == "" {
		// Calcite numbers an unnamed item by its place in the expanded list.
		name = "EXPR$" + strconv.Itoa(rnCol)
	}
	// The marker's columns: the select items in their order, rn where it was written.
	var schema types.Schema
	schema = append(schema, out[:rnCol]...)
	schema = append(schema, types.Column{Name: name, Type: types.BigIntType.WithNullable(false)})
	schema = append(schema, out[rnCol:visible]...)
	m.schema, m.mode = schema, node.Mode()
	m.inputs = []Node{m.input}
	if altErr != nil {
		m.over = nil
		// Name the column the way the user wrote it: its alias, or the call.
		need := fmt.Sprintf("%s() OVER (...) AS %s needs a filter on %s in the enclosing query (WHERE %s <= N for Top-N, or = 1 for deduplication)",
			fn, s.Items[pos].Alias, s.Items[pos].Alias, s.Items[pos].Alias)
		if s.Items[pos].Alias == "" {
			need = parser.FormatExpr(call) + " needs an alias and a filter on it in the enclosing query (... AS rn ... WHERE rn <= N for Top-N, or = 1 for deduplication)"
		}
		m.err = unsupportedAt(call, "%s; without one it is an OVER aggregation, which fails: %s", need, altErr.Error())
	}
	return &relation{node: m, scope: newScope("", schema)}, nil
}

// planRankFilter turns WHERE conditions on the row number of a ROW_NUMBER()
// subquery into a Top-N, deduplication or window Top-N. It returns the
// relation with the same columns as the marker and the conditions it did not use.
func (pc *planContext) planRankFilter(s *parser.Select, from *relation, m *overRankMarker) (*relation, parser.Expr, error) {
	rnCol := m.rnCol
	var rest []parser.Expr
	start, end := int64(1), int64(-1)
	isRN := func(e parser.Expr) bool {
		id, ok := e.(*parser.Ident)
		if !ok {
			return false
		}
		idx, used, msg := from.scope.resolve(id.Parts)
		return msg == "" && used == len(id.Parts) && idx == rnCol
	}
	constant := func(e parser.Expr) (int64, bool) {
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
	for _, c := range splitAnd(s.Where) {
		used := false
		switch x := c.(type) {
		case *parser.BinaryExpr:
			l, r, op := x.L, x.R, x.Op
			if isRN(r) && !isRN(l) {
				l, r = r, l
				op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
			}
			if isRN(l) {
				if v, ok := constant(r); ok {
					switch op {
					case "<=":
						end, used = v, true
					case "<":
						end, used = v-1, true
					case "=":
						start, end, used = v, v, true
					case ">=":
						start, used = v, true
					case ">":
						start, used = v+1, true
					}
				}
			}
		case *parser.BetweenExpr:
			if isRN(x.X) && !x.Not {
				lo, ok1 := constant(x.Lo)
				hi, ok2 := constant(x.Hi)
				if ok1 && ok2 {
					start, end, used = lo, hi, true
				}
			}
		}
		if !used {
			rest = append(rest, c)
		}
	}
	if end < 0 {
		if m.over != nil {
			// No Top-N: the OVER aggregation, filtered.
			return from, s.Where, nil
		}
		return nil, nil, m.err
	}
	if m.fn != "ROW_NUMBER" {
		if _, _, ok := windowPartition(m.input, m.partitionCols); ok {
			return nil, nil, tableError(m.fn + "() function is not supported on Window TopN currently, only ROW_NUMBER() is supported.")
		}
		return nil, nil, tableError(m.fn + "() on streaming table is not supported currently")
	}
	if start < 1 || end < start {
		return nil, nil, errAt(s.Where, "The row number range [%d, %d] of a Top-N query is empty or starts below 1", start, end)
	}
	// Does the rest of the query read the row number?
	outputRN := false
	check := func(e parser.Expr) {
		walkExpr(e, func(x parser.Expr) {
			if isRN(x) {
				outputRN = true
			}
		})
	}
	for _, it := range s.Items {
		if _, star := it.Expr.(*parser.Star); star {
			outputRN = true
		}
		check(it.Expr)
	}
	for _, c := range rest {
		check(c)
	}
	in := m.input
	inSchema := in.Schema()
	var node Node
	constantRN := start == end
	if ws, we, ok := windowPartition(in, m.partitionCols); ok {
		// Window Top-N / window deduplication: fires per window, insert-only.
		if err := requireInsertOnly("WindowRank", in); err != nil {
			return nil, nil, err
		}
		var parts []int
		for _, c := range m.partitionCols {
			if c != ws && c != we {
				parts = append(parts, c)
			}
		}
		keys := append(append([]int(nil), parts...), ws, we)
		ex := pc.exchange(in, exec.Partitioner{Kind: exec.Hash, KeyCols: keys})
		wr := &WindowRankNode{PartitionCols: parts, WindowStartCol: ws, WindowEnd: we, SortKeys: m.sortKeys,
			RankStart: start, RankEnd: end, OutputRankNumber: outputRN && !constantRN}
		// The TVF's time column is ordinary in its output (window_time carries
		// the attribute) but still the window's time: ordering by it is
		// Flink's window deduplication, as is ordering by a time attribute.
		wr.Deduplicate = start == 1 && end == 1 && len(m.sortKeys) == 1 &&
			(inSchema[m.sortKeys[0].Col].Type.IsTimeAttr() || windowTimeColumn(in, m.sortKeys[0].Col))
		if windowLTZ(in) {
			wr.Loc = pc.p.cfg.Loc
		}
		wr.inputs, wr.mode = []Node{ex}, types.InsertOnly
		wr.schema = rankSchema(inSchema, wr.OutputRankNumber)
		node = wr
	} else if start == 1 && end == 1 && len(m.sortKeys) == 1 && inSchema[m.sortKeys[0].Col].Type.IsTimeAttr() && !updating(in.Mode()) {
		// Deduplication: keep the first (ASC) or last (DESC) row per key.
		k := m.sortKeys[0]
		d := &DedupNode{KeyCols: m.partitionCols, KeepLast: k.Desc, RowtimeCol: -1}
		if inSchema[k.Col].Type.TimeAttr == types.RowtimeAttr {
			d.RowtimeCol = k.Col
		}
		d.inputs = []Node{pc.keyedExchange(in, m.partitionCols)}
		d.schema = inSchema
		d.mode = types.InsertOnly
		if d.Updates() {
			d.mode = types.Retract
			d.mode.Delete = false
		}
		node = d
	} else {
		r := &RankNode{PartitionCols: m.partitionCols, SortKeys: m.sortKeys, RankStart: start, RankEnd: end,
			OutputRankNumber: outputRN && !constantRN}
		r.inputs = []Node{pc.keyedExchange(in, m.partitionCols)}
		r.schema = rankSchema(inSchema, r.OutputRankNumber)
		r.mode = types.Retract
		node = r
	}
	// Restore the marker's column layout: items with rn in its place.
	ns := node.Schema()
	proj := make([]expr.Expr, len(m.schema))
	for i := range m.schema {
		switch {
		case i == rnCol && constantRN:
			proj[i] = expr.Literal(types.Int(start), types.BigIntType.WithNullable(false))
		case i == rnCol && len(ns) > len(inSchema):
			proj[i] = expr.Column(len(ns)-1, m.schema[i].Name, ns[len(ns)-1].Type)
		case i == rnCol:
			// Unused by the query: any BIGINT will do.
			proj[i] = expr.Literal(types.Int(0), types.BigIntType.WithNullable(false))
		default:
			j := i
			if i > rnCol {
				j = i - 1
			}
			proj[i] = expr.Column(j, ns[j].Name, ns[j].Type)
		}
	}
	calc := newCalc(node, proj, nil, m.schema)
	var restExpr parser.Expr
	if len(rest) > 0 {
		restExpr = andAll(rest)
	}
	return &relation{node: calc, scope: from.scope}, restExpr, nil
}

// itemColumns is the number of columns a select item stands for.
func itemColumns(it *parser.SelectItem, sc *scope) int {
	star, ok := it.Expr.(*parser.Star)
	if !ok {
		return 1
	}
	if len(star.Qualifier) == 0 {
		return len(sc.starColumns())
	}
	return len(sc.qualifierColumns(star.Qualifier[len(star.Qualifier)-1]))
}

func rankSchema(in types.Schema, withRN bool) types.Schema {
	out := append(types.Schema(nil), in...)
	if withRN {
		out = append(out, types.Column{Name: "w0$o0", Type: types.BigIntType.WithNullable(false)})
	}
	return out
}

// keyedExchange hashes by the given columns, or gathers everything into one
// subtask when there are none.
func (pc *planContext) keyedExchange(in Node, cols []int) Node {
	if len(cols) == 0 {
		return pc.exchange(in, exec.Partitioner{Kind: exec.Global})
	}
	return pc.exchange(in, exec.Partitioner{Kind: exec.Hash, KeyCols: cols})
}

// windowPartition finds window_start and window_end of a window aggregation
// or window TVF among the partition columns.
func windowPartition(in Node, cols []int) (ws, we int, ok bool) {
	ws, we = -1, -1
	for _, c := range cols {
		switch windowProperty(in, c) {
		case "window_start":
			ws = c
		case "window_end":
			we = c
		}
	}
	return ws, we, ws >= 0 && we >= 0
}

// windowProperty says whether column c of n is the window_start, window_end
// or window_time of a window operator below it ("" otherwise).
func windowProperty(n Node, c int) string {
	switch x := n.(type) {
	case *WindowAggNode:
		w := len(x.schema) - 3
		if c >= w {
			return [...]string{"window_start", "window_end", "window_time"}[c-w]
		}
	case *WindowTVFNode:
		w := len(x.inputs[0].Schema())
		if c >= w {
			return [...]string{"window_start", "window_end", "window_time"}[c-w]
		}
	case *CalcNode:
		if x.Project == nil {
			return windowProperty(x.inputs[0], c)
		}
		if ref, ok := x.Project[c].(*expr.ColumnRef); ok {
			return windowProperty(x.inputs[0], ref.Index)
		}
	case *ExchangeNode:
		return windowProperty(x.inputs[0], c)
	}
	return ""
}

// windowTimeColumn reports whether column c of n is the time column
// (DESCRIPTOR) of a window TVF below it, looking through projections.
func windowTimeColumn(n Node, c int) bool {
	switch x := n.(type) {
	case *WindowTVFNode:
		return c == x.Window.TimeCol
	case *CalcNode:
		if x.Project == nil {
			return windowTimeColumn(x.inputs[0], c)
		}
		if ref, ok := x.Project[c].(*expr.ColumnRef); ok {
			return windowTimeColumn(x.inputs[0], ref.Index)
		}
	case *ExchangeNode:
		return windowTimeColumn(x.inputs[0], c)
	}
	return false
}

// splitAnd splits a condition into its AND-ed parts.
func splitAnd(e parser.Expr) []parser.Expr {
	if e == nil {
		return nil
	}
	if b, ok := e.(*parser.BinaryExpr); ok && strings.EqualFold(b.Op, "AND") {
		return append(splitAnd(b.L), splitAnd(b.R)...)
	}
	return []parser.Expr{e}
}

// windowLTZ reports whether the window columns of n come from a window over a
// TIMESTAMP_LTZ time attribute (their boundaries are then local times).
func windowLTZ(n Node) bool {
	for i, c := range n.Schema() {
		if windowProperty(n, i) == "window_time" {
			return c.Type.Root == types.RootTimestampLTZ
		}
	}
	return false
}
