package rank

import (
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/kv"
)

// Rows are (category, price, window_start, window_end) for window Top-N and
// (category, price, ts, window_start, window_end) for window deduplication.
func w1(cat string, price int) rowSpec { return ins(cat, price, sec(0), sec(10)) }
func w2(cat string, price int) rowSpec { return ins(cat, price, sec(10), sec(20)) }

func TestWindowTopN(t *testing.T) {
	op, err := NewWindowRank(WindowRankSpec{
		PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3,
		SortKeys: byPriceDescAt(1), RankStart: 1, RankEnd: 2, OutputRankNumber: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	open(t, op, rt)
	c := newCollector()
	process(t, op, c, w1("A", 5), w1("B", 7), w2("B", 1), w1("A", 9), w1("A", 3))
	process(t, op, c, w1("B", 2), w1("B", 8), w1("B", 8))
	watermark(t, op, c, 9998)
	expect(t, "before window_end - 1", c.Take(), "WM(9.998s)")

	watermark(t, op, c, 9999)
	expect(t, "first window", c.Take(),
		"+I(A, 9, 0s, 10s, 1)", "+I(A, 5, 0s, 10s, 2)",
		// The second 8 ties with the first and ranks 3.
		"+I(B, 8, 0s, 10s, 1)", "+I(B, 8, 0s, 10s, 2)",
		"WM(9.999s)",
	)

	process(t, op, c, w1("A", 100), w2("A", 4), w2("A", 6), w1("B", 1))
	if n := rt.Metrics.LateRowsDropped.Load(); n != 2 {
		t.Errorf("late rows dropped: %d, want 2", n)
	}
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "second window", c.Take(),
		"+I(B, 1, 10s, 20s, 1)",
		"+I(A, 6, 10s, 20s, 1)", "+I(A, 4, 10s, 20s, 2)",
		"WM(max)",
	)
	if err := op.Finish(c); err != nil {
		t.Fatal(err)
	}
	expect(t, "finish", c.Take())
}

func TestWindowTopNRange(t *testing.T) {
	op, err := NewWindowRank(WindowRankSpec{
		PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3,
		SortKeys: byPriceDescAt(1), RankStart: 2, RankEnd: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	c := newCollector()
	// Windows arrive out of order; they still fire by window_end.
	process(t, op, c, w2("A", 1), w2("A", 2), w1("A", 1), w1("A", 4), w1("A", 3), w1("A", 2))
	watermark(t, op, c, 30000)
	expect(t, "ranks 2 and 3", c.Take(),
		"+I(A, 3, 0s, 10s)", "+I(A, 2, 0s, 10s)",
		"+I(A, 1, 10s, 20s)",
		"WM(30s)",
	)
}

func TestWindowDeduplicate(t *testing.T) {
	row := func(cat string, v int, ts float64) rowSpec { return ins(cat, v, sec(ts), sec(0), sec(10)) }
	in := []rowSpec{
		row("A", 1, 3), row("A", 2, 1), row("A", 3, 1), row("B", 4, 5),
		row("A", 5, 7), row("A", 6, 7), row("B", 7, 2),
	}
	cases := []struct {
		name string
		spec WindowRankSpec
		want []string
	}{
		{
			name: "keep first",
			spec: WindowRankSpec{SortKeys: []exec.SortKey{{Col: 2}}, Deduplicate: true},
			// A: earliest rowtime 1s, first of the two such rows; B: 2s.
			want: []string{"+I(A, 2, 1s, 0s, 10s)", "+I(B, 7, 2s, 0s, 10s)"},
		},
		{
			name: "keep last",
			spec: WindowRankSpec{SortKeys: []exec.SortKey{{Col: 2, Desc: true}}, Deduplicate: true},
			// A: latest rowtime 7s, the later of the two such rows.
			want: []string{"+I(A, 6, 7s, 0s, 10s)", "+I(B, 4, 5s, 0s, 10s)"},
		},
		{
			name: "top 1 descending is not deduplication",
			spec: WindowRankSpec{SortKeys: []exec.SortKey{{Col: 2, Desc: true}}},
			// Window Top-N keeps the earlier of tied rows.
			want: []string{"+I(A, 5, 7s, 0s, 10s)", "+I(B, 4, 5s, 0s, 10s)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.PartitionCols = []int{0}
			spec.WindowStartCol, spec.WindowEndCol = 3, 4
			spec.RankStart, spec.RankEnd = 1, 1
			op, err := NewWindowRank(spec)
			if err != nil {
				t.Fatal(err)
			}
			open(t, op, &fakeRuntime{})
			c := newCollector()
			process(t, op, c, in...)
			watermark(t, op, c, 9999)
			expect(t, tc.name, c.Take(), append(tc.want, "WM(9.999s)")...)
		})
	}
}

// With a TIMESTAMP_LTZ time attribute window_end is local time: a window
// ending at 10:00 local in UTC+2 fires at watermark 07:59:59.999 UTC.
func TestWindowRankTimeZone(t *testing.T) {
	loc := time.FixedZone("UTC+2", 2*3600)
	op, err := NewWindowRank(WindowRankSpec{
		PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3,
		SortKeys: byPriceDescAt(1), RankStart: 1, RankEnd: 1, Loc: loc,
	})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	c := newCollector()
	process(t, op, c, ins("A", 1, 9*time.Hour, 10*time.Hour))
	watermark(t, op, c, (8*time.Hour).Milliseconds()-2)
	expect(t, "not yet", c.Take(), "WM(28799.998s)")
	watermark(t, op, c, (8*time.Hour).Milliseconds()-1)
	expect(t, "fired", c.Take(), "+I(A, 1, 32400s, 36000s)", "WM(28799.999s)")
}

func TestWindowRankErrors(t *testing.T) {
	for _, spec := range []WindowRankSpec{
		{RankStart: 1, RankEnd: 0, WindowStartCol: 0, WindowEndCol: 1},
		{RankStart: 1, RankEnd: 1, WindowStartCol: -1, WindowEndCol: 1},
		{RankStart: 1, RankEnd: 2, WindowStartCol: 0, WindowEndCol: 1, Deduplicate: true, SortKeys: byPriceAsc},
	} {
		if _, err := NewWindowRank(spec); err == nil {
			t.Errorf("spec %+v accepted", spec)
		}
	}
	op, err := NewWindowRank(WindowRankSpec{RankStart: 1, RankEnd: 1, WindowStartCol: 2, WindowEndCol: 3})
	if err != nil {
		t.Fatal(err)
	}
	open(t, op, &fakeRuntime{})
	if err := op.ProcessBatch(0, batchOf(t, ins("A", 1, nil, sec(1))), newCollector()); err == nil {
		t.Error("NULL window_start accepted")
	}
	if err := op.ProcessBatch(0, batchOf(t, ub("A", 1, sec(0), sec(1))), newCollector()); err == nil {
		t.Error("-U row accepted")
	}
}

func byPriceDescAt(col int) []exec.SortKey { return []exec.SortKey{{Col: col, Desc: true}} }

// oldKeyCodec is the value codec of the window Top-N's index state of the
// layout before the timer service.
type oldKeyCodec struct{}

func (oldKeyCodec) ID() string                         { return "rank.window.key/1" }
func (oldKeyCodec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (oldKeyCodec) Decode(src []byte) ([]byte, error)  { return src, nil }

// TestWindowRankRefusesOldLayout: a checkpoint with the old per-key-group
// index of the window Top-N is refused with an error naming it, rather
// than restored with its windows never firing.
func TestWindowRankRefusesOldLayout(t *testing.T) {
	spec := WindowRankSpec{PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3, SortKeys: byPriceDescAt(1), RankStart: 1, RankEnd: 2}
	for _, kind := range optest.Kinds {
		k := optest.NewKeyed(t, kind)
		old, _ := NewWindowRank(spec)
		b := k.Open(t, old.(exec.KeyedOperator))
		st, err := kv.NewSortedMapState[[]byte, []byte](b, "index", kv.Bytes{}, oldKeyCodec{}, kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetCurrentKeyInGroup(5, []byte{'i', 0, 5}); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(nil, make([]byte, 24), []byte("k")); err != nil {
			t.Fatal(err)
		}
		snap := k.Snapshot(t, old.(exec.KeyedOperator), b, 1)
		op, _ := NewWindowRank(spec)
		err = op.(exec.KeyedOperator).OpenKeyedState(k.RestoreBackend(t, snap))
		if err == nil || !strings.Contains(err.Error(), `"index"`) {
			t.Errorf("%s: restoring the old window Top-N layout: %v, want an error naming the index state", kind, err)
		}
	}
}
