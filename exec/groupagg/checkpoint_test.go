package groupagg

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// action is one step of a script: a batch, a watermark, the clock moving
// to a time (firing the timers due), or the end of input.
type action struct {
	recs   []rec
	wm     int64
	clock  int64
	finish bool
}

func rows(recs ...rec) action { return action{recs: recs} }
func wmark(wm int64) action   { return action{wm: wm} }
func clock(t int64) action    { return action{clock: t} }

func run(t *testing.T, op exec.Operator, rt *fakeRuntime, width int, a action) []string {
	t.Helper()
	var c collector
	var err error
	switch {
	case a.recs != nil:
		err = op.ProcessBatch(0, batchOf(width, a.recs...), &c)
	case a.wm != 0:
		err = op.ProcessWatermark(a.wm, &c)
	case a.clock != 0:
		rt.AdvanceTo(t, a.clock, op, &c)
	case a.finish:
		err = op.Finish(&c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.Events
}

// widthAction is an action on rows of a given width, as an optest.Step.
type widthAction struct {
	action
	width int
}

func (a widthAction) Run(t *testing.T, op exec.Operator, rt *fakeRuntime, c *collector) {
	t.Helper()
	c.Events = append(c.Events, run(t, op, rt, a.width, a.action)...)
}

// checkRestores is optest.CheckRestores over rows of the given width.
func checkRestores(t *testing.T, build func() exec.Operator, start int64, width int, script []action, want []string) {
	t.Helper()
	steps := make([]widthAction, len(script))
	for i, a := range script {
		steps[i] = widthAction{a, width}
	}
	optest.CheckRestores(t, func() (exec.Operator, error) { return build(), nil },
		func() *collector { return &collector{} }, start, steps, 0, want...)
}

func TestGroupAggregateRestore(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewGroupAggregate(GroupAggSpec{
			KeyCols: []int{0},
			Aggs: handle(t, true, call("COUNT"), call("SUM", 1),
				agg.Call{Name: "COUNT", ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}, Distinct: true, FilterCol: -1},
				call("MAX", 1)),
			GenerateUpdateBefore: true,
		}))
	}
	// (user, amount) → COUNT(*), SUM(amount), COUNT(DISTINCT amount), MAX(amount)
	script := []action{
		rows(ins("a", 10), ins("b", 5)),
		rows(ins("a", 10)),
		rows(ins("a", 7), del("b", 5)),
		rows(del("a", 10)),
		rows(ins("b", 1), ins("c", 4)),
		rows(del("a", 10), del("a", 7)),
		rows(ins("a", 2)),
	}
	want := []string{
		"+I(a, 1, 10, 1, 10)", "+I(b, 1, 5, 1, 5)",
		"-U(a, 1, 10, 1, 10)", "+U(a, 2, 20, 1, 10)",
		"-U(a, 2, 20, 1, 10)", "+U(a, 3, 27, 2, 10)", "-D(b, 1, 5, 1, 5)",
		// one 10 is left: still 2 distinct values, MAX stays 10
		"-U(a, 3, 27, 2, 10)", "+U(a, 2, 17, 2, 10)",
		"+I(b, 1, 1, 1, 1)", "+I(c, 1, 4, 1, 4)",
		"-U(a, 2, 17, 2, 10)", "+U(a, 1, 7, 1, 7)", "-D(a, 1, 7, 1, 7)",
		"+I(a, 1, 2, 1, 2)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}

func TestGroupAggregateMiniBatchRestore(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewGroupAggregate(GroupAggSpec{
			KeyCols:              []int{0},
			Aggs:                 handle(t, true, call("COUNT"), call("SUM", 1)),
			GenerateUpdateBefore: true,
			MiniBatch:            MiniBatch{Enabled: true, AllowLatency: time.Second, Size: 4},
		}))
	}
	// Checkpoints fall between rows of a bundle: the buffered rows are in the
	// checkpoint and flushed after the restore when the bundle fills, the
	// latency passes or a watermark comes.
	script := []action{
		rows(ins("a", 1), ins("b", 2)),
		rows(ins("a", 3)),
		rows(ins("c", 4), ins("b", 5)), // fills the bundle at c: flush; b starts the next
		clock(2500),                    // latency of the bundle holding b
		rows(ins("a", 10)),
		wmark(7),
		rows(del("a", 10), ins("d", 1)),
		clock(3000), // not due yet: the bundle started at 2500
		rows(ins("d", 2)),
		clock(4000),
		rows(del("d", 1)),
		action{finish: true},
	}
	want := []string{
		"+I(a, 2, 4)", "+I(b, 1, 2)", "+I(c, 1, 4)",
		"-U(b, 1, 2)", "+U(b, 2, 7)",
		"-U(a, 2, 4)", "+U(a, 3, 14)", "WM(7)",
		"-U(a, 3, 14)", "+U(a, 2, 4)", "+I(d, 2, 3)",
		"-U(d, 2, 3)", "+U(d, 1, 2)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}

func TestGroupAggregateTTLRestore(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewGroupAggregate(GroupAggSpec{
			KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)),
			GenerateUpdateBefore: true, StateTTL: time.Second,
		}))
	}
	// Write times are in the checkpoint: a key expires 1 s after its last
	// write whether or not a restore happened in between.
	script := []action{
		rows(ins("a", 1)),  // t=1000
		clock(1500),        //
		rows(ins("b", 5)),  // t=1500
		clock(2000),        // a expires now
		rows(ins("a", 4)),  // a starts afresh
		rows(del("b", 5)),  // b still alive (written 1500)
		rows(ins("b", 7)),  // b had been deleted: +I
		clock(2999),        //
		rows(ins("b", 1)),  // b written at 2000: alive at 2999
		clock(4000),        // everything expired
		rows(del("a", 4)),  // ignored
		rows(ins("b", 10)), // afresh
	}
	want := []string{
		"+I(a, 1)",
		"+I(b, 5)",
		"+I(a, 4)",
		"-D(b, 5)",
		"+I(b, 7)",
		"-U(b, 7)", "+U(b, 8)",
		"+I(b, 10)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}

// storedResults reads the group aggregate's entries from b: per key (its
// first value), the last emitted results (the last n values), as the
// collector prints rows.
func storedResults(t *testing.T, b *kv.Backend, n int) map[string]string {
	t.Helper()
	var c collector
	got := map[string]string{}
	err := b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		if e.State != "acc" {
			return fmt.Errorf("entry of state %q", e.State)
		}
		key, _, err := types.DecodeValue(e.Key)
		if err != nil {
			return err
		}
		vals, rest, err := decodeValues(nil, e.Value)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("value %x: %v", e.Value, err)
		}
		got[c.Format(types.Row{key})] = c.Format(vals[len(vals)-n:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBackendHoldsTheKeys checks what reaches the backend at a checkpoint:
// every key with state, with its current values; a key deleted since (its
// group became empty) is removed from the backend, and a key that came and
// went between two checkpoints never reaches it.
func TestBackendHoldsTheKeys(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			op := must(t)(NewGroupAggregate(GroupAggSpec{
				KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)), GenerateUpdateBefore: true,
			}))
			rt := &fakeRuntime{Now: 1}
			b := openOn(t, kind, 0, op, rt)
			ko := op.(exec.KeyedOperator)
			var recs []rec
			for i := range 100 {
				recs = append(recs, ins(fmt.Sprintf("k%d", i), i+1))
			}
			run(t, op, rt, 2, rows(recs...))
			if got := storedResults(t, b, 1); len(got) != 0 {
				t.Fatalf("before the first checkpoint the backend holds %d keys, want 0 (all in the cache)", len(got))
			}
			if err := ko.PrepareSnapshot(1); err != nil {
				t.Fatal(err)
			}
			got := storedResults(t, b, 1)
			if len(got) != 100 || got["k0"] != "1" || got["k99"] != "100" {
				t.Fatalf("after checkpoint 1: %d keys, k0 = %q, k99 = %q; want 100, 1, 100", len(got), got["k0"], got["k99"])
			}
			// k1 (2) and k2 (3) change, k3 (4) is retracted to nothing, k200 is
			// new, k201 comes and goes.
			run(t, op, rt, 2, rows(ins("k1", 5), ins("k2", 1), ins("k1", 1), del("k3", 4), ins("k200", 1), ins("k201", 1), del("k201", 1)))
			if err := ko.PrepareSnapshot(2); err != nil {
				t.Fatal(err)
			}
			got = storedResults(t, b, 1)
			want := map[string]string{"k1": "8", "k2": "4", "k200": "1"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("after checkpoint 2: %s = %q, want %q", k, got[k], v)
				}
			}
			if _, ok := got["k3"]; ok {
				t.Error("after checkpoint 2: the backend still holds k3, whose group became empty")
			}
			if _, ok := got["k201"]; ok {
				t.Error("after checkpoint 2: the backend holds k201")
			}
			if len(got) != 100 {
				t.Errorf("after checkpoint 2: %d keys, want 100", len(got))
			}
		})
	}
}

// TestRestoreSplitsByKeyGroup restores the state into two instances that
// own half of the key groups each (a rescale to parallelism 2): routed by
// key group, they continue as the single instance would.
func TestRestoreSplitsByKeyGroup(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewGroupAggregate(GroupAggSpec{
			KeyCols: []int{0}, Aggs: handle(t, true, call("COUNT"), call("SUM", 1)), GenerateUpdateBefore: true,
		}))
	}
	op := build()
	rt := &fakeRuntime{Now: 1}
	b := openOn(t, image.Hashmap, 0, op, rt)
	var first, second []rec
	for i := range 40 {
		first = append(first, ins(fmt.Sprintf("u%d", i), i))
		second = append(second, ins(fmt.Sprintf("u%d", i), 100))
	}
	run(t, op, rt, 2, rows(first...))
	if err := op.(exec.KeyedOperator).PrepareSnapshot(1); err != nil {
		t.Fatal(err)
	}
	store := optest.NewStore()
	if err := b.WriteEntries(store); err != nil {
		t.Fatal(err)
	}
	want := run(t, op, rt, 2, rows(second...))

	halves := []exec.Operator{build(), build()}
	for i, h := range halves {
		kgs := kv.KeyGroupRange{First: i * 64, Last: i*64 + 63}
		hb, err := kv.Open(kv.Config{Kind: image.Hashmap, Dir: t.TempDir(), MaxParallelism: 128, KeyGroups: &kgs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hb.Close() })
		if err := hb.LoadEntries(store.Only(i*64, (i+1)*64)); err != nil {
			t.Fatal(err)
		}
		if err := h.(exec.KeyedOperator).OpenKeyedState(hb); err != nil {
			t.Fatal(err)
		}
		if err := h.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range second {
		row := batchOf(2, r).Rows[0]
		kg := types.KeyGroup(types.HashColumns(row, []int{0}), 128)
		got = append(got, run(t, halves[kg/64], rt, 2, rows(r))...)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("split restore:\n%v\nwant\n%v", got, want)
	}
}

func TestChangelogNormalizeRestore(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}, GenerateUpdateBefore: true}))
	}
	script := []action{
		rows(ins("k1", "a"), ins("k2", "b")),
		rows(ua("k1", "a")),
		rows(ua("k1", "c")),
		rows(del("k2", nil)),
		rows(del("k2", nil), ua("k2", "d")),
		rows(del("k1", nil)),
	}
	want := []string{
		"+I(k1, a)", "+I(k2, b)",
		"-U(k1, a)", "+U(k1, c)",
		"-D(k2, b)",
		"+I(k2, d)",
		"-D(k1, c)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}

func TestSinkUpsertMaterializerRestore(t *testing.T) {
	build := func() exec.Operator {
		return must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{0}}))
	}
	// Rows (pk, v); the alive rows of a key are a list in arrival order.
	script := []action{
		rows(ins(1, "a"), ins(1, "b")),
		rows(ins(2, "x")),
		rows(del(1, "b")), // the last row goes: back to a
		rows(ins(1, "c")),
		rows(del(1, "a")), // not the last: nothing
		rows(del(1, "c")), // none left
		rows(del(2, "y")), // matches nothing
		rows(del(2, "x")),
	}
	want := []string{
		"+I(1, a)", "+U(1, b)",
		"+I(2, x)",
		"+U(1, a)",
		"+U(1, c)",
		"-D(1, c)",
		"-D(2, x)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}
