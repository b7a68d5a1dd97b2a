package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Checkpoint protocol (asynchronous barrier snapshotting, DESIGN.md §4).
//
// Trigger. The coordinator (one goroutine owned by the Job) picks the next
// checkpoint ID and posts "trigger n" to the control mailbox of every head
// task: sources, and the rare task that no channel reaches. A head takes the
// checkpoint between two reads: it snapshots the reader's position and its
// chain, then sends barrier n on every output channel after the rows it
// buffered, so a barrier splits each channel's data into before and after.
//
// Alignment. A task fed by channels snapshots its chain when barrier n has
// arrived on every channel that has not ended, then forwards barrier n. In
// EXACTLY_ONCE mode a channel that delivered barrier n is blocked until then:
// its later elements are held in the task (they keep their batches, so the
// channel's credits bound what is held) and replayed, in order, before
// anything else once the snapshot is taken. In AT_LEAST_ONCE mode nothing is
// blocked and several checkpoints may align at once. A barrier newer than
// the one being aligned supersedes it: the older checkpoint is declined
// (and aborted by the coordinator) and its blocked channels are released, so
// an aborted checkpoint never wedges a task. Barriers older than the last
// snapshot are dropped.
//
// Snapshot. The synchronous part runs on the task goroutine: the source
// position, then each stateful operator of the chain in order writes into
// its InstanceState (a two-phase-commit sink pre-commits here and stores its
// committables), and every instance is sealed. The sealed images go to an
// upload goroutine (owned by the Job) that persists them and acknowledges
// to the coordinator; the task goes on processing meanwhile.
//
// Completion. When every task acknowledged n, the coordinator calls
// Store.Complete, and posts "complete n" to every task, which notifies its
// CheckpointListeners; two-phase-commit sinks commit what they prepared at
// barriers ≤ n. A timeout, a declined snapshot, a failed upload or a failed
// Complete aborts n (Store.Abort, "aborted n" to every task) and counts as a
// failure; more than TolerableFailures consecutive failures fail the job.
// Synchronous snapshot errors fail the task, and with it the job.
//
// Final checkpoint (bounded input). With checkpointing on, end of input does
// not end the job at once, so that the last transaction of a
// two-phase-commit sink can commit:
//  1. A head that reaches the end of its input emits the maximum watermark,
//     finishes its chain, flushes, tells the coordinator, and keeps serving
//     triggers (snapshot, barrier) without sending end-of-input.
//  2. When every head has ended, the coordinator triggers the final
//     checkpoint f, once the checkpoints still pending then completed or
//     were aborted (so that f does not subsume one and count it as
//     failed). Heads send barrier f and then end-of-input.
//  3. A downstream task whose barrier f aligned has consumed all of its
//     input: it finishes its chain (Finish output travels ahead of the
//     barrier), snapshots, forwards barrier f and sends end-of-input.
//  4. Sinks pre-commit at f. After f completes, "complete f" carries a last
//     flag: tasks commit, a two-phase-commit sink's writer gets its deferred
//     Finish, and the task ends. Job.Wait returns after that.
//  5. If f is aborted (and failures are tolerable), the coordinator triggers
//     f' at every task directly: once a task passed f there is no data in
//     flight, so each task snapshots on its own (a task still waiting for
//     barrier f holds the trigger until it passed f).

// mailbox is a queue whose producers never block. The consumer waits on
// wake, then takes everything queued.
type mailbox[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
	// interrupt, when set, is called by the next push: a source blocked in
	// Read returns so that it serves the message between reads.
	interrupt context.CancelFunc
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{wake: make(chan struct{}, 1)} }

func (m *mailbox[T]) push(v T) {
	m.mu.Lock()
	m.items = append(m.items, v)
	if m.interrupt != nil {
		m.interrupt()
		m.interrupt = nil
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued, reusing buf.
func (m *mailbox[T]) take(buf []T) []T {
	m.mu.Lock()
	buf = append(buf[:0], m.items...)
	clear(m.items)
	m.items = m.items[:0]
	m.mu.Unlock()
	return buf
}

// arm sets the interrupt for the next push, or calls it at once when
// something is already queued.
func (m *mailbox[T]) arm(interrupt context.CancelFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.items) > 0 {
		interrupt()
		return
	}
	m.interrupt = interrupt
}

// ctrlKind is what the coordinator tells a task.
type ctrlKind uint8

const (
	ctrlTrigger  ctrlKind = iota // take checkpoint id (heads; direct snapshots after the end)
	ctrlComplete                 // checkpoint id completed; last: the job may end
	ctrlAborted                  // checkpoint id was aborted
)

type ctrlMsg struct {
	kind  ctrlKind
	id    CheckpointID
	final bool // ctrlTrigger: the final checkpoint
	last  bool // ctrlComplete: the final checkpoint (or its retry) completed
}

// coordMsgKind is what tasks and callers tell the coordinator.
type coordMsgKind uint8

const (
	msgAck       coordMsgKind = iota // a task's part of a checkpoint (or its decline)
	msgHeadEnded                     // a head task reached the end of its input
	msgTrigger                       // Job.TriggerCheckpoint
)

type coordMsg struct {
	kind  coordMsgKind
	task  int
	id    CheckpointID
	acks  []InstanceAck
	sync  time.Duration
	err   error // msgAck: the task declined the checkpoint
	reply chan<- triggerResult
}

type triggerResult struct {
	id  CheckpointID
	err error
}

// pendingCheckpoint is a triggered checkpoint waiting for acknowledgements.
type pendingCheckpoint struct {
	id        CheckpointID
	final     bool
	deadline  time.Time
	acked     []bool
	remaining int
	acks      []InstanceAck
	sync      time.Duration
	waiters   []chan<- triggerResult
}

// coordinator triggers checkpoints, collects acknowledgements, completes or
// aborts checkpoints and tells the tasks.
type coordinator struct {
	j       *Job
	ctx     context.Context
	cfg     CheckpointConfig
	tasks   []*task
	heads   []*task
	inbox   *mailbox[coordMsg]
	stopped chan struct{}

	pending     map[CheckpointID]*pendingCheckpoint
	nextID      CheckpointID
	lastTrigger time.Time
	lastDone    time.Time
	failures    int // consecutive
	headsEnded  int
	finalID     CheckpointID // first final checkpoint, 0 until triggered
	// finalDue: every head ended while other checkpoints were pending;
	// the final checkpoint is triggered when none is, and finalWaiters
	// (triggers asked for meanwhile) get its result.
	finalDue     bool
	finalWaiters []chan<- triggerResult
	done         bool      // the final checkpoint completed
	fault        FaultFunc // Config.Fault
}

func newCoordinator(j *Job, ctx context.Context, cfg CheckpointConfig, tasks []*task) *coordinator {
	c := &coordinator{
		j: j, ctx: ctx, cfg: cfg, tasks: tasks,
		inbox:   newMailbox[coordMsg](),
		stopped: make(chan struct{}),
		pending: map[CheckpointID]*pendingCheckpoint{},
		nextID:  cfg.NextID,
	}
	if len(tasks) > 0 {
		c.fault = tasks[0].cfg.Fault // every task carries the job's Config
	}
	for i, t := range tasks {
		t.index = i
		t.coord = c
		t.ctrl = newMailbox[ctrlMsg]()
		t.head = len(t.inputs) == 0
		if t.head {
			c.heads = append(c.heads, t)
		}
	}
	return c
}

func (c *coordinator) post(m coordMsg) { c.inbox.push(m) }

// run is the coordinator's goroutine. It returns when the final checkpoint
// completed or the job's context is done.
func (c *coordinator) run() {
	defer close(c.stopped)
	now := time.Now()
	c.lastTrigger, c.lastDone = now, now
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var msgs []coordMsg
	for !c.done {
		if at, ok := c.nextWake(); ok {
			timer.Reset(time.Until(at))
		} else {
			timer.Stop()
		}
		select {
		case <-c.ctx.Done():
			c.shutdown()
			return
		case <-c.inbox.wake:
			msgs = c.inbox.take(msgs)
			for _, m := range msgs {
				c.handle(m)
			}
			clear(msgs)
		case <-timer.C:
		}
		if c.done || c.ctx.Err() != nil {
			continue
		}
		now := time.Now()
		c.expire(now)
		if at, ok := c.nextPeriodic(); ok && !now.Before(at) {
			c.trigger(now, false, false)
		}
	}
}

// nextPeriodic returns when the next periodic checkpoint is due, if one may
// be triggered at all.
func (c *coordinator) nextPeriodic() (time.Time, bool) {
	if c.cfg.Interval <= 0 || c.finalID != 0 || c.finalDue || c.failures > c.cfg.TolerableFailures {
		return time.Time{}, false
	}
	if len(c.pending) >= c.cfg.MaxConcurrent || (c.cfg.MinPause > 0 && len(c.pending) > 0) {
		return time.Time{}, false
	}
	at := c.lastTrigger.Add(c.cfg.Interval)
	if p := c.lastDone.Add(c.cfg.MinPause); p.After(at) {
		at = p
	}
	return at, true
}

// nextWake is the earlier of the next periodic trigger and the earliest
// deadline of a pending checkpoint.
func (c *coordinator) nextWake() (time.Time, bool) {
	at, ok := c.nextPeriodic()
	for _, p := range c.pending {
		if !ok || p.deadline.Before(at) {
			at, ok = p.deadline, true
		}
	}
	return at, ok
}

func (c *coordinator) handle(m coordMsg) {
	switch m.kind {
	case msgHeadEnded:
		c.headsEnded++
		if c.headsEnded == len(c.heads) && c.finalID == 0 {
			c.finalDue = true
			c.triggerDueFinal()
		}
	case msgTrigger:
		if c.finalDue {
			c.finalWaiters = append(c.finalWaiters, m.reply)
			return
		}
		if c.finalID != 0 {
			// The job is finishing: the caller gets the final checkpoint.
			for _, p := range c.pending {
				if p.final {
					p.waiters = append(p.waiters, m.reply)
					return
				}
			}
			m.reply <- triggerResult{err: errors.New("checkpoint not taken: the job is finishing")}
			return
		}
		p := c.trigger(time.Now(), false, false)
		p.waiters = append(p.waiters, m.reply)
	case msgAck:
		p := c.pending[m.id]
		if p == nil {
			return // aborted or subsumed meanwhile
		}
		if m.err != nil {
			c.abort(p, m.err.Error())
			return
		}
		if p.acked[m.task] {
			return
		}
		p.acked[m.task] = true
		p.remaining--
		p.acks = append(p.acks, m.acks...)
		p.sync = max(p.sync, m.sync)
		if p.remaining == 0 {
			c.complete(p)
		}
	}
}

// trigger starts checkpoint nextID at the heads, or at every task when
// direct (the retry of a final checkpoint).
func (c *coordinator) trigger(now time.Time, final, direct bool) *pendingCheckpoint {
	p := &pendingCheckpoint{
		id: c.nextID, final: final, deadline: now.Add(c.cfg.Timeout),
		acked: make([]bool, len(c.tasks)), remaining: len(c.tasks),
	}
	c.nextID++
	c.pending[p.id] = p
	c.lastTrigger = now
	if c.cfg.OnTrigger != nil {
		c.cfg.OnTrigger(p.id, now, final)
	}
	targets := c.heads
	if direct {
		targets = c.tasks
	}
	for _, t := range targets {
		t.ctrl.push(ctrlMsg{kind: ctrlTrigger, id: p.id, final: final})
	}
	return p
}

func (c *coordinator) complete(p *pendingCheckpoint) {
	delete(c.pending, p.id)
	if err := c.cfg.Store.Complete(c.ctx, p.id, p.acks); err != nil {
		c.abort(p, fmt.Sprintf("completing the checkpoint failed: %v", err))
		return
	}
	c.failures = 0
	c.lastDone = time.Now()
	if c.cfg.OnComplete != nil {
		var async time.Duration
		for _, a := range p.acks {
			async = max(async, a.AsyncDuration)
		}
		c.cfg.OnComplete(p.id, p.acks, p.sync, async)
	}
	// Completed, and no task knows: nothing of p is committed yet.
	fault(c.fault, FaultAfterComplete, p.id)
	// Acknowledgements arrive in any order; an older checkpoint still
	// pending is subsumed by this one.
	for id, older := range c.pending {
		if id < p.id {
			delete(c.pending, id)
			c.cfg.Store.Abort(id)
			c.aborted(id, fmt.Sprintf("Checkpoint %d was subsumed by checkpoint %d.", id, p.id))
			c.notifyAborted(id)
			c.reply(older, triggerResult{id: id, err: fmt.Errorf("checkpoint %d was subsumed by checkpoint %d", id, p.id)})
		}
	}
	last := c.finalID != 0 && p.id >= c.finalID
	for _, t := range c.tasks {
		t.ctrl.push(ctrlMsg{kind: ctrlComplete, id: p.id, last: last})
	}
	c.reply(p, triggerResult{id: p.id})
	if last {
		c.done = true
		return
	}
	c.triggerDueFinal()
}

// triggerDueFinal triggers the final checkpoint once it is due and no
// other checkpoint is pending.
func (c *coordinator) triggerDueFinal() {
	if !c.finalDue || len(c.pending) > 0 {
		return
	}
	c.finalDue = false
	p := c.trigger(time.Now(), true, false)
	c.finalID = p.id
	p.waiters, c.finalWaiters = append(p.waiters, c.finalWaiters...), nil
}

// abort gives up checkpoint p and counts a failure.
func (c *coordinator) abort(p *pendingCheckpoint, reason string) {
	delete(c.pending, p.id)
	c.cfg.Store.Abort(p.id)
	c.aborted(p.id, reason)
	c.notifyAborted(p.id)
	c.failures++
	if c.failures <= c.cfg.TolerableFailures {
		c.j.log("[WARN] Checkpoint %d of job '%s' failed (%d consecutive failures, %d tolerated by 'execution.checkpointing.tolerable-failed-checkpoints'): %s",
			p.id, c.j.name, c.failures, c.cfg.TolerableFailures, reason)
	}
	if c.failures > c.cfg.TolerableFailures {
		err := fmt.Errorf("%w The latest checkpoint %d failed: %s", ErrTolerableFailuresExceeded, p.id, reason)
		c.reply(p, triggerResult{id: p.id, err: err})
		c.j.failJob(err)
		return
	}
	if p.final {
		retry := c.trigger(time.Now(), true, true)
		retry.waiters = p.waiters
		return
	}
	c.reply(p, triggerResult{id: p.id, err: fmt.Errorf("checkpoint %d aborted: %s", p.id, reason)})
	c.triggerDueFinal()
}

// aborted reports a checkpoint given up to the statistics.
func (c *coordinator) aborted(id CheckpointID, reason string) {
	if c.cfg.OnAbort != nil {
		c.cfg.OnAbort(id, reason)
	}
}

func (c *coordinator) notifyAborted(id CheckpointID) {
	for _, t := range c.tasks {
		t.ctrl.push(ctrlMsg{kind: ctrlAborted, id: id})
	}
}

func (c *coordinator) reply(p *pendingCheckpoint, r triggerResult) {
	for _, w := range p.waiters {
		w <- r // buffered, one result per waiter
	}
	p.waiters = nil
}

// expire aborts the checkpoints whose timeout passed.
func (c *coordinator) expire(now time.Time) {
	for _, p := range c.pending {
		if !now.Before(p.deadline) {
			c.abort(p, "Checkpoint expired before completing.")
		}
	}
}

// shutdown forgets the pending checkpoints when the job ends.
func (c *coordinator) shutdown() {
	for id, p := range c.pending {
		delete(c.pending, id)
		c.cfg.Store.Abort(id)
		c.aborted(id, "The job ended before the checkpoint completed.")
		c.reply(p, triggerResult{id: id, err: fmt.Errorf("checkpoint %d aborted: the job ended", id)})
	}
	for _, w := range c.finalWaiters {
		w <- triggerResult{err: errors.New("checkpoint not taken: the job ended")}
	}
	c.finalWaiters = nil
}

// TriggerCheckpoint triggers a checkpoint now, regardless of the interval
// and the limit of concurrent checkpoints, and waits until it completed (its
// completion notifications are then on their way to the tasks). When the
// job is finishing it waits for the final checkpoint instead.
func (j *Job) TriggerCheckpoint(ctx context.Context) (CheckpointID, error) {
	c := j.coord
	if c == nil {
		return 0, errors.New("checkpointing is not enabled for this job")
	}
	reply := make(chan triggerResult, 1)
	c.post(coordMsg{kind: msgTrigger, reply: reply})
	select {
	case r := <-reply:
		return r.id, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.stopped:
		select {
		case r := <-reply:
			return r.id, r.err
		default:
		}
		return 0, errors.New("checkpoint not taken: the job has ended")
	}
}

// withDefaults fills the zero fields of a checkpoint configuration.
func (cc CheckpointConfig) withDefaults() CheckpointConfig {
	if cc.Timeout <= 0 {
		cc.Timeout = DefaultCheckpointTimeout
	}
	if cc.MaxConcurrent <= 0 {
		cc.MaxConcurrent = DefaultMaxConcurrent
	}
	if cc.NextID <= 0 {
		cc.NextID = max(cc.RestoreID, 0) + 1
	}
	return cc
}

func (cc *CheckpointConfig) validate() error {
	switch {
	case cc.Store == nil:
		return errors.New("checkpointing needs a checkpoint store (state.checkpoints.dir)")
	case cc.Interval < 0:
		return fmt.Errorf("execution.checkpointing.interval must not be negative, got %v", cc.Interval)
	case cc.Timeout < 0:
		return fmt.Errorf("execution.checkpointing.timeout must be positive, got %v", cc.Timeout)
	case cc.MinPause < 0:
		return fmt.Errorf("execution.checkpointing.min-pause must not be negative, got %v", cc.MinPause)
	case cc.MaxConcurrent < 0:
		return fmt.Errorf("execution.checkpointing.max-concurrent-checkpoints must be at least 1, got %d", cc.MaxConcurrent)
	case cc.TolerableFailures < 0:
		return fmt.Errorf("execution.checkpointing.tolerable-failed-checkpoints must not be negative, got %d", cc.TolerableFailures)
	case cc.Mode != ExactlyOnce && cc.Mode != AtLeastOnce:
		return fmt.Errorf("execution.checkpointing.mode: unknown mode %d, want EXACTLY_ONCE or AT_LEAST_ONCE", cc.Mode)
	case cc.RestoreID < 0 || cc.NextID < 0:
		return fmt.Errorf("checkpoint IDs must not be negative (restore %d, next %d)", cc.RestoreID, cc.NextID)
	case cc.NextID > 0 && cc.NextID <= cc.RestoreID:
		return fmt.Errorf("the next checkpoint ID %d must come after the restored checkpoint %d", cc.NextID, cc.RestoreID)
	}
	return nil
}
