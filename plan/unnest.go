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
