package window

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/sql/types"
)

// sessionAggregate is the SESSION window aggregate. Per key it keeps the open
// sessions sorted by start, each with its own accumulator; a row at t is the
// window [t, t+gap) and merges with every session it overlaps or touches.
//
// Lateness follows Flink's merging window rule: the row's window is first
// merged with the open sessions of its key, and the row is dropped only when
// the resulting session has already passed the watermark (end - 1 <= wm).
type sessionAggregate struct {
	spec    exec.WindowSpec
	zone    tz.Zone
	keyCols []int
	aggs    exec.AggsHandle
	keys    *keyed.Table

	ctx      *exec.OperatorContext
	metrics  *exec.OperatorMetrics
	wm       int64
	sessions [][]session // per key id, ascending start
	accPool  [][]types.Value
	seq      uint64
	// minTrigger is at or below the fire time of every open session.
	minTrigger int64

	proc int64 // processing-time progress: the latest timer handled

	// checkpointing: see snapshot.go
	restored  []snapshot.Entry
	restoring bool
	snapBuf   []byte
	changes   snapshot.Changes // by key id

	due      []dueSession
	emptied  []int32 // keys left without sessions by the current firing
	out      *types.Batch
	outWidth int
	results  []types.Value
}

type session struct {
	start, end int64 // local millis, [start, end)
	trigger    int64 // the instant the session fires
	seq        uint64
	acc        []types.Value
}

type dueSession struct {
	session
	key int32
}

func newSessionAggregate(spec AggregateSpec) *sessionAggregate {
	return &sessionAggregate{
		spec:       spec.Window,
		zone:       tz.New(spec.Window.Loc),
		keyCols:    spec.KeyCols,
		aggs:       spec.Aggs,
		wm:         exec.MinWatermark,
		proc:       exec.MinWatermark,
		minTrigger: math.MaxInt64,
		outWidth:   len(spec.KeyCols) + spec.Aggs.NumAggs() + 3,
		results:    make([]types.Value, spec.Aggs.NumAggs()),
	}
}

func (a *sessionAggregate) Open(ctx *exec.OperatorContext) error {
	a.ctx = ctx
	a.metrics = metricsOf(ctx)
	if !a.spec.EventTime && (ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil) {
		return fmt.Errorf("window aggregate: processing-time windows need a clock and processing timers")
	}
	a.keys = keyed.NewTable(a.keyCols)
	a.out = types.NewBatch(a.outWidth, types.DefaultBatchSize)
	return a.applyRestored()
}

func (a *sessionAggregate) newAcc() []types.Value {
	if n := len(a.accPool); n > 0 {
		acc := a.accPool[n-1]
		a.accPool = a.accPool[:n-1]
		return acc
	}
	return make([]types.Value, a.aggs.AccWidth())
}

func (a *sessionAggregate) freeAcc(acc []types.Value) {
	clear(acc)
	a.accPool = append(a.accPool, acc)
}

func (a *sessionAggregate) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	var procLocal int64
	if !a.spec.EventTime {
		procLocal = a.zone.ToLocal(a.ctx.Now())
	}
	var dropped int64
	for i, row := range b.Rows {
		t := procLocal
		if a.spec.EventTime {
			v := row[a.spec.TimeCol]
			if v.IsNull() {
				return fmt.Errorf("window aggregate: %s", errNullRowtime)
			}
			t = a.zone.ToLocal(v.Millis())
		}
		ok, err := a.add(row, b.Kinds[i], t)
		if err != nil {
			return err
		}
		if !ok {
			dropped++
		}
	}
	if dropped > 0 {
		a.metrics.LateRowsDropped.Add(dropped)
	}
	return nil
}

// add puts the row at local time t into its key's sessions; false means the
// row was late and dropped.
func (a *sessionAggregate) add(row types.Row, kind types.RowKind, t int64) (bool, error) {
	h := types.HashColumns(row, a.keyCols)
	id, added := a.keys.Lookup(row, h)
	if added && int(id) == len(a.sessions) {
		a.sessions = append(a.sessions, nil)
	}
	ss := a.sessions[id]
	start, end := t, t+a.spec.Gap
	// sessions [lo, hi) overlap or touch [start, end)
	lo, _ := slices.BinarySearchFunc(ss, start, func(s session, t int64) int { return cmp.Compare(s.end, t) })
	hi := lo
	for hi < len(ss) && ss[hi].start <= end {
		hi++
	}
	if lo < hi {
		start = min(start, ss[lo].start)
		end = max(end, ss[hi-1].end)
	}
	trigger := a.zone.FireTime(end - 1)
	if a.spec.EventTime && a.wm >= trigger {
		if len(ss) == 0 {
			a.keys.Release(id)
		}
		return false, nil
	}
	var target *session
	if lo == hi {
		ss = slices.Insert(ss, lo, session{seq: a.nextSeq(), acc: a.newAcc()})
		target = &ss[lo]
		a.aggs.Init(target.acc)
	} else {
		target = &ss[lo]
		for k := lo + 1; k < hi; k++ {
			if err := a.aggs.Merge(target.acc, ss[k].acc); err != nil {
				return false, fmt.Errorf("window aggregate: %w", err)
			}
			target.seq = min(target.seq, ss[k].seq)
			a.freeAcc(ss[k].acc)
		}
		ss = slices.Delete(ss, lo+1, hi)
		target = &ss[lo]
	}
	changed := target.end != end
	target.start, target.end, target.trigger = start, end, trigger
	a.sessions[id] = ss
	a.minTrigger = min(a.minTrigger, trigger)
	if changed && !a.spec.EventTime {
		a.ctx.RegisterProcessingTimer(trigger)
	}
	var err error
	if kind.IsRetract() {
		err = a.aggs.Retract(target.acc, row)
	} else {
		err = a.aggs.Accumulate(target.acc, row)
	}
	if err != nil {
		return false, fmt.Errorf("window aggregate: %w", err)
	}
	a.changes.Touch(id)
	return true, nil
}

func (a *sessionAggregate) nextSeq() uint64 {
	a.seq++
	return a.seq
}

func (a *sessionAggregate) ProcessWatermark(wm int64, out exec.Output) error {
	if wm <= a.wm {
		return out.PushWatermark(wm)
	}
	a.wm = wm
	a.metrics.CurrentWatermark.Set(wm)
	if a.spec.EventTime {
		if err := a.advance(wm, out); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

func (a *sessionAggregate) OnProcessingTime(t int64, out exec.Output) error {
	if a.spec.EventTime {
		return nil
	}
	a.proc = max(a.proc, t)
	return a.advance(t, out)
}

// advance fires every session whose trigger is at or before progress, in
// ascending end (then start, then first arrival) order.
func (a *sessionAggregate) advance(progress int64, out exec.Output) error {
	if progress < a.minTrigger {
		return nil
	}
	a.due = a.due[:0]
	next := int64(math.MaxInt64)
	for id, ss := range a.sessions {
		if len(ss) == 0 {
			continue
		}
		j := 0
		for _, s := range ss {
			if s.trigger <= progress {
				a.due = append(a.due, dueSession{session: s, key: int32(id)})
				continue
			}
			next = min(next, s.trigger)
			ss[j] = s
			j++
		}
		clear(ss[j:])
		a.sessions[id] = ss[:j]
		if j == 0 {
			a.emptied = append(a.emptied, int32(id))
		} else if j < len(ss) {
			a.changes.Touch(int32(id))
		}
	}
	a.minTrigger = next
	slices.SortFunc(a.due, func(x, y dueSession) int {
		if c := cmp.Compare(x.end, y.end); c != 0 {
			return c
		}
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		return cmp.Compare(x.seq, y.seq)
	})
	var props [3]types.Value
	for _, d := range a.due {
		if err := a.aggs.Result(d.acc, a.results); err != nil {
			return fmt.Errorf("window aggregate: %w", err)
		}
		windowProps(&a.zone, d.start, d.end, props[:])
		row := a.out.Append(types.Insert)
		n := copy(row, a.keys.Key(d.key))
		n += copy(row[n:], a.results)
		copy(row[n:], props[:])
		if a.out.Full() {
			if err := a.flush(out); err != nil {
				return err
			}
		}
	}
	for _, d := range a.due {
		a.freeAcc(d.acc)
	}
	for _, id := range a.emptied {
		a.changes.Removed(id, a.keys.Hash(id), tagSession, a.keys.Key(id))
		a.keys.Release(id)
	}
	clear(a.due)
	a.emptied = a.emptied[:0]
	return a.flush(out)
}

func (a *sessionAggregate) flush(out exec.Output) error {
	n := a.out.Len()
	if n == 0 {
		return nil
	}
	err := out.Push(a.out)
	a.out.Reset()
	if err != nil {
		return err
	}
	return nil
}

// Finish does nothing: see slicingAggregate.Finish.
func (a *sessionAggregate) Finish(exec.Output) error { return nil }

func (a *sessionAggregate) Close() error {
	a.sessions = nil
	a.accPool = nil
	return nil
}
