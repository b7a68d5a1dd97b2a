package groupagg

import (
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

// valueState is the per-key state of the group aggregate and of
// ChangelogNormalize: a fixed number of values per key, plus the processing
// time of the key's last write (for state TTL).
//
// It is the seam where a persistent backend (Pebble) replaces the heap: the
// operators look a key up, read and modify its values in place, and call
// written after every change, which is where such a backend would mark the
// entry dirty in its cache. An id stays valid until remove.
type valueState interface {
	// get returns the id of the key of row (key columns hashed to h).
	get(row types.Row, h uint64) (id int32, ok bool)
	// create adds the absent key of row with all values NULL.
	create(row types.Row, h uint64) int32
	// values are the key's values, modified in place by the caller.
	values(id int32) []types.Value
	// key returns the key's column values.
	key(id int32) []types.Value
	// written records that the key's values changed at processing time now.
	written(id int32, now int64)
	// lastWrite is the processing time of the key's last write.
	lastWrite(id int32) int64
	remove(id int32)
	size() int
	// scan calls fn with every key; fn may remove the id it is given.
	scan(fn func(id int32))
}

// heapValueState keeps the values of all keys in one flat array indexed by
// the key table's ids.
type heapValueState struct {
	keys    *keyTable
	width   int
	vals    []types.Value
	stamp   []int64
	alive   []bool
	changes snapshot.Changes
}

func newHeapValueState(keyCols []int, width int) *heapValueState {
	return &heapValueState{keys: newKeyTable(keyCols), width: width}
}

func (s *heapValueState) get(row types.Row, h uint64) (int32, bool) {
	id := s.keys.find(row, h)
	return id, id >= 0
}

func (s *heapValueState) create(row types.Row, h uint64) int32 {
	id := s.keys.add(row, h)
	if int(id) == len(s.alive) {
		s.alive = append(s.alive, false)
		s.stamp = append(s.stamp, 0)
		for range s.width {
			s.vals = append(s.vals, types.Value{})
		}
	}
	s.alive[id] = true
	return id
}

func (s *heapValueState) values(id int32) []types.Value {
	w := s.width
	return s.vals[int(id)*w : int(id+1)*w : int(id+1)*w]
}

func (s *heapValueState) key(id int32) []types.Value { return s.keys.key(id) }

func (s *heapValueState) written(id int32, now int64) {
	s.stamp[id] = now
	s.changes.Touch(id)
}

func (s *heapValueState) lastWrite(id int32) int64 { return s.stamp[id] }

func (s *heapValueState) remove(id int32) {
	s.changes.Removed(id, s.keys.hash(id), tagValue, s.keys.key(id))
	clear(s.values(id))
	s.alive[id] = false
	s.keys.release(id)
}

func (s *heapValueState) size() int { return s.keys.size() }

func (s *heapValueState) scan(fn func(id int32)) {
	for id := range s.alive {
		if s.alive[id] {
			fn(int32(id))
		}
	}
}

// listState is the per-key state of the sink upsert materializer: the rows
// of a key currently alive, in arrival order. Rows are copied in; the rows
// returned by rows are owned by the state and valid until the next change of
// the key. Like valueState, it is the seam for a persistent backend.
type listState interface {
	get(row types.Row, h uint64) (id int32, ok bool)
	create(row types.Row, h uint64) int32
	rows(id int32) []types.Row
	appendRow(id int32, r types.Row)
	replaceRow(id int32, i int, r types.Row)
	removeRow(id int32, i int)
	written(id int32, now int64)
	lastWrite(id int32) int64
	remove(id int32)
	size() int
	scan(fn func(id int32))
}

// heapListState keeps each key's rows in a slice of row buffers; buffers of
// removed rows are recycled, so a steady stream of additions and removals
// allocates nothing.
type heapListState struct {
	keys    *keyTable
	width   int
	lists   [][]types.Row
	stamp   []int64
	alive   []bool
	spare   []types.Row
	chunk   []types.Value
	changes snapshot.Changes
}

func newHeapListState(keyCols []int, width int) *heapListState {
	return &heapListState{keys: newKeyTable(keyCols), width: width}
}

func (s *heapListState) get(row types.Row, h uint64) (int32, bool) {
	id := s.keys.find(row, h)
	return id, id >= 0
}

func (s *heapListState) create(row types.Row, h uint64) int32 {
	id := s.keys.add(row, h)
	if int(id) == len(s.alive) {
		s.alive = append(s.alive, false)
		s.stamp = append(s.stamp, 0)
		s.lists = append(s.lists, nil)
	}
	s.alive[id] = true
	return id
}

func (s *heapListState) rows(id int32) []types.Row { return s.lists[id] }

// buffer returns a row buffer holding a copy of r.
func (s *heapListState) buffer(r types.Row) types.Row {
	var b types.Row
	if n := len(s.spare); n > 0 {
		b = s.spare[n-1]
		s.spare = s.spare[:n-1]
	} else {
		if len(s.chunk) < s.width {
			s.chunk = make([]types.Value, 64*max(s.width, 1))
		}
		b = types.Row(s.chunk[:s.width:s.width])
		s.chunk = s.chunk[s.width:]
	}
	copy(b, r)
	return b
}

func (s *heapListState) recycle(b types.Row) {
	clear(b)
	s.spare = append(s.spare, b)
}

func (s *heapListState) appendRow(id int32, r types.Row) {
	s.lists[id] = append(s.lists[id], s.buffer(r))
}

func (s *heapListState) replaceRow(id int32, i int, r types.Row) {
	copy(s.lists[id][i], r)
}

func (s *heapListState) removeRow(id int32, i int) {
	l := s.lists[id]
	s.recycle(l[i])
	copy(l[i:], l[i+1:])
	l[len(l)-1] = nil
	s.lists[id] = l[:len(l)-1]
}

func (s *heapListState) written(id int32, now int64) {
	s.stamp[id] = now
	s.changes.Touch(id)
}

func (s *heapListState) lastWrite(id int32) int64 { return s.stamp[id] }

func (s *heapListState) remove(id int32) {
	s.changes.Removed(id, s.keys.hash(id), tagList, s.keys.key(id))
	l := s.lists[id]
	for i, r := range l {
		s.recycle(r)
		l[i] = nil
	}
	s.lists[id] = l[:0]
	s.alive[id] = false
	s.keys.release(id)
}

func (s *heapListState) size() int { return s.keys.size() }

func (s *heapListState) scan(fn func(id int32)) {
	for id := range s.alive {
		if s.alive[id] {
			fn(int32(id))
		}
	}
}
