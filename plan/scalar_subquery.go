package plan

import (
	"strings"

	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Scalar subqueries, (SELECT agg(…) FROM … WHERE …) in a SELECT item or a
// WHERE condition, are decorrelated into a LEFT JOIN as Flink's optimizer
// does: the subquery's equality conditions on the outer row become the
// keys of an aggregation grouped by the inner side of each equality, and
// the outer row joins its group; an outer row without a group gets the
// aggregate's value over no rows (NULL, or 0 for COUNT). An uncorrelated
// subquery is a global aggregation every row joins.

// scalarSubqueries lists the scalar subqueries in es, outside nested
// subqueries.
func scalarSubqueries(es ...parser.Expr) []*parser.SubqueryExpr {
	var out []*parser.SubqueryExpr
	for _, e := range es {
		walkExpr(e, func(x parser.Expr) {
			if s, ok := x.(*parser.SubqueryExpr); ok {
				out = append(out, s)
			}
		})
	}
	return out
}

// attachScalarSubqueries joins each scalar subquery of sqs to rel. The
// joined columns are appended to rel's row, hidden from * and from names;
// values gives, per subquery, the expression over the new row that
// stands for it.
func (pc *planContext) attachScalarSubqueries(rel *relation, sqs []*parser.SubqueryExpr, env *cteEnv) (*relation, map[*parser.SubqueryExpr]expr.Expr, error) {
	values := make(map[*parser.SubqueryExpr]expr.Expr, len(sqs))
	for _, sq := range sqs {
		var v expr.Expr
		var err error
		if rel, v, err = pc.joinScalarSubquery(rel, sq, env); err != nil {
			return nil, nil, err
		}
		values[sq] = v
	}
	return rel, values, nil
}

// scalarHook is a binder hook replacing the attached subqueries by their
// values.
func scalarHook(values map[*parser.SubqueryExpr]expr.Expr) func(parser.Expr) (expr.Expr, bool, error) {
	return func(e parser.Expr) (expr.Expr, bool, error) {
		if s, ok := e.(*parser.SubqueryExpr); ok {
			if v, ok := values[s]; ok {
				return v, true, nil
			}
		}
		return nil, false, nil
	}
}

// joinScalarSubquery left-joins one scalar subquery to left.
func (pc *planContext) joinScalarSubquery(left *relation, sq *parser.SubqueryExpr, env *cteEnv) (*relation, expr.Expr, error) {
	q := sq.Query
	sel, isSelect := q.Body.(*parser.Select)
	if !isSelect || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil ||
		len(sel.GroupBy) > 0 || sel.Having != nil || sel.From == nil || len(sel.Items) != 1 || len(sel.Hints) > 0 || sel.Distinct {
		return nil, nil, unsupportedAt(sq, "scalar subqueries are supported in the form (SELECT aggregate(…) FROM … [WHERE …]): one aggregate without GROUP BY, ORDER BY or LIMIT, so that it has one value per outer row")
	}
	item := sel.Items[0]
	if _, star := item.Expr.(*parser.Star); star || !hasAggregate(sel) {
		return nil, nil, unsupportedAt(sq, "a scalar subquery must compute one aggregate (such as MAX(x) or COUNT(*)), so that it has one value per outer row")
	}
	right, err := pc.planFrom(sel.From, env)
	if err != nil {
		return nil, nil, err
	}
	// Each condition of the subquery's WHERE is its own (bound over its
	// FROM alone, inner names shadowing outer ones) or an equality between
	// an expression of its own and one of the outer row.
	inner := &binder{scope: right.scope, clause: "WHERE", cancel: pc.cancel}
	outer := &binder{scope: left.scope, clause: "WHERE", cancel: pc.cancel}
	var local []expr.Expr
	var innerKeys, outerKeys []parser.Expr
	for _, c := range conjuncts(sel.Where) {
		if hasSubquery(c) {
			return nil, nil, unsupportedAt(c, "a subquery inside a scalar subquery is not supported yet")
		}
		if x, err := inner.bind(c); err == nil {
			local = append(local, boundConjuncts(x)...)
			continue
		}
		eq, isEq := c.(*parser.BinaryExpr)
		if !isEq || eq.Op != "=" {
			return nil, nil, unsupportedAt(c, "a condition of a scalar subquery that references the outer query must be an equality between an expression of the subquery and one of the outer query")
		}
		l, r := eq.L, eq.R
		if _, err := inner.bind(l); err != nil {
			l, r = r, l
		}
		if _, err := inner.bind(l); err != nil {
			return nil, nil, unsupportedAt(c, "a condition of a scalar subquery that references the outer query must be an equality between an expression of the subquery and one of the outer query")
		}
		if _, err := outer.bind(r); err != nil {
			return nil, nil, err
		}
		innerKeys = append(innerKeys, l)
		outerKeys = append(outerKeys, r)
	}
	right = filterRelation(right, local)
	// The aggregation: [inner keys..., value], grouped by the keys.
	agg := &parser.Select{At: sel.At, From: sel.From}
	for i, k := range innerKeys {
		agg.Items = append(agg.Items, &parser.SelectItem{Expr: k, Alias: "$k" + itoa(i)})
	}
	agg.Items = append(agg.Items, &parser.SelectItem{Expr: item.Expr, Alias: "$v"})
	agg.GroupBy = innerKeys
	grouped, err := pc.planAggregate(agg, right)
	if err != nil {
		return nil, nil, err
	}
	lw := len(left.scope.cols)
	var conds []expr.Expr
	if len(outerKeys) == 0 {
		// One group for all: every row joins it on a constant key.
		left = appendConstantKey(left)
		grouped = appendConstantKey(grouped)
		lw++
		rk := len(grouped.scope.cols) - 1
		eq, err := expr.Call("=", expr.Column(lw-1, "$c", constantKeyType), expr.Column(lw+rk, "$c", constantKeyType))
		if err != nil {
			return nil, nil, errInternal("constant join key")
		}
		conds = append(conds, eq)
	}
	for i, k := range outerKeys {
		x, err := outer.bind(k)
		if err != nil {
			return nil, nil, err
		}
		c := grouped.scope.cols[i]
		eq, err := expr.Call("=", x, expr.Column(lw+i, c.Name, c.Type))
		if err != nil {
			return nil, nil, errAt(k, "Cannot apply '=' to the outer query's %s and the scalar subquery's %s", x.Type(), c.Type)
		}
		conds = append(conds, eq)
	}
	joined, err := pc.joinRelations(sq, join.LeftOuter, left, grouped, conds)
	if err != nil {
		return nil, nil, err
	}
	sc := &scope{cols: append([]scopeColumn(nil), joined.scope.cols...)}
	for i := lw; i < len(sc.cols); i++ {
		sc.cols[i].Hidden = true
	}
	if len(outerKeys) == 0 {
		sc.cols[lw-1].Hidden = true
	}
	joined = &relation{node: joined.node, scope: sc}
	vi := lw + len(innerKeys)
	vc := sc.cols[vi]
	var v expr.Expr = expr.Column(vi, vc.Name, vc.Type)
	if isCountCall(item.Expr) {
		// COUNT over no rows is 0, not the NULL of the padded join row.
		if v, err = expr.Call("COALESCE", v, expr.Literal(types.Int(0), vc.Type.WithNullable(false))); err != nil {
			return nil, nil, errInternal("COALESCE of a count")
		}
	}
	return joined, v, nil
}

// isCountCall reports whether e is COUNT(…).
func isCountCall(e parser.Expr) bool {
	f, ok := e.(*parser.FuncCall)
	return ok && len(f.Name) == 1 && strings.EqualFold(f.Name[0], "COUNT")
}

var constantKeyType = types.IntType.WithNullable(false)

// appendConstantKey appends a hidden constant column to rel's row.
func appendConstantKey(rel *relation) *relation {
	in := rel.node.Schema()
	proj := make([]expr.Expr, 0, len(in)+1)
	for i, c := range in {
		proj = append(proj, expr.Column(i, c.Name, c.Type))
	}
	proj = append(proj, expr.Literal(types.Int(0), constantKeyType))
	out := append(append(types.Schema(nil), in...), types.Column{Name: "$c", Type: constantKeyType})
	sc := &scope{cols: append(append([]scopeColumn(nil), rel.scope.cols...), scopeColumn{Name: "$c", Type: constantKeyType, Hidden: true})}
	return &relation{node: newCalc(rel.node, proj, nil, out), scope: sc}
}

// planScalarCondition applies a WHERE conjunct with scalar subqueries to
// rel: the subqueries are joined, the condition filters the joined rows,
// and the joined columns are projected out again.
func (pc *planContext) planScalarCondition(rel *relation, c parser.Expr, env *cteEnv) (*relation, error) {
	sqs := scalarSubqueries(c)
	if len(sqs) == 0 {
		return nil, unsupportedAt(c, "subqueries in WHERE are supported as conjuncts of the forms x [NOT] IN (SELECT …), [NOT] EXISTS (SELECT …) and conditions on scalar subqueries")
	}
	lw := len(rel.scope.cols)
	joined, values, err := pc.attachScalarSubqueries(rel, sqs, env)
	if err != nil {
		return nil, err
	}
	b := &binder{scope: joined.scope, clause: "WHERE", cancel: pc.cancel, hook: scalarHook(values)}
	x, err := b.bind(c)
	if err != nil {
		return nil, err
	}
	if t := x.Type(); t.Root != types.RootBoolean && t.Root != types.RootNull {
		return nil, errAt(c, "WHERE clause must be a condition")
	}
	filtered := filterRelation(joined, []expr.Expr{x})
	return projectOutColumns(filtered, [2]int{lw, len(joined.scope.cols) - lw}), nil
}

// selectExprs lists the expressions of a SELECT's items.
func selectExprs(s *parser.Select) []parser.Expr {
	out := make([]parser.Expr, 0, len(s.Items))
	for _, it := range s.Items {
		out = append(out, it.Expr)
	}
	return out
}
