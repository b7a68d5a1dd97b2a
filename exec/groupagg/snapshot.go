package groupagg

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/types"
)

// Checkpointing. Every operator of this package keeps its state on the heap
// and writes it to a checkpoint's StateWriter at the barrier. Entries are
// keyed by the operator's grouping key, under the key group of that key, so
// a snapshot splits by key-group range:
//
//	key   = tag byte, then the key's column values (types.AppendValue each)
//	value = per state kind, see the encode functions below
//
// Tags: 'v' a valueState entry (group aggregate, ChangelogNormalize), 'l' a
// listState entry (sink upsert materializer), 'b' a row of the group
// aggregate's unflushed mini-batch buffer (key = tag, key values, sequence
// number). Restore replays entries into a fresh instance before Open.
//
// Incremental snapshots: the heap states remember which keys changed since
// the previous snapshot (a mark per key id, set where the operators already
// report writes) and the encoded keys of the entries they removed. A
// snapshot then writes the removed keys as Deletes, before the changed keys
// as Puts. Tracking starts at the first snapshot (or a restore), so a job
// without checkpoints pays nothing for it.

const (
	tagValue  = 'v'
	tagList   = 'l'
	tagBundle = 'b'
)

const (
	markDirty     = 1 // changed since the last snapshot
	markPersisted = 2 // present in the checkpointed store
)

// changes is the change tracking of one heap state, by key id.
type changes struct {
	tracking  bool
	marks     []uint8
	dirty     []int32 // ids marked dirty, possibly repeated; the mark decides
	delKeys   []byte  // encoded keys of removed persisted entries
	delEnds   []int
	delHashes []uint64
}

func (c *changes) grow(id int32) {
	for int(id) >= len(c.marks) {
		c.marks = append(c.marks, 0)
	}
}

// touch records that the entry of id changed.
func (c *changes) touch(id int32) {
	if !c.tracking {
		return
	}
	c.grow(id)
	if c.marks[id]&markDirty == 0 {
		c.marks[id] |= markDirty
		c.dirty = append(c.dirty, id)
	}
}

// removed records that the entry of id (key values key, hashed to h) is
// gone; the id may be handed out again afterwards.
func (c *changes) removed(id int32, h uint64, tag byte, key []types.Value) {
	if !c.tracking {
		return
	}
	c.grow(id)
	if c.marks[id]&markPersisted != 0 {
		c.delKeys = appendKey(c.delKeys, tag, key)
		c.delEnds = append(c.delEnds, len(c.delKeys))
		c.delHashes = append(c.delHashes, h)
	}
	c.marks[id] = 0
}

// restored records that id came from a restored checkpoint.
func (c *changes) restored(id int32) {
	c.tracking = true
	c.grow(id)
	c.marks[id] = markPersisted
}

// entryWriter appends the entry of a live id to buf: the key is out[:k],
// the value out[k:]; h is the key's hash.
type entryWriter func(buf []byte, id int32) (out []byte, k int, h uint64)

// write writes the snapshot: Deletes of removed entries, then Puts of the
// changed ones, or of every live one (forEach) when full.
func (c *changes) write(w exec.StateWriter, maxPar int, full bool, forEach func(fn func(id int32)), enc entryWriter, buf *[]byte) error {
	start := 0
	for i, end := range c.delEnds {
		if err := w.Delete(types.KeyGroup(c.delHashes[i], maxPar), c.delKeys[start:end]); err != nil {
			return err
		}
		start = end
	}
	var err error
	put := func(id int32) {
		if err != nil {
			return
		}
		c.grow(id)
		out, k, h := enc((*buf)[:0], id)
		*buf = out
		err = w.Put(types.KeyGroup(h, maxPar), out[:k], out[k:])
		c.marks[id] = markPersisted
	}
	if full || !c.tracking {
		forEach(put)
	} else {
		for _, id := range c.dirty {
			if c.marks[id]&markDirty != 0 {
				put(id)
			}
		}
	}
	if err != nil {
		return err
	}
	c.tracking = true
	c.dirty = c.dirty[:0]
	c.delKeys, c.delEnds, c.delHashes = c.delKeys[:0], c.delEnds[:0], c.delHashes[:0]
	return nil
}

// appendKey appends the encoded key of an entry.
func appendKey(dst []byte, tag byte, key []types.Value) []byte {
	dst = append(dst, tag)
	for _, v := range key {
		dst = types.AppendValue(dst, v)
	}
	return dst
}

// decodeKey reads the key values of an entry key written by appendKey with
// n columns, returning the rest of the key.
func decodeKey(src []byte, n int) ([]types.Value, []byte, error) {
	if len(src) == 0 {
		return nil, nil, fmt.Errorf("empty state key")
	}
	src = src[1:]
	key := make([]types.Value, n)
	var err error
	for i := range key {
		if key[i], src, err = types.DecodeValue(src); err != nil {
			return nil, nil, fmt.Errorf("state key: %w", err)
		}
	}
	return key, src, nil
}

// keyRow places key values at the key columns of a row wide enough for
// them, so a restored key can be hashed and interned like an input row's.
func keyRow(cols []int, key []types.Value) types.Row {
	w := 0
	for _, c := range cols {
		w = max(w, c+1)
	}
	row := make(types.Row, w)
	for i, c := range cols {
		row[c] = key[i]
	}
	return row
}

// valueState entries: value = varint last write, then the values.

func (s *heapValueState) encode(buf []byte, id int32) ([]byte, int, uint64) {
	buf = appendKey(buf, tagValue, s.keys.key(id))
	k := len(buf)
	buf = binary.AppendVarint(buf, s.stamp[id])
	for _, v := range s.values(id) {
		buf = types.AppendValue(buf, v)
	}
	return buf, k, s.keys.hash(id)
}

func (s *heapValueState) snapshot(w exec.StateWriter, maxPar int, buf *[]byte) error {
	return s.changes.write(w, maxPar, w.Full(), s.forEach, s.encode, buf)
}

func (s *heapValueState) forEach(fn func(id int32)) {
	for id := range s.alive {
		if s.alive[id] {
			fn(int32(id))
		}
	}
}

// restore adds one entry written by encode.
func (s *heapValueState) restore(key, value []byte) error {
	kv, rest, err := decodeKey(key, len(s.keys.cols))
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("state key has %d trailing bytes", len(rest))
	}
	row := keyRow(s.keys.cols, kv)
	h := types.HashColumns(row, s.keys.cols)
	if _, ok := s.get(row, h); ok {
		return fmt.Errorf("state key restored twice")
	}
	stamp, n := binary.Varint(value)
	if n <= 0 {
		return fmt.Errorf("truncated state value")
	}
	value = value[n:]
	id := s.create(row, h)
	vals := s.values(id)
	for i := range vals {
		if vals[i], value, err = types.DecodeValue(value); err != nil {
			return fmt.Errorf("state value: %w", err)
		}
	}
	if len(value) != 0 {
		return fmt.Errorf("state value has %d more bytes than %d values", len(value), len(vals))
	}
	s.stamp[id] = stamp
	s.changes.restored(id)
	return nil
}

// valueWidth counts the values of an encoded valueState entry.
func valueWidth(value []byte) (int, error) {
	_, n := binary.Varint(value)
	if n <= 0 {
		return 0, fmt.Errorf("truncated state value")
	}
	value = value[n:]
	w := 0
	for len(value) > 0 {
		var err error
		if _, value, err = types.DecodeValue(value); err != nil {
			return 0, fmt.Errorf("state value: %w", err)
		}
		w++
	}
	return w, nil
}

// listState entries: value = varint last write, uvarint row count, then the
// rows (types.AppendRow each).

func (s *heapListState) encode(buf []byte, id int32) ([]byte, int, uint64) {
	buf = appendKey(buf, tagList, s.keys.key(id))
	k := len(buf)
	buf = binary.AppendVarint(buf, s.stamp[id])
	rows := s.lists[id]
	buf = binary.AppendUvarint(buf, uint64(len(rows)))
	for _, r := range rows {
		buf = types.AppendRow(buf, r)
	}
	return buf, k, s.keys.hash(id)
}

func (s *heapListState) snapshot(w exec.StateWriter, maxPar int, buf *[]byte) error {
	return s.changes.write(w, maxPar, w.Full(), s.forEach, s.encode, buf)
}

func (s *heapListState) forEach(fn func(id int32)) {
	for id := range s.alive {
		if s.alive[id] {
			fn(int32(id))
		}
	}
}

// decodeList reads a listState value.
func decodeList(value []byte) (stamp int64, rows []types.Row, err error) {
	stamp, n := binary.Varint(value)
	if n <= 0 {
		return 0, nil, fmt.Errorf("truncated state value")
	}
	value = value[n:]
	count, n := binary.Uvarint(value)
	if n <= 0 || count > uint64(len(value)) {
		return 0, nil, fmt.Errorf("truncated state value")
	}
	value = value[n:]
	rows = make([]types.Row, count)
	for i := range rows {
		if rows[i], value, err = types.DecodeRow(value); err != nil {
			return 0, nil, fmt.Errorf("state value: %w", err)
		}
	}
	if len(value) != 0 {
		return 0, nil, fmt.Errorf("state value has %d trailing bytes", len(value))
	}
	return stamp, rows, nil
}

func (s *heapListState) restore(key []byte, stamp int64, rows []types.Row) error {
	kv, rest, err := decodeKey(key, len(s.keys.cols))
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("state key has %d trailing bytes", len(rest))
	}
	row := keyRow(s.keys.cols, kv)
	h := types.HashColumns(row, s.keys.cols)
	if _, ok := s.get(row, h); ok {
		return fmt.Errorf("state key restored twice")
	}
	id := s.create(row, h)
	for _, r := range rows {
		if len(r) != s.width {
			return fmt.Errorf("restored row of %d columns, expected %d", len(r), s.width)
		}
		s.appendRow(id, r)
	}
	s.stamp[id] = stamp
	s.changes.restored(id)
	return nil
}

// restoredEntry is an entry handed to RestoreState, kept until Open.
type restoredEntry struct {
	key, value []byte
}

// collect copies every entry of r.
func collect(r exec.StateReader) ([]restoredEntry, error) {
	var out []restoredEntry
	err := r.Each(func(_ int, key, value []byte) error {
		out = append(out, restoredEntry{key: slices.Clone(key), value: slices.Clone(value)})
		return nil
	})
	return out, err
}
