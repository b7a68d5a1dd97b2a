package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// cache is the write-back cache of decoded entries of the window Top-N
// (windowRank), in front of its kv state: one entry per (partition,
// window), interned by a keyed.Table whose ids index the operator's arrays
// of decoded rows. A miss loads the entry from the backend (and tells the
// operator whether the (partition, window) is new, which the window index
// needs); a change marks it dirty; dirty entries are written back by
// PrepareSnapshot and before the cache is emptied to stay inside its bound
// (counted in values, statecache's share of the budget on rocksdb): when
// it is reached at the start of a batch, every dirty entry is written back
// and the cache starts empty. The unwindowed deduplication and Top-N are
// on statecache.Cache, which has no namespaces and no new-entry signal.
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

// entryMeta is the cache's bookkeeping of one entry.
type entryMeta struct {
	dirty bool
}

func newCache(cols []int, nkey int) *cache {
	return &cache{keys: keyed.NewTable(cols), nkey: nkey}
}

// valueBytes is the estimated memory of one decoded value held in the
// cache, its payload included.
const valueBytes = int(unsafe.Sizeof(types.Value{})) + 16

// cacheLimit returns the values a cache in front of b may hold
// (statecache.Bound: none on hashmap, a share of the budget on rocksdb).
// override, when > 0, replaces it (tests forcing evictions).
func cacheLimit(b *kv.Backend, override int) int {
	if override > 0 {
		return override
	}
	return statecache.Bound(b, valueBytes, 1024)
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

// touch marks id changed.
func (c *cache) touch(id int32) {
	m := &c.meta[id]
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
