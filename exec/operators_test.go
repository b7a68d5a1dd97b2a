package exec

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// collectOutput is an Output that records what an operator emits.
type collectOutput struct{ got []string }

func (c *collectOutput) Push(b *types.Batch) error {
	for i, r := range b.Rows {
		c.got = append(c.got, b.Kinds[i].String()+rowString(r))
	}
	return nil
}

func (c *collectOutput) PushWatermark(wm int64) error {
	c.got = append(c.got, fmt.Sprintf("wm(%d)", wm))
	return nil
}

// feed runs op over the batches of rows, then finishes it.
func feed(t *testing.T, op Operator, width int, batches ...[]types.Row) []string {
	t.Helper()
	out := &collectOutput{}
	openKeyed(t, op)
	if err := op.Open(&OperatorContext{}); err != nil {
		t.Fatal(err)
	}
	for _, rows := range batches {
		b := types.NewBatch(width, len(rows)+1)
		for _, r := range rows {
			b.AppendRow(types.Insert, r)
		}
		if err := op.ProcessBatch(0, b, out); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Finish(out); err != nil {
		t.Fatal(err)
	}
	if err := op.Close(); err != nil {
		t.Fatal(err)
	}
	return out.got
}

var null = types.NullValue

func TestSort(t *testing.T) {
	// Columns (a, b); b tells the rows apart and shows stability.
	in := [][]types.Row{
		{ints(3, 1), {null, types.Int(2)}, ints(1, 3)},
		{ints(3, 4), ints(2, 5), {null, types.Int(6)}},
	}
	tests := []struct {
		name          string
		keys          []SortKey
		offset, limit int
		want          []string
	}{
		{"asc nulls first", []SortKey{{Col: 0, NullsFirst: true}}, 0, -1,
			[]string{"+INULL,2", "+INULL,6", "+I1,3", "+I2,5", "+I3,1", "+I3,4"}},
		{"desc nulls last", []SortKey{{Col: 0, Desc: true}}, 0, -1,
			[]string{"+I3,1", "+I3,4", "+I2,5", "+I1,3", "+INULL,2", "+INULL,6"}},
		{"asc nulls last offset 1 limit 3", []SortKey{{Col: 0}}, 1, 3,
			[]string{"+I2,5", "+I3,1", "+I3,4"}},
		{"two keys desc nulls first limit 3", []SortKey{{Col: 0, Desc: true, NullsFirst: true}, {Col: 1, Desc: true}}, 0, 3,
			[]string{"+INULL,6", "+INULL,2", "+I3,4"}},
		{"offset past the end", []SortKey{{Col: 0}}, 10, -1, nil},
		{"limit 0", []SortKey{{Col: 0}}, 0, 0, nil},
		{"limit past the end", []SortKey{{Col: 1, Desc: true}}, 4, 10, []string{"+INULL,2", "+I3,1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := feed(t, NewSort(tc.keys, tc.offset, tc.limit), 2, in...)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// openKeyed gives a KeyedOperator a hashmap backend, as the runtime does
// before Open.
func openKeyed(t *testing.T, op Operator) {
	t.Helper()
	ko, ok := op.(KeyedOperator)
	if !ok {
		return
	}
	b, err := kv.Open(kv.Config{Kind: image.Hashmap, Dir: filepath.Join(t.TempDir(), "db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := ko.OpenKeyedState(b); err != nil {
		t.Fatal(err)
	}
}

func TestSortHoldsWatermarkUntilFinish(t *testing.T) {
	op := NewSort([]SortKey{{Col: 0}}, 0, -1)
	openKeyed(t, op)
	out := &collectOutput{}
	b := types.NewBatch(1, 2)
	b.AppendRow(types.Insert, ints(2))
	b.AppendRow(types.Insert, ints(1))
	if err := op.ProcessBatch(0, b, out); err != nil {
		t.Fatal(err)
	}
	b.Reset() // the operator must have copied the rows
	if err := op.ProcessWatermark(MaxWatermark, out); err != nil {
		t.Fatal(err)
	}
	if err := op.Finish(out); err != nil {
		t.Fatal(err)
	}
	want := []string{"+I1", "+I2", fmt.Sprintf("wm(%d)", int64(MaxWatermark))}
	if !slices.Equal(out.got, want) {
		t.Fatalf("got %v, want %v", out.got, want)
	}
}

func TestLimit(t *testing.T) {
	in := [][]types.Row{{ints(1), ints(2), ints(3)}, {ints(4), ints(5), ints(6)}, {ints(7), ints(8), ints(9)}}
	tests := []struct {
		offset, limit int
		want          []string
	}{
		{2, 4, []string{"+I3", "+I4", "+I5", "+I6"}},
		{0, -1, []string{"+I1", "+I2", "+I3", "+I4", "+I5", "+I6", "+I7", "+I8", "+I9"}},
		{5, -1, []string{"+I6", "+I7", "+I8", "+I9"}},
		{0, 3, []string{"+I1", "+I2", "+I3"}},
		{3, 3, []string{"+I4", "+I5", "+I6"}},
		{0, 0, nil},
		{20, 5, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("offset %d limit %d", tc.offset, tc.limit), func(t *testing.T) {
			if got := feed(t, NewLimit(tc.offset, tc.limit), 1, in...); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCalc(t *testing.T) {
	even := predicateFunc(func(in types.Row) (bool, error) { return in[0].Int()%2 == 0, nil })
	neg := projectorFunc(func(in, out types.Row) error { out[0] = types.Int(-in[0].Int()); return nil })
	in := [][]types.Row{{ints(1), ints(2), ints(3), ints(4)}, {ints(6)}}
	tests := []struct {
		name    string
		filter  Predicate
		project Projector
		want    []string
	}{
		{"identity", nil, nil, []string{"+I1", "+I2", "+I3", "+I4", "+I6"}},
		{"filter", even, nil, []string{"+I2", "+I4", "+I6"}},
		{"project", nil, neg, []string{"+I-1", "+I-2", "+I-3", "+I-4", "+I-6"}},
		{"both", even, neg, []string{"+I-2", "+I-4", "+I-6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := feed(t, NewCalc(tc.filter, tc.project, 1), 1, in...); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCalcKeepsRowKinds(t *testing.T) {
	op := NewCalc(nil, projectorFunc(func(in, out types.Row) error { out[0] = in[0]; return nil }), 1)
	out := &collectOutput{}
	b := types.NewBatch(1, 2)
	b.AppendRow(types.UpdateBefore, ints(1))
	b.AppendRow(types.Delete, ints(2))
	if err := op.ProcessBatch(0, b, out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"-U1", "-D2"}; !slices.Equal(out.got, want) {
		t.Fatalf("got %v, want %v", out.got, want)
	}
}

func TestSortInJob(t *testing.T) {
	rc := newRecorder(0)
	g := &JobGraph{Vertices: []*Vertex{
		sliceSource(1, 1, 1, []step{rowsStep(0, ints(5), ints(1))}, []step{rowsStep(0, ints(3))}),
		{ID: 2, Name: "Sort", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Global}}},
			Chain: chain(func() (Operator, error) { return NewSort([]SortKey{{Col: 0, Desc: true}}, 0, 2), nil }, rc.op())},
	}}
	for _, v := range g.Vertices[:1] {
		v.Source.Watermark = tsWatermark(0, 0, false)
	}
	if err := run(t, g, Config{}); err != nil {
		t.Fatal(err)
	}
	if got, want := rc.strings(-1), []string{"+I5", "+I3", "wm(max)", "finish"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
