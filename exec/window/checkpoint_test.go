package window

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// step is one action of a script: a batch of rows, a watermark, or the clock
// moving to a time (firing the processing timers due).
type step struct {
	rows    []in
	wm      int64
	clock   int64
	retract bool // rows are -D rows (an updating input)
}

func rowsAt(rows ...in) step { return step{rows: rows} }
func wmAt(wm int64) step     { return step{wm: wm} }
func clockAt(t int64) step   { return step{clock: t} }

func (s step) Run(t *testing.T, op exec.Operator, rt *fakeRuntime, c *collector) {
	t.Helper()
	switch {
	case s.rows != nil && s.retract:
		bt := batchOf(s.rows...)
		for i := range bt.Kinds {
			bt.Kinds[i] = types.Delete
		}
		if err := op.ProcessBatch(0, bt, c); err != nil {
			t.Fatal(err)
		}
	case s.rows != nil:
		process(t, op, c, s.rows...)
	case s.wm != 0:
		watermark(t, op, c, s.wm)
	case s.clock != 0:
		rt.AdvanceTo(t, s.clock, op, c)
	}
}

// checkRestores is optest.CheckRestores for the aggregate of spec, with
// this package's output format, on both backends: as the runtime opens it,
// and again with a decoded cache of one entry, so that every batch evicts
// and rows, firings and restores go through the backend. Once every window
// fired, the backend must hold nothing but the progress.
func checkRestores(t *testing.T, spec AggregateSpec, start int64, script []step, late int64, want ...string) {
	t.Helper()
	for _, limit := range []int{0, 1} {
		build := func() (exec.Operator, error) {
			op, err := NewAggregate(spec)
			if err == nil {
				setCacheLimit(op, limit)
			}
			return op, err
		}
		optest.CheckRestores(t, build, newFiringCollector, start, script, late, byWindow(slices.Clone(want))...)
		for _, kind := range optest.Kinds {
			op, err := build()
			if err != nil {
				t.Fatal(err)
			}
			k := optest.NewKeyed(t, kind)
			rt := &fakeRuntime{Now: start}
			k.Clock = func() int64 { return rt.Now }
			b := k.Open(t, op.(exec.KeyedOperator))
			mustOpenOnly(t, op, rt)
			for _, s := range script {
				s.Run(t, op, rt, newCollector())
			}
			for _, e := range k.Snapshot(t, op.(exec.KeyedOperator), b, 1).Entries {
				if f := strings.Fields(e); f[1] != stateProgress {
					t.Errorf("%s, cache limit %d: entry left after every window fired: %s", kind, limit, e)
				}
			}
		}
	}
}

// newFiringCollector is newCollector with the rows of each window's firing
// in a fixed order: a window fired from the backend (after a restore, or
// with evictions) emits its keys in stored-key order, one held in memory in
// arrival order, and neither order is part of the result.
func newFiringCollector() *collector {
	c := newCollector()
	c.Normalize = byWindow
	return c
}

// byWindow sorts each run of consecutive rows of one window (the same last
// three columns: window_start, window_end, window_time) in place.
func byWindow(events []string) []string {
	window := func(e string) string {
		if !strings.HasSuffix(e, ")") || strings.HasPrefix(e, "WM(") {
			return ""
		}
		f := strings.Split(e, ", ")
		if len(f) < 3 {
			return ""
		}
		return strings.Join(f[len(f)-3:], ", ")
	}
	for i := 0; i < len(events); {
		w := window(events[i])
		j := i + 1
		for w != "" && j < len(events) && window(events[j]) == w {
			j++
		}
		slices.Sort(events[i:j])
		i = j
	}
	return events
}

func setCacheLimit(op exec.Operator, n int) {
	switch a := op.(type) {
	case *slicingAggregate:
		a.cacheLimit = n
	case *sessionAggregate:
		a.cacheLimit = n
	}
}

func mustOpenOnly(t *testing.T, op exec.Operator, rt *fakeRuntime) {
	t.Helper()
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
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

// TestSlicingStateWrittenBack checks what the backend holds at each
// checkpoint: an accumulator and an index entry per (key, slice); only
// those touched since the previous checkpoint change; a fired slice's are
// gone.
func TestSlicingStateWrittenBack(t *testing.T) {
	for _, kind := range optest.Kinds {
		op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}))
		if err != nil {
			t.Fatal(err)
		}
		k := optest.NewKeyed(t, kind)
		ko := op.(exec.KeyedOperator)
		b := k.Open(t, ko)
		mustOpenOnly(t, op, &fakeRuntime{})
		c := newCollector()
		var rows []in
		for i := range 50 {
			rows = append(rows, in{fmt.Sprintf("k%d", i), 1, sec(1)}, in{fmt.Sprintf("k%d", i), 1, sec(11)})
		}
		process(t, op, c, rows...)
		s1 := k.Snapshot(t, ko, b, 1)
		// 50 keys × 2 slices; 128 key groups' progress.
		if got := countStates(s1.Entries); got[stateSliceAcc] != 100 || indexedKeys(t, s1.Entries) != 100 || got[stateProgress] != 128 {
			t.Fatalf("%s: first checkpoint holds %v, %d indexed keys", kind, got, indexedKeys(t, s1.Entries))
		}
		process(t, op, c, in{"k1", 1, sec(2)}, in{"k1", 1, sec(3)}, in{"k2", 1, sec(12)}, in{"new", 1, sec(13)})
		s2 := k.Snapshot(t, ko, b, 2)
		// k1 in [0,10) and k2 in [10,20) changed; new in [10,20) is added
		// with an index chunk of its own.
		if got := changedStates(s1.Entries, s2.Entries); got[stateSliceAcc] != 3 || got[stateSliceKeys] != 1 || indexedKeys(t, s2.Entries) != 101 {
			t.Fatalf("%s: second checkpoint changed %v", kind, got)
		}
		watermark(t, op, c, sec(9.999))
		s3 := k.Snapshot(t, ko, b, 3)
		// [0,10) fired: its 50 accumulators and index entries are gone.
		if got := countStates(s3.Entries); got[stateSliceAcc] != 51 || indexedKeys(t, s3.Entries) != 51 {
			t.Fatalf("%s: after firing the checkpoint holds %v, %d indexed keys", kind, got, indexedKeys(t, s3.Entries))
		}
		if n := len(c.Take()); n != 51 { // 50 rows and the watermark
			t.Fatalf("%s: %d events, want 51", kind, n)
		}
	}
}

// indexedKeys counts the keys in the chunks of the slice index.
func indexedKeys(t *testing.T, entries []string) int {
	t.Helper()
	n := 0
	for _, e := range entries {
		f := strings.Fields(e)
		if f[1] != stateSliceKeys {
			continue
		}
		v, err := hex.DecodeString(f[4])
		if err != nil {
			t.Fatal(err)
		}
		if err := splitSliceChunk(nil, v, func(_, _ []byte) { n++ }); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func countStates(entries []string) map[string]int {
	n := map[string]int{}
	for _, e := range entries {
		n[strings.Fields(e)[1]]++
	}
	return n
}

// changedStates counts, per state, the entries of after that before does
// not hold as they are.
func changedStates(before, after []string) map[string]int {
	n := map[string]int{}
	for _, e := range after {
		if !slices.Contains(before, e) {
			n[strings.Fields(e)[1]]++
		}
	}
	return n
}

// TestProcessingTimersAfterRestore checks the processing timers a restored
// operator registers in Open, from the backend alone: the end of each
// pending window (TUMBLE) and the earliest pending session's end (SESSION).
func TestProcessingTimersAfterRestore(t *testing.T) {
	tumble := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	session := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	tests := []struct {
		name   string
		spec   AggregateSpec
		script []step
		want   []int64
	}{
		// Window [0,10) holds a and b: one timer at its last ms.
		{"tumble", tumble, []step{rowsAt(in{"a", 1, 0}), clockAt(sec(5)), rowsAt(in{"b", 1, 0})}, []int64{sec(9.999)}},
		// Rows from 15 s: [10,20) fired at 20 s; [20,30) is pending.
		{"tumble after firing", tumble, []step{rowsAt(in{"a", 1, 0}), clockAt(sec(20)), rowsAt(in{"b", 1, 0})}, []int64{sec(29.999)}},
		// Sessions [0,5) of a and [2,7) of b: the earliest, a's, at 4.999;
		// its firing registers b's.
		{"session", session, []step{rowsAt(in{"a", 1, 0}), clockAt(sec(2)), rowsAt(in{"b", 1, 0})}, []int64{sec(4.999)}},
	}
	for _, tc := range tests {
		for _, kind := range optest.Kinds {
			op, _ := NewAggregate(tc.spec)
			k := optest.NewKeyed(t, kind)
			rt := &fakeRuntime{Now: sec(0)}
			if tc.name == "tumble after firing" {
				rt.Now = sec(15)
			}
			b := k.Open(t, op.(exec.KeyedOperator))
			mustOpenOnly(t, op, rt)
			c := newCollector()
			for _, s := range tc.script {
				s.Run(t, op, rt, c)
			}
			snap := k.Snapshot(t, op.(exec.KeyedOperator), b, 1)
			restored, _ := NewAggregate(tc.spec)
			k.Restore(t, restored.(exec.KeyedOperator), snap)
			rt2 := &fakeRuntime{Now: rt.Now}
			mustOpenOnly(t, restored, rt2)
			if !slices.Equal(rt2.Timers, tc.want) {
				t.Errorf("%s on %s: timers after restore %v, want %v", tc.name, kind, rt2.Timers, tc.want)
			}
			if tc.name == "session" {
				rt2.AdvanceTo(t, sec(7), restored, c)
				expect(t, "sessions fired after restore", c.Take(),
					"+I(a, 1, 1, 1, 00:00:00.000, 00:00:05.000, 00:00:04.999)",
					"+I(b, 1, 1, 1, 00:00:02.000, 00:00:07.000, 00:00:06.999)")
			}
		}
	}
}
