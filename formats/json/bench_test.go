package json

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

var benchSchema = types.Schema{
	col("order_id", types.BigIntType),
	col("customer", types.StringType),
	col("price", types.DoubleType),
	col("order_time", types.TimestampType(3)),
	col("quantity", types.IntType),
	col("comment", types.StringType),
}

// benchRecord is a 200-byte record of the shape of a typical Kafka event.
var benchRecord = []byte(`{"order_id":1234567890123,"customer":"customer-000042@example.com","price":1234.5678,` +
	`"order_time":"2024-01-01 12:34:56.789","quantity":17,"comment":"deliver between 9 and 5, ring twice please thanks"}`)

func BenchmarkDecode(b *testing.B) {
	d := newDecoder(b, benchSchema, nil)
	row := make(types.Row, len(benchSchema))
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		clear(row)
		if err := d.Decode(benchRecord, row); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	e := newEncoder(b, benchSchema, nil)
	d := newDecoder(b, benchSchema, nil)
	row := make(types.Row, len(benchSchema))
	if err := d.Decode(benchRecord, row); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 512)
	out, _ := e.Encode(buf[:0], row)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.Encode(buf[:0], row); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzJSONDecode(f *testing.F) {
	schema := types.Schema{
		col("b", types.BooleanType),
		col("i", types.IntType),
		col("bi", types.BigIntType),
		col("d", types.DoubleType),
		col("dec", types.DecimalType(10, 3)),
		col("s", types.StringType),
		col("bin", types.BytesType),
		col("date", types.DateType),
		col("time", types.TimeType(3)),
		col("ts", types.TimestampType(3)),
		col("ltz", types.TimestampLTZType(3)),
		col("arr", types.ArrayType(types.IntType)),
		col("m", types.MapType(types.StringType, types.StringType)),
		col("r", types.RowType(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "y", Type: types.ArrayType(types.StringType)})),
	}
	f.Add([]byte(benchRecord))
	f.Add([]byte(`{"b":true,"i":"12","bi":1e3,"d":"NaN","dec":"1.2345","s":{"a":[1,2]},"bin":"AQID","date":"2024-02-29",` +
		`"time":"12:00:00.5","ts":"2024-01-01 00:00:00","ltz":"2024-01-01 00:00:00Z","arr":[1,null,"x"],"m":{"k":"v"},"r":{"x":1,"y":["a"]}}`))
	f.Add([]byte(`{"s":"\ud83d\ude00\u0000","unknown":[[{"a":[]}]],"r":null}`))
	f.Add([]byte(`{"a":`))
	enc := newEncoder(f, schema, nil)
	strict := newDecoder(f, schema, nil)
	lenient := newDecoder(f, schema, map[string]string{"ignore-parse-errors": "true"})
	f.Fuzz(func(t *testing.T, data []byte) {
		row := make(types.Row, len(schema))
		strictErr := strict.Decode(data, row)
		row2 := make(types.Row, len(schema))
		_ = lenient.Decode(data, row2)
		if strictErr != nil {
			return
		}
		// Whatever decodes must encode, and the encoding must decode again.
		out, err := enc.Encode(nil, row)
		if err != nil {
			t.Fatalf("encode of a decoded row: %v", err)
		}
		if err := strict.Decode(out, make(types.Row, len(schema))); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
	})
}
