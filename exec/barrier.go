package exec

import (
	"errors"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/state/kv"
)

// The task side of checkpointing: state instances, snapshots, barrier
// alignment and the coordinator's control messages. The protocol is
// described in coordinator.go.

// taskCheckpointing is a task's checkpointing state, used only by the
// task's goroutine.
type taskCheckpointing struct {
	// insts[i] is the state of chained operator i, nil when it has none.
	insts   []*instance
	srcInst *instance          // the source reader's position
	reader  CheckpointedReader // with srcInst
	// positions are the reader's positions of checkpoints not yet
	// completed or aborted, for a CheckpointCompleteReader.
	positions []readerPosition
	sinks     []barrierSink // two-phase-commit sinks (deferred Finish)

	open        int          // input channels not ended
	aligning    []alignment  // barriers seen on some channels, by ID
	lastBarrier CheckpointID // newest checkpoint this task snapshotted at a barrier
	held        []element    // elements of blocked channels
	ready       []element    // released elements, served before new input

	ended    bool      // a head's input ended (its chain finished)
	drained  bool      // end-of-input was sent after the final barrier
	deferred []ctrlMsg // triggers that wait until drained
	// postponed are triggers a head task holds while its reader cannot
	// be checkpointed (CheckpointHolder), taken in order once it can.
	postponed []ctrlMsg
	finished  bool // the final checkpoint completed: the task ends
}

// barrierSink is an operator the runtime drives at barriers beyond its
// state: the sink operator (sink.go), which flushes or pre-commits there,
// commits when a checkpoint completes and defers its Finish until the
// final checkpoint committed.
type barrierSink interface {
	// joinCheckpointing tells it that the job checkpoints, with the job's
	// fault hook, log and the operator's metrics; it reports whether it
	// may commit in two phases (then it keeps checkpointed state).
	joinCheckpointing(fault FaultFunc, log LogFunc, m *OperatorMetrics) (twoPhase bool)
	// flushAtBarrier flushes a buffering writer of a sink without state.
	flushAtBarrier() error
	// finishDeferred finishes it once the final checkpoint committed.
	finishDeferred() error
	// takeRestoreReport hands over what the commit of the restored
	// committables found, for the job's restore verdict (verdict.go).
	takeRestoreReport() (committed int, losses []restoreLoss)
}

// instance is one operator instance's state.
type instance struct {
	id    OperatorID
	op    CheckpointedOperator // nil for a source reader
	state InstanceState
}

// alignment is a checkpoint whose barrier arrived on some channels.
type alignment struct {
	id    CheckpointID
	final bool
}

// readerPosition is a source position taken at checkpoint id.
type readerPosition struct {
	id  CheckpointID
	pos []byte
}

// sealedInstance is a sealed snapshot on its way to the uploader.
type sealedInstance struct {
	id     OperatorID
	index  int // the operator's position in the chain; -1: the source reader
	sealed SealedState
	sync   time.Duration
	size   *kv.Sizes // a keyed instance's state size
	// name describes the operator; states are a keyed instance's declared
	// states (both recorded in the checkpoint for inspection).
	name   string
	states []kv.Declaration
}

func (t *task) operatorID(i int) OperatorID {
	if i < len(t.v.States) && t.v.States[i] != nil && t.v.States[i].ID != "" {
		return OperatorID(t.v.States[i].ID)
	}
	return OperatorID(fmt.Sprintf("v%d-%d", t.v.ID, i))
}

func (t *task) sourceID() OperatorID {
	if s := t.v.SourceState; s != nil && s.ID != "" {
		return OperatorID(s.ID)
	}
	return OperatorID(fmt.Sprintf("v%d-source", t.v.ID))
}

// openStates opens the state of every stateful chained operator and, when
// the job restores, replays it into the operator (before Open).
func (t *task) openStates() error {
	cfg := t.cfg.Checkpointing
	t.cp.insts = make([]*instance, len(t.ops))
	for i, op := range t.ops {
		if s, ok := op.(barrierSink); ok {
			if !s.joinCheckpointing(t.cfg.Fault, t.cfg.Log, t.metrics[i]) {
				continue // stateless: only flushed at barriers
			}
			t.cp.sinks = append(t.cp.sinks, s)
		}
		if t.keyed[i] != nil {
			continue // the runtime snapshots its backend
		}
		co, ok := op.(CheckpointedOperator)
		if !ok {
			if _, stateless := op.(StatelessOperator); stateless {
				continue
			}
			return t.wrapOp(i, fmt.Errorf("operator %s (%T) neither keeps keyed state (exec.KeyedOperator) nor takes part in checkpoints (exec.CheckpointedOperator) nor declares that it has no state (exec.StatelessOperator); a restore would lose what it holds",
				t.opName(i), op))
		}
		id := t.operatorID(i)
		st, err := cfg.Store.OpenInstance(id, t.subtask, t.v.Parallelism)
		if err != nil {
			return t.wrapOp(i, fmt.Errorf("open state of %s: %w", id, err))
		}
		t.cp.insts[i] = &instance{id: id, op: co, state: st}
		if cfg.RestoreID <= 0 {
			continue
		}
		if r, _, ok := st.Restored(); ok {
			if err := co.RestoreState(r); err != nil {
				return t.wrapOp(i, fmt.Errorf("restore state of %s from checkpoint %d: %w", id, cfg.RestoreID, err))
			}
		}
	}
	return nil
}

// openReaderState opens a checkpointed reader's state and restores its
// position (before the reader opens). A reader that cannot say where it is
// is refused.
func (t *task) openReaderState(reader SourceReader) error {
	cr, ok := reader.(CheckpointedReader)
	if !ok {
		// A reader without a position would read its input again from the
		// start after a restore: duplicates nobody asked for.
		return fmt.Errorf("source reader %T does not record its position in checkpoints (exec.CheckpointedReader); a restore would read its input again", reader)
	}
	cfg := t.cfg.Checkpointing
	id := t.sourceID()
	st, err := cfg.Store.OpenInstance(id, t.subtask, t.v.Parallelism)
	if err != nil {
		return fmt.Errorf("open state of %s: %w", id, err)
	}
	t.cp.srcInst = &instance{id: id, state: st}
	t.cp.reader = cr
	if cfg.RestoreID <= 0 {
		return nil
	}
	_, pos, ok := st.Restored()
	if rp, isRP := st.(RescaledPositions); ok && isRP {
		if ps, rescaled := rp.RestoredPositions(); rescaled {
			m, canMerge := reader.(PositionMerger)
			if !canMerge {
				return fmt.Errorf("restore source position from checkpoint %d: the job's parallelism changed and source reader %T cannot reassign its position to other subtasks; restore it with its former parallelism", cfg.RestoreID, reader)
			}
			merged, err := m.MergePositions(ps)
			if err != nil {
				return fmt.Errorf("restore source position from checkpoint %d at another parallelism: %w", cfg.RestoreID, err)
			}
			pos = merged
		}
	}
	if ok && pos != nil {
		if err := cr.RestorePosition(pos); err != nil {
			return fmt.Errorf("restore source position from checkpoint %d: %w", cfg.RestoreID, err)
		}
	}
	return nil
}

// closeStates closes every opened instance state.
func (t *task) closeStates() error {
	var first error
	close := func(in *instance) {
		if in == nil {
			return
		}
		if err := in.state.Close(); err != nil && first == nil {
			first = fmt.Errorf("close state of %s: %w", in.id, err)
		}
	}
	close(t.cp.srcInst)
	for _, in := range t.cp.insts {
		close(in)
	}
	t.cp.srcInst, t.cp.insts = nil, nil
	return first
}

// preBarrier lets the chain's PreBarrierOperators emit what belongs to
// checkpoint id, in chain order, so that it flows through the rest of the
// chain and out ahead of the barrier.
func (t *task) preBarrier(id CheckpointID) error {
	for i, op := range t.ops {
		if p, ok := op.(PreBarrierOperator); ok {
			if err := p.PrepareSnapshotPreBarrier(id, t.outs[i]); err != nil {
				return t.wrapOp(i, fmt.Errorf("checkpoint %d: prepare snapshot pre-barrier: %w", id, err))
			}
		}
	}
	return nil
}

// checkpoint is the synchronous part of checkpoint id: snapshot the source
// position and the chain, seal every instance and hand the sealed images to
// an uploader. An error here fails the task.
func (t *task) checkpoint(id CheckpointID) error {
	start := time.Now()
	var sealed []sealedInstance
	fail := func(err error) error {
		for _, s := range sealed {
			s.sealed.Discard()
		}
		return fmt.Errorf("checkpoint %d: %w", id, err)
	}
	if in := t.cp.srcInst; in != nil {
		pos, err := t.cp.reader.SnapshotPosition()
		if err != nil {
			return fail(fmt.Errorf("snapshot source position: %w", err))
		}
		ss, err := in.state.Seal(id, pos)
		if err != nil {
			return fail(fmt.Errorf("seal state of %s: %w", in.id, err))
		}
		if _, ok := t.cp.reader.(CheckpointCompleteReader); ok {
			t.cp.positions = append(t.cp.positions, readerPosition{id: id, pos: pos})
		}
		sealed = append(sealed, sealedInstance{id: in.id, index: -1, sealed: ss, sync: time.Since(start)})
	}
	for i, op := range t.ops {
		if t.keyed[i] != nil {
			t0 := time.Now()
			ss, err := t.snapshotKeyed(i, id)
			if err != nil {
				return fail(t.wrapOp(i, err))
			}
			sync := time.Since(t0)
			// Measured on the task's goroutine, which owns the backend,
			// after the seal, so that rocksdb's estimate covers what the
			// seal wrote into the DB (in SSTs, or still being flushed). (Part of the task's pause, not of the
			// instance's sync time: O(1) for hashmap, O(cached entries +
			// SSTs) for rocksdb.)
			size := t.reportStateSize(i)
			sealed = append(sealed, sealedInstance{id: t.keyed[i].id, index: i, sealed: ss, sync: sync, size: &size,
				name: t.opName(i), states: t.keyed[i].b.Declarations()})
			continue
		}
		in := t.cp.insts[i]
		if in == nil {
			if s, ok := op.(barrierSink); ok {
				if err := s.flushAtBarrier(); err != nil {
					return fail(t.wrapOp(i, fmt.Errorf("flush: %w", err)))
				}
			}
			continue
		}
		t0 := time.Now()
		if err := in.op.SnapshotState(id, in.state.Writer()); err != nil {
			return fail(t.wrapOp(i, fmt.Errorf("snapshot state: %w", err)))
		}
		ss, err := in.state.Seal(id, nil)
		if err != nil {
			return fail(t.wrapOp(i, fmt.Errorf("seal state of %s: %w", in.id, err)))
		}
		sealed = append(sealed, sealedInstance{id: in.id, index: i, sealed: ss, sync: time.Since(t0), name: t.opName(i)})
	}
	t.upload(id, sealed, time.Since(start))
	return nil
}

// upload persists sealed snapshots off the task's goroutine and
// acknowledges the checkpoint to the coordinator. A failed upload declines
// the checkpoint.
func (t *task) upload(id CheckpointID, sealed []sealedInstance, sync time.Duration) {
	c := t.coord
	if len(sealed) == 0 {
		c.post(coordMsg{kind: msgAck, task: t.index, id: id, sync: sync})
		return
	}
	name := t.String()
	t.job.bg.Add(1)
	go func() {
		defer t.job.bg.Done()
		acks := make([]InstanceAck, 0, len(sealed))
		var err error
		for _, s := range sealed {
			if err != nil {
				s.sealed.Discard()
				continue
			}
			start := time.Now()
			var ack InstanceAck
			ack, err = s.sealed.Persist(t.ctx)
			s.sealed.Discard()
			if err != nil {
				err = fmt.Errorf("%s: persist state of %s: %w", name, s.id, err)
				continue
			}
			if ack.Op == "" {
				ack.Op, ack.Subtask = s.id, t.subtask
			}
			ack.SyncDuration = s.sync
			if s.size != nil {
				ack.StateSize = s.size
			}
			ack.Name, ack.States = s.name, s.states
			ack.Vertex, ack.Index = t.v.ID, s.index
			if ack.AsyncDuration == 0 {
				ack.AsyncDuration = time.Since(start)
			}
			acks = append(acks, ack)
		}
		c.post(coordMsg{kind: msgAck, task: t.index, id: id, acks: acks, sync: sync, err: err})
	}()
}

// decline tells the coordinator that this task will not take checkpoint id.
func (t *task) decline(id CheckpointID, reason error) {
	t.coord.post(coordMsg{kind: msgAck, task: t.index, id: id, err: fmt.Errorf("%s: %w", t, reason)})
}

// serveControl handles the coordinator's queued messages.
func (t *task) serveControl() error {
	t.ctrlBuf = t.ctrl.take(t.ctrlBuf)
	for _, m := range t.ctrlBuf {
		if err := t.onControl(m); err != nil {
			return err
		}
	}
	clear(t.ctrlBuf)
	return nil
}

func (t *task) onControl(m ctrlMsg) error {
	switch m.kind {
	case ctrlTrigger:
		if t.cp.drained {
			// After the final barrier nothing is in flight: a snapshot
			// of this task alone is consistent.
			return t.checkpoint(m.id)
		}
		if !t.head {
			t.cp.deferred = append(t.cp.deferred, m)
			return nil
		}
		if h, ok := t.cp.reader.(CheckpointHolder); ok && !m.final {
			if reason := h.HoldCheckpoint(); reason != "" {
				t.job.log("[INFO] Checkpoint %d of job '%s' is held at %s: %s", m.id, t.job.name, t, reason)
				t.cp.postponed = append(t.cp.postponed, m)
				return nil
			}
		}
		if err := t.takePostponed(); err != nil {
			return err
		}
		return t.headCheckpoint(m.id, m.final)
	case ctrlComplete:
		return t.notifyComplete(m.id, m.last)
	case ctrlAborted:
		t.dropPositions(func(p readerPosition) bool { return p.id == m.id })
		for _, op := range t.ops {
			if l, ok := op.(CheckpointListener); ok {
				l.NotifyCheckpointAborted(m.id)
			}
		}
	}
	return nil
}

// takePostponed takes the checkpoints held for a CheckpointHolder once its
// reader no longer holds them; called between reads.
func (t *task) takePostponed() error {
	if len(t.cp.postponed) == 0 {
		return nil
	}
	if h, ok := t.cp.reader.(CheckpointHolder); ok && h.HoldCheckpoint() != "" {
		return nil
	}
	held := t.cp.postponed
	t.cp.postponed = nil
	for _, m := range held {
		if err := t.headCheckpoint(m.id, m.final); err != nil {
			return err
		}
	}
	return nil
}

// headCheckpoint takes checkpoint id at a head task (between reads) and
// sends its barrier; after the final one it ends its outputs.
func (t *task) headCheckpoint(id CheckpointID, final bool) error {
	if final && !t.cp.ended {
		return fmt.Errorf("checkpoint %d: final checkpoint triggered before the end of input", id)
	}
	if err := t.preBarrier(id); err != nil {
		return err
	}
	if err := t.checkpoint(id); err != nil {
		return err
	}
	if err := t.send.broadcast(element{kind: elemBarrier, ckpt: id, final: final}); err != nil {
		return err
	}
	if final {
		return t.drain()
	}
	return nil
}

// drain ends the outputs after the final barrier and serves the triggers
// that waited for it.
func (t *task) drain() error {
	if err := t.send.broadcast(element{kind: elemEnd}); err != nil {
		return err
	}
	t.cp.drained = true
	deferred := t.cp.deferred
	t.cp.deferred = nil
	for _, m := range deferred {
		if err := t.checkpoint(m.id); err != nil {
			return err
		}
	}
	return nil
}

// notifyComplete tells the chain that checkpoint id completed; after the
// final checkpoint it gives two-phase-commit sinks their deferred Finish and
// lets the task end.
func (t *task) notifyComplete(id CheckpointID, last bool) error {
	if err := t.notifyReader(id); err != nil {
		return err
	}
	for i, op := range t.ops {
		if l, ok := op.(CheckpointListener); ok {
			if err := l.NotifyCheckpointComplete(id); err != nil {
				return t.wrapOp(i, fmt.Errorf("checkpoint %d complete: %w", id, err))
			}
		}
	}
	if !last {
		return nil
	}
	for _, s := range t.cp.sinks {
		if err := s.finishDeferred(); err != nil {
			return fmt.Errorf("finish sink: %w", err)
		}
	}
	t.cp.finished = true
	return nil
}

// notifyReader hands a CheckpointCompleteReader the position of completed
// checkpoint id; positions of older checkpoints are subsumed.
func (t *task) notifyReader(id CheckpointID) error {
	var pos []byte
	found := false
	for _, p := range t.cp.positions {
		if p.id == id {
			pos, found = p.pos, true
		}
	}
	t.dropPositions(func(p readerPosition) bool { return p.id <= id })
	if !found {
		return nil
	}
	if err := t.cp.reader.(CheckpointCompleteReader).NotifyPositionComplete(id, pos); err != nil {
		return fmt.Errorf("source reader: checkpoint %d complete: %w", id, err)
	}
	return nil
}

func (t *task) dropPositions(drop func(readerPosition) bool) {
	kept := t.cp.positions[:0]
	for _, p := range t.cp.positions {
		if !drop(p) {
			kept = append(kept, p)
		}
	}
	clear(t.cp.positions[len(kept):])
	t.cp.positions = kept
}

// endHead is what a head task does at the end of its input with
// checkpointing on: finish the chain, send what it holds, and serve the
// coordinator until the final checkpoint completed.
func (t *task) endHead() error {
	if err := t.finishOperators(); err != nil {
		return err
	}
	if err := t.send.flush(); err != nil {
		return err
	}
	t.cp.ended = true
	t.coord.post(coordMsg{kind: msgHeadEnded, task: t.index})
	for !t.cp.finished {
		select {
		case <-t.ctrl.wake:
			if err := t.serveControl(); err != nil {
				return err
			}
		case <-t.ctx.Done():
			return t.ctx.Err()
		}
	}
	return nil
}

// onBarrier handles barrier id arriving on channel c.
func (t *task) onBarrier(c *inChannel, id CheckpointID, final bool) error {
	c.barrier = id
	if id <= t.cp.lastBarrier {
		return nil // superseded or already taken
	}
	if n := len(t.cp.aligning); n > 0 && id < t.cp.aligning[n-1].id && !t.aligningID(id) {
		return nil // a checkpoint given up in favour of a newer one
	}
	exactlyOnce := t.cfg.Checkpointing.Mode == ExactlyOnce
	if exactlyOnce && len(t.cp.aligning) > 0 && t.cp.aligning[0].id < id {
		// A newer checkpoint overtook the one being aligned (its barrier
		// never reached some channel): give the older one up.
		old := t.cp.aligning[0].id
		t.cp.aligning = t.cp.aligning[:0]
		t.release()
		t.decline(old, fmt.Errorf("checkpoint %d was superseded by checkpoint %d before its barriers aligned", old, id))
	}
	if exactlyOnce {
		c.blocked = true
	}
	if n := len(t.cp.aligning); n == 0 || t.cp.aligning[n-1].id < id {
		t.cp.aligning = append(t.cp.aligning, alignment{id: id, final: final})
	}
	return t.completeAlignments()
}

func (t *task) aligningID(id CheckpointID) bool {
	for _, a := range t.cp.aligning {
		if a.id == id {
			return true
		}
	}
	return false
}

// onChannelEndCheckpointing lets an ended channel count as having
// delivered every barrier.
func (t *task) onChannelEndCheckpointing() error {
	if t.coord == nil {
		return nil
	}
	if t.cp.open == 0 && !t.cp.drained {
		return errors.New("input ended without the final checkpoint barrier")
	}
	return t.completeAlignments()
}

// completeAlignments takes, in ID order, every checkpoint whose barrier
// has arrived on every channel that has not ended.
func (t *task) completeAlignments() error {
	for len(t.cp.aligning) > 0 {
		a := t.cp.aligning[0]
		for i := range t.inputs {
			if c := &t.inputs[i]; !c.ended && c.barrier < a.id {
				return nil
			}
		}
		t.cp.aligning = t.cp.aligning[1:]
		if err := t.aligned(a); err != nil {
			return err
		}
	}
	return nil
}

// aligned snapshots the chain at a barrier that arrived everywhere and
// forwards it. At the final barrier all input has been consumed: the chain
// finishes first, so that what Finish emits is covered by the checkpoint.
func (t *task) aligned(a alignment) error {
	t.cp.lastBarrier = a.id
	t.release()
	if a.final {
		if err := t.finishOperators(); err != nil {
			return err
		}
	}
	if err := t.preBarrier(a.id); err != nil {
		return err
	}
	if err := t.checkpoint(a.id); err != nil {
		return err
	}
	if err := t.send.broadcast(element{kind: elemBarrier, ckpt: a.id, final: a.final}); err != nil {
		return err
	}
	if a.final {
		return t.drain()
	}
	return nil
}

// release unblocks every channel; their held elements are served next, in
// the order they arrived.
func (t *task) release() {
	for i := range t.inputs {
		t.inputs[i].blocked = false
	}
	if len(t.cp.held) == 0 {
		return
	}
	t.cp.ready = append(t.cp.ready, t.cp.held...)
	clear(t.cp.held)
	t.cp.held = t.cp.held[:0]
}
