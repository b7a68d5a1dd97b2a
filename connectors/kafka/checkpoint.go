package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/flinksql/flinksql/exec"
)

// Checkpointing of the kafka connector (issue 5): the reader's position is
// the next offset of every partition it owns; the writer flushes at every
// barrier, which gives at-least-once delivery. Exactly-once through Kafka
// transactions is not implemented here.

// positionVersion tags the layout of Reader.SnapshotPosition.
const positionVersion = 1

var (
	_ exec.CheckpointedReader   = (*Reader)(nil)
	_ exec.TwoPhaseCommitWriter = (*Writer)(nil)
)

// SnapshotPosition implements exec.CheckpointedReader: the next offset to
// read of every partition the reader owns, sorted by topic and partition.
func (r *Reader) SnapshotPosition() ([]byte, error) {
	return encodeOffsets(r.Offsets()), nil
}

// RestorePosition implements exec.CheckpointedReader: the partitions in pos
// start at their checkpointed offsets; partitions found later start with
// the table's startup mode.
func (r *Reader) RestorePosition(pos []byte) error {
	offsets, err := decodeOffsets(pos)
	if err != nil {
		return fmt.Errorf("kafka table %s: bad checkpointed position: %w", r.src.cfg.name, err)
	}
	r.RestoreOffsets(offsets)
	return nil
}

func encodeOffsets(offsets map[TopicPartition]int64) []byte {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	b := []byte{positionVersion}
	b = binary.AppendUvarint(b, uint64(len(tps)))
	for _, tp := range tps {
		b = binary.AppendUvarint(b, uint64(len(tp.Topic)))
		b = append(b, tp.Topic...)
		b = binary.AppendVarint(b, int64(tp.Partition))
		b = binary.AppendVarint(b, offsets[tp])
	}
	return b
}

func decodeOffsets(b []byte) (map[TopicPartition]int64, error) {
	if len(b) == 0 || b[0] != positionVersion {
		return nil, fmt.Errorf("unknown version in %x", b)
	}
	rest := b[1:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return nil, fmt.Errorf("truncated: %x", b)
	}
	rest = rest[k:]
	out := make(map[TopicPartition]int64, n)
	for range n {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, fmt.Errorf("truncated: %x", b)
		}
		topic := string(rest[k : k+int(l)])
		rest = rest[k+int(l):]
		p, k := binary.Varint(rest)
		if k <= 0 {
			return nil, fmt.Errorf("truncated: %x", b)
		}
		rest = rest[k:]
		off, k := binary.Varint(rest)
		if k <= 0 {
			return nil, fmt.Errorf("truncated: %x", b)
		}
		rest = rest[k:]
		out[TopicPartition{Topic: topic, Partition: int32(p)}] = off
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("trailing bytes: %x", b)
	}
	return out, nil
}

// PrepareCommit implements exec.TwoPhaseCommitWriter for 'at-least-once'
// (and 'none'): every record written so far is flushed to Kafka and
// acknowledged before the barrier passes (for 'none' nothing is awaited).
// There is nothing to commit later.
func (w *Writer) PrepareCommit(exec.CheckpointID) ([]exec.Committable, error) {
	if w.cl == nil {
		return nil, nil // not open: nothing written
	}
	ctx := w.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return nil, nil
}

// Commit implements exec.TwoPhaseCommitWriter; records are visible once
// produced, so there is nothing to do.
func (w *Writer) Commit([]exec.Committable) error { return nil }

// Abort implements exec.TwoPhaseCommitWriter; produced records cannot be
// taken back without transactions, so there is nothing to do.
func (w *Writer) Abort([]exec.Committable) error { return nil }
