package integration_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBatchKafkaAggregate: in batch mode a bounded Kafka source
// ('scan.bounded.mode' = 'latest-offset') feeds a GROUP BY whose final rows
// go to the append-only 'kafka' sink: one record per group, no retractions
// (in streaming mode the sink refuses the updating aggregate). Worked by
// hand over the six records: a 1+2+4 = 7 (3), b 3+5 = 8 (2), c 6 (1).
func TestBatchKafkaAggregate(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 2, "totals": 1})
	var recs []rec
	for i, kv := range []string{"a 1", "a 2", "b 3", "a 4", "b 5", "c 6"} {
		f := strings.Fields(kv)
		recs = append(recs, rec{partition: int32(i % 2), value: fmt.Sprintf(`{"k":"%s","v":%s}`, f[0], f[1])})
	}
	produce(t, addr, "events", recs...)
	s := newSession(t, map[string]string{"execution.runtime-mode": "batch", "parallelism.default": "4"})
	run(t, s, fmt.Sprintf(`
CREATE TABLE events (k STRING, v INT) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE live (k STRING, v INT) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE totals (k STRING, total INT, cnt BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');`, addr))
	run(t, s, "INSERT INTO totals SELECT k, SUM(v), COUNT(*) FROM events GROUP BY k;")
	var got []string
	for _, r := range readAll(t, addr, "totals", 3) {
		got = append(got, string(r.Value))
	}
	slices.Sort(got)
	want := []string{`{"k":"a","total":7,"cnt":3}`, `{"k":"b","total":8,"cnt":2}`, `{"k":"c","total":6,"cnt":1}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("totals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err := query(t, s, "SELECT k FROM live")
	const refused = "Querying an unbounded table 'default_catalog.default_database.live' in batch mode is not allowed. The table source is unbounded."
	if err == nil || err.Error() != refused {
		t.Errorf("unbounded kafka source in batch mode: %v, want %q", err, refused)
	}
}
