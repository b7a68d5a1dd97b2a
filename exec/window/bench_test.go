package window

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/types"
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
func benchWindow(b *testing.B, w exec.WindowSpec) {
	const keys, batchSize, rowsPerMs = 10_000, 1024, 10
	w.EventTime, w.TimeCol = true, 2
	op, err := NewAggregate(AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSum{col: 1}})
	if err != nil {
		b.Fatal(err)
	}
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
	}
	b.StopTimer()
	rows := float64(b.N) * batchSize
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
	if out.rows == 0 && b.N > 100 {
		b.Fatal("no window fired")
	}
}

func BenchmarkTumble10s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Tumble, Size: 10_000})
}

func BenchmarkHop10s2s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 2_000})
}

func BenchmarkCumulate10s2s(b *testing.B) {
	benchWindow(b, exec.WindowSpec{Kind: exec.Cumulate, Size: 10_000, Step: 2_000})
}

// After warm-up (every key has seen its slices, buffers have grown), the
// per-batch path allocates nothing.
func TestSteadyStateAllocs(t *testing.T) {
	for _, w := range []exec.WindowSpec{
		{Kind: exec.Tumble, Size: 10_000},
		{Kind: exec.Hop, Size: 10_000, Slide: 2_000},
		{Kind: exec.Cumulate, Size: 10_000, Step: 2_000},
	} {
		w.EventTime, w.TimeCol = true, 2
		op, err := NewAggregate(AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSum{col: 1}})
		if err != nil {
			t.Fatal(err)
		}
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
			t.Errorf("%v: %.2f allocs per batch in steady state", w.Kind, allocs)
		}
		if out.rows == 0 {
			t.Errorf("%v: no window fired", w.Kind)
		}
	}
}
