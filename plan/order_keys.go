package plan

import (
	"fmt"

	"github.com/flinksql/flinksql/sql/expr"
	parser "github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// hoistOrderKeys lets the ORDER BY of a SELECT name columns of its FROM
// clause that the select list leaves out, and expressions, as Calcite
// does: each such key becomes one more select item, under a name no user
// column can have, that the sort refers to by that name; the caller drops
// the added columns after the sort (dropHoisted). Keys that are ordinals
// or output column names stay as they are. It returns sel and order
// unchanged when nothing needs hoisting.
func hoistOrderKeys(sel *parser.Select, order []*parser.OrderItem) (*parser.Select, []*parser.OrderItem, int, error) {
	outputs := map[string]bool{}
	star := false
	for _, it := range sel.Items {
		switch e := it.Expr.(type) {
		case *parser.Star:
			star = true
		case *parser.Ident:
			outputs[e.Parts[len(e.Parts)-1]] = true
		}
		if it.Alias != "" {
			outputs[it.Alias] = true
		}
	}
	var extra []*parser.SelectItem
	var out []*parser.OrderItem
	for i, o := range order {
		switch e := o.Expr.(type) {
		case *parser.Literal:
			if e.Kind == parser.NumberLit {
				continue
			}
		case *parser.Ident:
			// With a * every column of the FROM clause is an output, and
			// a name the list selects is ordered by its output column.
			if star || outputs[e.Parts[len(e.Parts)-1]] {
				continue
			}
		}
		if sel.Distinct {
			return nil, nil, 0, errAt(o.Expr, "Expression '%s' is not in the select clause", parser.FormatExpr(o.Expr))
		}
		if out == nil {
			out = append([]*parser.OrderItem(nil), order...)
		}
		name := fmt.Sprintf("$order%d", len(extra))
		extra = append(extra, &parser.SelectItem{At: o.At, Expr: o.Expr, Alias: name})
		hoisted := *o
		hoisted.Expr = parser.NewIdent(o.Expr.Pos(), name)
		out[i] = &hoisted
	}
	if len(extra) == 0 {
		return sel, order, 0, nil
	}
	s := *sel
	s.Items = append(append([]*parser.SelectItem(nil), sel.Items...), extra...)
	return &s, out, len(extra), nil
}

// dropHoisted removes the last n columns of rel, the keys hoistOrderKeys
// added, once the sort used them.
func (pc *planContext) dropHoisted(rel *relation, n int) *relation {
	in := rel.node.Schema()
	keep := len(in) - n
	proj := make([]expr.Expr, keep)
	for i := range keep {
		proj[i] = &expr.ColumnRef{Index: i, Name: in[i].Name, T: in[i].Type}
	}
	r := pc.project(rel.node, proj, append(types.Schema(nil), in[:keep]...))
	r.scope = &scope{cols: rel.scope.cols[:keep]}
	return r
}
