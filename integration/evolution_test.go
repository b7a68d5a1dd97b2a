package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/twmb/franz-go/pkg/kgo"
)

// evolutionSQL is the Kafka → TUMBLE → Kafka exactly-once job of
// savepointJobSQL in three versions: v1 keeps every amount > 0; v2 changes
// the filter to amount > 1 and writes an extra column, window_end (the
// sink table is redefined with it); v3 adds COUNT(*) as n.
func evolutionSQL(addr string, version int) string {
	cols, sel, filter := "", "", "amount > 0"
	if version >= 2 {
		cols, sel, filter = ", window_end TIMESTAMP(3)", ", window_end", "amount > 1"
	}
	if version >= 3 {
		cols += ", n BIGINT"
		sel += ", COUNT(*)"
	}
	return fmt.Sprintf(`
CREATE TABLE events (
  `+"`user`"+` STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json'
);
CREATE TABLE totals (window_start TIMESTAMP(3), `+"`user`"+` STRING, total INT%[2]s) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'ev%[5]d',
  'properties.transaction.timeout.ms' = '120000'
);
INSERT INTO totals
SELECT window_start, `+"`user`"+`, SUM(amount)%[3]s
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
WHERE %[4]s
GROUP BY window_start, window_end, `+"`user`"+`;`, addr, cols, sel, filter, version)
}

// explainMigration runs EXPLAIN MIGRATION FROM sp for the INSERT of sql
// (after its DDL) in s and returns the text.
func explainMigration(t *testing.T, s *session.Session, sp, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	i := strings.Index(sql, "INSERT INTO")
	if _, err := s.Execute(ctx, sql[:i]); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Execute(ctx, fmt.Sprintf("EXPLAIN MIGRATION FROM '%s' %s", sp, sql[i:]))
	if err != nil {
		t.Fatal(err)
	}
	return rs[0].Text
}

// verdicts returns the verdict column of EXPLAIN MIGRATION's table, by
// operator kind.
func verdicts(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && !strings.HasPrefix(lines[0], "OPERATOR") {
		lines = lines[1:]
	}
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("verdict line %q", l)
		}
		out[f[1]] = strings.Join(f[2:], " ")
	}
	return out
}

// committedRecords reads the committed records of topic with a
// read_committed client up to a sentinel written now, each as its JSON
// fields "k=v" in key order.
func committedRecords(t *testing.T, addr, topic string) []string {
	t.Helper()
	sentinelN++
	nonce := fmt.Sprintf("sentinel-%d", sentinelN)
	produce(t, addr, topic, rec{value: fmt.Sprintf(`{"user":%q}`, nonce)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no sentinel in %s after %d records", topic, len(got))
		}
		for _, r := range fs.Records() {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("record %q: %v", r.Value, err)
			}
			if m["user"] == nonce {
				sort.Strings(got)
				return got
			}
			if u, _ := m["user"].(string); strings.HasPrefix(u, "sentinel-") {
				continue
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
			}
			got = append(got, strings.Join(parts, " "))
		}
	}
}

// TestQueryEvolutionKeepsWindowState is the product's upgrade scenario
// with edits of the SQL: the job is stopped with a savepoint, its filter
// changed and an output column added (EXPLAIN MIGRATION: every operator
// kept), resumed at parallelism 4 on rocksdb; stopped again, COUNT(*)
// added (kept, migrated: the new accumulator starts from its initial
// value), resumed at parallelism 2 on hashmap. An independent
// read_committed reader sees every window exactly once. Input (partition:
// user amount @second) and results worked out by hand:
//
//	A (v1, amount > 0)  p0: a 1 @1, b 2 @2, a 3 @12  p1: a 10 @3, b 20 @13  p2: b 5 @4, a 7 @14  p3: a 100 @5, b 200 @15
//	   watermark 12 fires [0,10): a 1+10+100 = 111, b 2+5 = 7; [10,20) waits (a 3+7 = 10, b 20+200 = 220)
//	B (v2, amount > 1)  p0: a 1000 @16, a 1 @25  p1: b 2000 @17, b 2 @26  p2: a 3 @27  p3: b 4 @28
//	   watermark 25 fires [10,20): a 10+1000 = 1010, b 220+2000 = 2220 (with window_end);
//	   [20,30) waits: a 3 (a 1 @25 is filtered out now), b 2+4 = 6
//	C (v3, + COUNT(*))  p0: a 5 @29, a 50 @31  p1: b 6 @29, b 60 @32  p2: a 70 @33  p3: b 80 @34
//	   watermark 31 fires [20,30): a 3+5 = 8, b 6+6 = 12, n = 1 each (the count started empty at
//	   the restore and saw one row each); the drain fires [30,40): a 50+70 = 120, b 60+80 = 140, n = 2
func TestQueryEvolutionKeepsWindowState(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 4, "totals": 1})
	spDir := t.TempDir()
	conf := savepointRunConf(t, spDir)
	produceWindowInputA(t, addr)

	s1 := newSession(t, conf("1", "hashmap", ""))
	id := startJob(t, s1, evolutionSQL(addr, 1))
	readAll(t, addr, "totals", 2) // [0,10) committed: the job read A
	sp1 := stopWithSavepoint(t, s1, id, false)

	// v2: another filter, another output column.
	s2 := newSession(t, conf("4", "rocksdb", sp1))
	text := explainMigration(t, s2, sp1, evolutionSQL(addr, 2))
	want := map[string]string{"Source": "kept", "WindowAggregate": "kept", "Sink": "kept"}
	if got := verdicts(t, text); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EXPLAIN MIGRATION of v2: verdicts %v, want %v\n%s", got, want, text)
	}
	if !strings.Contains(text, "Result: compatible: 3 operator(s) keep their state, 0 start empty") {
		t.Fatalf("EXPLAIN MIGRATION of v2:\n%s", text)
	}
	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1000, 16)}, rec{partition: 0, value: ev("a", 1, 25)},
		rec{partition: 1, value: ev("b", 2000, 17)}, rec{partition: 1, value: ev("b", 2, 26)},
		rec{partition: 2, value: ev("a", 3, 27)}, rec{partition: 3, value: ev("b", 4, 28)})
	s2 = newSession(t, conf("4", "rocksdb", sp1))
	id = startJob(t, s2, evolutionSQL(addr, 2))
	readAll(t, addr, "totals", 4) // and [10,20)
	sp2 := stopWithSavepoint(t, s2, id, false)

	// v3: COUNT(*) added.
	s3 := newSession(t, conf("2", "hashmap", sp2))
	text = explainMigration(t, s3, sp2, evolutionSQL(addr, 3))
	want = map[string]string{"Source": "kept", "Sink": "kept",
		"WindowAggregate": "kept (migrated: COUNT(*) added, starting from its initial value)"}
	if got := verdicts(t, text); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EXPLAIN MIGRATION of v3: verdicts %v, want %v\n%s", got, want, text)
	}
	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 5, 29)}, rec{partition: 0, value: ev("a", 50, 31)},
		rec{partition: 1, value: ev("b", 6, 29)}, rec{partition: 1, value: ev("b", 60, 32)},
		rec{partition: 2, value: ev("a", 70, 33)}, rec{partition: 3, value: ev("b", 80, 34)})
	s3 = newSession(t, conf("2", "hashmap", sp2))
	id = startJob(t, s3, evolutionSQL(addr, 3))
	readAll(t, addr, "totals", 6) // and [20,30)
	stopWithSavepoint(t, s3, id, true)

	got := committedRecords(t, addr, "totals")
	wantRecs := []string{
		"total=111 user=a window_start=2024-01-01 00:00:00",
		"total=1010 user=a window_end=2024-01-01 00:00:20 window_start=2024-01-01 00:00:10",
		"n=2 total=120 user=a window_end=2024-01-01 00:00:40 window_start=2024-01-01 00:00:30",
		"n=2 total=140 user=b window_end=2024-01-01 00:00:40 window_start=2024-01-01 00:00:30",
		"n=1 total=12 user=b window_end=2024-01-01 00:00:30 window_start=2024-01-01 00:00:20",
		"total=2220 user=b window_end=2024-01-01 00:00:20 window_start=2024-01-01 00:00:10",
		"total=7 user=b window_start=2024-01-01 00:00:00",
		"n=1 total=8 user=a window_end=2024-01-01 00:00:30 window_start=2024-01-01 00:00:20",
	}
	sort.Strings(wantRecs)
	if strings.Join(got, "\n") != strings.Join(wantRecs, "\n") {
		t.Errorf("committed totals =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRecs, "\n"))
	}
}

func evolutionAggSQL(addr string, version int) string {
	cols, sel, where := "", "", ""
	if version >= 2 {
		cols, sel, where = ", cnt BIGINT", ", COUNT(*)", " WHERE amount > 2"
	}
	return fmt.Sprintf(`
CREATE TABLE ev (
  `+"`user`"+` STRING, region STRING, amount INT, ts TIMESTAMP(3)
) WITH (
  'connector' = 'kafka', 'topic' = 'ev', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json'
);
CREATE TABLE agg (`+"`user`"+` STRING, total INT%[2]s, PRIMARY KEY (`+"`user`"+`) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'agg', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'json', 'value.format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'agg%[5]d',
  'properties.transaction.timeout.ms' = '120000');
INSERT INTO agg SELECT `+"`user`"+`, SUM(amount)%[3]s FROM ev%[4]s GROUP BY `+"`user`"+`;`, addr, cols, sel, where, version)
}

// TestQueryEvolutionAddsAggregate: a group aggregation gets COUNT(*) and a
// filter between a stop with savepoint and the resume (at parallelism 2,
// rocksdb): EXPLAIN MIGRATION says its state is kept and migrated, the
// sums go on from the savepoint, and the new count starts from its initial
// value 0 at the restore, as documented. Input (partition: user amount)
// and the materialized upsert output worked out by hand:
//
//	A (v1)  p0: a 5, b 7  p1: c 1, a 9               a 14, b 7, c 1
//	B (v2, amount > 2, + COUNT(*))
//	        p0: a 3  p1: b 10  p2: a 12  p3: c 2 (filtered out)
//	        a 14+3+12 = 29, cnt 2; b 7+10 = 17, cnt 1; c keeps its v1 row (no change since)
func TestQueryEvolutionAddsAggregate(t *testing.T) {
	addr := startBroker(t, map[string]int32{"ev": 4, "agg": 1})
	spDir := t.TempDir()
	conf := savepointRunConf(t, spDir)
	produce(t, addr, "ev", evRec(0, "a", "x", 5, 1), evRec(0, "b", "y", 7, 2), evRec(1, "c", "x", 1, 3), evRec(1, "a", "x", 9, 4))
	s1 := newSession(t, conf("1", "hashmap", ""))
	id := startJob(t, s1, evolutionAggSQL(addr, 1))
	awaitMaterialized(t, addr, "agg", map[string]string{
		userKey("a"): `{"user":"a","total":14}`, userKey("b"): `{"user":"b","total":7}`, userKey("c"): `{"user":"c","total":1}`})
	sp := stopWithSavepoint(t, s1, id, false)

	s2 := newSession(t, conf("2", "rocksdb", sp))
	text := explainMigration(t, s2, sp, evolutionAggSQL(addr, 2))
	want := map[string]string{"Source": "kept", "Sink": "kept",
		"GroupAggregate": "kept (migrated: COUNT(*) added, starting from its initial value)"}
	if got := verdicts(t, text); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EXPLAIN MIGRATION: verdicts %v, want %v\n%s", got, want, text)
	}
	produce(t, addr, "ev", evRec(0, "a", "x", 3, 9), evRec(1, "b", "y", 10, 10), evRec(2, "a", "x", 12, 11), evRec(3, "c", "x", 2, 12))
	s2 = newSession(t, conf("2", "rocksdb", sp))
	id = startJob(t, s2, evolutionAggSQL(addr, 2))
	final := map[string]string{
		userKey("a"): `{"user":"a","total":29,"cnt":2}`, userKey("b"): `{"user":"b","total":17,"cnt":1}`, userKey("c"): `{"user":"c","total":1}`}
	awaitMaterialized(t, addr, "agg", final)
	stopWithSavepoint(t, s2, id, false)
	if got := materialized(t, addr, "agg"); fmt.Sprint(got) != fmt.Sprint(final) {
		t.Errorf("agg after the stop = %v, want %v", got, final)
	}
}
