package rank

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
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

// Window rank state (namespace = window end, 8 bytes big-endian):
//
//	"rows"     key (partition values, window_start), ns end → [uvarint n][n
//	           rows in rank order]: the best RankEnd rows so far
//	timers     the event-time timer service (kv.TimerService, states
//	           "rank/timers/…"): one timer per (window, partition) under
//	           the rows' key, at the window's fire time, namespace
//	           end|start|arrival, so firing finds the partitions of the
//	           fired windows in order of window and first arrival without
//	           a scan of the state
//	"windows"  key "w"+key group in each key group → sorted map end|start → the
//	           latest arrival number: the live windows, read back on a
//	           restore (a handful of entries per key group)
//	"progress" key "p"+key group in each key group → the watermark, written at
//	           checkpoints, so rows of windows fired before a restore stay
//	           late (Flink keeps it as operator state); the smallest wins
//	           when key groups of several instances meet
//
// The rows' key group is that of the columns the input is hashed by
// (partition columns, window_start, window_end); index, windows and
// progress live in every key group of the instance, so a rescale splits
// them with the rows.
const (
	rowsState     = "rows"
	windowsState  = "windows"
	progressState = "progress"
)

// The keys of the per-key-group states: a tag and the key group, so that
// each key lives in one key group, as every key does.
const (
	windowsTag  = 'w'
	progressTag = 'p'
)

// setGroupKey makes (tag, kg) the backend's current key, in key group kg.
func (w *windowRank) setGroupKey(kg int, tag byte) error {
	k := binary.BigEndian.AppendUint16(append(w.gkey[:0], tag), uint16(kg))
	return w.b.SetCurrentKeyInGroup(kg, k)
}

// rankWindow is a live window.
type rankWindow struct {
	start, end int64
	fire       int64 // the watermark at which the window fires
}

type windowRank struct {
	spec        WindowRankSpec
	zone        tz.Zone
	latestFirst bool // a tie goes before the rows already held
	metrics     *exec.OperatorMetrics
	wm          int64
	wmStored    int64 // the watermark in the backend
	width       int   // of the input rows; 0 until the first row (or restored row)
	checked     bool  // the columns were checked against the input's width

	windows []*rankWindow // ascending (end, start)
	last    *rankWindow   // the window of the previous row
	seq     int64         // arrival number of the latest new (window, partition)

	em       emitter
	hashCols []int // partition columns, window_start, window_end: how the input is hashed

	b        *kv.Backend
	rows     *kv.ValueState[*sortedRows]
	timers   *kv.TimerService
	wins     *kv.SortedMapState[[]byte, int64]
	progress *kv.ValueState[int64]
	c        *statecache.Cache[*sortedRows]
	parts    topNParts // by cache id
	codec    *partCodec
	buf      []byte
	ns       [8]byte
	uk       [24]byte
	gkey     []byte
	pkey     []byte // a new partition's kv key, for its index entry

	maxCached int // entries the cache may hold, overriding the backend's bound (tests)
}

var _ exec.KeyedOperator = (*windowRank)(nil)

func (w *windowRank) OpenKeyedState(b *kv.Backend) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("window rank: %w", err)
		}
	}()
	if b.Declared("index") {
		return fmt.Errorf("the checkpoint keeps the window Top-N in an older layout (state %q, before the timer service); this version cannot restore it: start the job without it", "index")
	}
	w.hashCols = append(append([]int(nil), w.spec.PartitionCols...), w.spec.WindowStartCol, w.spec.WindowEndCol)
	w.codec = &partCodec{id: "rank.window.rows/1", what: "window rank"}
	if w.rows, err = kv.NewValueState[*sortedRows](b, rowsState, w.codec, kv.Options{}); err != nil {
		return err
	}
	if w.timers, err = kv.NewTimerService(b, "rank"); err != nil {
		return err
	}
	if w.wins, err = kv.NewSortedMapState[[]byte, int64](b, windowsState, kv.Bytes{}, kv.Int64{}, kv.Options{}); err != nil {
		return err
	}
	if w.progress, err = kv.NewValueState[int64](b, progressState, kv.Int64{}, kv.Options{}); err != nil {
		return err
	}
	w.b = b
	fresh, err := statecache.Empty(b)
	if err != nil {
		return err
	}
	// The kv key is the partition and window_start; the namespace the
	// window end (8 bytes big-endian).
	w.c = statecache.New(b, w.rows, &w.parts, statecache.Config{
		KeyCols: w.hashCols, KeyLen: len(w.spec.PartitionCols) + 1, ValueBytes: 2 * valueBytes, Limit: w.maxCached,
		Namespace: func(dst []byte, rest []types.Value) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(rest[0].N))
		},
	}, fresh)
	w.parts.c = w.c
	// A restored backend: the watermark and the live windows.
	first := true
	kgs := b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := w.setGroupKey(kg, progressTag); err != nil {
			return err
		}
		wm, ok, err := w.progress.Get(nil)
		if err != nil {
			return err
		}
		if ok && (first || wm < w.wm) {
			w.wm, first = wm, false
		}
		if err := w.setGroupKey(kg, windowsTag); err != nil {
			return err
		}
		var bad bool
		if err := w.wins.Iterate(nil, func(uk []byte, seq int64) bool {
			if len(uk) != 16 {
				bad = true
				return false
			}
			end, start := decodeInt64(uk), decodeInt64(uk[8:])
			w.window(start, end)
			w.seq = max(w.seq, seq)
			return true
		}); err != nil {
			return err
		}
		if bad {
			return fmt.Errorf("corrupt state: a window entry of the wrong length")
		}
	}
	w.wmStored = w.wm
	return nil
}

// PrepareSnapshot writes back the cached partitions and the watermark.
func (w *windowRank) PrepareSnapshot(exec.CheckpointID) error {
	if err := w.c.Flush(); err != nil {
		return fmt.Errorf("window rank: %w", err)
	}
	if w.wm == w.wmStored {
		return nil
	}
	kgs := w.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := w.setGroupKey(kg, progressTag); err != nil {
			return fmt.Errorf("window rank: %w", err)
		}
		if err := w.progress.Put(nil, w.wm); err != nil {
			return fmt.Errorf("window rank: %w", err)
		}
	}
	w.wmStored = w.wm
	return nil
}

func (w *windowRank) Open(ctx *exec.OperatorContext) error {
	if w.b == nil {
		return fmt.Errorf("window rank: opened without its keyed state backend")
	}
	w.metrics = metricsOf(ctx)
	return nil
}

func (w *windowRank) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := w.em.init(b.Width()); err != nil {
		return fmt.Errorf("window rank: %w", err)
	}
	if !w.checked {
		cols := append([]int{w.spec.WindowStartCol, w.spec.WindowEndCol}, w.spec.PartitionCols...)
		if err := checkColumns(b.Width(), cols, w.spec.SortKeys); err != nil {
			return fmt.Errorf("window rank: %w", err)
		}
		w.checked = true
		w.setWidth(b.Width())
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
		id, p, err := w.partition(row, win)
		if err != nil {
			return fmt.Errorf("window rank: %w", err)
		}
		before := p.len()
		if w.add(p, row) {
			w.c.Grew(id, (p.len()-before)*w.width*valueBytes)
			w.c.Written(id)
		}
	}
	if dropped > 0 {
		w.metrics.LateRowsDropped.Add(dropped)
	}
	return nil
}

// partition returns the cache id and rows of row's partition in win,
// loading them on a miss and indexing a partition new to the window.
func (w *windowRank) partition(row types.Row, win *rankWindow) (int32, *sortedRows, error) {
	h := types.HashColumns(row, w.hashCols)
	id, ok, err := w.c.Get(row, h)
	if err != nil {
		return -1, nil, err
	}
	if ok {
		return id, w.parts.p[id], nil
	}
	if id, err = w.c.Create(row, h); err != nil {
		return -1, nil, err
	}
	// New in its window: a timer for its window under its kv key.
	w.pkey = w.pkey[:0]
	for _, c := range w.hashCols[:len(w.spec.PartitionCols)+1] {
		w.pkey = types.AppendValue(w.pkey, row[c])
	}
	w.seq++
	if err := w.b.SetCurrentKey(h, w.pkey); err != nil {
		return id, nil, err
	}
	if err := w.timers.Register(kv.EventTime, win.fire, w.indexKey(win.end, win.start, w.seq)); err != nil {
		return id, nil, err
	}
	kg := kv.KeyGroupOf(h, w.b.MaxParallelism())
	if err := w.setGroupKey(kg, windowsTag); err != nil {
		return id, nil, err
	}
	if err := w.wins.Put(nil, w.indexKey(win.end, win.start, 0)[:16], w.seq); err != nil {
		return id, nil, err
	}
	return id, w.parts.p[id], nil
}

// setWidth sets the width of the input rows, known from the first input
// batch or, after a restore, possibly first from a stored row.
func (w *windowRank) setWidth(n int) {
	w.width = n
	w.codec.scratch.width, w.parts.width = n, n
	for _, p := range w.parts.p {
		p.width = n
	}
}

func (w *windowRank) namespace(end int64) []byte {
	binary.BigEndian.PutUint64(w.ns[:], uint64(end))
	return w.ns[:]
}

// indexKey is end|start|seq, each sorting like the number.
func (w *windowRank) indexKey(end, start, seq int64) []byte {
	binary.BigEndian.PutUint64(w.uk[0:], uint64(end)^(1<<63))
	binary.BigEndian.PutUint64(w.uk[8:], uint64(start)^(1<<63))
	binary.BigEndian.PutUint64(w.uk[16:], uint64(seq))
	return w.uk[:]
}

func decodeInt64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

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
	win := &rankWindow{start: start, end: end, fire: fire}
	w.windows = append(w.windows, nil)
	copy(w.windows[i+1:], w.windows[i:])
	w.windows[i] = win
	return win
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
			return fmt.Errorf("window rank: %w", err)
		}
		if err := w.em.flush(); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

// fire emits and clears every window due at the current watermark: the
// cached partitions are written back and those of fired windows dropped
// from the cache, then the timers of the fired windows name their
// partitions, emitted in order of window and first arrival.
func (w *windowRank) fire() error {
	n := 0
	for n < len(w.windows) && w.windows[n].fire <= w.wm {
		n++
	}
	if n == 0 {
		return nil
	}
	if err := w.c.Flush(); err != nil {
		return err
	}
	endCol := len(w.spec.PartitionCols) + 1
	w.c.DropIf(func(id int32) bool { return w.zone.FireTime(w.c.Key(id)[endCol].N-1) <= w.wm })
	err := w.timers.Advance(kv.EventTime, w.wm, func(tm kv.Timer) error {
		if len(tm.Namespace) != 24 {
			return fmt.Errorf("corrupt state: a window timer of the wrong length")
		}
		end, start := decodeInt64(tm.Namespace), decodeInt64(tm.Namespace[8:])
		ns := w.namespace(end)
		p, ok, err := w.rows.Get(ns)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("corrupt state: window [%d, %d) has a timer of a partition without rows", start, end)
		}
		if w.width == 0 {
			// Restored rows fire before any input arrived.
			if err := w.em.init(p.width); err != nil {
				return err
			}
			w.setWidth(p.width)
		}
		for i := 0; i < p.len(); i++ {
			r := int64(i) + 1
			if r < w.spec.RankStart {
				continue
			}
			if err := w.em.emit(types.Insert, p.at(i), r); err != nil {
				return err
			}
		}
		if err := w.rows.Clear(ns); err != nil {
			return err
		}
		if err := w.setGroupKey(tm.KeyGroup, windowsTag); err != nil {
			return err
		}
		return w.wins.Delete(nil, w.indexKey(end, start, 0)[:16])
	})
	if err != nil {
		return err
	}
	clear(w.windows[:n])
	w.windows = append(w.windows[:0], w.windows[n:]...)
	w.last = nil
	return nil
}

func (w *windowRank) Finish(exec.Output) error { return nil }

func (w *windowRank) Close() error {
	w.windows, w.parts.p, w.last, w.c = nil, nil, nil, nil
	return nil
}
