package integration_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rescaleSQL is one job (a statement set) with a stateful operator of each
// kind: group aggregation, a sink upsert materializer (the aggregation's
// upsert key [user, region] differs from the sink's key [user]),
// deduplication (first row per user by rowtime) and Top-N (two largest
// amounts per user). Its sinks write to the topics <name><suffix>.
func rescaleSQL(addr, suffix string) string {
	sink := func(name, cols, pk string) string {
		return fmt.Sprintf(`CREATE TABLE %[1]s%[2]s (%[3]s, PRIMARY KEY (%[4]s) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '%[1]s%[2]s', 'properties.bootstrap.servers' = '%[5]s',
  'key.format' = 'json', 'value.format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%[1]s%[2]s',
  'properties.transaction.timeout.ms' = '120000');
`, name, suffix, cols, pk, addr)
	}
	return fmt.Sprintf(`
CREATE TABLE ev (
  `+"`user`"+` STRING, region STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'kafka', 'topic' = 'ev', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json'
);
`, addr) +
		sink("agg", "`user` STRING, total INT, cnt BIGINT", "`user`") +
		sink("mat", "`user` STRING, total INT", "`user`") +
		sink("first", "`user` STRING, amount INT", "`user`") +
		sink("top", "`user` STRING, amount INT, rn BIGINT", "`user`, rn") +
		fmt.Sprintf(`EXECUTE STATEMENT SET BEGIN
INSERT INTO agg%[1]s SELECT `+"`user`"+`, SUM(amount), COUNT(*) FROM ev GROUP BY `+"`user`"+`;
INSERT INTO mat%[1]s SELECT `+"`user`"+`, SUM(amount) FROM ev GROUP BY `+"`user`"+`, region;
INSERT INTO first%[1]s SELECT `+"`user`"+`, amount FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY `+"`user`"+` ORDER BY ts ASC) AS rn FROM ev) WHERE rn = 1;
INSERT INTO top%[1]s SELECT `+"`user`"+`, amount, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY `+"`user`"+` ORDER BY amount DESC) AS rn FROM ev) WHERE rn <= 2;
END;`, suffix)
}

// materialized reads topic with read_committed up to a sentinel written
// now and applies it as an upsert changelog: the last value of each key,
// tombstones deleting.
func materialized(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	sentinelN++
	nonce := fmt.Sprintf("sentinel-%d", sentinelN)
	produce(t, addr, topic, rec{key: "sentinel", value: nonce})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	table := map[string]string{}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no sentinel in %s", topic)
		}
		for _, r := range fs.Records() {
			switch {
			case string(r.Key) == "sentinel" && string(r.Value) == nonce:
				return table
			case string(r.Key) == "sentinel":
			case r.Value == nil:
				delete(table, string(r.Key))
			default:
				table[string(r.Key)] = string(r.Value)
			}
		}
	}
}

// sentinelN numbers the sentinels of materialized (tests run one at a
// time within the package's test binary unless parallel, which these are
// not).
var sentinelN int

// awaitMaterialized polls topic until it materializes to want.
func awaitMaterialized(t *testing.T, addr, topic string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := materialized(t, addr, topic)
		if reflect.DeepEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", topic, got, want)
		}
	}
}

func evRec(p int32, user, region string, amount, sec int) rec {
	return rec{partition: p, value: fmt.Sprintf(`{"user":%q,"region":%q,"amount":%d,"ts":"2024-01-01 00:00:%02d"}`, user, region, amount, sec)}
}

func userKey(u string) string { return fmt.Sprintf(`{"user":%q}`, u) }

// TestRescaleEveryStatefulOperator: the job of rescaleSQL runs at
// parallelism 1, is stopped with a savepoint, resumed at 4 (on rocksdb),
// stopped again and resumed at 2 (on hashmap); after each stop more input
// arrives. Each sink's materialized output equals the hand-computed result
// and that of an uninterrupted run of the same job over all the input.
//
//	A  p0: a 5 @1, b 7 @2   p1: c 1 @3, a 9 @4   p2: d 4 @5   p3: b 2 @6
//	B  p0: c 8 @7, d 6 @8   p1: a 3 @9   p2: b 10 @10   p3: a 12 @11, c 2 @12
//	C  p0: b 1 @13   p1: d 11 @14, a 4 @15   p2: c 6 @16   p3: d 3 @17
//
// Sums (counts): after A a 14 (2), b 9 (2), c 1 (1), d 4 (1); after B
// a 29 (4), b 19 (3), c 11 (3), d 10 (2); after C a 33 (5), b 20 (4),
// c 17 (4), d 24 (4). First rows by time: a 5, b 7, c 1, d 4. Two largest:
// a 12, 9; b 10, 7; c 8, 6; d 11, 6.
func TestRescaleEveryStatefulOperator(t *testing.T) {
	topics := map[string]int32{"ev": 4}
	for _, n := range []string{"agg", "mat", "first", "top"} {
		topics[n] = 1
		topics[n+"_ref"] = 1
	}
	addr := startBroker(t, topics)
	spDir := t.TempDir()
	conf := savepointRunConf(t, spDir)
	aggRow := func(u string, total, cnt int) string {
		return fmt.Sprintf(`{"user":%q,"total":%d,"cnt":%d}`, u, total, cnt)
	}
	aggAfter := func(rows ...[3]any) map[string]string {
		m := map[string]string{}
		for _, r := range rows {
			m[userKey(r[0].(string))] = aggRow(r[0].(string), r[1].(int), r[2].(int))
		}
		return m
	}
	batchA := []rec{evRec(0, "a", "x", 5, 1), evRec(0, "b", "y", 7, 2), evRec(1, "c", "x", 1, 3), evRec(1, "a", "x", 9, 4),
		evRec(2, "d", "z", 4, 5), evRec(3, "b", "y", 2, 6)}
	batchB := []rec{evRec(0, "c", "x", 8, 7), evRec(0, "d", "z", 6, 8), evRec(1, "a", "x", 3, 9), evRec(2, "b", "y", 10, 10),
		evRec(3, "a", "x", 12, 11), evRec(3, "c", "x", 2, 12)}
	batchC := []rec{evRec(0, "b", "y", 1, 13), evRec(1, "d", "z", 11, 14), evRec(1, "a", "x", 4, 15), evRec(2, "c", "x", 6, 16),
		evRec(3, "d", "z", 3, 17)}

	produce(t, addr, "ev", batchA...)
	s1 := newSession(t, conf("1", "hashmap", ""))
	id := startJob(t, s1, rescaleSQL(addr, ""))
	awaitMaterialized(t, addr, "agg", aggAfter([3]any{"a", 14, 2}, [3]any{"b", 9, 2}, [3]any{"c", 1, 1}, [3]any{"d", 4, 1}))
	sp := stopWithSavepoint(t, s1, id, false)

	produce(t, addr, "ev", batchB...)
	s2 := newSession(t, conf("4", "rocksdb", sp))
	id = startJob(t, s2, rescaleSQL(addr, ""))
	awaitMaterialized(t, addr, "agg", aggAfter([3]any{"a", 29, 4}, [3]any{"b", 19, 3}, [3]any{"c", 11, 3}, [3]any{"d", 10, 2}))
	sp = stopWithSavepoint(t, s2, id, false)

	produce(t, addr, "ev", batchC...)
	s3 := newSession(t, conf("2", "hashmap", sp))
	id = startJob(t, s3, rescaleSQL(addr, ""))
	final := aggAfter([3]any{"a", 33, 5}, [3]any{"b", 20, 4}, [3]any{"c", 17, 4}, [3]any{"d", 24, 4})
	awaitMaterialized(t, addr, "agg", final)
	stopWithSavepoint(t, s3, id, false)

	// The uninterrupted run over all the input.
	ref := newSession(t, conf("2", "hashmap", ""))
	refID := startJob(t, ref, rescaleSQL(addr, "_ref"))
	awaitMaterialized(t, addr, "agg_ref", final)
	stopWithSavepoint(t, ref, refID, false)

	want := map[string]map[string]string{
		"agg": final,
		"mat": {userKey("a"): `{"user":"a","total":33}`, userKey("b"): `{"user":"b","total":20}`,
			userKey("c"): `{"user":"c","total":17}`, userKey("d"): `{"user":"d","total":24}`},
		"first": {userKey("a"): `{"user":"a","amount":5}`, userKey("b"): `{"user":"b","amount":7}`,
			userKey("c"): `{"user":"c","amount":1}`, userKey("d"): `{"user":"d","amount":4}`},
		"top": {},
	}
	for u, top := range map[string][2]int{"a": {12, 9}, "b": {10, 7}, "c": {8, 6}, "d": {11, 6}} {
		for i, amount := range top {
			want["top"][fmt.Sprintf(`{"user":%q,"rn":%d}`, u, i+1)] = fmt.Sprintf(`{"user":%q,"amount":%d,"rn":%d}`, u, amount, i+1)
		}
	}
	for _, name := range []string{"agg", "mat", "first", "top"} {
		got, gotRef := materialized(t, addr, name), materialized(t, addr, name+"_ref")
		if !reflect.DeepEqual(got, want[name]) {
			t.Errorf("%s after 1 → 4 → 2 = %s\nwant %s", name, show(got), show(want[name]))
		}
		if !reflect.DeepEqual(gotRef, want[name]) {
			t.Errorf("%s uninterrupted = %s\nwant %s", name, show(gotRef), show(want[name]))
		}
	}
}

func show(m map[string]string) string {
	var lines []string
	for k, v := range m {
		lines = append(lines, k+" → "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}
