// Command flinksql runs Flink SQL pipelines: an interactive SQL shell by
// default, a .sql file with -f, or statements given with -e.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	_ "time/tzdata" // time zones work without the machine's zoneinfo

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/shell"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// setFlags collects repeated -D key=value options.
type setFlags map[string]string

func (s setFlags) String() string { return "" }
func (s setFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("expected key=value, got %q", v)
	}
	s[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "run the statements of a .sql `file` and exit")
	sqlText := fs.String("e", "", "run the given SQL `statements` and exit")
	history := fs.String("history", "", "REPL history `file` (default ~/.flinksql_history)")
	conf := setFlags{}
	fs.Var(conf, "D", "set a session option, as SET 'key' = 'value' (repeatable): -D parallelism.default=4")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  flinksql [-D key=value]... [-f file.sql | -e 'statements;']\n\nWithout -f or -e, flinksql opens an interactive SQL shell.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flinksql: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	sess, err := session.New(session.Options{Stdout: stdout, Stderr: stderr, Config: conf})
	if err != nil {
		fmt.Fprintf(stderr, "flinksql: %v\n", err)
		return 2
	}
	defer sess.Close()

	switch {
	case *file != "" || *sqlText != "":
		// SIGINT/SIGTERM stop the running statement cleanly.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if *file != "" {
			err = shell.RunFile(ctx, sess, *file, stdout, stderr)
		} else {
			err = shell.RunString(ctx, sess, *sqlText, stdout, stderr)
		}
		if err != nil {
			// Statement errors were printed by the shell with their position;
			// anything else (an unreadable file) is printed here.
			var se *shell.StatementError
			if !errors.As(err, &se) {
				fmt.Fprintf(stderr, "flinksql: %v\n", err)
			}
			return 1
		}
		return 0
	default:
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		hist := *history
		if hist == "" {
			if home, err := os.UserHomeDir(); err == nil {
				hist = filepath.Join(home, ".flinksql_history")
			}
		}
		err = shell.RunREPL(ctx, sess, shell.Options{In: stdin, Out: stdout, Err: stderr, HistoryFile: hist, Interactive: isTerminal(stdin)})
		if err != nil {
			var se *shell.StatementError
			if !errors.As(err, &se) {
				fmt.Fprintf(stderr, "flinksql: %v\n", err)
			}
			return 1
		}
		return 0
	}
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && shell.IsTerminal(f)
}
