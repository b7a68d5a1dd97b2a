// Package snapshot owns the checkpoint plumbing the heap-state operators of
// window, rank and groupagg share: the dirty/persisted marks of incremental
// snapshots and the change tracking by key id built on them (Changes), the
// list of Deletes pending until the next snapshot, collecting restored
// entries until Open, and the max parallelism that key groups are computed
// with. What each operator writes into an entry stays in its package.
package snapshot

import (
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/sql/types"
)

// Marks of an entry, per key id (or slot).
const (
	MarkDirty     = 1 // changed since the last snapshot
	MarkPersisted = 2 // present in the checkpointed store
)

// DefaultMaxParallelism stands in when the runtime gives none
// (pipeline.max-parallelism defaults to 128).
const DefaultMaxParallelism = 128

// MaxParallelism is the number of key groups of ctx.
func MaxParallelism(ctx *exec.OperatorContext) int {
	if ctx == nil || ctx.MaxParallelism <= 0 {
		return DefaultMaxParallelism
	}
	return ctx.MaxParallelism
}

// Entry is an entry handed to RestoreState, kept until Open.
type Entry struct {
	Key, Value []byte
}

// Collect copies every entry of r.
func Collect(r exec.StateReader) ([]Entry, error) {
	var out []Entry
	err := r.Each(func(_ int, key, value []byte) error {
		out = append(out, Entry{Key: slices.Clone(key), Value: slices.Clone(value)})
		return nil
	})
	return out, err
}

// Deletes collects the encoded keys of removed persisted entries until the
// next snapshot, with the hashes their key groups follow from.
type Deletes struct {
	keys   []byte
	ends   []int
	hashes []uint64
}

// Buffer returns the encoded keys so far; append one key to it and hand
// the result to Add.
func (d *Deletes) Buffer() []byte { return d.keys }

// Add records the key appended to Buffer's result buf, hashed to h.
func (d *Deletes) Add(buf []byte, h uint64) {
	d.keys = buf
	d.ends = append(d.ends, len(buf))
	d.hashes = append(d.hashes, h)
}

// Write writes the Deletes in the order they were added; they stay
// recorded until Reset.
func (d *Deletes) Write(w exec.StateWriter, maxPar int) error {
	start := 0
	for i, end := range d.ends {
		if err := w.Delete(types.KeyGroup(d.hashes[i], maxPar), d.keys[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// Reset forgets the Deletes, keeping the memory.
func (d *Deletes) Reset() {
	d.keys, d.ends, d.hashes = d.keys[:0], d.ends[:0], d.hashes[:0]
}

// Changes tracks which entries of a store indexed by key id changed since
// the last snapshot, and the keys of the persisted ones removed. Tracking
// starts with the first snapshot or a restore, so a job without
// checkpoints pays nothing for it.
type Changes struct {
	Tracking bool
	marks    []uint8
	dirty    []int32 // ids marked dirty, possibly repeated; the mark decides
	dels     Deletes
}

func (c *Changes) grow(id int32) {
	for int(id) >= len(c.marks) {
		c.marks = append(c.marks, 0)
	}
}

// Touch records that the entry of id changed.
func (c *Changes) Touch(id int32) {
	if !c.Tracking {
		return
	}
	c.grow(id)
	if c.marks[id]&MarkDirty == 0 {
		c.marks[id] |= MarkDirty
		c.dirty = append(c.dirty, id)
	}
}

// Removed records that the entry of id (key values key under tag, hashed
// to h) is gone; the id may be handed out again afterwards.
func (c *Changes) Removed(id int32, h uint64, tag byte, key []types.Value) {
	if !c.Tracking {
		return
	}
	c.grow(id)
	if c.marks[id]&MarkPersisted != 0 {
		c.dels.Add(keyed.AppendKey(c.dels.Buffer(), tag, key), h)
	}
	c.marks[id] = 0
}

// Restored records that id came from a restored checkpoint.
func (c *Changes) Restored(id int32) {
	c.Tracking = true
	c.grow(id)
	c.marks[id] = MarkPersisted
}

// EntryEncoder appends the entry of a live id to buf: the key is out[:k],
// the value out[k:]; h is the key's hash.
type EntryEncoder func(buf []byte, id int32) (out []byte, k int, h uint64)

// Write writes a snapshot: Deletes of removed entries, then Puts of the
// changed live ones, or of every live id in [0, span) when full (or not
// tracking yet). Removed ids are never dirty, so live only filters ids
// that never held an entry or were released without one.
func (c *Changes) Write(w exec.StateWriter, maxPar int, full bool, live func(id int32) bool, span int,
	enc EntryEncoder, buf *[]byte) error {
	if err := c.dels.Write(w, maxPar); err != nil {
		return err
	}
	put := func(id int32) error {
		out, k, h := enc((*buf)[:0], id)
		*buf = out
		c.grow(id)
		c.marks[id] = MarkPersisted
		return w.Put(types.KeyGroup(h, maxPar), out[:k], out[k:])
	}
	if full || !c.Tracking {
		for id := int32(0); int(id) < span; id++ {
			if live(id) {
				if err := put(id); err != nil {
					return err
				}
			}
		}
	} else {
		for _, id := range c.dirty {
			if c.marks[id]&MarkDirty != 0 && live(id) {
				if err := put(id); err != nil {
					return err
				}
			}
		}
	}
	c.dirty = c.dirty[:0]
	c.dels.Reset()
	c.Tracking = true
	return nil
}
