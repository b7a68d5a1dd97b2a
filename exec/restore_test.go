package exec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// opStep is one step of a restore script for the operators of package
// exec: a batch of (string, int) rows, a watermark, or the end of input.
type opStep struct {
	rows   []types.Row
	kinds  []types.RowKind // nil: every row is +I
	wm     int64
	finish bool
}

func batch(rows ...types.Row) opStep { return opStep{rows: rows} }
func wmark(wm int64) opStep          { return opStep{wm: wm} }
func finish() opStep                 { return opStep{finish: true} }

func row(s string, n int64) types.Row { return types.Row{types.String(s), types.Int(n)} }

func (s opStep) Run(t *testing.T, op exec.Operator, _ *optest.Runtime, c *optest.Collector) {
	t.Helper()
	var err error
	switch {
	case s.rows != nil:
		b := types.NewBatch(len(s.rows[0]), len(s.rows))
		for i, r := range s.rows {
			k := types.Insert
			if s.kinds != nil {
				k = s.kinds[i]
			}
			b.AppendRow(k, r)
		}
		err = op.ProcessBatch(0, b, c)
	case s.finish:
		err = op.Finish(c)
	default:
		err = op.ProcessWatermark(s.wm, c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func newCollector() *optest.Collector { return &optest.Collector{} }

// TestSortRestore: ORDER BY buffers its whole input and sorts at the end;
// the rows buffered before a checkpoint must survive a restore from it, and
// so must the watermark held back until the sorted rows are out.
func TestSortRestore(t *testing.T) {
	build := func() (exec.Operator, error) {
		return exec.NewSort([]exec.SortKey{{Col: 1, Desc: true}, {Col: 0}}, 1, 3), nil
	}
	// Sorted by n DESC, then s: (c,9) (a,7) (b,7) (d,5) (a,1) (e,1);
	// OFFSET 1 LIMIT 3 keeps (a,7) (b,7) (d,5).
	optest.CheckRestores(t, build, newCollector, 0, []opStep{
		batch(row("a", 1), row("b", 7)),
		wmark(10),
		batch(row("c", 9)),
		batch(row("d", 5), row("a", 7), row("e", 1)),
		wmark(20),
		finish(),
	}, 0,
		"+I(a, 7)", "+I(b, 7)", "+I(d, 5)", "WM(20)")
}

// TestLimitRestore: LIMIT on a stream passes rows [offset, offset+limit);
// after a restore it must neither pass the rows it already passed again nor
// more than the limit in total.
func TestLimitRestore(t *testing.T) {
	build := func() (exec.Operator, error) { return exec.NewLimit(2, 3), nil }
	optest.CheckRestores(t, build, newCollector, 0, []opStep{
		batch(row("a", 1)),
		batch(row("b", 2), row("c", 3)),
		wmark(5),
		batch(row("d", 4)),
		batch(row("e", 5), row("f", 6), row("g", 7)),
		batch(row("h", 8)),
		finish(),
	}, 0,
		"+I(c, 3)", "WM(5)", "+I(d, 4)", "+I(e, 5)")
}

// TestSortWritesBackBeyondBudget: on rocksdb the sort does not hold a long
// input in memory: beyond a quarter of the backend's budget (here 1 MB of
// 4 MB) the buffered rows go to the backend before any checkpoint, Finish
// reads them back in arrival order, and a restore from a checkpoint taken
// then sorts the same. Finish leaves no state behind.
func TestSortWritesBackBeyondBudget(t *testing.T) {
	const n = 20000
	// n is a permutation of 0…19999 (7919 is prime to 20000); sorted by n
	// DESC, OFFSET 1 LIMIT 3 keeps n = 19998, 19997, 19996, whose rows are
	// found by search, not by the operator's logic.
	pad := strings.Repeat("x", 40)
	var steps []opStep
	var rows []types.Row
	for i := range n {
		rows = append(rows, row(fmt.Sprintf("r%05d%s", i, pad), int64(i*7919%n)))
		if len(rows) == 1000 {
			steps = append(steps, batch(rows...))
			rows = nil
		}
	}
	var want []string
	for _, m := range []int{19998, 19997, 19996} {
		for i := range n {
			if i*7919%n == m {
				want = append(want, fmt.Sprintf("+I(r%05d%s, %d)", i, pad, m))
			}
		}
	}
	want = append(want, "WM(30)")
	build := func() exec.KeyedOperator {
		return exec.NewSort([]exec.SortKey{{Col: 1, Desc: true}}, 1, 3).(exec.KeyedOperator)
	}
	k := optest.NewKeyed(t, image.RocksDB)
	op := build()
	b := k.Open(t, op)
	rt := &optest.Runtime{}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	for _, s := range steps {
		s.Run(t, op, rt, c)
	}
	wmark(30).Run(t, op, rt, c)
	// The chunks of the state hold [kind][row] records.
	stored := 0
	err := b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		if e.State != "sort/chunks" {
			return nil
		}
		for v := e.Value; len(v) > 0; stored++ {
			_, rest, err := types.DecodeRow(v[1:])
			if err != nil {
				return err
			}
			v = rest
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d rows written back before any checkpoint", stored, n)
	// About 150 bytes per buffered row: 1 MB holds some 7 000 rows.
	if stored < n/4 || stored >= n {
		t.Errorf("%d of %d rows in the backend before any checkpoint, want most of them", stored, n)
	}
	snap := k.Snapshot(t, op, b, 1)
	finish().Run(t, op, rt, c)
	optest.Expect(t, "uninterrupted", c.Events, want...)
	if left := optest.Dump(t, b); len(left) != 0 {
		t.Errorf("after Finish the backend holds %d entries, want none: %v", len(left), left[:min(len(left), 3)])
	}

	restored := build()
	k.Restore(t, restored, snap)
	if err := restored.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	c2 := newCollector()
	finish().Run(t, restored, rt, c2)
	optest.Expect(t, "restored", c2.Events, want...)
}
