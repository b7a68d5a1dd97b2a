package exec_test

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// TestTemporalSortRestore: ORDER BY the rowtime column (column 1 here),
// then name DESC. Worked by hand: wm 3 releases c@1 (last released 1); d@2
// is at or below the watermark but after the last released timestamp, so
// it waits for the next watermark; e@1 is late (1 ≤ 1) and dropped; wm 6
// releases d@2, then the two rows @5 by name DESC (b, a); f@4 is late
// (4 ≤ 5); wm 10 releases h@7 and g@9. Every step is restored from on both
// backends.
func TestTemporalSortRestore(t *testing.T) {
	build := func() (exec.Operator, error) {
		return exec.NewTemporalSort(1, []exec.SortKey{{Col: 1}, {Col: 0, Desc: true}}), nil
	}
	optest.CheckRestores(t, build, newCollector, 0, []opStep{
		batch(row("a", 5), row("b", 5), row("c", 1)),
		wmark(3),
		batch(row("d", 2)),
		batch(row("e", 1)),
		wmark(6),
		batch(row("f", 4)),
		batch(row("g", 9), row("h", 7)),
		wmark(10),
		finish(),
	}, 2,
		"+I(c, 1)", "WM(3)", "+I(d, 2)", "+I(b, 5)", "+I(a, 5)", "WM(6)", "+I(h, 7)", "+I(g, 9)", "WM(10)")
}

// TestTemporalSortNullRowtime: a NULL rowtime fails with Flink's message.
func TestTemporalSortNullRowtime(t *testing.T) {
	op := exec.NewTemporalSort(1, []exec.SortKey{{Col: 1}}).(exec.KeyedOperator)
	optest.NewKeyed(t, optest.Kinds[0]).Open(t, op)
	if err := op.Open((&optest.Runtime{}).Context()); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(2, 1)
	b.AppendRow(types.Insert, types.Row{types.String("x"), types.NullValue})
	err := op.ProcessBatch(0, b, newCollector())
	if err == nil || err.Error() != "RowTime field should not be null, please convert it to a non-null long value." {
		t.Fatalf("got %v", err)
	}
}

// TestFinalRestore: the final rows of a changelog, counted per distinct
// row. Worked by hand: a is inserted three times and deleted once (two
// copies left); b is updated to c (-U b, +U c) and c deleted; d is inserted
// and deleted. At the end only (a, 1) remains, twice, as inserts, followed
// by the held-back watermark.
func TestFinalRestore(t *testing.T) {
	build := func() (exec.Operator, error) { return exec.NewFinal(2), nil }
	optest.CheckRestores(t, build, newCollector, 0, []opStep{
		batch(row("a", 1), row("a", 1), row("b", 2)),
		{rows: []types.Row{row("b", 2), row("c", 2), row("a", 1)}, kinds: []types.RowKind{types.UpdateBefore, types.UpdateAfter, types.Delete}},
		wmark(7),
		{rows: []types.Row{row("d", 4), row("a", 1), row("d", 4), row("c", 2)}, kinds: []types.RowKind{types.Insert, types.Insert, types.Delete, types.Delete}},
		finish(),
	}, 0, "+I(a, 1)", "+I(a, 1)", "WM(7)")
}

// TestFinalRetractsMissingRow: a changelog that deletes a row it never
// inserted is an error at the end, not a silently dropped row.
func TestFinalRetractsMissingRow(t *testing.T) {
	op := exec.NewFinal(2).(exec.KeyedOperator)
	optest.NewKeyed(t, optest.Kinds[0]).Open(t, op)
	b := types.NewBatch(2, 1)
	b.AppendRow(types.Delete, row("x", 1))
	c := newCollector()
	if err := op.ProcessBatch(0, b, c); err != nil {
		t.Fatal(err)
	}
	if err := op.Finish(c); err == nil {
		t.Fatal("Finish accepted a changelog that retracts a row never inserted")
	}
}
