package lookup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Spec describes a lookup join.
type Spec struct {
	// Table names the dimension table in messages.
	Table string
	// LeftWidth and DimWidth are the widths of the input rows and of the
	// dimension rows (as Prepare leaves them); output rows are both.
	LeftWidth, DimWidth int
	// Key computes the KeyWidth lookup key values from an input row (input
	// columns or constants, cast to the dimension key columns' types).
	Key      func() (exec.Projector, error)
	KeyWidth int
	// DimKeyCols are the columns of the dimension rows the key values
	// equal, in key order (the full cache's index).
	DimKeyCols []int
	// Prepare, when set, turns a row the connector returns into the
	// dimension row (computed columns); DimWidth wide.
	Prepare func() (exec.Projector, error)
	// Residual, when set, is the rest of the join condition, tested on
	// the joined row: a dimension row that fails it does not match.
	Residual func() (exec.Predicate, error)
	// LeftOuter emits an input row without a match padded with NULLs.
	LeftOuter bool

	// Fetcher serves point lookups (cache NONE or PARTIAL); Loader loads
	// the full cache (FULL).
	Fetcher Fetcher
	Loader  Loader
	Cache   Cache
	// Async, when set, runs the lookups of a batch concurrently.
	Async *Async
	// Retry, when set, looks a missed key up again.
	Retry *Retry
}

// NewJoin returns the lookup join operator of spec.
//
// The operator keeps no state a restore needs: what it caches is a copy of
// the dimension table, reloaded after a restore as Flink's caches are. In
// async mode the lookups of a batch are in flight only inside
// ProcessBatch, which returns when each of them completed (or fails the
// job); so a checkpoint barrier, which the runtime handles between calls,
// never finds a row in flight, and nothing needs to be written for it
// (Flink's AsyncWaitOperator keeps in-flight inputs in operator state
// because it returns to its mailbox with elements outstanding; a batch is
// this runtime's unit of work, so waiting for the batch is waiting at the
// barrier). Watermarks pass after the rows of the batches before them.
func NewJoin(spec Spec) (exec.Operator, error) {
	switch spec.Cache.Kind {
	case CacheFull:
		if spec.Loader == nil {
			return nil, fmt.Errorf("lookup table %s: 'lookup.cache' = 'FULL' needs a connector that can scan the table", spec.Table)
		}
	default:
		if spec.Fetcher == nil {
			return nil, fmt.Errorf("lookup table %s: the connector cannot look rows up by key; use 'lookup.cache' = 'FULL'", spec.Table)
		}
	}
	if len(spec.DimKeyCols) != spec.KeyWidth || spec.KeyWidth == 0 {
		return nil, fmt.Errorf("lookup table %s: %d key values for %d key columns", spec.Table, spec.KeyWidth, len(spec.DimKeyCols))
	}
	if a := spec.Async; a != nil && a.Capacity <= 0 {
		return nil, fmt.Errorf("lookup table %s: async lookup capacity must be positive, is %d", spec.Table, a.Capacity)
	}
	return &join{spec: spec}, nil
}

type join struct {
	spec     Spec
	ctx      *exec.OperatorContext
	key      exec.Projector
	prepare  exec.Projector
	residual exec.Predicate

	full       *fullIndex
	nextReload int64 // epoch ms; 0: never
	// reload is the full cache's load in the background, when one runs:
	// lookups use the old cache until it is done (as Flink's full cache
	// does), and ProcessBatch swaps the new one in.
	reload  *reloading
	partial *partialCache

	keys    []types.Value // KeyWidth per input row of the batch
	joined  types.Row
	out     *types.Batch
	results [][]types.Row // per input row of the batch (async)
	firsts  []int32       // per input row: its first row in the full cache
	hashes  []uint64      // per input row: its key's hash
	sink    int32         // keeps the touching loads of processFull
	done    chan int
}

// Stateless implements exec.StatelessOperator: see NewJoin.
func (*join) Stateless() {}

func (j *join) Open(ctx *exec.OperatorContext) error {
	j.ctx = ctx
	var err error
	if j.key, err = j.spec.Key(); err != nil {
		return err
	}
	if j.spec.Prepare != nil {
		if j.prepare, err = j.spec.Prepare(); err != nil {
			return err
		}
	}
	if j.spec.Residual != nil {
		if j.residual, err = j.spec.Residual(); err != nil {
			return err
		}
	}
	j.joined = make(types.Row, j.spec.LeftWidth+j.spec.DimWidth)
	switch j.spec.Cache.Kind {
	case CacheFull:
		if err := j.load(0); err != nil {
			return err
		}
	case CachePartial:
		j.partial = newPartialCache(j.spec.Cache)
	}
	return nil
}

func (j *join) now() int64 {
	if j.ctx != nil && j.ctx.Now != nil {
		return j.ctx.Now()
	}
	return time.Now().UnixMilli()
}

func (j *join) bg() context.Context {
	if j.ctx != nil && j.ctx.Ctx != nil {
		return j.ctx.Ctx
	}
	return context.Background()
}

// load fills the full cache, on the task's goroutine: the first load,
// which the join waits for (as Flink's does); due is when the load was
// scheduled.
func (j *join) load(due int64) error {
	start := j.now()
	ix, err := j.loadIndex(j.bg(), j.prepare)
	if err != nil {
		return err
	}
	j.full = ix
	j.nextReload = nextReload(j.spec.Cache, start, j.now(), due)
	return nil
}

// loadIndex reads the whole table into a new index, turning its rows into
// dimension rows with prepare (nil: as they are).
func (j *join) loadIndex(ctx context.Context, prepare exec.Projector) (*fullIndex, error) {
	ix := newFullIndex(j.spec.DimKeyCols)
	err := j.spec.Loader.Load(ctx, func(r types.Row) error {
		if prepare != nil {
			d := make(types.Row, j.spec.DimWidth)
			if err := prepare.Project(r, d); err != nil {
				return err
			}
			r = d
		}
		ix.add(r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading the full lookup cache of table %s: %w", j.spec.Table, err)
	}
	ix.build(j.spec.DimWidth)
	return ix, nil
}

// reloading is a reload of the full cache running on a goroutine the
// join owns (Close waits for it).
type reloading struct {
	start, due int64
	cancel     context.CancelFunc
	done       chan struct{}
	// Set by the goroutine before done is closed: the new index (nil when
	// the table had not changed), or why the reload failed.
	ix  *fullIndex
	err error
}

// maybeReload starts a reload of the full cache in the background when
// it is due, and swaps in the one that finished.
func (j *join) maybeReload() error {
	if r := j.reload; r != nil {
		select {
		case <-r.done:
		default:
			return nil // still loading: the old cache serves
		}
		return j.finishReload()
	}
	if j.nextReload == 0 {
		return nil
	}
	now := j.now()
	if now < j.nextReload {
		return nil
	}
	prepare := exec.Projector(nil)
	if j.spec.Prepare != nil {
		// The goroutine's own projector: a projector is not shared.
		var err error
		if prepare, err = j.spec.Prepare(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(j.bg())
	r := &reloading{start: now, due: j.nextReload, cancel: cancel, done: make(chan struct{})}
	j.reload = r
	go func() {
		defer close(r.done)
		if j.spec.Cache.OnlyWhenChanged {
			changed, err := j.spec.Loader.Changed(ctx)
			if err != nil {
				r.err = fmt.Errorf("checking lookup table %s for changes: %w", j.spec.Table, err)
				return
			}
			if !changed {
				return
			}
		}
		r.ix, r.err = j.loadIndex(ctx, prepare)
	}()
	return nil
}

// finishReload swaps in the cache a finished reload built. A failed
// reload fails the job, as it does in Flink.
func (j *join) finishReload() error {
	r := j.reload
	j.reload = nil
	r.cancel()
	if r.err != nil {
		return r.err
	}
	if r.ix != nil {
		j.full = r.ix
	}
	j.nextReload = nextReload(j.spec.Cache, r.start, j.now(), r.due)
	return nil
}

// AwaitReload waits for a reload of the full cache in flight, if any, and
// swaps its cache in (as the next batch would once it is done); tests of
// a connector's Loader use it to see a reload's outcome at a known point.
func (j *join) AwaitReload() error {
	if j.reload == nil {
		return nil
	}
	<-j.reload.done
	return j.finishReload()
}

// prepareAll turns fetched rows into dimension rows, in place.
func (j *join) prepareAll(rows []types.Row) error {
	for i, r := range rows {
		d, err := j.prepared(r)
		if err != nil {
			return err
		}
		rows[i] = d
	}
	return nil
}

// prepared turns a connector row into a dimension row.
func (j *join) prepared(r types.Row) (types.Row, error) {
	if j.prepare == nil {
		return r, nil
	}
	d := make(types.Row, j.spec.DimWidth)
	if err := j.prepare.Project(r, d); err != nil {
		return nil, err
	}
	return d, nil
}

// fetch looks key up through the Fetcher, retrying a miss as Retry says.
// It may run on several goroutines at once, so it leaves the rows as the
// connector returned them (prepareAll, on the task's goroutine, finishes
// them).
func (j *join) fetch(ctx context.Context, key types.Row) ([]types.Row, error) {
	attempts := 0
	for {
		rows, err := j.spec.Fetcher.Fetch(ctx, key, nil)
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 || j.spec.Retry == nil || attempts >= j.spec.Retry.MaxAttempts {
			return rows, nil
		}
		attempts++
		if err := wait(ctx, j.spec.Retry.Delay); err != nil {
			return nil, err
		}
	}
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (j *join) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if j.out == nil {
		j.out = types.NewBatch(j.spec.LeftWidth+j.spec.DimWidth, max(b.Cap(), 1))
	}
	n := b.Len()
	kw := j.spec.KeyWidth
	if cap(j.keys) < n*kw {
		j.keys = make([]types.Value, n*kw)
	}
	j.keys = j.keys[:n*kw]
	for i, r := range b.Rows {
		if err := j.key.Project(r, j.keys[i*kw:(i+1)*kw]); err != nil {
			return err
		}
	}
	var err error
	switch {
	case j.spec.Cache.Kind == CacheFull:
		err = j.processFull(b, out)
	case j.spec.Async != nil:
		err = j.processAsync(b, out)
	default:
		err = j.processSync(b, out)
	}
	if err != nil {
		return err
	}
	return j.flush(out)
}

func (j *join) keyOf(i int) (types.Row, bool) {
	kw := j.spec.KeyWidth
	k := types.Row(j.keys[i*kw : (i+1)*kw])
	for _, v := range k {
		if v.IsNull() {
			return k, false
		}
	}
	return k, true
}

// processFull joins a batch against the full cache in two passes: first
// every row's key is found in the index, then the rows are joined. The
// table is large and looked up at random, so each lookup is a cache miss;
// a tight first pass lets the processor have the misses of many rows in
// flight at once instead of one after the other.
func (j *join) processFull(b *types.Batch, out exec.Output) error {
	if err := j.maybeReload(); err != nil {
		return err
	}
	n := b.Len()
	if cap(j.firsts) < n {
		j.firsts = make([]int32, n)
	}
	firsts := j.firsts[:n]
	if cap(j.hashes) < n {
		j.hashes = make([]uint64, n)
	}
	hashes := j.hashes[:n]
	ix := j.full
	for i := range firsts {
		key, ok := j.keyOf(i)
		if !ok || ix.n == 0 {
			hashes[i] = 0
			firsts[i] = -1
			continue
		}
		hashes[i] = hashKey(key)
		firsts[i] = 0
	}
	// Touch the slots of the batch in a loop of independent loads, so
	// that the processor has many misses in flight; the probes that
	// follow find the slots in the cache.
	var sink int32
	for i, h := range hashes {
		if firsts[i] == 0 {
			sink += ix.slots[h&ix.mask].first
		}
	}
	for i := range firsts {
		if firsts[i] < 0 {
			firsts[i] = 0
			continue
		}
		key, _ := j.keyOf(i)
		firsts[i] = ix.lookupSlot(hashes[i], key).first
	}
	// The same for the first row of each key (its first and last value:
	// a row may straddle cache lines).
	for _, f := range firsts {
		if f != 0 {
			sink += int32(ix.arena[int(f-1)*ix.width].K) + int32(ix.arena[int(f)*ix.width-1].K)
		}
	}
	j.sink = sink
	if j.spec.Retry != nil {
		for i := range firsts {
			key, ok := j.keyOf(i)
			for attempts := 0; ok && firsts[i] == 0 && attempts < j.spec.Retry.MaxAttempts; attempts++ {
				// A miss on the full cache can only turn into a hit by a
				// reload: wait, then reload if one is due.
				if err := wait(j.bg(), j.spec.Retry.Delay); err != nil {
					return err
				}
				if err := j.maybeReload(); err != nil {
					return err
				}
				ix = j.full
				if ix.n > 0 {
					firsts[i] = ix.lookupSlot(hashKey(key), key).first
				}
			}
		}
	}
	lw := j.spec.LeftWidth
	for i, r := range b.Rows {
		kind := b.Kinds[i]
		matched := false
		for d := firsts[i]; d != 0; d = ix.next[d-1] {
			row := ix.row(d - 1)
			if j.residual == nil {
				if err := j.room(out); err != nil {
					return err
				}
				o := j.out.Append(kind)
				copy(o, r)
				copy(o[lw:], row)
				matched = true
				continue
			}
			ok, err := j.pair(kind, r, row, out)
			if err != nil {
				return err
			}
			matched = matched || ok
		}
		if !matched && j.spec.LeftOuter {
			if err := j.pad(kind, r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func hashKey(key types.Row) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, v := range key {
		h = types.Hash(h, v)
	}
	return h
}

func (j *join) processSync(b *types.Batch, out exec.Output) error {
	ctx := j.bg()
	for i, r := range b.Rows {
		key, ok := j.keyOf(i)
		if !ok {
			if err := j.emit(b.Kinds[i], r, nil, out); err != nil {
				return err
			}
			continue
		}
		rows, err := j.lookupCached(ctx, key)
		if err != nil {
			return err
		}
		if err := j.emit(b.Kinds[i], r, rows, out); err != nil {
			return err
		}
	}
	return nil
}

// lookupCached serves key from the partial cache or fetches it.
func (j *join) lookupCached(ctx context.Context, key types.Row) ([]types.Row, error) {
	if j.partial != nil {
		if rows, ok := j.partial.get(key, j.now()); ok {
			return rows, nil
		}
	}
	rows, err := j.fetch(ctx, key)
	if err == nil {
		err = j.prepareAll(rows)
	}
	if err != nil {
		return nil, fmt.Errorf("lookup in table %s: %w", j.spec.Table, err)
	}
	if j.partial != nil {
		j.partial.put(key, rows, j.now())
	}
	return rows, nil
}

// errTimeout is Flink's message for an async lookup that took longer than
// table.exec.async-lookup.timeout.
var errTimeout = errors.New("Async function call has timed out.")

// processAsync looks the keys of a batch up with at most Capacity
// lookups in flight, on goroutines it waits for before it returns.
func (j *join) processAsync(b *types.Batch, out exec.Output) error {
	n := b.Len()
	if cap(j.results) < n {
		j.results = make([][]types.Row, n)
	}
	j.results = j.results[:n]
	clear(j.results)
	var pending []int
	ready := make([]bool, n)
	for i := range b.Rows {
		key, ok := j.keyOf(i)
		if !ok {
			ready[i] = true
			continue
		}
		if j.partial != nil {
			if rows, ok := j.partial.get(key, j.now()); ok {
				j.results[i], ready[i] = rows, true
				continue
			}
		}
		pending = append(pending, i)
	}
	a := j.spec.Async
	if j.spec.Async.Unordered {
		// Rows whose result is known leave first, the others as their
		// lookups complete.
		for i, r := range b.Rows {
			if ready[i] {
				if err := j.emit(b.Kinds[i], r, j.results[i], out); err != nil {
					return err
				}
			}
		}
	}
	if len(pending) > 0 {
		ctx, cancel := context.WithCancel(j.bg())
		defer cancel()
		if cap(j.done) < len(pending) {
			j.done = make(chan int, max(len(pending), b.Cap()))
		}
		jobs := make(chan int, len(pending))
		for _, i := range pending {
			jobs <- i
		}
		close(jobs)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for w := 0; w < min(a.Capacity, len(pending)); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					if ctx.Err() != nil {
						errs[i] = ctx.Err()
						j.done <- i
						continue
					}
					key, _ := j.keyOf(i)
					rctx, rcancel := ctx, context.CancelFunc(func() {})
					if a.Timeout > 0 {
						rctx, rcancel = context.WithTimeout(ctx, a.Timeout)
					}
					rows, err := j.fetch(rctx, key)
					if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						err = errTimeout
					}
					rcancel()
					j.results[i], errs[i] = rows, err
					j.done <- i
				}
			}()
		}
		var first error
		for range pending {
			i := <-j.done
			if first == nil && errs[i] != nil {
				first = errs[i]
				cancel()
			}
			if first != nil {
				continue
			}
			if err := j.prepareAll(j.results[i]); err != nil {
				first = err
				cancel()
				continue
			}
			if j.partial != nil {
				key, _ := j.keyOf(i)
				j.partial.put(key, j.results[i], j.now())
			}
			ready[i] = true
			if a.Unordered {
				if err := j.emit(b.Kinds[i], b.Rows[i], j.results[i], out); err != nil {
					first = err
					cancel()
				}
			}
		}
		wg.Wait()
		if first != nil {
			return fmt.Errorf("lookup in table %s: %w", j.spec.Table, first)
		}
	}
	if !a.Unordered {
		for i, r := range b.Rows {
			if err := j.emit(b.Kinds[i], r, j.results[i], out); err != nil {
				return err
			}
		}
	}
	return nil
}

// emit joins r with the dimension rows found for it.
func (j *join) emit(kind types.RowKind, r types.Row, dims []types.Row, out exec.Output) error {
	matched := false
	for _, d := range dims {
		ok, err := j.pair(kind, r, d, out)
		if err != nil {
			return err
		}
		matched = matched || ok
	}
	if matched || !j.spec.LeftOuter {
		return nil
	}
	return j.pad(kind, r, out)
}

// pair emits r joined with d when the residual condition holds.
func (j *join) pair(kind types.RowKind, r, d types.Row, out exec.Output) (bool, error) {
	lw := j.spec.LeftWidth
	if j.residual != nil {
		copy(j.joined, r)
		copy(j.joined[lw:], d)
		ok, err := j.residual.Test(j.joined)
		if err != nil || !ok {
			return false, err
		}
	}
	if err := j.room(out); err != nil {
		return false, err
	}
	o := j.out.Append(kind)
	copy(o, r)
	copy(o[lw:], d)
	return true, nil
}

// pad emits r with NULLs for the dimension columns (LEFT JOIN).
func (j *join) pad(kind types.RowKind, r types.Row, out exec.Output) error {
	if err := j.room(out); err != nil {
		return err
	}
	copy(j.out.Append(kind), r)
	return nil
}

func (j *join) room(out exec.Output) error {
	if !j.out.Full() {
		return nil
	}
	return j.flush(out)
}

func (j *join) flush(out exec.Output) error {
	if j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

func (j *join) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (j *join) Finish(exec.Output) error                         { return nil }

// Close stops a reload in flight and waits for its goroutine.
func (j *join) Close() error {
	if r := j.reload; r != nil {
		r.cancel()
		<-r.done
		j.reload = nil
	}
	return nil
}

var _ exec.StatelessOperator = (*join)(nil)
