// Package postgrescdc owns the 'postgres-cdc' table connector (Flink CDC's
// Postgres CDC connector, with its option names), built on PostgreSQL's
// logical replication with the pgoutput plugin through jackc/pglogrepl:
//
//   - A new job (scan.startup.mode = 'initial') creates the replication
//     slot with an exported snapshot, reads the matched tables in one
//     REPEATABLE READ transaction that uses that snapshot, and then streams
//     the slot from its consistent point, so the snapshot and the stream
//     meet exactly. While the snapshot is read, checkpoints are held (as
//     in Flink CDC's non-incremental snapshot, where a checkpoint waits for
//     the snapshot to end); 'latest-offset' skips the snapshot. With
//     'scan.incremental.snapshot.enabled' = 'true' the snapshot is read in
//     chunks, in parallel, checkpointed per chunk (incremental.go).
//   - The reader's position is the end LSN of the last transaction it
//     emitted completely plus the number of changes of the next one already
//     emitted; it is acknowledged to the slot (standby status update, flush
//     LSN) only when the checkpoint holding it completes, so the server
//     keeps every change a restore may need.
//   - 'changelog-mode' = 'all' (Flink CDC's default) produces +I/-U/+U/-D
//     and needs REPLICA IDENTITY FULL for the old rows; 'upsert' produces
//     +I/+U/-D by the primary key and works with REPLICA IDENTITY DEFAULT.
//
// Values travel in PostgreSQL's text format (snapshot and stream alike) and
// are parsed into Flink's types (see decode.go).
package postgrescdc

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "postgres-cdc"

// Option keys (Flink CDC's PostgresSourceOptions).
const (
	OptHostname           = "hostname"
	OptPort               = "port"
	OptUsername           = "username"
	OptPassword           = "password"
	OptDatabaseName       = "database-name"
	OptSchemaName         = "schema-name"
	OptTableName          = "table-name"
	OptSlotName           = "slot.name"
	OptDecodingPluginName = "decoding.plugin.name"
	OptChangelogMode      = "changelog-mode"
	OptStartupMode        = "scan.startup.mode"
	OptIncrementalSnap    = "scan.incremental.snapshot.enabled"
	OptChunkSize          = "scan.incremental.snapshot.chunk.size"
	OptChunkKeyColumn     = "scan.incremental.snapshot.chunk.key-column"
	OptBackfillSkip       = "scan.incremental.snapshot.backfill.skip"
	OptFetchSize          = "scan.snapshot.fetch.size"

	debeziumPrefix = "debezium."
	// OptPublicationName is the Debezium property naming the publication
	// the slot streams (Debezium's default dbz_publication).
	OptPublicationName = debeziumPrefix + "publication.name"
	// OptPublicationAutocreate is Debezium's publication.autocreate.mode.
	OptPublicationAutocreate = debeziumPrefix + "publication.autocreate.mode"
)

// Defaults, as Flink CDC and Debezium document them.
const (
	defaultPort        = 5432
	defaultChunkSize   = 8096
	defaultFetchSize   = 1024
	defaultPublication = "dbz_publication"
	pluginPgoutput     = "pgoutput"
)

// Startup and changelog modes.
const (
	StartupInitial      = "initial"
	StartupLatestOffset = "latest-offset"
	ChangelogAll        = "all"
	ChangelogUpsert     = "upsert"
)

// Metadata keys (Flink CDC's Postgres metadata columns).
const (
	MetaTableName    = "table_name"
	MetaSchemaName   = "schema_name"
	MetaDatabaseName = "database_name"
	MetaOpTS         = "op_ts"
)

var readableMetadata = map[string]types.Type{
	MetaTableName:    types.StringType.WithNullable(false),
	MetaSchemaName:   types.StringType.WithNullable(false),
	MetaDatabaseName: types.StringType.WithNullable(false),
	MetaOpTS:         types.TimestampLTZType(3).WithNullable(false),
}

// Factory creates postgres-cdc sources.
type Factory struct{}

// NewFactory returns the postgres-cdc factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string {
	return []string{OptHostname, OptUsername, OptPassword, OptDatabaseName, OptSchemaName, OptTableName, OptSlotName}
}

// OptionalOptions implements connectors.Factory. The debezium.* keys the
// connector honours are listed too; any other debezium.* key is refused.
func (*Factory) OptionalOptions() []string {
	return []string{OptPort, OptDecodingPluginName, OptChangelogMode, OptStartupMode, OptIncrementalSnap,
		OptChunkSize, OptChunkKeyColumn, OptBackfillSkip, OptFetchSize,
		OptPublicationName, OptPublicationAutocreate}
}

// Publication autocreate modes (Debezium's).
const (
	autocreateAllTables = "all_tables"
	autocreateFiltered  = "filtered"
	autocreateDisabled  = "disabled"
)

// config is a validated postgres-cdc table.
type config struct {
	name       string // Flink table name, for messages
	host       string
	port       int
	user       string
	password   string
	database   string
	schemaRE   *regexp.Regexp
	tableRE    *regexp.Regexp
	slot       string
	pub        string
	autocreate string
	startup    string
	mode       string
	physical   types.Schema
	pk         []int
	meta       []string // metadata keys in declared order

	// The incremental snapshot (incremental.go).
	incremental  bool
	chunkSize    int
	fetchSize    int
	chunkKey     int // index in physical of the chunk key column
	backfillSkip bool
}

func newConfig(tc *connectors.TableContext, f *Factory) (*config, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	o := connectors.Options(tc.Options)
	c := &config{
		name: tc.Name, host: o[OptHostname], user: o[OptUsername], password: o[OptPassword],
		database: o[OptDatabaseName], slot: o[OptSlotName], physical: tc.Physical, pk: tc.PrimaryKey,
	}
	var err error
	if c.port, err = o.Int(OptPort, defaultPort); err != nil {
		return nil, err
	}
	if c.port <= 0 || c.port > 65535 {
		return nil, fmt.Errorf("Invalid value for option '%s': %d (a TCP port, 1..65535).", OptPort, c.port)
	}
	// Flink CDC defaults to decoderbufs, a plugin stock PostgreSQL does not
	// ship; pgoutput (built in since PostgreSQL 10) is what this connector
	// decodes, and it is also what an unset option means here.
	plugin := o.String(OptDecodingPluginName, pluginPgoutput)
	if !strings.EqualFold(plugin, pluginPgoutput) {
		return nil, fmt.Errorf("Invalid value for option '%s': '%s'. The postgres-cdc connector of flinksql decodes the logical replication stream of the built-in plugin only; allowed values: [%s].", OptDecodingPluginName, plugin, pluginPgoutput)
	}
	if c.startup, err = o.Enum(OptStartupMode, []string{StartupInitial, StartupLatestOffset}, StartupInitial); err != nil {
		return nil, err
	}
	if c.mode, err = o.Enum(OptChangelogMode, []string{ChangelogAll, ChangelogUpsert}, ChangelogAll); err != nil {
		return nil, err
	}
	if c.incremental, err = o.Bool(OptIncrementalSnap, false); err != nil {
		return nil, err
	}
	if err := c.incrementalOptions(o); err != nil {
		return nil, err
	}
	c.pub = o.String(OptPublicationName, defaultPublication)
	if c.autocreate, err = o.Enum(OptPublicationAutocreate, []string{autocreateAllTables, autocreateFiltered, autocreateDisabled}, autocreateAllTables); err != nil {
		return nil, err
	}
	if !validSlotName(c.slot) {
		return nil, fmt.Errorf("Invalid value for option '%s': '%s'. A replication slot name may contain only lower case letters, numbers and the underscore character, at most 63 of them.", OptSlotName, c.slot)
	}
	if c.schemaRE, err = compileName(OptSchemaName, o[OptSchemaName]); err != nil {
		return nil, err
	}
	if c.tableRE, err = compileName(OptTableName, o[OptTableName]); err != nil {
		return nil, err
	}
	if c.mode == ChangelogUpsert && len(c.pk) == 0 {
		return nil, fmt.Errorf("Table %s: '%s' = '%s' needs a PRIMARY KEY ... NOT ENFORCED on the table: an upsert changelog is keyed by it.", c.name, OptChangelogMode, ChangelogUpsert)
	}
	for _, col := range c.physical {
		if err := checkType(col.Type); err != nil {
			return nil, fmt.Errorf("Table %s, column %s: %w", c.name, col.Name, err)
		}
	}
	for _, m := range tc.Metadata {
		t, ok := readableMetadata[m.Key]
		if !ok {
			keys := make([]string, 0, len(readableMetadata))
			for k := range readableMetadata {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("Invalid metadata key '%s' in column '%s' of table '%s'. The DynamicTableSource class 'postgres-cdc' supports the following metadata keys for reading:\n%s", m.Key, m.Name, c.name, strings.Join(keys, "\n"))
		}
		if !t.EqualIgnoringNull(m.Type) {
			return nil, fmt.Errorf("Invalid data type for metadata column '%s' of table '%s': the metadata key '%s' is of type %s, not %s.", m.Name, c.name, m.Key, t.WithNullable(true), m.Type)
		}
		c.meta = append(c.meta, m.Key)
	}
	return c, nil
}

var slotNameRE = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

func validSlotName(s string) bool { return slotNameRE.MatchString(s) }

// compileName compiles a schema-name or table-name pattern: a regular
// expression that must match the whole name, as Debezium's include lists.
func compileName(key, pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return nil, fmt.Errorf("Invalid value for option '%s': '%s' is not a regular expression: %v", key, pattern, err)
	}
	return re, nil
}

// Source is a postgres-cdc table. Every subtask's reader of a job is
// created from it, so the incremental snapshot's coordinator (Flink's
// split enumerator) lives here.
type Source struct {
	cfg   *config
	coord *coordinator
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	c, err := newConfig(tc, f)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: c, coord: newCoordinator()}, nil
}

// Bounded implements connectors.ScanSource: the replication stream never ends.
func (*Source) Bounded() bool { return false }

// ChangelogMode implements connectors.ScanSource.
func (s *Source) ChangelogMode() types.ChangelogMode {
	if s.cfg.mode == ChangelogUpsert {
		return types.Upsert
	}
	return types.All
}

// Parallelism implements connectors.ScanSource: one slot, one reader (Flink
// CDC's non-incremental source is a single reader too); the incremental
// snapshot reads its chunks at the job's parallelism.
func (s *Source) Parallelism(def int) int {
	if s.cfg.snapshotsIncrementally() && def > 1 {
		return def
	}
	return 1
}

// ReadableMetadata implements connectors.ScanSource.
func (*Source) ReadableMetadata() map[string]types.Type { return readableMetadata }

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	if s.cfg.snapshotsIncrementally() {
		return newIncrementalReader(s.cfg, s.coord, subtask, parallelism)
	}
	if parallelism != 1 {
		return nil, fmt.Errorf("postgres-cdc table %s: the source runs at parallelism 1 (one replication slot), not %d", s.cfg.name, parallelism)
	}
	return newReader(s.cfg), nil
}

var (
	_ connectors.SourceFactory      = (*Factory)(nil)
	_ exec.CheckpointHolder         = (*reader)(nil)
	_ exec.CheckpointCompleteReader = (*reader)(nil)
)
