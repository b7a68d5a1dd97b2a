package sqltext

import (
	"math"
	"math/big"
	"reflect"
	"testing"

	"github.com/flinksql/flinksql/types"
)

func TestAppendJavaDecimal(t *testing.T) {
	big38, _ := new(big.Int).SetString("12345678901234567890123456789012345670", 10)
	cases := []struct {
		v          types.Value
		sci, plain string
	}{
		{types.DecimalFromUnscaled(123456789, 6), "123.456789", "123.456789"},
		{types.DecimalFromUnscaled(1250, 2), "12.5", "12.5"},
		{types.DecimalFromUnscaled(10000, 2), "1E+2", "100"},
		{types.DecimalFromUnscaled(-10, 1), "-1", "-1"},
		{types.DecimalFromUnscaled(0, 5), "0", "0"},
		{types.DecimalFromUnscaled(27, 9), "2.7E-8", "0.000000027"},
		{types.DecimalFromUnscaled(1, 6), "0.000001", "0.000001"}, // adjusted exponent -6 stays plain
		{types.DecimalFromUnscaled(1, 7), "1E-7", "0.0000001"},
		{types.DecimalFromUnscaled(math.MinInt64, 0), "-9223372036854775808", "-9223372036854775808"},
		// A positive scale after stripping keeps plain notation however large.
		{types.DecimalFromBig(big38, 2), "123456789012345678901234567890123456.7", "123456789012345678901234567890123456.7"},
		{types.DecimalFromBig(big38, 0), "1.234567890123456789012345678901234567E+37", "12345678901234567890123456789012345670"},
	}
	for _, c := range cases {
		if got := string(AppendJavaDecimal(nil, c.v, false)); got != c.sci {
			t.Errorf("%+v: got %s, want %s", c.v, got, c.sci)
		}
		if got := string(AppendJavaDecimal(nil, c.v, true)); got != c.plain {
			t.Errorf("%+v plain: got %s, want %s", c.v, got, c.plain)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	big20, _ := new(big.Int).SetString("-12345678901234567891", 10)
	cases := []struct {
		in    string
		p, s  int
		want  types.Value
		state int
	}{
		{"1.5", 10, 2, types.DecimalFromUnscaled(150, 2), DecimalOK},
		{"+.5", 10, 0, types.DecimalFromUnscaled(1, 0), DecimalOK}, // HALF_UP
		{"-0.5", 10, 0, types.DecimalFromUnscaled(-1, 0), DecimalOK},
		{"0.049", 10, 1, types.DecimalFromUnscaled(0, 1), DecimalOK},
		{"5.", 3, 0, types.DecimalFromUnscaled(5, 0), DecimalOK},
		{"1e-2", 5, 2, types.DecimalFromUnscaled(1, 2), DecimalOK},
		{"000123", 3, 0, types.DecimalFromUnscaled(123, 0), DecimalOK},
		{"-1234567890123456789.05", 20, 1, types.DecimalFromBig(big20, 1), DecimalOK},
		{"1234", 3, 0, types.Value{}, DecimalOverflow},
		{"1e400", 38, 0, types.Value{}, DecimalOverflow},
		{"1e-400", 38, 2, types.DecimalFromUnscaled(0, 2), DecimalOK},
		{"1.2.3", 10, 0, types.Value{}, DecimalSyntax},
		{"", 10, 0, types.Value{}, DecimalSyntax},
		{"e5", 10, 0, types.Value{}, DecimalSyntax},
	}
	for _, c := range cases {
		got, state := ParseDecimal([]byte(c.in), c.p, c.s)
		if state != c.state || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseDecimal(%q, %d, %d) = %+v, %d; want %+v, %d", c.in, c.p, c.s, got, state, c.want, c.state)
		}
	}
}

func TestParseJavaNumbers(t *testing.T) {
	ints := []struct {
		in   string
		bits int
		want int64
		ok   bool
	}{
		{"127", 8, 127, true}, {"-128", 8, -128, true}, {"128", 8, 0, false},
		{"+5", 32, 5, true}, {"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false}, {"1_000", 32, 0, false}, {"", 32, 0, false}, {"-", 32, 0, false},
	}
	for _, c := range ints {
		got, ok := ParseJavaInt([]byte(c.in), c.bits)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseJavaInt(%q, %d) = %d, %v; want %d, %v", c.in, c.bits, got, ok, c.want, c.ok)
		}
	}
	floats := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"1.5d", 1.5, true}, {".5", 0.5, true}, {"1e400", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true}, {"inf", 0, false}, {"1_0", 0, false}, {"0x10", 0, false}, {"", 0, false},
	}
	for _, c := range floats {
		got, ok := ParseJavaFloat([]byte(c.in), 64)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseJavaFloat(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if !ParseJavaBool([]byte("tRuE")) || ParseJavaBool([]byte("yes")) {
		t.Error("ParseJavaBool")
	}
}

func TestTemporal(t *testing.T) {
	// 2020-02-29 is day 18321: 18262 days to 2020-01-01 (50 years, 12 leap
	// days) plus 31 + 28.
	if d, rest, ok := ParseISODate([]byte("2020-02-29"), true); !ok || d != 18321 || len(rest) != 0 {
		t.Errorf("leap day: %d %v", d, ok)
	}
	if _, _, ok := ParseISODate([]byte("2019-02-29"), true); ok {
		t.Error("2019-02-29 accepted in strict mode")
	}
	if d, _, ok := ParseISODate([]byte("2019-02-30"), false); !ok || d != 17955 { // clamped to 2019-02-28
		t.Errorf("smart clamp: %d %v", d, ok)
	}
	if d, ok := ParseJavaSQLDate([]byte("2019-2-30")); !ok || d != 17957 { // rolls over to 2019-03-02
		t.Errorf("java.sql.Date roll-over: %d %v", d, ok)
	}
	if _, _, ok := ParseTime([]byte("12:30"), SQLTime); ok {
		t.Error("SQL time without seconds accepted")
	}
	if n, _, ok := ParseTime([]byte("12:30"), ISOTime); !ok || n != 45000e9 {
		t.Errorf("ISO time without seconds: %d %v", n, ok)
	}
	if n, _, ok := ParseTime([]byte("00:00:00.000000001"), SQLTime); !ok || n != 1 {
		t.Errorf("nanosecond: %d %v", n, ok)
	}
	if ms, nano, ok := ParseTimestamp([]byte("1969-12-31 23:59:59.9999999Z"), ' ', SQLTime, true); !ok || ms != -1 || nano != 999900 {
		t.Errorf("before epoch: %d %d %v", ms, nano, ok)
	}
	for nanos, want := range map[int64]string{
		0: "00:00:00", 1: "00:00:00.000000001", 100e6: "00:00:00.1", 86399e9 + 120e6: "23:59:59.12",
	} {
		if got := string(AppendLocalTime(nil, nanos)); got != want {
			t.Errorf("AppendLocalTime(%d) = %s, want %s", nanos, got, want)
		}
	}
	for days, want := range map[int64]string{0: "1970-01-01", -719162: "0001-01-01", 2932897: "+10000-01-01", -719528: "0000-01-01"} {
		if got := string(AppendISODate(nil, days)); got != want {
			t.Errorf("AppendISODate(%d) = %s, want %s", days, got, want)
		}
	}
}
