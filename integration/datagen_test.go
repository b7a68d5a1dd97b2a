package integration_test

import (
	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/datagen"
	"github.com/flinksql/flinksql/exec"
)

// wrappedDatagen is the datagen connector under another name whose readers
// are wrapped by wrap: the tests' sources that count rows or inject a
// failure.
type wrappedDatagen struct {
	*datagen.Factory
	name string
	wrap func(exec.CheckpointedReader) exec.SourceReader
}

func newWrappedDatagen(name string, wrap func(exec.CheckpointedReader) exec.SourceReader) *wrappedDatagen {
	return &wrappedDatagen{Factory: datagen.NewFactory(), name: name, wrap: wrap}
}

func (f *wrappedDatagen) Identifier() string { return f.name }

func (f *wrappedDatagen) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	inner := *tc
	inner.Options = map[string]string{}
	for k, v := range tc.Options {
		inner.Options[k] = v
	}
	inner.Options["connector"] = "datagen"
	src, err := f.Factory.CreateSource(&inner)
	if err != nil {
		return nil, err
	}
	return &wrappedSource{ScanSource: src, wrap: f.wrap}, nil
}

type wrappedSource struct {
	connectors.ScanSource
	wrap func(exec.CheckpointedReader) exec.SourceReader
}

func (s *wrappedSource) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r, err := s.ScanSource.NewReader(subtask, parallelism)
	if err != nil {
		return nil, err
	}
	return s.wrap(r.(exec.CheckpointedReader)), nil
}
