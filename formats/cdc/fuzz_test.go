package cdc

import (
	"testing"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// FuzzChangelogDecode: no record makes a decoder panic, and every row it
// emits has the promised width.
func FuzzChangelogDecode(f *testing.F) {
	for _, s := range []string{
		string(benchUpdate),
		`{"before":null,"after":{"user_id":1},"op":"c"}`,
		`{"data":[{"user_id":"1"}],"old":[{}],"type":"UPDATE","database":"d","table":"t"}`,
		`{"data":{"user_id":1},"old":{"note":"x"},"type":"update","ts":1}`,
		`{"schema":{},"payload":{"op":"d","before":{"user_id":2}}}`,
	} {
		f.Add([]byte(s))
	}
	type dec struct {
		d     formats.ChangelogDecoder
		width int
	}
	var decs []dec
	for _, fac := range factories {
		for _, opts := range []map[string]string{nil, {"ignore-parse-errors": "true"}} {
			var meta []string
			if mf, ok := fac.(formats.MetadataFormat); ok {
				meta = mf.MetadataKeys()
				if fac.Identifier() == "debezium-json" && opts == nil {
					opts = map[string]string{"schema-include": "true"}
				}
			}
			d, err := fac.CreateDecoder(fctx(fac.Identifier()+".", benchSchema, opts, meta...))
			if err != nil {
				f.Fatal(err)
			}
			decs = append(decs, dec{d.(formats.ChangelogDecoder), len(benchSchema) + len(meta)})
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range decs {
			_ = d.d.DecodeChangelog(data, func(_ types.RowKind, row types.Row) {
				if len(row) != d.width {
					t.Fatalf("row of %d slots, want %d", len(row), d.width)
				}
			})
		}
	})
}
