package csv

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

func col(name string, t types.Type) types.Column { return types.Column{Name: name, Type: t} }

func ctx(schema types.Schema, opts map[string]string) *formats.Context {
	if opts == nil {
		opts = map[string]string{}
	}
	return &formats.Context{Options: opts, Prefix: "csv.", Schema: schema, Loc: time.UTC}
}

func newDecoder(t testing.TB, schema types.Schema, opts map[string]string) formats.Decoder {
	t.Helper()
	d, err := NewFactory().CreateDecoder(ctx(schema, opts))
	if err != nil {
		t.Fatalf("CreateDecoder: %v", err)
	}
	return d
}

func newEncoder(t testing.TB, schema types.Schema, opts map[string]string) formats.Encoder {
	t.Helper()
	e, err := NewFactory().CreateEncoder(ctx(schema, opts))
	if err != nil {
		t.Fatalf("CreateEncoder: %v", err)
	}
	return e
}

func decode(d formats.Decoder, n int, line string) (types.Row, error) {
	row := make(types.Row, n)
	err := d.Decode([]byte(line), row)
	return row, err
}

// 1990-10-14 is day 7591 (7305 days to 1990-01-01, 273 to October, 13 more).
const day19901014 = 7591

// 1990-10-14 12:12:43.123 in epoch milliseconds: 7591*86400000 + 43963123.
const ts19901014 = 655906363123

var scalarSchema = types.Schema{
	col("b", types.BooleanType),
	col("ti", types.TinyIntType),
	col("i", types.IntType),
	col("bi", types.BigIntType),
	col("f", types.FloatType),
	col("d", types.DoubleType),
	col("dec", types.DecimalType(9, 6)),
	col("s", types.StringType),
	col("bin", types.BytesType),
	col("date", types.DateType),
	col("time", types.TimeType(3)),
	col("ts", types.TimestampType(3)),
	col("ltz", types.TimestampLTZType(3)),
}

func TestDecodeScalars(t *testing.T) {
	d := newDecoder(t, scalarSchema, nil)
	row, err := decode(d, len(scalarSchema),
		`true,-12, 45536 ,1238123899121,33.333,1.1,123.456789,"hello, ""world""",AQID,1990-10-14,12:12:43.123,1990-10-14 12:12:43.123,1990-10-14 12:12:43.123Z`+"\r\n")
	if err != nil {
		t.Fatal(err)
	}
	want := types.Row{
		types.Bool(true), types.Int(-12), types.Int(45536), types.Int(1238123899121),
		types.Float(float64(float32(33.333))), types.Float(1.1), types.DecimalFromUnscaled(123456789, 6),
		types.String(`hello, "world"`), types.Bytes([]byte{1, 2, 3}), types.Int(day19901014),
		types.Int(43963123), types.Timestamp(ts19901014, 0), types.Timestamp(ts19901014, 0),
	}
	for i := range want {
		if !reflect.DeepEqual(row[i], want[i]) {
			t.Errorf("%s: got %+v, want %+v", scalarSchema[i].Name, row[i], want[i])
		}
	}
}

func TestDecodeCases(t *testing.T) {
	str2 := types.Schema{col("a", types.StringType), col("b", types.StringType)}
	cases := []struct {
		name   string
		schema types.Schema
		opts   map[string]string
		line   string
		want   types.Row
	}{
		{"empty string field", str2, nil, `,x`, types.Row{types.String(""), types.String("x")}},
		{"quoted empty", str2, nil, `"",x`, types.Row{types.String(""), types.String("x")}},
		{"null literal", str2, map[string]string{"null-literal": "null"}, `null,"null"`, types.Row{{}, {}}},
		{"empty null literal", types.Schema{col("a", types.IntType), col("b", types.StringType)},
			map[string]string{"null-literal": ""}, `,`, types.Row{{}, {}}},
		{"quoted delimiter and newline", str2, nil, "\"x,y\",\"line1\nline2\"", types.Row{types.String("x,y"), types.String("line1\nline2")}},
		{"tab delimiter", str2, map[string]string{"field-delimiter": `\t`}, "a,b\tc", types.Row{types.String("a,b"), types.String("c")}},
		{"unicode delimiter", str2, map[string]string{"field-delimiter": `\u0001`}, "a\x01b", types.Row{types.String("a"), types.String("b")}},
		{"single quote", str2, map[string]string{"quote-character": "'"}, `'a,''b''',"c"`, types.Row{types.String("a,'b'"), types.String(`"c"`)}},
		{"quotes disabled", str2, map[string]string{"disable-quote-character": "true"}, `"a","b"`, types.Row{types.String(`"a"`), types.String(`"b"`)}},
		{"escape character", str2, map[string]string{"escape-character": `\`}, `a\,b,"c\"d\ne"`, types.Row{types.String("a,b"), types.String("c\"d\ne")}},
		{"comment lookalike without allow-comments", str2, nil, `#a,b`, types.Row{types.String("#a"), types.String("b")}},
		{"array and nested row", types.Schema{
			col("arr", types.ArrayType(types.IntType)),
			col("r", types.RowType(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "y", Type: types.StringType})),
			col("empty", types.ArrayType(types.StringType)),
		}, nil, `1;2;3,7;seven,`, types.Row{
			types.ArrayValue([]types.Value{types.Int(1), types.Int(2), types.Int(3)}),
			types.RowValue(types.Row{types.Int(7), types.String("seven")}),
			types.ArrayValue([]types.Value{}),
		}},
		{"array delimiter option", types.Schema{col("arr", types.ArrayType(types.StringType))},
			map[string]string{"array-element-delimiter": "|"}, `a|b;c`, types.Row{types.ArrayValue([]types.Value{types.String("a"), types.String("b;c")})}},
		{"lenient values", types.Schema{
			col("b", types.BooleanType), col("d", types.DateType), col("t", types.TimeType(0)), col("dec", types.DecimalType(3, 1)),
		}, nil, `TRUE,1990-1-5,12:12,99.99`, types.Row{
			types.Bool(true), types.Int(day19901014 - 282), types.Int(12*3600000 + 12*60000), {}, // 99.99 rounds to 100.0: too wide
		}},
		{"missing fields with ignore-parse-errors", str2, map[string]string{"ignore-parse-errors": "true"}, `x`, types.Row{types.String("x"), {}}},
		{"bad field with ignore-parse-errors", types.Schema{col("a", types.IntType), col("b", types.StringType)},
			map[string]string{"ignore-parse-errors": "true"}, `abc,x`, types.Row{{}, types.String("x")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDecoder(t, c.schema, c.opts)
			row, err := decode(d, len(c.schema), c.line)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, c.want) {
				t.Fatalf("got %+v, want %+v", row, c.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	three := types.Schema{col("a", types.IntType), col("b", types.StringType), col("c", types.DoubleType)}
	cases := []struct {
		name    string
		line    string
		wantErr string
		skipped bool // with ignore-parse-errors
	}{
		{"too few fields", `1,x`, `Failed to deserialize CSV row '1,x': Row length mismatch. 3 fields expected but was 2.`, false},
		{"too many fields", `1,x,2.5,extra`, `Failed to deserialize CSV row '1,x,2.5,extra': Too many entries: expected at most 3 (value #3 (5 chars) "extra")`, true},
		{"type mismatch", `one,x,2.5`, `Failed to deserialize CSV row 'one,x,2.5': Fail to deserialize at field: a: For input string: "one" (cannot convert to INT)`, false},
		{"empty number", `,x,2.5`, `Failed to deserialize CSV row ',x,2.5': Fail to deserialize at field: a: For input string: "" (cannot convert to INT)`, false},
		{"unclosed quote", `1,"x,2.5`, `Failed to deserialize CSV row '1,"x,2.5': Missing closing quote for value`, true},
		{"text after quote", `1,"x"y,2.5`, `Failed to deserialize CSV row '1,"x"y,2.5': Expected column separator character (',') or end-of-line after a quoted value, found 'y'`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decode(newDecoder(t, three, nil), 3, c.line)
			if err == nil || err.Error() != c.wantErr {
				t.Fatalf("\n got: %v\nwant: %s", err, c.wantErr)
			}
			_, err = decode(newDecoder(t, three, map[string]string{"ignore-parse-errors": "true"}), 3, c.line)
			if c.skipped != errors.Is(err, formats.ErrSkipRecord) {
				t.Fatalf("ignore-parse-errors: got %v, skipped want %v", err, c.skipped)
			}
		})
	}
}

func TestSkippedRecords(t *testing.T) {
	schema := types.Schema{col("a", types.StringType)}
	comments := newDecoder(t, schema, map[string]string{"allow-comments": "true"})
	for _, line := range []string{"# a comment", "", "\n", "\r\n"} {
		if _, err := decode(comments, 1, line); !errors.Is(err, formats.ErrSkipRecord) {
			t.Errorf("%q: got %v, want ErrSkipRecord", line, err)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	schema := types.Schema{col("a", types.IntType)}
	cases := []struct {
		schema types.Schema
		opts   map[string]string
		want   string
	}{
		{schema, map[string]string{"field-delimiter": ";;"}, "Option 'csv.field-delimiter' must be a string with single character, but was: ;;"},
		{schema, map[string]string{"quote-character": ""}, "Option 'csv.quote-character' must be a string with single character, but was: "},
		{schema, map[string]string{"disable-quote-character": "true", "quote-character": "'"},
			"Format cannot define a quote character and disabled quote character at the same time."},
		{schema, map[string]string{"allow-comments": "sure"},
			"Could not parse value 'sure' for key 'csv.allow-comments'. Supported values are [true, false]."},
		{types.Schema{col("t", types.TimeType(6))}, nil, "Csv does not support TIME type with precision: 6, it only supports precision 0 ~ 3."},
		{types.Schema{col("m", types.MapType(types.StringType, types.IntType))}, nil, "Unsupported type: MAP<STRING, INT>"},
		{types.Schema{col("a", types.ArrayType(types.ArrayType(types.IntType)))}, nil,
			"Only simple types are supported in the second level nesting of fields 'a' but was: ARRAY<INT>"},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateDecoder(ctx(c.schema, c.opts))
		if err == nil || err.Error() != c.want {
			t.Errorf("%v:\n got: %v\nwant: %s", c.opts, err, c.want)
		}
	}
}

func encode(t *testing.T, e formats.Encoder, row types.Row) string {
	t.Helper()
	out, err := e.Encode(nil, row)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return string(out)
}

// TestEncodeExact checks bytes worked out from Jackson's CSV writer as Flink
// configures it: text is quoted when it has a character below ',' + 1 (space,
// quote, comma, ...) or is longer than 24 characters; numbers never are.
func TestEncodeExact(t *testing.T) {
	schema := types.Schema{
		col("id", types.BigIntType),
		col("name", types.StringType),
		col("price", types.DoubleType),
		col("ts", types.TimestampType(3)),
		col("none", types.StringType),
		col("csv", types.StringType),
		col("quote", types.StringType),
		col("dec", types.DecimalType(10, 2)),
		col("long", types.StringType),
		col("date", types.DateType),
		col("time", types.TimeType(3)),
		col("arr", types.ArrayType(types.StringType)),
		col("b", types.BooleanType),
		col("empty", types.StringType),
	}
	row := types.Row{
		types.Int(1), types.String("hello world"), types.Float(1.5), types.Timestamp(ts19901014, 0), {},
		types.String("x,y"), types.String(`say "hi"`), types.DecimalFromUnscaled(10000, 2),
		types.String("abcdefghijklmnopqrstuvwxyz"), types.Int(day19901014), types.Int(43963123),
		types.ArrayValue([]types.Value{types.String("a"), {}, types.String("b")}), types.Bool(false), types.String(""),
	}
	got := encode(t, newEncoder(t, schema, nil), row)
	want := `1,"hello world",1.5,"1990-10-14 12:12:43.123",,"x,y","say ""hi""",1E+2,"abcdefghijklmnopqrstuvwxyz",1990-10-14,12:12:43.123,a;;b,false,`
	if got != want {
		t.Errorf("default\n got: %s\nwant: %s", got, want)
	}
	got = encode(t, newEncoder(t, schema, map[string]string{
		"write-bigdecimal-in-scientific-notation": "false", "null-literal": "NULL", "field-delimiter": "|",
	}), row)
	// With '|' (124) as separator every character below '}' needs quotes.
	want = `1|"hello world"|1.5|"1990-10-14 12:12:43.123"|NULL|"x,y"|"say ""hi"""|100|"abcdefghijklmnopqrstuvwxyz"|"1990-10-14"|"12:12:43.123"|"a;NULL;b"|false|`
	if got != want {
		t.Errorf("options\n got: %s\nwant: %s", got, want)
	}
	got = encode(t, newEncoder(t, schema, map[string]string{"disable-quote-character": "true"}), row)
	want = `1,hello world,1.5,1990-10-14 12:12:43.123,,x,y,say "hi",1E+2,abcdefghijklmnopqrstuvwxyz,1990-10-14,12:12:43.123,a;;b,false,`
	if got != want {
		t.Errorf("no quotes\n got: %s\nwant: %s", got, want)
	}
	got = encode(t, newEncoder(t, types.Schema{col("s", types.StringType), col("r", types.RowType(
		types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "y", Type: types.StringType}))},
		map[string]string{"escape-character": `\`}), types.Row{types.String(`a\b`), types.RowValue(types.Row{types.Int(1), types.String("z")})})
	if want := `"a\\b",1;z`; got != want {
		t.Errorf("escape\n got: %s\nwant: %s", got, want)
	}
}

// TestRoundTrip writes every scalar type, and NULLs under a null literal,
// then reads the record back.
func TestRoundTrip(t *testing.T) {
	schema := append(append(types.Schema{}, scalarSchema...),
		col("si", types.SmallIntType), col("iym", types.Type{Root: types.RootIntervalYearMonth}))
	opts := map[string]string{"null-literal": "\\N"}
	e := newEncoder(t, schema, opts)
	d := newDecoder(t, schema, opts)
	full := types.Row{
		types.Bool(true), types.Int(-128), types.Int(math.MinInt32), types.Int(math.MaxInt64),
		types.Float(float64(float32(-1.25e-7))), types.Float(math.Inf(1)), types.DecimalFromUnscaled(-999999999, 6),
		types.String("a,b \"c\"\nd;e " + strings.Repeat("z", 30)), types.Bytes([]byte{0xfb, 0xff, 0}), types.Int(-719162),
		types.Int(86399999), types.Timestamp(-1, 999999), types.Timestamp(253402300799999, 0),
		types.Int(-32768), types.Int(25),
	}
	nulls := make(types.Row, len(schema))
	for _, row := range []types.Row{full, nulls} {
		text := encode(t, e, row)
		got, err := decode(d, len(schema), text)
		if err != nil {
			t.Fatalf("decode %s: %v", text, err)
		}
		for i := range row {
			if !reflect.DeepEqual(got[i], row[i]) {
				t.Errorf("%s via %s: got %+v, want %+v", schema[i].Name, text, got[i], row[i])
			}
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	schema := types.Schema{
		col("order_id", types.BigIntType), col("customer", types.StringType), col("price", types.DoubleType),
		col("order_time", types.TimestampType(3)), col("quantity", types.IntType), col("comment", types.StringType),
	}
	line := []byte(`1234567890123,customer-000042@example.com,1234.5678,2024-01-01 12:34:56.789,17,"deliver between 9 and 5, ring twice please"`)
	d := newDecoder(b, schema, nil)
	row := make(types.Row, len(schema))
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(line, row); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzCSVDecode(f *testing.F) {
	schema := types.Schema{
		col("i", types.IntType), col("s", types.StringType), col("d", types.DecimalType(10, 2)),
		col("ts", types.TimestampType(3)), col("arr", types.ArrayType(types.IntType)),
		col("r", types.RowType(types.Field{Name: "x", Type: types.IntType})), col("bin", types.BytesType),
	}
	f.Add([]byte(`1,"a,b",1.5,2024-01-01 00:00:00,1;2,3,AQID`))
	f.Add([]byte(`"unterminated`))
	d := newDecoder(f, schema, map[string]string{"escape-character": `\`})
	e := newEncoder(f, schema, map[string]string{"escape-character": `\`})
	f.Fuzz(func(t *testing.T, data []byte) {
		row := make(types.Row, len(schema))
		if err := d.Decode(data, row); err != nil {
			return
		}
		if _, err := e.Encode(nil, row); err != nil {
			t.Fatalf("encode of a decoded row: %v", err)
		}
	})
}
