package agg

import (
	"math"
	"math/big"
	"math/bits"

	"github.com/flinksql/flinksql/types"
)

// VAR_POP, VAR_SAMP, STDDEV_POP and STDDEV_SAMP keep three slots: the count
// n, then either
//
//   - exact arguments (integers, DECIMAL(p, s)): the sum and the sum of
//     squares as decimals of scale s and 2s, which retract and merge without
//     rounding, so an integer result (truncated, as Flink casts the double
//     result back to the argument type) never falls just below an integer; or
//   - FLOAT/DOUBLE arguments: the running mean and M2 of Welford's algorithm,
//     which does not cancel catastrophically on large values.

func varExact(c *call) bool { return c.num == numInt || c.num == numDecimal }

func varScale(c *call) int {
	if c.num == numDecimal {
		return c.argType.Scale
	}
	return 0
}

func varInit(c *call, acc []types.Value) {
	acc[c.fn] = types.Int(0)
	if varExact(c) {
		s := varScale(c)
		acc[c.fn+1] = types.DecimalFromUnscaled(0, s)
		acc[c.fn+2] = types.DecimalFromUnscaled(0, 2*s)
		return
	}
	acc[c.fn+1] = types.Float(0)
	acc[c.fn+2] = types.Float(0)
}

func asDecimal(c *call, v types.Value) types.Value {
	if v.K == types.KindInt {
		return types.DecimalFromUnscaled(v.N, 0)
	}
	return rescale(v, varScale(c))
}

// decSquare returns v*v with twice v's scale.
func decSquare(v types.Value) types.Value {
	scale := 2 * v.DecimalScale()
	if !v.IsBigDecimal() && v.N != math.MinInt64 {
		a := v.N
		if a < 0 {
			a = -a
		}
		if hi, lo := bits.Mul64(uint64(a), uint64(a)); hi == 0 && lo <= math.MaxInt64 {
			return types.DecimalFromUnscaled(int64(lo), scale)
		}
	}
	u := v.DecimalBig()
	return types.DecimalFromBig(u.Mul(u, u), scale)
}

func varAdd(c *call, acc []types.Value, v types.Value) {
	n := acc[c.fn].N + 1
	acc[c.fn].N = n
	if varExact(c) {
		d := asDecimal(c, v)
		s := varScale(c)
		acc[c.fn+1] = decAdd(acc[c.fn+1], d, s, false)
		acc[c.fn+2] = decAdd(acc[c.fn+2], decSquare(d), 2*s, false)
		return
	}
	x := types.ToFloat(v)
	mean := acc[c.fn+1].Float()
	delta := x - mean
	mean += delta / float64(n)
	acc[c.fn+1] = types.Float(mean)
	acc[c.fn+2] = types.Float(acc[c.fn+2].Float() + delta*(x-mean))
}

func varRetract(c *call, acc []types.Value, v types.Value) {
	n := acc[c.fn].N - 1
	if varExact(c) {
		acc[c.fn].N = n
		d := asDecimal(c, v)
		s := varScale(c)
		acc[c.fn+1] = decAdd(acc[c.fn+1], d, s, true)
		acc[c.fn+2] = decAdd(acc[c.fn+2], decSquare(d), 2*s, true)
		return
	}
	if n <= 0 {
		acc[c.fn].N = n
		acc[c.fn+1] = types.Float(0)
		acc[c.fn+2] = types.Float(0)
		return
	}
	x := types.ToFloat(v)
	mean := acc[c.fn+1].Float()
	newMean := (mean*float64(n+1) - x) / float64(n)
	m2 := max(acc[c.fn+2].Float()-(x-mean)*(x-newMean), 0)
	acc[c.fn].N = n
	acc[c.fn+1] = types.Float(newMean)
	acc[c.fn+2] = types.Float(m2)
}

func varMerge(c *call, acc, other []types.Value) {
	na, nb := acc[c.fn].N, other[c.fn].N
	if varExact(c) {
		s := varScale(c)
		acc[c.fn].N = na + nb
		acc[c.fn+1] = decAdd(acc[c.fn+1], other[c.fn+1], s, false)
		acc[c.fn+2] = decAdd(acc[c.fn+2], other[c.fn+2], 2*s, false)
		return
	}
	if nb == 0 {
		return
	}
	if na == 0 {
		copy(acc[c.fn:c.fn+3], other[c.fn:c.fn+3])
		return
	}
	// Chan et al.'s pairwise update.
	n := na + nb
	ma, mb := acc[c.fn+1].Float(), other[c.fn+1].Float()
	d := mb - ma
	acc[c.fn].N = n
	acc[c.fn+1] = types.Float(ma + d*float64(nb)/float64(n))
	acc[c.fn+2] = types.Float(acc[c.fn+2].Float() + other[c.fn+2].Float() + d*d*float64(na)*float64(nb)/float64(n))
}

func varResult(c *call, acc []types.Value) types.Value {
	n := acc[c.fn].N
	var denom int64
	switch c.kind {
	case kVarPop, kStddevPop:
		denom = n
	default:
		denom = n - 1
	}
	if n <= 0 || denom <= 0 {
		return types.NullValue
	}
	sqrt := c.kind == kStddevPop || c.kind == kStddevSamp
	if !varExact(c) {
		f := max(acc[c.fn+2].Float(), 0) / float64(denom)
		if sqrt {
			f = math.Sqrt(f)
		}
		return castDouble(c, f)
	}
	// variance = (n·Σx² − (Σx)²) / (n · denom · 10^(2s)) on unscaled values.
	sum, sumSq := acc[c.fn+1].DecimalBig(), acc[c.fn+2].DecimalBig()
	num := new(big.Int).Mul(big.NewInt(n), sumSq)
	num.Sub(num, sum.Mul(sum, sum))
	if num.Sign() < 0 {
		num.SetInt64(0)
	}
	den := new(big.Int).Mul(big.NewInt(n), big.NewInt(denom))
	den.Mul(den, pow10(2*varScale(c)))
	if !sqrt {
		switch {
		case c.resType.IsInteger():
			q := new(big.Int).Quo(num, den)
			if !q.IsInt64() {
				return types.Int(javaDoubleToInt(math.Inf(1), c.resType.Root))
			}
			return types.Int(wrapInt(q.Int64(), c.resType.Root))
		case c.resType.Root == types.RootDecimal:
			num.Mul(num, pow10(c.resType.Scale))
			r := types.DecimalFromBig(divHalfUp(num, den), c.resType.Scale)
			if !fitsDecimal38(r) {
				return types.NullValue
			}
			return r
		}
	}
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	if sqrt {
		f = math.Sqrt(f)
	}
	return castDouble(c, f)
}

// castDouble casts a double result to the call's result type as Flink's
// CAST does.
func castDouble(c *call, f float64) types.Value {
	switch c.resType.Root {
	case types.RootFloat:
		return types.Float(float64(float32(f)))
	case types.RootDouble:
		return types.Float(f)
	case types.RootDecimal:
		d, ok := decFromFloat(f, c.resType.Scale)
		if !ok || !fitsDecimal38(d) {
			return types.NullValue
		}
		return d
	}
	return types.Int(javaDoubleToInt(f, c.resType.Root))
}
