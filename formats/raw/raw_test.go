package raw

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

func ctx(t types.Type, opts map[string]string) *formats.Context {
	if opts == nil {
		opts = map[string]string{}
	}
	return &formats.Context{Options: opts, Prefix: "raw.", Schema: types.Schema{{Name: "v", Type: t}}, Loc: time.UTC}
}

func TestRoundTripBytes(t *testing.T) {
	le := map[string]string{"endianness": "little-endian"}
	cases := []struct {
		name string
		t    types.Type
		opts map[string]string
		v    types.Value
		enc  []byte
	}{
		{"int big-endian", types.IntType, nil, types.Int(0x01020304), []byte{1, 2, 3, 4}},
		{"int little-endian", types.IntType, le, types.Int(0x01020304), []byte{4, 3, 2, 1}},
		{"negative int", types.IntType, nil, types.Int(-2), []byte{0xff, 0xff, 0xff, 0xfe}},
		{"bigint", types.BigIntType, nil, types.Int(-2), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}},
		{"bigint little-endian", types.BigIntType, le, types.Int(1), []byte{1, 0, 0, 0, 0, 0, 0, 0}},
		{"smallint", types.SmallIntType, nil, types.Int(-32768), []byte{0x80, 0}},
		{"smallint little-endian", types.SmallIntType, le, types.Int(0x0102), []byte{2, 1}},
		{"tinyint", types.TinyIntType, nil, types.Int(-1), []byte{0xff}},
		{"boolean", types.BooleanType, nil, types.Bool(true), []byte{1}},
		{"float", types.FloatType, nil, types.Float(1.5), []byte{0x3f, 0xc0, 0, 0}},
		{"double", types.DoubleType, nil, types.Float(1.5), []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"double little-endian", types.DoubleType, le, types.Float(1.5), []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}},
		{"string", types.StringType, nil, types.String("héllo"), []byte("héllo")},
		{"empty string", types.StringType, nil, types.String(""), []byte{}},
		{"latin1", types.StringType, map[string]string{"charset": "ISO-8859-1"}, types.String("héllo"), []byte{'h', 0xe9, 'l', 'l', 'o'}},
		{"utf-16le", types.VarCharType(10), map[string]string{"charset": "utf-16le"}, types.String("hé"), []byte{'h', 0, 0xe9, 0}},
		{"bytes", types.BytesType, nil, types.Bytes([]byte{0, 1, 0xff}), []byte{0, 1, 0xff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewFactory().CreateEncoder(ctx(c.t, c.opts))
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Encode(nil, types.Row{c.v})
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !bytes.Equal(got, c.enc) {
				t.Fatalf("encoded %#v, want %#v", got, c.enc)
			}
			d, err := NewFactory().CreateDecoder(ctx(c.t, c.opts))
			if err != nil {
				t.Fatal(err)
			}
			row := make(types.Row, 1)
			if err := d.Decode(c.enc, row); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row[0], c.v) {
				t.Fatalf("decoded %+v, want %+v", row[0], c.v)
			}
		})
	}
}

func TestNull(t *testing.T) {
	e, _ := NewFactory().CreateEncoder(ctx(types.IntType, nil))
	out, err := e.Encode(make([]byte, 0, 8), types.Row{{}})
	if err != nil || out != nil {
		t.Fatalf("NULL encoded as %#v, %v; want nil", out, err)
	}
	d, _ := NewFactory().CreateDecoder(ctx(types.StringType, nil))
	row := types.Row{types.String("stale")}
	if err := d.Decode(nil, row); err != nil || row[0].K != types.KindNull {
		t.Fatalf("nil record decoded as %+v, %v; want NULL", row[0], err)
	}
	row[0] = types.Value{}
	if err := d.Decode([]byte{}, row); err != nil || !reflect.DeepEqual(row[0], types.String("")) {
		t.Fatalf("empty record decoded as %+v, %v; want ''", row[0], err)
	}
}

func TestSpecialFloats(t *testing.T) {
	e, _ := NewFactory().CreateEncoder(ctx(types.DoubleType, nil))
	d, _ := NewFactory().CreateDecoder(ctx(types.DoubleType, nil))
	out, _ := e.Encode(nil, types.Row{types.Float(math.Inf(-1))})
	row := make(types.Row, 1)
	if err := d.Decode(out, row); err != nil || !math.IsInf(row[0].Float(), -1) {
		t.Fatalf("got %v %v", row[0], err)
	}
}

func TestErrors(t *testing.T) {
	d, _ := NewFactory().CreateDecoder(ctx(types.IntType, nil))
	err := d.Decode([]byte{1, 2, 3}, make(types.Row, 1))
	if want := "Size of data received for deserializing INT type is not 4 (got 3 bytes: 010203)."; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	two := &formats.Context{Options: map[string]string{}, Prefix: "raw.", Schema: types.Schema{
		{Name: "f0", Type: types.StringType}, {Name: "f1", Type: types.BigIntType}}}
	cases := []struct {
		c    *formats.Context
		want string
	}{
		{two, "The 'raw' format only supports single physical column. However the defined schema contains 2 physical columns: [`f0` STRING, `f1` BIGINT]"},
		{ctx(types.DateType, nil), "The 'raw' format doesn't supports 'DATE' as column type."},
		{ctx(types.IntType, map[string]string{"endianness": "middle"}),
			"Unsupported endianness name: middle. Valid values of 'raw.endianness' option are 'big-endian' and 'little-endian'."},
		{ctx(types.StringType, map[string]string{"charset": "EBCDIC"}),
			"Unsupported 'raw.charset' name: EBCDIC. Supported charsets are ASCII, ISO-8859-1, ISO8859_1, LATIN1, US-ASCII, UTF-16, UTF-16BE, UTF-16LE, UTF-8, UTF8."},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateDecoder(c.c)
		if err == nil || err.Error() != c.want {
			t.Errorf("\n got: %v\nwant: %s", err, c.want)
		}
	}
}
