package lookup

import (
	"container/list"
	"time"

	"github.com/flinksql/flinksql/types"
)

// fullIndex is the full cache: every row of the table in one arena, and
// an open-addressing table from key to the first of the key's rows, the
// others chained in table order. A slot keeps the key's hash and, for a
// key of one integer column, the integer itself, so that a probe touches
// the slot array and then only the rows that match: a lookup is about two
// cache misses however large the table is. Rows with a NULL key column are
// left out: a NULL never equals a key.
type fullIndex struct {
	keyCols []int
	width   int
	arena   []types.Value // row i is arena[i*width : (i+1)*width]
	n       int
	slots   []slot
	mask    uint64
	next    []int32 // index+1 of the next row with the same key
	intKey  bool    // one key column, every key an integer
	pending []types.Row
}

type slot struct {
	h     uint64
	k     int64 // the key, when intKey
	first int32 // index+1 of the key's first row; 0: empty
}

func newFullIndex(keyCols []int) *fullIndex {
	return &fullIndex{keyCols: keyCols}
}

func (ix *fullIndex) add(r types.Row) {
	for _, c := range ix.keyCols {
		if r[c].IsNull() {
			return
		}
	}
	ix.pending = append(ix.pending, r)
}

func (ix *fullIndex) row(i int32) types.Row {
	o := int(i) * ix.width
	return types.Row(ix.arena[o : o+ix.width : o+ix.width])
}

// build indexes the rows added, each key's rows in the order they were
// added (the table's order).
func (ix *fullIndex) build(width int) {
	ix.width, ix.n = width, len(ix.pending)
	ix.arena = make([]types.Value, ix.n*width)
	ix.intKey = len(ix.keyCols) == 1
	for i, r := range ix.pending {
		copy(ix.arena[i*width:(i+1)*width], r)
		if r[ix.keyCols[0]].K != types.KindInt {
			ix.intKey = false
		}
	}
	ix.pending = nil
	size := uint64(16)
	for size < uint64(2*ix.n) {
		size <<= 1
	}
	ix.slots, ix.mask = make([]slot, size), size-1
	ix.next = make([]int32, ix.n)
	last := map[int32]int32{} // first row → last row of a key, while building
	for i := 0; i < ix.n; i++ {
		r := ix.row(int32(i))
		h := types.HashColumns(r, ix.keyCols)
		s := ix.probe(h, r, ix.keyCols)
		if s.first == 0 {
			*s = slot{h: h, first: int32(i + 1)}
			if ix.intKey {
				s.k = r[ix.keyCols[0]].N
			}
			continue
		}
		tail := s.first
		if t, ok := last[s.first]; ok {
			tail = t
		}
		ix.next[tail-1] = int32(i + 1)
		last[s.first] = int32(i + 1)
	}
}

// probe returns the slot of the key that key's columns keyCols hold (the
// key row itself for a lookup: keyCols 0…n-1), or the empty slot where it
// belongs.
func (ix *fullIndex) probe(h uint64, key types.Row, keyCols []int) *slot {
	for i := h & ix.mask; ; i = (i + 1) & ix.mask {
		s := &ix.slots[i]
		if s.first == 0 {
			return s
		}
		if s.h != h {
			continue
		}
		if ix.intKey {
			if v := key[keyCols[0]]; v.K == types.KindInt && v.N == s.k {
				return s
			}
			continue
		}
		if rowKeyEquals(ix.row(s.first-1), ix.keyCols, key, keyCols) {
			return s
		}
	}
}

var identityCols = []int{0, 1, 2, 3, 4, 5, 6, 7}

func (ix *fullIndex) lookupSlot(h uint64, key types.Row) *slot {
	cols := identityCols
	if len(key) > len(cols) {
		cols = make([]int, len(key))
		for i := range cols {
			cols[i] = i
		}
	}
	return ix.probe(h, key, cols[:len(key)])
}

func rowKeyEquals(r types.Row, cols []int, key types.Row, keyCols []int) bool {
	for j, c := range cols {
		a, b := r[c], key[keyCols[j]]
		if a.K == types.KindInt && b.K == types.KindInt {
			if a.N != b.N {
				return false
			}
			continue
		}
		if !types.Equal(a, b) {
			return false
		}
	}
	return true
}

// partialCache is Flink's partial lookup cache: the rows of recently
// looked-up keys, the least recently used leaving first beyond maxRows
// keys, entries expiring after access or write.
type partialCache struct {
	spec    Cache
	entries map[string]*list.Element
	lru     *list.List // front: most recently used
	buf     []byte
}

type cacheEntry struct {
	key          string
	rows         []types.Row
	written, got int64 // epoch ms
}

func newPartialCache(spec Cache) *partialCache {
	return &partialCache{spec: spec, entries: map[string]*list.Element{}, lru: list.New()}
}

// get returns the cached rows of key at now, and whether they were cached.
func (c *partialCache) get(key types.Row, now int64) ([]types.Row, bool) {
	c.buf = types.AppendRow(c.buf[:0], key)
	el, ok := c.entries[string(c.buf)]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if c.expired(e, now) {
		c.lru.Remove(el)
		delete(c.entries, e.key)
		return nil, false
	}
	e.got = now
	c.lru.MoveToFront(el)
	return e.rows, true
}

func (c *partialCache) expired(e *cacheEntry, now int64) bool {
	if d := c.spec.ExpireAfterWrite; d > 0 && now-e.written >= d.Milliseconds() {
		return true
	}
	if d := c.spec.ExpireAfterAccess; d > 0 && now-e.got >= d.Milliseconds() {
		return true
	}
	return false
}

// put caches the rows of key (an empty result only with
// cache-missing-key).
func (c *partialCache) put(key types.Row, rows []types.Row, now int64) {
	if len(rows) == 0 && !c.spec.CacheMissingKey {
		return
	}
	c.buf = types.AppendRow(c.buf[:0], key)
	if el, ok := c.entries[string(c.buf)]; ok {
		e := el.Value.(*cacheEntry)
		e.rows, e.written, e.got = rows, now, now
		c.lru.MoveToFront(el)
		return
	}
	k := string(c.buf)
	c.entries[k] = c.lru.PushFront(&cacheEntry{key: k, rows: rows, written: now, got: now})
	for c.spec.MaxRows > 0 && int64(c.lru.Len()) > c.spec.MaxRows {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

func (c *partialCache) len() int { return c.lru.Len() }

// nextReload is when a full cache loaded from start to end (epoch ms) is
// loaded again, or 0 for never. prev is the time the load was due (0 for
// the first load): TIMED reloads happen at the first occurrence of the
// time of day after the first load, then every ReloadEveryDays days.
func nextReload(spec Cache, start, end, prev int64) int64 {
	switch spec.Reload {
	case ReloadTimed:
		loc := spec.ReloadZone
		if loc == nil {
			loc = time.UTC
		}
		if prev > 0 {
			return time.UnixMilli(prev).In(loc).AddDate(0, 0, max(spec.ReloadEveryDays, 1)).UnixMilli()
		}
		t := time.UnixMilli(end).In(loc)
		y, m, d := t.Date()
		at := time.Date(y, m, d, 0, 0, 0, 0, loc).Add(spec.ReloadAt)
		for !at.After(t) {
			at = at.AddDate(0, 0, 1)
		}
		return at.UnixMilli()
	default:
		if spec.ReloadInterval <= 0 {
			return 0
		}
		if spec.FixedRate {
			return start + spec.ReloadInterval.Milliseconds()
		}
		return end + spec.ReloadInterval.Milliseconds()
	}
}
