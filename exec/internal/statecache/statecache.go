// Package statecache is the write-back cache of decoded keyed-state
// entries that a stateful operator keeps in front of its kv backend
// (KEYED.md rule 2): a decoding Get and an encoding Put per row cost too
// much on the hot path, so the operator works on decoded values and the
// cache moves them to and from the backend.
//
// A Cache interns the keys of the operator's rows as small dense ids (an
// open-addressing keyed.OpenTable over types.HashColumns, the hash the
// exchange routes by); the decoded values of an id live wherever the
// operator wants them (flat arrays indexed by id, typically), behind the
// Slots interface, so that a row of a cached key costs one hash probe and
// no decoding or interface call. The cache:
//
//   - loads an entry from its kv.ValueState on a miss (Get), unless it
//     knows the backend holds nothing it does not (a fresh start, until
//     the first eviction; or a restored hashmap backend, which Preload
//     reads completely, its state being in memory anyway);
//   - marks an entry dirty when the operator says it changed (Written) and
//     writes the dirty entries back at a checkpoint (Flush, from
//     PrepareSnapshot) and when it evicts one;
//   - is bounded on rocksdb, where state may outgrow memory, to a quarter
//     of the backend's memory budget at the operator's estimate of an
//     entry's bytes (Bound), evicting by a clock (second chance); on
//     hashmap it holds every key;
//   - applies state TTL as kv does (Flink's OnCreateAndWrite and
//     NeverReturnExpired): each entry keeps the processing time of its
//     last write, is gone once lastWrite + TTL <= now (Expired), and is
//     written back with that time (kv.ValueState.PutStamped), so a late
//     write-back does not extend its life; Sweep drops expired entries so
//     idle keys leave memory.
//
// A Cache is driven by the operator's goroutine, like the backend.
package statecache

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/flinksql/flinksql/exec/internal/bloom"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Share is the part (1/Share) of a rocksdb backend's memory budget the
// decoded cache of an operator may use; Pebble's block cache, memtables
// and the backend's own entry cache share the rest.
const Share = 4

// Bound returns how many entries of about entryBytes bytes each a cache in
// front of b may hold: 0 (no bound) on hashmap, whose state is on the heap
// anyway, and a Share of the memory budget on rocksdb, at least least.
func Bound(b *kv.Backend, entryBytes, least int) int {
	if b.Kind() != image.RocksDB {
		return 0
	}
	return max(int(b.MemoryBudget()/Share/int64(max(entryBytes, 1))), least)
}

// Expired is kv's TTL rule for an entry last written at lastWrite under a
// TTL of ttl ms (0: none) at processing time now.
func Expired(ttl, lastWrite, now int64) bool { return ttl > 0 && lastWrite+ttl <= now }

// Slots holds the decoded values of a cache's entries, by id. The cache
// calls it only when an entry enters or leaves memory, never per row.
type Slots[V any] interface {
	// Grow makes ids below n valid.
	Grow(n int)
	// Load sets id's value to a copy of v (the codec's scratch).
	Load(id int32, v V) error
	// Value returns id's value, for the codec to encode.
	Value(id int32) V
	// Clear empties id's value: it left the cache.
	Clear(id int32)
}

// Config describes a cache.
type Config struct {
	// KeyCols are the key columns of the operator's rows.
	KeyCols []int
	// TTL is table.exec.state.ttl in ms (0: none); the state must be
	// declared with the same TTL.
	TTL int64
	// ValueBytes estimates the memory of one entry's decoded value,
	// payloads included; the cache adds its own per-entry cost.
	ValueBytes int
	// Limit, when > 0, bounds the cache to Limit entries on either backend
	// (tests forcing evictions); otherwise Bound applies.
	Limit int
	// KeyLen, when > 0, is how many leading key values form the kv key;
	// the rest address the namespace, which Namespace appends to dst
	// (the window of a window operator). 0: every key value is the key,
	// and the namespace is nil.
	KeyLen    int
	Namespace func(dst []byte, rest []types.Value) []byte
}

const (
	fAlive  = 1 << iota // the id holds a key
	fDirty              // changed since last written to the backend
	fStored             // the backend may hold an entry for the key
	fRef                // used since the eviction hand last passed
	fKept               // scratch bit of compactDirty
)

// Cache is the decoded write-back cache of one kv value state.
type Cache[V any] struct {
	keys  *keyed.OpenTable
	cols  []int
	b     *kv.Backend
	st    *kv.ValueState[V]
	slots Slots[V]
	stamp []int64 // per id: processing time of the last write
	flags []uint8 // per id: f* bits
	extra []int32 // per id: bytes beyond perEntry the operator reported (Grew)
	dirty []int32 // ids that turned dirty since the last flush (may repeat, see compactDirty)
	// limit is the most keys cached (0: no bound); budget, when not 0,
	// bounds the bytes: perEntry per key plus what Grew reported, held in
	// all. hand is the next id the eviction clock looks at.
	limit    int
	budget   int64
	perEntry int64
	held     int64
	hand     int
	// complete says every key with state is cached, so a miss needs no
	// backend read.
	complete bool
	// stored, after a fresh start on a backend other than hashmap, holds
	// the hashes of the keys written back: once evictions made the cache
	// incomplete, a miss on a key never written back (a new key, the
	// common case of a deduplication or a growing aggregation) needs no
	// backend read either.
	stored  *bloom.Filter
	ttl     int64
	now     int64
	kbuf    []byte
	evicted int
	keyLen  int // leading key values of the kv key
	nsOf    func(dst []byte, rest []types.Value) []byte
	ns      []byte        // the namespace of the entry last addressed (nil: none)
	rest    []types.Value // scratch: a row's key values after keyLen
}

// New returns the cache of state st of b. complete says the backend holds
// nothing yet (a fresh start: see Empty), so a miss is a new key without a
// backend read.
func New[V any](b *kv.Backend, st *kv.ValueState[V], slots Slots[V], cfg Config, complete bool) *Cache[V] {
	c := &Cache[V]{keys: keyed.NewOpenTable(cfg.KeyCols), cols: cfg.KeyCols, b: b, st: st, slots: slots, ttl: cfg.TTL, complete: complete,
		keyLen: len(cfg.KeyCols), nsOf: cfg.Namespace}
	if cfg.KeyLen > 0 && cfg.KeyLen < len(cfg.KeyCols) && cfg.Namespace != nil {
		c.keyLen = cfg.KeyLen
	}
	// key values, slot share, hash, stamp, flags
	c.perEntry = int64(cfg.ValueBytes + len(cfg.KeyCols)*int(unsafe.Sizeof(types.Value{})) + 48)
	if complete && b.Kind() != image.Hashmap {
		c.stored = bloom.New(b.MemoryBudget() / 16)
	}
	if cfg.Limit > 0 {
		c.limit = cfg.Limit
	} else if c.limit = Bound(b, int(c.perEntry), 64); c.limit > 0 {
		c.budget = int64(c.limit) * c.perEntry
	}
	return c
}

// Empty reports whether b holds no entry at all (a fresh start).
func Empty(b *kv.Backend) (bool, error) {
	errFound := errors.New("found")
	err := b.Entries(b.KeyGroups(), func(kv.Entry) error { return errFound })
	if errors.Is(err, errFound) {
		return false, nil
	}
	return err == nil, err
}

// SetNow sets the processing time of the operator's current work, which
// TTL checks and Written use; only needed with a TTL.
func (c *Cache[V]) SetNow(now int64) { c.now = now }

// Now is the time SetNow set.
func (c *Cache[V]) Now() int64 { return c.now }

// Len is the number of entries cached.
func (c *Cache[V]) Len() int { return c.keys.Size() }

// Limit is the most entries cached (0: no bound).
func (c *Cache[V]) Limit() int { return c.limit }

// Complete reports whether every key with state is cached, so that a
// miss is answered without a backend read.
func (c *Cache[V]) Complete() bool { return c.complete }

// Pending is the length of the list of entries to write back at the next
// Flush (repeats included; it stays within a multiple of Len).
func (c *Cache[V]) Pending() int { return len(c.dirty) }

// Dirty counts the entries changed since they were last written back.
func (c *Cache[V]) Dirty() int {
	n := 0
	for _, f := range c.flags {
		if f&(fAlive|fDirty) == fAlive|fDirty {
			n++
		}
	}
	return n
}

// Evictions counts the entries evicted to stay in the bound.
func (c *Cache[V]) Evictions() int { return c.evicted }

// Live reports whether id holds a cached entry.
func (c *Cache[V]) Live(id int32) bool { return int(id) < len(c.flags) && c.flags[id]&fAlive != 0 }

// Key returns the key values of id, valid while id is cached.
func (c *Cache[V]) Key(id int32) []types.Value { return c.keys.Key(id) }

// Find returns the cached id of the key of row (hash h) without loading.
// An expired entry is dropped: the backend's copy, written with the same
// time or an older one, is expired too and never returned.
func (c *Cache[V]) Find(row types.Row, h uint64) (int32, bool) {
	id := c.keys.Find(row, h)
	if id < 0 {
		return -1, false
	}
	if c.expired(id) {
		c.Drop(id)
		return -1, false
	}
	if c.limit > 0 { // only the eviction clock reads it
		c.flags[id] |= fRef
	}
	return id, true
}

// Get returns the id of the key of row (hash h), loading its entry from
// the backend on a miss; ok is false when the key has no (live) state.
func (c *Cache[V]) Get(row types.Row, h uint64) (id int32, ok bool, err error) {
	if id, ok := c.Find(row, h); ok || c.complete || !c.stored.MayContain(h) {
		return id, ok, nil
	}
	if err := c.setRowKey(row, h); err != nil {
		return -1, false, err
	}
	v, stamp, found, err := c.st.GetStamped(c.ns)
	if err != nil || !found {
		return -1, false, err
	}
	// v is the codec's scratch, which evicting (encoding) leaves alone.
	if id, err = c.insert(row, h, fStored); err != nil {
		return -1, false, err
	}
	if err := c.slots.Load(id, v); err != nil {
		c.Drop(id)
		return -1, false, err
	}
	c.stamp[id] = stamp
	return id, true, nil
}

// Create adds the absent key of row (hash h) with an empty value (the
// Slots' cleared one), dirty, written now.
func (c *Cache[V]) Create(row types.Row, h uint64) (int32, error) {
	id, err := c.insert(row, h, fDirty)
	if err == nil {
		c.stamp[id] = c.now
	}
	return id, err
}

// Written records a change of id's value at the current time.
func (c *Cache[V]) Written(id int32) {
	c.stamp[id] = c.now
	if c.flags[id]&fDirty == 0 {
		c.markDirty(id)
	}
}

// Grew records that id's decoded value grew by delta bytes (shrank when
// negative) beyond the Config's ValueBytes, for values of varying size
// (the rows of a Top-N partition); the bound counts them.
func (c *Cache[V]) Grew(id int32, delta int) {
	c.extra[id] += int32(delta)
	c.held += int64(delta)
}

// EntryBytes is the fixed per-entry part of Held: the Config's
// ValueBytes and the cache's own bookkeeping.
func (c *Cache[V]) EntryBytes() int64 { return c.perEntry }

// Held is the cache's estimate of the bytes it holds.
func (c *Cache[V]) Held() int64 { return c.held }

// Remove deletes id's state, in the backend too.
func (c *Cache[V]) Remove(id int32) error {
	var err error
	if c.flags[id]&fStored != 0 {
		if err = c.setKey(id); err == nil {
			err = c.st.Clear(c.ns)
		}
	}
	c.Drop(id)
	return err
}

// Drop forgets id in the cache only (its backend copy is expired or is to
// stay).
func (c *Cache[V]) Drop(id int32) {
	c.slots.Clear(id)
	c.flags[id] = 0
	c.held -= c.perEntry + int64(c.extra[id])
	c.extra[id] = 0
	c.keys.Release(id)
}

// DropIf drops from the cache only every entry for which drop says so
// (a window operator forgetting the entries of fired windows, whose
// stored copies it then reads and clears itself).
func (c *Cache[V]) DropIf(drop func(id int32) bool) {
	for id, f := range c.flags {
		if f&fAlive != 0 && drop(int32(id)) {
			c.Drop(int32(id))
		}
	}
}

// Flush writes every dirty entry back (PrepareSnapshot).
func (c *Cache[V]) Flush() error {
	for _, id := range c.dirty {
		if err := c.writeBack(id); err != nil {
			return err
		}
	}
	c.dirty = c.dirty[:0]
	return nil
}

// Sweep drops the expired entries from the cache and returns the oldest
// last write among those left (math.MaxInt64 when none, or without TTL),
// for the operator to schedule the next sweep when that one expires.
func (c *Cache[V]) Sweep() (oldest int64) {
	oldest = math.MaxInt64
	if c.ttl <= 0 {
		return oldest
	}
	for id, f := range c.flags {
		if f&fAlive == 0 {
			continue
		}
		if c.expired(int32(id)) {
			c.Drop(int32(id))
		} else {
			oldest = min(oldest, c.stamp[id])
		}
	}
	return oldest
}

// Preload loads every entry of the state of a restored hashmap backend,
// whose state is in memory anyway, so that the cache is complete again
// and a key new since the checkpoint costs no backend read. codec decodes
// the stored values (the state's codec). It does nothing on rocksdb, with
// a bound, or when the cache is complete already.
func (c *Cache[V]) Preload(name string, codec kv.Codec[V]) error {
	if c.complete || c.limit > 0 || c.b.Kind() != image.Hashmap {
		return nil
	}
	if c.keyLen < len(c.cols) {
		return errors.New("statecache: Preload of a cache with namespaces")
	}
	err := c.b.Entries(c.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != name {
			return nil
		}
		row, h, err := c.keyRow(e.Key)
		if err != nil {
			return err
		}
		v, err := codec.Decode(e.Value)
		if err != nil {
			return err
		}
		id, err := c.insert(row, h, fStored)
		if err != nil {
			return err
		}
		if err := c.slots.Load(id, v); err != nil {
			return err
		}
		c.stamp[id] = e.LastWrite
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading state %q: %w", name, err)
	}
	c.complete = true
	return nil
}

func (c *Cache[V]) expired(id int32) bool { return Expired(c.ttl, c.stamp[id], c.now) }

func (c *Cache[V]) insert(row types.Row, h uint64, flags uint8) (int32, error) {
	for c.keys.Size() > 0 && (c.limit > 0 && c.keys.Size() >= c.limit || c.budget > 0 && c.held+c.perEntry > c.budget) {
		if err := c.evict(); err != nil {
			return -1, err
		}
	}
	id := c.keys.Add(row, h)
	if n := int(id) + 1; n > len(c.flags) {
		for len(c.flags) < n {
			c.flags = append(c.flags, 0)
			c.stamp = append(c.stamp, 0)
			c.extra = append(c.extra, 0)
		}
		c.slots.Grow(n)
	}
	c.flags[id] = fAlive | fRef | flags&^fDirty
	c.held += c.perEntry
	if flags&fDirty != 0 {
		c.markDirty(id)
	}
	return id, nil
}

func (c *Cache[V]) evict() error {
	id := c.victim()
	if err := c.writeBack(id); err != nil {
		return err
	}
	c.complete = false
	c.evicted++
	c.Drop(id)
	return nil
}

// victim picks the entry to evict: the first one, from the clock hand on,
// not used since the hand last passed it (second chance).
func (c *Cache[V]) victim() int32 {
	n := len(c.flags)
	for {
		if c.hand >= n {
			c.hand = 0
		}
		id := int32(c.hand)
		c.hand++
		f := c.flags[id]
		if f&fAlive == 0 {
			continue
		}
		if f&fRef != 0 {
			c.flags[id] = f &^ fRef
			continue
		}
		return id
	}
}

// writeBack writes id to the backend when dirty (and not expired).
func (c *Cache[V]) writeBack(id int32) error {
	f := c.flags[id]
	if f&fDirty == 0 {
		return nil
	}
	c.flags[id] = f&^fDirty | fStored
	if c.expired(id) {
		return nil
	}
	if err := c.setKey(id); err != nil {
		return err
	}
	if c.stored != nil {
		c.stored.Add(c.keys.Hash(id))
	}
	return c.st.PutStamped(c.ns, c.slots.Value(id), c.stamp[id])
}

func (c *Cache[V]) markDirty(id int32) {
	c.flags[id] |= fDirty
	c.dirty = append(c.dirty, id)
	if len(c.dirty) > 2*len(c.flags)+64 {
		c.compactDirty()
	}
}

// compactDirty drops the ids no longer dirty and the repeats from the
// dirty list, which grows when ids are released and handed out again.
func (c *Cache[V]) compactDirty() {
	out := c.dirty[:0]
	for _, id := range c.dirty {
		if f := c.flags[id]; f&fDirty != 0 && f&fKept == 0 {
			c.flags[id] |= fKept
			out = append(out, id)
		}
	}
	for _, id := range out {
		c.flags[id] &^= fKept
	}
	c.dirty = out
}

// setKey makes id's key the backend's current key, and c.ns its
// namespace.
func (c *Cache[V]) setKey(id int32) error {
	key := c.keys.Key(id)
	buf := c.kbuf[:0]
	for _, v := range key[:c.keyLen] {
		buf = types.AppendValue(buf, v)
	}
	if c.keyLen < len(key) {
		c.ns = c.nsOf(c.ns[:0], key[c.keyLen:])
	}
	c.kbuf = buf
	return c.b.SetCurrentKey(c.keys.Hash(id), buf)
}

// setRowKey makes the key of row (hash h) the backend's current key, and
// c.ns its namespace.
func (c *Cache[V]) setRowKey(row types.Row, h uint64) error {
	buf := c.kbuf[:0]
	for _, col := range c.cols[:c.keyLen] {
		buf = types.AppendValue(buf, row[col])
	}
	if c.keyLen < len(c.cols) {
		c.rest = c.rest[:0]
		for _, col := range c.cols[c.keyLen:] {
			c.rest = append(c.rest, row[col])
		}
		c.ns = c.nsOf(c.ns[:0], c.rest)
	}
	c.kbuf = buf
	return c.b.SetCurrentKey(h, buf)
}

// keyRow decodes stored key bytes into a row holding the key values at
// the key columns, and its hash.
func (c *Cache[V]) keyRow(key []byte) (types.Row, uint64, error) {
	w := 0
	for _, col := range c.cols {
		w = max(w, col+1)
	}
	row := make(types.Row, w)
	for _, col := range c.cols {
		var err error
		if row[col], key, err = types.DecodeValue(key); err != nil {
			return nil, 0, fmt.Errorf("stored key: %w", err)
		}
	}
	if len(key) != 0 {
		return nil, 0, fmt.Errorf("stored key has %d bytes more than %d values", len(key), len(c.cols))
	}
	return row, types.HashColumns(row, c.cols), nil
}
