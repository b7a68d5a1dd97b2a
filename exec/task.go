package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/types"
)

// opError attributes an error to a chained operator, once, however many
// links it travels back through.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// chainLink is the Output of operator i (from) when operator i+1 (op) follows
// it in the chain: pushing is a direct call. The task's entry into the chain
// is a link without from.
type chainLink struct {
	from *OperatorMetrics
	op   Operator
	m    *OperatorMetrics
	name string // empty when errors need no operator name
	out  Output
	wm   int64
}

func (l *chainLink) Push(b *types.Batch) error { return l.process(0, b) }

func (l *chainLink) process(input int, b *types.Batch) error {
	n := int64(b.Len())
	if n == 0 {
		return nil
	}
	if l.from != nil {
		l.from.RowsOut.Add(n)
	}
	l.m.RowsIn.Add(n)
	if err := l.op.ProcessBatch(input, b, l.out); err != nil {
		return l.wrap(err)
	}
	return nil
}

func (l *chainLink) PushWatermark(wm int64) error {
	if wm <= l.wm {
		return nil
	}
	l.wm = wm
	l.m.CurrentWatermark.Set(wm)
	if err := l.op.ProcessWatermark(wm, l.out); err != nil {
		return l.wrap(err)
	}
	return nil
}

func (l *chainLink) wrap(err error) error {
	var oe *opError
	if l.name == "" || errors.As(err, &oe) {
		return err
	}
	return &opError{op: l.name, err: err}
}

// procTimer is a pending processing-time timer of operator op.
type procTimer struct {
	t  int64
	op int
}

// timerHeap is a min-heap of processing-time timers, coalesced per
// (time, operator).
type timerHeap struct {
	h       []procTimer
	pending map[procTimer]struct{}
}

func (th *timerHeap) push(pt procTimer) {
	if th.pending == nil {
		th.pending = make(map[procTimer]struct{})
	}
	if _, ok := th.pending[pt]; ok {
		return
	}
	th.pending[pt] = struct{}{}
	th.h = append(th.h, pt)
	i := len(th.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if th.h[p].t <= th.h[i].t {
			break
		}
		th.h[p], th.h[i] = th.h[i], th.h[p]
		i = p
	}
}

func (th *timerHeap) peek() (procTimer, bool) {
	if len(th.h) == 0 {
		return procTimer{}, false
	}
	return th.h[0], true
}

func (th *timerHeap) pop() procTimer {
	top := th.h[0]
	last := len(th.h) - 1
	th.h[0] = th.h[last]
	th.h = th.h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && th.h[l].t < th.h[m].t {
			m = l
		}
		if r < last && th.h[r].t < th.h[m].t {
			m = r
		}
		if m == i {
			break
		}
		th.h[m], th.h[i] = th.h[i], th.h[m]
		i = m
	}
	delete(th.pending, top)
	return top
}

// task runs one subtask of a vertex: its chain of operators, fed either by a
// source reader or by its inbound channels.
type task struct {
	job     *Job
	v       *Vertex
	subtask int
	cfg     Config
	ctx     context.Context

	ops    []Operator
	opened int
	// createErr is why the chain could not be created (reported by run).
	createErr error
	// keyed[i] is the keyed state of ops[i], nil when it keeps none;
	// budgets[i] its memory budget (rocksdb).
	keyed   []*keyedInstance
	budgets []int64
	metrics []*OperatorMetrics
	// outs[i] is the Output of ops[i].
	outs  []Output
	entry *chainLink // nil when the chain is empty
	fan   *fanOut
	send  *sender

	timers timerHeap

	// Inputs (non-source tasks).
	inbound chan element
	inputs  []inChannel
	valve   valve

	// times are its wait times (backpressure, idleness).
	times *taskTimes

	// Source tasks.
	srcRowsRead *Counter
	srcWM       *Gauge
	srcLag      *Gauge
	srcLeft     *Gauge

	// Checkpointing (coord is nil when it is off); see coordinator.go.
	coord   *coordinator
	ctrl    *mailbox[ctrlMsg]
	ctrlBuf []ctrlMsg
	index   int  // among the coordinator's tasks
	head    bool // triggered by the coordinator: no input channels
	cp      taskCheckpointing
}

// inChannel is the receiving side of a channel.
type inChannel struct {
	inputIndex int
	free       chan *types.Batch
	wm         int64
	idle       bool
	aligned    bool
	ended      bool
	// barrier is the newest checkpoint barrier the channel delivered;
	// blocked holds its elements back during an EXACTLY_ONCE alignment.
	barrier CheckpointID
	blocked bool
}

func (t *task) String() string {
	return fmt.Sprintf("%s (%d/%d)", t.v.Name, t.subtask+1, t.v.Parallelism)
}

// run is the body of the task's goroutine.
func (t *task) run() (err error) {
	defer func() {
		if cerr := t.closeOperators(); err == nil {
			err = cerr
		}
		if cerr := t.closeStates(); err == nil {
			err = cerr
		}
		if cerr := t.closeKeyedStates(); err == nil {
			err = cerr
		}
	}()
	if err := t.openOperators(); err != nil {
		return err
	}
	if t.v.Source != nil {
		return t.runSource()
	}
	return t.runInputs()
}

// createOperators creates the chain's operators (in Start, so that the
// job knows its keyed instances before any opens).
func (t *task) createOperators() error {
	t.ops = make([]Operator, len(t.v.Chain))
	for i, mk := range t.v.Chain {
		op, err := mk()
		if err != nil {
			return fmt.Errorf("create %s: %w", t.opName(i), err)
		}
		if op == nil {
			return fmt.Errorf("create %s: no operator", t.opName(i))
		}
		t.ops[i] = op
	}
	return nil
}

func (t *task) openOperators() error {
	if t.ops == nil && t.createErr == nil {
		t.createErr = t.createOperators()
	}
	if t.createErr != nil {
		return t.createErr
	}
	n := len(t.v.Chain)
	t.outs = make([]Output, n)
	if err := t.openKeyedStates(); err != nil {
		return err
	}
	if t.coord != nil {
		if err := t.openStates(); err != nil {
			return err
		}
	}
	t.fan = &fanOut{s: t.send, wm: MinWatermark}
	if n > 0 {
		t.fan.from = t.metrics[n-1]
	}
	var next Output = t.fan
	for i := n - 1; i >= 0; i-- {
		t.outs[i] = next
		l := &chainLink{op: t.ops[i], m: t.metrics[i], out: next, wm: MinWatermark}
		if n > 1 && t.opName(i) != t.v.Name {
			l.name = t.opName(i)
		}
		if i > 0 {
			l.from = t.metrics[i-1]
		}
		next = l
		if i == 0 {
			t.entry = l
		}
	}
	for i, op := range t.ops {
		i := i
		octx := &OperatorContext{
			Ctx:            t.ctx,
			Name:           t.opName(i),
			Subtask:        t.subtask,
			Parallelism:    t.v.Parallelism,
			MaxParallelism: t.cfg.MaxParallelism,
			Now:            t.cfg.Now,
			RegisterProcessingTimer: func(ts int64) {
				t.timers.push(procTimer{t: ts, op: i})
			},
			Metrics: t.metrics[i],
			Log:     t.cfg.Log,
		}
		if err := op.Open(octx); err != nil {
			return t.wrapOp(i, fmt.Errorf("open: %w", err))
		}
		t.opened = i + 1
	}
	if t.job != nil && t.job.verdict != nil {
		// Every operator opened: the restored committables are committed.
		if err := t.job.verdict.report(t.cp.sinks); err != nil {
			return err
		}
	}
	return nil
}

// closeOperators closes every operator that opened, in chain order, and
// returns the first error.
func (t *task) closeOperators() error {
	var first error
	for i := 0; i < t.opened; i++ {
		if err := t.ops[i].Close(); err != nil && first == nil {
			first = t.wrapOp(i, fmt.Errorf("close: %w", err))
		}
	}
	t.opened = 0
	return first
}

func (t *task) opName(i int) string {
	if i < len(t.v.ChainNames) && t.v.ChainNames[i] != "" {
		return t.v.ChainNames[i]
	}
	if len(t.v.Chain) == 1 {
		return t.v.Name
	}
	return fmt.Sprintf("%s[%d]", t.v.Name, i)
}

func (t *task) wrapOp(i int, err error) error {
	if len(t.ops) > 1 && t.opName(i) != t.v.Name {
		return &opError{op: t.opName(i), err: err}
	}
	return err
}

// deliver hands a batch from input index input to the head of the chain.
func (t *task) deliver(input int, b *types.Batch) error {
	if t.entry == nil {
		return t.fan.Push(b)
	}
	return t.entry.process(input, b)
}

// emitWatermark passes an advanced watermark to the head of the chain.
func (t *task) emitWatermark(wm int64) error {
	if t.entry == nil {
		return t.fan.PushWatermark(wm)
	}
	return t.entry.PushWatermark(wm)
}

// finishChain calls Finish on every operator in order (each may emit into
// the next), sends what is buffered and ends every outgoing channel.
func (t *task) finishChain() error {
	if err := t.finishOperators(); err != nil {
		return err
	}
	return t.send.broadcast(element{kind: elemEnd})
}

func (t *task) finishOperators() error {
	for i, op := range t.ops {
		if err := op.Finish(t.outs[i]); err != nil {
			return t.wrapOp(i, fmt.Errorf("finish: %w", err))
		}
	}
	return nil
}

// fireTimers runs the processing-time timers that are due.
func (t *task) fireTimers() error {
	if len(t.timers.h) == 0 {
		return nil
	}
	now := t.cfg.Now()
	for {
		pt, ok := t.timers.peek()
		if !ok || pt.t > now {
			return nil
		}
		t.timers.pop()
		h, ok := t.ops[pt.op].(ProcessingTimeHandler)
		if !ok {
			return t.wrapOp(pt.op, errors.New("registered a processing-time timer but does not handle them"))
		}
		if err := h.OnProcessingTime(pt.t, t.outs[pt.op]); err != nil {
			return t.wrapOp(pt.op, fmt.Errorf("processing-time timer: %w", err))
		}
	}
}

// flushIfDue sends buffered rows whose buffer timeout has passed.
func (t *task) flushIfDue() error {
	if t.send.flushAt.IsZero() || time.Now().Before(t.send.flushAt) {
		return nil
	}
	return t.send.flush()
}

// nextWake returns the wall-clock time at which the task must act next even
// if no input arrives, combining the buffer timeout with the earliest
// processing-time timer (and extra, a processing time, when not MinWatermark).
// The key identifies the deadline so that callers can tell when it changed.
func (t *task) nextWake(extra int64) (at time.Time, key wakeKey, ok bool) {
	proc := extra
	if pt, has := t.timers.peek(); has && (proc == MinWatermark || pt.t < proc) {
		proc = pt.t
	}
	key = wakeKey{proc: proc, flush: t.send.flushAt}
	if proc != MinWatermark {
		at = time.Now().Add(time.Duration(proc-t.cfg.Now()) * time.Millisecond)
		ok = true
	}
	if !t.send.flushAt.IsZero() && (!ok || t.send.flushAt.Before(at)) {
		at, ok = t.send.flushAt, true
	}
	return at, key, ok
}

type wakeKey struct {
	proc  int64
	flush time.Time
}

// runInputs is the loop of a task fed by channels.
func (t *task) runInputs() error {
	t.cp.open = len(t.inputs)
	if t.cp.open == 0 {
		// A subtask no channel reaches (e.g. beyond subtask 0 of a GLOBAL
		// exchange) has ended input from the start.
		if err := t.emitWatermark(MaxWatermark); err != nil {
			return err
		}
		if t.coord != nil {
			return t.endHead()
		}
		return t.finishChain()
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	armed := false
	var armedKey wakeKey
	var ctrlWake <-chan struct{}
	if t.ctrl != nil {
		ctrlWake = t.ctrl.wake
	}
	for !t.cp.finished {
		if t.cp.open == 0 && t.coord == nil {
			return t.finishChain()
		}
		if !t.cp.drained { // a drained chain has finished: nothing may follow end-of-input
			if err := t.fireTimers(); err != nil {
				return err
			}
		}
		if err := t.flushIfDue(); err != nil {
			return err
		}
		if len(t.cp.ready) > 0 {
			// Elements held during an alignment go first, in order.
			e := t.cp.ready[0]
			t.cp.ready[0] = element{}
			t.cp.ready = t.cp.ready[1:]
			if err := t.handle(e); err != nil {
				return err
			}
			continue
		}
		at, key, ok := t.nextWake(MinWatermark)
		switch {
		case !ok && armed:
			timer.Stop()
			armed = false
		case ok && (!armed || key != armedKey):
			timer.Reset(time.Until(at))
			armed, armedKey = true, key
		}
		// Waiting when nothing is ready is idle time: the clock is read
		// only then, not per element.
		const (
			gotElement = iota + 1
			gotControl
			gotTimer
		)
		var e element
		var got int
		select {
		case e = <-t.inbound:
			got = gotElement
		case <-ctrlWake:
			got = gotControl
		case <-timer.C:
			got = gotTimer
		case <-t.ctx.Done():
			return t.ctx.Err()
		default:
			idleFrom := time.Now()
			select {
			case e = <-t.inbound:
				got = gotElement
			case <-ctrlWake:
				got = gotControl
			case <-timer.C:
				got = gotTimer
			case <-t.ctx.Done():
				return t.ctx.Err()
			}
			t.times.idle.Add(int64(time.Since(idleFrom)))
		}
		switch got {
		case gotElement:
			if err := t.handle(e); err != nil {
				return err
			}
		case gotControl:
			if err := t.serveControl(); err != nil {
				return err
			}
		case gotTimer:
			armed = false
		}
	}
	return nil
}

// handle processes one inbound element.
func (t *task) handle(e element) error {
	c := &t.inputs[e.channel]
	if c.blocked {
		t.cp.held = append(t.cp.held, e)
		return nil
	}
	switch e.kind {
	case elemBatch:
		err := t.deliver(c.inputIndex, e.batch)
		e.batch.Reset()
		select {
		case c.free <- e.batch:
		default: // cannot happen: free holds every batch of the channel
		}
		return err
	case elemWatermark:
		return t.valve.onWatermark(t, c, e.wm)
	case elemIdle:
		return t.valve.onIdle(t, c)
	case elemActive:
		return t.valve.onActive(t, c)
	case elemBarrier:
		return t.onBarrier(c, e.ckpt, e.final)
	case elemEnd:
		t.cp.open--
		if err := t.onChannelEnd(c); err != nil {
			return err
		}
		return t.onChannelEndCheckpointing()
	}
	return fmt.Errorf("unknown element kind %d", e.kind)
}

// onChannelEnd lets a finished channel stop holding back the watermark: it
// will never send anything again, so it counts as having reached the
// maximum (sources send MaxWatermark before they end anyway).
func (t *task) onChannelEnd(c *inChannel) error {
	c.ended = true
	c.idle = false
	if !t.job.suspending() {
		// A stopped (not drained) input ends without its event time
		// advancing: windows wait in the final checkpoint.
		c.wm = MaxWatermark
	}
	c.aligned = true
	if t.valve.idle {
		t.valve.idle = false
		if err := t.send.broadcast(element{kind: elemActive}); err != nil {
			return err
		}
	}
	return t.valve.advance(t)
}

// valve combines the watermarks and idleness of a task's input channels the
// way Flink's StatusWatermarkValve does: the output watermark is the minimum
// over active channels that have caught up with it ("aligned"); idle
// channels do not hold it back; when every channel is idle the task's output
// becomes idle.
type valve struct {
	last int64
	idle bool
}

func (v *valve) onWatermark(t *task, c *inChannel, wm int64) error {
	if c.idle || c.ended || v.idle || wm <= c.wm {
		return nil
	}
	c.wm = wm
	if !c.aligned && wm >= v.last {
		c.aligned = true
	}
	return v.advance(t)
}

// advance emits the minimum over aligned channels when it is newer than the
// last output watermark.
func (v *valve) advance(t *task) error {
	min, any := int64(MaxWatermark), false
	for i := range t.inputs {
		c := &t.inputs[i]
		if c.aligned {
			any = true
			if c.wm < min {
				min = c.wm
			}
		}
	}
	if !any || min <= v.last {
		return nil
	}
	v.last = min
	return t.emitWatermark(min)
}

func (v *valve) onIdle(t *task, c *inChannel) error {
	if c.idle || c.ended {
		return nil
	}
	c.idle = true
	c.aligned = false
	for i := range t.inputs {
		if !t.inputs[i].idle {
			return v.advance(t)
		}
	}
	// No channel can advance the watermark any more. If the channel that
	// just went idle was the one holding it back, flush to the highest
	// watermark any channel reached (as Flink does), then go idle.
	if c.wm == v.last {
		max := int64(MinWatermark)
		for i := range t.inputs {
			max = maxInt64(max, t.inputs[i].wm)
		}
		if max > v.last {
			v.last = max
			if err := t.emitWatermark(max); err != nil {
				return err
			}
		}
	}
	v.idle = true
	return t.send.broadcast(element{kind: elemIdle})
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (v *valve) onActive(t *task, c *inChannel) error {
	if !c.idle || c.ended {
		return nil
	}
	c.idle = false
	c.aligned = c.wm >= v.last
	if v.idle {
		v.idle = false
		return t.send.broadcast(element{kind: elemActive})
	}
	return nil
}
