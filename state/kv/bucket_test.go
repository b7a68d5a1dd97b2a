package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The hashmap engine indexes a map state's entries per bucket with a
// sorted part and a pending (unsorted) tail merged by the next scan or
// delete. These tests drive one large bucket through inserts in random
// order, overwrites, deletes of pending and of merged entries and scans
// from both ends, against a model (a Go map, sorted when read), on every
// variant: the rocksdb ones check the model itself.

// bucketModel is the expected content of one map-state bucket.
type bucketModel map[int64]string

func (m bucketModel) ascending(from *int64) []int64 {
	var ks []int64
	for k := range m {
		if from == nil || k >= *from {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func (m bucketModel) descending(from *int64) []int64 {
	var ks []int64
	for k := range m {
		if from == nil || k <= *from {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	slices.Reverse(ks)
	return ks
}

// checkBucket compares every ordered read of sm (current key, namespace
// nil) with m; from is a bound of the partial scans.
func checkBucket(t *testing.T, sm *SortedMapState[int64, string], m bucketModel, from int64) {
	t.Helper()
	read := func(desc bool, from *int64) ([]int64, []string) {
		var ks []int64
		var vs []string
		fn := func(k int64, v string) bool { ks, vs = append(ks, k), append(vs, v); return true }
		var err error
		if desc {
			err = sm.Descend(nil, from, fn)
		} else {
			err = sm.Ascend(nil, from, fn)
		}
		if err != nil {
			t.Fatal(err)
		}
		return ks, vs
	}
	for _, c := range []struct {
		name string
		desc bool
		from *int64
		want []int64
	}{
		{"Ascend", false, nil, m.ascending(nil)},
		{"Descend", true, nil, m.descending(nil)},
		{fmt.Sprint("Ascend from ", from), false, &from, m.ascending(&from)},
		{fmt.Sprint("Descend from ", from), true, &from, m.descending(&from)},
	} {
		ks, vs := read(c.desc, c.from)
		if !slices.Equal(ks, c.want) {
			t.Fatalf("%s: %d keys %v…, want %d keys %v…", c.name, len(ks), ks[:min(8, len(ks))], len(c.want), c.want[:min(8, len(c.want))])
		}
		for i, k := range ks {
			if vs[i] != m[k] {
				t.Fatalf("%s: key %d has value %q, want %q", c.name, k, vs[i], m[k])
			}
		}
	}
}

func TestBucketRandomOrder(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		sm, err := NewSortedMapState(b, "m", Int64{}, String{}, Options{})
		must(t, err)
		// A second key's bucket, interleaved, must stay apart.
		other, err := NewSortedMapState(b, "o", Int64{}, String{}, Options{})
		must(t, err)
		rng := rand.New(rand.NewPCG(1, 2))
		m := bucketModel{}
		for round := range 20 {
			// A burst of inserts in random order (pending), some of them
			// overwrites of keys already present (no second index slot).
			for i := range 500 {
				k := rng.Int64N(20000) - 10000
				val := fmt.Sprint("r", round, "-", i)
				setKey(t, b, "big")
				must(t, sm.Put(nil, k, val))
				m[k] = val
				setKey(t, b, "other")
				must(t, other.Put(nil, k, "o"))
			}
			setKey(t, b, "big")
			// Deletes right after the burst hit pending entries; a
			// delete of an absent key changes nothing.
			if round%2 == 1 {
				for range 100 {
					k := rng.Int64N(20000) - 10000
					must(t, sm.Delete(nil, k))
					delete(m, k)
				}
			}
			checkBucket(t, sm, m, rng.Int64N(20000)-10000)
			// Deletes after the scan hit merged entries.
			for range 50 {
				k := rng.Int64N(20000) - 10000
				must(t, sm.Delete(nil, k))
				delete(m, k)
			}
		}
		checkBucket(t, sm, m, 0)
		must(t, sm.Clear(nil))
		if empty, err := sm.IsEmpty(nil); err != nil || !empty {
			t.Fatalf("IsEmpty after Clear = %v, %v", empty, err)
		}
		// The emptied bucket (possibly reused) takes new entries.
		m = bucketModel{3: "c", 1: "a", 2: "b"}
		for _, k := range []int64{3, 1, 2} {
			must(t, sm.Put(nil, k, m[k]))
		}
		checkBucket(t, sm, m, 2)
		setKey(t, b, "other")
		n := 0
		must(t, other.Ascend(nil, nil, func(int64, string) bool { n++; return true }))
		if n == 0 || n > 20*500 {
			t.Fatalf("the other bucket has %d entries", n)
		}
	})
}

// TestBucketDescendingInserts: keys arriving in descending order, each
// insert followed by a read of the first entry (the worst case for a
// pending tail: every read merges one entry at the front).
func TestBucketDescendingInserts(t *testing.T) {
	b := openVariant(t, variant{name: "hashmap", kind: "hashmap"}, &fakeClock{})
	sm, err := NewSortedMapState(b, "m", Int64{}, String{}, Options{})
	must(t, err)
	setKey(t, b, "k")
	m := bucketModel{}
	for k := int64(1000); k > 0; k-- {
		must(t, sm.Put(nil, k, fmt.Sprint(k)))
		m[k] = fmt.Sprint(k)
		if k%3 == 0 {
			first, _, ok, err := sm.First(nil)
			if err != nil || !ok || first != k {
				t.Fatalf("First after inserting %d = %d, %v, %v", k, first, ok, err)
			}
		}
	}
	checkBucket(t, sm, m, 500)
	// Ascending appends after that stay in order without a merge.
	for k := int64(2000); k < 2100; k++ {
		must(t, sm.Put(nil, k, "up"))
		m[k] = "up"
	}
	checkBucket(t, sm, m, 2050)
}

// TestBucketSnapshotWhilePending: a snapshot taken while a bucket has
// pending entries holds them all, restores in key order, and its image
// file is byte for byte the one of a backend that received the same
// entries in ascending order (the image does not depend on the index).
func TestBucketSnapshotWhilePending(t *testing.T) {
	v := variant{name: "hashmap", kind: "hashmap"}
	clk := &fakeClock{}
	fill := func(keys []int64) (*Backend, *SortedMapState[int64, string]) {
		b := openVariant(t, v, clk)
		sm, err := NewSortedMapState(b, "m", Int64{}, String{}, Options{})
		must(t, err)
		setKey(t, b, "k")
		for _, k := range keys {
			must(t, sm.Put(nil, k, fmt.Sprint("v", k)))
		}
		return b, sm
	}
	rng := rand.New(rand.NewPCG(3, 4))
	shuffled := rng.Perm(3000)
	keys := make([]int64, len(shuffled))
	m := bucketModel{}
	for i, k := range shuffled {
		keys[i] = int64(k)
		m[int64(k)] = fmt.Sprint("v", k)
	}
	random, rsm := fill(keys[:1500])
	// Half merged by a scan, half pending at the snapshot.
	checkBucket(t, rsm, bucketModel(func() bucketModel {
		h := bucketModel{}
		for _, k := range keys[:1500] {
			h[k] = m[k]
		}
		return h
	}()), 700)
	for _, k := range keys[1500:] {
		must(t, rsm.Put(nil, k, fmt.Sprint("v", k)))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	ascending, _ := fill(sorted)

	restored, im := snapshotAndRestore(t, random, v, clk, 1)
	_, imAsc := snapshotAndRestore(t, ascending, v, clk, 1)
	got, err := os.ReadFile(filepath.Join(im.Dir, im.Files[0].LocalName))
	must(t, err)
	want, err := os.ReadFile(filepath.Join(imAsc.Dir, imAsc.Files[0].LocalName))
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf("image of the pending bucket (%d bytes) differs from the ascending one's (%d bytes)", len(got), len(want))
	}
	// The live backend still reads its pending entries in order after the
	// snapshot, and so does the restored one.
	checkBucket(t, rsm, m, 1234)
	rs, err := NewSortedMapState(restored, "m", Int64{}, String{}, Options{})
	must(t, err)
	setKey(t, restored, "k")
	checkBucket(t, rs, m, 2999)
	// Writes after the snapshot to the live backend: pending again, then
	// deleted before any scan.
	for k := int64(5000); k > 4000; k-- {
		must(t, rsm.Put(nil, k, "late"))
	}
	for k := int64(4001); k <= 5000; k += 2 {
		must(t, rsm.Delete(nil, k))
	}
	for k := int64(4002); k <= 5000; k += 2 {
		m[k] = "late"
	}
	checkBucket(t, rsm, m, 4500)
}

// TestBucketStringKeys: user keys of every length around the 8 bytes the
// merge sorts by first, sharing long prefixes, with zero bytes (so that
// "a" and "a\x00" have the same zero-padded head), the empty key, in a
// shuffled order; inserted in two bursts with a scan in between (a merge
// into a sorted part), then read back in byte order.
func TestBucketStringKeys(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		sm, err := NewSortedMapState(b, "s", String{}, Int64{}, Options{})
		must(t, err)
		setKey(t, b, "k")
		var keys []string
		for _, stem := range []string{"", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefgh\x00", "\x00", "\x00\x00", "a\x00", "zzzzzzzzzzzz"} {
			keys = append(keys, stem, stem+"\x00", stem+"x", stem+"\xff", stem+"abcdefgh1", stem+"abcdefgh0")
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		want := slices.Clone(keys)
		rng := rand.New(rand.NewPCG(5, 6))
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		read := func() []string {
			var got []string
			must(t, sm.Ascend(nil, nil, func(k string, _ int64) bool { got = append(got, k); return true }))
			return got
		}
		half := len(keys) / 2
		for i, k := range keys[:half] {
			must(t, sm.Put(nil, k, int64(i)))
		}
		first := slices.Clone(keys[:half])
		slices.Sort(first)
		if got := read(); !slices.Equal(got, first) {
			t.Fatalf("first burst read %q, want %q", got, first)
		}
		for i, k := range keys[half:] {
			must(t, sm.Put(nil, k, int64(half+i)))
		}
		if got := read(); !slices.Equal(got, want) {
			t.Fatalf("read %q, want %q", got, want)
		}
		from := "abcdefgh"
		var got []string
		must(t, sm.Descend(nil, &from, func(k string, _ int64) bool { got = append(got, k); return true }))
		var wantDesc []string
		for i := len(want) - 1; i >= 0; i-- {
			if want[i] <= from {
				wantDesc = append(wantDesc, want[i])
			}
		}
		if !slices.Equal(got, wantDesc) {
			t.Fatalf("Descend from %q read %q, want %q", from, got, wantDesc)
		}
	})
}
