package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
)

// cancelAfter is a context that is cancelled by its own n-th Err call: a
// cancellation that arrives in the middle of planning, at a point fixed by
// the planner's own progress rather than by a clock.
type cancelAfter struct {
	mu        sync.Mutex
	left      int
	callsLate int // Err calls after the cancellation was observed
	done      chan struct{}
}

func newCancelAfter(n int) *cancelAfter { return &cancelAfter{left: n, done: make(chan struct{})} }

func (c *cancelAfter) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *cancelAfter) Done() <-chan struct{}       { return c.done }
func (c *cancelAfter) Value(any) any               { return nil }
func (c *cancelAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left > 0 {
		c.left--
		if c.left == 0 {
			close(c.done)
		}
		return nil
	}
	c.callsLate++
	return context.Canceled
}

// A statement whose planning is cancelled stops at the next check, with an
// error that is context.Canceled.
func TestPlanningCancelled(t *testing.T) {
	q, err := parser.ParseStatement("SELECT " + strings.Repeat("a OR ", 50_000) + "a FROM (VALUES (TRUE)) AS t(a) WHERE " + strings.Repeat("a AND ", 50_000) + "a")
	if err != nil {
		t.Fatal(err)
	}
	p := New(catalog.New(), nil, Config{})
	// Uncancelled, the statement plans (and asks the context many times).
	ctx := newCancelAfter(1 << 30)
	if _, err := p.WithContext(ctx).PlanQuery(q.(*parser.QueryStmt).Query, nil); err != nil {
		t.Fatalf("planning: %v", err)
	}
	checks := 1<<30 - ctx.left
	if checks < 100 {
		t.Fatalf("planning 100 000 operators checked the context %d times, want one check per %d nodes", checks, cancelEvery)
	}
	// Cancelled half-way, it returns context.Canceled at the next check.
	ctx = newCancelAfter(checks / 2)
	_, err = p.WithContext(ctx).PlanQuery(q.(*parser.QueryStmt).Query, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled planning returned %v, want context.Canceled", err)
	}
	if ctx.callsLate != 1 {
		t.Fatalf("planning went on for %d checks after the cancellation, want 0", ctx.callsLate-1)
	}
	// A context cancelled before planning starts stops it at once.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.WithContext(done).PlanQuery(q.(*parser.QueryStmt).Query, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("planning under a cancelled context returned %v", err)
	}
}

// BenchmarkPlanChain plans SELECT a OR a OR ... (n terms): parse, bind,
// type inference and plan rendering.
func BenchmarkPlanChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		sql := "SELECT " + strings.Repeat("a OR ", n-1) + "a FROM (VALUES (TRUE)) AS t(a)"
		b.Run(fmt.Sprintf("OR/n=%d", n), func(b *testing.B) {
			p := New(catalog.New(), nil, Config{})
			for b.Loop() {
				q, err := parser.ParseStatement(sql)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.PlanQuery(q.(*parser.QueryStmt).Query, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
