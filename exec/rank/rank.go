// Package rank owns the deduplication and Top-N operators of the runtime,
// unwindowed and over windows: ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)
// filtered to rn = 1 (deduplication, keep first or keep last row on
// processing or event time) or to a rank range (Top-N over insert-only or
// updating input), and the window variants that rank the rows of each window
// of a window TVF or window aggregate once, when the window fires.
//
// Every operator here is an exec.KeyedOperator: its state is the kv
// backend the runtime owns for its instance (snapshots, restores, state
// TTL and rescaling are the backend's), with a write-back cache of decoded
// entries in front of it so that a hot key costs no backend access per
// row (exec/internal/statecache; the window Top-N addresses its entries by
// partition and window, the window as namespace). Each operator's state
// layout is documented beside it.
package rank

import (
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/types"
)

// emitter is exec.Emitter with the operator's output and, for the Top-N
// variants that output it, the rank number as a last column.
type emitter struct {
	exec.Emitter
	out      exec.Output
	inWidth  int
	withRank bool // append the rank number as the last column
}

// init prepares the output batch for input rows of width w; it returns an
// error when a later batch has a different width.
func (e *emitter) init(w int) error {
	if !e.Ready() {
		e.inWidth = w
		ow := w
		if e.withRank {
			ow++
		}
		e.Init(ow, 0)
		return nil
	}
	if w != e.inWidth {
		return fmt.Errorf("input rows of width %d after rows of width %d", w, e.inWidth)
	}
	return nil
}

// emit appends row with the given kind (and rank number rn when the output
// carries one).
func (e *emitter) emit(kind types.RowKind, row types.Row, rn int64) error {
	dst, err := e.Row(kind, e.out)
	if err != nil {
		return err
	}
	copy(dst, row)
	if e.withRank {
		dst[e.inWidth] = types.Int(rn)
	}
	return nil
}

// flush pushes what is buffered.
func (e *emitter) flush() error { return e.Flush(e.out) }

// checkColumns reports a column that is not in rows of width w.
func checkColumns(w int, cols []int, keys []exec.SortKey) error {
	for _, c := range cols {
		if c >= w {
			return fmt.Errorf("column %d out of range for rows of width %d", c, w)
		}
	}
	for _, k := range keys {
		if k.Col >= w {
			return fmt.Errorf("sort column %d out of range for rows of width %d", k.Col, w)
		}
	}
	return nil
}

func metricsOf(ctx *exec.OperatorContext) *exec.OperatorMetrics {
	if ctx != nil && ctx.Metrics != nil {
		return ctx.Metrics
	}
	return &exec.OperatorMetrics{}
}

// ttlTimer is state time-to-live for the operators' caches: statecache's
// Sweeper (the rule, the kv.Options, the sweep timer), with the clock of
// the operator context. Expired cached entries are ignored when touched
// and, so that idle keys do not stay in memory, dropped by a sweep on a
// processing-time timer set for the moment the oldest cached entry
// expires.
type ttlTimer struct {
	statecache.Sweeper
	ctx *exec.OperatorContext
}

func (t *ttlTimer) open(ctx *exec.OperatorContext, what string) error {
	t.ctx = ctx
	if t.TTL > 0 && (ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil) {
		return fmt.Errorf("%s: state TTL needs a clock and processing timers", what)
	}
	return nil
}

// now returns the processing time, or 0 when TTL is off (nothing reads it).
func (t *ttlTimer) now() int64 {
	if t.TTL <= 0 {
		return 0
	}
	return t.ctx.Now()
}

// schedule makes sure a sweep runs when state last written at oldest
// expires.
func (t *ttlTimer) schedule(oldest int64) {
	if t.TTL > 0 {
		t.Schedule(t.ctx.RegisterProcessingTimer, oldest+t.TTL)
	}
}

var (
	_ exec.ProcessingTimeHandler = (*dedup)(nil)
	_ exec.ProcessingTimeHandler = (*topN)(nil)
	_ exec.Operator              = (*windowRank)(nil)
)
