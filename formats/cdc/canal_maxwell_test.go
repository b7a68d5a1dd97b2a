package cdc

import (
	"errors"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

func newCanalDecoder(t *testing.T, opts map[string]string, meta ...string) formats.Decoder {
	t.Helper()
	d, err := NewCanal().CreateDecoder(fctx("canal-json.", products, opts, meta...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The events of Flink's canal-json documentation: Canal writes every value
// as text; an UPDATE's "old" holds only the changed columns.
func TestCanalDocumentedEvents(t *testing.T) {
	meta := []string{CanalDatabase, CanalTable, CanalPKNames, CanalIngestionTimestamp}
	d := newCanalDecoder(t, nil, meta...)
	ts := typesOf(products, canalMetadata, meta...)
	got, err := decodeAll(t, d, testdata(t, "canal-update.json"), ts)
	if err != nil {
		t.Fatal(err)
	}
	// ts 1589373560798 = 2020-05-13 12:39:20.798 UTC.
	equal(t, "update", got, []string{
		"-U[111, scooter, Big 2-wheel scooter, 5.15, inventory, products, [id], 2020-05-13 12:39:20.798]",
		"+U[111, scooter, Big 2-wheel scooter, 5.18, inventory, products, [id], 2020-05-13 12:39:20.798]",
	})
	got, err = decodeAll(t, d, testdata(t, "canal-insert-two.json"), ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "insert of two rows", got, []string{
		"+I[101, scooter, Small 2-wheel scooter, 3.14, inventory, products, [id], 2020-05-13 12:38:35.477]",
		"+I[102, car battery, 12V car battery, 8.10, inventory, products, [id], 2020-05-13 12:38:35.477]",
	})
	got, err = decodeAll(t, d, testdata(t, "canal-delete.json"), ts)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "delete", got, []string{"-D[111, scooter, Big 2-wheel scooter, 5.18, inventory, products, [id], 2020-05-13 12:46:53.680]"})
	got, err = decodeAll(t, d, testdata(t, "canal-create.json"), ts)
	if err != nil || len(got) != 0 {
		t.Errorf("CREATE TABLE event: rows %v, err %v; want none", got, err)
	}

	// sql-type is a MAP<STRING, INT>.
	d = newCanalDecoder(t, nil, CanalSQLType)
	var sqlType *types.MapValue
	if err := d.(formats.ChangelogDecoder).DecodeChangelog(testdata(t, "canal-delete.json"), func(_ types.RowKind, row types.Row) {
		sqlType = row[4].Map()
	}); err != nil {
		t.Fatal(err)
	}
	if i := indexOf(sqlType, "weight"); i < 0 || sqlType.Values[i].Int() != 7 || len(sqlType.Keys) != 4 {
		t.Errorf("sql-type: %+v", sqlType)
	}
}

func TestCanalIncludeFilters(t *testing.T) {
	ts := typesOf(products, nil)
	update := testdata(t, "canal-update.json")
	for _, c := range []struct {
		opts map[string]string
		rows int
	}{
		{map[string]string{"database.include": "inventory"}, 2},
		{map[string]string{"database.include": "inv.*"}, 2},
		{map[string]string{"database.include": "inv"}, 0}, // the whole name must match
		{map[string]string{"table.include": "products|orders"}, 2},
		{map[string]string{"table.include": "orders"}, 0},
		{map[string]string{"database.include": "inventory", "table.include": "prod"}, 0},
	} {
		got, err := decodeAll(t, newCanalDecoder(t, c.opts), update, ts)
		if err != nil || len(got) != c.rows {
			t.Errorf("%v: rows %v, err %v; want %d rows", c.opts, got, err, c.rows)
		}
	}
	if _, err := NewCanal().CreateDecoder(fctx("canal-json.", products, map[string]string{"table.include": "("})); err == nil ||
		!strings.Contains(err.Error(), "canal-json.table.include") {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestCanalBadEvents(t *testing.T) {
	ts := typesOf(products, nil)
	d := newCanalDecoder(t, nil)
	rec := []byte(`{"data":[{"id":"1"}],"database":"d","table":"t","type":"TRUNCATE"}`)
	_, err := decodeAll(t, d, rec, ts)
	if err == nil || !strings.Contains(err.Error(), `Unknown "type" value "TRUNCATE". The Canal JSON message is '`) {
		t.Errorf("unknown type: %v", err)
	}
	_, err = decodeAll(t, newCanalDecoder(t, map[string]string{"ignore-parse-errors": "true"}), rec, ts)
	if !errors.Is(err, formats.ErrSkipRecord) {
		t.Errorf("unknown type with ignore-parse-errors: %v", err)
	}
	_, err = decodeAll(t, d, []byte(`{"data":[{"id":"1"}],"old":[],"type":"UPDATE"}`), ts)
	if err == nil {
		t.Error("UPDATE without old rows accepted")
	}
}

func TestCanalRoundTrip(t *testing.T) {
	enc, err := NewCanal().CreateEncoder(fctx("canal-json.", products, nil))
	if err != nil {
		t.Fatal(err)
	}
	ce := enc.(formats.ChangelogEncoder)
	row := types.Row{types.Int(111), types.String("scooter"), types.Value{}, types.DecimalFromUnscaled(515, 2)}
	dec := newCanalDecoder(t, nil)
	var all []string
	for _, c := range []struct {
		kind types.RowKind
		json string
	}{
		{types.Insert, `{"data":[{"id":111,"name":"scooter","description":null,"weight":5.15}],"type":"INSERT"}`},
		{types.UpdateBefore, `{"data":[{"id":111,"name":"scooter","description":null,"weight":5.15}],"type":"DELETE"}`},
		{types.UpdateAfter, `{"data":[{"id":111,"name":"scooter","description":null,"weight":5.15}],"type":"INSERT"}`},
		{types.Delete, `{"data":[{"id":111,"name":"scooter","description":null,"weight":5.15}],"type":"DELETE"}`},
	} {
		b, err := ce.EncodeChangelog(nil, c.kind, row)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.json {
			t.Errorf("%s: %s, want %s", c.kind, b, c.json)
		}
		got, err := decodeAll(t, dec, b, typesOf(products, nil))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	equal(t, "round trip", all, []string{
		"+I[111, scooter, NULL, 5.15]", "-D[111, scooter, NULL, 5.15]", "+I[111, scooter, NULL, 5.15]", "-D[111, scooter, NULL, 5.15]",
	})
}

func newMaxwellDecoder(t *testing.T, opts map[string]string, meta ...string) formats.Decoder {
	t.Helper()
	d, err := NewMaxwell().CreateDecoder(fctx("maxwell-json.", products, opts, meta...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestMaxwellDocumentedEvents(t *testing.T) {
	meta := []string{MaxwellDatabase, MaxwellTable, MaxwellPrimaryKeyColumns, MaxwellIngestionTimestamp}
	d := newMaxwellDecoder(t, nil, meta...)
	ts := typesOf(products, maxwellMetadata, meta...)
	var all []string
	for _, f := range []string{"maxwell-insert.json", "maxwell-update.json", "maxwell-delete.json"} {
		got, err := decodeAll(t, d, testdata(t, f), ts)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, got...)
	}
	// ts 1477053217 s = 2016-10-21 12:33:37 UTC.
	equal(t, "events", all, []string{
		"+I[111, scooter, Big 2-wheel scooter, 5.18, test, e, [id, c], 2016-10-21 12:33:37.000]",
		"-U[111, scooter, Big 2-wheel scooter, 5.18, test, e, [id, c], 2016-10-21 12:33:37.000]",
		"+U[111, scooter, Big 2-wheel scooter, 5.15, test, e, [id, c], 2016-10-21 12:33:37.000]",
		"-D[111, scooter, Big 2-wheel scooter, 5.15, test, e, NULL, 2016-10-21 12:33:38.000]",
	})
	_, err := decodeAll(t, d, []byte(`{"database":"test","table":"e","type":"table-create","ts":1}`), ts)
	if err == nil || !strings.Contains(err.Error(), `Unknown "type" value "table-create". The Maxwell JSON message is`) {
		t.Errorf("unknown type: %v", err)
	}
	// maxwell-json.ignore-parse-errors drops bad events (the connector
	// counts them) and turns a value that does not convert into NULL.
	d = newMaxwellDecoder(t, map[string]string{"ignore-parse-errors": "true"})
	for _, rec := range []string{`{"type":"table-create"}`, `{"type":"insert","data":null}`, `{"type":`} {
		if rows, err := decodeAll(t, d, []byte(rec), typesOf(products, nil)); !errors.Is(err, formats.ErrSkipRecord) || len(rows) != 0 {
			t.Errorf("%s with ignore-parse-errors: rows %v, err %v", rec, rows, err)
		}
	}
	got, err := decodeAll(t, d, []byte(`{"type":"insert","data":{"id":"x","name":"n"}}`), typesOf(products, nil))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "bad id", got, []string{"+I[NULL, n, NULL, NULL]"})
}

func TestMaxwellRoundTrip(t *testing.T) {
	enc, err := NewMaxwell().CreateEncoder(fctx("maxwell-json.", products, nil))
	if err != nil {
		t.Fatal(err)
	}
	ce := enc.(formats.ChangelogEncoder)
	row := types.Row{types.Int(1), types.String("a"), types.String("b"), types.DecimalFromUnscaled(100, 2)}
	dec := newMaxwellDecoder(t, nil)
	var all []string
	for _, c := range []struct {
		kind types.RowKind
		json string
	}{
		// Jackson writes a BigDecimal without trailing zeros.
		{types.Insert, `{"data":{"id":1,"name":"a","description":"b","weight":1},"type":"insert"}`},
		{types.UpdateBefore, `{"data":{"id":1,"name":"a","description":"b","weight":1},"type":"delete"}`},
		{types.UpdateAfter, `{"data":{"id":1,"name":"a","description":"b","weight":1},"type":"insert"}`},
		{types.Delete, `{"data":{"id":1,"name":"a","description":"b","weight":1},"type":"delete"}`},
	} {
		b, err := ce.EncodeChangelog(nil, c.kind, row)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.json {
			t.Errorf("%s: %s, want %s", c.kind, b, c.json)
		}
		got, err := decodeAll(t, dec, b, typesOf(products, nil))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	equal(t, "round trip", all, []string{"+I[1, a, b, 1.00]", "-D[1, a, b, 1.00]", "+I[1, a, b, 1.00]", "-D[1, a, b, 1.00]"})
}
