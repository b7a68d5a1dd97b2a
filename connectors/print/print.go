// Package print owns the 'print' sink connector: every row is written as one
// line, Flink-style (+I[1, alice, 2024-01-01T00:00:01]), to standard output
// or standard error, prefixed with the print identifier and the subtask
// number as Flink's print sink does.
package print

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "print"

// Option keys.
const (
	OptPrintIdentifier = "print-identifier"
	OptStandardError   = "standard-error"
	OptSinkParallelism = "sink.parallelism"
)

// Factory creates print sinks writing to its two streams. Writes of all its
// sinks' subtasks to a stream are serialized, so lines never interleave.
type Factory struct {
	stdout, stderr lockedWriter
}

// lockedWriter is a stream and the lock that serializes writes to it.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// NewFactory returns a print factory writing to stdout and stderr. When both
// are the same writer they share one lock.
func NewFactory(stdout, stderr io.Writer) *Factory {
	outMu := &sync.Mutex{}
	errMu := outMu
	if stdout != stderr {
		errMu = &sync.Mutex{}
	}
	return &Factory{stdout: lockedWriter{outMu, stdout}, stderr: lockedWriter{errMu, stderr}}
}

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return nil }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string {
	return []string{OptPrintIdentifier, OptStandardError, OptSinkParallelism}
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	s := &Sink{out: f.stdout, identifier: opts.String(OptPrintIdentifier, ""), schema: tc.Physical}
	stdErr, err := opts.Bool(OptStandardError, false)
	if err != nil {
		return nil, err
	}
	if stdErr {
		s.out = f.stderr
	}
	if s.parallelism, err = opts.Int(OptSinkParallelism, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptSinkParallelism) && s.parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptSinkParallelism, s.parallelism)
	}
	return s, nil
}

// Sink is a configured print table.
type Sink struct {
	out         lockedWriter
	identifier  string
	parallelism int
	schema      types.Schema
}

// AcceptedChangelogMode implements connectors.Sink: every kind is printed.
func (s *Sink) AcceptedChangelogMode(requested types.ChangelogMode) types.ChangelogMode {
	return requested
}

// Parallelism implements connectors.Sink.
func (s *Sink) Parallelism(defaultParallelism int) int {
	if s.parallelism > 0 {
		return s.parallelism
	}
	return defaultParallelism
}

// WritableMetadata implements connectors.Sink.
func (s *Sink) WritableMetadata() map[string]types.Type { return nil }

// NewWriter implements connectors.Sink.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	return &writer{sink: s, prefix: Prefix(s.identifier, subtask, parallelism)}, nil
}

// Prefix returns what Flink's print sink puts before each row:
// "<identifier>:<subtask+1>> " with an identifier at parallelism > 1,
// "<identifier>> " at parallelism 1, "<subtask+1>> " without an identifier
// at parallelism > 1, and nothing without one at parallelism 1.
func Prefix(identifier string, subtask, parallelism int) string {
	p := identifier
	if parallelism > 1 {
		if p != "" {
			p += ":"
		}
		p += strconv.Itoa(subtask + 1)
	}
	if p != "" {
		p += "> "
	}
	return p
}

type writer struct {
	sink   *Sink
	prefix string
	buf    []byte
}

func (w *writer) Open(context.Context) error { return nil }

// Write formats the whole batch, then writes it with one locked call.
func (w *writer) Write(_ context.Context, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	buf := w.buf[:0]
	schema := w.sink.schema
	for i, row := range b.Rows {
		buf = append(buf, w.prefix...)
		buf = append(buf, b.Kinds[i].String()...)
		buf = append(buf, '[')
		for j, col := range schema {
			if j > 0 {
				buf = append(buf, ", "...)
			}
			buf = types.AppendJava(buf, row[j], col.Type)
		}
		buf = append(buf, "]\n"...)
	}
	w.buf = buf
	out := w.sink.out
	out.mu.Lock()
	_, err := out.w.Write(buf)
	out.mu.Unlock()
	if err != nil {
		return fmt.Errorf("print sink: %w", err)
	}
	return nil
}

func (w *writer) Finish(context.Context) error { return nil }

func (w *writer) Close() error { return nil }
