package groupagg

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestFlatValuesPages grows the paged value store the way the cache does
// (one id more at a time, then a jump), across the first page's doublings
// and several full pages, and checks that every id keeps its own values:
// a page copied without its values, or two ids sharing values across a
// page boundary, shows as a wrong value.
func TestFlatValuesPages(t *testing.T) {
	for _, width := range []int{1, 3} {
		f := &flatValues{width: width}
		put := func(id int) {
			for j, v := range f.values(int32(id)) {
				if v.K != types.KindNull {
					t.Fatalf("width %d: new id %d holds %v at %d", width, id, v, j)
				}
			}
			for j := range width {
				f.values(int32(id))[j] = types.Int(int64(id*10 + j))
			}
		}
		n := 0
		grow := func(to int) {
			f.Grow(to)
			for ; n < to; n++ {
				put(n)
			}
		}
		for i := 1; i <= 3*flatPage+5; i++ {
			grow(i)
		}
		grow(7*flatPage + 1) // several pages at once
		if f.ids < n {
			t.Fatalf("width %d: %d ids held after growing to %d", width, f.ids, n)
		}
		for id := range n {
			vals := f.values(int32(id))
			if len(vals) != width || cap(vals) != width {
				t.Fatalf("width %d: id %d has %d values (cap %d)", width, id, len(vals), cap(vals))
			}
			for j, v := range vals {
				if v.N != int64(id*10+j) {
					t.Fatalf("width %d: id %d value %d is %d, want %d", width, id, j, v.N, id*10+j)
				}
			}
		}
		f.Clear(int32(flatPage))
		if f.values(flatPage)[0].K != types.KindNull || f.values(flatPage - 1)[0].N != int64((flatPage-1)*10) || f.values(flatPage + 1)[0].N != int64((flatPage+1)*10) {
			t.Fatalf("width %d: Clear of the first id of a page reached its neighbours", width)
		}
	}
}
