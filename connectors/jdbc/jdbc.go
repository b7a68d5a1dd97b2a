// Package jdbc owns the 'jdbc' table connector for PostgreSQL (Flink's JDBC
// connector with its PostgreSQL dialect), written over pgx rather than a
// JDBC driver: 'url' = 'jdbc:postgresql://host:port/database'.
//
//   - Sink: append mode without a primary key (COPY), upsert mode with
//     PRIMARY KEY … NOT ENFORCED (INSERT … ON CONFLICT (pk) DO UPDATE; -D
//     deletes by key; -U is skipped, the +U that follows replaces the row),
//     buffered as 'sink.buffer-flush.max-rows' / '.interval' say, the buffer
//     reduced to the last change per key as Flink's reduced buffer does.
//   - 'sink.delivery-guarantee': 'at-least-once' (default) flushes at every
//     checkpoint barrier; 'exactly-once' writes each subtask's rows between
//     two barriers in one transaction, PREPARE TRANSACTION
//     '<sink.transactional-id-prefix>-<subtask>-<checkpoint>' at the barrier,
//     and COMMIT PREPARED when the checkpoint completes (see xa.go).
//   - Source: a bounded scan, split by 'scan.partition.*' into ranges of a
//     numeric column, its position checkpointed; and a lookup source for
//     FOR SYSTEM_TIME AS OF joins with the lookup.* caches.
//
// Identifiers are written the way Flink's PostgreSQL dialect writes them,
// unquoted, so PostgreSQL folds them to lower case; they are sent quoted in
// that folded form, which also lets a column be named by a reserved word.
package jdbc

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "jdbc"

// Option keys (Flink's JdbcConnectorOptions, plus the delivery guarantee
// and transaction prefix of the exactly-once sink).
const (
	OptURL                      = "url"
	OptTableName                = "table-name"
	OptDriver                   = "driver"
	OptUsername                 = "username"
	OptPassword                 = "password"
	OptConnectionMaxRetryTimout = "connection.max-retry-timeout"
	OptScanPartitionColumn      = "scan.partition.column"
	OptScanPartitionNum         = "scan.partition.num"
	OptScanPartitionLowerBound  = "scan.partition.lower-bound"
	OptScanPartitionUpperBound  = "scan.partition.upper-bound"
	OptScanFetchSize            = "scan.fetch-size"
	OptScanAutoCommit           = "scan.auto-commit"
	OptLookupMaxRetries         = "lookup.max-retries"
	OptSinkBufferFlushMaxRows   = "sink.buffer-flush.max-rows"
	OptSinkBufferFlushInterval  = "sink.buffer-flush.interval"
	OptSinkMaxRetries           = "sink.max-retries"
	OptSinkParallelism          = "sink.parallelism"
	OptDeliveryGuarantee        = "sink.delivery-guarantee"
	OptTransactionalIDPrefix    = "sink.transactional-id-prefix"
)

// Defaults, as Flink documents them.
const (
	defaultFlushMaxRows      = 100
	defaultFlushInterval     = time.Second
	defaultMaxRetries        = 3
	defaultConnectionTimeout = 60 * time.Second
)

// Factory creates jdbc sources and sinks.
type Factory struct{}

// NewFactory returns the jdbc factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return []string{OptURL, OptTableName} }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string {
	return append([]string{
		OptDriver, OptUsername, OptPassword, OptConnectionMaxRetryTimout,
		OptScanPartitionColumn, OptScanPartitionNum, OptScanPartitionLowerBound, OptScanPartitionUpperBound,
		OptScanFetchSize, OptScanAutoCommit, OptLookupMaxRetries,
		OptSinkBufferFlushMaxRows, OptSinkBufferFlushInterval, OptSinkMaxRetries, OptSinkParallelism,
		OptDeliveryGuarantee, OptTransactionalIDPrefix,
	}, connectors.LookupCacheOptions...)
}

// config is a jdbc table's options, validated.
type config struct {
	name     string // the table's Flink identifier, for messages
	url      string // as given
	connStr  string // pgx connection string
	database string
	table    tableName
	physical types.Schema
	pk       []int
	loc      *time.Location

	connTimeout time.Duration

	// sink
	flushRows     int
	flushInterval time.Duration
	maxRetries    int
	parallelism   int
	exactlyOnce   bool
	prefix        string

	// scan
	partCol      int // index in physical; -1 without partitioning
	partNum      int
	lower, upper int64
	fetchSize    int

	// lookup
	cache            lookup.Cache
	lookupMaxRetries int
}

// tableName is 'table-name' split into an optional schema and the table,
// each folded as PostgreSQL folds an unquoted identifier.
type tableName struct {
	schema, table string
}

// SQL is the name quoted for a statement.
func (t tableName) SQL() string {
	if t.schema == "" {
		return quoteIdent(t.table)
	}
	return quoteIdent(t.schema) + "." + quoteIdent(t.table)
}

func (t tableName) String() string {
	if t.schema == "" {
		return t.table
	}
	return t.schema + "." + t.table
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// columnIdent is how a Flink column name reaches PostgreSQL: unquoted in
// Flink's dialect, so folded to lower case.
func columnIdent(name string) string { return strings.ToLower(name) }

// parseTableName splits 'table-name' at dots outside double quotes; a
// quoted part keeps its case, an unquoted one is folded.
func parseTableName(s string) (tableName, error) {
	var parts []string
	var cur strings.Builder
	quoted, wasQuoted := false, false
	flush := func() {
		p := cur.String()
		if !wasQuoted {
			p = strings.ToLower(strings.TrimSpace(p))
		}
		parts = append(parts, p)
		cur.Reset()
		wasQuoted = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' && quoted && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
			wasQuoted = true
		case c == '.' && !quoted:
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return tableName{}, fmt.Errorf("unbalanced double quote")
	}
	flush()
	for _, p := range parts {
		if p == "" {
			return tableName{}, fmt.Errorf("empty name part")
		}
	}
	switch len(parts) {
	case 1:
		return tableName{table: parts[0]}, nil
	case 2:
		return tableName{schema: parts[0], table: parts[1]}, nil
	}
	return tableName{}, fmt.Errorf("expected [schema.]table")
}

// jdbcURLParams are the PostgreSQL JDBC driver's URL parameters the
// connector understands, and the libpq keyword each becomes.
var jdbcURLParams = map[string]string{
	"user":            "user",
	"password":        "password",
	"sslmode":         "sslmode",
	"ApplicationName": "application_name",
	"connectTimeout":  "connect_timeout",
	"currentSchema":   "search_path",
}

// parseURL turns a jdbc:postgresql URL into a pgx connection string.
func parseURL(tc *connectors.TableContext, raw, user, password string) (connStr, database string, err error) {
	rest, ok := strings.CutPrefix(raw, "jdbc:postgresql:")
	if !ok {
		return "", "", fmt.Errorf("Could not find any jdbc dialect factory that can handle url '%s'. The jdbc connector here supports the PostgreSQL dialect only: 'url' = 'jdbc:postgresql://host:port/database'.", raw) //nolint:staticcheck // Flink's text
	}
	if !strings.HasPrefix(rest, "//") {
		return "", "", fmt.Errorf("Invalid value for option '%s' of table %s: expected 'jdbc:postgresql://host[:port]/database', but was: %s", OptURL, tc.Name, raw)
	}
	u, err := url.Parse("postgres:" + rest)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("Invalid value for option '%s' of table %s: expected 'jdbc:postgresql://host[:port]/database', but was: %s", OptURL, tc.Name, raw)
	}
	database = strings.TrimPrefix(u.Path, "/")
	if database == "" || strings.Contains(database, "/") {
		return "", "", fmt.Errorf("Invalid value for option '%s' of table %s: the url names no database ('jdbc:postgresql://host[:port]/database'), but was: %s", OptURL, tc.Name, raw)
	}
	out := url.Values{}
	for k, vs := range u.Query() {
		key, ok := jdbcURLParams[k]
		if !ok {
			known := make([]string, 0, len(jdbcURLParams))
			for p := range jdbcURLParams {
				known = append(known, p)
			}
			sortStrings(known)
			return "", "", fmt.Errorf("Table %s: the url parameter '%s' is not supported; supported parameters are [%s].", tc.Name, k, strings.Join(known, ", "))
		}
		out.Set(key, vs[len(vs)-1])
	}
	if user != "" {
		out.Set("user", user)
	}
	if password != "" {
		out.Set("password", password)
	}
	if out.Get("sslmode") == "" {
		out.Set("sslmode", "prefer")
	}
	c := url.URL{Scheme: "postgres", Host: u.Host, Path: "/" + database, RawQuery: out.Encode()}
	return c.String(), database, nil
}

func newConfig(tc *connectors.TableContext, f *Factory) (*config, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	o := connectors.Options(tc.Options)
	c := &config{name: tc.Name, url: tc.Options[OptURL], physical: tc.Physical, pk: tc.PrimaryKey, loc: tc.Loc, partCol: -1}
	if c.loc == nil {
		c.loc = time.UTC
	}
	if o.Has(OptUsername) != o.Has(OptPassword) {
		return nil, fmt.Errorf("Either all or none of the following options should be provided:\n%s\n%s", OptUsername, OptPassword)
	}
	var err error
	if c.connStr, c.database, err = parseURL(tc, c.url, o.String(OptUsername, ""), o.String(OptPassword, "")); err != nil {
		return nil, err
	}
	if c.table, err = parseTableName(tc.Options[OptTableName]); err != nil {
		return nil, fmt.Errorf("Invalid value for option '%s' of table %s: %v, but was: %s", OptTableName, tc.Name, err, tc.Options[OptTableName])
	}
	for _, col := range tc.Physical {
		if err := checkSupportedType(col.Type); err != nil {
			return nil, fmt.Errorf("table %s, column %s: %w", tc.Name, col.Name, err)
		}
	}
	if c.connTimeout, err = o.Duration(OptConnectionMaxRetryTimout, defaultConnectionTimeout); err != nil {
		return nil, err
	}
	if c.connTimeout < time.Second || c.connTimeout%time.Second != 0 {
		return nil, fmt.Errorf("The value of '%s' option must be in second granularity and shouldn't be smaller than 1 second, but is %s.", OptConnectionMaxRetryTimout, tc.Options[OptConnectionMaxRetryTimout])
	}

	// Sink options.
	if c.flushRows, err = o.Int(OptSinkBufferFlushMaxRows, defaultFlushMaxRows); err != nil {
		return nil, err
	}
	if c.flushInterval, err = o.Duration(OptSinkBufferFlushInterval, defaultFlushInterval); err != nil {
		return nil, err
	}
	if c.maxRetries, err = o.Int(OptSinkMaxRetries, defaultMaxRetries); err != nil {
		return nil, err
	}
	for key, v := range map[string]int{OptSinkBufferFlushMaxRows: c.flushRows, OptSinkMaxRetries: c.maxRetries} {
		if v < 0 {
			return nil, fmt.Errorf("The value of '%s' option shouldn't be negative, but is %d.", key, v)
		}
	}
	if c.flushInterval < 0 {
		return nil, fmt.Errorf("The value of '%s' option shouldn't be negative, but is %s.", OptSinkBufferFlushInterval, tc.Options[OptSinkBufferFlushInterval])
	}
	if c.parallelism, err = o.Int(OptSinkParallelism, 0); err != nil {
		return nil, err
	}
	if o.Has(OptSinkParallelism) && c.parallelism < 1 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive integer, but was: %s", OptSinkParallelism, tc.Options[OptSinkParallelism])
	}
	guarantee, err := o.Enum(OptDeliveryGuarantee, []string{"at-least-once", "exactly-once"}, "at-least-once")
	if err != nil {
		return nil, err
	}
	c.exactlyOnce = guarantee == "exactly-once"
	c.prefix = o.String(OptTransactionalIDPrefix, "")
	if c.exactlyOnce && c.prefix == "" {
		return nil, fmt.Errorf("%s must be specified when using DeliveryGuarantee.EXACTLY_ONCE.", OptTransactionalIDPrefix)
	}
	if !c.exactlyOnce && o.Has(OptTransactionalIDPrefix) {
		return nil, fmt.Errorf("Table %s: '%s' applies to 'sink.delivery-guarantee' = 'exactly-once' only, but the guarantee is '%s'.", tc.Name, OptTransactionalIDPrefix, guarantee)
	}
	if len(c.prefix) > 150 || strings.ContainsAny(c.prefix, "'\\") {
		return nil, fmt.Errorf("Invalid value for option '%s' of table %s: at most 150 characters, without quotes or backslashes (it names PostgreSQL prepared transactions), but was: %s", OptTransactionalIDPrefix, tc.Name, c.prefix)
	}

	// Scan options.
	parts := []string{OptScanPartitionColumn, OptScanPartitionNum, OptScanPartitionLowerBound, OptScanPartitionUpperBound}
	n := 0
	for _, k := range parts {
		if o.Has(k) {
			n++
		}
	}
	if n != 0 && n != len(parts) {
		return nil, fmt.Errorf("Either all or none of the following options should be provided:\n%s", strings.Join(parts, "\n"))
	}
	if n == len(parts) {
		name := tc.Options[OptScanPartitionColumn]
		c.partCol = tc.Physical.Index(name)
		if c.partCol < 0 {
			return nil, fmt.Errorf("Table %s: '%s' = '%s' is not a physical column of the table.", tc.Name, OptScanPartitionColumn, name)
		}
		if t := tc.Physical[c.partCol].Type; !t.IsInteger() {
			return nil, fmt.Errorf("Table %s: the partition column '%s' must be of an integer type (TINYINT, SMALLINT, INT or BIGINT) here, but is %s.", tc.Name, name, t)
		}
		if c.partNum, err = o.Int(OptScanPartitionNum, 0); err != nil {
			return nil, err
		}
		if c.partNum < 1 {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive integer, but was: %s", OptScanPartitionNum, tc.Options[OptScanPartitionNum])
		}
		if c.lower, err = o.Long(OptScanPartitionLowerBound, 0); err != nil {
			return nil, err
		}
		if c.upper, err = o.Long(OptScanPartitionUpperBound, 0); err != nil {
			return nil, err
		}
		if c.lower > c.upper {
			return nil, fmt.Errorf("'%s'='%d' must not be larger than '%s'='%d'.", OptScanPartitionLowerBound, c.lower, OptScanPartitionUpperBound, c.upper)
		}
	}
	if c.fetchSize, err = o.Int(OptScanFetchSize, 0); err != nil {
		return nil, err
	}
	if c.fetchSize < 0 {
		return nil, fmt.Errorf("The value of '%s' option shouldn't be negative, but is %d.", OptScanFetchSize, c.fetchSize)
	}
	if _, err := o.Bool(OptScanAutoCommit, true); err != nil {
		return nil, err
	}

	// Lookup options.
	if c.cache, err = connectors.LookupCacheFrom(tc, lookup.CacheNone, lookup.CacheNone, lookup.CachePartial, lookup.CacheFull); err != nil {
		return nil, err
	}
	if c.lookupMaxRetries, err = o.Int(OptLookupMaxRetries, defaultMaxRetries); err != nil {
		return nil, err
	}
	if c.lookupMaxRetries < 0 {
		return nil, fmt.Errorf("The value of '%s' option shouldn't be negative, but is %d.", OptLookupMaxRetries, c.lookupMaxRetries)
	}
	return c, nil
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	c, err := newConfig(tc, f)
	if err != nil {
		return nil, err
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("Table %s: the jdbc connector has no metadata columns, but the table declares %s.", tc.Name, tc.Metadata[0].Name)
	}
	return &Sink{cfg: c}, nil
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	c, err := newConfig(tc, f)
	if err != nil {
		return nil, err
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("Table %s: the jdbc connector has no metadata columns, but the table declares %s.", tc.Name, tc.Metadata[0].Name)
	}
	return &Source{cfg: c}, nil
}

var (
	_ connectors.SinkFactory   = (*Factory)(nil)
	_ connectors.SourceFactory = (*Factory)(nil)
)
