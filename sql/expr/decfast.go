package expr

import (
	"math"

	"github.com/flinksql/flinksql/types"
)

// DECIMAL evaluators for the per-row shapes of money arithmetic
// (0.908 * price, price * 1.1 > 1000): they skip the implicit
// CAST(integer AS DECIMAL(p, 0)) of an integer operand, hold a constant
// operand instead of evaluating it, and compare against a constant
// pre-scaled to the other side's scale, so that a row costs a few int64
// operations and no big.Int. Values outside int64 still take the big.Int
// path of decimal.go, which defines the results.

// rescaleCompact changes the scale of an unscaled int64 value, rounding
// HALF_UP (away from zero at the half, as BigDecimal.setScale does) when
// digits are dropped. ok is false when the result leaves int64; the
// big.Int path decides then.
func rescaleCompact(n int64, from, to int) (int64, bool) {
	switch {
	case to == from:
		return n, true
	case to > from:
		d := to - from
		if d >= len(pow10Int64) {
			return 0, n == 0
		}
		m := pow10Int64[d]
		if n > math.MaxInt64/m || n < -math.MaxInt64/m {
			return 0, false
		}
		return n * m, true
	}
	d := from - to
	if d >= len(pow10Int64) {
		// Dropping 19 or more digits of an int64 leaves 0 or ±1 by the
		// half; the big.Int path rounds those rare cases.
		return 0, false
	}
	m := pow10Int64[d]
	q, r := n/m, n%m
	if r >= 0 {
		if r >= m-r {
			q++
		}
	} else if -r >= m+r {
		q--
	}
	return q, true
}

// fitsPrecision reports whether an unscaled int64 fits DECIMAL(p, _): every
// int64 fits 19 or more digits.
func fitsPrecision(n int64, p int) bool {
	return p >= len(pow10Int64) || (n < pow10Int64[p] && n > -pow10Int64[p])
}

// asCompactDecimal returns an integer or compact DECIMAL value as an
// unscaled int64 and its scale; ok is false for a big.Int DECIMAL.
func asCompactDecimal(v types.Value) (n int64, scale int, ok bool) {
	switch v.K {
	case types.KindInt:
		return v.N, 0, true
	case types.KindDecimal:
		if v.IsBigDecimal() {
			return 0, 0, false
		}
		return v.N, int(v.Aux), true
	}
	return 0, 0, false
}

// decOperand is the expression to evaluate for a DECIMAL arithmetic
// operand: an integer under the implicit cast to DECIMAL(p, 0) that type
// inference inserted is evaluated as is, since an integer value is its own
// unscaled value at scale 0 and always fits the cast's precision.
func decOperand(e Expr) Expr {
	c, ok := e.(*castExpr)
	if !ok || !c.implicit || c.try || c.t.Root != types.RootDecimal || c.t.Scale != 0 {
		return e
	}
	from := c.e.Type()
	if !from.IsInteger() || c.t.Precision < integerDigits(from.Root) {
		return e
	}
	return c.e
}

// intAsDecimal gives an integer operand of DECIMAL arithmetic the DECIMAL
// form, so that decimal.go's functions see scale 0 whatever Aux held.
func intAsDecimal(v types.Value) types.Value {
	if v.K == types.KindInt {
		return types.DecimalFromUnscaled(v.N, 0)
	}
	return v
}

// decArithEval is DECIMAL + - * of two evaluated operands.
type decArithEval struct {
	a, b evaluator
	op   byte
	rt   types.Type
}

func decArith(op byte, x, y types.Value, rt types.Type) types.Value {
	switch op {
	case '+':
		return decAdd(x, y, rt, false)
	case '-':
		return decAdd(x, y, rt, true)
	}
	return decMul(x, y, rt)
}

func (e *decArithEval) eval(row types.Row) (types.Value, error) {
	x, err := e.a.eval(row)
	if err != nil || x.K == types.KindNull {
		return types.Value{}, err
	}
	y, err := e.b.eval(row)
	if err != nil || y.K == types.KindNull {
		return types.Value{}, err
	}
	return decArith(e.op, intAsDecimal(x), intAsDecimal(y), e.rt), nil
}

// decArithConstEval is DECIMAL + - * with one constant operand, held
// rather than evaluated per row; constLeft keeps the operand order for -.
type decArithConstEval struct {
	e         evaluator
	c         types.Value
	constLeft bool
	op        byte
	rt        types.Type
}

func (e *decArithConstEval) eval(row types.Row) (types.Value, error) {
	x, err := e.e.eval(row)
	if err != nil || x.K == types.KindNull {
		return types.Value{}, err
	}
	if e.constLeft {
		return decArith(e.op, e.c, intAsDecimal(x), e.rt), nil
	}
	return decArith(e.op, intAsDecimal(x), e.c, e.rt), nil
}

// newDecArithEval compiles DECIMAL a op b with result type rt.
func newDecArithEval(cc *compiler, op byte, a, b Expr, rt types.Type) evaluator {
	x, y := cc.compileExpr(decOperand(a)), cc.compileExpr(decOperand(b))
	if k, ok := y.(*constEval); ok && k.v.K != types.KindNull {
		return &decArithConstEval{e: x, c: intAsDecimal(k.v), op: op, rt: rt}
	}
	if k, ok := x.(*constEval); ok && k.v.K != types.KindNull {
		return &decArithConstEval{e: y, c: intAsDecimal(k.v), constLeft: true, op: op, rt: rt}
	}
	return &decArithEval{a: x, b: y, op: op, rt: rt}
}

// castDecimalResult folds CAST(e AS to) into e when e is DECIMAL
// arithmetic at to's scale (0.908 * price into a sink's DECIMAL(23, 3)):
// e's values are at exactly that scale, so the cast only decides whether
// they fit to's digits, and arithmetic that checks the smaller of the two
// precisions makes NULL of the same values the two steps make NULL.
func castDecimalResult(e evaluator, to types.Type) (evaluator, bool) {
	narrow := func(rt types.Type) types.Type {
		rt.Precision = min(rt.Precision, to.Precision)
		return rt
	}
	switch a := e.(type) {
	case *decArithEval:
		if a.rt.Scale == to.Scale {
			f := *a
			f.rt = narrow(a.rt)
			return &f, true
		}
	case *decArithConstEval:
		if a.rt.Scale == to.Scale {
			f := *a
			f.rt = narrow(a.rt)
			return &f, true
		}
	}
	return nil, false
}

// decCmpConstEval compares an exact numeric operand with a non-NULL
// constant. When the operand is compact at the scale the constant was
// scaled to, the comparison is one of int64s; otherwise fn, the general
// comparison, decides.
type decCmpConstEval struct {
	e     evaluator
	op    int
	scale int   // scale of c; -1 when the constant cannot be pre-scaled
	c     int64 // the constant's unscaled value at scale
	k     types.Value
	// constLeft: the constant is the left operand of fn.
	constLeft bool
	ctx       *evalCtx
	fn        func(c *evalCtx, args []types.Value) (types.Value, error)
	vals      [2]types.Value
}

func (e *decCmpConstEval) eval(row types.Row) (types.Value, error) {
	x, err := e.e.eval(row)
	if err != nil || x.K == types.KindNull {
		return types.Value{}, err
	}
	if n, s, ok := asCompactDecimal(x); ok && s == e.scale {
		return types.Bool(intCmp(e.op, n, e.c)), nil
	}
	if e.constLeft {
		e.vals[0], e.vals[1] = e.k, x
	} else {
		e.vals[0], e.vals[1] = x, e.k
	}
	return e.fn(e.ctx, e.vals[:])
}

// flipCmp is the operator of the comparison with its operands swapped.
func flipCmp(op int) int {
	switch op {
	case cmpLT:
		return cmpGT
	case cmpLE:
		return cmpGE
	case cmpGT:
		return cmpLT
	case cmpGE:
		return cmpLE
	}
	return op
}

// newDecCmpEval compiles a comparison of exact numerics of which at least
// one is DECIMAL; without a constant operand it is the general call.
func newDecCmpEval(cc *compiler, c *callExpr, args []evaluator) evaluator {
	op := cmpCode(c.impl.decCmp)
	e := &decCmpConstEval{op: op, ctx: cc.ctx, fn: c.impl.fn, scale: -1}
	var operand Expr
	if k, ok := args[1].(*constEval); ok && k.v.K != types.KindNull {
		e.e, e.k, operand = args[0], k.v, c.args[0]
	} else if k, ok := args[0].(*constEval); ok && k.v.K != types.KindNull {
		e.e, e.k, operand, e.constLeft = args[1], k.v, c.args[1], true
		e.op = flipCmp(op)
	} else {
		return &binaryEval{ctx: cc.ctx, a: args[0], b: args[1], fn: c.impl.fn}
	}
	// Scale the constant to the operand's declared scale when that is
	// exact: values at another scale (or big.Int ones) go to fn.
	if n, s, ok := asCompactDecimal(e.k); ok {
		target := 0
		if t := operand.Type(); t.Root == types.RootDecimal {
			target = t.Scale
		}
		if target >= s {
			if m, ok := rescaleCompact(n, s, target); ok {
				e.c, e.scale = m, target
			}
		}
	}
	return e
}
