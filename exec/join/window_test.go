package join

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// Rows are (id, v, window_end) on both sides; windows end at 5000 and
// 10000 (a tumbling window of 5 s), firing at watermarks 4999 and 9999.
func windowBuild(typ Type, residual exec.Predicate) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		return NewWindow(WindowSpec{
			Type: typ,
			Left: Side{Width: 3, Keys: []int{0}}, Right: Side{Width: 3, Keys: []int{0}},
			LeftEndCol: 2, RightEndCol: 2, Residual: residual,
		})
	}
}

var windowScript = []step{
	left(ins("a", 1, 5000*ms), ins("b", 2, 5000*ms), ins(nil, 3, 5000*ms)),
	right(ins("a", 10, 5000*ms), ins("a", 11, 5000*ms), ins("c", 12, 5000*ms), ins(nil, 13, 5000*ms)),
	left(ins("a", 4, 10000*ms)),
	wm(4998),                     // nothing fires yet
	right(ins("a", 14, 5000*ms)), // still in time
	wm(4999),                     // window [0, 5000) fires
	right(ins("a", 15, 5000*ms)), // late: dropped
	right(ins("a", 16, 10000*ms)),
	wm(20000),
}

func TestWindowJoinInner(t *testing.T) {
	checkRestores(t, windowBuild(Inner, nil), 0, windowScript, 1,
		"WM(4998)",
		"+I(a, 1, 5000, a, 10, 5000)", "+I(a, 1, 5000, a, 11, 5000)", "+I(a, 1, 5000, a, 14, 5000)",
		"WM(4999)",
		"+I(a, 4, 10000, a, 16, 10000)",
		"WM(20000)",
	)
}

// FULL OUTER: per window, unmatched rows of either side are padded; NULL
// keys never match. The key groups of a, b and c decide the order of the
// keys fired by one watermark.
func TestWindowJoinFullOuter(t *testing.T) {
	got := run(t, windowBuild(FullOuter, nil), 0, windowScript...)
	want := map[string]int{
		"WM(4998)": 1, "+I(a, 1, 5000, a, 10, 5000)": 1, "+I(a, 1, 5000, a, 11, 5000)": 1, "+I(a, 1, 5000, a, 14, 5000)": 1,
		"+I(b, 2, 5000, NULL, NULL, NULL)": 1, "+I(NULL, 3, 5000, NULL, NULL, NULL)": 1,
		"+I(NULL, NULL, NULL, c, 12, 5000)": 1, "+I(NULL, NULL, NULL, NULL, 13, 5000)": 1,
		"WM(4999)": 1, "+I(a, 4, 10000, a, 16, 10000)": 1, "WM(20000)": 1,
	}
	for _, g := range got {
		want[g]--
	}
	for k, n := range want {
		if n != 0 {
			t.Errorf("%s: %d more than expected (got %v)", k, -n, got)
		}
	}
	// The rows of window [0, 5000) all come before WM(4999).
	if len(got) < 3 || got[len(got)-3] != "WM(4999)" {
		t.Errorf("got %v", got)
	}
	checkRestores(t, windowBuild(FullOuter, nil), 0, windowScript, 1, got...)
}

// LEFT OUTER with a residual left v + 10 > right v: a's left row 0 meets
// neither 10 nor 14 (10 > 10, 10 > 14 are false) and is padded; 5 meets
// both.
func TestWindowJoinLeftResidual(t *testing.T) {
	gt := predicate(func(r types.Row) bool { return r[1].N+10 > r[4].N })
	script := []step{
		left(ins("a", 0, 5000*ms), ins("a", 5, 5000*ms)),
		right(ins("a", 10, 5000*ms), ins("a", 14, 5000*ms)),
		wm(4999),
	}
	checkRestores(t, windowBuild(LeftOuter, gt), 0, script, 0,
		"+I(a, 0, 5000, NULL, NULL, NULL)",
		"+I(a, 5, 5000, a, 10, 5000)",
		"+I(a, 5, 5000, a, 14, 5000)",
		"WM(4999)",
	)
}

// Window semi and anti joins emit left rows only, when the window fires:
// a 1 has a's right rows in [0, 5000), b 2 none; the NULL key none.
func TestWindowSemiAntiJoin(t *testing.T) {
	script := []step{
		left(ins("a", 1, 5000*ms), ins("a", 1, 5000*ms), ins("b", 2, 5000*ms), ins(nil, 3, 5000*ms)),
		right(ins("a", 10, 5000*ms), ins("a", 11, 5000*ms), ins("b", 12, 10000*ms)),
		wm(4999),
	}
	got := run(t, windowBuild(Semi, nil), 0, script...)
	optest.Expect(t, "semi", got, "+I(a, 1, 5000)", "+I(a, 1, 5000)", "WM(4999)")
	checkRestores(t, windowBuild(Semi, nil), 0, script, 0, got...)
	got = run(t, windowBuild(Anti, nil), 0, script...)
	// b and NULL fire in key-group order; both are emitted.
	if len(got) != 3 || got[2] != "WM(4999)" || !(got[0] == "+I(b, 2, 5000)" && got[1] == "+I(NULL, 3, 5000)" || got[1] == "+I(b, 2, 5000)" && got[0] == "+I(NULL, 3, 5000)") {
		t.Errorf("anti: got %v", got)
	}
	checkRestores(t, windowBuild(Anti, nil), 0, script, 0, got...)
}
