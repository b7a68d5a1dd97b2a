package window

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

// Checkpointing of the window aggregates. Keyed entries sit under the key
// group of the grouping key, so a snapshot splits by key-group range:
//
//	'a' key values, slice end (8 bytes)  → uvarint arrival seq, accumulator values
//	                                       (slicing: one entry per key and slice)
//	's' key values                       → uvarint n, n × (varint start, varint end,
//	                                       uvarint seq, accumulator values)
//	                                       (session: the open sessions of a key)
//
// and the operator's progress is operator state (KeyGroupNone):
//
//	'p' uvarint subtask → varint watermark, varint processing-time progress
//
// The slices (sessions) pending and the next window each slice belongs to
// follow from the accumulators and the progress, so they are not stored:
// after a restore the same windows fire, late rows are judged against the
// same watermark, and processing-time timers are registered again. Should
// a restore bring several progress entries (a rescale), the smallest
// watermark wins, as Flink restores the window operator's watermark.
//
// Snapshots are incremental: accumulators touched since the previous
// snapshot are Put, those of fired (dropped) slices or sessions Deleted.

const (
	tagSliceAcc = 'a'
	tagSession  = 's'
	tagProgress = 'p'
)

func appendSliceKey(dst []byte, key []types.Value, sliceEnd int64) []byte {
	dst = keyed.AppendKey(dst, tagSliceAcc, key)
	return binary.BigEndian.AppendUint64(dst, uint64(sliceEnd))
}

func decodeValues(src []byte, n int) ([]types.Value, []byte, error) {
	vals := make([]types.Value, n)
	var err error
	for i := range vals {
		if vals[i], src, err = types.DecodeValue(src); err != nil {
			return nil, nil, fmt.Errorf("state value: %w", err)
		}
	}
	return vals, src, nil
}

// progress is the operator state of a window aggregate.
type progress struct {
	wm, proc int64
}

func appendProgress(dst []byte, subtask int, p progress) (out []byte, k int) {
	dst = append(dst, tagProgress)
	dst = binary.AppendUvarint(dst, uint64(subtask))
	k = len(dst)
	dst = binary.AppendVarint(dst, p.wm)
	dst = binary.AppendVarint(dst, p.proc)
	return dst, k
}

// foldProgress folds a restored progress entry into wm and proc. A restore
// may read the entries of several earlier subtasks; the operator resumes
// from the least advanced, so that no window fires early.
func foldProgress(value []byte, wm, proc *int64, first *bool) error {
	p, err := decodeProgress(value)
	if err != nil {
		return fmt.Errorf("window aggregate: restoring state: %w", err)
	}
	if *first {
		*wm, *proc, *first = p.wm, p.proc, false
	} else {
		*wm, *proc = min(*wm, p.wm), min(*proc, p.proc)
	}
	return nil
}

func decodeProgress(value []byte) (progress, error) {
	var p progress
	var n int
	if p.wm, n = binary.Varint(value); n <= 0 {
		return p, fmt.Errorf("truncated progress")
	}
	value = value[n:]
	if p.proc, n = binary.Varint(value); n <= 0 || n != len(value) {
		return p, fmt.Errorf("malformed progress")
	}
	return p, nil
}

// Slicing aggregate.

var (
	_ exec.CheckpointedOperator = (*slicingAggregate)(nil)
	_ exec.CheckpointedOperator = (*sessionAggregate)(nil)
)

// RestoreState implements exec.CheckpointedOperator; entries are applied at
// Open.
func (a *slicingAggregate) RestoreState(r exec.StateReader) error {
	var err error
	if a.restored, err = snapshot.Collect(r); err != nil {
		return fmt.Errorf("window aggregate: restoring state: %w", err)
	}
	a.restoring = true
	return nil
}

// SnapshotState implements exec.CheckpointedOperator.
func (a *slicingAggregate) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	maxPar := snapshot.MaxParallelism(a.ctx)
	st := a.state.(*heapSliceState)
	if err := st.snapshot(w, maxPar, w.Full(), &a.snapBuf); err != nil {
		return fmt.Errorf("window aggregate: snapshot: %w", err)
	}
	subtask := 0
	if a.ctx != nil {
		subtask = a.ctx.Subtask
	}
	buf, k := appendProgress(a.snapBuf[:0], subtask, progress{wm: a.wm, proc: a.proc})
	a.snapBuf = buf
	if err := w.Put(exec.KeyGroupNone, buf[:k], buf[k:]); err != nil {
		return fmt.Errorf("window aggregate: snapshot: %w", err)
	}
	return nil
}

type restoredAcc struct {
	key      []types.Value
	sliceEnd int64
	seq      uint64
	acc      []types.Value
}

// applyRestored rebuilds the accumulators, the progress and the live
// slices from the restored entries.
func (a *slicingAggregate) applyRestored() error {
	if !a.restoring {
		return nil
	}
	entries := a.restored
	a.restored, a.restoring = nil, false
	st := a.state.(*heapSliceState)
	st.tracking = true
	var accs []restoredAcc
	first := true
	for _, e := range entries {
		if len(e.Key) == 0 {
			return fmt.Errorf("window aggregate: restoring state: empty key")
		}
		switch e.Key[0] {
		case tagProgress:
			if err := foldProgress(e.Value, &a.wm, &a.proc, &first); err != nil {
				return err
			}
		case tagSliceAcc:
			key, rest, err := keyed.DecodeKey(e.Key, len(a.keyCols))
			if err != nil || len(rest) != 8 {
				return fmt.Errorf("window aggregate: restoring state: malformed key %x", e.Key)
			}
			seq, n := binary.Uvarint(e.Value)
			if n <= 0 {
				return fmt.Errorf("window aggregate: restoring state: malformed value")
			}
			acc, tail, err := decodeValues(e.Value[n:], a.aggs.AccWidth())
			if err != nil || len(tail) != 0 {
				return fmt.Errorf("window aggregate: restoring state: malformed accumulator (%v)", err)
			}
			accs = append(accs, restoredAcc{key: key, sliceEnd: int64(binary.BigEndian.Uint64(rest)), seq: seq, acc: acc})
		default:
			return fmt.Errorf("window aggregate: restoring state: unknown entry kind %q", e.Key[0])
		}
	}
	// Arrival order within and across slices decides the order of the
	// output rows: put the accumulators back in that order.
	slices.SortFunc(accs, func(x, y restoredAcc) int { return cmp.Compare(x.seq, y.seq) })
	for _, r := range accs {
		row := keyed.Row(a.keyCols, r.key)
		st.restore(row, types.HashColumns(row, a.keyCols), r.sliceEnd, r.seq, r.acc)
		a.restoreSlice(r.sliceEnd)
	}
	if a.metrics != nil && a.wm != exec.MinWatermark {
		a.metrics.CurrentWatermark.Set(a.wm)
	}
	return nil
}

// restoreSlice makes the slice ending at se live again, with the first of
// its windows that had not fired at the restored progress.
func (a *slicingAggregate) restoreSlice(se int64) {
	i := len(a.live)
	for i > 0 && a.live[i-1].end >= se {
		if a.live[i-1].end == se {
			return
		}
		i--
	}
	done := a.wm
	if !a.spec.EventTime {
		done = a.proc
	}
	nextEnd := se
	for a.zone.FireTime(nextEnd-1) <= done {
		nextEnd += a.sl.interval
	}
	a.live = slices.Insert(a.live, i, liveSlice{end: se, nextEnd: nextEnd})
	if !a.spec.EventTime {
		a.ctx.RegisterProcessingTimer(a.zone.FireTime(nextEnd - 1))
	}
}

// snapshot writes the accumulators of heapSliceState: Deletes of dropped
// ones, then Puts of the ones touched since the last snapshot (all when
// full).
func (st *heapSliceState) snapshot(w exec.StateWriter, maxPar int, full bool, buf *[]byte) error {
	if err := st.dels.Write(w, maxPar); err != nil {
		return err
	}
	st.dels.Reset()
	if !st.tracking {
		full = true
	}
	wd := st.accWidth
	for _, s := range st.slices {
		for slot, id := range s.keys {
			if !full && s.marks[slot]&snapshot.MarkDirty == 0 {
				continue
			}
			b := appendSliceKey((*buf)[:0], st.keys.Key(id), s.end)
			k := len(b)
			b = binary.AppendUvarint(b, s.seqs[slot])
			for _, v := range s.accs[slot*wd : (slot+1)*wd] {
				b = types.AppendValue(b, v)
			}
			*buf = b
			if err := w.Put(types.KeyGroup(st.keys.Hash(id), maxPar), b[:k], b[k:]); err != nil {
				return err
			}
			s.marks[slot] = snapshot.MarkPersisted
		}
	}
	st.tracking = true
	return nil
}

// restore puts back the accumulator of one key and slice; entries must come
// in ascending seq.
func (st *heapSliceState) restore(row types.Row, h uint64, sliceEnd int64, seq uint64, acc []types.Value) {
	dst, _ := st.acc(row, h, sliceEnd)
	copy(dst, acc)
	for _, r := range st.refs[st.mustID(row, h)] {
		if r.s.end == sliceEnd {
			r.s.seqs[r.slot] = seq
			r.s.marks[r.slot] = snapshot.MarkPersisted
		}
	}
	st.seq = max(st.seq, seq)
}

func (st *heapSliceState) mustID(row types.Row, h uint64) int32 {
	id, _ := st.keys.Lookup(row, h)
	return id
}

// Session aggregate.

// RestoreState implements exec.CheckpointedOperator; entries are applied at
// Open.
func (a *sessionAggregate) RestoreState(r exec.StateReader) error {
	var err error
	if a.restored, err = snapshot.Collect(r); err != nil {
		return fmt.Errorf("window aggregate: restoring state: %w", err)
	}
	a.restoring = true
	return nil
}

// SnapshotState implements exec.CheckpointedOperator: the open sessions of
// every key changed since the last snapshot, and the progress.
func (a *sessionAggregate) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	maxPar := snapshot.MaxParallelism(a.ctx)
	live := func(id int32) bool { return len(a.sessions[id]) > 0 }
	if err := a.changes.Write(w, maxPar, w.Full(), live, len(a.sessions), a.encodeSessions, &a.snapBuf); err != nil {
		return fmt.Errorf("window aggregate: snapshot: %w", err)
	}
	subtask := 0
	if a.ctx != nil {
		subtask = a.ctx.Subtask
	}
	b, k := appendProgress(a.snapBuf[:0], subtask, progress{wm: a.wm, proc: a.proc})
	a.snapBuf = b
	if err := w.Put(exec.KeyGroupNone, b[:k], b[k:]); err != nil {
		return fmt.Errorf("window aggregate: snapshot: %w", err)
	}
	return nil
}

// encodeSessions appends the entry of the open sessions of key id.
func (a *sessionAggregate) encodeSessions(buf []byte, id int32) ([]byte, int, uint64) {
	b := keyed.AppendKey(buf, tagSession, a.keys.Key(id))
	k := len(b)
	ss := a.sessions[id]
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = binary.AppendVarint(b, s.start)
		b = binary.AppendVarint(b, s.end)
		b = binary.AppendUvarint(b, s.seq)
		for _, v := range s.acc {
			b = types.AppendValue(b, v)
		}
	}
	return b, k, a.keys.Hash(id)
}

func (a *sessionAggregate) applyRestored() error {
	if !a.restoring {
		return nil
	}
	entries := a.restored
	a.restored, a.restoring = nil, false
	a.changes.Tracking = true
	first := true
	width := a.aggs.AccWidth()
	for _, e := range entries {
		if len(e.Key) == 0 {
			return fmt.Errorf("window aggregate: restoring state: empty key")
		}
		switch e.Key[0] {
		case tagProgress:
			if err := foldProgress(e.Value, &a.wm, &a.proc, &first); err != nil {
				return err
			}
		case tagSession:
			key, rest, err := keyed.DecodeKey(e.Key, len(a.keyCols))
			if err != nil || len(rest) != 0 {
				return fmt.Errorf("window aggregate: restoring state: malformed key %x", e.Key)
			}
			row := keyed.Row(a.keyCols, key)
			id, added := a.keys.Lookup(row, types.HashColumns(row, a.keyCols))
			if !added {
				return fmt.Errorf("window aggregate: restoring state: key restored twice")
			}
			if int(id) == len(a.sessions) {
				a.sessions = append(a.sessions, nil)
			}
			v := e.Value
			n, k := binary.Uvarint(v)
			if k <= 0 || n > uint64(len(v)) {
				return fmt.Errorf("window aggregate: restoring state: malformed sessions")
			}
			v = v[k:]
			ss := make([]session, n)
			for i := range ss {
				s := &ss[i]
				var k1, k2, k3 int
				s.start, k1 = binary.Varint(v)
				if k1 > 0 {
					s.end, k2 = binary.Varint(v[k1:])
				}
				if k1 > 0 && k2 > 0 {
					s.seq, k3 = binary.Uvarint(v[k1+k2:])
				}
				if k1 <= 0 || k2 <= 0 || k3 <= 0 {
					return fmt.Errorf("window aggregate: restoring state: malformed sessions")
				}
				if s.acc, v, err = decodeValues(v[k1+k2+k3:], width); err != nil {
					return fmt.Errorf("window aggregate: restoring state: %w", err)
				}
				s.trigger = a.zone.FireTime(s.end - 1)
				a.seq = max(a.seq, s.seq)
				a.minTrigger = min(a.minTrigger, s.trigger)
			}
			if len(v) != 0 {
				return fmt.Errorf("window aggregate: restoring state: sessions have %d trailing bytes", len(v))
			}
			a.sessions[id] = ss
			a.changes.Restored(id)
		default:
			return fmt.Errorf("window aggregate: restoring state: unknown entry kind %q", e.Key[0])
		}
	}
	if !a.spec.EventTime {
		var triggers []int64
		for _, ss := range a.sessions {
			for _, s := range ss {
				triggers = append(triggers, s.trigger)
			}
		}
		slices.Sort(triggers)
		for _, t := range slices.Compact(triggers) {
			a.ctx.RegisterProcessingTimer(t)
		}
	}
	if a.metrics != nil && a.wm != exec.MinWatermark {
		a.metrics.CurrentWatermark.Set(a.wm)
	}
	return nil
}
