// Package image owns the sealed local images of state stores and their
// files: the Image and File descriptions package checkpoint uploads, the
// naming of files unique across store incarnations, verification of
// downloaded files, the hashmap image format, and the description of a
// Pebble checkpoint directory with its shared SSTs.
//
// It depends on nothing in the engine, so both the snapshot stores of
// package state and the working keyed state of package state/kv build on it
// (package exec must be able to import those without a cycle).
//
// File naming. An image's files carry two names: LocalName, the name inside
// the image directory (and inside the DB directory after a restore), and
// Name, a name unique across every store incarnation, under which package
// checkpoint uploads the file. Each open or restore starts an incarnation
// with a fresh random id (NewStoreID). Pebble SSTs are named
// "<uuid>-<pebble file name>": Pebble never reuses a file number within one
// DB, so the name is unique for its content, and an SST that survives from
// one image to the next keeps its Name, which is what lets checkpoints be
// incremental. Files that belong to one checkpoint only (the hashmap image,
// Pebble's MANIFEST, OPTIONS and marker files) are named
// "<uuid>-<checkpoint id>-<local name>" (PrivateName).
package image

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

// Image is a sealed local snapshot of a store.
type Image struct {
	Kind Kind
	// Dir is the local directory holding Files under their LocalName.
	Dir   string
	Files []File
	// KeyGroups is the lowest and highest key group present, entries
	// outside key groups (operator state) excluded; [-1, -1] when there is
	// none.
	KeyGroups [2]int
	// Bytes is the total size of Files.
	Bytes int64

	// finish, when set, writes Files; Files and Bytes are incomplete until
	// Finish has run it.
	finish func() error
	// settle, when set, waits for work of the store that may still create
	// files in Dir; Discard runs it first.
	settle func()
}

// Settle makes Discard wait for wait() before it removes Dir: a store whose
// deferred work creates the image's files sets it, so that an image
// discarded without Finish leaves nothing behind.
func (im *Image) Settle(wait func()) { im.settle = wait }

// Defer makes f the work Finish does: a store that fixes an image's
// contents during the synchronous part of a checkpoint and writes its files
// later sets it.
func (im *Image) Defer(f func() error) { im.finish = f }

// Finish writes the files of an image whose writing was deferred, and is a
// no-op for any other image. Files and Bytes are final only after it
// returned nil. It must not run concurrently with itself or Discard.
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
	if im.settle != nil {
		im.settle()
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

// NewStoreID returns a random id naming one store incarnation's files.
func NewStoreID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating store id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // RFC 9562 version 4
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// PrivateName is the upload name of a file that belongs to checkpoint id
// of store incarnation storeID only.
func PrivateName(storeID string, id int64, local string) string {
	return fmt.Sprintf("%s-%d-%s", storeID, id, local)
}

// DirName is the name of the directory holding the image of checkpoint id
// inside a store's directory.
func DirName(id int64) string { return fmt.Sprintf("chk-%d", id) }

// PrepareEmptyDir creates dir, or accepts it when it exists and is empty.
func PrepareEmptyDir(dir string) error {
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

// CheckLocalName rejects names that would escape the directory they are
// meant to live in; they come from checkpoint metadata.
func CheckLocalName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || name != filepath.Base(name) {
		return fmt.Errorf("invalid local file name %q", name)
	}
	return nil
}

// VerifyFiles checks that every file of an image is present in dir with its
// recorded size and checksum.
func VerifyFiles(dir string, files []File) error { return CheckFiles(dir, files, true) }

// CheckFiles is VerifyFiles, with the checksums compared only when sums is
// set (a caller that compared them while downloading skips the second
// read of every byte).
func CheckFiles(dir string, files []File, sums bool) error {
	if len(files) == 0 {
		return fmt.Errorf("image in %s has no files", dir)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if err := CheckLocalName(f.LocalName); err != nil {
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
		if f.SHA256 == "" || !sums {
			continue
		}
		sum, err := FileSHA256(path)
		if err != nil {
			return fmt.Errorf("file %s: %w", f.Name, err)
		}
		if sum != strings.ToLower(f.SHA256) {
			return fmt.Errorf("file %s: %s has SHA-256 %s, the image recorded %s (corrupt download?)", f.Name, path, sum, f.SHA256)
		}
	}
	return nil
}

// FileSHA256 is the hex SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
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

// PebbleDescriber describes the Pebble checkpoint directories of one store
// incarnation. It remembers the size and SHA-256 of the SSTs it has already
// described: SSTs are immutable, so each file is hashed once.
//
// Describe runs in the synchronous part of a checkpoint, where the
// operator's pipeline waits; after compactions a checkpoint's new SSTs can
// be hundreds of megabytes (at 10 GB of state, 6 % of it per checkpoint),
// and hashing them there took most of a second. So Describe only lists and
// sizes the files, and the image's Finish, which the checkpoint runs in its
// asynchronous part before uploading, hashes what is not known yet.
type PebbleDescriber struct {
	storeID string
	sums    map[string]fileSum
}

type fileSum struct {
	size int64
	hash *fileHash
	name string // the upload name, when inherited from a restored image
}

// fileHash is the SHA-256 of one immutable file, computed at most once by
// whichever image's Finish needs it first (images of later checkpoints
// share the entry and hold their own hard link to the file, so any of them
// can read it). A failed read is not remembered: another image's link may
// still be readable.
type fileHash struct {
	mu  sync.Mutex
	sum string
}

func (h *fileHash) get(path string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sum == "" {
		sum, err := FileSHA256(path)
		if err != nil {
			return "", err
		}
		h.sum = sum
	}
	return h.sum, nil
}

// Inherit records the SSTs of the image a DB was restored from: they keep
// the upload names the image gave them, so a checkpoint after the restore
// reuses them instead of uploading them again under this incarnation's id.
func (d *PebbleDescriber) Inherit(files []File) {
	for _, f := range files {
		if f.Shared && strings.HasSuffix(f.LocalName, ".sst") {
			d.sums[f.LocalName] = fileSum{size: f.Size, hash: &fileHash{sum: f.SHA256}, name: f.Name}
		}
	}
}

// NewPebbleDescriber returns a describer for incarnation storeID.
func NewPebbleDescriber(storeID string) *PebbleDescriber {
	return &PebbleDescriber{storeID: storeID, sums: make(map[string]fileSum)}
}

// StoreID is the incarnation's id.
func (d *PebbleDescriber) StoreID() string { return d.storeID }

// Describe lists the files of the Pebble checkpoint of checkpoint id in
// dir: SSTs are shared and keep their upload name from image to image, the
// other files are private to the checkpoint. KeyGroups is left to the
// caller. The files' SHA-256 are filled in by the image's Finish.
func (d *PebbleDescriber) Describe(id int64, dir string) (*Image, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	im := &Image{Kind: RocksDB, Dir: dir, Files: make([]File, len(entries))}
	hashes := make([]*fileHash, len(entries))
	sums := make(map[string]fileSum, len(entries))
	for i, e := range entries {
		name := e.Name()
		f := &im.Files[i]
		f.LocalName = name
		if f.Shared = strings.HasSuffix(name, ".sst"); f.Shared {
			f.Name = d.storeID + "-" + name
			if sum, ok := d.sums[name]; ok {
				if sum.name != "" {
					f.Name = sum.name
				}
				f.Size, hashes[i] = sum.size, sum.hash
				sums[name] = sum
				continue
			}
		} else {
			f.Name = PrivateName(d.storeID, id, name)
		}
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		f.Size, hashes[i] = st.Size(), &fileHash{}
		if f.Shared {
			sums[name] = fileSum{size: f.Size, hash: hashes[i]}
		}
	}
	for _, f := range im.Files {
		im.Bytes += f.Size
	}
	d.sums = sums // forget SSTs that compactions removed
	im.Defer(func() error { return hashAll(dir, im.Files, hashes) })
	return im, nil
}

// hashAll fills in the SHA-256 of files[i] from hashes[i], reading the
// files not hashed before, in parallel.
func hashAll(dir string, files []File, hashes []*fileHash) error {
	workers := min(len(files), runtime.GOMAXPROCS(0))
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files[i].SHA256, errs[i] = hashes[i].get(filepath.Join(dir, files[i].LocalName))
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
