package over

import (
	"fmt"
	"slices"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// batchStep is a step of a batch OVER script: rows, a watermark, or the
// end of input.
type batchStep struct {
	step
	finish bool
}

func (s batchStep) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	s.step.Run(t, op, rt, c)
	if s.finish {
		if err := op.Finish(c); err != nil {
			t.Fatal(err)
		}
	}
}

func batchBuilder(t *testing.T, spec BatchSpec, aggs ...string) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		s := spec
		s.Aggs = handle(t, aggs...)
		return NewBatch(s)
	}
}

// TestBatchRestore: PARTITION BY k ORDER BY x DESC, ROWS BETWEEN 1
// PRECEDING AND 1 FOLLOWING with SUM(x), MAX(x), RANK() and LAG(x), over
// a1@1 a3@2 b5@3 a3@4 a2@5 b4@6. Worked by hand: a sorts 3@2, 3@4, 2@5,
// 1@1 (ties keep arrival order); SUM over the neighbours 3+3 = 6, 3+3+2 =
// 8, 3+2+1 = 6, 2+1 = 3 (the frame slides: 3@2 leaves, MAX retracts it),
// MAX 3, 3, 3, 2, RANK 1, 1, 3, 4, LAG NULL, 3, 3, 2. b sorts 5, 4: SUM 9,
// 9, MAX 5, 5, RANK 1, 2, LAG NULL, 5. Nothing comes out before the end of
// input; the held-back watermark follows the rows. Restored at every step
// on both backends.
func TestBatchRestore(t *testing.T) {
	spec := BatchSpec{
		KeyCols: []int{0},
		Order:   []exec.SortKey{{Col: 1, Desc: true}},
		Frame:   Frame{Rows: true, Start: Bound{Kind: Preceding, Offset: 1}, End: Bound{Kind: Following, Offset: 1}},
		Funcs:   []Func{{Name: "RANK", ArgCol: -1, DefCol: -1}, {Name: "LAG", ArgCol: 1, DefCol: -1, Offset: 1}},
		Slots:   []int{0, 1, -1, -2},
	}
	optest.CheckRestores(t, batchBuilder(t, spec, "SUM", "MAX"), newCollector, 0, []batchStep{
		{step: step{rows: []in{{"a", 1, 1}, {"a", 3, 2}, {"b", 5, 3}}}},
		{step: step{rows: []in{{"a", 3, 4}, {"a", 2, 5}}}},
		{step: step{rows: []in{{"b", 4, 6}}}},
		{step: step{wm: exec.MaxWatermark}},
		{finish: true},
	}, 0,
		"+I(a, 3, 2s, 6, 3, 1, NULL)",
		"+I(a, 3, 4s, 8, 3, 1, 3)",
		"+I(a, 2, 5s, 6, 3, 3, 3)",
		"+I(a, 1, 1s, 3, 2, 4, 2)",
		"+I(b, 5, 3s, 9, 5, 1, NULL)",
		"+I(b, 4, 6s, 9, 5, 2, 5)",
		"WM(max)")
}

// TestBatchRangeFrames: RANGE frames on peers and offsets, one partition
// ordered by x ASC over x = 1, 3, 3, 4, 7, 8. Worked by hand:
//   - UNBOUNDED PRECEDING..CURRENT ROW: 1, 7, 7, 11, 18, 26 (the 3s are peers);
//   - CURRENT ROW..UNBOUNDED FOLLOWING: 26, 25, 25, 19, 15, 8;
//   - 2 PRECEDING..1 FOLLOWING ([x-2, x+1]): 1 → {1} 1; 3 → {1,3,3,4} 11
//     twice; 4 → {3,3,4} 10; 7 → {7,8} 15; 8 → {7,8} 15.
//   - DENSE_RANK 1, 2, 2, 3, 4, 5 and ROW_NUMBER 1…6 alongside.
func TestBatchRangeFrames(t *testing.T) {
	rows := []in{{"a", 4, 1}, {"a", 3, 2}, {"a", 8, 3}, {"a", 1, 4}, {"a", 3, 5}, {"a", 7, 6}}
	run := func(t *testing.T, fr Frame, sums ...int64) {
		t.Helper()
		h, err := agg.NewHandle([]agg.Call{{Name: "SUM", FilterCol: -1, ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}}},
			agg.Options{NeedsRetraction: fr.Start.Kind != UnboundedPreceding})
		if err != nil {
			t.Fatal(err)
		}
		op, err := NewBatch(BatchSpec{KeyCols: []int{0}, Order: []exec.SortKey{{Col: 1, NullsFirst: true}}, Frame: fr, Aggs: h,
			Funcs: []Func{{Name: "DENSE_RANK"}, {Name: "ROW_NUMBER"}}, Slots: []int{0, -1, -2}})
		if err != nil {
			t.Fatal(err)
		}
		k := optest.NewKeyed(t, optest.Kinds[0])
		k.Open(t, op.(exec.KeyedOperator))
		c := newCollector()
		batchStep{step: step{rows: rows}, finish: true}.Run(t, op, &optest.Runtime{}, c)
		// x with its arrival time, in sort order (the 3s in arrival order).
		xs := []string{"1, 4s", "3, 2s", "3, 5s", "4, 1s", "7, 6s", "8, 3s"}
		dense := []int{1, 2, 2, 3, 4, 5}
		var want []string
		for i, x := range xs {
			want = append(want, fmt.Sprintf("+I(a, %s, %d, %d, %d)", x, sums[i], dense[i], i+1))
		}
		if got := c.Take(); !slices.Equal(got, want) {
			t.Errorf("got  %v\nwant %v", got, want)
		}
	}
	t.Run("unbounded-current", func(t *testing.T) {
		run(t, Frame{Start: Bound{Kind: UnboundedPreceding}, End: Bound{Kind: CurrentRow}}, 1, 7, 7, 11, 18, 26)
	})
	t.Run("current-unbounded", func(t *testing.T) {
		run(t, Frame{Start: Bound{Kind: CurrentRow}, End: Bound{Kind: UnboundedFollowing}}, 26, 25, 25, 19, 15, 8)
	})
	t.Run("offsets", func(t *testing.T) {
		run(t, Frame{Start: Bound{Kind: Preceding, Offset: 2}, End: Bound{Kind: Following, Offset: 1}}, 1, 11, 11, 10, 15, 15)
	})
}
