package kv

import (
	"slices"
	"testing"
)

// TestReusedIteratorSeesLaterWrites: the rocksdb engine keeps one Pebble
// iterator across bucket scans. A scan after writes must see them: writes
// still in the cache or the batch (the kept iterator is refreshed), and
// writes committed to the DB (the iterator, whose view of the DB is fixed,
// is replaced).
func TestReusedIteratorSeesLaterWrites(t *testing.T) {
	b := openVariant(t, variant{name: "rocksdb", kind: "rocksdb"}, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	e.knobs.noWholeBuckets = true // scans of cached buckets would not read Pebble
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	scan := func(key string) []int64 {
		t.Helper()
		setKey(t, b, key)
		var got []int64
		must(t, ms.Iterate(nil, func(uk, v int64) bool {
			got = append(got, uk, v)
			return true
		}))
		return got
	}
	check := func(step, key string, want ...int64) {
		t.Helper()
		if got := scan(key); !slices.Equal(got, want) {
			t.Fatalf("%s: scan of %s found %v, want %v", step, key, got, want)
		}
	}

	setKey(t, b, "a")
	must(t, ms.Put(nil, 1, 10))
	check("first scan", "a", 1, 10)
	kept := e.it
	if kept == nil {
		t.Fatal("no iterator kept after a scan")
	}

	// Written after the iterator was made, reaching only the batch.
	setKey(t, b, "a")
	must(t, ms.Put(nil, 2, 20))
	must(t, ms.Put(nil, 1, 11))
	check("after batch writes", "a", 1, 11, 2, 20)
	check("other key", "b")
	if e.it != kept {
		t.Fatal("the iterator was not reused between scans without a commit")
	}

	// A scan stopped early leaves the iterator positioned mid-bucket; the
	// next scan of another bucket starts at that bucket.
	setKey(t, b, "b")
	must(t, ms.Put(nil, 5, 50))
	setKey(t, b, "a")
	n := 0
	must(t, ms.Iterate(nil, func(int64, int64) bool { n++; return false }))
	if n != 1 {
		t.Fatalf("stopped scan visited %d entries, want 1", n)
	}
	check("after a stopped scan", "b", 5, 50)

	// Committed to the DB: the kept iterator would not see these.
	must(t, e.commit())
	if e.it != nil {
		t.Fatal("the iterator survived a commit")
	}
	check("after commit", "a", 1, 11, 2, 20)
	setKey(t, b, "a")
	must(t, ms.Delete(nil, 1))
	must(t, ms.Put(nil, 3, 30))
	must(t, e.flush(false))
	must(t, e.commit())
	check("after delete and put committed", "a", 2, 20, 3, 30)
	check("other key after commit", "b", 5, 50)

	// A snapshot with nothing to commit still lets the iterator go (it
	// would keep the memtable the checkpoint flushes), and a write after
	// the snapshot is seen.
	if e.it == nil {
		t.Fatal("no iterator kept after a scan")
	}
	im, err := b.Snapshot(1)
	must(t, err)
	must(t, im.Finish())
	if e.it != nil {
		t.Fatal("the iterator survived a snapshot")
	}
	setKey(t, b, "a")
	must(t, ms.Put(nil, 4, 40))
	check("after snapshot", "a", 2, 20, 3, 30, 4, 40)
}

// TestKeptIteratorNestedScan: a scan started from another scan's callback
// gets an iterator of its own, and the outer scan reads all of its range.
func TestKeptIteratorNestedScan(t *testing.T) {
	b := openVariant(t, variant{name: "rocksdb", kind: "rocksdb"}, &fakeClock{})
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

	var outer, inner []int64
	setKey(t, b, "a")
	must(t, ms.Iterate(nil, func(uk, v int64) bool {
		outer = append(outer, uk, v)
		if uk == 1 {
			setKey(t, b, "b")
			must(t, other.Iterate(nil, func(uk, v int64) bool {
				inner = append(inner, uk, v)
				return true
			}))
		}
		return true
	}))
	if want := []int64{1, 10, 2, 20, 3, 30}; !slices.Equal(outer, want) {
		t.Errorf("outer scan of a found %v, want %v", outer, want)
	}
	if want := []int64{7, 70}; !slices.Equal(inner, want) {
		t.Errorf("nested scan of b found %v, want %v", inner, want)
	}
}
