package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/unnest"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// planLateralJoin plans a join whose right side is evaluated per left row:
// UNNEST of a column or a LATERAL subquery (table function).
func (pc *planContext) planLateralJoin(r *parser.Join, env *cteEnv) (*relation, error) {
	if dt, ok := r.Right.(*parser.DerivedTable); ok {
		return pc.planLateralSubquery(r, dt, env)
	}
	u, ok := r.Right.(*parser.Unnest)
	if !ok {
		return nil, unsupportedAt(r.Right, "LATERAL subqueries are not supported yet; UNNEST(...) is")
	}
	outer := false
	switch r.Kind {
	case parser.JoinCross, parser.JoinComma, parser.JoinInner:
	case parser.JoinLeft:
		outer = true
	default:
		return nil, unsupportedAt(r, "%s JOIN with UNNEST is not supported; UNNEST joins its left side as INNER, CROSS, comma or LEFT join", r.Kind)
	}
	if r.Natural || len(r.Using) > 0 {
		return nil, unsupportedAt(r, "a join with UNNEST takes an ON condition, not NATURAL or USING")
	}
	left, err := pc.planFrom(r.Left, env)
	if err != nil {
		return nil, err
	}
	return pc.planUnnest(u, left, outer, r.On)
}

// UnnestNode joins each input row with the rows of its collections
// (Flink's Correlate over UNNEST); it chains to its input.
type UnnestNode struct {
	base
	Args       []expr.Expr
	ArgKinds   []unnest.Arg
	Ordinality bool
	LeftOuter  bool
	Cond       expr.Expr // over the output row; nil: ON TRUE
}

func (n *UnnestNode) Describe() string {
	var b strings.Builder
	b.WriteString("Correlate(invocation=[UNNEST(")
	for i, a := range n.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteString(")")
	if n.Ordinality {
		b.WriteString(" WITH ORDINALITY")
	}
	jt := "INNER"
	if n.LeftOuter {
		jt = "LEFT"
	}
	fmt.Fprintf(&b, "], joinType=[%s]", jt)
	if n.Cond != nil {
		b.WriteString(", condition=[" + n.Cond.String() + "]")
	}
	b.WriteString(", select=[" + strings.Join(n.schema.Names(), ", ") + "])")
	return b.String()
}

// forwardChanges implements changeForwarder.
func (n *UnnestNode) forwardChanges(m types.ChangelogMode) { n.mode = m }

// planUnnest plans UNNEST(args) joined to left; on is the join's ON
// condition (nil for CROSS or comma joins).
func (pc *planContext) planUnnest(u *parser.Unnest, left *relation, outer bool, on parser.Expr) (*relation, error) {
	b := &binder{scope: left.scope, clause: "UNNEST", cancel: pc.cancel}
	n := &UnnestNode{Ordinality: u.WithOrdinality, LeftOuter: outer}
	var cols types.Schema
	for _, a := range u.Args {
		x, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		t := x.Type()
		var arg unnest.Arg
		switch {
		case t.Root == types.RootArray && t.Elem != nil && t.Elem.Root == types.RootRow:
			arg = unnest.Arg{Kind: unnest.ArrayOfRows, Width: len(t.Elem.Fields)}
			for _, f := range t.Elem.Fields {
				cols = append(cols, types.Column{Name: f.Name, Type: f.Type.WithNullable(true)})
			}
		case t.Root == types.RootArray && t.Elem != nil:
			arg = unnest.Arg{Kind: unnest.Array, Width: 1}
			cols = append(cols, types.Column{Name: fmt.Sprintf("EXPR$%d", len(cols)), Type: t.Elem.WithNullable(true)})
		case t.Root == types.RootMultiset && t.Elem != nil:
			arg = unnest.Arg{Kind: unnest.Multiset, Width: 1}
			cols = append(cols, types.Column{Name: fmt.Sprintf("EXPR$%d", len(cols)), Type: t.Elem.WithNullable(true)})
		case t.Root == types.RootMap && t.Elem != nil && t.Value != nil:
			arg = unnest.Arg{Kind: unnest.Map, Width: 2}
			cols = append(cols, types.Column{Name: "KEY", Type: t.Elem.WithNullable(true)},
				types.Column{Name: "VALUE", Type: t.Value.WithNullable(true)})
		default:
			return nil, errAt(a, "Cannot apply 'UNNEST' to arguments of type 'UNNEST(<%s>)'. Supported form(s): 'UNNEST(<MULTISET>)'\n'UNNEST(<ARRAY>)'\n'UNNEST(<MAP>)'", t.WithNullable(true).SQLString())
		}
		n.Args = append(n.Args, x)
		n.ArgKinds = append(n.ArgKinds, arg)
	}
	if u.WithOrdinality {
		cols = append(cols, types.Column{Name: "ORDINALITY", Type: types.BigIntType.WithNullable(outer)})
	}
	right, err := aliasRelation(u, &relation{scope: newScope(u.Alias, cols)}, u.Alias, u.ColumnAliases)
	if err != nil {
		return nil, err
	}
	for i := range cols {
		cols[i].Name = right.scope.cols[i].Name
	}
	sc := &scope{cols: append(append([]scopeColumn(nil), left.scope.cols...), right.scope.cols...)}
	if on != nil {
		cond, err := (&binder{scope: sc, clause: "ON", cancel: pc.cancel}).bind(on)
		if err != nil {
			return nil, err
		}
		if rt := cond.Type().Root; rt != types.RootBoolean && rt != types.RootNull {
			return nil, errAt(on, "ON clause must be a condition")
		}
		if v, ok := expr.LiteralValue(cond); !ok || !(v.K == types.KindBool && v.Bool()) {
			n.Cond = cond
		}
	}
	out := append(append(types.Schema{}, left.node.Schema()...), cols...)
	n.inputs, n.schema, n.mode = []Node{left.node}, out, left.node.Mode()
	return &relation{node: n, scope: sc}, nil
}

// planBareUnnest plans FROM UNNEST(...) on its own: the collections of
// constant expressions, unnested once.
func (pc *planContext) planBareUnnest(u *parser.Unnest) (*relation, error) {
	v := &ValuesNode{Rows: [][]expr.Expr{{}}}
	v.schema, v.mode = types.Schema{}, types.InsertOnly
	return pc.planUnnest(u, &relation{node: v, scope: &scope{}}, false, nil)
}

// unnestOp builds the runtime operator of an UnnestNode.
func (gb *graphBuilder) unnestOp(x *UnnestNode) func() (exec.Operator, error) {
	cfg := gb.cfg
	args, cond := x.Args, x.Cond
	spec := unnest.Spec{InWidth: len(x.inputs[0].Schema()), ArgKinds: x.ArgKinds, Ordinality: x.Ordinality, LeftOuter: x.LeftOuter}
	spec.Args = func() (exec.Projector, error) { return expr.NewProjector(args, cfg), nil }
	if cond != nil {
		spec.Cond = func() (exec.Predicate, error) { return expr.NewPredicate(cond, cfg), nil }
	}
	return func() (exec.Operator, error) { return unnest.NewJoin(spec) }
}

// planLateralSubquery plans a LATERAL subquery over UNNEST of the left
// row's collections: LATERAL (SELECT items FROM UNNEST(...) [WHERE cond]).
// It is the UNNEST join with the WHERE as the correlation's condition,
// followed by the items; for a LEFT join a row without elements gets
// NULLs for every item (a constant item too), as the subquery returned no
// row.
func (pc *planContext) planLateralSubquery(r *parser.Join, dt *parser.DerivedTable, env *cteEnv) (*relation, error) {
	q := dt.Query
	sel, isSelect := q.Body.(*parser.Select)
	var u *parser.Unnest
	if isSelect {
		u, _ = sel.From.(*parser.Unnest)
	}
	if u == nil || len(q.With) > 0 || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil || sel.Distinct ||
		len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregate(sel) || len(sel.Hints) > 0 || len(sel.Windows) > 0 {
		return nil, unsupportedAt(dt, "LATERAL subqueries are supported only as a projection and filter of UNNEST: LATERAL (SELECT ... FROM UNNEST(...) [WHERE ...]), without aggregates, DISTINCT, ORDER BY or LIMIT")
	}
	outer := false
	switch r.Kind {
	case parser.JoinCross, parser.JoinComma, parser.JoinInner:
	case parser.JoinLeft:
		outer = true
	default:
		return nil, unsupportedAt(r, "%s JOIN LATERAL is not supported; only INNER, CROSS, comma and LEFT joins", r.Kind)
	}
	if r.Natural || len(r.Using) > 0 {
		return nil, unsupportedAt(r, "a LATERAL join takes an ON condition, not NATURAL or USING")
	}
	left, err := pc.planFrom(r.Left, env)
	if err != nil {
		return nil, err
	}
	rel, err := pc.planUnnest(u, left, outer, nil)
	if err != nil {
		return nil, err
	}
	un := rel.node.(*UnnestNode)
	if sel.Where != nil {
		if un.Cond, err = pc.bindCondition(rel.scope, sel.Where); err != nil {
			return nil, err
		}
	}
	nl := len(left.scope.cols)
	b := &binder{scope: rel.scope, clause: "SELECT", cancel: pc.cancel}
	items, itemSchema, err := pc.bindSelectList(sel, &scope{cols: rel.scope.cols[nl:]}, b)
	if err != nil {
		return nil, err
	}
	if outer {
		// A hidden ordinality, NULL exactly on the padded rows, tells them
		// apart from elements that are NULL.
		marker := len(un.schema)
		if !un.Ordinality {
			un.Ordinality = true
			un.schema = append(un.schema, types.Column{Name: "$ordinality", Type: types.BigIntType})
		} else {
			marker--
		}
		isPad, err := expr.Call("IS NULL", expr.Column(marker, "$ordinality", types.BigIntType))
		if err != nil {
			return nil, err
		}
		for i, it := range items {
			t := it.Type().WithNullable(true)
			if items[i], err = expr.Case(nil, []expr.Expr{isPad}, []expr.Expr{expr.NullLiteral(t)}, it); err != nil {
				return nil, err
			}
			itemSchema[i].Type = t
		}
	}
	proj := make([]expr.Expr, 0, nl+len(items))
	ls := left.node.Schema()
	for i, c := range ls {
		proj = append(proj, expr.Column(i, c.Name, c.Type))
	}
	proj = append(proj, items...)
	out := append(append(types.Schema{}, ls...), itemSchema...)
	calc := newCalc(un, proj, nil, out)
	lat, err := aliasRelation(dt, &relation{scope: newScope(dt.Alias, itemSchema)}, dt.Alias, dt.ColumnAliases)
	if err != nil {
		return nil, err
	}
	for i := range lat.scope.cols {
		out[nl+i].Name = lat.scope.cols[i].Name
	}
	sc := &scope{cols: append(append([]scopeColumn(nil), left.scope.cols...), lat.scope.cols...)}
	var node Node = calc
	if r.On != nil {
		cond, err := (&binder{scope: sc, clause: "ON", cancel: pc.cancel}).bind(r.On)
		if err != nil {
			return nil, err
		}
		if v, ok := expr.LiteralValue(cond); !ok || !(v.K == types.KindBool && v.Bool()) {
			if outer {
				return nil, unsupportedAt(r.On, "LEFT JOIN LATERAL supports only ON TRUE; put the condition into the subquery's WHERE")
			}
			node = newCalc(calc, nil, cond, out)
		}
	}
	return &relation{node: node, scope: sc}, nil
}
