package types

import (
	"math"
	"testing"
	"time"
	_ "time/tzdata" // the test must not depend on the machine having zoneinfo
)

func TestFormatSQL(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatalf("time zone data: %v", err)
	}
	cases := []struct {
		v    Value
		t    Type
		loc  *time.Location
		want string
	}{
		{Bool(true), BooleanType, nil, "TRUE"},
		{Int(-42), IntType, nil, "-42"},
		{DecimalFromUnscaled(12345, 2), DecimalType(10, 2), nil, "123.45"},
		{DecimalFromUnscaled(-5, 2), DecimalType(10, 2), nil, "-0.05"},
		{DecimalFromUnscaled(math.MinInt64, 0), DecimalType(19, 0), nil, "-9223372036854775808"},
		{Float(1e10), DoubleType, nil, "1.0E10"},
		{Float(0.1), DoubleType, nil, "0.1"},
		{Float(100), DoubleType, nil, "100.0"},
		{Float(1.5e-5), DoubleType, nil, "1.5E-5"},
		{Int(19723), DateType, nil, "2024-01-01"},                                          // 2024-01-01 is day 19723
		{TimestampMillis(1704067200123), TimestampType(3), nil, "2024-01-01 00:00:00.123"}, // 1704067200 s = 2024-01-01T00:00Z
		{TimestampMillis(1704067200000), TimestampType(0), nil, "2024-01-01 00:00:00"},
		{TimestampMillis(1704067200000), TimestampLTZType(3), ny, "2023-12-31 19:00:00.000"},
		{TimestampMillis(-1), TimestampType(3), nil, "1969-12-31 23:59:59.999"},
		{Int(3723000), TimeType(0), nil, "01:02:03"},
		{NullValue, IntType, nil, "NULL"},
	}
	for _, c := range cases {
		if got := FormatSQL(c.v, c.t, c.loc); got != c.want {
			t.Errorf("FormatSQL(%v, %s) = %q, want %q", c.v, c.t, got, c.want)
		}
	}
}

func TestFormatJava(t *testing.T) {
	cases := []struct {
		v    Value
		t    Type
		want string
	}{
		{Bool(false), BooleanType, "false"},
		{TimestampMillis(1704067200000), TimestampType(3), "2024-01-01T00:00"},
		{TimestampMillis(1704067205000), TimestampType(3), "2024-01-01T00:00:05"},
		{TimestampMillis(1704067205500), TimestampType(3), "2024-01-01T00:00:05.500"},
		{TimestampMillis(1704067200000), TimestampLTZType(3), "2024-01-01T00:00:00Z"},
		{NullValue, StringType, "null"},
		{Float(2.5), DoubleType, "2.5"},
	}
	for _, c := range cases {
		if got := FormatJava(c.v, c.t); got != c.want {
			t.Errorf("FormatJava(%v, %s) = %q, want %q", c.v, c.t, got, c.want)
		}
	}
}

func TestCivilRoundTrip(t *testing.T) {
	for _, d := range []int64{-719528, -1, 0, 1, 19723, 2932896} {
		y, m, dd := CivilFromDays(d)
		if back := DaysFromCivil(y, m, dd); back != d {
			t.Errorf("day %d -> %d-%d-%d -> %d", d, y, m, dd, back)
		}
	}
	if y, m, d := CivilFromDays(0); y != 1970 || m != 1 || d != 1 {
		t.Errorf("epoch = %d-%d-%d", y, m, d)
	}
	if y, m, d := CivilFromDays(-719528); y != 0 || m != 1 || d != 1 {
		t.Errorf("day -719528 = %d-%d-%d, want 0-1-1", y, m, d)
	}
}

func TestBatchGrowKeepsRows(t *testing.T) {
	b := NewBatch(2, 1)
	for i := int64(0); i < 5; i++ {
		r := b.Append(Insert)
		r[0], r[1] = Int(i), String("x")
	}
	for i, r := range b.Rows {
		if r[0].Int() != int64(i) || r[1].Str() != "x" {
			t.Fatalf("row %d = %v", i, r)
		}
	}
	b.Reset()
	if b.Len() != 0 || !b.Append(Delete)[0].IsNull() {
		t.Fatal("reset batch must hand out NULL rows")
	}
}

func TestCompareAndHash(t *testing.T) {
	if Compare(NullValue, Int(1)) >= 0 || Compare(Int(2), Int(1)) <= 0 {
		t.Error("NULL must sort first, 2 after 1")
	}
	if Compare(DecimalFromUnscaled(150, 2), Int(1)) <= 0 || Compare(DecimalFromUnscaled(100, 2), Int(1)) != 0 {
		t.Error("1.50 > 1 and 1.00 == 1")
	}
	if Hash(0, String("abc")) != Hash(0, String("abc")) || Hash(0, String("abc")) == Hash(0, String("abd")) {
		t.Error("hash must be deterministic and spread")
	}
	if Hash(0, Float(0)) != Hash(0, Float(math.Copysign(0, -1))) {
		t.Error("-0.0 and 0.0 must hash alike")
	}
}
