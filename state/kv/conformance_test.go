package kv

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/state/image"
)

func TestValueState(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		vs, err := NewValueState(b, "count", Int64{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// "a" and "ab" must not share entries although one is a prefix.
		for i, k := range []string{"a", "ab", "b"} {
			setKey(t, b, k)
			if _, ok, err := vs.Get(nil); err != nil || ok {
				t.Fatalf("%s: fresh key has a value (ok=%v err=%v)", k, ok, err)
			}
			if err := vs.Put(nil, int64(10*(i+1))); err != nil {
				t.Fatal(err)
			}
			if err := vs.Put([]byte("w1"), int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		setKey(t, b, "ab")
		if err := vs.Put(nil, 21); err != nil {
			t.Fatal(err)
		}
		want := map[string][2]int64{"a": {10, 0}, "ab": {21, 1}, "b": {30, 2}}
		for k, w := range want {
			setKey(t, b, k)
			got, ok, err := vs.Get(nil)
			if err != nil || !ok || got != w[0] {
				t.Errorf("%s, no namespace: got %d ok=%v err=%v, want %d", k, got, ok, err, w[0])
			}
			got, ok, err = vs.Get([]byte("w1"))
			if err != nil || !ok || got != w[1] {
				t.Errorf("%s, namespace w1: got %d ok=%v err=%v, want %d", k, got, ok, err, w[1])
			}
			if _, ok, _ := vs.Get([]byte("w2")); ok {
				t.Errorf("%s: namespace w2 has a value", k)
			}
		}
		setKey(t, b, "a")
		if err := vs.Clear(nil); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := vs.Get(nil); ok {
			t.Error("cleared value still there")
		}
		if got, ok, _ := vs.Get([]byte("w1")); !ok || got != 0 {
			t.Errorf("clearing one namespace removed another: %d %v", got, ok)
		}
		if got := b.Size().Entries; v.kind == image.Hashmap && got != 5 {
			t.Errorf("Size().Entries = %d, want 5", got)
		}
	})
}

func TestNoCurrentKey(t *testing.T) {
	b := openVariant(t, variants()[0], &fakeClock{})
	vs, _ := NewValueState(b, "v", Bytes{}, Options{})
	if _, _, err := vs.Get(nil); !errors.Is(err, errNoKey) {
		t.Fatalf("Get without a key: %v", err)
	}
}

func TestKeyGroupOutsideRange(t *testing.T) {
	dir := t.TempDir() + "/be"
	b, err := Open(Config{Kind: image.Hashmap, Dir: dir, MaxParallelism: 128, KeyGroups: &KeyGroupRange{0, 63}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var in, out string
	for i := 0; in == "" || out == ""; i++ {
		k := fmt.Sprint("k", i)
		if KeyGroupOf(hashOf(k), 128) < 64 {
			in = k
		} else {
			out = k
		}
	}
	if err := b.SetCurrentKey(hashOf(in), []byte(in)); err != nil {
		t.Fatalf("key in range refused: %v", err)
	}
	err = b.SetCurrentKey(hashOf(out), []byte(out))
	if err == nil || !strings.Contains(err.Error(), "outside this instance's key groups [0, 63]") {
		t.Fatalf("key outside range: %v", err)
	}
}

func TestMapState(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ms, err := NewMapState(b, "distinct", String{}, Int64{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "k1")
		for i, uk := range []string{"pear", "apple", "fig", "apple"} {
			if err := ms.Put(nil, uk, int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := ms.Put([]byte("ns"), "other", 99); err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "k2")
		if err := ms.Put(nil, "zzz", 7); err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "k1")
		var got []string
		if err := ms.Iterate(nil, func(uk string, v int64) bool {
			got = append(got, fmt.Sprint(uk, "=", v))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if want := []string{"apple=3", "fig=2", "pear=0"}; !slices.Equal(got, want) {
			t.Errorf("Iterate = %v, want %v", got, want)
		}
		if ok, _ := ms.Contains(nil, "fig"); !ok {
			t.Error("fig missing")
		}
		if err := ms.Delete(nil, "fig"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := ms.Contains(nil, "fig"); ok {
			t.Error("deleted fig still there")
		}
		if err := ms.Clear(nil); err != nil {
			t.Fatal(err)
		}
		if empty, err := ms.IsEmpty(nil); err != nil || !empty {
			t.Errorf("after Clear IsEmpty = %v, %v", empty, err)
		}
		if empty, _ := ms.IsEmpty([]byte("ns")); empty {
			t.Error("Clear of one namespace emptied another")
		}
		setKey(t, b, "k2")
		if v, ok, _ := ms.Get(nil, "zzz"); !ok || v != 7 {
			t.Errorf("other key's map changed: %d %v", v, ok)
		}
	})
}

func TestSortedMapState(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		sm, err := NewSortedMapState(b, "topn", Int64{}, String{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "part")
		for _, n := range []int64{5, -3, 100, 0, -1 << 40, 42} {
			if err := sm.Put(nil, n, fmt.Sprint("r", n)); err != nil {
				t.Fatal(err)
			}
		}
		collect := func(desc bool, from *int64) []int64 {
			var out []int64
			fn := func(k int64, _ string) bool { out = append(out, k); return true }
			var err error
			if desc {
				err = sm.Descend(nil, from, fn)
			} else {
				err = sm.Ascend(nil, from, fn)
			}
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if got, want := collect(false, nil), []int64{-1 << 40, -3, 0, 5, 42, 100}; !slices.Equal(got, want) {
			t.Errorf("Ascend = %v, want %v", got, want)
		}
		if got, want := collect(true, nil), []int64{100, 42, 5, 0, -3, -1 << 40}; !slices.Equal(got, want) {
			t.Errorf("Descend = %v, want %v", got, want)
		}
		five, four := int64(5), int64(4)
		if got, want := collect(false, &five), []int64{5, 42, 100}; !slices.Equal(got, want) {
			t.Errorf("Ascend from 5 = %v, want %v", got, want)
		}
		if got, want := collect(true, &five), []int64{5, 0, -3, -1 << 40}; !slices.Equal(got, want) {
			t.Errorf("Descend from 5 = %v, want %v", got, want)
		}
		if got, want := collect(true, &four), []int64{0, -3, -1 << 40}; !slices.Equal(got, want) {
			t.Errorf("Descend from 4 = %v, want %v", got, want)
		}
		if k, val, ok, err := sm.First(nil); err != nil || !ok || k != -1<<40 || val != "r-1099511627776" {
			t.Errorf("First = %d %q %v %v", k, val, ok, err)
		}
		if k, val, ok, err := sm.Last(nil); err != nil || !ok || k != 100 || val != "r100" {
			t.Errorf("Last = %d %q %v %v", k, val, ok, err)
		}
		// Stop early.
		n := 0
		if err := sm.Ascend(nil, nil, func(int64, string) bool { n++; return n < 2 }); err != nil || n != 2 {
			t.Errorf("early stop visited %d (%v)", n, err)
		}
		setKey(t, b, "empty")
		if _, _, ok, _ := sm.First(nil); ok {
			t.Error("First of an empty map found an entry")
		}
	})
}

func TestListState(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ls, err := NewListState(b, "rows", Bytes{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("x", 300) // a two-byte length prefix
		setKey(t, b, "k")
		for _, e := range []string{"one", "", big, "four"} {
			if err := ls.Add(nil, []byte(e)); err != nil {
				t.Fatal(err)
			}
		}
		list := func(ns []byte) []string {
			var out []string
			if err := ls.Iterate(ns, func(e []byte) bool { out = append(out, string(e)); return true }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		if got, want := list(nil), []string{"one", "", big, "four"}; !slices.Equal(got, want) {
			t.Errorf("list = %q, want %q", got, want)
		}
		if err := ls.Update(nil, [][]byte{[]byte("a"), []byte("b")}); err != nil {
			t.Fatal(err)
		}
		if got, want := list(nil), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Errorf("after Update = %q, want %q", got, want)
		}
		if got := list([]byte("ns")); got != nil {
			t.Errorf("other namespace = %q", got)
		}
		if err := ls.Clear(nil); err != nil {
			t.Fatal(err)
		}
		if got := list(nil); got != nil {
			t.Errorf("after Clear = %q", got)
		}
	})
}

func TestTTL(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{now: 1_000}
		b := openVariant(t, v, clk)
		ttl := Options{TTL: 100 * time.Millisecond}
		vs, err := NewValueState(b, "v", Int64{}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := NewMapState(b, "m", String{}, Int64{}, ttl)
		ls, _ := NewListState(b, "l", String{}, ttl)
		setKey(t, b, "k")
		vs.Put(nil, 1)      // written at 1000: expires at 1100
		ms.Put(nil, "a", 1) // at 1000
		ls.Add(nil, "e1")   // at 1000
		clk.now = 1_050
		ms.Put(nil, "b", 2) // at 1050: expires at 1150
		ls.Add(nil, "e2")
		clk.now = 1_099
		// A read does not restart the timer (OnCreateAndWrite).
		if got, ok, _ := vs.Get(nil); !ok || got != 1 {
			t.Fatalf("at 1099 value = %d %v, want 1", got, ok)
		}
		clk.now = 1_100 // 1000 + 100 <= 1100: expired
		if _, ok, _ := vs.Get(nil); ok {
			t.Error("value returned at its expiry time")
		}
		if _, ok, _ := ms.Get(nil, "a"); ok {
			t.Error("map entry a returned after expiry")
		}
		if got, ok, _ := ms.Get(nil, "b"); !ok || got != 2 {
			t.Errorf("map entry b = %d %v, want 2 (expires at 1150)", got, ok)
		}
		var keys []string
		ms.Iterate(nil, func(k string, _ int64) bool { keys = append(keys, k); return true })
		if !slices.Equal(keys, []string{"b"}) {
			t.Errorf("map iteration at 1100 = %v, want [b]", keys)
		}
		var elems []string
		ls.Iterate(nil, func(e string) bool { elems = append(elems, e); return true })
		if !slices.Equal(elems, []string{"e2"}) {
			t.Errorf("list at 1100 = %v, want [e2]", elems)
		}
		// A write restarts the timer (create and write).
		vs.Put(nil, 5) // at 1100: expires at 1200
		clk.now = 1_199
		if got, ok, _ := vs.Get(nil); !ok || got != 5 {
			t.Errorf("rewritten value at 1199 = %d %v, want 5", got, ok)
		}
		clk.now = 1_200
		if _, ok, _ := vs.Get(nil); ok {
			t.Error("rewritten value returned at 1200")
		}
		if got := dump(t, b); len(got) != 0 {
			t.Errorf("entries at 1200 = %q, want none (the list has no live element)", got)
		}
	})
}

// TestTTLCleanup checks that expired entries nobody reads are removed: by
// the incremental cleanup on writes (hashmap), left out of images
// (hashmap) and removed at snapshots (rocksdb).
func TestTTLCleanup(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{now: 1_000}
		b := openVariant(t, v, clk)
		vs, _ := NewValueState(b, "v", Int64{}, Options{TTL: time.Second})
		keep, _ := NewValueState(b, "keep", Int64{}, Options{})
		for i := range 200 {
			setKey(t, b, fmt.Sprint("old", i))
			vs.Put(nil, int64(i))
		}
		clk.now = 2_000 // every "old" entry expired
		for i := range 50 {
			setKey(t, b, fmt.Sprint("new", i))
			keep.Put(nil, int64(i))
		}
		r, _ := snapshotAndRestore(t, b, v, clk, 1)
		raw := 0
		if err := r.eng.each([]byte{0, 0}, []byte{0xFF, 0xFF}, func(k, v []byte) error { raw++; return nil }); err != nil {
			t.Fatal(err)
		}
		if raw != 50 {
			t.Errorf("restored backend stores %d entries, want the 50 live ones", raw)
		}
	})
}

func TestRegistry(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{}
		b := openVariant(t, v, clk)
		vs, _ := NewValueState(b, "a", Int64{}, Options{})
		ms, _ := NewMapState(b, "m", String{}, Bytes{}, Options{TTL: time.Hour})
		if _, err := NewValueState(b, "a", Int64{}, Options{}); err == nil || !strings.Contains(err.Error(), "declared twice") {
			t.Errorf("second declaration: %v", err)
		}
		setKey(t, b, "k")
		vs.Put(nil, 3)
		ms.Put(nil, "x", []byte("y"))

		id := int64(0)
		restore := func() *Backend { id++; r, _ := snapshotAndRestore(t, b, v, clk, id); return r }
		r := restore()
		if _, err := NewValueState(r, "a", String{}, Options{}); err == nil || !strings.Contains(err.Error(), `codec "int64"`) {
			t.Errorf("declaring with another codec: %v", err)
		}
		r = restore()
		if _, err := NewMapState(r, "m", String{}, Bytes{}, Options{}); err == nil || !strings.Contains(err.Error(), "TTL") {
			t.Errorf("dropping the TTL: %v", err)
		}
		r = restore()
		if _, err := NewValueState(r, "m", Int64{}, Options{}); err == nil || !strings.Contains(err.Error(), "map state") {
			t.Errorf("declaring a map state as value state: %v", err)
		}
		r = restore()
		// The restored states are found by name whatever the order of
		// declaration, and new states get ids of their own.
		nw, err := NewValueState(r, "new", Int64{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ms2, err := NewMapState(r, "m", String{}, Bytes{}, Options{TTL: 2 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		vs2, err := NewValueState(r, "a", Int64{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, r, "k")
		if got, ok, _ := vs2.Get(nil); !ok || got != 3 {
			t.Errorf("restored a = %d %v", got, ok)
		}
		if _, ok, _ := nw.Get(nil); ok {
			t.Error("new state sees restored data")
		}
		if got, ok, _ := ms2.Get(nil, "x"); !ok || string(got) != "y" {
			t.Errorf("restored m[x] = %q %v", got, ok)
		}
	})
}

func TestSnapshotRestore(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{now: 5}
		b := openVariant(t, v, clk)
		vs, _ := NewValueState(b, "v", Bytes{}, Options{})
		ms, _ := NewSortedMapState(b, "m", Int64{}, Bytes{}, Options{TTL: time.Hour})
		ls, _ := NewListState(b, "l", Bytes{}, Options{})
		for i := range 300 {
			setKey(t, b, fmt.Sprint("key", i))
			vs.Put([]byte("ns"), []byte(fmt.Sprint("v", i)))
			ms.Put(nil, int64(i%7), []byte(fmt.Sprint("m", i)))
			ls.Add(nil, []byte(fmt.Sprint("l", i)))
		}
		want := dump(t, b)
		if len(want) != 600+300 {
			t.Fatalf("dump has %d entries, want 900", len(want))
		}
		im, err := b.Snapshot(1)
		if err != nil {
			t.Fatal(err)
		}
		// Writes after the snapshot must not reach the image, even before
		// Finish (copy-on-write for hashmap).
		for i := range 300 {
			setKey(t, b, fmt.Sprint("key", i))
			vs.Put([]byte("ns"), []byte("changed"))
			ls.Add(nil, []byte("more"))
		}
		if err := im.Finish(); err != nil {
			t.Fatal(err)
		}
		if im.KeyGroups[0] < 0 || im.KeyGroups[1] > 127 || im.KeyGroups[0] > im.KeyGroups[1] {
			t.Errorf("image key groups %v", im.KeyGroups)
		}
		r := restoreImage(t, v, clk, im)
		if got := dump(t, r); !slices.Equal(got, want) {
			t.Errorf("restored %d entries differ from the %d snapshotted", len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("first difference at %d: got %q, want %q", i, got[i], want[i])
				}
			}
		}
		if got := r.Size().Entries; v.kind == image.Hashmap && got != 900 {
			t.Errorf("restored Size().Entries = %d, want 900", got)
		}
	})
}

func restoreImage(t *testing.T, v variant, clk *fakeClock, im *image.Image) *Backend {
	t.Helper()
	dir := t.TempDir() + "/r"
	mustMkdir(t, dir)
	for _, f := range im.Files {
		copyFile(t, im.Dir+"/"+f.LocalName, dir+"/"+f.LocalName)
	}
	r, err := Restore(v.config(dir, clk), im.Files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestHashmapFinishConcurrentWithWrites writes the image on another
// goroutine while the backend goes on taking writes (the asynchronous part
// of a checkpoint); under -race this also proves that the two share no
// mutable memory, and the image must hold the values as of Snapshot.
func TestHashmapFinishConcurrentWithWrites(t *testing.T) {
	v := variants()[0]
	clk := &fakeClock{}
	b := openVariant(t, v, clk)
	vs, _ := NewValueState(b, "v", Bytes{}, Options{})
	ls, _ := NewListState(b, "l", Bytes{}, Options{})
	for i := range 5000 {
		setKey(t, b, fmt.Sprint("k", i))
		must(t, vs.Put(nil, []byte(fmt.Sprint("old", i))))
		must(t, ls.Add(nil, []byte("a")))
	}
	want := dump(t, b)
	im, err := b.Snapshot(1)
	must(t, err)
	done := make(chan error)
	go func() { done <- im.Finish() }()
	for i := range 5000 {
		setKey(t, b, fmt.Sprint("k", i))
		must(t, vs.Put(nil, []byte("new")))
		must(t, ls.Add(nil, []byte("b")))
		if i%2 == 0 {
			must(t, vs.Clear(nil))
		}
	}
	must(t, <-done)
	r := restoreImage(t, v, clk, im)
	if got := dump(t, r); !slices.Equal(got, want) {
		t.Errorf("image written during writes has %d entries, differing from the %d at Snapshot", len(got), len(want))
	}
}
