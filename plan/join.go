package plan

import (
	"strings"

	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// planJoin plans one JOIN of a FROM clause. It only decides which kind of
// join the syntax asks for; each kind is planned in a file of its own:
// regular, interval and window joins here and in the files next to it,
// temporal and lookup joins (FOR SYSTEM_TIME AS OF on the right side) in
// temporal.go, and joins with UNNEST or a LATERAL subquery in unnest.go.
func (pc *planContext) planJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	switch right := r.Right.(type) {
	case *parser.TableName:
		if right.SystemTime != nil {
			return pc.planTemporalJoin(r, right, env)
		}
	case *parser.Unnest:
		return pc.planLateralJoin(r, env)
	case *parser.DerivedTable:
		if right.Lateral {
			return pc.planLateralJoin(r, env)
		}
	}
	return pc.planRegularJoin(r, env)
}

// isRegularJoin reports whether planJoin sends r to planRegularJoin.
func isRegularJoin(r *parser.Join) bool {
	switch right := r.Right.(type) {
	case *parser.TableName:
		return right.SystemTime == nil
	case *parser.Unnest:
		return false
	case *parser.DerivedTable:
		return !right.Lateral
	}
	return true
}

// innerKind reports whether a join kind is an inner join (INNER, CROSS,
// or a comma), whose conditions may move freely between ON and WHERE.
func innerKind(kind string) bool {
	switch strings.ToUpper(kind) {
	case parser.JoinInner, parser.JoinCross, parser.JoinComma:
		return true
	}
	return false
}

// planRegularJoin plans a join of two relations on a condition: a regular
// join, or an interval or window join when the condition bounds time.
func (pc *planContext) planRegularJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	return pc.planJoinWhere(r, nil, env)
}

// planFromWhere plans a FROM item together with the WHERE clause over it.
// When the item is a tree of inner joins (JOIN … ON, CROSS JOIN, commas)
// the WHERE conjuncts become join conditions (equi keys, time bounds) or
// are pushed into the inputs they reference, as Flink's optimizer does; it
// returns the WHERE that remains to be applied above (nil when consumed).
//
// The conjuncts with subqueries ([NOT] IN (SELECT …), [NOT] EXISTS) become
// semi and anti joins over the FROM item (join_subquery.go).
func (pc *planContext) planFromWhere(from parser.TableRef, where parser.Expr, env *cteEnv) (*relation, parser.Expr, error) {
	var plain, subq []parser.Expr
	for _, c := range conjuncts(where) {
		if hasSubquery(c) {
			subq = append(subq, c)
		} else {
			plain = append(plain, c)
		}
	}
	var rel *relation
	var err error
	if j, ok := from.(*parser.Join); ok && len(plain) > 0 && innerKind(j.Kind) && isRegularJoin(j) {
		rel, err = pc.planJoinWhere(j, plain, env)
		plain = nil
	} else {
		rel, err = pc.planFrom(from, env)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(subq) == 0 {
		if len(plain) == 0 {
			return rel, nil, nil
		}
		return rel, where, nil
	}
	if len(plain) > 0 {
		conds, err := pc.bindJoinConds(rel.scope, plain, "WHERE")
		if err != nil {
			return nil, nil, err
		}
		rel = filterRelation(rel, conds)
	}
	rel, err = pc.planWhereSubqueries(rel, subq, env)
	return rel, nil, err
}

// hasSubquery reports whether e contains a subquery (IN (SELECT …),
// EXISTS, a scalar subquery), which cannot become a join condition here.
func hasSubquery(e parser.Expr) bool {
	found := false
	walkExpr(e, func(x parser.Expr) {
		switch s := x.(type) {
		case *parser.InExpr:
			if s.Query != nil {
				found = true
			}
		case *parser.SubqueryExpr, *parser.ExistsExpr:
			found = true
		}
	})
	return found
}

// planJoinWhere plans the join r with the extra conditions where (the
// WHERE of the SELECT over an inner join; nil otherwise).
func (pc *planContext) planJoinWhere(r *parser.Join, where []parser.Expr, env *cteEnv) (*relation, error) {
	if r.Natural || len(r.Using) > 0 {
		return pc.planUsingJoin(r, where, env)
	}
	if innerKind(r.Kind) {
		return pc.planInnerJoins(r, where, env)
	}
	typ, left, right, err := pc.planJoinSides(r, env)
	if err != nil {
		return nil, err
	}
	sc := joinScope(left.scope, right.scope, join.Inner)
	conds, err := pc.bindJoinConds(sc, conjuncts(r.On), "ON")
	if err != nil {
		return nil, err
	}
	return pc.joinRelations(r, typ, left, right, conds)
}

// planJoinSides gives the type of the join r (INNER, CROSS and comma
// joins are Inner) and plans its two sides.
func (pc *planContext) planJoinSides(r *parser.Join, env *cteEnv) (join.Type, *relation, *relation, error) {
	var typ join.Type
	switch strings.ToUpper(r.Kind) {
	case parser.JoinInner, parser.JoinCross, parser.JoinComma:
		typ = join.Inner
	case parser.JoinLeft:
		typ = join.LeftOuter
	case parser.JoinRight:
		typ = join.RightOuter
	case parser.JoinFull:
		typ = join.FullOuter
	default:
		return 0, nil, nil, unsupportedAt(r, "%s JOIN is not supported", r.Kind)
	}
	left, err := pc.planFrom(r.Left, env)
	if err != nil {
		return 0, nil, nil, err
	}
	right, err := pc.planFrom(r.Right, env)
	if err != nil {
		return 0, nil, nil, err
	}
	return typ, left, right, nil
}

// planInnerJoins plans a tree of inner joins as one: its leaves (tables,
// subqueries, outer joins) joined left-deep in their written order, which
// gives the columns in the order the tree has, with every condition (ON
// and WHERE) attached to the first join that has all its columns, and the
// conditions on one leaf pushed into that leaf.
func (pc *planContext) planInnerJoins(r *parser.Join, where []parser.Expr, env *cteEnv) (*relation, error) {
	var leaves []parser.TableRef
	var conds []parser.Expr
	var flatten func(t parser.TableRef) error
	flatten = func(t parser.TableRef) error {
		// A NATURAL or USING join is a leaf: its merged columns exist only
		// over its own output.
		if j, ok := t.(*parser.Join); ok && innerKind(j.Kind) && isRegularJoin(j) && !j.Natural && len(j.Using) == 0 {
			if err := flatten(j.Left); err != nil {
				return err
			}
			if err := flatten(j.Right); err != nil {
				return err
			}
			conds = append(conds, conjuncts(j.On)...)
			return nil
		}
		leaves = append(leaves, t)
		return nil
	}
	if err := flatten(r); err != nil {
		return nil, err
	}
	conds = append(conds, where...)
	rels := make([]*relation, len(leaves))
	offsets := make([]int, len(leaves)+1)
	sc := &scope{}
	for i, l := range leaves {
		rel, err := pc.planFrom(l, env)
		if err != nil {
			return nil, err
		}
		rels[i] = rel
		offsets[i+1] = offsets[i] + len(rel.scope.cols)
		sc.cols = append(sc.cols, rel.scope.cols...)
	}
	bound, err := pc.bindJoinConds(sc, conds, "WHERE")
	if err != nil {
		return nil, err
	}
	leafOf := func(col int) int {
		for i := range leaves {
			if col < offsets[i+1] {
				return i
			}
		}
		return len(leaves) - 1
	}
	// The join step that can evaluate each condition: the one that brings
	// in its last leaf (step 0 is the first leaf alone).
	at := make([][]expr.Expr, len(leaves))
	for _, c := range bound {
		last := 0
		for _, col := range expr.UsesColumns(c) {
			if l := leafOf(col); l > last {
				last = l
			}
		}
		at[last] = append(at[last], c)
	}
	cur := rels[0]
	if len(at[0]) > 0 {
		cur = filterRelation(cur, at[0])
	}
	for k := 1; k < len(leaves); k++ {
		var err error
		if cur, err = pc.joinRelations(r, join.Inner, cur, rels[k], at[k]); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// bindJoinConds binds condition conjuncts over a join's columns.
func (pc *planContext) bindJoinConds(sc *scope, conds []parser.Expr, clause string) ([]expr.Expr, error) {
	b := &binder{scope: sc, clause: clause, cancel: pc.cancel}
	out := make([]expr.Expr, 0, len(conds))
	for _, c := range conds {
		x, err := b.bind(c)
		if err != nil {
			return nil, err
		}
		if t := x.Type(); t.Root != types.RootBoolean && t.Root != types.RootNull {
			return nil, errAt(c, "%s clause must be a condition", clause)
		}
		// BETWEEN binds to an AND of two comparisons: each is a conjunct.
		out = append(out, boundConjuncts(x)...)
	}
	return out, nil
}

// filterRelation applies predicates (over rel's columns) to rel.
func filterRelation(rel *relation, preds []expr.Expr) *relation {
	if len(preds) == 0 {
		return rel
	}
	return &relation{node: newCalc(rel.node, nil, andExprs(preds), rel.node.Schema()), scope: rel.scope}
}

// joinScope is the scope of a join's output: the left columns, then the
// right ones, nullable on a side an outer join pads, and without time
// attributes, which a regular join does not keep (Flink materializes them).
func joinScope(l, r *scope, typ join.Type) *scope {
	sc := &scope{cols: make([]scopeColumn, 0, len(l.cols)+len(r.cols))}
	for _, c := range l.cols {
		if typ == join.RightOuter || typ == join.FullOuter {
			c.Type = c.Type.WithNullable(true)
		}
		sc.cols = append(sc.cols, c)
	}
	for _, c := range r.cols {
		if typ == join.LeftOuter || typ == join.FullOuter {
			c.Type = c.Type.WithNullable(true)
		}
		sc.cols = append(sc.cols, c)
	}
	return sc
}

// joinRelations joins left and right on conds (bound over [left...,
// right...]): it pushes the predicates on one input into that input where
// the join type allows it, and plans the rest as an interval join when it
// bounds the time attributes of both sides, else as a regular join.
func (pc *planContext) joinRelations(at parser.Node, typ join.Type, left, right *relation, conds []expr.Expr) (*relation, error) {
	lw := len(left.scope.cols)
	rightNames := make([]string, len(right.scope.cols))
	for i, c := range right.scope.cols {
		rightNames[i] = c.Name
	}
	jc := splitJoinCondition(conds, lw, rightNames)
	// An outer join keeps every row of its outer side: a condition on that
	// side only decides matching and stays in the join.
	residual := jc.Residual
	if typ == join.LeftOuter || typ == join.FullOuter {
		residual = append(residual, jc.LeftOnly...)
		jc.LeftOnly = nil
	}
	if typ == join.RightOuter || typ == join.FullOuter {
		for _, c := range jc.RightOnly {
			residual = append(residual, expr.ShiftColumns(c, lw, nil))
		}
		jc.RightOnly = nil
	}
	left = filterRelation(left, jc.LeftOnly)
	right = filterRelation(right, jc.RightOnly)
	// Equalities of expressions (or of columns whose values differ in
	// form) become keys on computed columns, dropped after the join.
	jc, residual, left, right, el, er := computedKeys(jc, residual, left, right)
	rel, err := pc.planJoinKind(at, typ, left, right, jc, residual)
	if err != nil || el+er == 0 {
		return rel, err
	}
	lw2 := len(left.scope.cols)
	return projectOutColumns(rel, [2]int{lw2 - el, el}, [2]int{lw2 + len(right.scope.cols) - er, er}), nil
}

// planJoinKind plans a window, interval or regular join of left and right.
func (pc *planContext) planJoinKind(at parser.Node, typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, error) {
	if rel, ok, err := pc.planWindowJoin(at, typ, left, right, jc, residual); ok || err != nil {
		return rel, err
	}
	if rel, ok, err := pc.planIntervalJoin(at, typ, left, right, jc, residual); ok || err != nil {
		return rel, err
	}
	return pc.planRegular(at, typ, left, right, jc, residual)
}

// planRegular plans a regular join node over left and right.
func (pc *planContext) planRegular(at parser.Node, typ join.Type, left, right *relation, jc joinCondition, residual []expr.Expr) (*relation, error) {
	if len(jc.LeftKeys) == 0 && !isBounded(left.node) && !isBounded(right.node) {
		return nil, &UnsupportedError{Msg: "Cannot generate a valid execution plan for the given query: " +
			"the join of two unbounded streams has no equality condition between them (a Cartesian product), " +
			"which would keep every row of both inputs in a single task. Add an equi-join condition (left.col = right.col), " +
			"or make one side bounded."}
	}
	sc := joinScope(left.scope, right.scope, typ)
	for i := range sc.cols {
		sc.cols[i].Type = sc.cols[i].Type.WithoutTimeAttr()
	}
	names, out := joinOutput(sc)
	n := &JoinNode{Type: typ, LeftKeys: jc.LeftKeys, RightKeys: jc.RightKeys, NullSafe: jc.NullSafe}
	all := append(append([]expr.Expr(nil), jc.Equi...), residual...)
	if len(all) > 0 {
		n.Cond = expr.ShiftColumns(andExprs(all), 0, names)
	}
	if len(residual) > 0 {
		n.Residual = andExprs(residual)
	}
	lpart, rpart := joinPartitioners(jc.LeftKeys, jc.RightKeys)
	n.LeftSpec, n.LeftUnique = inputSpec(left.node, jc.LeftKeys)
	n.RightSpec, n.RightUnique = inputSpec(right.node, jc.RightKeys)
	n.LeftTTL = pc.ttlHints.sideTTL(left, pc.p.cfg.StateTTL)
	n.RightTTL = pc.ttlHints.sideTTL(right, pc.p.cfg.StateTTL)
	n.inputs = []Node{pc.exchange(left.node, lpart), pc.exchange(right.node, rpart)}
	n.schema = out
	n.mode = joinMode(typ, left.node.Mode(), right.node.Mode())
	return &relation{node: n, scope: sc}, nil
}

// inputSpec is Flink's JoinInputSideSpec of an input joined on keys.
func inputSpec(in Node, keys []int) (join.InputSpec, []int) {
	uk, ok := upsertKey(in)
	if !ok || len(uk) == 0 {
		return join.NoUniqueKey, nil
	}
	if len(keys) > 0 && subset(uk, keys) {
		return join.JoinKeyContainsUniqueKey, uk
	}
	return join.HasUniqueKey, uk
}

func subset(a, b []int) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if x == y {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// joinMode is the changelog a regular join produces: an inner join
// forwards the kinds of change of its inputs, an outer join may produce
// any (it retracts padded rows), as Flink's changelog inference says.
func joinMode(typ join.Type, l, r types.ChangelogMode) types.ChangelogMode {
	if typ != join.Inner {
		return types.Retract
	}
	return types.ChangelogMode{
		Insert:       l.Insert || r.Insert,
		UpdateBefore: l.UpdateBefore || r.UpdateBefore,
		UpdateAfter:  l.UpdateAfter || r.UpdateAfter,
		Delete:       l.Delete || r.Delete,
	}
}
