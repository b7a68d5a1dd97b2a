package expr

import (
	"math"
	"math/big"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestRescaleCompact: HALF_UP when digits are dropped (away from zero at
// the half, for negatives too), exact scaling up, and the int64 limits
// handed to the big.Int path.
func TestRescaleCompact(t *testing.T) {
	for _, c := range []struct {
		n        int64
		from, to int
		want     int64
		ok       bool
	}{
		{12345, 3, 1, 123, true},   // 12.345 -> 12.3
		{12350, 3, 1, 124, true},   // 12.350 -> 12.4: the half goes up
		{-12350, 3, 1, -124, true}, // and away from zero below it
		{-12349, 3, 1, -123, true},
		{5, 1, 0, 1, true}, // 0.5 -> 1
		{-5, 1, 0, -1, true},
		{4, 1, 0, 0, true},
		{-4, 1, 0, 0, true},
		{999, 3, 0, 1, true}, // 0.999 -> 1
		{123, 0, 3, 123000, true},
		{-123, 2, 2, -123, true},
		{math.MaxInt64/10 + 1, 0, 1, 0, false}, // 9223372036854775810 leaves int64
		{math.MinInt64, 0, 1, 0, false},
		{-(math.MaxInt64 / 10), 0, 1, -9223372036854775800, true},
		{0, 0, 30, 0, true},
		{1, 0, 19, 0, false},
		{math.MaxInt64, 19, 0, 0, false}, // 0.92…: rounding of 19 dropped digits left to big.Int
		{math.MaxInt64, 18, 0, 9, true},  // 9.223… -> 9
		{math.MinInt64, 18, 0, -9, true},
		{5e17, 18, 0, 1, true}, // 0.5 -> 1
		{-5e17, 18, 0, -1, true},
	} {
		got, ok := rescaleCompact(c.n, c.from, c.to)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("rescaleCompact(%d, %d, %d) = %d, %v; want %d, %v", c.n, c.from, c.to, got, ok, c.want, c.ok)
		}
		if ok {
			// The big.Int path agrees wherever the compact one answers.
			if b := rescaleHalfUp(big.NewInt(c.n), c.from, c.to); b.Cmp(big.NewInt(got)) != 0 {
				t.Errorf("rescaleCompact(%d, %d, %d) = %d, rescaleHalfUp %s", c.n, c.from, c.to, got, b)
			}
		}
	}
}

// TestDecimalCastCompact: CAST between DECIMAL types on int64s rounds
// HALF_UP, a precision overflow is NULL, a precision of 19 or more digits
// takes any int64, and a value past int64 after scaling up is still exact.
func TestDecimalCastCompact(t *testing.T) {
	d := Column(0, "d", types.DecimalType(10, 3))
	big3 := Column(1, "m", types.DecimalType(19, 3))
	d2 := Column(2, "e", types.DecimalType(5, 2))
	n := Column(3, "n", types.BigIntType)
	for _, c := range []struct {
		name string
		row  types.Row
		e    Expr
		want string
	}{
		{"drop digits", types.Row{types.DecimalFromUnscaled(12345, 3)}, cast(t, d, types.DecimalType(10, 1)), "12.3"},
		{"half up", types.Row{types.DecimalFromUnscaled(12350, 3)}, cast(t, d, types.DecimalType(10, 1)), "12.4"},
		{"negative half up", types.Row{types.DecimalFromUnscaled(-12350, 3)}, cast(t, d, types.DecimalType(10, 1)), "-12.4"},
		{"negative below half", types.Row{types.DecimalFromUnscaled(-12349, 3)}, cast(t, d, types.DecimalType(10, 1)), "-12.3"},
		{"scale up", types.Row{types.DecimalFromUnscaled(-12345, 3)}, cast(t, d, types.DecimalType(12, 5)), "-12.34500"},
		{"overflow is null", types.Row{types.DecimalFromUnscaled(12345600, 3)}, cast(t, d, types.DecimalType(4, 1)), "NULL"},
		{"largest that fits", types.Row{types.DecimalFromUnscaled(999900, 3)}, cast(t, d, types.DecimalType(4, 1)), "999.9"},
		// 999.95 rounds HALF_UP to 1000.0, which DECIMAL(4, 1) cannot hold.
		{"rounds into overflow", types.Row{2: types.DecimalFromUnscaled(99995, 2)}, cast(t, d2, types.DecimalType(4, 1)), "NULL"},
		{"wide precision keeps int64", types.Row{1: types.DecimalFromUnscaled(math.MaxInt64, 3)}, cast(t, big3, types.DecimalType(23, 3)), "9223372036854775.807"},
		{"scale up past int64", types.Row{1: types.DecimalFromUnscaled(math.MaxInt64, 3)}, cast(t, big3, types.DecimalType(23, 5)), "9223372036854775.80700"},
		{"min int64 wide", types.Row{1: types.DecimalFromUnscaled(math.MinInt64, 3)}, cast(t, big3, types.DecimalType(20, 2)), "-9223372036854775.81"},
		{"bigint to decimal", types.Row{3: types.Int(-42)}, cast(t, n, types.DecimalType(22, 3)), "-42.000"},
		{"bigint overflows precision", types.Row{3: types.Int(1000)}, cast(t, n, types.DecimalType(5, 2)), "NULL"},
		{"bigint largest that fits", types.Row{3: types.Int(-999)}, cast(t, n, types.DecimalType(5, 2)), "-999.00"},
		{"max bigint scaled past int64", types.Row{3: types.Int(math.MaxInt64)}, cast(t, n, types.DecimalType(22, 3)), "9223372036854775807.000"},
		{"null", types.Row{}, cast(t, d, types.DecimalType(10, 1)), "NULL"},
	} {
		row := make(types.Row, 4)
		copy(row, c.row)
		got, err := evalStr(t, c.e, row, utc)
		if err != nil || got != c.want {
			t.Errorf("%s: %s = %q, %v; want %q", c.name, c.e, got, err, c.want)
		}
	}
}

// TestDecimalArithmeticFastPaths: DECIMAL + - * with an integer column
// (its implicit cast skipped) and a constant on either side, their result
// types as Flink derives them, the big.Int fallback past int64, and NULL.
func TestDecimalArithmeticFastPaths(t *testing.T) {
	price := Column(0, "price", types.BigIntType)
	d := Column(1, "d", types.DecimalType(5, 2))
	e := Column(2, "e", types.DecimalType(6, 3))
	w := Column(3, "w", types.DecimalType(19, 0))
	euro := func() Expr { return call(t, "*", num(t, "0.908"), price) }
	at := func(p int64) types.Row {
		return types.Row{types.Int(p), types.DecimalFromUnscaled(125, 2), types.DecimalFromUnscaled(125, 3), types.DecimalFromUnscaled(math.MaxInt64, 0)}
	}
	for _, c := range []struct {
		name string
		e    Expr
		row  types.Row
		want string
		typ  string
	}{
		{"q1 price", euro(), at(122646), "111362.568", "DECIMAL(24, 3)"},
		{"negative price", euro(), at(-5), "-4.540", ""},
		{"zero", euro(), at(0), "0.000", ""},
		{"constant on the right", call(t, "*", price, num(t, "0.908")), at(122646), "111362.568", "DECIMAL(24, 3)"},
		{"past int64: big.Int", euro(), at(math.MaxInt64), "8374821809464136432.756", ""},
		{"min int64: big.Int", euro(), at(math.MinInt64), "-8374821809464136433.664", ""},
		{"null price", euro(), types.Row{types.Value{}}, "NULL", ""},
		{"price - constant", call(t, "-", price, num(t, "0.5")), at(3), "2.5", "DECIMAL(21, 1)"},
		{"constant - price", call(t, "-", num(t, "0.5"), price), at(3), "-2.5", "DECIMAL(21, 1)"},
		{"columns of two scales", call(t, "+", d, e), at(0), "1.375", "DECIMAL(7, 3)"},
		{"column minus column", call(t, "-", e, d), at(0), "-1.125", "DECIMAL(7, 3)"},
		{"decimal times decimal column", call(t, "*", d, e), at(0), "0.15625", "DECIMAL(12, 5)"},
		{"sum past int64", call(t, "+", w, num(t, "1")), at(0), "9223372036854775808", "DECIMAL(20, 0)"},
		{"difference past int64", call(t, "-", call(t, "NEGATE", w), num(t, "2")), at(0), "-9223372036854775809", ""},
		{"sum with a null", call(t, "+", d, price), types.Row{types.Value{}, types.DecimalFromUnscaled(125, 2)}, "NULL", ""},
	} {
		row := make(types.Row, 4)
		copy(row, c.row)
		got, err := evalStr(t, c.e, row, utc)
		if err != nil || got != c.want {
			t.Errorf("%s: %s = %q, %v; want %q", c.name, c.e, got, err, c.want)
		}
		if c.typ != "" && c.e.Type().String() != c.typ {
			t.Errorf("%s: %s has type %s, want %s", c.name, c.e, c.e.Type(), c.typ)
		}
	}
	// The DECIMAL evaluators are the ones compiled, the integer's cast gone.
	p := NewProjector([]Expr{euro(), call(t, "+", d, e)}, utc)
	if k, ok := p.evals[0].(*decArithConstEval); !ok {
		t.Errorf("0.908 * price compiles to %T, want *decArithConstEval", p.evals[0])
	} else if _, ok := k.e.(*columnEval); !ok {
		t.Errorf("0.908 * price evaluates its integer operand through %T, want the column", k.e)
	}
	if _, ok := p.evals[1].(*decArithEval); !ok {
		t.Errorf("d + e compiles to %T, want *decArithEval", p.evals[1])
	}
}

// TestDecimalSinkCast: the cast of DECIMAL arithmetic into a sink column
// of the same scale (q1's DECIMAL(24, 3) product into DECIMAL(23, 3)) is
// folded into the arithmetic and makes NULL exactly what does not fit the
// column; a cast to another scale still rounds HALF_UP.
func TestDecimalSinkCast(t *testing.T) {
	price := Column(0, "price", types.BigIntType)
	euro := func() Expr { return call(t, "*", num(t, "0.908"), price) }
	sink := func(to types.Type) Expr {
		e, err := CastIfNeeded(euro(), to)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	q1 := sink(types.DecimalType(23, 3))
	for _, e := range []Expr{q1, sink(types.DecimalType(30, 3)), sink(types.DecimalType(8, 3))} {
		if p := NewProjector([]Expr{e}, utc); !isDecArithConst(p.evals[0]) {
			t.Errorf("%s compiles to %T, want the multiplication itself", e, p.evals[0])
		}
	}
	for _, c := range []struct {
		name  string
		e     Expr
		price int64
		want  string
	}{
		{"q1 sink", q1, 122646, "111362.568"},
		{"q1 sink past int64", q1, math.MaxInt64, "8374821809464136432.756"},
		{"q1 sink, min int64", q1, math.MinInt64, "-8374821809464136433.664"},
		{"wider", sink(types.DecimalType(30, 3)), -122646, "-111362.568"},
		// 0.908 * MaxInt64 has 22 digits.
		{"21 digits overflow past int64", sink(types.DecimalType(21, 3)), math.MaxInt64, "NULL"},
		{"21 digits fit past int64", sink(types.DecimalType(21, 3)), 100_000_000_000_000_000, "90800000000000000.000"},
		{"8 digits overflow", sink(types.DecimalType(8, 3)), 122646, "NULL"},
		{"8 digits overflow, negative", sink(types.DecimalType(8, 3)), -122646, "NULL"},
		{"8 digits fit", sink(types.DecimalType(8, 3)), 110132, "99999.856"}, // 0.908 * 110132
		{"to scale 2 rounds half up", sink(types.DecimalType(23, 2)), 122646, "111362.57"},
		{"to scale 2, negative", sink(types.DecimalType(23, 2)), -122646, "-111362.57"},
		{"to scale 2, half up", sink(types.DecimalType(23, 2)), 1, "0.91"},        // 0.908
		{"to scale 2, below the half", sink(types.DecimalType(23, 2)), 3, "2.72"}, // 2.724
	} {
		got, err := evalStr(t, c.e, types.Row{types.Int(c.price)}, utc)
		if err != nil || got != c.want {
			t.Errorf("%s: %s at price %d = %q, %v; want %q", c.name, c.e, c.price, got, err, c.want)
		}
	}
	if got, _ := evalStr(t, q1, types.Row{types.Value{}}, utc); got != "NULL" {
		t.Errorf("%s of a NULL price = %s, want NULL", q1, got)
	}
}

// TestDecimalCompareConstant: a DECIMAL compared with a constant (q14's
// 0.908 * price > 1000000) on either side, at the boundary, with a
// constant of more digits than the operand's scale, and for a value past
// int64, which the general comparison decides.
func TestDecimalCompareConstant(t *testing.T) {
	price := Column(0, "price", types.BigIntType)
	wide := Column(1, "w", types.DecimalType(38, 0))
	euro := func() Expr { return call(t, "*", num(t, "0.908"), price) }
	tenPow20 := types.DecimalFromBig(new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil), 0)
	for _, c := range []struct {
		name  string
		e     Expr
		price int64
		want  string
	}{
		// 0.908 * 1101321 = 999999.468; 0.908 * 1101322 = 1000000.376.
		{"below", call(t, ">", euro(), num(t, "1000000")), 1101321, "FALSE"},
		{"above", call(t, ">", euro(), num(t, "1000000")), 1101322, "TRUE"},
		{"constant on the left", call(t, "<", num(t, "1000000"), euro()), 1101322, "TRUE"},
		{"constant on the left, below", call(t, "<", num(t, "1000000"), euro()), 1101321, "FALSE"},
		{"upper bound", call(t, "<", euro(), num(t, "50000000")), 1101322, "TRUE"},
		{">= at equality", call(t, ">=", euro(), num(t, "908")), 1000, "TRUE"},
		{">= below", call(t, ">=", euro(), num(t, "908")), 999, "FALSE"},
		{"<= at equality", call(t, "<=", euro(), num(t, "908")), 1000, "TRUE"},
		{"<= from the left", call(t, "<=", num(t, "908"), euro()), 999, "FALSE"},
		{"= decimal constant", call(t, "=", euro(), num(t, "907.092")), 999, "TRUE"},
		{"<> decimal constant", call(t, "<>", euro(), num(t, "907.092")), 999, "FALSE"},
		{"= constant of more digits", call(t, "=", euro(), num(t, "0.9080")), 1, "TRUE"},
		{"< constant of more digits", call(t, "<", euro(), num(t, "0.9081")), 1, "TRUE"},
		{"> constant of more digits", call(t, ">", euro(), num(t, "0.9079")), 1, "TRUE"},
		{"negative", call(t, "<", euro(), num(t, "-4.539")), -5, "TRUE"},
		{"past int64", call(t, ">", euro(), num(t, "1000000")), math.MaxInt64, "TRUE"},
		{"big.Int operand", call(t, ">", wide, num(t, "5")), 0, "TRUE"},
		{"big.Int operand, left constant", call(t, ">=", num(t, "5"), wide), 0, "FALSE"},
	} {
		row := types.Row{types.Int(c.price), tenPow20}
		got, err := evalStr(t, c.e, row, utc)
		if err != nil || got != c.want {
			t.Errorf("%s: %s at price %d = %q, %v; want %q", c.name, c.e, c.price, got, err, c.want)
		}
	}
	gt := call(t, ">", euro(), num(t, "1000000"))
	if got, _ := evalStr(t, gt, types.Row{types.Value{}}, utc); got != "NULL" {
		t.Errorf("%s of a NULL price = %s, want NULL", gt, got)
	}
	k, ok := NewProjector([]Expr{gt}, utc).evals[0].(*decCmpConstEval)
	if !ok {
		t.Fatalf("%s does not compile to *decCmpConstEval", gt)
	}
	if k.scale != 3 || k.c != 1_000_000_000 {
		t.Errorf("%s: constant pre-scaled to %d at scale %d, want 1000000000 at 3", gt, k.c, k.scale)
	}
}

func isDecArithConst(e evaluator) bool { _, ok := e.(*decArithConstEval); return ok }
