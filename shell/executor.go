package shell

import (
	"context"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Executor is what the shell needs from a SQL session.
type Executor interface {
	// ExecuteStatement runs one parsed statement. A SELECT comes back as a
	// running Result.Query and an INSERT as a running Result.Job.
	ExecuteStatement(ctx context.Context, stmt parser.Statement) (*session.Result, error)
	// Completions lists the words offered by tab completion (table and view
	// names, keywords).
	Completions() []string
	// Get returns the current value of a configuration option, "" when unset.
	Get(key string) string
}

// StatementError reports that a statement of a script failed. The failure
// has already been printed on the error writer in the SQL client's format,
// so a caller only has to exit with a non-zero status.
type StatementError struct {
	// Line and Column locate the statement's first character in the input.
	Line, Column int
	Err          error
}

func (e *StatementError) Error() string {
	return fmt.Sprintf("statement at line %d, column %d failed: %v", e.Line, e.Column, e.Err)
}

func (e *StatementError) Unwrap() error { return e.Err }

// backend is the runners' view of a session. It differs from Executor only
// in returning outcome, whose running parts sit behind interfaces: the
// session's QueryResult and Job cannot be built outside package session, and
// the tests need to supply their own.
type backend interface {
	execute(ctx context.Context, stmt parser.Statement) (*outcome, error)
	completions() []string
	get(key string) string
}

// outcome is one statement's result; at most one field is set.
type outcome struct {
	message string
	table   *session.StaticTable
	text    string
	query   *queryHandle
	job     *jobHandle
}

// changeStream is the running part of a SELECT (*session.QueryResult).
type changeStream interface {
	Next(ctx context.Context) ([]session.Change, error)
	Cancel()
}

type queryHandle struct {
	schema types.Schema
	loc    *time.Location
	stream changeStream
	// batch: the query ran in batch mode, also when the session's mode is
	// 'automatic' and the planner chose batch for bounded sources.
	batch bool
}

// runningJob is the running part of an INSERT (*session.Job).
type runningJob interface {
	Wait(ctx context.Context) error
	Stop()
	// StopClean stops the job without losing what it read (a final
	// checkpoint commits its output) and says what happened.
	StopClean(ctx context.Context) (string, error)
	// Done is closed when the job has ended.
	Done() <-chan struct{}
}

type jobHandle struct {
	id  string
	job runningJob
}

// executorBackend adapts an Executor.
type executorBackend struct{ ex Executor }

func (b executorBackend) execute(ctx context.Context, stmt parser.Statement) (*outcome, error) {
	res, err := b.ex.ExecuteStatement(ctx, stmt)
	if err != nil {
		return nil, err
	}
	return outcomeOf(res), nil
}

func (b executorBackend) completions() []string { return b.ex.Completions() }
func (b executorBackend) get(key string) string { return b.ex.Get(key) }

func outcomeOf(res *session.Result) *outcome {
	switch {
	case res == nil:
		return &outcome{}
	case res.Query != nil:
		return &outcome{query: &queryHandle{schema: res.Query.Schema, loc: res.Query.Loc, stream: res.Query, batch: res.Query.Batch}}
	case res.Job != nil:
		return &outcome{job: &jobHandle{id: res.Job.ID, job: res.Job}}
	case res.Table != nil:
		return &outcome{table: res.Table}
	case res.Text != "":
		return &outcome{text: res.Text}
	}
	return &outcome{message: res.Message}
}
