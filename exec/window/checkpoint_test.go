package window

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/types"
)

// memStore is the checkpoint store of these tests.
type memStore = optest.Store

func newMemStore() *memStore { return optest.NewStore() }

// step is one action of a script: a batch of rows, a watermark, or the clock
// moving to a time (firing the processing timers due).
type step struct {
	rows  []in
	wm    int64
	clock int64
}

func rowsAt(rows ...in) step { return step{rows: rows} }
func wmAt(wm int64) step     { return step{wm: wm} }
func clockAt(t int64) step   { return step{clock: t} }

func (s step) Run(t *testing.T, op exec.Operator, rt *fakeRuntime, c *collector) {
	t.Helper()
	switch {
	case s.rows != nil:
		process(t, op, c, s.rows...)
	case s.wm != 0:
		watermark(t, op, c, s.wm)
	case s.clock != 0:
		rt.AdvanceTo(t, s.clock, op, c)
	}
}

// checkRestores is optest.CheckRestores for the aggregate of spec, with
// this package's output format; once every window fired, the last
// checkpoint must hold no keyed entry.
func checkRestores(t *testing.T, spec AggregateSpec, start int64, script []step, late int64, want ...string) {
	t.Helper()
	build := func() (exec.Operator, error) { return NewAggregate(spec) }
	store := optest.CheckRestores(t, build, newCollector, start, script, late, want...)
	if n := store.Keyed(); n != 0 {
		t.Errorf("%d keyed entries left in the checkpoint after every window fired", n)
	}
}

func TestTumbleRestore(t *testing.T) {
	// As TestTumbleEventTime: 5s arrives after window [0,10) fired and is
	// dropped, also when a restore happened in between.
	checkRestores(t, eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}), 0, []step{
		rowsAt(in{"a", 1, sec(1)}, in{"b", 2, sec(3)}, in{"a", 3, sec(12)}),
		rowsAt(in{"a", 4, sec(8)}, in{"b", 5, sec(9.999)}),
		wmAt(sec(9.998)),
		rowsAt(in{"c", 6, sec(2)}, in{"b", 7, sec(15)}),
		wmAt(sec(9.999)),
		rowsAt(in{"a", 8, sec(5)}, in{"b", 9, sec(19.999)}),
		wmAt(sec(20)),
		rowsAt(in{"a", 1, sec(19)}),
		wmAt(exec.MaxWatermark),
	}, 2,
		"WM(00:00:09.998)",
		"+I(a, 2, 5, 4, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 2, 7, 5, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(c, 1, 6, 6, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)",
		"+I(a, 1, 3, 3, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"+I(b, 2, 16, 9, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"WM(00:00:20.000)",
		"WM(max)")
}

func TestHopRestore(t *testing.T) {
	// As TestHopEventTime: after the windows ending at 5s and 10s fired, 3s
	// is dropped (its last window [0,10) fired) while 7s and 8s still count
	// in [5,15).
	checkRestores(t, eventTime(exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000}), 0, []step{
		rowsAt(in{"a", 1, sec(1)}, in{"a", 2, sec(6)}),
		rowsAt(in{"b", 4, sec(7)}, in{"a", 8, sec(12)}),
		wmAt(sec(9.999)),
		rowsAt(in{"a", 100, sec(3)}, in{"b", 50, sec(7)}),
		rowsAt(in{"c", 20, sec(8)}),
		wmAt(exec.MaxWatermark),
	}, 1,
		"+I(a, 1, 1, 1, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"+I(a, 2, 3, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 1, 4, 4, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)",
		"+I(a, 2, 10, 8, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(b, 2, 54, 50, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(c, 1, 20, 20, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(a, 1, 8, 8, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"WM(max)")
}

func TestCumulateRestore(t *testing.T) {
	// As TestCumulateEventTime; 1s comes after its slice fired, but the
	// period's last window [0,6) has not.
	checkRestores(t, eventTime(exec.WindowSpec{Kind: exec.Cumulate, Step: 2_000, Size: 6_000}), 0, []step{
		rowsAt(in{"a", 1, sec(0.5)}, in{"a", 2, sec(2.5)}, in{"b", 3, sec(3)}),
		rowsAt(in{"a", 4, sec(5.9)}, in{"a", 5, sec(6.1)}),
		wmAt(sec(3.999)),
		rowsAt(in{"c", 10, sec(1)}),
		wmAt(sec(7.999)),
		wmAt(exec.MaxWatermark),
	}, 0,
		"+I(a, 1, 1, 1, 00:00:00.000, 00:00:02.000, 00:00:01.999)",
		"+I(a, 2, 3, 2, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
		"+I(b, 1, 3, 3, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
		"WM(00:00:03.999)",
		"+I(a, 3, 7, 4, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(b, 1, 3, 3, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(c, 1, 10, 10, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:08.000, 00:00:07.999)",
		"WM(00:00:07.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:10.000, 00:00:09.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:12.000, 00:00:11.999)",
		"WM(max)")
}

func TestSessionRestore(t *testing.T) {
	// As TestSessionEventTime: b at 2s is late; a at 4s merges into the open
	// session [0,15) and counts.
	checkRestores(t, eventTime(exec.WindowSpec{Kind: exec.Session, Gap: 5_000}), 0, []step{
		rowsAt(in{"a", 1, sec(0)}, in{"a", 2, sec(10)}),
		rowsAt(in{"b", 3, sec(1)}, in{"a", 4, sec(5)}, in{"b", 5, sec(20)}),
		wmAt(sec(10)),
		rowsAt(in{"b", 6, sec(2)}),
		rowsAt(in{"a", 7, sec(4)}),
		wmAt(exec.MaxWatermark),
	}, 1,
		"+I(b, 1, 3, 3, 00:00:01.000, 00:00:06.000, 00:00:05.999)",
		"WM(00:00:10.000)",
		"+I(a, 4, 14, 7, 00:00:00.000, 00:00:15.000, 00:00:14.999)",
		"+I(b, 1, 5, 5, 00:00:20.000, 00:00:25.000, 00:00:24.999)",
		"WM(max)")
}

func TestProcessingTimeRestore(t *testing.T) {
	// Rows are placed by the clock; the restored operator registers the
	// timers of its pending windows again.
	tumble := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	checkRestores(t, tumble, sec(1), []step{
		rowsAt(in{"a", 1, 0}, in{"b", 2, 0}),
		clockAt(sec(4)),
		rowsAt(in{"a", 3, 0}),
		clockAt(sec(10)),
		rowsAt(in{"c", 5, 0}),
		clockAt(sec(19)),
		rowsAt(in{"c", 6, 0}),
		clockAt(sec(20)),
	}, 0,
		"+I(a, 2, 4, 3, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 1, 2, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(c, 2, 11, 6, 00:00:10.000, 00:00:20.000, 00:00:19.999)")
	session := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	checkRestores(t, session, sec(0), []step{
		rowsAt(in{"a", 1, 0}),
		clockAt(sec(3)),
		rowsAt(in{"a", 2, 0}),
		clockAt(sec(6)),
		rowsAt(in{"b", 4, 0}),
		clockAt(sec(9)),
		clockAt(sec(12)),
	}, 0,
		"+I(a, 2, 3, 2, 00:00:00.000, 00:00:08.000, 00:00:07.999)",
		"+I(b, 1, 4, 4, 00:00:06.000, 00:00:11.000, 00:00:10.999)")
}

// TestDistinctAccumulatorRestore checks an accumulator holding a MAP (the
// counted set of COUNT(DISTINCT)) across slices of a HOP window.
func TestDistinctAccumulatorRestore(t *testing.T) {
	h, err := agg.NewHandle([]agg.Call{
		{Name: "COUNT", FilterCol: -1},
		{Name: "COUNT", ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}, Distinct: true, FilterCol: -1},
	}, agg.Options{NeedsMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000, EventTime: true, TimeCol: 2},
		KeyCols: []int{0}, Aggs: h}
	checkRestores(t, spec, 0, []step{
		rowsAt(in{"a", 1, sec(1)}, in{"a", 1, sec(2)}, in{"a", 2, sec(3)}),
		rowsAt(in{"a", 2, sec(6)}, in{"a", 3, sec(7)}),
		wmAt(sec(4.999)),
		rowsAt(in{"a", 3, sec(8)}),
		wmAt(exec.MaxWatermark),
	}, 0,
		// [-5,5): 1,1,2 → 3 rows, 2 distinct
		"+I(a, 3, 2, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"WM(00:00:04.999)",
		// [0,10): 1,1,2,2,3,3 → 6 rows, 3 distinct; [5,15): 2,3,3 → 3 rows, 2 distinct
		"+I(a, 6, 3, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(a, 3, 2, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"WM(max)")
}

// TestSlicingSnapshotsAreIncremental counts the entries written: only the
// accumulators touched since the previous snapshot, and Deletes for those
// of fired slices.
func TestSlicingSnapshotsAreIncremental(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}))
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	mustOpen(t, op, rt)
	c := newCollector()
	var rows []in
	for i := range 50 {
		rows = append(rows, in{fmt.Sprintf("k%d", i), 1, sec(1)}, in{fmt.Sprintf("k%d", i), 1, sec(11)})
	}
	process(t, op, c, rows...)
	store := newMemStore()
	store.Snapshot(t, op, 1)
	if store.Puts != 101 || store.Dels != 0 { // 100 accumulators and the progress
		t.Fatalf("full snapshot: %d puts, %d deletes", store.Puts, store.Dels)
	}
	process(t, op, c, in{"k1", 1, sec(2)}, in{"k1", 1, sec(3)}, in{"k2", 1, sec(12)}, in{"new", 1, sec(13)})
	store.Snapshot(t, op, 2)
	if store.Puts != 4 || store.Dels != 0 { // k1 [0,10), k2 and new [10,20), progress
		t.Fatalf("incremental snapshot: %d puts, %d deletes", store.Puts, store.Dels)
	}
	watermark(t, op, c, sec(9.999))
	store.Snapshot(t, op, 3)
	if store.Puts != 1 || store.Dels != 50 { // the progress; the 50 accumulators of [0,10)
		t.Fatalf("after firing: %d puts, %d deletes", store.Puts, store.Dels)
	}
	if n := store.Keyed(); n != 51 {
		t.Fatalf("%d keyed entries, want 51", n)
	}
}
