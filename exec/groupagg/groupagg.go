package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Aggs is what the group aggregate needs from the aggregate calls:
// *agg.Handle satisfies it. RecordCount is the net number of rows
// accumulated (accumulated minus retracted); a group whose count drops to 0
// is deleted.
type Aggs interface {
	exec.AggsHandle
	RecordCount(acc []types.Value) int64
	CloneAcc(dst, src []types.Value)
}

// MiniBatch is table.exec.mini-batch.*.
type MiniBatch struct {
	Enabled      bool
	AllowLatency time.Duration // table.exec.mini-batch.allow-latency
	Size         int           // table.exec.mini-batch.size: rows buffered before a flush
}

// GroupAggSpec describes an unwindowed GROUP BY (or SELECT DISTINCT).
// Output rows are the key columns followed by the aggregate results.
type GroupAggSpec struct {
	KeyCols []int // grouping columns of the input row
	// Aggs evaluates the aggregate calls; nil when there are none
	// (SELECT DISTINCT, GROUP BY without aggregates).
	Aggs Aggs
	// GenerateUpdateBefore: emit -U before +U (retract stream); otherwise
	// the output is an upsert stream keyed by KeyCols (+U only).
	GenerateUpdateBefore bool
	StateTTL             time.Duration // table.exec.state.ttl; 0 keeps state forever
	MiniBatch            MiniBatch
}

// groupAggregate keeps one accumulator per key and emits the change of the
// key's result after every input row (or, with mini-batch, after every
// bundle of rows).
//
// The state of a key is [accumulator..., last emitted result...]; a key has
// state exactly when a result row for it has been emitted and not deleted.
type groupAggregate struct {
	keyCols      []int
	aggs         Aggs
	accWidth     int
	numAggs      int
	updateBefore bool
	ttl          stateTTL
	mini         MiniBatch

	ctx     *exec.OperatorContext
	state   *valueCache
	results []types.Value
	emit    exec.Emitter
	now     int64 // processing time of the current batch, when a clock is needed

	bundle  *bundle
	flushAt int64 // time of the pending mini-batch latency timer; 0 when none
	nextSeq uint64

	b *kv.Backend
	// bundleSt holds, at a checkpoint, the unflushed mini-batch rows (see
	// keyed.go); bundleKGs are the key groups it holds rows in, restored
	// the rows of a restored checkpoint, put into the bundle at Open.
	bundleSt  *kv.ValueState[[]byte]
	bundleKGs []int
	restored  []restoredRow
	bundleBuf []byte
	// cacheLimit, when not 0, bounds the cache to that many keys (tests).
	cacheLimit int
}

// NewGroupAggregate returns the operator of an unwindowed group aggregation
// over an insert-only or updating input.
//
// Per input row: a -U/-D for a key without state is ignored; otherwise the
// row is accumulated (+I/+U) or retracted (-U/-D), and compared with the
// result emitted before: the group becoming empty emits -D of the previous
// result and drops the key; a first result emits +I; a changed result emits
// -U (previous, when GenerateUpdateBefore) and +U (new); an unchanged result
// emits nothing unless state TTL is on (then -U/+U are emitted anyway, as
// Flink does, to refresh the TTL of downstream state).
//
// With mini-batch, rows are buffered per key and applied when the bundle is
// flushed (size reached, allow-latency passed, watermark, end of input); each
// key then emits at most one change against its state before the bundle, in
// first-arrival order of the keys.
func NewGroupAggregate(spec GroupAggSpec) (exec.Operator, error) {
	const name = "group aggregate"
	if err := checkKeyCols(name, spec.KeyCols); err != nil {
		return nil, err
	}
	ttl, err := newStateTTL(spec.StateTTL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if mb := spec.MiniBatch; mb.Enabled {
		if mb.AllowLatency <= 0 {
			return nil, fmt.Errorf("%s: table.exec.mini-batch.allow-latency must be a positive duration when table.exec.mini-batch.enabled is true, got %s", name, mb.AllowLatency)
		}
		if mb.Size <= 0 {
			return nil, fmt.Errorf("%s: table.exec.mini-batch.size must be a positive number of rows when table.exec.mini-batch.enabled is true, got %d", name, mb.Size)
		}
	}
	aggs := spec.Aggs
	if aggs == nil {
		aggs = countOnly{}
	}
	return &groupAggregate{
		keyCols:      spec.KeyCols,
		aggs:         aggs,
		accWidth:     aggs.AccWidth(),
		numAggs:      aggs.NumAggs(),
		updateBefore: spec.GenerateUpdateBefore,
		ttl:          ttl,
		mini:         spec.MiniBatch,
	}, nil
}

func (g *groupAggregate) Open(ctx *exec.OperatorContext) error {
	if g.ttl.Enabled() {
		if err := checkClock(ctx, "group aggregate", "table.exec.state.ttl"); err != nil {
			return err
		}
	}
	if g.mini.Enabled {
		if err := checkClock(ctx, "group aggregate", "mini-batch"); err != nil {
			return err
		}
	}
	if g.state == nil {
		return errNoBackend("group aggregate")
	}
	g.ctx = ctx
	g.results = make([]types.Value, g.numAggs)
	g.emit.Init(len(g.keyCols)+g.numAggs, 0)
	return g.applyRestored()
}

func (g *groupAggregate) needsClock() bool { return g.ttl.Enabled() || g.mini.Enabled }

func (g *groupAggregate) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := checkWidth("group aggregate", g.keyCols, b.Width()); err != nil {
		return err
	}
	if g.needsClock() {
		g.setNow(g.ctx.Now())
		g.ttl.arm(g.ctx, g.now)
	}
	if g.mini.Enabled {
		return g.buffer(b, out)
	}
	for i, row := range b.Rows {
		kind := b.Kinds[i]
		h := types.HashColumns(row, g.keyCols)
		id, ok, err := g.state.Get(row, h)
		if err != nil {
			return g.stateErr(err)
		}
		if !ok {
			if kind.IsRetract() {
				continue // a retraction of a key without state: nothing to retract
			}
			if id, err = g.state.Create(row, h); err != nil {
				return g.stateErr(err)
			}
			g.aggs.Init(g.state.values(id)[:g.accWidth])
		}
		if err := g.apply(id, kind, row); err != nil {
			return err
		}
		if err := g.emitChange(id, !ok, out); err != nil {
			return err
		}
	}
	return g.emit.Flush(out)
}

func (g *groupAggregate) setNow(now int64) {
	g.now = now
	g.state.SetNow(now)
}

func (g *groupAggregate) stateErr(err error) error {
	return fmt.Errorf("group aggregate: state: %w", err)
}

func (g *groupAggregate) apply(id int32, kind types.RowKind, row types.Row) error {
	acc := g.state.values(id)[:g.accWidth]
	var err error
	if kind.IsRetract() {
		err = g.aggs.Retract(acc, row)
	} else {
		err = g.aggs.Accumulate(acc, row)
	}
	if err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	return nil
}

// emitChange compares the key's new result with the one emitted before and
// emits the difference. first: the key had no state before this change.
func (g *groupAggregate) emitChange(id int32, first bool, out exec.Output) error {
	vals := g.state.values(id)
	acc, prev := vals[:g.accWidth], vals[g.accWidth:]
	if g.aggs.RecordCount(acc) == 0 {
		if !first {
			if err := g.emitResult(types.Delete, id, prev, out); err != nil {
				return err
			}
		}
		if err := g.state.Remove(id); err != nil {
			return g.stateErr(err)
		}
		return nil
	}
	g.state.Written(id)
	if err := g.aggs.Result(acc, g.results); err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	if first {
		copy(prev, g.results)
		return g.emitResult(types.Insert, id, g.results, out)
	}
	if !g.ttl.Enabled() && types.RowsEqual(prev, g.results) {
		return nil
	}
	if g.updateBefore {
		if err := g.emitResult(types.UpdateBefore, id, prev, out); err != nil {
			return err
		}
	}
	copy(prev, g.results)
	return g.emitResult(types.UpdateAfter, id, g.results, out)
}

func (g *groupAggregate) emitResult(kind types.RowKind, id int32, results []types.Value, out exec.Output) error {
	row, err := g.emit.Row(kind, out)
	if err != nil {
		return err
	}
	n := copy(row, g.state.Key(id))
	copy(row[n:], results)
	return nil
}

// buffer adds the rows of b to the bundle, flushing it when it is full.
func (g *groupAggregate) buffer(b *types.Batch, out exec.Output) error {
	if g.bundle == nil {
		g.bundle = newBundle(g.keyCols, b.Width(), g.mini.Size)
	} else if g.bundle.rows.Width() != b.Width() {
		return fmt.Errorf("group aggregate: input rows of %d columns, expected %d", b.Width(), g.bundle.rows.Width())
	}
	for i, row := range b.Rows {
		if g.bundle.empty() {
			g.flushAt = g.now + g.mini.AllowLatency.Milliseconds()
			g.ctx.RegisterProcessingTimer(g.flushAt)
		}
		g.bundle.add(b.Kinds[i], row, types.HashColumns(row, g.keyCols), g.nextSeq)
		g.nextSeq++
		if g.bundle.len() >= g.mini.Size {
			if err := g.flushBundle(out); err != nil {
				return err
			}
		}
	}
	return g.emit.Flush(out)
}

// flushBundle applies the buffered rows key by key, in first-arrival order
// of the keys, and emits at most one change per key. As in Flink, a key
// without state skips its leading retractions and starts from the first row
// that accumulates.
func (g *groupAggregate) flushBundle(out exec.Output) error {
	g.flushAt = 0
	bd := g.bundle
	if bd == nil || bd.empty() {
		return nil
	}
	for k := range bd.keys.Capacity() {
		kid := int32(k)
		r := bd.head[kid]
		h := bd.keys.Hash(kid)
		id, ok, err := g.state.Get(bd.rows.Rows[r], h)
		if err != nil {
			return g.stateErr(err)
		}
		if !ok {
			for r >= 0 && bd.rows.Kinds[r].IsRetract() {
				r = bd.next[r]
			}
			if r < 0 {
				continue
			}
			if id, err = g.state.Create(bd.rows.Rows[r], h); err != nil {
				return g.stateErr(err)
			}
			g.aggs.Init(g.state.values(id)[:g.accWidth])
		}
		for ; r >= 0; r = bd.next[r] {
			if err := g.apply(id, bd.rows.Kinds[r], bd.rows.Rows[r]); err != nil {
				return err
			}
		}
		if err := g.emitChange(id, !ok, out); err != nil {
			return err
		}
	}
	bd.reset()
	return g.clearStoredBundle()
}

func (g *groupAggregate) OnProcessingTime(t int64, out exec.Output) error {
	g.setNow(g.ctx.Now())
	if g.flushAt != 0 && t >= g.flushAt {
		if err := g.flushBundle(out); err != nil {
			return err
		}
	}
	if g.ttl.Due(t) {
		g.state.Sweep()
		if g.state.Len() > 0 || (g.bundle != nil && !g.bundle.empty()) {
			g.ttl.arm(g.ctx, g.now)
		}
	}
	return g.emit.Flush(out)
}

func (g *groupAggregate) ProcessWatermark(wm int64, out exec.Output) error {
	if g.mini.Enabled {
		if g.needsClock() {
			g.setNow(g.ctx.Now())
		}
		if err := g.flushBundle(out); err != nil {
			return err
		}
		if err := g.emit.Flush(out); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

func (g *groupAggregate) Finish(out exec.Output) error {
	if g.mini.Enabled {
		g.setNow(g.ctx.Now())
		if err := g.flushBundle(out); err != nil {
			return err
		}
	}
	return g.emit.Flush(out)
}

func (g *groupAggregate) Close() error {
	g.state = nil
	g.bundle = nil
	return nil
}

// bundle is the mini-batch buffer: copies of the input rows in arrival order,
// chained per key. Its key table is reset at every flush, so key ids follow
// first-arrival order.
type bundle struct {
	keys       *keyed.OpenTable
	head, tail []int32  // per bundle key: first and last buffered row
	next       []int32  // per buffered row: the next row of the same key, -1 at the end
	seqs       []uint64 // per buffered row: its sequence number, its order after a restore
	rows       *types.Batch
}

func newBundle(keyCols []int, width, size int) *bundle {
	return &bundle{keys: keyed.NewOpenTable(keyCols), rows: types.NewBatch(width, min(size, 1<<16))}
}

func (bd *bundle) empty() bool { return bd.rows.Len() == 0 }

func (bd *bundle) len() int { return bd.rows.Len() }

func (bd *bundle) add(kind types.RowKind, row types.Row, h uint64, seq uint64) {
	kid := bd.keys.Find(row, h)
	idx := int32(bd.rows.Len())
	bd.rows.AppendRow(kind, row)
	bd.next = append(bd.next, -1)
	bd.seqs = append(bd.seqs, seq)
	if kid < 0 {
		kid = bd.keys.Add(row, h)
		bd.head = append(bd.head, idx)
		bd.tail = append(bd.tail, idx)
		return
	}
	bd.next[bd.tail[kid]] = idx
	bd.tail[kid] = idx
}

func (bd *bundle) reset() {
	bd.keys.Reset()
	bd.head = bd.head[:0]
	bd.tail = bd.tail[:0]
	bd.next = bd.next[:0]
	bd.seqs = bd.seqs[:0]
	bd.rows.Reset()
}

// countOnly stands in for the aggregate calls of a GROUP BY without any: it
// only counts the rows of a group, so that the group is deleted when its
// last row is retracted.
type countOnly struct{}

func (countOnly) NumAggs() int                        { return 0 }
func (countOnly) AccWidth() int                       { return 1 }
func (countOnly) Init(acc []types.Value)              { acc[0] = types.Int(0) }
func (countOnly) Result(_, _ []types.Value) error     { return nil }
func (countOnly) RecordCount(acc []types.Value) int64 { return acc[0].N }
func (countOnly) CloneAcc(dst, src []types.Value)     { dst[0] = src[0] }

func (countOnly) Accumulate(acc []types.Value, _ types.Row) error {
	acc[0].N++
	return nil
}

func (countOnly) Retract(acc []types.Value, _ types.Row) error {
	acc[0].N--
	return nil
}

func (countOnly) Merge(acc, other []types.Value) error {
	acc[0].N += other[0].N
	return nil
}
