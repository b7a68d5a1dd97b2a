package postgrescdc

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/types"
)

// BenchmarkStream measures the reader on the replication stream: b.N
// changes are committed first (one statement, so the server's decoding
// runs ahead), then read into batches. cpu-ns/event is this process's
// CPU time (user + sys) per change, the figure per core; the server's
// decoding runs in its own process and is not counted.
//
//	go test -run '^$' -bench BenchmarkStream -cpu 1 -benchmem ./connectors/postgrescdc
func BenchmarkStream(b *testing.B) {
	for _, kind := range []string{"insert", "update"} {
		b.Run(kind, func(b *testing.B) {
			db := pgtest.NewDB(b)
			db.Exec(b, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz); ALTER TABLE t REPLICA IDENTITY FULL`)
			if kind == "update" {
				db.Exec(b, fmt.Sprintf(`INSERT INTO t SELECT i, 'value ' || i, i / 100.0, '2024-01-02 03:04:05.5+00' FROM generate_series(1, %d) i`, b.N))
			}
			r := openReader(b, tableCtx(db, "bench_"+kind, true, false, map[string]string{"scan.startup.mode": "latest-offset"}), nil)
			if kind == "insert" {
				db.Exec(b, fmt.Sprintf(`INSERT INTO t SELECT i, 'value ' || i, i / 100.0, '2024-01-02 03:04:05.5+00' FROM generate_series(1, %d) i`, b.N))
			} else {
				db.Exec(b, `UPDATE t SET n = n + 1`)
			}
			rowsPerEvent := 1
			if kind == "update" {
				rowsPerEvent = 2
			}
			batch := types.NewBatch(len(r.cfg.physical), types.DefaultBatchSize)
			cpu0 := cpuTime()
			b.ReportAllocs()
			b.ResetTimer()
			got := 0
			for got < b.N*rowsPerEvent {
				batch.Reset()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := r.Read(ctx, batch)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				got += batch.Len()
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
			b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSnapshot measures reading a snapshot of b.N rows: "consistent"
// is the default snapshot (one transaction, one cursor), "incremental"
// the chunked one with its backfill (one subtask, default chunk and fetch
// sizes), "incremental-skip" without the backfill. cpu-ns/row is this
// process's CPU time per row (per core); the server's work (the chunk
// queries, decoding the backfill slot) runs in its processes and is not
// counted, wall-rows/s shows it.
//
//	go test -run '^$' -bench BenchmarkSnapshot -cpu 1 -benchmem ./connectors/postgrescdc
func BenchmarkSnapshot(b *testing.B) {
	for _, mode := range []string{"consistent", "incremental", "incremental-skip"} {
		b.Run(mode, func(b *testing.B) {
			db := pgtest.NewDB(b)
			db.Exec(b, fmt.Sprintf(`CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz); ALTER TABLE t REPLICA IDENTITY FULL;
INSERT INTO t SELECT i, 'value ' || i, i / 100.0, '2024-01-02 03:04:05.5+00' FROM generate_series(1, %d) i`, b.N))
			slot := "bench_snap_" + strings.ReplaceAll(mode, "-", "_")
			var read func(ctx context.Context, batch *types.Batch) error
			width := 4
			switch mode {
			case "consistent":
				r := openReader(b, tableCtx(db, slot, true, false, nil), nil)
				read = func(ctx context.Context, batch *types.Batch) error { _, err := r.Read(ctx, batch); return err }
			default:
				opts := map[string]string{"scan.incremental.snapshot.enabled": "true"}
				if mode == "incremental-skip" {
					opts["scan.incremental.snapshot.backfill.skip"] = "true"
				}
				r := openInc(b, newIncSource(b, tableCtx(db, slot, true, false, opts)), 0, 1, nil, nil)
				read = func(ctx context.Context, batch *types.Batch) error { _, err := r.Read(ctx, batch); return err }
			}
			batch := types.NewBatch(width, types.DefaultBatchSize)
			cpu0 := cpuTime()
			start := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			got := 0
			for got < b.N {
				batch.Reset()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := read(ctx, batch)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				got += batch.Len()
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/row")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "wall-rows/s")
		})
	}
}
