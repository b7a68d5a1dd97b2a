package rank

import (
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// sortedRows holds the rows of one partition in rank order. Rows live in
// slots of one flat value array; order lists the slots by rank, so moving a
// row costs one int32 and a removed row's slot is reused by the next insert.
type sortedRows struct {
	width int
	vals  []types.Value
	order []int32
	free  []int32
}

func (s *sortedRows) len() int { return len(s.order) }

// at returns the row of rank i+1; valid until the next change.
func (s *sortedRows) at(i int) types.Row {
	slot := int(s.order[i])
	return types.Row(s.vals[slot*s.width : (slot+1)*s.width : (slot+1)*s.width])
}

// upperBound returns the position after every row that sorts at or before
// row: where a new row goes so that ties keep arrival order.
func (s *sortedRows) upperBound(keys []exec.SortKey, row types.Row) int {
	lo, hi := 0, len(s.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if exec.CompareRows(keys, s.at(m), row) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lowerBound returns the position of the first row that does not sort
// before row.
func (s *sortedRows) lowerBound(keys []exec.SortKey, row types.Row) int {
	lo, hi := 0, len(s.order)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if exec.CompareRows(keys, s.at(m), row) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// find returns the position of the first row equal to row in all columns,
// or -1.
func (s *sortedRows) find(keys []exec.SortKey, row types.Row) int {
	for i := s.lowerBound(keys, row); i < len(s.order); i++ {
		r := s.at(i)
		if exec.CompareRows(keys, r, row) != 0 {
			break
		}
		if types.RowsEqual(r, row) {
			return i
		}
	}
	return -1
}

// insert puts a copy of row at position pos.
func (s *sortedRows) insert(pos int, row types.Row) {
	var slot int32
	if n := len(s.free); n > 0 {
		slot = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		slot = int32(len(s.vals) / s.width)
		for range s.width {
			s.vals = append(s.vals, types.Value{})
		}
	}
	copy(s.vals[int(slot)*s.width:], row)
	s.order = append(s.order, 0)
	copy(s.order[pos+1:], s.order[pos:])
	s.order[pos] = slot
}

// remove drops the row at position pos.
func (s *sortedRows) remove(pos int) {
	slot := s.order[pos]
	clear(s.vals[int(slot)*s.width : int(slot+1)*s.width])
	s.free = append(s.free, slot)
	s.order = append(s.order[:pos], s.order[pos+1:]...)
}

// truncate drops the rows from position n on.
func (s *sortedRows) truncate(n int) {
	for len(s.order) > n {
		s.remove(len(s.order) - 1)
	}
}

// reset drops every row, keeping the memory.
func (s *sortedRows) reset() {
	clear(s.vals)
	s.vals = s.vals[:0]
	s.order = s.order[:0]
	s.free = s.free[:0]
}
