package exec_test

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/types"
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
