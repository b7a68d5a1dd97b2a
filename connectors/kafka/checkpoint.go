package kafka

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Checkpointing of the kafka connector (issue 5): the reader's position is
// the next offset of every partition it owns; the writer flushes at every
// barrier, which gives at-least-once delivery. Exactly-once through Kafka
// transactions is not implemented here.

// Layouts of Reader.SnapshotPosition.
const (
	positionV1 = 1 // next offsets
	positionV2 = 2 // next offsets, and for a bounded read the stop offsets
)

// position is a reader's checkpointed state.
type position struct {
	next map[TopicPartition]int64
	// stop holds a bounded read's stop offsets, fixed at the job's first
	// start; nil for an unbounded read or a position of the first layout.
	stop map[TopicPartition]int64
}

func (p *position) nextOf(tp TopicPartition) (int64, bool) {
	if p == nil {
		return 0, false
	}
	o, ok := p.next[tp]
	return o, ok
}

func (p *position) stopOf(tp TopicPartition) (int64, bool) {
	if p == nil || p.stop == nil {
		return 0, false
	}
	o, ok := p.stop[tp]
	return o, ok
}

// SnapshotPosition implements exec.CheckpointedReader: the next offset to
// read of every partition the reader owns, sorted by topic and partition,
// and for a bounded read each partition's stop offset.
func (r *Reader) SnapshotPosition() ([]byte, error) {
	return encodePosition(r.position()), nil
}

// RestorePosition implements exec.CheckpointedReader: the partitions in pos
// start at their checkpointed offsets (and a bounded read stops at the
// checkpointed stop offsets); partitions found later start at the earliest
// offset (FLIP-288).
func (r *Reader) RestorePosition(pos []byte) error {
	p, err := decodePosition(pos)
	if err != nil {
		return fmt.Errorf("kafka table %s: bad checkpointed position: %w", r.src.cfg.name, err)
	}
	r.restore = p
	return nil
}

// MergePositions implements exec.PositionMerger: a job restored at another
// parallelism gives every subtask the union of the old subtasks' positions,
// and each reads from it the offsets of the partitions it owns now.
func (r *Reader) MergePositions(positions [][]byte) ([]byte, error) {
	merged := &position{next: map[TopicPartition]int64{}}
	for _, b := range positions {
		p, err := decodePosition(b)
		if err != nil {
			return nil, fmt.Errorf("kafka table %s: bad checkpointed position: %w", r.src.cfg.name, err)
		}
		for tp, o := range p.next {
			if prev, dup := merged.next[tp]; dup && prev != o {
				return nil, fmt.Errorf("kafka table %s: partition %s-%d has two checkpointed offsets (%d and %d)", r.src.cfg.name, tp.Topic, tp.Partition, prev, o)
			}
			merged.next[tp] = o
		}
		if p.stop != nil {
			if merged.stop == nil {
				merged.stop = map[TopicPartition]int64{}
			}
			for tp, o := range p.stop {
				merged.stop[tp] = o
			}
		}
	}
	if merged.stop != nil {
		for tp := range merged.next {
			if _, ok := merged.stop[tp]; !ok {
				return nil, fmt.Errorf("kafka table %s: partition %s-%d has no checkpointed stop offset", r.src.cfg.name, tp.Topic, tp.Partition)
			}
		}
	}
	return encodePosition(merged), nil
}

// NotifyPositionComplete implements exec.CheckpointCompleteReader: with
// 'properties.group.id' set and 'properties.commit.offsets.on.checkpoint' on,
// the offsets of completed checkpoint id are committed to the group, so that
// a job started again with 'group-offsets' continues there. The commit runs
// in the background; a failed one is logged and counted, not fatal, as in
// Flink (the checkpoint itself holds the offsets).
func (r *Reader) NotifyPositionComplete(id exec.CheckpointID, pos []byte) error {
	if !r.src.commitOffsets || r.adm == nil {
		return nil
	}
	p, err := decodePosition(pos)
	if err != nil {
		return fmt.Errorf("kafka table %s: bad position of checkpoint %d: %w", r.src.cfg.name, id, err)
	}
	if len(p.next) == 0 {
		return nil
	}
	offsets := kadm.Offsets{}
	for tp, o := range p.next {
		offsets.AddOffset(tp.Topic, tp.Partition, o, -1)
	}
	c := &r.commit
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && sameOffsets(c.last, offsets) {
		return nil
	}
	c.pending, c.id = offsets, id
	if !c.running {
		c.running = true
		c.wg.Add(1)
		go r.commitLoop()
	}
	return nil
}

// commitLoop sends pending commits until none is left.
func (r *Reader) commitLoop() {
	c := &r.commit
	defer c.wg.Done()
	cfg := r.src.cfg
	for {
		c.mu.Lock()
		offsets, id := c.pending, c.id
		c.pending = nil
		if offsets == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := cfg.contextWithTimeout(r.ctx)
		resp, err := r.adm.CommitOffsets(ctx, cfg.groupID, offsets)
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			r.src.commitsFailed.Add(1)
			r.src.logf("kafka table %s: committing the offsets of checkpoint %d to consumer group '%s' at %s failed: %v (the checkpoint keeps them; a job started with 'group-offsets' would start before them)",
				cfg.name, id, cfg.groupID, cfg.serversText(), err)
			continue
		}
		c.mu.Lock()
		c.last = offsets
		c.mu.Unlock()
	}
}

func sameOffsets(a, b kadm.Offsets) bool {
	n := 0
	equal := true
	b.Each(func(o kadm.Offset) {
		n++
		if x, ok := a.Lookup(o.Topic, o.Partition); !ok || x.At != o.At {
			equal = false
		}
	})
	na := 0
	a.Each(func(kadm.Offset) { na++ })
	return equal && n == na
}

func sortedPartitions(offsets map[TopicPartition]int64) []TopicPartition {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sortTopicPartitions(tps)
	return tps
}

// encodeOffsets is the first layout, offsets only.
func encodeOffsets(offsets map[TopicPartition]int64) []byte {
	b := []byte{positionV1}
	return appendOffsets(b, offsets, nil)
}

func encodePosition(p *position) []byte {
	b := []byte{positionV2, 0}
	if p.stop != nil {
		b[1] = 1
	}
	return appendOffsets(b, p.next, p.stop)
}

func appendOffsets(b []byte, next, stop map[TopicPartition]int64) []byte {
	tps := sortedPartitions(next)
	b = binary.AppendUvarint(b, uint64(len(tps)))
	for _, tp := range tps {
		b = binary.AppendUvarint(b, uint64(len(tp.Topic)))
		b = append(b, tp.Topic...)
		b = binary.AppendVarint(b, int64(tp.Partition))
		b = binary.AppendVarint(b, next[tp])
		if stop != nil {
			b = binary.AppendVarint(b, stop[tp])
		}
	}
	return b
}

func decodeOffsets(b []byte) (map[TopicPartition]int64, error) {
	p, err := decodePosition(b)
	if err != nil {
		return nil, err
	}
	return p.next, nil
}

func decodePosition(b []byte) (*position, error) {
	if len(b) == 0 || (b[0] != positionV1 && b[0] != positionV2) {
		return nil, fmt.Errorf("unknown version in %x", b)
	}
	rest := b[1:]
	p := &position{}
	if b[0] == positionV2 {
		if len(rest) == 0 || rest[0] > 1 {
			return nil, fmt.Errorf("bad header: %x", b)
		}
		if rest[0] == 1 {
			p.stop = map[TopicPartition]int64{}
		}
		rest = rest[1:]
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return nil, fmt.Errorf("truncated: %x", b)
	}
	rest = rest[k:]
	p.next = make(map[TopicPartition]int64, n)
	varint := func() (int64, bool) {
		v, k := binary.Varint(rest)
		if k <= 0 {
			return 0, false
		}
		rest = rest[k:]
		return v, true
	}
	for range n {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, fmt.Errorf("truncated: %x", b)
		}
		topic := string(rest[k : k+int(l)])
		rest = rest[k+int(l):]
		part, ok1 := varint()
		off, ok2 := varint()
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("truncated: %x", b)
		}
		tp := TopicPartition{Topic: topic, Partition: int32(part)}
		p.next[tp] = off
		if p.stop != nil {
			stop, ok := varint()
			if !ok {
				return nil, fmt.Errorf("truncated: %x", b)
			}
			p.stop[tp] = stop
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("trailing bytes: %x", b)
	}
	return p, nil
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
