package window

import (
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

// sliceState keeps one accumulator per (key, slice) for the slicing window
// aggregate. It is the seam where a persistent backend can replace the heap
// implementation: the operator decides which slices exist and when they fire;
// the state only stores accumulators and enumerates keys.
type sliceState interface {
	// acc returns the accumulator of the key of row (hash h) in the slice
	// ending at sliceEnd. created reports a new accumulator (all NULL) that
	// the caller initialises. The slice is valid until the next call.
	acc(row types.Row, h uint64, sliceEnd int64) (acc []types.Value, created bool)
	// visitWindow calls v once for every key that has an accumulator in a
	// slice ending in (lo, hi], in the order in which the keys first appeared
	// in those slices, with the key values and its accumulators there.
	visitWindow(lo, hi int64, v windowVisitor) error
	// dropSlice discards every accumulator of the slice.
	dropSlice(sliceEnd int64)
	// numKeys is the number of distinct keys held.
	numKeys() int
}

// windowVisitor receives the keys of a firing window. key and accs are only
// valid during the call.
type windowVisitor interface {
	visitKey(key []types.Value, accs [][]types.Value) error
}

// heapSliceState is the in-memory sliceState. Accumulators live in one flat
// array per slice; every key keeps references to its slots, newest last, so a
// row of a key seen in the current slice is found without a map lookup per
// slice.
type heapSliceState struct {
	keys     *keyed.Table
	accWidth int
	refs     [][]sliceRef // per key id, ascending slice end
	stamps   []uint64     // per key id: last visit that emitted it
	slices   []*sliceData // ascending end
	spare    []*sliceData
	seq      uint64
	stamp    uint64

	// checkpointing: see snapshot.go
	tracking bool
	dels     snapshot.Deletes

	// visit scratch
	win     []*sliceData
	heap    []cursor
	accList [][]types.Value
}

type sliceRef struct {
	s    *sliceData
	slot int32
}

type sliceData struct {
	end   int64
	keys  []int32  // key id per slot, in order of appearance
	seqs  []uint64 // arrival sequence per slot, ascending
	marks []uint8  // snapshot.MarkDirty, snapshot.MarkPersisted per slot
	accs  []types.Value
}

type cursor struct {
	s   *sliceData
	pos int
}

func newHeapSliceState(keyCols []int, accWidth int) *heapSliceState {
	return &heapSliceState{keys: keyed.NewTable(keyCols), accWidth: accWidth}
}

func (st *heapSliceState) numKeys() int { return st.keys.Size() }

func (st *heapSliceState) acc(row types.Row, h uint64, sliceEnd int64) ([]types.Value, bool) {
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
			if st.tracking {
				r.s.marks[r.slot] |= snapshot.MarkDirty
			}
			off := int(r.slot) * w
			return r.s.accs[off : off+w : off+w], false
		}
		if r.s.end < sliceEnd {
			break
		}
		i--
	}
	s := st.slice(sliceEnd)
	slot := int32(len(s.keys))
	s.keys = append(s.keys, id)
	st.seq++
	s.seqs = append(s.seqs, st.seq)
	var mark uint8
	if st.tracking {
		mark = snapshot.MarkDirty
	}
	s.marks = append(s.marks, mark)
	off := len(s.accs)
	if cap(s.accs)-off < w {
		grown := make([]types.Value, off, 2*cap(s.accs)+16*w)
		copy(grown, s.accs)
		s.accs = grown
	}
	s.accs = s.accs[:off+w]
	acc := s.accs[off : off+w : off+w]
	clear(acc)
	// insert the reference at i, keeping refs sorted by slice end
	refs = append(refs, sliceRef{})
	copy(refs[i+1:], refs[i:])
	refs[i] = sliceRef{s: s, slot: slot}
	st.refs[id] = refs
	return acc, true
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
	s.end = end
	st.slices = append(st.slices, nil)
	copy(st.slices[i+1:], st.slices[i:])
	st.slices[i] = s
	return s
}

func (st *heapSliceState) dropSlice(end int64) {
	idx := -1
	for i, s := range st.slices {
		if s.end == end {
			idx = i
			break
		}
	}
	if idx < 0 {
		return
	}
	s := st.slices[idx]
	for slot, id := range s.keys {
		if st.tracking && s.marks[slot]&snapshot.MarkPersisted != 0 {
			st.dels.Add(appendSliceKey(st.dels.Buffer(), st.keys.Key(id), s.end), st.keys.Hash(id))
		}
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
	clear(s.accs)
	s.keys, s.seqs, s.marks, s.accs = s.keys[:0], s.seqs[:0], s.marks[:0], s.accs[:0]
	st.slices = append(st.slices[:idx], st.slices[idx+1:]...)
	st.spare = append(st.spare, s)
}

func (st *heapSliceState) visitWindow(lo, hi int64, v windowVisitor) error {
	st.win = st.win[:0]
	for _, s := range st.slices {
		if s.end > lo && s.end <= hi && len(s.keys) > 0 {
			st.win = append(st.win, s)
		}
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
