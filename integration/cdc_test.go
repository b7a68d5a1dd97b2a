package integration_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// debeziumEvent is a Debezium change event of the products table (the
// shape of Debezium's MySQL connector events, without the schema envelope).
func debeziumEvent(op string, before, after string, tsMs int64) string {
	if before == "" {
		before = "null"
	}
	if after == "" {
		after = "null"
	}
	return fmt.Sprintf(`{"before":%s,"after":%s,"source":{"version":"2.7.0.Final","connector":"mysql","name":"dbserver1","ts_ms":%d,"snapshot":"false","db":"inventory","table":"products","server_id":223344,"file":"mysql-bin.000003","pos":%d,"row":0},"op":%q,"ts_ms":%d}`,
		before, after, tsMs-100, tsMs%100000, op, tsMs)
}

func product(id int, category string, weight int) string {
	return fmt.Sprintf(`{"id":%d,"category":%q,"weight":%d}`, id, category, weight)
}

// TestDebeziumKafkaGroupByToUpsertKafka: Debezium change events on Kafka
// (creates, updates with before/after, deletes, a tombstone) read as a
// changelog, aggregated per category, written to upsert-kafka. Worked out
// by hand: tools has product 1 (weight 2, then 4) and had product 2 until
// it moved to toys; toys lost product 3; garden had product 4, deleted:
//
//	tools: n 1, weight 4; toys: n 1, weight 3; garden: gone (tombstone).
func TestDebeziumKafkaGroupByToUpsertKafka(t *testing.T) {
	addr := startBroker(t, map[string]int32{"dbserver1.inventory.products": 1, "category_totals": 1})
	key := func(id int) string { return fmt.Sprintf(`{"id":%d}`, id) }
	produce(t, addr, "dbserver1.inventory.products",
		rec{key: key(1), value: debeziumEvent("c", "", product(1, "tools", 2), 1700000000000)},
		rec{key: key(2), value: debeziumEvent("c", "", product(2, "tools", 3), 1700000001000)},
		rec{key: key(3), value: debeziumEvent("c", "", product(3, "toys", 5), 1700000002000)},
		rec{key: key(1), value: debeziumEvent("u", product(1, "tools", 2), product(1, "tools", 4), 1700000003000)},
		rec{key: key(2), value: debeziumEvent("u", product(2, "tools", 3), product(2, "toys", 3), 1700000004000)},
		rec{key: key(3), value: debeziumEvent("d", product(3, "toys", 5), "", 1700000005000)},
		rec{key: key(3)}, // Debezium's tombstone after the delete
		rec{key: key(4), value: debeziumEvent("c", "", product(4, "garden", 1), 1700000006000)},
		rec{key: key(4), value: debeziumEvent("d", product(4, "garden", 1), "", 1700000007000)},
		rec{key: key(4)},
	)
	s := newSession(t, map[string]string{"parallelism.default": "2"})
	run(t, s, fmt.Sprintf(`
CREATE TABLE products (id INT, category STRING, weight INT) WITH (
  'connector' = 'kafka', 'topic' = 'dbserver1.inventory.products', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'value.format' = 'debezium-json'
);
CREATE TABLE category_totals (category STRING, n BIGINT, weight INT, PRIMARY KEY (category) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'category_totals', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'json', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset'
);
INSERT INTO category_totals SELECT category, COUNT(*), SUM(weight) FROM products GROUP BY category;`, addr))

	last := map[string]string{}
	for _, r := range readAllUntilQuiet(t, addr, "category_totals") {
		if r.Value == nil {
			last[string(r.Key)] = "<tombstone>"
		} else {
			last[string(r.Key)] = string(r.Value)
		}
	}
	want := map[string]string{
		`{"category":"tools"}`:  `{"category":"tools","n":1,"weight":4}`,
		`{"category":"toys"}`:   `{"category":"toys","n":1,"weight":3}`,
		`{"category":"garden"}`: "<tombstone>",
	}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("last value per key =\n%v\nwant\n%v", last, want)
	}
	got, err := query(t, s, "SELECT category, n, weight FROM category_totals")
	if err != nil {
		t.Fatal(err)
	}
	if rows := materialize(t, got); strings.Join(rows, " ") != "[tools, 1, 4] [toys, 1, 3]" {
		t.Errorf("table = %v from changelog %v", rows, got)
	}

	// The source itself is a retract source: its changelog in offset order.
	got, err = query(t, s, "SELECT id, category, weight FROM products")
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []string{
		"+I[1, tools, 2]", "+I[2, tools, 3]", "+I[3, toys, 5]",
		"-U[1, tools, 2]", "+U[1, tools, 4]", "-U[2, tools, 3]", "+U[2, toys, 3]",
		"-D[3, toys, 5]", "+I[4, garden, 1]", "-D[4, garden, 1]",
	}
	if strings.Join(got, " ") != strings.Join(wantLog, " ") {
		t.Errorf("changelog =\n%v\nwant\n%v", got, wantLog)
	}
}

// materialize applies a changelog to a set of rows, failing on a retraction
// of a row that is not there, and returns the rows sorted.
func materialize(t *testing.T, log []string) []string {
	t.Helper()
	table := map[string]int{}
	for _, l := range log {
		row := l[2:]
		switch l[:2] {
		case "+I", "+U":
			table[row]++
		case "-U", "-D":
			if table[row] == 0 {
				t.Fatalf("%s retracts a row that is not there; changelog %v", l, log)
			}
			table[row]--
		}
	}
	var rows []string
	for r, n := range table {
		for ; n > 0; n-- {
			rows = append(rows, r)
		}
	}
	sort.Strings(rows)
	return rows
}

// TestDebeziumKafkaMetadata reads the format's metadata ('value.*') next to
// the connector's, with and without the schema envelope.
func TestDebeziumKafkaMetadata(t *testing.T) {
	addr := startBroker(t, map[string]int32{"dbz": 1, "dbz_schema": 1})
	produce(t, addr, "dbz",
		rec{value: debeziumEvent("c", "", product(1, "tools", 2), 1700000000000)},
		rec{value: debeziumEvent("u", product(1, "tools", 2), product(1, "tools", 4), 1700000003000)})
	produce(t, addr, "dbz_schema",
		rec{value: `{"schema":{"type":"struct","optional":false,"name":"dbserver1.inventory.products.Envelope"},"payload":` +
			debeziumEvent("d", product(1, "tools", 4), "", 1700000009000) + `}`})
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE dbz (
  origin_ts TIMESTAMP(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL,
  id INT,
  event_time TIMESTAMP_LTZ(3) METADATA FROM 'value.source.timestamp' VIRTUAL,
  off BIGINT METADATA FROM 'offset' VIRTUAL,
  origin_database STRING METADATA FROM 'value.source.database' VIRTUAL,
  origin_table STRING METADATA FROM 'value.source.table' VIRTUAL,
  origin_properties MAP<STRING, STRING> METADATA FROM 'value.source.properties' VIRTUAL,
  weight INT
) WITH ('connector' = 'kafka', 'topic' = 'dbz', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json');
CREATE TABLE dbz_schema (
  id INT, weight INT,
  sch STRING METADATA FROM 'value.schema' VIRTUAL,
  origin_ts TIMESTAMP_LTZ(3) METADATA FROM 'value.ingestion-timestamp' VIRTUAL
) WITH ('connector' = 'kafka', 'topic' = 'dbz_schema', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'value.format' = 'debezium-json', 'value.debezium-json.schema-include' = 'true');`, addr))
	got, err := query(t, s, "SELECT origin_ts, id, event_time, off, origin_database, origin_table, origin_properties['file'], weight FROM dbz")
	if err != nil {
		t.Fatal(err)
	}
	// 1700000000000 ms = 2023-11-14 22:13:20 UTC; source.ts_ms is 100 ms earlier.
	want := []string{
		"+I[2023-11-14 22:13:20.000, 1, 2023-11-14 22:13:19.900, 0, inventory, products, mysql-bin.000003, 2]",
		"-U[2023-11-14 22:13:23.000, 1, 2023-11-14 22:13:22.900, 1, inventory, products, mysql-bin.000003, 2]",
		"+U[2023-11-14 22:13:23.000, 1, 2023-11-14 22:13:22.900, 1, inventory, products, mysql-bin.000003, 4]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got, err = query(t, s, "SELECT id, weight, sch, origin_ts FROM dbz_schema")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`-D[1, 4, {"type":"struct","optional":false,"name":"dbserver1.inventory.products.Envelope"}, 2023-11-14 22:13:29.000]`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The declared type must be reachable by a cast from the metadata's.
	_, err = s.Execute(t.Context(), fmt.Sprintf(`CREATE TABLE badtype (id INT, x INT METADATA FROM 'value.source.properties' VIRTUAL)
WITH ('connector' = 'kafka', 'topic' = 'dbz', 'properties.bootstrap.servers' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
SELECT * FROM badtype;`, addr))
	if err == nil || !strings.Contains(err.Error(), "Invalid data type for metadata column 'x'") {
		t.Errorf("metadata of a type that does not cast: %v", err)
	}

	// A misspelt format metadata key lists the format's and the connector's.
	_, err = s.Execute(t.Context(), fmt.Sprintf(`CREATE TABLE bad (id INT, x STRING METADATA FROM 'value.source.tabel' VIRTUAL)
WITH ('connector' = 'kafka', 'topic' = 'dbz', 'properties.bootstrap.servers' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'debezium-json');
SELECT * FROM bad;`, addr))
	if err == nil || !strings.Contains(err.Error(), "Invalid metadata key 'value.source.tabel'") ||
		!strings.Contains(err.Error(), "value.source.table\n") || !strings.Contains(err.Error(), "\ntopic\n") {
		t.Errorf("bad metadata key: %v", err)
	}
}

// TestChangelogFormatsKafkaRoundTrip writes a changelog to Kafka in each
// changelog format and reads it back: an update is written as a delete and
// an insert event (Flink's encoding), so SUM over the read-back changelog
// ends where SUM over the original does.
func TestChangelogFormatsKafkaRoundTrip(t *testing.T) {
	addr := startBroker(t, map[string]int32{"rt-debezium-json": 1, "rt-canal-json": 1, "rt-maxwell-json": 1})
	s := newSession(t, nil)
	run(t, s, `CREATE TABLE chg (id INT, name STRING, v INT) WITH (
  'connector' = 'values', 'changelog-mode' = 'I,UB,UA,D',
  'data' = '
+I 1,a,10
+I 2,b,20
-U 1,a,10
+U 1,a,15
-D 2,b,20
');`)
	for _, f := range []string{"debezium-json", "canal-json", "maxwell-json"} {
		run(t, s, fmt.Sprintf(`
CREATE TABLE rt_%[2]s (id INT, name STRING, v INT) WITH ('connector' = 'kafka', 'topic' = 'rt-%[3]s', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = '%[3]s');
INSERT INTO rt_%[2]s SELECT * FROM chg;`, addr, strings.ReplaceAll(f, "-", "_"), f))
		got, err := query(t, s, fmt.Sprintf("SELECT * FROM rt_%s", strings.ReplaceAll(f, "-", "_")))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"+I[1, a, 10]", "+I[2, b, 20]", "-D[1, a, 10]", "+I[1, a, 15]", "-D[2, b, 20]"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: got %v, want %v", f, got, want)
		}
	}
	// A kafka table in a changelog format may declare a primary key
	// (Flink refuses one only for insert-only formats); upsert-kafka
	// refuses a changelog value format.
	run(t, s, fmt.Sprintf(`CREATE TABLE pk (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'kafka', 'topic' = 'rt-debezium-json',
  'properties.bootstrap.servers' = '%s', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'debezium-json');`, addr))
	if got, err := query(t, s, "SELECT id, v FROM pk"); err != nil || len(got) != 5 {
		t.Errorf("kafka with a primary key and debezium-json: %v, %v", got, err)
	}
	_, err := s.Execute(t.Context(), fmt.Sprintf(`CREATE TABLE up (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', 'topic' = 'x',
  'properties.bootstrap.servers' = '%s', 'key.format' = 'json', 'value.format' = 'debezium-json');
SELECT * FROM up;`, addr))
	if err == nil || !strings.Contains(err.Error(), "'upsert-kafka' connector doesn't support 'debezium-json' as value format, because 'debezium-json' is not in insert-only mode.") {
		t.Errorf("upsert-kafka with debezium-json: %v", err)
	}
}
