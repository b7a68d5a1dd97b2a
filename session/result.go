package session

import (
	"context"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Result is what one statement produced. Exactly one of Message, Table, Text,
// Query and Job is set.
type Result struct {
	// Message is a one-line outcome such as "Execute statement succeeded.".
	Message string
	// Table is a small static result (SHOW …, DESCRIBE, SET).
	Table *StaticTable
	// Text is preformatted output (EXPLAIN, SHOW CREATE TABLE).
	Text string
	// Query streams the changes of a SELECT.
	Query *QueryResult
	// Job is a submitted INSERT or STATEMENT SET.
	Job *Job
}

// StaticTable is a fully materialized tabular result.
type StaticTable struct {
	Columns []string
	Rows    [][]string
}

// Change is one row of a query's changelog.
type Change struct {
	Kind types.RowKind
	Row  types.Row
}

// QueryResult is the running result of a SELECT. Its rows are produced by a
// job that runs until the input ends or Cancel is called.
type QueryResult struct {
	Schema types.Schema
	// Loc is the session time zone, for rendering TIMESTAMP_LTZ values.
	Loc *time.Location
	// ChangelogMode is what the query produces ([I] for append-only queries).
	ChangelogMode types.ChangelogMode
	// Batch: the query runs in batch mode ('batch', or 'automatic' over
	// bounded sources): its changes are final rows, all inserts.
	Batch  bool
	next   func(ctx context.Context) ([]Change, error)
	cancel func()
}

// Next blocks until more changes arrive and returns them. It returns io.EOF
// after the last change of a query that ended, the job's error if it failed,
// and ctx's error when ctx is done.
func (q *QueryResult) Next(ctx context.Context) ([]Change, error) { return q.next(ctx) }

// Cancel stops the query's job and releases it. It is safe to call more than once.
func (q *QueryResult) Cancel() { q.cancel() }

// Job is a running INSERT job.
type Job struct {
	ID        string
	Name      string
	wait      func(ctx context.Context) error
	stop      func()
	stopClean func(ctx context.Context) (string, error)
	done      <-chan struct{}
	progress  func() (read, remaining int64)
}

// Progress reports the rows the job's sources have read so far and, when
// every source subtask reads a bounded input that knows its size (datagen
// with 'number-of-rows' or a sequence), the rows still to read; remaining
// is -1 otherwise.
func (j *Job) Progress() (read, remaining int64) {
	if j.progress == nil {
		return 0, -1
	}
	return j.progress()
}

// sourceProgress sums the source vertices' rows read and remaining.
func sourceProgress(vms []exec.VertexMetrics) (read, remaining int64) {
	known := false
	for _, vm := range vms {
		read += vm.RowsRead
		for _, n := range vm.SourceRemaining {
			if n < 0 {
				remaining = -1
			} else if remaining >= 0 {
				remaining += n
			}
			known = true
		}
	}
	if !known {
		return read, -1
	}
	return read, remaining
}

// Done is closed when the job has ended (finished, failed or stopped).
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait blocks until the job ends (bounded input) or ctx is done, and returns
// the job's error.
func (j *Job) Wait(ctx context.Context) error { return j.wait(ctx) }

// Stop cancels the job and waits for it to end.
func (j *Job) Stop() { j.stop() }

// StopClean stops the job without losing what it read and waits for it to
// end: its sources stop reading; with checkpointing a final checkpoint
// commits the output of everything read (two-phase-commit sinks included)
// and is kept, so that running the pipeline again resumes from it; without
// checkpointing the job ends as at the end of its input. The text says what
// happened, for the user. An error means the job could not be stopped
// cleanly (it failed meanwhile) or ctx ended the wait.
func (j *Job) StopClean(ctx context.Context) (string, error) { return j.stopClean(ctx) }
