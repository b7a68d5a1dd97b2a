package expr

import (
	"fmt"

	"github.com/flinksql/flinksql/types"
)

func registerCollectionFunctions(m map[string]builder) {
	m["ARRAY"] = buildArray
	m["MAP"] = buildMap
	m["ROW"] = buildRow
	m["ITEM"] = buildItem
	m["CARDINALITY"] = buildCardinality
	m["ELEMENT"] = buildElement
	m["DOT"] = buildDot
}

func buildArray(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("Require at least 1 argument for ARRAY value constructor")
	}
	et, err := commonTypeOf(name, args)
	if err != nil {
		return nil, fmt.Errorf("Parameters must be of the same type")
	}
	cast := make([]Expr, len(args))
	for i, a := range args {
		cast[i] = implicit(a, et)
	}
	t := types.ArrayType(et).WithNullable(false)
	return &callExpr{name: name, args: cast, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		out := make([]types.Value, len(v))
		copy(out, v)
		return types.ArrayValue(out), nil
	}}}, nil
}

func buildMap(name string, args []Expr) (Expr, error) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, fmt.Errorf("Map requires an even number of arguments, at least 2")
	}
	var ks, vs []Expr
	for i := 0; i < len(args); i += 2 {
		ks = append(ks, args[i])
		vs = append(vs, args[i+1])
	}
	kt, err1 := commonTypeOf(name, ks)
	vt, err2 := commonTypeOf(name, vs)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("Parameters must be of the same type")
	}
	cast := make([]Expr, len(args))
	for i := range ks {
		cast[2*i] = implicit(ks[i], kt)
		cast[2*i+1] = implicit(vs[i], vt)
	}
	t := types.MapType(kt, vt).WithNullable(false)
	return &callExpr{name: name, args: cast, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		keys := make([]types.Value, 0, len(v)/2)
		vals := make([]types.Value, 0, len(v)/2)
		for i := 0; i < len(v); i += 2 {
			// A repeated key keeps its last value, as Java's map does.
			dup := false
			for j, k := range keys {
				if types.Equal(k, v[i]) {
					vals[j] = v[i+1]
					dup = true
					break
				}
			}
			if !dup {
				keys = append(keys, v[i])
				vals = append(vals, v[i+1])
			}
		}
		return types.MapOf(keys, vals), nil
	}}}, nil
}

func buildRow(name string, args []Expr) (Expr, error) {
	fs := make([]types.Field, len(args))
	for i, a := range args {
		fs[i] = types.Field{Name: fmt.Sprintf("EXPR$%d", i), Type: a.Type().WithoutTimeAttr()}
	}
	t := types.RowType(fs...).WithNullable(false)
	return &callExpr{name: name, args: args, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.RowValue(types.Row(v).Clone()), nil
	}}}, nil
}

// RowWithNames builds a ROW constructor with explicit field names (CAST to a
// named ROW type or a planner-known record).
func RowWithNames(names []string, args []Expr) (Expr, error) {
	if len(names) != len(args) {
		return nil, fmt.Errorf("ROW: %d names for %d fields", len(names), len(args))
	}
	e, _ := buildRow("ROW", args)
	c := e.(*callExpr)
	for i, n := range names {
		c.t.Fields[i].Name = n
	}
	return c, nil
}

func buildItem(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, wrongArgCount(name, args, "2")
	}
	ct := args[0].Type()
	switch ct.Root {
	case types.RootArray:
		if !famInteger(args[1].Type()) {
			return nil, cannotApply(name, args, "<ARRAY>[<INTEGER>]", "<MAP>[<ANY>]")
		}
		t := ct.Elem.WithNullable(true)
		return nullableCall(newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			a := v[0].Array()
			i := v[1].N
			if i < 1 || i > int64(len(a)) {
				return types.Value{}, nil
			}
			return a[i-1], nil
		}))), nil
	case types.RootMap:
		_, kt, ok := comparisonTypes(*ct.Elem, args[1].Type())
		if !ok {
			return nil, cannotApply(name, args, "<ARRAY>[<INTEGER>]", "<MAP>[<ANY>]")
		}
		key := implicit(args[1], typeOrOther(kt, *ct.Elem))
		cmp := comparatorFor(*ct.Elem, key.Type())
		t := ct.Value.WithNullable(true)
		return nullableCall(newCall(name, []Expr{args[0], key}, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			m := v[0].Map()
			for i, k := range m.Keys {
				if !k.IsNull() && cmp(k, v[1]) == 0 {
					return m.Values[i], nil
				}
			}
			return types.Value{}, nil
		}))), nil
	case types.RootRow:
		if v, ok := LiteralValue(args[1]); ok && v.K == types.KindString {
			return buildDot("DOT", []Expr{args[0], Symbol(v.S)})
		}
	}
	return nil, cannotApply(name, args, "<ARRAY>[<INTEGER>]", "<MAP>[<ANY>]")
}

func buildCardinality(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || (args[0].Type().Root != types.RootArray && args[0].Type().Root != types.RootMap && args[0].Type().Root != types.RootMultiset) {
		return nil, cannotApply(name, args, "CARDINALITY(<MULTISET>)", "CARDINALITY(<ARRAY>)", "CARDINALITY(<MAP>)")
	}
	return newCall(name, args, types.IntType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if m := v[0].Map(); m != nil {
			return types.Int(int64(len(m.Keys))), nil
		}
		return types.Int(int64(len(v[0].Array()))), nil
	})), nil
}

func buildElement(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || args[0].Type().Root != types.RootArray {
		return nil, cannotApply(name, args, "ELEMENT(<ARRAY>)")
	}
	t := args[0].Type().Elem.WithNullable(true)
	return nullableCall(newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		a := v[0].Array()
		switch len(a) {
		case 0:
			return types.Value{}, nil
		case 1:
			return a[0], nil
		}
		return types.Value{}, fmt.Errorf("ELEMENT: array has %d elements, expected at most one", len(a))
	}))), nil
}

func buildDot(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || args[0].Type().Root != types.RootRow || args[1].Type().Root != types.RootSymbol {
		return nil, cannotApply(name, args, "DOT(<ROW>, <FIELD>)")
	}
	fieldName, _ := LiteralValue(args[1])
	rt := args[0].Type()
	idx := -1
	for i, f := range rt.Fields {
		if f.Name == fieldName.S {
			idx = i
			break
		}
	}
	if idx < 0 {
		// Symbol upper-cases; fall back to a case-insensitive match.
		for i, f := range rt.Fields {
			if equalFoldASCII(f.Name, fieldName.S) {
				idx = i
				break
			}
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("Unknown field '%s' in %s", fieldName.S, rt.String())
	}
	t := rt.Fields[idx].Type
	if rt.Nullable() {
		t.NotNull = false
	}
	shown := []Expr{args[0], &literal{v: types.SymbolValue(rt.Fields[idx].Name), t: args[1].Type()}}
	return &callExpr{name: name, args: shown, t: t, impl: impl{strict: true, fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		r := v[0].RowOf()
		if idx >= len(r) {
			return types.Value{}, nil
		}
		return r[idx], nil
	}, build: func(_ *compiler, args []evaluator) evaluator {
		// Field access is on the hot path of every query over nested rows
		// (Nexmark's views): read the field directly rather than through
		// the generic call with its argument slice.
		if c, ok := args[0].(*columnEval); ok {
			return &columnDotEval{col: c.idx, idx: idx}
		}
		return &dotEval{row: args[0], idx: idx}
	}}}, nil
}

// dotEval reads field idx of a ROW value; NULL when the row is NULL.
type dotEval struct {
	row evaluator
	idx int
}

func (e *dotEval) eval(row types.Row) (types.Value, error) {
	v, err := e.row.eval(row)
	if err != nil || v.K != types.KindRow {
		return types.Value{}, err
	}
	if r := v.RowOf(); e.idx < len(r) {
		return r[e.idx], nil
	}
	return types.Value{}, nil
}

// columnDotEval reads field idx of the ROW value in column col.
type columnDotEval struct{ col, idx int }

func (e *columnDotEval) eval(row types.Row) (types.Value, error) {
	if e.col >= len(row) {
		return types.Value{}, fmt.Errorf("column index %d out of range for row of %d fields", e.col, len(row))
	}
	v := &row[e.col]
	if v.K != types.KindRow {
		return types.Value{}, nil
	}
	if r := v.RowOf(); e.idx < len(r) {
		return r[e.idx], nil
	}
	return types.Value{}, nil
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// FieldSymbol returns a field-name argument for DOT that keeps its case
// (Symbol upper-cases time units and flags).
func FieldSymbol(name string) Expr {
	return &literal{v: types.SymbolValue(name), t: types.Type{Root: types.RootSymbol, NotNull: true}}
}

// nullableCall marks a call whose result may be NULL for non-NULL arguments.
func nullableCall(c *callExpr) *callExpr {
	c.t.NotNull = false
	return c
}
