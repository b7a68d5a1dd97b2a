package shell

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// fakeBackend records the statements it receives and answers with the
// outcome its handler picks; without a handler every statement succeeds
// with the default message.
type fakeBackend struct {
	mu       sync.Mutex
	executed []parser.Statement
	handle   func(ctx context.Context, stmt parser.Statement) (*outcome, error)
	config   map[string]string
	words    []string
}

func (f *fakeBackend) execute(ctx context.Context, stmt parser.Statement) (*outcome, error) {
	f.mu.Lock()
	f.executed = append(f.executed, stmt)
	f.mu.Unlock()
	if f.handle != nil {
		return f.handle(ctx, stmt)
	}
	return &outcome{message: msgSucceeded}, nil
}

func (f *fakeBackend) completions() []string { return f.words }
func (f *fakeBackend) get(key string) string { return f.config[key] }

func (f *fakeBackend) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.executed {
		out = append(out, s.Text())
	}
	return out
}

// fakeStream hands out its batches, then ends with end (io.EOF when nil),
// or, when block is set, calls onBlock and waits for ctx.
type fakeStream struct {
	batches   [][]session.Change
	end       error
	block     bool
	onBlock   func()
	cancelled int
}

func (s *fakeStream) Next(ctx context.Context) ([]session.Change, error) {
	if len(s.batches) > 0 {
		b := s.batches[0]
		s.batches = s.batches[1:]
		return b, nil
	}
	if s.block {
		if s.onBlock != nil {
			s.onBlock()
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.end != nil {
		return nil, s.end
	}
	return nil, io.EOF
}

func (s *fakeStream) Cancel() { s.cancelled++ }

// fakeJob ends with err at once, or, when block is set, calls onBlock and
// runs until ctx is done or it is stopped cleanly.
type fakeJob struct {
	mu       sync.Mutex
	err      error
	block    bool
	onBlock  func()
	stopped  int
	cleanly  int
	ended    chan struct{} // closed by StopClean; made lazily
	cleanErr error         // what StopClean fails with
}

func (j *fakeJob) endedCh() chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.ended == nil {
		j.ended = make(chan struct{})
	}
	return j.ended
}

func (j *fakeJob) Wait(ctx context.Context) error {
	if j.block {
		if j.onBlock != nil {
			j.onBlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-j.endedCh():
			return nil
		}
	}
	return j.err
}

func (j *fakeJob) Done() <-chan struct{} {
	if !j.block {
		c := make(chan struct{})
		close(c)
		return c
	}
	return j.endedCh()
}

func (j *fakeJob) StopClean(context.Context) (string, error) {
	ended := j.endedCh()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.cleanly++
	if j.cleanErr != nil {
		return "", j.cleanErr
	}
	select {
	case <-ended:
	default:
		close(ended)
	}
	return "Job stopped with a final checkpoint (fake).", nil
}

func (j *fakeJob) cleanStops() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.cleanly
}

func (j *fakeJob) Stop() {
	j.mu.Lock()
	j.stopped++
	j.mu.Unlock()
}

func (j *fakeJob) stops() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stopped
}

func queryOutcome(schema types.Schema, s *fakeStream) *outcome {
	return &outcome{query: &queryHandle{schema: schema, stream: s}}
}

func jobOutcome(id string, j *fakeJob) *outcome {
	return &outcome{job: &jobHandle{id: id, job: j}}
}

// rule answers the statements whose text starts with prefix.
type rule struct {
	prefix string
	answer func(ctx context.Context) (*outcome, error)
}

// byPrefix dispatches on the first matching rule; other statements succeed.
func byPrefix(rules ...rule) func(context.Context, parser.Statement) (*outcome, error) {
	return func(ctx context.Context, stmt parser.Statement) (*outcome, error) {
		for _, r := range rules {
			if strings.HasPrefix(stmt.Text(), r.prefix) {
				return r.answer(ctx)
			}
		}
		return &outcome{message: msgSucceeded}, nil
	}
}

func fails(msg string) func(context.Context) (*outcome, error) {
	return func(context.Context) (*outcome, error) { return nil, errors.New(msg) }
}

func gives(o *outcome) func(context.Context) (*outcome, error) {
	return func(context.Context) (*outcome, error) { return o, nil }
}

// syncBuffer is a strings.Builder safe for the REPL's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tableauConfig selects the tableau result mode, for tests of the
// streaming output (the default is Flink's, 'table').
func tableauConfig() map[string]string { return map[string]string{resultModeKey: "tableau"} }
