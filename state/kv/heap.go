package kv

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/flinksql/flinksql/state/image"
)

const (
	heapImageName = "kv-hashmap.state"
	// heapMarker keeps a live backend's directory non-empty, so that the
	// last Image.Discard removes it only after close.
	heapMarker = "kv-hashmap.store"
	// heapEntryOverhead approximates the bytes an entry costs beyond its
	// key and value: its slot, its map bucket share and string header.
	heapEntryOverhead = 64
	// Bounds of the emptied buckets kept for reuse.
	maxSpareBuckets = 4096
	maxSpareSlots   = 64
)

// Marks of a heap entry for change tracking.
const (
	markDirty     = 1 // changed since the last writeChanges
	markPersisted = 2 // written by a writeChanges (or loaded)
)

// heapEngine keeps entries in a Go map from stored key to slot. Map-state
// entries are also indexed per bucket, sorted, for iteration (see
// heapBucket).
//
// Copy-on-write: a snapshot copies the slot headers and bumps gen; a value
// buffer allocated in an earlier generation may belong to an image still
// being written, so a put replaces it instead of overwriting it. Keys are
// never written after creation.
type heapEngine struct {
	dir     string
	storeID string
	index   map[string]uint32
	ents    []heapEntry
	free    []uint32
	buckets map[string]*heapBucket
	// spare are emptied buckets kept for reuse: a key whose map entries
	// come and go (an interval join's rows, a window's) would otherwise
	// allocate a bucket and grow its slots anew each time.
	spare []*heapBucket
	// mergeBuf is merge's scratch copy of the pending slots.
	mergeBuf []mergeItem
	gen      uint32
	live     int
	bytes    int64
	lastID   int64

	// last is the slot of the last key looked up, lastOK whether it is
	// still that key's: an operator reads a key and then writes it, and
	// the write then skips the second map lookup.
	last   uint32
	lastOK bool

	tracking bool // a writeChanges happened: record changes from now on
	dirty    []uint32
	dels     []byte
	delEnds  []int
	cursor   int
}

type heapEntry struct {
	key   string // shares its allocation with the first version of val
	val   []byte
	gen   uint32
	marks uint8
	used  bool
}

// heapBucket lists the slots of one map-state bucket: slots[:sorted] in
// key order, then the slots added since the last read, unordered. A key
// with many map entries (a window join's rows of one window, q5's) would
// otherwise pay a shift of the sorted index on each insert, quadratic in
// the bucket's size; the pending ones are merged in once, by the next
// scan or delete of the bucket.
type heapBucket struct {
	slots  []uint32
	sorted int
}

func openHeap(dir string) (*heapEngine, error) {
	id, err := image.NewStoreID()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, heapMarker), nil, 0o644); err != nil {
		return nil, err
	}
	return &heapEngine{dir: dir, storeID: id, index: make(map[string]uint32), buckets: make(map[string]*heapBucket)}, nil
}

// restoreHeap loads the image file among files (downloaded into dir).
func restoreHeap(dir string, files []image.File) (*heapEngine, error) {
	if len(files) != 1 || files[0].LocalName == heapMarker {
		return nil, fmt.Errorf("a hashmap image has exactly one state file, got %d files", len(files))
	}
	path := filepath.Join(dir, files[0].LocalName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	e, err := openHeap(dir)
	if err != nil {
		return nil, err
	}
	var perr error
	err = image.ReadHashmap(data, func(k []byte) bool {
		_, err := validStored(k)
		return err == nil
	}, func(count uint64) {
		e.index = make(map[string]uint32, count)
		e.ents = make([]heapEntry, 0, count)
	}, func(k, v []byte) {
		if perr == nil {
			perr = e.put(k, v)
		}
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s (file %s): %w", path, files[0].Name, err)
	}
	// The entries are in memory; the download is no longer needed.
	if err := os.Remove(path); err != nil {
		return nil, err
	}
	return e, nil
}

// validStored checks a stored key read from an image or stream.
func validStored(k []byte) (parsedKey, error) {
	if len(k) >= 2 && storedKeyGroup(k) == KeyGroupNone {
		if !bytes.HasPrefix(k, registryPrefix) {
			return parsedKey{}, fmt.Errorf("stored key %x outside key groups is not a state declaration", prefix32(k))
		}
		return parsedKey{keyGroup: KeyGroupNone}, nil
	}
	p, err := parseKey(k)
	if err == nil && p.keyGroup >= MaxKeyGroups {
		err = fmt.Errorf("stored key %x: key group %d out of range", prefix32(k), p.keyGroup)
	}
	return p, err
}

// lookup finds k's slot.
func (e *heapEngine) lookup(k []byte) (uint32, bool) {
	if e.lastOK && e.ents[e.last].key == string(k) {
		return e.last, true
	}
	slot, ok := e.index[string(k)]
	if ok {
		e.last, e.lastOK = slot, true
	}
	return slot, ok
}

func (e *heapEngine) get(k []byte) ([]byte, bool, error) {
	slot, ok := e.lookup(k)
	if !ok {
		return nil, false, nil
	}
	return e.ents[slot].val, true, nil
}

func (e *heapEngine) touch(slot uint32) {
	ent := &e.ents[slot]
	if e.tracking && ent.marks&markDirty == 0 {
		ent.marks |= markDirty
		e.dirty = append(e.dirty, slot)
	}
}

// writable returns slot's value buffer ready to take n bytes, keeping its
// first keep bytes: in place when this generation owns it and it is large
// enough, else a new buffer (a frozen image may still read the old one).
func (e *heapEngine) writable(slot uint32, keep, n int) []byte {
	ent := &e.ents[slot]
	if ent.gen == e.gen && cap(ent.val) >= n {
		return ent.val[:keep]
	}
	nv := make([]byte, keep, n+n/4)
	copy(nv, ent.val[:keep])
	e.bytes += int64(cap(nv) - cap(ent.val))
	ent.val, ent.gen = nv, e.gen
	return nv
}

func (e *heapEngine) put(k, v []byte) error {
	if slot, ok := e.lookup(k); ok {
		buf := e.writable(slot, 0, len(v))
		e.ents[slot].val = append(buf, v...)
		e.touch(slot)
		return nil
	}
	e.add(k, v)
	return nil
}

func (e *heapEngine) appendValue(k, suffix []byte) error {
	if slot, ok := e.lookup(k); ok {
		ent := &e.ents[slot]
		n := len(ent.val)
		buf := e.writable(slot, n, n+len(suffix))
		ent.val = append(buf, suffix...)
		e.touch(slot)
		return nil
	}
	e.add(k, suffix)
	return nil
}

// add stores a new entry; key and value share one allocation.
func (e *heapEngine) add(k, v []byte) {
	buf := make([]byte, len(k)+len(v))
	copy(buf, k)
	copy(buf[len(k):], v)
	ent := heapEntry{
		key:  unsafe.String(unsafe.SliceData(buf), len(k)),
		val:  buf[len(k):len(buf):len(buf)],
		gen:  e.gen,
		used: true,
	}
	var slot uint32
	if n := len(e.free); n > 0 {
		slot = e.free[n-1]
		e.free = e.free[:n-1]
		e.ents[slot] = ent
	} else {
		slot = uint32(len(e.ents))
		e.ents = append(e.ents, ent)
	}
	e.index[ent.key] = slot
	e.live++
	e.bytes += int64(len(buf)) + heapEntryOverhead
	if bl := bucketLen(k); bl > 0 {
		b := e.buckets[string(k[:bl])]
		if b == nil {
			if n := len(e.spare); n > 0 {
				b = e.spare[n-1]
				e.spare[n-1] = nil
				e.spare = e.spare[:n-1]
			} else {
				b = &heapBucket{}
			}
			e.buckets[ent.key[:bl]] = b
		}
		// Keys arriving in ascending order (times, sequence numbers) stay
		// sorted as they are appended.
		if n := len(b.slots); b.sorted == n && (n == 0 || e.ents[b.slots[n-1]].key < ent.key) {
			b.sorted++
		}
		b.slots = append(b.slots, slot)
	}
	e.touch(slot)
}

// bucketSearch is the position of the key with user-key part uk (after
// the bucket's prefix of bl bytes) in sorted, slots of a bucket in key
// order. The prefix, the same for every key of the bucket, is not
// compared.
func (e *heapEngine) bucketSearch(sorted []uint32, uk string, bl int) int {
	i, _ := slices.BinarySearchFunc(sorted, uk, func(s uint32, uk string) int {
		return strings.Compare(e.ents[s].key[bl:], uk)
	})
	return i
}

// mergeItem is a pending slot with the first 8 bytes of its user key, big
// endian, zero-padded: most comparisons of the sort end there, without a
// read of the key itself (two dependent loads per side, mostly cache
// misses in a large bucket).
type mergeItem struct {
	head uint64
	slot uint32
}

func head8(uk string) uint64 {
	if len(uk) >= 8 {
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(uk), 8))
	}
	var h uint64
	for i := range 8 {
		h <<= 8
		if i < len(uk) {
			h |= uint64(uk[i])
		}
	}
	return h
}

// merge sorts b's pending slots into its sorted ones (bl is the length of
// the bucket's prefix): it sorts the pending ones, then places them from
// the last down, each after a binary search in the sorted part left of
// the one placed before, so that every sorted slot moves at most once.
func (e *heapEngine) merge(b *heapBucket, bl int) {
	if b.sorted == len(b.slots) {
		return
	}
	items := e.mergeBuf[:0]
	for _, s := range b.slots[b.sorted:] {
		items = append(items, mergeItem{head8(e.ents[s].key[bl:]), s})
	}
	slices.SortFunc(items, func(x, y mergeItem) int {
		if x.head != y.head {
			return cmp.Compare(x.head, y.head)
		}
		return strings.Compare(e.ents[x.slot].key[bl:], e.ents[y.slot].key[bl:])
	})
	hi, w := b.sorted, len(b.slots)
	for j := len(items) - 1; j >= 0; j-- {
		// slots[:hi] are the sorted slots not yet moved, slots[w:] the
		// merged tail; w-hi is j+1, the pending slots still to place.
		pos := 0
		if hi > 0 {
			pos = e.bucketSearch(b.slots[:hi], e.ents[items[j].slot].key[bl:], bl)
		}
		n := hi - pos
		copy(b.slots[w-n:w], b.slots[pos:hi])
		w -= n + 1
		b.slots[w] = items[j].slot
		hi = pos
	}
	b.sorted = len(b.slots)
	// Keep the scratch of ordinary buckets, not of a rare huge one.
	if cap(items) <= 1<<16 {
		e.mergeBuf = items[:0]
	}
}

func (e *heapEngine) del(k []byte) error {
	slot, ok := e.lookup(k)
	if !ok {
		return nil
	}
	e.lastOK = false
	ent := &e.ents[slot]
	if bl := bucketLen(k); bl > 0 {
		if b := e.buckets[string(k[:bl])]; b != nil {
			e.merge(b, bl)
			// Clear deletes the last first: no search, no shift.
			if n := len(b.slots); n > 0 && b.slots[n-1] == slot {
				b.slots = b.slots[:n-1]
				b.sorted--
			} else if i := e.bucketSearch(b.slots, ent.key[bl:], bl); i < len(b.slots) && b.slots[i] == slot {
				b.slots = slices.Delete(b.slots, i, i+1)
				b.sorted--
			}
			if len(b.slots) == 0 {
				delete(e.buckets, string(k[:bl]))
				// Bounded: a few thousand small buckets at most.
				if len(e.spare) < maxSpareBuckets && cap(b.slots) <= maxSpareSlots {
					e.spare = append(e.spare, b)
				}
			}
		}
	}
	if e.tracking && ent.marks&markPersisted != 0 {
		e.dels = append(e.dels, ent.key...)
		e.delEnds = append(e.delEnds, len(e.dels))
	}
	delete(e.index, ent.key)
	e.bytes -= int64(len(ent.key)+cap(ent.val)) + heapEntryOverhead
	*ent = heapEntry{}
	e.free = append(e.free, slot)
	e.live--
	return nil
}

func (e *heapEngine) scanBucket(bucket, from []byte, reverse bool, fn func(k, v []byte) bool) error {
	b := e.buckets[string(bucket)]
	if b == nil {
		return nil
	}
	bl := len(bucket)
	e.merge(b, bl)
	visit := func(s uint32) bool {
		ent := &e.ents[s]
		return fn(unsafe.Slice(unsafe.StringData(ent.key), len(ent.key)), ent.val)
	}
	if !reverse {
		i := 0
		if from != nil {
			i = e.bucketSearch(b.slots, string(from), bl)
		}
		for ; i < len(b.slots); i++ {
			if !visit(b.slots[i]) {
				return nil
			}
		}
		return nil
	}
	i := len(b.slots) - 1
	if from != nil {
		j := e.bucketSearch(b.slots, string(from), bl)
		if j < len(b.slots) && e.ents[b.slots[j]].key[bl:] == string(from) {
			i = j
		} else {
			i = j - 1
		}
	}
	for ; i >= 0; i-- {
		if !visit(b.slots[i]) {
			return nil
		}
	}
	return nil
}

// sorted returns the live slots of ents with lo <= key < hi, in key order.
func sortedSlots(ents []heapEntry, lo, hi []byte, filter func(k, v []byte) bool) []uint32 {
	var out []uint32
	for s := range ents {
		ent := &ents[s]
		if !ent.used || ent.key < string(lo) || (hi != nil && ent.key >= string(hi)) {
			continue
		}
		if filter != nil && filter(unsafe.Slice(unsafe.StringData(ent.key), len(ent.key)), ent.val) {
			continue
		}
		out = append(out, uint32(s))
	}
	slices.SortFunc(out, func(a, b uint32) int { return strings.Compare(ents[a].key, ents[b].key) })
	return out
}

func (e *heapEngine) each(lo, hi []byte, fn func(k, v []byte) error) error {
	for _, s := range sortedSlots(e.ents, lo, hi, nil) {
		ent := &e.ents[s]
		if err := fn(unsafe.Slice(unsafe.StringData(ent.key), len(ent.key)), ent.val); err != nil {
			return err
		}
	}
	return nil
}

// snapshot copies the slot headers (not keys and values, immutable from
// now on: see gen) and leaves sorting, encoding and writing to
// Image.Finish, so the synchronous part is one sequential copy.
func (e *heapEngine) snapshot(id int64, expired func(k, v []byte) bool) (*image.Image, error) {
	if id <= e.lastID {
		return nil, fmt.Errorf("checkpoint %d is not after the last snapshot (%d)", id, e.lastID)
	}
	dir := filepath.Join(e.dir, image.DirName(id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	frozen := slices.Clone(e.ents)
	e.gen++
	e.lastID = id
	im := &image.Image{
		Kind:      image.Hashmap,
		Dir:       dir,
		Files:     []image.File{{Name: image.PrivateName(e.storeID, id, heapImageName), LocalName: heapImageName}},
		KeyGroups: [2]int{-1, -1},
	}
	im.Defer(func() error {
		order := sortedSlots(frozen, nil, nil, expired)
		for _, s := range order {
			if kg := storedKeyGroup([]byte(frozen[s].key[:2])); kg != KeyGroupNone {
				if im.KeyGroups[0] < 0 {
					im.KeyGroups[0] = kg
				}
				im.KeyGroups[1] = kg
			}
		}
		size, sum, err := image.WriteHashmap(filepath.Join(dir, heapImageName), len(order), func(buf []byte, lo, hi int) []byte {
			for _, s := range order[lo:hi] {
				buf = image.AppendHashmapRecord(buf, frozen[s].key, frozen[s].val)
			}
			return buf
		})
		if err != nil {
			return fmt.Errorf("writing hashmap image for checkpoint %d: %w", id, err)
		}
		im.Files[0].Size, im.Files[0].SHA256, im.Bytes = size, sum, size
		return nil
	})
	return im, nil
}

func (e *heapEngine) writeChanges(w EntryWriter) error {
	put := func(ent *heapEntry) error {
		ent.marks = markPersisted
		return w.Put(storedKeyGroup([]byte(ent.key[:2])), []byte(ent.key[kgLen:]), ent.val)
	}
	if w.Full() || !e.tracking {
		// Entries not written again are dropped by a full write; their
		// pending deletes are moot.
		for s := range e.ents {
			if ent := &e.ents[s]; ent.used {
				if err := put(ent); err != nil {
					return err
				}
			}
		}
	} else {
		start := 0
		for _, end := range e.delEnds {
			k := e.dels[start:end]
			if err := w.Delete(storedKeyGroup(k), k[kgLen:]); err != nil {
				return err
			}
			start = end
		}
		for _, s := range e.dirty {
			if ent := &e.ents[s]; ent.used && ent.marks&markDirty != 0 {
				if err := put(ent); err != nil {
					return err
				}
			}
		}
	}
	e.dirty, e.dels, e.delEnds = e.dirty[:0], e.dels[:0], e.delEnds[:0]
	e.tracking = true
	return nil
}

func (e *heapEngine) load(r EntryReader) error {
	var k []byte
	err := r.Each(func(kg int, key, value []byte) error {
		k = binary.BigEndian.AppendUint16(k[:0], uint16(kg))
		k = append(k, key...)
		if _, err := validStored(k); err != nil {
			return err
		}
		if got := storedKeyGroup(k); got != kg {
			return fmt.Errorf("entry %x in key group %d encodes key group %d", prefix32(key), kg, got)
		}
		return e.put(k, value)
	})
	if err != nil {
		return err
	}
	for s := range e.ents {
		e.ents[s].marks = markPersisted
	}
	e.dirty = e.dirty[:0]
	e.tracking = true
	return nil
}

func (e *heapEngine) cleanup(n int, expired func(k, v []byte) bool) error {
	for range min(n, len(e.ents)) {
		if e.cursor >= len(e.ents) {
			e.cursor = 0
		}
		ent := &e.ents[e.cursor]
		e.cursor++
		if ent.used && expired(unsafe.Slice(unsafe.StringData(ent.key), len(ent.key)), ent.val) {
			if err := e.del([]byte(ent.key)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *heapEngine) sizes() Sizes {
	return Sizes{Entries: int64(e.live), EntriesExact: true, MemoryBytes: e.bytes}
}

func (e *heapEngine) close() error {
	e.index, e.ents, e.buckets, e.free, e.spare = nil, nil, nil, nil, nil
	if err := os.Remove(filepath.Join(e.dir, heapMarker)); err != nil && !os.IsNotExist(err) {
		return err
	}
	_ = os.Remove(e.dir) // only if no image is outstanding
	return nil
}
