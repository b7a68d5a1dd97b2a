package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flinksql/flinksql/types"
)

// castFn converts one non-NULL value.
type castFn func(c *evalCtx, v types.Value) (types.Value, error)

// Cast returns CAST(e AS to), or TRY_CAST when try is set, following Flink's
// explicit cast rules.
func Cast(e Expr, to types.Type, try bool) (Expr, error) {
	from := e.Type()
	to.TimeAttr = types.NoTimeAttr
	if l, ok := e.(*literal); ok && l.v.IsNull() {
		return &castExpr{e: e, t: to.WithNullable(true), try: try, fn: identityCast}, nil
	}
	fn, ok := castFunc(from, to)
	if !ok && from.IsNumeric() && to.Root == types.RootTimestamp {
		return nil, fmt.Errorf("The cast conversion from NUMERIC type to TIMESTAMP type is not allowed, it's recommended to use TO_TIMESTAMP(FROM_UNIXTIME(numeric_col)) instead, note the numeric is in seconds.")
	}
	if !ok {
		return nil, fmt.Errorf("Cast function cannot convert value of type %s to type %s", sqlTypeName(from), sqlTypeName(to))
	}
	t := to.WithNullable(from.Nullable() || try)
	return &castExpr{e: e, t: t, try: try, fn: fn}, nil
}

// CastIfNeeded inserts the implicit cast used when writing into a sink column
// or unioning; e is returned unchanged when the types already match
// (ignoring nullability).
func CastIfNeeded(e Expr, to types.Type) (Expr, error) {
	from := e.Type()
	if from.EqualIgnoringNull(to) {
		return e, nil
	}
	if l, ok := e.(*literal); ok && l.v.IsNull() {
		return NullLiteral(to), nil
	}
	fn, ok := castFunc(from, to)
	if !ok {
		return nil, fmt.Errorf("Cast function cannot convert value of type %s to type %s", sqlTypeName(from), sqlTypeName(to))
	}
	t := to
	t.NotNull = from.NotNull
	t.TimeAttr = types.NoTimeAttr
	return &castExpr{e: e, t: t, implicit: true, fn: fn}, nil
}

func identityCast(_ *evalCtx, v types.Value) (types.Value, error) { return v, nil }

func castError(v types.Value, from, to types.Type, c *evalCtx) error {
	return fmt.Errorf("Failed to cast '%s' to %s", types.FormatSQL(v, from, c.loc), to.SQLString())
}

// castFunc resolves the conversion from one type to another; ok is false when
// Flink does not support the cast.
func castFunc(from, to types.Type) (castFn, bool) {
	if from.Root == types.RootNull {
		return identityCast, true
	}
	switch {
	case to.IsString():
		return castToString(from, to)
	case to.Root == types.RootBoolean:
		return castToBoolean(from, to)
	case to.IsInteger():
		return castToInteger(from, to)
	case to.Root == types.RootDecimal:
		return castToDecimal(from, to)
	case to.IsApprox():
		return castToFloat(from, to)
	case to.IsBinary():
		return castToBinary(from, to)
	case to.Root == types.RootDate:
		return castToDate(from, to)
	case to.Root == types.RootTime:
		return castToTime(from, to)
	case to.Root == types.RootTimestamp:
		return castToTimestamp(from, to)
	case to.Root == types.RootTimestampLTZ:
		return castToTimestampLTZ(from, to)
	case to.IsInterval():
		if from.Root == to.Root {
			return identityCast, true
		}
		if from.IsExact() && from.Root != types.RootDecimal {
			// INTERVAL from an integer count of the interval's unit is not
			// reachable from SQL syntax; keep the raw count.
			return nil, false
		}
		return nil, false
	case to.Root == types.RootArray && from.Root == types.RootArray:
		ef, ok := castFunc(*from.Elem, *to.Elem)
		if !ok {
			return nil, false
		}
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			in := v.Array()
			out := make([]types.Value, len(in))
			for i, e := range in {
				if e.IsNull() {
					continue
				}
				r, err := ef(c, e)
				if err != nil {
					return types.Value{}, err
				}
				out[i] = r
			}
			return types.ArrayValue(out), nil
		}, true
	case to.Root == types.RootMap && from.Root == types.RootMap:
		kf, ok1 := castFunc(*from.Elem, *to.Elem)
		vf, ok2 := castFunc(*from.Value, *to.Value)
		if !ok1 || !ok2 {
			return nil, false
		}
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			m := v.Map()
			ks, vs := make([]types.Value, len(m.Keys)), make([]types.Value, len(m.Values))
			for i := range m.Keys {
				var err error
				if !m.Keys[i].IsNull() {
					if ks[i], err = kf(c, m.Keys[i]); err != nil {
						return types.Value{}, err
					}
				}
				if !m.Values[i].IsNull() {
					if vs[i], err = vf(c, m.Values[i]); err != nil {
						return types.Value{}, err
					}
				}
			}
			return types.MapOf(ks, vs), nil
		}, true
	case to.Root == types.RootRow && from.Root == types.RootRow && len(to.Fields) == len(from.Fields):
		fns := make([]castFn, len(to.Fields))
		for i := range fns {
			f, ok := castFunc(from.Fields[i].Type, to.Fields[i].Type)
			if !ok {
				return nil, false
			}
			fns[i] = f
		}
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			in := v.RowOf()
			out := make(types.Row, len(in))
			for i, e := range in {
				if e.IsNull() {
					continue
				}
				r, err := fns[i](c, e)
				if err != nil {
					return types.Value{}, err
				}
				out[i] = r
			}
			return types.RowValue(out), nil
		}, true
	case from.EqualIgnoringNull(to):
		return identityCast, true
	}
	return nil, false
}

// fitString applies the length of CHAR(n) (pad with spaces) or VARCHAR(n) (truncate).
func fitString(s string, to types.Type) string {
	n := to.Precision
	if to.Root == types.RootVarChar && n == types.MaxLength {
		return s
	}
	l := utf8.RuneCountInString(s)
	if l > n {
		i := 0
		for k := 0; k < n; k++ {
			_, sz := utf8.DecodeRuneInString(s[i:])
			i += sz
		}
		return s[:i]
	}
	if to.Root == types.RootChar && l < n {
		return s + strings.Repeat(" ", n-l)
	}
	return s
}

func castToString(from, to types.Type) (castFn, bool) {
	if from.IsString() {
		if to.Root == types.RootVarChar && to.Precision >= from.Precision {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.String(fitString(v.S, to)), nil
		}, true
	}
	if from.Root == types.RootSymbol {
		return nil, false
	}
	if from.IsBinary() {
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.String(fitString(strings.ToValidUTF8(v.S, "\uFFFD"), to)), nil
		}, true
	}
	return func(c *evalCtx, v types.Value) (types.Value, error) {
		c.buf = types.AppendSQL(c.buf[:0], v, from, c.loc)
		return types.String(fitString(string(c.buf), to)), nil
	}, true
}

var trueStrings = map[string]bool{"t": true, "true": true, "y": true, "yes": true, "1": true}
var falseStrings = map[string]bool{"f": true, "false": true, "n": true, "no": true, "0": true}

func castToBoolean(from, to types.Type) (castFn, bool) {
	switch {
	case from.Root == types.RootBoolean:
		return identityCast, true
	case from.IsString():
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			s := strings.ToLower(strings.TrimSpace(v.S))
			switch {
			case trueStrings[s]:
				return types.Bool(true), nil
			case falseStrings[s]:
				return types.Bool(false), nil
			}
			return types.Value{}, castError(v, from, to, c)
		}, true
	case from.IsNumeric():
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			switch v.K {
			case types.KindFloat:
				return types.Bool(v.Float() != 0), nil
			case types.KindDecimal:
				return types.Bool(v.DecimalBig().Sign() != 0), nil
			}
			return types.Bool(v.N != 0), nil
		}, true
	}
	return nil, false
}

// wrapInt narrows an int64 as Java's primitive narrowing conversion does.
func wrapInt(n int64, r types.Root) int64 {
	switch r {
	case types.RootTinyInt:
		return int64(int8(n))
	case types.RootSmallInt:
		return int64(int16(n))
	case types.RootInt:
		return int64(int32(n))
	}
	return n
}

// floatToInt converts as Java's (long)/(int) casts do: truncation, NaN to 0, saturation.
func floatToInt(f float64, r types.Root) int64 {
	if math.IsNaN(f) {
		return 0
	}
	if r == types.RootBigInt {
		switch {
		case f >= math.MaxInt64:
			return math.MaxInt64
		case f <= math.MinInt64:
			return math.MinInt64
		}
		return int64(f)
	}
	var n int64
	switch {
	case f >= math.MaxInt32:
		n = math.MaxInt32
	case f <= math.MinInt32:
		n = math.MinInt32
	default:
		n = int64(f)
	}
	return wrapInt(n, r)
}

// parseJavaLong parses an integer the way Flink's string-to-integer cast
// does: trimmed, optional sign, digits, and a fractional part that is ignored.
func parseJavaLong(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if hasDot {
		for i := 0; i < len(frac); i++ {
			if frac[i] < '0' || frac[i] > '9' {
				return 0, false
			}
		}
		if intPart == "" || intPart == "-" || intPart == "+" {
			if frac == "" {
				return 0, false
			}
			return 0, true
		}
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	return n, err == nil
}

func intRange(r types.Root) (int64, int64) {
	switch r {
	case types.RootTinyInt:
		return math.MinInt8, math.MaxInt8
	case types.RootSmallInt:
		return math.MinInt16, math.MaxInt16
	case types.RootInt:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func castToInteger(from, to types.Type) (castFn, bool) {
	r := to.Root
	switch {
	case from.IsInteger():
		if from.Root <= r {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) { return types.Int(wrapInt(v.N, r)), nil }, true
	case from.Root == types.RootBoolean:
		return identityIntFromBool, true
	case from.IsApprox():
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.Int(floatToInt(v.Float(), r)), nil
		}, true
	case from.Root == types.RootDecimal:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			u, s := decUnscaled(v)
			q := rescaleTrunc(u, s, 0)
			// BigDecimal.longValue keeps the low 64 bits.
			return types.Int(wrapInt(low64(q), r)), nil
		}, true
	case from.IsString():
		lo, hi := intRange(r)
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			n, ok := parseJavaLong(v.S)
			if !ok || n < lo || n > hi {
				return types.Value{}, castError(v, from, to, c)
			}
			return types.Int(n), nil
		}, true
	case from.IsInterval():
		return func(_ *evalCtx, v types.Value) (types.Value, error) { return types.Int(wrapInt(v.N, r)), nil }, true
	}
	return nil, false
}

func identityIntFromBool(_ *evalCtx, v types.Value) (types.Value, error) {
	return types.Int(v.N), nil
}

func castToDecimal(from, to types.Type) (castFn, bool) {
	p, s := to.Precision, to.Scale
	switch {
	case from.IsNumeric() || from.Root == types.RootBoolean:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			// An integer or compact DECIMAL rescaled without big.Int
			// when it stays in int64; a precision overflow is NULL.
			if n, from, ok := asCompactDecimal(v); ok {
				if n, ok := rescaleCompact(n, from, s); ok {
					if !fitsPrecision(n, p) {
						return types.Value{}, nil
					}
					return types.DecimalFromUnscaled(n, s), nil
				}
			}
			u, ok := decimalFromValue(v, s)
			if !ok {
				return types.Value{}, nil
			}
			r, _ := makeDecimal(u, p, s)
			return r, nil
		}, true
	case from.IsString():
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			u, sc, ok := parseDecimalText(v.S)
			if !ok {
				return types.Value{}, castError(v, from, to, c)
			}
			r, _ := makeDecimal(rescaleHalfUp(u, sc, s), p, s)
			return r, nil
		}, true
	case from.IsInterval():
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			r, _ := makeDecimal(rescaleHalfUp(bigInt(v.N), 0, s), p, s)
			return r, nil
		}, true
	}
	return nil, false
}

func castToFloat(from, to types.Type) (castFn, bool) {
	single := to.Root == types.RootFloat
	round := func(f float64) types.Value {
		if single {
			return types.Float(float64(float32(f)))
		}
		return types.Float(f)
	}
	switch {
	case from.IsNumeric() || from.Root == types.RootBoolean:
		if from.Root == types.RootFloat || (from.Root == types.RootDouble && !single) {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) { return round(types.ToFloat(v)), nil }, true
	case from.IsString():
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			s := strings.TrimSpace(v.S)
			switch s {
			case "NaN":
				return round(math.NaN()), nil
			case "Infinity", "+Infinity":
				return round(math.Inf(1)), nil
			case "-Infinity":
				return round(math.Inf(-1)), nil
			}
			if strings.ContainsAny(s, "xXpP_") || strings.EqualFold(s, "inf") || strings.EqualFold(s, "+inf") || strings.EqualFold(s, "-inf") || strings.EqualFold(s, "nan") {
				return types.Value{}, castError(v, from, to, c)
			}
			s = strings.TrimRight(s, "dDfF")
			f, err := strconv.ParseFloat(s, 64)
			if err != nil && !isRangeErr(err) {
				return types.Value{}, castError(v, from, to, c)
			}
			return round(f), nil
		}, true
	}
	return nil, false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func castToBinary(from, to types.Type) (castFn, bool) {
	fit := func(s string) string {
		n := to.Precision
		if len(s) > n {
			return s[:n]
		}
		if to.Root == types.RootBinary && len(s) < n {
			return s + strings.Repeat("\x00", n-len(s))
		}
		return s
	}
	if from.IsBinary() || from.IsString() {
		if from.IsBinary() && to.Root == types.RootVarBinary && to.Precision >= from.Precision {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.Value{K: types.KindBytes, S: fit(v.S)}, nil
		}, true
	}
	return nil, false
}

func castToDate(from, to types.Type) (castFn, bool) {
	switch from.Root {
	case types.RootDate:
		return identityCast, true
	case types.RootTimestamp:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.Int(floorDiv(v.N, msPerDay)), nil
		}, true
	case types.RootTimestampLTZ:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			return types.Int(floorDiv(instantToLocal(v.N, c.loc), msPerDay)), nil
		}, true
	case types.RootChar, types.RootVarChar:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			d, ok := parseDate(v.S)
			if !ok {
				return types.Value{}, castError(v, from, to, c)
			}
			return types.Int(d), nil
		}, true
	}
	return nil, false
}

func castToTime(from, to types.Type) (castFn, bool) {
	p := to.Precision
	switch from.Root {
	case types.RootTime:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			ms, _ := truncateFraction(v.N, 0, p)
			return types.Int(ms), nil
		}, true
	case types.RootTimestamp:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			ms, _ := truncateFraction(floorMod(v.N, msPerDay), 0, p)
			return types.Int(ms), nil
		}, true
	case types.RootTimestampLTZ:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, _ := truncateFraction(floorMod(instantToLocal(v.N, c.loc), msPerDay), 0, p)
			return types.Int(ms), nil
		}, true
	case types.RootChar, types.RootVarChar:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, _, ok := parseTimeOfDay(v.S)
			if !ok {
				return types.Value{}, castError(v, from, to, c)
			}
			ms, _ = truncateFraction(ms, 0, p)
			return types.Int(ms), nil
		}, true
	}
	return nil, false
}

func castToTimestamp(from, to types.Type) (castFn, bool) {
	p := to.Precision
	switch from.Root {
	case types.RootTimestamp:
		if from.Precision <= p {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			ms, ns := truncateFraction(v.N, v.Aux, p)
			return types.Timestamp(ms, ns), nil
		}, true
	case types.RootTimestampLTZ:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, ns := truncateFraction(instantToLocal(v.N, c.loc), v.Aux, p)
			return types.Timestamp(ms, ns), nil
		}, true
	case types.RootDate:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.Timestamp(v.N*msPerDay, 0), nil
		}, true
	case types.RootTime:
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			return types.Timestamp(v.N, 0), nil
		}, true
	case types.RootChar, types.RootVarChar:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, ns, ok := parseTimestamp(v.S)
			if !ok {
				return types.Value{}, castError(v, from, to, c)
			}
			ms, ns = truncateFraction(ms, ns, p)
			return types.Timestamp(ms, ns), nil
		}, true
	}
	return nil, false
}

func castToTimestampLTZ(from, to types.Type) (castFn, bool) {
	p := to.Precision
	switch {
	case from.Root == types.RootTimestampLTZ:
		if from.Precision <= p {
			return identityCast, true
		}
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			ms, ns := truncateFraction(v.N, v.Aux, p)
			return types.Timestamp(ms, ns), nil
		}, true
	case from.Root == types.RootTimestamp:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, ns := truncateFraction(v.N, v.Aux, p)
			return types.Timestamp(localToInstant(ms, c.loc), ns), nil
		}, true
	case from.Root == types.RootDate:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			return types.Timestamp(localToInstant(v.N*msPerDay, c.loc), 0), nil
		}, true
	case from.Root == types.RootTime:
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			return types.Timestamp(localToInstant(v.N, c.loc), 0), nil
		}, true
	case from.IsString():
		return func(c *evalCtx, v types.Value) (types.Value, error) {
			ms, ns, ok := parseTimestamp(v.S)
			if !ok {
				return types.Value{}, castError(v, from, to, c)
			}
			ms, ns = truncateFraction(ms, ns, p)
			return types.Timestamp(localToInstant(ms, c.loc), ns), nil
		}, true
	case from.IsNumeric():
		// Numbers are seconds since the epoch.
		return func(_ *evalCtx, v types.Value) (types.Value, error) {
			switch v.K {
			case types.KindInt:
				ms, ns := truncateFraction(v.N*1000, 0, p)
				return types.Timestamp(ms, ns), nil
			}
			f := types.ToFloat(v) * 1000
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return types.Value{}, nil
			}
			ms := int64(math.Floor(f))
			ns := int32(math.Round((f - float64(ms)) * 1e6))
			if ns >= 1e6 {
				ms, ns = ms+1, 0
			}
			ms, ns = truncateFraction(ms, ns, p)
			return types.Timestamp(ms, ns), nil
		}, true
	}
	return nil, false
}
