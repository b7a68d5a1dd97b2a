package shell

import (
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// resultTable is the materialized result of a query: the rows that remain
// after applying its changelog. +I and +U add a row, -U and -D remove one
// equal row (types.RowsEqual).
//
// Row order is the order in which rows were first inserted, with one rule
// for updates: a +U that directly follows a -U in the changelog (the next
// change, even in the next batch) takes the place of the row the -U removed,
// so a row updated in place keeps its position. Any other added row goes to
// the end. When several rows are equal, a retraction removes the one nearest
// the end of the table.
//
// Rows are copied into chunks of values owned by the table, so applying
// changes allocates only when a chunk fills up or the index grows. Removed
// rows leave dead slots behind that are compacted away once they outnumber
// the live ones.
//
// With maxRows > 0 the table keeps at most maxRows rows: adding a row to a
// full table first evicts the oldest live one (Flink's
// 'sql-client.execution.max-table-result.rows').
type resultTable struct {
	width int // values per row (the schema's column count)
	// maxRows bounds the live rows (<= 0: no bound); evicted counts the
	// rows dropped for it; oldest is at or before the first live slot.
	maxRows int
	evicted int64
	oldest  int32
	slots   []resultSlot
	live    int
	// heads maps a row hash to the live slot with that hash at the highest
	// position; the other slots with that hash follow through next, in
	// descending position.
	heads map[uint64]int32
	// vacated is the slot removed by the previous change when that change
	// was a -U, else -1: the place a directly following +U takes.
	vacated int32
	chunk   []types.Value // storage for new rows, filled from the front
}

type resultSlot struct {
	row  types.Row
	hash uint64
	next int32 // next lower live slot with the same hash, -1 at the end
	live bool
}

const (
	rowChunkValues = 4096
	minCompaction  = 256 // dead slots tolerated before compacting
)

func newResultTable(width, maxRows int) *resultTable {
	return &resultTable{width: width, maxRows: maxRows, heads: make(map[uint64]int32), vacated: -1}
}

// evictOldest drops the oldest live row to make room for a new one.
func (t *resultTable) evictOldest() {
	for t.oldest < int32(len(t.slots)) && !t.slots[t.oldest].live {
		t.oldest++
	}
	if t.oldest == int32(len(t.slots)) {
		return
	}
	t.unlink(t.oldest)
	t.slots[t.oldest].live = false
	t.live--
	t.evicted++
}

// Len is the number of rows in the result.
func (t *resultTable) Len() int { return t.live }

// apply applies one change. ok is false when a -U or -D matched no row of
// the result; the change is then ignored.
func (t *resultTable) apply(c session.Change) (ok bool) {
	vacated := t.vacated
	t.vacated = -1
	if c.Kind.IsRetract() {
		i := t.find(c.Row)
		if i < 0 {
			return false
		}
		t.unlink(i)
		t.slots[i].live = false
		t.live--
		if c.Kind == types.UpdateBefore {
			t.vacated = i
			return true // compacting now would move the vacated slot
		}
	} else if c.Kind == types.UpdateAfter && vacated >= 0 {
		t.fill(vacated, c.Row)
	} else {
		if t.maxRows > 0 && t.live >= t.maxRows {
			t.evictOldest()
		}
		t.slots = append(t.slots, resultSlot{})
		t.fill(int32(len(t.slots)-1), c.Row)
	}
	t.maybeCompact()
	return true
}

// fill stores row in slot i, reusing the slot's storage when it has some.
func (t *resultTable) fill(i int32, row types.Row) {
	s := &t.slots[i]
	if len(s.row) == len(row) && len(row) == t.width {
		copy(s.row, row)
	} else {
		s.row = t.store(row)
	}
	s.hash = hashRow(row)
	s.live = true
	t.live++
	t.link(i)
}

// store copies row into the table's own storage.
func (t *resultTable) store(row types.Row) types.Row {
	if len(row) != t.width || t.width == 0 {
		return row.Clone() // not expected from a well-formed query
	}
	if cap(t.chunk)-len(t.chunk) < t.width {
		t.chunk = make([]types.Value, 0, max(rowChunkValues, t.width))
	}
	n := len(t.chunk)
	t.chunk = append(t.chunk, row...)
	return t.chunk[n : n+t.width : n+t.width]
}

// find returns the live slot nearest the end whose row equals row, or -1.
func (t *resultTable) find(row types.Row) int32 {
	h := hashRow(row)
	if i, ok := t.heads[h]; ok {
		for ; i >= 0; i = t.slots[i].next {
			if types.RowsEqual(t.slots[i].row, row) {
				return i
			}
		}
	}
	// Values that compare equal should hash equal; should two ever not
	// (say, decimals of different scales), a scan still finds the row. It
	// only runs for a retraction that the index cannot match, which is
	// normally an error in the changelog.
	for i := len(t.slots) - 1; i >= 0; i-- {
		if s := &t.slots[i]; s.live && types.RowsEqual(s.row, row) {
			return int32(i)
		}
	}
	return -1
}

// link adds live slot i to the chain of its hash, keeping positions in
// descending order.
func (t *resultTable) link(i int32) {
	s := &t.slots[i]
	head, ok := t.heads[s.hash]
	if !ok || head < i {
		s.next = -1
		if ok {
			s.next = head
		}
		t.heads[s.hash] = i
		return
	}
	p := head
	for t.slots[p].next > i {
		p = t.slots[p].next
	}
	s.next = t.slots[p].next
	t.slots[p].next = i
}

// unlink removes slot i from the chain of its hash.
func (t *resultTable) unlink(i int32) {
	s := &t.slots[i]
	head := t.heads[s.hash]
	if head == i {
		if s.next >= 0 {
			t.heads[s.hash] = s.next
		} else {
			delete(t.heads, s.hash)
		}
		return
	}
	for p := head; p >= 0; p = t.slots[p].next {
		if t.slots[p].next == i {
			t.slots[p].next = s.next
			return
		}
	}
}

// maybeCompact drops the dead slots once they outnumber the live ones, and
// with them the storage of the rows they held.
func (t *resultTable) maybeCompact() {
	dead := len(t.slots) - t.live
	if dead < minCompaction || dead <= t.live {
		return
	}
	old := t.slots
	t.slots = make([]resultSlot, 0, max(2*t.live, minCompaction))
	t.chunk = nil
	t.oldest = 0
	clear(t.heads)
	for _, s := range old {
		if !s.live {
			continue
		}
		i := int32(len(t.slots))
		t.slots = append(t.slots, resultSlot{row: t.store(s.row), hash: s.hash, live: true})
		t.link(i) // positions ascend, so every slot becomes its chain's head
	}
}

// each calls fn for the rows of the result in order.
func (t *resultTable) each(fn func(types.Row)) {
	for i := range t.slots {
		if t.slots[i].live {
			fn(t.slots[i].row)
		}
	}
}

// last appends up to n of the last rows of the result to dst, in order.
func (t *resultTable) last(dst []types.Row, n int) []types.Row {
	start := len(t.slots)
	for found := 0; start > 0 && found < n; {
		start--
		if t.slots[start].live {
			found++
		}
	}
	for i := start; i < len(t.slots); i++ {
		if t.slots[i].live {
			dst = append(dst, t.slots[i].row)
		}
	}
	return dst
}

func hashRow(row types.Row) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, v := range row {
		h = types.Hash(h, v)
	}
	return h
}
