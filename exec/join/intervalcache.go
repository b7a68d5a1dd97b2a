package join

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// The interval join's decoded write-back cache, used on the hashmap
// backend (whose state is in memory anyway, so the cache holds every key):
// both sides' buffered rows per join key, decoded and in the order of
// their kv map keys ([time][row bytes]), and per side a heap of expiry
// deadlines in place of the kv expiry index. A row then probes the other
// side's rows and is buffered without a kv scan, decode or encode, and a
// watermark finds the due keys with heap pops instead of an index scan per
// key group. At PrepareSnapshot the changes are written back in the
// uncached layout (rows, counts and expiry index), so the backend then
// holds exactly what the uncached operator would have written; a restored
// backend is read back completely through its expiry index (every buffered
// row has an entry there), and the cache is complete again.
type intervalCache struct {
	// The join keys are interned as dense ids (indexes of states) in an
	// open-addressing table of their own, as the regular join's (see
	// keytable.go): a key's state holds its hash and first column, so a
	// lookup touches its slot and its state, which the row needs anyway.
	// A slot holds id+1 in its low 32 bits (0: empty) and the hash's low
	// 32 bits, which give its home slot: removing a key shifts its probe
	// run back without reading the other keys' states.
	slots  []uint64
	live   int
	free   []int32       // released ids
	rest   []types.Value // key columns after the first, width-1 per id
	width  int           // key columns
	cols   []int         // the key columns of keyRow: all of them
	states []ivKey       // by key id
	// removed holds, for the keys whose stored rows expired since the
	// last write-back, those rows' map keys (ivKey.removed is the index
	// + 1); freeRemoved the unused entries.
	removed     []ivRemoved
	freeRemoved []int32
	sides       [2]rowCache
	// Each side's expiry deadlines: those pushed in order (a side whose
	// rows arrive in time order, the common case) in a FIFO, popped from
	// its head in the order they came; the others in a min-heap.
	queues [2]dueQueue
	heaps  [2][]ivDue // min-heaps by deadline
	dirty  []int32
	keyRow types.Row // scratch: the current row's key values
	curID  int32
	sink   uint64  // see prefetch
	due    []ivDue // scratch of expire
}

// ivKey is the cached state of one join key. Its 120 bytes are what a
// churning key costs in cache lines; what is rarely used lives out of line.
type ivKey struct {
	rows [2][]ivRow
	hash uint64
	key0 types.Value
	// removed is 1 + the index in intervalCache.removed of the key's
	// removals to write back, or 0.
	removed int32
	dirty   bool
	live    bool
	// listed: the id is in the dirty list. It outlives a release, so that
	// an id handed out again is not listed twice: the list stays bounded
	// by the ids in use however many keys churn between checkpoints.
	listed bool
	gen    uint32 // counts the keys that held this id: stale deadlines are skipped
}

// ivRemoved is the map keys of a key's stored rows removed since the last
// write-back, per side end to end; their expiry entries go with them.
type ivRemoved struct {
	dels    [2][]byte
	delEnds [2][]int32
}

// ivRow is a buffered row: its time, its id in the side's slabs, and its
// copies and the copies that matched. Its map key ([time][row bytes]) is
// not kept: it is encoded again from the row where it is needed (rows of
// equal times, a write-back), which the codec allows, as decoding a row
// and encoding it again gives back the same bytes.
type ivRow struct {
	t       int64
	row     int32
	count   uint32
	emitted uint32
	stored  bool // the backend holds an entry for it
	dirty   bool
}

// ivDue is an expiry deadline of a key's rows on one side.
type ivDue struct {
	deadline int64
	id       int32
	gen      uint32
	side     uint8
	kg       int32 // set when collected, for ordering
}

func newIntervalCache(keyWidth int, widths [2]int) *intervalCache {
	cols := make([]int, keyWidth)
	for i := range cols {
		cols[i] = i
	}
	c := &intervalCache{slots: make([]uint64, minKeySlots), width: keyWidth, cols: cols, keyRow: make(types.Row, keyWidth)}
	for s := range c.sides {
		// Rows of numbers and times (the usual stream) are kept flat:
		// a third of the memory, nothing for the collector to scan, and
		// nothing to clear when they expire.
		c.sides[s] = *newRowCache(widths[s], true)
	}
	return c
}

// appendRowKey appends the map key of side s's row r: its time and its
// row bytes, which decide the order of rows of equal times.
func (c *intervalCache) appendRowKey(dst []byte, s int, r *ivRow) []byte {
	rc := &c.sides[s]
	dst = appendTime(dst, r.t)
	return types.AppendRow(dst, rc.get(r.row, rc.tmp))
}

// intern returns the id of the key of keyRow (hash h), adding it.
func (c *intervalCache) intern(h uint64) int32 {
	if id := c.find(h); id >= 0 {
		return id
	}
	return c.add(h)
}

func ivSlot(id int32, h uint64) uint64 { return h<<32 | uint64(uint32(id+1)) }

// find returns the id of the key of keyRow (hash h), or -1.
func (c *intervalCache) find(h uint64) int32 {
	mask := uint64(len(c.slots) - 1)
	tag := h << 32
	for i := h & mask; ; i = (i + 1) & mask {
		s := c.slots[i]
		if s == 0 {
			return -1
		}
		if s&^0xFFFFFFFF == tag {
			id := keySlotID(s)
			if k := &c.states[id]; k.hash == h && c.equal(k, id) {
				return id
			}
		}
	}
}

// equal says whether key id (state k) is the key of keyRow.
func (c *intervalCache) equal(k *ivKey, id int32) bool {
	if c.width == 0 {
		return true
	}
	if !types.Equal(k.key0, c.keyRow[0]) {
		return false
	}
	for i, v := range c.restOf(id) {
		if !types.Equal(v, c.keyRow[i+1]) {
			return false
		}
	}
	return true
}

// restOf returns the key columns of id after the first.
func (c *intervalCache) restOf(id int32) []types.Value {
	if c.width <= 1 {
		return nil
	}
	w := c.width - 1
	o := int(id) * w
	return c.rest[o : o+w : o+w]
}

// add interns the key of keyRow (hash h), which is not present.
func (c *intervalCache) add(h uint64) int32 {
	if (c.live+1)*4 > len(c.slots)*3 {
		old := c.slots
		c.slots = make([]uint64, 2*len(old))
		for _, s := range old {
			if s != 0 {
				c.place(s)
			}
		}
	}
	var id int32
	if n := len(c.free); n > 0 {
		id = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		id = int32(len(c.states))
		c.states = append(c.states, ivKey{})
		for range c.width - 1 {
			c.rest = append(c.rest, types.Value{})
		}
	}
	k := &c.states[id]
	k.hash, k.live = h, true
	if c.width > 0 {
		k.key0 = c.keyRow[0]
		copy(c.restOf(id), c.keyRow[1:])
	}
	c.place(ivSlot(id, h))
	c.live++
	return id
}

// place puts slot s in the first empty slot from its home.
func (c *intervalCache) place(s uint64) {
	mask := uint64(len(c.slots) - 1)
	i := (s >> 32) & mask
	for c.slots[i] != 0 {
		i = (i + 1) & mask
	}
	c.slots[i] = s
}

// keyOf appends the key values of id to dst.
func (c *intervalCache) keyOf(dst []types.Value, id int32) []types.Value {
	if c.width == 0 {
		return dst
	}
	return append(append(dst, c.states[id].key0), c.restOf(id)...)
}

// forget removes id from the table (its state is the caller's to reset);
// the entries after it in its probe run are shifted back, so that lookups
// need no tombstones.
func (c *intervalCache) forget(id int32) {
	mask := uint64(len(c.slots) - 1)
	i := c.states[id].hash & mask
	for keySlotID(c.slots[i]) != id {
		i = (i + 1) & mask
	}
	for k := (i + 1) & mask; c.slots[k] != 0; k = (k + 1) & mask {
		home := (c.slots[k] >> 32) & mask
		// The entry at k may move to the hole at i unless its home slot
		// lies cyclically within (i, k].
		if (k > i && (home <= i || home > k)) || (k < i && home <= i && home > k) {
			c.slots[i] = c.slots[k]
			i = k
		}
	}
	c.slots[i] = 0
	clear(c.restOf(id))
	c.free = append(c.free, id)
	c.live--
}

// removals returns key k's removals to write back, making them.
func (c *intervalCache) removals(k *ivKey) *ivRemoved {
	if k.removed == 0 {
		if n := len(c.freeRemoved); n > 0 {
			k.removed = c.freeRemoved[n-1] + 1
			c.freeRemoved = c.freeRemoved[:n-1]
		} else {
			c.removed = append(c.removed, ivRemoved{})
			k.removed = int32(len(c.removed))
		}
	}
	return &c.removed[k.removed-1]
}

// dropRemovals frees key k's removals once written back.
func (c *intervalCache) dropRemovals(k *ivKey) {
	if k.removed == 0 {
		return
	}
	r := &c.removed[k.removed-1]
	for s := range r.dels {
		r.dels[s], r.delEnds[s] = r.dels[s][:0], r.delEnds[s][:0]
	}
	c.freeRemoved = append(c.freeRemoved, k.removed-1)
	k.removed = 0
}

func (c *intervalCache) markDirty(id int32) {
	k := &c.states[id]
	k.dirty = true
	if !k.listed {
		k.listed = true
		c.dirty = append(c.dirty, id)
	}
}

// dueQueue is a FIFO of deadlines in ascending order.
type dueQueue struct {
	items []ivDue
	head  int
}

func (q *dueQueue) len() int { return len(q.items) - q.head }

func (q *dueQueue) popFront() ivDue {
	d := q.items[q.head]
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 1024 && q.head*2 >= len(q.items):
		n := copy(q.items, q.items[q.head:])
		q.items, q.head = q.items[:n], 0
	}
	return d
}

// push adds a deadline of side s: to its FIFO when not earlier than the
// FIFO's last, otherwise to its heap.
func (c *intervalCache) push(s int, d ivDue) {
	if q := &c.queues[s]; q.len() == 0 || q.items[len(q.items)-1].deadline <= d.deadline {
		q.items = append(q.items, d)
		return
	}
	h := append(c.heaps[s], d)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].deadline <= h[i].deadline {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	c.heaps[s] = h
}

// popDue removes and returns the earliest deadline of side s if it is at
// most now.
func (c *intervalCache) popDue(s int, now int64) (ivDue, bool) {
	q, h := &c.queues[s], c.heaps[s]
	fromQueue := q.len() > 0 && q.items[q.head].deadline <= now
	fromHeap := len(h) > 0 && h[0].deadline <= now
	switch {
	case fromQueue && (!fromHeap || q.items[q.head].deadline <= h[0].deadline):
		return q.popFront(), true
	case fromHeap:
		return c.pop(s), true
	}
	return ivDue{}, false
}

// pop removes the earliest deadline of side s's heap.
func (c *intervalCache) pop(s int) ivDue {
	h := c.heaps[s]
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].deadline < h[l].deadline {
			m = r
		}
		if h[i].deadline <= h[m].deadline {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	c.heaps[s] = h
	return top
}

// setCachedKey makes the key of row (of side input), of hash h, current
// in the cache.
func (j *interval) setCachedKey(input int, row types.Row, h uint64) {
	c := j.cache
	for i, col := range j.keys[input] {
		c.keyRow[i] = row[col]
	}
	c.curID = c.intern(h)
	clear(c.keyRow)
}

// prefetch touches what the rows of side input with key hashes hs will
// read: their keys' home slots, then the states found there, then those
// keys' row lists. Over many keys each is a cache miss; touched for a
// run of rows at once, the misses overlap instead of following one
// another. The loads are summed into sink so that they are kept.
func (c *intervalCache) prefetch(input int, hs []uint64) {
	mask := uint64(len(c.slots) - 1)
	var sum uint64
	for _, h := range hs {
		sum += c.slots[h&mask]
	}
	for _, h := range hs {
		if s := c.slots[h&mask]; s != 0 {
			sum += c.states[keySlotID(s)].hash
		}
	}
	for _, h := range hs {
		if s := c.slots[h&mask]; s != 0 {
			k := &c.states[keySlotID(s)]
			if rows := k.rows[1-input]; len(rows) > 0 {
				sum += uint64(rows[0].t)
			}
			if rows := k.rows[input]; len(rows) > 0 {
				sum += uint64(rows[len(rows)-1].t)
			}
		}
	}
	c.sink += sum
}

// probeCached is probe on the cache.
func (j *interval) probeCached(input int, row types.Row, lo, hi int64, out exec.Output) (bool, error) {
	c, other := j.cache, 1-input
	lw := j.widths[0]
	if input == 0 {
		copy(j.joined, row)
	} else {
		copy(j.joined[lw:], row)
	}
	rows := c.states[c.curID].rows[other]
	i, _ := slices.BinarySearchFunc(rows, lo, func(r ivRow, t int64) int {
		if r.t < t {
			return -1
		}
		return 1
	})
	matched := false
	for ; i < len(rows) && rows[i].t <= hi; i++ {
		r := &rows[i]
		o := c.sides[other].get(r.row, j.scratch[other])
		if ok, err := j.residualHolds(other, o); err != nil {
			return false, err
		} else if !ok {
			continue
		}
		matched = true
		for range r.count {
			if err := j.emit(input, row, o, out); err != nil {
				return false, err
			}
		}
		if j.outer[other] && r.emitted < r.count {
			r.emitted, r.dirty = r.count, true
			c.markDirty(c.curID)
		}
	}
	return matched, nil
}

// storeCached is store on the cache.
func (j *interval) storeCached(input int, row types.Row, t int64, matched bool) {
	c := j.cache
	id := c.curID
	k := &c.states[id]
	rows := k.rows[input]
	i, found := j.findCached(input, rows, row, t)
	if found {
		r := &rows[i]
		r.count++
		if matched {
			r.emitted = r.count
		}
		r.dirty = true
	} else {
		r := ivRow{t: t, row: c.sides[input].newRow(row), count: 1, dirty: true}
		if matched {
			r.emitted = 1
		}
		if i == len(rows) {
			k.rows[input] = append(rows, r)
		} else {
			k.rows[input] = slices.Insert(rows, i, r)
		}
		deadline := t + j.rel[input] + 1
		c.push(input, ivDue{deadline: deadline, id: id, gen: k.gen, side: uint8(input)})
		if !j.spec.EventTime {
			j.ctx.RegisterProcessingTimer(deadline)
		}
	}
	c.markDirty(id)
}

// findCached returns where row (at time t) is or belongs in side input's
// rows of a key, which are in the order of their map keys, and whether it
// is there. Rows mostly come in time order, so the usual place is the
// end; only rows of equal times are told apart by their encoded bytes.
func (j *interval) findCached(input int, rows []ivRow, row types.Row, t int64) (int, bool) {
	i := len(rows)
	if i > 0 && rows[i-1].t >= t {
		i, _ = slices.BinarySearchFunc(rows, t, func(r ivRow, t int64) int {
			if r.t < t {
				return -1
			}
			return 1
		})
	}
	if i == len(rows) || rows[i].t != t {
		return i, false
	}
	j.ukBuf = types.AppendRow(appendTime(j.ukBuf[:0], t), row)
	for ; i < len(rows) && rows[i].t == t; i++ {
		j.tkBuf = j.cache.appendRowKey(j.tkBuf[:0], input, &rows[i])
		switch bytes.Compare(j.tkBuf, j.ukBuf) {
		case 0:
			return i, true
		case 1:
			return i, false
		}
	}
	return i, false
}

// expireCached is expire on the cache: the due keys in the order the
// uncached operator visits its expiry index (key group, side, deadline,
// key bytes), which decides the order of an outer side's padded rows.
func (j *interval) expireCached(now int64, out exec.Output) error {
	c := j.cache
	c.due = c.due[:0]
	for s := range c.heaps {
		for {
			d, ok := c.popDue(s, now)
			if !ok {
				break
			}
			c.prefetchDue(s)
			k := &c.states[d.id]
			switch {
			case !k.live || k.gen != d.gen:
			case j.outer[0] || j.outer[1]:
				c.due = append(c.due, d)
			default:
				// An inner join emits nothing as rows expire: the
				// order does not matter, and the key's state is at
				// hand now.
				if err := j.expireCachedKey(s, d.id, now, out); err != nil {
					return err
				}
			}
		}
	}
	if len(c.due) == 0 {
		return nil
	}
	if j.outer[0] || j.outer[1] {
		maxPar := j.b.MaxParallelism()
		for i := range c.due {
			c.due[i].kg = int32(kv.KeyGroupOf(c.states[c.due[i].id].hash, maxPar))
		}
		slices.SortFunc(c.due, func(a, b ivDue) int {
			switch {
			case a.kg != b.kg:
				return int(a.kg - b.kg)
			case a.side != b.side:
				return int(a.side) - int(b.side)
			case a.deadline != b.deadline:
				if a.deadline < b.deadline {
					return -1
				}
				return 1
			}
			j.keyVals = c.keyOf(j.keyVals[:0], a.id)
			j.keyBuf = appendCachedKey(j.keyBuf[:0], j.keyVals)
			j.keyVals = c.keyOf(j.keyVals[:0], b.id)
			j.tkBuf = appendCachedKey(j.tkBuf[:0], j.keyVals)
			return bytes.Compare(j.keyBuf, j.tkBuf)
		})
	}
	for _, d := range c.due {
		if err := j.expireCachedKey(int(d.side), d.id, now, out); err != nil {
			return err
		}
	}
	return nil
}

func appendCachedKey(dst []byte, key []types.Value) []byte {
	for _, v := range key {
		dst = types.AppendValue(dst, v)
	}
	return dst
}

// dueAhead is how far ahead in a side's FIFO of deadlines expireCached
// touches the keys' states (and half as far their row lists).
const dueAhead = 16

// prefetchDue touches the state of the key dueAhead deadlines ahead in
// side s's FIFO and the row list of the one half as far: the keys due
// are scattered over the states, and touched ahead their misses overlap
// with the expiry of the keys before them.
func (c *intervalCache) prefetchDue(s int) {
	q := &c.queues[s]
	if i := q.head + dueAhead; i < len(q.items) {
		c.sink += c.states[q.items[i].id].hash
	}
	if i := q.head + dueAhead/2; i < len(q.items) {
		if rows := c.states[q.items[i].id].rows[s]; len(rows) > 0 {
			c.sink += uint64(rows[0].t)
		}
	}
}

// expireCachedKey removes side s's rows of key id whose time is at most
// now minus the side's relative size minus 1.
func (j *interval) expireCachedKey(s int, id int32, now int64, out exec.Output) error {
	c := j.cache
	k := &c.states[id]
	rc := &c.sides[s]
	bound := now - j.rel[s] - 1
	rows := k.rows[s]
	n, stored := 0, false
	for ; n < len(rows) && rows[n].t <= bound; n++ {
		r := &rows[n]
		if j.outer[s] && r.emitted < r.count {
			o := rc.get(r.row, j.scratch[s])
			for range r.count - r.emitted {
				if err := j.emit(s, o, nil, out); err != nil {
					return err
				}
			}
		}
		if r.stored {
			rm := c.removals(k)
			rm.dels[s] = c.appendRowKey(rm.dels[s], s, r)
			rm.delEnds[s] = append(rm.delEnds[s], int32(len(rm.dels[s])))
			stored = true
		}
		rc.releaseRow(r.row)
	}
	if n == 0 {
		return nil
	}
	if n == len(rows) {
		k.rows[s] = rows[:0]
	} else {
		k.rows[s] = slices.Delete(rows, 0, n)
	}
	if stored {
		// Rows never written back leave nothing to remove from the
		// backend.
		c.markDirty(id)
	}
	c.releaseIfEmpty(id)
	return nil
}

// writeBackCached writes every dirty key's changes to the backend in the
// uncached layout and drops the keys left without rows.
func (j *interval) writeBackCached() error {
	c := j.cache
	maxPar := j.b.MaxParallelism()
	for _, id := range c.dirty {
		k := &c.states[id]
		k.listed = false
		if !k.live || !k.dirty {
			continue // released since, and maybe handed out again: listed again if dirty
		}
		j.keyVals = c.keyOf(j.keyVals[:0], id)
		key := appendCachedKey(j.keyBuf[:0], j.keyVals)
		j.keyBuf = key
		kg := kv.KeyGroupOf(k.hash, maxPar)
		for s := range k.rows {
			if err := j.writeBackSide(s, k, kg, key); err != nil {
				return fmt.Errorf("interval join: %w", err)
			}
		}
		c.dropRemovals(k)
		k.dirty = false
		c.releaseIfEmpty(id)
	}
	c.dirty = c.dirty[:0]
	return nil
}

// releaseIfEmpty forgets key id when it holds no rows and no removals to
// write back (a late row's key, or one whose rows expired before they
// were written back), so that keys do not pile up between checkpoints.
func (c *intervalCache) releaseIfEmpty(id int32) {
	k := &c.states[id]
	if !k.live || len(k.rows[0]) > 0 || len(k.rows[1]) > 0 || k.removed != 0 {
		return
	}
	// The row lists' memory stays with the id for the key that gets it
	// next, so that churning keys do not allocate a list each.
	c.forget(id)
	*k = ivKey{rows: [2][]ivRow{k.rows[0][:0], k.rows[1][:0]}, listed: k.listed, gen: k.gen + 1}
}

func (j *interval) writeBackSide(s int, k *ivKey, kg int, key []byte) error {
	c := j.cache
	if err := j.b.SetCurrentKeyInGroup(kg, key); err != nil {
		return err
	}
	var dels []byte
	var delEnds []int32
	if k.removed != 0 {
		rm := &c.removed[k.removed-1]
		dels, delEnds = rm.dels[s], rm.delEnds[s]
	}
	st := int32(0)
	for _, end := range delEnds {
		if err := j.rows[s].Delete(nil, dels[st:end]); err != nil {
			return err
		}
		st = end
	}
	var added []int64 // deadlines of rows new to the backend
	for i := range k.rows[s] {
		r := &k.rows[s][i]
		if !r.dirty {
			continue
		}
		j.ukBuf = c.appendRowKey(j.ukBuf[:0], s, r)
		if err := j.rows[s].Put(nil, j.ukBuf, j.counts(uint64(r.count), uint64(r.emitted))); err != nil {
			return err
		}
		if !r.stored {
			added = append(added, r.t+j.rel[s]+1)
		}
		r.dirty, r.stored = false, true
	}
	if len(added) == 0 && len(delEnds) == 0 {
		return nil
	}
	if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
		return err
	}
	// The expiry entries of the removed rows: they were due, so every
	// stored row of theirs went with them.
	st = 0
	for _, end := range delEnds {
		t := readTime(dels[st:end])
		j.tkBuf = appendTime(j.tkBuf[:0], t+j.rel[s]+1)
		j.tkBuf = append(j.tkBuf, key...)
		if err := j.timers[s].Delete(nil, j.tkBuf); err != nil {
			return err
		}
		st = end
	}
	for _, d := range added {
		j.tkBuf = appendTime(j.tkBuf[:0], d)
		j.tkBuf = append(j.tkBuf, key...)
		if err := j.timers[s].Put(nil, j.tkBuf, nil); err != nil {
			return err
		}
	}
	return nil
}

// preloadCached reads a restored backend's buffered rows into the cache,
// finding the keys through the expiry index.
func (j *interval) preloadCached() error {
	kgs := j.b.KeyGroups()
	var keys [][]byte
	seen := map[string]bool{}
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		clear(seen)
		keys = keys[:0]
		for s := range j.timers {
			if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
				return err
			}
			err := j.timers[s].Ascend(nil, nil, func(tk, _ []byte) bool {
				if len(tk) >= 8 && !seen[string(tk[8:])] {
					seen[string(tk[8:])] = true
					keys = append(keys, append([]byte(nil), tk[8:]...))
				}
				return true
			})
			if err != nil {
				return err
			}
		}
		for _, key := range keys {
			if err := j.preloadKey(kg, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// preloadKey reads both sides' stored rows of key (in key group kg).
func (j *interval) preloadKey(kg int, key []byte) error {
	c := j.cache
	rest := key
	for i := range c.keyRow {
		var err error
		if c.keyRow[i], rest, err = types.DecodeValue(rest); err != nil {
			return fmt.Errorf("interval join: corrupt expiry index: %w", err)
		}
	}
	if len(rest) != 0 {
		return fmt.Errorf("interval join: corrupt expiry index: %d bytes after the key", len(rest))
	}
	id := c.intern(types.HashColumns(c.keyRow, c.cols))
	clear(c.keyRow)
	k := &c.states[id]
	if err := j.b.SetCurrentKeyInGroup(kg, key); err != nil {
		return err
	}
	for s := range j.rows {
		rc := &c.sides[s]
		var derr error
		err := j.rows[s].Ascend(nil, nil, func(uk, v []byte) bool {
			count, w := uvarint(v)
			emitted, w2 := uvarint(v[max(w, 0):])
			if len(uk) < 8 || w <= 0 || w2 <= 0 {
				derr = fmt.Errorf("interval join: corrupt state: bad row")
				return false
			}
			if _, err := decodeRowInto(rc.tmp, uk[8:]); err != nil {
				derr = fmt.Errorf("interval join: %w", err)
				return false
			}
			rid := rc.newRow(rc.tmp)
			t := readTime(uk)
			k.rows[s] = append(k.rows[s], ivRow{t: t, row: rid,
				count: uint32(count), emitted: uint32(emitted), stored: true})
			c.push(s, ivDue{deadline: t + j.rel[s] + 1, id: id, gen: k.gen, side: uint8(s)})
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
