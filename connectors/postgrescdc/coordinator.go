package postgrescdc

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pglogrepl"
)

// coordinator is the incremental snapshot's per-job meeting point (the
// role of Flink's split enumerator), shared by the readers of all subtasks
// through their Source. It holds no state a restore needs: the chunk plan
// and each subtask's finished chunks are in the subtasks' checkpointed
// positions, and the readers of a restored attempt publish them again.
//
// A job attempt is a generation: the first NewReader for a subtask that
// already joined the current generation starts a new one (a restart
// creates every subtask's reader again), which forgets everything the
// previous attempt's readers published, so a restarted stream never
// trusts a chunk the restored checkpoint does not hold.
type coordinator struct {
	mu          sync.Mutex
	gen         int
	parallelism int
	joined      map[int]bool
	changed     chan struct{} // closed and replaced at every change
	plan        *chunkPlan
	finished    map[int]map[int]pglogrepl.LSN // subtask -> its chunks' high watermarks, once all are emitted and flushed
}

// chunkPlan is what every subtask reads the snapshot by: where the main
// slot's stream starts, and the chunk boundaries, computed once per job.
type chunkPlan struct {
	start  pglogrepl.LSN
	chunks []chunkSpec
}

// errSuperseded: a reader of an attempt a newer one replaced.
var errSuperseded = errors.New("a newer attempt of the job replaced this reader")

func newCoordinator() *coordinator {
	return &coordinator{joined: map[int]bool{}, changed: make(chan struct{}), finished: map[int]map[int]pglogrepl.LSN{}}
}

func (c *coordinator) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// join registers a subtask's new reader and returns its generation.
func (c *coordinator) join(subtask, parallelism int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.joined[subtask] || c.parallelism != parallelism {
		c.gen++
		c.parallelism = parallelism
		c.joined = map[int]bool{}
		c.plan = nil
		c.finished = map[int]map[int]pglogrepl.LSN{}
		c.notifyLocked()
	}
	c.joined[subtask] = true
	return c.gen
}

// publishPlan sets the generation's plan; the first one wins (a restore
// publishes the same plan from every subtask's position).
func (c *coordinator) publishPlan(gen int, p *chunkPlan) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return errSuperseded
	}
	if c.plan == nil {
		c.plan = p
		c.notifyLocked()
	}
	return nil
}

// awaitPlan returns the generation's plan, or nil when ctx ended first.
func (c *coordinator) awaitPlan(ctx context.Context, gen int) (*chunkPlan, error) {
	for {
		c.mu.Lock()
		if gen != c.gen {
			c.mu.Unlock()
			return nil, errSuperseded
		}
		p, ch := c.plan, c.changed
		c.mu.Unlock()
		if p != nil {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-ch:
		}
	}
}

// finish records that subtask emitted every chunk it owns, flushed
// downstream, with their high watermarks.
func (c *coordinator) finish(gen, subtask int, hws map[int]pglogrepl.LSN) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return errSuperseded
	}
	cp := make(map[int]pglogrepl.LSN, len(hws))
	for k, v := range hws {
		cp[k] = v
	}
	c.finished[subtask] = cp
	c.notifyLocked()
	return nil
}

// awaitAllFinished returns every chunk's high watermark once all subtasks
// finished, or nil when ctx ended first.
func (c *coordinator) awaitAllFinished(ctx context.Context, gen int) (map[int]pglogrepl.LSN, error) {
	for {
		c.mu.Lock()
		if gen != c.gen {
			c.mu.Unlock()
			return nil, errSuperseded
		}
		ch := c.changed
		if len(c.finished) == c.parallelism {
			all := map[int]pglogrepl.LSN{}
			for _, hws := range c.finished {
				for k, v := range hws {
					all[k] = v
				}
			}
			c.mu.Unlock()
			return all, nil
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil
		case <-ch:
		}
	}
}
