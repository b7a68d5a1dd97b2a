package builtin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/kafka"
)

// cover says why an option a factory accepts is there: a test that shows it
// changes behaviour, or the reason it is a documented no-op.
type cover struct {
	// test is "<dir>.<TestName>" (dir relative to the module root) for a Go
	// test, or the path of a data-driven test file.
	test string
	// token is what the test must mention; by default the option key (for a
	// 'fields.#.x' key its last segment, '.x').
	token string
	// noop is the reason a documented no-op has no effect.
	noop string
}

func tested(test string) cover          { return cover{test: test} }
func testedBy(test, token string) cover { return cover{test: test, token: token} }
func noop(reason string) cover          { return cover{noop: reason} }

// watermarkCoverage is shared by every source: the planner interprets these
// options (connectors.WatermarkOptions).
var watermarkCoverage = map[string]cover{
	"scan.watermark.emit.strategy":             testedBy("session/testdata/watermark_options", "'scan.watermark.emit.strategy' = 'on-event'"),
	"scan.watermark.idle-timeout":              testedBy("integration.TestIdlePartitionReleasesWatermark", "'scan.watermark.idle-timeout'"),
	"scan.watermark.alignment.group":           testedBy("session/testdata/watermark_options", "watermark alignment is not supported yet"),
	"scan.watermark.alignment.max-drift":       noop("refused by the planner like 'scan.watermark.alignment.group' (watermark alignment is not implemented); see session/testdata/watermark_options"),
	"scan.watermark.alignment.update-interval": noop("refused by the planner like 'scan.watermark.alignment.group' (watermark alignment is not implemented); see session/testdata/watermark_options"),
}

// kafkaShared are the options the kafka and upsert-kafka connectors share
// (one implementation, connectors/kafka).
var kafkaShared = map[string]cover{
	"properties.bootstrap.servers":     testedBy("connectors/kafka.TestMissingTopicAndUnreachableBroker", `"Kafka cluster at "+dead`),
	"topic":                            tested("connectors/kafka.TestTopicListAndPattern"),
	"topic-pattern":                    tested("connectors/kafka.TestRestoreNewPartitionsStartEarliest"),
	"key.format":                       tested("connectors/kafka.TestKeyFieldsExceptKey"),
	"key.fields-prefix":                tested("connectors/kafka.TestKeyFieldsExceptKey"),
	"value.format":                     tested("connectors/kafka.TestKeyFieldsExceptKey"),
	"value.fields-include":             tested("connectors/kafka.TestKeyFieldsExceptKey"),
	"scan.bounded.mode":                tested("connectors/kafka.TestRestoredBoundedReadKeepsStopOffsets"),
	"scan.bounded.specific-offsets":    tested("connectors/kafka.TestStartupAndBoundedModes"),
	"scan.bounded.timestamp-millis":    tested("connectors/kafka.TestRestoredBoundedReadKeepsStopOffsets"),
	"sink.parallelism":                 tested("connectors/kafka.TestScanAndSinkParallelism"),
	"sink.delivery-guarantee":          tested("connectors/kafka.TestSinkSemanticSelectsDeliveryGuarantee"),
	"sink.transactional-id-prefix":     testedBy("connectors/kafka.TestListAndAbortTransactions", "OptTransactionalIDPrefix"),
	"sink.transaction-naming-strategy": testedBy("connectors/kafka.TestTxnPoolingBoundsTransactionalIDs", "OptTransactionNamingStrategy"),
}

// propertyCoverage are the Kafka client properties the connectors honour
// (kafka.HonouredProperties()).
var propertyCoverage = map[string]cover{
	"properties.bootstrap.servers":            kafkaShared["properties.bootstrap.servers"],
	"properties.group.id":                     tested("connectors/kafka.TestOffsetsCommittedOnCheckpointComplete"),
	"properties.commit.offsets.on.checkpoint": tested("connectors/kafka.TestOffsetsNotCommittedWhenDisabled"),
	"properties.client.id":                    testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"client.id"`),
	"properties.request.timeout.ms":           testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"request.timeout.ms"`),
	"properties.metadata.max.age.ms":          testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"metadata.max.age.ms"`),
	"properties.security.protocol":            testedBy("connectors/kafka.TestSinkOptionErrors", "properties.security.protocol"),
	"properties.isolation.level":              tested("integration.TestKafkaSourceReadsCommittedByDefault"),
	"properties.auto.offset.reset":            tested("connectors/kafka.TestStartupAndBoundedModes"),
	"properties.fetch.max.bytes":              testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"fetch.max.bytes"`),
	"properties.max.partition.fetch.bytes":    testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"max.partition.fetch.bytes"`),
	"properties.fetch.min.bytes":              testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"fetch.min.bytes"`),
	"properties.fetch.max.wait.ms":            testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"fetch.max.wait.ms"`),
	"properties.acks":                         testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"acks"`),
	"properties.enable.idempotence":           testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"enable.idempotence"`),
	"properties.linger.ms":                    testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"linger.ms"`),
	"properties.delivery.timeout.ms":          testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"delivery.timeout.ms"`),
	"properties.batch.size":                   testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"batch.size"`),
	"properties.compression.type":             testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"compression.type"`),
	"properties.retries":                      testedBy("connectors/kafka.TestClientPropertiesMapToClientOptions", `"retries"`),
	"properties.transaction.timeout.ms":       tested("connectors/kafka.TestTxnTimeoutAboveBrokerMax"),
}

// optionCoverage maps every option of every built-in connector factory
// (required, optional, the planner's watermark options for sources, and the
// Kafka client properties) to its cover.
var optionCoverage = map[string]map[string]cover{
	"blackhole": {},
	"nexmark": merge(watermarkCoverage, map[string]cover{
		"rate.shape":                testedBy("connectors/nexmark.TestRateShape", "OptRateShape"),
		"rate.period":               testedBy("connectors/nexmark.TestRateShape", "OptRatePeriod"),
		"rate.limited":              testedBy("connectors/nexmark.TestMaxEmitSpeed", "OptRateLimited"),
		"first-event.rate":          testedBy("connectors/nexmark.TestEventModel", "OptFirstEventRate"),
		"next-event.rate":           testedBy("connectors/nexmark.TestRateShape", "OptNextEventRate"),
		"person.avg-size":           testedBy("connectors/nexmark.TestProportionsAndSizes", "OptPersonAvgSize"),
		"auction.avg-size":          testedBy("connectors/nexmark.TestProportionsAndSizes", "OptAuctionAvgSize"),
		"bid.avg-size":              testedBy("connectors/nexmark.TestOptionErrors", "bid.avg-size"),
		"person.proportion":         testedBy("connectors/nexmark.TestProportionsAndSizes", "OptPersonProportion"),
		"auction.proportion":        testedBy("connectors/nexmark.TestProportionsAndSizes", "OptAuctionProportion"),
		"bid.proportion":            testedBy("connectors/nexmark.TestProportionsAndSizes", "OptBidProportion"),
		"bid.hot-ratio.auctions":    testedBy("connectors/nexmark.TestHotItems", "hot auction"),
		"bid.hot-ratio.bidders":     testedBy("connectors/nexmark.TestOptionErrors", "bid.hot-ratio.bidders"),
		"auction.hot-ratio.sellers": testedBy("connectors/nexmark.TestHotSellers", "OptAuctionHotRatioSeller"),
		"events.num":                testedBy("connectors/nexmark.TestStopAtAndEventsNum", "OptEventsNum"),
		"keep-alive":                testedBy("connectors/nexmark.TestKeepAlive", "OptKeepAlive"),
		"stop-at":                   testedBy("connectors/nexmark.TestStopAtAndEventsNum", "OptStopAt"),
		"max-emit-speed":            testedBy("connectors/nexmark.TestMaxEmitSpeed", "OptMaxEmitSpeed"),
		"first-event.time":          testedBy("connectors/nexmark.TestRestoreSameParallelism", "OptFirstEventTime"),
	}),
	"datagen": merge(watermarkCoverage, map[string]cover{
		"rows-per-second":    tested("connectors/datagen.TestThrottle"),
		"number-of-rows":     tested("connectors/datagen.TestNumberOfRows"),
		"scan.parallelism":   tested("connectors/datagen.TestParallelismOption"),
		"fields.#.kind":      tested("connectors/datagen.TestSequenceSplitsEvenly"),
		"fields.#.start":     tested("connectors/datagen.TestSequenceSplitsEvenly"),
		"fields.#.end":       tested("connectors/datagen.TestSequenceSplitsEvenly"),
		"fields.#.min":       tested("connectors/datagen.TestRandomBoundsAndNulls"),
		"fields.#.max":       tested("connectors/datagen.TestRandomBoundsAndNulls"),
		"fields.#.max-past":  tested("connectors/datagen.TestRandomBoundsAndNulls"),
		"fields.#.length":    tested("connectors/datagen.TestRandomBoundsAndNulls"),
		"fields.#.null-rate": tested("connectors/datagen.TestRandomBoundsAndNulls"),
		"fields.#.var-len":   tested("connectors/datagen.TestVarLen"),
	}),
	"iceberg": {
		"catalog-name":                 tested("connectors/iceberg.TestOptionsRefused"),
		"catalog-type":                 tested("connectors/iceberg.TestOptionsRefused"),
		"catalog-impl":                 tested("connectors/iceberg.TestOptionsRefused"),
		"uri":                          tested("connectors/iceberg.TestOptionsRefused"),
		"warehouse":                    tested("connectors/iceberg.TestOptionsRefused"),
		"catalog-database":             tested("connectors/iceberg.TestSinkTableOptions"),
		"catalog-table":                tested("connectors/iceberg.TestSinkTableOptions"),
		"format-version":               tested("connectors/iceberg.TestSinkTableOptions"),
		"write.target-file-size-bytes": tested("connectors/iceberg.TestSinkTableOptions"),
		"write.format.default":         tested("connectors/iceberg.TestOptionsRefused"),
		"write.upsert.enabled":         tested("connectors/iceberg.TestOptionsRefused"),
		"property-version":             tested("connectors/iceberg.TestOptionsRefused"),
		"cache-enabled":                noop("the catalog is opened once per writer and every commit reloads the table's current metadata, so there is no catalog cache to turn off"),
	},
	"filesystem": merge(watermarkCoverage, map[string]cover{
		"path":                                            testedBy("connectors/filesystem.TestSourceReadsDirectoryAtParallelism2", `"file://"+dir`),
		"format":                                          testedBy("connectors/filesystem.TestSourceBadLine", "line.ignore-parse-errors"),
		"source.monitor-interval":                         tested("connectors/filesystem.TestSourceOptions"),
		"source.path.regex-pattern":                       tested("connectors/filesystem.TestSourcePathRegexPattern"),
		"source.report-statistics":                        noop("it only decides which statistics Flink's cost-based optimizer collects; the planner here has no statistics"),
		"sink.rolling-policy.file-size":                   tested("connectors/filesystem.TestSinkCommitsOnFinish"),
		"sink.rolling-policy.rollover-interval":           tested("connectors/filesystem.TestSinkTimeRollingPolicy"),
		"sink.rolling-policy.inactivity-interval":         tested("connectors/filesystem.TestSinkTimeRollingPolicy"),
		"sink.rolling-policy.check-interval":              noop("time-based rolling is checked before every write, so no row goes into a file past its interval, and a file waiting to roll is closed at the next checkpoint; Flink's timer interval has nothing to bound (see rollingPolicy in connectors/filesystem/sink.go)"),
		"sink.parallelism":                                tested("connectors/filesystem.TestSinkParallelismOption"),
		"auto-compaction":                                 tested("connectors/filesystem.TestAutoCompactionRefused"),
		"compaction.file-size":                            noop("only acts with 'auto-compaction' = 'true', which is refused; its value is still checked (TestAutoCompactionRefused)"),
		"partition.default-name":                          noop(partitionNoop),
		"partition.time-extractor.kind":                   noop(partitionNoop),
		"partition.time-extractor.class":                  noop(partitionNoop),
		"partition.time-extractor.timestamp-formatter":    noop(partitionNoop),
		"partition.time-extractor.timestamp-pattern":      noop(partitionNoop),
		"sink.partition-commit.trigger":                   noop(partitionNoop),
		"sink.partition-commit.delay":                     noop(partitionNoop),
		"sink.partition-commit.watermark-time-zone":       noop(partitionNoop),
		"sink.partition-commit.policy.kind":               noop(partitionNoop),
		"sink.partition-commit.policy.class":              noop(partitionNoop),
		"sink.partition-commit.policy.class.parameters":   noop(partitionNoop),
		"sink.partition-commit.success-file.name":         noop(partitionNoop),
		"sink.shuffle-by-partition.enable":                noop(partitionNoop),
		"lookup.cache":                                    tested("connectors/filesystem.TestLookupCacheOptions"),
		"lookup.full-cache.reload-strategy":               tested("connectors/filesystem.TestLookupCacheOptions"),
		"lookup.full-cache.periodic-reload.interval":      tested("connectors/filesystem.TestLookupReloadsChangedFiles"),
		"lookup.full-cache.periodic-reload.schedule-mode": tested("connectors/filesystem.TestLookupCacheOptions"),
		"lookup.full-cache.timed-reload.iso-time":         tested("connectors/filesystem.TestLookupCacheOptions"),
		"lookup.full-cache.timed-reload.interval-in-days": tested("connectors/filesystem.TestLookupCacheOptions"),
	}),
	"postgres-cdc": merge(watermarkCoverage, map[string]cover{
		"hostname":                             tested("connectors/postgrescdc.TestConnectionOptions"),
		"port":                                 tested("connectors/postgrescdc.TestConnectionOptions"),
		"username":                             tested("connectors/postgrescdc.TestConnectionOptions"),
		"password":                             noop("sent to the server with the user name (connString); the test server trusts its users, so no test can show a refused password"),
		"database-name":                        tested("connectors/postgrescdc.TestConnectionOptions"),
		"schema-name":                          tested("connectors/postgrescdc.TestOptionAndTableErrors"),
		"table-name":                           tested("connectors/postgrescdc.TestOptionAndTableErrors"),
		"slot.name":                            tested("connectors/postgrescdc.TestOptionAndTableErrors"),
		"decoding.plugin.name":                 tested("connectors/postgrescdc.TestOptionAndTableErrors"),
		"changelog-mode":                       tested("connectors/postgrescdc.TestUpsertMode"),
		"scan.startup.mode":                    tested("connectors/postgrescdc.TestRestoreResumesAtCheckpoint"),
		"scan.incremental.snapshot.enabled":    tested("connectors/postgrescdc.TestIncrementalSnapshotWithChanges"),
		"scan.incremental.snapshot.chunk.size": tested("connectors/postgrescdc.TestChunkSplitting"),
		"scan.incremental.snapshot.chunk.key-column": tested("connectors/postgrescdc.TestChunkKeyColumn"),
		"scan.incremental.snapshot.backfill.skip":    tested("connectors/postgrescdc.TestIncrementalBackfillSkip"),
		"scan.snapshot.fetch.size":                   tested("connectors/postgrescdc.TestIncrementalSnapshotWithChanges"),
		"debezium.publication.name":                  tested("connectors/postgrescdc.TestOptionAndTableErrors"),
		"debezium.publication.autocreate.mode":       tested("connectors/postgrescdc.TestOptionAndTableErrors"),
	}),
	"jdbc": merge(watermarkCoverage, map[string]cover{
		"url":                          tested("connectors/jdbc.TestAppendSinkTypeMapping"),
		"table-name":                   tested("connectors/jdbc.TestMissingTableAndColumn"),
		"driver":                       noop("pgx speaks PostgreSQL's protocol itself: there is no driver class to load, and the url selects the dialect"),
		"username":                     tested("connectors/jdbc.TestUsernameAndPassword"),
		"password":                     tested("connectors/jdbc.TestUsernameAndPassword"),
		"connection.max-retry-timeout": tested("connectors/jdbc.TestOptionErrors"),
		"scan.partition.column":        tested("connectors/jdbc.TestScanPartitionsEqualPlainScan"),
		"scan.partition.num":           tested("connectors/jdbc.TestScanPartitionsEqualPlainScan"),
		"scan.partition.lower-bound":   tested("connectors/jdbc.TestScanPartitionsEqualPlainScan"),
		"scan.partition.upper-bound":   tested("connectors/jdbc.TestScanPartitionsEqualPlainScan"),
		"scan.fetch-size":              tested("connectors/jdbc.TestScanPartitionsEqualPlainScan"),
		"scan.auto-commit":             noop("PostgreSQL's JDBC driver needs auto-commit off to stream a result by fetch size; the scan here always reads through a cursor in a read-only transaction, so either value streams (its value is still checked to be a boolean)"),
		"lookup.cache":                 tested("connectors/jdbc.TestLookupJoinPartialCache"),
		"lookup.partial-cache.expire-after-access":        noop("handled by the lookup join operator (exec/lookup) for every connector; tested with the values connector (connectors/values.TestLookupCacheOptions)"),
		"lookup.partial-cache.expire-after-write":         tested("connectors/jdbc.TestLookupJoinPartialCache"),
		"lookup.partial-cache.max-rows":                   tested("connectors/jdbc.TestLookupJoinPartialCache"),
		"lookup.partial-cache.cache-missing-key":          testedBy("connectors/jdbc.TestLookupJoinPartialCache", "cache-missing-key"),
		"lookup.full-cache.reload-strategy":               noop("handled by the lookup join operator (exec/lookup) for every connector; tested with the values connector (connectors/values.TestLookupCacheOptions)"),
		"lookup.full-cache.periodic-reload.interval":      tested("connectors/jdbc.TestLookupJoinFullCache"),
		"lookup.full-cache.periodic-reload.schedule-mode": noop("handled by the lookup join operator (exec/lookup) for every connector; tested with the values connector (connectors/values.TestLookupCacheOptions)"),
		"lookup.full-cache.timed-reload.iso-time":         noop("handled by the lookup join operator (exec/lookup) for every connector; tested with the values connector (connectors/values.TestLookupCacheOptions)"),
		"lookup.full-cache.timed-reload.interval-in-days": noop("handled by the lookup join operator (exec/lookup) for every connector; tested with the values connector (connectors/values.TestLookupCacheOptions)"),
		"lookup.max-retries":                              tested("connectors/jdbc.TestLookupRetriesAfterConnectionLoss"),
		"sink.buffer-flush.max-rows":                      tested("connectors/jdbc.TestBufferFlushMaxRows"),
		"sink.buffer-flush.interval":                      tested("connectors/jdbc.TestBufferFlushInterval"),
		"sink.max-retries":                                tested("connectors/jdbc.TestSinkRetriesAfterConnectionLoss"),
		"sink.parallelism":                                tested("connectors/jdbc.TestExactlyOnceCheckpointedJob"),
		"sink.delivery-guarantee":                         tested("connectors/jdbc.TestXATwoPhaseCommit"),
		"sink.transactional-id-prefix":                    tested("connectors/jdbc.TestXALeftoversByOwner"),
	}),
	"kafka": merge(watermarkCoverage, kafkaShared, propertyCoverage, map[string]cover{
		"sink.on-aborted-transaction":             testedBy("connectors/kafka.TestTxnCommitFindsAbortedTransaction", "OptOnAbortedTransaction"),
		"format":                                  tested("connectors/kafka.TestTopicListAndPattern"),
		"key.fields":                              tested("connectors/kafka.TestKeyFieldsExceptKey"),
		"properties.group.id":                     propertyCoverage["properties.group.id"],
		"scan.startup.mode":                       tested("connectors/kafka.TestStartupAndBoundedModes"),
		"scan.startup.specific-offsets":           tested("connectors/kafka.TestStartupAndBoundedModes"),
		"scan.startup.timestamp-millis":           tested("connectors/kafka.TestStartupAndBoundedModes"),
		"scan.topic-partition-discovery.interval": tested("connectors/kafka.TestPartitionDiscovery"),
		"scan.parallelism":                        tested("connectors/kafka.TestScanAndSinkParallelism"),
		"sink.partitioner":                        tested("connectors/kafka.TestSinkPartitioners"),
		"sink.semantic":                           tested("connectors/kafka.TestSinkSemanticSelectsDeliveryGuarantee"),
	}),
	"print": {
		"print-identifier": tested("connectors/print.TestPrintFormats"),
		"standard-error":   tested("connectors/print.TestStandardErrorAndModes"),
		"sink.parallelism": tested("connectors/print.TestStandardErrorAndModes"),
	},
	"upsert-kafka": merge(watermarkCoverage, kafkaShared, propertyCoverage, map[string]cover{
		"key.format":                   testedBy("connectors/upsertkafka.TestSourceReadsChangelog", `{"id":1}`),
		"value.format":                 testedBy("connectors/upsertkafka.TestSourceReadsChangelog", `"name":"anna"`),
		"sink.buffer-flush.max-rows":   tested("connectors/upsertkafka.TestSinkBufferFlushAtMaxRows"),
		"sink.buffer-flush.interval":   tested("connectors/upsertkafka.TestSinkBufferFlushReducesPerKey"),
		"sink.delivery-guarantee":      tested("connectors/upsertkafka.TestSinkDeliveryGuaranteeAndParallelism"),
		"sink.transactional-id-prefix": tested("connectors/upsertkafka.TestSinkDeliveryGuaranteeAndParallelism"),
		"sink.parallelism":             tested("connectors/upsertkafka.TestSinkDeliveryGuaranteeAndParallelism"),
	}),
	"values": merge(watermarkCoverage, map[string]cover{
		"data":             tested("connectors/values.TestReader"),
		"changelog-mode":   tested("connectors/values.TestRowKinds"),
		"bounded":          tested("connectors/values.TestReader"),
		"sink.parallelism": tested("connectors/values.TestSinkParallelism"),
		"async":            tested("session/testdata/lookup_join"),
		"lookup.cache":     tested("session/testdata/lookup_join"),
		"lookup.partial-cache.expire-after-access":        tested("connectors/values.TestLookupCacheOptions"),
		"lookup.partial-cache.expire-after-write":         tested("session/testdata/lookup_join"),
		"lookup.partial-cache.max-rows":                   tested("session/testdata/lookup_join"),
		"lookup.partial-cache.cache-missing-key":          tested("connectors/values.TestLookupCacheOptions"),
		"lookup.full-cache.reload-strategy":               tested("connectors/values.TestLookupCacheOptions"),
		"lookup.full-cache.periodic-reload.interval":      tested("connectors/values.TestLookupCacheOptions"),
		"lookup.full-cache.periodic-reload.schedule-mode": tested("connectors/values.TestLookupCacheOptions"),
		"lookup.full-cache.timed-reload.iso-time":         tested("connectors/values.TestLookupCacheOptions"),
		"lookup.full-cache.timed-reload.interval-in-days": tested("connectors/values.TestLookupCacheOptions"),
	}),
}

const partitionNoop = "acts only on a PARTITIONED BY table, which the filesystem connector refuses (it does not implement connectors.SupportsPartitioning); on a table without partitions Flink ignores it too"

func merge(ms ...map[string]cover) map[string]cover {
	out := map[string]cover{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// acceptedOptions lists what a factory accepts, taken from the factory.
func acceptedOptions(f connectors.Factory) []string {
	opts := append(append([]string(nil), f.RequiredOptions()...), f.OptionalOptions()...)
	if _, ok := f.(connectors.SourceFactory); ok {
		opts = append(opts, connectors.WatermarkOptions...)
	}
	if id := f.Identifier(); id == kafka.Identifier || id == "upsert-kafka" {
		for _, p := range kafka.HonouredProperties() {
			opts = append(opts, "properties."+p)
		}
	}
	sort.Strings(opts)
	return slices.Compact(opts)
}

// TestEveryOptionCovered: every option a built-in connector accepts either
// changes behaviour, shown by a named test that exists and mentions it, or is
// a documented no-op with its reason. A new option without either fails here.
func TestEveryOptionCovered(t *testing.T) {
	root := filepath.Join("..", "..")
	r := NewRegistry(io.Discard, io.Discard)
	tests := testSources{root: root, dirs: map[string]map[string]string{}}
	for _, id := range r.Identifiers() {
		f, _ := r.Lookup(id)
		covers, ok := optionCoverage[id]
		if !ok {
			t.Errorf("connector %s: no entry in optionCoverage", id)
			continue
		}
		accepted := acceptedOptions(f)
		for _, opt := range accepted {
			c, ok := covers[opt]
			switch {
			case !ok:
				t.Errorf("%s option '%s': no test shows what it does and it is not a documented no-op", id, opt)
			case c.noop != "":
				if c.test != "" {
					t.Errorf("%s option '%s': both a test and a no-op reason", id, opt)
				}
			default:
				tok := c.token
				if tok == "" {
					tok = opt
					if i := strings.LastIndex(opt, "#."); i >= 0 {
						tok = "." + opt[i+2:]
					}
				}
				if err := tests.mentions(c.test, tok); err != "" {
					t.Errorf("%s option '%s': %s", id, opt, err)
				}
			}
		}
		for opt := range covers {
			if !slices.Contains(accepted, opt) {
				t.Errorf("%s: optionCoverage lists '%s', which the factory does not accept", id, opt)
			}
		}
	}
	for p, reason := range kafka.NoOpProperties() {
		if strings.TrimSpace(reason) == "" {
			t.Errorf("kafka no-op property '%s' has no reason", p)
		}
		if slices.Contains(kafka.HonouredProperties(), p) {
			t.Errorf("kafka property '%s' is both honoured and a no-op", p)
		}
	}
}

// testSources finds test functions and data-driven test files.
type testSources struct {
	root string
	dirs map[string]map[string]string // dir -> test name -> source text
}

// mentions checks that test exists and its text contains tok; it returns a
// message, or "" when it does.
func (s *testSources) mentions(test, tok string) string {
	if strings.Contains(test, "/testdata/") {
		data, err := os.ReadFile(filepath.Join(s.root, test))
		if err != nil {
			return "test file: " + err.Error()
		}
		if !strings.Contains(string(data), tok) {
			return test + " does not mention " + tok
		}
		return ""
	}
	i := strings.LastIndex(test, ".")
	if i < 0 {
		return "bad test reference " + test
	}
	dir, name := test[:i], test[i+1:]
	funcs, ok := s.dirs[dir]
	if !ok {
		funcs = map[string]string{}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(s.root, dir), func(fi os.FileInfo) bool {
			return strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			return "parsing the tests of " + dir + ": " + err.Error()
		}
		for _, pkg := range pkgs {
			for path, f := range pkg.Files {
				src, err := os.ReadFile(path)
				if err != nil {
					return err.Error()
				}
				for _, d := range f.Decls {
					if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
						funcs[fd.Name.Name] = string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset])
					}
				}
			}
		}
		s.dirs[dir] = funcs
	}
	body, ok := funcs[name]
	if !ok {
		return "test " + test + " does not exist"
	}
	if !strings.Contains(body, tok) {
		return "test " + test + " does not mention " + tok
	}
	return ""
}

// formatCoverage maps every option of every built-in format (under its
// prefix, 'json.' etc., in a table's options) to its cover.
var formatCoverage = map[string]map[string]cover{
	"json": {
		"fail-on-missing-field":          tested("formats/json.TestMissingFields"),
		"ignore-parse-errors":            tested("formats/json.TestDecodeErrors"),
		"timestamp-format.standard":      tested("formats/json.TestEncodeExact"),
		"map-null-key.mode":              tested("formats/json.TestEncodeExact"),
		"map-null-key.literal":           tested("formats/json.TestEncodeExact"),
		"encode.decimal-as-plain-number": tested("formats/json.TestEncodeExact"),
		"encode.ignore-null-fields":      tested("formats/json.TestEncodeExact"),
		"decode.json-parser.enabled":     noop("Flink chooses between its two JSON decoders, which give the same rows; there is one decoder here"),
	},
	"csv": {
		"field-delimiter":                         tested("formats/csv.TestDecodeCases"),
		"disable-quote-character":                 tested("formats/csv.TestDecodeCases"),
		"quote-character":                         tested("formats/csv.TestDecodeCases"),
		"allow-comments":                          tested("formats/csv.TestSkippedRecords"),
		"ignore-parse-errors":                     tested("formats/csv.TestDecodeCases"),
		"array-element-delimiter":                 tested("formats/csv.TestDecodeCases"),
		"escape-character":                        tested("formats/csv.TestDecodeCases"),
		"null-literal":                            tested("formats/csv.TestDecodeCases"),
		"write-bigdecimal-in-scientific-notation": tested("formats/csv.TestEncodeExact"),
	},
	"raw": {
		"charset":    tested("formats/raw.TestRoundTripBytes"),
		"endianness": tested("formats/raw.TestRoundTripBytes"),
	},
	"debezium-json": {
		"schema-include":                 tested("formats/cdc.TestDebeziumSchemaIncludeAndMetadata"),
		"ignore-parse-errors":            tested("formats/cdc.TestDebeziumBadEvents"),
		"timestamp-format.standard":      tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.mode":              tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.literal":           tested("formats/cdc.TestSharedJSONOptions"),
		"encode.decimal-as-plain-number": tested("formats/cdc.TestSharedJSONOptions"),
	},
	"canal-json": {
		"ignore-parse-errors":            tested("formats/cdc.TestCanalBadEvents"),
		"timestamp-format.standard":      tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.mode":              tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.literal":           tested("formats/cdc.TestSharedJSONOptions"),
		"encode.decimal-as-plain-number": tested("formats/cdc.TestSharedJSONOptions"),
		"database.include":               tested("formats/cdc.TestCanalIncludeFilters"),
		"table.include":                  tested("formats/cdc.TestCanalIncludeFilters"),
	},
	"avro": {
		"encoding":                 tested("formats/avro.TestOptionsAndRefusals"),
		"codec":                    tested("formats/avro.TestOptionsAndRefusals"),
		"timestamp_mapping.legacy": tested("formats/avro.TestDerivedSchema"),
	},
	"avro-confluent": {
		"url":                            tested("formats/avro.TestConfluentFormatsRefused"),
		"subject":                        tested("formats/avro.TestConfluentFormatsRefused"),
		"schema":                         tested("formats/avro.TestConfluentFormatsRefused"),
		"properties":                     tested("formats/avro.TestConfluentFormatsRefused"),
		"basic-auth.credentials-source":  tested("formats/avro.TestConfluentFormatsRefused"),
		"basic-auth.user-info":           tested("formats/avro.TestConfluentFormatsRefused"),
		"bearer-auth.credentials-source": tested("formats/avro.TestConfluentFormatsRefused"),
		"bearer-auth.token":              tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.keystore.location":          tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.keystore.password":          tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.truststore.location":        tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.truststore.password":        tested("formats/avro.TestConfluentFormatsRefused"),
	},
	"debezium-avro-confluent": {
		"url":                            tested("formats/avro.TestConfluentFormatsRefused"),
		"subject":                        tested("formats/avro.TestConfluentFormatsRefused"),
		"schema":                         tested("formats/avro.TestConfluentFormatsRefused"),
		"properties":                     tested("formats/avro.TestConfluentFormatsRefused"),
		"basic-auth.credentials-source":  tested("formats/avro.TestConfluentFormatsRefused"),
		"basic-auth.user-info":           tested("formats/avro.TestConfluentFormatsRefused"),
		"bearer-auth.credentials-source": tested("formats/avro.TestConfluentFormatsRefused"),
		"bearer-auth.token":              tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.keystore.location":          tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.keystore.password":          tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.truststore.location":        tested("formats/avro.TestConfluentFormatsRefused"),
		"ssl.truststore.password":        tested("formats/avro.TestConfluentFormatsRefused"),
	},
	"maxwell-json": {
		"ignore-parse-errors":            tested("formats/cdc.TestMaxwellDocumentedEvents"),
		"timestamp-format.standard":      tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.mode":              tested("formats/cdc.TestSharedJSONOptions"),
		"map-null-key.literal":           tested("formats/cdc.TestSharedJSONOptions"),
		"encode.decimal-as-plain-number": tested("formats/cdc.TestSharedJSONOptions"),
	},
}

// TestEveryFormatOptionCovered is TestEveryOptionCovered for the formats.
func TestEveryFormatOptionCovered(t *testing.T) {
	tests := testSources{root: filepath.Join("..", ".."), dirs: map[string]map[string]string{}}
	reg := NewFormats()
	for _, id := range reg.Identifiers() {
		ff, err := reg.Lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		covers, ok := formatCoverage[id]
		if !ok {
			t.Errorf("format %s: no entry in formatCoverage", id)
			continue
		}
		accepted := ff.OptionalOptions()
		for _, opt := range accepted {
			c, ok := covers[opt]
			switch {
			case !ok:
				t.Errorf("format %s option '%s': no test shows what it does and it is not a documented no-op", id, opt)
			case c.noop == "":
				if err := tests.mentions(c.test, opt); err != "" {
					t.Errorf("format %s option '%s': %s", id, opt, err)
				}
			}
		}
		for opt := range covers {
			if !slices.Contains(accepted, opt) {
				t.Errorf("format %s: formatCoverage lists '%s', which the format does not accept", id, opt)
			}
		}
	}
}
