package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const timeout = 30 * time.Second

func startBroker(t *testing.T, topics map[string]int32) string {
	t.Helper()
	opts := []kfake.Opt{kfake.Ports(0)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

type rec struct {
	partition int32
	key       string
	value     string
	ts        int64
}

func produce(t *testing.T, addr, topic string, recs ...rec) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, r := range recs {
		k := &kgo.Record{Topic: topic, Partition: r.partition, Value: []byte(r.value)}
		if r.key != "" {
			k.Key = []byte(r.key)
		}
		if r.ts != 0 {
			k.Timestamp = time.UnixMilli(r.ts)
		}
		if err := cl.ProduceSync(ctx, k).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads every record of a topic up to its current end with an
// independent client.
func readAll(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("reading %s: %v", topic, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func newSession(t *testing.T, conf map[string]string) *session.Session {
	t.Helper()
	if conf == nil {
		conf = map[string]string{}
	}
	conf["table.local-time-zone"] = "UTC"
	s, err := session.New(session.Options{Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func run(t *testing.T, s *session.Session, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := s.Execute(ctx, sql); err != nil {
		t.Fatalf("%v\nin:\n%s", err, sql)
	}
}

// query runs a bounded SELECT and returns its changes as "+I[a, b]" lines.
func query(t *testing.T, s *session.Session, sql string) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := parser.ParseStatement(sql)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		return nil, err
	}
	defer r.Query.Cancel()
	var lines []string
	for {
		cs, err := r.Query.Next(ctx)
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		for _, c := range cs {
			lines = append(lines, formatChange(c, r.Query.Schema))
		}
	}
}

func formatChange(c session.Change, schema types.Schema) string {
	parts := make([]string, len(c.Row))
	for i, v := range c.Row {
		parts[i] = types.FormatSQL(v, schema[i].Type, time.UTC)
	}
	return c.Kind.String() + "[" + strings.Join(parts, ", ") + "]"
}

// TestKafkaWindowToKafka: JSON events on two partitions, out of order within
// the watermark bound, summed in 10-second windows and written to Kafka as
// JSON; an independent client reads the result. Worked out by hand:
// [0 s, 10 s): a 1+10 = 11, b 2+5 = 7; [10 s, 20 s): a 4, b 20.
func TestKafkaWindowToKafka(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 2, "totals": 1})
	ev := func(user string, amount int, sec int) string {
		return fmt.Sprintf(`{"user":%q,"amount":%d,"ts":"2024-01-01 00:00:%02d"}`, user, amount, sec)
	}
	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1, 1)}, rec{partition: 0, value: ev("b", 2, 3)}, rec{partition: 0, value: ev("a", 4, 12)},
		rec{partition: 1, value: ev("a", 10, 2)}, rec{partition: 1, value: ev("b", 20, 11)}, rec{partition: 1, value: ev("b", 5, 9)})
	s := newSession(t, map[string]string{"parallelism.default": "2"})
	run(t, s, fmt.Sprintf(`
CREATE TABLE events (
  `+"`user`"+` STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json'
);
CREATE TABLE totals (window_start TIMESTAMP(3), `+"`user`"+` STRING, total INT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json'
);
INSERT INTO totals
SELECT window_start, `+"`user`"+`, SUM(amount)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, `+"`user`"+`;`, addr))
	var got []string
	for _, r := range readAll(t, addr, "totals", 4) {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatalf("record %q: %v", r.Value, err)
		}
		got = append(got, fmt.Sprintf("%v %v %v", m["window_start"], m["user"], m["total"]))
	}
	sort.Strings(got)
	want := []string{"2024-01-01 00:00:00 a 11", "2024-01-01 00:00:00 b 7", "2024-01-01 00:00:10 a 4", "2024-01-01 00:00:10 b 20"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("totals =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKafkaMetadataColumns reads partition, offset, timestamp and topic.
func TestKafkaMetadataColumns(t *testing.T) {
	addr := startBroker(t, map[string]int32{"m": 2})
	produce(t, addr, "m",
		rec{partition: 1, value: `{"v":1}`, ts: 1704067200000},
		rec{partition: 1, value: `{"v":2}`, ts: 1704067201500},
		rec{partition: 0, value: `{"v":3}`, ts: 1704067202000})
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE m (
  v INT,
  part INT METADATA FROM 'partition' VIRTUAL,
  off BIGINT METADATA FROM 'offset' VIRTUAL,
  kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
  topic STRING METADATA VIRTUAL
) WITH ('connector' = 'kafka', 'topic' = 'm', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');`, addr))
	got, err := query(t, s, "SELECT v, part, off, kts, topic FROM m")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{
		"+I[1, 1, 0, 2024-01-01 00:00:00.000, m]",
		"+I[2, 1, 1, 2024-01-01 00:00:01.500, m]",
		"+I[3, 0, 0, 2024-01-01 00:00:02.000, m]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKafkaBadRecord: a malformed record fails the query naming topic,
// partition, offset and bytes; with ignore-parse-errors it is skipped.
func TestKafkaBadRecord(t *testing.T) {
	addr := startBroker(t, map[string]int32{"bad": 1})
	produce(t, addr, "bad", rec{value: `{"v":1}`}, rec{value: `{"v":oops}`}, rec{value: `{"v":3}`})
	s := newSession(t, nil)
	ddl := `CREATE TABLE %s (v INT) WITH ('connector' = 'kafka', 'topic' = 'bad', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json'%s);`
	run(t, s, fmt.Sprintf(ddl, "strict", addr, ""))
	run(t, s, fmt.Sprintf(ddl, "lenient", addr, ", 'json.ignore-parse-errors' = 'true'"))
	_, err := query(t, s, "SELECT v FROM strict")
	if err == nil {
		t.Fatal("the malformed record must fail the query")
	}
	for _, want := range []string{"topic 'bad'", "partition 0", "offset 1", "oops"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	got, err := query(t, s, "SELECT v FROM lenient")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "+I[1] +I[3]" {
		t.Errorf("lenient rows = %v, want +I[1] +I[3]", got)
	}
}

// TestUpsertKafkaRoundTrip: an updating aggregation with HAVING written to
// upsert-kafka produces updates and tombstones, read back as a table.
// Events in order: a 5, b 3, a 10, b 30, c 1; totals under 20 are kept:
// a 5 → 15 (kept), b 3 → 33 (leaves: tombstone), c 1.
func TestUpsertKafkaRoundTrip(t *testing.T) {
	addr := startBroker(t, map[string]int32{"ev1": 1, "user_totals": 1})
	for _, e := range []string{`{"u":"a","n":5}`, `{"u":"b","n":3}`, `{"u":"a","n":10}`, `{"u":"b","n":30}`, `{"u":"c","n":1}`} {
		produce(t, addr, "ev1", rec{value: e})
	}
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE ev1 (u STRING, n INT) WITH ('connector' = 'kafka', 'topic' = 'ev1', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE user_totals (u STRING, total INT, PRIMARY KEY (u) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = 'user_totals', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'json', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset');
INSERT INTO user_totals SELECT u, SUM(n) FROM ev1 GROUP BY u HAVING SUM(n) < 20;`, addr))

	// The last record of each key, as a compacted topic would keep it.
	last := map[string]string{}
	tombstones := 0
	for _, r := range readAllUntilQuiet(t, addr, "user_totals") {
		if r.Value == nil {
			tombstones++
			last[string(r.Key)] = "<tombstone>"
		} else {
			last[string(r.Key)] = string(r.Value)
		}
	}
	if last[`{"u":"a"}`] != `{"u":"a","total":15}` || last[`{"u":"b"}`] != "<tombstone>" || last[`{"u":"c"}`] != `{"u":"c","total":1}` {
		t.Errorf("last value per key = %v", last)
	}
	if tombstones == 0 {
		t.Error("b left the result: a tombstone was expected")
	}
	// Read back as a table: the changelog materializes to a 15 and c 1.
	got, err := query(t, s, "SELECT u, total FROM user_totals")
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]bool{}
	for _, l := range got {
		row := l[2:]
		switch l[:2] {
		case "+I", "+U":
			table[row] = true
		case "-U", "-D":
			if !table[row] {
				t.Fatalf("%s retracts a row that is not there; changelog %v", l, got)
			}
			delete(table, row)
		}
	}
	var rows []string
	for r := range table {
		rows = append(rows, r)
	}
	sort.Strings(rows)
	if strings.Join(rows, " ") != "[a, 15] [c, 1]" {
		t.Errorf("table = %v from changelog %v", rows, got)
	}
}

// readAllUntilQuiet reads a topic from the start up to its end offsets.
func readAllUntilQuiet(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return readAll(t, addr, topic, int(n))
}

// TestIdlePartitionReleasesWatermark: partition 1 has one early event and then
// stays silent while partition 0 keeps receiving events. Partition 1 holds the
// watermark back until table.exec.source.idle-timeout marks it idle; then
// partition 0's progress fires the windows. (As in Flink, a partition is
// released while others are active; if every partition went quiet at once,
// the watermark would not advance.) The query is unbounded; the test waits
// for the first window results. The table's 'scan.watermark.idle-timeout'
// does the same for its source, in place of the session's option.
func TestIdlePartitionReleasesWatermark(t *testing.T) {
	t.Run("session-option", func(t *testing.T) {
		idlePartitionReleasesWatermark(t, map[string]string{"table.exec.source.idle-timeout": "300 ms"}, "")
	})
	t.Run("table-option", func(t *testing.T) {
		idlePartitionReleasesWatermark(t, nil, ", 'scan.watermark.idle-timeout' = '300 ms'")
	})
}

func idlePartitionReleasesWatermark(t *testing.T, conf map[string]string, tableOpts string) {
	addr := startBroker(t, map[string]int32{"slow": 2})
	ev := func(n, sec int) string {
		return fmt.Sprintf(`{"n":%d,"ts":"2024-01-01 00:%02d:%02d"}`, n, sec/60, sec%60)
	}
	produce(t, addr, "slow",
		rec{partition: 1, value: ev(100, 1)},
		rec{partition: 0, value: ev(1, 2)}, rec{partition: 0, value: ev(2, 5)}, rec{partition: 0, value: ev(3, 12)})
	if conf == nil {
		conf = map[string]string{}
	}
	conf["pipeline.auto-watermark-interval"] = "50 ms"
	s := newSession(t, conf)
	run(t, s, fmt.Sprintf(`CREATE TABLE slow (n INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (
  'connector' = 'kafka', 'topic' = 'slow', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json'%s);`, addr, tableOpts))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, _ := parser.ParseStatement(`SELECT window_start, SUM(n) FROM TABLE(TUMBLE(TABLE slow, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end`)
	r, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Query.Cancel()

	// Partition 0 stays live: one event every 50 ms from 00:20 on, until the
	// results are in (at most 400 events).
	live, stopLive := context.WithCancel(ctx)
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 400; i++ {
			select {
			case <-live.Done():
				return
			case <-tick.C:
			}
			rec := &kgo.Record{Topic: "slow", Partition: 0, Value: []byte(ev(1000, 20+i))}
			if err := producer.ProduceSync(live, rec).FirstErr(); err != nil && live.Err() == nil {
				t.Errorf("producing to partition 0: %v", err)
				return
			}
		}
	}()
	defer func() { stopLive(); <-done }()

	// Windows [0 s, 10 s) (1 + 2 + 100) and [10 s, 20 s) (3) fire first, in order.
	var got []string
	for len(got) < 2 {
		cs, err := r.Query.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, c := range cs {
			got = append(got, formatChange(c, r.Query.Schema))
		}
	}
	want := "+I[2024-01-01 00:00:00.000, 103] +I[2024-01-01 00:00:10.000, 3]"
	if strings.Join(got[:2], " ") != want {
		t.Errorf("first windows = %v, want %s", got, want)
	}
}

// TestKafkaSourceReadsCommittedByDefault: a record inside a transaction that
// has not committed is invisible to a kafka source by default (read_committed,
// a deliberate difference from Flink's KafkaSource, see the connector's
// documentation) and visible with 'properties.isolation.level' =
// 'read_uncommitted'.
func TestKafkaSourceReadsCommittedByDefault(t *testing.T) {
	addr := startBroker(t, map[string]int32{"tx": 1})
	produce(t, addr, "tx", rec{value: `{"v":1}`})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("open-txn"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"v":2}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The transaction stays open while the queries run.
	s := newSession(t, nil)
	ddl := `CREATE TABLE %s (v INT) WITH ('connector' = 'kafka', 'topic' = 'tx', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json'%s);`
	run(t, s, fmt.Sprintf(ddl, "by_default", addr, ""))
	run(t, s, fmt.Sprintf(ddl, "uncommitted", addr, ", 'properties.isolation.level' = 'read_uncommitted'"))
	got, err := query(t, s, "SELECT v FROM by_default")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "+I[1]" {
		t.Errorf("default isolation read %v, want only the committed +I[1]", got)
	}
	got, err = query(t, s, "SELECT v FROM uncommitted")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "+I[1] +I[2]" {
		t.Errorf("read_uncommitted read %v, want +I[1] +I[2]", got)
	}
}

// TestReadOwnExactlyOnceOutput chains two jobs through Kafka: a windowed
// job writes with 'exactly-once', and a second query reads that topic with
// the kafka source's default isolation. Records of an aborted transaction
// and of a transaction still open on the same topic must not reach it; the
// committed window results (worked out by hand as in TestKafkaWindowToKafka)
// must, each once.
func TestReadOwnExactlyOnceOutput(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 2, "totals": 1})
	ev := func(user string, amount int, sec int) string {
		return fmt.Sprintf(`{"user":%q,"amount":%d,"ts":"2024-01-01 00:00:%02d"}`, user, amount, sec)
	}
	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1, 1)}, rec{partition: 0, value: ev("b", 2, 3)}, rec{partition: 0, value: ev("a", 4, 12)},
		rec{partition: 1, value: ev("a", 10, 2)}, rec{partition: 1, value: ev("b", 20, 11)}, rec{partition: 1, value: ev("b", 5, 9)})
	s := newSession(t, map[string]string{
		"parallelism.default":              "2",
		"execution.checkpointing.interval": "100 ms",
		"execution.checkpointing.timeout":  "10 s",
		"state.checkpoints.dir":            "file://" + t.TempDir(),
	})
	run(t, s, fmt.Sprintf(`
CREATE TABLE events (
  `+"`user`"+` STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json'
);
CREATE TABLE totals (window_start TIMESTAMP(3), `+"`user`"+` STRING, total INT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'chain',
  'properties.transaction.timeout.ms' = '120000'
);
INSERT INTO totals
SELECT window_start, `+"`user`"+`, SUM(amount)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, `+"`user`"+`;`, addr))
	// readAll reads with read_committed: the job's transactions committed.
	readAll(t, addr, "totals", 4)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ghost := `{"window_start":"2024-01-01 00:00:00","user":"ghost","total":999}`
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, false} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprintf("foreign-%v", commit)), kgo.DefaultProduceTopic("totals"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(ghost)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit == kgo.TryAbort {
			if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
				t.Fatal(err)
			}
		} // else: left open while the query runs
	}

	run(t, s, fmt.Sprintf(`CREATE TABLE totals_in (window_start TIMESTAMP(3), `+"`user`"+` STRING, total INT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');`, addr))
	got, err := query(t, s, "SELECT window_start, `user`, total FROM totals_in")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{
		"+I[2024-01-01 00:00:00.000, a, 11]", "+I[2024-01-01 00:00:00.000, b, 7]",
		"+I[2024-01-01 00:00:10.000, a, 4]", "+I[2024-01-01 00:00:10.000, b, 20]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("downstream read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
