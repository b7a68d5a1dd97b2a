package nexmark

import (
	"math"
	"testing"
)

// TestPriceMatchesMathExp: the price of every draw is the one math.Exp
// gives, round(e^(u·6·ln 10) · 100), over 20 million draws of the generator's
// own stream, the ends of the range, and draws whose cents lie right at a
// half (found by inverting the formula), where the fast path must defer to
// math.Exp. fastExp itself stays within 2·10^-13 of math.Exp.
func TestPriceMatchesMathExp(t *testing.T) {
	r := newRNG(seed, 1)
	for i := range 20_000_000 {
		u := r.float()
		if got, want := priceOf(u), slowPrice(u); got != want {
			t.Fatalf("draw %d (u = %v): price %d, want %d", i, u, got, want)
		}
	}
	last := math.Nextafter(1, 0) // the largest float() returns
	for _, u := range []float64{0, 1.0 / (1 << 53), 0.5, last} {
		if got, want := priceOf(u), slowPrice(u); got != want {
			t.Errorf("u = %v: price %d, want %d", u, got, want)
		}
	}
	if p := priceOf(0); p != 100 {
		t.Errorf("price of u = 0 is %d cents, want 100 ($1)", p)
	}
	if p := priceOf(last); p != 100_000_000 {
		t.Errorf("price of the largest draw is %d cents, want 100000000 ($10^6)", p)
	}
	// u with e^(u·6·ln 10)·100 = c + 1/2 for cents c across the range, and
	// their neighbours: the rounding boundaries.
	halves := 0
	for c := 100.0; c < 1e8; c = math.Ceil(c * 1.01) {
		u := math.Log((c+0.5)/100) / (6 * math.Ln10)
		for range 8 {
			if got, want := priceOf(u), slowPrice(u); got != want {
				t.Fatalf("u = %v (near %v.5 cents): price %d, want %d", u, c, got, want)
			}
			y := math.Exp(u*(6*math.Ln10)) * 100
			if f := y - math.Floor(y); math.Abs(f-0.5) < 1e-4 {
				halves++
			}
			u = math.Nextafter(u, 1)
		}
	}
	if halves == 0 {
		t.Fatal("no draw near a half cent was tried")
	}
	for x := 0.0; x < 6*math.Ln10; x += 1e-4 {
		if got, want := fastExp(x), math.Exp(x); math.Abs(got-want) > 2e-13*want {
			t.Fatalf("fastExp(%v) = %v, math.Exp %v", x, got, want)
		}
	}
}

func BenchmarkPrice(b *testing.B) {
	r := newRNG(seed, 1)
	var sum int64
	for range b.N {
		sum += r.price()
	}
	if sum == 0 {
		b.Fatal("no prices")
	}
}

func BenchmarkPriceMathExp(b *testing.B) {
	r := newRNG(seed, 1)
	var sum int64
	for range b.N {
		sum += slowPrice(r.float())
	}
	if sum == 0 {
		b.Fatal("no prices")
	}
}
