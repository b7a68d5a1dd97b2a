package rank

import (
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
)

// A key's TTL counts from its last change, not from when its cached entry
// was written back to the backend (which stamps the write-back time): a
// written back at 5s (evicted, or checkpointed) still expires at 11s, 10s
// after its row at 1s. In the evicting run every batch starts with a write
// back, in the restored runs every key is read back from the backend.
func TestDeduplicateTTLAcrossWriteBack(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true, StateTTL: 10 * time.Second})
	}
	checkRestores(t, build, 1000, []step{
		rowsOf(ins("a", 1, sec(0))),
		{clock: 5000},
		rowsOf(ins("b", 1, sec(0))),
		{clock: 11000},
		rowsOf(ins("a", 2, sec(0))), // a: changed at 1s, gone at 11s
		{clock: 14000},
		rowsOf(ins("b", 2, sec(0))), // b: changed at 5s, alive until 15s
		{clock: 23999},
		rowsOf(ins("a", 3, sec(0)), ins("b", 3, sec(0))), // a: gone at 21s; b: changed at 14s, alive until 24s
	}, 0,
		"+I(a, 1, 0s)",
		"+I(b, 1, 0s)",
		"+I(a, 2, 0s)",
		"-U(b, 1, 0s)", "+U(b, 2, 0s)",
		"+I(a, 3, 0s)", "-U(b, 2, 0s)", "+U(b, 3, 0s)")
}

// With a cache of one value in the operator and 64 bytes in the rocksdb
// backend, every batch writes the previous key back and reads its key from
// Pebble; the output is that of the unbounded cache, and so after a
// restore.
func TestDeduplicateEvictsToPebble(t *testing.T) {
	op, err := withCache(func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true})
	}, 1)()
	if err != nil {
		t.Fatal(err)
	}
	k := optest.NewKeyed(t, image.RocksDB)
	k.CacheBytes = 64
	b := k.Open(t, op.(exec.KeyedOperator))
	rt := &fakeRuntime{}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	processEach(t, op, c, ins("a", 1, sec(0)), ins("b", 1, sec(0)), ins("a", 2, sec(0)), ins("b", 2, sec(0)), ins("a", 2, sec(0)))
	expect(t, "evicting", c.Take(),
		"+I(a, 1, 0s)", "+I(b, 1, 0s)",
		"-U(a, 1, 0s)", "+U(a, 2, 0s)",
		"-U(b, 1, 0s)", "+U(b, 2, 0s)")
	// a's second 2 equals the kept row: nothing (TTL is off).
	if n := op.(*dedup).c.Evictions(); n != 4 {
		t.Errorf("%d evictions, want 4 (at every batch but the first)", n)
	}
	if got := optest.Dump(t, b); len(got) != 2 {
		t.Errorf("backend holds %d entries, want 2 (a, b):\n%q", len(got), got)
	}
	snap := k.Snapshot(t, op.(exec.KeyedOperator), b, 1)
	restored, err := withCache(func() (exec.Operator, error) {
		return NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true})
	}, 1)()
	if err != nil {
		t.Fatal(err)
	}
	k.Restore(t, restored.(exec.KeyedOperator), snap)
	if err := restored.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	processEach(t, restored, c, ins("b", 3, sec(0)), ins("a", 2, sec(0)), ins("c", 1, sec(0)))
	expect(t, "restored", c.Take(), "-U(b, 2, 0s)", "+U(b, 3, 0s)", "+I(c, 1, 0s)")
}

// TestTopNTTLRestore is TestTopNTTL with a checkpoint after every step, on
// both backends (and evicting): a partition expires StateTTL after its
// last change however it was stored in between. B is last changed at 0s
// (w at 0.6s does not rank), A at 0.6s.
func TestTopNTTLRestore(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewRank(RankSpec{PartitionCols: []int{0}, SortKeys: byPriceDesc, RankStart: 1, RankEnd: 1, StateTTL: time.Second})
	}
	checkRestores(t, build, 0, []step{
		rowsOf(ins("A", "x", 5), ins("B", "y", 5)),
		{clock: 600},
		rowsOf(ins("A", "z", 6), ins("B", "w", 1)),
		{clock: 1000},
		{clock: 1599},
		rowsOf(ins("A", "v", 1), ins("B", "u", 1)),
		{clock: 1600},
		rowsOf(ins("A", "t", 1)),
	}, 0,
		"+I(A, x, 5)", "+I(B, y, 5)",
		"-D(A, x, 5)", "+I(A, z, 6)",
		"+I(B, u, 1)",
		"+I(A, t, 1)")
}

// TestWindowTopNThroughPebble is TestWindowTopN on rocksdb with a one-value
// operator cache and a 64-byte backend cache, restored into a fresh
// operator after the rows and again after the first window fired: the
// rows, the index of partitions per window and the watermark (rows of the
// fired window stay late) come back from Pebble.
func TestWindowTopNThroughPebble(t *testing.T) {
	build := withCache(func() (exec.Operator, error) {
		return NewWindowRank(WindowRankSpec{
			PartitionCols: []int{0}, WindowStartCol: 2, WindowEndCol: 3,
			SortKeys: byPriceDescAt(1), RankStart: 1, RankEnd: 2, OutputRankNumber: true,
		})
	}, 1)
	k := optest.NewKeyed(t, image.RocksDB)
	k.CacheBytes = 64
	rt := &fakeRuntime{}
	op, err := build()
	if err != nil {
		t.Fatal(err)
	}
	b := k.Open(t, op.(exec.KeyedOperator))
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	restore := func(id exec.CheckpointID) {
		t.Helper()
		snap := k.Snapshot(t, op.(exec.KeyedOperator), b, id)
		if op, err = build(); err != nil {
			t.Fatal(err)
		}
		b = k.Restore(t, op.(exec.KeyedOperator), snap)
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
	}
	c := newCollector()
	processEach(t, op, c, w1("A", 5), w1("B", 7), w2("B", 1), w1("A", 9), w1("A", 3))
	processEach(t, op, c, w1("B", 2), w1("B", 8), w1("B", 8))
	restore(1)
	watermark(t, op, c, 9998)
	expect(t, "before window_end - 1", c.Take(), "WM(9.998s)")
	watermark(t, op, c, 9999)
	expect(t, "first window", c.Take(),
		"+I(A, 9, 0s, 10s, 1)", "+I(A, 5, 0s, 10s, 2)",
		"+I(B, 8, 0s, 10s, 1)", "+I(B, 8, 0s, 10s, 2)",
		"WM(9.999s)",
	)
	restore(2)
	processEach(t, op, c, w1("A", 100), w2("A", 4), w2("A", 6), w1("B", 1))
	if n := rt.Metrics.LateRowsDropped.Load(); n != 2 {
		t.Errorf("late rows dropped: %d, want 2", n)
	}
	restore(3)
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "second window", c.Take(),
		"+I(B, 1, 10s, 20s, 1)",
		"+I(A, 6, 10s, 20s, 1)", "+I(A, 4, 10s, 20s, 2)",
		"WM(max)",
	)
	// Left: the watermark, once in each of the 128 key groups.
	got := optest.Dump(t, b)
	for _, e := range got {
		if !strings.Contains(e, " progress ") {
			t.Errorf("after both windows fired the backend holds %s", e)
		}
	}
	if len(got) != 128 {
		t.Errorf("%d watermark entries, want 128", len(got))
	}
}
