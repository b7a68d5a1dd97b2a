// Package bench measures whole SQL pipelines through the session, the way
// Nexmark reports them: rows per second of wall time and rows per second of
// CPU time used by the process (generator, exchanges and operators included).
//
//	go test ./bench -run '^$' -bench . -benchtime 2000000x
//
// One benchmark op is one generated row.
package bench

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// source is a datagen table of n rows: a sequence id, a key over 10 000
// values, a value, and an event time advancing 0.1 ms per row (10 rows per
// millisecond, so a 10-second window holds 100 000 rows, 10 per key).
func source(n int) string {
	return fmt.Sprintf(`
CREATE TABLE src (
  id BIGINT,
  k  INT,
  v  INT,
  ts AS TO_TIMESTAMP_LTZ(id / 10, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '1000000000',
  'number-of-rows' = '%d',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d',
  'fields.k.min' = '0', 'fields.k.max' = '9999',
  'fields.v.min' = '0', 'fields.v.max' = '1000'
);
CREATE TABLE sink (a BIGINT, b BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
`, n, n-1)
}

func runPipeline(b *testing.B, insert string, extra ...string) {
	b.Helper()
	runPipelineWith(b, source(b.N), insert, extra...)
}

// runPipelineWith creates the tables of ddl (a format string taking the row
// count), then times the INSERT; its rates count b.N input rows.
func runPipelineWith(b *testing.B, ddl, insert string, extra ...string) {
	b.Helper()
	runPipelineRows(b, func(n int) int { return n }, ddl, insert, extra...)
}

// runPipelineRows is runPipelineWith for a pipeline that reads rows(b.N)
// input rows, which its rates count.
func runPipelineRows(b *testing.B, rows func(n int) int, ddl, insert string, extra ...string) {
	b.Helper()
	b.StopTimer()
	ctx := context.Background()
	conf := map[string]string{"parallelism.default": "1", "table.local-time-zone": "UTC"}
	for i := 0; i+1 < len(extra); i += 2 {
		conf[extra[i]] = extra[i+1]
	}
	sess, err := session.New(session.Options{Config: conf})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	if strings.Contains(ddl, "%d") || strings.Contains(ddl, "%[1]d") {
		ddl = fmt.Sprintf(ddl, b.N)
	}
	if _, err := sess.Execute(ctx, ddl); err != nil {
		b.Fatal(err)
	}
	cpu0, wall0 := cpuTime(), time.Now()
	b.StartTimer()
	if _, err := sess.Execute(ctx, insert); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	in := float64(rows(b.N))
	b.ReportMetric(in/wall.Seconds(), "rows/s")
	b.ReportMetric(in/cpu.Seconds(), "rows/cpu-s")
}

// (a) datagen → filter/projection → blackhole.
func BenchmarkFilterProject(b *testing.B) { runPipeline(b, filterProjectSQL) }

const filterProjectSQL = `INSERT INTO sink SELECT id, CAST(v * 2 AS BIGINT), CAST(k AS BIGINT) FROM src WHERE v > 10;`

// (b) datagen → TUMBLE 10 s SUM/COUNT per key over 10 000 keys → blackhole.
func BenchmarkTumbleSumCount(b *testing.B) { runPipeline(b, tumbleSumCountSQL) }

const tumbleSumCountSQL = `INSERT INTO sink
SELECT CAST(k AS BIGINT), CAST(SUM(v) AS BIGINT), COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`

// (c) datagen → HOP 10 s / 2 s COUNT per key → blackhole.
func BenchmarkHopCount(b *testing.B) { runPipeline(b, hopCountSQL) }

const hopCountSQL = `INSERT INTO sink
SELECT CAST(k AS BIGINT), COUNT(*), 0
FROM TABLE(HOP(TABLE src, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`

// Issue 3: datagen → unwindowed SUM per key over 100 000 keys → blackhole,
// hashmap state, with mini-batch off and on.
func groupSum(b *testing.B, miniBatch bool) {
	extra := []string{}
	if miniBatch {
		extra = []string{
			"table.exec.mini-batch.enabled", "true",
			"table.exec.mini-batch.allow-latency", "1 s",
			"table.exec.mini-batch.size", "10000",
		}
	}
	runPipelineWith(b, `
CREATE TABLE src2 (
  k  INT,
  v  INT
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '1000000000',
  'number-of-rows' = '%d',
  'fields.k.min' = '0', 'fields.k.max' = '99999',
  'fields.v.min' = '0', 'fields.v.max' = '1000'
);
CREATE TABLE sink2 (k INT, s INT) WITH ('connector' = 'blackhole');
`, `INSERT INTO sink2 SELECT k, SUM(v) FROM src2 GROUP BY k;`, extra...)
}

func BenchmarkGroupSumMiniBatchOff(b *testing.B) { groupSum(b, false) }
func BenchmarkGroupSumMiniBatchOn(b *testing.B)  { groupSum(b, true) }

// Issue 5: the TUMBLE pipeline (b) with checkpoints every second on each
// state backend, against no checkpoints.
func tumbleCheckpointed(b *testing.B, backend string) {
	extra := []string{}
	if backend != "" {
		extra = []string{
			"execution.checkpointing.interval", "1 s",
			"state.backend.type", backend,
			"state.checkpoints.dir", b.TempDir(),
			"pipeline.name", "bench-" + backend,
		}
	}
	runPipeline(b, `INSERT INTO sink
SELECT CAST(k AS BIGINT), CAST(SUM(v) AS BIGINT), COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`, extra...)
}

func BenchmarkTumbleNoCheckpoints(b *testing.B)      { tumbleCheckpointed(b, "") }
func BenchmarkTumbleCheckpointsHashmap(b *testing.B) { tumbleCheckpointed(b, "hashmap") }
func BenchmarkTumbleCheckpointsRocksDB(b *testing.B) { tumbleCheckpointed(b, "rocksdb") }

// Issue 10: the Issue 3 pipeline over a hot key set of 10 000 keys on each
// state backend (mini-batch off): rocksdb keeps the keys in the group
// aggregate's cache in front of Pebble.
func groupSumHotKeys(b *testing.B, backend string, extra ...string) {
	runPipelineWith(b, `
CREATE TABLE src3 (
  k  INT,
  v  INT
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '1000000000',
  'number-of-rows' = '%d',
  'fields.k.min' = '0', 'fields.k.max' = '9999',
  'fields.v.min' = '0', 'fields.v.max' = '1000'
);
CREATE TABLE sink3 (k INT, s INT) WITH ('connector' = 'blackhole');
`, `INSERT INTO sink3 SELECT k, SUM(v) FROM src3 GROUP BY k;`, append([]string{"state.backend.type", backend}, extra...)...)
}

func BenchmarkGroupSumHotKeysHashmap(b *testing.B) { groupSumHotKeys(b, "hashmap") }
func BenchmarkGroupSumHotKeysRocksDB(b *testing.B) { groupSumHotKeys(b, "rocksdb") }

// Batch mode: the hot-key GROUP BY above (10 000 keys, hashmap) run with
// 'execution.runtime-mode' = 'batch' — the aggregate's changelog counted
// by FinalRows and one row per key emitted at the end — against the same
// pipeline in streaming mode (BenchmarkGroupSumHotKeysHashmap).
func BenchmarkGroupSumHotKeysBatch(b *testing.B) {
	groupSumHotKeys(b, "hashmap", "execution.runtime-mode", "batch")
}

// Issue 11: the regular inner join of a stream of random keys over 100 000
// values against a stream of 100 000 rows, one per key (both sides kept),
// datagen → join → blackhole. One op is one row of the random-key stream;
// the 100 000 dimension rows are extra input counted in rows/cpu-s.
func BenchmarkRegularJoinSQL(b *testing.B) {
	runPipelineRows(b, func(n int) int { return n + 100000 }, `
CREATE TABLE ja (k BIGINT, v BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'number-of-rows' = '%d', 'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE jb (k BIGINT, name STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000',
  'number-of-rows' = '100000', 'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '99999',
  'fields.name.length' = '8');
CREATE TABLE jout (k BIGINT, v BIGINT, name STRING) WITH ('connector' = 'blackhole');
`, `INSERT INTO jout SELECT ja.k, ja.v, jb.name FROM ja JOIN jb ON ja.k = jb.k;`)
}

// Issue 11: the interval join of two streams of random keys over 100 000
// values, one row per millisecond of event time each, ±1 s. One op is one
// row of each side.
func BenchmarkIntervalJoinSQL(b *testing.B) {
	runPipelineRows(b, func(n int) int { return 2 * n }, `
CREATE TABLE il (id BIGINT, k BIGINT, ts AS TO_TIMESTAMP_LTZ(id, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '%[1]d',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[1]d',
  'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE ir (id BIGINT, k BIGINT, ts AS TO_TIMESTAMP_LTZ(id, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'datagen', 'rows-per-second' = '1000000000', 'number-of-rows' = '%[1]d',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[1]d',
  'fields.k.min' = '0', 'fields.k.max' = '99999');
CREATE TABLE iout (k BIGINT, lid BIGINT, rid BIGINT) WITH ('connector' = 'blackhole');
`, `INSERT INTO iout SELECT il.k, il.id, ir.id FROM il JOIN ir ON il.k = ir.k
  AND il.ts BETWEEN ir.ts - INTERVAL '1' SECOND AND ir.ts + INTERVAL '1' SECOND;`)
}
