package types

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestCompareDecimalScales covers DECIMALs of different scales in the
// compact form, which compare without big.Int: worked cases, the int64
// edges, and a check against big.Int arithmetic over random values.
func TestCompareDecimalScales(t *testing.T) {
	dec := DecimalFromUnscaled
	cases := []struct {
		a, b Value
		want int
	}{
		{dec(908_000, 3), dec(908, 0), 0},           // 908.000 = 908
		{dec(908_001, 3), dec(908, 0), 1},           // 908.001 > 908
		{dec(907_999, 3), dec(908, 0), -1},          // 907.999 < 908
		{dec(1_000_000, 0), dec(999_999_999, 3), 1}, // 1000000 > 999999.999
		{dec(-5, 1), dec(-1, 0), 1},                 // -0.5 > -1
		{dec(0, 0), dec(-1, 18), 1},                 // 0 > -0.000…1
		{dec(0, 5), dec(0, 0), 0},
		// 922337203685477580.8 needs 19 digits scaled: 92233720368547758 · 10
		// overflows at scale 1 only when the value exceeds int64.
		{dec(math.MaxInt64/10+1, 0), dec(math.MaxInt64, 1), 1},
		{dec(math.MinInt64/10-1, 0), dec(math.MinInt64, 1), -1},
		{dec(1, 0), dec(math.MaxInt64, 30), 1},   // 1 > 0.000…9223…
		{dec(-1, 0), dec(math.MinInt64, 30), -1}, // -1 < -0.000…9223…
		{dec(3, 0), dec(math.MaxInt64, 18), -1},  // 3 < 9.223…
		{dec(10, 0), dec(math.MaxInt64, 18), 1},  // 10 > 9.223…
	}
	for _, c := range cases {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%v (scale %d), %v (scale %d)) = %d, want %d", c.a.N, c.a.Aux, c.b.N, c.b.Aux, got, c.want)
		}
		if got := Compare(c.b, c.a); got != -c.want {
			t.Errorf("Compare(%v (scale %d), %v (scale %d)) = %d, want %d", c.b.N, c.b.Aux, c.a.N, c.a.Aux, got, -c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	draw := func() int64 {
		switch r.IntN(4) {
		case 0:
			return r.Int64N(2001) - 1000
		case 1:
			return int64(r.Uint64())
		default:
			return r.Int64N(1<<40) - 1<<39
		}
	}
	for range 200_000 {
		a, b := dec(draw(), r.IntN(25)), dec(draw(), r.IntN(25))
		x, y := big.NewInt(a.N), big.NewInt(b.N)
		if d := int(b.Aux - a.Aux); d > 0 {
			x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
		} else if d < 0 {
			y.Mul(y, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d)), nil))
		}
		if got, want := Compare(a, b), x.Cmp(y); got != want {
			t.Fatalf("Compare(%d (scale %d), %d (scale %d)) = %d, want %d", a.N, a.Aux, b.N, b.Aux, got, want)
		}
	}
}
