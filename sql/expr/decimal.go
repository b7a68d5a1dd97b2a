package expr

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// pow10Int64 holds 10^0 … 10^18.
var pow10Int64 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// pow10Big holds 10^0 … 10^80 as big integers; never modified.
var pow10Big = func() []*big.Int {
	p := make([]*big.Int, 81)
	p[0] = big.NewInt(1)
	ten := big.NewInt(10)
	for i := 1; i < len(p); i++ {
		p[i] = new(big.Int).Mul(p[i-1], ten)
	}
	return p
}()

func bigPow10(n int) *big.Int {
	if n < len(pow10Big) {
		return pow10Big[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// decUnscaled returns the unscaled value and scale of a DECIMAL value.
func decUnscaled(v types.Value) (*big.Int, int) {
	return v.DecimalBig(), int(v.Aux)
}

// rescaleHalfUp changes the scale of an unscaled value, rounding half away
// from zero (Java's RoundingMode.HALF_UP) when digits are dropped.
func rescaleHalfUp(u *big.Int, from, to int) *big.Int {
	switch {
	case to == from:
		return u
	case to > from:
		return new(big.Int).Mul(u, bigPow10(to-from))
	}
	d := bigPow10(from - to)
	q, r := new(big.Int).QuoRem(u, d, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(d) >= 0 {
		if u.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// rescaleTrunc changes the scale, truncating toward zero.
func rescaleTrunc(u *big.Int, from, to int) *big.Int {
	if to >= from {
		return rescaleHalfUp(u, from, to)
	}
	return new(big.Int).Quo(u, bigPow10(from-to))
}

// makeDecimal builds a DECIMAL(p, s) value from an unscaled value at scale s;
// ok is false when it does not fit the precision (Flink then yields NULL).
func makeDecimal(u *big.Int, precision, scale int) (types.Value, bool) {
	if u.IsInt64() {
		n := u.Int64()
		if precision <= 18 {
			if n >= pow10Int64[precision] || n <= -pow10Int64[precision] {
				return types.Value{}, false
			}
		}
		return types.DecimalFromUnscaled(n, scale), true
	}
	if new(big.Int).Abs(u).Cmp(bigPow10(precision)) >= 0 {
		return types.Value{}, false
	}
	return types.DecimalFromBig(u, scale), true
}

// decimalFromValue converts any numeric value to an unscaled big integer at
// the given scale (HALF_UP). ok is false for NaN or infinities.
func decimalFromValue(v types.Value, scale int) (*big.Int, bool) {
	switch v.K {
	case types.KindInt, types.KindBool:
		return rescaleHalfUp(big.NewInt(v.N), 0, scale), true
	case types.KindDecimal:
		u, s := decUnscaled(v)
		return rescaleHalfUp(u, s, scale), true
	case types.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		// Like BigDecimal.valueOf(double): the shortest decimal that round-trips.
		u, s, ok := parseDecimalText(strconv.FormatFloat(f, 'g', -1, 64))
		if !ok {
			return nil, false
		}
		return rescaleHalfUp(u, s, scale), true
	}
	return nil, false
}

// parseDecimalText parses a plain or scientific decimal number.
func parseDecimalText(s string) (*big.Int, int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, 0, false
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return nil, 0, false
		}
		exp = e
		s = s[:i]
	}
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	if digits == "" {
		return nil, 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, 0, false
		}
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, false
	}
	if neg {
		u.Neg(u)
	}
	scale := len(frac) - exp
	if scale < 0 {
		u.Mul(u, bigPow10(-scale))
		scale = 0
	}
	return u, scale, true
}

// decimalToFloat converts a DECIMAL value to float64.
func decimalToFloat(v types.Value) float64 { return types.ToFloat(v) }

// decimalString renders a DECIMAL value in plain notation.
func decimalString(v types.Value) string { return string(types.AppendDecimal(nil, v)) }

// decimal arithmetic on values already at their own scales; the result is
// rescaled to the result type. NULL on overflow, as Flink's DecimalData does.

func decAdd(a, b types.Value, rt types.Type, negateB bool) types.Value {
	if v, ok := decAddCompact(a, b, rt, negateB); ok {
		return v
	}
	x, sx := decUnscaled(a)
	y, sy := decUnscaled(b)
	s := max(sx, sy)
	x = rescaleHalfUp(x, sx, s)
	y = rescaleHalfUp(y, sy, s)
	var r *big.Int
	if negateB {
		r = new(big.Int).Sub(x, y)
	} else {
		r = new(big.Int).Add(x, y)
	}
	r = rescaleHalfUp(r, s, rt.Scale)
	v, _ := makeDecimal(r, rt.Precision, rt.Scale)
	return v
}

func decMul(a, b types.Value, rt types.Type) types.Value {
	if v, ok := decMulCompact(a, b, rt); ok {
		return v
	}
	x, sx := decUnscaled(a)
	y, sy := decUnscaled(b)
	r := rescaleHalfUp(new(big.Int).Mul(x, y), sx+sy, rt.Scale)
	v, _ := makeDecimal(r, rt.Precision, rt.Scale)
	return v
}

// decDiv divides with HALF_UP rounding at the result scale; ok is false on
// division by zero.
func decDiv(a, b types.Value, rt types.Type) (types.Value, bool) {
	x, sx := decUnscaled(a)
	y, sy := decUnscaled(b)
	if y.Sign() == 0 {
		return types.Value{}, false
	}
	// x/10^sx / (y/10^sy) = x*10^sy / (y*10^sx); scale it to rt.Scale+1 then round.
	num := new(big.Int).Mul(x, bigPow10(sy+rt.Scale+1))
	den := new(big.Int).Mul(y, bigPow10(sx))
	q := new(big.Int).Quo(num, den)
	r := rescaleHalfUp(q, rt.Scale+1, rt.Scale)
	v, _ := makeDecimal(r, rt.Precision, rt.Scale)
	return v, true
}

func decMod(a, b types.Value, rt types.Type) (types.Value, bool) {
	x, sx := decUnscaled(a)
	y, sy := decUnscaled(b)
	if y.Sign() == 0 {
		return types.Value{}, false
	}
	s := max(sx, sy)
	x = rescaleHalfUp(x, sx, s)
	y = rescaleHalfUp(y, sy, s)
	r := new(big.Int).Rem(x, y)
	v, _ := makeDecimal(rescaleHalfUp(r, s, rt.Scale), rt.Precision, rt.Scale)
	return v, true
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }

// low64 keeps the low 64 bits of an integer, as BigDecimal.longValue does.
func low64(q *big.Int) int64 {
	n := int64(new(big.Int).Abs(q).Uint64())
	if q.Sign() < 0 {
		n = -n
	}
	return n
}

// decMulCompact is decMul for two compact operands whose product and result
// fit an int64 (0.908 * price and the like), without big.Int; ok is false
// when the general path must decide.
func decMulCompact(a, b types.Value, rt types.Type) (types.Value, bool) {
	if a.IsBigDecimal() || b.IsBigDecimal() {
		return types.Value{}, false
	}
	x, y := a.N, b.N
	neg := (x < 0) != (y < 0)
	ux, uy := absUint64(x), absUint64(y)
	hi, lo := bits.Mul64(ux, uy)
	if hi != 0 || lo > math.MaxInt64 {
		return types.Value{}, false
	}
	n := int64(lo)
	from, to := int(a.Aux)+int(b.Aux), rt.Scale
	switch {
	case to > from:
		if to-from > 18 {
			return types.Value{}, false
		}
		m := pow10Int64[to-from]
		if n > math.MaxInt64/m {
			return types.Value{}, false
		}
		n *= m
	case to < from:
		if from-to > 18 {
			return types.Value{}, false
		}
		d := pow10Int64[from-to]
		q, r := n/d, n%d
		if r >= d-r { // HALF_UP: away from zero at the half
			q++
		}
		n = q
	}
	if neg {
		n = -n
	}
	if rt.Precision <= 18 && (n >= pow10Int64[rt.Precision] || n <= -pow10Int64[rt.Precision]) {
		return types.Value{}, false // the general path makes it NULL
	}
	return types.DecimalFromUnscaled(n, to), true
}

// decAddCompact is decAdd on int64s: both operands compact, brought to
// the larger scale and summed without leaving int64. ok is false when the
// general path must decide.
func decAddCompact(a, b types.Value, rt types.Type, negateB bool) (types.Value, bool) {
	if a.IsBigDecimal() || b.IsBigDecimal() || (negateB && b.N == math.MinInt64) {
		return types.Value{}, false
	}
	sx, sy := int(a.Aux), int(b.Aux)
	s := max(sx, sy)
	x, ok := rescaleCompact(a.N, sx, s)
	if !ok {
		return types.Value{}, false
	}
	y, ok := rescaleCompact(b.N, sy, s)
	if !ok {
		return types.Value{}, false
	}
	if negateB {
		y = -y
	}
	n := x + y
	if (x > 0 && y > 0 && n < 0) || (x < 0 && y < 0 && n >= 0) {
		return types.Value{}, false
	}
	n, ok = rescaleCompact(n, s, rt.Scale)
	if !ok {
		return types.Value{}, false
	}
	if !fitsPrecision(n, rt.Precision) {
		return types.Value{}, true // NULL, as makeDecimal makes it
	}
	return types.DecimalFromUnscaled(n, rt.Scale), true
}

func absUint64(n int64) uint64 {
	if n < 0 {
		return uint64(-n) // also right for math.MinInt64
	}
	return uint64(n)
}
