package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// base is 2024-01-01T00:00:00Z, aligned to every window size used here.
const base = int64(1704067200000)

func sec(s float64) int64 { return base + int64(s*1000) }

// countSumMax is a tiny AggsHandle: COUNT(*), SUM(col), MAX(col) over a
// BIGINT column. Its accumulator is [count, sum, max].
type countSumMax struct{ col int }

func (h countSumMax) NumAggs() int  { return 3 }
func (h countSumMax) AccWidth() int { return 3 }
func (h countSumMax) Init(acc []types.Value) {
	acc[0], acc[1], acc[2] = types.Int(0), types.Value{}, types.Value{}
}
func (h countSumMax) Accumulate(acc []types.Value, in types.Row) error {
	acc[0].N++
	v := in[h.col]
	if v.IsNull() {
		return nil
	}
	h.fold(acc, v, v)
	return nil
}
func (h countSumMax) fold(acc []types.Value, sum, mx types.Value) {
	if acc[1].IsNull() {
		acc[1] = sum
	} else if !sum.IsNull() {
		acc[1].N += sum.N
	}
	if acc[2].IsNull() || (!mx.IsNull() && mx.N > acc[2].N) {
		acc[2] = mx
	}
}
func (h countSumMax) Retract(acc []types.Value, in types.Row) error {
	return fmt.Errorf("retract not supported")
}
func (h countSumMax) Merge(acc, other []types.Value) error {
	acc[0].N += other[0].N
	h.fold(acc, other[1], other[2])
	return nil
}
func (h countSumMax) Result(acc []types.Value, out []types.Value) error {
	copy(out, acc[:3])
	return nil
}

// collector records what an operator emits; newCollector formats
// timestamps and watermarks as UTC times of day.
type collector = optest.Collector

func newCollector() *collector { return &collector{Time: timeOfDay} }

func timeOfDay(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }

func dateTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }

// fakeRuntime is the OperatorContext of a test with a settable clock.
type fakeRuntime = optest.Runtime

var expect = optest.Expect

// in is an input row (key, value, time) for the tests' layout.
type in struct {
	key string
	val int64
	t   int64
}

func batchOf(rows ...in) *types.Batch {
	b := types.NewBatch(3, 0)
	for _, r := range rows {
		row := b.Append(types.Insert)
		row[0] = types.String(r.key)
		row[1] = types.Int(r.val)
		row[2] = types.TimestampMillis(r.t)
	}
	return b
}

// mustOpen opens op as the runtime does: a keyed operator gets a fresh
// hashmap backend first.
func mustOpen(t *testing.T, op exec.Operator, rt *fakeRuntime) {
	t.Helper()
	if ko, ok := op.(exec.KeyedOperator); ok {
		optest.NewKeyed(t, image.Hashmap).Open(t, ko)
	}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
}

func process(t *testing.T, op exec.Operator, c *collector, rows ...in) {
	t.Helper()
	if err := op.ProcessBatch(0, batchOf(rows...), c); err != nil {
		t.Fatal(err)
	}
}

func watermark(t *testing.T, op exec.Operator, c *collector, wm int64) {
	t.Helper()
	if err := op.ProcessWatermark(wm, c); err != nil {
		t.Fatal(err)
	}
}

// eventTime is the spec of the tests' layout: key 0, value 1, rowtime 2.
func eventTime(w exec.WindowSpec) AggregateSpec {
	w.EventTime = true
	w.TimeCol = 2
	return AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
}
