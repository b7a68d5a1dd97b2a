package join

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/types"
)

// The regular join's decoded write-back cache (KEYED.md rule 2) holds
// both sides' rows per join key in front of its kv state: a row then joins
// the other side's rows of its key without a kv scan and a decode per
// stored row, and is stored without encoding a kv entry per input row. A
// key is loaded from the backend on its first use (not at all on a fresh
// start, while the backend holds nothing the cache does not), changes are
// marked dirty and written back at PrepareSnapshot, after which the
// backend holds exactly what the uncached operator would have written.
//
// Join keys are interned as dense ids in an open-addressing table
// (keyed.OpenTable, over the exchange's hash), and each id's state is a
// value in a flat slice: a row costs one hash probe and no allocation.
// The per-key row lists hold no pointers (row ids into chunked slabs,
// unique-key bytes as offsets into one byte slab), so that growing them
// moves plain memory and the collector does not scan them.
//
// It is used only on the hashmap backend (whose state lives in memory
// anyway, so the cache needs no bound) and only when neither side has a
// state TTL (the cache does not track kv's per-entry write times); other
// joins read and write the backend per row.

// chunkRows is how many rows one slab chunk of a side holds.
const chunkRows = 1024

// rowCache is one side's storage of cached rows and their map keys.
type rowCache struct {
	width  int
	chunks [][]types.Value // rows, chunkRows per chunk
	free   []int32         // ids of released rows, for reuse
	next   int32           // rows handed out so far
	// ukeys holds the map keys of the cached rows end to end; waste counts
	// the bytes of released ones, reclaimed by compactKeys.
	ukeys keySlab
	waste int
}

// keySlab stores byte strings end to end in pages of keyPage bytes (a
// longer string gets a page of its own), addressed by page<<32 | offset:
// one slab doubled as it grew would copy all the keys at each doubling
// and leave the old copy to the collector, twice the keys' memory at the
// peak and a heap target to match. The first page doubles up to keyPage,
// so that a small state stays small.
type keySlab struct {
	pages [][]byte
	used  int // bytes in all pages
}

const keyPage = 1 << 20

// add appends k and returns its address.
func (s *keySlab) add(k []byte) int {
	n := len(s.pages)
	if n == 0 {
		s.pages = append(s.pages, make([]byte, 0, min(max(256, len(k)), keyPage)))
		n = 1
	}
	last := &s.pages[n-1]
	if fits := len(*last)+len(k) <= cap(*last); !fits && !(n == 1 && len(*last)+len(k) <= keyPage) {
		s.pages = append(s.pages, make([]byte, 0, max(keyPage, len(k))))
		n++
		last = &s.pages[n-1]
	}
	off := len(*last)
	*last = append(*last, k...)
	s.used += len(k)
	return (n-1)<<32 | off
}

// get returns the n bytes at address off.
func (s *keySlab) get(off int, n int32) []byte {
	o := off & (1<<32 - 1)
	end := o + int(n)
	return s.pages[off>>32][o:end:end]
}

// keyState is the cached state of one join key: both sides' rows, so
// that one lookup finds a row's matches and its own side's rows.
type keyState struct {
	sides [2]keyRows
	dirty bool
}

// keyRows is one side's cached rows of a join key.
type keyRows struct {
	// rows in the byte order of their map keys (the order the backend
	// iterates them in, so matches are emitted in the same order); at most
	// one, with no map key, for the value layout.
	rows    []cachedRow
	cleared bool // value layout: the value was removed
}

// inlineKey is the longest map key a cachedRow holds inline.
const inlineKey = 16

// cachedRow is a cached row: its id in the side's slabs and its map key
// as a range of the side's ukeys. It holds no pointer.
type cachedRow struct {
	// pre holds a map key of at most inlineKey bytes (a row of a few
	// numbers), which then needs no slab bytes, and the binary search
	// comparing it no memory access beyond the row list.
	pre   [inlineKey]byte
	ukOff int
	ukLen int32
	row   int32
	count int32
	assoc int32
	dirty bool
}

func newRowCache(width int) *rowCache {
	return &rowCache{width: width}
}

// row returns the values of row id.
func (c *rowCache) row(id int32) types.Row {
	ch := c.chunks[id/chunkRows]
	o := int(id%chunkRows) * c.width
	return types.Row(ch[o : o+c.width : o+c.width])
}

// newRow stores a copy of r and returns its id.
func (c *rowCache) newRow(r types.Row) int32 {
	var id int32
	if n := len(c.free); n > 0 {
		id = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		id = c.next
		c.next++
		if int(id/chunkRows) == len(c.chunks) {
			c.chunks = append(c.chunks, make([]types.Value, chunkRows*c.width))
		}
	}
	copy(c.row(id), r)
	return id
}

// release frees row id (and drops its values' references) and its map
// key's bytes.
func (c *rowCache) release(r *cachedRow) {
	clear(c.row(r.row))
	c.free = append(c.free, r.row)
	if r.ukLen > inlineKey {
		c.waste += int(r.ukLen)
	}
}

// ukey returns the map key of r.
func (c *rowCache) ukey(r *cachedRow) []byte {
	if r.ukLen <= inlineKey {
		return r.pre[:r.ukLen:r.ukLen]
	}
	return c.ukeys.get(r.ukOff, r.ukLen)
}

// setKey stores map key k for r: inline when short, else in the slab.
func (c *rowCache) setKey(r *cachedRow, k []byte) {
	r.ukLen = int32(len(k))
	if len(k) <= inlineKey {
		copy(r.pre[:], k)
		return
	}
	r.ukOff = c.addKey(k)
}

// addKey stores map key k and returns its offset.
func (c *rowCache) addKey(k []byte) int {
	return c.ukeys.add(k)
}

// needsCompaction reports whether most of the key bytes are released ones.
func (c *rowCache) needsCompaction() bool {
	return c.waste > 1<<20 && c.waste > c.ukeys.used/2
}

// find is the position of ukey in e.rows and whether it is there.
func (e *keyRows) find(c *rowCache, ukey []byte) (int, bool) {
	lo, hi := 0, len(e.rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(c.ukey(&e.rows[m]), ukey) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(e.rows) && bytes.Equal(c.ukey(&e.rows[lo]), ukey)
}

// deleted records that side's map key ukey of key id was removed. The
// removals are kept apart from the key states, which they would make
// larger (and a row's state lookup slower) for the rare retraction.
func (jc *joinCache) deleted(id int32, side int, ukey []byte) {
	jc.dels = append(jc.dels, ukey...)
	jc.delRefs = append(jc.delRefs, delRef{id: id, side: uint8(side), end: len(jc.dels)})
}

// delRef is a removed map key: its key id, side and end in dels.
type delRef struct {
	id   int32
	side uint8
	end  int
}

// joinCache is the regular join's cache: the interned join keys and
// their states.
type joinCache struct {
	keys   *keyed.OpenTable
	states []keyState // by key id
	dirty  []int32    // ids changed since the last write-back
	// dels are the map keys removed since the last write-back, end to
	// end, in the order of their removal (see deleted).
	dels    []byte
	delRefs []delRef
	// complete says every key with state is cached (a fresh start), so
	// that a miss is a new key without a backend read.
	complete bool
	keyRow   types.Row // scratch: the current row's key values
}

func newJoinCache(keyWidth int, complete bool) *joinCache {
	cols := make([]int, keyWidth)
	for i := range cols {
		cols[i] = i
	}
	return &joinCache{keys: keyed.NewOpenTable(cols), complete: complete, keyRow: make(types.Row, keyWidth)}
}

// cached returns the cached state of the join key of row (of side input),
// reading both sides' rows from the backend on a miss.
func (j *regular) cached(input int, row types.Row) (*keyState, error) {
	jc := j.cache
	keys := j.sides[input].spec.Keys
	for i, col := range keys {
		jc.keyRow[i] = row[col]
	}
	hash := types.HashColumns(row, keys)
	if id := jc.keys.Find(jc.keyRow, hash); id >= 0 {
		j.curID = id
		return &jc.states[id], nil
	}
	id := jc.keys.Add(jc.keyRow, hash)
	clear(jc.keyRow)
	for int(id) >= len(jc.states) {
		jc.states = append(jc.states, keyState{})
	}
	j.curID = id
	ks := &jc.states[id]
	if jc.complete {
		return ks, nil
	}
	j.keyBuf = appendKey(j.keyBuf[:0], row, keys)
	if err := j.b.SetCurrentKey(hash, j.keyBuf); err != nil {
		j.dropKey(id)
		return nil, fmt.Errorf("join: %w", err)
	}
	for i, s := range j.sides {
		e := &ks.sides[i]
		c := s.cache
		var derr error
		err := s.scan(func(rec, ukey []byte, count, assoc int) bool {
			id := c.newRow(nil)
			if _, err := decodeRowInto(c.row(id), rec); err != nil {
				c.release(&cachedRow{row: id})
				derr = fmt.Errorf("join: %s state: %w", s.name, err)
				return false
			}
			cr := cachedRow{row: id, count: int32(count), assoc: int32(assoc)}
			if ukey != nil {
				c.setKey(&cr, ukey)
			}
			e.rows = append(e.rows, cr)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			j.dropKey(id)
			return nil, err
		}
	}
	return ks, nil
}

// dropKey forgets key id and its cached rows (a failed load, or a key
// left without rows after a write-back).
func (j *regular) dropKey(id int32) {
	ks := &j.cache.states[id]
	for i, s := range j.sides {
		e := &ks.sides[i]
		for k := range e.rows {
			s.cache.release(&e.rows[k])
		}
	}
	*ks = keyState{}
	j.cache.keys.Release(id)
}

// compactKeys rewrites side i's map keys without the released ones.
func (j *regular) compactKeys(i int) {
	c := j.sides[i].cache
	old := c.ukeys
	c.ukeys = keySlab{}
	for id := range j.cache.states {
		e := &j.cache.states[id].sides[i]
		for k := range e.rows {
			r := &e.rows[k]
			if r.ukLen > inlineKey {
				r.ukOff = c.addKey(old.get(r.ukOff, r.ukLen))
			}
		}
	}
	c.waste = 0
}

// markDirty notes that the current key's cached state changed.
func (s *sideView) markDirty() {
	if ks := s.curKey; !ks.dirty {
		ks.dirty = true
		*s.dirty = append(*s.dirty, *s.curID)
	}
}

// addCached is add on the cache.
func (s *sideView) addCached(row types.Row, assoc int) {
	c, e := s.cache, s.cur
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		if len(e.rows) == 0 {
			e.rows = append(e.rows, cachedRow{row: c.newRow(row)})
		} else {
			copy(c.row(e.rows[0].row), row)
		}
		e.rows[0].count, e.rows[0].assoc, e.rows[0].dirty = 1, int32(assoc), true
		e.cleared = false
		s.markDirty()
		return
	case HasUniqueKey:
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
	default:
		s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	}
	ukey := s.ukBuf
	i, ok := e.find(c, ukey)
	switch {
	case !ok:
		cr := cachedRow{row: c.newRow(row), count: 1, assoc: int32(assoc), dirty: true}
		c.setKey(&cr, ukey)
		e.rows = slices.Insert(e.rows, i, cr)
	case s.spec.Spec == HasUniqueKey:
		r := &e.rows[i]
		copy(c.row(r.row), row)
		r.count, r.assoc, r.dirty = 1, int32(assoc), true
	default:
		r := &e.rows[i]
		r.count, r.assoc, r.dirty = r.count+1, int32(assoc), true
	}
	s.markDirty()
}

// retractCached is retract on the cache.
func (s *sideView) retractCached(row types.Row) {
	c, e := s.cache, s.cur
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		if len(e.rows) > 0 {
			c.release(&e.rows[0])
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
	i, ok := e.find(c, s.ukBuf)
	if !ok {
		return
	}
	r := &e.rows[i]
	if s.spec.Spec == NoUniqueKey && r.count > 1 {
		r.count, r.dirty = r.count-1, true
		s.markDirty()
		return
	}
	s.jc.deleted(*s.curID, s.index, c.ukey(r))
	c.release(r)
	e.rows = slices.Delete(e.rows, i, i+1)
	s.markDirty()
}

// setCachedKey makes cached key id the backend's current key.
func (j *regular) setCachedKey(id int32) error {
	j.keyBuf = appendCachedKey(j.keyBuf[:0], j.cache.keys.Key(id))
	if err := j.b.SetCurrentKey(j.cache.keys.Hash(id), j.keyBuf); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	return nil
}

// writeBack writes every dirty key's changes to the backend and drops the
// keys left without rows from the cache.
func (j *regular) writeBack() error {
	jc := j.cache
	// Removals first: a map key removed and added again is put below.
	st, cur := 0, int32(-1)
	for _, d := range jc.delRefs {
		if d.id != cur {
			cur = d.id
			if err := j.setCachedKey(d.id); err != nil {
				return err
			}
		}
		if err := j.sides[d.side].m.Delete(nil, jc.dels[st:d.end]); err != nil {
			return fmt.Errorf("join: %s state: %w", j.sides[d.side].name, err)
		}
		st = d.end
	}
	jc.dels, jc.delRefs = jc.dels[:0], jc.delRefs[:0]
	for _, id := range jc.dirty {
		ks := &jc.states[id]
		if err := j.setCachedKey(id); err != nil {
			return err
		}
		empty := true
		for i, s := range j.sides {
			e := &ks.sides[i]
			if err := s.writeKey(e); err != nil {
				return fmt.Errorf("join: %s state: %w", s.name, err)
			}
			e.cleared = false
			empty = empty && len(e.rows) == 0
		}
		ks.dirty = false
		if empty {
			j.dropKey(id)
		}
	}
	jc.dirty = jc.dirty[:0]
	return nil
}

func (s *sideView) writeKey(e *keyRows) error {
	c := s.cache
	if s.value != nil {
		if len(e.rows) == 0 {
			if e.cleared {
				return s.value.Clear(nil)
			}
			return nil
		}
		e.rows[0].dirty = false
		return s.value.Put(nil, s.record(c.row(e.rows[0].row), int(e.rows[0].assoc)))
	}
	for i := range e.rows {
		r := &e.rows[i]
		if !r.dirty {
			continue
		}
		r.dirty = false
		var v []byte
		if s.spec.Spec == HasUniqueKey {
			v = s.record(c.row(r.row), int(r.assoc))
		} else {
			v = s.counts(int(r.count), int(r.assoc))
		}
		if err := s.m.Put(nil, c.ukey(r), v); err != nil {
			return err
		}
	}
	return nil
}
