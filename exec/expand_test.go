package exec_test

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

type expandStep struct{ b *types.Batch }

func (s expandStep) Run(t *testing.T, op exec.Operator, _ *optest.Runtime, c *optest.Collector) {
	t.Helper()
	if err := op.ProcessBatch(0, s.b, c); err != nil {
		t.Fatal(err)
	}
}

// TestExpandRollup expands rows (a, b, v) for ROLLUP(a, b): the sets (a, b)
// id 0, (a) id 1 (b nulled) and () id 3 (a and b nulled); v, an aggregate
// argument, is never nulled. Batches of two rows overflow into several
// output batches; row kinds carry over, a NULL in the data stays NULL.
func TestExpandRollup(t *testing.T) {
	build := func() (exec.Operator, error) {
		return exec.NewExpand(3, []exec.ExpandSet{{ID: 0}, {Nulls: []int{1}, ID: 1}, {Nulls: []int{0, 1}, ID: 3}})
	}
	in := func(kind types.RowKind, rows ...types.Row) expandStep {
		b := types.NewBatch(3, 2)
		for _, r := range rows {
			b.AppendRow(kind, r)
		}
		return expandStep{b}
	}
	s := types.String
	optest.CheckRestores(t, build, func() *optest.Collector { return &optest.Collector{} }, 0, []expandStep{
		in(types.Insert, types.Row{s("x"), s("p"), types.Int(1)}, types.Row{s("y"), types.NullValue, types.Int(2)}),
		in(types.UpdateBefore, types.Row{s("x"), s("p"), types.Int(1)}),
	}, 0,
		"+I(x, p, 1, 0)", "+I(x, NULL, 1, 1)", "+I(NULL, NULL, 1, 3)",
		"+I(y, NULL, 2, 0)", "+I(y, NULL, 2, 1)", "+I(NULL, NULL, 2, 3)",
		"-U(x, p, 1, 0)", "-U(x, NULL, 1, 1)", "-U(NULL, NULL, 1, 3)")
}

func TestExpandRefusesBadColumn(t *testing.T) {
	if _, err := exec.NewExpand(2, []exec.ExpandSet{{Nulls: []int{2}}}); err == nil {
		t.Fatal("column 2 of a 2-column row was accepted")
	}
	if _, err := exec.NewExpand(2, nil); err == nil {
		t.Fatal("no grouping set was accepted")
	}
}

type discard struct{}

func (discard) Push(*types.Batch) error   { return nil }
func (discard) PushWatermark(int64) error { return nil }

// BenchmarkExpand expands 1024-row batches of (a, b, v) for ROLLUP(a, b)
// (three sets); ns/op is per input row.
func BenchmarkExpand(b *testing.B) {
	op, err := exec.NewExpand(3, []exec.ExpandSet{{ID: 0}, {Nulls: []int{1}, ID: 1}, {Nulls: []int{0, 1}, ID: 3}})
	if err != nil {
		b.Fatal(err)
	}
	in := types.NewBatch(3, 1024)
	for i := 0; i < 1024; i++ {
		in.AppendRow(types.Insert, types.Row{types.String("k"), types.Int(int64(i % 7)), types.Int(int64(i))})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 1024 {
		if err := op.ProcessBatch(0, in, discard{}); err != nil {
			b.Fatal(err)
		}
	}
}
