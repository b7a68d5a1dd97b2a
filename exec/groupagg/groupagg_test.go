package groupagg

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// step is one input batch and the exact changelog it must produce.
type step struct {
	in   []rec
	want []string
}

// Input rows of the group aggregate tests are (user VARCHAR, amount BIGINT),
// grouped by user.
func TestGroupAggregateChangelogs(t *testing.T) {
	countSum := func(t *testing.T, retract bool) Aggs {
		return handle(t, retract, call("COUNT"), call("SUM", 1))
	}
	cases := []struct {
		name         string
		aggs         func(t *testing.T) Aggs
		updateBefore bool
		steps        []step
	}{{
		name:         "running COUNT and SUM over inserts",
		aggs:         func(t *testing.T) Aggs { return countSum(t, false) },
		updateBefore: true,
		steps: []step{
			{[]rec{ins("a", 10)}, []string{"+I(a, 1, 10)"}},
			{[]rec{ins("b", 5)}, []string{"+I(b, 1, 5)"}},
			{[]rec{ins("a", 20), ins("b", -5)}, []string{
				"-U(a, 1, 10)", "+U(a, 2, 30)",
				"-U(b, 1, 5)", "+U(b, 2, 0)"}},
		},
	}, {
		name: "upsert output: no update-before",
		aggs: func(t *testing.T) Aggs { return countSum(t, false) },
		steps: []step{
			{[]rec{ins("a", 10), ins("b", 5), ins("a", 20), ins("b", -5)}, []string{
				"+I(a, 1, 10)", "+I(b, 1, 5)", "+U(a, 2, 30)", "+U(b, 2, 0)"}},
		},
	}, {
		name:         "unchanged SUM and MAX emit nothing",
		aggs:         func(t *testing.T) Aggs { return handle(t, false, call("SUM", 1), call("MAX", 1)) },
		updateBefore: true,
		steps: []step{
			{[]rec{ins("a", 5)}, []string{"+I(a, 5, 5)"}},
			{[]rec{ins("a", 0)}, nil},
			{[]rec{ins("a", 3)}, []string{"-U(a, 5, 5)", "+U(a, 8, 5)"}},
		},
	}, {
		name:         "MAX with a smaller value emits nothing",
		aggs:         func(t *testing.T) Aggs { return handle(t, false, call("MAX", 1)) },
		updateBefore: true,
		steps: []step{
			{[]rec{ins("a", 5), ins("a", 3), ins("a", 5)}, []string{"+I(a, 5)"}},
			{[]rec{ins("a", 7)}, []string{"-U(a, 5)", "+U(a, 7)"}},
		},
	}, {
		name: "retract input into COUNT, SUM, MAX",
		aggs: func(t *testing.T) Aggs {
			return handle(t, true, call("COUNT"), call("SUM", 1), call("MAX", 1))
		},
		updateBefore: true,
		steps: []step{
			{[]rec{ins("a", 10)}, []string{"+I(a, 1, 10, 10)"}},
			{[]rec{ins("a", 30)}, []string{"-U(a, 1, 10, 10)", "+U(a, 2, 40, 30)"}},
			// An update of the row 30 to 25 arrives as a -U/+U pair.
			{[]rec{ub("a", 30)}, []string{"-U(a, 2, 40, 30)", "+U(a, 1, 10, 10)"}},
			{[]rec{ua("a", 25)}, []string{"-U(a, 1, 10, 10)", "+U(a, 2, 35, 25)"}},
			// A key never seen: its retraction is ignored.
			{[]rec{del("z", 1)}, nil},
			// Retracting a value below the maximum leaves MAX alone.
			{[]rec{del("a", 10)}, []string{"-U(a, 2, 35, 25)", "+U(a, 1, 25, 25)"}},
			// The group becomes empty: -D of the previous result.
			{[]rec{del("a", 25)}, []string{"-D(a, 1, 25, 25)"}},
			// The key starts from scratch.
			{[]rec{ins("a", 7)}, []string{"+I(a, 1, 7, 7)"}},
			{[]rec{del("a", 7), del("a", 7)}, []string{"-D(a, 1, 7, 7)"}},
		},
	}, {
		name: "MAX retracting its maximum",
		aggs: func(t *testing.T) Aggs { return handle(t, true, call("MAX", 1)) },
		steps: []step{
			{[]rec{ins("a", 3), ins("a", 9), del("a", 9), del("a", 3)}, []string{
				"+I(a, 3)", "+U(a, 9)", "+U(a, 3)", "-D(a, 3)"}},
		},
	}, {
		name:         "SELECT DISTINCT: counts per key",
		updateBefore: true,
		steps: []step{
			{[]rec{ins("a", 1), ins("b", 1), ins("a", 2)}, []string{"+I(a)", "+I(b)"}},
			{[]rec{del("a", 1)}, nil},
			{[]rec{del("a", 2), del("a", 2)}, []string{"-D(a)"}},
			{[]rec{del("b", 1), ins("a", 3), del("c", 1)}, []string{"-D(b)", "+I(a)"}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := GroupAggSpec{KeyCols: []int{0}, GenerateUpdateBefore: tc.updateBefore}
			if tc.aggs != nil {
				spec.Aggs = tc.aggs(t)
			}
			op := must(t)(NewGroupAggregate(spec))
			open(t, op, &fakeRuntime{})
			var c collector
			for i, s := range tc.steps {
				feed(t, op, &c, 2, s.in...)
				expect(t, "step "+string(rune('1'+i)), c.Take(), s.want...)
			}
			if err := op.Finish(&c); err != nil {
				t.Fatal(err)
			}
			expect(t, "finish", c.Take())
		})
	}
}

// TestAggregateOfAggregate counts users per total: SUM per user, then
// COUNT(*) per total over the retract stream of the first aggregate.
func TestAggregateOfAggregate(t *testing.T) {
	totals := must(t)(NewGroupAggregate(GroupAggSpec{
		KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)), GenerateUpdateBefore: true,
	}))
	users := must(t)(NewGroupAggregate(GroupAggSpec{
		KeyCols: []int{1}, Aggs: handle(t, true, call("COUNT")), GenerateUpdateBefore: true,
	}))
	rt := &fakeRuntime{}
	open(t, totals, rt)
	open(t, users, rt)
	var c collector
	out := pipe{op: users, out: &c}
	// totals emits +I(a,10) +I(b,10) -U(a,10) +U(a,15) +I(c,15) -D(b,10).
	feed(t, totals, out, 2, ins("a", 10), ins("b", 10), ins("a", 5), ins("c", 15), del("b", 10))
	expect(t, "users per total", c.Take(),
		"+I(10, 1)",
		"-U(10, 1)", "+U(10, 2)",
		"-U(10, 2)", "+U(10, 1)",
		"+I(15, 1)",
		"-U(15, 1)", "+U(15, 2)",
		"-D(10, 1)")
	if err := totals.ProcessWatermark(7, out); err != nil {
		t.Fatal(err)
	}
	expect(t, "watermark", c.Take(), "WM(7)")
}

func miniBatchOp(t *testing.T, size int) (op *groupAggregate, rt *fakeRuntime) {
	t.Helper()
	o := must(t)(NewGroupAggregate(GroupAggSpec{
		KeyCols:              []int{0},
		Aggs:                 handle(t, true, call("COUNT"), call("SUM", 1)),
		GenerateUpdateBefore: true,
		MiniBatch:            MiniBatch{Enabled: true, AllowLatency: time.Second, Size: size},
	}))
	rt = &fakeRuntime{Now: 10_000}
	open(t, o, rt)
	return o.(*groupAggregate), rt
}

func TestMiniBatchFlushes(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		op, rt := miniBatchOp(t, 3)
		var c collector
		feed(t, op, &c, 2, ins("a", 1), ins("b", 2))
		expect(t, "buffered", c.Take())
		expect(t, "latency timer", fmtTimers(rt.Timers), "11000")
		// The third row fills the bundle; d starts the next one.
		feed(t, op, &c, 2, ins("a", 3), ins("d", 4))
		expect(t, "flushed by size", c.Take(), "+I(a, 2, 4)", "+I(b, 1, 2)")
		// A -U/+U pair of a and a row of b fold into one change per key.
		rt.Now = 10_500
		feed(t, op, &c, 2, ub("a", 3), ua("a", 30))
		expect(t, "flushed by size", c.Take(), "+I(d, 1, 4)", "-U(a, 2, 4)", "+U(a, 2, 31)")
		// The latency timer of the first bundle is stale by now.
		if err := op.OnProcessingTime(11_000, &c); err != nil {
			t.Fatal(err)
		}
		expect(t, "stale timer", c.Take())
	})
	t.Run("processing timer", func(t *testing.T) {
		op, rt := miniBatchOp(t, 100)
		var c collector
		feed(t, op, &c, 2, ins("d", 1), ins("d", 2), ins("e", 5))
		feed(t, op, &c, 2, ins("d", 3))
		expect(t, "buffered", c.Take())
		expect(t, "one timer per bundle", fmtTimers(rt.Timers), "11000")
		rt.Now = 11_000
		if err := op.OnProcessingTime(11_000, &c); err != nil {
			t.Fatal(err)
		}
		expect(t, "flushed by timer", c.Take(), "+I(d, 3, 6)", "+I(e, 1, 5)")
	})
	t.Run("watermark", func(t *testing.T) {
		op, _ := miniBatchOp(t, 100)
		var c collector
		feed(t, op, &c, 2, ins("b", 2), ins("b", 8))
		if err := op.ProcessWatermark(100, &c); err != nil {
			t.Fatal(err)
		}
		feed(t, op, &c, 2, del("b", 2), del("b", 8), ins("c", 1))
		if err := op.ProcessWatermark(200, &c); err != nil {
			t.Fatal(err)
		}
		expect(t, "flushed before each watermark", c.Take(),
			"+I(b, 2, 10)", "WM(100)",
			"-D(b, 2, 10)", "+I(c, 1, 1)", "WM(200)")
	})
	t.Run("finish", func(t *testing.T) {
		op, _ := miniBatchOp(t, 100)
		var c collector
		feed(t, op, &c, 2, ins("a", 2), ins("a", 29))
		if err := op.Finish(&c); err != nil {
			t.Fatal(err)
		}
		expect(t, "first finish", c.Take(), "+I(a, 2, 31)")
		// e: accumulated and retracted within the bundle, never emitted;
		// z: no state, so its leading retraction is skipped;
		// a: one change against the state before the bundle.
		feed(t, op, &c, 2, ins("e", 1), del("z", 5), ins("a", 1), del("e", 1), ins("z", 6))
		if err := op.Finish(&c); err != nil {
			t.Fatal(err)
		}
		expect(t, "flushed at finish", c.Take(), "+I(z, 1, 6)", "-U(a, 2, 31)", "+U(a, 3, 32)")
		if n := op.state.Len(); n != 2 {
			t.Errorf("keys in state: %d, want 2 (a, z)", n)
		}
	})
	t.Run("unchanged result", func(t *testing.T) {
		op, _ := miniBatchOp(t, 100)
		var c collector
		feed(t, op, &c, 2, ins("a", 5))
		if err := op.Finish(&c); err != nil {
			t.Fatal(err)
		}
		feed(t, op, &c, 2, ins("a", 7), del("a", 7))
		if err := op.Finish(&c); err != nil {
			t.Fatal(err)
		}
		expect(t, "no change emitted", c.Take(), "+I(a, 1, 5)")
	})
}

func fmtTimers(ts []int64) []string {
	var s []string
	for _, t := range ts {
		s = append(s, strconv.FormatInt(t, 10))
	}
	return s
}

func TestGroupAggregateStateTTL(t *testing.T) {
	op := must(t)(NewGroupAggregate(GroupAggSpec{
		KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)),
		GenerateUpdateBefore: true, StateTTL: time.Second,
	}))
	rt := &fakeRuntime{Now: 1000}
	open(t, op, rt)
	var c collector
	feed(t, op, &c, 2, ins("a", 1))
	expect(t, "t=1000", c.Take(), "+I(a, 1)")
	rt.Now = 1500
	// With TTL on, an unchanged result is still emitted (it refreshes the
	// TTL of downstream state).
	feed(t, op, &c, 2, ins("a", 0))
	expect(t, "t=1500", c.Take(), "-U(a, 1)", "+U(a, 1)")
	rt.Now = 2499
	feed(t, op, &c, 2, ins("b", 5), ins("a", 1))
	expect(t, "t=2499", c.Take(), "+I(b, 5)", "-U(a, 1)", "+U(a, 2)")
	rt.Now = 3499
	// a was written at 2499, so it expires at 3499 and restarts.
	feed(t, op, &c, 2, ins("a", 4))
	expect(t, "t=3499", c.Take(), "+I(a, 4)")
	// b expired too: its retraction finds no state and is ignored.
	feed(t, op, &c, 2, del("b", 5))
	expect(t, "t=3499 retract", c.Take())

	g := op.(*groupAggregate)
	if len(rt.Timers) == 0 {
		t.Fatal("no cleanup timer registered")
	}
	rt.Now = 4499
	for _, ts := range rt.Timers {
		if err := g.OnProcessingTime(ts, &c); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.state.Len(); n != 0 {
		t.Errorf("keys after the sweep: %d, want 0", n)
	}
	expect(t, "sweep emits nothing", c.Take())
}

func TestGroupAggregateOptions(t *testing.T) {
	bad := []struct {
		spec GroupAggSpec
		want string
	}{
		{GroupAggSpec{StateTTL: -time.Second}, "table.exec.state.ttl"},
		{GroupAggSpec{MiniBatch: MiniBatch{Enabled: true, Size: 10}}, "table.exec.mini-batch.allow-latency"},
		{GroupAggSpec{MiniBatch: MiniBatch{Enabled: true, AllowLatency: time.Second}}, "table.exec.mini-batch.size"},
		{GroupAggSpec{KeyCols: []int{-1}}, "invalid key column"},
	}
	for _, b := range bad {
		_, err := NewGroupAggregate(b.spec)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: error %v, want one naming %q", b.spec, err, b.want)
		}
	}
	op := must(t)(NewGroupAggregate(GroupAggSpec{KeyCols: []int{3}}))
	open(t, op, &fakeRuntime{})
	if err := op.ProcessBatch(0, batchOf(2, ins("a", 1)), &collector{}); err == nil {
		t.Error("key column out of range: no error")
	}
}

// TestGlobalAggregate has no grouping key (SELECT COUNT(*) FROM t).
func TestGlobalAggregate(t *testing.T) {
	op := must(t)(NewGroupAggregate(GroupAggSpec{Aggs: handle(t, true, call("COUNT")), GenerateUpdateBefore: true}))
	open(t, op, &fakeRuntime{})
	var c collector
	feed(t, op, &c, 2, ins("a", 1), ins("b", 1), del("a", 1), del("b", 1))
	expect(t, "global count", c.Take(), "+I(1)", "-U(1)", "+U(2)", "-U(2)", "+U(1)", "-D(1)")
}
