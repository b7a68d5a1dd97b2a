package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestFaultPoints runs a two-phase-commit sink through one triggered and
// one final checkpoint and checks that Config.Fault is called at every
// point, in protocol order, and that the protocol stands where each point
// says it does: nothing completed before after-complete, nothing committed
// before during-commit, the commit done at during-commit.
func TestFaultPoints(t *testing.T) {
	store := newMemStore()
	tl := newTPCLog(store)
	r := &posReader{data: []int64{3, 1, 9, 7}, allow: make(chan int)}
	g := &JobGraph{Vertices: []*Vertex{
		posSource(1, r),
		{ID: 2, Name: "Sink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
			Chain: chain(opOf(NewSinkOperator(&tpcWriter{log: tl})))},
	}}
	// The transaction each checkpoint's committable is named after: the
	// first row the sink saw since the previous barrier.
	txn := map[CheckpointID]string{1: "txn-1-3", 2: "txn-2-9"}
	var mu sync.Mutex
	var got, violations []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			violations = append(violations, fmt.Sprintf(format, args...))
		}
	}
	// The commit of checkpoint 1 is awaited before the rows of checkpoint
	// 2 are granted: otherwise the sink may meet barrier 2 before it is
	// told that checkpoint 1 completed, and the points interleave.
	committed1 := make(chan struct{})
	var once sync.Once
	fault := func(point string, id CheckpointID) {
		if point == FaultDuringCommit && id == 1 {
			defer once.Do(func() { close(committed1) })
		}
		completed := store.isCompleted(id)
		tl.mu.Lock()
		commits := tl.commitCalls[txn[id]]
		tl.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s@%d", point, id))
		switch point {
		case FaultBeforePreCommit, FaultAfterPreCommit:
			check(!completed, "%s@%d: the checkpoint already completed", point, id)
			check(commits == 0, "%s@%d: already committed", point, id)
		case FaultAfterComplete:
			check(completed, "%s@%d: the checkpoint is not completed", point, id)
			check(commits == 0, "%s@%d: committed before the tasks were told", point, id)
		case FaultDuringCommit:
			check(commits == 1, "%s@%d: %d commits of %s, want 1", point, id, commits, txn[id])
		default:
			check(false, "unknown fault point %q", point)
		}
	}
	j, err := Start(context.Background(), g, Config{Checkpointing: ckptConfig(store, ExactlyOnce), Fault: fault})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	grant(t, j, r, 2)
	if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
		t.Fatalf("checkpoint %d", id)
	}
	select {
	case <-committed1:
	case <-j.Done():
		t.Fatal("the job ended before checkpoint 1 was committed")
	}
	grant(t, j, r, 2)
	grant(t, j, r, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var want []string
	for id := CheckpointID(1); id <= 2; id++ {
		for _, p := range FaultPoints() {
			want = append(want, fmt.Sprintf("%s@%d", p, id))
		}
	}
	// The coordinator's after-complete and the sink's commit run on
	// different goroutines, but the sink commits only when the coordinator
	// told it, after the hook returned, and checkpoint 2's rows come after
	// that commit: the order is total.
	if !slices.Equal(got, want) {
		t.Errorf("fault points\n got %v\nwant %v", got, want)
	}
	for _, v := range violations {
		t.Error(v)
	}
}

// TestFaultPointsOrder pins the documented order of FaultPoints, which
// error messages list.
func TestFaultPointsOrder(t *testing.T) {
	want := []string{"before-precommit", "after-precommit", "after-complete", "during-commit"}
	if got := FaultPoints(); !slices.Equal(got, want) {
		t.Fatalf("FaultPoints() = %v, want %v", got, want)
	}
}
