package postgrescdc

import (
	"math"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestParseText: PostgreSQL's text output (TimeZone UTC, DateStyle ISO,
// bytea hex) into Flink values; the expected values are worked out by hand.
func TestParseText(t *testing.T) {
	dec := types.DecimalType(5, 2)
	cases := []struct {
		typ  types.Type
		text string
		want types.Value
	}{
		{types.BooleanType, "t", types.Bool(true)},
		{types.BooleanType, "f", types.Bool(false)},
		{types.SmallIntType, "-32768", types.Int(-32768)},
		{types.IntType, "2147483647", types.Int(2147483647)},
		{types.BigIntType, "-9223372036854775808", types.Int(math.MinInt64)},
		{types.DoubleType, "1.5e-07", types.Float(1.5e-7)},
		{types.DoubleType, "-Infinity", types.Float(math.Inf(-1))},
		{types.FloatType, "NaN", types.Float(math.NaN())},
		{dec, "123.455", types.DecimalFromUnscaled(12346, 2)}, // HALF_UP
		{dec, "-0.5", types.DecimalFromUnscaled(-50, 2)},
		{dec, "1000.00", types.NullValue}, // 6 digits > precision 5: NULL, as Flink's casts
		{types.StringType, "héllo", types.String("héllo")},
		{types.BytesType, `\x00ff10`, types.Bytes([]byte{0, 0xff, 0x10})},
		// 2024-02-29: 19782 days after 1970-01-01 (54 years of 365 days = 19710, plus 13 leap days to 2023, plus 59 days).
		{types.DateType, "2024-02-29", types.Int(19782)},
		{types.TimeType(3), "13:14:15.678", types.Int(13*3600000 + 14*60000 + 15678)},
		{types.TimestampType(6), "2024-01-02 03:04:05.123456", types.Timestamp(1704164645123, 456000)},
		{types.TimestampLTZType(6), "2024-01-02 03:04:05.5+00", types.Timestamp(1704164645500, 0)},
		// 08:34:05.5 at +05:30 is 03:04:05.5 UTC; 22:04:05.5 at -05 is too.
		{types.TimestampLTZType(3), "2024-01-02 08:34:05.5+05:30", types.Timestamp(1704164645500, 0)},
		{types.TimestampLTZType(3), "2024-01-01 22:04:05.5-05", types.Timestamp(1704164645500, 0)},
	}
	for _, c := range cases {
		got, err := parseText(c.typ, []byte(c.text))
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.text, err)
			continue
		}
		if c.want.K == types.KindFloat && math.IsNaN(c.want.Float()) {
			if !math.IsNaN(got.Float()) {
				t.Errorf("%s %q = %v, want NaN", c.typ, c.text, got)
			}
			continue
		}
		if got.IsNull() != c.want.IsNull() || (!got.IsNull() && types.Compare(got, c.want) != 0) {
			t.Errorf("%s %q = %+v, want %+v", c.typ, c.text, got, c.want)
		}
	}
	for _, c := range []struct {
		typ  types.Type
		text string
	}{
		{types.BooleanType, "yes"},
		{types.TinyIntType, "300"},
		{types.IntType, "2147483648"},
		{types.DateType, "infinity"},
		{types.DateType, "2024-02-30"},
		{types.TimestampType(3), "2024-01-02 03:04:05 BC"},
		{types.TimestampLTZType(3), "2024-01-02 03:04:05"},
		{types.BytesType, "plain"},
		{dec, "NaN"},
	} {
		if v, err := parseText(c.typ, []byte(c.text)); err == nil || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s %q = %v, %v: want an error naming the text", c.typ, c.text, v, err)
		}
	}
}
