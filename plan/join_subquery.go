package plan

import (
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Subqueries in WHERE become semi and anti joins, as Flink decorrelates
// them: x IN (SELECT y …) a semi join on x = y, EXISTS (SELECT … WHERE
// inner.a = outer.b …) a semi join on its correlation, NOT EXISTS an anti
// join, and x NOT IN (SELECT y …) an anti join with SQL's NULL semantics:
// a row is kept only when no y equals x and, unless the subquery is
// empty, neither x nor any y is NULL. When x or y may be NULL that
// condition is not an equality, and the anti join runs in one task, as in
// Flink.

// subqueryConjunct reads a WHERE conjunct that is a subquery predicate.
func subqueryConjunct(c parser.Expr) (query *parser.Query, x parser.Expr, exists, not bool, ok bool) {
	if u, isNot := c.(*parser.UnaryExpr); isNot && u.Op == "NOT" {
		q, x, ex, n, ok := subqueryConjunct(u.X)
		return q, x, ex, !n, ok
	}
	switch s := c.(type) {
	case *parser.InExpr:
		if s.Query != nil {
			return s.Query, s.X, false, s.Not, true
		}
	case *parser.ExistsExpr:
		return s.Query, nil, true, false, true
	}
	return nil, nil, false, false, false
}

// planWhereSubqueries applies WHERE conjuncts with subqueries to rel as
// semi and anti joins.
func (pc *planContext) planWhereSubqueries(rel *relation, conds []parser.Expr, env *cteEnv) (*relation, error) {
	for _, c := range conds {
		q, x, exists, not, ok := subqueryConjunct(c)
		if !ok {
			var err error
			if rel, err = pc.planScalarCondition(rel, c, env); err != nil {
				return nil, err
			}
			continue
		}
		var err error
		if exists {
			rel, err = pc.planExists(c, rel, q, not, env)
		} else {
			rel, err = pc.planInSubquery(c, rel, x, q, not, env)
		}
		if err != nil {
			return nil, err
		}
	}
	return rel, nil
}

// planInSubquery plans x [NOT] IN (q), where x is an expression over the
// outer row or a row of them ((a, b) IN (SELECT x, y …)) matched column by
// column. Equalities of expressions or of columns of different types
// become computed join keys (computedKeys), as in a regular join.
func (pc *planContext) planInSubquery(at parser.Expr, left *relation, x parser.Expr, q *parser.Query, not bool, env *cteEnv) (*relation, error) {
	xs := []parser.Expr{x}
	if row, isRow := x.(*parser.RowExpr); isRow {
		xs = row.Fields
	}
	right, err := pc.planQuery(q, env)
	if err != nil {
		return nil, err
	}
	if len(right.scope.cols) != len(xs) {
		return nil, errAt(at, "Values passed to IN operator must have compatible types; the subquery returns %d columns, not %d", len(right.scope.cols), len(xs))
	}
	b := &binder{scope: left.scope, clause: "WHERE", cancel: pc.cancel}
	lw := len(left.scope.cols)
	conds := make([]expr.Expr, 0, len(xs))
	for i, xi := range xs {
		xv, err := b.bind(xi)
		if err != nil {
			return nil, err
		}
		rc := right.scope.cols[i]
		y := expr.Column(lw+i, rc.Name, rc.Type)
		eq, err := expr.Call("=", xv, y)
		if err != nil {
			return nil, errAt(at, "Values passed to IN operator must have compatible types: %s", err.Error())
		}
		if not && (!xv.Type().NotNull || !rc.Type.NotNull) {
			// NOT IN: a row is rejected by a subquery row unless some
			// column pair is known to differ, so a NULL on either side
			// counts as a match: x = y OR x IS NULL OR y IS NULL.
			xn, err1 := expr.Call("IS NULL", xv)
			yn, err2 := expr.Call("IS NULL", y)
			if err1 != nil || err2 != nil {
				return nil, errInternal("IS NULL of an IN operand")
			}
			if eq, err = expr.Call("OR", eq, xn, yn); err != nil {
				return nil, errAt(at, "%s", err.Error())
			}
		}
		conds = append(conds, eq)
	}
	typ := join.Semi
	if not {
		typ = join.Anti
	}
	return pc.planSemiAnti(typ, left, right, conds)
}

// planExists plans [NOT] EXISTS (q), decorrelating the conditions of q's
// WHERE that reference the outer query into the join condition.
func (pc *planContext) planExists(at parser.Expr, left *relation, q *parser.Query, not bool, env *cteEnv) (*relation, error) {
	sel, isSelect := q.Body.(*parser.Select)
	if !isSelect || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil ||
		len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregate(sel) || sel.From == nil || len(sel.Hints) > 0 {
		return nil, unsupportedAt(at, "EXISTS is supported over a SELECT … FROM … [WHERE …] without aggregation, ORDER BY or LIMIT")
	}
	right, err := pc.planFrom(sel.From, env)
	if err != nil {
		return nil, err
	}
	lw := len(left.scope.cols)
	// Inner names shadow outer ones, as SQL scoping says.
	inner := &binder{scope: right.scope, clause: "WHERE", cancel: pc.cancel}
	corr := &binder{scope: joinScope(left.scope, right.scope, join.Inner), clause: "WHERE", cancel: pc.cancel}
	corr.hook = func(e parser.Expr) (expr.Expr, bool, error) {
		id, isIdent := e.(*parser.Ident)
		if !isIdent {
			return nil, false, nil
		}
		if idx, used, msg := right.scope.resolve(id.Parts); msg == "" && used == len(id.Parts) {
			c := right.scope.cols[idx]
			return expr.Column(lw+idx, c.Name, c.Type), true, nil
		}
		if idx, used, msg := left.scope.resolve(id.Parts); msg == "" && used == len(id.Parts) {
			c := left.scope.cols[idx]
			return expr.Column(idx, c.Name, c.Type), true, nil
		}
		return nil, false, nil
	}
	var local, conds []expr.Expr
	for _, c := range conjuncts(sel.Where) {
		if hasSubquery(c) {
			return nil, unsupportedAt(c, "a subquery inside an EXISTS subquery is not supported yet")
		}
		if x, err := inner.bind(c); err == nil {
			local = append(local, x)
			continue
		}
		x, err := corr.bind(c)
		if err != nil {
			return nil, err
		}
		conds = append(conds, boundConjuncts(x)...)
	}
	right = filterRelation(right, local)
	typ := join.Semi
	if not {
		typ = join.Anti
	}
	return pc.planSemiAnti(typ, left, right, conds)
}

// planSemiAnti plans a semi or anti join of left and right on conds
// (over [left..., right...]); its output is left's rows and scope.
func (pc *planContext) planSemiAnti(typ join.Type, left, right *relation, conds []expr.Expr) (*relation, error) {
	lw := len(left.scope.cols)
	rightNames := right.node.Schema().Names()
	jc := splitJoinCondition(conds, lw, rightNames)
	residual := jc.Residual
	if typ == join.Semi {
		left = filterRelation(left, jc.LeftOnly)
	} else {
		residual = append(residual, jc.LeftOnly...)
	}
	right = filterRelation(right, jc.RightOnly)
	// Equalities of expressions become keys on computed columns; the
	// left side's are projected out of the result again.
	jc, residual, left, right, el, _ := computedKeys(jc, residual, left, right)
	rel, err := pc.planSemiAntiJoin(typ, left, right, jc, residual)
	if err != nil || el == 0 {
		return rel, err
	}
	return projectOutColumns(rel, [2]int{len(rel.scope.cols) - el, el}), nil
}

// planSemiAntiJoin is planSemiAnti once the condition is split into keys
// and a residual.
func (pc *planContext) planSemiAntiJoin(typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, error) {
	lw := len(left.scope.cols)
	// Two window TVFs on window_start and window_end: a window semi or
	// anti join, emitted when the window fires.
	if rel, ok, err := pc.planWindowJoin(nil, typ, left, right, jc, residual); err != nil {
		return nil, err
	} else if ok {
		wj := rel.node.(*WindowJoinNode)
		wj.schema = wj.schema[:lw]
		sc := &scope{cols: append([]scopeColumn(nil), rel.scope.cols[:lw]...)}
		return &relation{node: wj, scope: sc}, nil
	}
	all := joinScope(left.scope, right.scope, join.Inner)
	names := make([]string, len(all.cols))
	for i, c := range all.cols {
		names[i] = c.Name
	}
	names = uniqueNames(names)
	n := &JoinNode{Type: typ, LeftKeys: jc.LeftKeys, RightKeys: jc.RightKeys, NullSafe: jc.NullSafe}
	if cs := append(append([]expr.Expr(nil), jc.Equi...), residual...); len(cs) > 0 {
		n.Cond = expr.ShiftColumns(andExprs(cs), 0, names)
	}
	if len(residual) > 0 {
		n.Residual = andExprs(residual)
	}
	lpart, rpart := joinPartitioners(jc.LeftKeys, jc.RightKeys)
	n.LeftSpec, n.LeftUnique = inputSpec(left.node, jc.LeftKeys)
	n.RightSpec, n.RightUnique = inputSpec(right.node, jc.RightKeys)
	n.LeftTTL, n.RightTTL = pc.p.cfg.StateTTL, pc.p.cfg.StateTTL
	n.inputs = []Node{pc.exchange(left.node, lpart), pc.exchange(right.node, rpart)}
	out := make(types.Schema, lw)
	for i, c := range left.scope.cols {
		out[i] = types.Column{Name: names[i], Type: c.Type.WithoutTimeAttr()}
	}
	n.schema = out
	// Left rows pass with their kinds; a right row that adds or removes a
	// left row's last match inserts or deletes it.
	n.mode = left.node.Mode()
	if rm := right.node.Mode(); typ == join.Anti || updating(rm) {
		n.mode.Insert, n.mode.Delete = true, true
		if typ == join.Semi {
			// The right row's kind shows or hides a left row.
			n.mode.UpdateBefore = n.mode.UpdateBefore || rm.UpdateBefore
			n.mode.UpdateAfter = n.mode.UpdateAfter || rm.UpdateAfter
		}
	}
	sc := &scope{cols: make([]scopeColumn, lw)}
	for i, c := range left.scope.cols {
		c.Type = c.Type.WithoutTimeAttr()
		sc.cols[i] = c
	}
	return &relation{node: n, scope: sc}, nil
}
