package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/types"
)

// splitState tracks the watermark of one source split.
type splitState struct {
	wm         int64 // highest watermark candidate seen
	lastActive int64 // processing time of the last rows
	idle       bool
	done       bool
}

// LagReporter is implemented by source readers that know how far behind
// the end of their input they read (Kafka: records-lag-max). The task
// asks after every read, on its own goroutine.
type LagReporter interface {
	// RecordsLagMax is the largest lag in records over the reader's
	// splits; -1 when unknown.
	RecordsLagMax() int64
}

// RemainingReporter is implemented by readers of a bounded input that
// know how many rows they have still to read (datagen with
// 'number-of-rows' or a sequence), for the progress `flinksql -f` shows.
// The task asks after every read, on its own goroutine.
type RemainingReporter interface {
	// RemainingRows is the number of rows still to read; -1 when unknown.
	RemainingRows() int64
}

// sourceRun holds the state of a source task's loop.
type sourceRun struct {
	t        *task
	spec     *SourceSpec
	reader   SourceReader
	lag      LagReporter // nil when the reader does not know its lag
	left     RemainingReporter
	prepare  Projector
	prepared *types.Batch
	wmExpr   Projector
	wmOut    types.Row
	segment  *types.Batch // rows up to a watermark, EmitOnEvent only

	splits      []splitState
	idleTimeout time.Duration // of this source: the table's, else Config.IdleTimeout
	emitted     int64         // last watermark sent downstream
	idle        bool          // the subtask reported itself idle
	nextTick    int64         // processing time of the next periodic emission

	// The deadline context given to Read, reused while the deadline stays.
	readCtx    context.Context
	readCancel context.CancelFunc
	readKey    wakeKey

	// base is the parent of every read context: the task's, or with
	// checkpointing one that a control message cancels so that a blocked
	// Read returns and the message is served between reads.
	base       context.Context
	baseCancel context.CancelFunc
}

// runSource is the loop of a source task: read, prepare, generate
// watermarks, push into the chain, and between reads do what is due
// (periodic watermarks, idleness, buffer flushes, processing-time timers).
func (t *task) runSource() error {
	spec := t.v.Source
	reader, err := spec.NewReader(t.subtask, t.v.Parallelism)
	if err != nil {
		return fmt.Errorf("create source reader: %w", err)
	}
	if reader == nil {
		return errors.New("create source reader: no reader")
	}
	s := &sourceRun{t: t, spec: spec, reader: reader, emitted: MinWatermark, base: t.ctx}
	s.lag, _ = reader.(LagReporter)
	if s.left, _ = reader.(RemainingReporter); s.left != nil {
		t.srcLeft.Set(s.left.RemainingRows())
	}
	defer s.releaseReadCtx()
	defer s.releaseBase()
	if t.coord != nil {
		if err := t.openReaderState(reader); err != nil {
			_ = reader.Close()
			return err
		}
	}
	if err := reader.Open(t.ctx); err != nil {
		_ = reader.Close()
		return fmt.Errorf("open source reader: %w", err)
	}
	err = s.run()
	if cerr := reader.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close source reader: %w", cerr)
	}
	return err
}

func (s *sourceRun) run() error {
	t, spec := s.t, s.spec
	width := spec.Width
	if spec.Prepare != nil {
		p, err := spec.Prepare()
		if err != nil {
			return fmt.Errorf("create source projection: %w", err)
		}
		s.prepare = p
		s.prepared = types.NewBatch(spec.PreparedWidth, t.cfg.BatchSize)
		width = spec.PreparedWidth
	}
	if wm := spec.Watermark; wm != nil {
		e, err := wm.Expr()
		if err != nil {
			return fmt.Errorf("create watermark expression: %w", err)
		}
		s.wmExpr = e
		s.wmOut = make(types.Row, 1)
		s.idleTimeout = t.cfg.IdleTimeout
		if wm.HasIdleTimeout {
			s.idleTimeout = wm.IdleTimeout
		}
		if wm.EmitOnEvent {
			s.segment = types.NewBatch(width, t.cfg.BatchSize)
		}
	}
	raw := types.NewBatch(spec.Width, t.cfg.BatchSize)
	s.nextTick = t.cfg.Now() + durationMillis(t.cfg.AutoWatermarkInterval)
	for {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		if t.job.stop.Load() != 0 {
			break // StopSources: the input ends here
		}
		if t.ctrl != nil {
			if err := s.pollControl(); err != nil {
				return err
			}
		}
		if err := t.fireTimers(); err != nil {
			return err
		}
		if now := t.cfg.Now(); now >= s.nextTick {
			if err := s.tick(now); err != nil {
				return err
			}
			s.nextTick = now + durationMillis(t.cfg.AutoWatermarkInterval)
		}
		if err := t.flushIfDue(); err != nil {
			return err
		}
		raw.Reset()
		res, err := s.reader.Read(s.deadlineCtx(), raw)
		if err != nil {
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("read: %w", err)
			}
			// A reader that reports its deadline (or the interruption by
			// a control message) as an error is treated like one that
			// returned empty-handed.
			raw.Reset()
			res = ReadResult{Split: -1}
		}
		s.trackSplits(res.Split)
		if raw.Len() > 0 {
			if err := s.process(res.Split, raw); err != nil {
				return err
			}
		}
		if res.Flush {
			if err := t.send.flush(); err != nil {
				return err
			}
		}
		if res.SplitDone && res.Split >= 0 && res.Split < len(s.splits) {
			s.splits[res.Split].done = true
			if err := s.onEventCheck(); err != nil {
				return err
			}
		}
		if res.End {
			break
		}
	}
	if err := s.markActive(); err != nil {
		return err
	}
	// Bounded input: close every event-time window, as Flink does at the
	// end of every bounded source; not when stopped without drain.
	if !t.job.suspending() {
		s.t.srcWM.Set(MaxWatermark)
		if err := t.emitWatermark(MaxWatermark); err != nil {
			return err
		}
	}
	if t.coord != nil {
		return t.endHead()
	}
	return t.finishChain()
}

// pollControl serves the coordinator's messages between reads, and renews
// the interruptible base context once a message canceled it.
func (s *sourceRun) pollControl() error {
	t := s.t
	select {
	case <-t.ctrl.wake:
		if err := t.serveControl(); err != nil {
			return err
		}
	default:
	}
	if err := t.takePostponed(); err != nil {
		return err
	}
	if s.baseCancel == nil || s.base.Err() != nil {
		s.releaseBase()
		s.base, s.baseCancel = context.WithCancel(t.ctx)
		t.ctrl.arm(s.baseCancel)
	}
	return nil
}

func (s *sourceRun) releaseBase() {
	if s.baseCancel != nil {
		s.baseCancel()
		s.base, s.baseCancel = s.t.ctx, nil
	}
}

// deadlineCtx returns the context for the next Read: the job's, with a
// deadline at the next thing the loop must do so that a blocking reader
// cannot starve it.
func (s *sourceRun) deadlineCtx() context.Context {
	at, key, ok := s.t.nextWake(s.nextTick)
	if !ok {
		return s.base
	}
	if s.readCtx != nil && key == s.readKey && s.readCtx.Err() == nil {
		return s.readCtx
	}
	s.releaseReadCtx()
	s.readCtx, s.readCancel = context.WithDeadline(s.base, at)
	s.readKey = key
	return s.readCtx
}

func (s *sourceRun) releaseReadCtx() {
	if s.readCancel != nil {
		s.readCancel()
		s.readCtx, s.readCancel = nil, nil
	}
}

// trackSplits adds state for splits the reader acquired.
func (s *sourceRun) trackSplits(split int) {
	n := s.reader.NumSplits()
	if split >= n {
		n = split + 1
	}
	if n <= len(s.splits) {
		return
	}
	now := s.t.cfg.Now()
	for len(s.splits) < n {
		s.splits = append(s.splits, splitState{wm: MinWatermark, lastActive: now})
	}
}

// combined returns the source's watermark: the minimum over splits that are
// neither idle nor done; ok is false when no split counts.
func (s *sourceRun) combined() (wm int64, ok bool) {
	wm = MaxWatermark
	for i := range s.splits {
		sp := &s.splits[i]
		if sp.idle || sp.done {
			continue
		}
		ok = true
		if sp.wm < wm {
			wm = sp.wm
		}
	}
	return wm, ok
}

func (s *sourceRun) emit(wm int64) error {
	if wm <= s.emitted {
		return nil
	}
	s.emitted = wm
	s.t.srcWM.Set(wm)
	return s.t.emitWatermark(wm)
}

// tick is the periodic work: idleness detection and, unless watermarks are
// emitted on event, watermark emission.
func (s *sourceRun) tick(now int64) error {
	if s.wmExpr == nil {
		return nil
	}
	timeout := durationMillis(s.idleTimeout)
	if s.idleTimeout > 0 {
		for i := range s.splits {
			sp := &s.splits[i]
			if !sp.idle && !sp.done && now-sp.lastActive >= timeout {
				sp.idle = true
			}
		}
	}
	wm, ok := s.combined()
	if ok {
		return s.emit(wm)
	}
	if s.idleTimeout > 0 && !s.idle && s.anyIdleOrNone() {
		s.idle = true
		return s.t.send.broadcast(element{kind: elemIdle})
	}
	return nil
}

func (s *sourceRun) anyIdleOrNone() bool {
	if len(s.splits) == 0 {
		return true
	}
	for i := range s.splits {
		if s.splits[i].idle {
			return true
		}
	}
	return false
}

// onEventCheck emits the combined watermark right away in EmitOnEvent mode.
func (s *sourceRun) onEventCheck() error {
	if s.segment == nil {
		return nil
	}
	if wm, ok := s.combined(); ok {
		return s.emit(wm)
	}
	return nil
}

// markActive reports the subtask active again after it was idle.
func (s *sourceRun) markActive() error {
	if !s.idle {
		return nil
	}
	s.idle = false
	return s.t.send.broadcast(element{kind: elemActive})
}

// process prepares the rows read from one split, generates watermarks from
// them and pushes them into the chain.
func (s *sourceRun) process(split int, raw *types.Batch) error {
	t := s.t
	t.srcRowsRead.Add(int64(raw.Len()))
	if s.lag != nil {
		t.srcLag.Set(s.lag.RecordsLagMax())
	}
	if s.left != nil {
		t.srcLeft.Set(s.left.RemainingRows())
	}
	b := raw
	if s.prepare != nil {
		s.prepared.Reset()
		for i, r := range raw.Rows {
			if err := s.prepare.Project(r, s.prepared.Append(raw.Kinds[i])); err != nil {
				return fmt.Errorf("source projection: %w", err)
			}
		}
		b = s.prepared
	}
	if s.wmExpr == nil {
		return t.deliver(0, b)
	}
	if split < 0 || split >= len(s.splits) {
		return fmt.Errorf("source reader returned rows for split %d, it has %d splits", split, len(s.splits))
	}
	sp := &s.splits[split]
	sp.lastActive = t.cfg.Now()
	if sp.idle {
		sp.idle = false
	}
	if err := s.markActive(); err != nil {
		return err
	}
	if s.segment == nil {
		if sh := s.spec.Watermark.Shift; sh != nil {
			if err := s.shiftCandidates(sp, sh, b.Rows); err != nil {
				return err
			}
			return t.deliver(0, b)
		}
		for _, r := range b.Rows {
			if err := s.candidate(sp, r); err != nil {
				return err
			}
		}
		return t.deliver(0, b)
	}
	// EmitOnEvent: cut the batch after every row that advances the
	// source's watermark, so rows and watermarks leave in the order the
	// split produced them.
	start := 0
	for i, r := range b.Rows {
		before := sp.wm
		if err := s.candidate(sp, r); err != nil {
			return err
		}
		if sp.wm == before {
			continue
		}
		wm, ok := s.combined()
		if !ok || wm <= s.emitted {
			continue
		}
		if err := s.pushRange(b, start, i+1); err != nil {
			return err
		}
		start = i + 1
		if err := s.emit(wm); err != nil {
			return err
		}
	}
	return s.pushRange(b, start, b.Len())
}

// shiftCandidates raises the split's watermark to the largest candidate of
// rows, for a watermark expression that is a column plus a constant
// (WatermarkSpec.Shift): what candidate computes, without an evaluation
// per row.
func (s *sourceRun) shiftCandidates(sp *splitState, sh *WatermarkShift, rows []types.Row) error {
	wm := sp.wm
	for _, r := range rows {
		if sh.Col < len(r) {
			switch v := &r[sh.Col]; v.K {
			case types.KindNull:
				continue
			case types.KindTimestamp:
				if c := v.N + sh.Millis; c > wm {
					wm = c
				}
				continue
			}
		}
		// Anything else takes the expression's path, which reports it.
		sp.wm = wm
		if err := s.candidate(sp, r); err != nil {
			return err
		}
		wm = sp.wm
	}
	sp.wm = wm
	return nil
}

// candidate evaluates the watermark expression on a row and raises the
// split's watermark.
func (s *sourceRun) candidate(sp *splitState, r types.Row) error {
	s.wmOut[0] = types.Value{}
	if err := s.wmExpr.Project(r, s.wmOut); err != nil {
		return fmt.Errorf("watermark expression: %w", err)
	}
	v := s.wmOut[0]
	switch v.K {
	case types.KindNull:
		return nil
	case types.KindTimestamp:
		if v.Millis() > sp.wm {
			sp.wm = v.Millis()
		}
		return nil
	}
	return fmt.Errorf("watermark expression returned a value of kind %d, want a TIMESTAMP or TIMESTAMP_LTZ", v.K)
}

// pushRange pushes rows [from, to) of b.
func (s *sourceRun) pushRange(b *types.Batch, from, to int) error {
	if from >= to {
		return nil
	}
	if from == 0 && to == b.Len() {
		return s.t.deliver(0, b)
	}
	seg := s.segment
	seg.Reset()
	for i := from; i < to; i++ {
		seg.AppendRow(b.Kinds[i], b.Rows[i])
	}
	return s.t.deliver(0, seg)
}

// durationMillis converts a duration to milliseconds, rounding up so that a
// positive duration never becomes zero.
func durationMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
