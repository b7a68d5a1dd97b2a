// Package iceberg owns the 'iceberg' connector: a sink that appends to an
// Apache Iceberg table (github.com/apache/iceberg-go) in a Hadoop catalog
// (a warehouse directory on the local file system), with exactly-once
// commits tied to checkpoints as Flink's Iceberg sink makes them.
//
// The sink is a connectors.CommittingSink: writers at the input's
// parallelism write Parquet data files between barriers; ahead of each
// barrier every writer hands the metadata of the files it closed (path,
// size, row count, column statistics, partition values) to the single
// committer (IcebergFilesCommitter, parallelism 1), which keeps them in its
// checkpoint state and, when the checkpoint completes, commits one Iceberg
// snapshot appending all of them. The snapshot's summary records the
// committer's job id and the checkpoint id (flink.job-id,
// flink.max-committed-checkpoint-id), so a commit repeated after a restore
// finds it already committed and skips it.
//
// The table is created from the DDL's schema when it does not exist
// (Flink's type mapping, NOT NULL columns required, the primary key as the
// identifier fields, PARTITIONED BY columns as identity partitions). Append
// mode only: an updating query is refused naming 'write.upsert.enabled'.
package iceberg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/types"

	iceberg "github.com/apache/iceberg-go"
	isql "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// warehouses
	_ "github.com/jackc/pgx/v5/stdlib"             // the "pgx" driver of a PostgreSQL 'sql' catalog
	_ "modernc.org/sqlite"                         // the "sqlite" driver (pure Go) of a SQLite 'sql' catalog
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "iceberg"

// Option keys, as Flink's Iceberg connector names them.
const (
	OptCatalogName     = "catalog-name"
	OptCatalogType     = "catalog-type"
	OptCatalogImpl     = "catalog-impl"
	OptCatalogDatabase = "catalog-database"
	OptCatalogTable    = "catalog-table"
	OptWarehouse       = "warehouse"
	OptURI             = "uri"
	OptFormatDefault   = "write.format.default"
	OptFormatVersion   = "format-version"
	OptUpsertEnabled   = "write.upsert.enabled"
	OptTargetFileSize  = "write.target-file-size-bytes"
	OptPropertyVersion = "property-version"
	OptCacheEnabled    = "cache-enabled"
)

// Catalog types.
const (
	CatalogHadoop = "hadoop"
	CatalogHive   = "hive"
	CatalogREST   = "rest"
	CatalogSQL    = "sql"
)

// Factory creates Iceberg sinks.
type Factory struct{}

// NewFactory returns the iceberg factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// SupportsPartitioning implements connectors.SupportsPartitioning:
// PARTITIONED BY columns become identity partitions of a created table.
func (*Factory) SupportsPartitioning() {}

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return []string{OptCatalogName} }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string {
	return []string{
		OptCatalogType, OptCatalogImpl, OptCatalogDatabase, OptCatalogTable, OptWarehouse, OptURI,
		OptFormatDefault, OptFormatVersion, OptUpsertEnabled, OptTargetFileSize,
		OptPropertyVersion, OptCacheEnabled,
	}
}

// config is what the sink takes from the options.
type config struct {
	name          string // the Flink table, for messages
	catalogName   string
	catalogType   string // hadoop or sql
	sqlDriver     string // sql: the database/sql driver of 'uri'
	sqlDSN        string // sql: the driver's data source name
	sqlDialect    isql.SupportedDialect
	warehouse     string             // absolute local path, or s3://bucket/prefix
	local         bool               // the warehouse is on the local file system
	fileIO        iceberg.Properties // iceberg-go's s3.* properties, from the session's
	database      string
	table         string
	formatVersion int
	targetSize    int64 // write.target-file-size-bytes; 0: iceberg-go's default
	schema        types.Schema
	primaryKey    []int
	partitionKeys []int // PARTITIONED BY: identity partitions of a created table
	upsert        bool  // write.upsert.enabled
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	c, err := newConfig(f, tc)
	if err != nil {
		return nil, err
	}
	// Fail at planning on a type the table cannot hold.
	sc, err := icebergSchema(c.schema, c.primaryKey)
	if err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", c.name, err)
	}
	if _, err := identitySpec(sc, c.schema, c.partitionKeys); err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", c.name, err)
	}
	return &Sink{cfg: c}, nil
}

func newConfig(f *Factory, tc *connectors.TableContext) (*config, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	c := &config{name: tc.Name, schema: tc.Physical, primaryKey: tc.PrimaryKey, partitionKeys: tc.PartitionKeys}
	if c.catalogName = strings.TrimSpace(opts[OptCatalogName]); c.catalogName == "" {
		return nil, fmt.Errorf("Table property '%s' cannot be null", OptCatalogName) //nolint:staticcheck // Flink's text
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("iceberg table %s: METADATA columns are not supported by the iceberg connector (column '%s')", c.name, tc.Metadata[0].Name)
	}
	if opts.Has(OptCatalogImpl) {
		return nil, fmt.Errorf("iceberg table %s: option '%s' (a Java catalog class) is not supported; set '%s' to '%s'", c.name, OptCatalogImpl, OptCatalogType, CatalogHadoop)
	}
	// Flink's default catalog type is hive.
	ctype, err := opts.Enum(OptCatalogType, []string{CatalogHive, CatalogHadoop, CatalogREST, CatalogSQL}, CatalogHive)
	if err != nil {
		return nil, err
	}
	switch ctype {
	case CatalogHadoop:
		if opts.Has(OptURI) {
			return nil, fmt.Errorf("iceberg table %s: option '%s' is not used by a '%s' catalog; remove it", c.name, OptURI, CatalogHadoop)
		}
	case CatalogSQL:
		uri := strings.TrimSpace(opts[OptURI])
		if uri == "" {
			return nil, fmt.Errorf("iceberg table %s: option '%s' is required for a '%s' catalog (jdbc:sqlite:<file>, or jdbc:postgresql://host:port/database?user=…&password=…)", c.name, OptURI, CatalogSQL)
		}
		if c.sqlDriver, c.sqlDSN, c.sqlDialect, err = sqlCatalogURI(uri); err != nil {
			return nil, fmt.Errorf("iceberg table %s: option '%s': %w", c.name, OptURI, err)
		}
	case CatalogREST:
		return nil, fmt.Errorf("iceberg table %s: '%s' = '%s' is not supported yet (no REST catalog server runs in the tests here to verify it); the supported catalog types are '%s' and '%s'",
			c.name, OptCatalogType, ctype, CatalogHadoop, CatalogSQL)
	default:
		return nil, fmt.Errorf("iceberg table %s: '%s' = '%s' is not supported (no Hive metastore client in Go); the supported catalog types are '%s' and '%s'",
			c.name, OptCatalogType, ctype, CatalogHadoop, CatalogSQL)
	}
	c.catalogType = ctype
	wh := strings.TrimSpace(opts[OptWarehouse])
	if wh == "" {
		return nil, fmt.Errorf("iceberg table %s: option '%s' is required for a '%s' catalog", c.name, OptWarehouse, ctype)
	}
	if rest, ok := strings.CutPrefix(wh, "s3://"); ok {
		if ctype != CatalogSQL {
			return nil, fmt.Errorf("iceberg table %s: option '%s' = '%s': a '%s' catalog commits by renaming metadata files, which S3 cannot do atomically; use '%s' = '%s' for an s3:// warehouse",
				c.name, OptWarehouse, wh, ctype, OptCatalogType, CatalogSQL)
		}
		if bucket, _, _ := strings.Cut(rest, "/"); bucket == "" {
			return nil, fmt.Errorf("iceberg table %s: option '%s' = '%s' names no bucket (expected s3://bucket/prefix)", c.name, OptWarehouse, wh)
		}
		c.warehouse = strings.TrimRight(wh, "/")
		if c.fileIO, err = s3Properties(tc.FileSystem); err != nil {
			return nil, fmt.Errorf("iceberg table %s: %w", c.name, err)
		}
	} else {
		if c.warehouse, err = localPath(wh); err != nil {
			return nil, fmt.Errorf("iceberg table %s: option '%s': %w", c.name, OptWarehouse, err)
		}
		c.local = true
	}
	c.database = opts.String(OptCatalogDatabase, currentDatabase(tc.Name))
	c.table = opts.String(OptCatalogTable, tc.ObjectName)
	if c.database == "" || c.table == "" {
		return nil, fmt.Errorf("iceberg table %s: options '%s' and '%s' must not be empty", c.name, OptCatalogDatabase, OptCatalogTable)
	}
	if _, err := opts.Enum(OptFormatDefault, []string{"parquet"}, "parquet"); err != nil {
		return nil, fmt.Errorf("%w (only Parquet data files are written)", err)
	}
	if c.formatVersion, err = opts.Int(OptFormatVersion, 2); err != nil {
		return nil, err
	}
	if c.formatVersion != 1 && c.formatVersion != 2 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected one of [1, 2], but was: %s", OptFormatVersion, opts[OptFormatVersion])
	}
	if c.targetSize, err = opts.Long(OptTargetFileSize, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptTargetFileSize) && c.targetSize <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number of bytes, but was: %s", OptTargetFileSize, opts[OptTargetFileSize])
	}
	upsert, err := opts.Bool(OptUpsertEnabled, false)
	if err != nil {
		return nil, err
	}
	if upsert {
		if err := c.canDelete(OptUpsertEnabled + "' = 'true"); err != nil {
			return nil, err
		}
	}
	c.upsert = upsert
	if _, err := opts.Bool(OptCacheEnabled, true); err != nil {
		return nil, err
	}
	if opts.Has(OptPropertyVersion) {
		if v := opts[OptPropertyVersion]; v != "1" {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected 1, but was: %s", OptPropertyVersion, v)
		}
	}
	return c, nil
}

// canDelete checks that the table can take equality deletes (what needs
// them names itself in what): a PRIMARY KEY, format version 2, and every
// PARTITIONED BY column part of the key.
func (c *config) canDelete(what string) error {
	switch {
	case len(c.primaryKey) == 0:
		return fmt.Errorf("iceberg table %s: '%s' needs a PRIMARY KEY (its columns are the equality fields of the deletes)", c.name, what)
	case c.formatVersion < 2:
		return fmt.Errorf("iceberg table %s: '%s' needs '%s' = '2' (equality deletes), but it is %d", c.name, what, OptFormatVersion, c.formatVersion)
	case len(c.partitionKeys) > 0:
		sc, err := icebergSchema(c.schema, c.primaryKey)
		if err != nil {
			return fmt.Errorf("iceberg table %s: %w", c.name, err)
		}
		spec, err := identitySpec(sc, c.schema, c.partitionKeys)
		if err != nil {
			return fmt.Errorf("iceberg table %s: %w", c.name, err)
		}
		if err := c.partitionsInKey(&spec, sc); err != nil {
			return fmt.Errorf("iceberg table %s: %w", c.name, err)
		}
	}
	return nil
}

// partitionsInKey checks what Flink's Iceberg sink checks in upsert mode:
// every partition field's source column is an equality field (a primary
// key column). A key then never changes partition, so its equality delete
// and its new row land in the one partition its earlier rows are in; a
// key that could move would need its delete in the old partition, which
// the writer cannot know. The text is Flink's.
func (c *config) partitionsInKey(spec *iceberg.PartitionSpec, sc *iceberg.Schema) error {
	eq := make([]int, len(c.primaryKey))
	names := make([]string, len(c.primaryKey))
	for i, k := range c.primaryKey {
		names[i] = c.schema[k].Name
		f, ok := sc.FindFieldByName(names[i])
		if !ok {
			return fmt.Errorf("primary key column '%s' is not in the table", names[i])
		}
		eq[i] = f.ID
	}
	for _, f := range spec.Fields() {
		if !slices.Contains(eq, f.SourceID()) {
			return fmt.Errorf("In UPSERT mode, partition field '%s' should be included in equality fields: '[%s]'", f.String(), strings.Join(names, ", ")) //nolint:staticcheck // Flink's text
		}
	}
	return nil
}

// sqlCatalogURI maps a 'sql' catalog's 'uri' (the JDBC URL Flink's
// JdbcCatalog takes, or the Go driver's own form) to a database/sql driver
// (pure-Go SQLite, or pgx for PostgreSQL), its DSN and the dialect.
func sqlCatalogURI(uri string) (driver, dsn string, dialect isql.SupportedDialect, err error) {
	u := strings.TrimPrefix(uri, "jdbc:")
	switch {
	case strings.HasPrefix(u, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "file:")
		if path == "" {
			return "", "", "", fmt.Errorf("'%s' names no SQLite database file", uri)
		}
		// Writers and the committer open the file each: wait on its lock.
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return "sqlite", "file:" + path + sep + "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)", isql.SQLite, nil
	case strings.HasPrefix(u, "postgresql://"), strings.HasPrefix(u, "postgres://"):
		return "pgx", u, isql.Postgres, nil
	}
	return "", "", "", fmt.Errorf("unsupported catalog database URI '%s' (supported: jdbc:sqlite:<file>, jdbc:postgresql://host:port/database)", uri)
}

// s3Properties maps the session's S3 settings (those the checkpoint
// storage takes) to iceberg-go's S3 file IO properties.
func s3Properties(fs map[string]string) (iceberg.Properties, error) {
	props := iceberg.Properties{icebergio.S3Region: "us-east-1"}
	for k, v := range fs {
		switch k {
		case options.S3Endpoint.Key:
			props[icebergio.S3EndpointURL] = v
		case options.S3AccessKey.Key:
			props[icebergio.S3AccessKeyID] = v
		case options.S3SecretKey.Key:
			props[icebergio.S3SecretAccessKey] = v
		case options.S3Region.Key:
			props[icebergio.S3Region] = v
		case options.S3PathStyle.Key:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("invalid value '%s' for option '%s' (allowed: true, false)", v, k)
			}
			props[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!b)
		default:
			return nil, fmt.Errorf("option '%s' is not an S3 setting the iceberg sink uses (%s, %s, %s, %s, %s)", k,
				options.S3Endpoint.Key, options.S3PathStyle.Key, options.S3AccessKey.Key, options.S3SecretKey.Key, options.S3Region.Key)
		}
	}
	if (props[icebergio.S3AccessKeyID] == "") != (props[icebergio.S3SecretAccessKey] == "") {
		return nil, fmt.Errorf("options '%s' and '%s' must be set together", options.S3AccessKey.Key, options.S3SecretKey.Key)
	}
	return props, nil
}

// localPath turns a warehouse location into an absolute local path.
func localPath(loc string) (string, error) {
	p := loc
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		p = rest
	} else if rest, ok := strings.CutPrefix(p, "file:"); ok {
		p = rest
	} else if i := strings.Index(p, "://"); i > 0 {
		return "", fmt.Errorf("unsupported file system scheme '%s' in '%s' (supported: local paths, file://, and s3:// with '%s' = '%s')", p[:i], loc, OptCatalogType, CatalogSQL)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("'%s' is not an absolute path", loc)
	}
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "", fmt.Errorf("'%s' is the root directory", loc)
	}
	return p, nil
}

// currentDatabase is the database part of a Flink table identifier
// (catalog.database.table), Flink's default for 'catalog-database'.
func currentDatabase(name string) string {
	parts := strings.Split(name, ".")
	if len(parts) == 3 {
		return parts[1]
	}
	return "default_database"
}

// icebergSchema maps the DDL's physical columns to an Iceberg schema as
// Flink's FlinkSchemaUtil does: TINYINT and SMALLINT widen to int, CHAR and
// VARCHAR are string, BINARY(n) is fixed(n), TIMESTAMP is timestamp and
// TIMESTAMP_LTZ timestamptz (microseconds), NOT NULL is required, and the
// primary key becomes the identifier fields. Field IDs are 1..n; the
// catalog may reassign them at creation.
func icebergSchema(cols types.Schema, pk []int) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, len(cols))
	for i, c := range cols {
		t, err := icebergType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", c.Name, err)
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: c.Name, Type: t, Required: c.Type.NotNull}
	}
	ids := make([]int, len(pk))
	for i, p := range pk {
		ids[i] = p + 1
		fields[p].Required = true // primary key columns are NOT NULL in Flink
	}
	return iceberg.NewSchemaWithIdentifiers(0, ids, fields...), nil
}

// identitySpec is the partition spec of PARTITIONED BY keys (positions in
// cols), as Flink's FlinkSchemaUtil builds it: one identity field per key,
// named after its column. Types whose partition values the committer cannot
// carry (DECIMAL, BINARY(n)) are refused.
func identitySpec(sc *iceberg.Schema, cols types.Schema, keys []int) (iceberg.PartitionSpec, error) {
	if len(keys) == 0 {
		return *iceberg.UnpartitionedSpec, nil
	}
	opts := make([]iceberg.PartitionOption, 0, len(keys))
	for i, k := range keys {
		col := cols[k]
		switch col.Type.Root {
		case types.RootDecimal, types.RootBinary:
			return iceberg.PartitionSpec{}, fmt.Errorf("PARTITIONED BY column '%s' of type %s is not supported by the iceberg sink (identity partitions of BOOLEAN, integer, FLOAT, DOUBLE, CHAR, VARCHAR, VARBINARY, DATE, TIME, TIMESTAMP and TIMESTAMP_LTZ columns are)", col.Name, col.Type)
		}
		id := iceberg.PartitionDataIDStart + i // the id a created table gives it (and messages name)
		opts = append(opts, iceberg.AddPartitionFieldByName(col.Name, col.Name, iceberg.IdentityTransform{}, sc, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec: %w", err)
	}
	return spec, nil
}

func icebergType(t types.Type) (iceberg.Type, error) {
	switch t.Root {
	case types.RootBoolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt:
		return iceberg.PrimitiveTypes.Int32, nil
	case types.RootBigInt:
		return iceberg.PrimitiveTypes.Int64, nil
	case types.RootFloat:
		return iceberg.PrimitiveTypes.Float32, nil
	case types.RootDouble:
		return iceberg.PrimitiveTypes.Float64, nil
	case types.RootDecimal:
		if t.Precision > 38 {
			return nil, fmt.Errorf("DECIMAL(%d, %d) exceeds Iceberg's maximum precision 38", t.Precision, t.Scale)
		}
		return iceberg.DecimalTypeOf(t.Precision, t.Scale), nil
	case types.RootChar, types.RootVarChar:
		return iceberg.PrimitiveTypes.String, nil
	case types.RootBinary:
		return iceberg.FixedTypeOf(t.Precision), nil
	case types.RootVarBinary:
		return iceberg.PrimitiveTypes.Binary, nil
	case types.RootDate:
		return iceberg.PrimitiveTypes.Date, nil
	case types.RootTime:
		return iceberg.PrimitiveTypes.Time, nil
	case types.RootTimestamp:
		return iceberg.PrimitiveTypes.Timestamp, nil
	case types.RootTimestampLTZ:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	}
	return nil, fmt.Errorf("type %s is not supported by the iceberg sink yet (supported: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, CHAR, VARCHAR, BINARY, VARBINARY, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ)", t)
}

// Snapshot summary properties, as Flink's IcebergFilesCommitter writes them.
const (
	propJobID           = "flink.job-id"
	propMaxCommittedCkp = "flink.max-committed-checkpoint-id"
	propOperatorID      = "flink.operator-id"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
