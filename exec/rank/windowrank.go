package rank

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/sql/types"
)

// WindowRankSpec describes a window Top-N or window deduplication over the
// output of a window TVF or window aggregate: ROW_NUMBER() OVER (PARTITION BY
// window_start, window_end, … ORDER BY …).
type WindowRankSpec struct {
	PartitionCols                []int // PARTITION BY columns, not including the window columns
	WindowStartCol, WindowEndCol int
	SortKeys                     []exec.SortKey
	RankStart, RankEnd           int64
	OutputRankNumber             bool
	// Window deduplication is RankStart=RankEnd=1 with a time-attribute sort
	// key; same operator. Deduplicate marks it: Flink's window deduplication
	// keeps the later of two rows with the same rowtime when it keeps the
	// last row (ORDER BY … DESC), where window Top-N keeps the earlier one.
	Deduplicate bool
	// Loc is the session time zone when the windows were computed on a
	// TIMESTAMP_LTZ time attribute: window_end then holds local wall-clock
	// time, and a window fires when the watermark reaches the instant of
	// window_end - 1 there. nil means window_end is compared as is.
	Loc *time.Location
}

// NewWindowRank returns the window rank operator. It buffers the best
// RankEnd rows of every (window, partition) and, when the watermark reaches
// window_end - 1, emits ranks RankStart…RankEnd of each partition of the
// window as +I rows (with rn as the last column when OutputRankNumber), in
// rank order, partitions in order of first arrival, windows in ascending
// window_end; then it drops the window and forwards the watermark. Rows of
// a window that has already fired are late: they are dropped and counted in
// LateRowsDropped. Ties rank by arrival, as in Flink's WindowRankProcessor.
func NewWindowRank(spec WindowRankSpec) (exec.Operator, error) {
	for _, c := range spec.PartitionCols {
		if c < 0 {
			return nil, fmt.Errorf("window rank: invalid partition column %d", c)
		}
	}
	for _, k := range spec.SortKeys {
		if k.Col < 0 {
			return nil, fmt.Errorf("window rank: invalid sort column %d", k.Col)
		}
	}
	if spec.WindowStartCol < 0 || spec.WindowEndCol < 0 {
		return nil, fmt.Errorf("window rank: invalid window columns %d, %d", spec.WindowStartCol, spec.WindowEndCol)
	}
	if err := checkRange(spec.RankStart, spec.RankEnd); err != nil {
		return nil, fmt.Errorf("window rank: %w", err)
	}
	if spec.Deduplicate && (spec.RankStart != 1 || spec.RankEnd != 1 || len(spec.SortKeys) != 1) {
		return nil, fmt.Errorf("window rank: window deduplication needs rank range [1, 1] and one sort key, got [%d, %d] and %d", spec.RankStart, spec.RankEnd, len(spec.SortKeys))
	}
	return &windowRank{
		spec:        spec,
		zone:        tz.New(spec.Loc),
		wm:          exec.MinWatermark,
		latestFirst: spec.Deduplicate && spec.SortKeys[0].Desc,
		em:          emitter{withRank: spec.OutputRankNumber},
	}, nil
}

// rankWindow is the state of one window: the best rows of each partition.
type rankWindow struct {
	start, end int64
	fire       int64 // the watermark at which the window fires
	keys       *keyed.Table
	parts      []*sortedRows // by partition id, which is the order of first arrival
	marks      []uint8       // per partition id: snapshot.MarkDirty, snapshot.MarkPersisted
}

type windowRank struct {
	spec        WindowRankSpec
	zone        tz.Zone
	latestFirst bool // a tie goes before the rows already held
	metrics     *exec.OperatorMetrics
	wm          int64
	width       int

	windows    []*rankWindow // ascending (end, start)
	last       *rankWindow   // the window of the previous row
	spareWins  []*rankWindow
	spareParts []*sortedRows

	em emitter

	// checkpointing: see snapshot.go
	ctx       *exec.OperatorContext
	hashCols  []int // partition columns, window_start, window_end: how the input is hashed
	restored  []snapshot.Entry
	restoring bool
	snapBuf   []byte
	tracking  bool
	dels      snapshot.Deletes
}

func (w *windowRank) Open(ctx *exec.OperatorContext) error {
	w.metrics = metricsOf(ctx)
	w.ctx = ctx
	w.hashCols = append(append([]int(nil), w.spec.PartitionCols...), w.spec.WindowStartCol, w.spec.WindowEndCol)
	return w.applyRestored()
}

func (w *windowRank) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := w.em.init(b.Width()); err != nil {
		return fmt.Errorf("window rank: %w", err)
	}
	if w.width == 0 {
		w.width = b.Width()
		cols := append([]int{w.spec.WindowStartCol, w.spec.WindowEndCol}, w.spec.PartitionCols...)
		if err := checkColumns(w.width, cols, w.spec.SortKeys); err != nil {
			return fmt.Errorf("window rank: %w", err)
		}
	}
	var dropped int64
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("window rank: the input must be insert-only, got a %s row", k)
		}
		sv, ev := row[w.spec.WindowStartCol], row[w.spec.WindowEndCol]
		if sv.IsNull() || ev.IsNull() {
			return fmt.Errorf("window rank: window_start or window_end is NULL")
		}
		win := w.last
		if win == nil || win.end != ev.N || win.start != sv.N {
			if win = w.window(sv.N, ev.N); win == nil {
				dropped++
				continue
			}
			w.last = win
		}
		id, added := win.keys.Lookup(row, types.HashColumns(row, w.spec.PartitionCols))
		if added && int(id) == len(win.parts) {
			win.parts = append(win.parts, w.newPart())
		}
		if w.add(win.parts[id], row) {
			w.touch(win, id)
		}
	}
	if dropped > 0 {
		w.metrics.LateRowsDropped.Add(dropped)
	}
	return nil
}

// window returns the live window [start, end), creating it, or nil when it
// has fired already.
func (w *windowRank) window(start, end int64) *rankWindow {
	fire := w.zone.FireTime(end - 1)
	if fire <= w.wm {
		return nil
	}
	i := len(w.windows)
	for i > 0 {
		p := w.windows[i-1]
		if p.end == end && p.start == start {
			return p
		}
		if p.end < end || (p.end == end && p.start < start) {
			break
		}
		i--
	}
	var win *rankWindow
	if n := len(w.spareWins); n > 0 {
		win = w.spareWins[n-1]
		w.spareWins = w.spareWins[:n-1]
	} else {
		win = &rankWindow{keys: keyed.NewTable(w.spec.PartitionCols)}
	}
	win.start, win.end, win.fire = start, end, fire
	w.windows = append(w.windows, nil)
	copy(w.windows[i+1:], w.windows[i:])
	w.windows[i] = win
	return win
}

func (w *windowRank) newPart() *sortedRows {
	if n := len(w.spareParts); n > 0 {
		p := w.spareParts[n-1]
		w.spareParts = w.spareParts[:n-1]
		if p.width == w.width {
			return p
		}
	}
	return &sortedRows{width: w.width}
}

// add keeps row if it ranks within RankEnd in its partition, and reports
// whether it did.
func (w *windowRank) add(p *sortedRows, row types.Row) bool {
	var pos int
	if w.latestFirst {
		pos = p.lowerBound(w.spec.SortKeys, row)
	} else {
		pos = p.upperBound(w.spec.SortKeys, row)
	}
	if int64(pos) >= w.spec.RankEnd {
		return false
	}
	p.insert(pos, row)
	if int64(p.len()) > w.spec.RankEnd {
		p.truncate(int(w.spec.RankEnd))
	}
	return true
}

func (w *windowRank) ProcessWatermark(wm int64, out exec.Output) error {
	if wm > w.wm {
		w.wm = wm
		w.em.out = out
		if err := w.fire(); err != nil {
			return err
		}
		if err := w.em.flush(); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

// fire emits and drops every window due at the current watermark.
func (w *windowRank) fire() error {
	n := 0
	for n < len(w.windows) && w.windows[n].fire <= w.wm {
		win := w.windows[n]
		w.dropped(win)
		win.marks = win.marks[:0]
		for _, p := range win.parts {
			for i := 0; i < p.len(); i++ {
				r := int64(i) + 1
				if r < w.spec.RankStart {
					continue
				}
				if err := w.em.emit(types.Insert, p.at(i), r); err != nil {
					return err
				}
			}
			p.reset()
			w.spareParts = append(w.spareParts, p)
		}
		clear(win.parts)
		win.parts = win.parts[:0]
		win.keys.Reset()
		w.spareWins = append(w.spareWins, win)
		n++
	}
	if n > 0 {
		w.windows = append(w.windows[:0], w.windows[n:]...)
		clear(w.windows[len(w.windows):][:n])
		w.last = nil
	}
	return nil
}

func (w *windowRank) Finish(exec.Output) error { return nil }

func (w *windowRank) Close() error {
	w.windows, w.spareWins, w.spareParts, w.last = nil, nil, nil, nil
	return nil
}
