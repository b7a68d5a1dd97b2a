package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/sql/parser"
)

// evTable is an unbounded table (its source never ends after its rows)
// with a watermark of ts - 2 s emitted on every row that advances it.
const evTable = `CREATE TABLE ev (
  name  STRING,
  price INT,
  ts    TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'values',
  'bounded' = 'false',
  'scan.watermark.emit.strategy' = 'on-event',
  'data' = '
a,1,2024-01-01 00:00:05
b,3,2024-01-01 00:00:05
c,2,2024-01-01 00:00:05
d,9,2024-01-01 00:00:01
e,4,2024-01-01 00:00:10
f,5,2024-01-01 00:00:04
'
);`

// runUnbounded starts query over an unbounded input and returns its
// first n changes formatted, cancelling the query then.
func runUnbounded(t *testing.T, s *Session, query string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := parser.ParseStatement(query)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Query.Cancel()
	var got []string
	for len(got) < n {
		changes, err := r.Query.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		for _, c := range changes {
			got = append(got, formatChange(c, r.Query.Schema, r.Query))
		}
	}
	return got
}

// TestTemporalSortStreaming: ORDER BY ts, price DESC over an unbounded
// input. Worked by hand (watermark = max ts - 2 s after each row): the
// three rows @05 and d @01 wait; e @10 moves the watermark to 00:08, which
// releases d @01 (at or below the watermark when it came, but after the
// last released timestamp, so not late), then the @05 rows by price DESC:
// b 3, c 2, a 1. e itself waits for a watermark ≥ 00:10 that never comes;
// f @04 is late (04 ≤ 05). So exactly these four rows come out, in this
// order, on both backends and at parallelism 1 and 4.
func TestTemporalSortStreaming(t *testing.T) {
	for _, backend := range []string{"hashmap", "rocksdb"} {
		for _, par := range []string{"1", "4"} {
			s := newTestSession(t, map[string]string{"table.local-time-zone": "UTC", "state.backend.type": backend, "parallelism.default": par})
			if _, err := s.Execute(context.Background(), evTable); err != nil {
				t.Fatal(err)
			}
			got := runUnbounded(t, s, "SELECT name, price, ts FROM ev ORDER BY ts, price DESC", 4)
			want := []string{
				"+I[d, 9, 2024-01-01 00:00:01.000]",
				"+I[b, 3, 2024-01-01 00:00:05.000]",
				"+I[c, 2, 2024-01-01 00:00:05.000]",
				"+I[a, 1, 2024-01-01 00:00:05.000]",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, parallelism %s:\n%s\nwant:\n%s", backend, par, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// TestBatchModeDisablesCheckpointing: with a checkpoint interval set, a
// batch job runs without checkpoints and the log says so, in Flink's words.
func TestBatchModeDisablesCheckpointing(t *testing.T) {
	var log syncBuffer
	s, err := New(Options{Stdout: &log, Stderr: &log, Config: map[string]string{
		"execution.runtime-mode":           "batch",
		"execution.checkpointing.interval": "10 ms",
		"state.checkpoints.dir":            "file://" + t.TempDir(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), `CREATE TABLE t (k STRING, v INT) WITH ('connector' = 'values', 'data' = 'a,1
a,2
b,5');`); err != nil {
		t.Fatal(err)
	}
	got, err := runQuery(context.Background(), s, "SELECT k, SUM(v) FROM t GROUP BY k;")
	if err != nil {
		t.Fatal(err)
	}
	if got != "+I[a, 3]\n+I[b, 5]\n" && got != "+I[b, 5]\n+I[a, 3]\n" {
		t.Fatalf("rows:\n%s", got)
	}
	const notice = "Disabled Checkpointing. Checkpointing is not supported and not needed when executing jobs in BATCH mode."
	if !strings.Contains(log.take(), notice) {
		t.Fatalf("the job log does not say %q", notice)
	}
}
