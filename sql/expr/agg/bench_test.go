package agg

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// hotCalls is COUNT(*), SUM(b), MAX(b), AVG(i), MIN(b) FILTER (WHERE f) over
// rows (b BIGINT, i INT, f BOOLEAN).
func hotCalls() []Call {
	return []Call{
		{Name: "COUNT", FilterCol: -1},
		one("SUM", 0, types.BigIntType),
		one("MAX", 0, types.BigIntType),
		one("AVG", 1, types.IntType),
		{Name: "MIN", ArgCols: []int{0}, ArgTypes: []types.Type{types.BigIntType}, FilterCol: 2},
	}
}

func hotBatch() *types.Batch {
	b := types.NewBatch(3, types.DefaultBatchSize)
	for i := 0; i < types.DefaultBatchSize; i++ {
		r := b.Append(types.Insert)
		r[0] = types.Int(int64(i * 7919 % 10007))
		if i%10 != 0 {
			r[1] = types.Int(int64(i))
		}
		r[2] = types.Bool(i%3 == 0)
	}
	return b
}

func TestAccumulateDoesNotAllocate(t *testing.T) {
	h := mustHandle(t, hotCalls(), Options{NeedsRetraction: false})
	b := hotBatch()
	acc := make([]types.Value, h.AccWidth())
	h.Init(acc)
	out := make([]types.Value, h.NumAggs())
	allocs := testing.AllocsPerRun(10, func() {
		for _, r := range b.Rows {
			if err := h.Accumulate(acc, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Result(acc, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Accumulate+Result allocate %.1f times per batch", allocs)
	}
	// With retraction COUNT/SUM/AVG still do not allocate.
	h = mustHandle(t, hotCalls()[:2], Options{NeedsRetraction: true})
	acc = make([]types.Value, h.AccWidth())
	h.Init(acc)
	allocs = testing.AllocsPerRun(10, func() {
		for _, r := range b.Rows {
			_ = h.Accumulate(acc, r)
			_ = h.Retract(acc, r)
		}
	})
	if allocs != 0 {
		t.Errorf("Accumulate+Retract of COUNT/SUM allocate %.1f times per batch", allocs)
	}
}

// BenchmarkAccumulate reports the cost per row of a batch.
func BenchmarkAccumulate(b *testing.B) {
	h := mustHandle(b, hotCalls(), Options{})
	batch := hotBatch()
	acc := make([]types.Value, h.AccWidth())
	h.Init(acc)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range batch.Rows {
			if err := h.Accumulate(acc, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len()), "ns/row")
}

func BenchmarkAccumulateRetractMinMax(b *testing.B) {
	h := mustHandle(b, hotCalls(), Options{NeedsRetraction: true})
	batch := hotBatch()
	acc := make([]types.Value, h.AccWidth())
	h.Init(acc)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range batch.Rows {
			if err := h.Accumulate(acc, r); err != nil {
				b.Fatal(err)
			}
		}
		for _, r := range batch.Rows {
			if err := h.Retract(acc, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len()*2), "ns/row")
}

func BenchmarkCountDistinct(b *testing.B) {
	h := mustHandle(b, []Call{{Name: "COUNT", ArgCols: []int{0}, ArgTypes: []types.Type{types.BigIntType},
		Distinct: true, FilterCol: -1}}, Options{})
	batch := hotBatch()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		acc := make([]types.Value, h.AccWidth())
		h.Init(acc)
		for _, r := range batch.Rows {
			if err := h.Accumulate(acc, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len()), "ns/row")
}
