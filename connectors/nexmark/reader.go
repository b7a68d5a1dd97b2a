package nexmark

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// split is a strided part of the event sequence: the events next,
// next+stride, next+2·stride, … below the table's limit.
type split struct {
	next, stride int64
	reported     bool // the reader has said the split is done
}

func (s split) remaining(limit int64) int64 {
	if s.next >= limit {
		return 0
	}
	return (limit-s.next-1)/s.stride + 1
}

// reader generates the events of the splits one source subtask owns.
type reader struct {
	src      *Source
	cfg      genConfig // the source's, with the checkpointed base time
	gen      *generator
	subtask  int
	parallel int
	splits   []split

	wallBase time.Time // paced: when the event with timestamp cfg.baseTime is due
	timer    *time.Timer
}

func newReader(s *Source, subtask, parallelism int) *reader {
	r := &reader{src: s, cfg: s.cfg, subtask: subtask, parallel: parallelism}
	r.gen = newGenerator(&r.cfg, seed)
	r.splits = []split{{next: int64(subtask), stride: int64(parallelism)}}
	return r
}

// Open implements exec.SourceReader.
func (r *reader) Open(context.Context) error {
	if r.src.paced {
		next := int64(unlimited)
		for _, sp := range r.splits {
			next = min(next, sp.next)
		}
		r.wallBase = time.Now()
		if next != unlimited {
			r.wallBase = r.wallBase.Add(-time.Duration(r.cfg.timestamp(next+1)-r.cfg.baseTime) * time.Millisecond)
		}
		r.timer = time.NewTimer(time.Hour)
		r.timer.Stop()
	}
	return nil
}

// NumSplits implements exec.SourceReader.
func (r *reader) NumSplits() int { return len(r.splits) }

// Read implements exec.SourceReader: events of the split that is furthest
// behind, as many as fit in b (and, when paced, as are due).
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	limit := r.src.limit
	k, live := -1, false
	for i := range r.splits {
		sp := &r.splits[i]
		if sp.next >= limit {
			if !sp.reported {
				sp.reported = true
				return exec.ReadResult{Split: i, SplitDone: true, End: r.allDone() && !r.src.keepAlive}, nil
			}
			continue
		}
		live = true
		if k < 0 || sp.next < r.splits[k].next {
			k = i
		}
	}
	if !live {
		if r.src.keepAlive {
			<-ctx.Done() // keep-alive: the source stays up without events
			return exec.ReadResult{Split: -1}, nil
		}
		return exec.ReadResult{Split: -1, End: true}, nil
	}
	sp := &r.splits[k]
	n := min(int64(max(b.Cap()-b.Len(), 1)), sp.remaining(limit))
	if r.src.paced {
		if n = r.due(ctx, sp, n); n == 0 {
			return exec.ReadResult{Split: -1}, nil
		}
	}
	produced := n
	if r.src.kinds == allKinds {
		for range n {
			r.gen.fill(b.Append(types.Insert), sp.next)
			sp.next += sp.stride
		}
	} else {
		produced = r.fillKinds(b, sp, n)
	}
	res := exec.ReadResult{Split: k}
	if sp.next >= limit {
		sp.reported = true
		res.SplitDone = true
		res.End = r.allDone() && !r.src.keepAlive
	} else if produced == 0 {
		res.Split = -1 // every event looked at was skipped
	}
	return res, nil
}

// fillKinds appends the next events of the split of the kinds the source
// produces, up to n of them when not paced; paced, n is the number of due
// events to go through. It looks at no more than n·(events of a proportion
// cycle) events, so that a Read returns even when no kind is produced.
func (r *reader) fillKinds(b *types.Batch, sp *split, n int64) (produced int64) {
	look := n
	if !r.src.paced {
		look = n * r.cfg.totalProportion
	}
	limit, kinds := r.src.limit, r.src.kinds
	for ; look > 0 && produced < n && sp.next < limit; look-- {
		if kinds&(1<<r.cfg.kind(sp.next+2)) != 0 {
			r.gen.fill(b.Append(types.Insert), sp.next)
			produced++
		}
		sp.next += sp.stride
	}
	return produced
}

// due waits until the split's next event is due and returns how many of its
// next n events are due now (0 when ctx ended the wait).
func (r *reader) due(ctx context.Context, sp *split, n int64) int64 {
	at := func(i int64) time.Time {
		return r.wallBase.Add(time.Duration(r.cfg.timestamp(i+1)-r.cfg.baseTime) * time.Millisecond)
	}
	if wait := time.Until(at(sp.next)); wait > 0 {
		r.timer.Reset(wait)
		select {
		case <-ctx.Done():
			r.timer.Stop()
			return 0
		case <-r.timer.C:
		}
	}
	now := time.Now()
	var k int64
	for k < n && !at(sp.next+k*sp.stride).After(now) {
		k++
	}
	return max(k, 1)
}

func (r *reader) allDone() bool {
	for _, sp := range r.splits {
		if sp.next < r.src.limit {
			return false
		}
	}
	return true
}

// Close implements exec.SourceReader.
func (r *reader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}

// positionVersion tags the layout of a position.
const positionVersion = 1

// SnapshotPosition implements exec.CheckpointedReader: the base time of the
// sequence and, per split, its next event and stride.
func (r *reader) SnapshotPosition() ([]byte, error) {
	return encodePosition(r.cfg.baseTime, r.splits), nil
}

func encodePosition(base int64, splits []split) []byte {
	pos := []byte{positionVersion}
	pos = binary.AppendVarint(pos, base)
	pos = binary.AppendUvarint(pos, uint64(len(splits)))
	for _, sp := range splits {
		pos = binary.AppendUvarint(pos, uint64(sp.next))
		pos = binary.AppendUvarint(pos, uint64(sp.stride))
	}
	return pos
}

func (r *reader) decodePosition(pos []byte) (int64, []split, error) {
	bad := func(why string) error {
		return fmt.Errorf("nexmark table %s: bad checkpointed position (%s): %x", r.src.name, why, pos)
	}
	if len(pos) == 0 || pos[0] != positionVersion {
		return 0, nil, bad("unknown version")
	}
	rest := pos[1:]
	base, n := binary.Varint(rest)
	if n <= 0 {
		return 0, nil, bad("truncated")
	}
	rest = rest[n:]
	count, n := binary.Uvarint(rest)
	if n <= 0 || count > uint64(len(rest)) {
		return 0, nil, bad("truncated")
	}
	rest = rest[n:]
	splits := make([]split, 0, count)
	for range count {
		next, n1 := binary.Uvarint(rest)
		if n1 <= 0 {
			return 0, nil, bad("truncated")
		}
		stride, n2 := binary.Uvarint(rest[n1:])
		if n2 <= 0 || stride == 0 || next > unlimited || stride > unlimited {
			return 0, nil, bad("bad split")
		}
		rest = rest[n1+n2:]
		splits = append(splits, split{next: int64(next), stride: int64(stride)})
	}
	if len(rest) != 0 {
		return 0, nil, bad("trailing bytes")
	}
	return base, splits, nil
}

// RestorePosition implements exec.CheckpointedReader.
func (r *reader) RestorePosition(pos []byte) error {
	base, splits, err := r.decodePosition(pos)
	if err != nil {
		return err
	}
	r.cfg.baseTime = base
	r.splits = splits
	return nil
}

// MergePositions implements exec.PositionMerger: the splits of every old
// subtask, divided further while there are fewer unfinished splits than
// subtasks, are dealt out round-robin; this reader's share is its position.
// Every subtask computes the same deal from the same positions.
func (r *reader) MergePositions(positions [][]byte) ([]byte, error) {
	var all []split
	base, haveBase := int64(0), false
	for _, p := range positions {
		b, splits, err := r.decodePosition(p)
		if err != nil {
			return nil, err
		}
		if haveBase && b != base {
			return nil, fmt.Errorf("nexmark table %s: the checkpointed positions disagree on the time of the first event (%d and %d)", r.src.name, base, b)
		}
		base, haveBase = b, true
		for _, sp := range splits {
			if sp.remaining(r.src.limit) > 0 {
				all = append(all, split{next: sp.next, stride: sp.stride})
			}
		}
	}
	if !haveBase {
		return nil, fmt.Errorf("nexmark table %s: no checkpointed position to restore", r.src.name)
	}
	order := func(a, b split) int {
		return cmp.Or(cmp.Compare(a.next%a.stride, b.next%b.stride), cmp.Compare(a.stride, b.stride), cmp.Compare(a.next, b.next))
	}
	slices.SortFunc(all, order)
	for len(all) > 0 && len(all) < r.parallel {
		// Halve the split with the most events left.
		big := 0
		for i := range all {
			if all[i].remaining(r.src.limit) > all[big].remaining(r.src.limit) {
				big = i
			}
		}
		sp := all[big]
		if sp.remaining(r.src.limit) < 2 || sp.stride > unlimited/2 {
			break
		}
		all[big] = split{next: sp.next, stride: 2 * sp.stride}
		all = append(all, split{next: sp.next + sp.stride, stride: 2 * sp.stride})
		slices.SortFunc(all, order)
	}
	var mine []split
	for i, sp := range all {
		if i%r.parallel == r.subtask {
			mine = append(mine, sp)
		}
	}
	return encodePosition(base, mine), nil
}

var (
	_ exec.CheckpointedReader = (*reader)(nil)
	_ exec.PositionMerger     = (*reader)(nil)
)
