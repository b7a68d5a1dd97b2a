package plan

import (
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// jsonCall binds the SQL/JSON functions with clauses (JSON_VALUE,
// JSON_QUERY, JSON_EXISTS, JSON_OBJECT, JSON_ARRAY).
func (b *binder) jsonCall(n *parser.JsonExpr) (expr.Expr, error) {
	args, err := b.bindAll(n.Args)
	if err != nil {
		return nil, err
	}
	var x expr.Expr
	switch n.Func {
	case "JSON_EXISTS":
		x, err = expr.JSONExists(args[0], args[1], n.OnError)
	case "JSON_VALUE":
		t := types.StringType
		if n.Returning != nil {
			if t, err = convertType(n.Returning); err != nil {
				return nil, err
			}
		}
		onEmpty := expr.JSONBehavior{Kind: n.OnEmpty}
		onError := expr.JSONBehavior{Kind: n.OnError}
		if n.EmptyDefault != nil {
			if onEmpty.Default, err = b.bind(n.EmptyDefault); err != nil {
				return nil, err
			}
		}
		if n.ErrorDefault != nil {
			if onError.Default, err = b.bind(n.ErrorDefault); err != nil {
				return nil, err
			}
		}
		x, err = expr.JSONValue(args[0], args[1], t, onEmpty, onError)
	case "JSON_QUERY":
		asArray := false
		if n.Returning != nil {
			t, err := convertType(n.Returning)
			if err != nil {
				return nil, err
			}
			asArray = t.Root == types.RootArray && t.Elem.IsString()
			if !t.IsString() && !asArray {
				return nil, errAt(n, "Unsupported RETURNING type %s of JSON_QUERY: it returns STRING or ARRAY<STRING>", t.SQLString())
			}
		}
		x, err = expr.JSONQuery(args[0], args[1], n.Wrapper, n.OnEmpty, n.OnError, asArray)
	case "JSON_OBJECT":
		x, err = expr.JSONObject(args, n.OnNull)
	case "JSON_ARRAY":
		x, err = expr.JSONArray(args, n.OnNull)
	}
	if err != nil {
		return nil, errAt(n, "%s", err.Error())
	}
	return x, nil
}

// overlaps binds (s0, e0) OVERLAPS (s1, e1), where an end may be an
// interval (the period's length): with each period's ends put in order, the
// periods overlap when e0 >= s1 AND e1 >= s0, as Calcite evaluates it.
func (b *binder) overlaps(n *parser.BinaryExpr) (expr.Expr, error) {
	period := func(e parser.Expr) (lo, hi expr.Expr, err error) {
		r, ok := e.(*parser.RowExpr)
		if !ok || len(r.Fields) != 2 {
			return nil, nil, errAt(n, "Cannot apply 'OVERLAPS' to arguments: each side must be a period (start, end) or (start, interval)")
		}
		s, err := b.bind(r.Fields[0])
		if err != nil {
			return nil, nil, err
		}
		x, err := b.bind(r.Fields[1])
		if err != nil {
			return nil, nil, err
		}
		if !s.Type().IsTemporal() {
			return nil, nil, errAt(n, "Cannot apply 'OVERLAPS' to arguments: the start of a period must be a date, time or timestamp, not %s", s.Type().SQLString())
		}
		if xt := x.Type(); xt.Root == types.RootIntervalDayTime || xt.Root == types.RootIntervalYearMonth {
			if x, err = b.call(n, "+", s, x); err != nil {
				return nil, nil, err
			}
		}
		if lo, err = b.call(n, "LEAST", s, x); err != nil {
			return nil, nil, err
		}
		if hi, err = b.call(n, "GREATEST", s, x); err != nil {
			return nil, nil, err
		}
		return lo, hi, nil
	}
	s0, e0, err := period(n.L)
	if err != nil {
		return nil, err
	}
	s1, e1, err := period(n.R)
	if err != nil {
		return nil, err
	}
	a, err := b.call(n, ">=", e0, s1)
	if err != nil {
		return nil, err
	}
	c, err := b.call(n, ">=", e1, s0)
	if err != nil {
		return nil, err
	}
	return b.call(n, "AND", a, c)
}
