package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// cache is the write-back cache of decoded entries each operator of this
// package keeps in front of its kv state (KEYED.md rule 2): one entry per
// key (deduplication key, Top-N partition, window partition), interned by
// a keyed.Table whose ids index the operator's own arrays of decoded
// values. A miss loads the entry from the backend; a change marks it
// dirty; dirty entries are written back by PrepareSnapshot and before the
// cache is emptied to stay inside its bound.
//
// The bound (only on rocksdb, where the state may outgrow memory) counts
// the values held; when it is reached at the start of a batch, every dirty
// entry is written back and the cache starts empty. A hot key set that
// fits is therefore never reloaded, and a larger one costs one load per
// key per fill.
type cache struct {
	keys    *keyed.Table
	nkey    int         // leading key values that form the kv key (the rest, if any, is the namespace)
	meta    []entryMeta // by id
	pending []int32     // ids marked dirty since the last write back
	held    int         // values held (the operator's estimate)
	limit   int         // most values held; 0 = no bound
	resets  int         // times the cache was emptied to stay in its bound
	keyBuf  []byte
}

// entryMeta is the cache's bookkeeping of one entry, with one value of the
// operator's (aux) beside it, so that a row touches one cache line for
// all of them.
type entryMeta struct {
	written int64 // processing time of the entry's last change (state TTL)
	aux     int64 // the operator's (deduplication: the kept row's rowtime)
	dirty   bool
}

func newCache(cols []int, nkey int) *cache {
	return &cache{keys: keyed.NewTable(cols), nkey: nkey}
}

// valueBytes is the estimated memory of one decoded value held in the
// cache, its payload included.
const valueBytes = int(unsafe.Sizeof(types.Value{})) + 16

// cacheLimit returns the values a cache in front of b may hold: no bound
// on hashmap, a quarter of the memory budget on rocksdb (the backend's own
// cache, block cache and memtables share the rest). override, when > 0,
// replaces it (tests forcing evictions).
func cacheLimit(b *kv.Backend, override int) int {
	if override > 0 {
		return override
	}
	if b.Kind() != image.RocksDB {
		return 0
	}
	return max(1024, int(b.MemoryBudget()/4)/valueBytes)
}

// lookup returns the id of row's key (hash h); added means the key was not
// cached and the caller loads or creates its entry.
func (c *cache) lookup(row types.Row, h uint64) (int32, bool) {
	id, added := c.keys.Lookup(row, h)
	if int(id) == len(c.meta) {
		c.meta = append(c.meta, entryMeta{})
	}
	if added {
		c.meta[id] = entryMeta{}
	}
	return id, added
}

// touch marks id changed at now.
func (c *cache) touch(id int32, now int64) {
	m := &c.meta[id]
	m.written = now
	if !m.dirty {
		m.dirty = true
		c.pending = append(c.pending, id)
	}
}

// full reports whether the cache reached its bound.
func (c *cache) full() bool { return c.limit > 0 && c.held >= c.limit }

// setKey makes id's key the backend's current key.
func (c *cache) setKey(b *kv.Backend, id int32) error {
	c.keyBuf = appendKeyValues(c.keyBuf[:0], c.keys.Key(id)[:c.nkey])
	if err := b.SetCurrentKey(c.keys.Hash(id), c.keyBuf); err != nil {
		return err
	}
	return nil
}

func appendKeyValues(dst []byte, vals []types.Value) []byte {
	for _, v := range vals {
		dst = types.AppendValue(dst, v)
	}
	return dst
}

// writeBack stores every dirty entry with store.
func (c *cache) writeBack(store func(id int32) error) error {
	for _, id := range c.pending {
		if !c.meta[id].dirty || !c.keys.InUse(id) {
			continue
		}
		if err := store(id); err != nil {
			return err
		}
		c.meta[id].dirty = false
	}
	c.pending = c.pending[:0]
	return nil
}

// release forgets id without writing it back (the caller cleared or will
// not need its stored entry).
func (c *cache) release(id int32) {
	c.meta[id].dirty = false
	c.keys.Release(id)
}

// sweepCache releases the cached entries of c expired at now under ttl,
// calling drop for each first, and returns the oldest last change among
// those left (math.MaxInt64 when none).
func sweepCache(c *cache, ttl, now int64, drop func(id int32) error) (int64, error) {
	oldest := int64(math.MaxInt64)
	for id := int32(0); int(id) < c.keys.Span(); id++ {
		if !c.keys.InUse(id) {
			continue
		}
		if w := c.meta[id].written; expired(ttl, w, now) {
			if err := drop(id); err != nil {
				return 0, err
			}
			c.release(id)
		} else {
			oldest = min(oldest, w)
		}
	}
	return oldest, nil
}

// reset forgets every entry; the caller wrote back the dirty ones.
func (c *cache) reset() {
	c.resets++
	c.keys.Reset()
	c.meta = c.meta[:0]
	c.pending = c.pending[:0]
	c.held = 0
}

// encoded is the codec of a state whose values the operator encodes
// itself; id names the format.
type encoded struct{ id string }

func (e encoded) ID() string                       { return e.id }
func (encoded) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (encoded) Decode(src []byte) ([]byte, error)  { return src, nil }

// expired reports whether an entry last written at written is gone at now
// under ttl (ms; 0 = none): kv's rule, applied to cached entries and to
// the write time stored in each value (the backend stamps a value when it
// is written back, which may be later than its last change).
func expired(ttl, written, now int64) bool { return ttl > 0 && written+ttl <= now }

// varint reads a varint from src.
func varint(src []byte) (int64, []byte, error) {
	x, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, errors.New("truncated varint")
	}
	return x, src[n:], nil
}

// appendRows appends the rows of p, in rank order, after their count.
func appendRows(dst []byte, p *sortedRows) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.len()))
	for i := range p.len() {
		dst = types.AppendRow(dst, p.at(i))
	}
	return dst
}

// decodeRowsInto decodes rows written by appendRows into the empty p.
func decodeRowsInto(src []byte, p *sortedRows) ([]byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, errors.New("truncated rows")
	}
	src = src[k:]
	for i := range int(n) {
		var r types.Row
		var err error
		if r, src, err = types.DecodeRow(src); err != nil {
			return nil, err
		}
		if len(r) != p.width {
			return nil, fmt.Errorf("a row of %d columns in state of rows of %d", len(r), p.width)
		}
		p.insert(i, r)
	}
	return src, nil
}

// corrupt wraps an error met decoding the stored state of operator what.
func corrupt(what string, err error) error { return fmt.Errorf("%s: corrupt state: %w", what, err) }

// storedWidth returns the width of the first row written by appendRows.
func storedWidth(src []byte) (int, error) {
	_, k := binary.Uvarint(src)
	if k <= 0 {
		return 0, errors.New("truncated rows")
	}
	n, k2 := binary.Uvarint(src[k:])
	if k2 <= 0 || n == 0 {
		return 0, errors.New("no rows")
	}
	return int(n), nil
}
