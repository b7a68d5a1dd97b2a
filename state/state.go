// Package state owns the state backends: the local, per-operator-instance
// stores that hold snapshotted state, hashmap and Pebble, and their sealed
// local images.
//
// A Store receives an operator instance's snapshot through Writer
// during the synchronous part of a checkpoint, keeps the complete state
// locally, and turns it into an immutable Image at Seal. Package checkpoint
// uploads an Image's files and, on recovery, downloads them again and calls
// Restore.
//
// Inside a store every entry is addressed by the key
//
//	[key group: 2 bytes big-endian][key bytes]
//
// with KeyGroupNone (operator state) encoded as 0xFFFF, so each
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
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/state/image"
)

// Kind is a state backend, the value of 'state.backend.type'.
type Kind = image.Kind

const (
	// Hashmap keeps entries in Go memory; every image is a full snapshot.
	Hashmap = image.Hashmap
	// RocksDB keeps entries in a Pebble LSM; images share SST files, so
	// checkpoints can be incremental.
	RocksDB = image.RocksDB
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
	Writer() Writer
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
	Reader() Reader
	// Len is the number of live entries. For rocksdb it counts them by
	// scanning the DB (for tests and metrics, not for hot paths).
	Len() int
	// Close releases the store and removes its local working files. Images
	// already sealed stay valid until discarded.
	Close() error
}

// Image is a sealed local snapshot of a store (see package image).
type Image = image.Image

// File is one file of an Image.
type File = image.File

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
	if kg == KeyGroupNone || (kg >= 0 && kg <= maxKeyGroup) {
		return nil
	}
	return fmt.Errorf("key group %d out of range [0, %d] (or KeyGroupNone)", kg, maxKeyGroup)
}

func putPrefix(dst []byte, kg int) {
	code := uint16(keyGroupNoneCode)
	if kg != KeyGroupNone {
		code = uint16(kg)
	}
	binary.BigEndian.PutUint16(dst, code)
}

// decodeKeyGroup returns the key group of a stored key.
func decodeKeyGroup(k []byte) int {
	code := binary.BigEndian.Uint16(k)
	if code == keyGroupNoneCode {
		return KeyGroupNone
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

// readerFunc adapts a function to Reader.
type readerFunc func(fn func(keyGroup int, key, value []byte) error) error

func (f readerFunc) Each(fn func(keyGroup int, key, value []byte) error) error { return f(fn) }

// Files and directories: package image owns them, shared with state/kv.

func newStoreID() (string, error) { return image.NewStoreID() }

func privateName(storeID string, id int64, local string) string {
	return image.PrivateName(storeID, id, local)
}

func imageDirName(id int64) string { return image.DirName(id) }

func prepareEmptyDir(dir string) error { return image.PrepareEmptyDir(dir) }

func checkLocalName(name string) error { return image.CheckLocalName(name) }

func verifyFiles(dir string, files []File) error { return image.VerifyFiles(dir, files) }

func fileSHA256(path string) (string, error) { return image.FileSHA256(path) }
