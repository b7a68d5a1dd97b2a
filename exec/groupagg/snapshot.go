package groupagg

import (
	"encoding/binary"
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
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

// valueState entries: value = varint last write, then the values.

func (s *heapValueState) encode(buf []byte, id int32) ([]byte, int, uint64) {
	buf = keyed.AppendKey(buf, tagValue, s.keys.key(id))
	k := len(buf)
	buf = binary.AppendVarint(buf, s.stamp[id])
	for _, v := range s.values(id) {
		buf = types.AppendValue(buf, v)
	}
	return buf, k, s.keys.hash(id)
}

func (s *heapValueState) snapshot(w exec.StateWriter, maxPar int, buf *[]byte) error {
	return s.changes.Write(w, maxPar, w.Full(), s.isAlive, len(s.alive), s.encode, buf)
}

func (s *heapValueState) isAlive(id int32) bool { return s.alive[id] }

// restore adds one entry written by encode.
func (s *heapValueState) restore(key, value []byte) error {
	kv, rest, err := keyed.DecodeKey(key, len(s.keys.cols))
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("state key has %d trailing bytes", len(rest))
	}
	row := keyed.Row(s.keys.cols, kv)
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
	s.changes.Restored(id)
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
	buf = keyed.AppendKey(buf, tagList, s.keys.key(id))
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
	return s.changes.Write(w, maxPar, w.Full(), s.isAlive, len(s.alive), s.encode, buf)
}

func (s *heapListState) isAlive(id int32) bool { return s.alive[id] }

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
	kv, rest, err := keyed.DecodeKey(key, len(s.keys.cols))
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("state key has %d trailing bytes", len(rest))
	}
	row := keyed.Row(s.keys.cols, kv)
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
	s.changes.Restored(id)
	return nil
}
