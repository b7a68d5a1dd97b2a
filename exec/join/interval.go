package join

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// IntervalSpec describes an interval join: rows of equal keys join when
// left.time - right.time lies in [LowerBound, UpperBound] (milliseconds)
// and the residual condition holds.
type IntervalSpec struct {
	Type        Type
	Left, Right Side // Width and Keys; the rest of Side is not used
	NullSafe    []bool
	// EventTime: the times are the rows' rowtime columns and the operator
	// time is the watermark; otherwise both are the processing time.
	EventTime                 bool
	LeftTimeCol, RightTimeCol int // event time only
	LowerBound, UpperBound    int64
	Residual                  exec.Predicate
}

// NewInterval returns the interval join operator of two insert-only
// inputs (Flink's TimeIntervalJoin). Its output is insert-only:
//
//   - a row joins the other side's stored rows of its key whose times are
//     in its interval;
//   - it is stored while rows of the other side may still arrive in its
//     interval (the other side's operator time is below the interval's
//     upper end); a row that is not stored and matched nothing is emitted
//     padded at once when its side is outer (a late row);
//   - a stored row expires when the operator time passes its time plus
//     its side's relative size (plus 1 ms, as in Flink); an expired row of
//     an outer side that never matched is then emitted padded with NULLs.
//
// With event time the output watermark is held back by the larger of the
// two relative sizes, so that the rowtimes of the joined rows are not
// late; both sides' rowtimes stay time attributes. A NULL key matches
// nothing.
func NewInterval(spec IntervalSpec) (exec.Operator, error) {
	if len(spec.Left.Keys) != len(spec.Right.Keys) {
		return nil, fmt.Errorf("interval join: %d left key columns but %d right ones", len(spec.Left.Keys), len(spec.Right.Keys))
	}
	if spec.LowerBound > spec.UpperBound {
		return nil, fmt.Errorf("interval join: the lower bound %d is above the upper bound %d", spec.LowerBound, spec.UpperBound)
	}
	for i, s := range []Side{spec.Left, spec.Right} {
		for _, c := range s.Keys {
			if c < 0 || c >= s.Width {
				return nil, fmt.Errorf("interval join: column %d out of range for an input of width %d", c, s.Width)
			}
		}
		tc := spec.LeftTimeCol
		if i == 1 {
			tc = spec.RightTimeCol
		}
		if spec.EventTime && (tc < 0 || tc >= s.Width) {
			return nil, fmt.Errorf("interval join: time column %d out of range for an input of width %d", tc, s.Width)
		}
	}
	j := &interval{spec: spec, wm: exec.MinWatermark, nextDue: math.MinInt64}
	// A left row at t joins right rows in [t - upper, t - lower]: the
	// right side's relative size is upper, the left's -lower.
	j.rel = [2]int64{-spec.LowerBound, spec.UpperBound}
	j.outer = [2]bool{spec.Type.leftOuter(), spec.Type.rightOuter()}
	j.widths = [2]int{spec.Left.Width, spec.Right.Width}
	j.keys = [2][]int{spec.Left.Keys, spec.Right.Keys}
	return j, nil
}

// Interval join state, per side: the rows by join key in a sorted map
// [8-byte time, order-preserving][row bytes] → [uvarint copies][uvarint
// copies that matched], and an index of when rows expire, per key group
// under the key timerKey: [8-byte expiry][join key bytes] → nothing. A
// watermark (or processing-time timer) reads the index only up to its
// time.
var timerKey = []byte("timers")

type interval struct {
	spec   IntervalSpec
	b      *kv.Backend
	ctx    *exec.OperatorContext
	rows   [2]*kv.SortedMapState[[]byte, []byte]
	timers [2]*kv.SortedMapState[[]byte, []byte]
	rel    [2]int64
	outer  [2]bool
	widths [2]int
	keys   [2][]int

	// cache, when not nil, holds the buffered rows decoded (hashmap; see
	// intervalCache).
	cache *intervalCache

	wm   int64
	kept keptWatermark // the watermark at the last checkpoint
	// nextDue is a lower bound of the earliest expiry in the index
	// (MinInt64: unknown, as after a restore).
	nextDue int64

	out     *types.Batch
	joined  types.Row
	scratch [2]types.Row
	keyBuf  []byte
	keyVals []types.Value // scratch: a cached key's values
	hashes  [ivPrefetchRows]uint64
	ukBuf   []byte
	tkBuf   []byte
	valBuf  []byte
	due     []dueTimer
	dueKeys []byte
	expBuf  []byte   // expired rows' map keys, end to end
	expEnds [][2]int // their bounds in expBuf
	updates []pendingUpdate

	// probe's state for probeOne
	pInput   int
	pRow     types.Row
	pHi      int64
	pOut     exec.Output
	pMatched bool
	pErr     error
	probeFn  func(uk, v []byte) bool
	fromKey  []byte

	// expire's and expireKey's state for dueOne and expireOne, made once
	// as method values: a closure per key would allocate.
	eNow, eNext, eBound int64
	eKG, eSide          int
	eOut                exec.Output
	eErr                error
	dueFn, expireFn     func(uk, v []byte) bool
}

type dueTimer struct {
	kg       int
	tk       []byte // timer user key
	key      []byte // join key
	deadline int64
}

type pendingUpdate struct {
	uk    []byte
	count uint64
}

var (
	_ exec.KeyedOperator         = (*interval)(nil)
	_ exec.ProcessingTimeHandler = (*interval)(nil)
)

type orderedCodec struct{ stateCodec }

func (orderedCodec) OrderPreserving() {}

func (j *interval) OpenKeyedState(b *kv.Backend) error {
	for i, name := range []string{"left", "right"} {
		id := "join.interval.rows/1"
		if j.outer[i] {
			id = "join.interval.rows.outer/1"
		}
		var err error
		if j.rows[i], err = kv.NewSortedMapState[[]byte, []byte](b, name, orderedCodec{stateCodec{"join.interval.time-row/1"}}, stateCodec{id}, kv.Options{}); err != nil {
			return fmt.Errorf("interval join: %w", err)
		}
		if j.timers[i], err = kv.NewSortedMapState[[]byte, []byte](b, name+".timers", orderedCodec{stateCodec{"join.interval.expiry-key/1"}}, stateCodec{"empty"}, kv.Options{}); err != nil {
			return fmt.Errorf("interval join: %w", err)
		}
	}
	var err error
	j.b = b
	if j.kept, err = openKeptWatermark(b); err != nil {
		return fmt.Errorf("interval join: %w", err)
	}
	j.wm = j.kept.saved
	j.cache = nil
	if b.Kind() == image.Hashmap {
		fresh, err := statecache.Empty(b)
		if err != nil {
			return fmt.Errorf("interval join: %w", err)
		}
		j.cache = newIntervalCache(len(j.keys[0]), j.widths)
		if !fresh {
			if err := j.preloadCached(); err != nil {
				return fmt.Errorf("interval join: loading the restored state: %w", err)
			}
		}
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the rows and the expiry
// index are in the backend already; the watermark is written to it when
// it moved since the last checkpoint.
func (j *interval) PrepareSnapshot(exec.CheckpointID) error {
	if j.cache != nil {
		if err := j.writeBackCached(); err != nil {
			return err
		}
	}
	if !j.spec.EventTime {
		return nil
	}
	if err := j.kept.save(j.wm); err != nil {
		return fmt.Errorf("interval join: %w", err)
	}
	return nil
}

func (j *interval) Open(ctx *exec.OperatorContext) error {
	if j.b == nil {
		return fmt.Errorf("interval join: opened without its keyed state backend")
	}
	j.ctx = ctx
	w := j.widths[0] + j.widths[1]
	j.out = types.NewBatch(w, 0)
	j.joined = make(types.Row, w)
	j.scratch = [2]types.Row{make(types.Row, j.widths[0]), make(types.Row, j.widths[1])}
	if !j.spec.EventTime {
		// Processing-time timers are not kept by the runtime: ask again
		// for the earliest expiry in the restored index.
		if t, ok, err := j.earliest(); err != nil {
			return err
		} else if ok {
			ctx.RegisterProcessingTimer(t)
		}
	}
	return nil
}

func (j *interval) Finish(exec.Output) error { return nil }
func (j *interval) Close() error             { return nil }

func (j *interval) opTime() int64 {
	if j.spec.EventTime {
		return j.wm
	}
	return j.ctx.Now()
}

func (j *interval) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	if input != 0 && input != 1 {
		return fmt.Errorf("interval join: no input %d", input)
	}
	if b.Len() > 0 && b.Width() != j.widths[input] {
		return fmt.Errorf("interval join: input %d rows have %d columns, want %d", input, b.Width(), j.widths[input])
	}
	for i := 0; i < len(b.Rows); i += ivPrefetchRows {
		rows := b.Rows[i:min(i+ivPrefetchRows, len(b.Rows))]
		for k, kind := range b.Kinds[i : i+len(rows)] {
			if kind != types.Insert {
				return fmt.Errorf("interval join: the inputs must be insert-only, got a %s row", kind)
			}
			j.hashes[k] = types.HashColumns(rows[k], j.keys[input])
		}
		if j.cache != nil {
			j.cache.prefetch(input, j.hashes[:len(rows)])
		}
		for k, row := range rows {
			if err := j.process(input, row, j.hashes[k], out); err != nil {
				return err
			}
		}
	}
	return j.flush(out)
}

// ivPrefetchRows is how many rows of a batch have their state touched
// before the first of them is processed (see intervalCache.prefetch).
const ivPrefetchRows = 64

func (j *interval) flush(out exec.Output) error {
	if j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

func (j *interval) emit(input int, row, other types.Row, out exec.Output) error {
	r := j.out.Append(types.Insert)
	if input == 0 {
		copy(r, row)
		copy(r[j.widths[0]:], other)
	} else {
		copy(r, other)
		copy(r[j.widths[0]:], row)
	}
	if j.out.Full() {
		return j.flush(out)
	}
	return nil
}

// timeKey is the order-preserving encoding of a time.
func appendTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// process joins and stores row, whose key columns hash to h.
func (j *interval) process(input int, row types.Row, h uint64, out exec.Output) error {
	var t int64
	if j.spec.EventTime {
		tc := j.spec.LeftTimeCol
		if input == 1 {
			tc = j.spec.RightTimeCol
		}
		v := row[tc]
		if v.K == types.KindNull {
			return fmt.Errorf("interval join: a row with a NULL rowtime: rowtime attributes must not be NULL")
		}
		t = v.N
	} else {
		t = j.ctx.Now()
	}
	op := j.opTime()
	other := 1 - input
	// The other side's times this row joins.
	var lo, hi int64
	if input == 0 {
		lo, hi = t-j.spec.UpperBound, t-j.spec.LowerBound
	} else {
		lo, hi = t+j.spec.LowerBound, t+j.spec.UpperBound
	}
	nullKey := hasNullKey(row, j.keys[input], j.spec.NullSafe)
	if j.cache != nil {
		j.setCachedKey(input, row, h)
	} else {
		j.keyBuf = appendKey(j.keyBuf[:0], row, j.keys[input])
		if err := j.b.SetCurrentKey(h, j.keyBuf); err != nil {
			return fmt.Errorf("interval join: %w", err)
		}
	}
	matched := false
	if !nullKey && (op == math.MinInt64 || op-j.rel[other]-1 < hi) {
		var err error
		if j.cache != nil {
			matched, err = j.probeCached(input, row, lo, hi, out)
		} else {
			matched, err = j.probe(input, row, lo, hi, out)
		}
		if err != nil {
			return err
		}
	}
	if op == math.MinInt64 || op < hi {
		if nullKey && !j.outer[input] {
			if j.cache != nil {
				j.cache.releaseIfEmpty(j.cache.curID)
			}
			return nil // can never match nor be shown
		}
		if j.cache != nil {
			j.storeCached(input, row, t, matched)
			return nil
		}
		return j.store(input, row, t, matched)
	}
	if j.cache != nil {
		j.cache.releaseIfEmpty(j.cache.curID)
	}
	if !matched && j.outer[input] {
		return j.emit(input, row, nil, out)
	}
	return nil
}

// probe joins row with the other side's rows of the current key in
// [lo, hi] and records which of them matched for the first time.
func (j *interval) probe(input int, row types.Row, lo, hi int64, out exec.Output) (bool, error) {
	other := 1 - input
	if input == 0 {
		copy(j.joined, row)
	} else {
		copy(j.joined[j.widths[0]:], row)
	}
	j.fromKey = appendTime(j.fromKey[:0], lo)
	j.updates = j.updates[:0]
	j.dueKeys = j.dueKeys[:0]
	j.pInput, j.pRow, j.pHi, j.pOut, j.pMatched, j.pErr = input, row, hi, out, false, nil
	if j.probeFn == nil {
		j.probeFn = j.probeOne // a method value made once: no closure per row
	}
	err := j.rows[other].Ascend(nil, &j.fromKey, j.probeFn)
	j.pRow, j.pOut = nil, nil
	if err == nil {
		err = j.pErr
	}
	if err != nil {
		return false, err
	}
	for _, u := range j.updates {
		if err := j.rows[other].Put(nil, u.uk, j.counts(u.count, u.count)); err != nil {
			return false, err
		}
	}
	return j.pMatched, nil
}

// probeOne is probe's visit of one stored row of the other side.
func (j *interval) probeOne(uk, v []byte) bool {
	input, row, out := j.pInput, j.pRow, j.pOut
	other := 1 - input
	if len(uk) < 8 || readTime(uk) > j.pHi {
		return false
	}
	o := j.scratch[other]
	if _, err := decodeRowInto(o, uk[8:]); err != nil {
		j.pErr = fmt.Errorf("interval join: %w", err)
		return false
	}
	count, w := binary.Uvarint(v)
	emitted, w2 := binary.Uvarint(v[max(w, 0):])
	if w <= 0 || w2 <= 0 {
		j.pErr = fmt.Errorf("interval join: corrupt state: bad row counts")
		return false
	}
	if ok, err := j.residualHolds(other, o); err != nil {
		j.pErr = err
		return false
	} else if !ok {
		return true
	}
	j.pMatched = true
	for range count {
		if err := j.emit(input, row, o, out); err != nil {
			j.pErr = err
			return false
		}
	}
	if j.outer[other] && emitted < count {
		s := len(j.dueKeys)
		j.dueKeys = append(j.dueKeys, uk...)
		j.updates = append(j.updates, pendingUpdate{uk: j.dueKeys[s:len(j.dueKeys):len(j.dueKeys)], count: count})
	}
	return true
}

// residualHolds tests the residual condition on the probing row (already
// in j.joined) joined with o of side other.
func (j *interval) residualHolds(other int, o types.Row) (bool, error) {
	if j.spec.Residual == nil {
		return true, nil
	}
	if other == 0 {
		copy(j.joined, o)
	} else {
		copy(j.joined[j.widths[0]:], o)
	}
	ok, err := j.spec.Residual.Test(j.joined)
	if err != nil {
		return false, fmt.Errorf("interval join: %w", err)
	}
	return ok, nil
}

func (j *interval) counts(count, emitted uint64) []byte {
	j.valBuf = binary.AppendUvarint(j.valBuf[:0], count)
	j.valBuf = binary.AppendUvarint(j.valBuf, emitted)
	return j.valBuf
}

// store adds row (at time t) to its side and indexes its expiry.
func (j *interval) store(input int, row types.Row, t int64, matched bool) error {
	j.ukBuf = appendTime(j.ukBuf[:0], t)
	j.ukBuf = types.AppendRow(j.ukBuf, row)
	v, ok, err := j.rows[input].Get(nil, j.ukBuf)
	if err != nil {
		return err
	}
	var count, emitted uint64
	if ok {
		var w, w2 int
		count, w = binary.Uvarint(v)
		emitted, w2 = binary.Uvarint(v[max(w, 0):])
		if w <= 0 || w2 <= 0 {
			return fmt.Errorf("interval join: corrupt state: bad row counts")
		}
	}
	count++
	if matched {
		// The stored copies were there for every row this one matched.
		emitted = count
	}
	if err := j.rows[input].Put(nil, j.ukBuf, j.counts(count, emitted)); err != nil {
		return err
	}
	deadline := t + j.rel[input] + 1
	kg := kv.KeyGroupOf(types.HashColumns(row, j.keys[input]), j.b.MaxParallelism())
	if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
		return err
	}
	j.tkBuf = appendTime(j.tkBuf[:0], deadline)
	j.tkBuf = append(j.tkBuf, j.keyBuf...)
	if err := j.timers[input].Put(nil, j.tkBuf, nil); err != nil {
		return err
	}
	if j.nextDue != math.MinInt64 && deadline < j.nextDue {
		j.nextDue = deadline
	}
	if !j.spec.EventTime {
		j.ctx.RegisterProcessingTimer(deadline)
	}
	return nil
}

func (j *interval) ProcessWatermark(wm int64, out exec.Output) error {
	if !j.spec.EventTime {
		return out.PushWatermark(wm)
	}
	j.wm = wm
	if err := j.expire(wm, out); err != nil {
		return err
	}
	if err := j.flush(out); err != nil {
		return err
	}
	if wm == exec.MaxWatermark || wm == exec.MinWatermark {
		return out.PushWatermark(wm)
	}
	return out.PushWatermark(wm - max(j.rel[0], j.rel[1]))
}

func (j *interval) OnProcessingTime(t int64, out exec.Output) error {
	if j.spec.EventTime {
		return nil
	}
	if err := j.expire(j.ctx.Now(), out); err != nil {
		return err
	}
	return j.flush(out)
}

// earliest returns the earliest expiry in the index.
func (j *interval) earliest() (int64, bool, error) {
	best, found := int64(math.MaxInt64), false
	kgs := j.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
			return 0, false, err
		}
		for s := range j.timers {
			tk, _, ok, err := j.timers[s].First(nil)
			if err != nil {
				return 0, false, err
			}
			if ok && len(tk) >= 8 {
				if d := readTime(tk); d < best {
					best, found = d, true
				}
			}
		}
	}
	return best, found, nil
}

// expire removes the rows whose time has passed at operator time now,
// emitting the unmatched rows of outer sides padded with NULLs.
func (j *interval) expire(now int64, out exec.Output) error {
	if j.cache != nil {
		return j.expireCached(now, out)
	}
	if j.nextDue != math.MinInt64 && now < j.nextDue {
		return nil
	}
	next := int64(math.MaxInt64)
	kgs := j.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		for s := range j.timers {
			if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
				return err
			}
			j.due, j.dueKeys = j.due[:0], j.dueKeys[:0]
			j.eNow, j.eNext, j.eKG = now, next, kg
			if j.dueFn == nil {
				j.dueFn = j.dueOne
			}
			err := j.timers[s].Ascend(nil, nil, j.dueFn)
			next = j.eNext
			if err != nil {
				return err
			}
			for i := range j.due {
				if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
					return err
				}
				if err := j.timers[s].Delete(nil, j.due[i].tk); err != nil {
					return err
				}
			}
			for i := range j.due {
				if err := j.expireKey(s, kg, j.due[i].tk[8:], now, out); err != nil {
					return err
				}
			}
		}
	}
	j.nextDue = next
	return nil
}

// expireKey removes side s's rows of key whose time is at most now minus
// the side's relative size minus 1.
func (j *interval) expireKey(s, kg int, key []byte, now int64, out exec.Output) error {
	if err := j.b.SetCurrentKeyInGroup(kg, key); err != nil {
		return err
	}
	bound := now - j.rel[s] - 1
	j.expBuf, j.expEnds = j.expBuf[:0], j.expEnds[:0]
	j.eBound, j.eSide, j.eOut, j.eErr = bound, s, out, nil
	if j.expireFn == nil {
		j.expireFn = j.expireOne
	}
	err := j.rows[s].Ascend(nil, nil, j.expireFn)
	if err == nil {
		err = j.eErr
	}
	j.eOut = nil
	if err != nil {
		return err
	}
	for _, e := range j.expEnds {
		if err := j.rows[s].Delete(nil, j.expBuf[e[0]:e[1]]); err != nil {
			return err
		}
	}
	return nil
}

// dueOne is expire's visit of one timer: it collects the due ones.
func (j *interval) dueOne(tk, _ []byte) bool {
	d := readTime(tk)
	if d > j.eNow {
		j.eNext = min(j.eNext, d)
		return false
	}
	st := len(j.dueKeys)
	j.dueKeys = append(j.dueKeys, tk...)
	j.due = append(j.due, dueTimer{kg: j.eKG, tk: j.dueKeys[st:len(j.dueKeys):len(j.dueKeys)], deadline: d})
	return true
}

// expireOne is expireKey's visit of one stored row: it collects the
// expired ones, emitting an outer side's unmatched copies padded.
func (j *interval) expireOne(uk, v []byte) bool {
	s := j.eSide
	if readTime(uk) > j.eBound {
		return false
	}
	if j.outer[s] {
		count, w := binary.Uvarint(v)
		emitted, w2 := binary.Uvarint(v[max(w, 0):])
		if w <= 0 || w2 <= 0 {
			j.eErr = fmt.Errorf("interval join: corrupt state: bad row counts")
			return false
		}
		if emitted < count {
			r := j.scratch[s]
			if _, err := decodeRowInto(r, uk[8:]); err != nil {
				j.eErr = fmt.Errorf("interval join: %w", err)
				return false
			}
			for range count - emitted {
				if err := j.emit(s, r, nil, j.eOut); err != nil {
					j.eErr = err
					return false
				}
			}
		}
	}
	st := len(j.expBuf)
	j.expBuf = append(j.expBuf, uk...)
	j.expEnds = append(j.expEnds, [2]int{st, len(j.expBuf)})
	return true
}
