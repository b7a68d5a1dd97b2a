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
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/flinksql/flinksql/exec"
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
	return &operator{spec: spec, wm: exec.MinWatermark, pending: map[string]pendingKey{}}, nil
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
	min  int64 // smallest buffered timestamp
}

type operator struct {
	spec    Spec
	b       *kv.Backend
	buffer  *kv.SortedMapState[int64, []byte]
	meta    *kv.ValueState[[]byte]
	rows    *kv.MapState[int64, []byte]
	ctx     *exec.OperatorContext
	wm      int64
	pending map[string]pendingKey // event time: keys with buffered rows
	width   int

	out    *types.Batch
	acc    []types.Value
	res    []types.Value
	keyBuf []byte
	buf    []byte
	group  []types.Row // rows of one timestamp being processed
	ts     []int64
	row    types.Row
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
			p = pendingKey{hash: types.HashColumns(vals, allCols(len(vals))), key: []byte(k), min: ts}
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

// PrepareSnapshot: everything lives in the backend.
func (o *operator) PrepareSnapshot(exec.CheckpointID) error { return nil }

func (o *operator) Open(ctx *exec.OperatorContext) error {
	if o.b == nil {
		return fmt.Errorf("over aggregate: opened without its keyed state backend")
	}
	o.ctx = ctx
	o.acc = make([]types.Value, o.spec.Aggs.AccWidth())
	o.res = make([]types.Value, o.spec.Aggs.NumAggs())
	return nil
}

func (o *operator) setKey(row types.Row) (uint64, error) {
	h := types.HashColumns(row, o.spec.KeyCols)
	o.keyBuf = o.keyBuf[:0]
	for _, c := range o.spec.KeyCols {
		o.keyBuf = types.AppendValue(o.keyBuf, row[c])
	}
	return h, o.b.SetCurrentKey(h, o.keyBuf)
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
		h, err := o.setKey(row)
		if err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.spec.TimeCol < 0 {
			o.group = append(o.group[:0], row)
			if err := o.processGroup(o.ctx.Now(), out); err != nil {
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
		old, _, err := o.buffer.Get(nil, ts)
		if err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		o.buf = types.AppendRow(append(o.buf[:0], old...), row)
		if err := o.buffer.Put(nil, ts, o.buf); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if p, ok := o.pending[string(o.keyBuf)]; !ok {
			o.pending[string(o.keyBuf)] = pendingKey{hash: h, key: append([]byte(nil), o.keyBuf...), min: ts}
		} else if ts < p.min {
			p.min = ts
			o.pending[string(o.keyBuf)] = p
		}
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

func (o *operator) ProcessWatermark(wm int64, out exec.Output) error {
	o.wm = wm
	if o.buffer != nil && len(o.pending) > 0 {
		// Keys in a stable order, so that output is deterministic.
		var due []string
		for k, p := range o.pending {
			if p.min <= wm {
				due = append(due, k)
			}
		}
		sort.Strings(due)
		for _, k := range due {
			if err := o.fire(k, wm, out); err != nil {
				return err
			}
		}
		if err := o.flush(out); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

// fire processes the buffered rows of key k up to the watermark.
func (o *operator) fire(k string, wm int64, out exec.Output) error {
	p := o.pending[k]
	if err := o.b.SetCurrentKey(p.hash, p.key); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	o.ts = o.ts[:0]
	var groups [][]byte
	next, more := int64(0), false
	err := o.buffer.Ascend(nil, nil, func(ts int64, v []byte) bool {
		if ts > wm {
			next, more = ts, true
			return false
		}
		o.ts = append(o.ts, ts)
		groups = append(groups, append([]byte(nil), v...))
		return true
	})
	if err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	for i, ts := range o.ts {
		o.group = o.group[:0]
		for src := groups[i]; len(src) > 0; {
			r, rest, err := types.DecodeRow(src)
			if err != nil {
				return fmt.Errorf("over aggregate: corrupt buffered row: %w", err)
			}
			o.group, src = append(o.group, r), rest
		}
		if err := o.buffer.Delete(nil, ts); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if err := o.processGroup(ts, out); err != nil {
			return err
		}
	}
	if more {
		p.min = next
		o.pending[k] = p
	} else {
		delete(o.pending, k)
	}
	return nil
}

// processGroup runs the rows of o.group, all of timestamp ts and of the
// current key, through the frame and emits them.
func (o *operator) processGroup(ts int64, out exec.Output) error {
	h := o.spec.Aggs
	first, next := int64(0), int64(0)
	m, ok, err := o.meta.Get(nil)
	if err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if ok {
		var acc types.Row
		if first, m, err = varint(m); err == nil {
			if next, m, err = varint(m); err == nil {
				acc, _, err = types.DecodeRow(m)
			}
		}
		if err != nil || len(acc) != len(o.acc) {
			return fmt.Errorf("over aggregate: corrupt frame state")
		}
		copy(o.acc, acc)
	} else {
		h.Init(o.acc)
	}
	rangeFrame := !o.spec.Rows
	emit := func(row types.Row) error {
		if err := o.init(len(row)); err != nil {
			return err
		}
		if err := h.Result(o.acc, o.res); err != nil {
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
	for _, row := range o.group {
		if err := h.Accumulate(o.acc, row); err != nil {
			return fmt.Errorf("over aggregate: %w", err)
		}
		if o.bounded() {
			o.buf = types.AppendRow(binary.AppendVarint(o.buf[:0], ts), row)
			if err := o.rows.Put(nil, next, o.buf); err != nil {
				return fmt.Errorf("over aggregate: %w", err)
			}
			next++
			if o.spec.Rows {
				// The frame holds the current row and Preceding rows before it.
				for next-first > o.spec.Preceding+1 {
					if err := o.retract(first); err != nil {
						return err
					}
					first++
				}
			}
		}
		if !rangeFrame {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	if rangeFrame {
		if o.bounded() {
			// Rows older than ts - Preceding leave the frame.
			for first < next {
				v, ok, err := o.rows.Get(nil, first)
				if err != nil {
					return fmt.Errorf("over aggregate: %w", err)
				}
				if !ok {
					return fmt.Errorf("over aggregate: corrupt frame state: row %d missing", first)
				}
				rts, _, err := varint(v)
				if err != nil {
					return fmt.Errorf("over aggregate: corrupt frame state: %w", err)
				}
				if rts >= ts-o.spec.Preceding {
					break
				}
				if err := o.retract(first); err != nil {
					return err
				}
				first++
			}
		}
		for _, row := range o.group {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	o.buf = binary.AppendVarint(o.buf[:0], first)
	o.buf = binary.AppendVarint(o.buf, next)
	o.buf = types.AppendRow(o.buf, o.acc)
	if err := o.meta.Put(nil, o.buf); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	return nil
}

// retract removes retained row seq from the frame.
func (o *operator) retract(seq int64) error {
	v, ok, err := o.rows.Get(nil, seq)
	if err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if !ok {
		return fmt.Errorf("over aggregate: corrupt frame state: row %d missing", seq)
	}
	_, v, err = varint(v)
	if err != nil {
		return fmt.Errorf("over aggregate: corrupt frame state: %w", err)
	}
	r, _, err := types.DecodeRow(v)
	if err != nil {
		return fmt.Errorf("over aggregate: corrupt frame state: %w", err)
	}
	if err := o.spec.Aggs.Retract(o.acc, r); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
	if err := o.rows.Delete(nil, seq); err != nil {
		return fmt.Errorf("over aggregate: %w", err)
	}
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
func (o *operator) Close() error             { o.pending = nil; return nil }
