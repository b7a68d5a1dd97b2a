package kv

import "github.com/flinksql/flinksql/state/image"

// engine is what a backend stores entries in: stored keys (see the package
// comment) to values. Slices it returns are valid until its next call;
// slices it is given are copied. It is driven by one goroutine.
type engine interface {
	get(k []byte) (v []byte, ok bool, err error)
	put(k, v []byte) error
	// appendValue appends suffix to k's value (creating it when absent):
	// list state's add, without rewriting the whole list where the engine
	// can avoid it.
	appendValue(k, suffix []byte) error
	del(k []byte) error
	// scanBucket visits the entries of the map-state bucket (a stored key
	// prefix up to and including the namespace) in ascending key order, or
	// descending when reverse, starting at bucket+from (inclusive, ≥ when
	// ascending, ≤ when descending) when from is not nil, until fn returns
	// false. fn must not call the engine.
	scanBucket(bucket, from []byte, reverse bool, fn func(k, v []byte) bool) error
	// each visits every entry with lo <= key < hi in key order (hi nil: no
	// upper bound). fn must not call the engine. Not a hot path.
	each(lo, hi []byte, fn func(k, v []byte) error) error
	// snapshot seals an image for checkpoint id (greater than the last
	// one). expired tells entries that need not be in it; it may be called
	// after snapshot returned, from another goroutine, until Finish.
	snapshot(id int64, expired func(k, v []byte) bool) (*image.Image, error)
	// writeChanges writes every entry to w when w.Full() or when nothing
	// was written before, else the entries changed and deleted since the
	// previous writeChanges.
	writeChanges(w EntryWriter) error
	// load puts every entry of r into the (empty) engine as already
	// written by writeChanges.
	load(r EntryReader) error
	// cleanup examines up to n entries, continuing where the previous call
	// stopped, and deletes those expired reports.
	cleanup(n int, expired func(k, v []byte) bool) error
	sizes() Sizes
	close() error
}

// EntryWriter receives entries: the stream form of a backend's contents
// (what package state's stores take at a checkpoint, and what a canonical
// savepoint holds). Keys are stored keys without their key-group prefix;
// registry entries come with KeyGroupNone. exec.StateWriter satisfies it.
type EntryWriter interface {
	// Full reports whether every live entry must be written, rather than
	// the changes since the previous write.
	Full() bool
	Put(keyGroup int, key, value []byte) error
	Delete(keyGroup int, key []byte) error
}

// EntryReader replays entries written through an EntryWriter.
// exec.StateReader satisfies it.
type EntryReader interface {
	Each(fn func(keyGroup int, key, value []byte) error) error
}

// Sizes is the size of a backend's state.
type Sizes struct {
	// Entries counts stored entries (a map state's user keys each, a list
	// as one); exact for hashmap, estimated from the SST statistics for
	// rocksdb (EntriesExact false).
	Entries      int64
	EntriesExact bool
	// MemoryBytes is the memory the entries take (hashmap) or the cache,
	// block cache and memtables hold (rocksdb).
	MemoryBytes int64
	// DiskBytes is the size of the working DB on disk (0 for hashmap).
	DiskBytes int64
}
