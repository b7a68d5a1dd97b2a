package expr

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// BenchmarkProjectFilter measures WHERE amount > 10 with SELECT id, amount * 2, name.
func BenchmarkProjectFilter(b *testing.B) {
	id := Column(0, "id", types.BigIntType.WithNullable(false))
	amount := Column(1, "amount", types.IntType)
	name := Column(2, "name", types.StringType)
	ten, _ := NumericLiteral("10")
	two, _ := NumericLiteral("2")
	cond, err := Call(">", amount, ten)
	if err != nil {
		b.Fatal(err)
	}
	times, err := Call("*", amount, two)
	if err != nil {
		b.Fatal(err)
	}
	pred := NewPredicate(cond, utc)
	proj := NewProjector([]Expr{id, times, name}, utc)
	rows := make([]types.Row, 1024)
	for i := range rows {
		rows[i] = types.Row{types.Int(int64(i)), types.Int(int64(i % 20)), types.String("name")}
	}
	out := make(types.Row, 3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := rows[i&1023]
		ok, err := pred.Test(r)
		if err != nil {
			b.Fatal(err)
		}
		_ = ok // project every row so the figure covers both steps
		if err := proj.Project(r, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecimalAdd measures DECIMAL(10, 2) + DECIMAL(10, 2).
func BenchmarkDecimalAdd(b *testing.B) {
	x := Column(0, "x", types.DecimalType(10, 2))
	e, err := Call("+", x, x)
	if err != nil {
		b.Fatal(err)
	}
	proj := NewProjector([]Expr{e}, utc)
	row := types.Row{types.DecimalFromUnscaled(12345, 2)}
	out := make(types.Row, 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := proj.Project(row, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLike measures a prefix LIKE on a string column.
func BenchmarkLike(b *testing.B) {
	s := Column(0, "s", types.StringType)
	e, err := Call("LIKE", s, StringLiteral("abc%"))
	if err != nil {
		b.Fatal(err)
	}
	pred := NewPredicate(e, utc)
	row := types.Row{types.String("abcdef")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := pred.Test(row); err != nil {
			b.Fatal(err)
		}
	}
}
