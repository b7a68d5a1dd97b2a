package temporal

import (
	"sort"
	"strconv"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// Left rows are orders (id, currency, time); right rows rates (currency,
// rate, time). Times are milliseconds.

type row struct {
	kind types.RowKind
	vals []any // string, int, nil
}

func ins(v ...any) row { return row{types.Insert, v} }
func upd(v ...any) row { return row{types.UpdateAfter, v} }
func del(v ...any) row { return row{types.Delete, v} }
func ub(v ...any) row  { return row{types.UpdateBefore, v} }

func batch(rows []row) *types.Batch {
	b := types.NewBatch(3, len(rows))
	for _, r := range rows {
		o := b.Append(r.kind)
		for i, v := range r.vals {
			switch x := v.(type) {
			case string:
				o[i] = types.String(x)
			case int:
				if i == 2 {
					o[i] = types.TimestampMillis(int64(x))
				} else {
					o[i] = types.Int(int64(x))
				}
			}
		}
	}
	return b
}

// step feeds rows to one input, or a watermark; the rows a step emits are
// sorted (rows of different keys leave in key-group order), the watermark
// last.
type step struct {
	input int
	rows  []row
	wm    int64
	// clock, when set, moves the processing time to now instead, firing
	// the timers due.
	clock bool
	now   int64
}

func left(rows ...row) step  { return step{input: 0, rows: rows} }
func right(rows ...row) step { return step{input: 1, rows: rows} }
func wm(t int64) step        { return step{wm: t} }
func clock(now int64) step   { return step{clock: true, now: now} }

func (s step) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	tmp := newCollector()
	if s.clock {
		rt.AdvanceTo(t, s.now, op, tmp)
		c.Events = append(c.Events, tmp.Take()...)
		return
	}
	var err error
	if s.rows != nil {
		err = op.ProcessBatch(s.input, batch(s.rows), tmp)
	} else {
		err = op.ProcessWatermark(s.wm, tmp)
	}
	if err != nil {
		t.Fatal(err)
	}
	ev := tmp.Take()
	n := len(ev)
	if s.rows == nil {
		n-- // the watermark
	}
	sort.Strings(ev[:n])
	c.Events = append(c.Events, ev...)
}

func newCollector() *optest.Collector {
	return &optest.Collector{Time: func(ms int64) string { return strconv.FormatInt(ms, 10) }}
}

func spec(outer bool) Spec {
	return Spec{LeftKeys: []int{1}, RightKeys: []int{0}, LeftTime: 2, RightTime: 2, LeftWidth: 3, RightWidth: 3, LeftOuter: outer}
}

// script is worked out by hand from Flink's semantics (see the package
// comment):
//   - at WM 5: o1 (EUR at 2) and o5 (EUR at 4) find EUR 114 of time 1, o2
//     USD 1, o3 finds no JPY; EUR keeps only its version of time 5 (116),
//     the one valid at the watermark;
//   - o8 with a NULL currency matches nothing, at once;
//   - at WM 10: o4 (EUR at 6) finds 116; o7 (EUR at 3) arrived late and its
//     version (114) was dropped at WM 5, so it finds none; o6 (USD at 8)
//     finds the deletion of USD at 7.
var script = []step{
	right(ins("EUR", 114, 1), ins("USD", 1, 1)),
	left(ins("o1", "EUR", 2), ins("o2", "USD", 3), ins("o3", "JPY", 3)),
	right(ub("EUR", 114, 1), upd("EUR", 116, 5)),
	left(ins("o4", "EUR", 6), ins("o5", "EUR", 4)),
	wm(5),
	right(del("USD", 1, 7)),
	left(ins("o6", "USD", 8), ins("o7", "EUR", 3), ins("o8", nil, 9)),
	wm(10),
}

func TestLeftTemporalJoinRestores(t *testing.T) {
	build := func() (exec.Operator, error) { return NewJoin(spec(true)) }
	optest.CheckRestores(t, build, newCollector, 0, script, 0,
		"+I(o1, EUR, 2, EUR, 114, 1)", "+I(o2, USD, 3, USD, 1, 1)", "+I(o3, JPY, 3, NULL, NULL, NULL)", "+I(o5, EUR, 4, EUR, 114, 1)", "WM(5)",
		"+I(o8, NULL, 9, NULL, NULL, NULL)",
		"+I(o4, EUR, 6, EUR, 116, 5)", "+I(o6, USD, 8, NULL, NULL, NULL)", "+I(o7, EUR, 3, NULL, NULL, NULL)", "WM(10)")
}

func TestInnerTemporalJoinRestores(t *testing.T) {
	build := func() (exec.Operator, error) { return NewJoin(spec(false)) }
	optest.CheckRestores(t, build, newCollector, 0, script, 0,
		"+I(o1, EUR, 2, EUR, 114, 1)", "+I(o2, USD, 3, USD, 1, 1)", "+I(o5, EUR, 4, EUR, 114, 1)", "WM(5)",
		"+I(o4, EUR, 6, EUR, 116, 5)", "WM(10)")
}

// rateAbove keeps versions whose rate exceeds a bound.
type rateAbove int64

func (r rateAbove) Test(row types.Row) (bool, error) { return row[4].Int() > int64(r), nil }

// The rest of the condition is tested on the version found: a version that
// fails it is no match (the older version is not tried).
func TestResidualOnVersion(t *testing.T) {
	s := spec(true)
	s.Residual = func() (exec.Predicate, error) { return rateAbove(115), nil }
	build := func() (exec.Operator, error) { return NewJoin(s) }
	optest.CheckRestores(t, build, newCollector, 0, []step{
		right(ins("EUR", 114, 1), ins("EUR", 116, 5)),
		left(ins("o1", "EUR", 2), ins("o2", "EUR", 6)),
		wm(10),
	}, 0, "+I(o1, EUR, 2, NULL, NULL, NULL)", "+I(o2, EUR, 6, EUR, 116, 5)", "WM(10)")
}

// Versions that no row can need any more leave the state: after the
// watermark passed 5, only EUR's version of time 5 is kept; at the end of
// input (the largest watermark) nothing is.
func TestStateCleanup(t *testing.T) {
	k := optest.NewKeyed(t, optest.Kinds[0])
	op, err := NewJoin(spec(false))
	if err != nil {
		t.Fatal(err)
	}
	b := k.Open(t, op.(exec.KeyedOperator))
	if err := op.Open((&optest.Runtime{}).Context()); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	for _, s := range []step{right(ins("EUR", 114, 1), ins("EUR", 116, 5), ins("EUR", 119, 9)), left(ins("o1", "EUR", 2))} {
		s.Run(t, op, nil, c)
	}
	entries := func() int {
		n := len(optest.Dump(t, b))
		return n
	}
	// 3 versions, 1 waiting row, 4 timers (times 1, 2, 5, 9).
	if n := entries(); n != 8 {
		t.Fatalf("%d entries before the watermark, want 8: %v", n, optest.Dump(t, b))
	}
	wm(5).Run(t, op, nil, c)
	// Left: the versions of 5 and 9, and the timer of 9.
	if n := entries(); n != 3 {
		t.Fatalf("%d entries after WM 5, want 3: %v", n, optest.Dump(t, b))
	}
	wm(exec.MaxWatermark).Run(t, op, nil, c)
	if n := entries(); n != 0 {
		t.Fatalf("%d entries at the end of input, want 0: %v", n, optest.Dump(t, b))
	}
	optest.Expect(t, "output", c.Take(), "+I(o1, EUR, 2, EUR, 114, 1)", "WM(5)", "WM(max)")
}

// With a state TTL of 10 ms, a key idle for between 10 and 15 ms of
// processing time loses its state (Flink's cleanup timers: a row moves
// the key's cleanup time to 15 ms ahead when it is within 10 ms of it).
// EUR is touched at 0 only (cleanup at 15); USD at 0 (cleanup at 15) and
// at 8, which is within 10 of 15, so USD moves to 23. At 15 EUR's state
// goes, with o1 still waiting for the watermark; USD's stays, and o2
// joins its version at WM 5. Without the TTL o1 would join EUR 114.
func TestStateTTLDropsIdleKeys(t *testing.T) {
	s := spec(false)
	s.StateTTL = 10
	build := func() (exec.Operator, error) { return NewJoin(s) }
	optest.CheckRestores(t, build, newCollector, 0, []step{
		right(ins("EUR", 114, 1), ins("USD", 1, 1)),
		left(ins("o1", "EUR", 2)),
		clock(8),
		left(ins("o2", "USD", 3)),
		clock(15),
		wm(5),
		clock(22),
		left(ins("o3", "USD", 4)),
		wm(6),
	}, 0, "+I(o2, USD, 3, USD, 1, 1)", "WM(5)", "+I(o3, USD, 4, USD, 1, 1)", "WM(6)")
}
