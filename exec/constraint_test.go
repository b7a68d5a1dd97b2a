package exec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// rowsWriter is a SinkWriter that records the rows written, as a Collector.
type rowsWriter struct{ optest.Collector }

func (*rowsWriter) Open(context.Context) error                      { return nil }
func (w *rowsWriter) Write(_ context.Context, b *types.Batch) error { return w.Push(b) }
func (*rowsWriter) Finish(context.Context) error                    { return nil }
func (*rowsWriter) Close() error                                    { return nil }

func nullable(s string, n int64, nullS, nullN bool) types.Row {
	r := row(s, n)
	if nullS {
		r[0] = types.NullValue
	}
	if nullN {
		r[1] = types.NullValue
	}
	return r
}

// TestSinkNotNullError: by default a NULL in a NOT NULL column fails,
// with Flink's message naming the column, whatever the row kind.
func TestSinkNotNullError(t *testing.T) {
	for _, kind := range []types.RowKind{types.Insert, types.UpdateAfter, types.Delete} {
		c := &rowsWriter{}
		op := exec.NewSinkOperator(c, exec.WithNotNull(exec.NotNullSpec{Table: "t", Cols: []int{0, 1}, Names: []string{"name", "id"}}))
		rt := &optest.Runtime{}
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
		b := types.NewBatch(2, 2)
		b.AppendRow(types.Insert, row("a", 1))
		b.AppendRow(kind, nullable("b", 0, false, true))
		err := op.ProcessBatch(0, b, nil)
		want := "Column 'id' is NOT NULL, however, a null value is being written into it. " +
			"You can set job configuration 'table.exec.sink.not-null-enforcer'='DROP' to suppress this exception and drop such records (they are logged and counted)."
		if err == nil || err.Error() != want {
			t.Fatalf("%s row: got %v, want %q", kind, err, want)
		}
		if len(c.Events) != 0 {
			t.Errorf("%s row: wrote %v before failing; the whole batch must stop", kind, c.Events)
		}
	}
}

// TestSinkNotNullDrop: with DROP the rows with a NULL in a NOT NULL
// column are dropped, counted in the metric and logged (the first, then at
// 10, 100, … and the total at the end), the others pass in order.
func TestSinkNotNullDrop(t *testing.T) {
	var logs []string
	c := &rowsWriter{}
	op := exec.NewSinkOperator(c, exec.WithNotNull(exec.NotNullSpec{Table: "db.t", Cols: []int{1}, Names: []string{"id"},
		Action: exec.NotNullDrop, Log: func(m string) { logs = append(logs, m) }}))
	rt := &optest.Runtime{}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(2, 16)
	b.AppendRow(types.Insert, row("a", 1))
	b.AppendRow(types.Insert, nullable("b", 0, false, true))
	b.AppendRow(types.Insert, nullable("", 3, true, false)) // NULL in a nullable column passes
	for i := 0; i < 10; i++ {
		b.AppendRow(types.Delete, nullable("x", 0, false, true))
	}
	b.AppendRow(types.Insert, row("d", 4))
	if err := op.ProcessBatch(0, b, nil); err != nil {
		t.Fatal(err)
	}
	// A batch with nothing left to write is not written.
	b.Reset()
	b.AppendRow(types.Insert, nullable("y", 0, false, true))
	if err := op.ProcessBatch(0, b, nil); err != nil {
		t.Fatal(err)
	}
	if err := op.Finish(nil); err != nil {
		t.Fatal(err)
	}
	optest.Expect(t, "output", c.Events, "+I(a, 1)", "+I(NULL, 3)", "+I(d, 4)")
	if n := rt.Metrics.NotNullRowsDropped.Load(); n != 12 {
		t.Errorf("metric: %d rows dropped, want 12", n)
	}
	optest.Expect(t, "log", logs,
		"[WARN] test: dropped a +I row with a NULL in NOT NULL column 'id' of sink table db.t (table.exec.sink.not-null-enforcer = DROP); 1 rows dropped so far.",
		"[WARN] test: dropped a -D row with a NULL in NOT NULL column 'id' of sink table db.t (table.exec.sink.not-null-enforcer = DROP); 10 rows dropped so far.",
		"[WARN] test: 12 rows with a NULL in a NOT NULL column of sink table db.t were dropped (table.exec.sink.not-null-enforcer = DROP).")
}

func TestParseNotNullAction(t *testing.T) {
	for v, want := range map[string]exec.NotNullAction{"ERROR": exec.NotNullError, "drop": exec.NotNullDrop, " Drop ": exec.NotNullDrop} {
		if got, err := exec.ParseNotNullAction(v); err != nil || got != want {
			t.Errorf("%q: got %v, %v", v, got, err)
		}
	}
	_, err := exec.ParseNotNullAction("IGNORE")
	if err == nil || !strings.Contains(err.Error(), "'table.exec.sink.not-null-enforcer'. Expected one of [ERROR, DROP], but was: IGNORE") {
		t.Errorf("IGNORE: got %v", err)
	}
}
