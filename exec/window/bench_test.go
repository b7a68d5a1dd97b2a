package window

import (
	"path/filepath"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// countSum is COUNT(*), SUM(col) for the benchmarks.
type countSum struct{ col int }

func (h countSum) NumAggs() int  { return 2 }
func (h countSum) AccWidth() int { return 2 }
func (h countSum) Init(acc []types.Value) {
	acc[0], acc[1] = types.Int(0), types.Int(0)
}
func (h countSum) Accumulate(acc []types.Value, in types.Row) error {
	acc[0].N++
	acc[1].N += in[h.col].N
	return nil
}
func (h countSum) Retract(acc []types.Value, in types.Row) error {
	acc[0].N--
	acc[1].N -= in[h.col].N
	return nil
}
func (h countSum) Merge(acc, other []types.Value) error {
	acc[0].N += other[0].N
	acc[1].N += other[1].N
	return nil
}
func (h countSum) Result(acc []types.Value, out []types.Value) error {
	copy(out, acc)
	return nil
}

type discard struct{ rows int }

func (d *discard) Push(b *types.Batch) error { d.rows += b.Len(); return nil }
func (d *discard) PushWatermark(int64) error { return nil }

// benchWindow feeds batches of 1024 rows over 10 000 BIGINT keys, 10 rows per
// millisecond (so 100 000 rows, 10 per key, per 10 s), with a watermark after
// every batch one second behind the newest row.
//
// On rocksdb the backend has a budget of 64 MB, so the decoded cache in
// front of it holds the 10 000-key hot set. With checkpoints, one is taken
// every 100 batches (10 s of event time) in line (write-back, the
// backend's snapshot, and, for hashmap, writing the image file, which the
// runtime does on another goroutine).
func benchWindow(b *testing.B, w exec.WindowSpec, kind image.Kind, checkpoints bool) {
	const keys, batchSize, rowsPerMs = 10_000, 1024, 10
	w.EventTime, w.TimeCol = true, 2
	op, err := NewAggregate(AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSum{col: 1}})
	if err != nil {
		b.Fatal(err)
	}
	be := openBenchBackend(b, op.(exec.KeyedOperator), kind)
	if err := op.Open((&fakeRuntime{}).Context()); err != nil {
		b.Fatal(err)
	}
	batch := types.NewBatch(3, batchSize)
	for range batchSize {
		batch.Append(types.Insert)
	}
	out := &discard{}
	var n int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, row := range batch.Rows {
			row[0] = types.Int(n % keys)
			row[1] = types.Int(n % 7)
			row[2] = types.TimestampMillis(base + n/rowsPerMs)
			n++
		}
		if err := op.ProcessBatch(0, batch, out); err != nil {
			b.Fatal(err)
		}
		if err := op.ProcessWatermark(base+n/rowsPerMs-1000, out); err != nil {
			b.Fatal(err)
		}
		if checkpoints && i%100 == 99 {
			checkpoint(b, op.(exec.KeyedOperator), be, int64(i/100+1))
		}
	}
	b.StopTimer()
	rows := float64(b.N) * batchSize
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
	if out.rows == 0 && b.N > 100 {
		b.Fatal("no window fired")
	}
}

// openBenchBackend gives op a fresh backend of kind (rocksdb: 64 MB).
func openBenchBackend(tb testing.TB, op exec.KeyedOperator, kind image.Kind) *kv.Backend {
	cfg := kv.Config{Kind: kind, Dir: filepath.Join(tb.TempDir(), "db"), MaxParallelism: 128}
	if kind == image.RocksDB {
		cfg.MemoryBudget = 64 << 20
	}
	be, err := kv.Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { be.Close() })
	if err := op.OpenKeyedState(be); err != nil {
		tb.Fatal(err)
	}
	return be
}

// checkpoint takes checkpoint id of op's backend, as the runtime's
// synchronous part does, and discards the image.
func checkpoint(tb testing.TB, op exec.KeyedOperator, be *kv.Backend, id int64) {
	if err := op.PrepareSnapshot(exec.CheckpointID(id)); err != nil {
		tb.Fatal(err)
	}
	im, err := be.Snapshot(id)
	if err != nil {
		tb.Fatal(err)
	}
	if err := im.Finish(); err != nil {
		tb.Fatal(err)
	}
	if err := im.Discard(); err != nil {
		tb.Fatal(err)
	}
}

func BenchmarkTumble10s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}, image.Hashmap, false)
}

func BenchmarkHop10s2s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 2_000}, image.Hashmap, false)
}

func BenchmarkCumulate10s2s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Cumulate, Size: 10_000, Step: 2_000}, image.Hashmap, false)
}

func BenchmarkTumble10sRocksDB(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}, image.RocksDB, false)
}

func BenchmarkHop10s2sRocksDB(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 2_000}, image.RocksDB, false)
}

func BenchmarkCumulate10s2sRocksDB(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Cumulate, Size: 10_000, Step: 2_000}, image.RocksDB, false)
}

// After warm-up (every key has seen its slices, buffers have grown), the
// per-batch path allocates nothing, on both backends (rocksdb with the hot
// set in the cache).
func TestSteadyStateAllocs(t *testing.T) {
	for _, kind := range optest.Kinds {
		for _, w := range []exec.WindowSpec{
			{Kind: exec.Tumble, Size: 10_000},
			{Kind: exec.Hop, Size: 10_000, Slide: 2_000},
			{Kind: exec.Cumulate, Size: 10_000, Step: 2_000},
		} {
			steadyStateAllocs(t, w, kind)
		}
	}
}

func steadyStateAllocs(t *testing.T, w exec.WindowSpec, kind image.Kind) {
	{
		w.EventTime, w.TimeCol = true, 2
		op, err := NewAggregate(AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSum{col: 1}})
		if err != nil {
			t.Fatal(err)
		}
		openBenchBackend(t, op.(exec.KeyedOperator), kind)
		if err := op.Open((&fakeRuntime{}).Context()); err != nil {
			t.Fatal(err)
		}
		const keys, rowsPerMs = 1000, 10
		batch := types.NewBatch(3, 1024)
		for range 1024 {
			batch.Append(types.Insert)
		}
		out := &discard{}
		var n int64
		step := func() {
			for _, row := range batch.Rows {
				row[0] = types.Int(n % keys)
				row[1] = types.Int(n % 7)
				row[2] = types.TimestampMillis(base + n/rowsPerMs)
				n++
			}
			if err := op.ProcessBatch(0, batch, out); err != nil {
				t.Fatal(err)
			}
			if err := op.ProcessWatermark(base+n/rowsPerMs-1000, out); err != nil {
				t.Fatal(err)
			}
		}
		for range 400 { // 40 s of data
			step()
		}
		if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
			t.Errorf("%s %v: %.2f allocs per batch in steady state", kind, w.Kind, allocs)
		}
		if out.rows == 0 {
			t.Errorf("%s %v: no window fired", kind, w.Kind)
		}
	}
}

func BenchmarkHop10s2sCheckpointed(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 2_000}, image.Hashmap, true)
}

func BenchmarkHop10s2sCheckpointedRocksDB(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 2_000}, image.RocksDB, true)
}
