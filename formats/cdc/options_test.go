package cdc

import (
	"strings"
	"testing"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

var factories = []formats.Factory{NewDebezium(), NewCanal(), NewMaxwell()}

// The json options the three formats share act on the rows inside the
// envelope: 'map-null-key.mode', 'map-null-key.literal',
// 'encode.decimal-as-plain-number' when encoding, 'timestamp-format.standard'
// both ways.
func TestSharedJSONOptions(t *testing.T) {
	schema := types.Schema{
		{Name: "m", Type: types.MapType(types.StringType, types.IntType)},
		{Name: "d", Type: types.DecimalType(12, 9)},
		{Name: "ts", Type: types.TimestampType(3)},
	}
	row := types.Row{
		types.MapOf([]types.Value{{}}, []types.Value{types.Int(1)}),
		types.DecimalFromUnscaled(27, 9), // 0.000000027
		types.TimestampMillis(1609330394123),
	}
	wantRow := map[string]string{
		"debezium-json": `{"before":null,"after":%s,"op":"c"}`,
		"canal-json":    `{"data":[%s],"type":"INSERT"}`,
		"maxwell-json":  `{"data":%s,"type":"insert"}`,
	}
	for _, f := range factories {
		id := f.Identifier()
		opts := map[string]string{
			"map-null-key.mode":              "LITERAL",
			"map-null-key.literal":           "nil",
			"encode.decimal-as-plain-number": "true",
			"timestamp-format.standard":      "ISO-8601",
		}
		enc, err := f.CreateEncoder(fctx(id+".", schema, opts))
		if err != nil {
			t.Fatal(err)
		}
		b, err := enc.(formats.ChangelogEncoder).EncodeChangelog(nil, types.Insert, row)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(wantRow[id], "%s", `{"m":{"nil":1},"d":0.000000027,"ts":"2020-12-30T12:13:14.123"}`, 1)
		if string(b) != want {
			t.Errorf("%s: %s, want %s", id, b, want)
		}
		// Defaults: a NULL map key fails, the decimal is in scientific
		// notation, the timestamp in the SQL form.
		enc, err = f.CreateEncoder(fctx(id+".", schema, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.(formats.ChangelogEncoder).EncodeChangelog(nil, types.Insert, row); err == nil {
			t.Errorf("%s: a NULL map key was written with map-null-key.mode FAIL", id)
		}
		b, err = enc.(formats.ChangelogEncoder).EncodeChangelog(nil, types.Insert, types.Row{{}, row[1], row[2]})
		if err != nil {
			t.Fatal(err)
		}
		want = strings.Replace(wantRow[id], "%s", `{"m":null,"d":2.7E-8,"ts":"2020-12-30 12:13:14.123"}`, 1)
		if string(b) != want {
			t.Errorf("%s defaults: %s, want %s", id, b, want)
		}
		opts = map[string]string{"map-null-key.mode": "drop"}
		enc, err = f.CreateEncoder(fctx(id+".", schema, opts))
		if err != nil {
			t.Fatal(err)
		}
		b, err = enc.(formats.ChangelogEncoder).EncodeChangelog(nil, types.Insert, row)
		if err != nil || !strings.Contains(string(b), `{"m":{},`) {
			t.Errorf("%s DROP: %s, %v", id, b, err)
		}

		// The decoder reads what the ISO-8601 encoder wrote.
		dec, err := f.CreateDecoder(fctx(id+".", schema, map[string]string{"timestamp-format.standard": "ISO-8601"}))
		if err != nil {
			t.Fatal(err)
		}
		rec := strings.Replace(wantRow[id], "%s", `{"m":{"a":1},"d":0.000000027,"ts":"2020-12-30T12:13:14.123"}`, 1)
		got, err := decodeAll(t, dec, []byte(rec), typesOf(schema, nil))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, id+" decode", got, []string{"+I[{a=1}, 0.000000027, 2020-12-30 12:13:14.123]"})

		// Bad values name the option under the format's prefix.
		for k, v := range map[string]string{"map-null-key.mode": "KEEP", "ignore-parse-errors": "yes", "timestamp-format.standard": "RFC3339"} {
			_, err := f.CreateDecoder(fctx("value."+id+".", schema, map[string]string{k: v}))
			if err == nil || !strings.Contains(err.Error(), "value."+id+"."+k) {
				t.Errorf("%s %s=%s: %v", id, k, v, err)
			}
		}
		_, err = f.CreateEncoder(fctx(id+".", schema, map[string]string{"fail-on-missing-field": "true"}))
		if err == nil || !strings.Contains(err.Error(), "Unsupported options found for format '"+id+"'") {
			t.Errorf("%s: json's fail-on-missing-field accepted: %v", id, err)
		}
	}
}

// A changelog format's decoder refuses to be used as a plain decoder: a
// connector that did not ask for the changelog would lose the row kinds.
func TestPlainDecodeRefused(t *testing.T) {
	for _, f := range factories {
		d, err := f.CreateDecoder(fctx(f.Identifier()+".", products, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode([]byte(`{}`), make(types.Row, len(products))); err == nil {
			t.Errorf("%s: Decode accepted", f.Identifier())
		}
		if formats.DecodingMode(f) != types.Retract || formats.EncodingMode(f) != types.Retract {
			t.Errorf("%s: modes %s %s", f.Identifier(), formats.DecodingMode(f), formats.EncodingMode(f))
		}
	}
}
