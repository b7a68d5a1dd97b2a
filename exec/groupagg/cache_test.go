package groupagg

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// The tests here bound the operators' decoded caches to a few keys (and
// kv's own write-back cache on rocksdb to 64 KiB), so that almost every
// row misses, evicts a dirty entry and reloads it from the backend; the
// results must be those of an unbounded cache, and a restore from a
// checkpoint taken after evictions must continue correctly.

const tinyKeys = 5000

// tinyCase is one operator run over passes of rows, with the changelog
// each pass must produce.
type tinyCase struct {
	build  func() exec.Operator // with the cache bound set
	width  int
	passes [][]rec
	want   [][]string
}

// setLimit bounds op's cache to n keys.
func setLimit(op exec.Operator, n int) exec.Operator {
	switch o := op.(type) {
	case *groupAggregate:
		o.cacheLimit = n
	case *changelogNormalize:
		o.cacheLimit = n
	case *sinkUpsertMaterializer:
		o.cacheLimit = n
	}
	return op
}

// feedAll processes recs in batches of up to 1024 rows.
func feedAll(t *testing.T, op exec.Operator, out exec.Output, width int, recs []rec) {
	t.Helper()
	for len(recs) > 0 {
		n := min(len(recs), 1024)
		b := types.NewBatch(width, n)
		for _, r := range recs[:n] {
			row := b.Append(r.kind)
			for i, x := range r.vals {
				row[i] = value(x)
			}
		}
		if err := op.ProcessBatch(0, b, out); err != nil {
			t.Fatal(err)
		}
		recs = recs[n:]
	}
}

// runTiny runs tc on kind, uninterrupted and restored from the checkpoint
// after every pass, and compares the output with tc.want.
func runTiny(t *testing.T, kind image.Kind, tc tinyCase) {
	t.Helper()
	k := optest.NewKeyed(t, kind)
	if kind == image.RocksDB {
		k.CacheBytes = 64 << 10
	}
	rt := &fakeRuntime{Now: 1000}
	k.Clock = func() int64 { return rt.Now }
	op := tc.build().(exec.KeyedOperator)
	b := k.Open(t, op)
	openOp := func(op exec.Operator) {
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
	}
	openOp(op)
	var snaps []*optest.KeyedSnapshot
	for i, p := range tc.passes {
		var c collector
		feedAll(t, op, &c, tc.width, p)
		if err := op.Finish(&c); err != nil {
			t.Fatal(err)
		}
		expect(t, fmt.Sprintf("%s: pass %d", kind, i), c.Events, tc.want[i]...)
		snaps = append(snaps, k.Snapshot(t, op, b, exec.CheckpointID(i+1)))
	}
	for i := range len(tc.passes) - 1 {
		restored := tc.build().(exec.KeyedOperator)
		k.Restore(t, restored, snaps[i])
		openOp(restored)
		for j := i + 1; j < len(tc.passes); j++ {
			var c collector
			feedAll(t, restored, &c, tc.width, tc.passes[j])
			if err := restored.Finish(&c); err != nil {
				t.Fatal(err)
			}
			expect(t, fmt.Sprintf("%s: restored after pass %d: pass %d", kind, i, j), c.Events, tc.want[j]...)
		}
	}
}

func key(i int) string { return fmt.Sprintf("k%04d", i) }

// TestTinyCacheGroupAggregate: COUNT(*), SUM(v) per key over 5 000 keys,
// the cache holding 100 of them.
func TestTinyCacheGroupAggregate(t *testing.T) {
	var passes [4][]rec
	var want [4][]string
	for i := range tinyKeys {
		k := key(i)
		// 1: (k, i) → the first result.
		passes[0] = append(passes[0], ins(k, i))
		want[0] = append(want[0], fmt.Sprintf("+I(%s, 1, %d)", k, i))
		// 2: (k, 1) → count 2, sum i+1.
		passes[1] = append(passes[1], ins(k, 1))
		want[1] = append(want[1], fmt.Sprintf("-U(%s, 1, %d)", k, i), fmt.Sprintf("+U(%s, 2, %d)", k, i+1))
		// 3: retract (k, i) → count 1, sum 1; odd keys also retract (k, 1):
		// the group is empty, -D, and the key is deleted.
		passes[2] = append(passes[2], del(k, i))
		want[2] = append(want[2], fmt.Sprintf("-U(%s, 2, %d)", k, i+1), fmt.Sprintf("+U(%s, 1, 1)", k))
		if i%2 == 1 {
			passes[2] = append(passes[2], del(k, 1))
			want[2] = append(want[2], fmt.Sprintf("-D(%s, 1, 1)", k))
		}
		// 4: (k, 10) → even keys count 2, sum 11; odd keys start afresh.
		passes[3] = append(passes[3], ins(k, 10))
		if i%2 == 0 {
			want[3] = append(want[3], fmt.Sprintf("-U(%s, 1, 1)", k), fmt.Sprintf("+U(%s, 2, 11)", k))
		} else {
			want[3] = append(want[3], fmt.Sprintf("+I(%s, 1, 10)", k))
		}
	}
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			runTiny(t, kind, tinyCase{
				build: func() exec.Operator {
					return setLimit(must(t)(NewGroupAggregate(GroupAggSpec{
						KeyCols: []int{0}, Aggs: handle(t, true, call("COUNT"), call("SUM", 1)), GenerateUpdateBefore: true,
					})), 100)
				},
				width: 2, passes: passes[:], want: want[:],
			})
		})
	}
}

// TestTinyCacheMiniBatch is the same input through mini-batch bundles of
// 700 rows (Finish flushes the last one of each pass); the 5 000 keys of
// a pass fall into bundles in order, and within a bundle a key folds its
// rows into one change, so the changelog is the one without mini-batch
// except that pass 3's odd keys go from (2, i+1) straight to -D.
func TestTinyCacheMiniBatch(t *testing.T) {
	var passes [3][]rec
	var want [3][]string
	for i := range tinyKeys {
		k := key(i)
		passes[0] = append(passes[0], ins(k, i))
		want[0] = append(want[0], fmt.Sprintf("+I(%s, 1, %d)", k, i))
		passes[1] = append(passes[1], ins(k, 1))
		want[1] = append(want[1], fmt.Sprintf("-U(%s, 1, %d)", k, i), fmt.Sprintf("+U(%s, 2, %d)", k, i+1))
	}
	// Pass 3: odd keys retract both rows, in one bundle: rows 2j, 2j+1 of
	// the pass are (k, i) and (k, 1), and bundles hold 700 rows, an even
	// number, so the pair never straddles two bundles.
	for i := range tinyKeys {
		k := key(i)
		if i%2 == 0 {
			passes[2] = append(passes[2], del(k, i), ins(k, 5))
			want[2] = append(want[2], fmt.Sprintf("-U(%s, 2, %d)", k, i+1), fmt.Sprintf("+U(%s, 2, 6)", k))
		} else {
			passes[2] = append(passes[2], del(k, i), del(k, 1))
			want[2] = append(want[2], fmt.Sprintf("-D(%s, 2, %d)", k, i+1))
		}
	}
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			runTiny(t, kind, tinyCase{
				build: func() exec.Operator {
					return setLimit(must(t)(NewGroupAggregate(GroupAggSpec{
						KeyCols: []int{0}, Aggs: handle(t, true, call("COUNT"), call("SUM", 1)), GenerateUpdateBefore: true,
						MiniBatch: MiniBatch{Enabled: true, AllowLatency: time.Hour, Size: 700},
					})), 100)
				},
				width: 2, passes: passes[:], want: want[:],
			})
		})
	}
}

// TestTinyCacheNormalize: rows (id, name) over 5 000 ids.
func TestTinyCacheNormalize(t *testing.T) {
	var passes [3][]rec
	var want [3][]string
	for i := range tinyKeys {
		k := key(i)
		passes[0] = append(passes[0], ins(k, "a"))
		want[0] = append(want[0], fmt.Sprintf("+I(%s, a)", k))
		passes[1] = append(passes[1], ua(k, "b"), ua(k, "b")) // the second is a repeat: nothing
		want[1] = append(want[1], fmt.Sprintf("-U(%s, a)", k), fmt.Sprintf("+U(%s, b)", k))
		if i%2 == 0 {
			passes[2] = append(passes[2], del(k, nil))
			want[2] = append(want[2], fmt.Sprintf("-D(%s, b)", k))
		} else {
			passes[2] = append(passes[2], ua(k, "c"))
			want[2] = append(want[2], fmt.Sprintf("-U(%s, b)", k), fmt.Sprintf("+U(%s, c)", k))
		}
	}
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			runTiny(t, kind, tinyCase{
				build: func() exec.Operator {
					return setLimit(must(t)(NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}, GenerateUpdateBefore: true})), 100)
				},
				width: 2, passes: passes[:], want: want[:],
			})
		})
	}
}

// TestTinyCacheMaterializer: rows (pk, v) over 5 000 sink keys; each key's
// list of alive rows goes through the backend between passes.
func TestTinyCacheMaterializer(t *testing.T) {
	var passes [3][]rec
	var want [3][]string
	for i := range tinyKeys {
		k := key(i)
		passes[0] = append(passes[0], ins(k, "a"), ins(k, "b"))
		want[0] = append(want[0], fmt.Sprintf("+I(%s, a)", k), fmt.Sprintf("+U(%s, b)", k))
		// The last row goes: back to a.
		passes[1] = append(passes[1], del(k, "b"))
		want[1] = append(want[1], fmt.Sprintf("+U(%s, a)", k))
		passes[2] = append(passes[2], del(k, "a"))
		want[2] = append(want[2], fmt.Sprintf("-D(%s, a)", k))
	}
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			runTiny(t, kind, tinyCase{
				build: func() exec.Operator {
					return setLimit(must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{0}})), 100)
				},
				width: 2, passes: passes[:], want: want[:],
			})
		})
	}
}

// TestTTLThroughTheCache keeps one key in the cache, so every other key
// lives in the backend between its rows: a key's TTL counts from its last
// write, not from when the cache wrote it back, and an expired key is not
// brought back by a reload. SUM(v), TTL 1 s.
func TestTTLThroughTheCache(t *testing.T) {
	build := func() exec.Operator {
		return setLimit(must(t)(NewGroupAggregate(GroupAggSpec{
			KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)),
			GenerateUpdateBefore: true, StateTTL: time.Second,
		})), 1)
	}
	script := []action{
		rows(ins("a", 1)), // t=1000: a written at 1000
		clock(1400),
		rows(ins("b", 1)), // b written at 1400; a evicted (written back at 1400, written 1000)
		clock(1900),
		rows(ins("a", 2)), // a alive (expires at 2000): 1 → 3, written 1900; b evicted
		clock(2300),
		rows(ins("b", 5)), // b alive (expires at 2400): 1 → 6, written 2300; a evicted
		clock(2900),
		rows(ins("a", 1)), // a expired at 2900 (written 1900, evicted at 2300): afresh
		clock(3299),
		rows(del("b", 1), del("b", 5)), // b alive until 3300: 6 → 5, then its group empties
		clock(3300),
		rows(ins("b", 1)), // b was deleted: afresh
		clock(5000),
		rows(del("a", 1), del("b", 1)), // both expired: ignored
	}
	want := []string{
		"+I(a, 1)",
		"+I(b, 1)",
		"-U(a, 1)", "+U(a, 3)",
		"-U(b, 1)", "+U(b, 6)",
		"+I(a, 1)",
		"-U(b, 6)", "+U(b, 5)", "-D(b, 5)",
		"+I(b, 1)",
	}
	checkRestores(t, build, 1000, 2, script, want)
}

// TestCacheBoundOnRocksDB checks that a rocksdb backend bounds the cache
// by its budget while hashmap does not, and that state beyond the bound is
// in the backend after a checkpoint.
func TestCacheBoundOnRocksDB(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			op := must(t)(NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}, Aggs: handle(t, false, call("SUM", 1))}))
			rt := &fakeRuntime{Now: 1}
			b := openOn(t, kind, 0, op, rt)
			g := op.(*groupAggregate)
			const keys = 50_000
			var recs []rec
			for i := range keys {
				recs = append(recs, ins(fmt.Sprintf("k%05d", i), i))
			}
			feedAll(t, op, &collector{}, 2, recs)
			switch kind {
			case image.Hashmap:
				if g.state.Limit() != 0 || g.state.Len() != keys {
					t.Errorf("hashmap: cache limit %d holding %d keys, want no limit and %d", g.state.Limit(), g.state.Len(), keys)
				}
			case image.RocksDB:
				// A quarter of the 4 MiB budget, at well over 100 bytes an entry.
				if g.state.Limit() <= 0 || g.state.Limit() > (4<<20)/4/100 || g.state.Len() > g.state.Limit() {
					t.Errorf("rocksdb: cache limit %d holding %d keys, want a limit below %d", g.state.Limit(), g.state.Len(), (4<<20)/4/100)
				}
			}
			if err := g.PrepareSnapshot(1); err != nil {
				t.Fatal(err)
			}
			got := storedResults(t, b, 1)
			if len(got) != keys || got["k00000"] != "0" || got["k49999"] != "49999" {
				t.Errorf("backend holds %d keys, k00000 = %q, k49999 = %q; want %d, 0, 49999", len(got), got["k00000"], got["k49999"], keys)
			}
		})
	}
}

// TestDirtyListStaysBounded: keys that come and go between checkpoints
// (ids released and handed out again) must not grow the list of entries
// to write back beyond a multiple of the keys cached.
func TestDirtyListStaysBounded(t *testing.T) {
	op := must(t)(NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1))}))
	rt := &fakeRuntime{Now: 1}
	open(t, op, rt)
	g := op.(*groupAggregate)
	for round := range 200 {
		var recs []rec
		for i := range 100 {
			recs = append(recs, ins(key(i), round))
		}
		for i := range 100 {
			recs = append(recs, del(key(i), round))
		}
		feedAll(t, op, &collector{}, 2, recs)
	}
	// 100 ids at most: the list is compacted once it exceeds 2×100+64.
	if n := g.state.Pending(); n > 2*100+64 {
		t.Errorf("dirty list of %d ids after 20 000 creations of 100 keys", n)
	}
}

// TestMiniBatchRowsNeedMiniBatch: a checkpoint taken with rows buffered in
// a mini-batch cannot be restored by an operator without mini-batch (the
// rows would be lost); with mini-batch the rows come back and are flushed
// at the end of input.
func TestMiniBatchRowsNeedMiniBatch(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			build := func(mb bool) exec.KeyedOperator {
				spec := GroupAggSpec{KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)), GenerateUpdateBefore: true}
				if mb {
					spec.MiniBatch = MiniBatch{Enabled: true, AllowLatency: time.Hour, Size: 100}
				}
				return must(t)(NewGroupAggregate(spec)).(exec.KeyedOperator)
			}
			k := optest.NewKeyed(t, kind)
			rt := &fakeRuntime{Now: 1000}
			k.Clock = func() int64 { return rt.Now }
			op := build(true)
			b := k.Open(t, op)
			if err := op.Open(rt.Context()); err != nil {
				t.Fatal(err)
			}
			var c collector
			feed(t, op, &c, 2, ins("a", 1), ins("b", 2), ins("a", 3))
			expect(t, "buffered", c.Take())
			snap := k.Snapshot(t, op, b, 1)

			without := build(false)
			k.Restore(t, without, snap)
			err := without.Open(rt.Context())
			if err == nil || !strings.Contains(err.Error(), "table.exec.mini-batch.enabled is false") {
				t.Fatalf("restoring buffered rows without mini-batch: %v, want an error naming table.exec.mini-batch.enabled", err)
			}

			with := build(true)
			k.Restore(t, with, snap)
			if err := with.Open(rt.Context()); err != nil {
				t.Fatal(err)
			}
			if err := with.Finish(&c); err != nil {
				t.Fatal(err)
			}
			expect(t, "restored bundle flushed at the end", c.Take(), "+I(a, 4)", "+I(b, 2)")
		})
	}
}

// TestRestoreLoadsLazilyOnRocksDB: a restored rocksdb backend is not read
// into the cache (keys come in as rows ask for them), a restored hashmap
// one is (its state is in memory anyway), and both continue the same way.
func TestRestoreLoadsLazilyOnRocksDB(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			build := func() exec.KeyedOperator {
				return must(t)(NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}, Aggs: handle(t, true, call("SUM", 1)), GenerateUpdateBefore: true})).(exec.KeyedOperator)
			}
			k := optest.NewKeyed(t, kind)
			rt := &fakeRuntime{Now: 1000}
			k.Clock = func() int64 { return rt.Now }
			op := build()
			b := k.Open(t, op)
			if err := op.Open(rt.Context()); err != nil {
				t.Fatal(err)
			}
			var c collector
			feed(t, op, &c, 2, ins("a", 1), ins("b", 2), ins("c", 3))
			c.Take()
			snap := k.Snapshot(t, op, b, 1)
			restored := build()
			k.Restore(t, restored, snap)
			if err := restored.Open(rt.Context()); err != nil {
				t.Fatal(err)
			}
			g := restored.(*groupAggregate)
			wantCached, wantComplete := 3, true
			if kind == image.RocksDB {
				wantCached, wantComplete = 0, false
			}
			if g.state.Len() != wantCached || g.state.Complete() != wantComplete {
				t.Errorf("after the restore: %d keys cached (complete %v), want %d (%v)", g.state.Len(), g.state.Complete(), wantCached, wantComplete)
			}
			feed(t, restored, &c, 2, ins("d", 4), ins("b", 5))
			expect(t, "after the restore", c.Take(), "+I(d, 4)", "-U(b, 2)", "+U(b, 7)")
		})
	}
}
