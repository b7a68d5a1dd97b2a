package join

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/types"
)

// rowCache holds one side's rows of a regular join decoded, per join key,
// in front of its kv state: a row then joins the other side's rows of its
// key without a kv scan and a decode per stored row, and is stored without
// encoding a kv entry per input row. It is a write-back cache (KEYED.md
// rule 2): a key is loaded from the backend on its first use, changes are
// marked dirty and written back at PrepareSnapshot, after which the
// backend holds exactly what the uncached operator would have written.
//
// It is used only on the hashmap backend (whose state lives in memory
// anyway, so the cache needs no bound) and only when neither side has a
// state TTL (the cache does not track kv's per-entry write times); other
// joins read and write the backend per row.
type rowCache struct {
	width int

	// Slabs the cached rows and map keys are cut from, so that storing a
	// row does not allocate per row; free holds rows of removed entries
	// for reuse (every row of a side has the same width).
	vals []types.Value
	free []types.Row
	buf  []byte
}

// keyState is the cached state of one join key: both sides' rows, so
// that one map lookup finds a row's matches and its own side's rows.
type keyState struct {
	key   string
	hash  uint64
	sides [2]keyRows
	dirty bool
}

// keyRows is one side's cached rows of a join key.
type keyRows struct {
	// one holds the first row inline: a key with one row per side (a
	// unique key, or a typical key of a large key space) then needs no
	// separate allocation, nor the pointer chase to it.
	one [1]cachedRow
	// rows in the byte order of their map keys (the order the backend
	// iterates them in, so matches are emitted in the same order); at most
	// one, with a nil ukey, for the value layout.
	rows []cachedRow
	// dels are the map keys removed since the last write-back, end to end.
	dels    []byte
	delEnds []int
	cleared bool // value layout: the value was removed
}

type cachedRow struct {
	ukey  []byte
	row   types.Row
	count int
	assoc int
	dirty bool
}

func newRowCache(width int) *rowCache {
	return &rowCache{width: width}
}

// newRow returns a copy of r cut from the slab.
func (c *rowCache) newRow(r types.Row) types.Row {
	var dst types.Row
	if n := len(c.free); n > 0 {
		dst = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		if cap(c.vals)-len(c.vals) < c.width {
			c.vals = make([]types.Value, 0, max(256, c.width)*c.width)
		}
		st := len(c.vals)
		c.vals = c.vals[:st+c.width]
		dst = types.Row(c.vals[st : st+c.width : st+c.width])
	}
	copy(dst, r)
	return dst
}

// release returns a removed entry's row for reuse, dropping its values'
// references.
func (c *rowCache) release(r types.Row) {
	clear(r)
	c.free = append(c.free, r)
}

// newBytes returns a copy of b cut from the byte slab.
func (c *rowCache) newBytes(b []byte) []byte {
	if cap(c.buf)-len(c.buf) < len(b) {
		c.buf = make([]byte, 0, max(16<<10, len(b)))
	}
	st := len(c.buf)
	c.buf = append(c.buf, b...)
	return c.buf[st:len(c.buf):len(c.buf)]
}

// find is the position of ukey in e.rows and whether it is there.
func (e *keyRows) find(ukey []byte) (int, bool) {
	return slices.BinarySearchFunc(e.rows, ukey, func(r cachedRow, k []byte) int {
		return bytes.Compare(r.ukey, k)
	})
}

func (e *keyRows) deleted(ukey []byte) {
	e.dels = append(e.dels, ukey...)
	e.delEnds = append(e.delEnds, len(e.dels))
}

// cached returns the cached state of the current join key (key, hash),
// reading both sides' rows from the backend on a miss.
func (j *regular) cached(key []byte, hash uint64) (*keyState, error) {
	if ks, ok := j.cache[string(key)]; ok {
		return ks, nil
	}
	if err := j.b.SetCurrentKey(hash, key); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	ks := &keyState{key: string(key), hash: hash}
	for i, s := range j.sides {
		e := &ks.sides[i]
		e.rows = e.one[:0:1]
		c := s.cache
		var derr error
		err := s.scan(func(rec, ukey []byte, count, assoc int) bool {
			r := c.newRow(nil)
			if _, err := decodeRowInto(r, rec); err != nil {
				derr = fmt.Errorf("join: %s state: %w", s.name, err)
				return false
			}
			cr := cachedRow{row: r, count: count, assoc: assoc}
			if ukey != nil {
				cr.ukey = c.newBytes(ukey)
			}
			e.rows = append(e.rows, cr)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return nil, err
		}
	}
	j.cache[ks.key] = ks
	return ks, nil
}

// markDirty notes that the current key's cached state changed.
func (s *sideView) markDirty() {
	if ks := s.curKey; !ks.dirty {
		ks.dirty = true
		*s.dirty = append(*s.dirty, ks)
	}
}

// addCached is add on the cache.
func (s *sideView) addCached(row types.Row, assoc int) {
	c, e := s.cache, s.cur
	var ukey []byte
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		if len(e.rows) == 0 {
			e.rows = append(e.rows, cachedRow{row: c.newRow(row)})
		} else {
			copy(e.rows[0].row, row)
		}
		e.rows[0].count, e.rows[0].assoc, e.rows[0].dirty = 1, assoc, true
		e.cleared = false
		s.markDirty()
		return
	case HasUniqueKey:
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
	default:
		s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	}
	ukey = s.ukBuf
	i, ok := e.find(ukey)
	switch {
	case !ok:
		e.rows = slices.Insert(e.rows, i, cachedRow{ukey: c.newBytes(ukey), row: c.newRow(row), count: 1, assoc: assoc, dirty: true})
	case s.spec.Spec == HasUniqueKey:
		r := &e.rows[i]
		copy(r.row, row)
		r.count, r.assoc, r.dirty = 1, assoc, true
	default:
		r := &e.rows[i]
		r.count, r.assoc, r.dirty = r.count+1, assoc, true
	}
	s.markDirty()
}

// retractCached is retract on the cache.
func (s *sideView) retractCached(row types.Row) {
	c, e := s.cache, s.cur
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		if len(e.rows) > 0 {
			c.release(e.rows[0].row)
			e.rows = e.rows[:0]
		}
		e.cleared = true
		s.markDirty()
		return
	case HasUniqueKey:
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
	default:
		s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	}
	i, ok := e.find(s.ukBuf)
	if !ok {
		return
	}
	r := &e.rows[i]
	if s.spec.Spec == NoUniqueKey && r.count > 1 {
		r.count, r.dirty = r.count-1, true
		s.markDirty()
		return
	}
	e.deleted(r.ukey)
	c.release(r.row)
	e.rows = slices.Delete(e.rows, i, i+1)
	s.markDirty()
}

// writeBack writes every dirty key's changes to the backend and drops the
// keys left without rows from the cache.
func (j *regular) writeBack() error {
	for _, ks := range j.dirty {
		j.keyBuf = append(j.keyBuf[:0], ks.key...)
		if err := j.b.SetCurrentKey(ks.hash, j.keyBuf); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		empty := true
		for i, s := range j.sides {
			e := &ks.sides[i]
			if err := s.writeKey(e); err != nil {
				return fmt.Errorf("join: %s state: %w", s.name, err)
			}
			e.cleared = false
			e.dels, e.delEnds = e.dels[:0], e.delEnds[:0]
			empty = empty && len(e.rows) == 0
		}
		ks.dirty = false
		if empty {
			delete(j.cache, ks.key)
		}
	}
	clear(j.dirty)
	j.dirty = j.dirty[:0]
	return nil
}

func (s *sideView) writeKey(e *keyRows) error {
	if s.value != nil {
		if len(e.rows) == 0 {
			if e.cleared {
				return s.value.Clear(nil)
			}
			return nil
		}
		e.rows[0].dirty = false
		return s.value.Put(nil, s.record(e.rows[0].row, e.rows[0].assoc))
	}
	st := 0
	for _, end := range e.delEnds {
		if err := s.m.Delete(nil, e.dels[st:end]); err != nil {
			return err
		}
		st = end
	}
	for i := range e.rows {
		r := &e.rows[i]
		if !r.dirty {
			continue
		}
		r.dirty = false
		var v []byte
		if s.spec.Spec == HasUniqueKey {
			v = s.record(r.row, r.assoc)
		} else {
			v = s.counts(r.count, r.assoc)
		}
		if err := s.m.Put(nil, r.ukey, v); err != nil {
			return err
		}
	}
	return nil
}
