package cdc

import (
	"errors"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

func newDebeziumDecoder(t *testing.T, schema types.Schema, opts map[string]string, meta ...string) formats.Decoder {
	t.Helper()
	d, err := NewDebezium().CreateDecoder(fctx("debezium-json.", schema, opts, meta...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The change events of Debezium's MySQL connector documentation for the
// customers row 1004: created, renamed to Anne Marie, deleted, tombstone.
func TestDebeziumDocumentedEvents(t *testing.T) {
	d := newDebeziumDecoder(t, customers, nil)
	ts := typesOf(customers, nil)
	got, err := decodeAll(t, d, testdata(t, "debezium-update.json"), ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "update", got, []string{
		"-U[1004, Anne, Kretchmar, annek@noanswer.org]",
		"+U[1004, Anne Marie, Kretchmar, annek@noanswer.org]",
	})
	got, err = decodeAll(t, d, testdata(t, "debezium-delete.json"), ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "delete", got, []string{"-D[1004, Anne Marie, Kretchmar, annek@noanswer.org]"})

	// The tombstone Debezium writes after a delete: no row, no error.
	for _, tomb := range [][]byte{nil, {}} {
		got, err = decodeAll(t, d, tomb, ts)
		if err != nil || len(got) != 0 {
			t.Fatalf("tombstone: rows %v, err %v", got, err)
		}
	}
	// A snapshot read is an insert.
	got, err = decodeAll(t, d, []byte(`{"before":null,"after":{"id":1001,"first_name":"Sally","last_name":"Thomas","email":"sally.thomas@acme.com"},"op":"r","ts_ms":1}`), ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "read", got, []string{"+I[1001, Sally, Thomas, sally.thomas@acme.com]"})
}

func TestDebeziumSchemaIncludeAndMetadata(t *testing.T) {
	meta := []string{DebeziumIngestionTimestamp, DebeziumSourceTimestamp, DebeziumSourceDatabase, DebeziumSourceSchema, DebeziumSourceTable}
	d := newDebeziumDecoder(t, customers, map[string]string{"schema-include": "true"}, meta...)
	got, err := decodeAll(t, d, testdata(t, "debezium-create-with-schema.json"), typesOf(customers, debeziumMetadata, meta...))
	if err != nil {
		t.Fatal(err)
	}
	// ts_ms 1465491411815 = 2016-06-09 16:56:51.815 UTC; source.ts_ms is 0.
	equal(t, "create", got, []string{
		"+I[1004, Anne, Kretchmar, annek@noanswer.org, 2016-06-09 16:56:51.815, 1970-01-01 00:00:00.000, inventory, NULL, customers]",
	})

	// The schema text and the source properties.
	d = newDebeziumDecoder(t, customers, map[string]string{"schema-include": "true"}, DebeziumSchema, DebeziumSourceProperties)
	var schemaText string
	var props *types.MapValue
	err = d.(formats.ChangelogDecoder).DecodeChangelog(testdata(t, "debezium-create-with-schema.json"), func(k types.RowKind, row types.Row) {
		schemaText, props = row[4].Str(), row[5].Map()
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schemaText, `{"type":"struct","fields":[{"type":"struct"`) || !strings.HasSuffix(schemaText, `"name":"mysql-server-1.inventory.customers.Envelope"}`) {
		t.Errorf("schema metadata: %s", schemaText)
	}
	want := map[string]string{"connector": "mysql", "db": "inventory", "table": "customers", "pos": "154", "snapshot": "false", "ts_ms": "0"}
	found := map[string]string{}
	for i, k := range props.Keys {
		found[k.Str()] = props.Values[i].Str()
	}
	for k, v := range want {
		if found[k] != v {
			t.Errorf("source.properties[%s] = %q, want %q", k, found[k], v)
		}
	}
	if v := props.Values[indexOf(props, "gtid")]; !v.IsNull() {
		t.Errorf("source.properties[gtid] = %v, want NULL", v)
	}

	// Without schema-include the schema metadata is NULL and the
	// postgres event's source.schema is there.
	d = newDebeziumDecoder(t, customers, nil, DebeziumSchema, DebeziumSourceSchema, DebeziumSourceTimestamp)
	got, err = decodeAll(t, d, []byte(`{"before":null,"after":{"id":1,"first_name":"a","last_name":"b","email":"c"},"source":{"ts_ms":1559033904863,"db":"postgres","schema":"public","table":"customers"},"op":"c","ts_ms":1}`),
		typesOf(customers, debeziumMetadata, DebeziumSchema, DebeziumSourceSchema, DebeziumSourceTimestamp))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "postgres create", got, []string{"+I[1, a, b, c, NULL, public, 2019-05-28 08:58:24.863]"})
}

func indexOf(m *types.MapValue, key string) int {
	for i, k := range m.Keys {
		if k.Str() == key {
			return i
		}
	}
	return -1
}

func TestDebeziumBadEvents(t *testing.T) {
	d := newDebeziumDecoder(t, customers, nil)
	ts := typesOf(customers, nil)
	cases := []struct {
		name, data, want string
	}{
		{"postgres update without REPLICA IDENTITY FULL", string(testdata(t, "debezium-postgres-update-default-identity.json")),
			`The "before" field of UPDATE message is null, if you are using Debezium Postgres Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level.`},
		{"delete without before", `{"before":null,"after":null,"op":"d"}`, `The "before" field of DELETE message is null`},
		{"unknown op", `{"before":null,"after":{"id":1},"op":"x"}`, `Unknown "op" value "x". The Debezium JSON message is '{"before":null,"after":{"id":1},"op":"x"}'`},
		{"schema envelope without schema-include", string(testdata(t, "debezium-create-with-schema.json")), `set 'debezium-json.schema-include' = 'true'`},
		{"malformed", `{"before":`, `Corrupt Debezium JSON message '{"before":'.`},
		{"bad value", `{"after":{"id":"x1"},"op":"c"}`, `Corrupt Debezium JSON message`},
	}
	for _, c := range cases {
		rows, err := decodeAll(t, d, []byte(c.data), ts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: rows %v, err %v; want an error containing %q", c.name, rows, err, c.want)
		}
		if len(rows) != 0 {
			t.Errorf("%s: emitted %v", c.name, rows)
		}
	}
	// ignore-parse-errors drops the events, counted by the connector; a
	// value that does not convert is a NULL field (the json format's rule).
	d = newDebeziumDecoder(t, customers, map[string]string{"ignore-parse-errors": "true"})
	for _, c := range cases {
		rows, err := decodeAll(t, d, []byte(c.data), ts)
		if c.name == "bad value" {
			if err != nil {
				t.Fatal(err)
			}
			equal(t, c.name+" with ignore-parse-errors", rows, []string{"+I[NULL, NULL, NULL, NULL]"})
			continue
		}
		if !errors.Is(err, formats.ErrSkipRecord) || len(rows) != 0 {
			t.Errorf("%s with ignore-parse-errors: rows %v, err %v; want ErrSkipRecord", c.name, rows, err)
		}
	}
}

func TestDebeziumOptions(t *testing.T) {
	f := NewDebezium()
	_, err := f.CreateDecoder(fctx("value.debezium-json.", customers, map[string]string{"schema-includ": "true"}))
	if err == nil || !strings.Contains(err.Error(), "Unsupported options found for format 'debezium-json'.") ||
		!strings.Contains(err.Error(), "value.debezium-json.schema-includ\n") || !strings.Contains(err.Error(), "value.debezium-json.schema-include") {
		t.Errorf("unknown option: %v", err)
	}
	_, err = f.CreateDecoder(fctx("debezium-json.", customers, map[string]string{"timestamp-format.standard": "RFC"}))
	if err == nil || !strings.Contains(err.Error(), "Unsupported value 'RFC' for debezium-json.timestamp-format.standard. Supported values are [SQL, ISO-8601].") {
		t.Errorf("timestamp standard: %v", err)
	}
	_, err = f.CreateEncoder(fctx("debezium-json.", customers, map[string]string{"schema-include": "true"}))
	if err == nil || err.Error() != "Debezium JSON serialization doesn't support 'debezium-json.schema-include' option been set to true." {
		t.Errorf("encoder with schema-include: %v", err)
	}
	_, err = f.CreateDecoder(fctx("debezium-json.", customers, nil, "source.nope"))
	if err == nil {
		t.Error("unknown metadata key accepted")
	}
}

// timestamp-format.standard applies to the row's values inside the envelope.
func TestDebeziumTimestampStandard(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.IntType}, {Name: "ts", Type: types.TimestampType(3)}}
	ts := typesOf(schema, nil)
	rec := []byte(`{"before":null,"after":{"id":1,"ts":"2020-12-30T12:13:14.123"},"op":"c"}`)
	got, err := decodeAll(t, newDebeziumDecoder(t, schema, map[string]string{"timestamp-format.standard": "ISO-8601"}), rec, ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "ISO-8601", got, []string{"+I[1, 2020-12-30 12:13:14.123]"})
	if _, err := decodeAll(t, newDebeziumDecoder(t, schema, nil), rec, ts); err == nil {
		t.Error("SQL standard accepted an ISO-8601 timestamp")
	}
}

// Encoding a changelog and decoding it again: -U becomes a delete event and
// +U a create event, as Flink writes them.
func TestDebeziumRoundTrip(t *testing.T) {
	enc, err := NewDebezium().CreateEncoder(fctx("debezium-json.", customers, nil))
	if err != nil {
		t.Fatal(err)
	}
	ce := enc.(formats.ChangelogEncoder)
	rows := []struct {
		kind types.RowKind
		row  types.Row
		json string
	}{
		{types.Insert, types.Row{types.Int(1), types.String("Anne"), types.String("K"), types.Value{}},
			`{"before":null,"after":{"id":1,"first_name":"Anne","last_name":"K","email":null},"op":"c"}`},
		{types.UpdateBefore, types.Row{types.Int(1), types.String("Anne"), types.String("K"), types.Value{}},
			`{"before":{"id":1,"first_name":"Anne","last_name":"K","email":null},"after":null,"op":"d"}`},
		{types.UpdateAfter, types.Row{types.Int(1), types.String("Anne \"Marie\""), types.String("K"), types.String("a@b")},
			`{"before":null,"after":{"id":1,"first_name":"Anne \"Marie\"","last_name":"K","email":"a@b"},"op":"c"}`},
		{types.Delete, types.Row{types.Int(1), types.String("Anne \"Marie\""), types.String("K"), types.String("a@b")},
			`{"before":{"id":1,"first_name":"Anne \"Marie\"","last_name":"K","email":"a@b"},"after":null,"op":"d"}`},
	}
	dec := newDebeziumDecoder(t, customers, nil)
	var all []string
	for _, r := range rows {
		b, err := ce.EncodeChangelog(nil, r.kind, r.row)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != r.json {
			t.Errorf("%s: encoded %s, want %s", r.kind, b, r.json)
		}
		got, err := decodeAll(t, dec, b, typesOf(customers, nil))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	equal(t, "round trip", all, []string{
		"+I[1, Anne, K, NULL]",
		"-D[1, Anne, K, NULL]",
		`+I[1, Anne "Marie", K, a@b]`,
		`-D[1, Anne "Marie", K, a@b]`,
	})
}
