// Package connectors owns the contract between the planner and the table
// connectors: factories found by the 'connector' option, the description of a
// table a factory receives, option validation with Flink's messages, and the
// registry that the session builds. Each connector lives in a subpackage.
package connectors

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// MetadataColumn is a METADATA column a table declares.
type MetadataColumn struct {
	Name    string // column name in the table
	Key     string // metadata key (FROM 'key', or the column name)
	Type    types.Type
	Virtual bool // VIRTUAL: read-only, not written by sinks
}

// TableContext describes a table to a factory.
type TableContext struct {
	// Name is the table's identifier as Flink prints it, e.g.
	// default_catalog.default_database.orders.
	Name string
	// ObjectName is the last part of Name (print-identifier defaults, paths).
	ObjectName string
	// Options are the table's WITH options.
	Options map[string]string
	// Physical are the physical columns in declared order.
	Physical types.Schema
	// Metadata are the METADATA columns the table declares.
	Metadata []MetadataColumn
	// PrimaryKey holds positions in Physical; empty when none is declared.
	PrimaryKey []int
	// PartitionKeys holds the PARTITIONED BY columns' positions in
	// Physical, in declared order; only a SupportsPartitioning factory
	// sees any.
	PartitionKeys []int
	// FileSystem are the session's s3.* options (s3.endpoint,
	// s3.path.style.access, s3.access-key, s3.secret-key, s3.region: the
	// settings the checkpoint storage uses), keyed as set.
	FileSystem map[string]string
	// Loc is the session time zone (table.local-time-zone).
	Loc *time.Location
	// Formats resolves 'format' / 'value.format' / 'key.format' options.
	Formats *formats.Registry
}

// Factory creates sources and/or sinks for one 'connector' identifier.
type Factory interface {
	Identifier() string
	// RequiredOptions and OptionalOptions list the option keys the connector
	// accepts ('connector' excluded). A '#' segment matches any one segment
	// (fields.#.kind). Options of the table's formats are validated by the
	// format factories, under their prefix.
	RequiredOptions() []string
	OptionalOptions() []string
}

// SourceFactory is a Factory that can read.
type SourceFactory interface {
	Factory
	CreateSource(tc *TableContext) (ScanSource, error)
}

// SinkFactory is a Factory that can write.
type SinkFactory interface {
	Factory
	CreateSink(tc *TableContext) (Sink, error)
}

// ScanSource is a table read by the engine.
type ScanSource interface {
	// Bounded reports whether the source ends by itself.
	Bounded() bool
	// ChangelogMode is what the source produces.
	ChangelogMode() types.ChangelogMode
	// Parallelism is the number of source subtasks, given the job's default;
	// a source with a fixed number of splits may use fewer.
	Parallelism(defaultParallelism int) int
	// ReadableMetadata maps the metadata keys the source can produce to their types.
	ReadableMetadata() map[string]types.Type
	// NewReader creates one subtask's reader. Its rows hold the physical
	// columns in order, followed by the table's metadata columns in declared order.
	NewReader(subtask, parallelism int) (exec.SourceReader, error)
}

// SkippingSource is a ScanSource that can leave out rows the filter right
// above its scan drops anyway, before it produces them. The planner offers
// each conjunct of that filter that keeps only rows whose read-row column
// holds one of a set of constants (column = constant, column IN (...), an
// OR of such equalities); the filter stays in the plan, so the source may
// use a hint or not, and one that uses it skips only rows whose column holds
// none of the values. As with a filter pushed into a source in Flink, the
// source's watermark then follows the rows it produces.
type SkippingSource interface {
	// SkipUnlessIn offers the hint and reports whether the source uses it.
	SkipUnlessIn(column int, values []types.Value) bool
}

// Sink is a table written by the engine.
type Sink interface {
	// AcceptedChangelogMode is what the sink consumes, given what the query
	// produces; the planner rejects a query whose mode is not contained in it.
	AcceptedChangelogMode(requested types.ChangelogMode) types.ChangelogMode
	// Parallelism of the sink, given the job's default (0 means the default).
	Parallelism(defaultParallelism int) int
	// WritableMetadata maps the metadata keys the sink can write to their types.
	WritableMetadata() map[string]types.Type
	// NewWriter creates one subtask's writer. Its rows hold the physical
	// columns in order, followed by the table's non-virtual metadata columns.
	NewWriter(subtask, parallelism int) (exec.SinkWriter, error)
}

// SupportsPartitioning is implemented by factories whose tables may be
// PARTITIONED BY (Flink's SupportsPartitioning); the planner refuses a
// partitioned table of any other connector, naming the table and the
// connector.
type SupportsPartitioning interface {
	Factory
	// SupportsPartitioning marks the factory; it is never called.
	SupportsPartitioning()
}

// KeyedWriters is implemented by sinks whose writers must each see all the
// changes of a primary key (equality deletes): with more than one writer,
// the planner routes rows to them by the primary key.
type KeyedWriters interface {
	Sink
	KeyedByPrimaryKey() bool
}

// CommittingSink is a Sink whose writers are exec.CommittableEmitters: the
// planner runs one committer after them, at parallelism 1, that receives
// every writer's committables ahead of each barrier and commits them when
// the checkpoint completes (Flink's writer and committer operators, as its
// Iceberg sink has them).
type CommittingSink interface {
	Sink
	// CommitterName names the committer operator in plans and metrics.
	CommitterName() string
	// NewCommitter creates the committer: an exec.TwoPhaseCommitWriter
	// whose rows are committables (exec.CommittablesOf).
	NewCommitter() (exec.SinkWriter, error)
}

// Overwritable is a Sink that INSERT OVERWRITE can write (Flink's
// SupportsOverwrite): after ApplyOverwrite the job's committed output
// replaces the table's existing data instead of adding to it.
type Overwritable interface {
	ApplyOverwrite() error
}

// Registry maps connector identifiers to factories. It is built once per
// process (see the builtin package) and read concurrently afterwards.
type Registry struct {
	factories map[string]Factory
	formats   *formats.Registry
}

// NewRegistry returns an empty registry that resolves formats through formats.
func NewRegistry(formats *formats.Registry) *Registry {
	return &Registry{factories: map[string]Factory{}, formats: formats}
}

// Register adds a factory; a second factory with the same identifier is a programming error.
func (r *Registry) Register(f Factory) {
	if _, dup := r.factories[f.Identifier()]; dup {
		panic("connectors: duplicate factory " + f.Identifier())
	}
	r.factories[f.Identifier()] = f
}

// Formats returns the format registry.
func (r *Registry) Formats() *formats.Registry { return r.formats }

// Identifiers returns the registered identifiers, sorted.
func (r *Registry) Identifiers() []string {
	ids := make([]string, 0, len(r.factories))
	for id := range r.factories {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the factory for identifier, or Flink's error naming the
// available identifiers.
func (r *Registry) Lookup(identifier string) (Factory, error) {
	if f, ok := r.factories[identifier]; ok {
		return f, nil
	}
	return nil, fmt.Errorf("Could not find any factory for identifier '%s' that implements 'DynamicTableFactory'.\n\nAvailable factory identifiers are:\n\n%s",
		identifier, strings.Join(r.Identifiers(), "\n"))
}
