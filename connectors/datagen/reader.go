package datagen

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// unlimited is the row budget of an unbounded reader.
const unlimited = math.MaxUint64

// maxBatchWait bounds how long a throttled reader collects rows before it
// hands them on, so slow rates still see timely batches.
const maxBatchWait = 10 * time.Millisecond

// reader generates one subtask's rows. It owns a single split (0).
//
// Every column draws from a PRNG of its own (nested fields share their
// column's), so the values of a column depend only on how many rows came
// before, not on how rows were cut into batches. That makes the position
// exact: it holds the number of rows emitted and the state of each column's
// PRNG, and a reader restored from it produces the very rows the original
// would have produced next (sequences continue, random columns continue
// their stream). Only random time values differ, as they are drawn relative
// to the wall clock of the read. A fresh start seeds the PRNGs randomly, as
// Flink's random generator does.
type reader struct {
	gens    []generator
	envs    []env
	pcgs    []*rand.PCG
	seqs    []*seqGen // top-level sequence columns, to reposition on restore
	width   int
	total   uint64  // rows this subtask emits in all (unlimited when unbounded)
	left    uint64  // rows this subtask may still emit
	rate    float64 // rows per second for this subtask
	emitted uint64  // rows emitted since the job started, across restores
	paced   uint64  // rows emitted since Open, for the rate limit
	started time.Time
	timer   *time.Timer
}

func newReader(s *Source, subtask, parallelism int) *reader {
	r := &reader{
		width: s.width,
		left:  unlimited,
		rate:  float64(s.rowsPerSecond) / float64(parallelism),
	}
	if s.numberOfRows >= 0 {
		r.left = uint64(s.numberOfRows / int64(parallelism))
		if int64(subtask) < s.numberOfRows%int64(parallelism) {
			r.left++
		}
	}
	r.envs = make([]env, len(s.specs)) // stable: generators point into it
	for i, sp := range s.specs {
		pcg := rand.NewPCG(rand.Uint64(), uint64(subtask)<<32|uint64(i))
		r.pcgs = append(r.pcgs, pcg)
		r.envs[i].rng = rand.New(pcg)
		g := newGenerator(sp, &r.envs[i], subtask, parallelism)
		r.gens = append(r.gens, g)
		if sp.sequence {
			r.left = min(r.left, seqShare(sp.start, sp.end, subtask, parallelism))
			r.seqs = append(r.seqs, g.(*seqGen))
		}
	}
	r.total = r.left
	return r
}

// positionVersion tags the layout of SnapshotPosition.
const positionVersion = 1

// SnapshotPosition implements exec.CheckpointedReader: the number of rows
// emitted, then the binary state of each column's PRNG.
func (r *reader) SnapshotPosition() ([]byte, error) {
	pos := []byte{positionVersion}
	pos = binary.AppendUvarint(pos, r.emitted)
	pos = binary.AppendUvarint(pos, uint64(len(r.pcgs)))
	for _, p := range r.pcgs {
		st, err := p.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("datagen: saving the generator state: %w", err)
		}
		pos = binary.AppendUvarint(pos, uint64(len(st)))
		pos = append(pos, st...)
	}
	return pos, nil
}

// RestorePosition implements exec.CheckpointedReader.
func (r *reader) RestorePosition(pos []byte) error {
	bad := func(why string) error {
		return fmt.Errorf("datagen: bad checkpointed position (%s): %x", why, pos)
	}
	if len(pos) == 0 || pos[0] != positionVersion {
		return bad("unknown version")
	}
	rest := pos[1:]
	emitted, n := binary.Uvarint(rest)
	if n <= 0 {
		return bad("truncated")
	}
	rest = rest[n:]
	cols, n := binary.Uvarint(rest)
	if n <= 0 {
		return bad("truncated")
	}
	rest = rest[n:]
	if cols != uint64(len(r.pcgs)) {
		return fmt.Errorf("datagen: the checkpoint holds %d columns, the table has %d", cols, len(r.pcgs))
	}
	for _, p := range r.pcgs {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return bad("truncated")
		}
		if err := p.UnmarshalBinary(rest[n : n+int(l)]); err != nil {
			return fmt.Errorf("datagen: restoring the generator state: %w", err)
		}
		rest = rest[n+int(l):]
	}
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	r.emitted = emitted
	if r.total != unlimited {
		r.left = r.total - min(emitted, r.total)
	}
	for _, g := range r.seqs {
		g.next_ = g.first + int64(emitted)*g.step
	}
	return nil
}

var _ exec.CheckpointedReader = (*reader)(nil)

// Open implements exec.SourceReader.
func (r *reader) Open(context.Context) error {
	r.started = time.Now()
	r.paced = 0
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	return nil
}

// NumSplits implements exec.SourceReader.
func (r *reader) NumSplits() int { return 1 }

// Read implements exec.SourceReader. Rows are released at the configured
// rate: row k of this subtask is due k/rate seconds after Open.
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	if r.left == 0 {
		return exec.ReadResult{Split: -1, SplitDone: true, End: true}, nil
	}
	if r.timer == nil {
		if err := r.Open(ctx); err != nil {
			return exec.ReadResult{Split: -1}, err
		}
	}
	n := uint64(max(b.Cap()-b.Len(), 1))
	n = min(n, r.left)
	// Wait until enough rows are due to make a batch worth handing on: all
	// n, or what accrues in maxBatchWait, but at least one.
	want := min(n, max(uint64(r.rate*maxBatchWait.Seconds()), 1))
	var now time.Time
	for {
		now = time.Now()
		due := now.Sub(r.started).Seconds()*r.rate + 1
		if due >= float64(r.paced+want) {
			if due < float64(r.paced+n) {
				n = uint64(due) - r.paced
			}
			break
		}
		// Row paced+want-1 is due at (paced+want-1)/rate seconds.
		at := r.started.Add(time.Duration(float64(r.paced+want-1) / r.rate * float64(time.Second)))
		r.timer.Reset(at.Sub(now))
		select {
		case <-ctx.Done():
			r.timer.Stop()
			return exec.ReadResult{Split: -1}, nil
		case <-r.timer.C:
		}
	}
	for i := range r.envs {
		r.envs[i].now = now.UnixMilli()
	}
	start := b.Len()
	for range n {
		b.Append(types.Insert)
	}
	rows := b.Rows[start:]
	for col, g := range r.gens {
		g.fill(rows, col)
	}
	r.emitted += n
	r.paced += n
	if r.left != unlimited {
		r.left -= n
	}
	res := exec.ReadResult{Split: 0}
	if r.left == 0 {
		res.SplitDone, res.End = true, true
	}
	return res, nil
}

// Close implements exec.SourceReader.
func (r *reader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}

// RemainingRows implements exec.RemainingReporter: the rows this subtask
// has still to emit, -1 when it is unbounded.
func (r *reader) RemainingRows() int64 {
	if r.total == unlimited {
		return -1
	}
	return int64(r.left)
}
