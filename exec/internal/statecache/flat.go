package statecache

import "github.com/flinksql/flinksql/types"

// Flat holds Width values per id, for a Slots implementation, in pages of
// FlatPage ids each: a growing state allocates a page at a time instead
// of doubling (and copying, and leaving to the collector) one array of
// every key's values, which at the peak of a doubling held the state
// twice over. A small state's single page grows by doubling up to a full
// one.
type Flat struct {
	Width int
	pages [][]types.Value
	ids   int // ids the pages hold
}

const (
	flatPageShift = 10
	// FlatPage is the number of ids a full page of a Flat holds.
	FlatPage = 1 << flatPageShift
)

// Values returns id's Width values (id below what Grow made valid).
func (f *Flat) Values(id int32) []types.Value {
	w := f.Width
	o := int(id&(FlatPage-1)) * w
	return f.pages[id>>flatPageShift][o : o+w : o+w]
}

// Grow makes ids below n valid, their values NULL.
func (f *Flat) Grow(n int) {
	for f.ids < n {
		if len(f.pages) <= 1 && f.ids < FlatPage {
			c := min(max(2*f.ids, n, 8), FlatPage)
			p := make([]types.Value, c*f.Width)
			if len(f.pages) == 1 {
				copy(p, f.pages[0])
				f.pages[0] = p
			} else {
				f.pages = append(f.pages, p)
			}
			f.ids = c
			continue
		}
		f.pages = append(f.pages, make([]types.Value, FlatPage*f.Width))
		f.ids += FlatPage
	}
}

// IDs is the number of ids valid.
func (f *Flat) IDs() int { return f.ids }
