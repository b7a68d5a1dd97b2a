package values

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// The values sink materializes the changelog it receives, for tests: by the
// table's primary key when one is declared (an upsert table: +I/+U replace the
// key's row, -D removes it), otherwise as a multiset of rows (a retract
// table: +I/+U add a row, -U/-D remove an equal one). A change that cannot
// apply — retracting a row that is not there, deleting a missing key — fails
// the job, so a wrong changelog cannot pass unnoticed.

type results struct {
	mu     sync.Mutex
	tables map[string]*table
}

type table struct {
	keyed bool
	keys  map[string]int // primary key text -> index in rows
	rows  []types.Row    // current rows in the order they were first written
}

// Results returns the rows a values sink table currently holds, in the order
// their keys (or rows) were first written, and whether the table was written.
func (f *Factory) Results(tableName string) ([]types.Row, bool) {
	f.results.mu.Lock()
	defer f.results.mu.Unlock()
	t, ok := f.results.tables[tableName]
	if !ok {
		return nil, false
	}
	out := make([]types.Row, 0, len(t.rows))
	for _, r := range t.rows {
		if r != nil {
			out = append(out, r.Clone())
		}
	}
	return out, true
}

// Sink is a values sink table.
type Sink struct {
	name        string
	pk          []int
	schema      types.Schema
	store       *results
	parallelism int // 'sink.parallelism'; 0: the job's default
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	// A table read from 'data' may also be written: its source options are fine here.
	accepted := append(f.OptionalOptions(), connectors.WatermarkOptions...)
	if err := connectors.ValidateOptionKeys(tc, Identifier, nil, accepted); err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	parallelism, err := opts.Int(OptSinkParallelism, 0)
	if err != nil {
		return nil, err
	}
	if opts.Has(OptSinkParallelism) && parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptSinkParallelism, parallelism)
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("values table %s: the values connector has no metadata, but column '%s' declares METADATA", tc.Name, tc.Metadata[0].Name)
	}
	f.results.mu.Lock()
	// Every INSERT into the table starts it afresh.
	f.results.tables[tc.Name] = &table{keyed: len(tc.PrimaryKey) > 0, keys: map[string]int{}}
	f.results.mu.Unlock()
	return &Sink{name: tc.Name, pk: tc.PrimaryKey, schema: tc.Physical, store: f.results, parallelism: parallelism}, nil
}

// AcceptedChangelogMode: a keyed table takes an upsert stream, an unkeyed one
// a full retract stream.
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	if len(s.pk) > 0 {
		return types.Upsert
	}
	return types.Retract
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
	return &writer{sink: s}, nil
}

type writer struct {
	sink *Sink
}

func (w *writer) Open(context.Context) error   { return nil }
func (w *writer) Finish(context.Context) error { return nil }
func (w *writer) Close() error                 { return nil }

func (w *writer) Write(_ context.Context, b *types.Batch) error {
	st := w.sink.store
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.tables[w.sink.name]
	for i, r := range b.Rows {
		if err := t.apply(b.Kinds[i], r, w.sink.pk, w.sink.schema); err != nil {
			return fmt.Errorf("values sink %s: %w", w.sink.name, err)
		}
	}
	return nil
}

func (t *table) apply(kind types.RowKind, r types.Row, pk []int, schema types.Schema) error {
	if t.keyed {
		key := rowText(r, pk, schema)
		i, exists := t.keys[key]
		switch {
		case kind.IsAccumulate():
			if exists && t.rows[i] != nil {
				t.rows[i] = r.Clone()
			} else {
				t.keys[key] = len(t.rows)
				t.rows = append(t.rows, r.Clone())
			}
		case kind == types.Delete:
			if !exists || t.rows[i] == nil {
				return fmt.Errorf("%s%s deletes key %s, which is not in the table", kind, rowText(r, nil, schema), key)
			}
			t.rows[i] = nil
			delete(t.keys, key)
		}
		// -U is ignored in an upsert table: the +U that follows replaces the row.
		return nil
	}
	if kind.IsAccumulate() {
		t.rows = append(t.rows, r.Clone())
		return nil
	}
	for i := len(t.rows) - 1; i >= 0; i-- {
		if t.rows[i] != nil && types.RowsEqual(t.rows[i], r) {
			t.rows[i] = nil
			return nil
		}
	}
	return fmt.Errorf("%s%s retracts a row that is not in the table (tried to retract a value that wasn't inserted first)", kind, rowText(r, nil, schema))
}

// rowText renders the given columns of r (all when cols is nil) in SQL text,
// each quoted so distinct keys never render alike.
func rowText(r types.Row, cols []int, schema types.Schema) string {
	if cols == nil {
		cols = make([]int, len(r))
		for i := range cols {
			cols[i] = i
		}
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = types.FormatSQL(r[c], schema[c].Type, nil)
		if !r[c].IsNull() && schema[c].Type.IsString() {
			parts[i] = strconv.Quote(parts[i])
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
