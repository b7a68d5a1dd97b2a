package window

import (
	"fmt"
	"math"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// errNullRowtime is Flink's message when a window aggregate meets a NULL
// rowtime: the job fails rather than guessing a window.
const errNullRowtime = exec.NullRowtimeMessage

// slicingAggregate is the window aggregate of TUMBLE, HOP and CUMULATE.
//
// Every live slice has a nextEnd: the end of the first of its windows that
// has not fired. Progress (watermark or processing time) fires windows in
// ascending end order while the smallest nextEnd is due, and a slice is
// dropped once its last window has fired.
//
// A CUMULATE window merges all of its slices when it fires (k merges per key
// for the k-th window of a period); Flink instead folds fired slices into the
// period's first slice. Results are the same; only the cost differs for
// periods of many steps.
type slicingAggregate struct {
	spec    exec.WindowSpec
	sl      slicer
	zone    tz.Zone
	keyCols []int
	aggs    exec.AggsHandle
	state   *heapSliceState
	prog    *progressState

	ctx     *exec.OperatorContext
	metrics *exec.OperatorMetrics
	wm      int64
	proc    int64       // processing-time progress: the latest timer handled
	live    []liveSlice // ascending end

	// restoredEnds are the live slices found in the backend, made live
	// at Open.
	restoredEnds []int64

	// The slice of the previous row and what to do with its rows; reset
	// whenever progress fires windows.
	cacheOK   bool
	cacheEnd  int64
	cacheDrop bool

	out      exec.Emitter
	outWidth int
	merged   []types.Value
	results  []types.Value
	props    [3]types.Value
	pushOut  exec.Output // the output of the current firing
	snapEnds []int64
	// cacheLimit, when set (tests), bounds the decoded cache on either
	// backend instead of the rocksdb budget, and makes index chunks and
	// the pages of index merges two entries long, so that small tests
	// cross their boundaries.
	cacheLimit int
}

type liveSlice struct {
	end, nextEnd int64
}

func newSlicingAggregate(spec AggregateSpec) *slicingAggregate {
	a := &slicingAggregate{
		spec:    spec.Window,
		sl:      newSlicer(spec.Window),
		zone:    tz.New(spec.Window.Loc),
		keyCols: spec.KeyCols,
		aggs:    spec.Aggs,
		wm:      exec.MinWatermark,
		proc:    exec.MinWatermark,
	}
	a.outWidth = len(spec.KeyCols) + spec.Aggs.NumAggs() + 3
	a.merged = make([]types.Value, spec.Aggs.AccWidth())
	a.results = make([]types.Value, spec.Aggs.NumAggs())
	return a
}

func (a *slicingAggregate) Open(ctx *exec.OperatorContext) error {
	a.ctx = ctx
	a.metrics = metricsOf(ctx)
	if !a.spec.EventTime && (ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil) {
		return fmt.Errorf("window aggregate: processing-time windows need a clock and processing timers")
	}
	if a.state == nil {
		return fmt.Errorf("window aggregate: no keyed state backend (OpenKeyedState was not called)")
	}
	a.out.Init(a.outWidth, 0)
	if a.wm != exec.MinWatermark {
		a.metrics.CurrentWatermark.Set(a.wm)
	}
	for _, se := range a.restoredEnds {
		a.restoreSlice(se)
	}
	a.restoredEnds = nil
	return nil
}

var _ exec.KeyedOperator = (*slicingAggregate)(nil)

// OpenKeyedState implements exec.KeyedOperator: it declares the states and,
// on a restore, reads the progress and the live slices (not their
// accumulators, which stay in the backend until rows or firings need them).
func (a *slicingAggregate) OpenKeyedState(b *kv.Backend) error {
	st, err := newHeapSliceState(b, a.keyCols, a.aggs.AccWidth())
	if err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	if a.prog, err = openProgress(b); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	p, restored, err := a.prog.read()
	if err != nil {
		return fmt.Errorf("window aggregate: restoring progress: %w", err)
	}
	if a.cacheLimit > 0 {
		st.bound, st.chunk, st.merge.page = a.cacheLimit, 2, 2
	}
	a.state = st
	if restored {
		a.wm, a.proc, st.seq = p.wm, p.proc, p.seq
		slices.Sort(p.ends)
		for _, se := range p.ends {
			st.restoredSlice(se)
		}
		a.restoredEnds = p.ends
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the accumulators changed
// since the last checkpoint and the progress go to the backend.
func (a *slicingAggregate) PrepareSnapshot(exec.CheckpointID) error {
	if err := a.state.writeBackAll(); err != nil {
		return fmt.Errorf("window aggregate: writing back state: %w", err)
	}
	ends := a.snapEnds[:0]
	for _, s := range a.state.slices {
		ends = append(ends, s.end)
	}
	a.snapEnds = ends
	if err := a.prog.write(progress{wm: a.wm, proc: a.proc, seq: a.state.seq, ends: ends}); err != nil {
		return fmt.Errorf("window aggregate: writing progress: %w", err)
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
	nextEnd := a.sl.firstWindowEnd(se)
	for a.zone.FireTime(nextEnd-1) <= done {
		nextEnd += a.sl.interval
	}
	a.live = slices.Insert(a.live, i, liveSlice{end: se, nextEnd: nextEnd})
	if !a.spec.EventTime {
		a.ctx.RegisterProcessingTimer(a.zone.FireTime(nextEnd - 1))
	}
}

func (a *slicingAggregate) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	var procLocal int64
	if !a.spec.EventTime {
		procLocal = a.zone.ToLocal(a.ctx.Now())
	}
	timeCol := a.spec.TimeCol
	var dropped int64
	for i, row := range b.Rows {
		local := procLocal
		var se int64
		switch {
		case a.spec.Attached:
			// window_end is a local TIMESTAMP(3) already.
			e := row[a.spec.EndCol]
			if e.IsNull() {
				return fmt.Errorf("window aggregate: the window_end of a window-attached aggregation is NULL")
			}
			se = e.Millis()
		case a.spec.EventTime:
			t := row[timeCol]
			if t.IsNull() {
				return fmt.Errorf("window aggregate: %s", errNullRowtime)
			}
			local = a.zone.ToLocal(t.Millis())
			se = a.sl.sliceEnd(local)
		default:
			se = a.sl.sliceEnd(local)
		}
		if !a.cacheOK || se != a.cacheEnd {
			a.admitSlice(se)
		}
		if a.cacheDrop {
			dropped++
			continue
		}
		acc, created, err := a.state.acc(row, types.HashColumns(row, a.keyCols), se)
		if err != nil {
			return err
		}
		if created {
			a.aggs.Init(acc)
		}
		if b.Kinds[i].IsRetract() {
			err = a.aggs.Retract(acc, row)
		} else {
			err = a.aggs.Accumulate(acc, row)
		}
		if err != nil {
			return fmt.Errorf("window aggregate: %w", err)
		}
	}
	if dropped > 0 {
		a.metrics.LateRowsDropped.Add(dropped)
	}
	if err := a.state.evict(); err != nil {
		return fmt.Errorf("window aggregate: evicting state: %w", err)
	}
	return nil
}

// admitSlice decides what happens to rows of the slice ending at se and makes
// sure the slice is live. Following Flink's slicing rule, a row whose slice
// has already fired is dropped only when the last window containing the slice
// has fired too; otherwise it still counts in the windows yet to fire.
func (a *slicingAggregate) admitSlice(se int64) {
	a.cacheOK, a.cacheEnd, a.cacheDrop = true, se, false
	nextEnd := a.sl.firstWindowEnd(se)
	if a.spec.EventTime && a.fired(se) {
		if a.fired(a.sl.lastWindowEnd(se)) {
			a.cacheDrop = true
			return
		}
		for a.fired(nextEnd) {
			nextEnd += a.sl.interval
		}
	}
	i := len(a.live)
	for i > 0 && a.live[i-1].end >= se {
		if a.live[i-1].end == se {
			return
		}
		i--
	}
	a.live = append(a.live, liveSlice{})
	copy(a.live[i+1:], a.live[i:])
	a.live[i] = liveSlice{end: se, nextEnd: nextEnd}
	if !a.spec.EventTime {
		a.ctx.RegisterProcessingTimer(a.zone.FireTime(nextEnd - 1))
	}
}

// fired reports whether the window ending at end (local) has fired at the
// current watermark.
func (a *slicingAggregate) fired(end int64) bool {
	return a.wm >= a.zone.FireTime(end-1)
}

func (a *slicingAggregate) ProcessWatermark(wm int64, out exec.Output) error {
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

func (a *slicingAggregate) OnProcessingTime(t int64, out exec.Output) error {
	if a.spec.EventTime {
		return nil
	}
	a.proc = max(a.proc, t)
	return a.advance(t, out)
}

// advance fires every window whose last millisecond is at or before progress.
func (a *slicingAggregate) advance(progress int64, out exec.Output) error {
	a.cacheOK = false
	for len(a.live) > 0 {
		end := int64(math.MaxInt64)
		for _, ls := range a.live {
			end = min(end, ls.nextEnd)
		}
		if a.zone.FireTime(end-1) > progress {
			break
		}
		if err := a.fire(end, out); err != nil {
			return err
		}
		j := 0
		for _, ls := range a.live {
			if ls.nextEnd == end {
				ls.nextEnd += a.sl.interval
				if ls.nextEnd > a.sl.lastWindowEnd(ls.end) {
					if err := a.state.dropSlice(ls.end); err != nil {
						return fmt.Errorf("window aggregate: clearing a fired slice: %w", err)
					}
					continue
				}
				if !a.spec.EventTime {
					a.ctx.RegisterProcessingTimer(a.zone.FireTime(ls.nextEnd - 1))
				}
			}
			a.live[j] = ls
			j++
		}
		a.live = a.live[:j]
	}
	return a.out.Flush(out)
}

func (a *slicingAggregate) fire(end int64, out exec.Output) error {
	start := a.sl.windowStartOf(end)
	windowProps(&a.zone, start, end, a.props[:])
	a.pushOut = out
	err := a.state.visitWindow(a.sl.firstSliceEnd(start, end), end, a)
	a.pushOut = nil
	return err
}

// visitKey emits the result row of one key of the firing window.
func (a *slicingAggregate) visitKey(key []types.Value, accs [][]types.Value) error {
	acc := accs[0]
	if len(accs) > 1 {
		a.aggs.Init(a.merged)
		for _, s := range accs {
			if err := a.aggs.Merge(a.merged, s); err != nil {
				return fmt.Errorf("window aggregate: %w", err)
			}
		}
		acc = a.merged
	}
	if a.spec.Retracting && allRetracted(a.aggs, acc) {
		return nil
	}
	if err := a.aggs.Result(acc, a.results); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	row, err := a.out.Row(types.Insert, a.pushOut)
	if err != nil {
		return err
	}
	n := copy(row, key)
	n += copy(row[n:], a.results)
	copy(row[n:], a.props[:])
	return nil
}

// Finish does nothing: event-time windows were fired by the final watermark,
// and pending processing-time windows are not fired at end of input (as in
// Flink).
func (a *slicingAggregate) Finish(exec.Output) error { return nil }

func (a *slicingAggregate) Close() error {
	a.state = nil
	a.live = nil
	return nil
}
