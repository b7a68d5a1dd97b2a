// Package kafka owns the 'kafka' table connector and the Kafka machinery the
// 'upsert-kafka' connector shares: option parsing and validation with
// Flink 1.20's option names and messages, the mapping of 'properties.*' to
// franz-go client options, a source reader that reads the partitions one
// subtask owns as one split each (exact offsets, no consumer-group
// rebalancing), and a sink writer that produces asynchronously and flushes on
// Finish and on Flush (checkpoint barriers, later).
//
// The engine only ever talks to Kafka through franz-go over TCP, so the same
// code runs against the embedded broker, kfake in tests and a real cluster.
//
// Behaviour that follows Flink's Kafka connector (flink-connector-kafka
// 3.3.0, the release for Flink 1.20):
//   - 'scan.startup.mode' defaults to group-offsets; a partition without a
//     committed offset then uses 'properties.auto.offset.reset', whose
//     default is none (an error).
//   - 'properties.isolation.level' defaults to read_committed. This differs
//     from Flink, whose KafkaSource keeps the Kafka client's default,
//     read_uncommitted: a reader of a topic written with 'exactly-once'
//     should not see aborted or still-open transactions, and for a topic
//     written without transactions both levels return the same records (the
//     last stable offset equals the high watermark). Set read_uncommitted to
//     read records before their transaction commits.
//   - Partitions found by discovery after the start, and after a restore
//     the partitions the checkpoint does not hold, are read from the
//     earliest offset (FLIP-288); discovery is off for bounded reads.
//   - A bounded read's stop offsets are fixed at the job's first start and
//     kept in the checkpoint, so a restored bounded job reads what an
//     uninterrupted one reads (and no partition added after the start).
//   - Partition ownership is Flink's KafkaSourceEnumerator rule: a topic's
//     partitions start at subtask (hash(topic)*31 & 0x7fffffff) % p, where
//     hash is Java's String.hashCode, and go round from there.
//   - 'sink.delivery-guarantee' defaults to at-least-once; 'none' flushes only
//     at the end of input.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "kafka"

// Option keys.
const (
	OptTopic                   = "topic"
	OptTopicPattern            = "topic-pattern"
	OptBootstrapServers        = "properties.bootstrap.servers"
	OptGroupID                 = "properties.group.id"
	OptFormat                  = "format"
	OptKeyFormat               = "key.format"
	OptKeyFields               = "key.fields"
	OptKeyFieldsPrefix         = "key.fields-prefix"
	OptValueFormat             = "value.format"
	OptValueFieldsInclude      = "value.fields-include"
	OptStartupMode             = "scan.startup.mode"
	OptStartupTimestamp        = "scan.startup.timestamp-millis"
	OptStartupSpecificOffsets  = "scan.startup.specific-offsets"
	OptBoundedMode             = "scan.bounded.mode"
	OptBoundedTimestamp        = "scan.bounded.timestamp-millis"
	OptBoundedSpecificOffsets  = "scan.bounded.specific-offsets"
	OptPartitionDiscovery      = "scan.topic-partition-discovery.interval"
	OptScanParallelism         = "scan.parallelism"
	OptSinkPartitioner         = "sink.partitioner"
	OptSinkParallelism         = "sink.parallelism"
	OptDeliveryGuarantee       = "sink.delivery-guarantee"
	OptTransactionalIDPrefix   = "sink.transactional-id-prefix"
	OptSinkSemantic            = "sink.semantic" // deprecated spelling of sink.delivery-guarantee
	OptSinkBufferFlushMaxRows  = "sink.buffer-flush.max-rows"
	OptSinkBufferFlushInterval = "sink.buffer-flush.interval"

	propertiesPrefix  = "properties."
	propCommitOffsets = "commit.offsets.on.checkpoint" // under properties., as in Flink
)

// OptTransactionNamingStrategy is Flink's (flink-connector-kafka 4.x) choice
// of how an exactly-once sink names its transactions: NamingIncrementing
// (the default) or NamingPooling.
const OptTransactionNamingStrategy = "sink.transaction-naming-strategy"

// Enumerated option values.
const (
	StartEarliest        = "earliest-offset"
	StartLatest          = "latest-offset"
	StartGroupOffsets    = "group-offsets"
	StartTimestamp       = "timestamp"
	StartSpecificOffsets = "specific-offsets"
	BoundedUnbounded     = "unbounded"

	PartitionerDefault    = "default"
	PartitionerFixed      = "fixed"
	PartitionerRoundRobin = "round-robin"

	DeliveryNone        = "none"
	DeliveryAtLeastOnce = "at-least-once"
	DeliveryExactlyOnce = "exactly-once"

	// NamingIncrementing names each transaction after its checkpoint,
	// <prefix>-<subtask>-<checkpoint id>: a new transactional id per
	// checkpoint, each of which the broker remembers for
	// transactional.id.expiration.ms (7 days by default).
	NamingIncrementing = "INCREMENTING"
	// NamingPooling reuses a few transactional ids per subtask,
	// <prefix>-<subtask>-<n> with n the lowest number not held by a
	// transaction that is open or waiting for its commit. Recovery lists the
	// broker's transactions, which needs Kafka 3.0 or newer.
	NamingPooling = "POOLING"

	fieldsIncludeAll       = "ALL"
	fieldsIncludeExceptKey = "EXCEPT_KEY"
)

var (
	startupModes = []string{StartEarliest, StartLatest, StartGroupOffsets, StartTimestamp, StartSpecificOffsets}
	boundedModes = []string{BoundedUnbounded, StartLatest, StartGroupOffsets, StartTimestamp, StartSpecificOffsets}
)

// Defaults.
const (
	defaultDiscoveryInterval = 5 * time.Minute
	defaultRequestTimeout    = 30 * time.Second
)

// Metadata keys.
const (
	MetaTopic         = "topic"
	MetaPartition     = "partition"
	MetaHeaders       = "headers"
	MetaLeaderEpoch   = "leader-epoch"
	MetaOffset        = "offset"
	MetaTimestamp     = "timestamp"
	MetaTimestampType = "timestamp-type"
)

// readableKeys is the order in which Flink lists the readable metadata.
var readableKeys = []string{MetaTopic, MetaPartition, MetaHeaders, MetaLeaderEpoch, MetaOffset, MetaTimestamp, MetaTimestampType}

var headersType = types.MapType(types.StringType, types.BytesType)

var readableMetadata = map[string]types.Type{
	MetaTopic:         types.StringType.WithNullable(false),
	MetaPartition:     types.IntType.WithNullable(false),
	MetaHeaders:       headersType.WithNullable(false),
	MetaLeaderEpoch:   types.IntType,
	MetaOffset:        types.BigIntType.WithNullable(false),
	MetaTimestamp:     types.TimestampLTZType(3).WithNullable(false),
	MetaTimestampType: types.StringType.WithNullable(false),
}

var writableKeys = []string{MetaHeaders, MetaTimestamp}

var writableMetadata = map[string]types.Type{
	MetaHeaders:   headersType,
	MetaTimestamp: types.TimestampLTZType(3),
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// tableConfig is what the source and the sink of both connectors take from
// a table's options.
type tableConfig struct {
	tc         *connectors.TableContext
	name       string // the table's name for messages
	identifier string // "kafka" or "upsert-kafka"
	upsert     bool

	servers []string
	topics  []string
	pattern *regexp.Regexp
	props   map[string]string // properties.* without the prefix

	keyFormatKey   string // "" when there is no key format
	valueFormatKey string // "format" or "value.format"
	keyIdx         []int  // physical positions the key format covers
	valueIdx       []int  // physical positions the value format covers
	keySchema      types.Schema
	valueSchema    types.Schema
	// valueMode is what the value format's records carry: insert-only, or
	// a changelog for debezium-json, canal-json and maxwell-json.
	valueMode types.ChangelogMode
	// valueEncodeMode is what the value format's encoders accept.
	valueEncodeMode types.ChangelogMode
	// valueMeta are the value format's metadata keys ('value.<key>') the
	// table reads, for a formats.MetadataFormat; nil otherwise.
	valueMetaKeys map[string]types.Type
	valueMetaList []string // in Flink's documented order, for messages

	requestTimeout time.Duration
	clientID       string
	groupID        string
}

// newTableConfig reads the options both directions share. keyFields are
// the key columns (the primary key for upsert-kafka, 'key.fields' for kafka).
func newTableConfig(tc *connectors.TableContext, identifier string, upsert bool) (*tableConfig, error) {
	opts := connectors.Options(tc.Options)
	c := &tableConfig{tc: tc, name: tc.Name, identifier: identifier, upsert: upsert, props: map[string]string{}}
	if c.name == "" {
		c.name = tc.ObjectName
	}
	for k, v := range tc.Options {
		if rest, ok := strings.CutPrefix(k, propertiesPrefix); ok {
			c.props[rest] = v
		}
	}
	for _, s := range strings.Split(tc.Options[OptBootstrapServers], ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.servers = append(c.servers, s)
		}
	}
	if len(c.servers) == 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a comma-separated list of host:port addresses, but was: %s",
			OptBootstrapServers, tc.Options[OptBootstrapServers])
	}
	if opts.Has(OptTopic) {
		for _, t := range strings.Split(tc.Options[OptTopic], ";") {
			if t = strings.TrimSpace(t); t != "" {
				c.topics = append(c.topics, t)
			}
		}
		if len(c.topics) == 0 {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected one or more topic names separated by ';', but was: %s", OptTopic, tc.Options[OptTopic])
		}
	}
	if p, ok := tc.Options[OptTopicPattern]; ok {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a regular expression, but was: %s (%v)", OptTopicPattern, p, err)
		}
		c.pattern = re
	}
	if c.topics != nil && c.pattern != nil {
		return nil, errors.New("Option 'topic' and 'topic-pattern' shouldn't be set together.")
	}
	if c.topics == nil && c.pattern == nil {
		return nil, errors.New("Either 'topic' or 'topic-pattern' must be set.")
	}

	if err := c.parseProperties(); err != nil {
		return nil, err
	}
	if err := c.layout(); err != nil {
		return nil, err
	}
	if err := c.formatModes(); err != nil {
		return nil, err
	}
	return c, nil
}

// valueMetadataPrefix prefixes the value format's metadata keys, as Flink's
// Kafka connector exposes them.
const valueMetadataPrefix = "value."

// formatModes reads the changelog modes and metadata of the key and value
// formats, with Flink's checks: a key format and upsert-kafka's value
// format must be insert-only.
func (c *tableConfig) formatModes() error {
	c.valueMode, c.valueEncodeMode = types.InsertOnly, types.InsertOnly
	if c.tc.Formats == nil {
		return nil // CreateDecoder/CreateEncoder report the missing registry
	}
	if c.keyFormatKey != "" {
		kf, err := connectors.FormatFactory(c.tc, c.keyFormatKey)
		if err != nil {
			return err
		}
		if !formats.DecodingMode(kf).IsInsertOnly() {
			if c.upsert {
				return fmt.Errorf("'%s' connector doesn't support '%s' as key format, because '%s' is not in insert-only mode.", c.identifier, kf.Identifier(), kf.Identifier())
			}
			return fmt.Errorf("A key format should only deal with INSERT-only records. The key format '%s' of table '%s' produces a changelog.", kf.Identifier(), c.name)
		}
	}
	vf, err := connectors.FormatFactory(c.tc, c.valueFormatKey)
	if err != nil {
		return err
	}
	c.valueMode, c.valueEncodeMode = formats.DecodingMode(vf), formats.EncodingMode(vf)
	if c.upsert && !c.valueMode.IsInsertOnly() {
		return fmt.Errorf("'%s' connector doesn't support '%s' as value format, because '%s' is not in insert-only mode.", c.identifier, vf.Identifier(), vf.Identifier())
	}
	if mf, ok := vf.(formats.MetadataFormat); ok {
		c.valueMetaKeys = map[string]types.Type{}
		for k, t := range mf.ReadableMetadata() {
			c.valueMetaKeys[valueMetadataPrefix+k] = t
		}
		for _, k := range mf.MetadataKeys() {
			c.valueMetaList = append(c.valueMetaList, valueMetadataPrefix+k)
		}
	}
	return nil
}

// layout works out which physical columns the key and value formats cover,
// as Flink's createKeyFormatProjection / createValueFormatProjection do.
func (c *tableConfig) layout() error {
	tc := c.tc
	opts := connectors.Options(tc.Options)
	if opts.Has(OptFormat) {
		c.valueFormatKey = OptFormat
		if opts.Has(OptValueFormat) {
			return fmt.Errorf("Option '%s' and '%s' shouldn't be set together.", OptFormat, OptValueFormat)
		}
	} else if opts.Has(OptValueFormat) {
		c.valueFormatKey = OptValueFormat
	} else {
		return fmt.Errorf("Could not find required scan format '%s'.", OptValueFormat)
	}
	physical := tc.Physical.Names()
	prefix := tc.Options[OptKeyFieldsPrefix]

	var keyFields []string
	if c.upsert {
		for _, i := range tc.PrimaryKey {
			keyFields = append(keyFields, physical[i])
		}
		c.keyFormatKey = OptKeyFormat
	} else {
		_, hasKeyFormat := tc.Options[OptKeyFormat]
		rawFields, hasKeyFields := tc.Options[OptKeyFields]
		for _, f := range strings.Split(rawFields, ";") {
			if f = strings.TrimSpace(f); f != "" {
				keyFields = append(keyFields, f)
			}
		}
		if !hasKeyFormat && hasKeyFields {
			return fmt.Errorf("The option '%s' can only be declared if a key format is defined using '%s'.", OptKeyFields, OptKeyFormat)
		}
		if hasKeyFormat && len(keyFields) == 0 {
			return fmt.Errorf("A key format '%s' requires the declaration of one or more of key fields using '%s'.", OptKeyFormat, OptKeyFields)
		}
		if hasKeyFormat {
			c.keyFormatKey = OptKeyFormat
		}
	}
	for _, f := range keyFields {
		pos := tc.Physical.Index(f)
		if pos < 0 {
			return fmt.Errorf("Could not find the field '%s' in the table schema for usage in the key format. A key field must be a regular, physical column. The following columns can be selected in the '%s' option:\n[%s]",
				f, OptKeyFields, strings.Join(physical, ", "))
		}
		if !strings.HasPrefix(f, prefix) {
			return fmt.Errorf("All fields in '%s' must be prefixed with '%s' when option '%s' is set but field '%s' is not prefixed.",
				OptKeyFields, prefix, OptKeyFieldsPrefix, f)
		}
		c.keyIdx = append(c.keyIdx, pos)
		c.keySchema = append(c.keySchema, types.Column{Name: f[len(prefix):], Type: tc.Physical[pos].Type})
	}

	include, err := opts.Enum(OptValueFieldsInclude, []string{fieldsIncludeAll, fieldsIncludeExceptKey}, fieldsIncludeAll)
	if err != nil {
		return err
	}
	if include == fieldsIncludeAll && prefix != "" {
		return fmt.Errorf("A key prefix is not allowed when option '%s' is set to '%s'. Set it to '%s' instead to avoid field overlaps.",
			OptValueFieldsInclude, fieldsIncludeAll, fieldsIncludeExceptKey)
	}
	for i, col := range tc.Physical {
		if include == fieldsIncludeExceptKey && contains(c.keyIdx, i) {
			continue
		}
		c.valueIdx = append(c.valueIdx, i)
		c.valueSchema = append(c.valueSchema, col)
	}
	return nil
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// parseProperties reads the Kafka client properties both directions share
// (validateProperties has refused the ones the connector does not know).
func (c *tableConfig) parseProperties() error {
	c.requestTimeout = defaultRequestTimeout
	if v, ok := c.props["request.timeout.ms"]; ok {
		ms, err := positiveInt(propertiesPrefix+"request.timeout.ms", v)
		if err != nil {
			return err
		}
		c.requestTimeout = time.Duration(ms) * time.Millisecond
	}
	c.clientID = c.props["client.id"]
	c.groupID = c.props["group.id"]
	if p, ok := c.props["security.protocol"]; ok && !strings.EqualFold(strings.TrimSpace(p), "PLAINTEXT") {
		return fmt.Errorf("Invalid value for option '%ssecurity.protocol'. Only PLAINTEXT connections are supported yet, but was: %s", propertiesPrefix, p)
	}
	return nil
}

func positiveInt(key, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("Invalid value for option '%s'. Expected a positive integer, but was: %s", key, v)
	}
	return n, nil
}

func nonNegativeInt(key, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("Invalid value for option '%s'. Expected a non-negative integer, but was: %s", key, v)
	}
	return n, nil
}

// commonClientOpts are the franz-go options of every client.
func (c *tableConfig) commonClientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.servers...),
		kgo.DialTimeout(min(c.requestTimeout, 10*time.Second)),
		kgo.RetryTimeout(c.requestTimeout),
	}
	if c.clientID != "" {
		opts = append(opts, kgo.ClientID(c.clientID))
	}
	if v, ok := c.props["metadata.max.age.ms"]; ok {
		if ms, err := positiveInt(propertiesPrefix+"metadata.max.age.ms", v); err == nil {
			opts = append(opts, kgo.MetadataMaxAge(time.Duration(ms)*time.Millisecond))
		}
	}
	return opts
}

// consumerOpts maps the consumer properties the source honours.
func (c *tableConfig) consumerOpts() ([]kgo.Opt, bool, error) {
	// A short minimum metadata age lets partitions added by discovery be
	// fetched at once rather than after the client's default 5 s.
	opts := append(c.commonClientOpts(), kgo.KeepControlRecords(), kgo.MetadataMinAge(250*time.Millisecond),
		// The Java consumer's fetch.max.wait.ms default (franz-go waits 5 s):
		// partitions added to the reader join the next fetch sooner.
		kgo.FetchMaxWait(500*time.Millisecond),
		// franz-go v1.22.3 reads a fetch session's id in Close while a
		// fetch in flight writes it (a data race the race detector
		// reports); without fetch sessions neither happens. They save
		// broker work for consumers of many partitions, which a reader
		// of one subtask's share of a topic rarely is.
		kgo.DisableFetchSessions())
	readCommitted := true
	opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if v, ok := c.props["isolation.level"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "read_committed":
			readCommitted = true
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		case "read_uncommitted":
			readCommitted = false
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		default:
			return nil, false, fmt.Errorf("Invalid value for option '%sisolation.level'. Expected one of [read_committed, read_uncommitted], but was: %s", propertiesPrefix, v)
		}
	}
	ints := []struct {
		key string
		opt func(int64) kgo.Opt
	}{
		{"fetch.max.bytes", func(n int64) kgo.Opt { return kgo.FetchMaxBytes(int32(n)) }},
		{"max.partition.fetch.bytes", func(n int64) kgo.Opt { return kgo.FetchMaxPartitionBytes(int32(n)) }},
		{"fetch.min.bytes", func(n int64) kgo.Opt { return kgo.FetchMinBytes(int32(n)) }},
		{"fetch.max.wait.ms", func(n int64) kgo.Opt { return kgo.FetchMaxWait(time.Duration(n) * time.Millisecond) }},
	}
	for _, p := range ints {
		if v, ok := c.props[p.key]; ok {
			n, err := positiveInt(propertiesPrefix+p.key, v)
			if err != nil {
				return nil, false, err
			}
			opts = append(opts, p.opt(n))
		}
	}
	return opts, readCommitted, nil
}

// producerOpts maps the producer properties the sink honours.
func (c *tableConfig) producerOpts() ([]kgo.Opt, error) {
	opts := append(c.commonClientOpts(), kgo.ProduceRequestTimeout(c.requestTimeout))
	idempotent := true
	if v, ok := c.props["acks"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "all", "-1":
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		case "1":
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
			idempotent = false
		case "0":
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
			idempotent = false
		default:
			return nil, fmt.Errorf("Invalid value for option '%sacks'. Expected one of [all, -1, 0, 1], but was: %s", propertiesPrefix, v)
		}
	}
	if v, ok := c.props["enable.idempotence"]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			if !idempotent {
				return nil, fmt.Errorf("Invalid value for option '%senable.idempotence'. Idempotence requires '%sacks' = 'all', but acks was: %s", propertiesPrefix, propertiesPrefix, c.props["acks"])
			}
		case "false":
			idempotent = false
		default:
			return nil, fmt.Errorf("Invalid value for option '%senable.idempotence'. Expected one of [true, false], but was: %s", propertiesPrefix, v)
		}
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if v, ok := c.props["linger.ms"]; ok {
		n, err := nonNegativeInt(propertiesPrefix+"linger.ms", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.ProducerLinger(time.Duration(n)*time.Millisecond))
	}
	if v, ok := c.props["delivery.timeout.ms"]; ok {
		n, err := positiveInt(propertiesPrefix+"delivery.timeout.ms", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.RecordDeliveryTimeout(time.Duration(n)*time.Millisecond))
	}
	if v, ok := c.props["batch.size"]; ok {
		n, err := positiveInt(propertiesPrefix+"batch.size", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(n)))
	}
	if v, ok := c.props["retries"]; ok {
		n, err := nonNegativeInt(propertiesPrefix+"retries", v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.RecordRetries(int(n)))
	}
	if v, ok := c.props["compression.type"]; ok {
		var codec kgo.CompressionCodec
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "none":
			codec = kgo.NoCompression()
		case "gzip":
			codec = kgo.GzipCompression()
		case "snappy":
			codec = kgo.SnappyCompression()
		case "lz4":
			codec = kgo.Lz4Compression()
		case "zstd":
			codec = kgo.ZstdCompression()
		default:
			return nil, fmt.Errorf("Invalid value for option '%scompression.type'. Expected one of [none, gzip, snappy, lz4, zstd], but was: %s", propertiesPrefix, v)
		}
		opts = append(opts, kgo.ProducerBatchCompression(codec))
	}
	return opts, nil
}

// HonouredProperties lists the 'properties.*' keys (without the prefix) that
// change what the connector does. Consumer properties act when the table is
// read and producer properties when it is written: one table definition
// serves both directions, as in Flink. Each call returns a new slice.
func HonouredProperties() []string {
	return []string{
		"bootstrap.servers", "group.id", "commit.offsets.on.checkpoint", "client.id", "request.timeout.ms", "metadata.max.age.ms",
		"security.protocol",
		"isolation.level", "auto.offset.reset", "fetch.max.bytes", "max.partition.fetch.bytes",
		"fetch.min.bytes", "fetch.max.wait.ms",
		"acks", "enable.idempotence", "linger.ms", "delivery.timeout.ms", "batch.size", "compression.type", "retries",
		propTransactionTimeout,
	}
}

// NoOpProperties are the Kafka client properties that are accepted and have
// no effect, each with the reason. Any other 'properties.*' key is refused:
// the Java client would act on it, this engine's client would not. Each
// call returns a new map.
func NoOpProperties() map[string]string {
	return map[string]string{
		"enable.auto.commit":            "the source never auto-commits; offsets are committed when a checkpoint completes (Flink's KafkaSource overrides it to false as well)",
		"auto.commit.interval.ms":       "the source never auto-commits (see enable.auto.commit)",
		"key.deserializer":              "records are read as bytes and decoded by the table's key and value formats (Flink overrides it as well)",
		"value.deserializer":            "records are read as bytes and decoded by the table's key and value formats (Flink overrides it as well)",
		"key.serializer":                "rows are encoded by the table's key and value formats (Flink overrides it as well)",
		"value.serializer":              "rows are encoded by the table's key and value formats (Flink overrides it as well)",
		"session.timeout.ms":            "group membership setting: the source assigns partitions to its subtasks itself and never joins the group, as Flink's KafkaSource",
		"heartbeat.interval.ms":         "group membership setting (see session.timeout.ms)",
		"max.poll.interval.ms":          "group membership setting (see session.timeout.ms)",
		"partition.assignment.strategy": "group membership setting (see session.timeout.ms)",
		"group.instance.id":             "group membership setting (see session.timeout.ms)",
		"max.poll.records":              "the reader hands rows to the engine in the engine's batches, not per poll",
		"transactional.id":              "the exactly-once sink derives its transactional ids from 'sink.transactional-id-prefix' (Flink overrides it as well)",
	}
}

// validateProperties refuses 'properties.*' keys the connector neither
// honours nor lists as a no-op.
func validateProperties(tc *connectors.TableContext) error {
	honoured, noops := HonouredProperties(), NoOpProperties()
	var bad []string
	for k := range tc.Options {
		p, ok := strings.CutPrefix(k, propertiesPrefix)
		if !ok {
			continue
		}
		if _, noop := noops[p]; noop || slices.Contains(honoured, p) {
			continue
		}
		bad = append(bad, k)
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	supported := honoured
	for p := range noops {
		supported = append(supported, p)
	}
	sort.Strings(supported)
	return fmt.Errorf("Unsupported Kafka client properties found for table '%s':\n\n%s\n\nThe Kafka client of flinksql (franz-go) would not act on them. Supported properties are:\n\n%s",
		tc.Name, strings.Join(bad, "\n"), propertiesPrefix+strings.Join(supported, "\n"+propertiesPrefix))
}

// resolveMetadata checks the table's metadata columns against the keys the
// direction supports and returns their keys in column order.
func (c *tableConfig) resolveMetadata(reading bool) ([]string, error) {
	allowed, order, verb := readableMetadata, readableKeys, "reading"
	if !reading {
		allowed, order, verb = writableMetadata, writableKeys, "writing"
	} else if c.valueMetaKeys != nil {
		allowed = c.readableMetadata()
		order = append(append([]string(nil), c.valueMetaList...), readableKeys...)
	}
	var keys []string
	for _, m := range c.tc.Metadata {
		if !reading && m.Virtual {
			continue
		}
		if _, ok := allowed[m.Key]; !ok {
			return nil, fmt.Errorf("Invalid metadata key '%s' in column '%s' of table '%s'. The %s connector supports the following metadata keys for %s:\n%s",
				m.Key, m.Name, c.name, c.identifier, verb, strings.Join(order, "\n"))
		}
		keys = append(keys, m.Key)
	}
	return keys, nil
}

// readableMetadata is the connector's readable metadata and the value
// format's (prefixed 'value.').
func (c *tableConfig) readableMetadata() map[string]types.Type {
	if c.valueMetaKeys == nil {
		return readableMetadata
	}
	m := make(map[string]types.Type, len(readableMetadata)+len(c.valueMetaKeys))
	for k, t := range readableMetadata {
		m[k] = t
	}
	for k, t := range c.valueMetaKeys {
		m[k] = t
	}
	return m
}

// parseSpecificOffsets parses 'partition:0,offset:42;partition:1,offset:300'.
func parseSpecificOffsets(key, text string) (map[int32]int64, error) {
	bad := fmt.Errorf("Invalid properties '%s' should follow the format 'partition:0,offset:42;partition:1,offset:300', but is '%s'.", key, text)
	out := map[int32]int64{}
	pairs := strings.Split(text, ";")
	for _, pair := range pairs {
		kv := strings.Split(pair, ",")
		if len(kv) != 2 || !strings.HasPrefix(kv[0], "partition:") || !strings.HasPrefix(kv[1], "offset:") {
			return nil, bad
		}
		p, err := strconv.ParseInt(strings.TrimPrefix(kv[0], "partition:"), 10, 32)
		if err != nil || p < 0 {
			return nil, bad
		}
		o, err := strconv.ParseInt(strings.TrimPrefix(kv[1], "offset:"), 10, 64)
		if err != nil {
			return nil, bad
		}
		out[int32(p)] = o
	}
	return out, nil
}

// offsetsSpec is a startup or bounded position: a mode and its parameters.
type offsetsSpec struct {
	mode      string
	timestamp int64
	specific  map[int32]int64 // for the single topic of 'topic'
}

// parseOffsetsSpec reads a startup ('scan.startup.') or bounded
// ('scan.bounded.') mode and its parameters.
func (c *tableConfig) parseOffsetsSpec(modeKey, tsKey, offsetsKey string, allowed []string, def, kind string) (offsetsSpec, error) {
	opts := connectors.Options(c.tc.Options)
	mode, err := opts.Enum(modeKey, allowed, def)
	if err != nil {
		return offsetsSpec{}, err
	}
	s := offsetsSpec{mode: mode}
	switch mode {
	case StartTimestamp:
		if !opts.Has(tsKey) {
			return s, fmt.Errorf("'%s' is required in '%s' %s mode but missing.", tsKey, StartTimestamp, kind)
		}
		if s.timestamp, err = opts.Long(tsKey, 0); err != nil {
			return s, err
		}
	case StartSpecificOffsets:
		if !opts.Has(offsetsKey) {
			return s, fmt.Errorf("'%s' is required in '%s' %s mode but missing.", offsetsKey, StartSpecificOffsets, kind)
		}
		if len(c.topics) != 1 {
			return s, errors.New("Currently Kafka source only supports specific offset for single topic.")
		}
		if s.specific, err = parseSpecificOffsets(offsetsKey, c.tc.Options[offsetsKey]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// contextWithTimeout bounds an administrative call by the request timeout.
func (c *tableConfig) contextWithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.requestTimeout)
}

// serversText is the bootstrap servers for messages.
func (c *tableConfig) serversText() string { return strings.Join(c.servers, ",") }

// javaStringHash is Java's String.hashCode over the UTF-16 code units of s.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// splitOwner is the subtask that reads tp among n, as Flink's
// KafkaSourceEnumerator assigns it.
func splitOwner(tp TopicPartition, n int) int {
	start := int((javaStringHash(tp.Topic)*31)&0x7FFFFFFF) % n
	return (start + int(tp.Partition)) % n
}

// sortTopicPartitions orders partitions by topic, then partition.
func sortTopicPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// recordPrefix quotes the first bytes of a record for an error message.
func recordPrefix(data []byte) string {
	if data == nil {
		return "null"
	}
	const n = 100
	if len(data) <= n {
		return strconv.Quote(string(data))
	}
	return strconv.Quote(string(data[:n])) + fmt.Sprintf(" (first %d of %d bytes)", n, len(data))
}
