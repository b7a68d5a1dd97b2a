package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

var nameCntSchema = types.Schema{
	{Name: "name", Type: types.StringType},
	{Name: "cnt", Type: types.IntType},
}

func nc(kind types.RowKind, name string, cnt int64) session.Change {
	return ch(kind, types.String(name), types.Int(cnt))
}

// updatingChangelog is a running count per name: a and b arrive, a's count
// goes from 1 to 2, b is deleted.
func updatingChangelog() [][]session.Change {
	return [][]session.Change{
		{nc(types.Insert, "a", 1), nc(types.Insert, "b", 1)},
		{nc(types.UpdateBefore, "a", 1), nc(types.UpdateAfter, "a", 2), nc(types.Delete, "b", 1)},
	}
}

// A script prints the same changelog in each result mode. With a maximum
// column width of 6 the streaming layout sizes STRING to 6 and INT to 11,
// the op column to 2. 'changelog' outside a terminal prints as 'tableau'.
// 'table' prints only the final result: a is 2, b was deleted; its widths
// come from the data ("name" 4, "cnt" 3).
func TestResultModesScript(t *testing.T) {
	changelogOut := lines(
		"+----+--------+-------------+",
		"| op |   name |         cnt |",
		"+----+--------+-------------+",
		"| +I |      a |           1 |",
		"| +I |      b |           1 |",
		"| -U |      a |           1 |",
		"| +U |      a |           2 |",
		"| -D |      b |           1 |",
		"+----+--------+-------------+",
		"Received a total of 5 rows",
	)
	tableOut := lines(
		"+------+-----+",
		"| name | cnt |",
		"+------+-----+",
		"|    a |   2 |",
		"+------+-----+",
		"1 row in set",
	)
	tests := []struct {
		mode string
		want string
	}{
		{mode: "", want: tableOut}, // the default is table, as in Flink
		{mode: "tableau", want: changelogOut},
		{mode: "changelog", want: changelogOut},
		{mode: "table", want: tableOut},
		{mode: "TABLE", want: tableOut},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			stream := &fakeStream{batches: updatingChangelog()}
			be := &fakeBackend{
				handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
				config: map[string]string{resultModeKey: tc.mode, "sql-client.display.max-column-width": "6"},
			}
			var out, errOut strings.Builder
			if err := runScript(context.Background(), be, "SELECT name, cnt FROM t;", &out, &errOut); err != nil {
				t.Fatalf("runScript: %v (stderr %q)", err, errOut.String())
			}
			if out.String() != tc.want || errOut.Len() != 0 {
				t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", out.String(), errOut.String(), tc.want)
			}
			if stream.cancelled == 0 {
				t.Fatal("the query was not released")
			}
		})
	}
}

// Rows keep the order of their first insertion; a +U directly after a -U
// (here across two batches) takes the retracted row's place, any other new
// row goes to the end.
func TestTableModeRowOrder(t *testing.T) {
	stream := &fakeStream{batches: [][]session.Change{
		{nc(types.Insert, "a", 1), nc(types.Insert, "b", 1), nc(types.Insert, "c", 1), nc(types.UpdateBefore, "b", 1)},
		{
			nc(types.UpdateAfter, "b", 2), // b's place: [a1 b2 c1]
			nc(types.Insert, "d", 1),      // [a1 b2 c1 d1]
			nc(types.UpdateBefore, "d", 1),
			nc(types.Insert, "e", 1),      // not a +U: [a1 b2 c1 e1]
			nc(types.UpdateAfter, "d", 2), // no -U right before: [a1 b2 c1 e1 d2]
			nc(types.Delete, "a", 1),      // [b2 c1 e1 d2]
			nc(types.Insert, "a", 5),      // [b2 c1 e1 d2 a5]
		},
	}}
	out, errOut := runKVQuery(t, stream, map[string]string{resultModeKey: "table"})
	want := lines(
		"+---+---+",
		"| k | v |",
		"+---+---+",
		"| b | 2 |",
		"| c | 1 |",
		"| e | 1 |",
		"| d | 2 |",
		"| a | 5 |",
		"+---+---+",
		"5 rows in set",
	)
	if out != want || errOut != "" {
		t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", out, errOut, want)
	}
}

// runKVQuery runs "SELECT k, v FROM t" as a script over stream with the
// session options config and returns stdout and stderr.
func runKVQuery(t *testing.T, stream *fakeStream, config map[string]string) (out, errOut string) {
	t.Helper()
	schema := types.Schema{{Name: "k", Type: types.StringType}, {Name: "v", Type: types.IntType}}
	be := &fakeBackend{handle: byPrefix(rule{"SELECT", gives(queryOutcome(schema, stream))}), config: config}
	var o, e strings.Builder
	if err := runScript(context.Background(), be, "SELECT k, v FROM t", &o, &e); err != nil {
		t.Fatalf("runScript: %v (stderr %q)", err, e.String())
	}
	return o.String(), e.String()
}

// With 'sql-client.execution.max-table-result.rows' = 3 a fourth row
// evicts the oldest (Flink's behaviour); an update in place does not; a
// later retraction of an evicted row is ignored; the shell warns after the
// table how many rows were dropped.
func TestTableModeMaxRows(t *testing.T) {
	stream := &fakeStream{batches: [][]session.Change{
		{nc(types.Insert, "a", 1), nc(types.Insert, "b", 1), nc(types.Insert, "c", 1)}, // [a1 b1 c1]
		{nc(types.Insert, "d", 1)},                                      // a1 evicted: [b1 c1 d1]
		{nc(types.UpdateBefore, "b", 1), nc(types.UpdateAfter, "b", 2)}, // in place: [b2 c1 d1]
		{nc(types.Insert, "e", 1)},                                      // b2 evicted: [c1 d1 e1]
		{nc(types.Delete, "a", 1)},                                      // a1 is gone: ignored
		{nc(types.UpdateBefore, "c", 1), nc(types.UpdateAfter, "c", 3)}, // [c3 d1 e1]
	}}
	out, errOut := runKVQuery(t, stream, map[string]string{resultModeKey: "table", maxTableRowsKey: "3"})
	want := lines(
		"+---+---+",
		"| k | v |",
		"+---+---+",
		"| c | 3 |",
		"| d | 1 |",
		"| e | 1 |",
		"+---+---+",
		"3 rows in set",
	)
	wantErr := "[WARNING] The result had more rows than 'sql-client.execution.max-table-result.rows' = 3: " +
		"the 2 oldest rows were dropped from it, and 1 later retraction of rows no longer in it ignored.\n"
	if out != want || errOut != wantErr {
		t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s\nwant stderr:\n%s", out, errOut, want, wantErr)
	}
}

// With the limit at 0 nothing is evicted: 2000 rows stay.
func TestResultTableNoLimit(t *testing.T) {
	for _, limit := range []int{0, -1} {
		tb := newResultTable(2, limit)
		for i := range 2000 {
			tb.apply(nc(types.Insert, "k", int64(i)))
		}
		if tb.Len() != 2000 || tb.evicted != 0 {
			t.Errorf("limit %d: %d rows, %d evicted; want 2000, 0", limit, tb.Len(), tb.evicted)
		}
	}
	// A limit of 100 over 2000 rows (compactions included) keeps the
	// last 100, in order.
	tb := newResultTable(2, 100)
	for i := range 2000 {
		tb.apply(nc(types.Insert, "k", int64(i)))
	}
	var got []int64
	tb.each(func(r types.Row) { got = append(got, r[1].Int()) })
	if len(got) != 100 || got[0] != 1900 || got[99] != 1999 || tb.evicted != 1900 {
		t.Errorf("limit 100: %d rows from %v to %v, %d evicted; want 1900…1999, 1900 evicted", len(got), got[0], got[len(got)-1], tb.evicted)
	}
}

// A retraction of a row that is not in the result is reported and skipped;
// the query and the script go on.
func TestTableModeRetractsMissingRow(t *testing.T) {
	stream := &fakeStream{batches: [][]session.Change{
		{nc(types.Insert, "a", 1), nc(types.Delete, "z", 9)},
		{nc(types.UpdateBefore, "a", 1), nc(types.UpdateAfter, "a", 2)},
		{nc(types.UpdateBefore, "y", 3), nc(types.UpdateAfter, "y", 4)}, // -U misses; +U is added
	}}
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
		config: map[string]string{resultModeKey: "table"},
	}
	var out, errOut strings.Builder
	if err := runScript(context.Background(), be, "SELECT name, cnt FROM t;\nSET 'k' = 'v';", &out, &errOut); err != nil {
		t.Fatalf("runScript: %v (stderr %q)", err, errOut.String())
	}
	want := lines(
		"+------+-----+",
		"| name | cnt |",
		"+------+-----+",
		"|    a |   2 |",
		"|    y |   4 |",
		"+------+-----+",
		"2 rows in set",
		"[INFO] Execute statement succeeded.",
	)
	wantErr := lines(
		"[ERROR] the result changelog retracts a row that is not in the result: -D[z, 9]",
		"[ERROR] the result changelog retracts a row that is not in the result: -U[y, 3]",
	)
	if out.String() != want || errOut.String() != wantErr {
		t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s\nwant stderr:\n%s", out.String(), errOut.String(), want, wantErr)
	}
}

// Cancelling a script while a 'table' query runs prints the result so far
// and stops the script.
func TestTableModeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := &fakeStream{
		batches: [][]session.Change{
			{nc(types.Insert, "a", 1), nc(types.Insert, "b", 1)},
			{nc(types.UpdateBefore, "a", 1), nc(types.UpdateAfter, "a", 2)},
		},
		block:   true,
		onBlock: cancel,
	}
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
		config: map[string]string{resultModeKey: "table"},
	}
	var out, errOut strings.Builder
	if err := runScript(ctx, be, "SELECT name, cnt FROM t;\nSET 'never' = 'run';", &out, &errOut); err != nil {
		t.Fatalf("runScript: %v", err)
	}
	want := lines(
		"+------+-----+",
		"| name | cnt |",
		"+------+-----+",
		"|    a |   2 |",
		"|    b |   1 |",
		"+------+-----+",
		"2 rows in set",
		"[INFO] Result retrieval cancelled.",
	)
	if out.String() != want || errOut.Len() != 0 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", out.String(), errOut.String(), want)
	}
	if stream.cancelled == 0 {
		t.Fatal("the query was not cancelled")
	}
	if n := len(be.texts()); n != 1 {
		t.Fatalf("%d statements ran, want 1", n)
	}
}

func TestTableModeEmptyAndFailed(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		stream := &fakeStream{batches: [][]session.Change{{nc(types.Insert, "a", 1)}, {nc(types.Delete, "a", 1)}}}
		be := &fakeBackend{
			handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
			config: map[string]string{resultModeKey: "table"},
		}
		var out, errOut strings.Builder
		if err := runScript(context.Background(), be, "SELECT name, cnt FROM t", &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if out.String() != "Empty set\n" {
			t.Fatalf("stdout %q, want %q", out.String(), "Empty set\n")
		}
	})
	t.Run("failed", func(t *testing.T) {
		stream := &fakeStream{batches: [][]session.Change{{nc(types.Insert, "a", 1)}}, end: errors.New("source vanished")}
		be := &fakeBackend{
			handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
			config: map[string]string{resultModeKey: "table"},
		}
		var out, errOut strings.Builder
		err := runScript(context.Background(), be, "SELECT name, cnt FROM t", &out, &errOut)
		if !errors.As(err, new(*StatementError)) {
			t.Fatalf("got %v, want a *StatementError", err)
		}
		if out.Len() != 0 || errOut.String() != "[ERROR] Could not execute SQL statement. Reason:\nsource vanished\n" {
			t.Fatalf("stdout %q, stderr %q", out.String(), errOut.String())
		}
	})
}

func TestResultModeInvalid(t *testing.T) {
	stream := &fakeStream{batches: updatingChangelog()}
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
		config: map[string]string{resultModeKey: "pretty"},
	}
	var out, errOut strings.Builder
	err := runScript(context.Background(), be, "SELECT name, cnt FROM t", &out, &errOut)
	if !errors.As(err, new(*StatementError)) {
		t.Fatalf("got %v, want a *StatementError", err)
	}
	want := "[ERROR] Could not execute SQL statement. Reason:\n" +
		`invalid value "pretty" for 'sql-client.execution.result-mode': expected one of 'table', 'changelog', 'tableau'` + "\n"
	if errOut.String() != want || out.Len() != 0 {
		t.Fatalf("stdout %q\nstderr %q\nwant stderr %q", out.String(), errOut.String(), want)
	}
	if stream.cancelled == 0 {
		t.Fatal("the query was not released")
	}
}

// In a terminal, 'changelog' lists every change with its op column even in
// batch runtime mode, where 'tableau' would print a table at the end.
func TestChangelogModeInteractive(t *testing.T) {
	stream := &fakeStream{batches: updatingChangelog()}
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(queryOutcome(nameCntSchema, stream))}),
		config: map[string]string{
			resultModeKey:                         "changelog",
			"execution.runtime-mode":              "batch",
			"sql-client.display.max-column-width": "6",
		},
	}
	var out, errOut strings.Builder
	r := &runner{be: be, out: &out, errOut: &errOut, interactive: true}
	if s, err := r.run(context.Background(), located{text: "SELECT name, cnt FROM t", line: 1, col: 1}); s != stepNext || err != nil {
		t.Fatalf("run: %v, %v", s, err)
	}
	want := lines(
		"+----+--------+-------------+",
		"| op |   name |         cnt |",
		"+----+--------+-------------+",
		"| +I |      a |           1 |",
		"| +I |      b |           1 |",
		"| -U |      a |           1 |",
		"| +U |      a |           2 |",
		"| -D |      b |           1 |",
		"+----+--------+-------------+",
		"Received a total of 5 rows",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
}

// stepStream hands out whatever the test sends, one Next call at a time, and
// announces each call, so that a test knows when the previous answer has
// been taken.
type stepStream struct {
	calls   chan struct{}
	replies chan nextResult
	mu      sync.Mutex
	cancels int
}

func newStepStream() *stepStream {
	return &stepStream{calls: make(chan struct{}), replies: make(chan nextResult)}
}

func (s *stepStream) Next(ctx context.Context) ([]session.Change, error) {
	select {
	case s.calls <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-s.replies:
		return r.changes, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *stepStream) Cancel() {
	s.mu.Lock()
	s.cancels++
	s.mu.Unlock()
}

func (s *stepStream) cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancels
}

// interactiveTableRunner runs one 'table' SELECT in a 60x10 terminal: the
// view has room for 10-7 = 3 rows, and lines are cut at 60 columns.
func interactiveTableRunner(stream *stepStream, ticks chan time.Time, interrupt chan os.Signal) (*runner, *syncBuffer, *syncBuffer) {
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(&outcome{query: &queryHandle{schema: nameCntSchema, stream: stream}})}),
		config: map[string]string{resultModeKey: "table", "sql-client.display.max-column-width": "6"},
	}
	out, errOut := new(syncBuffer), new(syncBuffer)
	r := &runner{
		be: be, out: out, errOut: errOut, interactive: true,
		interrupts:   Options{Interrupt: interrupt}.interruptSource(),
		terminalSize: func() (int, int) { return 60, 10 },
		refresh:      func() (<-chan time.Time, func()) { return ticks, func() {} },
	}
	return r, out, errOut
}

// The view widths come from the types (STRING capped at 6, INT 11).
var viewHead = lines(
	"SQL Query Result (Table)",
	"+--------+-------------+",
	"|   name |         cnt |",
	"+--------+-------------+",
)

func TestTableModeInteractiveView(t *testing.T) {
	stream := newStepStream()
	ticks := make(chan time.Time)
	r, out, errOut := interactiveTableRunner(stream, ticks, make(chan os.Signal, 1))
	type result struct {
		s   step
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := r.run(context.Background(), located{text: "SELECT name, cnt FROM t", line: 1, col: 1})
		done <- result{s, err}
	}()

	<-stream.calls
	stream.replies <- nextResult{changes: []session.Change{nc(types.Insert, "a", 1), nc(types.Insert, "b", 1)}}
	<-stream.calls // the view has the first batch
	ticks <- time.Time{}
	stream.replies <- nextResult{changes: []session.Change{
		nc(types.UpdateBefore, "a", 1), nc(types.UpdateAfter, "a", 2),
		nc(types.Insert, "c", 1), nc(types.Insert, "d", 1),
	}}
	<-stream.calls
	ticks <- time.Time{}
	ticks <- time.Time{} // nothing changed: no redraw
	stream.replies <- nextResult{err: io.EOF}
	res := <-done
	if res.s != stepNext || res.err != nil {
		t.Fatalf("run: %v, %v", res.s, res.err)
	}

	want := enterAltScreen +
		homeAndClear + viewHead + lines(
		"+--------+-------------+",
		"0 rows in result, 0 changes received. Press Ctrl-C to stop.",
	) +
		homeAndClear + viewHead + lines(
		"|      a |           1 |",
		"|      b |           1 |",
		"+--------+-------------+",
		"2 rows in result, 2 changes received. Press Ctrl-C to stop.",
	) +
		// [a2 b1 c1 d1]: the last three rows fit; the status line is cut at 60.
		homeAndClear + viewHead + lines(
		"|      b |           1 |",
		"|      c |           1 |",
		"|      d |           1 |",
		"+--------+-------------+",
		"4 rows in result (the last 3 shown), 6 changes received. Pre",
	) +
		leaveAltScreen + lines(
		"+------+-----+",
		"| name | cnt |",
		"+------+-----+",
		"|    a |   2 |",
		"|    b |   1 |",
		"|    c |   1 |",
		"|    d |   1 |",
		"+------+-----+",
		"4 rows in set",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%q\nwant:\n%q", out.String(), want)
	}
	if errOut.String() != "" {
		t.Fatalf("stderr %q", errOut.String())
	}
	if stream.cancelled() == 0 {
		t.Fatal("the query was not released")
	}
}

// Ctrl-C closes the view and prints the table so far; retraction errors
// held while the view was open follow the view.
func TestTableModeInteractiveCancelled(t *testing.T) {
	stream := newStepStream()
	interrupt := make(chan os.Signal, 1)
	r, out, errOut := interactiveTableRunner(stream, make(chan time.Time), interrupt)
	type result struct {
		s   step
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := r.run(context.Background(), located{text: "SELECT name, cnt FROM t", line: 1, col: 1})
		done <- result{s, err}
	}()
	<-stream.calls
	stream.replies <- nextResult{changes: []session.Change{nc(types.Insert, "a", 1), nc(types.Delete, "q", 1)}}
	<-stream.calls
	interrupt <- os.Interrupt
	res := <-done
	if res.s != stepStopped || res.err != nil {
		t.Fatalf("run: %v, %v", res.s, res.err)
	}
	want := enterAltScreen + homeAndClear + viewHead + lines(
		"+--------+-------------+",
		"0 rows in result, 0 changes received. Press Ctrl-C to stop.",
	) + leaveAltScreen + lines(
		"+------+-----+",
		"| name | cnt |",
		"+------+-----+",
		"|    a |   1 |",
		"+------+-----+",
		"1 row in set",
		"[INFO] Result retrieval cancelled.",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%q\nwant:\n%q", out.String(), want)
	}
	if want := "[ERROR] the result changelog retracts a row that is not in the result: -D[q, 1]\n"; errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
	if stream.cancelled() == 0 {
		t.Fatal("the query was not cancelled")
	}
}

func TestResultTable(t *testing.T) {
	x := func(kind types.RowKind, k string, v int64) session.Change { return nc(kind, k, v) }
	const I, UB, UA, D = types.Insert, types.UpdateBefore, types.UpdateAfter, types.Delete
	tests := []struct {
		name    string
		changes []session.Change
		want    string // rows in order
		missing int
	}{
		{"inserts keep their order", []session.Change{x(I, "b", 1), x(I, "a", 1), x(I, "c", 1)}, "b=1 a=1 c=1", 0},
		{"update in place", []session.Change{x(I, "a", 1), x(I, "b", 1), x(UB, "a", 1), x(UA, "a", 2)}, "a=2 b=1", 0},
		{"update as delete and insert", []session.Change{x(I, "a", 1), x(I, "b", 1), x(D, "a", 1), x(I, "a", 2)}, "b=1 a=2", 0},
		{"+U after an insert goes to the end", []session.Change{x(I, "a", 1), x(I, "b", 1), x(UB, "a", 1), x(I, "c", 1), x(UA, "a", 2)}, "b=1 c=1 a=2", 0},
		{"+U without -U goes to the end", []session.Change{x(I, "a", 1), x(UA, "b", 1)}, "a=1 b=1", 0},
		// Of equal rows the one nearest the end is retracted.
		{"duplicates", []session.Change{x(I, "x", 1), x(I, "y", 1), x(I, "x", 1), x(UB, "x", 1), x(UA, "x", 9)}, "x=1 y=1 x=9", 0},
		{"duplicates deleted", []session.Change{x(I, "x", 1), x(I, "x", 1), x(D, "x", 1), x(D, "x", 1), x(D, "x", 1)}, "", 1},
		{"missing", []session.Change{x(I, "a", 1), x(D, "a", 2), x(UB, "b", 1), x(UA, "b", 2)}, "a=1 b=2", 2},
		{"NULLs are equal", []session.Change{ch(I, types.NullValue, types.Int(1)), ch(D, types.NullValue, types.Int(1))}, "", 0},
		// 1.0 and 1.00 are equal but hash differently: found by the fallback scan.
		{"equal values with different hashes", []session.Change{
			ch(I, types.String("p"), types.DecimalFromUnscaled(10, 1)),
			ch(I, types.String("q"), types.Int(1)),
			ch(UB, types.String("p"), types.DecimalFromUnscaled(100, 2)),
			ch(UA, types.String("p"), types.Int(2)),
		}, "p=2 q=1", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb := newResultTable(2, 0)
			missing := 0
			for _, c := range tc.changes {
				if !tb.apply(c) {
					missing++
				}
			}
			if got := tableString(tb); got != tc.want || missing != tc.missing {
				t.Fatalf("rows %q, %d missing; want %q, %d missing", got, missing, tc.want, tc.missing)
			}
		})
	}
}

// Deleting most rows compacts the table; order, lookups and in-place
// updates still work afterwards, and the caller's rows are not retained.
func TestResultTableCompaction(t *testing.T) {
	tb := newResultTable(2, 0)
	row := types.Row{types.Value{}, types.Value{}}
	put := func(kind types.RowKind, k string, v int64) bool {
		row[0], row[1] = types.String(k), types.Int(v) // the same slice every time
		return tb.apply(session.Change{Kind: kind, Row: row})
	}
	for i := range 1000 {
		put(types.Insert, fmt.Sprint("k", i), int64(i))
	}
	for i := range 1000 {
		if i%100 != 7 && !put(types.Delete, fmt.Sprint("k", i), int64(i)) {
			t.Fatalf("k%d not found", i)
		}
	}
	if len(tb.slots) >= 1000 {
		t.Fatalf("%d slots for %d rows: not compacted", len(tb.slots), tb.Len())
	}
	if !put(types.UpdateBefore, "k507", 507) || !put(types.UpdateAfter, "k507", -1) {
		t.Fatal("update after compaction failed")
	}
	put(types.Insert, "new", 0)
	want := "k7=7 k107=107 k207=207 k307=307 k407=407 k507=-1 k607=607 k707=707 k807=807 k907=907 new=0"
	if got := tableString(tb); got != want {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if got := tb.last(nil, 2); len(got) != 2 || tableRows(got) != "k907=907 new=0" {
		t.Fatalf("last 2 = %q", tableRows(got))
	}
}

func tableString(tb *resultTable) string {
	var rows []types.Row
	tb.each(func(r types.Row) { rows = append(rows, r) })
	return tableRows(rows)
}

func tableRows(rows []types.Row) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, types.FormatSQL(r[0], types.StringType, nil)+"="+types.FormatSQL(r[1], types.IntType, nil))
	}
	return strings.Join(parts, " ")
}

// BenchmarkResultTable measures materializing an updating changelog: every
// key of a 1024-key result is updated with a -U/+U pair. Applying changes
// allocates nothing per row.
func BenchmarkResultTable(b *testing.B) {
	const keys = 1024
	tb := newResultTable(2, 0)
	before := make([]session.Change, keys)
	after := make([]session.Change, keys)
	for k := range keys {
		tb.apply(ch(types.Insert, types.Int(int64(k)), types.Int(0)))
		before[k] = ch(types.UpdateBefore, types.Int(int64(k)), types.Int(0))
		after[k] = ch(types.UpdateAfter, types.Int(int64(k)), types.Int(0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		for k := range keys {
			before[k].Row[1] = types.Int(int64(n))
			after[k].Row[1] = types.Int(int64(n + 1))
			if !tb.apply(before[k]) || !tb.apply(after[k]) {
				b.Fatalf("row %v missing", before[k].Row)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*keys), "ns/change")
}
