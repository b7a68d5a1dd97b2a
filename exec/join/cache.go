package join

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"

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
// Join keys are interned as dense ids in an open-addressing table (see
// keytable.go, over the exchange's hash), and each id's state, which holds
// the key's hash and first column, is a value in a flat slice: a row
// costs one hash probe and no allocation.
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
//
// A row none of whose values refers to memory (numbers, timestamps,
// booleans, NULLs, empty strings: no S, no X) is kept flat, as 16-byte
// flatValues in slabs without pointers, which the collector neither scans
// nor tracks writes to; such a row has a negative id and is rebuilt into
// Values when it is read: such rows take a third of the memory (16 bytes
// a value instead of 48) and the collector has nothing to scan in them.
type rowCache struct {
	width  int
	chunks [][]types.Value // rows, chunkRows per chunk
	ids    idPool          // of the rows in chunks
	// flat rows, chunkRows per chunk; their ids are ^(index). Only a
	// cache made with flat set keeps rows flat (the regular join's: the
	// interval join's reads its rows in place).
	flatOK  bool
	flat    [][]flatValue
	flatIDs idPool    // of the rows in flat, as indexes
	tmp     types.Row // scratch of width values
	// ukeys holds the map keys of the cached rows end to end; waste counts
	// the bytes of released ones, reclaimed by compactKeys.
	ukeys keySlab
	waste int
	// seed hashes the map keys (see hash); ixs are the hash indexes of
	// the long row lists (see keyRows.ix), ixFree the unused handles.
	seed   maphash.Seed
	ixs    [][]uint32
	ixFree []int32
	// constHash makes every map key hash alike (tests of collisions).
	constHash bool
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
// that one lookup finds a row's matches and its own side's rows, and the
// key's hash and first column, which the lookup compares (see
// keytable.go). Its 192 bytes are three whole cache lines: one per side
// and one for the lookup.
type keyState struct {
	sides [2]keyRows
	hash  uint64
	key0  types.Value
	dirty bool
}

// keyRows is one side's cached rows of a join key.
type keyRows struct {
	// rows in the order they came, put into the byte order of their map
	// keys (the order the backend iterates them in, so that matches are
	// emitted in the same order) when they are iterated (see sortRows):
	// an insertion then costs no search of a sorted list and no move of
	// its tail. At most one, with no map key, for the value layout.
	rows     []cachedRow
	cleared  bool // value layout: the value was removed
	unsorted bool // rows may be out of byte order
	// ix is 1 + the handle of rows' hash index in the side's ixs once
	// rows has more than indexMin rows, else 0. An index of size 2^b
	// (at least 4/3 of the rows) holds 1 + a row's position in its low b
	// bits and the high bits of the row's map key hash above them, so
	// that a probe passing another key's slot does not read that row.
	ix int32
	// inl is where rows starts (see joinCache.add): a key's first row
	// needs no allocation and no memory beyond its state; a second one
	// moves the list to the heap. keyStates never move (they live in
	// chunks), so rows may point here.
	inl [1]cachedRow
}

// inlineKey is the longest map key a cachedRow holds inline.
const inlineKey = 15

// cachedRow is a cached row: its id in the side's slabs and its map key,
// inline or as a range of the side's ukeys (then with 32 bits of the
// key's hash, which a lookup compares before the key's bytes). It holds no pointer, and its
// 32 bytes make a key's row list half the size (and half the allocation
// as it grows) of a layout with a separate offset field.
type cachedRow struct {
	// pre holds a map key of at most inlineKey bytes (a row of a few
	// numbers), which then needs no slab bytes, and a lookup comparing
	// it no memory access beyond the row list; a longer key's offset in
	// ukeys is in its first 8 bytes (see ukOff), its hash in the next 4.
	pre   [inlineKey]byte
	dirty bool
	ukLen int32
	row   int32
	count int32
	assoc int32
}

// ukOff is the offset in ukeys of a map key longer than inlineKey.
func (r *cachedRow) ukOff() int { return int(binary.LittleEndian.Uint64(r.pre[:8])) }

func (r *cachedRow) setUKOff(off int) { binary.LittleEndian.PutUint64(r.pre[:8], uint64(off)) }

// keyHash is the stored hash of a map key longer than inlineKey.
func (r *cachedRow) keyHash() uint32 { return binary.LittleEndian.Uint32(r.pre[8:12]) }

// flatValue is a Value without S and X.
type flatValue struct {
	n   int64
	aux int32
	k   types.Kind
}

// isFlat says whether r can be kept flat.
func isFlat(r types.Row) bool {
	for i := range r {
		if r[i].S != "" || r[i].X != nil {
			return false
		}
	}
	return true
}

func newRowCache(width int, flat bool) *rowCache {
	return &rowCache{width: width, flatOK: flat, tmp: make(types.Row, width), seed: maphash.MakeSeed()}
}

// row returns the values of row id, which is not flat.
func (c *rowCache) row(id int32) types.Row {
	ch := c.chunks[id/chunkRows]
	o := int(id%chunkRows) * c.width
	return types.Row(ch[o : o+c.width : o+c.width])
}

// flatRow returns the flat values of row id (< 0).
func (c *rowCache) flatRow(id int32) []flatValue {
	i := ^id
	ch := c.flat[i/chunkRows]
	o := int(i%chunkRows) * c.width
	return ch[o : o+c.width : o+c.width]
}

// get returns the values of row id: its own for a row kept as Values,
// else rebuilt into dst (of the row's width).
func (c *rowCache) get(id int32, dst types.Row) types.Row {
	if id >= 0 {
		return c.row(id)
	}
	for i, f := range c.flatRow(id) {
		dst[i] = types.Value{K: f.k, Aux: f.aux, N: f.n}
	}
	return dst
}

// newRow stores a copy of r and returns its id.
func (c *rowCache) newRow(r types.Row) int32 {
	if c.flatOK && isFlat(r) {
		return c.newFlat(r)
	}
	id, fresh := c.ids.take()
	if fresh && int(id/chunkRows) == len(c.chunks) {
		c.chunks = append(c.chunks, make([]types.Value, chunkRows*c.width))
	}
	copy(c.row(id), r)
	return id
}

func (c *rowCache) newFlat(r types.Row) int32 {
	i, fresh := c.flatIDs.take()
	if fresh && int(i/chunkRows) == len(c.flat) {
		c.flat = append(c.flat, make([]flatValue, chunkRows*c.width))
	}
	f := c.flatRow(^i)
	for k := range f {
		f[k] = flatValue{n: r[k].N, aux: r[k].Aux, k: r[k].K}
	}
	return ^i
}

// replace stores r in place of row id and returns the row's id, which
// changes when r is kept the other way.
func (c *rowCache) replace(id int32, r types.Row) int32 {
	if flat := c.flatOK && isFlat(r); flat == (id < 0) {
		if !flat {
			copy(c.row(id), r)
			return id
		}
		f := c.flatRow(id)
		for k := range f {
			f[k] = flatValue{n: r[k].N, aux: r[k].Aux, k: r[k].K}
		}
		return id
	}
	c.releaseRow(id)
	return c.newRow(r)
}

// releaseRow frees row id (and drops its values' references).
func (c *rowCache) releaseRow(id int32) {
	if id < 0 {
		c.flatIDs.release(^id)
		return
	}
	clear(c.row(id))
	c.ids.release(id)
}

// release frees row r and its map key's bytes.
func (c *rowCache) release(r *cachedRow) {
	c.releaseRow(r.row)
	if r.ukLen > inlineKey {
		c.waste += int(r.ukLen)
	}
}

// ukey returns the map key of r.
func (c *rowCache) ukey(r *cachedRow) []byte {
	if r.ukLen <= inlineKey {
		return r.pre[:r.ukLen:r.ukLen]
	}
	return c.ukeys.get(r.ukOff(), r.ukLen)
}

// setKey stores map key k, of hash h, for r: inline when short, else in
// the slab.
func (c *rowCache) setKey(r *cachedRow, k []byte, h uint32) {
	r.ukLen = int32(len(k))
	if len(k) <= inlineKey {
		copy(r.pre[:], k)
		return
	}
	r.setUKOff(c.addKey(k))
	binary.LittleEndian.PutUint32(r.pre[8:12], h)
}

// hash is the hash of map key k that the row lists are looked up by.
func (c *rowCache) hash(k []byte) uint32 {
	if c.constHash {
		return 0
	}
	return uint32(maphash.Bytes(c.seed, k))
}

// rowHash is the hash of r's map key.
func (c *rowCache) rowHash(r *cachedRow) uint32 {
	if r.ukLen > inlineKey {
		return r.keyHash()
	}
	return c.hash(r.pre[:r.ukLen])
}

// holds says whether r's map key is ukey, of hash h.
func (c *rowCache) holds(r *cachedRow, ukey []byte, h uint32) bool {
	if int(r.ukLen) != len(ukey) {
		return false
	}
	if r.ukLen <= inlineKey {
		return string(r.pre[:r.ukLen]) == string(ukey)
	}
	return r.keyHash() == h && string(c.ukeys.get(r.ukOff(), r.ukLen)) == string(ukey)
}

// addKey stores map key k and returns its offset.
func (c *rowCache) addKey(k []byte) int {
	return c.ukeys.add(k)
}

// needsCompaction reports whether most of the key bytes are released ones.
func (c *rowCache) needsCompaction() bool {
	return c.waste > 1<<20 && c.waste > c.ukeys.used/2
}

// indexMin is the longest row list without a hash index: a scan of so
// few rows, comparing lengths and hashes (or short keys) in the list
// itself, costs no more than an index probe.
const indexMin = 8

// find is the position in e.rows of map key ukey, of hash h (-1: none).
func (e *keyRows) find(c *rowCache, ukey []byte, h uint32) int {
	if e.ix == 0 {
		for i := range e.rows {
			if c.holds(&e.rows[i], ukey, h) {
				return i
			}
		}
		return -1
	}
	ix := c.ixs[e.ix-1]
	mask := uint32(len(ix) - 1)
	for i := h & mask; ix[i] != 0; i = (i + 1) & mask {
		if ix[i]&^mask != h&^mask {
			continue
		}
		if p := ix[i]&mask - 1; c.holds(&e.rows[p], ukey, h) {
			return int(p)
		}
	}
	return -1
}

// appendRow appends r, of map key hash h, to e.rows and its index.
func (e *keyRows) appendRow(c *rowCache, r cachedRow, h uint32) {
	if n := len(e.rows); n > 0 {
		e.unsorted = true
		if n == 1 && cap(e.rows) == 1 {
			// Leaving the inline row: room for four at once (one
			// allocation where growing would make two, of 2 and 4).
			e.rows = append(make([]cachedRow, 0, 4), e.rows...)
		}
	}
	e.rows = append(e.rows, r)
	switch n := len(e.rows); {
	case e.ix != 0 && 4*n <= 3*len(c.ixs[e.ix-1]):
		ix := c.ixs[e.ix-1]
		mask := uint32(len(ix) - 1)
		i := h & mask
		for ix[i] != 0 {
			i = (i + 1) & mask
		}
		ix[i] = h&^mask | uint32(n)
	case n > indexMin:
		e.reindex(c)
	}
}

// reindex builds e.rows' hash index anew (or drops it when the list is
// short), with room to grow by half.
func (e *keyRows) reindex(c *rowCache) {
	n := len(e.rows)
	if n <= indexMin {
		c.freeIndex(e)
		return
	}
	size := 32
	for size < 2*n {
		size <<= 1
	}
	if e.ix == 0 {
		if k := len(c.ixFree); k > 0 {
			e.ix = c.ixFree[k-1] + 1
			c.ixFree = c.ixFree[:k-1]
		} else {
			c.ixs = append(c.ixs, nil)
			e.ix = int32(len(c.ixs))
		}
	}
	ix := c.ixs[e.ix-1]
	if len(ix) == size {
		clear(ix)
	} else {
		ix = make([]uint32, size)
		c.ixs[e.ix-1] = ix
	}
	mask := uint32(size - 1)
	for p := range e.rows {
		h := c.rowHash(&e.rows[p])
		i := h & mask
		for ix[i] != 0 {
			i = (i + 1) & mask
		}
		ix[i] = h&^mask | uint32(p+1)
	}
}

// freeIndex drops e's hash index, if it has one.
func (c *rowCache) freeIndex(e *keyRows) {
	if e.ix != 0 {
		c.ixs[e.ix-1] = nil
		c.ixFree = append(c.ixFree, e.ix-1)
		e.ix = 0
	}
}

// sortRows puts e.rows into the byte order of their map keys.
func (e *keyRows) sortRows(c *rowCache) {
	if !e.unsorted {
		return
	}
	e.unsorted = false
	slices.SortFunc(e.rows, func(a, b cachedRow) int { return bytes.Compare(c.ukey(&a), c.ukey(&b)) })
	if e.ix != 0 {
		e.reindex(c)
	}
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
	// slots is the key table (see keytable.go); restVals holds the key
	// columns after the first, width-1 per id.
	slots    []uint64
	width    int
	restVals []types.Value
	live     int
	// states by key id, keyChunk per chunk (see state), ids their ids.
	states [][]keyState
	ids    idPool
	dirty  []int32 // ids changed since the last write-back
	// dels are the map keys removed since the last write-back, end to
	// end, in the order of their removal (see deleted).
	dels    []byte
	delRefs []delRef
	// complete says every key with state is cached (a fresh start), so
	// that a miss is a new key without a backend read.
	complete bool
}

func newJoinCache(keyWidth int, complete bool) *joinCache {
	return &joinCache{slots: make([]uint64, minKeySlots), width: keyWidth, complete: complete}
}

// cached returns the cached state of the join key of row (of side input),
// reading both sides' rows from the backend on a miss.
func (j *regular) cached(input int, row types.Row) (*keyState, error) {
	jc := j.cache
	keys := j.sides[input].spec.Keys
	var hash uint64
	if j.hint {
		// prefetch found the key's id (if it was cached then: ids are
		// released only at a write-back, so it still holds).
		j.hint = false
		hash = j.hintHash
		if id := j.hintID; id >= 0 {
			j.curID = id
			return jc.state(id), nil
		}
	} else {
		hash = types.HashColumns(row, keys)
	}
	if id := jc.find(row, keys, hash); id >= 0 {
		j.curID = id
		return jc.state(id), nil
	}
	id := jc.add(row, keys, hash)
	j.curID = id
	ks := jc.state(id)
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
			_, err := decodeRowInto(c.tmp, rec)
			if err != nil {
				derr = fmt.Errorf("join: %s state: %w", s.name, err)
				return false
			}
			id := c.newRow(c.tmp)
			clear(c.tmp)
			cr := cachedRow{row: id, count: int32(count), assoc: int32(assoc)}
			if ukey != nil {
				c.setKey(&cr, ukey, c.hash(ukey))
			}
			// In the backend's order, which is the map keys' byte order.
			e.rows = append(e.rows, cr)
			return true
		})
		if err == nil && len(e.rows) > indexMin {
			e.reindex(c)
		}
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

// prefetchRows is how many rows prefetch looks ahead: the memory they
// touch (about ten cache lines each, 80 KB) stays in a core's L2 cache
// until they are processed, also on a loaded machine (64 and 128 rows
// measured a little faster than 256).
const prefetchRows = 128

// prefetch is a read-only pass over rows (of side input) before they are
// processed: it looks up their join keys and loads what processing them
// will read (the key's table slot, its state, both sides' row lists, the
// hash index slot of the row's map key in a long list of its side, and
// the first rows of the other side), one kind of load per
// loop over the rows. The loads of one loop do not depend on one
// another, so the processor overlaps their cache misses, where a row at a
// time would wait for each (over 100 000 random keys nearly every one of
// them misses). It records each row's key hash and id for cached; a key
// not yet cached gets -1 and is looked up again when its row comes (an
// earlier row of the run may add it).
func (j *regular) prefetch(input int, rows []types.Row) {
	jc := j.cache
	keys := j.sides[input].spec.Keys
	n := len(rows)
	if cap(j.pfHash) < n {
		j.pfHash, j.pfID = make([]uint64, n), make([]int32, n)
	}
	hs, ids := j.pfHash[:n], j.pfID[:n]
	sink := j.sink
	for i, row := range rows {
		h := types.HashColumns(row, keys)
		hs[i] = h
		sink += jc.touch(h)
	}
	for i, row := range rows {
		ids[i] = jc.find(row, keys, hs[i])
	}
	for _, id := range ids {
		if id >= 0 {
			ks := jc.state(id)
			sink += uint64(len(ks.sides[0].rows) + len(ks.sides[1].rows))
		}
	}
	other := 1 - input
	for _, id := range ids {
		if id >= 0 {
			ks := jc.state(id)
			if o := ks.sides[other].rows; len(o) > 0 {
				sink += uint64(o[0].row) + uint64(o[len(o)-1].row)
			}
			if m := ks.sides[input].rows; len(m) > 0 {
				sink += uint64(m[0].ukLen) + uint64(m[len(m)-1].ukLen)
			}
		}
	}
	j.pfUKOn = false
	if me := j.sides[input]; len(me.cache.ixs) > 0 && me.spec.Spec != JoinKeyContainsUniqueKey {
		// The row lists long enough to have a hash index: a row's map key
		// is looked up in it, two dependent loads (the index's slice and
		// its slot) that miss the cache when the key's list is long.
		j.prefetchIndexes(me, rows, ids)
	}
	c := j.sides[other].cache
	for _, id := range ids {
		if id >= 0 {
			o := jc.state(id).sides[other].rows
			for k := range min(len(o), 2) {
				if id := o[k].row; id >= 0 {
					r := c.row(id)
					sink += uint64(r[0].N) + uint64(r[len(r)-1].N)
				} else {
					r := c.flatRow(id)
					sink += uint64(r[0].n) + uint64(r[len(r)-1].n)
				}
			}
		}
	}
	j.sink = sink
}

// ukeyHint is the map key of the row being processed, and its hash, as
// prefetch encoded them.
type ukeyHint struct {
	ok   bool
	side int
	key  []byte
	hash uint32
}

// prefetchIndexes encodes the map keys of rows (of side me, whose key ids
// are ids) for processing them (see ukeyHint) and loads the hash index
// slots they will be looked up in.
func (j *regular) prefetchIndexes(me *sideView, rows []types.Row, ids []int32) {
	jc, c := j.cache, me.cache
	n := len(rows)
	if cap(j.pfUKEnd) < n {
		j.pfUKEnd, j.pfUKHash = make([]int, n), make([]uint32, n)
	}
	ends, hs := j.pfUKEnd[:n], j.pfUKHash[:n]
	buf := j.pfUK[:0]
	sink := j.sink
	for i, id := range ids {
		if id >= 0 {
			if x := jc.state(id).sides[me.index].ix; x != 0 {
				sink += uint64(len(c.ixs[x-1]))
			}
		}
		st := len(buf)
		if me.spec.Spec == HasUniqueKey {
			buf = appendKey(buf, rows[i], me.spec.UniqueKey)
		} else {
			buf = types.AppendRow(buf, rows[i])
		}
		ends[i] = len(buf)
		hs[i] = c.hash(buf[st:])
	}
	for i, id := range ids {
		if id >= 0 {
			if x := jc.state(id).sides[me.index].ix; x != 0 {
				ix := c.ixs[x-1]
				sink += uint64(ix[hs[i]&uint32(len(ix)-1)])
			}
		}
	}
	j.pfUK, j.pfUKOn, j.sink = buf, true, sink
}

// dropKey forgets key id and its cached rows (a failed load, or a key
// left without rows after a write-back).
func (j *regular) dropKey(id int32) {
	ks := j.cache.state(id)
	for i, s := range j.sides {
		e := &ks.sides[i]
		for k := range e.rows {
			s.cache.release(&e.rows[k])
		}
		s.cache.freeIndex(e)
	}
	j.cache.release(id)
}

// compactKeys rewrites side i's map keys without the released ones.
func (j *regular) compactKeys(i int) {
	c := j.sides[i].cache
	old := c.ukeys
	c.ukeys = keySlab{}
	for id := range j.cache.ids.next {
		e := &j.cache.state(id).sides[i]
		for k := range e.rows {
			r := &e.rows[k]
			if r.ukLen > inlineKey {
				r.setUKOff(c.addKey(old.get(r.ukOff(), r.ukLen)))
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
			e.rows[0].row = c.replace(e.rows[0].row, row)
		}
		e.rows[0].count, e.rows[0].assoc, e.rows[0].dirty = 1, int32(assoc), true
		e.cleared = false
		s.markDirty()
		return
	}
	ukey, h := s.ukey(row)
	i := e.find(c, ukey, h)
	switch {
	case i < 0:
		cr := cachedRow{row: c.newRow(row), count: 1, assoc: int32(assoc), dirty: true}
		c.setKey(&cr, ukey, h)
		e.appendRow(c, cr, h)
	case s.spec.Spec == HasUniqueKey:
		r := &e.rows[i]
		r.row = c.replace(r.row, row)
		r.count, r.assoc, r.dirty = 1, int32(assoc), true
	default:
		r := &e.rows[i]
		r.count, r.assoc, r.dirty = r.count+1, int32(assoc), true
	}
	s.markDirty()
}

// ukey returns the map key of row (a side with map keys) and its hash:
// prefetch's when it made them.
func (s *sideView) ukey(row types.Row) ([]byte, uint32) {
	if h := s.ukHint; h.ok && h.side == s.index {
		return h.key, h.hash
	}
	if s.spec.Spec == HasUniqueKey {
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
	} else {
		s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	}
	return s.ukBuf, s.cache.hash(s.ukBuf)
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
	}
	ukey, h := s.ukey(row)
	i := e.find(c, ukey, h)
	if i < 0 {
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
	// Deleted in place, which keeps the order; the positions after it
	// change, so the index is built anew (a retraction is rare).
	e.rows = slices.Delete(e.rows, i, i+1)
	if e.ix != 0 {
		e.reindex(c)
	}
	s.markDirty()
}

// setCachedKey makes cached key id the backend's current key.
func (j *regular) setCachedKey(id int32) error {
	j.keyVals = j.cache.key(j.keyVals[:0], id)
	j.keyBuf = appendCachedKey(j.keyBuf[:0], j.keyVals)
	clear(j.keyVals)
	if err := j.b.SetCurrentKey(j.cache.state(id).hash, j.keyBuf); err != nil {
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
		ks := jc.state(id)
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
		err := s.value.Put(nil, s.record(c.get(e.rows[0].row, c.tmp), int(e.rows[0].assoc)))
		clear(c.tmp)
		return err
	}
	for i := range e.rows {
		r := &e.rows[i]
		if !r.dirty {
			continue
		}
		r.dirty = false
		var v []byte
		if s.spec.Spec == HasUniqueKey {
			v = s.record(c.get(r.row, c.tmp), int(r.assoc))
		} else {
			v = s.counts(int(r.count), int(r.assoc))
		}
		if err := s.m.Put(nil, c.ukey(r), v); err != nil {
			return err
		}
	}
	return nil
}
