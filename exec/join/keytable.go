package join

import "github.com/flinksql/flinksql/types"

// The regular join's cache interns its join keys itself rather than in a
// keyed.OpenTable: it keeps a key's hash and first column in the key's
// state (keyState), so that looking a key up touches its table slot and
// its state and nothing else. Over 100 000 random keys every one of those
// is a cache and TLB miss, and the OpenTable's separate hash and key
// arrays were two more per row. The table is the same open addressing:
// linear probing over the exchange's well-mixed hash, a slot holding
// id+1 in its low 32 bits (0: empty) and the hash's high 32 bits, removal
// by shifting the rest of the probe run back (no tombstones).

const minKeySlots = 16

// keyChunk is how many key states one chunk holds.
const keyChunk = 1024

// state returns the state of key id.
func (jc *joinCache) state(id int32) *keyState {
	return &jc.states[id/keyChunk][id%keyChunk]
}

func keySlot(id int32, h uint64) uint64 { return h&^0xFFFFFFFF | uint64(uint32(id+1)) }

func keySlotID(s uint64) int32 { return int32(uint32(s)) - 1 }

// touch loads the slot where h's probe sequence starts and returns it
// (see prefetch).
func (jc *joinCache) touch(h uint64) uint64 {
	return jc.slots[h&uint64(len(jc.slots)-1)]
}

// find returns the id of the key at columns cols of row (hash h), or -1.
func (jc *joinCache) find(row types.Row, cols []int, h uint64) int32 {
	mask := uint64(len(jc.slots) - 1)
	tag := h &^ 0xFFFFFFFF
	for i := h & mask; ; i = (i + 1) & mask {
		s := jc.slots[i]
		if s == 0 {
			return -1
		}
		if s&^0xFFFFFFFF == tag {
			id := keySlotID(s)
			if ks := jc.state(id); ks.hash == h && jc.equal(ks, id, row, cols) {
				return id
			}
		}
	}
}

// equal compares the key of id (state ks) with the columns cols of row.
// A join without equality columns has one key, of no columns.
func (jc *joinCache) equal(ks *keyState, id int32, row types.Row, cols []int) bool {
	if len(cols) == 0 {
		return true
	}
	if !types.Equal(ks.key0, row[cols[0]]) {
		return false
	}
	if len(cols) == 1 {
		return true
	}
	for i, v := range jc.rest(id) {
		if !types.Equal(v, row[cols[i+1]]) {
			return false
		}
	}
	return true
}

// rest returns the key columns of id after the first.
func (jc *joinCache) rest(id int32) []types.Value {
	if jc.width <= 1 {
		return nil
	}
	w := jc.width - 1
	o := int(id) * w
	return jc.restVals[o : o+w : o+w]
}

// add interns the key at columns cols of row (hash h), which must not be
// present, with an empty state, and returns its id.
func (jc *joinCache) add(row types.Row, cols []int, h uint64) int32 {
	if (jc.live+1)*4 > len(jc.slots)*3 {
		jc.growSlots()
	}
	id, fresh := jc.ids.take()
	if fresh {
		if int(id/keyChunk) == len(jc.states) {
			jc.states = append(jc.states, make([]keyState, keyChunk))
		}
		for range jc.width - 1 {
			jc.restVals = append(jc.restVals, types.Value{})
		}
	}
	ks := jc.state(id)
	ks.hash = h
	if len(cols) > 0 {
		ks.key0 = row[cols[0]]
	}
	for i := range ks.sides {
		e := &ks.sides[i]
		e.rows = e.inl[:0:1]
	}
	if len(cols) > 1 {
		for i, c := range cols[1:] {
			jc.rest(id)[i] = row[c]
		}
	}
	jc.place(id)
	jc.live++
	return id
}

// place puts id in the first empty slot of its probe sequence.
func (jc *joinCache) place(id int32) {
	mask := uint64(len(jc.slots) - 1)
	h := jc.state(id).hash
	i := h & mask
	for jc.slots[i] != 0 {
		i = (i + 1) & mask
	}
	jc.slots[i] = keySlot(id, h)
}

func (jc *joinCache) growSlots() {
	old := jc.slots
	jc.slots = make([]uint64, 2*len(old))
	for _, s := range old {
		if s != 0 {
			jc.place(keySlotID(s))
		}
	}
}

// key appends the key values of id to dst.
func (jc *joinCache) key(dst []types.Value, id int32) []types.Value {
	if jc.width == 0 {
		return dst
	}
	dst = append(dst, jc.state(id).key0)
	return append(dst, jc.rest(id)...)
}

// release forgets id and clears its state; a later add hands it out
// again. The entries after it in its probe run are shifted back so that
// lookups need no tombstones.
func (jc *joinCache) release(id int32) {
	mask := uint64(len(jc.slots) - 1)
	hashOf := func(s uint64) uint64 { return jc.state(keySlotID(s)).hash }
	i := jc.state(id).hash & mask
	for keySlotID(jc.slots[i]) != id {
		i = (i + 1) & mask
	}
	for k := (i + 1) & mask; jc.slots[k] != 0; k = (k + 1) & mask {
		home := hashOf(jc.slots[k]) & mask
		// The entry at k may move to the hole at i unless its home slot
		// lies cyclically within (i, k].
		if (k > i && (home <= i || home > k)) || (k < i && home <= i && home > k) {
			jc.slots[i] = jc.slots[k]
			i = k
		}
	}
	jc.slots[i] = 0
	*jc.state(id) = keyState{}
	clear(jc.rest(id))
	jc.ids.release(id)
	jc.live--
}
