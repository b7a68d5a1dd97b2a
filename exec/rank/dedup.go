package rank

import (
	"fmt"
	"math"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
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

// dedupStore keeps, per key, whether a row was seen, the kept row (unless
// proctime keep-first), its rowtime and when the key was last written.
type dedupStore interface {
	// lookup returns the id of row's key (hash h); added reports a new key
	// whose entry the caller fills.
	lookup(row types.Row, h uint64) (id int32, added bool)
	// entry is the bookkeeping of id; valid until the next lookup.
	entry(id int32) *dedupEntry
	// kept is the kept row of id (empty for proctime keep-first); valid until
	// the next lookup.
	kept(id int32) types.Row
	// expire forgets every key written at or before cutoff and returns the
	// oldest write time among the keys left (math.MaxInt64 when none).
	expire(cutoff int64) (oldest int64)
	size() int
	// touch records that the entry of id changed (for incremental snapshots).
	touch(id int32)
}

type dedupEntry struct {
	rowtime int64
	written int64
}

type dedup struct {
	spec    DedupSpec
	ttl     ttlTimer
	state   dedupStore
	em      emitter
	keepRow bool // state holds the kept row

	restored []snapshot.Entry // from RestoreState, applied at Open
	snapBuf  []byte
}

func (d *dedup) Open(ctx *exec.OperatorContext) error {
	if err := d.ttl.open(ctx, "deduplicate"); err != nil {
		return err
	}
	// Every variant but proctime keep-first may retract its kept row.
	d.keepRow = d.spec.KeepLast || d.spec.RowtimeCol >= 0
	return d.applyRestored()
}

func (d *dedup) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := d.em.init(b.Width()); err != nil {
		return fmt.Errorf("deduplicate: %w", err)
	}
	if d.state == nil {
		if err := checkColumns(b.Width(), d.spec.KeyCols, nil); err != nil {
			return fmt.Errorf("deduplicate: %w", err)
		}
		w := 0
		if d.keepRow {
			w = b.Width()
		}
		d.state = newHeapDedupStore(d.spec.KeyCols, w)
	}
	if rt := d.spec.RowtimeCol; rt >= b.Width() {
		return fmt.Errorf("deduplicate: rowtime column %d out of range for rows of width %d", rt, b.Width())
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
	if d.state.size() > 0 {
		d.ttl.schedule(now)
	}
	return d.em.flush()
}

func (d *dedup) process(row types.Row, now int64) error {
	id, added := d.state.lookup(row, types.HashColumns(row, d.spec.KeyCols))
	e := d.state.entry(id)
	if !added && d.ttl.expired(e.written, now) {
		added = true
	}
	if !d.keepRow {
		if !added {
			return nil
		}
		e.written = now
		d.state.touch(id)
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
	kept := d.state.kept(id)
	if !added {
		switch {
		case d.spec.RowtimeCol >= 0 && d.spec.KeepLast:
			if rowtime < e.rowtime {
				return nil
			}
		case d.spec.RowtimeCol >= 0:
			// Keep first: only a strictly earlier row wins over the kept one.
			if rowtime >= e.rowtime {
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
	e.rowtime = rowtime
	e.written = now
	d.state.touch(id)
	return nil
}

func (d *dedup) OnProcessingTime(t int64, out exec.Output) error {
	if !d.ttl.due(t) || d.state == nil {
		return nil
	}
	if oldest := d.state.expire(t - d.ttl.ttl); oldest != math.MaxInt64 {
		d.ttl.schedule(oldest)
	}
	return nil
}

func (d *dedup) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (d *dedup) Finish(exec.Output) error                         { return nil }
func (d *dedup) Close() error                                     { d.state = nil; return nil }

// heapDedupStore is the in-memory dedupStore: entries and kept rows in flat
// arrays indexed by key id.
type heapDedupStore struct {
	keys    *keyed.Table
	width   int // values per kept row; 0 when rows are not kept
	entries []dedupEntry
	rows    []types.Value
	changes snapshot.Changes
}

func newHeapDedupStore(keyCols []int, width int) *heapDedupStore {
	return &heapDedupStore{keys: keyed.NewTable(keyCols), width: width}
}

func (s *heapDedupStore) lookup(row types.Row, h uint64) (int32, bool) {
	id, added := s.keys.Lookup(row, h)
	if int(id) == len(s.entries) {
		s.entries = append(s.entries, dedupEntry{})
		for range s.width {
			s.rows = append(s.rows, types.Value{})
		}
	}
	if added {
		s.entries[id] = dedupEntry{}
	}
	return id, added
}

func (s *heapDedupStore) entry(id int32) *dedupEntry { return &s.entries[id] }

func (s *heapDedupStore) kept(id int32) types.Row {
	w := s.width
	return types.Row(s.rows[int(id)*w : int(id+1)*w : int(id+1)*w])
}

func (s *heapDedupStore) expire(cutoff int64) int64 {
	oldest := int64(math.MaxInt64)
	for id := int32(0); int(id) < s.keys.Span(); id++ {
		if !s.keys.InUse(id) {
			continue
		}
		if w := s.entries[id].written; w <= cutoff {
			s.changes.Removed(id, s.keys.Hash(id), tagDedup, s.keys.Key(id))
			clear(s.kept(id))
			s.keys.Release(id)
		} else {
			oldest = min(oldest, w)
		}
	}
	return oldest
}

func (s *heapDedupStore) size() int { return s.keys.Size() }

func (s *heapDedupStore) touch(id int32) { s.changes.Touch(id) }
