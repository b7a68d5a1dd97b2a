package join

import (
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

const benchKeys = 100_000

// cpuTime is the CPU time the process has used (all threads: the GC's
// work counts), so that a benchmark on a shared machine can report the
// cost per row on one core, which wall time under load does not show.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportPerCore reports the CPU time per row and the rows per second of
// one fully used core it amounts to.
func reportPerCore(b *testing.B, cpu0 int64) {
	ns := float64(cpuTime(b)-cpu0) / float64(b.N)
	b.ReportMetric(ns, "cpu-ns/row")
	b.ReportMetric(1e9/ns, "rows/s/core")
}

type discard struct{ rows int }

func (d *discard) Push(b *types.Batch) error { d.rows += b.Len(); return nil }
func (d *discard) PushWatermark(int64) error { return nil }

// openBench opens op on a hashmap backend.
func openBench(b *testing.B, op exec.Operator) { openOn(b, image.Hashmap, op) }

// openOn opens op on a fresh backend of kind, at processing time 0.
func openOn(tb testing.TB, kind image.Kind, op exec.Operator) {
	k := optest.NewKeyed(tb, kind)
	k.Clock = func() int64 { return 0 }
	k.Open(tb, op.(exec.KeyedOperator))
	rt := &optest.Runtime{}
	if err := op.Open(rt.Context()); err != nil {
		tb.Fatal(err)
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
	cpu0 := cpuTime(b)
	for done := 0; done < b.N; done += lb.Len() {
		for i, r := range lb.Rows {
			r[0], r[1], r[2] = types.Int(int64(rng.IntN(benchKeys))), types.Int(int64(done+i)), types.Int(7)
		}
		if err := op.ProcessBatch(0, lb, out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportPerCore(b, cpu0)
}

// BenchmarkIntervalJoin: two event-time streams over 100 000 keys, left.ts
// BETWEEN right.ts - 1 s AND right.ts + 1 s, 1 000 rows per second of event
// time on each side, batches alternating between the sides, a watermark
// after every pair of batches (rows expire as it moves). Reported per
// input row.
func BenchmarkIntervalJoin(b *testing.B) {
	op, err := NewInterval(IntervalSpec{
		Type: Inner, EventTime: true,
		Left: Side{Width: 3, Keys: []int{0}}, Right: Side{Width: 3, Keys: []int{0}},
		LeftTimeCol: 1, RightTimeCol: 1, LowerBound: -1000, UpperBound: 1000,
	})
	if err != nil {
		b.Fatal(err)
	}
	openBench(b, op)
	out := &discard{}
	rng := rand.New(rand.NewPCG(1, 2))
	batches := [2]*types.Batch{types.NewBatch(3, types.DefaultBatchSize), types.NewBatch(3, types.DefaultBatchSize)}
	for _, bt := range batches {
		for range bt.Cap() {
			bt.Append(types.Insert)
		}
	}
	ts := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for done := 0; done < b.N; {
		for side, bt := range batches {
			for i, r := range bt.Rows {
				r[0], r[1], r[2] = types.Int(int64(rng.IntN(benchKeys))), types.TimestampMillis(ts+int64(i)), types.Int(int64(i))
			}
			if err := op.ProcessBatch(side, bt, out); err != nil {
				b.Fatal(err)
			}
			done += bt.Len()
		}
		ts += int64(batches[0].Len())
		if err := op.ProcessWatermark(ts-1, out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportPerCore(b, cpu0)
}

// BenchmarkRegularJoinUniqueKeys: two streams keyed by their join key (a
// unique key, e.g. two CDC tables joined on their primary key) over
// 100 000 keys; each row replaces its side's row of the key and joins the
// other side's, so the state stays at one row per key and side.
func BenchmarkRegularJoinUniqueKeys(b *testing.B) {
	op, err := NewRegular(RegularSpec{
		Type:  Inner,
		Left:  Side{Width: 3, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
		Right: Side{Width: 3, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
	})
	if err != nil {
		b.Fatal(err)
	}
	openBench(b, op)
	out := &discard{}
	rng := rand.New(rand.NewPCG(1, 2))
	batches := [2]*types.Batch{types.NewBatch(3, types.DefaultBatchSize), types.NewBatch(3, types.DefaultBatchSize)}
	for _, bt := range batches {
		for range bt.Cap() {
			bt.Append(types.Insert)
		}
	}
	fill := func(side int, bt *types.Batch, seq int) {
		for i, r := range bt.Rows {
			r[0], r[1], r[2] = types.Int(int64(rng.IntN(benchKeys))), types.Int(int64(seq+i)), types.Int(int64(side))
		}
	}
	for warm := 0; warm < 2*benchKeys; warm += 2 * batches[0].Len() {
		for side, bt := range batches {
			fill(side, bt, warm)
			if err := op.ProcessBatch(side, bt, out); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for done := 0; done < b.N; {
		for side, bt := range batches {
			fill(side, bt, done)
			if err := op.ProcessBatch(side, bt, out); err != nil {
				b.Fatal(err)
			}
			done += bt.Len()
		}
	}
	b.StopTimer()
	reportPerCore(b, cpu0)
}

// BenchmarkRegularJoinRocksDB: the join of scripts/join-larger-than-memory.sh
// at the operator: two streams without unique keys, each key arriving once
// per side (the left side in ascending key order, the right in descending
// one, so a key meets its match only after half of each side has been
// stored), on a rocksdb backend with the optest budget. Reported per input
// row; state ends at b.N rows.
func BenchmarkRegularJoinRocksDB(b *testing.B) {
	op, err := NewRegular(RegularSpec{
		Type:  Inner,
		Left:  Side{Width: 2, Keys: []int{1}},
		Right: Side{Width: 2, Keys: []int{1}},
	})
	if err != nil {
		b.Fatal(err)
	}
	openOn(b, image.RocksDB, op)
	out := &discard{}
	batches := [2]*types.Batch{types.NewBatch(2, types.DefaultBatchSize), types.NewBatch(2, types.DefaultBatchSize)}
	for _, bt := range batches {
		for range bt.Cap() {
			bt.Append(types.Insert)
		}
	}
	perSide := int64(b.N / 2)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for id := int64(0); id < perSide; id += int64(batches[0].Len()) {
		for side, bt := range batches {
			for i, r := range bt.Rows {
				key := id + int64(i)
				if side == 1 {
					key = perSide - 1 - key
				}
				r[0], r[1] = types.Int(id+int64(i)), types.Int(key)
			}
			if err := op.ProcessBatch(side, bt, out); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	reportPerCore(b, cpu0)
}
