package types

import (
	"bytes"
	"math"
	"math/big"
	"strings"
)

// Compare orders two non-null-aware values of the same logical type family.
// NULL sorts before every other value. Values of different numeric kinds
// (integer, decimal, float) are compared numerically.
func Compare(a, b Value) int {
	if a.K == KindNull || b.K == KindNull {
		switch {
		case a.K == b.K:
			return 0
		case a.K == KindNull:
			return -1
		default:
			return 1
		}
	}
	if a.K != b.K {
		return compareMixed(a, b)
	}
	switch a.K {
	case KindBool, KindInt:
		return cmpInt(a.N, b.N)
	case KindFloat:
		return cmpFloat(a.Float(), b.Float())
	case KindDecimal:
		return compareDecimal(a, b)
	case KindString, KindBytes, KindSymbol:
		return strings.Compare(a.S, b.S)
	case KindTimestamp:
		if c := cmpInt(a.N, b.N); c != 0 {
			return c
		}
		return cmpInt(int64(a.Aux), int64(b.Aux))
	case KindArray:
		return compareSlices(a.Array(), b.Array())
	case KindRow:
		return compareSlices(a.RowOf(), b.RowOf())
	case KindMap:
		ma, mb := a.Map(), b.Map()
		if c := compareSlices(ma.Keys, mb.Keys); c != 0 {
			return c
		}
		return compareSlices(ma.Values, mb.Values)
	}
	return 0
}

// Equal reports whether two values are equal as grouping keys: NULL equals NULL.
func Equal(a, b Value) bool {
	if a.K == b.K {
		switch a.K {
		case KindNull:
			return true
		case KindBool, KindInt:
			return a.N == b.N
		case KindString, KindBytes, KindSymbol:
			return a.S == b.S
		case KindTimestamp:
			return a.N == b.N && a.Aux == b.Aux
		}
	}
	return Compare(a, b) == 0
}

// RowsEqual reports whether two rows hold equal values column by column.
func RowsEqual(a, b Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func compareSlices(a, b []Value) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(int64(len(a)), int64(len(b)))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	// NaN sorts after everything, and equal to itself, as in Java's Double.compare.
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	}
	return -1
}

func compareMixed(a, b Value) int {
	if a.K == KindFloat || b.K == KindFloat {
		return cmpFloat(ToFloat(a), ToFloat(b))
	}
	if (a.K == KindInt || a.K == KindDecimal) && (b.K == KindInt || b.K == KindDecimal) {
		return compareDecimal(asDecimal(a), asDecimal(b))
	}
	if a.K == KindString && b.K == KindBytes || a.K == KindBytes && b.K == KindString {
		return bytes.Compare([]byte(a.S), []byte(b.S))
	}
	return cmpInt(int64(a.K), int64(b.K))
}

func asDecimal(v Value) Value {
	if v.K == KindInt {
		return DecimalFromUnscaled(v.N, 0)
	}
	return v
}

// ToFloat converts a numeric value to float64.
func ToFloat(v Value) float64 {
	switch v.K {
	case KindFloat:
		return v.Float()
	case KindInt, KindBool:
		return float64(v.N)
	case KindDecimal:
		if !v.IsBigDecimal() {
			return float64(v.N) / math.Pow10(int(v.Aux))
		}
		f, _ := new(big.Float).SetInt(v.DecimalBig()).Float64()
		return f / math.Pow10(int(v.Aux))
	}
	return math.NaN()
}

func compareDecimal(a, b Value) int {
	sa, sb := int(a.Aux), int(b.Aux)
	if !a.IsBigDecimal() && !b.IsBigDecimal() {
		switch {
		case sa == sb:
			return cmpInt(a.N, b.N)
		case sa < sb:
			return compareRescaled(a.N, sb-sa, b.N)
		default:
			return -compareRescaled(b.N, sa-sb, a.N)
		}
	}
	x, y := a.DecimalBig(), b.DecimalBig()
	if sa < sb {
		x.Mul(x, pow10Big(sb-sa))
	} else if sb < sa {
		y.Mul(y, pow10Big(sa-sb))
	}
	return x.Cmp(y)
}

// compareRescaled compares x·10^d with y without leaving int64: the
// comparison of DECIMALs of different scales (0.908 * price > 1000000) runs
// per row, and big.Int arithmetic there allocates.
func compareRescaled(x int64, d int, y int64) int {
	if x == 0 {
		return cmpInt(0, y)
	}
	if d >= len(pow10Int64) {
		// |x·10^d| ≥ 10^19 > |y|.
		return cmpInt(x, 0)
	}
	p := pow10Int64[d]
	if x > math.MaxInt64/p || x < math.MinInt64/p {
		// x·10^d is beyond int64 and so beyond y, on x's side of zero.
		return cmpInt(x, 0)
	}
	return cmpInt(x*p, y)
}

// pow10Int64[i] is 10^i, for every power that fits in an int64.
var pow10Int64 = func() [19]int64 {
	var t [19]int64
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

func pow10Big(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
