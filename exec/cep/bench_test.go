package cep

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

// simpleSpec is PATTERN (A B) DEFINE A AS x < 10, B AS x >= 10, MEASURES
// FIRST(A.x), SUM(A.x), LAST(B.x) (spec's navigations), SKIP PAST LAST ROW.
func simpleSpec() Spec {
	s := spec(SkipPastLastRow, 0)
	s.Pattern = []Element{{Var: 0, Min: 1, Max: 1}, {Var: 1, Min: 1, Max: 1}}
	return s
}

// BenchmarkSimplePattern: PATTERN (A B) over 10 000 keys on event time,
// a watermark after every batch of 1024 rows (every row is buffered, then
// run through its key's automaton); x cycles 0, 5, 10, 15, so every key
// sees A A B B and matches once per four of its rows. One op is one row.
func BenchmarkSimplePattern(b *testing.B) {
	const keys = 10_000
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			op, err := New(simpleSpec())
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
					row[0], row[1], row[2] = names[n%keys], types.Int(int64((n/keys)%4*5)), types.TimestampMillis(ts)
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
