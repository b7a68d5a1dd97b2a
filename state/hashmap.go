package state

import (
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

// The hashmap image is one file in image's hashmap format (see
// image.WriteHashmap); the key of a record is the stored key (key-group
// prefix included).
const (
	hashmapLocalName = "hashmap.state"
	// hashmapMarker keeps a live store's directory non-empty, so that the
	// last Image.Discard removes the directory only after Close.
	hashmapMarker = "hashmap.store"
)

// hashStore keeps entries in a Go map. Order is maintained incrementally:
// order holds the slots sorted by key as of the last merge, pending the slots
// created since; a merge sorts only pending and merges, so sealing after a
// few changes costs a linear pass, not a sort of everything. Each reference
// carries the key's first 8 bytes, so sorting and merging rarely have to
// follow it to the key.
type hashStore struct {
	dir     string
	storeID string

	index   map[string]uint32 // stored key → slot in entries
	entries []hashEntry
	live    []uint64  // bit per slot: the slot holds a live entry
	free    []uint32  // dead slots that neither order nor pending references
	order   []slotRef // sorted by key; may hold slots that died since the merge
	spare   []slotRef // the other buffer of order, reused by merge
	pending []slotRef // slots created since the merge, unsorted; may hold dead ones
	dead    int       // slots that died since the merge

	// gen counts Freezes. A value buffer allocated in an earlier generation
	// may belong to a frozen image still being written, so a Put replaces it
	// instead of overwriting it.
	gen uint32

	full    bool // the next snapshot is full
	cleared bool // the full snapshot in progress has cleared the store
	lastID  int64
	closed  bool
	scratch []byte
	writer  hashWriter
}

type hashEntry struct {
	key   string // stored key; shares its allocation with value's first version
	value []byte
	gen   uint32 // the store's gen when value's buffer was allocated
}

// slotRef refers to an entry; prefix is the key's first 8 bytes, big-endian,
// zero-padded, so comparing prefixes orders keys unless they are equal.
type slotRef struct {
	prefix uint64
	slot   uint32
}

func keyPrefix(k string) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(unsafe.Slice(unsafe.StringData(k), 8))
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

func (s *hashStore) compare(a, b slotRef) int {
	if a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	return strings.Compare(s.entries[a.slot].key, s.entries[b.slot].key)
}

func (s *hashStore) isLive(slot uint32) bool { return s.live[slot/64]&(1<<(slot%64)) != 0 }

func (s *hashStore) setLive(slot uint32, on bool) {
	for int(slot/64) >= len(s.live) {
		s.live = append(s.live, 0)
	}
	if on {
		s.live[slot/64] |= 1 << (slot % 64)
	} else {
		s.live[slot/64] &^= 1 << (slot % 64)
	}
}

func openHashmap(dir string) (*hashStore, error) {
	id, err := newStoreID()
	if err != nil {
		return nil, fmt.Errorf("state: opening hashmap store in %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, hashmapMarker), nil, 0o644); err != nil {
		return nil, fmt.Errorf("state: opening hashmap store: %w", err)
	}
	s := &hashStore{dir: dir, storeID: id, index: make(map[string]uint32), full: true}
	s.writer.s = s
	return s, nil
}

func restoreHashmap(dir string, files []File) (*hashStore, error) {
	if len(files) != 1 {
		return nil, fmt.Errorf("state: restoring hashmap store in %s: image has %d files, want 1", dir, len(files))
	}
	if files[0].LocalName == hashmapMarker {
		return nil, fmt.Errorf("state: restoring hashmap store in %s: invalid local file name %q", dir, hashmapMarker)
	}
	path := filepath.Join(dir, files[0].LocalName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("state: restoring hashmap store: %w", err)
	}
	s, err := openHashmap(dir)
	if err != nil {
		return nil, err
	}
	if err := s.load(data); err != nil {
		return nil, fmt.Errorf("state: restoring hashmap store from %s (file %s): %w", path, files[0].Name, err)
	}
	// The entries live in memory now; the download is no longer needed.
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("state: restoring hashmap store: removing downloaded image: %w", err)
	}
	return s, nil
}

// load parses and verifies an image file into an empty store.
func (s *hashStore) load(data []byte) error {
	err := image.ReadHashmap(data, validStoredKey, func(count uint64) {
		s.index = make(map[string]uint32, count)
		s.entries = make([]hashEntry, 0, count)
		s.order = make([]slotRef, 0, count)
	}, func(key, value []byte) {
		s.order = append(s.order, s.add(key, value))
	})
	s.pending = s.pending[:0]
	return err
}

func prefixOf(b []byte, n int) []byte { return image.PrefixOf(b, n) }

// add stores a new entry and returns its reference. Key and value share one
// allocation; the key part is never written again.
func (s *hashStore) add(key, value []byte) slotRef {
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	e := hashEntry{
		key:   unsafe.String(unsafe.SliceData(buf), len(key)),
		value: buf[len(key):len(buf):len(buf)],
		gen:   s.gen,
	}
	var slot uint32
	if n := len(s.free); n > 0 {
		slot = s.free[n-1]
		s.free = s.free[:n-1]
		s.entries[slot] = e
	} else {
		slot = uint32(len(s.entries))
		s.entries = append(s.entries, e)
	}
	s.setLive(slot, true)
	s.index[e.key] = slot
	ref := slotRef{keyPrefix(e.key), slot}
	s.pending = append(s.pending, ref)
	return ref
}

func (s *hashStore) clear() {
	s.index = make(map[string]uint32)
	s.entries, s.live, s.free, s.order, s.spare, s.pending = nil, nil, nil, nil, nil, nil
	s.dead = 0
}

// beginWrite clears the store at the first write of a full snapshot.
func (s *hashStore) beginWrite() error {
	if s.closed {
		return fmt.Errorf("state: hashmap store in %s is closed", s.dir)
	}
	if s.full && !s.cleared {
		s.clear()
		s.cleared = true
	}
	return nil
}

// merge brings order up to date: live slots only, sorted by key.
func (s *hashStore) merge() {
	if len(s.pending) == 0 && s.dead == 0 {
		return
	}
	pend := s.pending
	if s.dead > 0 {
		pend = slices.DeleteFunc(pend, func(r slotRef) bool { return !s.isLive(r.slot) })
	}
	slices.SortFunc(pend, s.compare)

	out := s.spare[:0]
	i, j := 0, 0
	for i < len(s.order) && j < len(pend) {
		a := s.order[i]
		if s.dead > 0 && !s.isLive(a.slot) {
			i++
			continue
		}
		// Live keys are unique, so the two never compare equal.
		if s.compare(a, pend[j]) < 0 {
			out = append(out, a)
			i++
		} else {
			out = append(out, pend[j])
			j++
		}
	}
	if s.dead > 0 {
		for _, a := range s.order[i:] {
			if s.isLive(a.slot) {
				out = append(out, a)
			}
		}
	} else {
		out = append(out, s.order[i:]...)
	}
	out = append(out, pend[j:]...)
	s.spare, s.order = s.order, out
	s.pending = pend[:0]

	if s.dead > 0 {
		s.free = s.free[:0]
		for slot := range uint32(len(s.entries)) {
			if !s.isLive(slot) {
				s.free = append(s.free, slot)
			}
		}
		s.dead = 0
	}
}

func (s *hashStore) Writer() Writer { return &s.writer }

func (s *hashStore) Len() int { return len(s.index) }

func (s *hashStore) Reader() Reader {
	return readerFunc(func(fn func(keyGroup int, key, value []byte) error) error {
		if s.closed {
			return fmt.Errorf("state: hashmap store in %s is closed", s.dir)
		}
		s.merge()
		var sl slab
		for _, r := range s.order {
			e := &s.entries[r.slot]
			k := sl.copy(unsafe.Slice(unsafe.StringData(e.key), len(e.key)))
			if err := fn(decodeKeyGroup(k), k[prefixLen:], sl.copy(e.value)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *hashStore) Seal(id int64) (*Image, error) {
	im, err := s.Freeze(id)
	if err != nil {
		return nil, err
	}
	if err := im.Finish(); err != nil {
		_ = im.Discard()
		return nil, err
	}
	return im, nil
}

// Freeze copies the sorted references and the entry headers (not the keys
// and values, which are immutable from now on: see gen) and leaves the
// encoding and writing of the image to Image.Finish, so the synchronous
// part of a checkpoint costs two sequential copies rather than a pass over
// every entry on the heap.
func (s *hashStore) Freeze(id int64) (*Image, error) {
	if s.closed {
		return nil, fmt.Errorf("state: hashmap store in %s is closed", s.dir)
	}
	if id <= s.lastID {
		return nil, fmt.Errorf("state: sealing hashmap store in %s: checkpoint %d is not after the last sealed one (%d)", s.dir, id, s.lastID)
	}
	if err := s.beginWrite(); err != nil {
		return nil, err
	}
	s.merge()
	dir := filepath.Join(s.dir, imageDirName(id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: sealing hashmap store: %w", err)
	}
	frozen := frozenHashmap{
		order:   slices.Clone(s.order),
		entries: slices.Clone(s.entries),
	}
	s.gen++
	im := &Image{
		Kind: Hashmap,
		Dir:  dir,
		Files: []File{{
			Name:      privateName(s.storeID, id, hashmapLocalName),
			LocalName: hashmapLocalName,
		}},
		KeyGroups: s.keyGroupRange(),
	}
	storeDir := s.dir
	im.Defer(func() error {
		size, sum, err := frozen.write(filepath.Join(dir, hashmapLocalName))
		if err != nil {
			return fmt.Errorf("state: writing hashmap image of %s for checkpoint %d: %w", storeDir, id, err)
		}
		im.Files[0].Size, im.Files[0].SHA256, im.Bytes = size, sum, size
		return nil
	})
	s.lastID = id
	s.full = false
	return im, nil
}

// frozenHashmap is the store's contents as of a Freeze: references in key
// order and the entries they point to.
type frozenHashmap struct {
	order   []slotRef
	entries []hashEntry
}

// write writes the image file and returns its size and SHA-256.
func (fz *frozenHashmap) write(path string) (int64, string, error) {
	return image.WriteHashmap(path, len(fz.order), func(buf []byte, lo, hi int) []byte {
		for _, r := range fz.order[lo:hi] {
			e := &fz.entries[r.slot]
			buf = image.AppendHashmapRecord(buf, e.key, e.value)
		}
		return buf
	})
}

// keyGroupRange reads the lowest and highest key group off the sorted
// references: the key group is the top 16 bits of the prefix.
func (s *hashStore) keyGroupRange() [2]int {
	kgs := [2]int{-1, -1}
	lo, _ := slices.BinarySearchFunc(s.order, uint64(keyGroupNoneCode)<<48, func(r slotRef, p uint64) int {
		return cmp.Compare(r.prefix, p)
	})
	if lo > 0 {
		kgs[0] = int(s.order[0].prefix >> 48)
		kgs[1] = int(s.order[lo-1].prefix >> 48)
	}
	return kgs
}

func (s *hashStore) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.clear()
	if err := os.Remove(filepath.Join(s.dir, hashmapMarker)); err != nil {
		return fmt.Errorf("state: closing hashmap store: %w", err)
	}
	_ = os.Remove(s.dir) // only if no image is outstanding
	return nil
}

// hashWriter is the hashmap store's Writer.
type hashWriter struct{ s *hashStore }

func (w *hashWriter) Full() bool { return w.s.full }

func (w *hashWriter) Put(keyGroup int, key, value []byte) error {
	s := w.s
	if err := checkKeyGroup(keyGroup); err != nil {
		return fmt.Errorf("state: hashmap put: %w", err)
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	k := s.encode(keyGroup, key)
	if slot, ok := s.index[string(k)]; ok {
		e := &s.entries[slot]
		if e.gen == s.gen {
			e.value = append(e.value[:0], value...)
		} else {
			e.value = append(make([]byte, 0, len(value)), value...)
			e.gen = s.gen
		}
		return nil
	}
	s.add(k, value)
	return nil
}

func (w *hashWriter) Delete(keyGroup int, key []byte) error {
	s := w.s
	if err := checkKeyGroup(keyGroup); err != nil {
		return fmt.Errorf("state: hashmap delete: %w", err)
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	k := s.encode(keyGroup, key)
	slot, ok := s.index[string(k)]
	if !ok {
		return nil
	}
	delete(s.index, s.entries[slot].key)
	s.entries[slot] = hashEntry{}
	s.setLive(slot, false)
	s.dead++
	return nil
}

func (s *hashStore) encode(kg int, key []byte) []byte {
	s.scratch = slices.Grow(s.scratch[:0], prefixLen+len(key))[:prefixLen+len(key)]
	putPrefix(s.scratch, kg)
	copy(s.scratch[prefixLen:], key)
	return s.scratch
}
