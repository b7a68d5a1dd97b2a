package state

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"

	"github.com/flinksql/flinksql/state/image"
)

// Layout of a rocksdb store directory:
//
//	<dir>/db/        the Pebble DB (WAL disabled: durability comes from checkpoints)
//	<dir>/chk-<id>/  the image sealed for checkpoint <id>: a Pebble checkpoint,
//	                 SSTs hard-linked from db/, until Image.Discard
const (
	pebbleDBDir = "db"
	// maxBatchBytes bounds the memory of writes pending until Seal; a larger
	// snapshot is committed in pieces.
	maxBatchBytes = 32 << 20
)

// pebbleOptions tunes Pebble for a store that is written in bursts at
// barriers and read back only on restore, and whose images are uploaded
// incrementally.
//
// What a checkpoint uploads is the set of SSTs that the previous image did
// not have: the flushed changes, plus whatever compactions rewrote. With
// changes spread over the key space, a compaction into a level rewrites that
// whole level, so the LSM is kept at two tiers: L0 collects one small sublevel
// per checkpoint, and only when many sublevels have gathered
// (L0CompactionThreshold) are they merged into the single level below
// (LBaseMaxBytes keeps L0 pointing at the bottom level for stores up to that
// size, so there is no cascade of intermediate levels, each multiplying the
// rewrite). An interval that changes a fraction f of the state then uploads
// about f, plus one full rewrite every N checkpoints: f + 1/N on average
// (BenchmarkIncremental: 1 M keys, f = 1 %, N ≈ 38, about 2 % on average).
// Read amplification from the deep L0 does not matter: operators keep their
// working state in memory and read the store only on restore.
func pebbleOptions() *pebble.Options {
	o := &pebble.Options{
		DisableWAL:                  true,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{},
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       12,
		L0CompactionFileThreshold:   1 << 20,
		L0StopWritesThreshold:       1 << 20,
		LBaseMaxBytes:               1 << 30,
		MaxManifestFileSize:         1 << 20, // keeps the per-checkpoint private files small
		CacheSize:                   8 << 20,
		MaxOpenFiles:                256,
	}
	o.TargetFileSizes[0] = 8 << 20
	// Pebble's default ends the process on a corrupt block; the read that
	// found it returns the error too, and restore reports it.
	o.EventListener = &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		o.Logger.Errorf("%s", info)
	}}
	// Reads happen only on restore; they must not trigger compactions.
	o.Experimental.ReadSamplingMultiplier = -1
	return o
}

// pebbleLogger keeps Pebble's informational chatter (every flush and
// compaction) out of the engine's output and keeps its errors.
type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...any) {}
func (pebbleLogger) Errorf(format string, args ...any) {
	log.Printf("state: pebble: "+format, args...)
}
func (pebbleLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

type pebbleStore struct {
	dir     string
	dbDir   string
	storeID string
	db      *pebble.DB
	batch   *pebble.Batch
	// sums describes this incarnation's images; it caches the size and
	// SHA-256 of SSTs already described, so a Seal hashes only new ones.
	sums *image.PebbleDescriber

	empty   bool // no entry was ever written to this DB
	full    bool // the next snapshot is full
	cleared bool // the full snapshot in progress has cleared the store
	lastID  int64
	writer  pebbleWriter
}

func openPebble(dir string) (*pebbleStore, error) {
	s := &pebbleStore{dir: dir, dbDir: filepath.Join(dir, pebbleDBDir), full: true, empty: true}
	s.writer.s = s
	if err := s.openDB(false); err != nil {
		return nil, fmt.Errorf("state: opening rocksdb store in %s: %w", dir, err)
	}
	return s, nil
}

func restorePebble(dir string, files []File) (*pebbleStore, error) {
	s := &pebbleStore{dir: dir, dbDir: filepath.Join(dir, pebbleDBDir), full: true}
	s.writer.s = s
	if err := os.Mkdir(s.dbDir, 0o755); err != nil {
		return nil, fmt.Errorf("state: restoring rocksdb store: %w", err)
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(dir, f.LocalName), filepath.Join(s.dbDir, f.LocalName)); err != nil {
			return nil, fmt.Errorf("state: restoring rocksdb store: file %s: %w", f.Name, err)
		}
	}
	if err := s.openDB(true); err != nil {
		return nil, fmt.Errorf("state: restoring rocksdb store in %s from %d files: %w", dir, len(files), err)
	}
	return s, nil
}

// openDB opens the DB in dbDir and starts a new incarnation: a fresh store
// id, so the new DB's file names never meet names an earlier incarnation
// gave to other content.
func (s *pebbleStore) openDB(existing bool) error {
	id, err := newStoreID()
	if err != nil {
		return err
	}
	opts := pebbleOptions()
	opts.ErrorIfNotExists = existing
	opts.ErrorIfExists = !existing
	db, err := pebble.Open(s.dbDir, opts)
	if err != nil {
		return fmt.Errorf("opening pebble in %s: %w", s.dbDir, err)
	}
	s.db, s.batch, s.storeID, s.sums = db, db.NewBatch(), id, image.NewPebbleDescriber(id)
	return nil
}

func (s *pebbleStore) closeDB() error {
	if s.db == nil {
		return nil
	}
	err := errors.Join(s.batch.Close(), s.db.Close())
	s.db, s.batch = nil, nil
	return err
}

func (s *pebbleStore) checkOpen() error {
	if s.db == nil {
		return fmt.Errorf("state: rocksdb store in %s is closed", s.dir)
	}
	return nil
}

// beginWrite clears the store at the first write of a full snapshot, by
// starting over with an empty DB: cheaper than deleting every key, and the
// full snapshot rewrites every live entry anyway.
func (s *pebbleStore) beginWrite() error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if !s.full || s.cleared {
		return nil
	}
	s.batch.Reset()
	if !s.empty {
		if err := s.closeDB(); err != nil {
			return fmt.Errorf("state: clearing rocksdb store in %s for a full snapshot: %w", s.dir, err)
		}
		if err := os.RemoveAll(s.dbDir); err != nil {
			return fmt.Errorf("state: clearing rocksdb store in %s for a full snapshot: %w", s.dir, err)
		}
		if err := s.openDB(false); err != nil {
			return fmt.Errorf("state: clearing rocksdb store in %s for a full snapshot: %w", s.dir, err)
		}
		s.empty = true
	}
	s.cleared = true
	return nil
}

func (s *pebbleStore) commit() error {
	if s.batch.Empty() {
		return nil
	}
	if err := s.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("state: rocksdb store in %s: committing %d writes: %w", s.dir, s.batch.Count(), err)
	}
	s.batch.Reset()
	return nil
}

func (s *pebbleStore) Writer() Writer { return &s.writer }

// Freeze is Seal: a Pebble checkpoint is already just a flush and hard
// links, and its files are immutable once linked.
func (s *pebbleStore) Freeze(id int64) (*Image, error) { return s.Seal(id) }

func (s *pebbleStore) Seal(id int64) (*Image, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if id <= s.lastID {
		return nil, fmt.Errorf("state: sealing rocksdb store in %s: checkpoint %d is not after the last sealed one (%d)", s.dir, id, s.lastID)
	}
	im, err := s.seal(id)
	if err != nil {
		if s.full {
			s.cleared = false // a failed full snapshot is retried in full
		}
		return nil, fmt.Errorf("state: sealing rocksdb store in %s for checkpoint %d: %w", s.dir, id, err)
	}
	s.lastID = id
	s.full = false
	return im, nil
}

func (s *pebbleStore) seal(id int64) (*Image, error) {
	if err := s.beginWrite(); err != nil {
		return nil, err
	}
	if err := s.commit(); err != nil {
		return nil, err
	}
	if err := s.db.Flush(); err != nil {
		return nil, fmt.Errorf("flushing: %w", err)
	}
	kgs, err := s.keyGroupRange()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.dir, imageDirName(id))
	if err := s.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebble checkpoint into %s: %w", dir, err)
	}
	im, err := s.describe(id, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	im.KeyGroups = kgs
	return im, nil
}

// describe lists the files of a Pebble checkpoint directory.
func (s *pebbleStore) describe(id int64, dir string) (*Image, error) {
	return s.sums.Describe(id, dir)
}

// keyGroupRange returns the lowest and highest key group in the DB,
// KeyGroupNone excluded: the first key, and the last key before the
// KeyGroupNone prefix.
func (s *pebbleStore) keyGroupRange() ([2]int, error) {
	kgs := [2]int{-1, -1}
	it, err := s.db.NewIter(&pebble.IterOptions{UpperBound: []byte{0xFF, 0xFF}})
	if err != nil {
		return kgs, err
	}
	if it.First() {
		kgs[0] = decodeKeyGroup(it.Key())
		if it.Last() {
			kgs[1] = decodeKeyGroup(it.Key())
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return [2]int{-1, -1}, fmt.Errorf("reading key-group range: %w", err)
	}
	return kgs, nil
}

func (s *pebbleStore) Reader() Reader {
	return readerFunc(func(fn func(keyGroup int, key, value []byte) error) error {
		if err := s.checkOpen(); err != nil {
			return err
		}
		if err := s.commit(); err != nil {
			return err
		}
		it, err := s.db.NewIter(nil)
		if err != nil {
			return fmt.Errorf("state: reading rocksdb store in %s: %w", s.dir, err)
		}
		var sl slab
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if !validStoredKey(k) {
				it.Close()
				return fmt.Errorf("state: reading rocksdb store in %s: malformed key %q", s.dir, prefixOf(k, 32))
			}
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return fmt.Errorf("state: reading rocksdb store in %s: value of key %q: %w", s.dir, prefixOf(k, 32), err)
			}
			k = sl.copy(k)
			if err := fn(decodeKeyGroup(k), k[prefixLen:], sl.copy(v)); err != nil {
				it.Close()
				return err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return fmt.Errorf("state: reading rocksdb store in %s: %w", s.dir, err)
		}
		return nil
	})
}

func (s *pebbleStore) Len() int {
	if s.db == nil || s.commit() != nil {
		return 0
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	return n
}

func (s *pebbleStore) Close() error {
	if s.db == nil {
		return nil
	}
	err := s.closeDB()
	if rmErr := os.RemoveAll(s.dbDir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	_ = os.Remove(s.dir) // only if no image is outstanding
	if err != nil {
		return fmt.Errorf("state: closing rocksdb store in %s: %w", s.dir, err)
	}
	return nil
}

// pebbleWriter is the rocksdb store's Writer: writes go to a
// batch committed at Seal (or when it grows large).
type pebbleWriter struct{ s *pebbleStore }

func (w *pebbleWriter) Full() bool { return w.s.full }

func (w *pebbleWriter) Put(keyGroup int, key, value []byte) error {
	s := w.s
	if err := checkKeyGroup(keyGroup); err != nil {
		return fmt.Errorf("state: rocksdb put: %w", err)
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	op := s.batch.SetDeferred(prefixLen+len(key), len(value))
	putPrefix(op.Key, keyGroup)
	copy(op.Key[prefixLen:], key)
	copy(op.Value, value)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("state: rocksdb put: %w", err)
	}
	s.empty = false
	if s.batch.Len() >= maxBatchBytes {
		return s.commit()
	}
	return nil
}

func (w *pebbleWriter) Delete(keyGroup int, key []byte) error {
	s := w.s
	if err := checkKeyGroup(keyGroup); err != nil {
		return fmt.Errorf("state: rocksdb delete: %w", err)
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	op := s.batch.DeleteDeferred(prefixLen + len(key))
	putPrefix(op.Key, keyGroup)
	copy(op.Key[prefixLen:], key)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("state: rocksdb delete: %w", err)
	}
	if s.batch.Len() >= maxBatchBytes {
		return s.commit()
	}
	return nil
}
