package plan

import (
	"strings"

	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
)

func isAggregateName(name string) bool { return agg.IsAggregate(strings.ToUpper(name)) }

// walkExpr calls fn on e and every expression below it, not descending into
// subqueries, in pre-order (children left to right). It keeps its own stack:
// a flat chain of 100 000 operators is a tree as deep as that.
func walkExpr(e parser.Expr, fn func(parser.Expr)) {
	stack := []parser.Expr{e}
	var kids []parser.Expr
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		fn(e)
		kids = appendChildren(kids[:0], e)
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, kids[i])
		}
	}
}

// appendChildren appends the expressions directly below e (nil ones too).
func appendChildren(out []parser.Expr, e parser.Expr) []parser.Expr {
	w := func(xs ...parser.Expr) { out = append(out, xs...) }
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
			w(wh.More...)
		}
	case *parser.JsonExpr:
		w(n.Args...)
		w(n.EmptyDefault, n.ErrorDefault)
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
	return out
}
