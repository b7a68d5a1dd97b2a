package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/flinksql/flinksql/state/image"
)

// The entries form of a backend's state is its stored entries (see the
// package comment), registry included, in stored-key order: what neither
// backend's image format depends on. Savepoints hold it (in the hashmap
// image file format, package image), and a restore at another parallelism
// or into the other backend kind goes through it.

// ExportImage visits every stored entry of a snapshot image, registry
// included, in stored-key order. The image's files were downloaded into
// cfg.Dir under their local names; cfg.Kind is the kind that wrote them. A
// hashmap image is streamed from its file; a rocksdb image is opened as a
// DB in cfg.Dir (which it then belongs to) and iterated. Slices passed to
// fn are valid during the call.
func ExportImage(cfg Config, files []image.File, fn func(k, v []byte) error) error {
	if cfg.Kind == image.Hashmap {
		if len(files) != 1 {
			return fmt.Errorf("kv: a hashmap image has exactly one state file, got %d files", len(files))
		}
		if err := image.CheckFiles(cfg.Dir, files, !cfg.SumsVerified); err != nil {
			return fmt.Errorf("kv: exporting hashmap image: %w", err)
		}
		_, err := image.ScanHashmapFile(filepath.Join(cfg.Dir, files[0].LocalName), func(k, v []byte) error {
			if _, err := validStored(k); err != nil {
				return err
			}
			return fn(k, v)
		})
		return err
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = MinMemoryBudget
	}
	cfg.KeyGroups = nil
	b, err := Restore(cfg, files)
	if err != nil {
		return err
	}
	err = b.eng.each(nil, nil, fn)
	return errors.Join(err, b.Close())
}

// EntrySource is one source of stored entries for Import: it visits them in
// stored-key order.
type EntrySource func(fn func(k, v []byte) error) error

// Import fills the empty backend b from the entries of sources (one per
// instance of the snapshot that overlaps b's key groups), keeping the
// entries of b's key groups and the state registry, which every source
// carries and which must agree. Entries of other key groups are skipped:
// they belong to other instances of the new parallelism.
//
// A rocksdb backend ingests the entries as SSTs when the sources come in
// ascending key order, one after the other (sources of instances in
// ascending key-group order, as a restore passes them); otherwise, and for
// hashmap, the entries are loaded one by one.
func (b *Backend) Import(sources []EntrySource) error {
	registry := map[string][]byte{}
	r := importReader{b: b, sources: sources, registry: registry}
	if pe, ok := b.eng.(*pebbleEngine); ok && !b.declaredAny() {
		err := pe.ingestSorted(func(fn func(k, v []byte) error) error {
			var k []byte
			return r.Each(func(kg int, key, value []byte) error {
				k = append(appendKeyGroup(k[:0], kg), key...)
				return fn(k, value)
			})
		})
		if err != nil {
			return fmt.Errorf("kv: importing rocksdb state entries: %w", err)
		}
		return b.readRegistry()
	}
	return b.LoadEntries(&r)
}

// declaredAny reports whether a state was declared already.
func (b *Backend) declaredAny() bool {
	for _, d := range b.byName {
		if d.live {
			return true
		}
	}
	return false
}

type importReader struct {
	b        *Backend
	sources  []EntrySource
	registry map[string][]byte
}

func (r *importReader) Each(fn func(keyGroup int, key, value []byte) error) error {
	kgs := r.b.kgs
	for i, src := range r.sources {
		err := src(func(k, v []byte) error {
			if _, err := validStored(k); err != nil {
				return err
			}
			kg := storedKeyGroup(k)
			if kg == KeyGroupNone {
				if prev, ok := r.registry[string(k)]; ok {
					if !bytes.Equal(prev, v) {
						return fmt.Errorf("the state declaration %q differs between the snapshot's instances", k[len(registryPrefix):])
					}
					return nil
				}
				r.registry[string(k)] = bytes.Clone(v)
			} else if !kgs.Contains(kg) {
				return nil
			}
			return fn(kg, k[kgLen:], v)
		})
		if err != nil {
			return fmt.Errorf("source %d: %w", i, err)
		}
	}
	return nil
}

// RewriteValues replaces every stored value of the restored state name in
// b's key groups by fn's conversion of it (a TTL's last-write stamp is
// kept as it was): the migration of a state whose layout changed between
// the snapshot and the job restoring it. It runs before the operator
// declares its states; a state the snapshot does not hold is left alone.
func (b *Backend) RewriteValues(name string, fn func(v []byte) ([]byte, error)) error {
	d := b.byName[name]
	if d == nil {
		return nil
	}
	type kvp struct{ k, v []byte }
	var batch []kvp
	// Key group by key group for rocksdb (a seek each, a bounded batch);
	// for hashmap, whose each sorts what it visits, one pass over the
	// instance's key groups (its state is in memory anyway).
	step := 1
	if b.kind == image.Hashmap {
		step = b.kgs.Last - b.kgs.First + 1
	}
	for kg := b.kgs.First; kg <= b.kgs.Last; kg += step {
		lo := binary.BigEndian.AppendUint16(appendKeyGroup(nil, kg), d.sid)
		hi := binary.BigEndian.AppendUint16(appendKeyGroup(nil, kg), d.sid+1)
		if step > 1 {
			hi = appendKeyGroup(nil, b.kgs.Last+1)
		}
		batch = batch[:0]
		err := b.eng.each(lo, hi, func(k, v []byte) error {
			if len(k) < kgLen+sidLen || binary.BigEndian.Uint16(k[kgLen:]) != d.sid {
				return nil // another state, in the one-pass range
			}
			stamp := []byte(nil)
			if d.ttl > 0 {
				if len(v) < ttlLen {
					return fmt.Errorf("stored value of key %x is shorter than its TTL stamp", prefix32(k))
				}
				stamp, v = v[:ttlLen], v[ttlLen:]
			}
			// Capped: an append of fn's must not write into the engine's
			// memory behind v.
			nv, err := fn(v[:len(v):len(v)])
			if err != nil {
				return fmt.Errorf("stored value of key %x: %w", prefix32(k), err)
			}
			batch = append(batch, kvp{bytes.Clone(k), append(bytes.Clone(stamp), nv...)})
			return nil
		})
		if err != nil {
			return fmt.Errorf("kv: rewriting state %q: %w", name, err)
		}
		for _, e := range batch {
			if err := b.eng.put(e.k, e.v); err != nil {
				return fmt.Errorf("kv: rewriting state %q: %w", name, err)
			}
		}
	}
	return nil
}
