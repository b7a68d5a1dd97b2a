package cdc

import (
	"testing"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

var benchSchema = types.Schema{
	{Name: "user_id", Type: types.BigIntType},
	{Name: "item_id", Type: types.BigIntType},
	{Name: "category", Type: types.StringType},
	{Name: "behavior", Type: types.StringType},
	{Name: "price", Type: types.DoubleType},
	{Name: "ts", Type: types.TimestampType(3)},
	{Name: "note", Type: types.StringType},
}

const benchRow = `{"user_id":100042,"item_id":5000042,"category":"electronics-3","behavior":"purchase","price":42.25,"ts":"2024-05-01 12:00:42.123","note":"a note long enough to make the record about two hundred bytes"}`

var benchUpdate = []byte(`{"before":` + benchRow + `,"after":` + benchRow + `,"source":{"version":"2.7.0.Final","connector":"mysql","name":"dbserver1","ts_ms":1714565000042,"snapshot":"false","db":"shop","table":"events","server_id":223344,"file":"mysql-bin.000003","pos":196,"row":0},"op":"u","ts_ms":1714565000142}`)

// BenchmarkDebeziumDecodeUpdate decodes one update event (two rows) per op.
func BenchmarkDebeziumDecodeUpdate(b *testing.B) {
	for _, c := range []struct {
		name string
		meta []string
	}{{"no-metadata", nil}, {"source.table", []string{DebeziumSourceTable}}} {
		b.Run(c.name, func(b *testing.B) {
			d, err := NewDebezium().CreateDecoder(fctx("debezium-json.", benchSchema, nil, c.meta...))
			if err != nil {
				b.Fatal(err)
			}
			cd := d.(formats.ChangelogDecoder)
			n := 0
			emit := func(types.RowKind, types.Row) { n++ }
			b.SetBytes(int64(len(benchUpdate)))
			b.ReportAllocs()
			for b.Loop() {
				if err := cd.DecodeChangelog(benchUpdate, emit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
