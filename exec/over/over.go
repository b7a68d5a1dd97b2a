// Package over implements Flink's OVER aggregation: every input row is
// emitted with the values of aggregates over a frame of the rows of its
// partition that precede it in time order.
//
// On event time, rows wait in keyed state until the watermark passes their
// timestamp and are then processed in timestamp order; a row whose
// timestamp is at or below the watermark at arrival is late and dropped
// (LateRowsDropped). On processing time rows are processed on arrival.
//
// ROWS frames count rows; RANGE frames span time and include the peers of a
// row (the rows of its partition with the same timestamp): all rows of one
// timestamp see the same aggregate values. Bounded frames keep the rows of
// the frame in state and retract those that leave it.
//
// State: per key a meta entry (frame accumulator and row range), the
// frame's rows and the buffered rows, behind the decoded write-back cache
// of exec/internal/statecache (every key on hashmap, bounded on rocksdb).
// A stored key with buffered rows has an event-time timer in the backend's
// kv.TimerService at its earliest buffered timestamp, so a watermark (also
// after a restore) finds the stored keys it is due for without a scan.
package over

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Unbounded is Spec.Preceding for UNBOUNDED PRECEDING.
const Unbounded = -1

// Spec describes one OVER window and its aggregates.
type Spec struct {
	KeyCols []int // PARTITION BY columns
	// TimeCol is the ORDER BY rowtime column; -1 orders by processing time.
	TimeCol int
	// Rows: a ROWS frame (Preceding rows before the current one); otherwise
	// RANGE (rows up to Preceding milliseconds before the current one).
	Rows      bool
	Preceding int64 // Unbounded, or the frame's PRECEDING offset
	// Aggs evaluates the aggregates; it must support Retract for bounded
	// frames. Their values are appended to each input row.
	Aggs exec.AggsHandle
}

// New returns the OVER aggregate operator for spec. Its input must be
// insert-only; its output is insert-only.
func New(spec Spec) (exec.Operator, error) {
	if spec.Aggs == nil {
		return nil, fmt.Errorf("over aggregate: no aggregates")
	}
	if spec.TimeCol < -1 {
		return nil, fmt.Errorf("over aggregate: invalid time column %d", spec.TimeCol)
	}
	if spec.Preceding < Unbounded {
		return nil, fmt.Errorf("over aggregate: invalid preceding offset %d", spec.Preceding)
	}
	for _, c := range spec.KeyCols {
		if c < 0 {
			return nil, fmt.Errorf("over aggregate: invalid key column %d", c)
		}
	}
	return &operator{spec: spec, wm: exec.MinWatermark}, nil
}

// State names. buffer: event-time rows waiting for the watermark, by
// timestamp (concatenated encoded rows). meta: the frame's accumulator and
// the sequence numbers of its retained rows. rows: the retained rows of a
// bounded frame by sequence number.
const (
	bufferState = "over.buffer"
	metaState   = "over.meta"
	rowsState   = "over.rows"
)

type codec struct{ id string }

func (c codec) ID() string                         { return c.id }
func (c codec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (c codec) Decode(src []byte) ([]byte, error)  { return src, nil }

// metaCodec is the codec of metaState.
var metaCodec = codec{"over.meta/1"}

// timerState names the operator's event-time timers in the backend.
const timerState = "over"

// noTimer is keyState.timer when the backend holds no timer for the key.
const noTimer = int64(math.MinInt64)

// frameRow is a row retained in a bounded frame.
type frameRow struct {
	ts  int64
	row types.Row
}

// group is the buffered rows of one timestamp, in arrival order.
type group struct {
	ts   int64
	rows []types.Row
}

// keyState is the decoded state of one key in the write-back cache
// (statecache) in front of the backend: the frame's accumulator, its
// retained rows (sequence numbers first…next-1) and, on event time, the
// rows waiting for the watermark. The cache writes it back at a checkpoint
// and when it evicts the key (slots.Value).
type keyState struct {
	acc []types.Value

	first, next   int64
	rows          []frameRow // the rows first…next-1: rbuf[head:]
	rbuf          []frameRow
	head          int
	sFirst, sNext int64   // the rows the backend holds
	pend          []group // sorted by timestamp
	bufDirty      bool
	// timer is the time of the event-time timer the backend holds for the
	// key (noTimer: none): the stored key's earliest buffered timestamp,
	// which makes a watermark find the stored keys it is due for.
	timer int64
	// inPend: the key is listed in operator.pendIDs; mark dedupes that
	// list while collecting.
	inPend bool
	mark   uint64
	bytes  int // reported to the cache beyond its fixed estimate
}

type operator struct {
	spec   Spec
	b      *kv.Backend
	buffer *kv.SortedMapState[int64, []byte]
	meta   *kv.ValueState[[]byte]
	rows   *kv.MapState[int64, []byte]
	timers *kv.TimerService
	cache  *statecache.Cache[[]byte]
	keys   []*keyState // by cache id
	ctx    *exec.OperatorContext
	wm     int64
	width  int
	// pendIDs lists the cached keys with buffered rows (and stale ids of
	// keys that left the cache or have none left; see keyState.inPend).
	pendIDs   []int32
	epoch     uint64
	maxCached int // bounds the cache to this many keys (tests)
	frameHint int // initial capacity of a ROWS frame's row array
	// wbErr is the first error of a write-back inside the cache
	// (slots.Value cannot return one).
	wbErr error

	out     *types.Batch
	res     []types.Value
	keyBuf  []byte
	buf     []byte
	slab    []types.Value // backing store of buffered and retained rows
	rslab   []types.Row   // backing store of one-row groups
	one     [1]types.Row
	due     []dueKey
	dueKeys []byte
	// dueEvictions is the cache's eviction count when due was collected.
	dueEvictions int
	keyRow       types.Row // scratch: key values at their columns
	allCols      []int
}

// dueKey is a cached key due at a watermark: its earliest buffered
// timestamp and its encoded key (a range of operator.dueKeys).
type dueKey struct {
	ts         int64
	hash       uint64
	id         int32
	start, end int
}

func (o *operator) bounded() bool { return o.spec.Preceding != Unbounded }

// rowSize estimates the memory of a buffered or retained row.
func rowSize(r types.Row) int { return len(r)*int(unsafe.Sizeof(types.Value{})) + 48 }

func (o *operator) OpenKeyedState(b *kv.Backend) error {
	var err error
	if o.spec.TimeCol >= 0 {
		if o.buffer, err = kv.NewSortedMapState[int64, []byte](b, bufferState, kv.Int64{}, codec{"over.rows/1"}, kv.Options{}); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.timers, err = kv.NewTimerService(b, timerState); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
	}
	if o.meta, err = kv.NewValueState[[]byte](b, metaState, metaCodec, kv.Options{}); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if o.bounded() {
		if o.rows, err = kv.NewMapState[int64, []byte](b, rowsState, kv.Int64{}, codec{"over.row/1"}, kv.Options{}); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
	}
	o.b = b
	if o.spec.Rows && o.bounded() && o.spec.Preceding < 1<<12 {
		// Room for two frames: the frame moves to the front of its array
		// once per Preceding+1 rows instead of growing it.
		o.frameHint = 2 * int(o.spec.Preceding+1)
	}
	fresh, err := statecache.Empty(b)
	if err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	// The accumulator, and a frame of rows on bounded frames (what the
	// rows take beyond it is reported as they come and go: Grew).
	valueBytes := o.spec.Aggs.AccWidth()*int(unsafe.Sizeof(types.Value{})) + 128
	o.cache = statecache.New(b, o.meta, slots{o}, statecache.Config{KeyCols: o.spec.KeyCols, ValueBytes: valueBytes, Limit: o.maxCached}, fresh)
	o.keyRow = make(types.Row, slices.Max(append([]int{0}, o.spec.KeyCols...))+1)
	o.allCols = make([]int, len(o.spec.KeyCols))
	for i := range o.allCols {
		o.allCols[i] = i
	}
	// A restored hashmap backend is in memory anyway: load every key, so
	// that the cache is complete again. On rocksdb keys load on demand,
	// and the timers find the stored keys with buffered rows.
	if err := o.cache.Preload(metaState, metaCodec); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	return o.takeErr()
}

func (o *operator) takeErr() error {
	err := o.wbErr
	o.wbErr = nil
	return err
}

// slots keeps the operator's keyState per cache id (statecache.Slots).
type slots struct{ o *operator }

func (s slots) Grow(n int) {
	for len(s.o.keys) < n {
		s.o.keys = append(s.o.keys, nil)
	}
}

func (s slots) Clear(id int32) { s.o.keys[id] = nil }

// Load decodes a stored key: its meta entry, and the rows of its frame and
// its buffered rows from their states.
func (s slots) Load(id int32, m []byte) error {
	o := s.o
	ks := &keyState{acc: make([]types.Value, o.spec.Aggs.AccWidth()), timer: noTimer}
	var acc types.Row
	var err error
	if ks.first, m, err = varint(m); err == nil {
		if ks.next, m, err = varint(m); err == nil {
			acc, _, err = types.DecodeRow(m)
		}
	}
	if err != nil || len(acc) != len(ks.acc) {
		return fmt.Errorf("over aggregate: corrupt frame state")
	}
	copy(ks.acc, acc)
	// The cache may have evicted another key since it read m: the
	// backend's current key is set here again.
	if err := o.setKey(id); err != nil {
		return err
	}
	for seq := ks.first; seq < ks.next && o.rows != nil; seq++ {
		v, ok, err := o.rows.Get(nil, seq)
		if err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if !ok {
			return fmt.Errorf("over aggregate: corrupt frame state: row %d missing", seq)
		}
		ts, v, err := varint(v)
		if err != nil {
			return fmt.Errorf("over aggregate: corrupt frame state: %w", err)
		}
		r, _, err := types.DecodeRow(v)
		if err != nil {
			return fmt.Errorf("over aggregate: corrupt frame state: %w", err)
		}
		ks.rows = append(ks.rows, frameRow{ts: ts, row: r})
	}
	ks.sFirst, ks.sNext = ks.first, ks.next
	ks.rbuf = ks.rows
	if o.buffer != nil {
		var derr error
		err := o.buffer.Ascend(nil, nil, func(ts int64, v []byte) bool {
			g := group{ts: ts}
			for len(v) > 0 {
				var r types.Row
				if r, v, derr = types.DecodeRow(v); derr != nil {
					return false
				}
				g.rows = append(g.rows, r)
			}
			ks.pend = append(ks.pend, g)
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return fmt.Errorf("over aggregate: buffered rows: %w", err)
		}
	}
	n := 0
	for _, r := range ks.rows {
		n += rowSize(r.row)
	}
	if len(ks.pend) > 0 {
		ks.timer = ks.pend[0].ts // registered when the key was written back
		ks.inPend = true
		o.pendIDs = append(o.pendIDs, id)
		for _, g := range ks.pend {
			for _, r := range g.rows {
				n += rowSize(r)
			}
		}
	}
	o.keys[id] = ks
	o.grew(id, ks, n)
	return nil
}

// Value encodes a key's meta entry for the cache to write back; the
// backend's current key is the key's. The key's frame rows, buffered rows
// and timer, which live in states of their own, are written here too.
func (s slots) Value(id int32) []byte {
	o := s.o
	ks := o.keys[id]
	if err := o.writeBack(ks); err != nil && o.wbErr == nil {
		o.wbErr = err
	}
	o.buf = binary.AppendVarint(o.buf[:0], ks.first)
	o.buf = binary.AppendVarint(o.buf, ks.next)
	o.buf = types.AppendRow(o.buf, ks.acc)
	return o.buf
}

// setKey makes the key of cache id the backend's current key.
func (o *operator) setKey(id int32) error {
	key := o.cache.Key(id)
	o.keyBuf = o.keyBuf[:0]
	for _, v := range key {
		o.keyBuf = types.AppendValue(o.keyBuf, v)
	}
	if err := o.b.SetCurrentKey(types.HashColumns(key, o.allCols), o.keyBuf); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	return nil
}

// writeBack writes what of ks lives outside its meta entry: the frame's
// rows that changed, the buffered rows, the timer.
func (o *operator) writeBack(ks *keyState) error {
	if o.rows != nil {
		for seq := ks.sFirst; seq < min(ks.first, ks.sNext); seq++ {
			if err := o.rows.Delete(nil, seq); err != nil {
				return fmt.Errorf("over aggregate: %w", err)
			}
		}
		for seq := max(ks.sNext, ks.first); seq < ks.next; seq++ {
			r := ks.rows[seq-ks.first]
			o.buf = types.AppendRow(binary.AppendVarint(o.buf[:0], r.ts), r.row)
			if err := o.rows.Put(nil, seq, o.buf); err != nil {
				return fmt.Errorf("over aggregate: %w", err)
			}
		}
	}
	ks.sFirst, ks.sNext = ks.first, ks.next
	if ks.bufDirty {
		if err := o.buffer.Clear(nil); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		for _, g := range ks.pend {
			o.buf = o.buf[:0]
			for _, r := range g.rows {
				o.buf = types.AppendRow(o.buf, r)
			}
			if err := o.buffer.Put(nil, g.ts, o.buf); err != nil {
				return fmt.Errorf("over aggregate: %w", err)
			}
		}
		ks.bufDirty = false
	}
	if o.timers != nil {
		want := noTimer
		if len(ks.pend) > 0 {
			want = ks.pend[0].ts
		}
		if want != ks.timer {
			if ks.timer != noTimer {
				if err := o.timers.Delete(kv.EventTime, ks.timer, nil); err != nil {
					return fmt.Errorf("over aggregate: %w", err)
				}
			}
			if want != noTimer {
				if err := o.timers.Register(kv.EventTime, want, nil); err != nil {
					return fmt.Errorf("over aggregate: %w", err)
				}
			}
			ks.timer = want
		}
	}
	return nil
}

// PrepareSnapshot writes the changed cached keys back to the backend.
func (o *operator) PrepareSnapshot(exec.CheckpointID) error {
	if err := o.cache.Flush(); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	return o.takeErr()
}

// lookup returns the cache id of the key of row (hash h), loading it from
// the backend or creating it.
func (o *operator) lookup(row types.Row, h uint64) (int32, *keyState, error) {
	id, ok, err := o.cache.Get(row, h)
	if err == nil && !ok {
		if id, err = o.cache.Create(row, h); err == nil {
			ks := &keyState{acc: make([]types.Value, o.spec.Aggs.AccWidth()), timer: noTimer}
			o.spec.Aggs.Init(ks.acc)
			o.keys[id] = ks
		}
	}
	if err == nil {
		err = o.takeErr()
	}
	if err != nil {
		return -1, nil, fmt.Errorf("over aggregate: %w", err)
	}
	return id, o.keys[id], nil
}

// grew tells the cache that the rows of id take d bytes more (or less).
func (o *operator) grew(id int32, ks *keyState, d int) {
	if d != 0 {
		ks.bytes += d
		o.cache.Grew(id, d)
	}
}

// copyRow copies r into the slab, so that it outlives the input batch.
func (o *operator) copyRow(r types.Row) types.Row {
	if len(o.slab) < len(r) {
		o.slab = make([]types.Value, max(4096, len(r)))
	}
	c := o.slab[:len(r):len(r)]
	o.slab = o.slab[len(r):]
	copy(c, r)
	return c
}

func (o *operator) Open(ctx *exec.OperatorContext) error {
	if o.b == nil {
		return fmt.Errorf("over aggregate: opened without its keyed state backend")
	}
	o.ctx = ctx
	o.res = make([]types.Value, o.spec.Aggs.NumAggs())
	return nil
}

func (o *operator) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := o.init(b.Width()); err != nil {
		return err
	}
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("over aggregate: the input must be insert-only, got a %s row", k)
		}
		h := types.HashColumns(row, o.spec.KeyCols)
		if o.spec.TimeCol < 0 {
			id, ks, err := o.lookup(row, h)
			if err != nil {
				return err
			}
			o.one[0] = row
			if err := o.processGroup(id, ks, o.ctx.Now(), o.one[:], out); err != nil {
				return err
			}
			o.cache.Written(id)
			continue
		}
		v := row[o.spec.TimeCol]
		if v.IsNull() {
			return fmt.Errorf("over aggregate: rowtime column %d is NULL; a rowtime attribute must not be null", o.spec.TimeCol)
		}
		ts := v.N
		if ts <= o.wm {
			o.ctx.Metrics.LateRowsDropped.Add(1)
			continue
		}
		id, ks, err := o.lookup(row, h)
		if err != nil {
			return err
		}
		j := len(ks.pend)
		if j > 0 && ks.pend[j-1].ts >= ts {
			j = sort.Search(len(ks.pend), func(i int) bool { return ks.pend[i].ts >= ts })
		}
		if j < len(ks.pend) && ks.pend[j].ts == ts {
			ks.pend[j].rows = append(ks.pend[j].rows, o.copyRow(row))
		} else {
			if len(o.rslab) == 0 {
				o.rslab = make([]types.Row, 1024)
			}
			one := o.rslab[:1:1]
			o.rslab = o.rslab[1:]
			one[0] = o.copyRow(row)
			ks.pend = slices.Insert(ks.pend, j, group{ts: ts, rows: one})
		}
		ks.bufDirty = true
		if !ks.inPend {
			ks.inPend = true
			o.pendIDs = append(o.pendIDs, id)
		}
		o.grew(id, ks, rowSize(row))
		o.cache.Written(id)
	}
	return o.flush(out)
}

// init sizes the output for input rows of width w (from the first batch, or
// from restored rows when a watermark comes first after a restore).
func (o *operator) init(w int) error {
	if o.out != nil {
		if w != o.width {
			return fmt.Errorf("over aggregate: input rows of width %d after rows of width %d", w, o.width)
		}
		return nil
	}
	for _, c := range o.spec.KeyCols {
		if c >= w {
			return fmt.Errorf("over aggregate: key column %d out of range for rows of width %d", c, w)
		}
	}
	if o.spec.TimeCol >= w {
		return fmt.Errorf("over aggregate: time column %d out of range for rows of width %d", o.spec.TimeCol, w)
	}
	o.width = w
	o.out = types.NewBatch(w+o.spec.Aggs.NumAggs(), types.DefaultBatchSize)
	return nil
}

func (o *operator) flush(out exec.Output) error {
	if o.out == nil || o.out.Len() == 0 {
		return nil
	}
	err := out.Push(o.out)
	o.out.Reset()
	return err
}

// ProcessWatermark fires the buffered rows at or below wm, key by key in
// the order of (earliest due timestamp, key bytes): the cached keys from
// pendIDs, the stored ones from their timers (a stored timer of a key the
// cache holds is passed over: the cache is authoritative for it). Loading
// a stored key may evict a cached one not fired yet, which writes it back
// with a timer: the round repeats until no timer at or below wm is left.
func (o *operator) ProcessWatermark(wm int64, out exec.Output) error {
	o.wm = wm
	if o.timers == nil {
		return out.PushWatermark(wm)
	}
	for {
		o.collectDue(wm)
		i := 0
		err := o.timers.Advance(kv.EventTime, wm, func(tm kv.Timer) error {
			for i < len(o.due) && o.dueBefore(o.due[i], tm.Time, tm.Key) {
				if err := o.fireCached(o.due[i], wm, out); err != nil {
					return err
				}
				i++
			}
			return o.fireStored(tm, wm, out)
		})
		if err != nil {
			return err
		}
		for ; i < len(o.due); i++ {
			if err := o.fireCached(o.due[i], wm, out); err != nil {
				return err
			}
		}
		if err := o.flush(out); err != nil {
			return err
		}
		next, ok, err := o.timers.Next(kv.EventTime)
		if err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if !ok || next > wm {
			break
		}
	}
	return out.PushWatermark(wm)
}

// collectDue lists the cached keys with buffered rows at or below wm,
// sorted, and drops the stale entries of pendIDs.
func (o *operator) collectDue(wm int64) {
	o.epoch++
	o.due, o.dueKeys = o.due[:0], o.dueKeys[:0]
	live := o.pendIDs[:0]
	for _, id := range o.pendIDs {
		if int(id) >= len(o.keys) {
			continue
		}
		ks := o.keys[id]
		if ks == nil || !ks.inPend || ks.mark == o.epoch {
			continue
		}
		if len(ks.pend) == 0 {
			ks.inPend = false
			continue
		}
		ks.mark = o.epoch
		live = append(live, id)
		if ks.pend[0].ts > wm {
			continue
		}
		key := o.cache.Key(id)
		start := len(o.dueKeys)
		for _, v := range key {
			o.dueKeys = types.AppendValue(o.dueKeys, v)
		}
		o.due = append(o.due, dueKey{ts: ks.pend[0].ts, hash: types.HashColumns(key, o.allCols), id: id, start: start, end: len(o.dueKeys)})
	}
	o.pendIDs = live
	o.dueEvictions = o.cache.Evictions()
	slices.SortFunc(o.due, func(a, b dueKey) int {
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		return bytes.Compare(o.dueKeys[a.start:a.end], o.dueKeys[b.start:b.end])
	})
}

// dueBefore reports whether the cached key d fires before (or is) the
// stored timer (t, key).
func (o *operator) dueBefore(d dueKey, t int64, key []byte) bool {
	if d.ts != t {
		return d.ts < t
	}
	return bytes.Compare(o.dueKeys[d.start:d.end], key) <= 0
}

// decodeKeyRow decodes encoded key values into o.keyRow at the key columns.
func (o *operator) decodeKeyRow(src []byte) error {
	for _, c := range o.spec.KeyCols {
		v, rest, err := types.DecodeValue(src)
		if err != nil {
			return fmt.Errorf("over aggregate: corrupt state key: %w", err)
		}
		o.keyRow[c], src = v, rest
	}
	if len(src) != 0 {
		return fmt.Errorf("over aggregate: corrupt state key: %d bytes left", len(src))
	}
	return nil
}

// fireCached fires a cached due key, unless loading a stored key evicted
// it meanwhile (it then has a timer of its own).
func (o *operator) fireCached(d dueKey, wm int64, out exec.Output) error {
	if o.cache.Evictions() == o.dueEvictions {
		// Nothing left the cache since collectDue: the id is the key's.
		return o.fire(d.id, o.keys[d.id], wm, out)
	}
	if err := o.decodeKeyRow(o.dueKeys[d.start:d.end]); err != nil {
		return err
	}
	id, ok := o.cache.Find(o.keyRow, d.hash)
	if !ok {
		return nil
	}
	return o.fire(id, o.keys[id], wm, out)
}

// fireStored fires the key of a stored timer (the service deleted it).
func (o *operator) fireStored(tm kv.Timer, wm int64, out exec.Output) error {
	if err := o.decodeKeyRow(tm.Key); err != nil {
		return err
	}
	h := types.HashColumns(o.keyRow, o.spec.KeyCols)
	if id, ok := o.cache.Find(o.keyRow, h); ok {
		// Cached: fired from pendIDs; its stored timer is gone now.
		o.keys[id].timer = noTimer
		return nil
	}
	id, ks, err := o.lookup(o.keyRow, h)
	if err != nil {
		return err
	}
	ks.timer = noTimer
	if len(ks.pend) > 0 && ks.pend[0].ts <= wm {
		return o.fire(id, ks, wm, out)
	}
	return nil
}

// fire processes the buffered rows of key id up to the watermark.
func (o *operator) fire(id int32, ks *keyState, wm int64, out exec.Output) error {
	n, size := 0, 0
	for n < len(ks.pend) && ks.pend[n].ts <= wm {
		if err := o.processGroup(id, ks, ks.pend[n].ts, ks.pend[n].rows, out); err != nil {
			return err
		}
		for _, r := range ks.pend[n].rows {
			size += rowSize(r)
		}
		n++
	}
	if n > 0 {
		clear(ks.pend[:n])
		ks.pend = slices.Delete(ks.pend, 0, n)
		ks.bufDirty = true
		o.grew(id, ks, -size)
		o.cache.Written(id)
	}
	return nil
}

// processGroup runs rows, all of timestamp ts and of key ks, through the
// frame and emits them.
func (o *operator) processGroup(id int32, ks *keyState, ts int64, rows []types.Row, out exec.Output) error {
	h := o.spec.Aggs
	emit := func(row types.Row) error {
		if err := o.init(len(row)); err != nil {
			return err
		}
		if err := h.Result(ks.acc, o.res); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.out.Full() {
			if err := o.flush(out); err != nil {
				return err
			}
		}
		dst := o.out.Append(types.Insert)
		copy(dst, row)
		copy(dst[o.width:], o.res)
		return nil
	}
	for _, row := range rows {
		if err := h.Accumulate(ks.acc, row); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.bounded() {
			r := row
			if o.spec.TimeCol < 0 {
				r = o.copyRow(row) // a proctime row is still the input batch's
			}
			ks.pushRow(frameRow{ts: ts, row: r}, o.frameHint)
			ks.next++
			o.grew(id, ks, rowSize(r))
			if o.spec.Rows {
				// The frame holds the current row and Preceding rows before it.
				for ks.next-ks.first > o.spec.Preceding+1 {
					if err := o.retract(id, ks); err != nil {
						return err
					}
				}
			}
		}
		if o.spec.Rows {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	if o.spec.Rows {
		return nil
	}
	if o.bounded() {
		// Rows older than ts - Preceding leave the frame.
		for len(ks.rows) > 0 && ks.rows[0].ts < ts-o.spec.Preceding {
			if err := o.retract(id, ks); err != nil {
				return err
			}
		}
	}
	for _, row := range rows {
		if err := emit(row); err != nil {
			return err
		}
	}
	return nil
}

// pushRow appends r to the frame, moving the frame to the front of its
// array instead of growing it when the rows that left it make room.
func (ks *keyState) pushRow(r frameRow, hint int) {
	if ks.rbuf == nil && hint > 0 {
		ks.rbuf = make([]frameRow, 0, hint)
		ks.rows = ks.rbuf
	}
	if len(ks.rows) == cap(ks.rows) && ks.head >= len(ks.rows) {
		base := ks.rbuf[:cap(ks.rbuf)]
		n := copy(base, ks.rows)
		clear(base[n : ks.head+len(ks.rows)])
		ks.rows, ks.head = base[:n], 0
	}
	c := cap(ks.rows)
	ks.rows = append(ks.rows, r)
	if cap(ks.rows) != c {
		ks.rbuf, ks.head = ks.rows, 0
	}
}

// retract removes the oldest retained row from the frame of ks.
func (o *operator) retract(id int32, ks *keyState) error {
	if err := o.spec.Aggs.Retract(ks.acc, ks.rows[0].row); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	o.grew(id, ks, -rowSize(ks.rows[0].row))
	ks.rows[0] = frameRow{}
	ks.rows = ks.rows[1:]
	ks.head++
	ks.first++
	return nil
}

func varint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, fmt.Errorf("bad varint")
	}
	return v, src[n:], nil
}

func (o *operator) Finish(exec.Output) error { return nil }
func (o *operator) Close() error             { o.keys, o.cache, o.pendIDs = nil, nil, nil; return nil }
