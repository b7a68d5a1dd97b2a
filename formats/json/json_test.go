package json

import (
	"errors"
	"math"
	"math/big"
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
	return &formats.Context{Options: opts, Prefix: "json.", Schema: schema, Loc: time.UTC}
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

func decode(t *testing.T, d formats.Decoder, n int, data string) (types.Row, error) {
	t.Helper()
	row := make(types.Row, n)
	err := d.Decode([]byte(data), row)
	return row, err
}

func mustDecode(t *testing.T, d formats.Decoder, n int, data string) types.Row {
	t.Helper()
	row, err := decode(t, d, n, data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", data, err)
	}
	return row
}

func float32Value(f float32) types.Value { return types.Float(float64(f)) }

// 1990-10-14 is day 7591: 20 years of 365 days plus the leap days of 1972,
// 76, 80, 84 and 88 is 7305 to 1990-01-01; January to September hold 273
// days; plus 13.
const day19901014 = 7591

// 12:12:43.123 is 12*3600000 + 12*60000 + 43123 ms.
const ms121243123 = 43963123

// 1990-10-14 12:12:43.123 in epoch milliseconds: 7591*86400000 + 43963123.
const ts19901014 = 655906363123

func TestDecodeScalars(t *testing.T) {
	schema := types.Schema{
		col("bool", types.BooleanType),
		col("tinyint", types.TinyIntType),
		col("smallint", types.SmallIntType),
		col("int", types.IntType),
		col("bigint", types.BigIntType),
		col("float", types.FloatType),
		col("double", types.DoubleType),
		col("name", types.StringType),
		col("bytes", types.BytesType),
		col("decimal", types.DecimalType(9, 6)),
		col("date", types.DateType),
		col("time", types.TimeType(3)),
		col("ts3", types.TimestampType(3)),
		col("ts9", types.TimestampType(9)),
		col("ltz", types.TimestampLTZType(3)),
		col("nullval", types.StringType),
		col("missing", types.IntType),
	}
	d := newDecoder(t, schema, nil)
	got := mustDecode(t, d, len(schema), `{"bool":true,"tinyint":99,"smallint":128,"int":45536,"bigint":1238123899121,
		"float":33.333,"double":1.1,"name":"a\"b\\c\n\u00e9\ud83d\ude00","bytes":"AQID","decimal":123.456789,
		"date":"1990-10-14","time":"12:12:43.123","ts3":"1990-10-14 12:12:43.123",
		"ts9":"1990-10-14 12:12:43.123456789","ltz":"1990-10-14 12:12:43.123Z","nullval":null}`)
	want := types.Row{
		types.Bool(true),
		types.Int(99),
		types.Int(128),
		types.Int(45536),
		types.Int(1238123899121),
		float32Value(33.333),
		types.Float(1.1),
		types.String("a\"b\\c\né😀"),
		types.Bytes([]byte{1, 2, 3}),
		types.DecimalFromUnscaled(123456789, 6),
		types.Int(day19901014),
		types.Int(ms121243123),
		types.Timestamp(ts19901014, 0),
		types.Timestamp(ts19901014, 456789),
		types.Timestamp(ts19901014, 0),
		{},
		{},
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: got %+v, want %+v", schema[i].Name, got[i], want[i])
		}
	}
}

func TestDecodeNested(t *testing.T) {
	schema := types.Schema{
		col("row", types.RowType(types.Field{Name: "id", Type: types.StringType}, types.Field{Name: "n", Type: types.IntType})),
		col("doubles", types.ArrayType(types.DoubleType)),
		col("map", types.MapType(types.StringType, types.BigIntType)),
		col("multiset", types.Type{Root: types.RootMultiset, Elem: &types.StringType}),
		col("map2map", types.MapType(types.StringType, types.MapType(types.StringType, types.IntType))),
		col("rows", types.ArrayType(types.RowType(types.Field{Name: "x", Type: types.IntType}))),
	}
	d := newDecoder(t, schema, nil)
	got := mustDecode(t, d, len(schema), `{ "row" : {"n": 12, "junk": [1, {"a": null}], "id": "r1"},
		"doubles": [1.1, 2.2, null, 3.3], "map": {"element": 123, "other": null},
		"multiset": {"element": 2}, "map2map": {"inner_map": {"key": 234}},
		"rows": [{"x": 1}, null, {}], "unknown": {"deep": [[[]]]} }`)
	want := types.Row{
		types.RowValue(types.Row{types.String("r1"), types.Int(12)}),
		types.ArrayValue([]types.Value{types.Float(1.1), types.Float(2.2), {}, types.Float(3.3)}),
		types.MapOf([]types.Value{types.String("element"), types.String("other")}, []types.Value{types.Int(123), {}}),
		types.MapOf([]types.Value{types.String("element")}, []types.Value{types.Int(2)}),
		types.MapOf([]types.Value{types.String("inner_map")}, []types.Value{
			types.MapOf([]types.Value{types.String("key")}, []types.Value{types.Int(234)})}),
		types.ArrayValue([]types.Value{types.RowValue(types.Row{types.Int(1)}), {}, types.RowValue(types.Row{{}})}),
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: got %+v, want %+v", schema[i].Name, got[i], want[i])
		}
	}
}

// TestDecodeLenient pins the conversions Flink's JsonParser-based
// deserializer makes (JsonParserToRowDataConverters in Flink 1.20).
func TestDecodeLenient(t *testing.T) {
	cases := []struct {
		name string
		t    types.Type
		json string
		want types.Value
	}{
		{"bool from text", types.BooleanType, `"true"`, types.Bool(true)},
		{"bool from TRUE", types.BooleanType, `" TRUE "`, types.Bool(true)},
		{"bool from junk", types.BooleanType, `"trueA"`, types.Bool(false)},
		{"bool from number", types.BooleanType, `1`, types.Bool(false)},
		{"int from text", types.IntType, `" 123 "`, types.Int(123)},
		{"int from plus text", types.IntType, `"+7"`, types.Int(7)},
		{"int from fraction", types.IntType, `112.013`, types.Int(112)},
		{"int from negative fraction", types.IntType, `-112.9`, types.Int(-112)},
		{"bigint from fraction", types.BigIntType, `112.013`, types.Int(112)},
		{"bigint from exponent", types.BigIntType, `1e3`, types.Int(1000)},
		{"tinyint range", types.TinyIntType, `-128`, types.Int(-128)},
		{"double from text", types.DoubleType, `"1.5"`, types.Float(1.5)},
		{"double NaN text", types.DoubleType, `"NaN"`, types.Float(math.NaN())},
		{"double -Infinity text", types.DoubleType, `"-Infinity"`, types.Float(math.Inf(-1))},
		{"double from int", types.DoubleType, `3`, types.Float(3)},
		{"float from text", types.FloatType, `"0.1"`, float32Value(0.1)},
		{"string from true", types.StringType, `true`, types.String("true")},
		{"string from number", types.StringType, `123.234`, types.String("123.234")},
		{"string from int", types.StringType, `1234567`, types.String("1234567")},
		{"string from array", types.StringType, `["array data1", "array data2",123, 234.345]`,
			types.String(`["array data1","array data2",123,234.345]`)},
		{"string from object", types.StringType, `{"k1":123, "k2" : 234.234,"k3":"string data"}`,
			types.String(`{"k1":123,"k2":234.234,"k3":"string data"}`)},
		{"string with raw tab", types.StringType, "\"\tstring field\"", types.String("\tstring field")},
		{"decimal exact", types.DecimalType(38, 18), `799.929496989092949698`,
			types.DecimalFromBig(bigInt("799929496989092949698"), 18)},
		{"decimal from text", types.DecimalType(10, 3), `" 1.5 "`, types.DecimalFromUnscaled(1500, 3)},
		{"decimal half up", types.DecimalType(5, 2), `123.455`, types.DecimalFromUnscaled(12346, 2)},
		{"decimal half up negative", types.DecimalType(5, 2), `-1.005`, types.DecimalFromUnscaled(-101, 2)},
		{"decimal exponent", types.DecimalType(10, 2), `1.5E2`, types.DecimalFromUnscaled(15000, 2)},
		{"decimal overflow is NULL", types.DecimalType(5, 2), `1234.5`, types.Value{}},
		{"decimal rounds into overflow", types.DecimalType(3, 0), `999.5`, types.Value{}},
		{"iso timestamp without seconds", types.TimestampType(3), `"1990-10-14 12:12:43"`, types.Timestamp(ts19901014-123, 0)},
		{"time without fraction", types.TimeType(0), `"00:00:01"`, types.Int(1000)},
		{"null type", types.NullType, `"anything"`, types.Value{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newDecoder(t, types.Schema{col("id", c.t)}, nil)
			got := mustDecode(t, d, 1, `{"id":`+c.json+`}`)
			if c.want.K == types.KindFloat && math.IsNaN(c.want.Float()) {
				if got[0].K != types.KindFloat || !math.IsNaN(got[0].Float()) {
					t.Fatalf("got %+v, want NaN", got[0])
				}
				return
			}
			if !reflect.DeepEqual(got[0], c.want) {
				t.Fatalf("got %+v, want %+v", got[0], c.want)
			}
		})
	}
}

func bigInt(s string) *big.Int {
	b, _ := new(big.Int).SetString(s, 10)
	return b
}

// TestDecodeErrors pins the error text for conversion errors and malformed
// records, and what ignore-parse-errors makes of each: the field becomes
// NULL (conversion) or the record is skipped (malformed JSON).
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name    string
		schema  types.Schema
		iso     bool
		json    string
		wantErr string
		// with ignore-parse-errors: nil means the record is skipped
		ignored types.Row
	}{
		{
			name:    "type mismatch",
			schema:  types.Schema{col("f0", types.StringType), col("f1", types.IntType)},
			json:    `{"f0":"abc", "f1": "abc"}`,
			wantErr: `Failed to deserialize JSON '{"f0":"abc", "f1": "abc"}': Fail to deserialize at field: f1: For input string: "abc" (cannot convert to INT)`,
			ignored: types.Row{types.String("abc"), {}},
		},
		{
			name:    "int overflow",
			schema:  types.Schema{col("id", types.IntType)},
			json:    `{"id":11211111111.013}`,
			wantErr: `Failed to deserialize JSON '{"id":11211111111.013}': Fail to deserialize at field: id: Numeric value (11211111111.013) out of range of INT`,
			ignored: types.Row{{}},
		},
		{
			name:    "tinyint overflow",
			schema:  types.Schema{col("id", types.TinyIntType)},
			json:    `{"id":128}`,
			wantErr: `Failed to deserialize JSON '{"id":128}': Fail to deserialize at field: id: Numeric value (128) out of range of TINYINT`,
			ignored: types.Row{{}},
		},
		{
			name:    "float text",
			schema:  types.Schema{col("id", types.FloatType)},
			json:    `{"id":"112.013.123"}`,
			wantErr: `Failed to deserialize JSON '{"id":"112.013.123"}': Fail to deserialize at field: id: For input string: "112.013.123" (cannot convert to FLOAT)`,
			ignored: types.Row{{}},
		},
		{
			name:    "bad time",
			schema:  types.Schema{col("id", types.TimeType(0))},
			json:    `{"id":"18:00:243"}`,
			wantErr: `Failed to deserialize JSON '{"id":"18:00:243"}': Fail to deserialize at field: id: Text '18:00:243' could not be parsed as TIME 'HH:mm:ss[.fffffffff]'`,
			ignored: types.Row{{}},
		},
		{
			name:    "bad date",
			schema:  types.Schema{col("id", types.DateType)},
			json:    `{"id":"20191112"}`,
			wantErr: `Failed to deserialize JSON '{"id":"20191112"}': Fail to deserialize at field: id: Text '20191112' could not be parsed as DATE 'yyyy-MM-dd'`,
			ignored: types.Row{{}},
		},
		{
			name:    "impossible date",
			schema:  types.Schema{col("id", types.DateType)},
			json:    `{"id":"2019-02-30"}`,
			wantErr: `Failed to deserialize JSON '{"id":"2019-02-30"}': Fail to deserialize at field: id: Text '2019-02-30' could not be parsed as DATE 'yyyy-MM-dd'`,
			ignored: types.Row{{}},
		},
		{
			name:    "ISO text in SQL standard",
			schema:  types.Schema{col("id", types.TimestampType(0))},
			json:    `{"id":"2019-11-12T18:00:12"}`,
			wantErr: `Failed to deserialize JSON '{"id":"2019-11-12T18:00:12"}': Fail to deserialize at field: id: Text '2019-11-12T18:00:12' could not be parsed as TIMESTAMP(0) 'yyyy-MM-dd HH:mm:ss[.fffffffff]'`,
			ignored: types.Row{{}},
		},
		{
			name:    "SQL text in ISO standard",
			schema:  types.Schema{col("id", types.TimestampType(0))},
			iso:     true,
			json:    `{"id":"2019-11-12 18:00:12"}`,
			wantErr: `Failed to deserialize JSON '{"id":"2019-11-12 18:00:12"}': Fail to deserialize at field: id: Text '2019-11-12 18:00:12' could not be parsed as TIMESTAMP(0) 'yyyy-MM-ddTHH:mm[:ss[.fffffffff]]'`,
			ignored: types.Row{{}},
		},
		{
			name:    "Z on a TIMESTAMP",
			schema:  types.Schema{col("id", types.TimestampType(0))},
			iso:     true,
			json:    `{"id":"2019-11-12T18:00:12Z"}`,
			wantErr: `Failed to deserialize JSON '{"id":"2019-11-12T18:00:12Z"}': Fail to deserialize at field: id: Text '2019-11-12T18:00:12Z' could not be parsed as TIMESTAMP(0) 'yyyy-MM-ddTHH:mm[:ss[.fffffffff]]'`,
			ignored: types.Row{{}},
		},
		{
			name:    "no Z on a TIMESTAMP_LTZ",
			schema:  types.Schema{col("id", types.TimestampLTZType(0))},
			json:    `{"id":"2019-11-12 18:00:12"}`,
			wantErr: `Failed to deserialize JSON '{"id":"2019-11-12 18:00:12"}': Fail to deserialize at field: id: Text '2019-11-12 18:00:12' could not be parsed as TIMESTAMP_LTZ(0) 'yyyy-MM-dd HH:mm:ss[.fffffffff]Z'`,
			ignored: types.Row{{}},
		},
		{
			name:    "decimal text",
			schema:  types.Schema{col("id", types.DecimalType(10, 3))},
			json:    `{"id":"abc"}`,
			wantErr: `Failed to deserialize JSON '{"id":"abc"}': Fail to deserialize at field: id: Character array is not a valid decimal number: "abc"`,
			ignored: types.Row{{}},
		},
		{
			name:    "array element",
			schema:  types.Schema{col("array", types.ArrayType(types.IntType))},
			json:    `{"array":[123, "abc"]}`,
			wantErr: `Failed to deserialize JSON '{"array":[123, "abc"]}': Fail to deserialize at field: array: For input string: "abc" (cannot convert to INT)`,
			ignored: types.Row{types.ArrayValue([]types.Value{types.Int(123), {}})},
		},
		{
			name:    "map value",
			schema:  types.Schema{col("map", types.MapType(types.StringType, types.IntType))},
			json:    `{"map":{"key1":"123", "key2":"abc"}}`,
			wantErr: `Failed to deserialize JSON '{"map":{"key1":"123", "key2":"abc"}}': Fail to deserialize at field: map: For input string: "abc" (cannot convert to INT)`,
			ignored: types.Row{types.MapOf([]types.Value{types.String("key1"), types.String("key2")}, []types.Value{types.Int(123), {}})},
		},
		{
			name:    "nested row field",
			schema:  types.Schema{col("row", types.RowType(types.Field{Name: "id", Type: types.IntType}))},
			json:    `{"row":{"id":"abc"}}`,
			wantErr: `Failed to deserialize JSON '{"row":{"id":"abc"}}': Fail to deserialize at field: row: Fail to deserialize at field: id: For input string: "abc" (cannot convert to INT)`,
			ignored: types.Row{types.RowValue(types.Row{{}})},
		},
		{
			name:    "array for a row",
			schema:  types.Schema{col("row", types.RowType(types.Field{Name: "id", Type: types.IntType}))},
			json:    `{"row":[1]}`,
			wantErr: `Failed to deserialize JSON '{"row":[1]}': Fail to deserialize at field: row: cannot convert a JSON array to ROW<` + "`id`" + ` INT>`,
			ignored: types.Row{{}},
		},
		{
			name:    "bytes not base64",
			schema:  types.Schema{col("b", types.BytesType)},
			json:    `{"b":"!!"}`,
			wantErr: `Failed to deserialize JSON '{"b":"!!"}': Fail to deserialize at field: b: Unable to deserialize byte array: illegal base64 data at input byte 0`,
			ignored: types.Row{{}},
		},
		{
			name:    "malformed",
			schema:  types.Schema{col("a", types.IntType)},
			json:    `{"a":1 x}`,
			wantErr: `Failed to deserialize JSON '{"a":1 x}': Unexpected character 'x' at byte 7`,
		},
		{
			name:    "truncated",
			schema:  types.Schema{col("a", types.StringType)},
			json:    `{"a":"abc`,
			wantErr: `Failed to deserialize JSON '{"a":"abc': Unexpected end of input in string at byte 9`,
		},
		{
			name:    "leading zero",
			schema:  types.Schema{col("a", types.IntType)},
			json:    `{"a":01}`,
			wantErr: `Failed to deserialize JSON '{"a":01}': Invalid numeric value: Leading zeroes not allowed at byte 6`,
		},
		{
			name:    "not an object",
			schema:  types.Schema{col("a", types.IntType)},
			json:    `[1,2]`,
			wantErr: `Failed to deserialize JSON '[1,2]': Expected a JSON object but found '[' at byte 0`,
		},
		{
			name:    "malformed unknown field",
			schema:  types.Schema{col("a", types.IntType)},
			json:    `{"b":[1,}`,
			wantErr: `Failed to deserialize JSON '{"b":[1,}': Unexpected character '}' at byte 8`,
		},
		{
			name:    "long record is quoted to 100 bytes",
			schema:  types.Schema{col("a", types.IntType)},
			json:    `{"a":"` + strings.Repeat("x", 200) + `"}`,
			wantErr: `Failed to deserialize JSON '{"a":"` + strings.Repeat("x", 94) + `...': Fail to deserialize at field: a: For input string: "` + strings.Repeat("x", 200) + `" (cannot convert to INT)`,
			ignored: types.Row{{}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := map[string]string{}
			if c.iso {
				opts["timestamp-format.standard"] = "ISO-8601"
			}
			d := newDecoder(t, c.schema, opts)
			_, err := decode(t, d, len(c.schema), c.json)
			if err == nil || err.Error() != c.wantErr {
				t.Fatalf("error\n got: %v\nwant: %s", err, c.wantErr)
			}
			opts["ignore-parse-errors"] = "true"
			d = newDecoder(t, c.schema, opts)
			row, err := decode(t, d, len(c.schema), c.json)
			if c.ignored == nil {
				if !errors.Is(err, formats.ErrSkipRecord) {
					t.Fatalf("ignore-parse-errors: got %v, want ErrSkipRecord", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ignore-parse-errors: %v", err)
			}
			if !reflect.DeepEqual(row, c.ignored) {
				t.Fatalf("ignore-parse-errors: got %+v, want %+v", row, c.ignored)
			}
		})
	}
}

func TestMissingFields(t *testing.T) {
	schema := types.Schema{col("name", types.StringType), col("id", types.IntType)}
	d := newDecoder(t, schema, nil)
	row := mustDecode(t, d, 2, `{"id":123123123}`)
	if want := (types.Row{{}, types.Int(123123123)}); !reflect.DeepEqual(row, want) {
		t.Fatalf("got %+v, want %+v", row, want)
	}
	d = newDecoder(t, schema, map[string]string{"fail-on-missing-field": "true"})
	_, err := decode(t, d, 2, `{"id":123123123}`)
	if want := `Failed to deserialize JSON '{"id":123123123}': Could not find field with name 'name'.`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	// A null value is present, not missing.
	if _, err := decode(t, d, 2, `{"id":1,"name":null}`); err != nil {
		t.Fatalf("explicit null: %v", err)
	}
	// fail-on-missing-field applies to nested rows too.
	nested := types.Schema{col("r", types.RowType(types.Field{Name: "a", Type: types.IntType}))}
	d = newDecoder(t, nested, map[string]string{"fail-on-missing-field": "true"})
	_, err = decode(t, d, 1, `{"r":{}}`)
	if want := `Failed to deserialize JSON '{"r":{}}': Fail to deserialize at field: r: Could not find field with name 'a'.`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestEmptyRecordIsSkipped(t *testing.T) {
	d := newDecoder(t, types.Schema{col("a", types.IntType)}, nil)
	if _, err := decode(t, d, 1, ""); !errors.Is(err, formats.ErrSkipRecord) {
		t.Fatalf("got %v, want ErrSkipRecord", err)
	}
}

func TestOptionErrors(t *testing.T) {
	schema := types.Schema{col("a", types.IntType)}
	cases := []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"timestamp-format.standard": "iso"},
			"Unsupported value 'iso' for json.timestamp-format.standard. Supported values are [SQL, ISO-8601]."},
		{map[string]string{"map-null-key.mode": "KEEP"},
			"Unsupported value 'KEEP' for option json.map-null-key.mode. Supported values are [FAIL, DROP, LITERAL]."},
		{map[string]string{"ignore-parse-errors": "yes"},
			"Could not parse value 'yes' for key 'json.ignore-parse-errors'. Supported values are [true, false]."},
		{map[string]string{"fail-on-missing-field": "true", "ignore-parse-errors": "true"},
			"json.fail-on-missing-field and json.ignore-parse-errors shouldn't both be true."},
		{map[string]string{"fail-on-missing": "true"},
			"Unsupported options found for format 'json'.\n\nUnsupported options:\n\njson.fail-on-missing\n\nSupported options:\n\n" +
				"json.decode.json-parser.enabled\njson.encode.decimal-as-plain-number\njson.encode.ignore-null-fields\njson.fail-on-missing-field\n" +
				"json.ignore-parse-errors\njson.map-null-key.literal\njson.map-null-key.mode\njson.timestamp-format.standard"},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateDecoder(ctx(schema, c.opts))
		if err == nil || err.Error() != c.want {
			t.Errorf("options %v:\n got: %v\nwant: %s", c.opts, err, c.want)
		}
	}
	// map-null-key.mode is case-insensitive, as in Flink.
	if _, err := NewFactory().CreateEncoder(ctx(schema, map[string]string{"map-null-key.mode": "drop"})); err != nil {
		t.Errorf("lower-case mode: %v", err)
	}
	_, err := NewFactory().CreateEncoder(ctx(types.Schema{col("m", types.MapType(types.IntType, types.IntType))}, nil))
	if want := "JSON format doesn't support non-string as key type of map. The type is: MAP<INT, INT>"; err == nil || err.Error() != want {
		t.Errorf("int map key: got %v, want %s", err, want)
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

// TestEncodeExact checks bytes written by hand from Flink's documented output
// (JsonRowDataSerDeSchemaTest in Flink 1.20).
func TestEncodeExact(t *testing.T) {
	t.Run("all types, ISO-8601", func(t *testing.T) {
		schema := types.Schema{
			col("bool", types.BooleanType),
			col("tinyint", types.TinyIntType),
			col("smallint", types.SmallIntType),
			col("int", types.IntType),
			col("bigint", types.BigIntType),
			col("float", types.FloatType),
			col("name", types.StringType),
			col("bytes", types.BytesType),
			col("decimal", types.DecimalType(9, 6)),
			col("doubles", types.ArrayType(types.DoubleType)),
			col("date", types.DateType),
			col("time", types.TimeType(0)),
			col("timestamp3", types.TimestampType(3)),
			col("timestamp9", types.TimestampType(9)),
			col("ltz9", types.TimestampLTZType(9)),
			col("map", types.MapType(types.StringType, types.BigIntType)),
		}
		e := newEncoder(t, schema, map[string]string{"timestamp-format.standard": "ISO-8601"})
		got := encode(t, e, types.Row{
			types.Bool(true), types.Int(99), types.Int(128), types.Int(45536), types.Int(1238123899121),
			float32Value(33.333), types.String("asdlkjasjkdla998y1122"), types.Bytes([]byte{1, 2, 3}),
			types.DecimalFromUnscaled(123456789, 6),
			types.ArrayValue([]types.Value{types.Float(1.1), types.Float(2.2), types.Float(3.3)}),
			types.Int(day19901014), types.Int(12*3600000 + 12*60000 + 43000),
			types.Timestamp(ts19901014, 0), types.Timestamp(ts19901014, 456789), types.Timestamp(ts19901014, 456789),
			types.MapOf([]types.Value{types.String("element")}, []types.Value{types.Int(123)}),
		})
		want := `{"bool":true,"tinyint":99,"smallint":128,"int":45536,"bigint":1238123899121,"float":33.333,` +
			`"name":"asdlkjasjkdla998y1122","bytes":"AQID","decimal":123.456789,"doubles":[1.1,2.2,3.3],` +
			`"date":"1990-10-14","time":"12:12:43","timestamp3":"1990-10-14T12:12:43.123",` +
			`"timestamp9":"1990-10-14T12:12:43.123456789","ltz9":"1990-10-14T12:12:43.123456789Z","map":{"element":123}}`
		if got != want {
			t.Fatalf("\n got: %s\nwant: %s", got, want)
		}
	})
	t.Run("SQL timestamps", func(t *testing.T) {
		schema := types.Schema{
			col("timestamp3", types.TimestampType(3)),
			col("timestamp9", types.TimestampType(9)),
			col("ltz3", types.TimestampLTZType(3)),
			col("zero_fraction", types.TimestampType(3)),
			col("trailing_zero", types.TimestampType(3)),
			col("before_epoch", types.TimestampType(3)),
			col("time_ms", types.TimeType(3)),
		}
		e := newEncoder(t, schema, nil)
		got := encode(t, e, types.Row{
			types.Timestamp(ts19901014, 0), types.Timestamp(ts19901014, 456789), types.Timestamp(ts19901014, 0),
			types.Timestamp(ts19901014-123, 0), types.Timestamp(ts19901014-23, 0), types.Timestamp(-1, 0),
			types.Int(ms121243123),
		})
		// java.time prints a fraction without its trailing zeros and none
		// when it is zero; Flink writes TIME as whole seconds.
		want := `{"timestamp3":"1990-10-14 12:12:43.123","timestamp9":"1990-10-14 12:12:43.123456789",` +
			`"ltz3":"1990-10-14 12:12:43.123Z","zero_fraction":"1990-10-14 12:12:43","trailing_zero":"1990-10-14 12:12:43.1",` +
			`"before_epoch":"1969-12-31 23:59:59.999","time_ms":"12:12:43"}`
		if got != want {
			t.Fatalf("\n got: %s\nwant: %s", got, want)
		}
	})
	t.Run("decimals", func(t *testing.T) {
		schema := types.Schema{
			col("decimal1", types.DecimalType(9, 6)),
			col("decimal2", types.DecimalType(20, 0)),
			col("decimal3", types.DecimalType(11, 9)),
			col("decimal4", types.DecimalType(10, 2)),
			col("decimal5", types.DecimalType(10, 2)),
			col("decimal6", types.DecimalType(10, 2)),
		}
		row := types.Row{
			types.DecimalFromUnscaled(123456789, 6),
			types.DecimalFromUnscaled(454621864049246170, 0),
			types.DecimalFromUnscaled(27, 9),
			types.DecimalFromUnscaled(1250, 2),  // 12.50
			types.DecimalFromUnscaled(10000, 2), // 100.00
			types.DecimalFromUnscaled(0, 2),     // 0.00
		}
		sci := encode(t, newEncoder(t, schema, nil), row)
		wantSci := `{"decimal1":123.456789,"decimal2":4.5462186404924617E+17,"decimal3":2.7E-8,"decimal4":12.5,"decimal5":1E+2,"decimal6":0}`
		if sci != wantSci {
			t.Errorf("scientific\n got: %s\nwant: %s", sci, wantSci)
		}
		plain := encode(t, newEncoder(t, schema, map[string]string{"encode.decimal-as-plain-number": "true"}), row)
		wantPlain := `{"decimal1":123.456789,"decimal2":454621864049246170,"decimal3":0.000000027,"decimal4":12.5,"decimal5":100,"decimal6":0}`
		if plain != wantPlain {
			t.Errorf("plain\n got: %s\nwant: %s", plain, wantPlain)
		}
	})
	t.Run("map null keys", func(t *testing.T) {
		inner := types.MapType(types.StringType, types.IntType)
		schema := types.Schema{col("nestedMap", types.MapType(types.StringType, inner))}
		innerMap := types.MapOf([]types.Value{types.String("no-null key"), {}}, []types.Value{types.Int(1), types.Int(2)})
		row := types.Row{types.MapOf([]types.Value{types.String("no-null key"), {}}, []types.Value{innerMap, innerMap})}

		_, err := newEncoder(t, schema, nil).Encode(nil, row)
		wantErr := "Fail to serialize at field: nestedMap: JSON format doesn't support to serialize map data with null keys. " +
			"You can drop null key entries or encode null in literals by specifying json.map-null-key.mode option."
		if err == nil || err.Error() != wantErr {
			t.Errorf("FAIL\n got: %v\nwant: %s", err, wantErr)
		}
		drop := encode(t, newEncoder(t, schema, map[string]string{"map-null-key.mode": "DROP"}), row)
		if want := `{"nestedMap":{"no-null key":{"no-null key":1}}}`; drop != want {
			t.Errorf("DROP\n got: %s\nwant: %s", drop, want)
		}
		lit := encode(t, newEncoder(t, schema, map[string]string{"map-null-key.mode": "LITERAL", "map-null-key.literal": "nullKey"}), row)
		if want := `{"nestedMap":{"no-null key":{"no-null key":1,"nullKey":2},"nullKey":{"no-null key":1,"nullKey":2}}}`; lit != want {
			t.Errorf("LITERAL\n got: %s\nwant: %s", lit, want)
		}
	})
	t.Run("nulls, escapes, special floats", func(t *testing.T) {
		schema := types.Schema{
			col("s", types.StringType),
			col("n", types.IntType),
			col("d", types.DoubleType),
			col("f", types.FloatType),
			col("big", types.DoubleType),
			col("r", types.RowType(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "y", Type: types.StringType})),
			col("a", types.ArrayType(types.IntType)),
		}
		row := types.Row{
			types.String("q\"b\\s/\x01\t\n\r\b\féé\xff"), {}, types.Float(math.NaN()), float32Value(float32(math.Inf(-1))),
			types.Float(1e10), types.RowValue(types.Row{types.Int(1), {}}), types.ArrayValue([]types.Value{{}, types.Int(2)}),
		}
		got := encode(t, newEncoder(t, schema, nil), row)
		want := `{"s":"q\"b\\s/\u0001\t\n\r\b\féé` + "\uFFFD" + `","n":null,"d":"NaN","f":"-Infinity","big":1.0E10,"r":{"x":1,"y":null},"a":[null,2]}`
		if got != want {
			t.Errorf("\n got: %s\nwant: %s", got, want)
		}
		got = encode(t, newEncoder(t, schema, map[string]string{"encode.ignore-null-fields": "true"}), row)
		want = `{"s":"q\"b\\s/\u0001\t\n\r\b\féé` + "\uFFFD" + `","d":"NaN","f":"-Infinity","big":1.0E10,"r":{"x":1},"a":[null,2]}`
		if got != want {
			t.Errorf("ignore-null-fields\n got: %s\nwant: %s", got, want)
		}
	})
}

// TestRoundTrip encodes every scalar type, with and without NULLs, in both
// timestamp standards and decodes it back to the same row.
func TestRoundTrip(t *testing.T) {
	schema := types.Schema{
		col("b", types.BooleanType),
		col("ti", types.TinyIntType),
		col("si", types.SmallIntType),
		col("i", types.IntType),
		col("bi", types.BigIntType),
		col("f", types.FloatType),
		col("d", types.DoubleType),
		col("dec", types.DecimalType(38, 10)),
		col("c", types.CharType(3)),
		col("s", types.StringType),
		col("bin", types.BytesType),
		col("date", types.DateType),
		col("time", types.TimeType(0)),
		col("ts", types.TimestampType(9)),
		col("ltz", types.TimestampLTZType(6)),
		col("iym", types.Type{Root: types.RootIntervalYearMonth}),
		col("idt", types.Type{Root: types.RootIntervalDayTime}),
	}
	full := types.Row{
		types.Bool(false), types.Int(-128), types.Int(32767), types.Int(math.MinInt32), types.Int(math.MaxInt64),
		float32Value(-1.25e-7), types.Float(math.MaxFloat64),
		types.DecimalFromBig(bigInt("-12345678901234567890123456780123456789"), 10),
		types.String("abc"), types.String("\x00 ünïcødé \"\\ \u2028"), types.Bytes([]byte{0, 255, 128}),
		types.Int(-719162), types.Int(86399000), types.Timestamp(-62135596800000, 999999),
		types.Timestamp(253402300799999, 999000), types.Int(-14), types.Int(86400001),
	}
	nulls := make(types.Row, len(schema))
	for _, iso := range []bool{false, true} {
		opts := map[string]string{}
		if iso {
			opts["timestamp-format.standard"] = "ISO-8601"
		}
		e := newEncoder(t, schema, opts)
		d := newDecoder(t, schema, opts)
		for _, row := range []types.Row{full, nulls} {
			text := encode(t, e, row)
			got := mustDecode(t, d, len(schema), text)
			for i := range row {
				if !reflect.DeepEqual(got[i], row[i]) {
					t.Errorf("iso=%v %s via %s: got %+v, want %+v", iso, schema[i].Name, text, got[i], row[i])
				}
			}
		}
	}
}

func TestDecoderNeverAliasesInput(t *testing.T) {
	d := newDecoder(t, types.Schema{col("s", types.StringType)}, nil)
	data := []byte(`{"s":"hello"}`)
	row := make(types.Row, 1)
	if err := d.Decode(data, row); err != nil {
		t.Fatal(err)
	}
	copy(data, strings.Repeat("x", len(data)))
	if row[0].S != "hello" {
		t.Fatalf("string aliases the record: %q", row[0].S)
	}
}
