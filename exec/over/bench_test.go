package over

import (
	"strconv"
	"syscall"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

type discard struct{}

func (discard) Push(*types.Batch) error   { return nil }
func (discard) PushWatermark(int64) error { return nil }

// BenchmarkRowsPreceding: ROWS BETWEEN 100 PRECEDING AND CURRENT ROW,
// SUM + COUNT, 10 000 keys, event time with a watermark after every batch
// of 1024 rows (so every row is buffered, fired, accumulated and, once the
// frame is full, retracted). One op is one row.
func BenchmarkRowsPreceding(b *testing.B) { benchRowsPreceding(b, 10_000) }

// BenchmarkRowsPrecedingHotKeys is BenchmarkRowsPreceding over 100 keys,
// whose state fits the decoded cache on rocksdb too.
func BenchmarkRowsPrecedingHotKeys(b *testing.B) { benchRowsPreceding(b, 100) }

func benchRowsPreceding(b *testing.B, keys int) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op, err := New(Spec{KeyCols: []int{0}, TimeCol: 2, Rows: true, Preceding: 100, Aggs: handle(b, "SUM", "COUNT")})
			if err != nil {
				b.Fatal(err)
			}
			optest.NewKeyed(b, kind).Open(b, op.(exec.KeyedOperator))
			rt := &optest.Runtime{}
			if err := op.Open(rt.Context()); err != nil {
				b.Fatal(err)
			}
			const batch = 1024
			names := make([]types.Value, keys)
			for i := range names {
				names[i] = types.String("key-" + strconv.Itoa(i))
			}
			in := types.NewBatch(3, batch)
			ts := int64(0)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for n := 0; n < b.N; {
				in.Reset()
				for j := 0; j < batch && n < b.N; j++ {
					row := in.Append(types.Insert)
					ts++
					row[0], row[1], row[2] = names[n%keys], types.Int(int64(n%7)), types.TimestampMillis(ts)
					n++
				}
				if err := op.ProcessBatch(0, in, discard{}); err != nil {
					b.Fatal(err)
				}
				if err := op.ProcessWatermark(ts, discard{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// The machine is shared: CPU time per row says more than wall time.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/row")
		})
	}
}

// cpuTime is the process's user + system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkBatchRowsPreceding is the batch OVER (sort-based, any order):
// PARTITION BY key ORDER BY x ROWS BETWEEN 100 PRECEDING AND CURRENT ROW,
// SUM + COUNT, 10 000 keys. One op is one row: buffered in keyed state,
// then at Finish decoded, sorted with its partition, accumulated and
// retracted, and emitted.
func BenchmarkBatchRowsPreceding(b *testing.B) {
	const keys = 10_000
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op, err := NewBatch(BatchSpec{KeyCols: []int{0}, Order: []exec.SortKey{{Col: 1, NullsFirst: true}},
				Frame: Frame{Rows: true, Start: Bound{Kind: Preceding, Offset: 100}, End: Bound{Kind: CurrentRow}},
				Aggs:  handle(b, "SUM", "COUNT"), Slots: []int{0, 1}})
			if err != nil {
				b.Fatal(err)
			}
			optest.NewKeyed(b, kind).Open(b, op.(exec.KeyedOperator))
			rt := &optest.Runtime{}
			if err := op.Open(rt.Context()); err != nil {
				b.Fatal(err)
			}
			const batch = 1024
			names := make([]types.Value, keys)
			for i := range names {
				names[i] = types.String("key-" + strconv.Itoa(i))
			}
			in := types.NewBatch(3, batch)
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for n := 0; n < b.N; {
				in.Reset()
				for j := 0; j < batch && n < b.N; j++ {
					row := in.Append(types.Insert)
					row[0], row[1], row[2] = names[n%keys], types.Int(int64((n*7919)%1000)), types.TimestampMillis(int64(n))
					n++
				}
				if err := op.ProcessBatch(0, in, discard{}); err != nil {
					b.Fatal(err)
				}
			}
			if err := op.Finish(discard{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/row")
		})
	}
}
