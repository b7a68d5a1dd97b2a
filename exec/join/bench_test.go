package join

import (
	"math/rand/v2"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

const benchKeys = 100_000

type discard struct{ rows int }

func (d *discard) Push(b *types.Batch) error { d.rows += b.Len(); return nil }
func (d *discard) PushWatermark(int64) error { return nil }

// openBench opens op on a hashmap backend.
func openBench(b *testing.B, op exec.Operator) {
	k := optest.NewKeyed(b, image.Hashmap)
	k.Clock = func() int64 { return 0 }
	k.Open(b, op.(exec.KeyedOperator))
	rt := &optest.Runtime{}
	if err := op.Open(rt.Context()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRegularInnerJoin: a stream of rows over 100 000 keys joins a
// side that holds one row per key; every row is stored (its side keeps
// row → count) and emits one pair. Reported per input row.
func BenchmarkRegularInnerJoin(b *testing.B) {
	op, err := NewRegular(RegularSpec{
		Type:  Inner,
		Left:  Side{Width: 3, Keys: []int{0}},
		Right: Side{Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
	})
	if err != nil {
		b.Fatal(err)
	}
	openBench(b, op)
	out := &discard{}
	batch := types.NewBatch(2, types.DefaultBatchSize)
	for k := 0; k < benchKeys; k++ {
		r := batch.Append(types.Insert)
		r[0], r[1] = types.Int(int64(k)), types.String("customer")
		if batch.Full() {
			if err := op.ProcessBatch(1, batch, out); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := op.ProcessBatch(1, batch, out); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lb := types.NewBatch(3, types.DefaultBatchSize)
	for range lb.Cap() {
		lb.Append(types.Insert)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += lb.Len() {
		for i, r := range lb.Rows {
			r[0], r[1], r[2] = types.Int(int64(rng.IntN(benchKeys))), types.Int(int64(done+i)), types.Int(7)
		}
		if err := op.ProcessBatch(0, lb, out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
