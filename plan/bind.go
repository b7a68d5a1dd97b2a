package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// binder converts AST expressions into typed expressions over a scope.
type binder struct {
	scope *scope
	// clause names the clause being bound, for messages ("WHERE", "SELECT", …).
	clause string
	// hook, when set, is offered every node first; it returns ok=false to let
	// the binder convert the node as usual. Grouped queries use it to replace
	// aggregate calls and grouping expressions by references.
	hook func(e parser.Expr) (expr.Expr, bool, error)
	// cancel, when set, lets a long expression's binding be cancelled.
	cancel *canceller
}

func (b *binder) bind(e parser.Expr) (expr.Expr, error) {
	if err := b.cancel.tick(); err != nil {
		return nil, err
	}
	if b.hook != nil {
		x, ok, err := b.hook(e)
		if err != nil || ok {
			return x, err
		}
	}
	x, err := b.convert(e)
	if err != nil {
		return nil, err
	}
	return x, nil
}

func (b *binder) bindAll(es []parser.Expr) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		x, err := b.bind(e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// call builds a function call and positions its error at node n.
func (b *binder) call(n parser.Node, name string, args ...expr.Expr) (expr.Expr, error) {
	x, err := expr.Call(name, args...)
	if err != nil {
		return nil, errAt(n, "%s", err.Error())
	}
	return x, nil
}

func (b *binder) convert(e parser.Expr) (expr.Expr, error) {
	switch n := e.(type) {
	case *parser.Ident:
		return b.ident(n)
	case *parser.Literal:
		return b.literal(n)
	case *parser.IntervalLit:
		x, err := expr.IntervalLiteral(n.Value, n.Qualifier.Start, n.Qualifier.End, n.Negative)
		if err != nil {
			return nil, errAt(n, "%s", err.Error())
		}
		return x, nil
	case *parser.UnaryExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case "-":
			return b.call(n, "NEGATE", x)
		case "+":
			return b.call(n, "UNARY_PLUS", x)
		}
		return b.call(n, n.Op, x)
	case *parser.JsonExpr:
		return b.jsonCall(n)
	case *parser.BinaryExpr:
		if n.Op == "OVERLAPS" {
			return b.overlaps(n)
		}
		// A left-deep chain (a OR b OR c ..., as the parser builds it) is
		// bound in a loop rather than by recursion down its left spine:
		// the same order as bind would take (the hook sees every spine
		// node first), without a stack as deep as the chain is long.
		spine := []*parser.BinaryExpr{n}
		var left expr.Expr
		for left == nil {
			l, ok := spine[len(spine)-1].L.(*parser.BinaryExpr)
			if !ok {
				break
			}
			if err := b.cancel.tick(); err != nil {
				return nil, err
			}
			if b.hook != nil {
				x, ok, err := b.hook(l)
				if err != nil {
					return nil, err
				}
				if ok {
					left = x
					break
				}
			}
			spine = append(spine, l)
		}
		if left == nil {
			var err error
			if left, err = b.bind(spine[len(spine)-1].L); err != nil {
				return nil, err
			}
		}
		for i := len(spine) - 1; i >= 0; i-- {
			r, err := b.bind(spine[i].R)
			if err != nil {
				return nil, err
			}
			if left, err = b.call(spine[i], spine[i].Op, left, r); err != nil {
				return nil, err
			}
		}
		return left, nil
	case *parser.IsExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		name := "IS "
		if n.Not {
			name += "NOT "
		}
		return b.call(n, name+n.What, x)
	case *parser.IsDistinctFrom:
		l, err := b.bind(n.L)
		if err != nil {
			return nil, err
		}
		r, err := b.bind(n.R)
		if err != nil {
			return nil, err
		}
		if n.Not {
			return b.call(n, "IS NOT DISTINCT FROM", l, r)
		}
		return b.call(n, "IS DISTINCT FROM", l, r)
	case *parser.BetweenExpr:
		args, err := b.bindAll([]parser.Expr{n.X, n.Lo, n.Hi})
		if err != nil {
			return nil, err
		}
		name := "BETWEEN"
		if n.Not {
			name = "NOT BETWEEN"
		}
		if !n.Symmetric {
			return b.call(n, name, args...)
		}
		// SYMMETRIC: either order of the bounds.
		a, err := b.call(n, "BETWEEN", args[0], args[1], args[2])
		if err != nil {
			return nil, err
		}
		c, err := b.call(n, "BETWEEN", args[0], args[2], args[1])
		if err != nil {
			return nil, err
		}
		or, err := b.call(n, "OR", a, c)
		if err != nil || !n.Not {
			return or, err
		}
		return b.call(n, "NOT", or)
	case *parser.InExpr:
		if n.Query != nil {
			return nil, unsupportedAt(n, "IN with a subquery is not supported yet")
		}
		args, err := b.bindAll(append([]parser.Expr{n.X}, n.List...))
		if err != nil {
			return nil, err
		}
		if n.Not {
			return b.call(n, "NOT IN", args...)
		}
		return b.call(n, "IN", args...)
	case *parser.LikeExpr:
		es := []parser.Expr{n.X, n.Pattern}
		if n.Escape != nil {
			es = append(es, n.Escape)
		}
		args, err := b.bindAll(es)
		if err != nil {
			return nil, err
		}
		name := n.Op
		if n.Not {
			name = "NOT " + name
		}
		return b.call(n, name, args...)
	case *parser.FuncCall:
		return b.funcCall(n)
	case *parser.CaseExpr:
		var operand expr.Expr
		if n.Operand != nil {
			x, err := b.bind(n.Operand)
			if err != nil {
				return nil, err
			}
			operand = x
		}
		var whens, thens []expr.Expr
		for _, w := range n.Whens {
			c, err := b.bind(w.Cond)
			if err != nil {
				return nil, err
			}
			r, err := b.bind(w.Result)
			if err != nil {
				return nil, err
			}
			whens, thens = append(whens, c), append(thens, r)
			// WHEN 1, 2 THEN r is WHEN 1 THEN r WHEN 2 THEN r.
			for _, m := range w.More {
				c, err := b.bind(m)
				if err != nil {
					return nil, err
				}
				whens, thens = append(whens, c), append(thens, r)
			}
		}
		var els expr.Expr
		if n.Else != nil {
			x, err := b.bind(n.Else)
			if err != nil {
				return nil, err
			}
			els = x
		}
		x, err := expr.Case(operand, whens, thens, els)
		if err != nil {
			return nil, errAt(n, "%s", err.Error())
		}
		return x, nil
	case *parser.CastExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		t, err := convertType(n.Type)
		if err != nil {
			return nil, err
		}
		c, err := expr.Cast(x, t, n.Try)
		if err != nil {
			return nil, errAt(n, "%s", err.Error())
		}
		return c, nil
	case *parser.ExtractExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		return b.call(n, "EXTRACT", expr.Symbol(n.Unit), x)
	case *parser.FloorCeilExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		name := "FLOOR"
		if n.Ceil {
			name = "CEIL"
		}
		return b.call(n, name, x, expr.Symbol(n.Unit))
	case *parser.TrimExpr:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		var chars expr.Expr = expr.StringLiteral(" ")
		if n.Chars != nil {
			if chars, err = b.bind(n.Chars); err != nil {
				return nil, err
			}
		}
		return b.call(n, "TRIM", expr.Symbol(n.Mode), chars, x)
	case *parser.SubstringExpr:
		es := []parser.Expr{n.X, n.Start}
		if n.Length != nil {
			es = append(es, n.Length)
		}
		args, err := b.bindAll(es)
		if err != nil {
			return nil, err
		}
		return b.call(n, "SUBSTRING", args...)
	case *parser.PositionExpr:
		es := []parser.Expr{n.Sub, n.X}
		if n.From != nil {
			es = append(es, n.From)
		}
		args, err := b.bindAll(es)
		if err != nil {
			return nil, err
		}
		return b.call(n, "POSITION", args...)
	case *parser.OverlayExpr:
		es := []parser.Expr{n.X, n.Placing, n.Start}
		if n.Length != nil {
			es = append(es, n.Length)
		}
		args, err := b.bindAll(es)
		if err != nil {
			return nil, err
		}
		return b.call(n, "OVERLAY", args...)
	case *parser.RowExpr:
		args, err := b.bindAll(n.Fields)
		if err != nil {
			return nil, err
		}
		return b.call(n, "ROW", args...)
	case *parser.ArrayExpr:
		args, err := b.bindAll(n.Elems)
		if err != nil {
			return nil, err
		}
		return b.call(n, "ARRAY", args...)
	case *parser.MapExpr:
		args, err := b.bindAll(n.Elems)
		if err != nil {
			return nil, err
		}
		return b.call(n, "MAP", args...)
	case *parser.SubscriptExpr:
		args, err := b.bindAll([]parser.Expr{n.X, n.Index})
		if err != nil {
			return nil, err
		}
		return b.call(n, "ITEM", args...)
	case *parser.FieldAccess:
		x, err := b.bind(n.X)
		if err != nil {
			return nil, err
		}
		return b.call(n, "DOT", x, expr.Symbol(n.Field))
	case *parser.TimeUnitExpr:
		return expr.Symbol(n.Unit), nil
	case *parser.SubqueryExpr:
		return nil, unsupportedAt(n, "a scalar subquery is supported in the SELECT list of a query without aggregation and in WHERE, not in %s", b.clause)
	case *parser.ExistsExpr:
		return nil, unsupportedAt(n, "EXISTS subqueries are not supported yet")
	case *parser.Star:
		return nil, errAt(n, "Unknown identifier '*'")
	case *parser.Descriptor:
		return nil, errAt(n, "DESCRIPTOR is only allowed as an argument of a window table function")
	case *parser.TableArg:
		return nil, errAt(n, "A table argument is only allowed in a table function call")
	}
	return nil, errAt(e, "Unsupported expression %s", parser.FormatExpr(e))
}

func (b *binder) ident(n *parser.Ident) (expr.Expr, error) {
	idx, used, msg := b.scope.resolve(n.Parts)
	if msg != "" {
		return nil, errAt(n, "%s", msg)
	}
	c := b.scope.cols[idx]
	var x = expr.Column(idx, c.Name, c.Type)
	for _, field := range n.Parts[used:] {
		var err error
		if x, err = b.call(n, "DOT", x, expr.Symbol(field)); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (b *binder) literal(n *parser.Literal) (expr.Expr, error) {
	var x expr.Expr
	var err error
	switch n.Kind {
	case parser.NumberLit:
		x, err = expr.NumericLiteral(n.Value)
	case parser.StringLit:
		x = expr.StringLiteral(n.Value)
	case parser.BinaryLit:
		x, err = expr.BinaryLiteral(n.Value)
	case parser.BoolLit:
		x = expr.BoolLiteral(strings.EqualFold(n.Value, "TRUE"))
	case parser.NullLit:
		x = expr.NullLiteral(types.NullType)
	case parser.UnknownLit:
		x = expr.NullLiteral(types.BooleanType)
	case parser.DateLit:
		x, err = expr.TypedLiteral("DATE", n.Value)
	case parser.TimeLit:
		x, err = expr.TypedLiteral("TIME", n.Value)
	case parser.TimestampLit:
		x, err = expr.TypedLiteral("TIMESTAMP", n.Value)
	default:
		return nil, errAt(n, "Unsupported literal %s", parser.FormatExpr(n))
	}
	if err != nil {
		return nil, errAt(n, "%s", err.Error())
	}
	return x, nil
}

// windowPropertyFunctions are the legacy group-window auxiliary functions.
var windowPropertySuffixes = []string{"_START", "_END", "_ROWTIME", "_PROCTIME"}

func isGroupWindowFunction(name string) bool {
	switch name {
	case "TUMBLE", "HOP", "SESSION", "CUMULATE":
		return true
	}
	return false
}

func isWindowProperty(name string) bool {
	for _, w := range []string{"TUMBLE", "HOP", "SESSION"} {
		for _, s := range windowPropertySuffixes {
			if name == w+s {
				return true
			}
		}
	}
	return false
}

func (b *binder) funcCall(n *parser.FuncCall) (expr.Expr, error) {
	name := strings.ToUpper(n.FuncName())
	if agg.IsAggregate(name) {
		if n.Over != nil {
			return nil, errAt(n, "Windowed aggregate expression is illegal in %s clause", b.clauseName())
		}
		return nil, errAt(n, "Aggregate expression is illegal in %s clause", b.clauseName())
	}
	if isGroupingFunction(name) {
		// A grouped query's SELECT and HAVING bind GROUPING themselves.
		if c := b.clauseName(); c != "SELECT" && c != "HAVING" {
			return nil, errAt(n, "%s operator may only occur in SELECT, HAVING or ORDER BY clause", name)
		}
		return nil, errAt(n, "%s operator may only occur in an aggregate query", name)
	}
	if n.Over != nil {
		return nil, unsupportedAt(n, "%s OVER (...) is not supported yet", name)
	}
	if n.Filter != nil || n.Distinct {
		return nil, errAt(n, "DISTINCT/FILTER are only allowed with aggregate functions, not with %s", name)
	}
	if isGroupWindowFunction(name) {
		return nil, errAt(n, "Window function %s can only be used in the GROUP BY clause (or as a window table function in FROM: TABLE(%s(TABLE t, DESCRIPTOR(ts), ...)))", name, name)
	}
	if isWindowProperty(name) {
		return nil, errAt(n, "%s can only be used in the SELECT list of a query that groups by the matching %s window", name, strings.SplitN(name, "_", 2)[0])
	}
	args := make([]expr.Expr, 0, len(n.Args))
	for _, a := range n.Args {
		if a.Name != "" {
			return nil, errAt(n, "Named arguments are not supported by function %s", name)
		}
		x, err := b.bind(a.Value)
		if err != nil {
			return nil, err
		}
		args = append(args, x)
	}
	x, err := expr.Call(name, args...)
	if err != nil {
		// Calcite names the function as it was written.
		msg := strings.Replace(err.Error(), "signature "+name+"(", "signature "+n.FuncName()+"(", 1)
		return nil, errAt(n, "%s", msg)
	}
	return x, nil
}

func (b *binder) clauseName() string {
	if b.clause == "" {
		return "this"
	}
	return b.clause
}

func unsupportedAt(n parser.Node, format string, args ...any) error {
	p := n.Pos()
	return &UnsupportedError{Msg: fmt.Sprintf("Unsupported at line %d, column %d: ", p.Line, p.Col) + fmt.Sprintf(format, args...)}
}
