package avro

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// FuzzAvroDecode: no byte string makes the decoder panic or hang; what
// decodes re-encodes.
func FuzzAvroDecode(f *testing.F) {
	f.Add([]byte{0x02, 0x02, 0x04, 'a', 'b', 0x02, 0x02, 0x7b, 0x02, 0xd0, 0x0f, 0x02, 0x02, 0x02, 0x02, 'x', 0x00})
	f.Add([]byte{0x03, 0x00, 0x02, 0x02, 0x85, 0x00, 0x00})
	schema := append(append(types.Schema(nil), orders...),
		types.Column{Name: "m", Type: types.MapType(types.StringType, types.ArrayType(types.IntType))},
		types.Column{Name: "r", Type: types.RowType(types.Field{Name: "a", Type: types.TimestampType(6)}, types.Field{Name: "b", Type: types.DecimalType(38, 10)})})
	d, err := NewFactory().CreateDecoder(ctx(schema, nil))
	if err != nil {
		f.Fatal(err)
	}
	e, err := NewFactory().CreateEncoder(ctx(schema, nil))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		row := make(types.Row, len(schema))
		if err := d.Decode(data, row); err != nil {
			return
		}
		if _, err := e.Encode(nil, row); err != nil {
			t.Fatalf("decoded %v but cannot encode it: %v", row, err)
		}
	})
}
