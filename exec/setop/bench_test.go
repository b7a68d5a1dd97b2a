package setop

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

type discard struct{}

func (discard) Push(*types.Batch) error   { return nil }
func (discard) PushWatermark(int64) error { return nil }

// BenchmarkExceptAll feeds batches of 1024 rows over 10 000 distinct rows,
// alternating the two inputs, on both backends.
func BenchmarkExceptAll(b *testing.B) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op, err := New(Spec{Kind: Except, All: true, Width: 2})
			if err != nil {
				b.Fatal(err)
			}
			k := optest.NewKeyed(b, kind)
			ko := op.(*setOp)
			k.Open(b, ko)
			if err := op.Open(nil); err != nil {
				b.Fatal(err)
			}
			batch := types.NewBatch(2, 1024)
			n := int64(0)
			fill := func() {
				batch.Reset()
				for i := 0; i < 1024; i++ {
					r := batch.Append(types.Insert)
					r[0] = types.Int(n % 10000)
					r[1] = types.String("x")
					n++
				}
			}
			fill()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%10 == 0 {
					b.StopTimer()
					fill()
					b.StartTimer()
				}
				if err := op.ProcessBatch(i%2, batch, discard{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/row")
		})
	}
}

// BenchmarkIntersectChurn inserts batches of 1024 rows over 10 000
// distinct rows on both inputs and then retracts them, so counts keep
// going back to zero (removed) and coming again, with state TTL on.
func BenchmarkIntersectChurn(b *testing.B) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op, err := New(Spec{Kind: Intersect, Width: 2, StateTTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			k := optest.NewKeyed(b, kind)
			k.Open(b, op.(*setOp))
			rt := &optest.Runtime{Now: 1}
			if err := op.Open(rt.Context()); err != nil {
				b.Fatal(err)
			}
			batches := make([]*types.Batch, 4) // left +, right +, left -, right -
			for i := range batches {
				batches[i] = types.NewBatch(2, 1024)
			}
			n := int64(0)
			fill := func() {
				for i, batch := range batches {
					kind := types.Insert
					if i >= 2 {
						kind = types.Delete
					}
					batch.Reset()
					for j := 0; j < 1024; j++ {
						r := batch.Append(kind)
						r[0] = types.Int((n + int64(j)) % 10000)
						r[1] = types.String("x")
					}
				}
				n += 1024
			}
			fill()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%4 == 0 && i > 0 {
					b.StopTimer()
					fill()
					b.StartTimer()
				}
				if err := op.ProcessBatch(i%2, batches[i%4], discard{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/row")
		})
	}
}
