package expr

import (
	"fmt"
	"math"
	"strings"

	"github.com/flinksql/flinksql/types"
)

func registerOperators(m map[string]builder) {
	for _, op := range []string{"+", "-", "*", "/"} {
		m[op] = buildArith
	}
	m["%"] = buildMod
	m["MOD"] = buildMod
	m["NEGATE"] = buildNegate
	m["UNARY_PLUS"] = buildUnaryPlus
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
		m[op] = buildCompare
	}
	m["!="] = func(_ string, args []Expr) (Expr, error) { return buildCompare("<>", args) }
	m["AND"] = buildLogic
	m["OR"] = buildLogic
	m["NOT"] = buildNot
	for _, op := range []string{"IS NULL", "IS NOT NULL", "IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE", "IS UNKNOWN", "IS NOT UNKNOWN"} {
		m[op] = buildIs
	}
	m["IS DISTINCT FROM"] = buildDistinct
	m["IS NOT DISTINCT FROM"] = buildDistinct
	m["BETWEEN"] = buildBetween
	m["NOT BETWEEN"] = buildBetween
	m["IN"] = buildIn
	m["NOT IN"] = buildIn
	m["COALESCE"] = buildCoalesce
	m["IFNULL"] = buildCoalesce
	m["NULLIF"] = buildNullIf
	m["IF"] = buildIf
	m["GREATEST"] = buildGreatestLeast
	m["LEAST"] = buildGreatestLeast
}

// typeOrOther gives an untyped NULL operand the type of the other operand.
func typeOrOther(t, other types.Type) types.Type {
	if t.Root == types.RootNull {
		o := other
		o.NotNull = false
		return o
	}
	return t
}

// arithType derives the result type of numeric + - * / as Flink does.
func arithType(op string, a, b types.Type) types.Type {
	var t types.Type
	switch {
	case a.IsApprox() || b.IsApprox():
		t = mergeNumeric(a, b)
	case a.Root == types.RootDecimal || b.Root == types.RootDecimal:
		da, db := asDecimalType(a), asDecimalType(b)
		switch op {
		case "+", "-":
			t = decimalPlus(da, db)
		case "*":
			t = decimalTimes(da, db)
		case "/":
			t = decimalDivide(da, db)
		case "MOD":
			t = decimalMod(da, db)
		}
	default:
		t = mergeNumeric(a, b)
	}
	t.NotNull = a.NotNull && b.NotNull
	return t
}

var arithForms = map[string][]string{
	"+": {"<NUMERIC> + <NUMERIC>", "<DATETIME_INTERVAL> + <DATETIME_INTERVAL>", "<DATETIME> + <DATETIME_INTERVAL>", "<DATETIME_INTERVAL> + <DATETIME>"},
	"-": {"<NUMERIC> - <NUMERIC>", "<DATETIME_INTERVAL> - <DATETIME_INTERVAL>", "<DATETIME> - <DATETIME_INTERVAL>"},
	"*": {"<NUMERIC> * <NUMERIC>", "<DATETIME_INTERVAL> * <NUMERIC>", "<NUMERIC> * <DATETIME_INTERVAL>"},
	"/": {"<NUMERIC> / <NUMERIC>", "<DATETIME_INTERVAL> / <NUMERIC>"},
}

func buildArith(op string, args []Expr) (Expr, error) {
	if err := argCount(op, args, 2, 2); err != nil {
		if op == "-" && len(args) == 1 {
			return buildNegate("NEGATE", args)
		}
		if op == "+" && len(args) == 1 {
			return buildUnaryPlus("UNARY_PLUS", args)
		}
		return nil, err
	}
	a, b := args[0].Type(), args[1].Type()
	a, b = typeOrOther(a, b), typeOrOther(b, a)
	if a.Root == types.RootNull {
		return nil, cannotApply(op, args, arithForms[op]...)
	}
	switch {
	case a.IsNumeric() && b.IsNumeric():
		return numericArith(op, op, args, a, b)
	case op == "+" && a.IsInterval() && (b.IsTemporal()):
		return temporalPlus(op, args, 1, 0, false)
	case (op == "+" || op == "-") && a.IsTemporal() && b.IsInterval():
		return temporalPlus(op, args, 0, 1, op == "-")
	case (op == "+" || op == "-") && a.IsInterval() && a.Root == b.Root:
		t := types.Type{Root: a.Root, IntervalUnit: widerUnit(a, b), NotNull: a.NotNull && b.NotNull}
		neg := op == "-"
		return newCall(op, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if neg {
				return types.Int(v[0].N - v[1].N), nil
			}
			return types.Int(v[0].N + v[1].N), nil
		})), nil
	case op == "*" && (a.IsInterval() && b.IsNumeric() || a.IsNumeric() && b.IsInterval()):
		iv, num := 0, 1
		if b.IsInterval() {
			iv, num = 1, 0
		}
		t := args[iv].Type()
		t.NotNull = a.NotNull && b.NotNull
		return newCall(op, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if v[num].K == types.KindInt {
				return types.Int(v[iv].N * v[num].N), nil
			}
			return types.Int(int64(math.Round(float64(v[iv].N) * types.ToFloat(v[num])))), nil
		})), nil
	case op == "/" && a.IsInterval() && b.IsNumeric():
		t := a
		t.NotNull = a.NotNull && b.NotNull
		return newCall(op, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			d := types.ToFloat(v[1])
			if d == 0 {
				return types.Value{}, fmt.Errorf("/ by zero")
			}
			return types.Int(int64(float64(v[0].N) / d)), nil
		})), nil
	}
	return nil, cannotApply(op, args, arithForms[op]...)
}

func widerUnit(a, b types.Type) string {
	if a.IntervalUnit == b.IntervalUnit {
		return a.IntervalUnit
	}
	if a.Root == types.RootIntervalYearMonth {
		return "YEAR(2) TO MONTH"
	}
	return "DAY(2) TO SECOND(3)"
}

// numericArith builds + - * / MOD over numeric operands.
func numericArith(op, name string, args []Expr, a, b types.Type) (Expr, error) {
	rt := arithType(op, a, b)
	switch {
	case rt.IsApprox():
		x, y := implicit(args[0], rt), implicit(args[1], rt)
		single := rt.Root == types.RootFloat
		var f func(p, q float64) float64
		switch op {
		case "+":
			f = func(p, q float64) float64 { return p + q }
		case "-":
			f = func(p, q float64) float64 { return p - q }
		case "*":
			f = func(p, q float64) float64 { return p * q }
		case "/":
			f = func(p, q float64) float64 { return p / q }
		case "MOD":
			f = math.Mod
		}
		return newCall(name, []Expr{x, y}, rt, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			r := f(v[0].Float(), v[1].Float())
			if single {
				r = float64(float32(r))
			}
			return types.Float(r), nil
		})), nil
	case rt.Root == types.RootDecimal:
		x, y := implicit(args[0], asDecimalType(a)), implicit(args[1], asDecimalType(b))
		var fn func(_ *evalCtx, v []types.Value) (types.Value, error)
		switch op {
		case "+":
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) { return decAdd(v[0], v[1], rt, false), nil }
		case "-":
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) { return decAdd(v[0], v[1], rt, true), nil }
		case "*":
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) { return decMul(v[0], v[1], rt), nil }
		case "/":
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
				r, ok := decDiv(v[0], v[1], rt)
				if !ok {
					return types.Value{}, fmt.Errorf("Division by zero: %s / 0", decimalString(v[0]))
				}
				return r, nil
			}
		case "MOD":
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
				r, ok := decMod(v[0], v[1], rt)
				if !ok {
					return types.Value{}, fmt.Errorf("Division by zero: MOD(%s, 0)", decimalString(v[0]))
				}
				return r, nil
			}
		}
		im := strictImpl(fn)
		if op == "+" || op == "-" || op == "*" {
			im.decArith = op[0]
		}
		return newCall(name, []Expr{x, y}, rt, im), nil
	}
	// Integers: Java arithmetic in the result type, wrapping on overflow.
	x, y := implicit(args[0], rt), implicit(args[1], rt)
	r := rt.Root
	var fn func(_ *evalCtx, v []types.Value) (types.Value, error)
	switch op {
	case "+":
		if r == types.RootBigInt {
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Int(v[0].N + v[1].N), nil }
		} else {
			fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
				return types.Int(wrapInt(v[0].N+v[1].N, r)), nil
			}
		}
	case "-":
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Int(wrapInt(v[0].N-v[1].N, r)), nil
		}
	case "*":
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Int(wrapInt(v[0].N*v[1].N, r)), nil
		}
	case "/":
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if v[1].N == 0 {
				return types.Value{}, fmt.Errorf("Division by zero: %d / 0 (java.lang.ArithmeticException: / by zero)", v[0].N)
			}
			if v[1].N == -1 {
				return types.Int(wrapInt(-v[0].N, r)), nil
			}
			return types.Int(v[0].N / v[1].N), nil
		}
	case "MOD":
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if v[1].N == 0 {
				return types.Value{}, fmt.Errorf("Division by zero: MOD(%d, 0) (java.lang.ArithmeticException: / by zero)", v[0].N)
			}
			if v[1].N == -1 {
				return types.Int(0), nil
			}
			return types.Int(v[0].N % v[1].N), nil
		}
	}
	im := strictImpl(fn)
	if op == "+" || op == "-" || op == "*" {
		im.intArith, im.intRoot = op, r
	}
	rt.NotNull = true
	return newCall(name, []Expr{x, y}, rt, im), nil
}

func buildMod(_ string, args []Expr) (Expr, error) {
	const form = "MOD(<EXACT_NUMERIC>, <EXACT_NUMERIC>)"
	if len(args) != 2 {
		return nil, cannotApply("MOD", args, form)
	}
	a, b := typeOrOther(args[0].Type(), args[1].Type()), typeOrOther(args[1].Type(), args[0].Type())
	if !a.IsExact() || !b.IsExact() {
		return nil, cannotApply("MOD", args, form)
	}
	if a.IsInteger() && b.IsInteger() {
		// Calcite types MOD as its second operand; compute in the wider type.
		wide := mergeNumeric(a, b)
		e, err := numericArith("MOD", "MOD", args, wide, wide)
		if err != nil {
			return nil, err
		}
		c := e.(*callExpr)
		c.t = types.Type{Root: b.Root, NotNull: c.t.NotNull}
		return c, nil
	}
	return numericArith("MOD", "MOD", args, a, b)
}

func buildNegate(_ string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, wrongArgCount("-", args, "1")
	}
	t := args[0].Type()
	switch {
	case t.IsInteger():
		r := t.Root
		return newCall("-", args, t.WithoutTimeAttr(), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Int(wrapInt(-v[0].N, r)), nil
		})), nil
	case t.IsInterval():
		return newCall("-", args, t.WithoutTimeAttr(), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Int(-v[0].N), nil
		})), nil
	case t.IsApprox():
		return newCall("-", args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(-v[0].Float()), nil
		})), nil
	case t.Root == types.RootDecimal:
		return newCall("-", args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if !v[0].IsBigDecimal() && v[0].N != math.MinInt64 {
				return types.DecimalFromUnscaled(-v[0].N, int(v[0].Aux)), nil
			}
			u, s := decUnscaled(v[0])
			return types.DecimalFromBig(u.Neg(u), s), nil
		})), nil
	case t.Root == types.RootNull:
		return NullLiteral(types.NullType), nil
	}
	return nil, cannotApply("NEGATE", args, "-<NUMERIC>", "-<DATETIME_INTERVAL>")
}

func buildUnaryPlus(_ string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, wrongArgCount("+", args, "1")
	}
	t := args[0].Type()
	if !t.IsNumeric() && !t.IsInterval() && t.Root != types.RootNull {
		return nil, cannotApply("UNARY_PLUS", args, "+<NUMERIC>", "+<DATETIME_INTERVAL>")
	}
	return args[0], nil
}

// temporalPlus adds (or subtracts) the interval args[ivIdx] to the datetime args[dtIdx].
func temporalPlus(op string, args []Expr, dtIdx, ivIdx int, negate bool) (Expr, error) {
	shown := args
	dt, iv := args[dtIdx].Type(), args[ivIdx].Type()
	t := dt.WithoutTimeAttr()
	t.NotNull = dt.NotNull && iv.NotNull
	sign := int64(1)
	if negate {
		sign = -1
	}
	months := iv.Root == types.RootIntervalYearMonth
	var fn func(c *evalCtx, v []types.Value) (types.Value, error)
	switch dt.Root {
	case types.RootDate:
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			d, n := v[dtIdx].N, sign*v[ivIdx].N
			if months {
				return types.Int(addMonthsToDate(d, n)), nil
			}
			return types.Int(d + n/msPerDay), nil
		}
	case types.RootTime:
		// The result is of the TIME operand's type: TIME '10:00:00' +
		// INTERVAL '0.5' SECOND is TIME(0) 10:00:00, with no hidden
		// fraction that would show in output or break comparisons.
		p := dt.Precision
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if months {
				return v[dtIdx], nil
			}
			ms, _ := truncateFraction(floorMod(v[dtIdx].N+sign*v[ivIdx].N, msPerDay), 0, p)
			return types.Int(ms), nil
		}
	case types.RootTimestamp, types.RootTimestampLTZ:
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			ts, n := v[dtIdx], sign*v[ivIdx].N
			if months {
				return types.Timestamp(addMonths(ts.N, n), ts.Aux), nil
			}
			return types.Timestamp(ts.N+n, ts.Aux), nil
		}
	default:
		return nil, cannotApply(op, shown, arithForms[op]...)
	}
	return newCall(op, shown, t, strictImpl(fn)), nil
}

// Comparisons ---------------------------------------------------------------------

func buildCompare(op string, args []Expr) (Expr, error) {
	form := "<COMPARABLE_TYPE> " + op + " <COMPARABLE_TYPE>"
	if len(args) != 2 {
		return nil, cannotApply(op, args, form)
	}
	x, y, err := comparisonOperands(op, args, form)
	if err != nil {
		return nil, err
	}
	cmp := comparatorFor(x.Type(), y.Type())
	t := types.BooleanType.WithNullable(anyNullable(args))
	var fn func(_ *evalCtx, v []types.Value) (types.Value, error)
	xt, yt := x.Type(), y.Type()
	switch {
	case isIntLike(xt) && isIntLike(yt):
		fn = intCompareFn(op)
		im := strictImpl(fn)
		im.intCmp = op
		return &callExpr{name: op, args: []Expr{x, y}, t: t, impl: im}, nil
	case xt.IsApprox() && yt.IsApprox():
		fn = floatCompareFn(op)
	default:
		fn = genericCompareFn(op, cmp)
		if xt.IsExact() && yt.IsExact() && (xt.Root == types.RootDecimal || yt.Root == types.RootDecimal) {
			im := strictImpl(fn)
			im.decCmp = op
			return &callExpr{name: op, args: []Expr{x, y}, t: t, impl: im}, nil
		}
	}
	return &callExpr{name: op, args: []Expr{x, y}, t: t, impl: strictImpl(fn)}, nil
}

// comparisonOperands checks comparability and inserts Flink's implicit casts.
func comparisonOperands(op string, args []Expr, form string) (Expr, Expr, error) {
	a, b := args[0].Type(), args[1].Type()
	ta, tb, ok := comparisonTypes(a, b)
	if !ok {
		return nil, nil, cannotApply(op, args, form)
	}
	if (op != "=" && op != "<>" && op != "IS DISTINCT FROM" && op != "IS NOT DISTINCT FROM") &&
		(ta.Root == types.RootMap || ta.Root == types.RootMultiset) {
		return nil, nil, cannotApply(op, args, form)
	}
	x, y := implicit(args[0], typeOrOther(ta, tb)), implicit(args[1], typeOrOther(tb, ta))
	xt, yt := x.Type(), y.Type()
	if xt.IsNumeric() && yt.IsNumeric() && (xt.IsApprox() || yt.IsApprox()) && !(xt.IsApprox() && yt.IsApprox()) {
		x, y = implicit(x, types.DoubleType), implicit(y, types.DoubleType)
	}
	if xt.IsApprox() && yt.IsApprox() && xt.Root != yt.Root {
		x, y = implicit(x, types.DoubleType), implicit(y, types.DoubleType)
	}
	return x, y, nil
}

func isIntLike(t types.Type) bool {
	return t.IsInteger() || t.Root == types.RootBoolean || t.Root == types.RootDate || t.Root == types.RootTime || t.IsInterval()
}

// comparatorFor returns a three-way comparison of two non-NULL values of the given types.
func comparatorFor(a, b types.Type) func(x, y types.Value) int {
	switch {
	case a.IsString() && b.IsString():
		return func(x, y types.Value) int { return strings.Compare(x.S, y.S) }
	case a.IsTimestamp() && b.IsTimestamp():
		return func(x, y types.Value) int {
			switch {
			case x.N < y.N:
				return -1
			case x.N > y.N:
				return 1
			}
			return int(x.Aux - y.Aux)
		}
	}
	return types.Compare
}

func intCompareFn(op string) func(_ *evalCtx, v []types.Value) (types.Value, error) {
	switch op {
	case "=":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N == v[1].N), nil }
	case "<>":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N != v[1].N), nil }
	case "<":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N < v[1].N), nil }
	case "<=":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N <= v[1].N), nil }
	case ">":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N > v[1].N), nil }
	}
	return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(v[0].N >= v[1].N), nil }
}

func floatCompareFn(op string) func(_ *evalCtx, v []types.Value) (types.Value, error) {
	switch op {
	case "=":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Bool(v[0].Float() == v[1].Float()), nil
		}
	case "<>":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Bool(v[0].Float() != v[1].Float()), nil
		}
	case "<":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Bool(v[0].Float() < v[1].Float()), nil
		}
	case "<=":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Bool(v[0].Float() <= v[1].Float()), nil
		}
	case ">":
		return func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Bool(v[0].Float() > v[1].Float()), nil
		}
	}
	return func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.Bool(v[0].Float() >= v[1].Float()), nil
	}
}

func genericCompareFn(op string, cmp func(x, y types.Value) int) func(_ *evalCtx, v []types.Value) (types.Value, error) {
	var test func(int) bool
	switch op {
	case "=":
		test = func(c int) bool { return c == 0 }
	case "<>":
		test = func(c int) bool { return c != 0 }
	case "<":
		test = func(c int) bool { return c < 0 }
	case "<=":
		test = func(c int) bool { return c <= 0 }
	case ">":
		test = func(c int) bool { return c > 0 }
	default:
		test = func(c int) bool { return c >= 0 }
	}
	return func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(test(cmp(v[0], v[1]))), nil }
}

// Logic --------------------------------------------------------------------------

type andEval struct{ args []evaluator }

func (e *andEval) eval(row types.Row) (types.Value, error) {
	sawNull := false
	for _, a := range e.args {
		v, err := a.eval(row)
		if err != nil {
			return v, err
		}
		if v.K == types.KindNull {
			sawNull = true
		} else if v.N == 0 {
			return types.Bool(false), nil
		}
	}
	if sawNull {
		return types.Value{}, nil
	}
	return types.Bool(true), nil
}

type orEval struct{ args []evaluator }

func (e *orEval) eval(row types.Row) (types.Value, error) {
	sawNull := false
	for _, a := range e.args {
		v, err := a.eval(row)
		if err != nil {
			return v, err
		}
		if v.K == types.KindNull {
			sawNull = true
		} else if v.N != 0 {
			return types.Bool(true), nil
		}
	}
	if sawNull {
		return types.Value{}, nil
	}
	return types.Bool(false), nil
}

func buildLogic(op string, args []Expr) (Expr, error) {
	form := "<BOOLEAN> " + op + " <BOOLEAN>"
	if len(args) < 2 {
		return nil, cannotApply(op, args, form)
	}
	for _, a := range args {
		if !famBool(a.Type()) {
			return nil, cannotApply(op, args, form)
		}
	}
	t := types.BooleanType.WithNullable(anyNullable(args))
	im := impl{build: func(_ *compiler, ev []evaluator) evaluator { return &andEval{args: ev} }}
	if op == "OR" {
		im = impl{build: func(_ *compiler, ev []evaluator) evaluator { return &orEval{args: ev} }}
	}
	return &callExpr{name: op, args: args, t: t, impl: im}, nil
}

func buildNot(_ string, args []Expr) (Expr, error) {
	if len(args) != 1 || !famBool(args[0].Type()) {
		return nil, cannotApply("NOT", args, "NOT <BOOLEAN>")
	}
	return newCall("NOT", args, types.BooleanType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.Bool(v[0].N == 0), nil
	})), nil
}

func buildIs(op string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, wrongArgCount(op, args, "1")
	}
	if op != "IS NULL" && op != "IS NOT NULL" && !famBool(args[0].Type()) {
		return nil, cannotApply(op, args, "<BOOLEAN> "+op)
	}
	var test func(v types.Value) bool
	switch op {
	case "IS NULL", "IS UNKNOWN":
		test = func(v types.Value) bool { return v.K == types.KindNull }
	case "IS NOT NULL", "IS NOT UNKNOWN":
		test = func(v types.Value) bool { return v.K != types.KindNull }
	case "IS TRUE":
		test = func(v types.Value) bool { return v.K == types.KindBool && v.N != 0 }
	case "IS NOT TRUE":
		test = func(v types.Value) bool { return !(v.K == types.KindBool && v.N != 0) }
	case "IS FALSE":
		test = func(v types.Value) bool { return v.K == types.KindBool && v.N == 0 }
	default: // IS NOT FALSE
		test = func(v types.Value) bool { return !(v.K == types.KindBool && v.N == 0) }
	}
	return &callExpr{name: op, args: args, t: types.BooleanType.WithNullable(false), impl: impl{
		fn: func(_ *evalCtx, v []types.Value) (types.Value, error) { return types.Bool(test(v[0])), nil },
	}}, nil
}

func buildDistinct(op string, args []Expr) (Expr, error) {
	form := "<COMPARABLE_TYPE> " + op + " <COMPARABLE_TYPE>"
	if len(args) != 2 {
		return nil, cannotApply(op, args, form)
	}
	x, y, err := comparisonOperands(op, args, form)
	if err != nil {
		return nil, err
	}
	cmp := comparatorFor(x.Type(), y.Type())
	distinct := op == "IS DISTINCT FROM"
	return &callExpr{name: op, args: []Expr{x, y}, t: types.BooleanType.WithNullable(false), impl: impl{
		fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
			an, bn := v[0].K == types.KindNull, v[1].K == types.KindNull
			var d bool
			switch {
			case an && bn:
				d = false
			case an || bn:
				d = true
			default:
				d = cmp(v[0], v[1]) != 0
			}
			return types.Bool(d == distinct), nil
		},
	}}, nil
}

func buildBetween(op string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, wrongArgCount(op, args, "3")
	}
	if op == "BETWEEN" {
		lo, err := buildCompare(">=", []Expr{args[0], args[1]})
		if err != nil {
			return nil, betweenErr(op, args)
		}
		hi, err := buildCompare("<=", []Expr{args[0], args[2]})
		if err != nil {
			return nil, betweenErr(op, args)
		}
		return buildLogic("AND", []Expr{lo, hi})
	}
	lo, err := buildCompare("<", []Expr{args[0], args[1]})
	if err != nil {
		return nil, betweenErr(op, args)
	}
	hi, err := buildCompare(">", []Expr{args[0], args[2]})
	if err != nil {
		return nil, betweenErr(op, args)
	}
	return buildLogic("OR", []Expr{lo, hi})
}

func betweenErr(op string, args []Expr) error {
	ts := make([]string, len(args))
	for i, a := range args {
		ts[i] = "<" + sqlTypeName(a.Type()) + ">"
	}
	return fmt.Errorf("Cannot apply '%s ASYMMETRIC' to arguments of type '%s %s ASYMMETRIC %s AND %s'. Supported form(s): '<COMPARABLE_TYPE> %s <COMPARABLE_TYPE> AND <COMPARABLE_TYPE>'",
		op, ts[0], op, ts[1], ts[2], op)
}

type inEval struct {
	needle evaluator
	list   []evaluator
	consts []types.Value // when every list element is a constant
	cmp    func(x, y types.Value) int
	negate bool
}

func (e *inEval) eval(row types.Row) (types.Value, error) {
	v, err := e.needle.eval(row)
	if err != nil || v.K == types.KindNull {
		return types.Value{}, err
	}
	sawNull := false
	if e.consts != nil {
		for _, c := range e.consts {
			if c.K == types.KindNull {
				sawNull = true
			} else if e.cmp(v, c) == 0 {
				return types.Bool(!e.negate), nil
			}
		}
	} else {
		for _, l := range e.list {
			c, err := l.eval(row)
			if err != nil {
				return c, err
			}
			if c.K == types.KindNull {
				sawNull = true
			} else if e.cmp(v, c) == 0 {
				return types.Bool(!e.negate), nil
			}
		}
	}
	if sawNull {
		return types.Value{}, nil
	}
	return types.Bool(e.negate), nil
}

func buildIn(op string, args []Expr) (Expr, error) {
	if len(args) < 2 {
		return nil, wrongArgCount(op, args, "at least 2")
	}
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	common, err := LeastRestrictive(ts...)
	if err != nil {
		// Character list elements compared with a non-character needle are cast to its type.
		for _, a := range args[1:] {
			if _, _, ok := comparisonTypes(args[0].Type(), a.Type()); !ok {
				return nil, fmt.Errorf("Values passed to %s operator must have compatible types", op)
			}
		}
		common = args[0].Type()
		if common.IsNumeric() {
			common = mergeNumeric(common, types.BigIntType)
		}
	}
	common.NotNull = false
	cast := make([]Expr, len(args))
	for i, a := range args {
		cast[i] = implicit(a, common)
	}
	cmp := comparatorFor(common, common)
	negate := op == "NOT IN"
	t := types.BooleanType.WithNullable(anyNullable(args))
	return &callExpr{name: op, args: cast, t: t, impl: impl{build: func(c *compiler, ev []evaluator) evaluator {
		e := &inEval{needle: ev[0], list: ev[1:], cmp: cmp, negate: negate}
		consts := make([]types.Value, 0, len(ev)-1)
		for _, l := range cast[1:] {
			if !c.constant(l) {
				return e
			}
			v, err := c.compileExpr(l).eval(nil)
			if err != nil {
				return e
			}
			consts = append(consts, v)
		}
		e.consts = consts
		return e
	}}}, nil
}

// Conditional functions -----------------------------------------------------------

type coalesceEval struct{ args []evaluator }

func (e *coalesceEval) eval(row types.Row) (types.Value, error) {
	for _, a := range e.args {
		v, err := a.eval(row)
		if err != nil || v.K != types.KindNull {
			return v, err
		}
	}
	return types.Value{}, nil
}

func commonTypeOf(name string, args []Expr) (types.Type, error) {
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	t, err := LeastRestrictive(ts...)
	if err != nil {
		return t, fmt.Errorf("Illegal mixing of types in CASE or COALESCE statement")
	}
	return t, nil
}

func buildCoalesce(name string, args []Expr) (Expr, error) {
	if name == "IFNULL" {
		if err := argCount(name, args, 2, 2); err != nil {
			return nil, err
		}
	} else if len(args) < 1 {
		return nil, wrongArgCount(name, args, "at least 1")
	}
	t, err := commonTypeOf(name, args)
	if err != nil {
		return nil, err
	}
	nullable := true
	for _, a := range args {
		if a.Type().NotNull {
			nullable = false
		}
	}
	t.NotNull = !nullable
	cast := make([]Expr, len(args))
	for i, a := range args {
		cast[i] = implicit(a, t)
	}
	return &callExpr{name: name, args: cast, t: t, impl: impl{build: func(_ *compiler, ev []evaluator) evaluator {
		return &coalesceEval{args: ev}
	}}}, nil
}

func buildNullIf(_ string, args []Expr) (Expr, error) {
	if err := argCount("NULLIF", args, 2, 2); err != nil {
		return nil, err
	}
	x, y, err := comparisonOperands("=", args, "<COMPARABLE_TYPE> = <COMPARABLE_TYPE>")
	if err != nil {
		return nil, cannotApply("NULLIF", args, "NULLIF(<COMPARABLE_TYPE>, <COMPARABLE_TYPE>)")
	}
	cmp := comparatorFor(x.Type(), y.Type())
	t := args[0].Type().WithNullable(true).WithoutTimeAttr()
	back, _ := castFunc(x.Type(), t)
	return &callExpr{name: "NULLIF", args: []Expr{x, y}, t: t, impl: impl{
		fn: func(c *evalCtx, v []types.Value) (types.Value, error) {
			if v[0].K == types.KindNull {
				return types.Value{}, nil
			}
			if v[1].K != types.KindNull && cmp(v[0], v[1]) == 0 {
				return types.Value{}, nil
			}
			if back != nil {
				return back(c, v[0])
			}
			return v[0], nil
		},
	}}, nil
}

type ifEval struct{ cond, a, b evaluator }

func (e *ifEval) eval(row types.Row) (types.Value, error) {
	c, err := e.cond.eval(row)
	if err != nil {
		return c, err
	}
	if c.K == types.KindBool && c.N != 0 {
		return e.a.eval(row)
	}
	return e.b.eval(row)
}

func buildIf(_ string, args []Expr) (Expr, error) {
	if len(args) != 3 || !famBool(args[0].Type()) {
		return nil, cannotApply("IF", args, "IF(<BOOLEAN>, <ANY>, <ANY>)")
	}
	t, err := commonTypeOf("IF", args[1:])
	if err != nil {
		return nil, cannotApply("IF", args, "IF(<BOOLEAN>, <ANY>, <ANY>)")
	}
	cast := []Expr{args[0], implicit(args[1], t), implicit(args[2], t)}
	return &callExpr{name: "IF", args: cast, t: t, impl: impl{build: func(_ *compiler, ev []evaluator) evaluator {
		return &ifEval{cond: ev[0], a: ev[1], b: ev[2]}
	}}}, nil
}

func buildGreatestLeast(name string, args []Expr) (Expr, error) {
	if len(args) < 1 {
		return nil, wrongArgCount(name, args, "at least 1")
	}
	t, err := commonTypeOf(name, args)
	if err != nil {
		return nil, cannotApply(name, args, name+"(<COMPARABLE_TYPE>, <COMPARABLE_TYPE>, ...)")
	}
	cast := make([]Expr, len(args))
	for i, a := range args {
		cast[i] = implicit(a, t)
	}
	cmp := comparatorFor(t, t)
	greatest := name == "GREATEST"
	return newCall(name, cast, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		best := v[0]
		for _, x := range v[1:] {
			c := cmp(x, best)
			if (greatest && c > 0) || (!greatest && c < 0) {
				best = x
			}
		}
		return best, nil
	})), nil
}

// Case builds CASE: a simple CASE when operand is set (each WHEN value is
// compared with it), a searched CASE otherwise. els nil means ELSE NULL.
func Case(operand Expr, whens, thens []Expr, els Expr) (Expr, error) {
	if len(whens) == 0 || len(whens) != len(thens) {
		return nil, fmt.Errorf("CASE needs as many THEN as WHEN clauses, and at least one")
	}
	conds := make([]Expr, len(whens))
	for i, w := range whens {
		if operand != nil {
			c, err := buildCompare("=", []Expr{operand, w})
			if err != nil {
				return nil, fmt.Errorf("Illegal mixing of types in CASE or COALESCE statement")
			}
			conds[i] = c
			continue
		}
		if !famBool(w.Type()) {
			return nil, fmt.Errorf("Expected a boolean type")
		}
		conds[i] = w
	}
	results := append(append([]Expr{}, thens...), els)
	if els == nil {
		results[len(results)-1] = NullLiteral(types.NullType)
	}
	t, err := commonTypeOf("CASE", results)
	if err != nil {
		return nil, err
	}
	if t.Root == types.RootNull {
		return nil, fmt.Errorf("ELSE clause or at least one THEN clause must be non-NULL")
	}
	out := &caseExpr{whens: conds, t: t}
	for _, th := range thens {
		out.thens = append(out.thens, implicit(th, t))
	}
	if els == nil {
		out.els = NullLiteral(t)
	} else {
		out.els = implicit(els, t)
	}
	return out, nil
}
