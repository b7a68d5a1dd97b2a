package kv

import (
	"fmt"
	"testing"
)

// TestMapDirtyListBounded: writes of map-state entries without any scan of
// a map state (a join's rows before any key matches) keep the list of
// dirty map slots bounded by the dirty entries, not by the writes; and a
// scan afterwards still sees every entry, including the ones still dirty
// in the cache (flush(true) writes them back from that list).
func TestMapDirtyListBounded(t *testing.T) {
	v := variant{name: "rocksdb-small-cache", kind: "rocksdb", cache: 64 << 10}
	b := openVariant(t, v, &fakeClock{})
	e := b.eng.(*pebbleEngine)
	ms, err := NewMapState(b, "rows", Int64{}, Int64{}, Options{})
	must(t, err)
	const n = 50_000
	maxLen := 0
	for i := range n {
		setKey(t, b, fmt.Sprint("k", i))
		must(t, ms.Put(nil, int64(i), int64(2*i)))
		maxLen = max(maxLen, len(e.mapDirty), len(e.dirty)-e.dirtyHead)
	}
	// The lists may reach twice the cache's slots plus the slack before
	// they are compacted (the 64 KB cache holds some 600 entries of ~100
	// bytes with their overhead). Without the compaction they held one
	// slot per write, 50 000: the small cache evicts (writing back) before
	// the dirty entries reach the dirty limit, so trimDirty never runs.
	limit := 2*len(e.ents) + dirtySlack + 1
	if maxLen > limit || len(e.dirty)-e.dirtyHead > limit {
		t.Errorf("dirty lists reached %d (maps) and hold %d (all) slots, want at most %d (cache slots %d)", maxLen, len(e.dirty)-e.dirtyHead, limit, len(e.ents))
	}
	// Every key's entry is found by a scan, the last ones (still dirty in
	// the cache when the first scan runs) and the early ones (in Pebble).
	for i := range n {
		if i >= 2000 && i < n-3000 && i%97 != 0 {
			continue
		}
		setKey(t, b, fmt.Sprint("k", i))
		var got []int64
		must(t, ms.Iterate(nil, func(uk, v int64) bool {
			got = append(got, uk, v)
			return true
		}))
		if len(got) != 2 || got[0] != int64(i) || got[1] != int64(2*i) {
			t.Fatalf("k%d: scan found %v, want [%d %d]", i, got, i, 2*i)
		}
	}
}
