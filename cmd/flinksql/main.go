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

	"github.com/flinksql/flinksql/broker"
	"github.com/flinksql/flinksql/internal/gcpolicy"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/shell"
	"github.com/flinksql/flinksql/units"
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
	if len(args) > 0 {
		// Subcommands; each has its own flags.
		switch args[0] {
		case "broker":
			return runBroker(args[1:], stdout, stderr)
		case "checkpoints":
			return runCheckpoints(args[1:], stdout, stderr)
		case "savepoints":
			return runSavepoints(args[1:], stdout, stderr)
		case "stop":
			return runStop(args[1:], stdout, stderr)
		case "savepoint":
			return runSavepoint(args[1:], stdout, stderr)
		case "jobs":
			return runJobs(args[1:], stdout, stderr)
		case "kafka-transactions":
			return runKafkaTransactions(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("flinksql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "run the statements of a .sql `file` and exit")
	sqlText := fs.String("e", "", "run the given SQL `statements` and exit")
	history := fs.String("history", "", "REPL history `file` (default ~/.flinksql_history)")
	initFile := fs.String("i", "", "run the statements of an initialization `file` (SET, CREATE, USE; no queries or INSERTs) first, as Flink's -i")
	showVersion := fs.Bool("version", false, "print the version and exit")
	conf := setFlags{}
	fs.Var(conf, "D", "set a session option, as SET 'key' = 'value' (repeatable): -D parallelism.default=4")
	var embedded embeddedBrokerFlag
	fs.Var(&embedded, "embedded-broker", "start a Kafka-protocol broker in this process for the session, on "+broker.DefaultListen+
		"\nor on the address given as --embedded-broker=host:port (port 0 picks a free one); it stops at exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  flinksql [-D key=value]... [--embedded-broker[=host:port]] [-i init.sql] [-f file.sql | -e 'statements;']\n"+
			"  flinksql --version\n"+
			"  flinksql broker [--listen host:port] [--partitions N] [--data-dir DIR]\n"+
			"  flinksql checkpoints DIR [--job NAME] [--verify]\n"+
			"  flinksql savepoints PATH [--verify] [--against job.sql]\n"+
			"  flinksql stop [--savepoint DIR] [--drain] [--timeout DURATION] JOB\n"+
			"  flinksql savepoint [--dir DIR] [--timeout DURATION] JOB\n"+
			"  flinksql jobs\n"+
			"  flinksql kafka-transactions --bootstrap HOST:PORT --prefix P [--abort]\n\n"+
			"Without -f or -e, flinksql opens an interactive SQL shell. 'flinksql broker' runs a\n"+
			"standalone Kafka-protocol broker (see 'flinksql broker -h').\n\nFlags:\n")
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
	if *showVersion {
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	if embedded.enabled {
		b, err := broker.Start(broker.Config{Listen: embedded.addr})
		if err != nil {
			fmt.Fprintf(stderr, "flinksql: --embedded-broker: %v\n", err)
			return 1
		}
		// Deferred before the session's Close, so it runs after it: jobs
		// still writing to Kafka finish before the broker goes away.
		defer b.Close()
		fmt.Fprintf(stderr, "Kafka broker listening on %s\n", b.Addr())
	}
	// Crash drills arm a fault-injection point through the environment;
	// the process reads it here, and the session only gets the hook.
	fault, err := session.ParseFault(os.Getenv(session.FaultEnv), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql: %v\n", err)
		return 2
	}
	interactive := *file == "" && *sqlText == ""
	logger, logPath, closeLog, err := openLog(conf[options.LogFile.Key], interactive, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql: %v\n", err)
		return 2
	}
	defer closeLog()
	sess, err := session.New(session.Options{Stdout: stdout, Stderr: stderr, Config: conf, Fault: fault, Log: logger,
		StateMemory: stateMemoryLimit(os.Getenv)})
	if err != nil {
		fmt.Fprintf(stderr, "flinksql: %v\n", err)
		return 2
	}
	defer sess.Close()
	if os.Getenv("GOGC") == "" { // GOGC set: the user's choice stands
		headroom, _ := units.ParseMemorySize(sess.Get(options.GCHeapHeadroom.Key)) // checked when set
		defer gcpolicy.Start(headroom).Stop()
	}
	// Deferred after the session's Close, so it runs first: no request
	// reaches a closing session.
	defer startControl(sess.Jobs(), stderr)()
	stopMonitor, err := startMonitor(sess, interactive, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql: %v\n", err)
		return 1
	}
	defer stopMonitor()
	if *initFile != "" {
		if err := runInit(context.Background(), sess, *initFile, stderr); err != nil {
			var se *shell.StatementError
			if !errors.As(err, &se) {
				fmt.Fprintf(stderr, "flinksql: %v\n", err)
			}
			return 1
		}
	}

	switch {
	case *file != "" || *sqlText != "":
		// SIGINT/SIGTERM stop the running statement cleanly.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		// The first signal stops the running job cleanly (a final
		// checkpoint); a second one ends the process at once.
		context.AfterFunc(ctx, stop)
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
		// SIGTERM, and SIGHUP when the terminal goes away, end the shell;
		// its running jobs are then stopped cleanly, not killed.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		context.AfterFunc(ctx, stop) // a second signal ends the process at once
		if logPath != "" {
			fmt.Fprintf(stderr, "Log: %s\n", logPath)
		}
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

// stateMemoryLimit returns what sets the process's Go memory limit from
// the state budgets of the running jobs (gcpolicy.Limiter): while only
// rocksdb jobs run, the limit is gcpolicy.LimitAllowance plus the sum of
// their budgets, so that the collector keeps the heap near its live part
// instead of letting it double. It returns nil when GOMEMLIMIT is set: the
// user's limit stands (the runtime applied it at start).
func stateMemoryLimit(getenv func(string) string) func(budget int64) (release func()) {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return gcpolicy.NewLimiter(gcpolicy.LimitAllowance).Reserve
}

// embeddedBrokerFlag is --embedded-broker with an optional address: as a
// boolean flag it may stand alone, or carry the address after '='.
type embeddedBrokerFlag struct {
	enabled bool
	addr    string
}

func (f *embeddedBrokerFlag) String() string {
	if f == nil || !f.enabled {
		return ""
	}
	return f.addr
}

func (f *embeddedBrokerFlag) Set(v string) error {
	switch v {
	case "true":
		f.enabled, f.addr = true, broker.DefaultListen
	case "false":
		f.enabled, f.addr = false, ""
	default:
		f.enabled, f.addr = true, v
	}
	return nil
}

// IsBoolFlag lets the flag package accept --embedded-broker without a value.
func (*embeddedBrokerFlag) IsBoolFlag() bool { return true }

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && shell.IsTerminal(f)
}
