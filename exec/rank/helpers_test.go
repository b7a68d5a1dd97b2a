package rank

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/types"
)

// collector records what an operator emits, one string per row or
// watermark.
type collector struct{ events []string }

func (c *collector) Push(b *types.Batch) error {
	for i, r := range b.Rows {
		c.events = append(c.events, b.Kinds[i].String()+"("+formatRow(r)+")")
	}
	return nil
}

func (c *collector) PushWatermark(wm int64) error {
	if wm == exec.MaxWatermark {
		c.events = append(c.events, "WM(max)")
	} else {
		c.events = append(c.events, fmt.Sprintf("WM(%s)", formatTime(wm)))
	}
	return nil
}

func (c *collector) take() []string {
	e := c.events
	c.events = nil
	return e
}

// formatTime prints a timestamp as seconds after the Unix epoch, e.g. 9.999s.
func formatTime(ms int64) string {
	return fmt.Sprintf("%gs", float64(ms)/1000)
}

func formatRow(r types.Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch v.K {
		case types.KindNull:
			parts[i] = "NULL"
		case types.KindInt:
			parts[i] = fmt.Sprint(v.N)
		case types.KindString:
			parts[i] = v.S
		case types.KindTimestamp:
			parts[i] = formatTime(v.Millis())
		default:
			parts[i] = fmt.Sprintf("%v", v)
		}
	}
	return strings.Join(parts, ", ")
}

// fakeRuntime is a test's OperatorContext with a settable clock.
type fakeRuntime struct {
	now     int64
	timers  []int64
	metrics exec.OperatorMetrics
}

func (f *fakeRuntime) ctx() *exec.OperatorContext {
	return &exec.OperatorContext{
		Name:                    "rank",
		Parallelism:             1,
		MaxParallelism:          128,
		Now:                     func() int64 { return f.now },
		RegisterProcessingTimer: func(t int64) { f.timers = append(f.timers, t) },
		Metrics:                 &f.metrics,
	}
}

// rowSpec is a test row: its kind and its values, written as Go values
// (string → STRING, int → BIGINT, time.Duration → TIMESTAMP that many
// milliseconds after the epoch).
type rowSpec struct {
	kind types.RowKind
	vals []any
}

func ins(vals ...any) rowSpec { return rowSpec{types.Insert, vals} }
func ub(vals ...any) rowSpec  { return rowSpec{types.UpdateBefore, vals} }
func ua(vals ...any) rowSpec  { return rowSpec{types.UpdateAfter, vals} }
func del(vals ...any) rowSpec { return rowSpec{types.Delete, vals} }

func toValue(t *testing.T, x any) types.Value {
	switch v := x.(type) {
	case nil:
		return types.Value{}
	case string:
		return types.String(v)
	case int:
		return types.Int(int64(v))
	case time.Duration:
		return types.TimestampMillis(v.Milliseconds())
	}
	t.Fatalf("unsupported test value %T", x)
	return types.Value{}
}

func batchOf(t *testing.T, rows ...rowSpec) *types.Batch {
	t.Helper()
	b := types.NewBatch(len(rows[0].vals), 0)
	for _, r := range rows {
		row := b.Append(r.kind)
		for i, x := range r.vals {
			row[i] = toValue(t, x)
		}
	}
	return b
}

func open(t *testing.T, op exec.Operator, rt *fakeRuntime) {
	t.Helper()
	if err := op.Open(rt.ctx()); err != nil {
		t.Fatal(err)
	}
}

func process(t *testing.T, op exec.Operator, c *collector, rows ...rowSpec) {
	t.Helper()
	if err := op.ProcessBatch(0, batchOf(t, rows...), c); err != nil {
		t.Fatal(err)
	}
}

// processEach feeds the rows one batch each, so a test also covers state
// carried across batches.
func processEach(t *testing.T, op exec.Operator, c *collector, rows ...rowSpec) {
	t.Helper()
	for _, r := range rows {
		process(t, op, c, r)
	}
}

func watermark(t *testing.T, op exec.Operator, c *collector, wm int64) {
	t.Helper()
	if err := op.ProcessWatermark(wm, c); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
