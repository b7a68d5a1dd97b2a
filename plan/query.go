package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// relation is a planned table expression: its plan node and the names under
// which its columns are visible.
type relation struct {
	node  Node
	scope *scope
}

// planContext carries what planning one statement needs.
type planContext struct {
	p *Planner
	// cancel ends planning early when the statement's context is done.
	cancel *canceller
	// depth guards against views or CTEs that reference themselves.
	depth int
	// tvfs records the window TVFs planned so far.
	tvfs []tvfRecord
	// viewDB, while a view's query is planned, is the catalog and database
	// the view was created in: its one-part names resolve there, not in the
	// session's current database (Flink stores a view's query expanded).
	viewDB *catalog.Identifier
	// ttlHints are the STATE_TTL hints of the SELECT whose joins are
	// being planned (join_hints.go).
	ttlHints *stateTTLHints
	// hints are the LOOKUP hints of the SELECT being planned (temporal.go).
	hints *lookupHints
}

// qualifyName resolves a table name, inside a view relative to the view's
// database.
func (pc *planContext) qualifyName(name []string) (catalog.Identifier, error) {
	if pc.viewDB != nil {
		switch len(name) {
		case 1:
			return catalog.Identifier{Catalog: pc.viewDB.Catalog, Database: pc.viewDB.Database, Object: name[0]}, nil
		case 2:
			return catalog.Identifier{Catalog: pc.viewDB.Catalog, Database: name[0], Object: name[1]}, nil
		}
	}
	return pc.p.cat.Qualify(name)
}

func (p *Planner) newPlanContext() *planContext {
	return &planContext{p: p, cancel: &canceller{ctx: p.ctx}}
}

// cteEnv is the chain of WITH items visible to a query.
type cteEnv struct {
	ctes   map[string]*parser.CTE
	parent *cteEnv
}

func (e *cteEnv) lookup(name string) (*parser.CTE, *cteEnv) {
	for env := e; env != nil; env = env.parent {
		if c, ok := env.ctes[name]; ok {
			return c, env.parent
		}
	}
	return nil, nil
}

func (pc *planContext) planQuery(q *parser.Query, env *cteEnv) (*relation, error) {
	if err := pc.cancel.check(); err != nil {
		return nil, err
	}
	pc.depth++
	defer func() { pc.depth-- }()
	if pc.depth > 64 {
		return nil, errAt(q, "Query nesting is too deep (a view or CTE may reference itself)")
	}
	if len(q.With) > 0 {
		inner := &cteEnv{ctes: map[string]*parser.CTE{}, parent: env}
		for _, c := range q.With {
			if _, dup := inner.ctes[c.Name]; dup {
				return nil, errAt(c, "Duplicate name '%s' in WITH clause", c.Name)
			}
			inner.ctes[c.Name] = c
			// A CTE sees the ones declared before it.
			inner = &cteEnv{ctes: map[string]*parser.CTE{c.Name: c}, parent: inner}
		}
		env = inner
	}
	body, hidden := q.Body, 0
	if sel, ok := q.Body.(*parser.Select); ok && len(q.OrderBy) > 0 {
		hq := *q
		var err error
		if hq.Body, hq.OrderBy, hidden, err = hoistOrderKeys(sel, q.OrderBy); err != nil {
			return nil, err
		}
		body, q = hq.Body, &hq
	}
	rel, err := pc.planQueryExpr(body, env)
	if err != nil {
		return nil, err
	}
	if len(q.OrderBy) == 0 && q.Limit == nil && q.Offset == nil {
		return rel, nil
	}
	if rel, err = pc.planOrderLimit(q, rel); err != nil || hidden == 0 {
		return rel, err
	}
	return pc.dropHoisted(rel, hidden), nil
}

func (pc *planContext) planQueryExpr(body parser.QueryExpr, env *cteEnv) (*relation, error) {
	switch b := body.(type) {
	case *parser.Select:
		return pc.planSelect(b, env)
	case *parser.Query:
		return pc.planQuery(b, env)
	case *parser.Values:
		return pc.planValues(b)
	case *parser.SetOp:
		return pc.planSetOp(b, env)
	}
	return nil, errAt(body, "Unsupported query")
}

func (pc *planContext) planSetOp(s *parser.SetOp, env *cteEnv) (*relation, error) {
	if s.Op != "UNION" || !s.All {
		return pc.planDistinctSetOp(s, env)
	}
	// Flatten a left-deep chain of UNION ALL into one union.
	var bodies []parser.QueryExpr
	var collect func(q parser.QueryExpr)
	collect = func(q parser.QueryExpr) {
		if so, ok := q.(*parser.SetOp); ok && so.Op == "UNION" && so.All {
			collect(so.Left)
			collect(so.Right)
			return
		}
		bodies = append(bodies, q)
	}
	collect(s)
	rels := make([]*relation, len(bodies))
	for i, b := range bodies {
		r, err := pc.planQueryExpr(b, env)
		if err != nil {
			return nil, err
		}
		rels[i] = r
	}
	width := len(rels[0].scope.cols)
	for _, r := range rels[1:] {
		if len(r.scope.cols) != width {
			return nil, errAt(s, "Set operator cannot combine expressions with different numbers of columns (%d and %d)", width, len(r.scope.cols))
		}
	}
	// Common type per column.
	out := make(types.Schema, width)
	for c := 0; c < width; c++ {
		ts := make([]types.Type, len(rels))
		for i, r := range rels {
			ts[i] = r.scope.cols[c].Type.WithoutTimeAttr()
		}
		t, err := expr.LeastRestrictive(ts...)
		if err != nil {
			return nil, errAt(s, "Type mismatch in column %d of UNION ALL: %s", c+1, err.Error())
		}
		// A time attribute survives a union when every input carries the same one.
		attr := rels[0].scope.cols[c].Type.TimeAttr
		for _, r := range rels[1:] {
			if r.scope.cols[c].Type.TimeAttr != attr {
				attr = types.NoTimeAttr
			}
		}
		t.TimeAttr = attr
		out[c] = types.Column{Name: rels[0].scope.cols[c].Name, Type: t}
	}
	inputs := make([]Node, len(rels))
	for i, r := range rels {
		n, err := castTo(r.node, out)
		if err != nil {
			return nil, errAt(s, "%s", err.Error())
		}
		inputs[i] = n
	}
	u := &UnionNode{}
	u.inputs, u.schema, u.mode = inputs, out, unionMode(inputs)
	return &relation{node: u, scope: newScope("", out)}, nil
}

func unionMode(inputs []Node) types.ChangelogMode {
	var m types.ChangelogMode
	for _, in := range inputs {
		im := in.Mode()
		m.Insert = m.Insert || im.Insert
		m.UpdateBefore = m.UpdateBefore || im.UpdateBefore
		m.UpdateAfter = m.UpdateAfter || im.UpdateAfter
		m.Delete = m.Delete || im.Delete
	}
	return m
}

// castTo adds a projection that casts n's columns to the target types when they differ.
func castTo(n Node, target types.Schema) (Node, error) {
	in := n.Schema()
	same := true
	for i := range in {
		if !in[i].Type.WithoutTimeAttr().EqualIgnoringNull(target[i].Type.WithoutTimeAttr()) {
			same = false
		}
	}
	if same {
		return n, nil
	}
	proj := make([]expr.Expr, len(in))
	out := make(types.Schema, len(in))
	for i, c := range in {
		col := expr.Column(i, c.Name, c.Type)
		t := target[i].Type.WithoutTimeAttr()
		t.NotNull = c.Type.NotNull
		x, err := expr.CastIfNeeded(col, t)
		if err != nil {
			return nil, err
		}
		proj[i] = x
		out[i] = types.Column{Name: c.Name, Type: x.Type()}
		if c.Type.TimeAttr != types.NoTimeAttr && c.Type.WithoutTimeAttr().EqualIgnoringNull(t) {
			out[i].Type.TimeAttr = c.Type.TimeAttr
		}
	}
	return newCalc(n, proj, nil, out), nil
}

func newCalc(in Node, proj []expr.Expr, filter expr.Expr, out types.Schema) *CalcNode {
	c := &CalcNode{Project: proj, Filter: filter}
	c.inputs = []Node{in}
	c.schema = out
	c.mode = in.Mode()
	return c
}

func (pc *planContext) planValues(v *parser.Values) (*relation, error) {
	if len(v.Rows) == 0 {
		return nil, errAt(v, "VALUES must have at least one row")
	}
	b := &binder{scope: &scope{}, clause: "VALUES", cancel: pc.cancel}
	rows := make([][]expr.Expr, len(v.Rows))
	width := len(v.Rows[0])
	for i, r := range v.Rows {
		if len(r) != width {
			return nil, errAt(v, "Values passed to VALUES operator must have compatible types; row %d has %d values, row 1 has %d", i+1, len(r), width)
		}
		xs, err := b.bindAll(r)
		if err != nil {
			return nil, err
		}
		rows[i] = xs
	}
	out := make(types.Schema, width)
	for c := 0; c < width; c++ {
		ts := make([]types.Type, len(rows))
		for i := range rows {
			ts[i] = rows[i][c].Type()
		}
		t, err := expr.LeastRestrictive(ts...)
		if err != nil {
			return nil, errAt(v, "Values passed to VALUES operator must have compatible types: %s", err.Error())
		}
		out[c] = types.Column{Name: "EXPR$" + strconv.Itoa(c), Type: t}
		for i := range rows {
			x, err := expr.CastIfNeeded(rows[i][c], t)
			if err != nil {
				return nil, errAt(v, "%s", err.Error())
			}
			rows[i][c] = x
		}
	}
	n := &ValuesNode{Rows: rows}
	n.schema, n.mode = out, types.InsertOnly
	return &relation{node: n, scope: newScope("", out)}, nil
}

// planFrom plans one FROM item.
func (pc *planContext) planFrom(ref parser.TableRef, env *cteEnv) (*relation, error) {
	switch r := ref.(type) {
	case *parser.TableName:
		if r.SystemTime != nil {
			return nil, unsupportedAt(r, "FOR SYSTEM_TIME AS OF (temporal joins) is not supported yet")
		}
		rel, err := pc.planTableName(r, r.Name, env, r.Hints...)
		if err != nil {
			return nil, err
		}
		return aliasRelation(r, rel, r.Alias, r.ColumnAliases)
	case *parser.DerivedTable:
		if r.Lateral {
			return nil, unsupportedAt(r, "LATERAL subqueries are not supported yet")
		}
		rel, err := pc.planQuery(r.Query, env)
		if err != nil {
			return nil, err
		}
		return aliasRelation(r, rel, r.Alias, r.ColumnAliases)
	case *parser.TableFunc:
		rel, err := pc.planTableFunc(r, env)
		if err != nil {
			return nil, err
		}
		return aliasRelation(r, rel, r.Alias, r.ColumnAliases)
	case *parser.Join:
		return pc.planJoin(r, env)
	case *parser.Unnest:
		return pc.planBareUnnest(r)
	case *parser.MatchRecognize:
		return pc.planMatchRecognize(r, env)
	}
	return nil, errAt(ref, "Unsupported FROM item")
}

func aliasRelation(n parser.Node, rel *relation, alias string, cols []string) (*relation, error) {
	if alias != "" {
		rel = &relation{node: rel.node, scope: rel.scope.requalify(alias)}
	}
	if len(cols) > 0 {
		if len(cols) != len(rel.scope.cols) {
			return nil, errAt(n, "List of column aliases must have same degree as table; table has %d columns, whereas alias list has %d columns", len(rel.scope.cols), len(cols))
		}
		sc := &scope{cols: append([]scopeColumn(nil), rel.scope.cols...)}
		for i := range sc.cols {
			sc.cols[i].Name = cols[i]
		}
		rel = &relation{node: rel.node, scope: sc}
	}
	return rel, nil
}

// planTableName resolves a name to a CTE, a view or a table. Table hints
// (/*+ OPTIONS('k' = 'v') */) apply to tables only, as in Flink.
func (pc *planContext) planTableName(n parser.Node, name []string, env *cteEnv, hints ...*parser.Hint) (*relation, error) {
	if len(name) == 1 {
		if cte, outer := env.lookup(name[0]); cte != nil {
			if len(hints) > 0 {
				return nil, unsupportedAt(hints[0], "table hints on a WITH query (%s) are not supported; hints can only be applied to tables", cte.Name)
			}
			rel, err := pc.planQuery(cte.Query, outer)
			if err != nil {
				return nil, err
			}
			rel = &relation{node: rel.node, scope: rel.scope.requalify(cte.Name)}
			return aliasRelation(cte, rel, "", cte.Columns)
		}
	}
	id, err := pc.qualifyName(name)
	if err != nil {
		return nil, errAt(n, "%s", err.Error())
	}
	if v, ok := pc.p.cat.View(id); ok {
		if len(hints) > 0 {
			return nil, fmt.Errorf("View '`%s`.`%s`.`%s`' cannot be enriched with new options. Hints can only be applied to tables.",
				id.Catalog, id.Database, id.Object)
		}
		outer := pc.viewDB
		pc.viewDB = &v.Scope
		rel, err := pc.planQuery(v.Query, nil)
		pc.viewDB = outer
		if err != nil {
			return nil, fmt.Errorf("in view %s: %w", id, err)
		}
		sc := rel.scope.requalify(id.Object)
		for i := range sc.cols {
			if i < len(v.Schema) {
				sc.cols[i].Name = v.Schema[i].Name
			}
		}
		return &relation{node: rel.node, scope: sc}, nil
	}
	t, ok := pc.p.cat.Table(id)
	if !ok {
		return nil, errAt(n, "Object '%s' not found", strings.Join(name, "."))
	}
	if len(hints) > 0 {
		if t, err = withHintOptions(t, hints); err != nil {
			return nil, err
		}
	}
	scan, err := pc.scanTable(t)
	if err != nil {
		return nil, err
	}
	node, err := pc.normalizeUpsert(scan)
	if err != nil {
		return nil, err
	}
	return &relation{node: node, scope: newScope(id.Object, scan.schema)}, nil
}

// planSelect plans one SELECT block.
func (pc *planContext) planSelect(s *parser.Select, env *cteEnv) (*relation, error) {
	hints, err := queryHints(s)
	if err != nil {
		return nil, err
	}
	outerHints := pc.ttlHints
	pc.ttlHints = hints
	defer func() { pc.ttlHints = outerHints }()
	var from *relation
	restoreHints, err := pc.pushQueryHints(s.Hints)
	if err != nil {
		return nil, err
	}
	if s.From == nil {
		// SELECT without FROM reads one empty row.
		v := &ValuesNode{Rows: [][]expr.Expr{{}}}
		v.schema, v.mode = types.Schema{}, types.InsertOnly
		from = &relation{node: v, scope: &scope{}}
	} else {
		// A WHERE over inner joins becomes their conditions (join.go).
		r, rest, err := pc.planFromWhere(s.From, s.Where, env)
		if err != nil {
			restoreHints()
			return nil, err
		}
		from = r
		if rest != s.Where {
			w := *s
			w.Where = rest
			s = &w
		}
	}
	if err := hints.checkUsed(s); err != nil {
		return nil, err
	}
	if err := restoreHints(); err != nil {
		return nil, err
	}
	overCalls := overAggregates(s)
	if len(s.Windows) > 0 && len(overCalls) == 0 {
		return nil, unsupportedAt(s.Windows[0], "the WINDOW clause is only supported for OVER aggregates")
	}
	if m, ok := from.node.(*overRankMarker); ok && s.Where != nil {
		// WHERE rn <= N over a ROW_NUMBER() subquery: Top-N or deduplication.
		rel, rest, err := pc.planRankFilter(s, from, m)
		if err != nil {
			return nil, err
		}
		where := *s
		where.Where = rest
		s, from = &where, rel
	}
	// One ROW_NUMBER/RANK/DENSE_RANK alone may be a Top-N or a
	// deduplication, depending on the enclosing query (rank.go).
	rankAlone := len(overCalls) == 1 && isRankFunction(overCalls[0]) && overCalls[0].Over.Ref == "" && isSelectItem(s, overCalls[0])
	if len(overCalls) > 0 && !rankAlone {
		return pc.planOver(s, from, overCalls)
	}
	if pos, call, err := rowNumberItem(s); err != nil {
		return nil, err
	} else if call != nil {
		return pc.planRowNumber(s, from, pos, call)
	}
	if len(s.GroupBy) > 0 || hasAggregate(s) {
		if s.Distinct {
			return nil, unsupportedAt(s, "SELECT DISTINCT together with GROUP BY is not supported yet; use a subquery")
		}
		return pc.planAggregate(s, from)
	}
	if s.Having != nil {
		return nil, errAt(s.Having, "HAVING clause requires GROUP BY or an aggregate function")
	}
	node := from.node
	if s.Where != nil {
		cond, err := pc.bindCondition(from.scope, s.Where)
		if err != nil {
			return nil, err
		}
		hintSkip(node, cond)
		node = newCalc(node, nil, cond, node.Schema())
	}
	b := &binder{scope: from.scope, clause: "SELECT", cancel: pc.cancel}
	if sqs := scalarSubqueries(selectExprs(s)...); len(sqs) > 0 {
		joined, values, err := pc.attachScalarSubqueries(&relation{node: node, scope: from.scope}, sqs, env)
		if err != nil {
			return nil, err
		}
		node, from = joined.node, joined
		b = &binder{scope: from.scope, clause: "SELECT", cancel: pc.cancel, hook: scalarHook(values)}
	}
	proj, out, err := pc.bindSelectList(s, from.scope, b)
	if err != nil {
		return nil, err
	}
	rel := pc.project(node, proj, out)
	if s.Distinct {
		return pc.distinct(rel), nil
	}
	return rel, nil
}

// distinct plans SELECT DISTINCT as a grouping on every column without
// aggregates, as Flink does.
func (pc *planContext) distinct(rel *relation) *relation {
	schema := rel.node.Schema()
	keys := make([]int, len(schema))
	for i := range keys {
		keys[i] = i
	}
	g := &GroupAggNode{KeyCols: keys}
	g.inputs = []Node{pc.exchange(rel.node, exec.Partitioner{Kind: exec.Hash, KeyCols: keys})}
	out := make(types.Schema, len(schema))
	for i, c := range schema {
		out[i] = types.Column{Name: c.Name, Type: c.Type.WithoutTimeAttr()}
	}
	g.schema = out
	g.mode = types.ChangelogMode{Insert: true, UpdateBefore: true, UpdateAfter: true, Delete: updating(rel.node.Mode())}
	return &relation{node: g, scope: newScope("", out)}
}

// project adds a projection unless it is the identity.
func (pc *planContext) project(in Node, proj []expr.Expr, out types.Schema) *relation {
	if isIdentity(proj, in.Schema(), out) {
		if c, ok := in.(*CalcNode); ok && c.Project == nil {
			c.schema = out
		}
		return &relation{node: in, scope: newScope("", out)}
	}
	if c, ok := in.(*CalcNode); ok && c.Project == nil {
		// Merge the projection into the filter's Calc.
		c.Project, c.schema = proj, out
		return &relation{node: c, scope: newScope("", out)}
	}
	return &relation{node: newCalc(in, proj, nil, out), scope: newScope("", out)}
}

func isIdentity(proj []expr.Expr, in, out types.Schema) bool {
	if len(proj) != len(in) {
		return false
	}
	for i, x := range proj {
		// A reference to a join's column prints its name in the join's
		// scope (id), the join's row names it uniquely (id0).
		if ref, ok := x.(*expr.ColumnRef); ok && ref.Index == i && out[i].Name == in[i].Name && x.Type().Equal(in[i].Type) {
			continue
		}
		if x.String() != in[i].Name || out[i].Name != in[i].Name || !x.Type().Equal(in[i].Type) {
			return false
		}
	}
	return true
}

func (pc *planContext) bindCondition(sc *scope, e parser.Expr) (expr.Expr, error) {
	b := &binder{scope: sc, clause: "WHERE", cancel: pc.cancel}
	cond, err := b.bind(e)
	if err != nil {
		return nil, err
	}
	if t := cond.Type(); t.Root != types.RootBoolean && t.Root != types.RootNull {
		return nil, errAt(e, "WHERE clause must be a condition")
	}
	return cond, nil
}

// bindSelectList expands stars and binds the select items, naming the output
// columns as Calcite does (alias, column name, or EXPR$<position>).
func (pc *planContext) bindSelectList(s *parser.Select, sc *scope, b *binder) ([]expr.Expr, types.Schema, error) {
	var proj []expr.Expr
	var out types.Schema
	used := map[string]int{}
	addName := func(name string) string {
		// Calcite makes duplicate output names unique with a numeric suffix.
		if n, dup := used[name]; dup {
			used[name] = n + 1
			return name + strconv.Itoa(n)
		}
		used[name] = 0
		return name
	}
	for pos, item := range s.Items {
		if star, ok := item.Expr.(*parser.Star); ok {
			var idx []int
			if len(star.Qualifier) == 0 {
				idx = sc.starColumns()
			} else {
				idx = sc.qualifierColumns(star.Qualifier[len(star.Qualifier)-1])
				if len(idx) == 0 {
					return nil, nil, errAt(star, "Unknown identifier '%s'", strings.Join(star.Qualifier, "."))
				}
			}
			for _, i := range idx {
				c := sc.cols[i]
				x, err := b.bind(&parser.Ident{Parts: []string{c.Qualifier, c.Name}})
				if err != nil || c.Qualifier == "" {
					x, err = b.bind(&parser.Ident{Parts: []string{c.Name}})
				}
				if err != nil {
					return nil, nil, err
				}
				proj = append(proj, x)
				out = append(out, types.Column{Name: addName(c.Name), Type: x.Type()})
			}
			continue
		}
		x, err := b.bind(item.Expr)
		if err != nil {
			return nil, nil, err
		}
		name := item.Alias
		if name == "" {
			name = defaultName(item.Expr, pos)
		}
		proj = append(proj, x)
		out = append(out, types.Column{Name: addName(name), Type: x.Type()})
	}
	return proj, out, nil
}

// defaultName is Calcite's name for an unaliased select item.
func defaultName(e parser.Expr, pos int) string {
	if id, ok := e.(*parser.Ident); ok {
		return id.Parts[len(id.Parts)-1]
	}
	return "EXPR$" + strconv.Itoa(pos)
}

// planOrderLimit handles ORDER BY / LIMIT / OFFSET on top of a query.
func (pc *planContext) planOrderLimit(q *parser.Query, rel *relation) (*relation, error) {
	limit, offset := -1, 0
	evalInt := func(e parser.Expr, what string) (int, error) {
		b := &binder{scope: &scope{}, clause: what, cancel: pc.cancel}
		x, err := b.bind(e)
		if err != nil {
			return 0, err
		}
		v, err := expr.EvalConstant(x, pc.p.exprConfig())
		if err != nil || v.K != types.KindInt || v.Int() < 0 {
			return 0, errAt(e, "%s must be a non-negative integer literal", what)
		}
		return int(v.Int()), nil
	}
	var err error
	if q.Limit != nil {
		if limit, err = evalInt(q.Limit, "LIMIT"); err != nil {
			return nil, err
		}
	}
	if q.Offset != nil {
		if offset, err = evalInt(q.Offset, "OFFSET"); err != nil {
			return nil, err
		}
	}
	// In batch mode an updating input is made final first.
	rel = &relation{node: pc.final(rel.node), scope: rel.scope}
	if rel.node.Mode().UpdateBefore || rel.node.Mode().Delete || rel.node.Mode().UpdateAfter {
		return nil, &UnsupportedError{Msg: "ORDER BY / LIMIT over an updating input is not supported yet"}
	}
	if len(q.OrderBy) == 0 {
		n := &LimitNode{Offset: offset, Limit: limit}
		n.inputs = []Node{pc.exchange(rel.node, exec.Partitioner{Kind: exec.Global})}
		n.schema, n.mode = rel.node.Schema(), rel.node.Mode()
		return &relation{node: n, scope: rel.scope}, nil
	}
	keys := make([]exec.SortKey, len(q.OrderBy))
	for i, o := range q.OrderBy {
		col := -1
		switch e := o.Expr.(type) {
		case *parser.Literal:
			if e.Kind == parser.NumberLit {
				k, err := strconv.Atoi(e.Value)
				if err != nil || k < 1 || k > len(rel.scope.cols) {
					return nil, errAt(e, "Ordinal out of range")
				}
				col = k - 1
			}
		case *parser.Ident:
			idx, used, msg := rel.scope.resolve(e.Parts)
			if msg != "" {
				return nil, errAt(e, "%s", msg)
			}
			if used == len(e.Parts) {
				col = idx
			}
		}
		if col < 0 {
			return nil, unsupportedAt(o, "ORDER BY supports output column names and ordinals; order by an expression after selecting it")
		}
		// Calcite's default: NULLS FIRST for ASC, NULLS LAST for DESC is
		// Flink's 'table.exec.sort.default-null-order' = ASC_NULLS_FIRST.
		nullsFirst := !o.Desc
		switch o.Nulls {
		case "FIRST":
			nullsFirst = true
		case "LAST":
			nullsFirst = false
		}
		keys[i] = exec.SortKey{Col: col, Desc: o.Desc, NullsFirst: nullsFirst}
	}
	if !isBounded(rel.node) && limit > 0 {
		// Flink's streaming SortLimit: a Top-N over the whole input, in one
		// subtask, updated as the top rows change.
		r := &RankNode{SortKeys: keys, RankStart: int64(offset) + 1, RankEnd: int64(offset + limit), SortLimit: true}
		r.inputs = []Node{pc.exchange(rel.node, exec.Partitioner{Kind: exec.Global})}
		r.schema, r.mode = rankSchema(rel.node.Schema(), false), types.Retract
		return &relation{node: r, scope: rel.scope}, nil
	}
	if !isBounded(rel.node) {
		first := rel.scope.cols[keys[0].Col].Type
		if first.TimeAttr == types.NoTimeAttr || keys[0].Desc {
			return nil, errAt(q.OrderBy[0].Expr, "Sort on a non-time-attribute field is not supported.")
		}
		if first.TimeAttr != types.RowtimeAttr {
			return nil, &UnsupportedError{Msg: "ORDER BY a processing-time attribute on an unbounded input (temporal sort on processing time) is not supported yet; order by an event-time attribute (a column with a WATERMARK)"}
		}
		// Flink's streaming temporal sort: rows released in rowtime order
		// as the watermark passes them, in one subtask.
		n := &TemporalSortNode{Keys: keys}
		n.inputs = []Node{pc.exchange(rel.node, exec.Partitioner{Kind: exec.Global})}
		n.schema, n.mode = rel.node.Schema(), types.InsertOnly
		return &relation{node: n, scope: rel.scope}, nil
	}
	n := &SortNode{Keys: keys, Offset: offset, Limit: limit}
	n.inputs = []Node{pc.exchange(rel.node, exec.Partitioner{Kind: exec.Global})}
	n.schema, n.mode = rel.node.Schema(), rel.node.Mode()
	return &relation{node: n, scope: rel.scope}, nil
}

// exchange puts an exchange in front of a node that needs a distribution.
func (pc *planContext) exchange(in Node, part exec.Partitioner) Node {
	x := &ExchangeNode{Partitioner: part}
	x.inputs, x.schema, x.mode = []Node{in}, in.Schema(), in.Mode()
	return x
}

// isBounded reports whether every source under n ends by itself.
func isBounded(n Node) bool {
	switch s := n.(type) {
	case *ScanNode:
		return s.Source.Bounded()
	case *ValuesNode:
		return true
	}
	for _, in := range n.Inputs() {
		if !isBounded(in) {
			return false
		}
	}
	return true
}

// hasAggregate reports whether a SELECT uses aggregate functions outside
// subqueries.
func hasAggregate(s *parser.Select) bool {
	found := false
	for _, it := range s.Items {
		walkExpr(it.Expr, func(e parser.Expr) {
			if f, ok := e.(*parser.FuncCall); ok && f.Over == nil && isAggregateName(f.FuncName()) {
				found = true
			}
		})
	}
	if s.Having != nil {
		found = true
	}
	return found
}

var _ = catalog.DefaultCatalog

// withHintOptions returns t with the options of its OPTIONS hints merged
// over its own (a hinted key replaces the table's value), as Flink's dynamic
// table options do. Other table hints are refused rather than ignored.
func withHintOptions(t *catalog.Table, hints []*parser.Hint) (*catalog.Table, error) {
	merged := *t
	merged.Options = append([]catalog.Option(nil), t.Options...)
	for _, h := range hints {
		if h.Name != "OPTIONS" {
			return nil, unsupportedAt(h, "the table hint %s is not supported; the supported table hint is OPTIONS('key' = 'value', ...)", h.Name)
		}
		if len(h.Args) > 0 {
			return nil, errAt(h, "Hint [OPTIONS] only support non empty key value options")
		}
		for _, o := range h.Options {
			replaced := false
			for i := range merged.Options {
				if merged.Options[i].Key == o.Key {
					merged.Options[i].Value = o.Value
					replaced = true
				}
			}
			if !replaced {
				merged.Options = append(merged.Options, catalog.Option{Key: o.Key, Value: o.Value})
			}
		}
	}
	return &merged, nil
}
