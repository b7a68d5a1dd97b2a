package rank

import (
	"fmt"
	"math"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// RankSpec describes a Top-N: ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)
// AS rn … WHERE rn <= N (or rn BETWEEN a AND b).
type RankSpec struct {
	PartitionCols        []int
	SortKeys             []exec.SortKey
	RankStart, RankEnd   int64 // inclusive, 1-based
	OutputRankNumber     bool  // append rn (BIGINT) as the last output column
	InputIsUpdating      bool  // input carries -U/-D (retractable Top-N); otherwise append-only Top-N
	GenerateUpdateBefore bool
	StateTTL             time.Duration
}

// NewRank returns the Top-N operator. Rows of a partition are ranked by
// SortKeys, ties by arrival (the earlier row ranks first); the output is the
// changelog of the rows ranked RankStart…RankEnd, as Flink's
// AppendOnlyTopNFunction (insert-only input) and RetractableTopNFunction
// (updating input) emit it:
//
//   - Without rank number and without offset (RankStart = 1), a row entering
//     the range emits -D of the row pushed out of it (if any) and then +I of
//     itself; a retracted row in the range emits -D of itself and then +I of
//     the row that moves up into rank RankEnd (if any).
//   - With rank number, or with an offset (then rows are emitted without
//     rn, as Flink does), every rank position in range whose row changed
//     emits -U(old row, r) (with GenerateUpdateBefore) and +U(new row, r);
//     a position filled for the first time emits +I(row, r) and a position
//     left empty by a retraction emits -D(old row, r).
//
// Append-only Top-N keeps only the first RankEnd rows of a partition. The
// retractable one keeps every row, since a retraction can pull row
// RankEnd+1 into range; a retraction of a row it does not hold is ignored.
// With StateTTL, a partition unchanged for StateTTL is forgotten.
func NewRank(spec RankSpec) (exec.Operator, error) {
	for _, c := range spec.PartitionCols {
		if c < 0 {
			return nil, fmt.Errorf("rank: invalid partition column %d", c)
		}
	}
	for _, k := range spec.SortKeys {
		if k.Col < 0 {
			return nil, fmt.Errorf("rank: invalid sort column %d", k.Col)
		}
	}
	if err := checkRange(spec.RankStart, spec.RankEnd); err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	if spec.StateTTL < 0 {
		return nil, fmt.Errorf("rank: negative state TTL %s", spec.StateTTL)
	}
	return &topN{
		spec:       spec,
		withNumber: spec.OutputRankNumber || spec.RankStart > 1,
		ttl:        ttlTimer{Sweeper: statecache.Sweeper{TTL: spec.StateTTL.Milliseconds()}},
		em:         emitter{withRank: spec.OutputRankNumber},
	}, nil
}

func checkRange(start, end int64) error {
	if start < 1 || end < start {
		return fmt.Errorf("invalid rank range [%d, %d]: the range is 1-based and the end must not be before the start", start, end)
	}
	return nil
}

// Top-N state: one value per partition, [varint last change][uvarint
// n][n rows in rank order (types.AppendRow)].
//
// Append-only Top-N holds at most RankEnd rows per partition, as Flink's
// AppendOnlyTopNFunction does (its per-key sort-key map is cut back to N
// rows), so the bounded list is one value: one read when the partition is
// loaded and one write when it is written back. Retractable Top-N holds
// every row of the partition; Flink's RetractableTopNFunction keeps the
// partition's sorted sort keys in one value state too (read and written
// per record), with the rows in a map state beside it. Here the rows ride
// in the same value, so the cache holds a partition whole and writes it
// back whole.
const topNState = "topn"

type topN struct {
	spec       RankSpec
	withNumber bool // emit changes per rank position (rn output or an offset)
	ttl        ttlTimer
	em         emitter

	b     *kv.Backend
	c     *statecache.Cache[*sortedRows]
	parts topNParts
	codec *partCodec
	width int

	maxCached int // entries the cache may hold, overriding the backend's bound (tests)
}

var _ exec.KeyedOperator = (*topN)(nil)

// topNParts holds the rows of the cached partitions, by cache id; a
// partition's sortedRows is kept for reuse after its id is released.
type topNParts struct {
	width int
	p     []*sortedRows
	c     *statecache.Cache[*sortedRows] // told of the rows a load brings in
}

func (s *topNParts) Grow(n int) {
	for len(s.p) < n {
		s.p = append(s.p, &sortedRows{width: s.width})
	}
}

func (s *topNParts) Load(id int32, rows *sortedRows) error {
	p := s.p[id]
	for i := range rows.len() {
		p.insert(i, rows.at(i))
	}
	s.c.Grew(id, p.len()*s.width*valueBytes)
	return nil
}

func (s *topNParts) Value(id int32) *sortedRows { return s.p[id] }

func (s *topNParts) Clear(id int32) { s.p[id].reset() }

// partCodec encodes a partition's rows (appendRows) under the format id;
// decoding fills one scratch partition, valid until the next decode.
type partCodec struct {
	id, what string // the format; the operator, for errors
	scratch  sortedRows
}

func (c *partCodec) ID() string { return c.id }

func (*partCodec) Append(dst []byte, p *sortedRows) []byte { return appendRows(dst, p) }

func (c *partCodec) Decode(src []byte) (*sortedRows, error) {
	c.scratch.reset()
	if c.scratch.width == 0 {
		// Rows read before the first input batch (a window Top-N firing
		// restored rows): their width is the stored one.
		n, err := storedWidth(src)
		if err != nil {
			return nil, corrupt(c.what, err)
		}
		c.scratch.width = n
	}
	rest, err := decodeRowsInto(src, &c.scratch)
	if err != nil {
		return nil, corrupt(c.what, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%s: corrupt state: %d trailing bytes", c.what, len(rest))
	}
	return &c.scratch, nil
}

func (t *topN) OpenKeyedState(b *kv.Backend) error {
	t.codec = &partCodec{id: "rank.topn.rows/2", what: "rank"}
	st, err := kv.NewValueState[*sortedRows](b, topNState, t.codec, kv.Options{TTL: t.spec.StateTTL})
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	fresh, err := statecache.Empty(b)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	t.b = b
	// A partition's rows are counted as they come and go (Grew); the
	// fixed part is its bookkeeping.
	t.c = statecache.New(b, st, &t.parts, statecache.Config{
		KeyCols: t.spec.PartitionCols, TTL: t.ttl.TTL, ValueBytes: 2 * valueBytes, Limit: t.maxCached,
	}, fresh)
	t.parts.c = t.c
	return nil
}

func (t *topN) PrepareSnapshot(exec.CheckpointID) error {
	if t.ttl.Enabled() && t.ttl.ctx != nil {
		t.c.SetNow(t.ttl.now())
	}
	if err := t.c.Flush(); err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	return nil
}

func (t *topN) Open(ctx *exec.OperatorContext) error {
	if t.b == nil {
		return fmt.Errorf("rank: opened without its keyed state backend")
	}
	return t.ttl.open(ctx, "rank")
}

func (t *topN) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := t.em.init(b.Width()); err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	if t.width == 0 {
		if err := checkColumns(b.Width(), t.spec.PartitionCols, t.spec.SortKeys); err != nil {
			return fmt.Errorf("rank: %w", err)
		}
		t.width = b.Width()
		t.parts.width, t.codec.scratch.width = t.width, t.width
	}
	t.em.out = out
	now := t.ttl.now()
	t.c.SetNow(now)
	for i, row := range b.Rows {
		kind := b.Kinds[i]
		if !t.spec.InputIsUpdating && kind != types.Insert {
			return fmt.Errorf("rank: append-only Top-N got a %s row; its input must be insert-only", kind)
		}
		id, p, err := t.partition(row)
		if err != nil {
			return fmt.Errorf("rank: %w", err)
		}
		before := p.len()
		var changed bool
		if kind.IsAccumulate() {
			changed, err = t.accumulate(p, row)
		} else {
			changed, err = t.retract(p, row)
		}
		if err != nil {
			return err
		}
		t.c.Grew(id, (p.len()-before)*t.width*valueBytes)
		if p.len() == 0 {
			if err := t.c.Remove(id); err != nil {
				return fmt.Errorf("rank: %w", err)
			}
		} else if changed {
			t.c.Written(id)
		}
	}
	if t.c.Len() > 0 {
		t.ttl.schedule(now)
	}
	return t.em.flush()
}

// partition returns the cache id and rows of row's partition, loading them
// from the backend on a miss; empty when the partition has no live rows.
func (t *topN) partition(row types.Row) (int32, *sortedRows, error) {
	h := types.HashColumns(row, t.spec.PartitionCols)
	id, ok, err := t.c.Get(row, h)
	if err != nil {
		return -1, nil, err
	}
	if ok {
		return id, t.parts.p[id], nil
	}
	if id, err = t.c.Create(row, h); err != nil {
		return -1, nil, err
	}
	return id, t.parts.p[id], nil
}

func (t *topN) inRange(r int64) bool { return r >= t.spec.RankStart && r <= t.spec.RankEnd }

// accumulate adds row and emits the changes of the ranked range.
func (t *topN) accumulate(p *sortedRows, row types.Row) (bool, error) {
	end := t.spec.RankEnd
	pos := p.upperBound(t.spec.SortKeys, row)
	if int64(pos) >= end { // ranks after the range
		if !t.spec.InputIsUpdating {
			return false, nil
		}
		p.insert(pos, row)
		return true, nil
	}
	p.insert(pos, row)
	n := p.len()
	if t.withNumber {
		last := min(end, int64(n))
		for r := int64(pos) + 1; r <= last; r++ {
			idx := int(r - 1)
			if idx+1 < n { // rank r was held by the row now one further down
				if err := t.update(p.at(idx+1), p.at(idx), r); err != nil {
					return true, err
				}
			} else if t.inRange(r) {
				if err := t.em.emit(types.Insert, p.at(idx), r); err != nil {
					return true, err
				}
			}
		}
	} else {
		if int64(n) > end {
			if err := t.em.emit(types.Delete, p.at(int(end)), 0); err != nil {
				return true, err
			}
		}
		if err := t.em.emit(types.Insert, row, 0); err != nil {
			return true, err
		}
	}
	if !t.spec.InputIsUpdating && int64(n) > end {
		p.truncate(int(end))
	}
	return true, nil
}

// retract removes one row equal to row and emits the changes of the ranked
// range.
func (t *topN) retract(p *sortedRows, row types.Row) (bool, error) {
	pos := p.find(t.spec.SortKeys, row)
	if pos < 0 {
		return false, nil
	}
	end := t.spec.RankEnd
	if int64(pos) < end {
		n := p.len()
		if t.withNumber {
			last := min(end, int64(n))
			for r := int64(pos) + 1; r <= last; r++ {
				idx := int(r - 1)
				var err error
				if idx+1 < n { // the row one further down moves up to rank r
					err = t.update(p.at(idx), p.at(idx+1), r)
				} else if t.inRange(r) {
					err = t.em.emit(types.Delete, p.at(idx), r)
				}
				if err != nil {
					return true, err
				}
			}
		} else {
			if err := t.em.emit(types.Delete, p.at(pos), 0); err != nil {
				return true, err
			}
			if int64(n) > end {
				if err := t.em.emit(types.Insert, p.at(int(end)), 0); err != nil {
					return true, err
				}
			}
		}
	}
	p.remove(pos)
	return true, nil
}

// update emits that rank r changed from old to cur.
func (t *topN) update(old, cur types.Row, r int64) error {
	if !t.inRange(r) {
		return nil
	}
	if t.spec.GenerateUpdateBefore {
		if err := t.em.emit(types.UpdateBefore, old, r); err != nil {
			return err
		}
	}
	return t.em.emit(types.UpdateAfter, cur, r)
}

// OnProcessingTime forgets the cached partitions whose TTL ran out (the
// backend's TTL hides the stored ones).
func (t *topN) OnProcessingTime(ts int64, out exec.Output) error {
	if !t.ttl.Due(ts) || t.c == nil {
		return nil
	}
	t.c.SetNow(ts)
	if oldest := t.c.Sweep(); oldest != math.MaxInt64 {
		t.ttl.schedule(oldest)
	}
	return nil
}

func (t *topN) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (t *topN) Finish(exec.Output) error                         { return nil }
func (t *topN) Close() error                                     { t.c = nil; return nil }
