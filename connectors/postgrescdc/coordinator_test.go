package postgrescdc

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pglogrepl"
)

// TestCoordinatorGenerations: a subtask joining again starts a new
// generation (a restarted attempt), which forgets the plan and the finished
// chunks of the previous one and refuses what its readers still publish.
func TestCoordinatorGenerations(t *testing.T) {
	c := newCoordinator()
	g0 := c.join(0, 2)
	if g1 := c.join(1, 2); g1 != g0 {
		t.Fatalf("second subtask of one attempt: generation %d, want %d", g1, g0)
	}
	plan := &chunkPlan{start: 42, chunks: []chunkSpec{{Table: "public.t"}}}
	if err := c.publishPlan(g0, plan); err != nil {
		t.Fatal(err)
	}
	if err := c.finish(g0, 1, map[int]pglogrepl.LSN{1: 100}); err != nil {
		t.Fatal(err)
	}
	// Not all finished: the wait ends with ctx, empty-handed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if all, err := c.awaitAllFinished(ctx, g0); all != nil || err != nil {
		t.Fatalf("awaitAllFinished with one of two finished = %v, %v", all, err)
	}
	if err := c.finish(g0, 0, map[int]pglogrepl.LSN{0: 90}); err != nil {
		t.Fatal(err)
	}
	all, err := c.awaitAllFinished(context.Background(), g0)
	if err != nil || len(all) != 2 || all[0] != 90 || all[1] != 100 {
		t.Fatalf("awaitAllFinished = %v, %v; want chunk 0 at 90 and 1 at 100", all, err)
	}
	// A restart: subtask 1's new reader comes first.
	g2 := c.join(1, 2)
	if g2 == g0 {
		t.Fatal("a subtask joining twice did not start a new generation")
	}
	if g := c.join(0, 2); g != g2 {
		t.Fatalf("subtask 0 of the new attempt: generation %d, want %d", g, g2)
	}
	if err := c.finish(g0, 0, nil); !errors.Is(err, errSuperseded) {
		t.Errorf("the old attempt's finish: %v, want errSuperseded", err)
	}
	if p, err := c.awaitPlan(ctx, g2); p != nil || err != nil {
		t.Errorf("the new attempt sees plan %v (%v), want none until published", p, err)
	}
	if all, err := c.awaitAllFinished(ctx, g2); all != nil || err != nil {
		t.Errorf("the new attempt sees finished chunks %v (%v)", all, err)
	}
}
