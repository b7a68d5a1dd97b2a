package cep

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// in is a test row: key, x, timestamp in seconds.
type in struct {
	k  string
	x  int64
	ts float64
}

type tstep struct {
	wm   int64
	rows []in
}

func ms(s float64) int64 { return int64(s * 1000) }

// Run feeds the watermark, if any, then the rows (the watermark is not in
// a checkpoint, so a late row meets its watermark in the same step).
func (s tstep) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	if s.wm != 0 {
		if err := op.ProcessWatermark(s.wm, c); err != nil {
			t.Fatal(err)
		}
	}
	if s.rows != nil {
		b := types.NewBatch(3, 0)
		for _, r := range s.rows {
			row := b.Append(types.Insert)
			row[0], row[1], row[2] = types.String(r.k), types.Int(r.x), types.TimestampMillis(ms(r.ts))
		}
		rt.Now += 1000
		if err := op.ProcessBatch(0, b, c); err != nil {
			t.Fatal(err)
		}
	}
}

func newCollector() *optest.Collector {
	return &optest.Collector{Time: func(ms int64) string { return fmt.Sprintf("%gs", float64(ms)/1000) }}
}

// project copies columns of the input (Args) or of the slot row (Measures).
type project []int

func (p project) Project(in, out types.Row) error {
	for i, c := range p {
		out[i] = in[c]
	}
	return nil
}

// below tests slot 3 (the current row's x) against 10.
type below struct{ under bool }

func (b below) Test(r types.Row) (bool, error) { return (r[3].N < 10) == b.under, nil }

// spec is PATTERN (A+ B) DEFINE A AS x < 10, B AS x >= 10, MEASURES
// FIRST(A.x), SUM(A.x), LAST(B.x), over rows (k, x, ts) partitioned by k.
func spec(skip SkipKind, within int64) Spec {
	sum := agg.Call{Name: "SUM", FilterCol: -1, ArgCols: []int{1}, ArgTypes: []types.Type{types.BigIntType}}
	return Spec{
		KeyCols: []int{0}, TimeCol: 2,
		Args:     func() (exec.Projector, error) { return project{0, 1}, nil },
		ArgWidth: 2,
		Pattern:  []Element{{Var: 0, Min: 1, Max: Unbounded, Greedy: true}, {Var: 1, Min: 1, Max: 1}},
		Defines: []Define{
			{Name: "A", Navs: []int{3}, Cond: func() (exec.Predicate, error) { return below{true}, nil }},
			{Name: "B", Navs: []int{3}, Cond: func() (exec.Predicate, error) { return below{false}, nil }},
		},
		Navs: []Nav{
			{Kind: NavFirst, Var: 0, Arg: 1},
			{Kind: NavAgg, Var: 0, Agg: func() (exec.AggsHandle, error) { return agg.NewHandle([]agg.Call{sum}, agg.Options{}) }},
			{Kind: NavLast, Var: 1, Arg: 1},
			{Kind: NavLast, Var: -1, Arg: 1},
		},
		Measures:     func() (exec.Projector, error) { return project{0, 1, 2}, nil },
		MeasureWidth: 3, MeasureNavs: []int{0, 1, 2},
		Skip: skip, Within: within,
	}
}

// TestRestoreAtEveryStep runs a script with buffered rows, a late row,
// partial matches across watermarks and WITHIN timeouts, restoring the
// operator from the checkpoint after every step, on both backends.
//
// Key a: 1 @1, 2 @2, then 20 @3 completes A+ B twice (from 1 and from 2;
// SKIP TO NEXT ROW keeps both); 4 @2 arrives after watermark 3: late.
// Key b: 5 @1, 3 @4 (A A) would complete with 30 @20, but at watermark 10
// both partial matches are 5 s or more old (WITHIN 5 s): dropped; 6 @21
// starts one that watermark 31 times out. Key c: 1 @30, 2 @31, 50 @32.
func TestRestoreAtEveryStep(t *testing.T) {
	script := []tstep{
		{rows: []in{{"a", 1, 1}, {"a", 2, 2}, {"b", 5, 1}}},
		{wm: ms(2), rows: []in{{"a", 20, 3}, {"b", 3, 4}}},
		{wm: ms(3), rows: []in{{"a", 4, 2}, {"b", 30, 20}}},
		{wm: ms(10), rows: []in{{"b", 6, 21}, {"c", 1, 30}, {"c", 2, 31}}},
		{wm: ms(31), rows: []in{{"c", 50, 32}}},
		{wm: exec.MaxWatermark},
	}
	build := func() (exec.Operator, error) { return New(spec(SkipToNextRow, ms(5))) }
	optest.CheckRestores(t, build, newCollector, 0, script, 1,
		"WM(2s)",
		"+I(a, 1, 3, 20)", "+I(a, 2, 2, 20)", "WM(3s)",
		"WM(10s)",
		"WM(31s)",
		"+I(c, 1, 3, 50)", "+I(c, 2, 2, 50)", "WM(max)")
}

// TestPastLastRowEmitsEarliest: 1, 2, 3 are A for the starts at 1, 2 and
// 3, and 40 completes all three; SKIP PAST LAST ROW emits the earliest
// (sum 6) and prunes the others. Then 5 A, 60 B.
func TestPastLastRowEmitsEarliest(t *testing.T) {
	script := []tstep{
		{rows: []in{{"a", 1, 1}, {"a", 2, 2}, {"a", 3, 3}, {"a", 40, 4}, {"a", 5, 5}, {"a", 60, 6}}},
		{wm: exec.MaxWatermark},
	}
	build := func() (exec.Operator, error) { return New(spec(SkipPastLastRow, 0)) }
	optest.CheckRestores(t, build, newCollector, 0, script, 0,
		"+I(a, 1, 6, 40)", "+I(a, 5, 5, 60)", "WM(max)")
}
