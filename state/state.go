// Package state owns the state backends: the local, per-operator-instance
// stores that hold snapshotted state, hashmap and Pebble, and their sealed
// local images.
//
// A Store receives an operator instance's snapshot through exec.StateWriter
// during the synchronous part of a checkpoint, keeps the complete state
// locally, and turns it into an immutable Image at Seal. Package checkpoint
// uploads an Image's files and, on recovery, downloads them again and calls
// Restore.
//
// Inside a store every entry is addressed by the key
//
//	[key group: 2 bytes big-endian][key bytes]
//
// with exec.KeyGroupNone (operator state) encoded as 0xFFFF, so each
// key-group range is contiguous and sorted and operator state sorts last.
//
// File naming. An image's files carry two names: LocalName, the name inside
// the image directory (and inside the DB directory after a restore), and
// Name, a name unique across every store incarnation, under which package
// checkpoint uploads the file. Each Open or Restore starts an incarnation
// with a fresh random id (the store uuid). Pebble SSTs are named
// "<uuid>-<pebble file name>": Pebble never reuses a file number within one
// DB, so the name is unique for its content, and an SST that survives from
// one image to the next keeps its Name, which is what lets checkpoints be
// incremental. A restored DB continues from its manifest's file numbers, and
// a second restore of the same image would hand out the same numbers for
// different content; the fresh uuid of every incarnation keeps those names
// apart, while the SSTs inherited from the image keep the Names the image
// gave them. Files that belong to one checkpoint only (the hashmap image,
// Pebble's MANIFEST, OPTIONS and marker files) are named
// "<uuid>-<checkpoint id>-<local name>"; checkpoint ids passed to Seal must
// increase within an incarnation.
package state

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flinksql/flinksql/exec"
)

// Kind is a state backend, the value of 'state.backend.type'.
type Kind string

const (
	// Hashmap keeps entries in Go memory; every image is a full snapshot.
	Hashmap Kind = "hashmap"
	// RocksDB keeps entries in a Pebble LSM; images share SST files, so
	// checkpoints can be incremental.
	RocksDB Kind = "rocksdb"
)

// ParseKind parses 'state.backend.type': hashmap, rocksdb, or pebble (a
// synonym of rocksdb), case-insensitive.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "hashmap":
		return Hashmap, nil
	case "rocksdb", "pebble":
		return RocksDB, nil
	}
	return "", fmt.Errorf("Invalid value for option 'state.backend.type'. Expected one of [hashmap, rocksdb], but was: %s", s)
}

// Store is one operator instance's local state store. It is not safe for
// concurrent use; Images it returns are independent of it.
type Store interface {
	// Writer returns the StateWriter for the next snapshot. Its Full() is
	// true for the first snapshot after Open or Restore and false afterwards:
	// the operator then writes only what changed and the store keeps the
	// complete image. A full snapshot replaces the store's contents: entries
	// the operator does not write again are dropped (the store is cleared
	// when the first entry is written, or at Seal if none is).
	Writer() exec.StateWriter
	// Seal makes everything written so far an immutable local image for
	// checkpoint id, which must be greater than the id of the previous Seal
	// or Freeze of this store. The Image stays valid, and unchanged, whatever
	// the store does afterwards, until it is discarded.
	Seal(id int64) (*Image, error)
	// Freeze is Seal for the synchronous part of a checkpoint: it fixes the
	// image's contents and returns quickly, possibly before the image's files
	// are written. Image.Finish writes them; it may run on another goroutine
	// while the store goes on taking writes, which do not reach the image.
	Freeze(id int64) (*Image, error)
	// Reader replays the live entries in key order: key groups ascending,
	// KeyGroupNone last. The slices passed to fn are not reused by the store
	// and stay valid after fn returns. fn must not write to the store.
	Reader() exec.StateReader
	// Len is the number of live entries. For rocksdb it counts them by
	// scanning the DB (for tests and metrics, not for hot paths).
	Len() int
	// Close releases the store and removes its local working files. Images
	// already sealed stay valid until discarded.
	Close() error
}

// Image is a sealed local snapshot of a store.
type Image struct {
	Kind Kind
	// Dir is the local directory holding Files under their LocalName.
	Dir   string
	Files []File
	// KeyGroups is the lowest and highest key group present, KeyGroupNone
	// entries excluded; [-1, -1] when there is none.
	KeyGroups [2]int
	// Bytes is the total size of Files.
	Bytes int64

	// finish, when set, writes Files; Files and Bytes are incomplete until
	// Finish has run it.
	finish func() error
}

// Finish writes the files of an image that Freeze returned before they were
// written, and is a no-op for any other image. Files and Bytes are final
// only after it returned nil. It must not run concurrently with itself or
// Discard.
func (im *Image) Finish() error {
	if im == nil || im.finish == nil {
		return nil
	}
	f := im.finish
	im.finish = nil
	return f()
}

// File is one file of an Image.
type File struct {
	// Name is unique across store incarnations (see the package comment);
	// the checkpoint package uploads the file under it.
	Name string
	// LocalName is the file's name inside the image directory and, on
	// restore, inside the store's directory.
	LocalName string
	Size      int64
	SHA256    string // hex
	// Shared marks a file that is immutable and may be referenced by later
	// images (Pebble SSTs); other files belong to one checkpoint.
	Shared bool
}

// Discard removes the image's local files. It may run concurrently with the
// store that sealed the image.
func (im *Image) Discard() error {
	if im == nil || im.Dir == "" {
		return nil
	}
	if err := os.RemoveAll(im.Dir); err != nil {
		return fmt.Errorf("state: discarding %s image %s: %w", im.Kind, im.Dir, err)
	}
	// A closed store leaves its directory behind only while images are
	// outstanding; the last one out removes it. A live store's directory is
	// not empty, so this fails harmlessly.
	_ = os.Remove(filepath.Dir(im.Dir))
	return nil
}

// Open creates an empty store in dir, which must not exist or be empty.
func Open(kind Kind, dir string) (Store, error) {
	if err := prepareEmptyDir(dir); err != nil {
		return nil, fmt.Errorf("state: opening %s store: %w", kind, err)
	}
	switch kind {
	case Hashmap:
		return openHashmap(dir)
	case RocksDB:
		return openPebble(dir)
	}
	return nil, fmt.Errorf("state: opening store in %s: unknown state backend %q", dir, kind)
}

// Restore opens a store from an image whose files were downloaded into dir
// under their LocalName. Every file is checked against its recorded size
// and, when recorded, its SHA-256 before use; the downloaded files become
// the store's own (they are moved or removed).
func Restore(kind Kind, dir string, files []File) (Store, error) {
	if err := verifyFiles(dir, files); err != nil {
		return nil, fmt.Errorf("state: restoring %s store: %w", kind, err)
	}
	switch kind {
	case Hashmap:
		return restoreHashmap(dir, files)
	case RocksDB:
		return restorePebble(dir, files)
	}
	return nil, fmt.Errorf("state: restoring store in %s: unknown state backend %q", dir, kind)
}

// Key layout.

const (
	keyGroupNoneCode = 0xFFFF
	// maxKeyGroup is the largest key group: Flink bounds max parallelism
	// by 2^15.
	maxKeyGroup = 1<<15 - 1
	prefixLen   = 2
)

func checkKeyGroup(kg int) error {
	if kg == exec.KeyGroupNone || (kg >= 0 && kg <= maxKeyGroup) {
		return nil
	}
	return fmt.Errorf("key group %d out of range [0, %d] (or KeyGroupNone)", kg, maxKeyGroup)
}

func putPrefix(dst []byte, kg int) {
	code := uint16(keyGroupNoneCode)
	if kg != exec.KeyGroupNone {
		code = uint16(kg)
	}
	binary.BigEndian.PutUint16(dst, code)
}

// decodeKeyGroup returns the key group of a stored key.
func decodeKeyGroup(k []byte) int {
	code := binary.BigEndian.Uint16(k)
	if code == keyGroupNoneCode {
		return exec.KeyGroupNone
	}
	return int(code)
}

// validStoredKey reports whether k is a well-formed stored key.
func validStoredKey(k []byte) bool {
	if len(k) < prefixLen {
		return false
	}
	code := binary.BigEndian.Uint16(k)
	return code == keyGroupNoneCode || code <= maxKeyGroup
}

// slab hands out copies of keys and values from large shared chunks, so a
// Reader can give callers slices they may keep without one allocation per
// entry.
type slab struct{ buf []byte }

const slabChunk = 64 << 10

func (s *slab) copy(b []byte) []byte {
	if len(b) > slabChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(s.buf)-len(s.buf) < len(b) {
		s.buf = make([]byte, 0, slabChunk)
	}
	n := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[n : n+len(b) : n+len(b)]
}

// readerFunc adapts a function to exec.StateReader.
type readerFunc func(fn func(keyGroup int, key, value []byte) error) error

func (f readerFunc) Each(fn func(keyGroup int, key, value []byte) error) error { return f(fn) }

// Files and directories.

// newStoreID returns a random id naming one store incarnation's files.
func newStoreID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating store id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // RFC 9562 version 4
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

func privateName(storeID string, id int64, local string) string {
	return fmt.Sprintf("%s-%d-%s", storeID, id, local)
}

func imageDirName(id int64) string { return fmt.Sprintf("chk-%d", id) }

// prepareEmptyDir creates dir, or accepts it when it exists and is empty.
func prepareEmptyDir(dir string) error {
	if dir == "" {
		return errors.New("empty directory name")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("directory %s is not empty (%d entries, first %q)", dir, len(entries), entries[0].Name())
	}
	return nil
}

// checkLocalName rejects names that would escape the directory they are
// meant to live in; they come from checkpoint metadata.
func checkLocalName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || name != filepath.Base(name) {
		return fmt.Errorf("invalid local file name %q", name)
	}
	return nil
}

// verifyFiles checks that every file of an image is present in dir with its
// recorded size and checksum.
func verifyFiles(dir string, files []File) error {
	if len(files) == 0 {
		return fmt.Errorf("image in %s has no files", dir)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := checkLocalName(f.LocalName); err != nil {
			return fmt.Errorf("file %s: %w", f.Name, err)
		}
		if seen[f.LocalName] {
			return fmt.Errorf("file %s: local name %s listed twice", f.Name, f.LocalName)
		}
		seen[f.LocalName] = true
		path := filepath.Join(dir, f.LocalName)
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("file %s (%s): %w", f.Name, f.LocalName, err)
		}
		if st.Size() != f.Size {
			return fmt.Errorf("file %s: %s has %d bytes, the image recorded %d (truncated or corrupt download?)", f.Name, path, st.Size(), f.Size)
		}
		if f.SHA256 == "" {
			continue
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return fmt.Errorf("file %s: %w", f.Name, err)
		}
		if sum != strings.ToLower(f.SHA256) {
			return fmt.Errorf("file %s: %s has SHA-256 %s, the image recorded %s (corrupt download?)", f.Name, path, sum, f.SHA256)
		}
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
