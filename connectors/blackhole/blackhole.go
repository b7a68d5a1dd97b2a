// Package blackhole owns the 'blackhole' sink connector, which accepts every
// changelog mode and discards all rows (for benchmarks and dry runs).
package blackhole

import (
	"context"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "blackhole"

// Factory creates blackhole sinks.
type Factory struct{}

// NewFactory returns the blackhole factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return nil }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string { return nil }

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	return sink{}, nil
}

type sink struct{}

func (sink) AcceptedChangelogMode(requested types.ChangelogMode) types.ChangelogMode {
	return requested
}

func (sink) Parallelism(defaultParallelism int) int { return defaultParallelism }

func (sink) WritableMetadata() map[string]types.Type { return nil }

func (sink) NewWriter(int, int) (exec.SinkWriter, error) { return writer{}, nil }

type writer struct{}

func (writer) Open(context.Context) error                { return nil }
func (writer) Write(context.Context, *types.Batch) error { return nil }
func (writer) Finish(context.Context) error              { return nil }
func (writer) Close() error                              { return nil }
