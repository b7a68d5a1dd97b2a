package setop

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// change is one row fed to one input.
type change struct {
	input int
	kind  types.RowKind
	s     string // "" is NULL
	n     int64
}

// step feeds its changes one batch each.
type step []change

func (s step) Run(t *testing.T, op exec.Operator, _ *optest.Runtime, c *optest.Collector) {
	t.Helper()
	for _, ch := range s {
		b := types.NewBatch(2, 1)
		r := b.Append(ch.kind)
		if ch.s != "" {
			r[0] = types.String(ch.s)
		}
		r[1] = types.Int(ch.n)
		if err := op.ProcessBatch(ch.input, b, c); err != nil {
			t.Fatal(err)
		}
	}
}

func l(k types.RowKind, s string, n int64) change { return change{0, k, s, n} }
func r(k types.RowKind, s string, n int64) change { return change{1, k, s, n} }

const (
	ins = types.Insert
	del = types.Delete
	ub  = types.UpdateBefore
)

// script is the same input for every operation: a twice on the left and
// then twice on the right, NULLs that meet, the left's a retracted (one by
// -D, one by -U), b on both sides, then b taken from the right.
var script = []step{
	{l(ins, "a", 1), l(ins, "a", 1), r(ins, "b", 2)},
	{r(ins, "a", 1)},
	{r(ins, "a", 1)},
	{l(del, "a", 1), l(ins, "", 3), r(ins, "", 3)},
	{l(ub, "a", 1)},
	{l(ins, "b", 2)},
	{r(del, "b", 2)},
}

func check(t *testing.T, spec Spec, want ...string) {
	t.Helper()
	optest.CheckRestores(t, func() (exec.Operator, error) { return New(spec) },
		func() *optest.Collector { return &optest.Collector{} }, 1000, script, 0, want...)
}

// Multiplicities after each step (left, right): a (2,0) (2,1) (2,2) (1,2)
// (0,2); NULL,3 (1,1) from step 4; b (0,1) until step 6 (1,1), step 7 (1,0).

func TestIntersect(t *testing.T) {
	// present while both sides hold the row
	check(t, Spec{Kind: Intersect, Width: 2},
		"+I(a, 1)",
		"+I(NULL, 3)",
		"-D(a, 1)",
		"+I(b, 2)",
		"-D(b, 2)")
}

func TestIntersectAll(t *testing.T) {
	// min(left, right) copies
	check(t, Spec{Kind: Intersect, All: true, Width: 2},
		"+I(a, 1)",
		"+I(a, 1)",
		"-D(a, 1)", "+I(NULL, 3)",
		"-D(a, 1)",
		"+I(b, 2)",
		"-D(b, 2)")
}

func TestExcept(t *testing.T) {
	// present while the left holds the row and the right does not
	check(t, Spec{Kind: Except, Width: 2},
		"+I(a, 1)",
		"-D(a, 1)",
		"+I(NULL, 3)", "-D(NULL, 3)",
		"+I(b, 2)")
}

func TestExceptAll(t *testing.T) {
	// max(left - right, 0) copies
	check(t, Spec{Kind: Except, All: true, Width: 2},
		"+I(a, 1)", "+I(a, 1)",
		"-D(a, 1)",
		"-D(a, 1)",
		"+I(NULL, 3)", "-D(NULL, 3)",
		"+I(b, 2)")
}

// TestRetractUnseen: a retraction of a row never counted changes nothing
// (the counts do not go negative, which would make EXCEPT ALL emit later
// inserts of the right side's row as if the left held it).
func TestRetractUnseen(t *testing.T) {
	optest.CheckRestores(t, func() (exec.Operator, error) { return New(Spec{Kind: Except, All: true, Width: 2}) },
		func() *optest.Collector { return &optest.Collector{} }, 1000,
		[]step{{r(del, "x", 1)}, {l(ins, "x", 1)}}, 0,
		"+I(x, 1)")
}

// TestEviction: with room for one cached row the counts go through the
// backend at almost every row; the results (and every restore) are the
// same as with the cache.
func TestEviction(t *testing.T) {
	for _, all := range []bool{false, true} {
		spec := Spec{Kind: Except, All: all, Width: 2, MaxCached: 1}
		want := []string{"+I(a, 1)", "-D(a, 1)", "+I(NULL, 3)", "-D(NULL, 3)", "+I(b, 2)"}
		if all {
			want = []string{"+I(a, 1)", "+I(a, 1)", "-D(a, 1)", "-D(a, 1)", "+I(NULL, 3)", "-D(NULL, 3)", "+I(b, 2)"}
		}
		check(t, spec, want...)
	}
}

// timed advances the processing-time clock to clock (firing the sweep
// timers due) and then feeds its changes.
type timed struct {
	clock   int64
	changes step
}

func (s timed) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	rt.AdvanceTo(t, s.clock, op, c)
	s.changes.Run(t, op, rt, c)
}

// TestStateTTL: with table.exec.state.ttl of 10 s a row's counts are
// forgotten 10 s after their last change (Flink's OnCreateAndWrite and
// NeverReturnExpired), through every restore, on both backends, and also
// when the counts go through the backend at almost every row.
func TestStateTTL(t *testing.T) {
	script := []timed{
		{0, step{l(ins, "a", 1)}},     // a (1,0): in the result
		{5000, step{r(ins, "b", 2)}},  // b (0,1)
		{11000, step{r(ins, "a", 1)}}, // a expired at 10 s: (0,1), nothing to retract
		{14000, step{l(ins, "b", 2)}}, // b written at 5 s, live until 15 s: (1,1)
		// a written at 11 s, expired at 21 s: (1,0) again; b written at
		// 14 s, expired at 24 s: its retraction finds nothing
		{26000, step{l(ins, "a", 1), l(del, "b", 2)}},
		{27000, step{r(ins, "b", 2), l(ins, "b", 2)}}, // b (1,1): nothing
	}
	for _, limit := range []int{0, 1} {
		spec := Spec{Kind: Except, Width: 2, StateTTL: 10 * time.Second, MaxCached: limit}
		optest.CheckRestores(t, func() (exec.Operator, error) { return New(spec) },
			func() *optest.Collector { return &optest.Collector{} }, 0, script, 0,
			"+I(a, 1)",
			"+I(a, 1)")
	}
}

// TestStateTTLNeedsClock: TTL without processing time is refused at Open,
// and a negative TTL by New.
func TestStateTTLNeedsClock(t *testing.T) {
	if _, err := New(Spec{Kind: Intersect, Width: 1, StateTTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
	op, err := New(Spec{Kind: Intersect, Width: 1, StateTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	k := optest.NewKeyed(t, image.Hashmap)
	k.Open(t, op.(exec.KeyedOperator))
	if err := op.Open(&exec.OperatorContext{}); err == nil {
		t.Error("TTL without a clock accepted")
	}
}
