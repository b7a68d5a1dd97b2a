package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/sql/parser"
)

// Output texts of Flink's SQL client, kept identical so that users and
// tools that read the client's output see what they know.
const (
	msgSucceeded       = "Execute statement succeeded."
	msgSubmitting      = "Submitting SQL update statement to the cluster..."
	msgSubmitted       = "SQL update statement has been successfully submitted to the cluster:"
	msgCompleted       = "Complete execution of the SQL update statement."
	msgBeginSet        = "Begin a statement set."
	msgAddToSet        = "Add SQL update statement to the statement set."
	msgEmptySet        = "No statement in the statement set, skip submit."
	errCouldNotExecute = "Could not execute SQL statement. Reason:"
	errOnlyInsertInSet = "Only INSERT statement is allowed in Statement Set."
	errEndWithoutBegin = `No Statement Set to submit, "END;" command should be used after "BEGIN STATEMENT SET;".`
)

const clearScreen = "\x1b[H\x1b[2J"

// step tells a loop what to do after a statement.
type step int

const (
	stepNext    step = iota // go on
	stepQuit                // QUIT; or EXIT;
	stepStopped             // the user cancelled the statement
)

// located is a statement's text with the position of its first character in
// the whole input (1-based, columns counted in characters as the parser does).
type located struct {
	text      string
	line, col int
}

// runner executes statements one at a time and renders their results.
type runner struct {
	be          backend
	out, errOut io.Writer
	// interactive selects REPL behaviour: INSERT jobs run in the background
	// and a failed statement does not end the loop.
	interactive bool
	// maxColumnWidth overrides 'sql-client.display.max-column-width' when > 0.
	maxColumnWidth int
	// interrupts subscribes to Ctrl-C for the duration of one statement; nil
	// leaves cancellation to ctx alone.
	interrupts func() (<-chan os.Signal, func())
	// jobs watches INSERT jobs left running in the background (REPL only).
	jobs *jobWatcher
	// terminalSize reports the terminal's width and height for the
	// interactive table view; nil or zeros mean 80x24.
	terminalSize func() (width, height int)
	// refresh, when set, replaces the ticker that paces the redraws of the
	// interactive table view (for tests).
	refresh func() (<-chan time.Time, func())
	// progressTicks, when set, paces the progress line of a script's
	// INSERT on errOut (set when errOut is a terminal).
	progressTicks func() (<-chan time.Time, func())

	set *openSet // BEGIN STATEMENT SET seen, END not yet
}

// openSet collects the INSERTs of a client-side statement set.
type openSet struct {
	at      located
	pos     parser.Pos
	inserts []*parser.Insert
}

// statement folds the collected INSERTs into the equivalent
// EXECUTE STATEMENT SET.
func (s *openSet) statement() *parser.StatementSet {
	var src strings.Builder
	src.WriteString("EXECUTE STATEMENT SET\nBEGIN\n")
	for _, ins := range s.inserts {
		src.WriteString(ins.Text())
		src.WriteString(";\n")
	}
	src.WriteString("END")
	return &parser.StatementSet{
		StmtBase: parser.StmtBase{At: parser.At{P: s.pos}, Src: src.String()},
		Inserts:  s.inserts,
	}
}

// run executes one statement. A failure is printed on errOut and returned as
// a *StatementError.
func (r *runner) run(ctx context.Context, st located) (step, error) {
	if cmd, ok := clientCommand(st.text); ok {
		switch cmd {
		case "QUIT", "EXIT":
			return stepQuit, nil
		case "HELP":
			_, err := io.WriteString(r.out, helpText)
			return stepNext, err
		case "CLEAR":
			if r.interactive {
				_, err := io.WriteString(r.out, clearScreen)
				return stepNext, err
			}
		}
		return stepNext, nil
	}
	stmt, err := parseAt(st.text, st.line, st.col)
	if err != nil {
		return stepNext, r.fail(st, err)
	}

	switch s := stmt.(type) {
	case *parser.BeginStatementSet:
		if r.set != nil {
			return stepNext, r.fail(st, errors.New(errOnlyInsertInSet))
		}
		r.set = &openSet{at: st, pos: s.Pos()}
		return stepNext, r.info(msgBeginSet)
	case *parser.End:
		if r.set == nil {
			return stepNext, r.fail(st, errors.New(errEndWithoutBegin))
		}
		set := r.set
		r.set = nil
		if len(set.inserts) == 0 {
			return stepNext, r.info(msgEmptySet)
		}
		stmt = set.statement()
	case *parser.Insert:
		if r.set != nil {
			r.set.inserts = append(r.set.inserts, s)
			return stepNext, r.info(msgAddToSet)
		}
	default:
		if r.set != nil {
			return stepNext, r.fail(st, errors.New(errOnlyInsertInSet))
		}
	}

	sctx, done := r.statementContext(ctx)
	defer done()
	res, err := r.be.execute(sctx, stmt)
	if err != nil {
		if sctx.Err() != nil {
			return stepStopped, r.info("Statement cancelled.")
		}
		return stepNext, r.fail(st, err)
	}
	stopped, err := r.render(sctx, res)
	if stopped {
		return stepStopped, nil
	}
	if err != nil {
		return stepNext, r.fail(st, err)
	}
	return stepNext, nil
}

// closeScript reports a statement set left open at the end of a script.
func (r *runner) closeScript() error {
	if r.set == nil {
		return nil
	}
	set := r.set
	r.set = nil
	return r.fail(set.at, errors.New(`the statement set was not closed: "END;" is missing after "BEGIN STATEMENT SET;"`))
}

func (r *runner) info(msg string) error {
	_, err := fmt.Fprintf(r.out, "[INFO] %s\n", msg)
	return err
}

func (r *runner) fail(st located, err error) error {
	fmt.Fprintf(r.errOut, "[ERROR] %s\n%v\n", errCouldNotExecute, err)
	return &StatementError{Line: st.line, Column: st.col, Err: err}
}

// render shows a statement's result. stopped reports that the user
// cancelled a running query or job.
func (r *runner) render(ctx context.Context, o *outcome) (stopped bool, err error) {
	switch {
	case o.query != nil:
		return r.renderQuery(ctx, o.query)
	case o.job != nil:
		return r.runJob(ctx, o.job)
	case o.table != nil:
		return false, WriteStaticTable(r.out, o.table)
	case o.text != "":
		text := o.text
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err := io.WriteString(r.out, text)
		return false, err
	}
	msg := o.message
	if msg == "" {
		msg = msgSucceeded
	}
	return false, r.info(msg)
}

// renderQuery shows a query's result in the session's result mode until the
// query ends or ctx is cancelled. The query is released in every case.
//
// 'tableau' prints the changes as they arrive. 'changelog' does the same,
// except that in an interactive terminal it always uses the streaming layout
// with its op column, even in batch runtime mode. 'table' shows the
// materialized result (see renderTable).
func (r *runner) renderQuery(ctx context.Context, q *queryHandle) (stopped bool, err error) {
	defer q.stream.Cancel()
	mode, err := parseResultMode(r.be.get(resultModeKey))
	if err != nil {
		return false, err
	}
	// The layout follows how the statement ran: in 'automatic' mode a
	// query over bounded sources runs as batch and gets the batch table.
	streaming := r.streaming() && !q.batch
	switch mode {
	case modeTable:
		return r.renderTable(ctx, q)
	case modeChangelog:
		streaming = streaming || r.interactive
	}
	p := NewTableauPrinter(r.out, q.schema, q.loc, streaming, r.columnWidth())
	if err := p.Start(); err != nil {
		return false, err
	}
	for {
		changes, err := q.stream.Next(ctx)
		if len(changes) > 0 {
			if perr := p.Print(changes); perr != nil {
				return false, perr
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return false, p.Finish()
		case ctx.Err() != nil:
			return true, p.Terminate()
		default:
			return false, err
		}
	}
}

// runJob reports a submitted INSERT job and, in a script or with
// 'table.dml-sync', waits for it to finish. Cancelling ctx stops the job.
func (r *runner) runJob(ctx context.Context, j *jobHandle) (stopped bool, err error) {
	if _, err := fmt.Fprintf(r.out, "[INFO] %s\n[INFO] %s\nJob ID: %s\n", msgSubmitting, msgSubmitted, j.id); err != nil {
		return false, err
	}
	if r.interactive && !r.dmlSync() {
		r.jobs.watch(j)
		return false, nil
	}
	if err := r.showProgress(ctx, j); err != nil {
		return false, err
	}
	err = j.job.Wait(ctx)
	switch {
	case err == nil:
		return false, r.info(msgCompleted)
	case ctx.Err() != nil:
		// Ctrl-C or SIGTERM: the job must not be killed with its output
		// since the last checkpoint uncommitted; stop it cleanly.
		return true, r.stopClean(j)
	}
	return false, err
}

// progressReporter is implemented by jobs that count their sources' rows
// (*session.Job): read so far, and remaining, -1 when unknown.
type progressReporter interface {
	Progress() (read, remaining int64)
}

const clearLine = "\r\x1b[K"

// showProgress keeps one line on errOut (a terminal) up to date while the
// job of a script runs: the rows its sources read and, when the size of
// their input is known, the percentage done. It returns when the job ends
// or ctx is cancelled, with the line cleared.
func (r *runner) showProgress(ctx context.Context, j *jobHandle) error {
	p, ok := j.job.(progressReporter)
	if !ok || r.progressTicks == nil {
		return nil
	}
	ticks, stop := r.progressTicks()
	defer stop()
	var line []byte
	shown := false
	for {
		select {
		case <-j.job.Done():
		case <-ctx.Done():
		case <-ticks:
			read, remaining := p.Progress()
			// The cursor goes back to the start of the line, so that a log
			// line written to the same terminal meanwhile overwrites it
			// instead of being appended to it.
			line = append(appendProgress(append(line[:0], clearLine...), j.id, read, remaining), '\r')
			if _, err := r.errOut.Write(line); err != nil {
				return err
			}
			shown = true
			continue
		}
		if shown {
			_, err := io.WriteString(r.errOut, clearLine)
			return err
		}
		return nil
	}
}

// appendProgress renders "[INFO] Job <id>: 1,234 rows read (12 %)".
func appendProgress(dst []byte, id string, read, remaining int64) []byte {
	dst = append(dst, "[INFO] Job "...)
	dst = append(dst, id...)
	dst = append(dst, ": "...)
	dst = appendThousands(dst, read)
	dst = append(dst, plural(read, " row read", " rows read")...)
	if remaining >= 0 && read+remaining > 0 {
		dst = fmt.Appendf(dst, " (%d %%)", read*100/(read+remaining))
	}
	return dst
}

// appendThousands appends n with commas between groups of three digits.
func appendThousands(dst []byte, n int64) []byte {
	s := strconv.FormatInt(n, 10)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			dst = append(dst, ',')
		}
		dst = append(dst, s[i])
	}
	return dst
}

// stopClean stops a job with a final checkpoint and reports the outcome.
func (r *runner) stopClean(j *jobHandle) error {
	if err := r.info(fmt.Sprintf("Stopping job %s cleanly...", j.id)); err != nil {
		return err
	}
	msg, err := j.job.StopClean(context.Background())
	if err != nil {
		fmt.Fprintf(r.errOut, "[ERROR] Job %s could not be stopped cleanly. Reason:\n%v\n", j.id, err)
		return nil
	}
	return r.info(msg)
}

func (r *runner) streaming() bool {
	return !strings.EqualFold(strings.TrimSpace(r.be.get("execution.runtime-mode")), "batch")
}

func (r *runner) dmlSync() bool {
	return strings.EqualFold(strings.TrimSpace(r.be.get("table.dml-sync")), "true")
}

func (r *runner) columnWidth() int {
	if r.maxColumnWidth > 0 {
		return r.maxColumnWidth
	}
	n, err := parseColumnWidth(strings.TrimSpace(r.be.get("sql-client.display.max-column-width")))
	if err != nil {
		return DefaultMaxColumnWidth
	}
	return n
}

// statementContext derives the context of one statement, cancelled by ctx or
// by Ctrl-C while the statement runs. done releases it.
func (r *runner) statementContext(ctx context.Context) (sctx context.Context, done func()) {
	if r.interrupts == nil {
		return ctx, func() {}
	}
	sigs, unsubscribe := r.interrupts()
	sctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-sigs:
			cancel()
		case <-finished:
		}
	})
	return sctx, func() {
		close(finished)
		wg.Wait()
		unsubscribe()
		cancel()
	}
}

// runAll runs statements in order until one fails, the user quits or
// cancels, or ctx is done; done reports that the run must end.
func (r *runner) runAll(ctx context.Context, stmts []located) (done bool, err error) {
	for _, st := range stmts {
		if ctx.Err() != nil {
			return true, nil
		}
		s, err := r.run(ctx, st)
		if err != nil {
			return true, err
		}
		if s != stepNext {
			return true, nil
		}
	}
	return false, nil
}

// runScript runs a whole script text as -f and -e do.
func (r *runner) runScript(ctx context.Context, src string) error {
	sp := newSplitter()
	if done, err := r.runAll(ctx, sp.feed(src)); done {
		return err
	}
	if st, ok := sp.flush(); ok {
		if done, err := r.runAll(ctx, []located{st}); done {
			return err
		}
	}
	return r.closeScript()
}

// jobWatcher reports INSERT jobs that fail after the REPL returned to the
// prompt. Its goroutines end when their job ends or when close is called.
type jobWatcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errOut io.Writer // shared with the REPL loop; must be safe for concurrent use

	mu      sync.Mutex
	running []*jobHandle // in submission order, until they end
}

func newJobWatcher(ctx context.Context, errOut io.Writer) *jobWatcher {
	ctx, cancel := context.WithCancel(ctx)
	return &jobWatcher{ctx: ctx, cancel: cancel, errOut: errOut}
}

func (w *jobWatcher) watch(j *jobHandle) {
	w.mu.Lock()
	w.running = append(w.running, j)
	w.mu.Unlock()
	w.wg.Go(func() {
		// Wait returns ctx's error when watching stops; anything else is
		// the job's own failure, worth reporting even at exit.
		err := j.job.Wait(w.ctx)
		if w.ctx.Err() == nil {
			w.forget(j) // the job ended
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(w.errOut, "[ERROR] Job %s failed. Reason:\n%v\n", j.id, err)
		}
	})
}

func (w *jobWatcher) forget(j *jobHandle) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, x := range w.running {
		if x == j {
			w.running = append(w.running[:i], w.running[i+1:]...)
			return
		}
	}
}

// runningJobs lists the watched jobs that have not ended yet.
func (w *jobWatcher) runningJobs() []*jobHandle {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*jobHandle
	for _, j := range w.running {
		select {
		case <-j.job.Done(): // ended; its watcher forgets it soon
		default:
			out = append(out, j)
		}
	}
	return out
}

// close stops watching (the jobs themselves keep running) and waits for the
// watchers to end.
func (w *jobWatcher) close() {
	w.cancel()
	w.wg.Wait()
}

// lockedWriter serializes writes from the REPL loop and the job watchers.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
