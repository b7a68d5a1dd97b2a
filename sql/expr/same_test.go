package expr

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestProjectorSharesRepeatedExpressions: a planner repeats a FILTER
// condition once per aggregate (q15's price < 10000 three times); the
// Projector evaluates it once and copies the value, and keeps expressions
// that differ only in a constant, a column or a non-deterministic call apart.
func TestProjectorSharesRepeatedExpressions(t *testing.T) {
	bid := types.RowType(types.Field{Name: "auction", Type: types.BigIntType}, types.Field{Name: "price", Type: types.BigIntType})
	row := Column(0, "bid", bid)
	price := func() Expr { return call(t, "DOT", row, FieldSymbol("price")) }
	auction := call(t, "DOT", row, FieldSymbol("auction"))
	low := func() Expr { return call(t, "<", price(), num(t, "10000")) }
	mid := func() Expr {
		return call(t, "AND", call(t, ">=", price(), num(t, "10000")), call(t, "<", price(), num(t, "1000000")))
	}
	exprs := []Expr{
		low(),                                  // 0
		mid(),                                  // 1
		low(),                                  // 2: as 0
		call(t, "<", price(), num(t, "10001")), // 3: another constant
		call(t, "<", auction, num(t, "10000")), // 4: another field
		mid(),                                  // 5: as 1
		call(t, "RAND"),                        // 6
		call(t, "RAND"),                        // 7: not shared
		Column(1, "x", types.BigIntType),       // 8: a copy, never shared
		Column(1, "x", types.BigIntType),       // 9
	}
	p := NewProjector(exprs, nil)
	wantSame := []int{-1, -1, 0, -1, -1, 1, -1, -1, -1, -1}
	for i, w := range wantSame {
		if p.same[i] != w {
			t.Errorf("output %d (%s): shares %d, want %d", i, exprs[i], p.same[i], w)
		}
	}
	// price 10000: not < 10000, in [10000, 1000000), < 10001; auction 5 < 10000.
	in := types.Row{types.RowValue(types.Row{types.Int(5), types.Int(10000)}), types.Int(3)}
	out := make(types.Row, len(exprs))
	if err := p.Project(in, out); err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, false, true, true, true}
	for i, w := range want {
		if out[i].K != types.KindBool || out[i].Bool() != w {
			t.Errorf("output %d (%s) = %v, want %v", i, exprs[i], out[i], w)
		}
	}
	if out[8].N != 3 || out[9].N != 3 {
		t.Errorf("copied columns = %v, %v, want 3, 3", out[8], out[9])
	}
	// A NULL bid row makes every comparison on its fields NULL.
	in[0] = types.NullValue
	if err := p.Project(in, out); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !out[i].IsNull() {
			t.Errorf("output %d (%s) of a NULL row = %v, want NULL", i, exprs[i], out[i])
		}
	}
}

// TestIntCmpOnRowField: an integer field of a ROW column compared with a
// constant takes the fast path and keeps SQL's NULL rules.
func TestIntCmpOnRowField(t *testing.T) {
	bid := types.RowType(types.Field{Name: "price", Type: types.BigIntType})
	e := call(t, ">=", call(t, "DOT", Column(0, "bid", bid), FieldSymbol("price")), num(t, "1000000"))
	c := &compiler{ctx: newEvalCtx(nil)}
	ev := c.compileExpr(e)
	if _, ok := ev.(*intCmpDotConst); !ok {
		t.Fatalf("compiled to %T, want *intCmpDotConst", ev)
	}
	for _, tc := range []struct {
		in   types.Value
		want string
	}{
		{types.RowValue(types.Row{types.Int(999999)}), "false"},
		{types.RowValue(types.Row{types.Int(1000000)}), "true"},
		{types.RowValue(types.Row{types.Int(-5)}), "false"},
		{types.RowValue(types.Row{types.NullValue}), "null"},
		{types.NullValue, "null"},
	} {
		v, err := ev.eval(types.Row{tc.in})
		if err != nil {
			t.Fatal(err)
		}
		got := "null"
		if !v.IsNull() {
			got = "false"
			if v.Bool() {
				got = "true"
			}
		}
		if got != tc.want {
			t.Errorf("%v >= 1000000 = %s, want %s", tc.in, got, tc.want)
		}
	}
	if _, err := ev.eval(types.Row{}); err == nil {
		t.Error("a missing column gave no error")
	}
}

// TestProjectorReadsRowFields: fields of a ROW column are read by the
// Projector itself, next to plain column copies, with NULL for a NULL row
// and the error of a column past the row's end.
func TestProjectorReadsRowFields(t *testing.T) {
	bid := types.RowType(types.Field{Name: "auction", Type: types.BigIntType}, types.Field{Name: "extra", Type: types.StringType})
	row := Column(0, "bid", bid)
	exprs := []Expr{
		call(t, "DOT", row, FieldSymbol("extra")),
		Column(1, "x", types.BigIntType),
		call(t, "DOT", row, FieldSymbol("auction")),
	}
	p := NewProjector(exprs, nil)
	if p.dots[0] != 1 || p.dots[2] != 0 || p.cols[0] != 0 || p.dots[1] != -1 {
		t.Fatalf("dots %v, cols %v: want the fields read directly", p.dots, p.cols)
	}
	out := make(types.Row, len(exprs))
	in := types.Row{types.RowValue(types.Row{types.Int(1001), types.String("abc")}), types.Int(3)}
	if err := p.Project(in, out); err != nil {
		t.Fatal(err)
	}
	if out[0].S != "abc" || out[1].N != 3 || out[2].K != types.KindInt || out[2].N != 1001 {
		t.Errorf("projected %v, want [abc 3 1001]", out)
	}
	in[0] = types.NullValue
	if err := p.Project(in, out); err != nil {
		t.Fatal(err)
	}
	if !out[0].IsNull() || !out[2].IsNull() || out[1].N != 3 {
		t.Errorf("projected %v of a NULL bid, want [NULL 3 NULL]", out)
	}
	// A row too short for the column fails as the evaluator does.
	if err := NewProjector(exprs[:1], nil).Project(types.Row{}, out[:1]); err == nil {
		t.Error("a field of column 0 of an empty row: no error")
	}
}
