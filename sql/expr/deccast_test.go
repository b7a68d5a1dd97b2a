package expr

import (
	"math"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestCastCompactDecimal casts DECIMAL columns (evaluated per row, not
// folded) to other precisions and scales: kept, scaled up in int64, scaled
// up past int64, rounded half up, and NULL when the value does not fit.
func TestCastCompactDecimal(t *testing.T) {
	for _, c := range []struct {
		p, s     int // the column's type
		unscaled int64
		toP, toS int
		want     string
	}{
		{23, 3, math.MaxInt64, 23, 3, "9223372036854775.807"},
		{23, 3, math.MaxInt64, 19, 3, "9223372036854775.807"}, // 19 digits fit DECIMAL(19, 3)
		{23, 3, math.MaxInt64, 18, 3, "NULL"},
		{23, 3, -math.MaxInt64, 19, 3, "-9223372036854775.807"},
		{10, 2, 12345, 23, 3, "123.450"},
		{10, 2, -12345, 6, 3, "-123.450"},
		{10, 2, -12345, 5, 3, "NULL"}, // 123450 has six digits
		{20, 3, math.MaxInt64, 25, 5, "9223372036854775.80700"},
		{10, 3, 1235, 10, 2, "1.24"}, // 1.235 half up
		{10, 3, -1235, 10, 2, "-1.24"},
		{4, 3, 908, 23, 3, "0.908"},
	} {
		col := Column(0, "d", types.DecimalType(c.p, c.s))
		e := cast(t, col, types.DecimalType(c.toP, c.toS))
		got, err := evalStr(t, e, types.Row{types.DecimalFromUnscaled(c.unscaled, c.s)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("CAST(%d E-%d AS DECIMAL(%d, %d)) = %s, want %s", c.unscaled, c.s, c.toP, c.toS, got, c.want)
		}
	}
}
