package datagen

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/types"
)

// unlimited is the row budget of an unbounded reader.
const unlimited = math.MaxUint64

// maxBatchWait bounds how long a throttled reader collects rows before it
// hands them on, so slow rates still see timely batches.
const maxBatchWait = 10 * time.Millisecond

// reader generates one subtask's rows. It owns a single split (0).
type reader struct {
	gens    []generator
	e       env
	width   int
	left    uint64  // rows this subtask may still emit
	rate    float64 // rows per second for this subtask
	emitted uint64
	started time.Time
	timer   *time.Timer
}

func newReader(s *Source, subtask, parallelism int) *reader {
	r := &reader{
		width: s.width,
		left:  unlimited,
		rate:  float64(s.rowsPerSecond) / float64(parallelism),
	}
	r.e.rng = rand.New(rand.NewPCG(rand.Uint64(), uint64(subtask)))
	if s.numberOfRows >= 0 {
		r.left = uint64(s.numberOfRows / int64(parallelism))
		if int64(subtask) < s.numberOfRows%int64(parallelism) {
			r.left++
		}
	}
	for _, sp := range s.specs {
		r.gens = append(r.gens, newGenerator(sp, &r.e, subtask, parallelism))
		if sp.sequence {
			r.left = min(r.left, seqShare(sp.start, sp.end, subtask, parallelism))
		}
	}
	return r
}

// Open implements exec.SourceReader.
func (r *reader) Open(context.Context) error {
	r.started = time.Now()
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
		if due >= float64(r.emitted+want) {
			if due < float64(r.emitted+n) {
				n = uint64(due) - r.emitted
			}
			break
		}
		// Row emitted+want-1 is due at (emitted+want-1)/rate seconds.
		at := r.started.Add(time.Duration(float64(r.emitted+want-1) / r.rate * float64(time.Second)))
		r.timer.Reset(at.Sub(now))
		select {
		case <-ctx.Done():
			r.timer.Stop()
			return exec.ReadResult{Split: -1}, nil
		case <-r.timer.C:
		}
	}
	r.e.now = now.UnixMilli()
	start := b.Len()
	for range n {
		b.Append(types.Insert)
	}
	rows := b.Rows[start:]
	for col, g := range r.gens {
		g.fill(rows, col)
	}
	r.emitted += n
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
