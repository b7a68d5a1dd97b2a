package rank

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
)

// step is one action of a script: rows (one batch), a watermark, or the
// clock moving to a time, firing the processing timers due.
type step struct {
	rows  []rowSpec
	wm    int64
	clock int64
}

func rowsOf(rows ...rowSpec) step { return step{rows: rows} }

func (s step) Run(t *testing.T, op exec.Operator, rt *fakeRuntime, c *collector) {
	t.Helper()
	switch {
	case s.rows != nil:
		process(t, op, c, s.rows...)
	case s.wm != 0:
		watermark(t, op, c, s.wm)
	case s.clock != 0:
		rt.AdvanceTo(t, s.clock, op, c)
	}
}

// checkRestores is optest.CheckRestores with this package's output
// format; the hand-worked want is the uninterrupted run's output.
//
// It runs twice: with the operator's cache as the backend sizes it, and
// with a cache of one value, so that every batch starts by writing back
// and dropping every cached entry and every key is loaded from the
// backend again: the output must not change.
func checkRestores(t *testing.T, build func() (exec.Operator, error), start int64, script []step, late int64, want ...string) {
	t.Helper()
	optest.CheckRestores(t, build, newCollector, start, script, late, want...)
	t.Run("evicting", func(t *testing.T) {
		optest.CheckRestores(t, withCache(build, 1), newCollector, start, script, late, want...)
	})
}

// withCache makes build's operators keep at most n values in their cache.
func withCache(build func() (exec.Operator, error), n int) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		op, err := build()
		if err != nil {
			return nil, err
		}
		switch o := op.(type) {
		case *dedup:
			o.maxCached = n
		case *topN:
			o.maxCached = n
		case *windowRank:
			o.maxCached = n
		}
		return op, nil
	}
}

func eachRow(rows ...rowSpec) []step {
	var s []step
	for _, r := range rows {
		s = append(s, rowsOf(r))
	}
	return s
}

func TestAppendOnlyTopNRestore(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 3, OutputRankNumber: true, GenerateUpdateBefore: true})
	}
	checkRestores(t, build, 0, eachRow(topThreeInput...), 0,
		"+I(A, i10, 10, 1)",
		"-U(A, i10, 10, 1)", "+U(A, i30, 30, 1)", "+I(A, i10, 10, 2)",
		"+I(B, j7, 7, 1)",
		"-U(A, i10, 10, 2)", "+U(A, i20, 20, 2)", "+I(A, i10, 10, 3)",
		"-U(A, i30, 30, 1)", "+U(A, i40, 40, 1)",
		"-U(A, i20, 20, 2)", "+U(A, i30, 30, 2)",
		"-U(A, i10, 10, 3)", "+U(A, i20, 20, 3)")
}

func TestRetractableTopNRestore(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 2, InputIsUpdating: true, GenerateUpdateBefore: true})
	}
	// Rows beyond the range are in the checkpoint too: deleting a ranked
	// row after a restore brings c up.
	checkRestores(t, build, 0, eachRow(
		ins("A", "a", 10), ins("A", "b", 20), ins("A", "c", 30),
		del("A", "a", 10),
		del("A", "zz", 99),
		ub("A", "b", 20), ua("A", "b", 5),
		ins("A", "d", 30), del("A", "c", 30),
		del("A", "b", 5), del("A", "d", 30),
		ins("A", "e", 1),
	), 0,
		"+I(A, a, 10)", "+I(A, b, 20)",
		"-D(A, a, 10)", "+I(A, c, 30)",
		"-D(A, b, 20)",
		"+I(A, b, 5)",
		"-D(A, c, 30)", "+I(A, d, 30)",
		// d, then b, go; the partition empties and starts again with e
		"-D(A, b, 5)", "-D(A, d, 30)",
		"+I(A, e, 1)")
}

func TestDeduplicateRestore(t *testing.T) {
	// As TestDeduplicateTTL, with a checkpoint after every step: write
	// times and the kept rows survive; the restored operator schedules its
	// sweep again.
	build := func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true, StateTTL: 10 * time.Second})
	}
	checkRestores(t, build, 1000, []step{
		rowsOf(ins("a", 1, sec(0))),
		{clock: 5000},
		rowsOf(ins("a", 1, sec(0)), ins("b", 1, sec(0))),
		{clock: 11000},
		{clock: 14000},
		rowsOf(ins("b", 2, sec(0))),
		{clock: 15000},
		{clock: 16000},
		rowsOf(ins("a", 3, sec(0)), ins("b", 3, sec(0))),
		{clock: 26000},
		rowsOf(ins("b", 4, sec(0))),
	}, 0,
		"+I(a, 1, 0s)",
		"-U(a, 1, 0s)", "+U(a, 1, 0s)", "+I(b, 1, 0s)",
		"-U(b, 1, 0s)", "+U(b, 2, 0s)",
		"+I(a, 3, 0s)", "-U(b, 2, 0s)", "+U(b, 3, 0s)",
		// b was written at 16s: expired at 26s
		"+I(b, 4, 0s)")
	// Rowtime keep-last: an older row after the restore is still ignored.
	rowtime := func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, KeepLast: true, GenerateUpdateBefore: true})
	}
	checkRestores(t, rowtime, 0, eachRow(ins("a", 1, sec(5)), ins("a", 2, sec(3)), ins("a", 3, sec(5)), ins("b", 1, sec(1))), 0,
		"+I(a, 1, 5s)", "-U(a, 1, 5s)", "+U(a, 3, 5s)", "+I(b, 1, 1s)")
	// Rowtime keep-first: the kept row survives a restore, so an earlier
	// row after it still retracts it.
	rowtimeFirst := func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, GenerateUpdateBefore: true})
	}
	checkRestores(t, rowtimeFirst, 0, eachRow(ins("a", 1, sec(5)), ins("a", 2, sec(6)), ins("a", 3, sec(3)), ins("b", 1, sec(1)), ins("a", 4, sec(3))), 0,
		"+I(a, 1, 5s)", "-U(a, 1, 5s)", "+U(a, 3, 3s)", "+I(b, 1, 1s)")
	keepFirst := func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1})
	}
	checkRestores(t, keepFirst, 0, eachRow(ins("a", 1, sec(5)), ins("a", 2, sec(3)), ins("b", 3, sec(5))), 0,
		"+I(a, 1, 5s)", "+I(b, 3, 5s)")
}

func TestWindowTopNRestore(t *testing.T) {
	// As TestWindowTopN: after the first window fired, its rows are late,
	// also after a restore.
	build := func() (exec.Operator, error) {
		return NewWindowRank(WindowRankSpec{
			PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3,
			SortKeys: byPriceDescAt(1), RankStart: 1, RankEnd: 2, OutputRankNumber: true,
		})
	}
	checkRestores(t, build, 0, []step{
		rowsOf(w1("A", 5), w1("B", 7), w2("B", 1)),
		rowsOf(w1("A", 9), w1("A", 3)),
		rowsOf(w1("B", 2), w1("B", 8), w1("B", 8)),
		{wm: 9998},
		{wm: 9999},
		rowsOf(w1("A", 100), w2("A", 4)),
		rowsOf(w2("A", 6), w1("B", 1)),
		{wm: exec.MaxWatermark},
	}, 2,
		"WM(9.998s)",
		"+I(A, 9, 0s, 10s, 1)", "+I(A, 5, 0s, 10s, 2)",
		"+I(B, 8, 0s, 10s, 1)", "+I(B, 8, 0s, 10s, 2)",
		"WM(9.999s)",
		"+I(B, 1, 10s, 20s, 1)",
		"+I(A, 6, 10s, 20s, 1)", "+I(A, 4, 10s, 20s, 2)",
		"WM(max)")
}

// TestTopNSnapshotsAreIncremental counts the partitions a checkpoint writes
// back to the backend: only those changed since the previous one (the
// backend makes its own images incremental).
func TestTopNSnapshotsAreIncremental(t *testing.T) {
	op, err := NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 2})
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	open(t, op, rt)
	c := newCollector()
	var rows []rowSpec
	for i := range 30 {
		rows = append(rows, ins(fmt.Sprintf("p%d", i), "x", 10))
	}
	process(t, op, c, rows...)
	if n := writtenBack(t, op); n != 30 {
		t.Fatalf("first checkpoint: %d partitions written back", n)
	}
	// p1 changes; p2's first z takes rank 2, its second ranks 3 and is not
	// kept (append-only Top-N keeps RankEnd rows); p3's 5 ranks 3 too.
	process(t, op, c, ins("p1", "y", 20), ins("p2", "z", 1), ins("p2", "z", 1))
	if n := writtenBack(t, op); n != 2 {
		t.Fatalf("second checkpoint: %d partitions written back; want 2 (p1, p2)", n)
	}
	process(t, op, c, ins("p2", "w", 0), ins("p3", "v", 10), ins("p3", "u", 5))
	if n := writtenBack(t, op); n != 1 { // p3: v ranks 2; u ranks 3, dropped
		t.Fatalf("third checkpoint: %d partitions written back; want 1 (p3)", n)
	}
}

// writtenBack runs op's PrepareSnapshot and returns how many partitions it
// wrote to the backend.
func writtenBack(t *testing.T, op exec.Operator) int {
	t.Helper()
	tn := op.(*topN)
	n := tn.c.Dirty()
	if err := tn.PrepareSnapshot(0); err != nil {
		t.Fatal(err)
	}
	if d := tn.c.Dirty(); d != 0 {
		t.Fatalf("%d partitions still dirty after the write back", d)
	}
	return n
}

// A checkpoint of a deduplication that kept no rows (proctime keep-first)
// cannot restore an event-time keep-first, which must be able to retract
// its row: a clear error when the state is declared, not a decode failure
// or a silent -U of an empty row.
func TestDeduplicateRestoreWithoutKeptRows(t *testing.T) {
	for _, kind := range optest.Kinds {
		old, err := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1})
		if err != nil {
			t.Fatal(err)
		}
		k := optest.NewKeyed(t, kind)
		b := k.Open(t, old.(exec.KeyedOperator))
		if err := old.Open((&fakeRuntime{}).Context()); err != nil {
			t.Fatal(err)
		}
		process(t, old, newCollector(), ins("a", 1, sec(5)))
		snap := k.Snapshot(t, old.(exec.KeyedOperator), b, 1)

		op, err := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: 2, GenerateUpdateBefore: true})
		if err != nil {
			t.Fatal(err)
		}
		err = op.(exec.KeyedOperator).OpenKeyedState(k.RestoreBackend(t, snap))
		if err == nil || !strings.Contains(err.Error(), `"rank.dedup.first/2"`) || !strings.Contains(err.Error(), "cannot be read that way") {
			t.Fatalf("%s: declaring the state of a restored keep-first: %v", kind, err)
		}
	}
}
