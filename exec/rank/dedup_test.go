package rank

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// Rows are (key, value, ts); ts is the rowtime where the spec says so.
func TestDeduplicate(t *testing.T) {
	cases := []struct {
		name string
		spec DedupSpec
		in   []rowSpec
		want []string
	}{
		{
			name: "proctime keep first",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, GenerateUpdateBefore: true},
			in: []rowSpec{
				ins("a", 1, sec(1)), ins("b", 1, sec(2)), ins("a", 2, sec(3)),
				ins("b", 2, sec(4)), ins("c", 1, sec(5)), ins("a", 3, sec(6)),
			},
			want: []string{"+I(a, 1, 1s)", "+I(b, 1, 2s)", "+I(c, 1, 5s)"},
		},
		{
			name: "proctime keep last",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true},
			in: []rowSpec{
				ins("a", 1, sec(1)), ins("b", 1, sec(2)), ins("a", 2, sec(3)),
				ins("a", 2, sec(3)), // equal to the kept row: nothing (TTL is off)
				ins("b", 3, sec(4)), ins("a", 4, sec(1)),
			},
			want: []string{
				"+I(a, 1, 1s)", "+I(b, 1, 2s)",
				"-U(a, 1, 1s)", "+U(a, 2, 3s)",
				"-U(b, 1, 2s)", "+U(b, 3, 4s)",
				"-U(a, 2, 3s)", "+U(a, 4, 1s)",
			},
		},
		{
			name: "proctime keep last without update before",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true},
			in: []rowSpec{
				ins("a", 1, sec(1)), ins("b", 1, sec(2)), ins("a", 2, sec(3)), ins("b", 3, sec(4)),
			},
			want: []string{"+I(a, 1, 1s)", "+I(b, 1, 2s)", "+U(a, 2, 3s)", "+U(b, 3, 4s)"},
		},
		{
			name: "rowtime keep last",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, KeepLast: true, GenerateUpdateBefore: true},
			in: []rowSpec{
				ins("a", 1, sec(10)), ins("b", 1, sec(5)),
				ins("a", 2, sec(8)),  // older than the kept row: ignored
				ins("a", 3, sec(10)), // same rowtime: replaces
				ins("b", 2, sec(6)),
				ins("a", 3, sec(10)), // equal row, same rowtime: replaces (no equality check on rowtime)
				ins("b", 9, sec(1)),  // ignored
			},
			want: []string{
				"+I(a, 1, 10s)", "+I(b, 1, 5s)",
				"-U(a, 1, 10s)", "+U(a, 3, 10s)",
				"-U(b, 1, 5s)", "+U(b, 2, 6s)",
				"-U(a, 3, 10s)", "+U(a, 3, 10s)",
			},
		},
		{
			name: "rowtime keep last without update before",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, KeepLast: true},
			in:   []rowSpec{ins("a", 1, sec(10)), ins("a", 2, sec(9)), ins("a", 3, sec(11))},
			want: []string{"+I(a, 1, 10s)", "+U(a, 3, 11s)"},
		},
		{
			// Flink's RowTimeDeduplicateFunction: the kept row is the one with
			// the smallest rowtime; a later-arriving row with a strictly
			// smaller rowtime replaces it, an equal rowtime keeps the first.
			name: "rowtime keep first",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, GenerateUpdateBefore: true},
			in: []rowSpec{
				ins("a", 1, sec(10)),
				ins("a", 2, sec(5)), // earlier rowtime: replaces
				ins("b", 1, sec(7)),
				ins("b", 2, sec(8)), // later: ignored
				ins("a", 3, sec(5)), // equal rowtime: the first stays
				ins("b", 3, sec(7)), // equal rowtime: ignored
				ins("a", 4, sec(1)), // earlier again: replaces
			},
			want: []string{
				"+I(a, 1, 10s)",
				"-U(a, 1, 10s)", "+U(a, 2, 5s)",
				"+I(b, 1, 7s)",
				"-U(a, 2, 5s)", "+U(a, 4, 1s)",
			},
		},
		{
			name: "rowtime keep first without update before",
			spec: DedupSpec{KeyCols: []int{0}, RowtimeCol: 2},
			in:   []rowSpec{ins("a", 1, sec(10)), ins("a", 2, sec(11)), ins("a", 3, sec(9))},
			want: []string{"+I(a, 1, 10s)", "+U(a, 3, 9s)"},
		},
		{
			name: "two key columns",
			spec: DedupSpec{KeyCols: []int{0, 1}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true},
			in:   []rowSpec{ins("a", 1, sec(1)), ins("a", 2, sec(2)), ins("a", 1, sec(3))},
			want: []string{"+I(a, 1, 1s)", "+I(a, 2, 2s)", "-U(a, 1, 1s)", "+U(a, 1, 3s)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneBatch := range []bool{true, false} {
				op, err := NewDeduplicate(tc.spec)
				if err != nil {
					t.Fatal(err)
				}
				rt := &fakeRuntime{}
				open(t, op, rt)
				c := newCollector()
				if oneBatch {
					process(t, op, c, tc.in...)
				} else {
					processEach(t, op, c, tc.in...)
				}
				expect(t, tc.name, c.Take(), tc.want...)
				if len(rt.Timers) != 0 {
					t.Errorf("timers registered without TTL: %v", rt.Timers)
				}
			}
		})
	}
}

func TestDeduplicateTTL(t *testing.T) {
	const ttl = 10 * time.Second
	rt := &fakeRuntime{Now: 1000}
	op, err := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true, StateTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, rt)
	c := newCollector()

	process(t, op, c, ins("a", 1, sec(0)))
	expect(t, "first row", c.Take(), "+I(a, 1, 0s)")
	expect(t, "sweep timer after the first row", timers(rt), "11000")

	rt.Now = 5000
	process(t, op, c, ins("a", 1, sec(0)), ins("b", 1, sec(0)))
	// With TTL on, an unchanged last row is emitted again so that downstream
	// state is refreshed too.
	expect(t, "refresh", c.Take(), "-U(a, 1, 0s)", "+U(a, 1, 0s)", "+I(b, 1, 0s)")
	expect(t, "no second pending timer", timers(rt), "11000")

	rt.Now = 11000
	fireTimer(t, op, c, 11000)
	if n := stateSize(t, op); n != 2 {
		t.Fatalf("after the sweep at 11s: %d keys, want 2 (both written at 5s)", n)
	}
	expect(t, "next sweep when the oldest key expires", timers(rt), "11000", "15000")

	rt.Now = 14000
	process(t, op, c, ins("b", 2, sec(0)))
	expect(t, "b updated", c.Take(), "-U(b, 1, 0s)", "+U(b, 2, 0s)")

	rt.Now = 15000
	fireTimer(t, op, c, 15000)
	if n := stateSize(t, op); n != 1 {
		t.Fatalf("after the sweep at 15s: %d keys, want 1 (a expired)", n)
	}
	expect(t, "sweep for b", timers(rt), "11000", "15000", "24000")

	rt.Now = 16000
	process(t, op, c, ins("a", 3, sec(0)), ins("b", 3, sec(0)))
	expect(t, "a forgotten, b kept", c.Take(), "+I(a, 3, 0s)", "-U(b, 2, 0s)", "+U(b, 3, 0s)")
	expect(t, "sweep output", c.Take())
}

// Keep first writes its state once, so (as with Flink's OnCreateAndWrite
// TTL) a key expires TTL after its first row however many rows follow; the
// lazy check forgets it before any sweep ran.
func TestDeduplicateKeepFirstTTL(t *testing.T) {
	rt := &fakeRuntime{Now: 1000}
	op, err := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, StateTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, rt)
	c := newCollector()
	process(t, op, c, ins("b", 1, sec(0)))
	rt.Now = 3000
	process(t, op, c, ins("b", 2, sec(0)))
	rt.Now = 10999
	process(t, op, c, ins("b", 3, sec(0)))
	rt.Now = 11000
	process(t, op, c, ins("b", 4, sec(0)), ins("b", 5, sec(0)))
	expect(t, "keep first with TTL", c.Take(), "+I(b, 1, 0s)", "+I(b, 4, 0s)")
	expect(t, "timers", timers(rt), "11000")
}

func TestDeduplicateErrors(t *testing.T) {
	op, err := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, KeepLast: true})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	c := newCollector()
	if err := op.ProcessBatch(0, batchOf(t, del("a", 1, sec(1))), c); err == nil || !strings.Contains(err.Error(), "insert-only") {
		t.Errorf("a -D row: got %v, want an insert-only error", err)
	}
	if err := op.ProcessBatch(0, batchOf(t, ins("a", 1, nil)), c); err == nil || !strings.Contains(err.Error(), "NULL") {
		t.Errorf("a NULL rowtime: got %v, want an error naming NULL", err)
	}
	if _, err := NewDeduplicate(DedupSpec{KeyCols: []int{-1}}); err == nil {
		t.Error("negative key column accepted")
	}
	ttlOp, _ := NewDeduplicate(DedupSpec{RowtimeCol: -1, StateTTL: time.Second})
	if err := ttlOp.Open(&exec.OperatorContext{}); err == nil {
		t.Error("TTL without a clock accepted")
	}
}

func fireTimer(t *testing.T, op exec.Operator, c *collector, ts int64) {
	t.Helper()
	h, ok := op.(exec.ProcessingTimeHandler)
	if !ok {
		t.Fatal("operator does not handle processing timers")
	}
	if err := h.OnProcessingTime(ts, c); err != nil {
		t.Fatal(err)
	}
}

func timers(rt *fakeRuntime) []string {
	var s []string
	for _, t := range rt.Timers {
		s = append(s, fmt.Sprint(t))
	}
	return s
}
