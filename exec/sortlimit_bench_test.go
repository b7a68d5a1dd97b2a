package exec

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// discardWriter is a StateWriter that drops what it is given.
type discardStateWriter struct{ full bool }

func (w *discardStateWriter) Full() bool                  { return w.full }
func (*discardStateWriter) Put(int, []byte, []byte) error { return nil }
func (*discardStateWriter) Delete(int, []byte) error      { return nil }

// BenchmarkSortLimit: the per-row cost of the stream Sort (buffering; the
// sort itself at Finish) and Limit, with a checkpoint every 64 batches of
// 1024 rows, on each backend. One op is one batch.
func BenchmarkSortLimit(b *testing.B) {
	batch := types.NewBatch(2, 1024)
	for i := range 1024 {
		batch.AppendRow(types.Insert, types.Row{types.String(fmt.Sprintf("row-%04d", i)), types.Int(int64(i * 7919 % 1024))})
	}
	for _, op := range []string{"sort", "limit"} {
		for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
			b.Run(op+"/"+string(kind), func(b *testing.B) {
				var o Operator
				if op == "sort" {
					o = NewSort([]SortKey{{Col: 1}}, 0, 10)
				} else {
					o = NewLimit(1<<40, 10) // passes nothing: the counting alone
				}
				if ko, ok := o.(KeyedOperator); ok {
					openBenchBackend(b, kind, ko)
				} else if kind == image.RocksDB {
					b.Skip("operator state: no backend")
				}
				out := &collectOutput{}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := o.ProcessBatch(0, batch, out); err != nil {
						b.Fatal(err)
					}
					if i%64 == 63 {
						var err error
						switch x := o.(type) {
						case KeyedOperator:
							err = x.PrepareSnapshot(CheckpointID(i))
						case CheckpointedOperator:
							err = x.SnapshotState(CheckpointID(i), &discardStateWriter{})
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := o.Finish(out); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/row")
			})
		}
	}
}
