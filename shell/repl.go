package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/chzyer/readline"
	"github.com/flinksql/flinksql/sql/parser"
)

const (
	promptMain = "Flink SQL> "
	promptMore = "> "
	welcome    = "flinksql: the Flink SQL shell. Enter 'HELP;' to list the commands, 'QUIT;' to exit.\n\n"
)

// Options configures RunREPL.
type Options struct {
	// In is where statements are read from (os.Stdin when nil).
	In io.Reader
	// Out receives results, Err failures (os.Stdout and os.Stderr when nil).
	Out, Err io.Writer
	// HistoryFile keeps the interactive history across sessions
	// (~/.flinksql_history when empty).
	HistoryFile string
	// Interactive selects the readline prompt. When false (In is not a
	// terminal) statements are read from In without prompts and run like a
	// script (see RunFile).
	Interactive bool
	// MaxColumnWidth, when > 0, overrides 'sql-client.display.max-column-width'.
	MaxColumnWidth int
	// Interrupt, when set, replaces SIGINT as the source of Ctrl-C while a
	// statement runs (for tests and embedding).
	Interrupt <-chan os.Signal
}

// IsTerminal reports whether f is a terminal, for Options.Interactive.
func IsTerminal(f *os.File) bool { return readline.IsTerminal(int(f.Fd())) }

// RunREPL reads statements from opts.In and runs them until QUIT;, EXIT;,
// the end of the input (Ctrl-D) or the cancellation of ctx.
//
// RunREPL handles SIGINT itself while a statement runs: in interactive mode
// Ctrl-C cancels the running statement and the prompt comes back; on piped
// input it ends the run like a cancelled script. At the interactive prompt
// Ctrl-C clears the current input. Callers should therefore cancel ctx only
// for shutdown (SIGTERM), not on SIGINT.
//
// In interactive mode failed statements are reported and the REPL goes on,
// and RunREPL returns nil unless the terminal fails. On piped input the first
// failing statement ends the run with a *StatementError.
func RunREPL(ctx context.Context, ex Executor, opts Options) error {
	return runREPL(ctx, executorBackend{ex}, opts)
}

func runREPL(ctx context.Context, be backend, opts Options) error {
	if opts.In == nil {
		opts.In = os.Stdin
	}
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Err == nil {
		opts.Err = os.Stderr
	}
	r := &runner{
		be:             be,
		out:            opts.Out,
		errOut:         opts.Err,
		maxColumnWidth: opts.MaxColumnWidth,
		interrupts:     opts.interruptSource(),
	}
	if !opts.Interactive {
		return r.pipeLoop(ctx, opts.In)
	}
	if f, ok := opts.Out.(*os.File); ok {
		r.terminalSize = func() (int, int) {
			w, h, err := readline.GetSize(int(f.Fd()))
			if err != nil {
				return 0, 0
			}
			return w, h
		}
	}

	history := opts.HistoryFile
	if history == "" {
		if home, err := os.UserHomeDir(); err == nil {
			history = filepath.Join(home, ".flinksql_history")
		}
	}
	// Closing the editor (at exit or when ctx is cancelled) interrupts a
	// pending read without closing opts.In itself.
	paste := newPasteReader(opts.In)
	stdin := readline.NewCancelableStdin(paste)
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 promptMain,
		HistoryFile:            history,
		DisableAutoSaveHistory: true, // a multi-line statement is saved as one entry
		HistorySearchFold:      true,
		AutoComplete:           newCompleter(be),
		FuncFilterInputRune:    paste.filterRune,
		InterruptPrompt:        "^C",
		Stdin:                  stdin,
		Stdout:                 opts.Out,
		Stderr:                 opts.Err,
	})
	if err != nil {
		return fmt.Errorf("starting the line editor: %w", err)
	}
	var closeOnce sync.Once
	// The editor's Close waits for its reader, which returns only when
	// stdin is closed or a key arrives: stdin goes first.
	closeRL := func() { closeOnce.Do(func() { stdin.Close(); rl.Close() }) }
	defer closeRL()
	// Shutting down must not wait for the next key press.
	stopAfter := context.AfterFunc(ctx, closeRL)
	defer stopAfter()

	// A background job's failure may be reported while the prompt is shown;
	// readline's writer redraws the prompt after it.
	r.makeInteractive(ctx, rl.Stderr())
	defer r.jobs.close()

	if _, err := io.WriteString(r.out, welcome+pasteModeOn); err != nil {
		return err
	}
	defer io.WriteString(opts.Out, pasteModeOff)
	err = r.interactiveLoop(ctx, &readlineReader{rl: rl, paste: paste, echo: rl.Stdout()})
	// Ended by SIGTERM (or a failing terminal), nobody confirmed: the jobs
	// still running are stopped cleanly all the same, and reported.
	r.stopRunning()
	return err
}

// makeInteractive switches r to REPL behaviour. Output from the loop and
// from the background job watchers (written to asyncErr) is serialized.
func (r *runner) makeInteractive(ctx context.Context, asyncErr io.Writer) {
	mu := new(sync.Mutex)
	r.interactive = true
	r.out = lockedWriter{mu: mu, w: r.out}
	r.errOut = lockedWriter{mu: mu, w: r.errOut}
	r.jobs = newJobWatcher(ctx, lockedWriter{mu: mu, w: asyncErr})
}

func (o Options) interruptSource() func() (<-chan os.Signal, func()) {
	if o.Interrupt != nil {
		return func() (<-chan os.Signal, func()) { return o.Interrupt, func() {} }
	}
	return func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		return ch, func() { signal.Stop(ch) }
	}
}

// lineReader is the line editor as the interactive loop uses it.
type lineReader interface {
	// readLine returns one line without its newline; errLineInterrupted
	// when the user pressed Ctrl-C, io.EOF on Ctrl-D at an empty line.
	readLine(prompt string) (string, error)
	saveHistory(entry string)
}

var errLineInterrupted = errors.New("input interrupted")

// readlineReader reads lines from the line editor, and pasted text from
// paste (see pasteReader): a paste's lines are shown once and returned one
// by one; its unfinished last line is put into the editor to go on with.
type readlineReader struct {
	rl    *readline.Instance
	paste *pasteReader
	echo  io.Writer
	queue []string // pasted lines not yet returned
	carry string   // the unfinished pasted line, for the editor
	taken int64    // pastes taken so far
}

func (r *readlineReader) readLine(prompt string) (string, error) {
	if len(r.queue) > 0 {
		line := r.queue[0]
		r.queue = r.queue[1:]
		return line, nil
	}
	for {
		r.rl.SetPrompt(prompt)
		line, err := r.rl.ReadlineWithDefault(r.carry)
		r.carry = ""
		if errors.Is(err, readline.ErrInterrupt) {
			return "", errLineInterrupted
		}
		if err != nil || r.paste == nil {
			return line, err
		}
		marks := r.paste.marks.Load()
		if marks == r.taken {
			return line, nil // ended by the user's Enter
		}
		r.taken = marks
		text, ok := r.paste.take()
		if !ok {
			return line, nil // a Ctrl-J typed by the user
		}
		complete, rest := pastedLines(line, text)
		var b strings.Builder
		if line == "" {
			// The editor showed an empty prompt line for the carriage
			// return that ended the paste: write over it.
			b.WriteString("\x1b[1A\r\x1b[K")
		}
		for i, l := range complete {
			if i == 0 {
				b.WriteString(prompt)
			} else {
				b.WriteString(promptMore)
			}
			b.WriteString(l)
			b.WriteString("\r\n")
		}
		if _, err := io.WriteString(r.echo, b.String()); err != nil {
			return "", err
		}
		r.carry = rest
		if len(complete) == 0 {
			continue // the paste goes on the current line
		}
		r.queue = complete[1:]
		return complete[0], nil
	}
}

func (r *readlineReader) saveHistory(entry string) { _ = r.rl.SaveHistory(entry) }

// interactiveLoop reads lines until a statement is complete (a ';' outside
// strings and comments), runs it and prints a blank line, like the SQL
// client. Failures are reported and the loop goes on.
func (r *runner) interactiveLoop(ctx context.Context, lr lineReader) error {
	pending := ""
	for {
		if ctx.Err() != nil {
			return nil
		}
		prompt := promptMain
		if pending != "" {
			prompt = promptMore
		}
		line, err := lr.readLine(prompt)
		switch {
		case errors.Is(err, errLineInterrupted):
			pending = ""
			continue
		case errors.Is(err, io.EOF):
			if r.confirmQuit(ctx, lr) {
				return nil
			}
			pending = ""
			continue
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading input: %w", err)
		}
		if pending == "" {
			// A lone "quit" or "exit" without ';' is forgiven.
			if cmd, ok := clientCommand(line); ok && (cmd == "QUIT" || cmd == "EXIT") {
				if r.confirmQuit(ctx, lr) {
					return nil
				}
				continue
			}
		}
		started := pending != ""
		pending += line + "\n"
		if started && !strings.Contains(line, ";") {
			// Only a ';' can end the statement: rescanning the whole
			// statement at every line made a long paste quadratic.
			continue
		}
		complete, rest := parser.SplitStatements(pending)
		if len(complete) == 0 {
			if rest == "" {
				pending = ""
			}
			continue
		}
		lr.saveHistory(historyEntry(pending[:len(pending)-len(rest)]))
		pending = rest
		for _, text := range complete {
			// Positions in errors are relative to the statement, as in Flink.
			s, _ := r.run(ctx, located{text: text, line: 1, col: 1})
			if s == stepQuit {
				if r.confirmQuit(ctx, lr) {
					return nil
				}
				pending = ""
				break
			}
			if _, err := io.WriteString(r.out, "\n"); err != nil {
				return err
			}
		}
	}
}

// confirmQuit is asked before the REPL ends on QUIT;, EXIT; or Ctrl-D. The
// INSERT jobs still running live in this process and cannot outlive it, so
// the user is told which they are and what quitting does to them, and
// confirms; they are then stopped with a final checkpoint, never killed
// silently. Without running jobs it returns true at once. Ctrl-D at the
// question counts as yes (the input is gone), Ctrl-C as no.
func (r *runner) confirmQuit(ctx context.Context, lr lineReader) bool {
	jobs := r.jobs.runningJobs()
	if len(jobs) == 0 || ctx.Err() != nil {
		// Ended by SIGTERM (the closed editor reads as Ctrl-D): nobody is
		// there to answer, and the closed editor would never return.
		// runREPL stops the jobs cleanly.
		return true
	}
	var b strings.Builder
	if len(jobs) == 1 {
		b.WriteString("[WARN] 1 INSERT job is still running:\n")
	} else {
		fmt.Fprintf(&b, "[WARN] %d INSERT jobs are still running:\n", len(jobs))
	}
	for _, j := range jobs {
		fmt.Fprintf(&b, "  %s\n", j.id)
	}
	b.WriteString("They run inside this shell and cannot outlive it. Quitting stops them: their sources stop reading,\n" +
		"and a final checkpoint commits their output of everything read so far (with checkpointing on, running the\n" +
		"pipeline again resumes from that checkpoint; with it off, they end as at the end of their input).\n")
	if _, err := io.WriteString(r.out, b.String()); err != nil {
		return true
	}
	for {
		answer, err := lr.readLine("Stop them and quit? (y/N) ")
		switch {
		case errors.Is(err, errLineInterrupted):
			return false
		case err != nil: // Ctrl-D, or the terminal is gone: nobody can answer
			if _, werr := io.WriteString(r.out, "\n"); werr != nil {
				return true
			}
		default:
			switch strings.ToLower(strings.TrimSpace(answer)) {
			case "y", "yes":
			case "", "n", "no":
				_ = r.info("Nothing was stopped.")
				return false
			default:
				continue
			}
		}
		r.stopRunning()
		return true
	}
}

// stopRunning stops the jobs still running with a final checkpoint, one
// after the other, reporting each.
func (r *runner) stopRunning() {
	for _, j := range r.jobs.runningJobs() {
		_ = r.stopClean(j)
		r.jobs.forget(j)
	}
}

// historyEntry turns the text of one or more statements into one history line.
func historyEntry(text string) string {
	return strings.Join(strings.Fields(text), " ")
}

// pipeLoop runs statements read from a non-terminal input as a script,
// statement by statement as their text arrives.
func (r *runner) pipeLoop(ctx context.Context, in io.Reader) error {
	sp := newSplitter()
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if done, rerr := r.runAll(ctx, sp.feed(line)); done {
				return rerr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading statements: %w", err)
		}
	}
	if st, ok := sp.flush(); ok {
		if done, err := r.runAll(ctx, []located{st}); done {
			return err
		}
	}
	return r.closeScript()
}

// completer offers SQL keywords and the session's completions for the word
// before the cursor.
type completer struct {
	be       backend
	keywords []string
}

func newCompleter(be backend) *completer { return &completer{be: be, keywords: sqlKeywords} }

// Do implements readline.AutoCompleter.
func (c *completer) Do(line []rune, pos int) (newLine [][]rune, length int) {
	if pos > len(line) {
		pos = len(line)
	}
	start := pos
	for start > 0 && isWordRune(line[start-1]) {
		start--
	}
	prefix := string(line[start:pos])
	if prefix == "" {
		return nil, 0
	}
	lowerInput := strings.ToLower(prefix) == prefix
	seen := map[string]bool{}
	var out [][]rune
	add := func(word string) {
		if seen[word] || len(word) <= len(prefix) || !strings.EqualFold(word[:len(prefix)], prefix) {
			return
		}
		seen[word] = true
		suffix := word[len(prefix):]
		if lowerInput && word == strings.ToUpper(word) {
			suffix = strings.ToLower(suffix) // keywords follow the case being typed
		}
		out = append(out, []rune(suffix))
	}
	session := c.be.completions()
	words := make([]string, 0, len(session)+len(c.keywords))
	words = append(append(words, session...), c.keywords...)
	sort.Strings(words)
	known := make(map[string]bool, len(words))
	for _, w := range words {
		known[w] = true
	}
	qualifying := strings.ContainsRune(prefix, '.')
	for _, w := range words {
		// "orders.amount" is offered once "orders." is typed; "ord" offers
		// the table, not every one of its columns. Option keys, whose first
		// part is no table, are offered from their first letter.
		if dot := strings.IndexByte(w, '.'); dot > 0 && !qualifying && known[w[:dot]] {
			continue
		}
		add(w)
	}
	return out, len([]rune(prefix))
}

func isWordRune(r rune) bool {
	return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

var sqlKeywords = strings.Fields(`
ADD ALL ALTER AND ANY ARRAY AS ASC AVG BEGIN BETWEEN BIGINT BINARY BOOLEAN BOTH BY BYTES
CASCADE CASE CAST CATALOG CATALOGS CEIL CHANGELOG_MODE CHAR CLEAR COALESCE COLUMNS COMMENT
COMPUTED COUNT CREATE CROSS CUMULATE CURRENT CURRENT_DATE CURRENT_TIMESTAMP DATABASE DATABASES
DATE DAY DECIMAL DESC DESCRIBE DESCRIPTOR DISTINCT DOUBLE DRAIN DROP ELSE END ENFORCED ESCAPE
EXCEPT EXECUTE EXISTS EXIT EXPLAIN EXTENDED EXTRACT FALSE FILTER FIRST FLOAT FLOOR FOR FROM
FULL FUNCTION FUNCTIONS GROUP HAVING HELP HOP HOUR IF IN INNER INSERT INT INTEGER INTERSECT
INTERVAL INTO IS JOBS JOIN KEY LAG LAST LATERAL LEAD LEFT LIKE LIMIT LOCALTIMESTAMP MAP MAX
METADATA MIN MINUTE MONTH NOT NULL NULLS OFFSET ON OR ORDER OUTER OVER OVERWRITE PARTITION
PARTITIONED PLAN PRIMARY PROCTIME QUIT RANGE RESET RIGHT ROW ROWS ROW_NUMBER SAVEPOINT SECOND
SELECT SESSION SET SHOW SMALLINT STATEMENT STOP STRING SUM SYSTEM_TIME TABLE TABLES TEMPORARY
THEN TIME TIMESTAMP TIMESTAMP_LTZ TINYINT TO TRUE TUMBLE UNION UNNEST UPDATE USE VALUES VARCHAR
VIEW VIEWS VIRTUAL WATERMARK WHEN WHERE WINDOW WITH YEAR
`)
