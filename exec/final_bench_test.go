package exec

import (
	"path/filepath"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// openBenchBackend opens a keyed backend of kind for op in b's temporary
// directory (rocksdb with a 64 MB budget).
func openBenchBackend(b *testing.B, kind image.Kind, op KeyedOperator) {
	cfg := kv.Config{Kind: kind, Dir: filepath.Join(b.TempDir(), "db")}
	if kind == image.RocksDB {
		cfg.MemoryBudget = 64 << 20
	}
	be, err := kv.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	if err := op.OpenKeyedState(be); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFinal: the per-row cost of batch mode's FinalRows over the
// changelog of a GROUP BY with 10 000 keys (each batch: 512 -U/+U pairs,
// the key's old and new count), on each backend, and the Finish that walks
// the 10 000 final rows. One op is one batch of 1024 rows.
func BenchmarkFinal(b *testing.B) {
	const keys = 10000
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op := NewFinal(2).(*finalOp)
			openBenchBackend(b, kind, op)
			batch := types.NewBatch(2, 1024)
			counts := make([]int64, keys)
			next := 0
			out := discardOutput{}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				batch.Reset()
				for range 512 {
					k := next % keys
					next++
					if counts[k] > 0 {
						batch.AppendRow(types.UpdateBefore, types.Row{types.Int(int64(k)), types.Int(counts[k])})
						counts[k]++
						batch.AppendRow(types.UpdateAfter, types.Row{types.Int(int64(k)), types.Int(counts[k])})
					} else {
						counts[k]++
						batch.AppendRow(types.Insert, types.Row{types.Int(int64(k)), types.Int(counts[k])})
						batch.AppendRow(types.Insert, types.Row{types.Int(int64(-k - 1)), types.Int(0)})
					}
				}
				if err := op.ProcessBatch(0, batch, out); err != nil {
					b.Fatal(err)
				}
			}
			if err := op.Finish(out); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/row")
		})
	}
}

// BenchmarkTemporalSort: the per-row cost of the streaming temporal sort,
// rows 8 to a timestamp, a watermark after every batch releasing it. One
// op is one batch of 1024 rows.
func BenchmarkTemporalSort(b *testing.B) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op := NewTemporalSort(1, []SortKey{{Col: 1}, {Col: 0}}).(*temporalSortOp)
			openBenchBackend(b, kind, op)
			if err := op.Open(&OperatorContext{Metrics: &OperatorMetrics{}}); err != nil {
				b.Fatal(err)
			}
			batch := types.NewBatch(2, 1024)
			out := discardOutput{}
			ts := int64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				batch.Reset()
				for j := range 1024 {
					batch.AppendRow(types.Insert, types.Row{types.Int(int64(1023 - j)), types.Int(ts + int64(j/8))})
				}
				ts += 128
				if err := op.ProcessBatch(0, batch, out); err != nil {
					b.Fatal(err)
				}
				if err := op.ProcessWatermark(ts-1, out); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					if err := op.PrepareSnapshot(CheckpointID(i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/row")
		})
	}
}

// discardOutput drops what it is given.
type discardOutput struct{}

func (discardOutput) Push(*types.Batch) error   { return nil }
func (discardOutput) PushWatermark(int64) error { return nil }
