package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// temporalSortOp is Flink's streaming temporal sort (ORDER BY a rowtime
// attribute ASC, then other columns, on an unbounded input): rows are
// buffered until the watermark passes their timestamp and are then
// released in timestamp order, rows of one timestamp ordered by the other
// keys (stable: ties keep arrival order). As in Flink's RowTimeSortOperator,
// a row whose timestamp is at or below the last released timestamp is late
// and dropped (LateRowsDropped); a row at or below the watermark but after
// the last released timestamp still goes out, at the next watermark.
//
// State (keyed state under one constant key: the operator runs as one
// subtask after a GLOBAL exchange): the buffered rows in a sorted map by
// (timestamp, arrival number), so the map is the operator's event-time
// timer queue — an ascending scan up to the watermark finds exactly the
// rows whose timers would fire, without a second index of the same
// timestamps — and, in a value state, the last released timestamp and the
// next arrival number. Rows are written to the backend as they arrive, so
// on rocksdb a long wait for the watermark is on disk.
type temporalSortOp struct {
	timeCol int
	keys    []SortKey

	b    *kv.Backend
	rows *kv.SortedMapState[[]byte, []byte] // (ts, seq) → encoded row
	meta *kv.ValueState[[]byte]             // last released ts, next seq

	last     int64 // last released timestamp
	seq      int64 // next arrival number
	metaLast int64 // what the backend's meta holds
	metaSeq  int64
	metrics  *OperatorMetrics

	keyBuf, valBuf []byte
	// The rows one watermark releases, decoded into one arena of values,
	// and their stored keys (sortKeyLen bytes each), reused.
	arena  []types.Value
	keys16 []byte
	due    []types.Row
	em     Emitter
}

// sortKeyLen is the length of a stored key: timestamp and arrival number.
const sortKeyLen = 16

// Keyed state names of temporalSortOp.
const (
	temporalSortRowsState = "temporal-sort/rows"
	temporalSortMetaState = "temporal-sort/meta"
)

// NewTemporalSort returns the streaming temporal sort over rows whose
// column timeCol is the rowtime attribute; keys are the ORDER BY keys, the
// first being timeCol ascending.
func NewTemporalSort(timeCol int, keys []SortKey) Operator {
	return &temporalSortOp{timeCol: timeCol, keys: keys, last: MinWatermark, metaLast: MinWatermark}
}

// OpenKeyedState implements KeyedOperator.
func (s *temporalSortOp) OpenKeyedState(b *kv.Backend) error {
	s.b = b
	var err error
	if s.rows, err = kv.NewSortedMapState(b, temporalSortRowsState, kv.Bytes{}, kv.Bytes{}, kv.Options{}); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	if s.meta, err = kv.NewValueState(b, temporalSortMetaState, kv.Bytes{}, kv.Options{}); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	if err := setConstantKey(b); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	m, ok, err := s.meta.Get(nil)
	if err != nil {
		return fmt.Errorf("temporal sort: reading the restored state: %w", err)
	}
	if ok {
		if len(m) != 16 {
			return fmt.Errorf("temporal sort: restored state of %d bytes, want 16", len(m))
		}
		s.last = int64(binary.BigEndian.Uint64(m))
		s.seq = int64(binary.BigEndian.Uint64(m[8:]))
		s.metaLast, s.metaSeq = s.last, s.seq
	}
	return nil
}

// PrepareSnapshot implements KeyedOperator: rows are in the backend
// already; the last released timestamp and the arrival number go there.
func (s *temporalSortOp) PrepareSnapshot(CheckpointID) error {
	if s.last == s.metaLast && s.seq == s.metaSeq {
		return nil
	}
	if err := setConstantKey(s.b); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	m := binary.BigEndian.AppendUint64(nil, uint64(s.last))
	m = binary.BigEndian.AppendUint64(m, uint64(s.seq))
	if err := s.meta.Put(nil, m); err != nil {
		return fmt.Errorf("temporal sort: writing its state: %w", err)
	}
	s.metaLast, s.metaSeq = s.last, s.seq
	return nil
}

func (s *temporalSortOp) Open(ctx *OperatorContext) error {
	s.metrics = ctx.Metrics
	return nil
}

func (s *temporalSortOp) Close() error { s.due, s.arena, s.keys16 = nil, nil, nil; return nil }

// sortKey is the stored key of a row: the timestamp with its sign bit
// flipped (so that byte order is numeric order) and the arrival number.
func sortKey(dst []byte, ts, seq int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
	return binary.BigEndian.AppendUint64(dst, uint64(seq))
}

func sortKeyTime(k []byte) int64 { return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)) }

func (s *temporalSortOp) ProcessBatch(_ int, b *types.Batch, _ Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := setConstantKey(s.b); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	for i, r := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("temporal sort: a %s row on its insert-only input", k)
		}
		v := r[s.timeCol]
		if v.IsNull() {
			return errors.New(NullRowtimeMessage)
		}
		ts := v.Millis()
		if ts <= s.last {
			if s.metrics != nil {
				s.metrics.LateRowsDropped.Add(1)
			}
			continue
		}
		s.keyBuf = sortKey(s.keyBuf[:0], ts, s.seq)
		s.seq++
		s.valBuf = types.AppendRow(s.valBuf[:0], r)
		if err := s.rows.Put(nil, s.keyBuf, s.valBuf); err != nil {
			return fmt.Errorf("temporal sort: buffering a row: %w", err)
		}
	}
	return nil
}

// NullRowtimeMessage is Flink's message for a NULL rowtime, shared by the
// event-time operators.
const NullRowtimeMessage = "RowTime field should not be null, please convert it to a non-null long value."

// ProcessWatermark releases the rows at or below wm, in order, then
// forwards wm.
func (s *temporalSortOp) ProcessWatermark(wm int64, out Output) error {
	if err := setConstantKey(s.b); err != nil {
		return fmt.Errorf("temporal sort: %w", err)
	}
	clear(s.arena)
	s.arena, s.keys16, s.due = s.arena[:0], s.keys16[:0], s.due[:0]
	width := -1
	var derr error
	err := s.rows.Ascend(nil, nil, func(k, v []byte) bool {
		if len(k) != sortKeyLen {
			derr = fmt.Errorf("temporal sort: stored key of %d bytes", len(k))
			return false
		}
		if sortKeyTime(k) > wm {
			return false
		}
		n, w := binary.Uvarint(v)
		if w <= 0 || (width >= 0 && int(n) != width) {
			derr = errors.New("temporal sort: a stored row of another width")
			return false
		}
		width = int(n)
		rest := v[w:]
		for range width {
			var val types.Value
			var err error
			if val, rest, err = types.DecodeValue(rest); err != nil {
				derr = fmt.Errorf("temporal sort: stored row: %w", err)
				return false
			}
			s.arena = append(s.arena, val)
		}
		s.keys16 = append(s.keys16, k...)
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	for i := 0; i < len(s.keys16)/sortKeyLen; i++ {
		s.due = append(s.due, types.Row(s.arena[i*width:(i+1)*width:(i+1)*width]))
	}
	if len(s.due) > 0 {
		if !s.em.Ready() {
			s.em.Init(len(s.due[0]), 0)
		}
		// The scan is in (timestamp, arrival) order; a stable sort by all
		// keys orders each timestamp's rows by the other keys.
		slices.SortStableFunc(s.due, func(a, b types.Row) int { return CompareRows(s.keys, a, b) })
		for _, r := range s.due {
			if err := s.em.Copy(types.Insert, r, out); err != nil {
				return err
			}
		}
		if err := s.em.Flush(out); err != nil {
			return err
		}
		for k := s.keys16; len(k) > 0; k = k[sortKeyLen:] {
			if err := s.rows.Delete(nil, k[:sortKeyLen]); err != nil {
				return fmt.Errorf("temporal sort: removing a released row: %w", err)
			}
		}
		s.last = sortKeyTime(s.keys16[len(s.keys16)-sortKeyLen:])
	}
	return out.PushWatermark(wm)
}

// Finish has nothing left: the final watermark released every row.
func (s *temporalSortOp) Finish(Output) error { return nil }
