// Package temporal owns the event-time temporal join: each row of the left
// (probe) input joins the version of a versioned table that was valid at
// the row's time (`JOIN rates FOR SYSTEM_TIME AS OF o.rowtime`), with
// Flink's semantics (TemporalRowTimeJoinOperator): left rows wait until
// the watermark passes their time; then each joins the latest version of
// its key whose time is at or before its own (none, or a deletion, is no
// match: a LEFT join pads the row with NULLs). A version stays as long as
// it may still be the one valid for a row to come: once the watermark
// passed, only the latest version at or before it and the later ones are
// kept.
//
// The state is keyed by the join key in the runtime's backend
// (exec.KeyedOperator): the waiting left rows by time, the versions by
// time, and per key group an index of (time, key) timers telling the
// watermark which keys to visit.
//
// With a state TTL (table.exec.state.ttl), a key's whole state is dropped
// once the key has been idle, in processing time, for between the TTL and
// 1.5 times it, as Flink's operator does with its cleanup timers: any row
// of the key that comes within the TTL of the cleanup time moves it to
// 1.5 TTL ahead. Left rows still waiting for the watermark then are
// dropped with it, which is what the user chose by setting the TTL.
package temporal

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Spec describes an event-time temporal join. Input 0 is the left (probe)
// side, input 1 the versioned table's changelog; both arrive hash-
// partitioned by their key columns, which hold equal values for rows that
// join.
type Spec struct {
	LeftKeys, RightKeys   []int
	LeftTime, RightTime   int // rowtime columns (TIMESTAMP / TIMESTAMP_LTZ)
	LeftWidth, RightWidth int
	LeftOuter             bool
	// Residual, when set, is the rest of the join condition, tested on
	// the joined row with the version found.
	Residual func() (exec.Predicate, error)
	// StateTTL is the idle time (ms, processing time) after which a key's
	// state is dropped; 0 keeps it until the watermark frees it.
	StateTTL int64
}

// NewJoin returns the temporal join operator of spec.
func NewJoin(spec Spec) (exec.Operator, error) {
	if len(spec.LeftKeys) == 0 || len(spec.LeftKeys) != len(spec.RightKeys) {
		return nil, fmt.Errorf("temporal join: %d left and %d right key columns", len(spec.LeftKeys), len(spec.RightKeys))
	}
	return &join{spec: spec}, nil
}

type join struct {
	spec     Spec
	ctx      *exec.OperatorContext
	residual exec.Predicate

	b      *kv.Backend
	left   *kv.SortedMapState[int64, []byte] // time → the left rows of that time, encoded one after the other
	right  *kv.SortedMapState[int64, []byte] // time → [kind][row]: the version starting then
	timers *kv.SortedMapState[[]byte, []byte]
	// With a TTL: the key's registered cleanup time, and the service
	// whose processing-time timers fire it.
	cleanupAt *kv.ValueState[int64]
	cleanup   *kv.TimerService

	out    *types.Batch
	joined types.Row
	keyBuf []byte
	buf    []byte
}

// OpenKeyedState implements exec.KeyedOperator.
func (j *join) OpenKeyedState(b *kv.Backend) error {
	j.b = b
	var err error
	if j.left, err = kv.NewSortedMapState[int64, []byte](b, "temporal-left", kv.Int64{}, kv.Bytes{}, kv.Options{}); err != nil {
		return err
	}
	if j.right, err = kv.NewSortedMapState[int64, []byte](b, "temporal-right", kv.Int64{}, kv.Bytes{}, kv.Options{}); err != nil {
		return err
	}
	if j.timers, err = kv.NewSortedMapState[[]byte, []byte](b, "temporal-timers", kv.Bytes{}, kv.Bytes{}, kv.Options{}); err != nil {
		return err
	}
	if j.spec.StateTTL <= 0 {
		return nil
	}
	if j.cleanupAt, err = kv.NewValueState[int64](b, "temporal-cleanup-time", kv.Int64{}, kv.Options{}); err != nil {
		return err
	}
	j.cleanup, err = kv.NewTimerService(b, "temporal-cleanup")
	return err
}

// PrepareSnapshot implements exec.KeyedOperator: everything is in the
// backend already.
func (j *join) PrepareSnapshot(exec.CheckpointID) error { return nil }

func (j *join) Open(ctx *exec.OperatorContext) error {
	j.ctx = ctx
	if j.spec.Residual != nil {
		var err error
		if j.residual, err = j.spec.Residual(); err != nil {
			return err
		}
	}
	j.joined = make(types.Row, j.spec.LeftWidth+j.spec.RightWidth)
	j.out = types.NewBatch(j.spec.LeftWidth+j.spec.RightWidth, types.DefaultBatchSize)
	if j.cleanup != nil {
		if ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil {
			return fmt.Errorf("temporal join: a state TTL needs the runtime's processing-time timers")
		}
		return j.cleanup.Start(ctx.RegisterProcessingTimer)
	}
	return nil
}

// touch moves the current key's cleanup time when a row of it comes
// within the TTL of it (or it has none): to 1.5 TTL from now, so that a
// busy key does not register a timer per row.
func (j *join) touch() error {
	if j.cleanup == nil {
		return nil
	}
	now, ttl := j.ctx.Now(), j.spec.StateTTL
	cur, ok, err := j.cleanupAt.Get(nil)
	if err != nil {
		return err
	}
	if ok && now+ttl <= cur {
		return nil
	}
	if ok {
		if err := j.cleanup.Delete(kv.ProcessingTime, cur, nil); err != nil {
			return err
		}
	}
	next := now + ttl + ttl/2
	if err := j.cleanup.Register(kv.ProcessingTime, next, nil); err != nil {
		return err
	}
	return j.cleanupAt.Put(nil, next)
}

// OnProcessingTime drops the state of the keys whose cleanup time came.
func (j *join) OnProcessingTime(t int64, out exec.Output) error {
	if j.cleanup == nil {
		return nil
	}
	return j.cleanup.Advance(kv.ProcessingTime, t, func(kv.Timer) error {
		if err := j.left.Clear(nil); err != nil {
			return err
		}
		if err := j.right.Clear(nil); err != nil {
			return err
		}
		// The key's entries in the watermark's index stay; visiting a key
		// without state finds nothing to do.
		return j.cleanupAt.Clear(nil)
	})
}

// key encodes the key columns of r, or reports a NULL among them (which
// never joins).
func (j *join) key(r types.Row, cols []int) ([]byte, bool) {
	j.keyBuf = j.keyBuf[:0]
	for _, c := range cols {
		if r[c].IsNull() {
			return nil, false
		}
		j.keyBuf = types.AppendValue(j.keyBuf, r[c])
	}
	return j.keyBuf, true
}

func rowTime(r types.Row, col int) (int64, bool) {
	v := r[col]
	if v.IsNull() {
		return 0, false
	}
	return v.Millis(), true
}

func timerKey(dst []byte, t int64, key []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
	return append(dst, key...)
}

func (j *join) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	var err error
	if input == 0 {
		err = j.processLeft(b, out)
	} else {
		err = j.processRight(b)
	}
	if err != nil {
		return err
	}
	return j.flush(out)
}

func (j *join) processLeft(b *types.Batch, out exec.Output) error {
	for i, r := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("temporal join: the left input must be insert-only, got a %s row", k)
		}
		t, ok := rowTime(r, j.spec.LeftTime)
		if !ok {
			return fmt.Errorf("temporal join: a left row has a NULL row time: %v", r)
		}
		key, ok := j.key(r, j.spec.LeftKeys)
		if !ok {
			// A NULL key matches no version: decided at once.
			if j.spec.LeftOuter {
				if err := j.pad(r, out); err != nil {
					return err
				}
			}
			continue
		}
		h := types.HashColumns(r, j.spec.LeftKeys)
		if err := j.b.SetCurrentKey(h, key); err != nil {
			return err
		}
		if err := j.touch(); err != nil {
			return err
		}
		prev, _, err := j.left.Get(nil, t)
		if err != nil {
			return err
		}
		j.buf = types.AppendRow(append(j.buf[:0], prev...), r)
		if err := j.left.Put(nil, t, j.buf); err != nil {
			return err
		}
		if err := j.addTimer(h, t, key); err != nil {
			return err
		}
	}
	return nil
}

func (j *join) addTimer(h uint64, t int64, key []byte) error {
	tk := timerKey(nil, t, key)
	if err := j.b.SetCurrentKeyInGroup(kv.KeyGroupOf(h, j.b.MaxParallelism()), nil); err != nil {
		return err
	}
	return j.timers.Put(nil, tk, nil)
}

func (j *join) processRight(b *types.Batch) error {
	for i, r := range b.Rows {
		kind := b.Kinds[i]
		if kind == types.UpdateBefore {
			// The +U that follows holds the new version.
			continue
		}
		t, ok := rowTime(r, j.spec.RightTime)
		if !ok {
			return fmt.Errorf("temporal join: a row of the versioned table has a NULL row time: %v", r)
		}
		key, ok := j.key(r, j.spec.RightKeys)
		if !ok {
			continue // a version with a NULL key joins no row
		}
		h := types.HashColumns(r, j.spec.RightKeys)
		if err := j.b.SetCurrentKey(h, key); err != nil {
			return err
		}
		if err := j.touch(); err != nil {
			return err
		}
		j.buf = types.AppendRow(append(j.buf[:0], byte(kind)), r)
		if err := j.right.Put(nil, t, j.buf); err != nil {
			return err
		}
		// The version's time is when older versions may be dropped.
		if err := j.addTimer(h, t, key); err != nil {
			return err
		}
	}
	return nil
}

// ProcessWatermark joins the left rows the watermark passed and drops the
// versions no row can need any more.
func (j *join) ProcessWatermark(wm int64, out exec.Output) error {
	r := j.b.KeyGroups()
	var due [][]byte
	for kg := r.First; kg <= r.Last; kg++ {
		if err := j.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		due = due[:0]
		err := j.timers.Ascend(nil, nil, func(tk, _ []byte) bool {
			if int64(binary.BigEndian.Uint64(tk[:8])^(1<<63)) > wm {
				return false
			}
			due = append(due, append([]byte(nil), tk...))
			return true
		})
		if err != nil {
			return err
		}
		if len(due) == 0 {
			continue
		}
		for _, tk := range due {
			if err := j.timers.Delete(nil, tk); err != nil {
				return err
			}
		}
		seen := map[string]bool{}
		for _, tk := range due {
			key := tk[8:]
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			if err := j.fire(kg, key, wm, out); err != nil {
				return err
			}
		}
	}
	if err := j.flush(out); err != nil {
		return err
	}
	return out.PushWatermark(wm)
}

type version struct {
	t    int64
	kind types.RowKind
	row  types.Row
}

// fire handles one key at watermark wm.
func (j *join) fire(kg int, key []byte, wm int64, out exec.Output) error {
	if err := j.b.SetCurrentKeyInGroup(kg, key); err != nil {
		return err
	}
	var versions []version
	var derr error
	err := j.right.Ascend(nil, nil, func(t int64, v []byte) bool {
		row, _, err := types.DecodeRow(v[1:])
		if err != nil {
			derr = err
			return false
		}
		versions = append(versions, version{t: t, kind: types.RowKind(v[0]), row: row})
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("temporal join: reading versions: %w", err)
	}
	var times []int64
	var lefts []types.Row
	err = j.left.Ascend(nil, nil, func(t int64, v []byte) bool {
		if t > wm {
			return false
		}
		times = append(times, t)
		for len(v) > 0 {
			var r types.Row
			if r, v, derr = types.DecodeRow(v); derr != nil {
				return false
			}
			lefts = append(lefts, r)
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("temporal join: reading waiting rows: %w", err)
	}
	for _, t := range times {
		if err := j.left.Delete(nil, t); err != nil {
			return err
		}
	}
	for _, r := range lefts {
		t, _ := rowTime(r, j.spec.LeftTime)
		// The latest version at or before t.
		i := sort.Search(len(versions), func(i int) bool { return versions[i].t > t }) - 1
		matched := false
		if i >= 0 && versions[i].kind != types.Delete {
			ok, err := j.emit(r, versions[i].row, out)
			if err != nil {
				return err
			}
			matched = ok
		}
		if !matched && j.spec.LeftOuter {
			if err := j.pad(r, out); err != nil {
				return err
			}
		}
	}
	// Keep the latest version at or before wm, and the later ones.
	last := sort.Search(len(versions), func(i int) bool { return versions[i].t > wm }) - 1
	for i := 0; i < last; i++ {
		if err := j.right.Delete(nil, versions[i].t); err != nil {
			return err
		}
	}
	if wm == math.MaxInt64 && last >= 0 {
		// The end of input: nothing will ask for a version again.
		if err := j.right.Delete(nil, versions[last].t); err != nil {
			return err
		}
	}
	return nil
}

func (j *join) emit(l, r types.Row, out exec.Output) (bool, error) {
	lw := j.spec.LeftWidth
	if j.residual != nil {
		copy(j.joined, l)
		copy(j.joined[lw:], r)
		ok, err := j.residual.Test(j.joined)
		if err != nil || !ok {
			return false, err
		}
	}
	if err := j.room(out); err != nil {
		return false, err
	}
	o := j.out.Append(types.Insert)
	copy(o, l)
	copy(o[lw:], r)
	return true, nil
}

func (j *join) pad(l types.Row, out exec.Output) error {
	if err := j.room(out); err != nil {
		return err
	}
	copy(j.out.Append(types.Insert), l)
	return nil
}

func (j *join) room(out exec.Output) error {
	if !j.out.Full() {
		return nil
	}
	return j.flush(out)
}

func (j *join) flush(out exec.Output) error {
	if j.out == nil || j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

func (j *join) Finish(out exec.Output) error { return j.flush(out) }
func (j *join) Close() error                 { return nil }

var _ exec.KeyedOperator = (*join)(nil)
