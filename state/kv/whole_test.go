package kv

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestWholeBucketsAgainstModel drives random map-state operations on small
// buckets, the join's pattern (scan a key's bucket, add to it, delete from
// it, read single entries), on rocksdb with caches from roomy to tiny, and
// checks every read against a plain map. Scans of whole buckets are served
// by the cache; evictions, growth past maxWholeEntries, writes from a
// scan's callback, snapshots and restores must all leave reads exact.
func TestWholeBucketsAgainstModel(t *testing.T) {
	for _, cache := range []int64{0, 16 << 10, 2 << 10} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("cache%d/seed%d", cache, seed), func(t *testing.T) {
				runWholeModel(t, cache, seed)
			})
		}
	}
}

func runWholeModel(t *testing.T, cache int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	clk := &fakeClock{}
	v := variant{kind: "rocksdb", cache: cache}
	b, err := Open(v.config(filepath.Join(t.TempDir(), "be"), clk))
	must(t, err)
	defer func() { b.Close() }()
	declare := func() *MapState[int64, int64] {
		ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
		must(t, err)
		return ms
	}
	ms := declare()
	model := map[string]map[int64]int64{}
	const keys, steps = 60, 8000
	wholeScans := 0
	for step := range steps {
		key := fmt.Sprint("k", rng.IntN(keys))
		setKey(t, b, key)
		rows := model[key]
		if rows == nil {
			rows = map[int64]int64{}
			model[key] = rows
		}
		// Buckets mostly small, some growing past maxWholeEntries.
		uk := int64(rng.IntN(8))
		if rng.IntN(60) == 0 {
			uk = int64(rng.IntN(3 * maxWholeEntries))
		}
		switch op := rng.IntN(100); {
		case op < 35:
			e := b.eng.(*pebbleEngine)
			bucket, err := b.bucket(ms.sid, nil)
			must(t, err)
			if e.whole[string(bucket)] != nil {
				wholeScans++
			}
			got := map[int64]int64{}
			var order []int64
			// Now and then the callback writes to the bucket it scans, as
			// an outer join counting matches does.
			writeAt, wrote := int64(-1), false
			if rng.IntN(6) == 0 {
				writeAt = int64(rng.IntN(8))
			}
			want := maps.Clone(rows)
			must(t, ms.Iterate(nil, func(k, v int64) bool {
				got[k] = v
				order = append(order, k)
				if k == writeAt {
					must(t, ms.Put(nil, k+100, v+1))
					rows[k+100] = v + 1
					wrote = true
				}
				return true
			}))
			if !slices.IsSorted(order) {
				t.Fatalf("step %d: scan of %s out of order: %v", step, key, order)
			}
			if wrote {
				// Written during the scan: seen or not.
				delete(got, writeAt+100)
				delete(want, writeAt+100)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("step %d: scan of %s = %v, want %v", step, key, got, want)
			}
		case op < 65:
			val := int64(step)
			must(t, ms.Put(nil, uk, val))
			rows[uk] = val
		case op < 80:
			must(t, ms.Delete(nil, uk))
			delete(rows, uk)
		case op < 99 || rng.IntN(3) > 0:
			got, ok, err := ms.Get(nil, uk)
			must(t, err)
			want, wok := rows[uk]
			if ok != wok || got != want {
				t.Fatalf("step %d: Get(%s, %d) = %d %v, want %d %v", step, key, uk, got, ok, want, wok)
			}
		default:
			im, err := b.Snapshot(int64(step + 1))
			must(t, err)
			must(t, im.Finish())
			if rng.IntN(3) == 0 {
				must(t, b.Close())
				dir := filepath.Join(t.TempDir(), "restored")
				mustMkdir(t, dir)
				for _, f := range im.Files {
					copyFile(t, filepath.Join(im.Dir, f.LocalName), filepath.Join(dir, f.LocalName))
				}
				b, err = Restore(v.config(dir, clk), im.Files)
				must(t, err)
				ms = declare()
			}
		}
	}
	if wholeScans == 0 {
		t.Fatalf("no scan was served by a whole bucket")
	}
	t.Logf("%d scans of whole buckets", wholeScans)
}

// TestWholeBucketReadsNoPebble: once a bucket was scanned, further scans
// and reads of keys it lacks do not touch Pebble, and an eviction of one
// of its entries sends the next scan back to Pebble, which still finds
// every entry.
func TestWholeBucketReadsNoPebble(t *testing.T) {
	b := openVariant(t, variant{kind: "rocksdb"}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	setKey(t, b, "a")
	must(t, ms.Put(nil, 2, 20))
	must(t, ms.Put(nil, 1, 10))
	im, err := b.Snapshot(1) // into SSTs; the entries stay cached, clean
	must(t, err)
	must(t, im.Finish())
	defer im.Discard()

	scan := func() []int64 {
		var got []int64
		must(t, ms.Iterate(nil, func(uk, v int64) bool { got = append(got, uk, v); return true }))
		return got
	}
	if got := scan(); !slices.Equal(got, []int64{1, 10, 2, 20}) {
		t.Fatalf("first scan = %v", got)
	}
	bucket, err := b.bucket(ms.sid, nil)
	must(t, err)
	if e.whole[string(bucket)] == nil {
		t.Fatal("a complete scan of a 2-entry bucket did not make it whole")
	}
	must(t, e.dropIter())
	must(t, ms.Put(nil, 0, 5)) // listed: the bucket stays whole
	if got := scan(); !slices.Equal(got, []int64{0, 5, 1, 10, 2, 20}) {
		t.Fatalf("scan after a put = %v", got)
	}
	if _, ok, err := ms.Get(nil, 9); err != nil || ok {
		t.Fatalf("Get of an absent key = %v %v", ok, err)
	}
	if e.it != nil {
		t.Fatal("a scan or read of a whole bucket made a Pebble iterator")
	}

	// Evict everything: the record goes with its entries.
	for len(e.index) > 0 {
		must(t, e.evict())
	}
	if len(e.whole) != 0 {
		t.Fatalf("%d records left after evicting every entry", len(e.whole))
	}
	if got := scan(); !slices.Equal(got, []int64{0, 5, 1, 10, 2, 20}) {
		t.Fatalf("scan after eviction = %v", got)
	}
	if e.it == nil {
		t.Fatal("the scan after eviction did not read Pebble")
	}
}
