package avro

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

func ctx(schema types.Schema, opts map[string]string) *formats.Context {
	if opts == nil {
		opts = map[string]string{}
	}
	return &formats.Context{Options: opts, Prefix: "avro.", Schema: schema, Loc: time.UTC}
}

var orders = types.Schema{
	{Name: "id", Type: types.IntType.WithNullable(false)},
	{Name: "name", Type: types.StringType},
	{Name: "amount", Type: types.DecimalType(10, 2)},
	{Name: "ts", Type: types.TimestampType(3)},
	{Name: "tags", Type: types.ArrayType(types.StringType)},
}

func codecs(t *testing.T, schema types.Schema, opts map[string]string) (*Decoder, *Encoder) {
	t.Helper()
	d, err := NewFactory().CreateDecoder(ctx(schema, opts))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewFactory().CreateEncoder(ctx(schema, opts))
	if err != nil {
		t.Fatal(err)
	}
	return d.(*Decoder), e.(*Encoder)
}

// The datum bytes worked out by hand from the Avro specification: zig-zag
// varints, a union's branch index before its value ("null" is branch 0),
// length-prefixed strings and bytes, arrays in blocks ending with 0.
func TestBinaryEncodingByHand(t *testing.T) {
	d, e := codecs(t, orders, nil)
	row := types.Row{
		types.Int(1), types.String("ab"), types.DecimalFromUnscaled(123, 2),
		types.TimestampMillis(1000), types.ArrayValue([]types.Value{types.String("x")}),
	}
	want := []byte{
		0x02,                 // id 1
		0x02, 0x04, 'a', 'b', // name: branch 1, "ab"
		0x02, 0x02, 0x7b, // amount: branch 1, 1 byte, unscaled 123
		0x02, 0xd0, 0x0f, // ts: branch 1, 1000 ms (zig-zag 2000)
		0x02, 0x02, 0x02, 0x02, 'x', 0x00, // tags: branch 1, block of 1, element branch 1 "x", end
	}
	got, err := e.Encode(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded % x\nwant      % x", got, want)
	}
	back := make(types.Row, len(orders))
	if err := d.Decode(want, back); err != nil {
		t.Fatal(err)
	}
	if s := render(back, orders); s != "[1, ab, 1.23, 1970-01-01 00:00:01.000, [x]]" {
		t.Errorf("decoded %s", s)
	}

	// NULLs are branch 0 with no value; a negative decimal is two's complement.
	row = types.Row{types.Int(-2), {}, types.DecimalFromUnscaled(-123, 2), {}, {}}
	want = []byte{0x03, 0x00, 0x02, 0x02, 0x85, 0x00, 0x00}
	got, err = e.Encode(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded % x\nwant      % x", got, want)
	}
	if err := d.Decode(want, back); err != nil {
		t.Fatal(err)
	}
	if s := render(back, orders); s != "[-2, NULL, -1.23, NULL, NULL]" {
		t.Errorf("decoded %s", s)
	}
	// A NOT NULL column refuses NULL.
	if _, err := e.Encode(nil, types.Row{{}, {}, {}, {}, {}}); err == nil || !strings.Contains(err.Error(), "field id") {
		t.Errorf("NULL id: %v", err)
	}
}

func render(r types.Row, s types.Schema) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = types.FormatSQL(v, s[i].Type, time.UTC)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// The derived schema is Flink's AvroSchemaConverter's: nullable types are
// ["null", type], nested records are named record_<field>.
func TestDerivedSchema(t *testing.T) {
	schema := types.Schema{
		{Name: "id", Type: types.BigIntType.WithNullable(false)},
		{Name: "b", Type: types.BooleanType},
		{Name: "t", Type: types.TinyIntType},
		{Name: "f", Type: types.FloatType},
		{Name: "d", Type: types.DoubleType},
		{Name: "bin", Type: types.BytesType},
		{Name: "day", Type: types.DateType},
		{Name: "tod", Type: types.TimeType(0)},
		{Name: "ts6", Type: types.TimestampType(6)},
		{Name: "ltz", Type: types.TimestampLTZType(3)},
		{Name: "m", Type: types.MapType(types.StringType, types.BigIntType)},
		{Name: "addr", Type: types.RowType(types.Field{Name: "city", Type: types.StringType}, types.Field{Name: "zip", Type: types.IntType.WithNullable(false)})},
	}
	want := `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
 {"name":"id","type":"long"},
 {"name":"b","type":["null","boolean"],"default":null},
 {"name":"t","type":["null","int"],"default":null},
 {"name":"f","type":["null","float"],"default":null},
 {"name":"d","type":["null","double"],"default":null},
 {"name":"bin","type":["null","bytes"],"default":null},
 {"name":"day","type":["null",{"type":"int","logicalType":"date"}],"default":null},
 {"name":"tod","type":["null",{"type":"int","logicalType":"time-millis"}],"default":null},
 {"name":"ts6","type":["null",{"type":"long","logicalType":"%s"}],"default":null},
 {"name":"ltz","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
 {"name":"m","type":["null",{"type":"map","values":["null","long"]}],"default":null},
 {"name":"addr","type":["null",{"type":"record","name":"record_addr","fields":[
   {"name":"city","type":["null","string"],"default":null},
   {"name":"zip","type":"int"}]}],"default":null}]}`
	for _, c := range []struct {
		legacy, logical string
	}{{"true", "timestamp-micros"}, {"false", "local-timestamp-micros"}} {
		d, _ := codecs(t, schema, map[string]string{"timestamp_mapping.legacy": c.legacy})
		exp, err := hamba.Parse(strings.Replace(want, "%s", c.logical, 1))
		if err != nil {
			t.Fatal(err)
		}
		if d.Schema().String() != exp.String() {
			t.Errorf("timestamp_mapping.legacy=%s: schema\n%s\nwant\n%s", c.legacy, d.Schema().String(), exp.String())
		}
	}

	// Round trip of every type.
	d, e := codecs(t, schema, nil)
	row := types.Row{
		types.Int(1 << 40), types.Bool(true), types.Int(-7), types.Float(float64(float32(1.5))), types.Float(2.25),
		types.Bytes([]byte{0, 1, 2}), types.Int(19000), types.Int(3723000), types.Timestamp(1700000000123, 456000),
		types.TimestampMillis(1700000000999), types.MapOf([]types.Value{types.String("k")}, []types.Value{types.Int(9)}),
		types.RowValue(types.Row{types.String("Paris"), types.Int(75001)}),
	}
	b, err := e.Encode(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	back := make(types.Row, len(schema))
	if err := d.Decode(b, back); err != nil {
		t.Fatal(err)
	}
	want2 := "[1099511627776, TRUE, -7, 1.5, 2.25, x'000102', 2022-01-08, 01:02:03, 2023-11-14 22:13:20.123456, 2023-11-14 22:13:20.999, {k=9}, (Paris, 75001)]"
	if s := render(back, schema); s != want2 {
		t.Errorf("round trip:\n%s\nwant\n%s", s, want2)
	}
}

func TestOptionsAndRefusals(t *testing.T) {
	f := NewFactory()
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"encoding": "json"}, "'avro.encoding' = 'json' (Avro's JSON encoding) is not supported yet"},
		{map[string]string{"encoding": "xml"}, "Invalid value for option 'avro.encoding'. Expected one of [binary, json], but was: xml"},
		{map[string]string{"codec": "snappy"}, "Option 'avro.codec' applies to the Avro files of the filesystem connector only"},
		{map[string]string{"codec": "lzo"}, "Expected one of [null, deflate, snappy, bzip2, xz], but was: lzo"},
		{map[string]string{"timestamp_mapping.legacy": "maybe"}, "Could not parse value 'maybe' for key 'avro.timestamp_mapping.legacy'"},
		{map[string]string{"schema": "{}"}, "Unsupported options found for format 'avro'."},
	} {
		if _, err := f.CreateDecoder(ctx(orders, c.opts)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.opts, err, c.want)
		}
	}
	if _, err := f.CreateDecoder(ctx(orders, map[string]string{"encoding": "binary"})); err != nil {
		t.Errorf("binary: %v", err)
	}
	for _, c := range []struct {
		t    types.Type
		want string
	}{
		{types.TimestampType(9), "Avro does not support TIMESTAMP type with precision: 9, it only supports precision less than 6."},
		{types.TimeType(3), ""},
		{types.MapType(types.IntType, types.IntType), "Avro format doesn't support non-string as key type of map."},
	} {
		_, err := f.CreateEncoder(ctx(types.Schema{{Name: "x", Type: c.t}}, nil))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.t, err, c.want)
		}
	}
}

// Bad input is an error, never a panic or a hang: truncated data, a bad
// union branch, a block count larger than the record.
func TestCorruptRecords(t *testing.T) {
	d, _ := codecs(t, orders, nil)
	row := make(types.Row, len(orders))
	for _, data := range [][]byte{
		{0x02, 0x02, 0x04, 'a'}, // string cut short
		{0x02, 0x04},            // union branch 2 of [null, string]
		{0x02, 0x00, 0x00, 0x00, 0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f}, // huge array block
		{0x80}, // unterminated varint
	} {
		err := d.Decode(data, row)
		if err == nil {
			t.Errorf("% x: decoded %v", data, row)
		}
	}
	if err := d.Decode(nil, row); !errors.Is(err, formats.ErrSkipRecord) {
		t.Errorf("empty record: %v", err)
	}
}

// The Schema Registry formats are refused, whatever their options: there is
// no Schema Registry client (and none can run in the tests).
func TestConfluentFormatsRefused(t *testing.T) {
	opts := map[string]string{
		"url": "http://localhost:8081", "subject": "s-value", "schema": "{}", "properties": "x",
		"basic-auth.credentials-source": "USER_INFO", "basic-auth.user-info": "u:p",
		"bearer-auth.credentials-source": "STATIC_TOKEN", "bearer-auth.token": "t",
		"ssl.keystore.location": "/k", "ssl.keystore.password": "p",
		"ssl.truststore.location": "/t", "ssl.truststore.password": "p",
	}
	for _, f := range []*RegistryFactory{NewConfluent(), NewDebeziumConfluent()} {
		if len(f.OptionalOptions()) != len(opts) {
			t.Fatalf("%s declares %d options, the test sets %d", f.Identifier(), len(f.OptionalOptions()), len(opts))
		}
		c := &formats.Context{Options: opts, Prefix: "value." + f.Identifier() + ".", Schema: orders, Loc: time.UTC}
		_, errD := f.CreateDecoder(c)
		_, errE := f.CreateEncoder(c)
		for _, err := range []error{errD, errE} {
			if err == nil || !strings.Contains(err.Error(), "Format '"+f.Identifier()+"' is not supported yet") ||
				!strings.Contains(err.Error(), "'value."+f.Identifier()+".url'") {
				t.Errorf("%s: %v", f.Identifier(), err)
			}
		}
	}
}
