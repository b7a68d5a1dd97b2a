package planner

import (
	"strings"

	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
)

func isAggregateName(name string) bool { return agg.IsAggregate(strings.ToUpper(name)) }

// walkExpr calls fn on e and every expression below it, not descending into
// subqueries.
func walkExpr(e parser.Expr, fn func(parser.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	w := func(xs ...parser.Expr) {
		for _, x := range xs {
			walkExpr(x, fn)
		}
	}
	switch n := e.(type) {
	case *parser.UnaryExpr:
		w(n.X)
	case *parser.BinaryExpr:
		w(n.L, n.R)
	case *parser.IsExpr:
		w(n.X)
	case *parser.IsDistinctFrom:
		w(n.L, n.R)
	case *parser.BetweenExpr:
		w(n.X, n.Lo, n.Hi)
	case *parser.InExpr:
		w(n.X)
		w(n.List...)
	case *parser.LikeExpr:
		w(n.X, n.Pattern, n.Escape)
	case *parser.FuncCall:
		w(n.ArgExprs()...)
		w(n.Filter)
	case *parser.CaseExpr:
		w(n.Operand, n.Else)
		for _, wh := range n.Whens {
			w(wh.Cond, wh.Result)
		}
	case *parser.CastExpr:
		w(n.X)
	case *parser.ExtractExpr:
		w(n.X)
	case *parser.FloorCeilExpr:
		w(n.X)
	case *parser.TrimExpr:
		w(n.Chars, n.X)
	case *parser.SubstringExpr:
		w(n.X, n.Start, n.Length)
	case *parser.PositionExpr:
		w(n.Sub, n.X, n.From)
	case *parser.OverlayExpr:
		w(n.X, n.Placing, n.Start, n.Length)
	case *parser.RowExpr:
		w(n.Fields...)
	case *parser.ArrayExpr:
		w(n.Elems...)
	case *parser.MapExpr:
		w(n.Elems...)
	case *parser.SubscriptExpr:
		w(n.X, n.Index)
	case *parser.FieldAccess:
		w(n.X)
	}
}
