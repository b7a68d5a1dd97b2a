package unnest

import (
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// Input rows: (id, array of ints, map string→int).
type cols []int

func (c cols) Project(in, out types.Row) error {
	for i, x := range c {
		out[i] = in[x]
	}
	return nil
}

func ints(n ...int64) types.Value {
	v := make([]types.Value, len(n))
	for i, x := range n {
		v[i] = types.Int(x)
		if x < 0 {
			v[i] = types.NullValue
		}
	}
	return types.ArrayValue(v)
}

func batch(kind types.RowKind, rows ...types.Row) *types.Batch {
	b := types.NewBatch(3, 2)
	for _, r := range rows {
		b.AppendRow(kind, r)
	}
	return b
}

type step struct{ b *types.Batch }

// dropCollections hands rows on without the input's collection columns
// (1 and 2), which the collector cannot print.
type dropCollections struct{ c *optest.Collector }

func (d dropCollections) Push(b *types.Batch) error {
	o := types.NewBatch(b.Width()-2, b.Len())
	for i, r := range b.Rows {
		o.AppendRow(b.Kinds[i], append(types.Row{r[0]}, r[3:]...))
	}
	return d.c.Push(o)
}
func (d dropCollections) PushWatermark(wm int64) error { return d.c.PushWatermark(wm) }

func (s step) Run(t *testing.T, op exec.Operator, _ *optest.Runtime, c *optest.Collector) {
	t.Helper()
	if err := op.ProcessBatch(0, s.b, dropCollections{c}); err != nil {
		t.Fatal(err)
	}
}

var m = types.MapOf([]types.Value{types.String("x"), types.String("y")}, []types.Value{types.Int(1), types.Int(2)})

func TestUnnestRestores(t *testing.T) {
	// Two collections side by side, with ordinality; a LEFT join keeps
	// row 2 (empty and NULL) padded; batches hold 2 rows, so row 1's
	// three output rows span batches. Row kinds carry over.
	build := func() (exec.Operator, error) {
		return NewJoin(Spec{InWidth: 3, Args: func() (exec.Projector, error) { return cols{1, 2}, nil },
			ArgKinds: []Arg{{Kind: Array, Width: 1}, {Kind: Map, Width: 2}}, Ordinality: true, LeftOuter: true})
	}
	optest.CheckRestores(t, build, func() *optest.Collector { return &optest.Collector{} }, 0, []step{
		{batch(types.Insert, types.Row{types.Int(1), ints(10, -1, 30), m})},
		{batch(types.Delete, types.Row{types.Int(2), ints(), types.NullValue})},
	}, 0,
		"+I(1, 10, x, 1, 1)", "+I(1, NULL, y, 2, 2)", "+I(1, 30, NULL, NULL, 3)",
		"-D(2, NULL, NULL, NULL, NULL)")
}

// rows of elements, multisets counted, and an inner join's condition.
func TestUnnestKinds(t *testing.T) {
	row := func(a, b int64) types.Value { return types.RowValue(types.Row{types.Int(a), types.Int(b)}) }
	ms := types.MapOf([]types.Value{types.Int(7), types.Int(8)}, []types.Value{types.Int(2), types.Int(1)})
	op, err := NewJoin(Spec{InWidth: 3, Args: func() (exec.Projector, error) { return cols{1, 2}, nil },
		ArgKinds: []Arg{{Kind: ArrayOfRows, Width: 2}, {Kind: Multiset, Width: 1}},
		Cond:     func() (exec.Predicate, error) { return notEight{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(nil); err != nil {
		t.Fatal(err)
	}
	c := &optest.Collector{}
	in := batch(types.Insert, types.Row{types.Int(1), types.ArrayValue([]types.Value{row(1, 2), types.NullValue}), ms})
	if err := op.ProcessBatch(0, in, dropCollections{c}); err != nil {
		t.Fatal(err)
	}
	// Elements: (1, 2) with 7, NULL with 7, nothing with 8 (dropped by the
	// condition).
	optest.Expect(t, "rows and multiset", c.Take(), "+I(1, 1, 2, 7)", "+I(1, NULL, NULL, 7)")
}

type notEight struct{}

func (notEight) Test(r types.Row) (bool, error) { return r[5].IsNull() || r[5].Int() != 8, nil }
