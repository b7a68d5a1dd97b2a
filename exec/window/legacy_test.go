package window

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

func TestLegacyHopSizeNotMultipleOfSlide(t *testing.T) {
	// A legacy HOP of size 10 s sliding by 4 s: windows end on the 4 s grid
	// and hold (end-10 s, end]; slices are gcd(10, 4) = 2 s long. Rows at
	// 1 s, 5 s, 9 s: [-6,4) {1}; [-2,8) {1, 5}; [2,12) {5, 9}; [6,16) {9}.
	w := exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 4_000, Legacy: true}
	checkRestores(t, eventTime(w), 0, []step{
		rowsAt(in{"a", 1, sec(1)}, in{"a", 2, sec(5)}),
		wmAt(sec(5)),
		rowsAt(in{"a", 4, sec(9)}),
		wmAt(exec.MaxWatermark),
	}, 0,
		"+I(a, 1, 1, 1, 23:59:54.000, 00:00:04.000, 00:00:03.999)",
		"WM(00:00:05.000)",
		"+I(a, 2, 3, 2, 23:59:58.000, 00:00:08.000, 00:00:07.999)",
		"+I(a, 2, 6, 4, 00:00:02.000, 00:00:12.000, 00:00:11.999)",
		"+I(a, 1, 4, 4, 00:00:06.000, 00:00:16.000, 00:00:15.999)",
		"WM(max)")
	if _, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 4_000})); err == nil {
		t.Error("a HOP window TVF aggregate of size 10 s and slide 4 s was accepted; Flink requires a multiple")
	}
}

func TestLegacyWindowRetractions(t *testing.T) {
	// An updating input: a -D row takes its row back out of its window; a
	// window all of whose rows were retracted emits nothing (b), as Flink's
	// group window, which counts its rows, does not.
	h, err := agg.NewHandle([]agg.Call{
		{Name: "COUNT", FilterCol: -1},
		{Name: "SUM", ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}, FilterCol: -1},
		{Name: "MAX", ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}, FilterCol: -1},
	}, agg.Options{NeedsRetraction: true, NeedsMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind   exec.WindowKind
		window string
	}{
		{exec.Tumble, "00:00:00.000, 00:00:10.000, 00:00:09.999"},
		{exec.Session, "00:00:01.000, 00:00:22.000, 00:00:21.999"}, // [1 s, 2 s + 20 s)
	} {
		w := exec.WindowSpec{Kind: tc.kind, Size: 10_000, Gap: 20_000, Legacy: true, Retracting: true, EventTime: true, TimeCol: 2}
		checkRestores(t, AggregateSpec{Window: w, KeyCols: []int{0}, Aggs: h}, 0, []step{
			rowsAt(in{"a", 1, sec(1)}, in{"a", 7, sec(2)}, in{"b", 5, sec(1)}),
			{rows: []in{{"a", 7, sec(2)}, {"b", 5, sec(1)}}, retract: true},
			wmAt(exec.MaxWatermark),
		}, 0,
			"+I(a, 1, 1, 1, "+tc.window+")",
			"WM(max)")
	}
}
