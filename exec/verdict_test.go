package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// abortingWorld is the outside world of abortingWriters: transactions the
// external system committed, and those it aborted before their commit.
type abortingWorld struct {
	mu        sync.Mutex
	committed map[string]bool
	aborted   map[string]bool
	cont      bool // the sinks continue after a loss
}

// abortingWriter writes rows into one transaction per checkpoint, named
// <tag>-<checkpoint>; committables are the transaction names.
type abortingWriter struct {
	world *abortingWorld
	tag   string
	rows  int
}

func (w *abortingWriter) Open(context.Context) error   { return nil }
func (w *abortingWriter) Close() error                 { return nil }
func (w *abortingWriter) Finish(context.Context) error { return nil }
func (w *abortingWriter) Abort([]Committable) error    { return nil }
func (w *abortingWriter) Write(_ context.Context, b *types.Batch) error {
	w.rows += len(b.Rows)
	return nil
}

func (w *abortingWriter) PrepareCommit(id CheckpointID) ([]Committable, error) {
	if w.rows == 0 {
		return nil, nil
	}
	w.rows = 0
	return []Committable{Committable(fmt.Sprintf("%s-%d", w.tag, id))}, nil
}

func (w *abortingWriter) Commit(cs []Committable) error {
	w.world.mu.Lock()
	defer w.world.mu.Unlock()
	var lost []string
	committed := 0
	for _, c := range cs {
		if w.world.aborted[string(c)] {
			lost = append(lost, string(c))
			continue
		}
		w.world.committed[string(c)] = true
		committed++
	}
	if len(lost) > 0 {
		return &AbortedCommitError{Message: "aborted " + strings.Join(lost, ","), Aborted: len(lost), Committed: committed, Continue: w.world.cont}
	}
	return nil
}

// lockedLines is a Config.Log that keeps the lines.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestRestoreVerdict restores a checkpoint of a job with two
// two-phase-commit sinks whose transactions the external system aborted
// in part or in whole, and checks the job-wide decision: all aborted and an
// older checkpoint retained → ErrRestoredOutputAborted (recovery falls
// back); all aborted without one, or some committed → ErrOutputLost naming
// the restored checkpoint and the transactions; with the sinks set to
// continue, the job runs on and logs the loss as an error.
func TestRestoreVerdict(t *testing.T) {
	// Run 1: both sinks write rows 1…4 and checkpoint 1 completes; the
	// commits are lost with the process (the world aborts them below).
	data := seq(1, 10)
	store := newMemStore()

	graph := func(r *posReader, w *abortingWorld) *JobGraph {
		sink := func(id int, tag string) *Vertex {
			return &Vertex{ID: id, Name: "Sink-" + tag, Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
				Chain: chain(func() (Operator, error) {
					return NewSinkOperatorFunc(func(int, int) (SinkWriter, error) { return &abortingWriter{world: w, tag: tag}, nil }), nil
				})}
		}
		return &JobGraph{Vertices: []*Vertex{posSource(1, r), sink(2, "a"), sink(3, "b")}}
	}
	r1 := &posReader{data: data, allow: make(chan int)}
	dropped := &abortingWorld{committed: map[string]bool{}, aborted: map[string]bool{"a-1": true, "b-1": true}}
	j, err := Start(context.Background(), graph(r1, dropped), Config{Checkpointing: ckptConfig(store, ExactlyOnce)})
	if err != nil {
		t.Fatal(err)
	}
	grant(t, j, r1, 4)
	if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
		t.Fatalf("checkpoint %d", id)
	}
	j.Cancel()
	_ = waitJob(t, j)

	cases := []struct {
		name        string
		aborted     []string
		canFallBack bool
		cont        bool
		want        error // nil: the job finishes
		wantLog     string
	}{
		{name: "all aborted, older checkpoint", aborted: []string{"a-1", "b-1"}, canFallBack: true, want: ErrRestoredOutputAborted,
			wantLog: "[WARN] Restoring checkpoint 1: every transaction it was to commit (2) had been aborted"},
		{name: "all aborted, no older checkpoint", aborted: []string{"a-1", "b-1"}, want: ErrOutputLost},
		{name: "some committed", aborted: []string{"b-1"}, canFallBack: true, want: ErrOutputLost},
		{name: "continue", aborted: []string{"b-1"}, canFallBack: true, cont: true,
			wantLog: "[ERROR] Restoring checkpoint 1: 1 of the transactions it was to commit had been aborted, their output is LOST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &abortingWorld{committed: map[string]bool{}, aborted: map[string]bool{}, cont: c.cont}
			for _, a := range c.aborted {
				w.aborted[a] = true
			}
			rs := store.restoredFrom(1)
			cfg := ckptConfig(rs, ExactlyOnce)
			cfg.RestoreID, cfg.CanFallBack = 1, c.canFallBack
			var log lockedLines
			err := run(t, graph(&posReader{data: data}, w), Config{Checkpointing: cfg, Log: log.logf})
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("job failed: %v", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("job error %v, want one wrapping %v", err, c.want)
			}
			if c.want != nil {
				for _, part := range []string{"checkpoint 1", "aborted b-1"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not name %q", err, part)
					}
				}
			}
			if c.want == ErrRestoredOutputAborted && len(w.committed) > 0 {
				t.Errorf("committed %v", w.committed)
			}
			if !strings.Contains(log.String(), c.wantLog) {
				t.Errorf("log %q does not contain %q", log.String(), c.wantLog)
			}
		})
	}
}

// TestCommitFindsAborted: a running job whose commit at a completed
// checkpoint finds its transaction aborted fails, naming the checkpoint (a
// loss is never only a log line; the restore that follows decides whether
// an older checkpoint can make it good), unless the sink continues after
// losses: then it is logged as an error and counted.
func TestCommitFindsAborted(t *testing.T) {
	for _, cont := range []bool{false, true} {
		t.Run(fmt.Sprintf("continue=%t", cont), func(t *testing.T) {
			w := &abortingWorld{committed: map[string]bool{}, aborted: map[string]bool{"a-1": true}, cont: cont}
			r := &posReader{data: seq(1, 4)}
			g := &JobGraph{Vertices: []*Vertex{posSource(1, r),
				{ID: 2, Name: "Sink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
					Chain: chain(opOf(NewSinkOperator(&abortingWriter{world: w, tag: "a"})))}}}
			var log lockedLines
			j, err := Start(context.Background(), g, Config{Checkpointing: ckptConfig(newMemStore(), ExactlyOnce), Log: log.logf})
			if err != nil {
				t.Fatal(err)
			}
			err = waitJob(t, j)
			if !cont {
				if err == nil || !strings.Contains(err.Error(), "checkpoint 1 completed, but aborted a-1") {
					t.Fatalf("job error %v, want the loss of checkpoint 1's transaction", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("job failed: %v", err)
			}
			if !strings.Contains(log.String(), "[ERROR] Checkpoint 1 completed, but its output is LOST: aborted a-1") {
				t.Errorf("log %q", log.String())
			}
			var lost int64
			for _, vm := range j.Metrics() {
				for _, om := range vm.Operators {
					lost += om.LostCommits
				}
			}
			if lost != 1 {
				t.Errorf("LostCommits %d, want 1", lost)
			}
		})
	}
}
