package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestBucketSplit: the prefix of a map-state key is its bucket, worked out
// from the layout in doc.go; every other key is all prefix.
func TestBucketSplit(t *testing.T) {
	for _, c := range []struct {
		name string
		key  []byte
		want int
	}{
		// kg 5, map state 1, key "ab", empty namespace, user key 07 08.
		{"map entry", []byte{0x00, 0x05, 0x80, 0x01, 0x02, 'a', 'b', 0x00, 0x07, 0x08}, 8},
		{"map bucket alone", []byte{0x00, 0x05, 0x80, 0x01, 0x02, 'a', 'b', 0x00}, 8},
		// Namespace "w1" and an empty user key.
		{"map entry with namespace", []byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k', 0x02, 'w', '1'}, 9},
		{"value state", []byte{0x00, 0x05, 0x00, 0x01, 0x02, 'a', 'b', 0x00}, 8},
		{"registry", []byte{0xFF, 0xFF, 'R', 'r', 'o', 'w', 's'}, 7},
		// A separator Pebble may cut inside the key: 5 bytes announced, 1 there.
		{"truncated key", []byte{0x00, 0x05, 0x80, 0x01, 0x05, 'a'}, 6},
		{"truncated namespace length", []byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k'}, 6},
		{"state id only", []byte{0x00, 0x05, 0x80, 0x01}, 4},
		// A 2-byte uvarint length: 0x81 0x01 = 129.
		{"long key", append(append([]byte{0x00, 0x05, 0x80, 0x01, 0x81, 0x01}, bytes.Repeat([]byte{'x'}, 129)...), 0x00, 0x09), 6 + 129 + 1},
	} {
		if got := bucketSplit(c.key); got != c.want {
			t.Errorf("%s: bucketSplit(%x) = %d, want %d", c.name, c.key, got, c.want)
		}
	}
	// The smallest prefix after a bucket is its prefix end; after a key
	// that only starts one (key "k", no namespace length yet) it is the
	// key with an empty namespace, 0x00 appended.
	c := newBucketComparer()
	for _, s := range []struct{ a, want []byte }{
		{[]byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k', 0x00}, []byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k', 0x01}},
		{[]byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k'}, []byte{0x00, 0x05, 0x80, 0x01, 0x01, 'k', 0x00}},
		{[]byte{0x00, 0x05, 0x00, 0x01, 0x01, 'k', 0x00}, []byte{0x00, 0x05, 0x00, 0x01, 0x01, 'k', 0x00, 0x00}},
	} {
		if got := c.ImmediateSuccessor(nil, s.a); !bytes.Equal(got, s.want) {
			t.Errorf("ImmediateSuccessor(%x) = %x, want %x", s.a, got, s.want)
		}
	}
}

// TestBucketComparerIsConsistent checks what Pebble requires of a Split
// (pebble's base.Comparer docs) on generated stored keys, the separators
// and successors Pebble derives from them, and truncations: the bytewise
// order equals "prefix bytewise, then suffix bytewise"; a bare prefix
// sorts before its keys; ImmediateSuccessor of a prefix is a prefix after
// every key that has it.
func TestBucketComparerIsConsistent(t *testing.T) {
	c := newBucketComparer()
	rng := rand.New(rand.NewPCG(1, 2))
	// Bytes around the uvarint and 0xFF boundaries.
	alphabet := []byte{0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF}
	field := func(max int) []byte {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return b
	}
	var keys [][]byte
	for range 300 {
		kg := byte(rng.IntN(3))
		sid := []byte{0x00, 0x80}[rng.IntN(2)]
		k := []byte{0x00, kg, sid, byte(rng.IntN(2))}
		k = appendUvarintBytes(k, field(3))
		k = appendUvarintBytes(k, field(2))
		if sid == 0x80 {
			k = append(k, field(4)...)
		}
		keys = append(keys, k)
	}
	keys = append(keys, []byte{0xFF, 0xFF, 'R', 'a'}, []byte{0xFF, 0xFF, 'R', 'a', 'b'})
	n := len(keys)
	for i := range n {
		a, b := keys[i], keys[rng.IntN(n)]
		if bytes.Compare(a, b) < 0 {
			keys = append(keys, c.Separator(nil, a, b))
		}
		keys = append(keys, c.Successor(nil, a), a[:rng.IntN(len(a)+1)])
	}
	keys = slices.DeleteFunc(keys, func(k []byte) bool { return len(k) == 0 })

	sign := func(x int) int { return min(max(x, -1), 1) }
	for _, a := range keys {
		pa := a[:c.Split(a)]
		if len(pa) < len(a) && bytes.Compare(pa, a) >= 0 {
			t.Fatalf("prefix %x does not sort before its key %x", pa, a)
		}
		for _, b := range keys {
			pb := b[:c.Split(b)]
			want := bytes.Compare(pa, pb)
			if want == 0 {
				want = bytes.Compare(a[len(pa):], b[len(pb):])
			}
			if got := c.Compare(a, b); sign(got) != sign(want) {
				t.Fatalf("Compare(%x, %x) = %d, but by prefix and suffix it is %d", a, b, got, want)
			}
		}
		if len(pa) == len(a) {
			continue
		}
		succ := c.ImmediateSuccessor(nil, pa)
		if c.Split(succ) != len(succ) {
			t.Fatalf("ImmediateSuccessor(%x) = %x is not a prefix", pa, succ)
		}
		if bytes.Compare(a, succ) >= 0 {
			t.Fatalf("ImmediateSuccessor(%x) = %x does not follow its key %x", pa, succ, a)
		}
	}
}

// TestBucketScanSkipsSSTsByFilter: a scan of a bucket found in no SST is
// answered by the SSTs' filters (Pebble's filter hits count the data
// blocks it did not read), and one of a stored bucket still finds all of
// it. A DB with the bytewise comparer, whose filters are on whole keys,
// cannot use them for scans.
func TestBucketScanSkipsSSTsByFilter(t *testing.T) {
	for _, bytewise := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "be")
		cfg := variant{kind: "rocksdb"}.config(dir, &fakeClock{})
		cfg.bytewiseDB = bytewise
		b, err := Open(cfg)
		must(t, err)
		defer b.Close()
		e := b.eng.(*pebbleEngine)
		if e.prefixFilters == bytewise {
			t.Fatalf("bytewise %v: prefixFilters = %v", bytewise, e.prefixFilters)
		}
		ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
		must(t, err)
		for k := range 200 {
			setKey(t, b, "k"+string(rune('A'+k%50))+string(rune('a'+k/50)))
			for uk := range int64(5) {
				must(t, ms.Put(nil, uk, int64(k)*10+uk))
			}
		}
		im, err := b.Snapshot(1) // flushes everything into SSTs
		must(t, err)
		must(t, im.Finish())

		hits := e.db.Metrics().Filter.Hits
		setKey(t, b, "absent")
		n := 0
		must(t, ms.Iterate(nil, func(int64, int64) bool { n++; return true }))
		if n != 0 {
			t.Fatalf("bytewise %v: scan of an absent key found %d entries", bytewise, n)
		}
		gained := e.db.Metrics().Filter.Hits - hits
		if !bytewise && gained == 0 {
			t.Errorf("scan of an absent key: no SST was skipped by its filter")
		}
		if bytewise && gained != 0 {
			t.Errorf("bytewise DB: %d filter hits on a scan; its filters are on whole keys", gained)
		}

		setKey(t, b, "kHa") // k = 7 + 50*0 is "kHa"
		var got []int64
		must(t, ms.Iterate(nil, func(uk, v int64) bool { got = append(got, uk, v); return true }))
		if want := []int64{0, 70, 1, 71, 2, 72, 3, 73, 4, 74}; !slices.Equal(got, want) {
			t.Errorf("bytewise %v: scan of kHa = %v, want %v", bytewise, got, want)
		}
		must(t, im.Discard())
	}
}

// TestRestoreBytewiseImage: an image taken before bucket filters (its DB
// made with Pebble's bytewise comparer, which Pebble then insists on)
// still restores, scans, takes further checkpoints and restores again; a
// new DB and its images use the bucket comparer.
func TestRestoreBytewiseImage(t *testing.T) {
	clk := &fakeClock{}
	for _, bytewise := range []bool{true, false} {
		cfg := variant{kind: "rocksdb"}.config(filepath.Join(t.TempDir(), "be"), clk)
		cfg.bytewiseDB = bytewise
		b, err := Open(cfg)
		must(t, err)
		ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
		must(t, err)
		vs, err := NewValueState(b, "v", Int64{}, Options{})
		must(t, err)
		setKey(t, b, "a")
		must(t, ms.Put(nil, 2, 20))
		must(t, ms.Put(nil, 1, 10))
		must(t, vs.Put(nil, 7))
		want := []int64{1, 10, 2, 20}
		for id := int64(1); id <= 2; id++ {
			im, err := b.Snapshot(id)
			must(t, err)
			must(t, im.Finish())
			must(t, b.Close())
			dir := filepath.Join(t.TempDir(), "restored")
			mustMkdir(t, dir)
			for _, f := range im.Files {
				copyFile(t, filepath.Join(im.Dir, f.LocalName), filepath.Join(dir, f.LocalName))
			}
			b, err = Restore(variant{kind: "rocksdb"}.config(dir, clk), im.Files)
			must(t, err)
			e := b.eng.(*pebbleEngine)
			wantName := bucketComparerName
			if bytewise {
				wantName = pebble.DefaultComparer.Name
			}
			if e.comparer.Name != wantName || e.prefixFilters == bytewise {
				t.Fatalf("bytewise %v, restore %d: comparer %q, prefix filters %v", bytewise, id, e.comparer.Name, e.prefixFilters)
			}
			ms, err = NewMapState(b, "rows", Int64{}, Int64{}, Options{})
			must(t, err)
			vs, err = NewValueState(b, "v", Int64{}, Options{})
			must(t, err)
			setKey(t, b, "a")
			var got []int64
			must(t, ms.Iterate(nil, func(uk, v int64) bool { got = append(got, uk, v); return true }))
			if !slices.Equal(got, want) {
				t.Fatalf("bytewise %v, restore %d: rows %v, want %v", bytewise, id, got, want)
			}
			if v, ok, err := vs.Get(nil); err != nil || !ok || v != 7 {
				t.Fatalf("bytewise %v, restore %d: value %v %v %v, want 7", bytewise, id, v, ok, err)
			}
			must(t, ms.Put(nil, 3, 30))
			want = append(want, 3, 30)
		}
		must(t, b.Close())
	}
}

// TestBucketScanFiltersOutgrowCache: bucket scans stop seeking by prefix
// once the SSTs' filters above the last level outgrow their share of the
// block cache (a filter is read whole, so a probe would re-read them), and
// still find every entry without them.
func TestBucketScanFiltersOutgrowCache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "be")
	b, err := Open(variant{kind: "rocksdb"}.config(dir, &fakeClock{}))
	must(t, err)
	defer b.Close()
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	snapshotID := int64(0)
	// write stores n keys' entries and waits until Pebble reported the
	// flush of the snapshot that follows.
	write := func(from, n int) {
		for k := from; k < from+n; k++ {
			setKey(t, b, fmt.Sprintf("k%05d", k))
			for uk := range int64(5) {
				must(t, ms.Put(nil, uk, int64(k)*10+uk))
			}
		}
		before := e.tablesEpoch.Load()
		snapshotID++
		im, err := b.Snapshot(snapshotID)
		must(t, err)
		must(t, im.Finish())
		must(t, im.Discard())
		deadline := time.Now().Add(10 * time.Second)
		for e.tablesEpoch.Load() == before {
			if time.Now().After(deadline) {
				t.Fatal("no flush reported by Pebble's listener")
			}
			runtime.Gosched()
		}
	}
	absentScanHits := func() int64 {
		hits := e.db.Metrics().Filter.Hits
		setKey(t, b, "absent")
		n := 0
		must(t, ms.Iterate(nil, func(int64, int64) bool { n++; return true }))
		if n != 0 {
			t.Fatalf("scan of an absent key found %d entries", n)
		}
		return e.db.Metrics().Filter.Hits - hits
	}
	storedScan := func(k int) {
		setKey(t, b, fmt.Sprintf("k%05d", k))
		var got []int64
		must(t, ms.Iterate(nil, func(uk, v int64) bool { got = append(got, uk, v); return true }))
		want := []int64{0, int64(k) * 10, 1, int64(k)*10 + 1, 2, int64(k)*10 + 2, 3, int64(k)*10 + 3, 4, int64(k)*10 + 4}
		if !slices.Equal(got, want) {
			t.Errorf("scan of key %d = %v, want %v", k, got, want)
		}
	}

	write(0, 200)
	if e.filterBytes() == 0 || e.filterBytes() > e.filterBudget {
		t.Fatalf("%d filter bytes, want some within the budget %d", e.filterBytes(), e.filterBudget)
	}
	if absentScanHits() == 0 {
		t.Errorf("filters within the budget: no SST skipped by its filter")
	}
	storedScan(7)

	// A budget below what the filters take: the next change of the
	// tables turns prefix seeks off.
	e.filterBudget = e.filterBytes() - 1
	write(200, 200)
	if got := absentScanHits(); got != 0 {
		t.Errorf("filters over the budget: %d filter hits on a scan, want none", got)
	}
	storedScan(7)
	storedScan(300)
}
