package join

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

const ms = time.Millisecond

// Rows are (id, ts) on both sides; left.ts BETWEEN right.ts - 2 s AND
// right.ts + 1 s: left - right in [-2000, 1000], so a left row waits 2 s
// of watermark for right rows and a right row 1 s; the output watermark
// is held back 2 s.
func intervalBuild(typ Type) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		return NewInterval(IntervalSpec{
			Type: typ, EventTime: true,
			Left: Side{Width: 2, Keys: []int{0}}, Right: Side{Width: 2, Keys: []int{0}},
			LeftTimeCol: 1, RightTimeCol: 1, LowerBound: -2000, UpperBound: 1000,
		})
	}
}

var intervalScript = []step{
	left(ins("a", 5000*ms)),  // waits for right rows in [4000, 7000]
	right(ins("a", 4500*ms)), // left rows in [2500, 5500]: (a, 5000)
	right(ins("b", 5000*ms)), // no left row of b
	wm(5600),                 // right rows at or before 5600 - 1000 - 1 expire: (a, 4500)
	left(ins("a", 3000*ms)),  // late: its right rows [2000, 5000] are gone, and no right row can still come
	right(ins("a", 6000*ms)), // left rows in [4000, 7000]: (a, 5000)
	wm(8000),                 // left rows ≤ 5999 and right rows ≤ 6999 expire
}

func TestIntervalJoinInner(t *testing.T) {
	checkRestores(t, intervalBuild(Inner), 0, intervalScript, 0,
		"+I(a, 5000, a, 4500)",
		"WM(3600)",
		"+I(a, 5000, a, 6000)",
		"WM(6000)",
	)
}

// A full outer interval join emits a row that never matched, padded, when
// it expires, and a late row that matched nothing at once.
func TestIntervalJoinFullOuter(t *testing.T) {
	checkRestores(t, intervalBuild(FullOuter), 0, intervalScript, 0,
		"+I(a, 5000, a, 4500)",
		"WM(3600)",
		"+I(a, 3000, NULL, NULL)",
		"+I(a, 5000, a, 6000)",
		"+I(NULL, NULL, b, 5000)",
		"WM(6000)",
	)
}

// A left outer join pads only left rows: (b, 5000) on the right expires
// silently.
func TestIntervalJoinLeftOuter(t *testing.T) {
	checkRestores(t, intervalBuild(LeftOuter), 0, intervalScript, 0,
		"+I(a, 5000, a, 4500)",
		"WM(3600)",
		"+I(a, 3000, NULL, NULL)",
		"+I(a, 5000, a, 6000)",
		"WM(6000)",
	)
}

// A residual condition and NULL keys: (a, 5000, 1) meets right rows of a
// with v > 1 only; a NULL key matches nothing, and on an outer side is
// padded when it expires.
func TestIntervalJoinResidualAndNullKeys(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewInterval(IntervalSpec{
			Type: LeftOuter, EventTime: true,
			Left: Side{Width: 3, Keys: []int{0}}, Right: Side{Width: 3, Keys: []int{0}},
			LeftTimeCol: 1, RightTimeCol: 1, LowerBound: -1000, UpperBound: 1000,
			Residual: predicate(func(r types.Row) bool { return r[5].N > r[2].N }),
		})
	}
	script := []step{
		left(ins("a", 5000*ms, 1), ins(nil, 5000*ms, 1)),
		right(ins("a", 5500*ms, 1), ins("a", 5600*ms, 2), ins(nil, 5000*ms, 9)),
		wm(10000),
	}
	checkRestores(t, build, 0, script, 0,
		"+I(a, 5000, 1, a, 5600, 2)",
		"+I(NULL, 5000, 1, NULL, NULL, NULL)",
		"WM(9000)",
	)
}

// Processing time: left.pt BETWEEN right.pt - 1 s AND right.pt; a left row
// waits 1 s for right rows, a right row joins the left rows already there.
func TestIntervalJoinProcTime(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewInterval(IntervalSpec{
			Type: LeftOuter,
			Left: Side{Width: 2, Keys: []int{0}}, Right: Side{Width: 2, Keys: []int{0}},
			LowerBound: -1000, UpperBound: 0,
		})
	}
	script := []step{
		left(ins("a", 1), ins("b", 2)), // at 1000: wait for right rows until 2000
		clock(1500),
		right(ins("a", 10)), // left rows in [500, 1500]: (a, 1)
		clock(2500),         // left rows at or before 1499 expire: (b, 2) padded
		right(ins("a", 11)), // left rows in [1500, 2500]: none
	}
	checkRestores(t, build, 1000, script, 0,
		"+I(a, 1, a, 10)",
		"+I(b, 2, NULL, NULL)",
	)
}
