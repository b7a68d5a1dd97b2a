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
		ttl:        ttlTimer{ttl: spec.StateTTL.Milliseconds()},
		em:         emitter{withRank: spec.OutputRankNumber},
	}, nil
}

func checkRange(start, end int64) error {
	if start < 1 || end < start {
		return fmt.Errorf("invalid rank range [%d, %d]: the range is 1-based and the end must not be before the start", start, end)
	}
	return nil
}

// rankStore keeps the sorted rows of every partition. A persistent backend
// would hand out sortedRows as a cache of the partition's rows and write
// changes back.
type rankStore interface {
	// partition returns the id and rows of row's partition (hash h), empty
	// when new. rows stays valid until release of id.
	partition(row types.Row, h uint64) (id int32, rows *sortedRows)
	release(id int32)
	// expire forgets every partition last changed at or before cutoff and
	// returns the oldest change time among those left (math.MaxInt64 when
	// none).
	expire(cutoff int64) (oldest int64)
	size() int
	// touch records that the partition of id changed.
	touch(id int32)
}

type topN struct {
	spec       RankSpec
	withNumber bool // emit changes per rank position (rn output or an offset)
	ttl        ttlTimer
	state      rankStore
	em         emitter

	restored []snapshot.Entry // from RestoreState, applied at Open
	snapBuf  []byte
}

func (t *topN) Open(ctx *exec.OperatorContext) error {
	if err := t.ttl.open(ctx, "rank"); err != nil {
		return err
	}
	return t.applyRestored()
}

func (t *topN) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := t.em.init(b.Width()); err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	if t.state == nil {
		if err := checkColumns(b.Width(), t.spec.PartitionCols, t.spec.SortKeys); err != nil {
			return fmt.Errorf("rank: %w", err)
		}
		t.state = newHeapRankStore(t.spec.PartitionCols, b.Width())
	}
	t.em.out = out
	now := t.ttl.now()
	for i, row := range b.Rows {
		kind := b.Kinds[i]
		if !t.spec.InputIsUpdating && kind != types.Insert {
			return fmt.Errorf("rank: append-only Top-N got a %s row; its input must be insert-only", kind)
		}
		id, p := t.state.partition(row, types.HashColumns(row, t.spec.PartitionCols))
		if p.len() > 0 && t.ttl.expired(p.written, now) {
			p.reset()
		}
		var changed bool
		var err error
		if kind.IsAccumulate() {
			changed, err = t.accumulate(p, row)
		} else {
			changed, err = t.retract(p, row)
		}
		if err != nil {
			return err
		}
		if changed {
			p.written = now
			t.state.touch(id)
		}
		if p.len() == 0 {
			t.state.release(id)
		}
	}
	if t.state.size() > 0 {
		t.ttl.schedule(now)
	}
	return t.em.flush()
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

func (t *topN) OnProcessingTime(ts int64, out exec.Output) error {
	if !t.ttl.due(ts) || t.state == nil {
		return nil
	}
	if oldest := t.state.expire(ts - t.ttl.ttl); oldest != math.MaxInt64 {
		t.ttl.schedule(oldest)
	}
	return nil
}

func (t *topN) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (t *topN) Finish(exec.Output) error                         { return nil }
func (t *topN) Close() error                                     { t.state = nil; return nil }

// heapRankStore is the in-memory rankStore.
type heapRankStore struct {
	keys    *keyed.Table
	width   int
	parts   []*sortedRows // by partition id; kept for reuse after release
	changes snapshot.Changes
}

func newHeapRankStore(partCols []int, width int) *heapRankStore {
	return &heapRankStore{keys: keyed.NewTable(partCols), width: width}
}

func (s *heapRankStore) partition(row types.Row, h uint64) (int32, *sortedRows) {
	id, _ := s.keys.Lookup(row, h)
	if int(id) == len(s.parts) {
		s.parts = append(s.parts, &sortedRows{width: s.width})
	}
	return id, s.parts[id]
}

func (s *heapRankStore) release(id int32) {
	s.changes.Removed(id, s.keys.Hash(id), tagTopN, s.keys.Key(id))
	s.parts[id].reset()
	s.keys.Release(id)
}

func (s *heapRankStore) expire(cutoff int64) int64 {
	oldest := int64(math.MaxInt64)
	for id := int32(0); int(id) < s.keys.Span(); id++ {
		if !s.keys.InUse(id) {
			continue
		}
		if w := s.parts[id].written; w <= cutoff {
			s.release(id)
		} else {
			oldest = min(oldest, w)
		}
	}
	return oldest
}

func (s *heapRankStore) size() int { return s.keys.Size() }

func (s *heapRankStore) touch(id int32) { s.changes.Touch(id) }
