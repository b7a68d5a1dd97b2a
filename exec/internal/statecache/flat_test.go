package statecache

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestFlatPages grows the paged value store the way the cache does
// (one id more at a time, then a jump), across the first page's doublings
// and several full pages, and checks that every id keeps its own values:
// a page copied without its values, or two ids sharing values across a
// page boundary, shows as a wrong value.
func TestFlatPages(t *testing.T) {
	for _, width := range []int{1, 3} {
		f := &Flat{Width: width}
		put := func(id int) {
			for j, v := range f.Values(int32(id)) {
				if v.K != types.KindNull {
					t.Fatalf("width %d: new id %d holds %v at %d", width, id, v, j)
				}
			}
			for j := range width {
				f.Values(int32(id))[j] = types.Int(int64(id*10 + j))
			}
		}
		n := 0
		grow := func(to int) {
			f.Grow(to)
			for ; n < to; n++ {
				put(n)
			}
		}
		for i := 1; i <= 3*FlatPage+5; i++ {
			grow(i)
		}
		grow(7*FlatPage + 1) // several pages at once
		if f.IDs() < n {
			t.Fatalf("width %d: %d ids held after growing to %d", width, f.IDs(), n)
		}
		for id := range n {
			vals := f.Values(int32(id))
			if len(vals) != width || cap(vals) != width {
				t.Fatalf("width %d: id %d has %d values (cap %d)", width, id, len(vals), cap(vals))
			}
			for j, v := range vals {
				if v.N != int64(id*10+j) {
					t.Fatalf("width %d: id %d value %d is %d, want %d", width, id, j, v.N, id*10+j)
				}
			}
		}
		clear(f.Values(FlatPage))
		if f.Values(FlatPage)[0].K != types.KindNull || f.Values(FlatPage - 1)[0].N != int64((FlatPage-1)*10) || f.Values(FlatPage + 1)[0].N != int64((FlatPage+1)*10) {
			t.Fatalf("width %d: Clear of the first id of a page reached its neighbours", width)
		}
	}
}
