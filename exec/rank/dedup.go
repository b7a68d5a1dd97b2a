package rank

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// DedupSpec describes ROW_NUMBER() OVER (PARTITION BY keys ORDER BY time)
// filtered to rn = 1.
type DedupSpec struct {
	KeyCols              []int // PARTITION BY columns
	RowtimeCol           int   // ORDER BY column when it is a rowtime attribute; -1 for proctime ordering
	KeepLast             bool  // ORDER BY … DESC keeps the last row; ASC keeps the first
	GenerateUpdateBefore bool
	StateTTL             time.Duration
}

// NewDeduplicate returns the deduplication operator. Its input must be
// insert-only; output rows are the input rows.
//
//   - Keep first on proctime: the first row that arrives for a key is
//     emitted as +I, later rows are dropped. The output is insert-only.
//   - Keep first on rowtime (Flink's RowTimeDeduplicateFunction): the first
//     row is +I; a later-arriving row with a strictly smaller rowtime
//     replaces the kept one, -U(kept) (with GenerateUpdateBefore) and
//     +U(row); a row with an equal or larger rowtime is dropped.
//   - Keep last on proctime: the first row is +I, every later row emits
//     -U(previous) (with GenerateUpdateBefore) and +U(row). As in Flink, a
//     row equal to the kept one emits nothing when state TTL is off.
//   - Keep last on rowtime: a row whose rowtime is >= the kept row's
//     replaces it (-U/+U); an older row is ignored.
//
// With StateTTL, a key whose state was last written StateTTL ago is
// forgotten, and its next row counts as a first row again.
func NewDeduplicate(spec DedupSpec) (exec.Operator, error) {
	for _, c := range spec.KeyCols {
		if c < 0 {
			return nil, fmt.Errorf("deduplicate: invalid key column %d", c)
		}
	}
	if spec.RowtimeCol < -1 {
		return nil, fmt.Errorf("deduplicate: invalid rowtime column %d", spec.RowtimeCol)
	}
	if spec.StateTTL < 0 {
		return nil, fmt.Errorf("deduplicate: negative state TTL %s", spec.StateTTL)
	}
	return &dedup{spec: spec, ttl: ttlTimer{ttl: spec.StateTTL.Milliseconds()}}, nil
}

// Deduplication state: one value per key, [varint last change][varint
// rowtime][kept row (types.AppendRow), unless proctime keep-first]. The
// codec id differs with and without the kept row, so a checkpoint of a
// proctime keep-first (no rows) cannot be read by a variant that must
// retract its kept row.
const dedupState = "dedup"

type dedup struct {
	spec    DedupSpec
	ttl     ttlTimer
	em      emitter
	keepRow bool // state holds the kept row

	b       *kv.Backend
	state   *kv.ValueState[[]byte]
	c       *cache
	width   int // values per kept row; 0 when rows are not kept
	checked bool
	// by cache id
	rows []types.Value
	buf  []byte

	maxCached int // values the cache may hold, overriding the backend's bound (tests)
}

var _ exec.KeyedOperator = (*dedup)(nil)

func (d *dedup) OpenKeyedState(b *kv.Backend) error {
	// Every variant but proctime keep-first may retract its kept row.
	d.keepRow = d.spec.KeepLast || d.spec.RowtimeCol >= 0
	codec := encoded{"rank.dedup.first/1"}
	if d.keepRow {
		codec = encoded{"rank.dedup.row/1"}
	}
	st, err := kv.NewValueState[[]byte](b, dedupState, codec, kv.Options{TTL: d.spec.StateTTL})
	if err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	d.b, d.state = b, st
	d.c = newCache(d.spec.KeyCols, len(d.spec.KeyCols))
	d.c.limit = cacheLimit(b, d.maxCached)
	return nil
}

func (d *dedup) PrepareSnapshot(exec.CheckpointID) error {
	if err := d.c.writeBack(d.store); err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	return nil
}

func (d *dedup) Open(ctx *exec.OperatorContext) error {
	if d.b == nil {
		return fmt.Errorf("deduplicate: opened without its keyed state backend")
	}
	return d.ttl.open(ctx, "deduplicate")
}

func (d *dedup) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := d.em.init(b.Width()); err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	if !d.checked {
		if err := checkColumns(b.Width(), d.spec.KeyCols, nil); err != nil {
			return fmt.Errorf("deduplicate: %w", err)
		}
		if d.keepRow {
			d.width = b.Width()
		}
		d.checked = true
	}
	if rt := d.spec.RowtimeCol; rt >= b.Width() {
		return fmt.Errorf("deduplicate: rowtime column %d out of range for rows of width %d", rt, b.Width())
	}
	if d.c.full() {
		if err := d.evict(); err != nil {
			return err
		}
	}
	d.em.out = out
	now := d.ttl.now()
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("deduplicate: the input must be insert-only, got a %s row", k)
		}
		if err := d.process(row, now); err != nil {
			return err
		}
	}
	if d.c.keys.Size() > 0 {
		d.ttl.schedule(now)
	}
	return d.em.flush()
}

// kept is the kept row of cache id.
func (d *dedup) kept(id int32) types.Row {
	w := d.width
	return types.Row(d.rows[int(id)*w : int(id+1)*w : int(id+1)*w])
}

// lookup returns the cache id of row's key, loading its entry from the
// backend on a miss; found is false when the key has no live entry.
func (d *dedup) lookup(row types.Row, now int64) (id int32, found bool, err error) {
	id, added := d.c.lookup(row, types.HashColumns(row, d.spec.KeyCols))
	if n := (int(id) + 1) * d.width; n > len(d.rows) {
		for range n - len(d.rows) {
			d.rows = append(d.rows, types.Value{})
		}
	}
	if !added {
		return id, d.ttl.ttl == 0 || !expired(d.ttl.ttl, d.c.meta[id].written, now), nil
	}
	d.c.held += d.width + 2
	if err := d.c.setKey(d.b, id); err != nil {
		return id, false, fmt.Errorf("deduplicate: %w", err)
	}
	v, ok, err := d.state.Get(nil)
	if err != nil || !ok {
		return id, false, err
	}
	written, v, err := varint(v)
	if err != nil {
		return id, false, corrupt("deduplicate", err)
	}
	if expired(d.ttl.ttl, written, now) {
		return id, false, d.state.Clear(nil)
	}
	rowtime, v, err := varint(v)
	if err != nil {
		return id, false, corrupt("deduplicate", err)
	}
	if d.keepRow {
		var r types.Row
		if r, v, err = types.DecodeRow(v); err != nil {
			return id, false, corrupt("deduplicate", err)
		}
		if len(r) != d.width {
			return id, false, fmt.Errorf("deduplicate: corrupt state: a kept row of %d columns for rows of %d", len(r), d.width)
		}
		copy(d.kept(id), r)
	}
	if len(v) != 0 {
		return id, false, fmt.Errorf("deduplicate: corrupt state: %d trailing bytes", len(v))
	}
	d.c.meta[id].aux = rowtime
	d.c.meta[id].written = written
	return id, true, nil
}

// store writes the entry of cache id to the backend.
func (d *dedup) store(id int32) error {
	if err := d.c.setKey(d.b, id); err != nil {
		return err
	}
	m := &d.c.meta[id]
	buf := binary.AppendVarint(d.buf[:0], m.written)
	buf = binary.AppendVarint(buf, m.aux)
	if d.keepRow {
		buf = types.AppendRow(buf, d.kept(id))
	}
	d.buf = buf
	return d.state.Put(nil, buf)
}

// evict writes back the dirty entries and empties the cache.
func (d *dedup) evict() error {
	if err := d.c.writeBack(d.store); err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	clear(d.rows)
	d.rows = d.rows[:0]
	d.c.reset()
	return nil
}

func (d *dedup) process(row types.Row, now int64) error {
	id, found, err := d.lookup(row, now)
	if err != nil {
		return err
	}
	added := !found
	if !d.keepRow {
		if !added {
			return nil
		}
		d.c.touch(id, now)
		return d.em.emit(types.Insert, row, 0)
	}
	var rowtime int64
	if c := d.spec.RowtimeCol; c >= 0 {
		v := row[c]
		if v.IsNull() {
			return fmt.Errorf("deduplicate: rowtime column %d is NULL; a rowtime attribute must not be null", c)
		}
		rowtime = v.N // epoch ms of TIMESTAMP / TIMESTAMP_LTZ, or a BIGINT
	}
	kept := d.kept(id)
	if !added {
		switch {
		case d.spec.RowtimeCol >= 0 && d.spec.KeepLast:
			if rowtime < d.c.meta[id].aux {
				return nil
			}
		case d.spec.RowtimeCol >= 0:
			// Keep first: only a strictly earlier row wins over the kept one.
			if rowtime >= d.c.meta[id].aux {
				return nil
			}
		case !d.ttl.enabled() && types.RowsEqual(kept, row):
			// Flink emits nothing for an unchanged last row unless state TTL
			// is on (then downstream state must be refreshed too).
			return nil
		}
		if d.spec.GenerateUpdateBefore {
			if err := d.em.emit(types.UpdateBefore, kept, 0); err != nil {
				return err
			}
		}
		if err := d.em.emit(types.UpdateAfter, row, 0); err != nil {
			return err
		}
	} else if err := d.em.emit(types.Insert, row, 0); err != nil {
		return err
	}
	copy(kept, row)
	d.c.meta[id].aux = rowtime
	d.c.touch(id, now)
	return nil
}

// OnProcessingTime forgets the cached entries whose TTL ran out (the
// backend's TTL removes the stored ones), so idle keys do not stay in
// memory.
func (d *dedup) OnProcessingTime(t int64, out exec.Output) error {
	if !d.ttl.due(t) || d.c == nil {
		return nil
	}
	oldest, err := sweepCache(d.c, d.ttl.ttl, t, func(id int32) error {
		d.c.held -= d.width + 2
		if d.width > 0 {
			clear(d.kept(id))
		}
		if err := d.c.setKey(d.b, id); err != nil {
			return err
		}
		return d.state.Clear(nil)
	})
	if err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	if oldest != math.MaxInt64 {
		d.ttl.schedule(oldest)
	}
	return nil
}

func (d *dedup) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (d *dedup) Finish(exec.Output) error                         { return nil }
func (d *dedup) Close() error                                     { d.c, d.rows = nil, nil; return nil }
