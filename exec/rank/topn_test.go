package rank

import (
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// Rows are (category, item, price).
var (
	byPriceDesc = []exec.SortKey{{Col: 2, Desc: true}}
	byPriceAsc  = []exec.SortKey{{Col: 2}}
)

// Category A gets prices 10, 30, 20, 40, 5 (items named after their
// price); category B one row in between.
var topThreeInput = []rowSpec{
	ins("A", "i10", 10), ins("A", "i30", 30), ins("B", "j7", 7), ins("A", "i20", 20),
	ins("A", "i40", 40), ins("A", "i5", 5),
}

func TestTopN(t *testing.T) {
	cases := []struct {
		name string
		spec RankSpec
		in   []rowSpec
		want []string
	}{
		{
			name: "top 3 without rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 3, GenerateUpdateBefore: true},
			in:   topThreeInput,
			want: []string{
				"+I(A, i10, 10)",
				"+I(A, i30, 30)",
				"+I(B, j7, 7)",
				"+I(A, i20, 20)",
				// 40 enters at rank 1; 10 falls to rank 4.
				"-D(A, i10, 10)", "+I(A, i40, 40)",
				// 5 would be rank 4: nothing.
			},
		},
		{
			name: "top 3 with rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 3, OutputRankNumber: true, GenerateUpdateBefore: true},
			in:   topThreeInput,
			want: []string{
				"+I(A, i10, 10, 1)",
				// 30 takes rank 1, 10 moves to the empty rank 2.
				"-U(A, i10, 10, 1)", "+U(A, i30, 30, 1)", "+I(A, i10, 10, 2)",
				"+I(B, j7, 7, 1)",
				// 20 takes rank 2, 10 moves to the empty rank 3.
				"-U(A, i10, 10, 2)", "+U(A, i20, 20, 2)", "+I(A, i10, 10, 3)",
				// 40 takes rank 1; 30, 20 shift down; 10 leaves.
				"-U(A, i30, 30, 1)", "+U(A, i40, 40, 1)",
				"-U(A, i20, 20, 2)", "+U(A, i30, 30, 2)",
				"-U(A, i10, 10, 3)", "+U(A, i20, 20, 3)",
			},
		},
		{
			name: "top 3 with rank number without update before",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 3, OutputRankNumber: true},
			in:   topThreeInput,
			want: []string{
				"+I(A, i10, 10, 1)",
				"+U(A, i30, 30, 1)", "+I(A, i10, 10, 2)",
				"+I(B, j7, 7, 1)",
				"+U(A, i20, 20, 2)", "+I(A, i10, 10, 3)",
				"+U(A, i40, 40, 1)", "+U(A, i30, 30, 2)", "+U(A, i20, 20, 3)",
			},
		},
		{
			name: "rn between 2 and 3 with rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 2, RankEnd: 3, OutputRankNumber: true, GenerateUpdateBefore: true},
			in:   topThreeInput,
			want: []string{
				// 10 at rank 1: out of range.
				"+I(A, i10, 10, 2)",
				// B's only row is rank 1: nothing.
				"-U(A, i10, 10, 2)", "+U(A, i20, 20, 2)", "+I(A, i10, 10, 3)",
				"-U(A, i20, 20, 2)", "+U(A, i30, 30, 2)",
				"-U(A, i10, 10, 3)", "+U(A, i20, 20, 3)",
			},
		},
		{
			name: "rn between 2 and 3 without rank number",
			// Flink uses the per-position algorithm for an offset even when
			// rn is not selected: the updates carry the rows only.
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 2, RankEnd: 3, GenerateUpdateBefore: true},
			in:   topThreeInput,
			want: []string{
				"+I(A, i10, 10)",
				"-U(A, i10, 10)", "+U(A, i20, 20)", "+I(A, i10, 10)",
				"-U(A, i20, 20)", "+U(A, i30, 30)",
				"-U(A, i10, 10)", "+U(A, i20, 20)",
			},
		},
		{
			name: "ties rank by arrival",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 2, OutputRankNumber: true, GenerateUpdateBefore: true},
			in:   []rowSpec{ins("A", "x", 5), ins("A", "y", 5), ins("A", "z", 5), ins("A", "w", 3)},
			want: []string{
				"+I(A, x, 5, 1)",
				"+I(A, y, 5, 2)", // after the earlier x
				// z ties with the last ranked row and ranks 3: dropped.
				"-U(A, x, 5, 1)", "+U(A, w, 3, 1)",
				"-U(A, y, 5, 2)", "+U(A, x, 5, 2)",
			},
		},
		{
			name: "ties without rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 2},
			in:   []rowSpec{ins("A", "x", 5), ins("A", "y", 5), ins("A", "z", 5), ins("A", "w", 3), ins("A", "v", 5)},
			want: []string{"+I(A, x, 5)", "+I(A, y, 5)", "-D(A, y, 5)", "+I(A, w, 3)"},
		},
		{
			name: "nulls last ascending",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 1},
			in:   []rowSpec{ins("A", "n", nil), ins("A", "x", 9)},
			want: []string{"+I(A, n, NULL)", "-D(A, n, NULL)", "+I(A, x, 9)"},
		},
		{
			name: "no partition",
			spec: RankSpec{SortKeys: byPriceDesc, RankStart: 1, RankEnd: 1},
			in:   []rowSpec{ins("A", "x", 1), ins("B", "y", 2), ins("C", "z", 0)},
			want: []string{"+I(A, x, 1)", "-D(A, x, 1)", "+I(B, y, 2)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneBatch := range []bool{true, false} {
				op, err := NewRank(tc.spec)
				if err != nil {
					t.Fatal(err)
				}
				open(t, op, &fakeRuntime{})
				c := newCollector()
				if oneBatch {
					process(t, op, c, tc.in...)
				} else {
					processEach(t, op, c, tc.in...)
				}
				expect(t, tc.name, c.Take(), tc.want...)
			}
		})
	}
}

// Over updating input every row is kept, so deleting the first of three
// rows pulls the third one into a Top-2.
func TestRetractableTopN(t *testing.T) {
	in := []rowSpec{
		ins("A", "a", 10), ins("A", "b", 20), ins("A", "c", 30),
		del("A", "a", 10),
		del("A", "zz", 99), // not held: ignored
		ub("A", "b", 20), ua("A", "b", 5),
		ins("A", "d", 30), del("A", "c", 30),
	}
	cases := []struct {
		name string
		spec RankSpec
		want []string
	}{
		{
			name: "without rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 2, InputIsUpdating: true, GenerateUpdateBefore: true},
			want: []string{
				"+I(A, a, 10)", "+I(A, b, 20)",
				// c is rank 3: kept, not emitted.
				"-D(A, a, 10)", "+I(A, c, 30)",
				"-D(A, b, 20)", // c is alone now
				"+I(A, b, 5)",
				// d ties with c at rank 2 and ranks 3 (later arrival).
				"-D(A, c, 30)", "+I(A, d, 30)",
			},
		},
		{
			name: "with rank number",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 2, OutputRankNumber: true, InputIsUpdating: true, GenerateUpdateBefore: true},
			want: []string{
				"+I(A, a, 10, 1)", "+I(A, b, 20, 2)",
				"-U(A, a, 10, 1)", "+U(A, b, 20, 1)", "-U(A, b, 20, 2)", "+U(A, c, 30, 2)",
				"-U(A, b, 20, 1)", "+U(A, c, 30, 1)", "-D(A, c, 30, 2)",
				"-U(A, c, 30, 1)", "+U(A, b, 5, 1)", "+I(A, c, 30, 2)",
				"-U(A, c, 30, 2)", "+U(A, d, 30, 2)",
			},
		},
		{
			name: "with rank number, rn between 2 and 3",
			spec: RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 2, RankEnd: 3, OutputRankNumber: true, InputIsUpdating: true, GenerateUpdateBefore: true},
			want: []string{
				"+I(A, b, 20, 2)", "+I(A, c, 30, 3)",
				// delete a (rank 1): b→1, c→2, rank 3 empty
				"-U(A, b, 20, 2)", "+U(A, c, 30, 2)", "-D(A, c, 30, 3)",
				// retract b (rank 1): c→1, rank 2 empty
				"-D(A, c, 30, 2)",
				// b at 5 takes rank 1, c back to 2
				"+I(A, c, 30, 2)",
				// d after c: rank 3
				"+I(A, d, 30, 3)",
				// delete c (rank 2): d→2, rank 3 empty
				"-U(A, c, 30, 2)", "+U(A, d, 30, 2)", "-D(A, d, 30, 3)",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op, err := NewRank(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			open(t, op, &fakeRuntime{})
			c := newCollector()
			processEach(t, op, c, in...)
			expect(t, tc.name, c.Take(), tc.want...)
		})
	}
}

func TestRetractableTopNDuplicates(t *testing.T) {
	op, err := NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceAsc, RankStart: 1, RankEnd: 1, InputIsUpdating: true})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	c := newCollector()
	// Two equal rows: one retraction removes one of them.
	processEach(t, op, c, ins("A", "a", 1), ins("A", "a", 1), del("A", "a", 1), del("A", "a", 1), del("A", "a", 1))
	expect(t, "duplicates", c.Take(), "+I(A, a, 1)", "-D(A, a, 1)", "+I(A, a, 1)", "-D(A, a, 1)")
	if n := stateSize(t, op); n != 0 {
		t.Errorf("%d partitions left after every row was retracted", n)
	}
}

func TestTopNTTL(t *testing.T) {
	rt := &fakeRuntime{Now: 0}
	op, err := NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 1, StateTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, rt)
	c := newCollector()
	process(t, op, c, ins("A", "x", 5), ins("B", "y", 5))
	rt.Now = 600
	process(t, op, c, ins("A", "z", 6), ins("B", "w", 1)) // w is not ranked: B is not written
	expect(t, "before expiry", c.Take(), "+I(A, x, 5)", "+I(B, y, 5)", "-D(A, x, 5)", "+I(A, z, 6)")
	rt.Now = 1000
	fireTimer(t, op, c, 1000)
	if n := stateSize(t, op); n != 1 {
		t.Fatalf("after the sweep at 1s: %d partitions, want 1", n)
	}
	rt.Now = 1599
	process(t, op, c, ins("A", "v", 1), ins("B", "u", 1))
	expect(t, "after B expired", c.Take(), "+I(B, u, 1)")
	rt.Now = 1600
	process(t, op, c, ins("A", "t", 1)) // lazily expired
	expect(t, "after A expired", c.Take(), "+I(A, t, 1)")
	expect(t, "timers", timers(rt), "1000", "1600")
}

func TestTopNErrors(t *testing.T) {
	for _, spec := range []RankSpec{
		{RankStart: 0, RankEnd: 3},
		{RankStart: 3, RankEnd: 2},
		{RankStart: 1, RankEnd: 1, PartitionCols: []int{-1}},
		{RankStart: 1, RankEnd: 1, SortKeys: []exec.SortKey{{Col: -2}}},
	} {
		if _, err := NewRank(spec); err == nil {
			t.Errorf("spec %+v accepted", spec)
		}
	}
	op, err := NewRank(RankSpec{SortKeys: byPriceAsc, RankStart: 1, RankEnd: 1})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	err = op.ProcessBatch(0, batchOf(t, del("A", "a", 1)), newCollector())
	if err == nil || !strings.Contains(err.Error(), "insert-only") {
		t.Errorf("append-only Top-N with a -D row: got %v", err)
	}
	wide, _ := NewRank(RankSpec{SortKeys: []exec.SortKey{{Col: 7}}, RankStart: 1, RankEnd: 1})
	open(t, wide, &fakeRuntime{})
	err = wide.ProcessBatch(0, batchOf(t, ins("A", "a", 1)), newCollector())
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("sort column beyond the row: got %v", err)
	}
}
