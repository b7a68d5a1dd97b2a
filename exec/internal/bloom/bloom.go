// Package bloom owns the Bloom filters operators keep in memory of the
// keys (or rows) they have written to the state backend since a fresh
// start. On rocksdb a lookup of a key that was never stored costs a Pebble
// seek in every level, which no block cache avoids; a filter answering
// "never stored" spares it. A false positive only costs the lookup. After
// a restore what is stored is not known, so no filter is used: a nil
// *Filter lets every lookup through.
package bloom

import "math/bits"

// Filter is a Bloom filter of 64-bit hashes.
type Filter struct {
	words []uint64
	mask  uint64 // bit index mask: len(words)*64 - 1
}

// filterProbes is the number of bits set per key.
const filterProbes = 4

// New returns a filter of about size bytes (a power of two, at least
// 64 KB).
func New(size int64) *Filter {
	n := uint64(64 << 10)
	for n*2 <= uint64(size) {
		n *= 2
	}
	return &Filter{words: make([]uint64, n/8), mask: n*8 - 1}
}

// probe returns the i-th bit of hash h (double hashing over the two halves).
func (f *Filter) probe(h uint64, i uint64) uint64 {
	h2 := bits.RotateLeft64(h, 32) | 1
	return (h + i*h2) & f.mask
}

// Add adds hash h.
func (f *Filter) Add(h uint64) {
	for i := range uint64(filterProbes) {
		b := f.probe(h, i)
		f.words[b>>6] |= 1 << (b & 63)
	}
}

// MayContain reports whether hash h may have been added; true for a nil
// filter.
func (f *Filter) MayContain(h uint64) bool {
	if f == nil {
		return true
	}
	for i := range uint64(filterProbes) {
		b := f.probe(h, i)
		if f.words[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
	}
	return true
}
