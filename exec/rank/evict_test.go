package rank

import (
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
	if n := op.(*dedup).c.resets; n != 4 {
		t.Errorf("cache emptied %d times, want 4 (before each batch but the first)", n)
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
