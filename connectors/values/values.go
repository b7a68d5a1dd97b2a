// Package values owns the 'values' source connector, a test and demo source
// whose rows are written in the table's 'data' option: one row per line,
// fields separated by commas with CSV quoting, an optional row-kind prefix
// (+I, -U, +U, -D) for changelog data. All rows are parsed and checked when
// the source is created, so a bad value fails before the job starts. The
// source always runs with parallelism 1 (one split), which keeps the order of
// its rows, and so tests, deterministic.
//
// Field syntax: an unquoted field is trimmed of surrounding blanks; an empty
// unquoted field or the word NULL (any case) is NULL; a quoted field ("…",
// with "" for a quote) is taken literally, so "" is the empty string and
// "NULL" the string NULL. Values are parsed per column type: TRUE/FALSE,
// integers, decimals and floats, strings, x'hex' or plain text for binary
// columns, 'yyyy-MM-dd' dates, 'HH:mm:ss[.fff]' times, and
// 'yyyy-MM-dd HH:mm:ss[.fffffffff]' timestamps (TIMESTAMP_LTZ text is read
// in the session time zone). ARRAY, MAP and ROW values are written as
// Flink prints them: [1, 2], {a=1, b=2}, (1, x) (see nested.go). Interval
// columns are not supported.
package values

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "values"

// Option keys.
const (
	OptData            = "data"
	OptChangelogMode   = "changelog-mode"
	OptBounded         = "bounded"
	OptSinkParallelism = "sink.parallelism"
)

// Factory creates values sources and sinks. A factory keeps what its sinks
// wrote, by table, for the session that owns it.
type Factory struct {
	results *results
}

// NewFactory returns the values factory.
func NewFactory() *Factory { return &Factory{results: &results{tables: map[string]*table{}}} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
// 'data' is required for reading only; a sink table needs no options.
func (*Factory) RequiredOptions() []string { return nil }

// OptionalOptions implements connectors.Factory.
// 'sink.parallelism' acts when the table is written; a table read from
// 'data' may also be written, so both directions accept every option.
func (*Factory) OptionalOptions() []string {
	return append([]string{OptData, OptChangelogMode, OptBounded, OptSinkParallelism, OptAsync}, connectors.LookupCacheOptions...)
}

// Source is a configured values table.
type Source struct {
	rows    []types.Row
	kinds   []types.RowKind
	width   int
	mode    types.ChangelogMode
	bounded bool

	// Lookup joins (lookup.go).
	name, modeText string
	cache          lookup.Cache
	async          bool
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	name := tc.ObjectName
	if name == "" {
		name = tc.Name
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("values table %s: the values connector has no metadata, but column '%s' declares METADATA",
			name, tc.Metadata[0].Name)
	}
	opts := connectors.Options(tc.Options)
	s := &Source{width: len(tc.Physical)}
	var err error
	if s.bounded, err = opts.Bool(OptBounded, true); err != nil {
		return nil, err
	}
	if s.mode, err = parseChangelogMode(opts.String(OptChangelogMode, "I")); err != nil {
		return nil, err
	}
	s.name, s.modeText = name, opts.String(OptChangelogMode, "I")
	if s.cache, err = connectors.LookupCacheFrom(tc, lookup.CacheNone, lookup.CacheNone, lookup.CachePartial, lookup.CacheFull); err != nil {
		return nil, err
	}
	if s.async, err = opts.Bool(OptAsync, false); err != nil {
		return nil, err
	}
	for _, c := range tc.Physical {
		if !supported(c.Type) {
			return nil, fmt.Errorf("values table %s, column %s: type %s is not supported by the values connector", name, c.Name, c.Type)
		}
	}
	if _, ok := tc.Options[OptData]; !ok {
		return nil, fmt.Errorf("One or more required options are missing.\n\nMissing required options are:\n\n%s", OptData)
	}
	p := &parser{table: name, schema: tc.Physical, loc: tc.Loc, mode: s.mode, modeText: opts.String(OptChangelogMode, "I")}
	if s.rows, s.kinds, err = p.parseData(tc.Options[OptData]); err != nil {
		return nil, err
	}
	return s, nil
}

func parseChangelogMode(text string) (types.ChangelogMode, error) {
	var m types.ChangelogMode
	for _, part := range strings.Split(text, ",") {
		switch strings.ToUpper(strings.TrimSpace(part)) {
		case "I":
			m.Insert = true
		case "UB":
			m.UpdateBefore = true
		case "UA":
			m.UpdateAfter = true
		case "D":
			m.Delete = true
		default:
			return m, fmt.Errorf("Invalid value for option '%s'. Expected a comma-separated list of [I, UB, UA, D], but was: %s", OptChangelogMode, text)
		}
	}
	return m, nil
}

func supported(t types.Type) bool {
	switch t.Root {
	case types.RootIntervalYearMonth, types.RootIntervalDayTime, types.RootSymbol, types.RootNull:
		return false
	case types.RootArray, types.RootMultiset:
		return t.Elem != nil && supported(*t.Elem)
	case types.RootMap:
		return t.Elem != nil && t.Value != nil && supported(*t.Elem) && supported(*t.Value)
	case types.RootRow:
		for _, f := range t.Fields {
			if !supported(f.Type) {
				return false
			}
		}
	}
	return true
}

// Bounded implements connectors.ScanSource.
func (s *Source) Bounded() bool { return s.bounded }

// ChangelogMode implements connectors.ScanSource.
func (s *Source) ChangelogMode() types.ChangelogMode { return s.mode }

// Parallelism implements connectors.ScanSource: always 1.
func (s *Source) Parallelism(int) int { return 1 }

// ReadableMetadata implements connectors.ScanSource.
func (s *Source) ReadableMetadata() map[string]types.Type { return nil }

// NewReader implements connectors.ScanSource. Only subtask 0 holds the rows;
// should a caller ignore Parallelism, the other subtasks end at once.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r := &reader{src: s, bounded: s.bounded}
	if subtask != 0 {
		r.next = len(s.rows)
		r.bounded = true
	}
	return r, nil
}

// Rows returns the parsed rows and their kinds (for tests and EXPLAIN).
func (s *Source) Rows() ([]types.Row, []types.RowKind) { return s.rows, s.kinds }

type reader struct {
	src     *Source
	next    int
	bounded bool
}

func (r *reader) Open(context.Context) error { return nil }

func (r *reader) NumSplits() int { return 1 }

// Read implements exec.SourceReader: the rows in order, then End for a
// bounded table, or, for an unbounded one, nothing until ctx is done.
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	rows := r.src.rows
	if r.next < len(rows) {
		n := min(len(rows)-r.next, max(b.Cap()-b.Len(), 1))
		for i := r.next; i < r.next+n; i++ {
			b.AppendRow(r.src.kinds[i], rows[i])
		}
		r.next += n
		res := exec.ReadResult{Split: 0}
		if r.next == len(rows) && r.bounded {
			res.SplitDone, res.End = true, true
		}
		return res, nil
	}
	if r.bounded {
		return exec.ReadResult{Split: -1, End: true}, nil
	}
	<-ctx.Done()
	return exec.ReadResult{Split: -1}, nil
}

func (r *reader) Close() error { return nil }

// SnapshotPosition implements exec.CheckpointedReader: the index of the next
// row to emit.
func (r *reader) SnapshotPosition() ([]byte, error) {
	return binary.AppendUvarint(nil, uint64(r.next)), nil
}

// RestorePosition implements exec.CheckpointedReader: reading resumes at the
// row after the last one emitted before the checkpoint.
func (r *reader) RestorePosition(pos []byte) error {
	next, n := binary.Uvarint(pos)
	if n <= 0 || n != len(pos) {
		return fmt.Errorf("values source: bad checkpointed position %x", pos)
	}
	if next > uint64(len(r.src.rows)) {
		return fmt.Errorf("values source: checkpointed position %d is past the %d rows of the table", next, len(r.src.rows))
	}
	r.next = max(r.next, int(next))
	return nil
}

var _ exec.CheckpointedReader = (*reader)(nil)
