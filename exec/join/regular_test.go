package join

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// Left rows are (id, lv), right rows (id, rv) unless a test says
// otherwise; the join key is id on both sides.
func regularBuild(typ Type, residual exec.Predicate, lspec, rspec InputSpec) func() (exec.Operator, error) {
	return func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:     typ,
			Left:     Side{Width: 2, Keys: []int{0}, Spec: lspec},
			Right:    Side{Width: 2, Keys: []int{0}, Spec: rspec},
			Residual: residual,
		})
	}
}

// Inner join of insert-only inputs: every pair of rows with equal keys,
// once per copy; a NULL key matches nothing; a retraction retracts every
// pair it was part of, with its own kind.
func TestInnerJoin(t *testing.T) {
	script := []step{
		left(ins("a", 1)),
		right(ins("a", 10)),
		left(ins("a", 2)),
		right(ins("b", 20)),
		left(ins("a", 1)),
		// Stored left rows iterate in the order of their bytes: (a, 1) twice, then (a, 2).
		right(ins("a", 11)),
		left(ins(nil, 5)),
		right(ins(nil, 5)),
		right(del("a", 10)),
	}
	want := []string{
		"+I(a, 1, a, 10)",
		"+I(a, 2, a, 10)",
		"+I(a, 1, a, 10)",
		"+I(a, 1, a, 11)", "+I(a, 1, a, 11)", "+I(a, 2, a, 11)",
		"-D(a, 1, a, 10)", "-D(a, 1, a, 10)", "-D(a, 2, a, 10)",
	}
	checkRestores(t, regularBuild(Inner, nil, NoUniqueKey, NoUniqueKey), 0, script, 0, want...)
}

// Left outer join: a left row without a match is emitted padded; the
// first match retracts the padded row, the last match leaving brings it
// back. Right rows are never padded.
func TestLeftOuterJoin(t *testing.T) {
	script := []step{
		left(ins("a", 1)),
		right(ins("a", 10)),
		right(ins("a", 11)),
		right(ins("b", 1)),
		left(ins(nil, 7)),
		right(del("a", 10)),
		right(del("a", 11)),
		left(del("a", 1)),
		left(del(nil, 7)),
	}
	want := []string{
		"+I(a, 1, NULL, NULL)",
		"-D(a, 1, NULL, NULL)", "+I(a, 1, a, 10)",
		"+I(a, 1, a, 11)",
		"+I(NULL, 7, NULL, NULL)",
		"-D(a, 1, a, 10)",
		"-D(a, 1, a, 11)", "+I(a, 1, NULL, NULL)",
		"-D(a, 1, NULL, NULL)",
		"-D(NULL, 7, NULL, NULL)",
	}
	checkRestores(t, regularBuild(LeftOuter, nil, NoUniqueKey, NoUniqueKey), 0, script, 0, want...)
}

// Right outer join is the mirror image: right rows are padded on the left.
func TestRightOuterJoin(t *testing.T) {
	script := []step{
		right(ins("a", 10)),
		left(ins("a", 1)),
		left(del("a", 1)),
	}
	want := []string{
		"+I(NULL, NULL, a, 10)",
		"-D(NULL, NULL, a, 10)", "+I(a, 1, a, 10)",
		"-D(a, 1, a, 10)", "+I(NULL, NULL, a, 10)",
	}
	checkRestores(t, regularBuild(RightOuter, nil, NoUniqueKey, NoUniqueKey), 0, script, 0, want...)
}

// Full outer join with a residual condition lv < rv: rows of equal keys
// that fail it do not match, so both stay padded.
func TestFullOuterJoinResidual(t *testing.T) {
	lt := predicate(func(r types.Row) bool { return r[1].N < r[3].N })
	script := []step{
		left(ins("a", 1)),
		right(ins("a", 0)),
		right(ins("a", 5)),
		left(ins("a", 3)),
		right(del("a", 5)),
	}
	want := []string{
		"+I(a, 1, NULL, NULL)",
		"+I(NULL, NULL, a, 0)",
		"-D(a, 1, NULL, NULL)", "+I(a, 1, a, 5)",
		"+I(a, 3, a, 5)",
		"-D(a, 1, a, 5)", "-D(a, 3, a, 5)", "+I(a, 1, NULL, NULL)", "+I(a, 3, NULL, NULL)",
	}
	checkRestores(t, regularBuild(FullOuter, lt, NoUniqueKey, NoUniqueKey), 0, script, 0, want...)
}

// Updating inputs with unique keys: the left side's unique key is its
// join key (one value per key), the right side's is rid (a map by rid).
// An inner join passes the input's kinds through.
func TestInnerJoinUpdatingUniqueKeys(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  Inner,
			Left:  Side{Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
			Right: Side{Width: 3, Keys: []int{0}, Spec: HasUniqueKey, UniqueKey: []int{1}},
		})
	}
	script := []step{
		left(ins("a", 1)),
		right(ins("a", "r1", 10)),
		right(ub("a", "r1", 10)),
		right(ua("a", "r1", 20)),
		right(ins("a", "r2", 30)),
		left(ub("a", 1)),
		left(ua("a", 2)),
		right(del("a", "r1", 20)),
	}
	want := []string{
		"+I(a, 1, a, r1, 10)",
		"-U(a, 1, a, r1, 10)",
		"+U(a, 1, a, r1, 20)",
		"+I(a, 1, a, r2, 30)",
		"-U(a, 1, a, r1, 20)", "-U(a, 1, a, r2, 30)",
		"+U(a, 2, a, r1, 20)", "+U(a, 2, a, r2, 30)",
		"-D(a, 2, a, r1, 20)",
	}
	checkRestores(t, build, 0, script, 0, want...)
}

// An outer side with a unique key keeps its match counts next to the row.
func TestLeftOuterJoinUniqueKeys(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  LeftOuter,
			Left:  Side{Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
			Right: Side{Width: 3, Keys: []int{0}, Spec: HasUniqueKey, UniqueKey: []int{1}},
		})
	}
	script := []step{
		left(ins("a", 1)),
		right(ins("a", "r1", 10)),
		right(ins("a", "r2", 20)),
		right(del("a", "r1", 10)),
		right(ub("a", "r2", 20)),
		right(ua("a", "r2", 21)),
		right(del("a", "r2", 21)),
	}
	want := []string{
		"+I(a, 1, NULL, NULL, NULL)",
		"-D(a, 1, NULL, NULL, NULL)", "+I(a, 1, a, r1, 10)",
		"+I(a, 1, a, r2, 20)",
		"-D(a, 1, a, r1, 10)",
		"-U(a, 1, a, r2, 20)", "+I(a, 1, NULL, NULL, NULL)",
		"-D(a, 1, NULL, NULL, NULL)", "+I(a, 1, a, r2, 21)",
		"-D(a, 1, a, r2, 21)", "+I(a, 1, NULL, NULL, NULL)",
	}
	checkRestores(t, build, 0, script, 0, want...)
}

// A side's rows are forgotten STATE_TTL after they were written; the
// other side's (no TTL) are kept.
func TestRegularJoinStateTTL(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  Inner,
			Left:  Side{Width: 2, Keys: []int{0}, TTL: time.Second},
			Right: Side{Width: 2, Keys: []int{0}},
		})
	}
	script := []step{
		left(ins("a", 1)),
		clock(1500),
		right(ins("a", 10)),
		left(ins("a", 2)),
	}
	checkRestores(t, build, 1, script, 0, "+I(a, 2, a, 10)")
}

func TestRegularJoinRefusesBadSpecs(t *testing.T) {
	if _, err := NewRegular(RegularSpec{Left: Side{Width: 1, Keys: []int{0}}, Right: Side{Width: 1}}); err == nil {
		t.Error("keys of different lengths accepted")
	}
	if _, err := NewRegular(RegularSpec{Left: Side{Width: 1, Keys: []int{1}}, Right: Side{Width: 1, Keys: []int{0}}}); err == nil {
		t.Error("a key column out of range accepted")
	}
	op, _ := NewRegular(RegularSpec{Left: Side{Width: 2, Keys: []int{0}}, Right: Side{Width: 2, Keys: []int{0}}})
	got := run(t, func() (exec.Operator, error) { return op, nil }, 0)
	optest.Expect(t, "nothing", got)
	if err := op.ProcessBatch(0, batchOf(t, ins("a")), newCollector()); err == nil {
		t.Error("a row of the wrong width accepted")
	}
}

// Semi join (IN / EXISTS): a left row is emitted once it has a match and
// retracted when its last match goes; copies count.
func TestSemiJoin(t *testing.T) {
	script := []step{
		left(ins("a", 1)),
		left(ins("b", 2), ins(nil, 3)),
		right(ins("a", 10)),
		right(ins("a", 11)),
		left(ins("a", 4)),
		right(ins(nil, 12)),
		right(del("a", 10)),
		right(del("a", 11)),
		left(del("a", 1)),
	}
	checkRestores(t, regularBuild(Semi, nil, NoUniqueKey, NoUniqueKey), 0, script, 0,
		"+I(a, 1)",
		"+I(a, 4)",
		"-D(a, 1)", "-D(a, 4)",
	)
}

// Anti join (NOT EXISTS): a left row is emitted while it has no match; a
// NULL key never matches, so it is always shown.
func TestAntiJoin(t *testing.T) {
	script := []step{
		left(ins("a", 1)),
		left(ins("b", 2), ins(nil, 3)),
		right(ins("a", 10)),
		right(ins("a", 11)),
		left(ins("a", 4)),
		right(del("a", 10)),
		right(del("a", 11)),
		left(del("b", 2)),
	}
	checkRestores(t, regularBuild(Anti, nil, NoUniqueKey, NoUniqueKey), 0, script, 0,
		"+I(a, 1)",
		"+I(b, 2)", "+I(NULL, 3)",
		"-D(a, 1)",
		"+I(a, 1)", "+I(a, 4)",
		"-D(b, 2)",
	)
}

// A semi join over an updating right side shows and hides left rows with
// the right row's kind, as Flink's StreamingSemiAntiJoinOperator does.
func TestSemiJoinUpdatingRight(t *testing.T) {
	script := []step{
		left(ins("a", 1)),
		right(ua("a", 10)),
		right(ub("a", 10)),
		right(ins("a", 11)),
	}
	checkRestores(t, regularBuild(Semi, nil, NoUniqueKey, NoUniqueKey), 0, script, 0,
		"+U(a, 1)", "-U(a, 1)", "+I(a, 1)")
}

// Batches longer than the cached join's prefetch run, whose keys come
// again within a run and across runs, new and known ones: every row
// sees the state the rows before it in its batch left, also after a
// restore (keys loaded from the backend on first use). The right side
// (one row per key) gets keys 0…299 twice in one batch, the second row
// replacing the first; each left row (key i%300, i) then joins the right
// row (k, k+300) alone. The left rows of key 1000 (not on the right; two
// of them in one run, when it is new) join nothing until the right row
// of 1000 comes, which joins all three.
func TestRegularJoinLongBatches(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  Inner,
			Left:  Side{Width: 2, Keys: []int{0}},
			Right: Side{Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
		})
	}
	const n = 600
	if n <= 2*prefetchRows {
		t.Fatalf("%d rows are not more than two prefetch runs of %d", n, prefetchRows)
	}
	var rights, lefts []rowSpec
	for i := range n {
		rights = append(rights, ins(i%300, i))
	}
	var want []string
	for i := range n {
		if i == 5 || i == 6 || i == 400 {
			lefts = append(lefts, ins(1000, i))
		}
		k := i % 300
		lefts = append(lefts, ins(k, i))
		want = append(want, fmt.Sprintf("+I(%d, %d, %d, %d)", k, i, k, k+300))
	}
	want = append(want, "+I(1000, 5, 1000, 7)", "+I(1000, 6, 1000, 7)", "+I(1000, 400, 1000, 7)")
	script := []step{right(rights...), left(lefts...), right(ins(1000, 7))}
	checkRestores(t, build, 0, script, 0, want...)
	checkCachedMatchesUncached(t, build, [][]step{script})
}

// The cached join keeps a row without strings or objects (numbers,
// NULLs) flat and others as Values; a row replaced by one kept the other
// way moves between the two. The right side holds one row per key
// (k, name) whose name goes NULL → x → NULL → y; each right row joins the
// left rows of its key, and each left row the right row of the moment.
func TestRegularJoinFlatRows(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  Inner,
			Left:  Side{Width: 2, Keys: []int{0}},
			Right: Side{Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey, UniqueKey: []int{0}},
		})
	}
	script := []step{
		right(ins(1, nil)),
		left(ins(1, 5)),
		right(ins(1, "x")),
		right(ins(1, nil)),
		left(ins(1, 6)),
		right(ins(1, "y")),
		left(del(1, 5)),
		right(ub(1, "y")),
		left(ins(1, 7)),
	}
	want := []string{
		"+I(1, 5, 1, NULL)",
		"+I(1, 5, 1, x)",
		"+I(1, 5, 1, NULL)",
		"+I(1, 6, 1, NULL)",
		"+I(1, 5, 1, y)", "+I(1, 6, 1, y)",
		"-D(1, 5, 1, y)",
		"-U(1, 6, 1, y)",
	}
	checkRestores(t, build, 0, script, 0, want...)
	checkCachedMatchesUncached(t, build, [][]step{script[:3], script[3:6], script[6:]})
}

// A join without equality columns (a cross join, or one on a residual
// condition alone) keeps all rows of a side under one key, of no columns,
// as Flink does: every left row meets every right row.
func TestRegularJoinWithoutKeys(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRegular(RegularSpec{
			Type:  Inner,
			Left:  Side{Width: 2, Keys: []int{}},
			Right: Side{Width: 2, Keys: []int{}},
		})
	}
	script := []step{
		left(ins("a", 1), ins("b", 2)),
		right(ins("c", 3)),
		left(ins("d", 4)),
		right(del("c", 3)),
	}
	want := []string{
		"+I(a, 1, c, 3)", "+I(b, 2, c, 3)",
		"+I(d, 4, c, 3)",
		"-D(a, 1, c, 3)", "-D(b, 2, c, 3)", "-D(d, 4, c, 3)",
	}
	checkRestores(t, build, 0, script, 0, want...)
}

// Two identical rows on one side are one stored row with a count of 2:
// each copy joins, and retracting one copy retracts one match and leaves
// the other.
func TestRegularJoinIdenticalRows(t *testing.T) {
	script := []step{
		left(ins("a", 1), ins("a", 1)),
		right(ins("a", 10)),
		left(del("a", 1)),
		right(ins("a", 11)),
		left(del("a", 1)),
		right(ins("a", 12)),
	}
	want := []string{
		"+I(a, 1, a, 10)", "+I(a, 1, a, 10)",
		"-D(a, 1, a, 10)",
		"+I(a, 1, a, 11)",
		"-D(a, 1, a, 10)", "-D(a, 1, a, 11)",
	}
	build := regularBuild(Inner, nil, NoUniqueKey, NoUniqueKey)
	checkRestores(t, build, 0, script, 0, want...)
	checkCachedMatchesUncached(t, build, [][]step{script[:3], script[3:]})
}

// A key with more rows than indexMin is looked up through its hash
// index, rows arriving out of byte order are emitted in byte order all
// the same, and inserts and retractions interleave; with every map key
// hashed alike (collide) the lookups must still tell the rows apart.
// Left values are fixed-length strings longer than a cachedRow holds
// inline (their row bytes sort as the strings do), right values small
// ints (inline, sorting as the numbers do).
func TestRegularJoinManyRowsPerKey(t *testing.T) {
	lv := func(i int) string { return fmt.Sprintf("long-left-value-%02d", i) }
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			build := func() (exec.Operator, error) {
				return NewRegular(RegularSpec{
					Type:    Inner,
					Left:    Side{Width: 2, Keys: []int{0}},
					Right:   Side{Width: 2, Keys: []int{0}},
					collide: collide,
				})
			}
			var lefts []rowSpec
			for _, i := range []int{7, 3, 11, 0, 9, 5, 1, 10, 2, 8, 6, 4, 5} {
				lefts = append(lefts, ins("a", lv(i)))
			}
			var rights []rowSpec
			for _, v := range []int{25, 21, 29, 20, 27, 23, 28, 22, 26, 24, 30} {
				rights = append(rights, ins("a", v))
			}
			script := []step{
				left(lefts...),
				right(ins("a", 1)),
				left(del("a", lv(3)), del("a", lv(5)), ins("a", lv(12)), del("a", lv(0)), ins("a", lv(3))),
				right(ins("a", 2)),
				right(del("a", 1)),
				right(rights...),
				right(del("a", 25), del("a", 20), ins("a", 25)),
				left(ins("a", "x")),
				left(del("a", "x")),
			}
			var want []string
			// Left holds 00..11, 05 twice, when (a, 1) comes.
			for i := range 12 {
				for range 1 + btoi(i == 5) {
					want = append(want, fmt.Sprintf("+I(a, %s, a, 1)", lv(i)))
				}
			}
			// The left changes join (a, 1) as they come.
			want = append(want, fmt.Sprintf("-D(a, %s, a, 1)", lv(3)), fmt.Sprintf("-D(a, %s, a, 1)", lv(5)),
				fmt.Sprintf("+I(a, %s, a, 1)", lv(12)), fmt.Sprintf("-D(a, %s, a, 1)", lv(0)),
				fmt.Sprintf("+I(a, %s, a, 1)", lv(3)))
			// Then 01..12, each once: the deletes removed 00, one 05 and
			// 03, which came back.
			for _, r := range []struct {
				kind string
				v    int
			}{{"+I", 2}, {"-D", 1}} {
				for i := 1; i <= 12; i++ {
					want = append(want, fmt.Sprintf("%s(a, %s, a, %d)", r.kind, lv(i), r.v))
				}
			}
			// Each right row joins the twelve left rows as it comes.
			for _, v := range []int{25, 21, 29, 20, 27, 23, 28, 22, 26, 24, 30} {
				for i := 1; i <= 12; i++ {
					want = append(want, fmt.Sprintf("+I(a, %s, a, %d)", lv(i), v))
				}
			}
			for _, r := range []struct {
				kind string
				v    int
			}{{"-D", 25}, {"-D", 20}, {"+I", 25}} {
				for i := 1; i <= 12; i++ {
					want = append(want, fmt.Sprintf("%s(a, %s, a, %d)", r.kind, lv(i), r.v))
				}
			}
			// Right holds 2 and 21..30 (20 retracted, 25 back), in order.
			for _, k := range []string{"+I", "-D"} {
				for _, v := range []int{2, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30} {
					want = append(want, fmt.Sprintf("%s(a, x, a, %d)", k, v))
				}
			}
			checkRestores(t, build, 0, script, 0, want...)
			checkCachedMatchesUncached(t, build, [][]step{script[:3], script[3:6], script[6:]})
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// On rocksdb after a fresh start a side without unique keys stores a row
// its row filter has not seen with a count of 1 without reading the
// count, and skips the retraction of a row it never stored. Rows of a
// key already seen may be new (a, 2), repeated (the second a, 2: its
// count must be read, 2) or retracted without ever being stored (a, 3).
func TestRegularJoinRowFilter(t *testing.T) {
	script := []step{
		left(ins("a", 1), ins("a", 2), ins("a", 2), del("a", 3)),
		right(ins("a", 10)),
		left(del("a", 2)),
		right(ins("a", 11)),
		left(del("a", 2), ins("b", 2)),
		right(ins("a", 12), ins("b", 20)),
	}
	want := []string{
		"+I(a, 1, a, 10)", "+I(a, 2, a, 10)", "+I(a, 2, a, 10)",
		"-D(a, 2, a, 10)",
		"+I(a, 1, a, 11)", "+I(a, 2, a, 11)",
		"-D(a, 2, a, 10)", "-D(a, 2, a, 11)",
		"+I(a, 1, a, 12)", "+I(b, 2, b, 20)",
	}
	build := regularBuild(Inner, nil, NoUniqueKey, NoUniqueKey)
	checkRestores(t, build, 0, script, 0, want...)
	checkCachedMatchesUncached(t, build, [][]step{script[:2], script[2:4], script[4:]})
}

// TestRegularJoinLongRowLists: one key whose left row list grows to 400
// rows, so its hash index is rebuilt at 32, 64, ... 1024 slots while
// batches arrive with their map keys encoded ahead (prefetch), for a side
// without and with a unique key, with distinct and with colliding hashes.
//
// Phase 1: left rows 0..19, then right 1000: 20 joined rows. Phase 2
// (after a snapshot): left rows 20..399 in batches of 95, each joining
// 1000 (380), then a batch that (no unique key) adds a second and third 5
// and retracts 7 (+2, -1) or (unique key, rows carry a value) replaces 5
// by a retraction and an insertion and retracts 7 (-1 +1 -1). Phase 3:
// right 1001 joins every left row: 401 (400 - 7 + two more 5s) or 399.
func TestRegularJoinLongRowLists(t *testing.T) {
	for _, unique := range []bool{false, true} {
		for _, collide := range []bool{false, true} {
			t.Run(fmt.Sprintf("unique=%v/collide=%v", unique, collide), func(t *testing.T) {
				l := Side{Width: 2, Keys: []int{0}}
				row := func(i int) rowSpec { return ins("a", i) }
				if unique {
					l = Side{Width: 3, Keys: []int{0}, Spec: HasUniqueKey, UniqueKey: []int{1}}
					row = func(i int) rowSpec { return ins("a", i, 0) }
				}
				build := func() (exec.Operator, error) {
					return NewRegular(RegularSpec{Type: Inner, Left: l, Right: Side{Width: 2, Keys: []int{0}}, collide: collide})
				}
				var first []rowSpec
				for i := range 20 {
					first = append(first, row(i))
				}
				script := [][]step{{left(first...), right(ins("a", 1000))}, {}, {right(ins("a", 1001))}}
				for st := 20; st < 400; st += 95 {
					var b []rowSpec
					for i := st; i < st+95; i++ {
						b = append(b, row(i))
					}
					script[1] = append(script[1], left(b...))
				}
				want := 20 + 380 + 3 + 401
				if unique {
					script[1] = append(script[1], left(del("a", 5, 0), ins("a", 5, 99), del("a", 7, 0)))
					want = 20 + 380 + 3 + 399
				} else {
					script[1] = append(script[1], left(ins("a", 5), ins("a", 5), del("a", 7)))
				}
				var all []step
				for _, p := range script {
					all = append(all, p...)
				}
				if got := run(t, build, 0, all...); len(got) != want {
					t.Errorf("%d rows emitted, want %d", len(got), want)
				}
				checkCachedMatchesUncached(t, build, script)
			})
		}
	}
}
