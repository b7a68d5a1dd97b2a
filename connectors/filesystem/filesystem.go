// Package filesystem owns the 'filesystem' connector for local files: a
// source that reads the files under 'path' line by line through the table's
// format decoder (each file is one split), and a sink that writes part files
// through the format encoder. Sink files are written hidden and in progress,
// become pending when they roll, and are committed (renamed to their final
// name) only when complete, so a reader never sees a partial file.
//
// PARTITIONED BY tables are rejected by the planner; the partition options
// (partition.*, sink.partition-commit.*, sink.shuffle-by-partition.enable)
// are accepted, as Flink accepts them on a table without partitions, and
// have no effect, as in Flink on such a table. 'auto-compaction' = 'true' is
// refused.
package filesystem

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "filesystem"

// Option keys.
const (
	OptPath                   = "path"
	OptFormat                 = "format"
	OptMonitorInterval        = "source.monitor-interval"
	OptPathRegexPattern       = "source.path.regex-pattern"
	OptReportStatistics       = "source.report-statistics"
	OptRollingFileSize        = "sink.rolling-policy.file-size"
	OptRolloverInterval       = "sink.rolling-policy.rollover-interval"
	OptInactivityInterval     = "sink.rolling-policy.inactivity-interval"
	OptRollingCheckInterval   = "sink.rolling-policy.check-interval"
	OptSinkParallelism        = "sink.parallelism"
	OptPartitionDefaultName   = "partition.default-name"
	OptShuffleByPartition     = "sink.shuffle-by-partition.enable"
	OptAutoCompaction         = "auto-compaction"
	OptCompactionFileSize     = "compaction.file-size"
	defaultRollingFileSize    = 128 << 20
	defaultRolloverInterval   = 30 * time.Minute
	defaultInactivityInterval = 30 * time.Minute
	defaultCheckInterval      = time.Minute
)

// Metadata keys the source can read.
const (
	MetaFilePath         = "file.path"
	MetaFileName         = "file.name"
	MetaFileSize         = "file.size"
	MetaModificationTime = "file.modification-time"
)

var readableMetadata = map[string]types.Type{
	MetaFilePath:         types.StringType.WithNullable(false),
	MetaFileName:         types.StringType.WithNullable(false),
	MetaFileSize:         types.BigIntType.WithNullable(false),
	MetaModificationTime: types.TimestampLTZType(3).WithNullable(false),
}

// Factory creates filesystem sources and sinks.
type Factory struct{}

// NewFactory returns the filesystem factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return []string{OptPath, OptFormat} }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string {
	return []string{
		OptMonitorInterval, OptPathRegexPattern, OptReportStatistics,
		OptRollingFileSize, OptRolloverInterval, OptInactivityInterval, OptRollingCheckInterval,
		OptSinkParallelism, OptPartitionDefaultName, OptShuffleByPartition,
		OptAutoCompaction, OptCompactionFileSize,
		"partition.time-extractor.kind", "partition.time-extractor.class",
		"partition.time-extractor.timestamp-formatter", "partition.time-extractor.timestamp-pattern",
		"sink.partition-commit.trigger", "sink.partition-commit.delay",
		"sink.partition-commit.watermark-time-zone", "sink.partition-commit.policy.kind",
		"sink.partition-commit.policy.class", "sink.partition-commit.policy.class.parameters",
		"sink.partition-commit.success-file.name",
		connectors.OptLookupCache, connectors.OptFullReloadStrategy, connectors.OptFullPeriodicReloadInterval,
		connectors.OptFullPeriodicReloadScheduleMode, connectors.OptFullTimedReloadISOTime,
		connectors.OptFullTimedReloadIntervalInDays,
	}
}

// tableConfig is what both the source and the sink take from the options.
type tableConfig struct {
	tc        *connectors.TableContext
	name      string // the table's object name, for messages
	dir       string // local path, without the file: scheme
	uriPrefix string // "file:" when the user gave a URI, for file.path
	format    string
}

func newTableConfig(f *Factory, tc *connectors.TableContext) (*tableConfig, error) {
	if err := connectors.ValidateOptions(tc, f, OptFormat); err != nil {
		return nil, err
	}
	name := tc.ObjectName
	if name == "" {
		name = tc.Name
	}
	c := &tableConfig{tc: tc, name: name, format: tc.Options[OptFormat]}
	if c.format == "avro" {
		// Flink's filesystem 'avro' is a bulk format (Avro object container
		// files with a header and blocks); this connector reads and writes
		// records one per line.
		return nil, fmt.Errorf("filesystem table %s: format 'avro' (Avro object container files) is not supported by the filesystem connector yet; use 'json', 'csv', 'raw' or a changelog format ('debezium-json', 'canal-json', 'maxwell-json'), or 'avro' on the kafka connector", name)
	}
	p := tc.Options[OptPath]
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		p, c.uriPrefix = rest, "file:"
	} else if rest, ok := strings.CutPrefix(p, "file:"); ok && strings.HasPrefix(rest, "/") {
		p, c.uriPrefix = rest, "file:"
	} else if i := strings.Index(p, "://"); i > 0 {
		return nil, fmt.Errorf("filesystem table %s: unsupported file system scheme '%s' in option 'path' (only local paths and file:// are supported)", name, p[:i])
	}
	if p == "" {
		return nil, fmt.Errorf("filesystem table %s: option 'path' is empty", name)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("filesystem table %s: path %q: %w", name, p, err)
	}
	c.dir = abs
	return c, nil
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	c, err := newTableConfig(f, tc)
	if err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	s := &Source{cfg: c, skipEmptyLines: c.format != "raw"}
	if s.monitor, err = opts.Duration(OptMonitorInterval, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptMonitorInterval) && s.monitor <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive duration, but was: %s", OptMonitorInterval, opts[OptMonitorInterval])
	}
	if pattern, ok := tc.Options[OptPathRegexPattern]; ok {
		if s.pathRegex, err = regexp.Compile("^(?:" + pattern + ")$"); err != nil {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a regular expression, but was: %s (%v)", OptPathRegexPattern, pattern, err)
		}
	}
	for _, m := range tc.Metadata {
		if _, ok := readableMetadata[m.Key]; !ok {
			return nil, fmt.Errorf("Invalid metadata key '%s' in column '%s' of table '%s'. The filesystem source supports the following metadata keys for reading:\n%s",
				m.Key, m.Name, tc.Name, strings.Join([]string{MetaFilePath, MetaFileName, MetaFileSize, MetaModificationTime}, "\n"))
		}
		s.metaKeys = append(s.metaKeys, m.Key)
	}
	if err := checkLookupOptions(tc); err != nil {
		return nil, err
	}
	// Create one decoder now so that bad format options fail before the job starts.
	if _, err := connectors.CreateDecoder(tc, OptFormat, tc.Physical); err != nil {
		return nil, err
	}
	if ff, err := connectors.FormatFactory(tc, OptFormat); err == nil {
		s.mode = formats.DecodingMode(ff)
	} else {
		return nil, err
	}
	s.enum = &enumerator{root: c.dir, regex: s.pathRegex, seen: map[string]bool{}}
	return s, nil
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	c, err := newTableConfig(f, tc)
	if err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	s := &Sink{cfg: c, tag: sinkTag(tc.Name), now: time.Now, mode: types.InsertOnly}
	if ff, err := connectors.FormatFactory(tc, OptFormat); err == nil {
		s.mode = formats.EncodingMode(ff)
	}
	compact, err := opts.Bool(OptAutoCompaction, false)
	if err != nil {
		return nil, err
	}
	if compact {
		return nil, fmt.Errorf("filesystem table %s: option '%s' = 'true' is not supported yet (small files are not merged); remove it or set it to 'false'", c.name, OptAutoCompaction)
	}
	if _, err = opts.MemorySize(OptCompactionFileSize, defaultRollingFileSize); err != nil {
		return nil, err
	}
	if s.policy.fileSize, err = opts.MemorySize(OptRollingFileSize, defaultRollingFileSize); err != nil {
		return nil, err
	}
	if s.policy.rollover, err = opts.Duration(OptRolloverInterval, defaultRolloverInterval); err != nil {
		return nil, err
	}
	if s.policy.inactivity, err = opts.Duration(OptInactivityInterval, defaultInactivityInterval); err != nil {
		return nil, err
	}
	if _, err = opts.Duration(OptRollingCheckInterval, defaultCheckInterval); err != nil {
		return nil, err
	}
	if s.parallelism, err = opts.Int(OptSinkParallelism, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptSinkParallelism) && s.parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptSinkParallelism, s.parallelism)
	}
	if _, err := connectors.CreateEncoder(tc, OptFormat, tc.Physical); err != nil {
		return nil, err
	}
	if ff, err := tc.Formats.Lookup(c.format); err == nil {
		if e, ok := ff.(interface{ FileExtension() string }); ok {
			s.extension = e.FileExtension()
		}
	}
	return s, nil
}

// newUUID returns a random (version 4) UUID in its canonical text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var _ exec.SourceReader = (*reader)(nil)
var _ exec.SinkWriter = (*Writer)(nil)
