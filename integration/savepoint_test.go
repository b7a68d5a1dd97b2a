package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/twmb/franz-go/pkg/kgo"
)

// savepointJobSQL is a Kafka → TUMBLE → Kafka exactly-once job.
func savepointJobSQL(addr string) string {
	return fmt.Sprintf(`
CREATE TABLE events (
  `+"`user`"+` STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'json'
);
CREATE TABLE totals (window_start TIMESTAMP(3), `+"`user`"+` STRING, total INT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'sp',
  'properties.transaction.timeout.ms' = '120000'
);
INSERT INTO totals
SELECT window_start, `+"`user`"+`, SUM(amount)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, `+"`user`"+`;`, addr)
}

// startJob runs the DDL and the INSERT and returns the job's id.
func startJob(t *testing.T, s *session.Session, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stmts, err := parser.ParseScript(sql)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		r, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatalf("%v\nin:\n%s", err, st.Text())
		}
		if r.Job != nil {
			return r.Job.ID
		}
	}
	t.Fatal("no job started")
	return ""
}

// stopWithSavepoint runs STOP JOB ... WITH SAVEPOINT and returns the path.
func stopWithSavepoint(t *testing.T, s *session.Session, id string, drain bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stmt := fmt.Sprintf("STOP JOB '%s' WITH SAVEPOINT", id)
	if drain {
		stmt += " WITH DRAIN"
	}
	rs, err := s.Execute(ctx, stmt+";")
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	tb := rs[0].Table
	if tb == nil || len(tb.Columns) != 1 || tb.Columns[0] != "savepoint path" || len(tb.Rows) != 1 {
		t.Fatalf("%s: result %+v, want one row of column 'savepoint path'", stmt, rs[0])
	}
	return tb.Rows[0][0]
}

func ev(user string, amount, sec int) string {
	return fmt.Sprintf(`{"user":%q,"amount":%d,"ts":"2024-01-01 00:00:%02d"}`, user, amount, sec)
}

// committedTotals reads the committed records of totals with a
// read_committed client up to a sentinel written after the job stopped.
func committedTotals(t *testing.T, addr string) []string {
	t.Helper()
	sentinelN++
	nonce := fmt.Sprintf("sentinel-%d", sentinelN)
	produce(t, addr, "totals", rec{value: fmt.Sprintf(`{"user":%q}`, nonce)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("totals"),
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
			t.Fatalf("no sentinel in totals after %d records", len(got))
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
			got = append(got, fmt.Sprintf("%v %v %v", m["window_start"], m["user"], m["total"]))
		}
	}
}

// TestStopWithSavepointRescaleAndSwitchBackend is the product's upgrade
// scenario: a Kafka → TUMBLE → Kafka exactly-once job is stopped with a
// savepoint three times and resumed from it at parallelism 1 → 4 → 2 and on
// hashmap → rocksdb → hashmap; an independent read_committed reader sees
// every window result exactly once, with the sums of an uninterrupted run.
// Input (partition: user amount @second) and the sums worked out by hand:
//
//	A  p0: a 1 @1, b 2 @2, a 3 @12  p1: a 10 @3, b 20 @13  p2: b 5 @4, a 7 @14  p3: a 100 @5, b 200 @15
//	   watermark 12 fires [0,10): a 1+10+100 = 111, b 2+5 = 7; [10,20) waits (a 10, b 220)
//	B  p0: a 1000 @16, a 1 @25  p1: b 2000 @17, b 2 @26  p2: a 3 @27  p3: b 4 @28
//	   watermark 25 fires [10,20): a 10+1000 = 1010, b 220+2000 = 2220; [20,30) waits (a 4, b 6)
//	C  p0: a 5 @29, a 50 @31  p1: b 6 @29, b 60 @32  p2: a 70 @33  p3: b 80 @34
//	   watermark 31 fires [20,30): a 4+5 = 9, b 6+6 = 12; [30,40) (a 120, b 140) fires at the drain
func TestStopWithSavepointRescaleAndSwitchBackend(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 4, "totals": 1})
	spDir := t.TempDir()
	conf := savepointRunConf(t, spDir)
	produceWindowInputA(t, addr)

	s1 := newSession(t, conf("1", "hashmap", ""))
	id := startJob(t, s1, savepointJobSQL(addr))
	readAll(t, addr, "totals", 2) // [0,10) committed: the job read A
	sp1 := stopWithSavepoint(t, s1, id, false)
	if !strings.HasPrefix(sp1, "file://"+spDir+"/savepoint-") {
		t.Fatalf("savepoint path %s, want one under %s", sp1, spDir)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(sp1, "file://"), "_metadata")); err != nil {
		t.Fatal(err)
	}
	// Without drain the open window [10,20) did not fire: it waits in the
	// savepoint.
	if got := committedTotals(t, addr); len(got) != 2 {
		t.Fatalf("after a stop without drain: %q, want only the two results of [0,10)", got)
	}

	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1000, 16)}, rec{partition: 0, value: ev("a", 1, 25)},
		rec{partition: 1, value: ev("b", 2000, 17)}, rec{partition: 1, value: ev("b", 2, 26)},
		rec{partition: 2, value: ev("a", 3, 27)}, rec{partition: 3, value: ev("b", 4, 28)})
	s2 := newSession(t, conf("4", "rocksdb", sp1))
	id = startJob(t, s2, savepointJobSQL(addr))
	readAll(t, addr, "totals", 5) // and [10,20) (the sentinel is one of the 5)
	sp2 := stopWithSavepoint(t, s2, id, false)

	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 5, 29)}, rec{partition: 0, value: ev("a", 50, 31)},
		rec{partition: 1, value: ev("b", 6, 29)}, rec{partition: 1, value: ev("b", 60, 32)},
		rec{partition: 2, value: ev("a", 70, 33)}, rec{partition: 3, value: ev("b", 80, 34)})
	s3 := newSession(t, conf("2", "hashmap", sp2))
	id = startJob(t, s3, savepointJobSQL(addr))
	readAll(t, addr, "totals", 7) // and [20,30)
	stopWithSavepoint(t, s3, id, true)

	got := committedTotals(t, addr)
	want := []string{
		"2024-01-01 00:00:00 a 111", "2024-01-01 00:00:00 b 7",
		"2024-01-01 00:00:10 a 1010", "2024-01-01 00:00:10 b 2220",
		"2024-01-01 00:00:20 a 9", "2024-01-01 00:00:20 b 12",
		"2024-01-01 00:00:30 a 120", "2024-01-01 00:00:30 b 140",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("committed totals =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRestoreCheckpointAtOtherParallelism: a job's final checkpoint (a
// checkpoint, not a savepoint) named by execution.state-recovery.path is
// restored at another parallelism and on the other backend: the state goes
// through its entries, and the window results are exactly once with the
// sums of an uninterrupted run (input and sums of
// TestStopWithSavepointRescaleAndSwitchBackend, batches A and B, then a
// drain fires [20,30): a 4, b 6).
func TestRestoreCheckpointAtOtherParallelism(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 4, "totals": 1})
	chkDir := t.TempDir()
	conf := func(par, backend string) map[string]string {
		return map[string]string{
			"parallelism.default":              par,
			"state.backend.type":               backend,
			"execution.checkpointing.interval": "200 ms",
			"execution.checkpointing.timeout":  "10 s",
			"state.checkpoints.dir":            "file://" + chkDir,
			"state.savepoints.dir":             "file://" + t.TempDir(),
			"pipeline.name":                    "windows",
			"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		}
	}
	produceWindowInputA(t, addr)
	s1 := newSession(t, conf("2", "rocksdb"))
	startJob(t, s1, savepointJobSQL(addr))
	readAll(t, addr, "totals", 2)
	// Ending the session cancels its job; its latest checkpoint is kept
	// (RETAIN_ON_CANCELLATION). It covers all committed output (a
	// transaction commits only when its checkpoint completed), so the
	// restore writes nothing twice.
	s1.Close()
	chks, err := filepath.Glob(filepath.Join(chkDir, "windows", "chk-*"))
	if err != nil || len(chks) != 1 {
		t.Fatalf("retained checkpoints %v, %v", chks, err)
	}

	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1000, 16)}, rec{partition: 0, value: ev("a", 1, 25)},
		rec{partition: 1, value: ev("b", 2000, 17)}, rec{partition: 1, value: ev("b", 2, 26)},
		rec{partition: 2, value: ev("a", 3, 27)}, rec{partition: 3, value: ev("b", 4, 28)})
	c := conf("3", "hashmap")
	c["execution.state-recovery.path"] = chks[0]
	s2 := newSession(t, c)
	id := startJob(t, s2, savepointJobSQL(addr))
	readAll(t, addr, "totals", 4)
	stopWithSavepoint(t, s2, id, true)

	got := committedTotals(t, addr)
	want := []string{
		"2024-01-01 00:00:00 a 111", "2024-01-01 00:00:00 b 7",
		"2024-01-01 00:00:10 a 1010", "2024-01-01 00:00:10 b 2220",
		"2024-01-01 00:00:20 a 4", "2024-01-01 00:00:20 b 6",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("committed totals =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// savepointRunConf gives the configuration of one run of a stop → edit →
// resume scenario: its parallelism, its backend, and the savepoint or
// checkpoint it restores ("" for none); savepoints go to spDir.
func savepointRunConf(t *testing.T, spDir string) func(par, backend, restore string) map[string]string {
	return func(par, backend, restore string) map[string]string {
		c := map[string]string{
			"parallelism.default":              par,
			"state.backend.type":               backend,
			"execution.checkpointing.interval": "200 ms",
			"execution.checkpointing.timeout":  "10 s",
			"state.checkpoints.dir":            "file://" + t.TempDir(),
			"state.savepoints.dir":             "file://" + spDir,
		}
		if restore != "" {
			c["execution.state-recovery.path"] = restore
		}
		return c
	}
}

// produceWindowInputA writes batch A of the window scenarios' events (see
// TestStopWithSavepointRescaleAndSwitchBackend): watermark 12 on every
// partition, [0,10) complete.
func produceWindowInputA(t *testing.T, addr string) {
	t.Helper()
	produce(t, addr, "events",
		rec{partition: 0, value: ev("a", 1, 1)}, rec{partition: 0, value: ev("b", 2, 2)}, rec{partition: 0, value: ev("a", 3, 12)},
		rec{partition: 1, value: ev("a", 10, 3)}, rec{partition: 1, value: ev("b", 20, 13)},
		rec{partition: 2, value: ev("b", 5, 4)}, rec{partition: 2, value: ev("a", 7, 14)},
		rec{partition: 3, value: ev("a", 100, 5)}, rec{partition: 3, value: ev("b", 200, 15)})
}
