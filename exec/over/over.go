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
package over

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
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
	return &operator{spec: spec, wm: exec.MinWatermark, pending: map[string]*pendingKey{}}, nil
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

type pendingKey struct {
	hash uint64
	key  []byte
	min  int64     // smallest buffered timestamp
	ks   *keyState // the key's cached state, nil when not cached
}

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

// keyState is the decoded state of one key, cached in front of the
// backend: the frame's accumulator, its retained rows (sequence numbers
// first…next-1) and, on event time, the rows waiting for the watermark.
// Changes are written back at a checkpoint and on eviction.
type keyState struct {
	hash uint64
	key  []byte
	acc  []types.Value

	first, next   int64
	rows          []frameRow // the rows first…next-1
	sFirst, sNext int64      // the rows the backend holds
	pend          []group    // sorted by timestamp

	dirty, bufDirty bool
	pk              *pendingKey // the key's entry in pending, if any
}

type operator struct {
	spec    Spec
	b       *kv.Backend
	buffer  *kv.SortedMapState[int64, []byte]
	meta    *kv.ValueState[[]byte]
	rows    *kv.MapState[int64, []byte]
	ctx     *exec.OperatorContext
	wm      int64
	pending map[string]*pendingKey // event time: keys with buffered rows
	width   int

	cache     map[string]*keyState
	limit     int // keys the cache may hold before it is written back and emptied
	maxCached int // overrides limit (tests)

	out    *types.Batch
	res    []types.Value
	keyBuf []byte
	buf    []byte
	slab   []types.Value // backing store of buffered and retained rows
	rslab  []types.Row   // backing store of one-row groups
	one    [1]types.Row
	due    []*pendingKey
}

func (o *operator) bounded() bool { return o.spec.Preceding != Unbounded }

func (o *operator) OpenKeyedState(b *kv.Backend) error {
	var err error
	if o.spec.TimeCol >= 0 {
		if o.buffer, err = kv.NewSortedMapState[int64, []byte](b, bufferState, kv.Int64{}, codec{"over.rows/1"}, kv.Options{}); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
	}
	if o.meta, err = kv.NewValueState[[]byte](b, metaState, codec{"over.meta/1"}, kv.Options{}); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if o.bounded() {
		if o.rows, err = kv.NewMapState[int64, []byte](b, rowsState, kv.Int64{}, codec{"over.row/1"}, kv.Options{}); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
	}
	o.b = b
	o.cache = map[string]*keyState{}
	o.limit = 0 // unbounded on hashmap: the backend holds everything in memory anyway
	if b.Kind() == image.RocksDB {
		// A quarter of the budget at a rough 4 KB per key (accumulator
		// and a frame of rows).
		o.limit = max(16, int(b.MemoryBudget()/4/4096))
	}
	if o.maxCached > 0 {
		o.limit = o.maxCached
	}
	if o.buffer == nil {
		return nil
	}
	// The keys with buffered rows are not stored apart: find them again.
	return b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		if e.State != bufferState {
			return nil
		}
		ts, err := kv.Int64{}.Decode(e.UserKey)
		if err != nil {
			return fmt.Errorf("over aggregate: corrupt buffer timestamp: %w", err)
		}
		k := string(e.Key)
		p, ok := o.pending[k]
		if !ok {
			vals, err := decodeKey(e.Key, len(o.spec.KeyCols))
			if err != nil {
				return err
			}
			p = &pendingKey{hash: types.HashColumns(vals, allCols(len(vals))), key: []byte(k), min: ts}
		}
		if ts < p.min {
			p.min = ts
		}
		o.pending[k] = p
		return nil
	})
}

func allCols(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = i
	}
	return c
}

func decodeKey(src []byte, n int) (types.Row, error) {
	vals := make(types.Row, n)
	for i := range vals {
		v, rest, err := types.DecodeValue(src)
		if err != nil {
			return nil, fmt.Errorf("over aggregate: corrupt state key: %w", err)
		}
		vals[i], src = v, rest
	}
	return vals, nil
}

// PrepareSnapshot writes the changed cached keys back to the backend.
func (o *operator) PrepareSnapshot(exec.CheckpointID) error {
	for _, ks := range o.cache {
		if err := o.writeBack(ks); err != nil {
			return err
		}
	}
	return nil
}

// evict writes back and empties the cache once it holds more keys than
// its bound (rocksdb: state larger than memory).
func (o *operator) evict() error {
	if o.limit == 0 || len(o.cache) <= o.limit {
		return nil
	}
	if err := o.PrepareSnapshot(0); err != nil {
		return err
	}
	clear(o.cache)
	for _, p := range o.pending {
		p.ks = nil
	}
	o.slab, o.rslab = nil, nil
	return nil
}

func (o *operator) writeBack(ks *keyState) error {
	if !ks.dirty && !ks.bufDirty {
		return nil
	}
	if err := o.b.SetCurrentKey(ks.hash, ks.key); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if ks.dirty {
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
		o.buf = binary.AppendVarint(o.buf[:0], ks.first)
		o.buf = binary.AppendVarint(o.buf, ks.next)
		o.buf = types.AppendRow(o.buf, ks.acc)
		if err := o.meta.Put(nil, o.buf); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		ks.sFirst, ks.sNext, ks.dirty = ks.first, ks.next, false
	}
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
	return nil
}

// lookup returns the cached state of the key (keyBuf, hash), loading it
// from the backend on a miss.
func (o *operator) lookup(hash uint64, key []byte) (*keyState, error) {
	if ks, ok := o.cache[string(key)]; ok {
		return ks, nil
	}
	ks := &keyState{hash: hash, key: append([]byte(nil), key...), acc: make([]types.Value, o.spec.Aggs.AccWidth())}
	if err := o.b.SetCurrentKey(hash, key); err != nil {
		return nil, fmt.Errorf("over aggregate: %w", err)
	}
	m, ok, err := o.meta.Get(nil)
	if err != nil {
		return nil, fmt.Errorf("over aggregate: %w", err)
	}
	if ok {
		var acc types.Row
		if ks.first, m, err = varint(m); err == nil {
			if ks.next, m, err = varint(m); err == nil {
				acc, _, err = types.DecodeRow(m)
			}
		}
		if err != nil || len(acc) != len(ks.acc) {
			return nil, fmt.Errorf("over aggregate: corrupt frame state")
		}
		copy(ks.acc, acc)
		for seq := ks.first; seq < ks.next && o.rows != nil; seq++ {
			v, ok, err := o.rows.Get(nil, seq)
			if err != nil {
				return nil, fmt.Errorf("over aggregate: %w", err)
			}
			if !ok {
				return nil, fmt.Errorf("over aggregate: corrupt frame state: row %d missing", seq)
			}
			ts, v, err := varint(v)
			if err != nil {
				return nil, fmt.Errorf("over aggregate: corrupt frame state: %w", err)
			}
			r, _, err := types.DecodeRow(v)
			if err != nil {
				return nil, fmt.Errorf("over aggregate: corrupt frame state: %w", err)
			}
			ks.rows = append(ks.rows, frameRow{ts: ts, row: r})
		}
		ks.sFirst, ks.sNext = ks.first, ks.next
	} else {
		o.spec.Aggs.Init(ks.acc)
	}
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
			return nil, fmt.Errorf("over aggregate: buffered rows: %w", err)
		}
	}
	if p, ok := o.pending[string(ks.key)]; ok {
		p.ks, ks.pk = ks, p
	}
	o.cache[string(ks.key)] = ks
	return ks, nil
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
		o.keyBuf = o.keyBuf[:0]
		for _, c := range o.spec.KeyCols {
			o.keyBuf = types.AppendValue(o.keyBuf, row[c])
		}
		if o.spec.TimeCol < 0 {
			ks, err := o.lookup(h, o.keyBuf)
			if err != nil {
				return err
			}
			o.one[0] = row
			if err := o.processGroup(ks, o.ctx.Now(), o.one[:], out); err != nil {
				return err
			}
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
		ks, err := o.lookup(h, o.keyBuf)
		if err != nil {
			return err
		}
		j := sort.Search(len(ks.pend), func(i int) bool { return ks.pend[i].ts >= ts })
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
		if p := ks.pk; p == nil {
			ks.pk = &pendingKey{hash: h, key: ks.key, min: ts, ks: ks}
			o.pending[string(ks.key)] = ks.pk
		} else if ts < p.min {
			p.min = ts
		}
	}
	if err := o.flush(out); err != nil {
		return err
	}
	return o.evict()
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

func (o *operator) ProcessWatermark(wm int64, out exec.Output) error {
	o.wm = wm
	if o.buffer != nil && len(o.pending) > 0 {
		// Keys in a stable order, so that output is deterministic.
		o.due = o.due[:0]
		for _, p := range o.pending {
			if p.min <= wm {
				o.due = append(o.due, p)
			}
		}
		slices.SortFunc(o.due, func(a, b *pendingKey) int { return bytes.Compare(a.key, b.key) })
		for _, p := range o.due {
			if err := o.fire(p, wm, out); err != nil {
				return err
			}
		}
		clear(o.due)
		if err := o.flush(out); err != nil {
			return err
		}
		if err := o.evict(); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

// fire processes the buffered rows of key k up to the watermark.
func (o *operator) fire(p *pendingKey, wm int64, out exec.Output) error {
	ks := p.ks
	if ks == nil {
		var err error
		if ks, err = o.lookup(p.hash, p.key); err != nil {
			return err
		}
	}
	n := 0
	for n < len(ks.pend) && ks.pend[n].ts <= wm {
		if err := o.processGroup(ks, ks.pend[n].ts, ks.pend[n].rows, out); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		clear(ks.pend[:n])
		ks.pend = slices.Delete(ks.pend, 0, n)
		ks.bufDirty = true
	}
	if len(ks.pend) > 0 {
		p.min = ks.pend[0].ts
	} else {
		delete(o.pending, string(p.key))
		ks.pk, p.ks = nil, nil
	}
	return nil
}

// processGroup runs rows, all of timestamp ts and of key ks, through the
// frame and emits them.
func (o *operator) processGroup(ks *keyState, ts int64, rows []types.Row, out exec.Output) error {
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
	ks.dirty = true
	for _, row := range rows {
		if err := h.Accumulate(ks.acc, row); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.bounded() {
			r := row
			if o.spec.TimeCol < 0 {
				r = o.copyRow(row) // a proctime row is still the input batch's
			}
			ks.rows = append(ks.rows, frameRow{ts: ts, row: r})
			ks.next++
			if o.spec.Rows {
				// The frame holds the current row and Preceding rows before it.
				for ks.next-ks.first > o.spec.Preceding+1 {
					if err := o.retract(ks); err != nil {
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
			if err := o.retract(ks); err != nil {
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

// retract removes the oldest retained row from the frame of ks.
func (o *operator) retract(ks *keyState) error {
	if err := o.spec.Aggs.Retract(ks.acc, ks.rows[0].row); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	ks.rows[0] = frameRow{}
	ks.rows = ks.rows[1:]
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
func (o *operator) Close() error             { o.pending, o.cache = nil, nil; return nil }
