package lookup

import (
	"container/list"
	"time"

	"github.com/flinksql/flinksql/types"
)

// fullIndex is the full cache: every row of the table, chained by the hash
// of its key columns. Rows with a NULL key column are left out: a NULL
// never equals a key.
type fullIndex struct {
	rows    []types.Row
	keyCols []int
	heads   map[uint64]int32 // hash → index+1 of the first row
	next    []int32          // index+1 of the next row with the same hash
}

func newFullIndex(keyCols []int) *fullIndex {
	return &fullIndex{keyCols: keyCols, heads: map[uint64]int32{}}
}

func (ix *fullIndex) add(r types.Row) {
	for _, c := range ix.keyCols {
		if r[c].IsNull() {
			return
		}
	}
	ix.rows = append(ix.rows, r)
}

// build chains the rows added, each key's rows in the order they were
// added (the table's order).
func (ix *fullIndex) build() {
	ix.next = make([]int32, len(ix.rows))
	ix.heads = make(map[uint64]int32, len(ix.rows))
	for i := len(ix.rows) - 1; i >= 0; i-- {
		h := types.HashColumns(ix.rows[i], ix.keyCols)
		ix.next[i] = ix.heads[h]
		ix.heads[h] = int32(i + 1)
	}
}

// find calls fn with each row whose key columns equal key (hashed h).
func (ix *fullIndex) find(h uint64, key types.Row, fn func(types.Row) error) error {
	for i := ix.heads[h]; i != 0; i = ix.next[i-1] {
		r := ix.rows[i-1]
		if keyEquals(r, ix.keyCols, key) {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// has reports whether some row matches key.
func (ix *fullIndex) has(h uint64, key types.Row) bool {
	for i := ix.heads[h]; i != 0; i = ix.next[i-1] {
		if keyEquals(ix.rows[i-1], ix.keyCols, key) {
			return true
		}
	}
	return false
}

func keyEquals(r types.Row, cols []int, key types.Row) bool {
	for j, c := range cols {
		a, b := r[c], key[j]
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
