package kv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ingestFileSize is the size at which an ingested SST is cut.
const ingestFileSize = workingTargetFileSize

// ingestSorted fills an empty rocksdb engine from entries that arrive in
// strictly ascending stored-key order: they are written into SSTs, which
// Pebble ingests into its last level (no memtable, no compaction), as
// Flink's RocksDB restore of a rescaled savepoint ingests SSTs. Registry
// entries (outside key groups) go through a batch. An entry out of order is
// an error.
func (e *pebbleEngine) ingestSorted(each func(fn func(k, v []byte) error) error) error {
	e.dropAllWhole()
	o := workingOptions(1<<20, 1<<20, e.comparer)
	o.EnsureDefaults()
	wo := o.MakeWriterOptions(len(o.Levels)-1, e.db.TableFormat())
	o.Cache.Unref()

	var (
		paths []string
		w     *sstable.Writer
		prev  []byte
		n     int
		size  int64
	)
	finish := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		w = nil
		return err
	}
	err := each(func(k, v []byte) error {
		if storedKeyGroup(k) == KeyGroupNone {
			return e.put(k, v)
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("entry %x after %x: the entries to ingest are not in order", prefix32(k), prefix32(prev))
		}
		prev = append(prev[:0], k...)
		if w != nil && size >= ingestFileSize {
			if err := finish(); err != nil {
				return err
			}
			size = 0
		}
		if w == nil {
			path := filepath.Join(e.dir, "ingest-"+strconv.Itoa(len(paths))+".sst")
			f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				return err
			}
			paths = append(paths, path)
			w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
		}
		n++
		size += int64(len(k) + len(v))
		return w.Set(k, v)
	})
	if ferr := finish(); err == nil {
		err = ferr
	}
	if err == nil && len(paths) > 0 {
		err = e.dropIter() // it would not see the ingested files
	}
	if err == nil && len(paths) > 0 {
		err = e.db.Ingest(context.Background(), paths)
	}
	for _, p := range paths {
		_ = os.Remove(p) // ingested files are linked into the DB
	}
	if err != nil {
		return fmt.Errorf("ingesting %d entries: %w", n, err)
	}
	if err := e.flush(false); err != nil {
		return err
	}
	e.tracking, e.changed = true, make(map[string]struct{})
	return e.commit()
}
