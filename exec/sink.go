package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/flinksql/flinksql/types"
)

// The sink operator and its two-phase-commit bookkeeping: the writer's
// flush or pre-commit at each barrier, the committables kept in the
// checkpoint until a completed checkpoint commits them, the commit of the
// restored ones before the writer opens, and the Finish deferred until the
// final checkpoint committed. The barrier code reaches it only through
// barrierSink (barrier.go); what a restore's commits found is judged in
// verdict.go.

// sink hands rows to a SinkWriter.
type sink struct {
	newWriter func(subtask, parallelism int) (SinkWriter, error) // creates w at Open, when set
	w         SinkWriter
	tpc       TwoPhaseCommitWriter // w, when it commits in two phases
	flusher   FlushingWriter       // w, when it buffers
	emitter   CommittableEmitter   // w, when a committer downstream commits for it
	ctx       context.Context

	// Set by the runtime when the job checkpoints. A two-phase-commit
	// writer then pre-commits at every barrier and commits on completion;
	// its Finish is deferred until the final checkpoint committed.
	checkpointing bool
	emits         bool // WithCommittableEmitter: the writer will be a CommittableEmitter
	finished      bool
	prepared      []preparedCommit // not yet committed, by checkpoint ID
	restored      []preparedCommit // to commit when a lazily created writer exists
	restoring     bool             // the job started from a checkpoint
	toDelete      []preparedCommit // committed since the previous snapshot, still in the state
	fault         FaultFunc        // Config.Fault, set with checkpointing
	notNull       *notNullEnforcer // WithNotNull; nil without NOT NULL columns
	log           LogFunc          // Config.Log
	metrics       *OperatorMetrics

	// What the commit of the restored committables found, for the job's
	// restoreVerdict: committables with output that are committed, and the
	// commit calls that found aborted ones.
	restoredCommitted int
	restoredLosses    []restoreLoss
}

// SinkOption configures a sink operator.
type SinkOption func(*sink)

// WithCommittableEmitter declares, for NewSinkOperatorFunc, that the writer
// it creates is a CommittableEmitter: the operator then keeps no state
// (its committables go downstream to the committer, which keeps them).
// Open fails if the writer turns out to be another kind.
func WithCommittableEmitter() SinkOption {
	return func(s *sink) { s.emits = true }
}

// preparedCommit is what PrepareCommit returned at one barrier.
type preparedCommit struct {
	id CheckpointID
	cs []Committable
}

// NewSinkOperator returns the operator that writes its input to w: Open,
// Write per batch, Finish at end of input, Close. Watermarks end here.
//
// With checkpointing on, a FlushingWriter is flushed at every barrier, and a
// TwoPhaseCommitWriter pre-commits at every barrier (its committables are
// stored in the checkpoint under KeyGroupNone), commits on completion, and
// commits the restored committables again before it opens after a restore.
// Its Finish is called only after the final checkpoint committed, so
// everything written reaches the final checkpoint's pre-commit.
func NewSinkOperator(w SinkWriter, opts ...SinkOption) Operator {
	s := &sink{}
	s.setWriter(w)
	for _, o := range opts {
		o(s)
	}
	return s
}

// NewSinkOperatorFunc is NewSinkOperator for writers that need to know their
// subtask: newWriter is called at Open. Until then the runtime cannot tell
// whether the writer commits in two phases, so with checkpointing on it
// keeps state for the sink either way (empty unless it does); committables
// restored for it are committed as soon as the writer exists, before the
// writer opens.
func NewSinkOperatorFunc(newWriter func(subtask, parallelism int) (SinkWriter, error), opts ...SinkOption) Operator {
	s := &sink{newWriter: newWriter}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *sink) setWriter(w SinkWriter) {
	s.w = w
	s.tpc, _ = w.(TwoPhaseCommitWriter)
	s.flusher, _ = w.(FlushingWriter)
	s.emitter, _ = w.(CommittableEmitter)
	s.giveLog()
}

// giveLog hands the job's log to a writer that reports to it.
func (s *sink) giveLog() {
	if lr, ok := s.w.(LogReceiver); ok && s.log != nil {
		lr.SetLog(s.log)
	}
}

// withOutput counts the committables that carry output.
func (s *sink) withOutput(cs []Committable) int {
	sz, ok := s.w.(CommittableSizer)
	if !ok {
		return len(cs)
	}
	n := 0
	for _, c := range cs {
		if sz.HasOutput(c) {
			n++
		}
	}
	return n
}

// joinCheckpointing implements barrierSink.
func (s *sink) joinCheckpointing(fault FaultFunc, log LogFunc, m *OperatorMetrics) bool {
	s.checkpointing = true
	s.fault, s.log, s.metrics = fault, log, m
	if s.w != nil {
		s.giveLog()
	}
	return s.maybeTwoPhase()
}

// flushAtBarrier implements barrierSink.
func (s *sink) flushAtBarrier() error { return s.flush() }

// takeRestoreReport implements barrierSink.
func (s *sink) takeRestoreReport() (int, []restoreLoss) {
	c, l := s.restoredCommitted, s.restoredLosses
	s.restoredCommitted, s.restoredLosses = 0, nil
	return c, l
}

// maybeTwoPhase reports whether the sink may commit in two phases (its
// writer does, or does not exist yet).
func (s *sink) maybeTwoPhase() bool {
	return s.tpc != nil || (s.w == nil && s.newWriter != nil && !s.emits)
}

func (s *sink) Open(ctx *OperatorContext) error {
	s.ctx = ctx.Ctx
	if s.notNull != nil {
		s.notNull.open(ctx)
	}
	s.metrics = ctx.Metrics
	if ctx.Log != nil {
		s.log = ctx.Log
		if s.w != nil {
			s.giveLog()
		}
	}
	if s.w == nil {
		w, err := s.newWriter(ctx.Subtask, ctx.Parallelism)
		if err != nil {
			return err
		}
		if w == nil {
			return errors.New("no sink writer")
		}
		s.setWriter(w)
		if s.emits && s.emitter == nil {
			return fmt.Errorf("internal error: the sink writer %T was declared a CommittableEmitter but is not one", w)
		}
	}
	if len(s.restored) > 0 && s.tpc == nil {
		return errors.New("the restored checkpoint holds committables for a sink whose writer does not commit in two phases")
	}
	if s.restoring && s.tpc != nil {
		if err := s.commitRestored(); err != nil {
			return err
		}
	}
	return s.w.Open(s.ctx)
}

func (s *sink) ProcessBatch(_ int, b *types.Batch, _ Output) error {
	if s.notNull != nil {
		var err error
		if b, err = s.notNull.check(b); err != nil || b.Len() == 0 {
			return err
		}
	}
	return s.w.Write(s.ctx, b)
}

func (s *sink) ProcessWatermark(int64, Output) error { return nil }
func (s *sink) Close() error {
	if s.w == nil {
		return nil
	}
	return s.w.Close()
}

func (s *sink) Finish(out Output) error {
	if s.notNull != nil {
		s.notNull.finish()
	}
	if s.emitter != nil && !s.checkpointing {
		// Without checkpoints the committer commits at its end of input
		// what arrives here; with them, the final barrier carries it.
		if err := s.emit(EndOfInputCheckpoint, out); err != nil {
			return err
		}
	}
	if s.tpc != nil && s.checkpointing {
		return nil // finishDeferred, after the final checkpoint
	}
	return s.w.Finish(s.ctx)
}

// PrepareSnapshotPreBarrier implements PreBarrierOperator: a
// CommittableEmitter's committables of checkpoint id go to the committer
// ahead of the barrier.
func (s *sink) PrepareSnapshotPreBarrier(id CheckpointID, out Output) error {
	if s.emitter == nil {
		return nil
	}
	return s.emit(id, out)
}

// emit hands the emitter's committables downstream, one row each.
func (s *sink) emit(id CheckpointID, out Output) error {
	cs, err := s.emitter.PrepareCommittables(id)
	if err != nil {
		return fmt.Errorf("prepare committables: %w", err)
	}
	if len(cs) == 0 {
		return nil
	}
	b := types.NewBatch(1, len(cs))
	for _, c := range cs {
		b.AppendRow(types.Insert, types.Row{types.Bytes(c)})
	}
	return out.Push(b)
}

// CommittablesOf returns the committables a committer's input batch holds
// (the rows a CommittableEmitter's sink operator emitted).
func CommittablesOf(b *types.Batch) ([]Committable, error) {
	cs := make([]Committable, 0, b.Len())
	for i, r := range b.Rows {
		if len(r) != 1 || r[0].K != types.KindBytes || b.Kinds[i] != types.Insert {
			return nil, fmt.Errorf("internal error: a committer got a row that is not a committable (%d columns, %s)", len(r), b.Kinds[i])
		}
		cs = append(cs, Committable(r[0].S))
	}
	return cs, nil
}

// finishDeferred finishes a two-phase-commit writer once the final
// checkpoint committed everything it wrote.
func (s *sink) finishDeferred() error {
	if s.tpc == nil || s.finished {
		return nil
	}
	s.finished = true
	return s.w.Finish(s.ctx)
}

// flush flushes a buffering writer at a barrier.
func (s *sink) flush() error {
	if s.flusher == nil {
		return nil
	}
	return s.flusher.Flush(s.ctx)
}

// committablePrefix starts the state keys of committables:
// "committable/<checkpoint id>/<index>".
const committablePrefix = "committable/"

func committableKey(id CheckpointID, n int) []byte {
	return fmt.Appendf(nil, "%s%d/%d", committablePrefix, id, n)
}

// SnapshotState pre-commits at barrier id and stores the committables not
// yet committed.
//
// The fault points before-precommit and after-precommit surround the flush
// and the pre-commit (for a writer that only flushes, the flush is its
// pre-commit).
func (s *sink) SnapshotState(id CheckpointID, w StateWriter) error {
	fault(s.fault, FaultBeforePreCommit, id)
	if err := s.flush(); err != nil {
		return err
	}
	if s.tpc == nil {
		fault(s.fault, FaultAfterPreCommit, id)
		return nil
	}
	cs, err := s.tpc.PrepareCommit(id)
	if err != nil {
		return fmt.Errorf("prepare commit: %w", err)
	}
	fault(s.fault, FaultAfterPreCommit, id)
	var fresh []preparedCommit
	if len(cs) > 0 {
		fresh = []preparedCommit{{id: id, cs: cs}}
		s.prepared = append(s.prepared, fresh[0])
	}
	if w.Full() {
		fresh = s.prepared
	} else {
		for _, p := range s.toDelete {
			for n := range p.cs {
				if err := w.Delete(KeyGroupNone, committableKey(p.id, n)); err != nil {
					return err
				}
			}
		}
	}
	s.toDelete = s.toDelete[:0]
	for _, p := range fresh {
		for n, c := range p.cs {
			if err := w.Put(KeyGroupNone, committableKey(p.id, n), c); err != nil {
				return err
			}
		}
	}
	return nil
}

// RestoreState commits the committables of the restored checkpoint again
// (commit is idempotent): their checkpoint completed, but the commit may
// not have happened before the failure.
func (s *sink) RestoreState(r StateReader) error {
	if !s.maybeTwoPhase() {
		return nil
	}
	var restored []preparedCommit
	err := r.Each(func(kg int, key, value []byte) error {
		if kg != KeyGroupNone || !bytes.HasPrefix(key, []byte(committablePrefix)) {
			return nil
		}
		var id CheckpointID
		var n int
		if _, err := fmt.Sscanf(string(key[len(committablePrefix):]), "%d/%d", &id, &n); err != nil || n < 0 {
			return fmt.Errorf("bad committable key %q in the restored state", key)
		}
		i := sort.Search(len(restored), func(i int) bool { return restored[i].id >= id })
		if i == len(restored) || restored[i].id != id {
			restored = slices.Insert(restored, i, preparedCommit{id: id})
		}
		p := &restored[i]
		for len(p.cs) <= n {
			p.cs = append(p.cs, nil)
		}
		if p.cs[n] != nil {
			// A restore at another parallelism hands this subtask the
			// committables of several old subtasks, numbered alike.
			p.cs = append(p.cs, Committable(bytes.Clone(value)))
			return nil
		}
		p.cs[n] = Committable(bytes.Clone(value))
		return nil
	})
	if err != nil {
		return err
	}
	s.restored, s.restoring = restored, true
	if s.tpc == nil {
		return nil // the writer is created at Open, which commits them
	}
	return s.commitRestored()
}

// commitRestored commits the restored committables before the writer opens.
// With none, it still calls Commit(nil): the writer learns it runs after a
// restore and can clear what an earlier attempt left behind.
func (s *sink) commitRestored() error {
	s.restoring = false
	if len(s.restored) == 0 {
		return s.tpc.Commit(nil)
	}
	for _, p := range s.restored {
		err := s.tpc.Commit(p.cs)
		var ae *AbortedCommitError
		switch {
		case err == nil:
			s.restoredCommitted += s.withOutput(p.cs)
		case errors.As(err, &ae):
			// Decided job-wide once every task restored (restoreVerdict).
			s.restoredCommitted += ae.Committed
			s.restoredLosses = append(s.restoredLosses, restoreLoss{sink: s, id: p.id, err: ae, metrics: s.metrics})
		default:
			return fmt.Errorf("commit restored committables of checkpoint %d: %w", p.id, err)
		}
	}
	// Committed: drop them from the next (incremental) snapshot.
	s.toDelete = append(s.toDelete, s.restored...)
	s.restored = nil
	return nil
}

// NotifyCheckpointComplete commits what was prepared at barriers ≤ id.
// The fault point during-commit follows each commit: the first subtask to
// get there has committed, the others may not have.
func (s *sink) NotifyCheckpointComplete(id CheckpointID) error {
	n := 0
	for _, p := range s.prepared {
		if p.id > id {
			break
		}
		if err := s.tpc.Commit(p.cs); err != nil {
			if err := s.commitLost(p.id, err); err != nil {
				return err
			}
		}
		s.toDelete = append(s.toDelete, p)
		n++
		fault(s.fault, FaultDuringCommit, id)
	}
	s.prepared = slices.Delete(s.prepared, 0, n)
	return nil
}

// NotifyCheckpointAborted keeps the committables: the next completed
// checkpoint commits them.
func (s *sink) NotifyCheckpointAborted(CheckpointID) {}
