package join

import "math/bits"

// keyFilter is a Bloom filter of 64-bit hashes: of the rows a side stored
// (sideView.rowFilter), or, as described here, of the join keys it stored since a
// fresh start, by the keys' 64-bit hash (the exchange's, equal for equal
// keys of both sides). On rocksdb a key that never had state costs a
// Pebble seek per lookup, which no block cache avoids; a join of two large
// streams looks up the other side and its own side of every new key, so
// the filter answering "never stored" spares most of them. A false
// positive only costs the lookup. After a restore the stored keys are not
// known, so no filter is used.
type keyFilter struct {
	words []uint64
	mask  uint64 // bit index mask: len(words)*64 - 1
}

// filterProbes is the number of bits set per key.
const filterProbes = 4

// newKeyFilter returns a filter of about size bytes (a power of two,
// at least 64 KB).
func newKeyFilter(size int64) *keyFilter {
	n := uint64(64 << 10)
	for n*2 <= uint64(size) {
		n *= 2
	}
	return &keyFilter{words: make([]uint64, n/8), mask: n*8 - 1}
}

// probe returns the i-th bit of hash h (double hashing over the two halves).
func (f *keyFilter) probe(h uint64, i uint64) uint64 {
	h2 := bits.RotateLeft64(h, 32) | 1
	return (h + i*h2) & f.mask
}

func (f *keyFilter) add(h uint64) {
	for i := range uint64(filterProbes) {
		b := f.probe(h, i)
		f.words[b>>6] |= 1 << (b & 63)
	}
}

// mayContain reports whether a key of hash h may have been added.
func (f *keyFilter) mayContain(h uint64) bool {
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
