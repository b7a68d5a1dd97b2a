package window

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
)

// attached is the spec of a window-attached aggregation over the tests'
// layout, whose column 2 is then the window_end each row carries.
func attached(w exec.WindowSpec) AggregateSpec {
	w.EventTime, w.Attached, w.EndCol, w.TimeCol = true, true, 2, -1
	return AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
}

func TestAttachedHopRestore(t *testing.T) {
	// Rows carry the HOP window (size 10 s, slide 5 s) of an upstream
	// window aggregation: each counts in its own window only, not in the
	// overlapping ones; a row of a window that fired is late.
	checkRestores(t, attached(exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000}), 0, []step{
		rowsAt(in{"a", 1, sec(5)}, in{"a", 2, sec(10)}),
		rowsAt(in{"b", 4, sec(10)}, in{"a", 8, sec(15)}, in{"a", 3, sec(15)}),
		wmAt(sec(9.999)),
		rowsAt(in{"a", 100, sec(10)}, in{"b", 50, sec(15)}),
		wmAt(exec.MaxWatermark),
	}, 1,
		"+I(a, 1, 1, 1, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"+I(a, 1, 2, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 1, 4, 4, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)",
		"+I(a, 2, 11, 8, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(b, 1, 50, 50, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"WM(max)")
}

func TestAttachedCumulateRestore(t *testing.T) {
	// CUMULATE windows (step 2 s, max 6 s) share their start: a row of
	// [0,4) is not part of [0,6); window_start is the period's start.
	checkRestores(t, attached(exec.WindowSpec{Kind: exec.Cumulate, Step: 2_000, Size: 6_000}), 0, []step{
		rowsAt(in{"a", 1, sec(2)}, in{"a", 2, sec(4)}, in{"b", 3, sec(6)}),
		rowsAt(in{"a", 7, sec(6)}, in{"a", 5, sec(8)}),
		wmAt(sec(5.999)),
		wmAt(exec.MaxWatermark),
	}, 0,
		"+I(a, 1, 1, 1, 00:00:00.000, 00:00:02.000, 00:00:01.999)",
		"+I(a, 1, 2, 2, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
		"+I(b, 1, 3, 3, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(a, 1, 7, 7, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"WM(00:00:05.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:08.000, 00:00:07.999)",
		"WM(max)")
}
