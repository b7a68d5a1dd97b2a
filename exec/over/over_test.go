package over

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// in is a test row: key, x, timestamp in seconds.
type in struct {
	k  string
	x  int64
	ts float64
}

type step struct {
	rows []in
	wm   int64
}

func ms(s float64) int64 { return int64(s * 1000) }

// Run feeds the watermark, if any, then the rows. A step holds both when a
// late row must meet the watermark it is late for: the watermark is not
// part of a checkpoint (as in Flink, a restored operator starts with none),
// so a restore between them would let the row in.
func (s step) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	if s.wm != 0 {
		if err := op.ProcessWatermark(s.wm, c); err != nil {
			t.Fatal(err)
		}
	}
	if s.rows != nil {
		b := types.NewBatch(3, 0)
		for _, r := range s.rows {
			row := b.Append(types.Insert)
			row[0], row[1], row[2] = types.String(r.k), types.Int(r.x), types.TimestampMillis(ms(r.ts))
		}
		rt.Now += 1000
		if err := op.ProcessBatch(0, b, c); err != nil {
			t.Fatal(err)
		}
	}
}

func newCollector() *optest.Collector {
	return &optest.Collector{Time: func(ms int64) string { return fmt.Sprintf("%gs", float64(ms)/1000) }}
}

func handle(t testing.TB, names ...string) exec.AggsHandle {
	var calls []agg.Call
	for _, n := range names {
		c := agg.Call{Name: n, FilterCol: -1, ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}}
		if n == "COUNT(*)" {
			c = agg.Call{Name: "COUNT", FilterCol: -1}
		}
		calls = append(calls, c)
	}
	h, err := agg.NewHandle(calls, agg.Options{NeedsRetraction: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func builder(t *testing.T, spec Spec, aggs ...string) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		s := spec
		s.Aggs = handle(t, aggs...)
		return New(s)
	}
}

// checkRestores runs optest.CheckRestores twice: with the cache as the
// backend sizes it, and with a cache of one key, so that every batch and
// watermark ends by writing back and dropping the cached keys and every
// key is loaded from the backend again: the output must not change.
func checkRestores(t *testing.T, build func() (exec.Operator, error), script []step, late int64, want ...string) {
	t.Helper()
	optest.CheckRestores(t, build, newCollector, 0, script, late, want...)
	t.Run("evicting", func(t *testing.T) {
		optest.CheckRestores(t, func() (exec.Operator, error) {
			op, err := build()
			if err == nil {
				op.(*operator).maxCached = 1
			}
			return op, err
		}, newCollector, 0, script, late, want...)
	})
}

// The input of the event-time tests: a 2 and a 3 share 3 s (peers); a 4
// at 2 s arrives after the watermark 2 s and is late.
var script = []step{
	{rows: []in{{"a", 1, 1}, {"a", 2, 3}, {"b", 5, 3}, {"a", 3, 3}}},
	{wm: ms(2), rows: []in{{"a", 4, 2}, {"a", 6, 5}}},
	{wm: ms(4)},
	{rows: []in{{"a", 7, 6}}},
	{wm: exec.MaxWatermark},
}

// TestRowsPreceding: ROWS BETWEEN 2 PRECEDING AND CURRENT ROW; peers are
// separate rows in arrival order; leaving rows are retracted (MAX too).
func TestRowsPreceding(t *testing.T) {
	checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: 2, Rows: true, Preceding: 2}, "SUM", "COUNT", "MAX"),
		script, 1,
		"+I(a, 1, 1s, 1, 1, 1)",
		"WM(2s)",
		"+I(a, 2, 3s, 3, 2, 2)",
		"+I(a, 3, 3s, 6, 3, 3)",
		"+I(b, 5, 3s, 5, 1, 5)",
		"WM(4s)",
		// a 1 leaves: {2, 3, 6}; then a 2 leaves: {3, 6, 7}.
		"+I(a, 6, 5s, 11, 3, 6)",
		"+I(a, 7, 6s, 16, 3, 7)",
		"WM(max)")
}

// TestRangePreceding: RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND
// CURRENT ROW: rows in [T - 2 s, T], peers included.
func TestRangePreceding(t *testing.T) {
	checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: 2, Preceding: 2000}, "SUM", "COUNT(*)", "MIN"),
		script, 1,
		"+I(a, 1, 1s, 1, 1, 1)",
		"WM(2s)",
		"+I(a, 2, 3s, 6, 3, 1)",
		"+I(a, 3, 3s, 6, 3, 1)",
		"+I(b, 5, 3s, 5, 1, 5)",
		"WM(4s)",
		// @5: [3, 5] = {2, 3, 6}; @6: [4, 6] = {6, 7}.
		"+I(a, 6, 5s, 11, 3, 2)",
		"+I(a, 7, 6s, 13, 2, 6)",
		"WM(max)")
}

// TestUnbounded: ROWS and RANGE UNBOUNDED PRECEDING differ on peers.
func TestUnbounded(t *testing.T) {
	t.Run("rows", func(t *testing.T) {
		checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: 2, Rows: true, Preceding: Unbounded}, "SUM"),
			script, 1,
			"+I(a, 1, 1s, 1)", "WM(2s)",
			"+I(a, 2, 3s, 3)", "+I(a, 3, 3s, 6)", "+I(b, 5, 3s, 5)", "WM(4s)",
			"+I(a, 6, 5s, 12)", "+I(a, 7, 6s, 19)", "WM(max)")
	})
	t.Run("range", func(t *testing.T) {
		checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: 2, Preceding: Unbounded}, "SUM"),
			script, 1,
			"+I(a, 1, 1s, 1)", "WM(2s)",
			"+I(a, 2, 3s, 6)", "+I(a, 3, 3s, 6)", "+I(b, 5, 3s, 5)", "WM(4s)",
			"+I(a, 6, 5s, 12)", "+I(a, 7, 6s, 19)", "WM(max)")
	})
}

// TestProcTime: ordered by processing time, rows are processed on arrival
// (nothing is late, nothing waits for a watermark).
func TestProcTime(t *testing.T) {
	checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: -1, Rows: true, Preceding: 1}, "SUM"),
		script, 0,
		"+I(a, 1, 1s, 1)", "+I(a, 2, 3s, 3)", "+I(b, 5, 3s, 5)", "+I(a, 3, 3s, 5)",
		"WM(2s)",
		"+I(a, 4, 2s, 7)", "+I(a, 6, 5s, 10)",
		"WM(4s)",
		"+I(a, 7, 6s, 13)",
		"WM(max)")
}

// TestKeysFireInTimeOrder: at a watermark the keys with due rows fire in
// the order of their earliest due timestamp, then of their key, whether
// they are cached or stored with a timer (with a cache of one key every
// key but one is stored, and loading one evicts another); a key fires all
// its due rows at once, and keeps the rest (b's 20 @3 s) for later.
func TestKeysFireInTimeOrder(t *testing.T) {
	checkRestores(t, builder(t, Spec{KeyCols: []int{0}, TimeCol: 2, Rows: true, Preceding: Unbounded}, "SUM"),
		[]step{
			{rows: []in{{"c", 100, 0.5}, {"b", 10, 1}, {"a", 1, 1}}},
			{rows: []in{{"a", 2, 2}, {"b", 20, 3}}},
			{wm: ms(2)},
			{wm: exec.MaxWatermark},
		}, 0,
		"+I(c, 100, 0.5s, 100)", "+I(a, 1, 1s, 1)", "+I(a, 2, 2s, 3)", "+I(b, 10, 1s, 10)",
		"WM(2s)",
		"+I(b, 20, 3s, 30)",
		"WM(max)")
}
