package join

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
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

// TestWindowJoinRowFilters: on a fresh rocksdb start a side keeps a row
// filter for at most maxRowFilters (4) windows, and skips the count read
// of a row its window's filter never saw. Windows 5000 and 6000 get their
// first rows while 4 filters are live, so they have none, also after the
// fire at 2000 makes room: their duplicate rows must still be counted.
// Window 7000 comes after the fire and gets a filter. Every duplicate
// shows as one more joined row: per window, left copies × right copies.
func TestWindowJoinRowFilters(t *testing.T) {
	script := []step{
		left(ins("a", 1, 1000*ms), ins("a", 1, 1000*ms), ins("a", 2, 2000*ms), ins("a", 3, 3000*ms), ins("a", 4, 4000*ms)),
		left(ins("a", 5, 5000*ms), ins("a", 6, 6000*ms)),
		right(ins("a", 10, 1000*ms), ins("a", 20, 2000*ms), ins("a", 30, 3000*ms), ins("a", 40, 4000*ms),
			ins("a", 50, 5000*ms), ins("a", 60, 6000*ms)),
		wm(2000), // windows 1000 and 2000 fire
		left(ins("a", 5, 5000*ms), ins("a", 7, 7000*ms), ins("a", 7, 7000*ms)),
		right(ins("a", 60, 6000*ms), ins("a", 70, 7000*ms)),
		wm(10000),
	}
	want := []string{
		"+I(a, 1, 1000, a, 10, 1000)", "+I(a, 1, 1000, a, 10, 1000)",
		"+I(a, 2, 2000, a, 20, 2000)",
		"WM(2000)",
		"+I(a, 3, 3000, a, 30, 3000)",
		"+I(a, 4, 4000, a, 40, 4000)",
		"+I(a, 5, 5000, a, 50, 5000)", "+I(a, 5, 5000, a, 50, 5000)",
		"+I(a, 6, 6000, a, 60, 6000)", "+I(a, 6, 6000, a, 60, 6000)",
		"+I(a, 7, 7000, a, 70, 7000)", "+I(a, 7, 7000, a, 70, 7000)",
		"WM(10000)",
	}
	// The filters themselves, on a fresh rocksdb start.
	op, err := windowBuild(Inner, nil)()
	if err != nil {
		t.Fatal(err)
	}
	rt := &optest.Runtime{}
	k := optest.NewKeyed(t, image.RocksDB)
	k.Open(t, op.(exec.KeyedOperator))
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	j := op.(*windowJoin)
	c := newCollector()
	for i, live := range []int{4, 4, 4, 2, 3, 3, 0} {
		script[i].Run(t, op, rt, c)
		if j.liveFilters[0] != live {
			t.Fatalf("after step %d: %d left windows with a filter, want %d", i, j.liveFilters[0], live)
		}
	}
	if n := len(j.rowFilters[0]); n != 0 {
		t.Errorf("%d left windows still tracked after every window fired", n)
	}
	optest.Expect(t, "fresh rocksdb run", c.Take(), want...)
	checkRestores(t, windowBuild(Inner, nil), 0, script, 0, want...)
}

// Windows over a TIMESTAMP_LTZ attribute end at local wall-clock times of
// the session zone; a window fires when the watermark (an instant) reaches
// its last local millisecond.
//
// Asia/Shanghai is UTC+8 all year: the window ending at local 08:00:05
// (8 h + 5 000 ms as a shifted timestamp) fires at watermark 4 999, where
// a UTC reading of its end would wait until 28 804 999.
//
// America/Los_Angeles falls back on 2021-11-07 at 02:00 PDT to 01:00 PST,
// so the local hour [01:00, 02:00) happens twice. Its window (end: local
// 02:00, 1 636 250 400 000 shifted) fires at the later 01:59:59.999, PST:
// 09:59:59.999 UTC = 1 636 279 199 999, not at the first one, 08:59:59.999
// UTC = 1 636 275 599 999, so that both hours' rows are in it.
func TestWindowJoinLocalTimeZone(t *testing.T) {
	build := func(zone string) func() (exec.Operator, error) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return func() (exec.Operator, error) {
			return NewWindow(WindowSpec{
				Type: Inner,
				Left: Side{Width: 3, Keys: []int{0}}, Right: Side{Width: 3, Keys: []int{0}},
				LeftEndCol: 2, RightEndCol: 2, Loc: loc,
			})
		}
	}
	const end8 = 8*3600*1000 + 5000
	shanghai := []step{
		left(ins("a", 1, end8*ms)),
		wm(4998),
		right(ins("a", 10, end8*ms)), // in time
		wm(4999),                     // fires
		right(ins("a", 11, end8*ms)), // late
		wm(30000000),
	}
	checkRestores(t, build("Asia/Shanghai"), 0, shanghai, 1,
		"WM(4998)", "+I(a, 1, 28805000, a, 10, 28805000)", "WM(4999)", "WM(30000000)")

	const endLA = 1636250400000
	fallBack := []step{
		left(ins("a", 1, endLA*ms)),
		wm(1636275599999),             // the first 01:59:59.999: not yet
		right(ins("a", 10, endLA*ms)), // in time
		wm(1636279199998),             // not yet
		right(ins("a", 11, endLA*ms)), // in time
		wm(1636279199999),             // the second 01:59:59.999: fires
		right(ins("a", 12, endLA*ms)), // late
	}
	// Australia/Lord_Howe falls back half an hour on 2021-04-04 at 02:00
	// (+11:00) to 01:30 (+10:30). Flink's rule fires the 15-minute window
	// ending at local 02:00 (1 617 501 600 000 shifted) at 14:59:59.999 UTC
	// + 1 h = 1 617 465 599 999 (its end's hour is one of two and a half),
	// and the one ending at 02:15 (1 617 502 500 000), whose last
	// millisecond 02:14:59.999 happens once, at 15:44:59.999 UTC =
	// 1 617 464 699 999: the later window fires first.
	const end0200, end0215 = 1617501600000, 1617502500000
	lordHowe := []step{
		left(ins("a", 1, end0200*ms), ins("a", 2, end0215*ms)),
		right(ins("a", 10, end0200*ms), ins("a", 20, end0215*ms)),
		wm(1617464699998),               // neither yet
		wm(1617464699999),               // 02:15 fires
		right(ins("a", 21, end0215*ms)), // late
		right(ins("a", 11, end0200*ms)), // in time
		wm(1617465599999),               // 02:00 fires
	}
	checkRestores(t, build("Australia/Lord_Howe"), 0, lordHowe, 1,
		"WM(1617464699998)", "+I(a, 2, 1617502500000, a, 20, 1617502500000)", "WM(1617464699999)",
		"+I(a, 1, 1617501600000, a, 10, 1617501600000)", "+I(a, 1, 1617501600000, a, 11, 1617501600000)",
		"WM(1617465599999)")

	checkRestores(t, build("America/Los_Angeles"), 0, fallBack, 1,
		"WM(1636275599999)", "WM(1636279199998)",
		"+I(a, 1, 1636250400000, a, 10, 1636250400000)", "+I(a, 1, 1636250400000, a, 11, 1636250400000)",
		"WM(1636279199999)")
}
