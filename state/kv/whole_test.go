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

// TestWholePresentCountBound: a join's retraction and re-insertion of a
// row (delete, put) in a bucket of two keeps the count of present entries exact, so a bucket
// that grows past maxWholeEntries is no longer whole.
func TestWholePresentCountBound(t *testing.T) {
	b := openVariant(t, variant{kind: "rocksdb"}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	setKey(t, b, "a")
	must(t, ms.Put(nil, 0, 0))
	must(t, ms.Put(nil, 1, 10))
	must(t, ms.Iterate(nil, func(int64, int64) bool { return true }))
	bucket, _ := b.bucket(ms.sid, nil)
	w := e.whole[string(bucket)]
	if w == nil {
		t.Fatal("not whole")
	}
	for i := 0; i < 40; i++ { // a join's retract + insert of one row
		must(t, ms.Delete(nil, 1))
		must(t, ms.Put(nil, 1, 10))
	}
	if w.present != 2 || e.whole[string(bucket)] != w {
		t.Fatalf("present = %d after 40 deletes and puts of one of two entries, want 2", w.present)
	}
	for i := int64(2); i < 60; i++ {
		must(t, ms.Put(nil, i, i))
	}
	n := 0
	for _, s := range w.slots {
		if e.ents[s].flags&fPresent != 0 {
			n++
		}
	}
	if e.whole[string(bucket)] != nil && n > maxWholeEntries {
		t.Errorf("bucket still whole with %d present entries (present=%d, bound %d)", n, w.present, maxWholeEntries)
	}
}

// TestCommitHeldDuringScan: a scan callback whose writes or reads fill
// the batch (a read evicts dirty entries) does not commit it under the
// scan's iterator: the scan sees all of its bucket, and is not taken for
// the whole bucket if it did not.
func TestCommitHeldDuringScan(t *testing.T) {
	b := openVariant(t, variant{kind: "rocksdb", cache: 4 << 10}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	vs, err := NewValueState(b, "v", Int64{}, Options{})
	must(t, err)
	setKey(t, b, "a")
	for i := int64(1); i <= 3; i++ {
		must(t, ms.Put(nil, i, 10*i))
	}
	im, err := b.Snapshot(1)
	must(t, err)
	must(t, im.Finish())
	defer im.Discard()
	var got []int64
	var perr any
	func() {
		defer func() { perr = recover() }()
		setKey(t, b, "a")
		err = ms.Iterate(nil, func(uk, v int64) bool {
			got = append(got, uk)
			if uk == 1 {
				e.batchLimit = 1 // as if the batch were full
				for i := 0; i < 40; i++ {
					setKey(t, b, fmt.Sprint("d", i))
					must(t, vs.Put(nil, int64(i))) // a write ...
				}
				for i := 0; i < 40; i++ {
					setKey(t, b, fmt.Sprint("r", i))
					if _, _, err := vs.Get(nil); err != nil { // ... or only reads
						t.Fatal(err)
					}
				}
				setKey(t, b, "a")
			}
			return true
		})
	}()
	if perr != nil || err != nil || !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("outer scan got %v err=%v panic=%v", got, err, perr)
	}
}

// TestCommitHeldDuringScanReadsOnly: the same with reads only, which do
// not count as writes: a scan cut short by a commit would have been
// recorded as the whole bucket.
func TestCommitHeldDuringScanReadsOnly(t *testing.T) {
	b := openVariant(t, variant{kind: "rocksdb", cache: 4 << 10}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	vs, err := NewValueState(b, "v", Int64{}, Options{})
	must(t, err)
	setKey(t, b, "a")
	for i := int64(1); i <= 3; i++ {
		must(t, ms.Put(nil, i, 10*i))
	}
	im, err := b.Snapshot(1)
	must(t, err)
	must(t, im.Finish())
	defer im.Discard()
	// Dirty value-state entries the callback's reads will evict.
	for i := 0; i < 30; i++ {
		setKey(t, b, fmt.Sprint("d", i))
		must(t, vs.Put(nil, int64(i)))
	}
	setKey(t, b, "a")
	var got []int64
	var perr any
	func() {
		defer func() { perr = recover() }()
		err = ms.Iterate(nil, func(uk, v int64) bool {
			got = append(got, uk)
			if uk == 1 {
				e.batchLimit = 1
				for i := 0; i < 40; i++ {
					setKey(t, b, fmt.Sprint("r", i))
					if _, _, err := vs.Get(nil); err != nil {
						t.Fatal(err)
					}
				}
				setKey(t, b, "a")
			}
			return true
		})
	}()
	if perr != nil || err != nil || !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("scan got %v err=%v panic=%v", got, err, perr)
	}
	e.batchLimit = 1 << 20
	setKey(t, b, "a")
	v, ok, gerr := ms.Get(nil, 2)
	if !ok || v != 20 || gerr != nil {
		t.Errorf("Get(2) lost after a truncated scan was made whole")
	}
}

// checkWhole checks the whole-bucket invariant (whole.go) and the cache's
// byte count from scratch.
func checkWhole(t *testing.T, e *pebbleEngine, step int) {
	t.Helper()
	var bytes int64
	for _, c := range e.ents {
		if c.flags&fUsed != 0 {
			bytes += int64(cap(c.buf)) + cacheEntryOverhead
		}
	}
	listed := map[uint32]bool{}
	for b, w := range e.whole {
		present := 0
		for _, s := range w.slots {
			if e.ents[s].flags&fPresent != 0 {
				present++
			}
		}
		if present != w.present || present == 0 {
			t.Fatalf("step %d: record %x counts %d present entries, lists %d", step, b, w.present, present)
		}
		bytes += int64(len(b)) + wholeOverhead + 4*int64(cap(w.slots))
		for _, s := range w.slots {
			c := &e.ents[s]
			if c.flags&fListed == 0 || listed[s] || string(mapBucket(c.key())) != b {
				t.Fatalf("step %d: slot %d in record %x: flags %b dup %v", step, s, b, c.flags, listed[s])
			}
			listed[s] = true
		}
	}
	for s, c := range e.ents {
		if c.flags&fListed != 0 && !listed[uint32(s)] {
			t.Fatalf("step %d: slot %d fListed but in no record", step, s)
		}
		if c.flags&(fUsed|fPresent) == fUsed|fPresent && c.flags&fListed == 0 {
			if w, _ := e.wholeOf(c.key()); w != nil {
				t.Fatalf("step %d: present entry %x of a whole bucket not listed", step, c.key())
			}
		}
	}
	if bytes != e.bytes {
		t.Fatalf("step %d: e.bytes %d, recomputed %d", step, e.bytes, bytes)
	}
	// No key of a whole bucket has a value in the batch or DB that is not cached.
	for b := range e.whole {
		hi := prefixEnd(nil, []byte(b))
		it, err := e.batch.NewIter(nil)
		must(t, err)
		it.SetBounds([]byte(b), hi)
		for ok := it.First(); ok; ok = it.Next() {
			if _, cached := e.index[string(it.Key())]; !cached {
				t.Fatalf("step %d: key %x of whole bucket in Pebble, not cached", step, it.Key())
			}
		}
		it.Close()
	}
}

// TestWholeInvariantRandom drives sorted map states (scans ascending and
// descending, from bounds, nested scans and writes from callbacks, clears,
// evictions, snapshots) and checks the invariant after every step.
func TestWholeInvariantRandom(t *testing.T) {
	for _, cache := range []int64{0, 8 << 10, 3 << 10} {
		for seed := range uint64(2) {
			t.Run(fmt.Sprint(cache, "/", seed), func(t *testing.T) { runWholeInvariant(t, cache, seed) })
		}
	}
}

func runWholeInvariant(t *testing.T, cache int64, seed uint64) {
	rngs := rand.New(rand.NewPCG(seed, 11))
	b := openVariant(t, variant{kind: "rocksdb", cache: cache}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewSortedMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	vs, err := NewValueState(b, "v", Int64{}, Options{})
	must(t, err)
	ms2, err := NewSortedMapState(b, "rows2", Int64{}, Int64{}, Options{})
	must(t, err)
	model := map[string]map[int64]int64{}
	id := int64(0)
	for step := 0; step < 1500; step++ {
		key := fmt.Sprint("k", rngs.IntN(12))
		setKey(t, b, key)
		rows := model[key]
		if rows == nil {
			rows = map[int64]int64{}
			model[key] = rows
		}
		uk := int64(rngs.IntN(6))
		if rngs.IntN(30) == 0 {
			uk = int64(rngs.IntN(80))
		}
		switch op := rngs.IntN(100); {
		case op < 30:
			var from *int64
			if rngs.IntN(3) == 0 {
				f := int64(rngs.IntN(8))
				from = &f
			}
			rev := rngs.IntN(3) == 0
			var got []int64
			nest := rngs.IntN(5) == 0
			fn := func(k, v int64) bool {
				got = append(got, k)
				if v != rows[k] {
					t.Fatalf("step %d: %s[%d]=%d want %d", step, key, k, v, rows[k])
				}
				if nest {
					nest = false
					other := fmt.Sprint("k", rngs.IntN(12))
					setKey(t, b, other)
					must(t, ms2.Ascend(nil, nil, func(int64, int64) bool { return true }))
					_, _, _ = vs.Get(nil)
					if rngs.IntN(2) == 0 {
						must(t, ms.Put(nil, 200, 1))
						model[other] = ensure(model[other])
						model[other][200] = 1
					}
					setKey(t, b, key)
				}
				return true
			}
			if rev {
				must(t, ms.Descend(nil, from, fn))
			} else {
				must(t, ms.Ascend(nil, from, fn))
			}
			var want []int64
			for k := range rows {
				if from == nil || (!rev && k >= *from) || (rev && k <= *from) {
					want = append(want, k)
				}
			}
			slices.Sort(want)
			if rev {
				slices.Reverse(want)
			}
			got = slices.DeleteFunc(got, func(k int64) bool { return k == 200 })
			want = slices.DeleteFunc(want, func(k int64) bool { return k == 200 })
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: scan %s from %v rev %v = %v want %v", step, key, from, rev, got, want)
			}
		case op < 55:
			must(t, ms.Put(nil, uk, int64(step)))
			rows[uk] = int64(step)
		case op < 70:
			must(t, ms.Delete(nil, uk))
			delete(rows, uk)
		case op < 80:
			v, ok, err := ms.Get(nil, uk)
			must(t, err)
			if w, wok := rows[uk]; ok != wok || v != w {
				t.Fatalf("step %d: Get %s %d = %d %v want %d %v", step, key, uk, v, ok, w, wok)
			}
		case op < 90:
			must(t, vs.Put(nil, int64(step)))
		case op < 93:
			must(t, ms.Clear(nil))
			clear(rows)
		case op < 96:
			for i := 0; i < 20; i++ {
				if len(e.index) > 0 {
					must(t, e.evict())
				}
			}
		default:
			id++
			im, err := b.Snapshot(id)
			must(t, err)
			must(t, im.Finish())
			im.Discard()
		}
		checkWhole(t, e, step)
	}
}

func ensure(m map[int64]int64) map[int64]int64 {
	if m == nil {
		return map[int64]int64{}
	}
	return m
}

// TestWholeNestedScanKeepsBuckets: a scan started from another's callback
// rewrites the buffer the outer scan's bucket was built in; the outer scan
// still records its own bucket.
func TestWholeNestedScanKeepsBuckets(t *testing.T) {
	b := openVariant(t, variant{name: "rocksdb", kind: "rocksdb"}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	other, err := NewMapState(b, "other", Int64{}, Int64{}, Options{})
	must(t, err)
	setKey(t, b, "a")
	for i := int64(1); i <= 3; i++ {
		must(t, ms.Put(nil, i, 10*i))
	}
	setKey(t, b, "b")
	must(t, other.Put(nil, 7, 70))

	setKey(t, b, "a")
	must(t, ms.Iterate(nil, func(uk, v int64) bool {
		if uk == 1 {
			setKey(t, b, "b")
			must(t, other.Iterate(nil, func(uk, v int64) bool { return true }))
		}
		return true
	}))
	setKey(t, b, "b")
	var inner []int64
	must(t, other.Iterate(nil, func(uk, v int64) bool { inner = append(inner, uk, v); return true }))
	_, ok, _ := other.Get(nil, 7)
	if !slices.Equal(inner, []int64{7, 70}) || !ok {
		t.Errorf("after a nested scan, other(b) scans as %v (want [7 70]), Get(7) ok=%v", inner, ok)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("evict panicked: %v", r)
			}
		}()
		for len(e.index) > 0 {
			must(t, e.evict())
		}
	}()
}

// TestWholeRecordsBounded: probing many keys that have no entries (a join
// whose keys match once) makes no records, and a bucket whose entries are
// all deleted loses its record, so records never outlive the cached
// entries that bound them.
func TestWholeRecordsBounded(t *testing.T) {
	b := openVariant(t, variant{kind: "rocksdb"}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	for i := range 1000 {
		setKey(t, b, fmt.Sprint("probe", i))
		must(t, ms.Iterate(nil, func(int64, int64) bool { return true }))
	}
	if len(e.whole) != 0 {
		t.Fatalf("%d records after scanning 1000 empty buckets", len(e.whole))
	}
	setKey(t, b, "a")
	must(t, ms.Put(nil, 1, 10))
	must(t, ms.Put(nil, 2, 20))
	must(t, ms.Iterate(nil, func(int64, int64) bool { return true }))
	if len(e.whole) != 1 {
		t.Fatalf("%d records after scanning a 2-entry bucket, want 1", len(e.whole))
	}
	must(t, ms.Delete(nil, 1))
	must(t, ms.Delete(nil, 2))
	if len(e.whole) != 0 {
		t.Fatalf("the record of a bucket whose entries were all deleted stayed")
	}
	var got []int64
	must(t, ms.Iterate(nil, func(uk, _ int64) bool { got = append(got, uk); return true }))
	if len(got) != 0 {
		t.Fatalf("scan after deleting every entry = %v", got)
	}
}
