package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/types"
)

func registerMathFunctions(m map[string]builder) {
	m["ABS"] = buildAbs
	for name, f := range map[string]func(float64) float64{
		"SQRT": math.Sqrt, "EXP": math.Exp, "LN": math.Log, "LOG10": math.Log10, "LOG2": math.Log2,
		"SIN": math.Sin, "COS": math.Cos, "TAN": math.Tan, "ASIN": math.Asin, "ACOS": math.Acos,
		"ATAN": math.Atan, "SINH": math.Sinh, "COSH": math.Cosh, "TANH": math.Tanh,
		"COT":     func(x float64) float64 { return 1 / math.Tan(x) },
		"DEGREES": func(x float64) float64 { return x * 180 / math.Pi },
		"RADIANS": func(x float64) float64 { return x / 180 * math.Pi },
	} {
		m[name] = doubleFunc1(f)
	}
	m["POWER"] = doubleFunc2(math.Pow)
	m["POW"] = doubleFunc2(math.Pow)
	m["ATAN2"] = doubleFunc2(math.Atan2)
	m["LOG"] = buildLog
	m["CEIL"] = buildCeilFloor
	m["CEILING"] = buildCeilFloor
	m["FLOOR"] = buildCeilFloor
	m["ROUND"] = buildRound
	m["TRUNCATE"] = buildRound
	m["SIGN"] = buildSign
	m["PI"] = constDouble(math.Pi)
	m["E"] = constDouble(math.E)
	m["RAND"] = buildRand
	m["RAND_INTEGER"] = buildRandInteger
	m["BIN"] = buildBin
	m["HEX"] = buildHex
}

func buildAbs(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "ABS(<NUMERIC>)", famNumeric); err != nil {
		if len(args) == 1 && args[0].Type().IsInterval() {
			return newCall(name, args, args[0].Type(), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
				return types.Int(abs64(v[0].N)), nil
			})), nil
		}
		return nil, err
	}
	t := args[0].Type().WithoutTimeAttr()
	switch {
	case t.IsInteger():
		r := t.Root
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Int(wrapInt(abs64(v[0].N), r)), nil
		})), nil
	case t.IsApprox():
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(math.Abs(v[0].Float())), nil
		})), nil
	case t.Root == types.RootDecimal:
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			u, s := decUnscaled(v[0])
			return types.DecimalFromBig(u.Abs(u), s), nil
		})), nil
	}
	return NullLiteral(types.NullType), nil
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func toDouble(e Expr) Expr { return implicit(e, types.DoubleType) }

func doubleFunc1(f func(float64) float64) builder {
	return func(name string, args []Expr) (Expr, error) {
		if err := checkArgs(name, args, name+"(<NUMERIC>)", famNumeric); err != nil {
			return nil, err
		}
		return newCall(name, []Expr{toDouble(args[0])}, types.DoubleType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(f(v[0].Float())), nil
		})), nil
	}
}

func doubleFunc2(f func(float64, float64) float64) builder {
	return func(name string, args []Expr) (Expr, error) {
		if err := checkArgs(name, args, name+"(<NUMERIC>, <NUMERIC>)", famNumeric, famNumeric); err != nil {
			return nil, err
		}
		return newCall(name, []Expr{toDouble(args[0]), toDouble(args[1])}, types.DoubleType.WithNullable(false), strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(f(v[0].Float(), v[1].Float())), nil
		})), nil
	}
}

func buildLog(name string, args []Expr) (Expr, error) {
	switch {
	case len(args) == 1 && famNumeric(args[0].Type()):
		return newCall(name, []Expr{toDouble(args[0])}, types.DoubleType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(math.Log(v[0].Float())), nil
		})), nil
	case len(args) == 2 && famNumeric(args[0].Type()) && famNumeric(args[1].Type()):
		return newCall(name, []Expr{toDouble(args[0]), toDouble(args[1])}, types.DoubleType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(math.Log(v[1].Float()) / math.Log(v[0].Float())), nil
		})), nil
	}
	return nil, cannotApply(name, args, "LOG(<NUMERIC>)", "LOG(<NUMERIC>, <NUMERIC>)")
}

func buildCeilFloor(name string, args []Expr) (Expr, error) {
	floor := name == "FLOOR"
	if len(args) == 2 && famSymbol(args[1].Type()) {
		return buildTemporalFloorCeil(name, args)
	}
	if err := checkArgs(name, args, name+"(<NUMERIC>)", famNumeric); err != nil {
		if len(args) == 1 && args[0].Type().IsInterval() {
			return args[0], nil
		}
		return nil, err
	}
	t := args[0].Type().WithoutTimeAttr()
	switch {
	case t.IsInteger():
		return args[0], nil
	case t.IsApprox():
		f := math.Ceil
		if floor {
			f = math.Floor
		}
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			return types.Float(f(v[0].Float())), nil
		})), nil
	case t.Root == types.RootDecimal:
		rt := types.DecimalType(min(maxDecimalPrecision, t.Precision-t.Scale+boolInt(t.Scale > 0)), 0).WithNullable(t.Nullable())
		return newCall(name, args, rt, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			u, s := decUnscaled(v[0])
			if s <= 0 {
				return types.DecimalFromBig(u, 0), nil
			}
			d := bigPow10(s)
			q, r := new(big.Int).QuoRem(u, d, new(big.Int))
			if r.Sign() != 0 {
				if floor && u.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				} else if !floor && u.Sign() > 0 {
					q.Add(q, big.NewInt(1))
				}
			}
			return types.DecimalFromBig(q, 0), nil
		})), nil
	}
	return NullLiteral(types.NullType), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// roundType is Flink's result type of ROUND(DECIMAL(p, s), r).
func roundType(p, s, r int) types.Type {
	switch {
	case r >= s:
		return types.DecimalType(p, s)
	case r < 0:
		return types.DecimalType(min(maxDecimalPrecision, 1+p-s), 0)
	}
	return types.DecimalType(min(maxDecimalPrecision, 1+p-s+r), r)
}

func buildRound(name string, args []Expr) (Expr, error) {
	if (len(args) != 1 && len(args) != 2) || !famNumeric(args[0].Type()) || (len(args) == 2 && !famInteger(args[1].Type())) {
		return nil, cannotApply(name, args, name+"(<NUMERIC>)", name+"(<NUMERIC>, <INTEGER>)")
	}
	truncate := name == "TRUNCATE"
	t := args[0].Type().WithoutTimeAttr()
	if len(args) == 1 {
		args = []Expr{args[0], Literal(types.Int(0), types.IntType.WithNullable(false))}
	}
	// The result type of a DECIMAL depends on the number of digits when it
	// is a literal; with a column (or any non-literal) it is the input's
	// type, as in Flink: ROUND(decimal, variable) ==> decimal.
	digits, literalDigits := 0, true
	if v, ok := LiteralValue(args[1]); ok && !v.IsNull() {
		digits = int(v.N)
	} else if !ok {
		literalDigits = false
	}
	roundTo := func(u *big.Int, from, to int) *big.Int {
		if truncate {
			return rescaleTrunc(u, from, to)
		}
		return rescaleHalfUp(u, from, to)
	}
	switch {
	case t.IsInteger():
		r := t.Root
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			d := v[1].N
			if d >= 0 {
				return v[0], nil
			}
			if d < -19 {
				return types.Int(0), nil
			}
			q := roundTo(big.NewInt(v[0].N), 0, int(d))
			return types.Int(wrapInt(low64(new(big.Int).Mul(q, bigPow10(int(-d)))), r)), nil
		})), nil
	case t.IsApprox():
		single := t.Root == types.RootFloat
		return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			f := v[0].Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return v[0], nil
			}
			d := int(v[1].N)
			u, s, ok := parseDecimalText(strconv.FormatFloat(f, 'g', -1, 64))
			if !ok {
				return v[0], nil
			}
			q := roundTo(u, s, d)
			r, _ := new(big.Float).SetInt(q).Float64()
			if d > 0 {
				r, _ = strconv.ParseFloat(q.String()+"e-"+strconv.Itoa(d), 64)
			} else if d < 0 {
				r, _ = strconv.ParseFloat(q.String()+"e"+strconv.Itoa(-d), 64)
			}
			if single {
				r = float64(float32(r))
			}
			return types.Float(r), nil
		})), nil
	case t.Root == types.RootDecimal:
		rt := t
		if literalDigits {
			rt = roundType(t.Precision, t.Scale, digits).WithNullable(t.Nullable())
		}
		return newCall(name, args, rt, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			u, s := decUnscaled(v[0])
			d := int(max(min(v[1].N, int64(s)), -2*maxDecimalPrecision))
			q := roundTo(u, s, d)
			// Back to the result scale.
			if d < 0 {
				q = new(big.Int).Mul(q, bigPow10(-d))
				d = 0
			}
			q = rescaleHalfUp(q, d, rt.Scale)
			r, _ := makeDecimal(q, rt.Precision, rt.Scale)
			return r, nil
		})), nil
	}
	return NullLiteral(types.NullType), nil
}

func buildSign(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "SIGN(<NUMERIC>)", famNumeric); err != nil {
		return nil, err
	}
	t := args[0].Type().WithoutTimeAttr()
	return newCall(name, args, t, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		switch v[0].K {
		case types.KindFloat:
			f := v[0].Float()
			switch {
			case f > 0:
				return types.Float(1), nil
			case f < 0:
				return types.Float(-1), nil
			}
			return v[0], nil
		case types.KindDecimal:
			u, s := decUnscaled(v[0])
			return types.DecimalFromBig(new(big.Int).Mul(big.NewInt(int64(u.Sign())), bigPow10(s)), s), nil
		}
		switch {
		case v[0].N > 0:
			return types.Int(1), nil
		case v[0].N < 0:
			return types.Int(-1), nil
		}
		return types.Int(0), nil
	})), nil
}

func constDouble(f float64) builder {
	return func(name string, args []Expr) (Expr, error) {
		if len(args) != 0 {
			return nil, wrongArgCount(name, args, "0")
		}
		return &callExpr{name: name, t: types.DoubleType.WithNullable(false), impl: impl{fn: func(*evalCtx, []types.Value) (types.Value, error) {
			return types.Float(f), nil
		}}}, nil
	}
}

func buildRand(name string, args []Expr) (Expr, error) {
	if len(args) > 1 || (len(args) == 1 && !famInteger(args[0].Type())) {
		return nil, cannotApply(name, args, "RAND()", "RAND(<INTEGER>)")
	}
	t := types.DoubleType.WithNullable(false)
	if len(args) == 1 {
		return &callExpr{name: name, args: args, t: t, impl: impl{build: func(c *compiler, ev []evaluator) evaluator {
			return &seededRand{seed: ev[0], ctx: c.ctx}
		}}}, nil
	}
	return &callExpr{name: name, t: t, impl: impl{fn: func(c *evalCtx, _ []types.Value) (types.Value, error) {
		return types.Float(c.random().Float64()), nil
	}}}, nil
}

// seededRand is RAND(seed): a sequence fixed by the seed, per evaluator instance.
type seededRand struct {
	seed evaluator
	ctx  *evalCtx
	gen  *javaRandom
}

func (e *seededRand) eval(row types.Row) (types.Value, error) {
	if e.gen == nil {
		s, err := e.seed.eval(row)
		if err != nil {
			return s, err
		}
		e.gen = newJavaRandom(s.N)
	}
	return types.Float(e.gen.nextDouble()), nil
}

// javaRandom is java.util.Random's linear congruential generator, so that
// RAND(seed) repeats the sequence Flink produces for the same seed.
type javaRandom struct{ seed int64 }

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ 0x5DEECE66D) & (1<<48 - 1)}
}

func (r *javaRandom) next(bits uint) int64 {
	r.seed = (r.seed*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int64(int32(r.seed >> (48 - bits)))
}

func (r *javaRandom) nextDouble() float64 {
	return float64(r.next(26)<<27+r.next(27)) * (1.0 / float64(int64(1)<<53))
}

func (r *javaRandom) nextInt(bound int32) int32 {
	if bound&(-bound) == bound {
		return int32((int64(bound) * r.next(31)) >> 31)
	}
	for {
		bits := int32(r.next(31))
		val := bits % bound
		if bits-val+(bound-1) >= 0 {
			return val
		}
	}
}

func buildRandInteger(name string, args []Expr) (Expr, error) {
	switch {
	case len(args) == 1 && famInteger(args[0].Type()):
		return newCall(name, args, types.IntType.WithNullable(false), strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
			if v[0].N <= 0 {
				return types.Value{}, errBound(v[0].N)
			}
			return types.Int(c.random().Int64N(v[0].N)), nil
		})), nil
	case len(args) == 2 && famInteger(args[0].Type()) && famInteger(args[1].Type()):
		return &callExpr{name: name, args: args, t: types.IntType.WithNullable(false), impl: impl{build: func(c *compiler, ev []evaluator) evaluator {
			return &seededRandInt{seed: ev[0], bound: ev[1]}
		}}}, nil
	}
	return nil, cannotApply(name, args, "RAND_INTEGER(<INTEGER>)", "RAND_INTEGER(<INTEGER>, <INTEGER>)")
}

type seededRandInt struct {
	seed, bound evaluator
	gen         *javaRandom
}

func (e *seededRandInt) eval(row types.Row) (types.Value, error) {
	if e.gen == nil {
		s, err := e.seed.eval(row)
		if err != nil {
			return s, err
		}
		e.gen = newJavaRandom(s.N)
	}
	b, err := e.bound.eval(row)
	if err != nil || b.IsNull() {
		return types.Value{}, err
	}
	if b.N <= 0 {
		return types.Value{}, errBound(b.N)
	}
	return types.Int(int64(e.gen.nextInt(int32(b.N)))), nil
}

func errBound(n int64) error {
	return &boundError{n}
}

type boundError struct{ n int64 }

func (e *boundError) Error() string {
	return "RAND_INTEGER: bound must be positive, got " + strconv.FormatInt(e.n, 10)
}

func buildBin(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "BIN(<INTEGER>)", famInteger); err != nil {
		return nil, err
	}
	return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		return types.String(strconv.FormatUint(uint64(v[0].N), 2)), nil
	})), nil
}

func buildHex(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || !(famInteger(args[0].Type()) || famString(args[0].Type()) || famNumeric(args[0].Type())) {
		return nil, cannotApply(name, args, "HEX(<INTEGER>)", "HEX(<CHARACTER>)")
	}
	isStr := args[0].Type().IsString()
	arg := args[0]
	if !isStr && !arg.Type().IsInteger() {
		arg = implicit(arg, types.BigIntType)
	}
	return newCall(name, []Expr{arg}, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if isStr {
			return types.String(strings.ToUpper(hexString(v[0].S))), nil
		}
		return types.String(strings.ToUpper(strconv.FormatUint(uint64(v[0].N), 16))), nil
	})), nil
}

func hexString(s string) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(b)
}
