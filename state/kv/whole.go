package kv

import (
	"bytes"
	"slices"
)

// A whole bucket is a map-state bucket of which the write-back cache holds
// every entry: a scan of it reads the cache instead of Pebble, and a point
// read of a key it lacks is known absent. A join probes the same key's
// bucket for each row of the other side (a hot auction's for each of its
// bids): only the first probe seeks Pebble.
//
// The invariant: while e.whole has a record for a bucket, every present
// cached entry of the bucket is listed in it (flag fListed), and no key of
// the bucket has a value that is not cached. Absent cached entries may be
// listed (a listed entry that is deleted stays listed) or not. So:
//   - a record is made only after a Pebble scan of the whole bucket, once
//     every dirty map entry was written back (the scan's view is the
//     truth), by caching every entry the scan met;
//   - an entry of the bucket that becomes present (a new cache entry, or
//     an absent one set) is listed;
//   - evicting a listed present entry drops the record (Pebble now holds a
//     value the cache does not); evicting an absent one unlists it;
//   - a record keeps at least one present entry: one with none (never
//     made for an empty bucket, dropped when its last entry is deleted)
//     could not be evicted with an entry, and would outlive the budget;
//   - a bucket that grows past maxWholeEntries present entries, or lists
//     twice that, is dropped: its scans go to Pebble, and listing stays
//     O(1) per write.

// maxWholeEntries bounds the entries of a whole bucket, so that a scan's
// copy of it and a record's list stay small.
const maxWholeEntries = 32

// wholeOverhead approximates what a record costs beyond its key and list.
const wholeOverhead = 64

type wholeBucket struct {
	slots  []uint32
	sorted bool // slots are in key order
	// present counts the listed entries with a value.
	present int
}

// mapBucket is the bucket of a stored key of a map state, nil for other
// keys.
func mapBucket(k []byte) []byte {
	if len(k) <= kgLen+sidLen || k[kgLen]&0x80 == 0 || storedKeyGroup(k) == KeyGroupNone {
		return nil
	}
	return k[:bucketSplit(k)]
}

// wholeOf is the record of k's bucket, nil when k is not a map-state key or
// its bucket is not whole.
func (e *pebbleEngine) wholeOf(k []byte) (*wholeBucket, []byte) {
	if len(e.whole) == 0 {
		return nil, nil
	}
	b := mapBucket(k)
	if b == nil {
		return nil, nil
	}
	return e.whole[string(b)], b
}

// listPresent notes that the entry in slot, of a map-state key, now has a
// value: it was created, or it was absent (deleted, and maybe listed).
func (e *pebbleEngine) listPresent(slot uint32) {
	c := &e.ents[slot]
	w, b := e.wholeOf(c.key())
	if w == nil {
		return
	}
	listed := c.flags&fListed != 0
	if w.present >= maxWholeEntries || (!listed && len(w.slots) >= 2*maxWholeEntries) {
		e.dropWhole(b, w)
		return
	}
	if !listed {
		e.list(w, slot)
	}
	w.present++
}

func (e *pebbleEngine) list(w *wholeBucket, slot uint32) {
	c := &e.ents[slot]
	c.flags |= fListed
	if n := len(w.slots); n > 0 && w.sorted && bytes.Compare(e.ents[w.slots[n-1]].key(), c.key()) >= 0 {
		w.sorted = false
	}
	before := cap(w.slots)
	w.slots = append(w.slots, slot)
	e.bytes += 4 * int64(cap(w.slots)-before)
}

// unlistPresent notes that the listed entry c lost its value.
func (e *pebbleEngine) unlistPresent(c *cacheEntry) {
	b := mapBucket(c.key())
	if w := e.whole[string(b)]; w != nil {
		if w.present--; w.present == 0 {
			e.dropWhole(b, w) // see makeWhole
		}
	}
}

// unlist is called before evicting the listed entry c in slot.
func (e *pebbleEngine) unlist(slot uint32, c *cacheEntry) {
	b := mapBucket(c.key())
	w := e.whole[string(b)]
	if c.flags&fPresent != 0 {
		e.dropWhole(b, w)
		return
	}
	c.flags &^= fListed
	if i := slices.Index(w.slots, slot); i >= 0 {
		w.slots = slices.Delete(w.slots, i, i+1)
	}
}

func (e *pebbleEngine) dropWhole(b []byte, w *wholeBucket) {
	for _, slot := range w.slots {
		e.ents[slot].flags &^= fListed
	}
	e.bytes -= int64(len(b)) + wholeOverhead + 4*int64(cap(w.slots))
	delete(e.whole, string(b))
}

// dropAllWhole forgets every record, before writes that bypass the cache
// (a restore's ingest or load).
func (e *pebbleEngine) dropAllWhole() {
	for b, w := range e.whole {
		e.dropWhole([]byte(b), w)
	}
}

// wholeScan is what a Pebble scan of a bucket collected to make it whole:
// the entries it met, up to maxWholeEntries, in one buffer.
type wholeScan struct {
	buf  []byte
	ends []int // ends of key, then value, per entry, in buf
	over bool  // more than maxWholeEntries
}

func (s *wholeScan) reset() {
	s.buf, s.ends, s.over = s.buf[:0], s.ends[:0], false
}

func (s *wholeScan) add(k, v []byte) {
	if s.over {
		return
	}
	if len(s.ends) >= 2*maxWholeEntries {
		s.over = true
		return
	}
	s.buf = append(s.buf, k...)
	s.ends = append(s.ends, len(s.buf))
	s.buf = append(s.buf, v...)
	s.ends = append(s.ends, len(s.buf))
}

// makeWhole caches the entries a complete Pebble scan of bucket met and
// records the bucket as whole.
func (e *pebbleEngine) makeWhole(bucket []byte, s *wholeScan) error {
	// An empty bucket gets no record: a record lives as long as one of its
	// present entries is cached (evicting it drops the record), so records
	// stay within the cache's budget.
	if s.over || len(s.ends) == 0 {
		return nil
	}
	if _, ok := e.whole[string(bucket)]; ok {
		return nil
	}
	n := len(s.ends) / 2
	slots := make([]uint32, 0, n)
	start := 0
	for i := range n {
		k := s.buf[start:s.ends[2*i]]
		v := s.buf[s.ends[2*i]:s.ends[2*i+1]]
		start = s.ends[2*i+1]
		slot, ok := e.lookup(k)
		if !ok {
			var err error
			if slot, err = e.insert(k, v, fPresent); err != nil {
				return err
			}
		}
		e.ents[slot].flags |= fRef
		slots = append(slots, slot)
	}
	// An insert may have evicted an entry inserted before it.
	for i, slot := range slots {
		c := &e.ents[slot]
		k := s.buf[s.endOfValue(i-1):s.ends[2*i]]
		if c.flags&(fUsed|fPresent) != fUsed|fPresent || !bytes.Equal(c.key(), k) {
			return nil
		}
	}
	if e.whole == nil {
		e.whole = make(map[string]*wholeBucket)
	}
	w := &wholeBucket{slots: slots, sorted: true, present: n}
	for _, slot := range slots {
		e.ents[slot].flags |= fListed
	}
	e.whole[string(bucket)] = w
	e.bytes += int64(len(bucket)) + wholeOverhead + 4*int64(cap(slots))
	return nil
}

func (s *wholeScan) endOfValue(i int) int {
	if i < 0 {
		return 0
	}
	return s.ends[2*i+1]
}

// scanWhole visits the present entries of a whole bucket from the cache,
// in key order (descending with reverse) from the bound from, as
// scanBucket does; they are copied first, so fn may write to the engine.
func (e *pebbleEngine) scanWhole(bucket, from []byte, reverse bool, w *wholeBucket, fn func(k, v []byte) bool) {
	if !w.sorted {
		slices.SortFunc(w.slots, func(a, b uint32) int { return bytes.Compare(e.ents[a].key(), e.ents[b].key()) })
		w.sorted = true
	}
	s := &e.wholeBuf
	if e.wholeBusy {
		s = &wholeScan{} // a scan from another's callback
	}
	s.reset()
	for _, slot := range w.slots {
		c := &e.ents[slot]
		if c.flags&fPresent == 0 {
			continue
		}
		c.flags |= fRef
		if from != nil {
			if cmp := bytes.Compare(c.key()[len(bucket):], from); (!reverse && cmp < 0) || (reverse && cmp > 0) {
				continue
			}
		}
		s.buf = append(s.buf, c.key()...)
		s.ends = append(s.ends, len(s.buf))
		s.buf = append(s.buf, c.value()...)
		s.ends = append(s.ends, len(s.buf))
	}
	busy := e.wholeBusy
	e.wholeBusy = true
	defer func() { e.wholeBusy = busy }()
	n := len(s.ends) / 2
	for j := range n {
		i := j
		if reverse {
			i = n - 1 - j
		}
		start := s.endOfValue(i - 1)
		if !fn(s.buf[start:s.ends[2*i]], s.buf[s.ends[2*i]:s.ends[2*i+1]]) {
			return
		}
	}
}
