package keyed

import "github.com/flinksql/flinksql/types"

// OpenTable interns keys as small dense ids, as Table does, on the
// one-lookup-per-row hot path of the group aggregate and the decoded state
// caches (statecache). The caller hashes the
// key columns with types.HashColumns; the table is an open-addressing index
// (linear probing over the already well-mixed hash) of ids whose key values
// are compared on a hash match, so colliding keys stay apart. Looking up an
// existing key allocates nothing, and released ids are reused.
//
// A slot holds id+1 in its low 32 bits (0: empty) and the high 32 bits of
// the key's hash, so a probe touches the key values only on a likely match.
type OpenTable struct {
	cols   []int
	width  int
	slots  []uint64 // power-of-two length
	hashes []uint64
	vals   []types.Value
	free   []int32
	live   int
}

const minOpenSlots = 16

// NewOpenTable returns an empty table of the keys at columns cols.
func NewOpenTable(cols []int) *OpenTable {
	return &OpenTable{cols: cols, width: len(cols), slots: make([]uint64, minOpenSlots)}
}

func slotOf(id int32, h uint64) uint64 { return h&^0xFFFFFFFF | uint64(uint32(id+1)) }

func slotID(s uint64) int32 { return int32(uint32(s)) - 1 }

// Find returns the id of the key of row (hash h), or -1.
func (t *OpenTable) Find(row types.Row, h uint64) int32 {
	mask := uint64(len(t.slots) - 1)
	tag := h &^ 0xFFFFFFFF
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return -1
		}
		if s&^0xFFFFFFFF == tag {
			if id := slotID(s); t.hashes[id] == h && t.equal(id, row) {
				return id
			}
		}
	}
}

// Touch loads the slot where h's probe sequence starts and returns it
// (for the caller to fold into a value it keeps, so the load is not
// dropped). A caller with a batch of keys touches all their slots before
// it looks any of them up, so that their cache misses overlap instead of
// following one another.
func (t *OpenTable) Touch(h uint64) uint64 {
	return t.slots[h&uint64(len(t.slots)-1)]
}

// Add interns the key of row, which must not be present, and returns its id.
func (t *OpenTable) Add(row types.Row, h uint64) int32 {
	if (t.live+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(len(t.hashes))
		t.hashes = append(t.hashes, 0)
		for range t.width {
			t.vals = append(t.vals, types.Value{})
		}
	}
	key := t.Key(id)
	for i, c := range t.cols {
		key[i] = row[c]
	}
	t.hashes[id] = h
	t.place(id)
	t.live++
	return id
}

// place puts id in the first empty slot of its probe sequence.
func (t *OpenTable) place(id int32) {
	mask := uint64(len(t.slots) - 1)
	h := t.hashes[id]
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = slotOf(id, h)
}

func (t *OpenTable) grow() {
	old := t.slots
	t.slots = make([]uint64, 2*len(old))
	for _, s := range old {
		if s != 0 {
			t.place(slotID(s))
		}
	}
}

func (t *OpenTable) equal(id int32, row types.Row) bool {
	key := t.Key(id)
	for i, c := range t.cols {
		if !types.Equal(key[i], row[c]) {
			return false
		}
	}
	return true
}

// Key returns the key values of id, valid until id is released.
func (t *OpenTable) Key(id int32) []types.Value {
	w := t.width
	return t.vals[int(id)*w : int(id+1)*w : int(id+1)*w]
}

// Hash returns the hash the key of id was added with.
func (t *OpenTable) Hash(id int32) uint64 { return t.hashes[id] }

// Release forgets id; a later Add hands it out again. The entries after it
// in its probe run are shifted back so that lookups need no tombstones.
func (t *OpenTable) Release(id int32) {
	mask := uint64(len(t.slots) - 1)
	i := t.hashes[id] & mask
	for slotID(t.slots[i]) != id {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		home := t.hashes[slotID(t.slots[j])] & mask
		// The entry at j may move to the hole at i unless its home slot
		// lies cyclically within (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	clear(t.Key(id))
	t.free = append(t.free, id)
	t.live--
}

// Reset forgets every key but keeps the memory. Ids are handed out from 0
// again, in order, so after a reset ids follow first-arrival order.
func (t *OpenTable) Reset() {
	clear(t.slots)
	clear(t.vals)
	t.hashes = t.hashes[:0]
	t.vals = t.vals[:0]
	t.free = t.free[:0]
	t.live = 0
}

// Size is the number of keys held.
func (t *OpenTable) Size() int { return t.live }

// Capacity is one more than the largest id handed out so far.
func (t *OpenTable) Capacity() int { return len(t.hashes) }
