package state

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/flinksql/flinksql/exec"
)

// The hashmap image is one file:
//
//	header  : magic "FSQLHMAP" | format version uint32 BE | reserved uint32
//	records : uvarint len(key) | key | uvarint len(value) | value   (keys strictly ascending)
//	trailer : record count uint64 BE | CRC-32C of header and records uint32 BE | magic "FSQLHEND"
//
// The key of a record is the stored key (key-group prefix included).
const (
	hashmapLocalName  = "hashmap.state"
	hashmapMagic      = "FSQLHMAP"
	hashmapEndMagic   = "FSQLHEND"
	hashmapVersion    = 1
	hashmapHeaderLen  = 16
	hashmapTrailerLen = 20
	// hashmapMarker keeps a live store's directory non-empty, so that the
	// last Image.Discard removes the directory only after Close.
	hashmapMarker = "hashmap.store"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
	if len(data) < hashmapHeaderLen+hashmapTrailerLen {
		return fmt.Errorf("image truncated: %d bytes, a valid image has at least %d", len(data), hashmapHeaderLen+hashmapTrailerLen)
	}
	if string(data[:8]) != hashmapMagic {
		return fmt.Errorf("not a hashmap state image: starts with %q", prefixOf(data, 16))
	}
	if v := binary.BigEndian.Uint32(data[8:]); v != hashmapVersion {
		return fmt.Errorf("unsupported hashmap image version %d (this build reads %d)", v, hashmapVersion)
	}
	trailer := data[len(data)-hashmapTrailerLen:]
	if string(trailer[12:]) != hashmapEndMagic {
		return fmt.Errorf("image truncated or corrupt: missing end marker (last bytes %q)", prefixOf(trailer, 20))
	}
	body := data[:len(data)-hashmapTrailerLen]
	if want, got := binary.BigEndian.Uint32(trailer[8:]), crc32.Checksum(body, castagnoli); want != got {
		return fmt.Errorf("image corrupt: CRC-32C %08x, recorded %08x", got, want)
	}
	count := binary.BigEndian.Uint64(trailer)
	if count > uint64(len(body)) {
		return fmt.Errorf("image corrupt: record count %d exceeds its size", count)
	}
	s.index = make(map[string]uint32, count)
	s.entries = make([]hashEntry, 0, count)
	s.order = make([]slotRef, 0, count)
	rest := body[hashmapHeaderLen:]
	var prev []byte
	for n := uint64(0); len(rest) > 0; n++ {
		off := len(body) - len(rest)
		key, r, err := readChunk(rest)
		if err != nil {
			return fmt.Errorf("record %d at offset %d: key: %w", n, off, err)
		}
		value, r, err := readChunk(r)
		if err != nil {
			return fmt.Errorf("record %d at offset %d: value: %w", n, off, err)
		}
		rest = r
		if !validStoredKey(key) {
			return fmt.Errorf("record %d at offset %d: malformed key %q", n, off, prefixOf(key, 32))
		}
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return fmt.Errorf("record %d at offset %d: key %q out of order", n, off, prefixOf(key, 32))
		}
		prev = key
		s.order = append(s.order, s.add(key, value))
	}
	if uint64(len(s.entries)) != count {
		return fmt.Errorf("image corrupt: %d records, trailer says %d", len(s.entries), count)
	}
	s.pending = s.pending[:0]
	return nil
}

func readChunk(b []byte) (chunk, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, nil, errors.New("bad length prefix")
	}
	b = b[w:]
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d runs past the end (%d bytes left)", n, len(b))
	}
	return b[:n], b[n:], nil
}

func prefixOf(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

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

func (s *hashStore) Writer() exec.StateWriter { return &s.writer }

func (s *hashStore) Len() int { return len(s.index) }

func (s *hashStore) Reader() exec.StateReader {
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
	im.finish = func() error {
		size, sum, err := frozen.write(filepath.Join(dir, hashmapLocalName))
		if err != nil {
			return fmt.Errorf("state: writing hashmap image of %s for checkpoint %d: %w", storeDir, id, err)
		}
		im.Files[0].Size, im.Files[0].SHA256, im.Bytes = size, sum, size
		return nil
	}
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

// digestWriter checksums what passes through it: CRC-32C for the image's own
// trailer, SHA-256 for the file's identity.
type digestWriter struct {
	w   io.Writer
	crc uint32
	sha hash.Hash
	n   int64
}

func (d *digestWriter) Write(p []byte) (int, error) {
	d.crc = crc32.Update(d.crc, castagnoli, p)
	d.sha.Write(p)
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// sealChunk is how many entries one encoding task handles.
const sealChunk = 16 << 10

// write writes the image file and returns its size and SHA-256.
func (fz *frozenHashmap) write(path string) (int64, string, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	dw := &digestWriter{w: f, sha: sha256.New()}

	var hdr [hashmapHeaderLen]byte
	copy(hdr[:], hashmapMagic)
	binary.BigEndian.PutUint32(hdr[8:], hashmapVersion)
	if _, err := dw.Write(hdr[:]); err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", path, err)
	}
	// Encoding follows references to entries scattered over the heap and is
	// bound by memory latency, so chunks are encoded in parallel; writing
	// and checksumming stay sequential, in key order.
	workers := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, workers)
	for start := 0; start < len(fz.order); start += workers * sealChunk {
		var wg sync.WaitGroup
		for w := range workers {
			lo := start + w*sealChunk
			if lo >= len(fz.order) {
				bufs[w] = bufs[w][:0]
				continue
			}
			hi := min(lo+sealChunk, len(fz.order))
			wg.Add(1)
			go func() {
				defer wg.Done()
				bufs[w] = fz.encodeRecords(bufs[w][:0], fz.order[lo:hi])
			}()
		}
		wg.Wait()
		for _, b := range bufs {
			if _, err := dw.Write(b); err != nil {
				return 0, "", fmt.Errorf("writing %s: %w", path, err)
			}
		}
	}
	var tr [hashmapTrailerLen]byte
	binary.BigEndian.PutUint64(tr[:], uint64(len(fz.order)))
	binary.BigEndian.PutUint32(tr[8:], dw.crc)
	copy(tr[12:], hashmapEndMagic)
	if _, err := dw.Write(tr[:]); err != nil {
		return 0, "", fmt.Errorf("writing %s: %w", path, err)
	}
	// No fsync: the image only has to outlive the upload within this
	// process; durability comes from the checkpoint storage.
	if err := f.Close(); err != nil {
		return 0, "", fmt.Errorf("closing %s: %w", path, err)
	}
	return dw.n, hex.EncodeToString(dw.sha.Sum(nil)), nil
}

func (fz *frozenHashmap) encodeRecords(buf []byte, refs []slotRef) []byte {
	for _, r := range refs {
		e := &fz.entries[r.slot]
		buf = binary.AppendUvarint(buf, uint64(len(e.key)))
		buf = append(buf, e.key...)
		buf = binary.AppendUvarint(buf, uint64(len(e.value)))
		buf = append(buf, e.value...)
	}
	return buf
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

// hashWriter is the hashmap store's exec.StateWriter.
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
