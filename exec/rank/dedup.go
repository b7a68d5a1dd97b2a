package rank

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
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
	return &dedup{spec: spec, ttl: ttlTimer{Sweeper: statecache.Sweeper{TTL: spec.StateTTL.Milliseconds()}}}, nil
}

// Deduplication state: one value per key, [varint rowtime][kept row
// (types.AppendRow), unless proctime keep-first], behind the decoded
// cache of package statecache (its TTL stamps are the backend's). The
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
	c       *statecache.Cache[dedupEntry]
	slots   dedupSlots
	checked bool

	maxCached int // entries the cache may hold, overriding the backend's bound (tests)
}

var _ exec.KeyedOperator = (*dedup)(nil)

// dedupEntry is the decoded state of a key: the kept row's rowtime and,
// when kept, the row.
type dedupEntry struct {
	rowtime int64
	row     types.Row
}

// dedupSlots holds the cached entries by id: rowtimes, and the kept rows
// in pages of width values each.
type dedupSlots struct {
	width    int // values per kept row; 0 when rows are not kept
	rowtimes []int64
	rows     statecache.Flat               // Width: width
	c        *statecache.Cache[dedupEntry] // told of the kept row's bytes
}

func (s *dedupSlots) kept(id int32) types.Row {
	return types.Row(s.rows.Values(id))
}

// setWidth sets the width of the kept rows, known at the first batch;
// ids handed out before (with no values: rows of width 0) stay valid.
func (s *dedupSlots) setWidth(w int) {
	s.width = w
	if s.rows.Width != w {
		n := s.rows.IDs()
		s.rows = statecache.Flat{Width: w}
		s.rows.Grow(n)
	}
}

func (s *dedupSlots) Grow(n int) {
	for len(s.rowtimes) < n {
		s.rowtimes = append(s.rowtimes, 0)
	}
	s.rows.Grow(n)
}

func (s *dedupSlots) Load(id int32, e dedupEntry) error {
	if len(e.row) != s.width {
		return fmt.Errorf("deduplicate: corrupt state: a kept row of %d columns for rows of %d", len(e.row), s.width)
	}
	s.rowtimes[id] = e.rowtime
	copy(s.kept(id), e.row)
	s.c.Grew(id, s.width*valueBytes)
	return nil
}

func (s *dedupSlots) Value(id int32) dedupEntry {
	return dedupEntry{rowtime: s.rowtimes[id], row: s.kept(id)}
}

func (s *dedupSlots) Clear(id int32) {
	s.rowtimes[id] = 0
	clear(s.kept(id))
}

// dedupCodec encodes a dedupEntry; keepRow says whether the row is stored.
type dedupCodec struct{ keepRow bool }

func (c dedupCodec) ID() string {
	if c.keepRow {
		return "rank.dedup.row/2"
	}
	return "rank.dedup.first/2"
}

func (c dedupCodec) Append(dst []byte, e dedupEntry) []byte {
	dst = binary.AppendVarint(dst, e.rowtime)
	if c.keepRow {
		dst = types.AppendRow(dst, e.row)
	}
	return dst
}

func (c dedupCodec) Decode(src []byte) (dedupEntry, error) {
	var e dedupEntry
	var err error
	if e.rowtime, src, err = varint(src); err != nil {
		return e, corrupt("deduplicate", err)
	}
	if c.keepRow {
		if e.row, src, err = types.DecodeRow(src); err != nil {
			return e, corrupt("deduplicate", err)
		}
	}
	if len(src) != 0 {
		return e, fmt.Errorf("deduplicate: corrupt state: %d trailing bytes", len(src))
	}
	return e, nil
}

func (d *dedup) OpenKeyedState(b *kv.Backend) error {
	// Every variant but proctime keep-first may retract its kept row.
	d.keepRow = d.spec.KeepLast || d.spec.RowtimeCol >= 0
	st, err := kv.NewValueState(b, dedupState, dedupCodec{d.keepRow}, kv.Options{TTL: d.spec.StateTTL})
	if err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	fresh, err := statecache.Empty(b)
	if err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	d.b = b
	// The kept row's width is known at the first batch: its bytes are
	// counted per entry as it is created or loaded (Grew).
	d.c = statecache.New(b, st, &d.slots, statecache.Config{
		KeyCols: d.spec.KeyCols, TTL: d.ttl.TTL, ValueBytes: valueBytes, Limit: d.maxCached,
	}, fresh)
	d.slots.c = d.c
	return nil
}

func (d *dedup) PrepareSnapshot(exec.CheckpointID) error {
	if d.ttl.Enabled() && d.ttl.ctx != nil {
		d.c.SetNow(d.ttl.now())
	}
	if err := d.c.Flush(); err != nil {
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
			d.slots.setWidth(b.Width())
		}
		d.checked = true
	}
	if rt := d.spec.RowtimeCol; rt >= b.Width() {
		return fmt.Errorf("deduplicate: rowtime column %d out of range for rows of width %d", rt, b.Width())
	}
	d.em.out = out
	now := d.ttl.now()
	d.c.SetNow(now)
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("deduplicate: the input must be insert-only, got a %s row", k)
		}
		if err := d.process(row); err != nil {
			return err
		}
	}
	if d.c.Len() > 0 {
		d.ttl.schedule(now)
	}
	return d.em.flush()
}

func (d *dedup) process(row types.Row) error {
	h := types.HashColumns(row, d.spec.KeyCols)
	id, found, err := d.c.Get(row, h)
	if err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	if !found {
		if id, err = d.c.Create(row, h); err != nil {
			return fmt.Errorf("deduplicate: %w", err)
		}
		d.c.Grew(id, d.slots.width*valueBytes)
	}
	if !d.keepRow {
		if found {
			return nil
		}
		d.c.Written(id)
		return d.em.emit(types.Insert, row, 0)
	}
	var rowtime int64
	if c := d.spec.RowtimeCol; c >= 0 {
		v := row[c]
		if v.IsNull() {
			if !found {
				d.c.Drop(id)
			}
			return fmt.Errorf("deduplicate: rowtime column %d is NULL; a rowtime attribute must not be null", c)
		}
		rowtime = v.N // epoch ms of TIMESTAMP / TIMESTAMP_LTZ, or a BIGINT
	}
	kept := d.slots.kept(id)
	if found {
		switch {
		case d.spec.RowtimeCol >= 0 && d.spec.KeepLast:
			if rowtime < d.slots.rowtimes[id] {
				return nil
			}
		case d.spec.RowtimeCol >= 0:
			// Keep first: only a strictly earlier row wins over the kept one.
			if rowtime >= d.slots.rowtimes[id] {
				return nil
			}
		case !d.ttl.Enabled() && types.RowsEqual(kept, row):
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
	d.slots.rowtimes[id] = rowtime
	d.c.Written(id)
	return nil
}

// OnProcessingTime forgets the cached entries whose TTL ran out (the
// backend's TTL hides the stored ones), so idle keys do not stay in
// memory.
func (d *dedup) OnProcessingTime(t int64, out exec.Output) error {
	if !d.ttl.Due(t) || d.c == nil {
		return nil
	}
	d.c.SetNow(t)
	if oldest := d.c.Sweep(); oldest != math.MaxInt64 {
		d.ttl.schedule(oldest)
	}
	return nil
}

func (d *dedup) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (d *dedup) Finish(exec.Output) error                         { return nil }
func (d *dedup) Close() error                                     { d.c = nil; return nil }
