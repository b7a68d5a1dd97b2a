package window

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// windowVisitor receives the keys of a firing window. key and accs are only
// valid during the call.
type windowVisitor interface {
	visitKey(key []types.Value, accs [][]types.Value) error
}

// heapSliceState keeps one accumulator per (key, slice) for the slicing
// window aggregate: decoded, in memory, in front of the keyed-state backend
// (a write-back cache, see kvstate.go). Accumulators live in one flat array
// per slice; every key keeps references to its slots, newest last, so a row
// of a key seen in the current slice is found without a map lookup per
// slice.
//
// The memory holds every entry of a slice unless the slice is spilled: its
// entries were evicted to the backend (rocksdb, over the cache bound) or it
// was restored. A row missing from the memory of a spilled slice reads the
// backend, and a window over a spilled slice fires from the backend's
// per-key-group index of the slice's keys. A slice that is not spilled never
// reads the backend: on hashmap, without a restore, the backend is only
// written, at checkpoints.
type heapSliceState struct {
	keys     *keyed.Table
	keyWidth int
	accWidth int
	refs     [][]sliceRef // per key id, ascending slice end
	stamps   []uint64     // per key id: last visit that emitted it
	slices   []*sliceData // ascending end
	spare    []*sliceData
	seq      uint64
	stamp    uint64

	b       *kv.Backend
	accSt   *kv.ValueState[[]byte]
	idxSt   *kv.SortedMapState[[]byte, []byte]
	bound   int // most slots in memory (0: unbounded)
	entries int // slots in memory
	merge   kgMerge
	kb, vb  []byte
	cb      []byte
	chunk   int // most keys per index entry
	kgs     []int32
	pend    []pendingIndex
	ns, uk  [8]byte
	keyBuf  []types.Value
	decs    [][]types.Value
	nss     [][]byte
	winEnds []int64

	// visit scratch
	stored  storedVisit
	win     []*sliceData
	heap    []cursor
	accList [][]types.Value
}

const (
	markDirty     = 1 << iota // changed since written to the backend
	markPersisted             // its accumulator and index entry are in the backend
)

type sliceRef struct {
	s    *sliceData
	slot int32
}

type sliceData struct {
	end     int64
	spilled bool // the backend holds entries the memory does not
	indexed bool // the backend's slice index has entries of it
	// restored: the slice came from a restore, and its index entries are
	// known only to the backend; otherwise chunks lists them all.
	restored bool
	chunks   []pendingIndex // kg and first seq of the index entries written
	keys     []int32        // key id per slot, in order of appearance
	seqs     []uint64       // arrival sequence per slot, ascending
	marks    []uint8        // markDirty, markPersisted per slot
	accs     []types.Value
}

type cursor struct {
	s   *sliceData
	pos int
}

// sliceEntryBytes estimates the memory of one cached slot with its key.
func sliceEntryBytes(keyWidth, accWidth int) int {
	const valueSize = 48 // types.Value
	return (keyWidth+accWidth)*valueSize + 96
}

func newHeapSliceState(b *kv.Backend, keyCols []int, accWidth int) (*heapSliceState, error) {
	st := &heapSliceState{keys: keyed.NewTable(keyCols), keyWidth: len(keyCols), accWidth: accWidth, b: b}
	var err error
	if st.accSt, err = kv.NewValueState(b, stateSliceAcc, formatCodec("flinksql.window.slice-acc/1"), kv.Options{}); err != nil {
		return nil, err
	}
	if st.idxSt, err = kv.NewSortedMapState(b, stateSliceKeys, formatCodec("flinksql.window.seq/1"), formatCodec("flinksql.window.slice-keys/1"), kv.Options{}); err != nil {
		return nil, err
	}
	st.bound = statecache.Bound(b, sliceEntryBytes(len(keyCols), accWidth), 16)
	st.chunk = sliceChunk
	st.merge = kgMerge{b: b, st: st.idxSt, split: splitSliceChunk}
	st.keyBuf = make([]types.Value, len(keyCols))
	return st, nil
}

func (st *heapSliceState) numKeys() int { return st.keys.Size() }

// restoredSlice makes a slice of the backend known, spilled.
func (st *heapSliceState) restoredSlice(end int64) {
	s := st.slice(end)
	s.spilled, s.indexed, s.restored = true, true, true
}

// acc returns the accumulator of the key of row (hash h) in the slice
// ending at sliceEnd. created reports a new accumulator (all NULL) that the
// caller initialises. The slice is valid until the next call.
func (st *heapSliceState) acc(row types.Row, h uint64, sliceEnd int64) ([]types.Value, bool, error) {
	id, added := st.keys.Lookup(row, h)
	if added && int(id) == len(st.refs) {
		st.refs = append(st.refs, nil)
		st.stamps = append(st.stamps, 0)
	}
	w := st.accWidth
	refs := st.refs[id]
	i := len(refs)
	for i > 0 {
		r := refs[i-1]
		if r.s.end == sliceEnd {
			r.s.marks[r.slot] |= markDirty
			off := int(r.slot) * w
			return r.s.accs[off : off+w : off+w], false, nil
		}
		if r.s.end < sliceEnd {
			break
		}
		i--
	}
	s := st.slice(sliceEnd)
	var stored []byte
	if s.spilled {
		var err error
		if stored, err = st.load(id, sliceEnd); err != nil {
			if len(refs) == 0 {
				st.keys.Release(id)
			}
			return nil, false, err
		}
	}
	slot := int32(len(s.keys))
	s.keys = append(s.keys, id)
	off := len(s.accs)
	if cap(s.accs)-off < w {
		grown := make([]types.Value, off, 2*cap(s.accs)+16*w)
		copy(grown, s.accs)
		s.accs = grown
	}
	s.accs = s.accs[:off+w]
	acc := s.accs[off : off+w : off+w]
	clear(acc)
	created := true
	if stored != nil {
		seq, n := binary.Uvarint(stored)
		rest, err := decodeAccValues(acc, stored[max(n, 0):])
		if n <= 0 || err != nil || len(rest) != 0 {
			s.keys, s.accs = s.keys[:slot], s.accs[:off]
			if len(refs) == 0 {
				st.keys.Release(id)
			}
			return nil, false, fmt.Errorf("window aggregate: malformed accumulator of slice %d in the state backend (%v)", sliceEnd, err)
		}
		s.seqs = append(s.seqs, seq)
		s.marks = append(s.marks, markDirty|markPersisted)
		created = false
	} else {
		st.seq++
		s.seqs = append(s.seqs, st.seq)
		s.marks = append(s.marks, markDirty)
	}
	st.entries++
	// insert the reference at i, keeping refs sorted by slice end
	refs = append(refs, sliceRef{})
	copy(refs[i+1:], refs[i:])
	refs[i] = sliceRef{s: s, slot: slot}
	st.refs[id] = refs
	return acc, created, nil
}

// load reads the stored accumulator of key id in the slice ending at end
// (nil when there is none); valid until the next use of the backend.
func (st *heapSliceState) load(id int32, end int64) ([]byte, error) {
	if err := st.setKey(id); err != nil {
		return nil, err
	}
	v, ok, err := st.accSt.Get(nsOf(st.ns[:], end))
	if err != nil || !ok {
		return nil, err
	}
	return v, nil
}

// setKey makes key id the backend's current key, its encoding in st.kb.
func (st *heapSliceState) setKey(id int32) error {
	st.kb = appendKeyValues(st.kb[:0], st.keys.Key(id))
	return st.b.SetCurrentKey(st.keys.Hash(id), st.kb)
}

// slice finds or creates the slice ending at end.
func (st *heapSliceState) slice(end int64) *sliceData {
	i := len(st.slices)
	for i > 0 && st.slices[i-1].end >= end {
		if st.slices[i-1].end == end {
			return st.slices[i-1]
		}
		i--
	}
	var s *sliceData
	if n := len(st.spare); n > 0 {
		s = st.spare[n-1]
		st.spare = st.spare[:n-1]
	} else {
		s = &sliceData{}
	}
	s.end, s.spilled, s.indexed, s.restored = end, false, false, false
	s.chunks = s.chunks[:0]
	st.slices = append(st.slices, nil)
	copy(st.slices[i+1:], st.slices[i:])
	st.slices[i] = s
	return s
}

func (st *heapSliceState) find(end int64) int {
	for i, s := range st.slices {
		if s.end == end {
			return i
		}
	}
	return -1
}

// sliceChunk is the most keys an entry of the slice index holds.
const sliceChunk = 64

// pendingIndex is a slot to add to the slice index, in key group kg; or,
// in sliceData.chunks, an entry of the index (its first seq).
type pendingIndex struct {
	kg   int32
	slot int32
	seq  uint64
}

// writeBack writes the dirty slots of s to the backend, and the slots new
// there to the slice index, in chunks per key group.
func (st *heapSliceState) writeBack(s *sliceData) error {
	ns := nsOf(st.ns[:], s.end)
	wd := st.accWidth
	maxPar := st.b.MaxParallelism()
	pend := st.pend[:0]
	for slot, id := range s.keys {
		m := s.marks[slot]
		if m&markDirty == 0 {
			continue
		}
		if err := st.setKey(id); err != nil {
			return err
		}
		v := binary.AppendUvarint(st.vb[:0], s.seqs[slot])
		for _, x := range s.accs[slot*wd : (slot+1)*wd] {
			v = types.AppendValue(v, x)
		}
		st.vb = v
		if err := st.accSt.Put(ns, v); err != nil {
			return err
		}
		if m&markPersisted == 0 {
			pend = append(pend, pendingIndex{kg: int32(kv.KeyGroupOf(st.keys.Hash(id), maxPar)), slot: int32(slot)})
		}
		s.marks[slot] = markPersisted
	}
	st.pend = pend
	if len(pend) == 0 {
		return nil
	}
	s.indexed = true
	// Slots are in arrival order: a stable sort by key group keeps it
	// within each.
	slices.SortStableFunc(pend, func(a, b pendingIndex) int { return cmp.Compare(a.kg, b.kg) })
	for i := 0; i < len(pend); {
		j := i + 1
		for j < len(pend) && pend[j].kg == pend[i].kg && j-i < st.chunk {
			j++
		}
		chunk := st.cb[:0]
		for _, p := range pend[i:j] {
			chunk = binary.AppendUvarint(chunk, s.seqs[p.slot])
			n := len(chunk)
			chunk = appendKeyValues(binary.AppendUvarint(chunk, 0), st.keys.Key(s.keys[p.slot]))
			if l := len(chunk) - n - 1; l < 0x80 {
				chunk[n] = byte(l)
			} else {
				chunk = binary.AppendUvarint(chunk[:n], uint64(l))
				chunk = appendKeyValues(chunk, st.keys.Key(s.keys[p.slot]))
			}
		}
		st.cb = chunk
		if err := st.b.SetCurrentKeyInGroup(int(pend[i].kg), nil); err != nil {
			return err
		}
		if err := st.idxSt.Put(ns, appendOrdered(st.uk[:0], int64(s.seqs[pend[i].slot])), chunk); err != nil {
			return err
		}
		s.chunks = append(s.chunks, pendingIndex{kg: pend[i].kg, seq: s.seqs[pend[i].slot]})
		i = j
	}
	return nil
}

// splitSliceChunk yields the (seq, key) items of a chunk of the slice
// index.
func splitSliceChunk(_, v []byte, item func(uk, v []byte)) error {
	var seq [8]byte
	for len(v) > 0 {
		q, n := binary.Uvarint(v)
		if n <= 0 {
			return fmt.Errorf("window aggregate: malformed slice index chunk")
		}
		v = v[n:]
		l, n := binary.Uvarint(v)
		if n <= 0 || l > uint64(len(v)-n) {
			return fmt.Errorf("window aggregate: malformed slice index chunk")
		}
		item(appendOrdered(seq[:0], int64(q)), v[n:n+int(l)])
		v = v[n+int(l):]
	}
	return nil
}

// writeBackAll writes every dirty slot to the backend (at a checkpoint).
func (st *heapSliceState) writeBackAll() error {
	for _, s := range st.slices {
		if err := st.writeBack(s); err != nil {
			return err
		}
	}
	return nil
}

// evict writes slices back and forgets them, oldest first, until the memory
// holds at most three quarters of the bound.
func (st *heapSliceState) evict() error {
	if st.bound == 0 || st.entries <= st.bound {
		return nil
	}
	for _, s := range st.slices {
		if st.entries <= st.bound*3/4 {
			break
		}
		if len(s.keys) == 0 {
			continue
		}
		if err := st.writeBack(s); err != nil {
			return err
		}
		st.forget(s)
		s.spilled = true
	}
	return nil
}

// forget drops the memory of s (its slots and their key references).
func (st *heapSliceState) forget(s *sliceData) {
	for _, id := range s.keys {
		refs := st.refs[id]
		for j, r := range refs {
			if r.s == s {
				refs = append(refs[:j], refs[j+1:]...)
				break
			}
		}
		st.refs[id] = refs
		if len(refs) == 0 {
			st.keys.Release(id)
		}
	}
	st.entries -= len(s.keys)
	clear(s.accs)
	s.keys, s.seqs, s.marks, s.accs = s.keys[:0], s.seqs[:0], s.marks[:0], s.accs[:0]
}

// dropSlice discards every accumulator of the slice, in memory and in the
// backend.
func (st *heapSliceState) dropSlice(end int64) error {
	idx := st.find(end)
	if idx < 0 {
		return nil
	}
	s := st.slices[idx]
	ns := nsOf(st.ns[:], end)
	if s.spilled {
		if err := st.clearStored(s); err != nil {
			return err
		}
	} else if s.indexed {
		for slot, id := range s.keys {
			if s.marks[slot]&markPersisted == 0 {
				continue
			}
			if err := st.setKey(id); err != nil {
				return err
			}
			if err := st.accSt.Clear(ns); err != nil {
				return err
			}
		}
		if err := st.clearIndex(s, ns); err != nil {
			return err
		}
	}
	st.forget(s)
	st.slices = append(st.slices[:idx], st.slices[idx+1:]...)
	st.spare = append(st.spare, s)
	return nil
}

// clearStored removes every stored accumulator of slice s and its index,
// walking the index.
func (st *heapSliceState) clearStored(s *sliceData) error {
	ns := nsOf(st.ns[:], s.end)
	st.nss = append(st.nss[:0], ns)
	m := &st.merge
	var kgs []int32 // a restored slice may have entries in any key group
	if !s.restored {
		if len(s.chunks) == 0 {
			return nil // nothing of it was written
		}
		kgs = st.kgs[:0]
		for _, c := range s.chunks {
			kgs = append(kgs, c.kg)
		}
		slices.Sort(kgs)
		kgs = slices.Compact(kgs)
		st.kgs = kgs
	}
	if err := m.resetIn(st.nss, kgs); err != nil {
		return err
	}
	for {
		ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := decodeKeyValues(st.keyBuf, m.val); err != nil {
			return fmt.Errorf("window aggregate: %w", err)
		}
		if err := st.b.SetCurrentKey(hashValues(st.keyBuf), m.val); err != nil {
			return err
		}
		if err := st.accSt.Clear(ns); err != nil {
			return err
		}
	}
	return st.clearIndex(s, ns)
}

// clearIndex removes the index of slice s (namespace ns): the entries it
// wrote, or, for a restored slice, whatever every key group holds.
func (st *heapSliceState) clearIndex(s *sliceData, ns []byte) error {
	if !s.restored {
		for _, c := range s.chunks {
			if err := st.b.SetCurrentKeyInGroup(int(c.kg), nil); err != nil {
				return err
			}
			if err := st.idxSt.Delete(ns, appendOrdered(st.uk[:0], int64(c.seq))); err != nil {
				return err
			}
		}
		return nil
	}
	r := st.b.KeyGroups()
	for kg := r.First; kg <= r.Last; kg++ {
		if err := st.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		if err := st.idxSt.Clear(ns); err != nil {
			return err
		}
	}
	return nil
}

// visitWindow calls v once for every key that has an accumulator in a slice
// ending in (lo, hi], in the order in which the keys first appeared in those
// slices, with the key values and its accumulators there.
func (st *heapSliceState) visitWindow(lo, hi int64, v windowVisitor) error {
	st.win = st.win[:0]
	spilled := false
	for _, s := range st.slices {
		if s.end > lo && s.end <= hi {
			spilled = spilled || s.spilled
			if len(s.keys) > 0 || s.spilled {
				st.win = append(st.win, s)
			}
		}
	}
	if spilled {
		return st.visitStored(v)
	}
	w := st.accWidth
	if len(st.win) == 1 {
		// A key has at most one slot per slice: no merging, no dedup.
		s := st.win[0]
		for slot, id := range s.keys {
			off := slot * w
			st.accList = append(st.accList[:0], s.accs[off:off+w:off+w])
			if err := v.visitKey(st.keys.Key(id), st.accList); err != nil {
				return err
			}
		}
		return nil
	}
	st.stamp++
	st.heap = st.heap[:0]
	for _, s := range st.win {
		st.heapPush(cursor{s: s})
	}
	for len(st.heap) > 0 {
		c := &st.heap[0]
		id := c.s.keys[c.pos]
		c.pos++
		if c.pos == len(c.s.keys) {
			st.heapPop()
		} else {
			st.heapFix()
		}
		if st.stamps[id] == st.stamp {
			continue
		}
		st.stamps[id] = st.stamp
		st.accList = st.accList[:0]
		for _, r := range st.refs[id] {
			if r.s.end > lo && r.s.end <= hi {
				off := int(r.slot) * w
				st.accList = append(st.accList, r.s.accs[off:off+w:off+w])
			}
		}
		if err := v.visitKey(st.keys.Key(id), st.accList); err != nil {
			return err
		}
	}
	return nil
}

// visitStored is visitWindow over the slices in st.win when one of them is
// spilled: the memory is written back, then one ordered pass over the
// backend's entries of the instance's key groups reads the accumulators.
// A key's accumulators in all slices are adjacent there (its namespaces,
// the slice ends, follow its key), so each key is visited once, with one
// sequential read instead of a point read per slice. The keys come in
// stored-key order, by key group first, as Flink fires a window's keys
// from its key-group-ordered timers; a window held in memory fires in
// arrival order instead. The order of a window's rows is not part of the
// result.
func (st *heapSliceState) visitStored(v windowVisitor) error {
	st.winEnds = st.winEnds[:0]
	for _, s := range st.win {
		if err := st.writeBack(s); err != nil {
			return err
		}
		st.winEnds = append(st.winEnds, s.end)
	}
	for len(st.decs) < len(st.win) {
		st.decs = append(st.decs, make([]types.Value, st.accWidth))
	}
	// The entry's bytes are valid only during the callback: the key in
	// visit and its accumulators' bytes are copied until the key changes.
	vis := &st.stored
	vis.reset()
	err := st.b.Entries(st.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != stateSliceAcc || len(e.Namespace) != 8 {
			return nil
		}
		j, ok := slices.BinarySearch(st.winEnds, ordered(e.Namespace))
		if !ok {
			return nil
		}
		if vis.has && (e.KeyGroup != vis.kg || !bytes.Equal(e.Key, vis.key)) {
			if err := st.visitPending(v); err != nil {
				return err
			}
		}
		if !vis.has {
			vis.has, vis.kg = true, e.KeyGroup
			vis.key = append(vis.key[:0], e.Key...)
		}
		off := len(vis.vals)
		vis.vals = append(vis.vals, e.Value...)
		vis.parts = append(vis.parts, storedPart{slice: j, off: off, end: len(vis.vals)})
		return nil
	})
	if err != nil {
		return err
	}
	if vis.has {
		return st.visitPending(v)
	}
	return nil
}

// storedVisit is the key visitStored is reading: its stored key and the
// stored accumulators of it seen so far, by slice.
type storedVisit struct {
	has   bool
	kg    int
	key   []byte
	vals  []byte
	parts []storedPart
}

type storedPart struct{ slice, off, end int }

func (p *storedVisit) reset() {
	p.has, p.key, p.vals, p.parts = false, p.key[:0], p.vals[:0], p.parts[:0]
}

// visitPending decodes the pending key of visitStored and visits it.
func (st *heapSliceState) visitPending(v windowVisitor) error {
	vis := &st.stored
	defer vis.reset()
	if err := decodeKeyValues(st.keyBuf, vis.key); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	st.accList = st.accList[:0]
	for _, p := range vis.parts {
		stored := vis.vals[p.off:p.end]
		_, n := binary.Uvarint(stored) // the arrival seq
		if n <= 0 {
			return fmt.Errorf("window aggregate: malformed accumulator of slice %d in the state backend", st.winEnds[p.slice])
		}
		rest, err := decodeAccValues(st.decs[p.slice], stored[n:])
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("window aggregate: malformed accumulator of slice %d in the state backend (%v)", st.winEnds[p.slice], err)
		}
		st.accList = append(st.accList, st.decs[p.slice])
	}
	return v.visitKey(st.keyBuf, st.accList)
}

// The cursors form a binary min-heap on the arrival sequence of the slot they
// point at, so the merge of the slices' key lists yields keys by first arrival.

func (st *heapSliceState) less(i, j int) bool {
	a, b := st.heap[i], st.heap[j]
	return a.s.seqs[a.pos] < b.s.seqs[b.pos]
}

func (st *heapSliceState) heapPush(c cursor) {
	st.heap = append(st.heap, c)
	i := len(st.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !st.less(i, p) {
			break
		}
		st.heap[i], st.heap[p] = st.heap[p], st.heap[i]
		i = p
	}
}

func (st *heapSliceState) heapPop() {
	n := len(st.heap) - 1
	st.heap[0] = st.heap[n]
	st.heap = st.heap[:n]
	st.heapFix()
}

// heapFix restores the heap after the root changed.
func (st *heapSliceState) heapFix() {
	n := len(st.heap)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && st.less(r, l) {
			m = r
		}
		if !st.less(m, i) {
			return
		}
		st.heap[i], st.heap[m] = st.heap[m], st.heap[i]
		i = m
	}
}
