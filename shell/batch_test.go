package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// fakeExecutor exposes a fakeBackend through the exported Executor
// interface; it can only produce results without running parts.
type fakeExecutor struct{ be *fakeBackend }

func (e fakeExecutor) ExecuteStatement(ctx context.Context, stmt parser.Statement) (*session.Result, error) {
	o, err := e.be.execute(ctx, stmt)
	if err != nil {
		return nil, err
	}
	return &session.Result{Message: o.message, Table: o.table, Text: o.text}, nil
}

func (e fakeExecutor) Completions() []string { return e.be.completions() }
func (e fakeExecutor) Get(key string) string { return e.be.get(key) }

var idSchema = types.Schema{{Name: "id", Type: types.IntType}}

func TestRunScriptSuccess(t *testing.T) {
	job := &fakeJob{}
	stream := &fakeStream{batches: [][]session.Change{
		{ch(types.Insert, types.Int(1))},
		{ch(types.Insert, types.Int(2))},
	}}
	be := &fakeBackend{config: tableauConfig(), handle: byPrefix(
		rule{"INSERT", gives(jobOutcome("6b1af540c0c0bb3f", job))},
		rule{"SELECT", gives(queryOutcome(idSchema, stream))},
		rule{"EXPLAIN", gives(&outcome{text: "== Optimized Physical Plan ==\nValues(tuples=[[{ 1 }]])"})},
		rule{"SHOW", gives(&outcome{table: &session.StaticTable{Columns: []string{"table name"}, Rows: [][]string{{"s"}, {"t"}}}})},
	)}
	script := `CREATE TABLE t (id INT) WITH ('connector' = 'datagen');
SET 'execution.runtime-mode' = 'streaming';
INSERT INTO s SELECT * FROM t;
SELECT id FROM t;
EXPLAIN SELECT 1;
SHOW TABLES`
	var out, errOut strings.Builder
	if err := runScript(context.Background(), be, script, &out, &errOut); err != nil {
		t.Fatalf("runScript: %v (stderr %q)", err, errOut.String())
	}
	want := lines(
		"[INFO] Execute statement succeeded.",
		"[INFO] Execute statement succeeded.",
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: 6b1af540c0c0bb3f",
		"[INFO] Complete execution of the SQL update statement.",
		"+----+-------------+",
		"| op |          id |",
		"+----+-------------+",
		"| +I |           1 |",
		"| +I |           2 |",
		"+----+-------------+",
		"Received a total of 2 rows",
		"== Optimized Physical Plan ==",
		"Values(tuples=[[{ 1 }]])",
		"+------------+",
		"| table name |",
		"+------------+",
		"|          s |",
		"|          t |",
		"+------------+",
		"2 rows in set",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr: %q", errOut.String())
	}
	if stream.cancelled == 0 {
		t.Fatal("the finished query was not released")
	}
	wantTexts := []string{
		"CREATE TABLE t (id INT) WITH ('connector' = 'datagen')",
		"SET 'execution.runtime-mode' = 'streaming'",
		"INSERT INTO s SELECT * FROM t",
		"SELECT id FROM t",
		"EXPLAIN SELECT 1",
		"SHOW TABLES",
	}
	if got := be.texts(); strings.Join(got, "\n") != strings.Join(wantTexts, "\n") {
		t.Fatalf("executed %q, want %q", got, wantTexts)
	}
	// Positions handed to the session are those of the script.
	if p := be.executed[3].Pos(); p.Line != 4 || p.Col != 1 {
		t.Fatalf("SELECT at %v, want line 4, column 1", p)
	}
}

// The first failing statement is reported in the SQL client's format on the
// error writer, the rest of the script does not run, and the error returned
// locates the statement. Parse errors name the line and column of the file.
func TestRunFileStopsAtFirstError(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		handle     func(context.Context, parser.Statement) (*outcome, error)
		wantOut    string
		wantReason string // prefix of the text after the [ERROR] line
		wantRan    int
		wantLine   int
		wantCol    int
	}{
		{
			name: "validation error",
			script: "CREATE TABLE a (x INT);\n" +
				"SELECT nope FROM a;\n" +
				"CREATE TABLE b (y INT);\n",
			handle:  byPrefix(rule{"SELECT", fails("SQL validation failed. From line 2, column 8 to line 2, column 11: Column 'nope' not found in any table")}),
			wantOut: "[INFO] Execute statement succeeded.\n",
			wantReason: "SQL validation failed. From line 2, column 8 to line 2, column 11: " +
				"Column 'nope' not found in any table\n",
			wantRan:  2,
			wantLine: 2, wantCol: 1,
		},
		{
			name: "parse error on line 7",
			script: "-- setup\n" + // 1
				"CREATE TABLE a (x INT);\n" + // 2
				"\n" + // 3
				"/* a comment\n" + // 4
				"   spanning lines; with a semicolon */\n" + // 5
				"SET 'k' = 'v';\n" + // 6
				"SELECT x, FROM a;\n" + // 7: FROM is at column 11
				"CREATE TABLE never (y INT);\n",
			wantOut:    "[INFO] Execute statement succeeded.\n[INFO] Execute statement succeeded.\n",
			wantReason: `SQL parse failed. Encountered "FROM" at line 7, column 11.`,
			wantRan:    2,
			wantLine:   7, wantCol: 1,
		},
		{
			name: "parse error in a statement that starts mid-line",
			script: "CREATE TABLE a (x INT);\n\n\n\n\n\n" +
				"SET 'k' = 'v'; SELECT x, FROM a;\n", // line 7: SELECT at 16, FROM at 26
			wantOut:    "[INFO] Execute statement succeeded.\n[INFO] Execute statement succeeded.\n",
			wantReason: `SQL parse failed. Encountered "FROM" at line 7, column 26.`,
			wantRan:    2,
			wantLine:   7, wantCol: 16,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "job.sql")
			if err := os.WriteFile(path, []byte(tc.script), 0o644); err != nil {
				t.Fatal(err)
			}
			be := &fakeBackend{handle: tc.handle}
			var out, errOut strings.Builder
			err := RunFile(context.Background(), fakeExecutor{be}, path, &out, &errOut)
			var se *StatementError
			if !errors.As(err, &se) {
				t.Fatalf("RunFile returned %v, want a *StatementError", err)
			}
			if se.Line != tc.wantLine || se.Column != tc.wantCol {
				t.Fatalf("failed statement at %d:%d, want %d:%d", se.Line, se.Column, tc.wantLine, tc.wantCol)
			}
			if out.String() != tc.wantOut {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), tc.wantOut)
			}
			const head = "[ERROR] Could not execute SQL statement. Reason:\n"
			if !strings.HasPrefix(errOut.String(), head+tc.wantReason) {
				t.Fatalf("stderr:\n%s\nwant prefix:\n%s", errOut.String(), head+tc.wantReason)
			}
			if got := len(be.texts()); got != tc.wantRan {
				t.Fatalf("%d statements ran, want %d: %q", got, tc.wantRan, be.texts())
			}
		})
	}
}

func TestRunFileMissing(t *testing.T) {
	var out, errOut strings.Builder
	err := RunFile(context.Background(), fakeExecutor{&fakeBackend{}}, filepath.Join(t.TempDir(), "nope.sql"), &out, &errOut)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a not-exist error", err)
	}
	if out.Len()+errOut.Len() != 0 {
		t.Fatalf("printed %q %q", out.String(), errOut.String())
	}
}

// Cancelling ctx (SIGINT/SIGTERM in the caller) while a query or an INSERT
// job runs stops it, skips the rest of the script and is not a failure.
func TestRunScriptCancelled(t *testing.T) {
	t.Run("query", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream := &fakeStream{
			batches: [][]session.Change{{ch(types.Insert, types.Int(1))}},
			block:   true,
			onBlock: cancel, // the user presses Ctrl-C while waiting for more rows
		}
		be := &fakeBackend{config: tableauConfig(), handle: byPrefix(rule{"SELECT", gives(queryOutcome(idSchema, stream))})}
		var out, errOut strings.Builder
		err := runScript(ctx, be, "SELECT id FROM t;\nCREATE TABLE after (x INT);\n", &out, &errOut)
		if err != nil {
			t.Fatalf("runScript: %v", err)
		}
		want := lines(
			"+----+-------------+",
			"| op |          id |",
			"+----+-------------+",
			"| +I |           1 |",
			"Query terminated, received a total of 1 row",
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
	})
	t.Run("insert", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		job := &fakeJob{block: true, onBlock: cancel}
		be := &fakeBackend{handle: byPrefix(rule{"INSERT", gives(jobOutcome("j1", job))})}
		var out, errOut strings.Builder
		err := runScript(ctx, be, "INSERT INTO s SELECT * FROM t;\nCREATE TABLE after (x INT);\n", &out, &errOut)
		if err != nil {
			t.Fatalf("runScript: %v", err)
		}
		want := lines(
			"[INFO] Submitting SQL update statement to the cluster...",
			"[INFO] SQL update statement has been successfully submitted to the cluster:",
			"Job ID: j1",
			"[INFO] Stopping job j1 cleanly...",
			"[INFO] Job stopped with a final checkpoint (fake).",
		)
		if out.String() != want || errOut.Len() != 0 {
			t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", out.String(), errOut.String(), want)
		}
		// SIGTERM or Ctrl-C in a script stops the job cleanly, never kills it.
		if job.cleanStops() != 1 || job.stops() != 0 {
			t.Fatalf("job stopped cleanly %d times and cancelled %d times, want 1 and 0", job.cleanStops(), job.stops())
		}
		if n := len(be.texts()); n != 1 {
			t.Fatalf("%d statements ran, want 1", n)
		}
	})
}

// A job or a query that fails while running fails its statement.
func TestRunScriptRuntimeFailure(t *testing.T) {
	t.Run("insert job", func(t *testing.T) {
		be := &fakeBackend{handle: byPrefix(rule{"INSERT", gives(jobOutcome("j2", &fakeJob{err: errors.New("sink refused the row")}))})}
		var out, errOut strings.Builder
		err := runScript(context.Background(), be, "INSERT INTO s SELECT 1;\nSET 'a' = 'b';", &out, &errOut)
		var se *StatementError
		if !errors.As(err, &se) || se.Line != 1 {
			t.Fatalf("got %v, want a *StatementError for line 1", err)
		}
		if want := "[ERROR] Could not execute SQL statement. Reason:\nsink refused the row\n"; errOut.String() != want {
			t.Fatalf("stderr %q, want %q", errOut.String(), want)
		}
		if n := len(be.texts()); n != 1 {
			t.Fatalf("%d statements ran, want 1", n)
		}
	})
	t.Run("query", func(t *testing.T) {
		stream := &fakeStream{
			batches: [][]session.Change{{ch(types.Insert, types.Int(5))}},
			end:     errors.New("source partition vanished"),
		}
		be := &fakeBackend{config: tableauConfig(), handle: byPrefix(rule{"SELECT", gives(queryOutcome(idSchema, stream))})}
		var out, errOut strings.Builder
		err := runScript(context.Background(), be, "SELECT id FROM t", &out, &errOut)
		if !errors.As(err, new(*StatementError)) {
			t.Fatalf("got %v, want a *StatementError", err)
		}
		want := lines(
			"+----+-------------+",
			"| op |          id |",
			"+----+-------------+",
			"| +I |           5 |",
		)
		if out.String() != want {
			t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
		}
		if want := "[ERROR] Could not execute SQL statement. Reason:\nsource partition vanished\n"; errOut.String() != want {
			t.Fatalf("stderr %q, want %q", errOut.String(), want)
		}
		if stream.cancelled == 0 {
			t.Fatal("the failed query was not released")
		}
	})
}

func TestRunScriptStatementSet(t *testing.T) {
	job := &fakeJob{}
	var got *parser.StatementSet
	be := &fakeBackend{}
	be.handle = func(ctx context.Context, stmt parser.Statement) (*outcome, error) {
		if s, ok := stmt.(*parser.StatementSet); ok {
			got = s
			return jobOutcome("set1", job), nil
		}
		return &outcome{message: msgSucceeded}, nil
	}
	script := `BEGIN STATEMENT SET;
INSERT INTO a SELECT 1;
INSERT INTO b SELECT 2;
END;
`
	var out, errOut strings.Builder
	if err := runScript(context.Background(), be, script, &out, &errOut); err != nil {
		t.Fatalf("runScript: %v (%s)", err, errOut.String())
	}
	want := lines(
		"[INFO] Begin a statement set.",
		"[INFO] Add SQL update statement to the statement set.",
		"[INFO] Add SQL update statement to the statement set.",
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: set1",
		"[INFO] Complete execution of the SQL update statement.",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if got == nil || len(got.Inserts) != 2 || got.Inserts[0].Text() != "INSERT INTO a SELECT 1" || got.Inserts[1].Pos().Line != 3 {
		t.Fatalf("session received %#v", got)
	}
	if n := len(be.texts()); n != 1 {
		t.Fatalf("the session saw %d statements, want only the folded set", n)
	}

	for _, tc := range []struct{ name, script, reason string }{
		{"not closed", "BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\n", `the statement set was not closed`},
		{"not an insert", "BEGIN STATEMENT SET;\nSELECT 1;\n", "Only INSERT statement is allowed in Statement Set."},
		{"end without begin", "END;", `No Statement Set to submit, "END;" command should be used after "BEGIN STATEMENT SET;".`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := &fakeBackend{}
			var out, errOut strings.Builder
			err := runScript(context.Background(), be, tc.script, &out, &errOut)
			if !errors.As(err, new(*StatementError)) {
				t.Fatalf("got %v, want a *StatementError", err)
			}
			if !strings.Contains(errOut.String(), tc.reason) {
				t.Fatalf("stderr %q does not contain %q", errOut.String(), tc.reason)
			}
			if n := len(be.texts()); n != 0 {
				t.Fatalf("the session saw %d statements", n)
			}
		})
	}
}

// 'execution.runtime-mode' = 'batch' prints the collected rows with widths
// from the data; 'sql-client.display.max-column-width' caps them.
func TestRunScriptBatchMode(t *testing.T) {
	schema := types.Schema{{Name: "name", Type: types.StringType}}
	stream := &fakeStream{batches: [][]session.Change{
		{ch(types.Insert, types.String("Bob")), ch(types.Insert, types.String("Alexandra"))},
	}}
	be := &fakeBackend{
		handle: byPrefix(rule{"SELECT", gives(queryOutcome(schema, stream))}),
		config: map[string]string{"execution.runtime-mode": "BATCH", "sql-client.display.max-column-width": "6"},
	}
	var out, errOut strings.Builder
	if err := runScript(context.Background(), be, "SELECT name FROM t;", &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := lines(
		"+--------+",
		"|   name |",
		"+--------+",
		"|    Bob |",
		"| Ale... |",
		"+--------+",
		"2 rows in set",
	)
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestRunStringCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	be := &fakeBackend{}
	var out, errOut strings.Builder
	if err := RunString(ctx, fakeExecutor{be}, "SET 'a' = 'b';", &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if len(be.texts()) != 0 || out.Len() != 0 {
		t.Fatalf("ran %q, printed %q", be.texts(), out.String())
	}
}

func TestSplitterPositions(t *testing.T) {
	src := "-- c; not a statement\n" +
		"SELECT 1;  SELECT 'é;' ;\n" +
		"/* x; */ SET 'a' = 'b'\n" +
		";\n" +
		"  SHOW\n  TABLES"
	want := []located{
		{"SELECT 1", 2, 1},
		{"SELECT 'é;'", 2, 12},
		{"SET 'a' = 'b'", 3, 10},
		{"SHOW\n  TABLES", 5, 3},
	}
	// Whole and fed line by line (as the REPL reads a pipe), the positions
	// are the same.
	for _, chunked := range []bool{false, true} {
		sp := newSplitter()
		var got []located
		if chunked {
			for _, line := range strings.SplitAfter(src, "\n") {
				got = append(got, sp.feed(line)...)
			}
		} else {
			got = sp.feed(src)
		}
		if st, ok := sp.flush(); ok {
			got = append(got, st)
		}
		if len(got) != len(want) {
			t.Fatalf("chunked=%v: got %+v, want %+v", chunked, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("chunked=%v: statement %d = %+v, want %+v", chunked, i, got[i], want[i])
			}
		}
	}
}

// progressJob is a running job that reports progress; it ends when end is
// closed.
type progressJob struct {
	fakeJob
	end             chan struct{}
	read, remaining int64
}

func (j *progressJob) Wait(ctx context.Context) error {
	select {
	case <-j.end:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (j *progressJob) Done() <-chan struct{}             { return j.end }
func (j *progressJob) Progress() (read, remaining int64) { return j.read, j.remaining }

// TestScriptProgress: with a terminal on stderr a script's INSERT shows
// "[INFO] Job <id>: N rows read (P %)" on one line, rewritten at every tick
// and cleared when the job ends; the percentage is read / (read +
// remaining): 1234567 of 1234567 + 3703701 is 25 %. Without a known size
// only the rows are shown.
func TestScriptProgress(t *testing.T) {
	for _, tc := range []struct {
		remaining int64
		want      string
	}{
		{3703701, "[INFO] Job j1: 1,234,567 rows read (25 %)"},
		{-1, "[INFO] Job j1: 1,234,567 rows read"},
	} {
		job := &progressJob{end: make(chan struct{}), read: 1234567, remaining: tc.remaining}
		be := &fakeBackend{handle: byPrefix(rule{"INSERT", gives(&outcome{job: &jobHandle{id: "j1", job: job}})})}
		var out, errOut strings.Builder
		ticks := make(chan time.Time)
		r := &runner{be: be, out: &out, errOut: &errOut,
			progressTicks: func() (<-chan time.Time, func()) { return ticks, func() {} }}
		done := make(chan error, 1)
		go func() { done <- r.runScript(context.Background(), "INSERT INTO s SELECT * FROM t") }()
		// The second send is taken only once the first tick's line is
		// written: the loop is back in its select.
		ticks <- time.Time{}
		ticks <- time.Time{}
		close(job.end)
		if err := <-done; err != nil {
			t.Fatalf("runScript: %v", err)
		}
		line := "\r\x1b[K" + tc.want + "\r"
		if want := line + line + "\r\x1b[K"; errOut.String() != want {
			t.Errorf("stderr %q, want %q", errOut.String(), want)
		}
		if !strings.Contains(out.String(), "Job ID: j1") || !strings.Contains(out.String(), msgCompleted) {
			t.Errorf("stdout %q", out.String())
		}
	}
	// Not a terminal (no ticks): no progress line.
	job := &progressJob{end: make(chan struct{}), read: 5}
	close(job.end)
	be := &fakeBackend{handle: byPrefix(rule{"INSERT", gives(&outcome{job: &jobHandle{id: "j2", job: job}})})}
	var out, errOut strings.Builder
	if err := runScript(context.Background(), be, "INSERT INTO s SELECT * FROM t", &out, &errOut); err != nil || errOut.Len() != 0 {
		t.Errorf("without a terminal: %v, stderr %q", err, errOut.String())
	}
}
