// Package keyed owns the interning of grouping and partition keys shared by
// the window, rank and groupagg operators: Table, the chained key table
// keyed by types.HashColumns; OpenTable, an open-addressing one for the
// one-lookup-per-row hot paths (the group aggregate's mini-batch and the
// decoded state caches of package statecache); and the encoding of key
// values in state keys (AppendKey, DecodeKey, Row).
//
// Window and rank also need Table's in-use tracking and Reset, and moving
// them onto open addressing was not benchmarked, so they stay on Table.
package keyed

import (
	"fmt"

	"github.com/flinksql/flinksql/types"
)

// Table interns keys: it maps the key columns of a row to a small dense id,
// hashing with types.HashColumns (done by the caller) and comparing the key
// values on a hash match, so colliding keys stay apart. Looking up an
// existing key allocates nothing; ids of released keys are reused.
type Table struct {
	cols   []int
	index  map[uint64]int32 // hash → first id of its collision chain
	hashes []uint64
	next   []int32 // next id with the same hash, -1 at the end
	used   []bool
	vals   []types.Value
	free   []int32
	live   int
}

// NewTable returns an empty table of the keys at columns cols.
func NewTable(cols []int) *Table {
	return &Table{cols: cols, index: make(map[uint64]int32)}
}

// Lookup returns the id of the key of row (hash h), adding it when absent.
func (t *Table) Lookup(row types.Row, h uint64) (id int32, added bool) {
	head, ok := t.index[h]
	if ok {
		for id := head; id >= 0; id = t.next[id] {
			if t.hashes[id] == h && t.equal(id, row) {
				return id, false
			}
		}
	} else {
		head = -1
	}
	w := len(t.cols)
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(len(t.hashes))
		t.hashes = append(t.hashes, 0)
		t.next = append(t.next, -1)
		t.used = append(t.used, false)
		for range w {
			t.vals = append(t.vals, types.Value{})
		}
	}
	key := t.vals[int(id)*w : int(id+1)*w]
	for i, c := range t.cols {
		key[i] = row[c]
	}
	t.hashes[id] = h
	t.next[id] = head
	t.used[id] = true
	t.index[h] = id
	t.live++
	return id, true
}

func (t *Table) equal(id int32, row types.Row) bool {
	w := len(t.cols)
	key := t.vals[int(id)*w : int(id+1)*w]
	for i, c := range t.cols {
		if !types.Equal(key[i], row[c]) {
			return false
		}
	}
	return true
}

// Key returns the key values of id; valid until id is released.
func (t *Table) Key(id int32) []types.Value {
	w := len(t.cols)
	return t.vals[int(id)*w : int(id+1)*w : int(id+1)*w]
}

// Hash returns the hash the key of id was looked up with.
func (t *Table) Hash(id int32) uint64 { return t.hashes[id] }

// Release forgets id; the id is handed out again by a later Lookup.
func (t *Table) Release(id int32) {
	h := t.hashes[id]
	if head := t.index[h]; head == id {
		if n := t.next[id]; n >= 0 {
			t.index[h] = n
		} else {
			delete(t.index, h)
		}
	} else {
		for p := head; p >= 0; p = t.next[p] {
			if t.next[p] == id {
				t.next[p] = t.next[id]
				break
			}
		}
	}
	clear(t.Key(id))
	t.next[id] = -1
	t.used[id] = false
	t.free = append(t.free, id)
	t.live--
}

// Reset forgets every key, keeping the memory. Ids handed out afterwards
// start again at 0 and grow in order of first lookup.
func (t *Table) Reset() {
	clear(t.index)
	clear(t.vals)
	t.hashes = t.hashes[:0]
	t.next = t.next[:0]
	t.used = t.used[:0]
	t.vals = t.vals[:0]
	t.free = t.free[:0]
	t.live = 0
}

// Span is the number of ids ever handed out since the last Reset; ids in
// [0, Span) are live when InUse says so.
func (t *Table) Span() int { return len(t.hashes) }

// InUse reports whether id holds a key.
func (t *Table) InUse(id int32) bool { return t.used[id] }

// Size is the number of keys held.
func (t *Table) Size() int { return t.live }

// AppendKey appends the key of a snapshot entry: the tag byte naming the
// entry kind, then the key values (types.AppendValue each).
func AppendKey(dst []byte, tag byte, key []types.Value) []byte {
	dst = append(dst, tag)
	for _, v := range key {
		dst = types.AppendValue(dst, v)
	}
	return dst
}

// DecodeKey reads the n key values of an entry key written by AppendKey,
// skipping the tag, and returns the rest of the key.
func DecodeKey(src []byte, n int) ([]types.Value, []byte, error) {
	if len(src) == 0 {
		return nil, nil, fmt.Errorf("empty state key")
	}
	src = src[1:]
	key := make([]types.Value, n)
	var err error
	for i := range key {
		if key[i], src, err = types.DecodeValue(src); err != nil {
			return nil, nil, fmt.Errorf("state key: %w", err)
		}
	}
	return key, src, nil
}

// Row places key values at the key columns cols of a row wide enough for
// them, so a restored key hashes and interns like an input row's.
func Row(cols []int, key []types.Value) types.Row {
	w := 0
	for _, c := range cols {
		w = max(w, c+1)
	}
	row := make(types.Row, w)
	for i, c := range cols {
		row[c] = key[i]
	}
	return row
}
