package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// Piped input runs like a script: statements may span lines, ';' inside
// strings and comments does not end them, HELP is answered by the shell and
// QUIT ends the run.
func TestREPLPiped(t *testing.T) {
	input := `-- create the source
CREATE TABLE t (
  id INT, -- the key; not a terminator
  name STRING
) WITH ('connector' = 'datagen');
SELECT ';' AS semi
FROM t; /* trailing ; comment */ SET 'x' = 'y';
help;
QUIT;
CREATE TABLE never (x INT);
`
	stream := &fakeStream{batches: [][]session.Change{{ch(types.Insert, types.String(";"))}}}
	be := &fakeBackend{config: tableauConfig(), handle: byPrefix(
		rule{"SELECT", gives(queryOutcome(types.Schema{{Name: "semi", Type: types.CharType(1)}}, stream))},
	)}
	var out, errOut strings.Builder
	err := runREPL(context.Background(), be, Options{In: strings.NewReader(input), Out: &out, Err: &errOut})
	if err != nil {
		t.Fatalf("runREPL: %v (%s)", err, errOut.String())
	}
	want := lines(
		"[INFO] Execute statement succeeded.",
		"+----+--------------------------------+",
		"| op |                           semi |",
		"+----+--------------------------------+",
		"| +I |                              ; |",
		"+----+--------------------------------+",
		"Received a total of 1 row",
		"[INFO] Execute statement succeeded.",
	) + helpText
	if out.String() != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	wantRun := []located{
		{"CREATE TABLE t (\n  id INT, -- the key; not a terminator\n  name STRING\n) WITH ('connector' = 'datagen')", 2, 1},
		{"SELECT ';' AS semi\nFROM t", 6, 1},
		{"SET 'x' = 'y'", 7, 34},
	}
	if len(be.executed) != len(wantRun) {
		t.Fatalf("executed %q", be.texts())
	}
	for i, w := range wantRun {
		got := be.executed[i]
		if got.Text() != w.text || got.Pos().Line != w.line || got.Pos().Col != w.col {
			t.Errorf("statement %d: %q at %d:%d, want %q at %d:%d", i, got.Text(), got.Pos().Line, got.Pos().Col, w.text, w.line, w.col)
		}
	}
}

// On piped input an INSERT is waited for and the first failure ends the run.
func TestREPLPipedFailure(t *testing.T) {
	input := "INSERT INTO s\nSELECT * FROM t;\nSELECT\n  nope FROM t;\nSET 'a' = 'b';\n"
	be := &fakeBackend{handle: byPrefix(
		rule{"INSERT", gives(jobOutcome("p1", &fakeJob{}))},
		rule{"SELECT", fails("Column 'nope' not found in any table")},
	)}
	var out, errOut strings.Builder
	err := runREPL(context.Background(), be, Options{In: strings.NewReader(input), Out: &out, Err: &errOut})
	var se *StatementError
	if !errors.As(err, &se) || se.Line != 3 || se.Column != 1 {
		t.Fatalf("got %v, want a *StatementError at 3:1", err)
	}
	wantOut := lines(
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: p1",
		"[INFO] Complete execution of the SQL update statement.",
	)
	if out.String() != wantOut {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), wantOut)
	}
	if want := "[ERROR] Could not execute SQL statement. Reason:\nColumn 'nope' not found in any table\n"; errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
	if n := len(be.texts()); n != 2 {
		t.Fatalf("%d statements ran, want 2", n)
	}
}

// scriptedReader plays the part of the line editor.
type scriptedReader struct {
	steps   []readStep
	prompts []string
	history []string
}

type readStep struct {
	line string
	err  error
}

func (s *scriptedReader) readLine(prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	if len(s.steps) == 0 {
		return "", io.EOF
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st.line, st.err
}

func (s *scriptedReader) saveHistory(entry string) { s.history = append(s.history, entry) }

func TestREPLInteractive(t *testing.T) {
	interrupt := make(chan os.Signal, 1)
	stream := &fakeStream{
		batches: [][]session.Change{{ch(types.Insert, types.Int(1))}},
		block:   true,
		onBlock: func() { interrupt <- os.Interrupt }, // Ctrl-C while the query runs
	}
	running := &fakeJob{block: true}                           // an unbounded INSERT
	failing := &fakeJob{err: errors.New("broker unreachable")} // fails in the background
	be := &fakeBackend{config: tableauConfig(), handle: byPrefix(
		rule{"SELECT id", gives(queryOutcome(idSchema, stream))},
		rule{"SELECT nope", fails("Column 'nope' not found in any table")},
		rule{"INSERT INTO s", gives(jobOutcome("bg1", running))},
		rule{"INSERT INTO k", gives(jobOutcome("bg2", failing))},
	)}
	lr := &scriptedReader{steps: []readStep{
		{line: "SELECT id"},
		{line: "FROM t;"},
		{line: "SET 'a'"},
		{err: errLineInterrupted}, // Ctrl-C at the prompt drops "SET 'a'"
		{line: "INSERT INTO s SELECT * FROM t;"},
		{line: "SELECT nope FROM t;"},
		{line: "INSERT INTO k SELECT * FROM t;"},
	}}
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut, interrupts: Options{Interrupt: interrupt}.interruptSource()}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatalf("interactiveLoop: %v", err)
	}
	r.jobs.close() // as RunREPL does on exit; waits for the job watchers

	// Ctrl-D at the end, with bg1 running, asks first; Ctrl-D again answers.
	wantPrompts := []string{"Flink SQL> ", "> ", "Flink SQL> ", "> ", "Flink SQL> ", "Flink SQL> ", "Flink SQL> ", "Flink SQL> ", "Stop them and quit? (y/N) "}
	if strings.Join(lr.prompts, "|") != strings.Join(wantPrompts, "|") {
		t.Fatalf("prompts %q, want %q", lr.prompts, wantPrompts)
	}
	wantOut := lines(
		"+----+-------------+",
		"| op |          id |",
		"+----+-------------+",
		"| +I |           1 |",
		"Query terminated, received a total of 1 row",
		"",
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: bg1",
		"",
		"", // after the failed statement
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: bg2",
		"",
		"[WARN] 1 INSERT job is still running:",
		"  bg1",
		"They run inside this shell and cannot outlive it. Quitting stops them: their sources stop reading,",
		"and a final checkpoint commits their output of everything read so far (with checkpointing on, running the",
		"pipeline again resumes from that checkpoint; with it off, they end as at the end of their input).",
		"",
		"[INFO] Stopping job bg1 cleanly...",
		"[INFO] Job stopped with a final checkpoint (fake).",
	)
	if out.String() != wantOut {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out.String(), wantOut)
	}
	wantErr := "[ERROR] Could not execute SQL statement. Reason:\nColumn 'nope' not found in any table\n" +
		"[ERROR] Job bg2 failed. Reason:\nbroker unreachable\n"
	if errOut.String() != wantErr {
		t.Fatalf("stderr:\n%s\nwant:\n%s", errOut.String(), wantErr)
	}
	if stream.cancelled == 0 {
		t.Fatal("the interrupted query was not cancelled")
	}
	if running.stops() != 0 || running.cleanStops() != 1 {
		t.Fatalf("the background INSERT was cancelled %d times and stopped cleanly %d times, want 0 and 1 (at exit)", running.stops(), running.cleanStops())
	}
	wantHistory := []string{"SELECT id FROM t;", "INSERT INTO s SELECT * FROM t;", "SELECT nope FROM t;", "INSERT INTO k SELECT * FROM t;"}
	if strings.Join(lr.history, "|") != strings.Join(wantHistory, "|") {
		t.Fatalf("history %q, want %q", lr.history, wantHistory)
	}
}

func TestREPLInteractiveQuitAndSync(t *testing.T) {
	interrupt := make(chan os.Signal, 1)
	job := &fakeJob{block: true, onBlock: func() { interrupt <- os.Interrupt }}
	be := &fakeBackend{
		handle: byPrefix(rule{"INSERT", gives(jobOutcome("s1", job))}),
		config: map[string]string{"table.dml-sync": "true"},
	}
	lr := &scriptedReader{steps: []readStep{
		{line: "INSERT INTO s SELECT * FROM t;"}, // waited for (dml-sync), Ctrl-C stops it
		{line: "exit"},                           // a bare exit, without ';'
		{line: "SET 'never' = 'run';"},
	}}
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut, interrupts: Options{Interrupt: interrupt}.interruptSource()}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	wantOut := lines(
		"[INFO] Submitting SQL update statement to the cluster...",
		"[INFO] SQL update statement has been successfully submitted to the cluster:",
		"Job ID: s1",
		"[INFO] Stopping job s1 cleanly...",
		"[INFO] Job stopped with a final checkpoint (fake).",
		"",
	)
	if out.String() != wantOut || errOut.String() != "" {
		t.Fatalf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", out.String(), errOut.String(), wantOut)
	}
	if job.cleanStops() != 1 || job.stops() != 0 {
		t.Fatalf("job stopped cleanly %d times and cancelled %d times, want 1 and 0", job.cleanStops(), job.stops())
	}
	if n := len(be.texts()); n != 1 {
		t.Fatalf("%d statements ran after exit", n-1)
	}
}

func TestCompleter(t *testing.T) {
	c := newCompleter(&fakeBackend{words: []string{"orders", "order_items", "Customers", "amount", "orders.amount", "orders.order_id", "execution.checkpointing.interval"}})
	tests := []struct {
		line string
		want []string
	}{
		{"SELECT * FROM ord", []string{"er", "er_items", "ers"}}, // ORDER keyword follows the typed case
		{"sel", []string{"ect"}},
		{"SEL", []string{"ECT"}},
		{"select * from cust", []string{"omers"}},
		{"select * from ", nil},
		{"SET 'execution.checkpointing.i", []string{"nterval"}},
		{"SET 'exe", []string{"cute", "cution.checkpointing.interval"}},
		{"SELECT orders.am", []string{"ount"}},   // a column after its table
		{"SELECT orders.o", []string{"rder_id"}}, // not the keyword ORDER
		{"SELECT SUM(am", []string{"ount"}},      // a column in an expression
		{"SELECT order_id FROM orders WHERE orders.", []string{"amount", "order_id"}},
	}
	for _, tc := range tests {
		got, n := c.Do([]rune(tc.line), len([]rune(tc.line)))
		var words []string
		for _, g := range got {
			words = append(words, string(g))
		}
		if strings.Join(words, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Do(%q) = %q, want %q", tc.line, words, tc.want)
		}
		if tc.want != nil && n != len(tc.line)-strings.LastIndexAny(tc.line, " ('")-1 {
			t.Errorf("Do(%q) replaces %d runes", tc.line, n)
		}
	}
}

// QUIT; with an INSERT job running asks first, naming the job and what
// quitting does to it; "n" keeps the shell (and the job) going, and the
// confirmed quit stops the job cleanly instead of killing it.
func TestREPLQuitWithRunningJobs(t *testing.T) {
	running := &fakeJob{block: true}
	ended := &fakeJob{} // finished by itself: nothing to ask about
	be := &fakeBackend{handle: byPrefix(
		rule{"INSERT INTO s", gives(jobOutcome("j-run", running))},
		rule{"INSERT INTO e", gives(jobOutcome("j-end", ended))},
	)}
	lr := &scriptedReader{steps: []readStep{
		{line: "INSERT INTO s SELECT * FROM t;"},
		{line: "INSERT INTO e SELECT * FROM t;"},
		{line: "QUIT;"},
		{line: "n"},               // keep running
		{line: "SET 'a' = 'b';"},  // the shell goes on
		{line: "exit"},            // asks again
		{err: errLineInterrupted}, // Ctrl-C at the question: no
		{line: "quit"},            // and again
		{line: "maybe"},           // not an answer: asked again
		{line: "yes"},             // confirmed
		{line: "SET 'never' = 'run';"},
	}}
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	const ask = "Stop them and quit? (y/N) "
	wantPrompts := []string{"Flink SQL> ", "Flink SQL> ", "Flink SQL> ", ask, "Flink SQL> ", "Flink SQL> ", ask, "Flink SQL> ", ask, ask}
	if strings.Join(lr.prompts, "|") != strings.Join(wantPrompts, "|") {
		t.Fatalf("prompts %q, want %q", lr.prompts, wantPrompts)
	}
	warning := lines(
		"[WARN] 1 INSERT job is still running:",
		"  j-run",
		"They run inside this shell and cannot outlive it. Quitting stops them: their sources stop reading,",
		"and a final checkpoint commits their output of everything read so far (with checkpointing on, running the",
		"pipeline again resumes from that checkpoint; with it off, they end as at the end of their input).",
	)
	got := out.String()
	if n := strings.Count(got, warning); n != 3 {
		t.Fatalf("the running job was announced %d times, want 3; stdout:\n%s", n, got)
	}
	if strings.Contains(got, "  j-end\n") {
		t.Fatalf("the finished job was listed as running; stdout:\n%s", got)
	}
	if !strings.Contains(got, warning+"[INFO] Nothing was stopped.\n") {
		t.Fatalf("declining did not say that nothing was stopped; stdout:\n%s", got)
	}
	if !strings.HasSuffix(got, warning+"[INFO] Stopping job j-run cleanly...\n[INFO] Job stopped with a final checkpoint (fake).\n") {
		t.Fatalf("the confirmed quit did not stop the job cleanly; stdout:\n%s", got)
	}
	if running.cleanStops() != 1 || running.stops() != 0 {
		t.Fatalf("job stopped cleanly %d times and cancelled %d times, want 1 and 0", running.cleanStops(), running.stops())
	}
	if texts := be.texts(); len(texts) != 3 || texts[2] != "SET 'a' = 'b'" {
		t.Fatalf("statements run: %q", texts)
	}
}

// A job that cannot be stopped cleanly is reported as such.
func TestREPLQuitStopFails(t *testing.T) {
	running := &fakeJob{block: true, cleanErr: errors.New("job j1 ('p') failed while stopping: final checkpoint expired")}
	be := &fakeBackend{handle: byPrefix(rule{"INSERT", gives(jobOutcome("j1", running))})}
	lr := &scriptedReader{steps: []readStep{{line: "INSERT INTO s SELECT * FROM t;"}}} // then Ctrl-D twice
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	want := "[ERROR] Job j1 could not be stopped cleanly. Reason:\njob j1 ('p') failed while stopping: final checkpoint expired\n"
	if errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
	running.StopClean(context.Background()) // let the watcher end
	r.jobs.close()
}

// Ctrl-C while a statement is being planned (the session returns once
// planning notices its context is done) cancels that statement only.
func TestREPLCtrlCWhilePlanning(t *testing.T) {
	interrupt := make(chan os.Signal, 1)
	be := &fakeBackend{handle: byPrefix(rule{"SELECT", func(ctx context.Context) (*outcome, error) {
		interrupt <- os.Interrupt // pressed while planning
		<-ctx.Done()
		return nil, fmt.Errorf("planning cancelled: %w", ctx.Err())
	}})}
	lr := &scriptedReader{steps: []readStep{
		{line: "SELECT " + strings.Repeat("a OR ", 1000) + "a FROM t;"},
		{line: "SET 'a' = 'b';"},
	}}
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut, interrupts: Options{Interrupt: interrupt}.interruptSource()}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	if want := "[INFO] Statement cancelled.\n\n[INFO] Execute statement succeeded.\n\n"; out.String() != want || errOut.String() != "" {
		t.Fatalf("stdout %q, stderr %q; want stdout %q", out.String(), errOut.String(), want)
	}
}
