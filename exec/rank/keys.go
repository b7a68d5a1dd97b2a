package rank

import "github.com/flinksql/flinksql/sql/types"

// keyTable interns keys: it maps the key columns of a row to a small dense
// id, hashing with types.HashColumns and comparing the key values on a hash
// match, so colliding keys stay apart. Looking up an existing key allocates
// nothing; ids of released keys are reused.
type keyTable struct {
	cols   []int
	index  map[uint64]int32 // hash → first id of its collision chain
	hashes []uint64
	next   []int32 // next id with the same hash, -1 at the end
	used   []bool
	vals   []types.Value
	free   []int32
	live   int
}

func newKeyTable(cols []int) *keyTable {
	return &keyTable{cols: cols, index: make(map[uint64]int32)}
}

// lookup returns the id of the key of row (hash h), adding it when absent.
func (t *keyTable) lookup(row types.Row, h uint64) (id int32, added bool) {
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

func (t *keyTable) equal(id int32, row types.Row) bool {
	w := len(t.cols)
	key := t.vals[int(id)*w : int(id+1)*w]
	for i, c := range t.cols {
		if !types.Equal(key[i], row[c]) {
			return false
		}
	}
	return true
}

// release forgets id; the id is handed out again by a later lookup.
func (t *keyTable) release(id int32) {
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
	w := len(t.cols)
	clear(t.vals[int(id)*w : int(id+1)*w])
	t.next[id] = -1
	t.used[id] = false
	t.free = append(t.free, id)
	t.live--
}

// reset forgets every key, keeping the memory. Ids handed out afterwards
// start again at 0 and grow in order of first lookup.
func (t *keyTable) reset() {
	clear(t.index)
	clear(t.vals)
	t.hashes = t.hashes[:0]
	t.next = t.next[:0]
	t.used = t.used[:0]
	t.vals = t.vals[:0]
	t.free = t.free[:0]
	t.live = 0
}

// span is the number of ids ever handed out since the last reset; ids in
// [0, span) are live when inUse says so.
func (t *keyTable) span() int { return len(t.hashes) }

func (t *keyTable) inUse(id int32) bool { return t.used[id] }

// size is the number of keys held.
func (t *keyTable) size() int { return t.live }
