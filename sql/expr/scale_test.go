package expr

import (
	"runtime"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// visitLeaf is the constant FALSE, counting how often a tree walk reaches
// it: the work of constant folding, measured without a clock.
type visitLeaf struct {
	literal
	visits *int
}

func (l *visitLeaf) walk(fn func(Expr) bool) bool {
	*l.visits++
	return fn(&l.literal)
}

// orChain builds FALSE OR FALSE OR ... OR a (n terms), left-deep as the
// parser builds it: every subtree but the whole is constant.
func orChain(t testing.TB, n int, visits *int) Expr {
	var e Expr = &visitLeaf{literal: literal{v: types.Bool(false), t: types.BooleanType.WithNullable(false)}, visits: visits}
	for i := range n - 1 {
		var next Expr = &visitLeaf{literal: literal{v: types.Bool(false), t: types.BooleanType.WithNullable(false)}, visits: visits}
		if i == n-2 {
			next = Column(0, "a", types.BooleanType)
		}
		var err error
		if e, err = Call("OR", e, next); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// plusChain builds 1 + 1 + ... (n terms), a constant folded at compile time.
func plusChain(t testing.TB, n int) Expr {
	one, _ := NumericLiteral("1")
	e := one
	for range n - 1 {
		var err error
		if e, err = Call("+", e, one); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// Compiling a flat n-term chain visits every leaf a bounded number of
// times: constant folding asks each node once, not each level about its
// whole subtree (which made a 100 000-term OR take minutes).
func TestCompileLongChainLinear(t *testing.T) {
	for _, n := range []int{1000, 4000} {
		visits := 0
		e := orChain(t, n, &visits)
		visits = 0
		p := NewPredicate(e, utc)
		if visits > 2*n {
			t.Errorf("n=%d: compiling visited the leaves %d times, want at most %d", n, visits, 2*n)
		}
		ok, err := p.Test(types.Row{types.Bool(true)})
		if err != nil || !ok {
			t.Fatalf("n=%d: TRUE OR ... = %v, %v", n, ok, err)
		}
		ok, err = p.Test(types.Row{types.Bool(false)})
		if err != nil || ok {
			t.Fatalf("n=%d: FALSE OR ... = %v, %v", n, ok, err)
		}
	}
	// 1 + 1 + ... folds to n, evaluated once per node.
	v, err := EvalConstant(plusChain(t, 5000), utc)
	if err != nil || v.N != 5000 {
		t.Fatalf("1 + ... + 1 (5000 terms) = %v, %v; want 5000", v, err)
	}
}

// allocBytes is the number of bytes f allocates.
func allocBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Rendering a deep expression (plans, digests) writes into one buffer: the
// bytes allocated grow linearly with the chain, where rendering each level
// into a string of its own copied the subtree at every level (quadratic).
func TestStringLongChainLinear(t *testing.T) {
	const n = 4000
	var visits int
	small, large := orChain(t, n, &visits), orChain(t, 2*n, &visits)
	var s1, s2 string
	b1 := allocBytes(func() { s1 = small.String() })
	b2 := allocBytes(func() { s2 = large.String() })
	if want := strings.Repeat("OR(", n-1) + "FALSE" + strings.Repeat(", FALSE)", n-2) + ", a)"; s1 != want || len(s2) <= len(s1) {
		t.Fatalf("unexpected rendering %.40q…", s1)
	}
	// Linear: twice the terms, about twice the bytes; quadratic: four times.
	if ratio := float64(b2) / float64(b1); ratio > 2.6 {
		t.Fatalf("String allocated %d bytes for %d terms and %d for %d: ratio %.2f, want about 2 (linear)", b1, n, b2, 2*n, ratio)
	}
	if b1 > uint64(8*len(s1)) {
		t.Fatalf("String allocated %d bytes for a %d-byte result", b1, len(s1))
	}
}

func BenchmarkCompileChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("OR/n="+itoa(n), func(b *testing.B) {
			var visits int
			e := orChain(b, n, &visits)
			b.ResetTimer()
			for b.Loop() {
				NewPredicate(e, utc)
			}
		})
		b.Run("plus/n="+itoa(n), func(b *testing.B) {
			e := plusChain(b, n)
			b.ResetTimer()
			for b.Loop() {
				if _, err := EvalConstant(e, utc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("String/n="+itoa(n), func(b *testing.B) {
			var visits int
			e := orChain(b, n, &visits)
			b.ResetTimer()
			for b.Loop() {
				_ = e.String()
			}
		})
	}
}

func itoa(n int) string {
	switch n {
	case 10_000:
		return "10k"
	case 100_000:
		return "100k"
	}
	return "?"
}
