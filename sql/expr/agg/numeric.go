package agg

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// wrapInt narrows n to the width of an integer type the way a Java cast does
// (two's complement wrap-around), which is how Flink's SUM(INT) overflows.
func wrapInt(n int64, root types.Root) int64 {
	switch root {
	case types.RootTinyInt:
		return int64(int8(n))
	case types.RootSmallInt:
		return int64(int16(n))
	case types.RootInt:
		return int64(int32(n))
	}
	return n
}

// javaDoubleToLong is Java's (long) cast of a double: NaN is 0 and values out
// of range saturate.
func javaDoubleToLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaDoubleToInt is Java's cast of a double to an integer type: (int) for
// INT, and (byte)(int) / (short)(int) for the narrower ones.
func javaDoubleToInt(f float64, root types.Root) int64 {
	if root == types.RootBigInt {
		return javaDoubleToLong(f)
	}
	var i int32
	switch {
	case math.IsNaN(f):
		i = 0
	case f >= math.MaxInt32:
		i = math.MaxInt32
	case f <= math.MinInt32:
		i = math.MinInt32
	default:
		i = int32(f)
	}
	return wrapInt(int64(i), root)
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// pow10Int64 holds 10^0 … 10^18.
var pow10Int64 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// maxDecimal38 is 10^38: a DECIMAL(38, s) unscaled value must be below it.
var maxDecimal38 = pow10(38)

// rescale returns the decimal v with the given scale (exact when increasing
// the scale; rounding HALF_UP when decreasing it).
func rescale(v types.Value, scale int) types.Value {
	s := v.DecimalScale()
	if s == scale {
		return v
	}
	if s < scale && !v.IsBigDecimal() && scale-s < len(pow10Int64) {
		f := pow10Int64[scale-s]
		if r := v.N * f; r/f == v.N {
			return types.DecimalFromUnscaled(r, scale)
		}
	}
	u := v.DecimalBig()
	if s < scale {
		u.Mul(u, pow10(scale-s))
		return types.DecimalFromBig(u, scale)
	}
	return types.DecimalFromBig(divHalfUp(u, pow10(s-scale)), scale)
}

// decAdd returns a+b (or a-b when negate) for decimals of the given scale.
func decAdd(a, b types.Value, scale int, negate bool) types.Value {
	if a.DecimalScale() != scale {
		a = rescale(a, scale)
	}
	if b.DecimalScale() != scale {
		b = rescale(b, scale)
	}
	if !a.IsBigDecimal() && !b.IsBigDecimal() {
		x, y := a.N, b.N
		if negate {
			if y != math.MinInt64 {
				y = -y
				if r := x + y; (x >= 0) != (y >= 0) || (r >= 0) == (x >= 0) {
					return types.DecimalFromUnscaled(r, scale)
				}
			}
		} else if r := x + y; (x >= 0) != (y >= 0) || (r >= 0) == (x >= 0) {
			return types.DecimalFromUnscaled(r, scale)
		}
	}
	x, y := a.DecimalBig(), b.DecimalBig()
	if negate {
		x.Sub(x, y)
	} else {
		x.Add(x, y)
	}
	return types.DecimalFromBig(x, scale)
}

// fitsDecimal38 reports whether a decimal fits DECIMAL(38, s); Flink turns a
// decimal that overflows its precision into NULL.
func fitsDecimal38(v types.Value) bool {
	if !v.IsBigDecimal() {
		return true
	}
	u := v.DecimalBig()
	return u.Abs(u).Cmp(maxDecimal38) < 0
}

// divHalfUp divides with rounding half away from zero (Java's HALF_UP).
func divHalfUp(x, y *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	if r.Sign() == 0 {
		return q
	}
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if r2.Cmp(new(big.Int).Abs(y)) >= 0 {
		if (x.Sign() < 0) != (y.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// decDivCount divides a decimal sum by a row count, rounding HALF_UP to the
// result scale, as Flink's AVG on DECIMAL does.
func decDivCount(sum types.Value, count int64, scale int) types.Value {
	u := sum.DecimalBig()
	if d := scale - sum.DecimalScale(); d > 0 {
		u.Mul(u, pow10(d))
	} else if d < 0 {
		return types.DecimalFromBig(divHalfUp(u, new(big.Int).Mul(big.NewInt(count), pow10(-d))), scale)
	}
	return types.DecimalFromBig(divHalfUp(u, big.NewInt(count)), scale)
}

// decFromFloat converts a double to DECIMAL with the given scale the way
// Java's BigDecimal.valueOf(d).setScale(scale, HALF_UP) does; ok is false for
// NaN and infinities.
func decFromFloat(f float64, scale int) (types.Value, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return types.NullValue, false
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return types.NullValue, false
	}
	if neg {
		u.Neg(u)
	}
	v := types.DecimalFromBig(u, len(frac))
	return rescale(v, scale), true
}
