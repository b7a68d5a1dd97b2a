package expr

import (
	"math"
	"regexp/syntax"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/flinksql/flinksql/types"
)

var utc = &Config{Loc: time.UTC, Now: func() time.Time { return time.Date(2024, 3, 15, 10, 30, 45, 123e6, time.UTC) }}

func num(t *testing.T, s string) Expr {
	t.Helper()
	e, err := NumericLiteral(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func str(s string) Expr { return StringLiteral(s) }

func call(t *testing.T, name string, args ...Expr) Expr {
	t.Helper()
	e, err := Call(name, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return e
}

func typed(t *testing.T, typ, text string) Expr {
	t.Helper()
	e, err := TypedLiteral(typ, text)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cast(t *testing.T, e Expr, to types.Type) Expr {
	t.Helper()
	c, err := Cast(e, to, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// evalStr evaluates e over row and renders the result as CAST(… AS STRING) would.
func evalStr(t *testing.T, e Expr, row types.Row, cfg *Config) (string, error) {
	t.Helper()
	out := make(types.Row, 1)
	if err := NewProjector([]Expr{e}, cfg).Project(row, out); err != nil {
		return "", err
	}
	loc := time.UTC
	if cfg != nil && cfg.Loc != nil {
		loc = cfg.Loc
	}
	return types.FormatSQL(out[0], e.Type(), loc), nil
}

type evalCase struct {
	name string
	e    Expr
	want string
	typ  string // expected result type, checked when set
}

func runCases(t *testing.T, cases []evalCase, row types.Row, cfg *Config) {
	t.Helper()
	for _, c := range cases {
		got, err := evalStr(t, c.e, row, cfg)
		if err != nil {
			t.Errorf("%s: %s: unexpected error %v", c.name, c.e, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: %s = %q, want %q", c.name, c.e, got, c.want)
		}
		if c.typ != "" && c.e.Type().String() != c.typ {
			t.Errorf("%s: %s has type %s, want %s", c.name, c.e, c.e.Type(), c.typ)
		}
	}
}

func TestThreeValuedLogic(t *testing.T) {
	T, F, N := BoolLiteral(true), BoolLiteral(false), NullLiteral(types.BooleanType)
	vals := map[string]Expr{"T": T, "F": F, "N": N}
	and := map[string]string{"TT": "TRUE", "TF": "FALSE", "TN": "NULL", "FT": "FALSE", "FF": "FALSE", "FN": "FALSE", "NT": "NULL", "NF": "FALSE", "NN": "NULL"}
	or := map[string]string{"TT": "TRUE", "TF": "TRUE", "TN": "TRUE", "FT": "TRUE", "FF": "FALSE", "FN": "NULL", "NT": "TRUE", "NF": "NULL", "NN": "NULL"}
	var cases []evalCase
	for k, want := range and {
		cases = append(cases, evalCase{name: "AND " + k, e: call(t, "AND", vals[k[:1]], vals[k[1:]]), want: want})
	}
	for k, want := range or {
		cases = append(cases, evalCase{name: "OR " + k, e: call(t, "OR", vals[k[:1]], vals[k[1:]]), want: want})
	}
	isTests := []struct {
		op   string
		t, f string
		n    string
	}{
		{"IS NULL", "FALSE", "FALSE", "TRUE"},
		{"IS NOT NULL", "TRUE", "TRUE", "FALSE"},
		{"IS TRUE", "TRUE", "FALSE", "FALSE"},
		{"IS NOT TRUE", "FALSE", "TRUE", "TRUE"},
		{"IS FALSE", "FALSE", "TRUE", "FALSE"},
		{"IS NOT FALSE", "TRUE", "FALSE", "TRUE"},
		{"IS UNKNOWN", "FALSE", "FALSE", "TRUE"},
	}
	for _, it := range isTests {
		cases = append(cases,
			evalCase{name: it.op + " T", e: call(t, it.op, T), want: it.t, typ: "BOOLEAN NOT NULL"},
			evalCase{name: it.op + " F", e: call(t, it.op, F), want: it.f},
			evalCase{name: it.op + " N", e: call(t, it.op, N), want: it.n})
	}
	cases = append(cases,
		evalCase{"NOT T", call(t, "NOT", T), "FALSE", "BOOLEAN NOT NULL"},
		evalCase{"NOT N", call(t, "NOT", N), "NULL", "BOOLEAN"},
		evalCase{"1 = NULL", call(t, "=", num(t, "1"), NullLiteral(types.IntType)), "NULL", "BOOLEAN"},
		evalCase{"NULL <> 1", call(t, "<>", NullLiteral(types.NullType), num(t, "1")), "NULL", ""},
		evalCase{"1 DISTINCT NULL", call(t, "IS DISTINCT FROM", num(t, "1"), NullLiteral(types.IntType)), "TRUE", "BOOLEAN NOT NULL"},
		evalCase{"NULL DISTINCT NULL", call(t, "IS DISTINCT FROM", NullLiteral(types.IntType), NullLiteral(types.IntType)), "FALSE", ""},
		evalCase{"NULL NOT DISTINCT NULL", call(t, "IS NOT DISTINCT FROM", NullLiteral(types.IntType), NullLiteral(types.IntType)), "TRUE", ""},
		evalCase{"1 NOT DISTINCT 1.0", call(t, "IS NOT DISTINCT FROM", num(t, "1"), num(t, "1.0")), "TRUE", ""},
		evalCase{"IN hit", call(t, "IN", num(t, "2"), num(t, "1"), num(t, "2")), "TRUE", "BOOLEAN NOT NULL"},
		evalCase{"IN miss with NULL", call(t, "IN", num(t, "3"), num(t, "1"), NullLiteral(types.IntType)), "NULL", ""},
		evalCase{"IN hit with NULL", call(t, "IN", num(t, "1"), num(t, "1"), NullLiteral(types.IntType)), "TRUE", ""},
		evalCase{"NOT IN miss", call(t, "NOT IN", num(t, "3"), num(t, "1"), num(t, "2")), "TRUE", ""},
		evalCase{"NOT IN with NULL", call(t, "NOT IN", num(t, "3"), num(t, "1"), NullLiteral(types.IntType)), "NULL", ""},
		evalCase{"IN strings", call(t, "IN", str("b"), str("a"), str("bb"), str("b")), "TRUE", ""},
		evalCase{"BETWEEN", call(t, "BETWEEN", num(t, "5"), num(t, "1"), num(t, "5")), "TRUE", ""},
		evalCase{"NOT BETWEEN", call(t, "NOT BETWEEN", num(t, "5"), num(t, "1"), num(t, "4")), "TRUE", ""},
	)
	runCases(t, cases, nil, utc)
}

func TestArithmeticTyping(t *testing.T) {
	row := types.Row{types.Int(2147483647), types.Int(10), types.DecimalFromUnscaled(1234, 2), types.Float(2.5), types.Int(120)}
	a := Column(0, "a", types.IntType.WithNullable(false))
	b := Column(1, "b", types.BigIntType)
	d := Column(2, "d", types.DecimalType(5, 2))
	f := Column(3, "f", types.DoubleType)
	ti := Column(4, "ti", types.TinyIntType.WithNullable(false))
	cases := []evalCase{
		{"int overflow wraps", call(t, "+", a, num(t, "1")), "-2147483648", "INT NOT NULL"},
		{"int*int wraps", call(t, "*", a, num(t, "2")), "-2", "INT NOT NULL"},
		{"int+bigint", call(t, "+", a, b), "2147483657", "BIGINT"},
		{"int/int", call(t, "/", num(t, "7"), num(t, "2")), "3", "INT NOT NULL"},
		{"neg int/int truncates", call(t, "/", num(t, "-7"), num(t, "2")), "-3", "INT NOT NULL"},
		{"mod", call(t, "MOD", num(t, "-7"), num(t, "3")), "-1", "INT NOT NULL"},
		{"% alias", call(t, "%", num(t, "7"), num(t, "3")), "1", "INT NOT NULL"},
		{"tinyint wrap", call(t, "+", ti, ti), "-16", "TINYINT NOT NULL"},
		{"decimal+int", call(t, "+", d, num(t, "1")), "13.34", "DECIMAL(13, 2)"},
		{"decimal+decimal", call(t, "+", num(t, "1.5"), num(t, "2.25")), "3.75", "DECIMAL(4, 2) NOT NULL"},
		{"decimal*decimal", call(t, "*", num(t, "1.5"), num(t, "2.25")), "3.375", "DECIMAL(6, 3) NOT NULL"},
		{"decimal/int", call(t, "/", num(t, "1.0"), num(t, "3")), "0.333333333333", "DECIMAL(13, 12) NOT NULL"},
		{"decimal/ round half up", call(t, "/", num(t, "2.0"), num(t, "3")), "0.666666666667", ""},
		{"decimal/decimal", call(t, "/", num(t, "1.00"), num(t, "0.3")), "3.333333", "DECIMAL(8, 6) NOT NULL"},
		{"decimal-", call(t, "-", num(t, "1.5"), num(t, "2.25")), "-0.75", ""},
		{"double", call(t, "*", f, num(t, "2")), "5.0", "DOUBLE"},
		{"decimal+double", call(t, "+", d, f), "14.84", "DOUBLE"},
		{"double/0", call(t, "/", f, num(t, "0")), "Infinity", "DOUBLE"},
		{"negate", call(t, "NEGATE", b), "-10", "BIGINT"},
		{"negate decimal", call(t, "NEGATE", d), "-12.34", "DECIMAL(5, 2)"},
		{"compare int col", call(t, ">", b, num(t, "9")), "TRUE", "BOOLEAN"},
		{"compare int double", call(t, "<", num(t, "2"), num(t, "2.5e0")), "TRUE", ""},
		{"compare decimal int", call(t, "=", num(t, "2.00"), num(t, "2")), "TRUE", ""},
		{"compare string int", call(t, "=", str("10"), b), "TRUE", ""},
		{"char vs varchar", call(t, "=", str("abc"), cast(t, str("abc"), types.StringType)), "TRUE", ""},
		{"string order", call(t, "<", str("abc"), str("abd")), "TRUE", ""},
	}
	runCases(t, cases, row, utc)

	// Division by zero in integer arithmetic fails the record.
	if _, err := evalStr(t, call(t, "/", b, num(t, "0")), row, utc); err == nil || !strings.Contains(err.Error(), "by zero") {
		t.Errorf("integer division by zero: got %v", err)
	}
	if got := call(t, "+", a, num(t, "1")).String(); got != "+(a, 1)" {
		t.Errorf("String() = %q", got)
	}
	if got := call(t, ">", cast(t, a, types.BigIntType), num(t, "10")).String(); got != "CAST(a AS BIGINT) > 10" && got != ">(CAST(a AS BIGINT), 10)" {
		t.Errorf("String() = %q", got)
	}
}

func TestNumericLiteralTyping(t *testing.T) {
	for _, c := range []struct{ text, typ, val string }{
		{"1", "INT NOT NULL", "1"},
		{"2147483648", "BIGINT NOT NULL", "2147483648"},
		{"99999999999999999999", "DECIMAL(20, 0) NOT NULL", "99999999999999999999"},
		{"1.5", "DECIMAL(2, 1) NOT NULL", "1.5"},
		{"0.05", "DECIMAL(3, 2) NOT NULL", "0.05"},
		{"1e3", "DOUBLE NOT NULL", "1000.0"},
		{"1.5E-3", "DOUBLE NOT NULL", "0.0015"},
	} {
		e := num(t, c.text)
		if e.Type().String() != c.typ {
			t.Errorf("%s: type %s, want %s", c.text, e.Type(), c.typ)
		}
		got, _ := evalStr(t, e, nil, utc)
		if got != c.val {
			t.Errorf("%s: value %s, want %s", c.text, got, c.val)
		}
	}
	if e := str("abc"); e.Type().String() != "CHAR(3) NOT NULL" || e.String() != "'abc'" {
		t.Errorf("string literal: %s %s", e.Type(), e)
	}
	b, err := BinaryLiteral("0A1B")
	if err != nil || b.Type().String() != "BINARY(2) NOT NULL" {
		t.Errorf("binary literal: %v %v", b, err)
	}
}

func TestDecimalRounding(t *testing.T) {
	dec := func(text string) types.Value {
		v, ok := LiteralValue(num(t, text))
		if !ok {
			t.Fatalf("%s is not a literal", text)
		}
		return v
	}
	row := types.Row{dec("123.456"), types.Int(2), types.Int(-1), types.Int(5), dec("-123.456"), types.Int(-1000)}
	decCol := Column(0, "d", types.DecimalType(6, 3))
	digits := Column(1, "n", types.IntType)
	negDigits := Column(2, "m", types.IntType)
	manyDigits := Column(3, "k", types.IntType)
	negDecCol := Column(4, "e", types.DecimalType(6, 3))
	hugeNegDigits := Column(5, "h", types.IntType)
	cases := []evalCase{
		{"round half up", call(t, "ROUND", num(t, "2.345"), num(t, "2")), "2.35", "DECIMAL(4, 2) NOT NULL"},
		{"round negative half up", call(t, "ROUND", num(t, "-2.345"), num(t, "2")), "-2.35", ""},
		{"round to 0", call(t, "ROUND", num(t, "2.5")), "3", "DECIMAL(2, 0) NOT NULL"},
		{"round -1", call(t, "ROUND", num(t, "125"), num(t, "-1")), "130", "INT NOT NULL"},
		{"round double", call(t, "ROUND", num(t, "2.675e0"), num(t, "2")), "2.68", "DOUBLE NOT NULL"},
		{"truncate", call(t, "TRUNCATE", num(t, "2.349"), num(t, "2")), "2.34", ""},
		// With digits that are not a literal the type is the input's
		// (Flink: ROUND(decimal, variable) ==> decimal), the value cut or
		// rounded to the digits and shown at the input's scale.
		{"truncate column digits", call(t, "TRUNCATE", decCol, digits), "123.450", "DECIMAL(6, 3)"},
		{"round column digits", call(t, "ROUND", decCol, digits), "123.460", "DECIMAL(6, 3)"},
		{"truncate negative column digits", call(t, "TRUNCATE", decCol, negDigits), "120.000", "DECIMAL(6, 3)"},
		{"round negative column digits", call(t, "ROUND", decCol, negDigits), "120.000", ""},
		{"truncate more digits than the scale", call(t, "TRUNCATE", decCol, manyDigits), "123.456", ""},
		{"truncate negative value", call(t, "TRUNCATE", negDecCol, digits), "-123.450", ""},
		{"truncate huge column digits", call(t, "TRUNCATE", decCol, hugeNegDigits), "0.000", ""},
		{"cast decimal half up", cast(t, num(t, "1.25"), types.DecimalType(2, 1)), "1.3", "DECIMAL(2, 1) NOT NULL"},
		{"cast decimal overflow is null", cast(t, num(t, "123.4"), types.DecimalType(3, 1)), "NULL", ""},
		{"cast double to decimal", cast(t, num(t, "0.1e0"), types.DecimalType(10, 3)), "0.100", ""},
		{"floor decimal", call(t, "FLOOR", num(t, "-1.5")), "-2", ""},
		{"ceil decimal", call(t, "CEIL", num(t, "1.2")), "2", ""},
		{"abs", call(t, "ABS", num(t, "-1.25")), "1.25", "DECIMAL(3, 2) NOT NULL"},
		{"sign", call(t, "SIGN", num(t, "-7")), "-1", ""},
	}
	runCases(t, cases, row, utc)
}

func TestCasts(t *testing.T) {
	loc, _ := time.LoadLocation("Asia/Shanghai")
	sh := &Config{Loc: loc}
	cases := []evalCase{
		{"int to tinyint wraps", cast(t, num(t, "300"), types.TinyIntType), "44", "TINYINT NOT NULL"},
		{"double to int truncates", cast(t, num(t, "-2.7e0"), types.IntType), "-2", ""},
		{"decimal to int", cast(t, num(t, "9.99"), types.IntType), "9", ""},
		{"int to double", cast(t, num(t, "3"), types.DoubleType), "3.0", ""},
		{"int to string", cast(t, num(t, "42"), types.StringType), "42", "STRING NOT NULL"},
		{"bool to string", cast(t, BoolLiteral(true), types.StringType), "TRUE", ""},
		{"decimal to string", cast(t, num(t, "1.50"), types.StringType), "1.50", ""},
		{"string to int trims", cast(t, str(" 12 "), types.IntType), "12", ""},
		{"string to bigint", cast(t, str("-9000000000"), types.BigIntType), "-9000000000", ""},
		{"string to double", cast(t, str("1.5e2"), types.DoubleType), "150.0", ""},
		{"string to decimal", cast(t, str("3.14159"), types.DecimalType(5, 3)), "3.142", ""},
		{"string to bool yes", cast(t, str("yes"), types.BooleanType), "TRUE", ""},
		{"string to bool 0", cast(t, str("0"), types.BooleanType), "FALSE", ""},
		{"string to bool TRUE", cast(t, str("TRUE"), types.BooleanType), "TRUE", ""},
		{"int to bool", cast(t, num(t, "5"), types.BooleanType), "TRUE", ""},
		{"bool to int", cast(t, BoolLiteral(true), types.IntType), "1", ""},
		{"to char pads", cast(t, str("ab"), types.CharType(4)), "ab  ", "CHAR(4) NOT NULL"},
		{"to varchar truncates", cast(t, str("abcdef"), types.VarCharType(3)), "abc", ""},
		{"string to date", cast(t, str("2024-02-29"), types.DateType), "2024-02-29", ""},
		{"string to time", cast(t, str("12:34:56"), types.TimeType(0)), "12:34:56", ""},
		{"string to ts", cast(t, str("2024-01-02 03:04:05.123456"), types.TimestampType(3)), "2024-01-02 03:04:05.123", ""},
		{"string to ts iso T", cast(t, str("2024-01-02T03:04:05"), types.TimestampType(0)), "2024-01-02 03:04:05", ""},
		{"date to ts", cast(t, typed(t, "DATE", "2024-01-02"), types.TimestampType(3)), "2024-01-02 00:00:00.000", ""},
		{"ts to date", cast(t, typed(t, "TIMESTAMP", "2024-01-02 23:59:59"), types.DateType), "2024-01-02", ""},
		{"ts to time", cast(t, typed(t, "TIMESTAMP", "2024-01-02 23:59:59"), types.TimeType(0)), "23:59:59", ""},
		{"ts6 to ts3 truncates", cast(t, typed(t, "TIMESTAMP", "2024-01-02 00:00:00.123999"), types.TimestampType(3)), "2024-01-02 00:00:00.123", ""},
		{"ts to string", cast(t, typed(t, "TIMESTAMP", "2024-01-02 00:00:00.5"), types.StringType), "2024-01-02 00:00:00.5", ""},
		{"string to bytes", cast(t, str("hi"), types.BytesType), "x'6869'", ""},
		{"bytes to string", cast(t, cast(t, str("hé"), types.BytesType), types.StringType), "hé", ""},
		{"int to ltz seconds", cast(t, num(t, "86400"), types.TimestampLTZType(3)), "1970-01-02 00:00:00.000", ""},
	}
	runCases(t, cases, nil, utc)

	// TIMESTAMP → TIMESTAMP_LTZ uses the session zone: 08:00 in Shanghai is 00:00 UTC.
	ltz := cast(t, typed(t, "TIMESTAMP", "2024-01-02 08:00:00"), types.TimestampLTZType(0))
	if got, _ := evalStr(t, ltz, nil, sh); got != "2024-01-02 08:00:00" {
		t.Errorf("ltz in Shanghai shows %s", got)
	}
	if got, _ := evalStr(t, cast(t, ltz, types.StringType), nil, sh); got != "2024-01-02 08:00:00" {
		t.Errorf("ltz to string in Shanghai %s", got)
	}
	out := make(types.Row, 1)
	_ = NewProjector([]Expr{ltz}, sh).Project(nil, out)
	if want := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC).UnixMilli(); out[0].N != want {
		t.Errorf("ltz instant %d, want %d", out[0].N, want)
	}

	// Failures.
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{cast(t, str("abc"), types.IntType), "Failed to cast 'abc' to INT"},
		{cast(t, str("300"), types.TinyIntType), "Failed to cast '300' to TINYINT"},
		{cast(t, str("maybe"), types.BooleanType), "Failed to cast 'maybe' to BOOLEAN"},
		{cast(t, str("2024-13-01"), types.DateType), "Failed to cast '2024-13-01' to DATE"},
	} {
		_, err := evalStr(t, c.e, nil, utc)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.e, err, c.want)
		}
	}
	// TRY_CAST yields NULL instead.
	tc, err := Cast(str("abc"), types.IntType, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := evalStr(t, tc, nil, utc); err != nil || got != "NULL" || tc.Type().String() != "INT" || tc.String() != "TRY_CAST('abc' AS INT)" {
		t.Errorf("TRY_CAST: %q %v %s %s", got, err, tc.Type(), tc)
	}
	// Unsupported casts are validation errors.
	if _, err := Cast(BoolLiteral(true), types.DateType, false); err == nil || err.Error() != "Cast function cannot convert value of type BOOLEAN to type DATE" {
		t.Errorf("bool to date: %v", err)
	}
	if _, err := Cast(num(t, "1"), types.TimestampType(3), false); err == nil || err.Error() != "The cast conversion from NUMERIC type to TIMESTAMP type is not allowed, it's recommended to use TO_TIMESTAMP(FROM_UNIXTIME(numeric_col)) instead, note the numeric is in seconds." {
		t.Errorf("int to timestamp: %v", err)
	}
}

func TestStringFunctions(t *testing.T) {
	s := Column(0, "s", types.StringType)
	n := Column(1, "n", types.StringType)
	row := types.Row{types.String("Hello World"), types.Value{}}
	cases := []evalCase{
		{"upper", call(t, "UPPER", s), "HELLO WORLD", "STRING"},
		{"lower", call(t, "LOWER", str("AbC")), "abc", "CHAR(3) NOT NULL"},
		{"upper null", call(t, "UPPER", n), "NULL", ""},
		{"initcap", call(t, "INITCAP", str("hello wORLD")), "Hello World", ""},
		{"concat", call(t, "CONCAT", str("a"), str("b"), str("c")), "abc", ""},
		{"concat null", call(t, "CONCAT", str("a"), n), "NULL", ""},
		{"concat_ws skips null", call(t, "CONCAT_WS", str("-"), str("a"), n, str("c")), "a-c", ""},
		{"||", call(t, "||", str("ab"), str("c")), "abc", "CHAR(3) NOT NULL"},
		{"substring", call(t, "SUBSTRING", s, num(t, "1"), num(t, "5")), "Hello", ""},
		{"substring no len", call(t, "SUBSTRING", s, num(t, "7")), "World", ""},
		{"substring zero start", call(t, "SUBSTRING", s, num(t, "0"), num(t, "3")), "Hel", ""},
		{"substring negative start", call(t, "SUBSTRING", s, num(t, "-5")), "World", ""},
		{"substring negative start len", call(t, "SUBSTRING", s, num(t, "-5"), num(t, "2")), "Wo", ""},
		{"substring past end", call(t, "SUBSTRING", s, num(t, "20")), "", ""},
		{"char_length", call(t, "CHAR_LENGTH", str("héllo")), "5", "INT NOT NULL"},
		{"trim both", call(t, "TRIM", Symbol("BOTH"), str(" "), str("  ab  ")), "ab", ""},
		{"trim leading x", call(t, "TRIM", Symbol("LEADING"), str("x"), str("xxabx")), "abx", ""},
		{"trim trailing", call(t, "TRIM", Symbol("TRAILING"), str(" "), str(" ab ")), " ab", ""},
		{"ltrim", call(t, "LTRIM", str("  ab ")), "ab ", ""},
		{"rtrim", call(t, "RTRIM", str("  ab ")), "  ab", ""},
		{"replace", call(t, "REPLACE", s, str("o"), str("0")), "Hell0 W0rld", ""},
		{"regexp_replace", call(t, "REGEXP_REPLACE", str("foobar"), str("oo|ar"), str("")), "fb", ""},
		{"regexp_replace group", call(t, "REGEXP_REPLACE", str("2024-01-05"), str("(\\d+)-(\\d+)-(\\d+)"), str("$3/$2/$1")), "05/01/2024", ""},
		{"regexp_extract", call(t, "REGEXP_EXTRACT", str("foothebar"), str("foo(.*?)(bar)"), num(t, "2")), "bar", ""},
		// Without an index Flink returns the whole match (group 0).
		{"regexp_extract default is the whole match", call(t, "REGEXP_EXTRACT", str("foothebar"), str("foo(.*?)bar")), "foothebar", ""},
		{"regexp_extract default first match", call(t, "REGEXP_EXTRACT", str("abc123def456"), str("[0-9]+")), "123", ""},
		{"regexp_extract group 0", call(t, "REGEXP_EXTRACT", str("foothebar"), str("o(t)h"), num(t, "0")), "oth", ""},
		{"regexp_extract group out of range", call(t, "REGEXP_EXTRACT", str("foothebar"), str("o(t)h"), num(t, "2")), "NULL", ""},
		{"regexp_extract no match", call(t, "REGEXP_EXTRACT", str("abc"), str("x(y)")), "NULL", ""},
		{"regexp", call(t, "REGEXP", str("abc123"), str("[0-9]+")), "TRUE", ""},
		{"split_index", call(t, "SPLIT_INDEX", str("a,b,c"), str(","), num(t, "1")), "b", ""},
		{"split_index out of range", call(t, "SPLIT_INDEX", str("a,b,c"), str(","), num(t, "3")), "NULL", ""},
		{"split_index negative", call(t, "SPLIT_INDEX", str("a,b,c"), str(","), num(t, "-1")), "NULL", ""},
		{"position", call(t, "POSITION", str("lo"), s), "4", "INT"},
		{"position none", call(t, "POSITION", str("xyz"), s), "0", ""},
		{"locate from", call(t, "LOCATE", str("o"), s, num(t, "6")), "8", ""},
		{"lpad", call(t, "LPAD", str("hi"), num(t, "5"), str("ab")), "abahi", ""},
		{"lpad shorter", call(t, "LPAD", str("hi"), num(t, "1"), str("??")), "h", ""},
		{"rpad", call(t, "RPAD", str("hi"), num(t, "4"), str("x")), "hixx", ""},
		{"lpad negative", call(t, "LPAD", str("hi"), num(t, "-1"), str("x")), "NULL", ""},
		{"repeat", call(t, "REPEAT", str("ab"), num(t, "3")), "ababab", ""},
		{"repeat zero", call(t, "REPEAT", str("ab"), num(t, "0")), "", ""},
		{"reverse", call(t, "REVERSE", str("abc")), "cba", ""},
		{"left", call(t, "LEFT", s, num(t, "2")), "He", ""},
		{"right", call(t, "RIGHT", s, num(t, "3")), "rld", ""},
		{"left negative", call(t, "LEFT", s, num(t, "-2")), "", ""},
		{"ascii", call(t, "ASCII", str("A")), "65", ""},
		{"chr", call(t, "CHR", num(t, "97")), "a", ""},
		{"md5", call(t, "MD5", str("abc")), "900150983cd24fb0d6963f7d28e17f72", ""},
		{"sha1", call(t, "SHA1", str("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d", ""},
		{"sha256", call(t, "SHA256", str("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ""},
		{"to_base64", call(t, "TO_BASE64", str("hello")), "aGVsbG8=", ""},
		{"from_base64", call(t, "FROM_BASE64", str("aGVsbG8=")), "hello", ""},
		{"str_to_map", call(t, "STR_TO_MAP", str("a=1,b=2")), "{a=1, b=2}", "MAP<STRING, STRING> NOT NULL"},
		{"overlay", call(t, "OVERLAY", str("xxxxxtest"), str("xxxx"), num(t, "6")), "xxxxxxxxx", ""},
		{"overlay for", call(t, "OVERLAY", str("xxxxxtest"), str("xx"), num(t, "6"), num(t, "2")), "xxxxxxxst", ""},
		// Flink's SqlFunctionUtils.overlay: a start outside [1, length]
		// returns the string unchanged; the tail after the replaced
		// characters is kept only for a positive length ending inside it.
		{"overlay from 0", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "0")), "abcdef", ""},
		{"overlay negative start", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "-1")), "abcdef", ""},
		{"overlay start past the end", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "7")), "abcdef", ""},
		{"overlay at the last character", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "6")), "abcdeXY", ""},
		{"overlay for 0", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "2"), num(t, "0")), "aXY", ""},
		{"overlay negative length", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "2"), num(t, "-1")), "aXY", ""},
		{"overlay length past the end", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "3"), num(t, "10")), "abXY", ""},
		{"overlay length to the end", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "1"), num(t, "5")), "XYf", ""},
		{"overlay huge length", call(t, "OVERLAY", str("abcdef"), str("XY"), num(t, "2"), num(t, "9223372036854775807")), "aXY", ""},
		{"like %", call(t, "LIKE", s, str("Hello%")), "TRUE", "BOOLEAN"},
		{"like suffix", call(t, "LIKE", s, str("%World")), "TRUE", ""},
		{"like contains", call(t, "LIKE", s, str("%lo W%")), "TRUE", ""},
		{"like _", call(t, "LIKE", str("abc"), str("a_c")), "TRUE", ""},
		{"like exact miss", call(t, "LIKE", str("abc"), str("ab")), "FALSE", ""},
		{"like escape", call(t, "LIKE", str("10%"), str("10!%"), str("!")), "TRUE", ""},
		{"like escape miss", call(t, "LIKE", str("100"), str("10!%"), str("!")), "FALSE", ""},
		{"like escape _", call(t, "LIKE", str("a_c"), str("a\\_c"), str("\\")), "TRUE", ""},
		{"like escape _ miss", call(t, "LIKE", str("abc"), str("a\\_c"), str("\\")), "FALSE", ""},
		{"not like", call(t, "NOT LIKE", str("abc"), str("b%")), "TRUE", ""},
		{"like null", call(t, "LIKE", n, str("b%")), "NULL", ""},
		{"like multiline", call(t, "LIKE", str("a\nb"), str("a%b")), "TRUE", ""},
		{"similar to", call(t, "SIMILAR TO", str("abc"), str("(a|x)%")), "TRUE", ""},
		{"similar to miss", call(t, "SIMILAR TO", str("abc"), str("b%")), "FALSE", ""},
		{"coalesce", call(t, "COALESCE", n, str("x")), "x", "STRING NOT NULL"},
		{"ifnull", call(t, "IFNULL", n, str("y")), "y", ""},
		{"nullif equal", call(t, "NULLIF", num(t, "1"), num(t, "1")), "NULL", "INT"},
		{"nullif differ", call(t, "NULLIF", num(t, "1"), num(t, "2")), "1", ""},
		{"if", call(t, "IF", call(t, ">", num(t, "2"), num(t, "1")), str("yes"), str("no")), "yes", "VARCHAR(3) NOT NULL"},
		{"if varchar", call(t, "IF", BoolLiteral(false), str("yes"), str("nope")), "nope", "VARCHAR(4) NOT NULL"},
		{"greatest", call(t, "GREATEST", num(t, "1"), num(t, "5"), num(t, "3")), "5", "INT NOT NULL"},
		{"least mixed", call(t, "LEAST", num(t, "1.5"), num(t, "1")), "1.0", "DECIMAL(11, 1) NOT NULL"},
		{"greatest null", call(t, "GREATEST", num(t, "1"), NullLiteral(types.IntType)), "NULL", ""},
	}
	runCases(t, cases, row, utc)
}

func TestCase(t *testing.T) {
	x := Column(0, "x", types.IntType)
	e, err := Case(nil, []Expr{call(t, ">", x, num(t, "10")), call(t, ">", x, num(t, "5"))}, []Expr{str("big"), str("mid")}, str("s"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type().String() != "VARCHAR(3) NOT NULL" {
		t.Errorf("CASE type %s", e.Type())
	}
	for _, c := range []struct {
		in   types.Value
		want string
	}{{types.Int(11), "big"}, {types.Int(6), "mid"}, {types.Int(1), "s"}, {types.Value{}, "s"}} {
		if got, _ := evalStr(t, e, types.Row{c.in}, utc); got != c.want {
			t.Errorf("CASE(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	simple, err := Case(x, []Expr{num(t, "1"), num(t, "2")}, []Expr{str("one"), str("two")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if simple.Type().String() != "CHAR(3)" {
		t.Errorf("simple CASE type %s", simple.Type())
	}
	if got, _ := evalStr(t, simple, types.Row{types.Int(2)}, utc); got != "two" {
		t.Errorf("simple CASE = %s", got)
	}
	if got, _ := evalStr(t, simple, types.Row{types.Int(3)}, utc); got != "NULL" {
		t.Errorf("simple CASE no match = %s", got)
	}
	if _, err := Case(nil, []Expr{BoolLiteral(true)}, []Expr{num(t, "1")}, str("a")); err == nil || err.Error() != "Illegal mixing of types in CASE or COALESCE statement" {
		t.Errorf("mixed CASE: %v", err)
	}
}

func TestTemporal(t *testing.T) {
	ts := typed(t, "TIMESTAMP", "2024-03-15 13:45:30.123")
	d := typed(t, "DATE", "2024-01-31")
	day, _ := IntervalLiteral("1", "DAY", "", false)
	mon, _ := IntervalLiteral("1", "MONTH", "", false)
	ym, _ := IntervalLiteral("2-3", "YEAR", "MONTH", false)
	sec, _ := IntervalLiteral("10", "SECONDS", "", false)
	halfSec, _ := IntervalLiteral("0.5", "SECOND", "", false)
	cases := []evalCase{
		// TIME(0) plus a fraction of a second stays TIME(0): no hidden
		// fraction that compares unequal to what is shown.
		{"time plus fraction", call(t, "+", typed(t, "TIME", "10:00:00"), halfSec), "10:00:00", "TIME(0) NOT NULL"},
		{"time plus fraction compares whole", call(t, "=", call(t, "+", typed(t, "TIME", "10:00:00"), halfSec), typed(t, "TIME", "10:00:00")), "TRUE", ""},
		{"time minus fraction", call(t, "-", typed(t, "TIME", "10:00:00"), halfSec), "09:59:59", ""},
		{"time(3) keeps millis", call(t, "+", cast(t, typed(t, "TIME", "10:00:00"), types.TimeType(3)), halfSec), "10:00:00.500", "TIME(3) NOT NULL"},
		{"extract year", call(t, "EXTRACT", Symbol("YEAR"), ts), "2024", "BIGINT NOT NULL"},
		{"extract quarter", call(t, "EXTRACT", Symbol("QUARTER"), ts), "1", ""},
		{"extract month", call(t, "EXTRACT", Symbol("MONTH"), ts), "3", ""},
		{"extract week", call(t, "EXTRACT", Symbol("WEEK"), ts), "11", ""},
		{"extract day", call(t, "EXTRACT", Symbol("DAY"), ts), "15", ""},
		{"extract dow friday", call(t, "EXTRACT", Symbol("DOW"), ts), "6", ""},
		{"extract doy", call(t, "EXTRACT", Symbol("DOY"), ts), "75", ""},
		{"extract hour", call(t, "EXTRACT", Symbol("HOUR"), ts), "13", ""},
		{"extract minute", call(t, "EXTRACT", Symbol("MINUTE"), ts), "45", ""},
		{"extract second", call(t, "EXTRACT", Symbol("SECOND"), ts), "30", ""},
		{"extract millisecond", call(t, "EXTRACT", Symbol("MILLISECOND"), ts), "30123", ""},
		{"year()", call(t, "YEAR", d), "2024", ""},
		{"dayofweek", call(t, "DAYOFWEEK", d), "4", ""},
		{"floor hour", call(t, "FLOOR", ts, Symbol("HOUR")), "2024-03-15 13:00:00.000", "TIMESTAMP(3) NOT NULL"},
		{"floor month", call(t, "FLOOR", ts, Symbol("MONTH")), "2024-03-01 00:00:00.000", ""},
		{"floor year", call(t, "FLOOR", ts, Symbol("YEAR")), "2024-01-01 00:00:00.000", ""},
		{"floor week", call(t, "FLOOR", ts, Symbol("WEEK")), "2024-03-10 00:00:00.000", ""},
		{"ceil day", call(t, "CEIL", ts, Symbol("DAY")), "2024-03-16 00:00:00.000", ""},
		{"ceil minute aligned", call(t, "CEIL", typed(t, "TIMESTAMP", "2024-03-15 13:45:00"), Symbol("MINUTE")), "2024-03-15 13:45:00", ""},
		{"ceil quarter", call(t, "CEIL", ts, Symbol("QUARTER")), "2024-04-01 00:00:00.000", ""},
		{"date + day", call(t, "+", d, day), "2024-02-01", "DATE NOT NULL"},
		{"date + month clamps", call(t, "+", d, mon), "2024-02-29", "DATE NOT NULL"},
		{"ts + 2-3", call(t, "+", ts, ym), "2026-06-15 13:45:30.123", "TIMESTAMP(3) NOT NULL"},
		{"ts - 10s", call(t, "-", ts, sec), "2024-03-15 13:45:20.123", ""},
		{"interval + ts", call(t, "+", sec, ts), "2024-03-15 13:45:40.123", ""},
		{"date_format", call(t, "DATE_FORMAT", ts, str("yyyy-MM-dd HH:mm:ss")), "2024-03-15 13:45:30", "STRING"},
		{"date_format misc", call(t, "DATE_FORMAT", ts, str("yyyyMMdd hh:mm a SSS")), "20240315 01:45 PM 123", ""},
		{"date_format quoted", call(t, "DATE_FORMAT", ts, str("yyyy'T'HH EEE MMM")), "2024T13 Fri Mar", ""},
		{"date_format string", call(t, "DATE_FORMAT", str("2024-03-15 13:45:30"), str("MM/dd/yyyy")), "03/15/2024", ""},
		{"to_timestamp", call(t, "TO_TIMESTAMP", str("2024-03-15 13:45:30")), "2024-03-15 13:45:30.000", "TIMESTAMP(3)"},
		{"to_timestamp fmt", call(t, "TO_TIMESTAMP", str("15/03/2024 13:45"), str("dd/MM/yyyy HH:mm")), "2024-03-15 13:45:00.000", ""},
		{"to_timestamp bad", call(t, "TO_TIMESTAMP", str("garbage")), "NULL", ""},
		{"to_date", call(t, "TO_DATE", str("2024-03-15")), "2024-03-15", "DATE"},
		{"to_date fmt", call(t, "TO_DATE", str("20240315"), str("yyyyMMdd")), "2024-03-15", ""},
		{"timestampadd", call(t, "TIMESTAMPADD", Symbol("MONTH"), num(t, "1"), typed(t, "TIMESTAMP", "2024-01-31 00:00:00")), "2024-02-29 00:00:00", ""},
		{"timestampadd day", call(t, "TIMESTAMPADD", Symbol("DAY"), num(t, "-1"), d), "2024-01-30", "DATE NOT NULL"},
		{"timestampdiff day", call(t, "TIMESTAMPDIFF", Symbol("DAY"), typed(t, "TIMESTAMP", "2024-01-01 00:00:00"), typed(t, "TIMESTAMP", "2024-01-03 12:00:00")), "2", "INT NOT NULL"},
		{"timestampdiff month partial", call(t, "TIMESTAMPDIFF", Symbol("MONTH"), typed(t, "TIMESTAMP", "2024-01-31 00:00:00"), typed(t, "TIMESTAMP", "2024-02-29 00:00:00")), "0", ""},
		{"timestampdiff month", call(t, "TIMESTAMPDIFF", Symbol("MONTH"), typed(t, "TIMESTAMP", "2024-01-15 00:00:00"), typed(t, "TIMESTAMP", "2024-03-15 00:00:00")), "2", ""},
		{"timestampdiff year negative", call(t, "TIMESTAMPDIFF", Symbol("YEAR"), typed(t, "TIMESTAMP", "2024-01-15 00:00:00"), typed(t, "TIMESTAMP", "2022-01-16 00:00:00")), "-1", ""},
		{"from_unixtime utc", call(t, "FROM_UNIXTIME", num(t, "0")), "1970-01-01 00:00:00", ""},
		{"unix_timestamp utc", call(t, "UNIX_TIMESTAMP", str("1970-01-02 00:00:00")), "86400", ""},
		{"convert_tz", call(t, "CONVERT_TZ", str("1970-01-01 00:00:00"), str("UTC"), str("America/Los_Angeles")), "1969-12-31 16:00:00", ""},
		// Flink forces the result nullable: out of range is NULL.
		{"to_timestamp_ltz millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "1500"), num(t, "3")), "1970-01-01 00:00:01.500", "TIMESTAMP_LTZ(3)"},
		{"to_timestamp_ltz seconds", call(t, "TO_TIMESTAMP_LTZ", num(t, "60"), num(t, "0")), "1970-01-01 00:01:00.000", ""},
		{"to_timestamp_ltz max millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "253402300799999"), num(t, "3")), "9999-12-31 23:59:59.999", ""},
		{"to_timestamp_ltz past max millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "253402300800000"), num(t, "3")), "NULL", ""},
		{"to_timestamp_ltz min millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "-62167219200000"), num(t, "3")), "0000-01-01 00:00:00.000", ""},
		{"to_timestamp_ltz before min millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "-62167219200001"), num(t, "3")), "NULL", ""},
		{"to_timestamp_ltz max seconds", call(t, "TO_TIMESTAMP_LTZ", num(t, "253402300799"), num(t, "0")), "9999-12-31 23:59:59.000", ""},
		{"to_timestamp_ltz past max seconds", call(t, "TO_TIMESTAMP_LTZ", num(t, "253402300800"), num(t, "0")), "NULL", ""},
		{"to_timestamp_ltz seconds overflowing millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "9223372036854775807"), num(t, "0")), "NULL", ""},
		{"to_timestamp_ltz huge double", call(t, "TO_TIMESTAMP_LTZ", num(t, "1e300"), num(t, "3")), "NULL", ""},
		// A double is scaled, then cut toward zero (Java's (long) cast);
		// a decimal is cut toward zero in its own unit first.
		{"to_timestamp_ltz double seconds", call(t, "TO_TIMESTAMP_LTZ", num(t, "1.5e0"), num(t, "0")), "1970-01-01 00:00:01.500", ""},
		{"to_timestamp_ltz negative double toward zero", call(t, "TO_TIMESTAMP_LTZ", num(t, "-1.0005e0"), num(t, "0")), "1969-12-31 23:59:59.000", ""},
		{"to_timestamp_ltz decimal seconds", call(t, "TO_TIMESTAMP_LTZ", num(t, "1.9"), num(t, "0")), "1970-01-01 00:00:01.000", ""},
		{"to_timestamp_ltz decimal millis", call(t, "TO_TIMESTAMP_LTZ", num(t, "-1.9"), num(t, "3")), "1969-12-31 23:59:59.999", ""},
		{"current_timestamp", call(t, "CURRENT_TIMESTAMP"), "2024-03-15 10:30:45.123", "TIMESTAMP_LTZ(3) NOT NULL"},
		{"localtimestamp", call(t, "LOCALTIMESTAMP"), "2024-03-15 10:30:45.123", "TIMESTAMP(3) NOT NULL"},
		{"current_date", call(t, "CURRENT_DATE"), "2024-03-15", "DATE NOT NULL"},
		{"proctime", call(t, "PROCTIME"), "2024-03-15 10:30:45.123", "TIMESTAMP_LTZ(3) NOT NULL *PROCTIME*"},
		{"compare ts with string", call(t, ">", ts, str("2024-03-15 00:00:00")), "TRUE", ""},
		{"compare ts precisions", call(t, "=", typed(t, "TIMESTAMP", "2024-03-15 13:45:30"), cast(t, typed(t, "TIMESTAMP", "2024-03-15 13:45:30"), types.TimestampType(6))), "TRUE", ""},
	}
	runCases(t, cases, nil, utc)

	// Session time zones.
	sh, _ := time.LoadLocation("Asia/Shanghai")
	la, _ := time.LoadLocation("America/Los_Angeles")
	now := func() time.Time { return time.Date(2024, 3, 15, 20, 0, 0, 0, time.UTC) }
	shCfg := &Config{Loc: sh, Now: now}
	laCfg := &Config{Loc: la, Now: now}
	runCases(t, []evalCase{
		{"from_unixtime sh", call(t, "FROM_UNIXTIME", num(t, "0")), "1970-01-01 08:00:00", ""},
		{"unix_timestamp sh", call(t, "UNIX_TIMESTAMP", str("1970-01-01 08:00:00")), "0", ""},
		{"current_date sh next day", call(t, "CURRENT_DATE"), "2024-03-16", ""},
		{"localtimestamp sh", call(t, "LOCALTIMESTAMP"), "2024-03-16 04:00:00.000", ""},
		{"current_timestamp shown in sh", call(t, "CURRENT_TIMESTAMP"), "2024-03-16 04:00:00.000", ""},
		{"extract hour ltz sh", call(t, "EXTRACT", Symbol("HOUR"), call(t, "TO_TIMESTAMP_LTZ", num(t, "0"), num(t, "0"))), "8", ""},
		{"date_format ltz sh", call(t, "DATE_FORMAT", call(t, "TO_TIMESTAMP_LTZ", num(t, "0"), num(t, "0")), str("yyyy-MM-dd HH:mm")), "1970-01-01 08:00", ""},
		{"floor ltz day sh", cast(t, call(t, "FLOOR", call(t, "TO_TIMESTAMP_LTZ", num(t, "0"), num(t, "0")), Symbol("DAY")), types.StringType), "1970-01-01 00:00:00.000", ""},
	}, nil, shCfg)
	runCases(t, []evalCase{
		{"from_unixtime la", call(t, "FROM_UNIXTIME", num(t, "0"), str("yyyy-MM-dd HH:mm:ss")), "1969-12-31 16:00:00", ""},
		{"current_date la", call(t, "CURRENT_DATE"), "2024-03-15", ""},
		{"localtimestamp la (PDT)", call(t, "LOCALTIMESTAMP"), "2024-03-15 13:00:00.000", ""},
	}, nil, laCfg)
	// '2024-07-01 00:00:00' in Los Angeles (PDT, UTC-7) is 07:00 UTC.
	e := cast(t, str("2024-07-01 00:00:00"), types.TimestampLTZType(0))
	out := make(types.Row, 1)
	if err := NewProjector([]Expr{e}, laCfg).Project(nil, out); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2024, 7, 1, 7, 0, 0, 0, time.UTC).UnixMilli(); out[0].N != want {
		t.Errorf("string to ltz in LA: %d, want %d", out[0].N, want)
	}
}

func TestIntervalLiterals(t *testing.T) {
	for _, c := range []struct {
		text, from, to string
		neg            bool
		n              int64
		typ            string
	}{
		{"10", "SECOND", "", false, 10000, "INTERVAL SECOND(3) NOT NULL"},
		{"10", "SECONDS", "", false, 10000, "INTERVAL SECOND(3) NOT NULL"},
		{"1 02:03", "DAY", "MINUTE", false, 86400000 + 2*3600000 + 3*60000, "INTERVAL DAY(2) TO MINUTE NOT NULL"},
		{"2-3", "YEAR", "MONTH", false, 27, "INTERVAL YEAR(2) TO MONTH NOT NULL"},
		{"1.5", "SECOND", "", false, 1500, ""},
		{"5", "MINUTE", "", true, -300000, "INTERVAL MINUTE NOT NULL"},
		{"-2", "HOUR", "", false, -7200000, "INTERVAL HOUR NOT NULL"},
		{"100", "SECOND(3)", "", false, 100000, ""},
	} {
		e, err := IntervalLiteral(c.text, c.from, c.to, c.neg)
		if err != nil {
			t.Errorf("%s %s: %v", c.text, c.from, err)
			continue
		}
		v, _ := EvalConstant(e, utc)
		if v.N != c.n {
			t.Errorf("%s %s TO %s = %d, want %d", c.text, c.from, c.to, v.N, c.n)
		}
		if c.typ != "" && e.Type().String() != c.typ {
			t.Errorf("%s %s type %s, want %s", c.text, c.from, e.Type(), c.typ)
		}
	}
	for _, c := range []struct{ text, from, to, want string }{
		{"100", "SECOND", "", "Interval field value 100 exceeds precision of SECOND(2) field"},
		{"1:2", "DAY", "HOUR", "Illegal interval literal format '1:2' for INTERVAL DAY TO HOUR"},
		{"abc", "DAY", "", "Illegal interval literal format 'abc' for INTERVAL DAY"},
	} {
		if _, err := IntervalLiteral(c.text, c.from, c.to, false); err == nil || err.Error() != c.want {
			t.Errorf("%s %s: error %v, want %q", c.text, c.from, err, c.want)
		}
	}
}

func TestCollections(t *testing.T) {
	arr := call(t, "ARRAY", num(t, "1"), num(t, "2"), num(t, "3"))
	m := call(t, "MAP", str("a"), num(t, "1"), str("b"), num(t, "2"))
	r := call(t, "ROW", num(t, "1"), str("x"))
	cases := []evalCase{
		{"array", arr, "[1, 2, 3]", "ARRAY<INT NOT NULL> NOT NULL"},
		{"item", call(t, "ITEM", arr, num(t, "2")), "2", "INT"},
		{"item out of range", call(t, "ITEM", arr, num(t, "4")), "NULL", ""},
		{"item zero", call(t, "ITEM", arr, num(t, "0")), "NULL", ""},
		{"map item", call(t, "ITEM", m, str("b")), "2", ""},
		{"map item missing", call(t, "ITEM", m, str("z")), "NULL", ""},
		{"cardinality", call(t, "CARDINALITY", arr), "3", "INT NOT NULL"},
		{"cardinality map", call(t, "CARDINALITY", m), "2", ""},
		{"element", call(t, "ELEMENT", call(t, "ARRAY", num(t, "7"))), "7", ""},
		{"row", r, "(1, x)", "ROW<`EXPR$0` INT NOT NULL, `EXPR$1` CHAR(1) NOT NULL> NOT NULL"},
		{"dot", call(t, "DOT", r, FieldSymbol("EXPR$1")), "x", "CHAR(1) NOT NULL"},
	}
	runCases(t, cases, nil, utc)
}

func TestErrorMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		args []Expr
		want string
	}{
		{"foo", []Expr{num(t, "1"), str("a")}, "No match found for function signature foo(<NUMERIC>, <CHARACTER>)"},
		{"UPPER", []Expr{num(t, "1")}, "Cannot apply 'UPPER' to arguments of type 'UPPER(<INTEGER>)'. Supported form(s): 'UPPER(<CHARACTER>)'"},
		{"=", []Expr{BoolLiteral(true), num(t, "1")}, "Cannot apply '=' to arguments of type '<BOOLEAN> = <INTEGER>'. Supported form(s): '<COMPARABLE_TYPE> = <COMPARABLE_TYPE>'"},
		{"=", []Expr{typed(t, "DATE", "2024-01-01"), typed(t, "TIME", "10:00:00")}, "Cannot apply '=' to arguments of type '<DATE> = <TIME(0)>'. Supported form(s): '<COMPARABLE_TYPE> = <COMPARABLE_TYPE>'"},
		{"+", []Expr{num(t, "1"), str("a")}, "Cannot apply '+' to arguments of type '<INTEGER> + <CHAR(1)>'. Supported form(s): '<NUMERIC> + <NUMERIC>'\n'<DATETIME_INTERVAL> + <DATETIME_INTERVAL>'\n'<DATETIME> + <DATETIME_INTERVAL>'\n'<DATETIME_INTERVAL> + <DATETIME>'"},
		{"AND", []Expr{num(t, "1"), BoolLiteral(true)}, "Cannot apply 'AND' to arguments of type '<INTEGER> AND <BOOLEAN>'. Supported form(s): '<BOOLEAN> AND <BOOLEAN>'"},
		// Flink 1.20 has only TO_TIMESTAMP_LTZ(numeric, precision).
		{"TO_TIMESTAMP_LTZ", []Expr{num(t, "1500")}, "Invalid number of arguments to function 'TO_TIMESTAMP_LTZ'. Was expecting 2 arguments"},
		{"TO_TIMESTAMP_LTZ", []Expr{str("2024-01-01 00:00:00")}, "Invalid number of arguments to function 'TO_TIMESTAMP_LTZ'. Was expecting 2 arguments"},
		{"MOD", []Expr{num(t, "1.5e0"), num(t, "2")}, "Cannot apply 'MOD' to arguments of type 'MOD(<DOUBLE>, <INTEGER>)'. Supported form(s): 'MOD(<EXACT_NUMERIC>, <EXACT_NUMERIC>)'"},
		{"-", []Expr{typed(t, "TIMESTAMP", "2024-01-01 00:00:00"), typed(t, "TIMESTAMP", "2024-01-01 00:00:00")}, "Cannot apply '-' to arguments of type '<TIMESTAMP(0)> - <TIMESTAMP(0)>'. Supported form(s): '<NUMERIC> - <NUMERIC>'\n'<DATETIME_INTERVAL> - <DATETIME_INTERVAL>'\n'<DATETIME> - <DATETIME_INTERVAL>'"},
	} {
		_, err := Call(c.name, c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error\n%v\nwant\n%s", c.name, err, c.want)
		}
	}
}

func TestLeastRestrictive(t *testing.T) {
	for _, c := range []struct {
		in   []types.Type
		want string
	}{
		{[]types.Type{types.IntType, types.BigIntType.WithNullable(false)}, "BIGINT"},
		{[]types.Type{types.IntType.WithNullable(false), types.DecimalType(5, 2).WithNullable(false)}, "DECIMAL(12, 2) NOT NULL"},
		{[]types.Type{types.CharType(3), types.CharType(5)}, "VARCHAR(5)"},
		{[]types.Type{types.CharType(3), types.CharType(3)}, "CHAR(3)"},
		{[]types.Type{types.CharType(3), types.StringType}, "STRING"},
		{[]types.Type{types.TimestampType(3), types.TimestampType(6)}, "TIMESTAMP(6)"},
		{[]types.Type{types.NullType, types.IntType.WithNullable(false)}, "INT"},
		{[]types.Type{types.FloatType, types.IntType}, "FLOAT"},
		{[]types.Type{types.DoubleType, types.DecimalType(10, 2)}, "DOUBLE"},
	} {
		got, err := LeastRestrictive(c.in...)
		if err != nil || got.String() != c.want {
			t.Errorf("LeastRestrictive(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := LeastRestrictive(types.IntType, types.StringType); err == nil {
		t.Errorf("INT and STRING have no common type")
	}
}

func TestConstantsAndMisc(t *testing.T) {
	if !IsConstant(call(t, "+", num(t, "1"), num(t, "2"))) {
		t.Error("1+2 is constant")
	}
	if IsConstant(call(t, "CURRENT_TIMESTAMP")) || IsConstant(Column(0, "a", types.IntType)) {
		t.Error("CURRENT_TIMESTAMP and columns are not constant")
	}
	v, err := EvalConstant(call(t, "*", num(t, "6"), num(t, "7")), utc)
	if err != nil || v.N != 42 {
		t.Errorf("EvalConstant = %v %v", v, err)
	}
	e, err := CastIfNeeded(Column(0, "a", types.IntType.WithNullable(false)), types.IntType)
	if err != nil || e.String() != "a" {
		t.Errorf("CastIfNeeded same type: %v %v", e, err)
	}
	e, err = CastIfNeeded(Column(0, "a", types.IntType), types.BigIntType)
	if err != nil || e.Type().String() != "BIGINT" {
		t.Errorf("CastIfNeeded widen: %v %v", e, err)
	}
	fs := Functions()
	for i := 1; i < len(fs); i++ {
		if fs[i-1] >= fs[i] {
			t.Fatalf("Functions not sorted at %s", fs[i])
		}
	}
	if IsDeterministic("RAND") || !IsDeterministic("UPPER") {
		t.Error("IsDeterministic")
	}
	// RAND(seed) repeats java.util.Random's sequence: new Random(0).nextDouble() = 0.730967787376657.
	r := call(t, "RAND", num(t, "0"))
	got, _ := evalStr(t, r, nil, utc)
	if got != "0.730967787376657" {
		t.Errorf("RAND(0) = %s", got)
	}
	pred := NewPredicate(call(t, ">", Column(0, "a", types.IntType), num(t, "1")), utc)
	if ok, _ := pred.Test(types.Row{types.Value{}}); ok {
		t.Error("NULL predicate must be false")
	}
	if ok, _ := pred.Test(types.Row{types.Int(2)}); !ok {
		t.Error("2 > 1")
	}
}

// TestDotOverColumns: field access on a ROW column (the nested rows of a
// source, e.g. Nexmark's bid.price) reads the field, and is NULL for a
// NULL row, also nested one level further.
func TestDotOverColumns(t *testing.T) {
	inner := types.RowType(types.Field{Name: "b", Type: types.BigIntType})
	rt := types.RowType(types.Field{Name: "a", Type: types.StringType}, types.Field{Name: "n", Type: inner})
	c := Column(0, "r", rt)
	a := call(t, "DOT", c, FieldSymbol("a"))
	b := call(t, "DOT", call(t, "DOT", c, FieldSymbol("n")), FieldSymbol("b"))
	set := types.Row{types.RowValue(types.Row{types.String("x"), types.RowValue(types.Row{types.Int(7)})})}
	runCases(t, []evalCase{{"field", a, "x", "STRING"}, {"nested field", b, "7", "BIGINT"}}, set, utc)
	null := types.Row{types.NullValue}
	runCases(t, []evalCase{{"field of NULL", a, "NULL", ""}, {"nested field of NULL", b, "NULL", ""}}, null, utc)
	innerNull := types.Row{types.RowValue(types.Row{types.String("x"), types.NullValue})}
	runCases(t, []evalCase{{"field of a NULL nested row", b, "NULL", ""}}, innerNull, utc)
}

// TestRegexRequiredLiteral: the literal every match needs, used to reject
// strings without it before running the regexp (q21's channel_id).
func TestRegexRequiredLiteral(t *testing.T) {
	for _, c := range []struct{ re, want string }{
		{`(&|^)channel_id=([^&]*)`, "channel_id="},
		{`foo(.*?)(bar)`, "foo"},
		{`[0-9]+`, ""},
		{`(?i)abc`, ""},
		{`a|b`, ""},
		{`x(yz)+`, "yz"},
		{`(ab){2,3}c`, "ab"},
		{`(ab)?c`, "c"},
	} {
		tree, err := syntax.Parse(c.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := requiredLiteral(tree.Simplify()); got != c.want {
			t.Errorf("%s: required literal %q, want %q", c.re, got, c.want)
		}
	}
	url := "https://www.nexmark.com/a/b/c/item.htm?query=1"
	runCases(t, []evalCase{
		{"no channel_id", call(t, "REGEXP_EXTRACT", str(url), str(`(&|^)channel_id=([^&]*)`), num(t, "2")), "NULL", ""},
		{"channel_id", call(t, "REGEXP_EXTRACT", str(url+"&channel_id=42"), str(`(&|^)channel_id=([^&]*)`), num(t, "2")), "42", ""},
		{"regexp without the literal", call(t, "REGEXP", str("xyz"), str(`y(ab)+`)), "FALSE", ""},
		{"regexp with it", call(t, "REGEXP", str("xyabab"), str(`y(ab)+`)), "TRUE", ""},
		{"case-insensitive", call(t, "REGEXP", str("ABC"), str(`(?i)abc`)), "TRUE", ""},
	}, nil, utc)
}

// TestDecimalMultiplyCompact: products computed on int64s round HALF_UP at
// the result scale and agree with the big.Int path, and an overflow of the
// result precision is NULL as before.
func TestDecimalMultiplyCompact(t *testing.T) {
	dec := func(unscaled int64, scale int) types.Value { return types.DecimalFromUnscaled(unscaled, scale) }
	for _, c := range []struct {
		a, b types.Value
		rt   types.Type
		want string
	}{
		{dec(908, 3), dec(122646, 0), types.DecimalType(23, 3), "111362.568"},
		{dec(-908, 3), dec(5, 0), types.DecimalType(10, 3), "-4.540"},
		{dec(125, 2), dec(5, 1), types.DecimalType(10, 2), "0.63"},                           // 0.625 rounds half up
		{dec(-125, 2), dec(5, 1), types.DecimalType(10, 2), "-0.63"},                         // away from zero
		{dec(124, 2), dec(5, 1), types.DecimalType(10, 2), "0.62"},                           // 0.620
		{dec(15, 1), dec(15, 1), types.DecimalType(10, 4), "2.2500"},                         // scale raised
		{dec(99, 0), dec(99, 0), types.DecimalType(3, 0), "NULL"},                            // 9801 overflows DECIMAL(3, 0)
		{dec(math.MaxInt64, 0), dec(3, 0), types.DecimalType(38, 0), "27670116110564327421"}, // past int64: big.Int
	} {
		got := types.FormatSQL(decMul(c.a, c.b, c.rt), c.rt, time.UTC)
		if got != c.want {
			t.Errorf("%v * %v as %s = %s, want %s", c.a, c.b, c.rt, got, c.want)
		}
	}
	// CAST(BIGINT AS DECIMAL) without big.Int, and its overflow.
	runCases(t, []evalCase{
		{"cast bigint", cast(t, num(t, "123"), types.DecimalType(10, 3)), "123.000", ""},
		{"cast bigint overflow", cast(t, num(t, "123"), types.DecimalType(4, 2)), "NULL", ""},
	}, nil, utc)
}

// TestSplitIndexMatchesSplit: splitIndex finds the token strings.Split
// finds once trailing empty tokens are dropped (Java's String.split), for
// every index of many strings.
func TestSplitIndexMatchesSplit(t *testing.T) {
	want := func(s, sep string, idx int64) (string, bool) {
		parts := strings.Split(s, sep)
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		if idx >= int64(len(parts)) {
			return "", false
		}
		return parts[idx], true
	}
	for _, s := range []string{"", "/", "//", "a", "a/", "/a", "a//b", "a/b/", "a/b//", "https://www.nexmark.com/ab/cd_e/f/item.htm?query=1", "aXYbXYXYc", "XYXY", "ab"} {
		for _, sep := range []string{"/", "XY", "ab", "b"} {
			for idx := int64(0); idx < 8; idx++ {
				gs, gok := splitIndex(s, sep, idx)
				ws, wok := want(s, sep, idx)
				if gs != ws || gok != wok {
					t.Errorf("splitIndex(%q, %q, %d) = %q, %v; want %q, %v", s, sep, idx, gs, gok, ws, wok)
				}
			}
		}
	}
}

// TestCaseSwitch: a CASE whose conditions compare one integer column with
// constants runs as a switch on the column; its answers are the CASE's
// (the first TRUE condition wins, NULL and unmatched values take ELSE).
func TestCaseSwitch(t *testing.T) {
	k := Column(0, "k", types.IntType)
	v := Column(1, "v", types.StringType)
	e, err := Case(nil, []Expr{call(t, "=", k, num(t, "0")), call(t, "=", k, num(t, "1")), call(t, "=", k, num(t, "0"))},
		[]Expr{str("zero"), v, str("again")}, str("other"))
	if err != nil {
		t.Fatal(err)
	}
	c := &compiler{ctx: newEvalCtx(utc)}
	if _, ok := c.compileExpr(e).(*caseSwitch); !ok {
		t.Fatalf("%s compiles to %T, want a switch", e, c.compileExpr(e))
	}
	for _, c := range []struct {
		k    types.Value
		want string
	}{{types.Int(0), "zero"}, {types.Int(1), "val"}, {types.Int(2), "other"}, {types.Int(-1), "other"}, {types.Value{}, "other"}} {
		if got, _ := evalStr(t, e, types.Row{c.k, types.String("val")}, utc); got != c.want {
			t.Errorf("CASE(k = %v) = %s, want %s", c.k, got, c.want)
		}
	}
	// Conditions on two columns, or not equalities: the general CASE.
	j := Column(1, "j", types.IntType)
	for _, whens := range [][]Expr{
		{call(t, "=", k, num(t, "0")), call(t, "=", j, num(t, "1"))},
		{call(t, "=", k, num(t, "0")), call(t, ">", k, num(t, "1"))},
	} {
		e, err := Case(nil, whens, []Expr{str("a"), str("b")}, str("c"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.compileExpr(e).(*caseSwitch); ok {
			t.Errorf("%s compiles to a switch", e)
		}
		// (5, 1): the second condition (j = 1, k > 1) holds.
		if got, _ := evalStr(t, e, types.Row{types.Int(5), types.Int(1)}, utc); got != "b" {
			t.Errorf("%s on (5, 1) = %s, want b", e, got)
		}
	}
}

// TestCaseScratch: LOWER and UPPER compared (=, <>, IN) convert in a buffer
// of their own, with the answers of the allocating functions: ASCII with
// and without letters to change, non-ASCII (converted as LOWER converts),
// NULL; one row's scratch string does not leak into the next answer.
func TestCaseScratch(t *testing.T) {
	ch := Column(0, "channel", types.StringType)
	eq := call(t, "=", call(t, "LOWER", ch), str("apple"))
	in := call(t, "IN", call(t, "LOWER", ch), str("apple"), str("google"), str("straße"))
	up := call(t, "<>", call(t, "UPPER", ch), str("BAIDU"))
	c := &compiler{ctx: newEvalCtx(utc)}
	found := false
	if b, ok := c.compileExpr(eq).(*binaryEval); ok {
		_, found = b.a.(*caseScratchEval)
	}
	if !found {
		t.Fatalf("%s does not compare a LOWER in scratch memory", eq)
	}
	for _, c := range []struct {
		in            types.Value
		eq, in_, upNE string
	}{
		{types.String("Apple"), "TRUE", "TRUE", "TRUE"},
		{types.String("apple"), "TRUE", "TRUE", "TRUE"},
		{types.String("GOOGLE"), "FALSE", "TRUE", "TRUE"},
		{types.String("Baidu"), "FALSE", "FALSE", "FALSE"},
		{types.String("STRAßE"), "FALSE", "TRUE", "TRUE"}, // non-ASCII: strings.ToLower
		{types.String("Applé"), "FALSE", "FALSE", "TRUE"},
		{types.String(""), "FALSE", "FALSE", "TRUE"},
		{types.Value{}, "NULL", "NULL", "NULL"},
	} {
		row := types.Row{c.in}
		for _, x := range []struct {
			e    Expr
			want string
		}{{eq, c.eq}, {in, c.in_}, {up, c.upNE}} {
			if got, err := evalStr(t, x.e, row, utc); err != nil || got != x.want {
				t.Errorf("%s with channel %v: %s, %v; want %s", x.e, c.in, got, err, x.want)
			}
		}
	}
	// One compiled predicate over rows in turn: each answer is its row's.
	p := NewPredicate(in, utc)
	for _, r := range []struct {
		s    string
		want bool
	}{{"GOOGLE", true}, {"GOOGLX", false}, {"Apple", true}, {"APPLEX", false}} {
		if got, err := p.Test(types.Row{types.String(r.s)}); err != nil || got != r.want {
			t.Errorf("%s with %q: %v, %v; want %v", in, r.s, got, err, r.want)
		}
	}
}
