package shell

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// RunFile runs the statements of a SQL script file one after another, as
// Flink's 'sql-client.sh -f' does, printing results on out and failures on
// errOut.
//
// The run stops at the first failing statement and returns a
// *StatementError (already reported on errOut). An INSERT is waited for
// until its job finishes. When ctx is cancelled the running query or job is
// stopped, the remaining statements are skipped and RunFile returns nil.
// Errors reading the file are returned without being printed.
func RunFile(ctx context.Context, ex Executor, path string, out, errOut io.Writer) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading SQL script: %w", err)
	}
	return RunString(ctx, ex, string(src), out, errOut)
}

// RunString runs the statements of sql (the -e option) like RunFile. The
// last statement may omit its ';'.
func RunString(ctx context.Context, ex Executor, sql string, out, errOut io.Writer) error {
	return runScript(ctx, executorBackend{ex}, sql, out, errOut)
}

func runScript(ctx context.Context, be backend, sql string, out, errOut io.Writer) error {
	r := &runner{be: be, out: out, errOut: errOut}
	if f, ok := errOut.(*os.File); ok && IsTerminal(f) {
		r.progressTicks = func() (<-chan time.Time, func()) {
			t := time.NewTicker(progressInterval)
			return t.C, t.Stop
		}
	}
	return r.runScript(ctx, sql)
}

// progressInterval is how often a script's running INSERT updates its
// progress line on a terminal.
const progressInterval = time.Second
