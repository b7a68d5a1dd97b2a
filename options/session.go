package options

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The options a session reads, under Flink's keys and with Flink's
// defaults unless a description says otherwise.
var (
	RuntimeMode = Enum("execution.runtime-mode", "streaming", []string{"streaming", "batch", "automatic"},
		"How jobs run. streaming: incremental results (changelogs); batch: final results over bounded sources only (no retractions, ORDER BY on any column, no checkpoints: a checkpoint interval is ignored with a logged notice); automatic: batch when every source of the statement is bounded, else streaming.")
	Parallelism = Int("parallelism.default", 1, 1,
		"Parallel subtasks of each operator of a job.")
	MaxParallelism = Int("pipeline.max-parallelism", 128, 1,
		"Number of key groups keyed state is split into: the upper bound of any later parallelism. A job restores only checkpoints taken with the same number.")
	PipelineName = String("pipeline.name", "",
		"Name of the jobs started next. A named job resumes from its latest retained checkpoint when it is started again.", nil)
	BufferTimeout = Duration("execution.buffer-timeout", "100 ms",
		"Longest time a partly filled batch waits before it is sent downstream; 0 ms sends every batch at once.")
	AutoWatermarkInterval = Duration("pipeline.auto-watermark-interval", "200 ms",
		"How often sources emit watermarks.")
	IdleTimeout = Duration("table.exec.source.idle-timeout", "0 ms",
		"Time after which a source split without data no longer holds back the watermark; 0 ms never.")
	CDCEventsDuplicate = Bool("table.exec.source.cdc-events-duplicate", false,
		"Whether changelog sources (debezium-json, canal-json, maxwell-json) may deliver a change event more than once, e.g. after a Debezium restart. When true, the events are deduplicated by the table's PRIMARY KEY, which is then required: a stateful ChangelogNormalize keeps each key's last row.")
	LocalTimeZone = String("table.local-time-zone", "default",
		"Session time zone for TIMESTAMP_LTZ values and window alignment: a zone id such as 'Europe/Berlin', 'GMT+08:00', or 'default' (the machine's zone).",
		func(v string) error { _, err := ResolveZone(v); return err })
	ResultMode = Enum("sql-client.execution.result-mode", "table", []string{"table", "changelog", "tableau"},
		"How the shell shows a SELECT's result: table (the materialized result, redrawn in a terminal; printed when the query ends in a script), changelog (every change with its op column) or tableau (rows printed as they arrive).")
	MaxTableResultRows = Int("sql-client.execution.max-table-result.rows", 1000000, math.MinInt32,
		"Most rows the shell keeps of a result in 'table' mode; past it the oldest row is dropped for each new one, as in Flink, and the shell says how many were dropped. 0 or less: no limit.")
	MaxColumnWidth = Int("sql-client.display.max-column-width", 30, 1,
		"Widest column the shell prints before cutting a value.")
	StateTTL = Duration("table.exec.state.ttl", "0 ms",
		"Time after its last write that an idle key's state expires (Flink's OnCreateAndWrite, NeverReturnExpired); 0 ms keeps state forever.")
	MiniBatchEnabled = Bool("table.exec.mini-batch.enabled", false,
		"Buffers input rows of unwindowed aggregations and folds them per key before touching state.")
	MiniBatchLatency = Duration("table.exec.mini-batch.allow-latency", "0 ms",
		"Longest time a mini-batch buffers rows.")
	MiniBatchSize = Int("table.exec.mini-batch.size", -1, -1,
		"Most rows a mini-batch buffers; -1 is unset (required with mini-batch on).")
	NotNullEnforcer = Enum("table.exec.sink.not-null-enforcer", "ERROR", []string{"ERROR", "DROP"},
		"What a sink does with a NULL in a NOT NULL column: fail the job (ERROR) or drop the row, logged and counted (DROP).")
	AsyncLookupCapacity = Int("table.exec.async-lookup.buffer-capacity", 100, 1,
		"Most lookups an asynchronous lookup join instance has in flight at once.")
	AsyncLookupTimeout = Duration("table.exec.async-lookup.timeout", "3 min",
		"Longest time an asynchronous lookup of one row may take, retries included; a lookup that takes longer fails the job.")
	AsyncLookupOutputMode = Enum("table.exec.async-lookup.output-mode", "ORDERED", []string{"ORDERED", "ALLOW_UNORDERED"},
		"Output order of asynchronous lookup joins: ORDERED keeps the input order; ALLOW_UNORDERED lets rows leave as their lookups complete when the input is insert-only (ORDERED otherwise).")
	AllowLateness = Duration("table.exec.emit.allow-lateness", "",
		"Late firing of windows; refused with a message (not implemented).")
	EarlyFireEnabled = Bool("table.exec.emit.early-fire.enabled", false,
		"Early firing of windows; refused with a message when true (not implemented).")
	EarlyFireDelay = Duration("table.exec.emit.early-fire.delay", "",
		"Delay of early firing; only with early firing, which is not implemented.")
	LateFireEnabled = Bool("table.exec.emit.late-fire.enabled", false,
		"Late firing of windows; refused with a message when true (not implemented).")
	LateFireDelay = Duration("table.exec.emit.late-fire.delay", "",
		"Delay of late firing; only with late firing, which is not implemented.")

	CheckpointInterval = Duration("execution.checkpointing.interval", "",
		"Time between checkpoints; unset, checkpointing is off.")
	CheckpointMode = Enum("execution.checkpointing.mode", "EXACTLY_ONCE", []string{"EXACTLY_ONCE", "AT_LEAST_ONCE"},
		"Barrier alignment: EXACTLY_ONCE aligns barriers of all inputs, AT_LEAST_ONCE does not.")
	CheckpointTimeout = Duration("execution.checkpointing.timeout", "10 min",
		"Time after which a checkpoint still running is aborted.")
	CheckpointMinPause = Duration("execution.checkpointing.min-pause", "0 ms",
		"Least time between the end of a checkpoint and the start of the next.")
	CheckpointMaxConcurrent = Int("execution.checkpointing.max-concurrent-checkpoints", 1, 1,
		"Most checkpoints in progress at once.")
	TolerableFailures = Int("execution.checkpointing.tolerable-failed-checkpoints", 0, 0,
		"Consecutive failed checkpoints a job survives.")
	Incremental = Enum("execution.checkpointing.incremental", "", []string{"true", "false"},
		"Whether checkpoints upload only what changed. flinksql's rocksdb backend always checkpoints incrementally and hashmap always fully; unset follows the backend, and a value contradicting it is refused when a job starts.")
	CheckpointRetention = Enum("execution.checkpointing.externalized-checkpoint-retention", "NO_EXTERNALIZED_CHECKPOINTS",
		[]string{"RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"},
		"Whether a job's checkpoints are kept when it is cancelled.")
	StateBackend = Enum("state.backend.type", "hashmap", []string{"hashmap", "rocksdb", "pebble"},
		"Where keyed state lives: hashmap (Go memory, full checkpoints) or rocksdb (a Pebble LSM on local disk behind a bounded cache, incremental checkpoints); pebble is a synonym of rocksdb.",
		"state.backend")
	ManagedMemory = Memory("taskmanager.memory.managed.size", "512 mb",
		"Memory the rocksdb state of a job may use (write-back cache, block cache and memtables), split evenly among its keyed operator instances. Flink derives its default from the process size; flinksql's is fixed.")
	RocksDBManaged = Bool("state.backend.rocksdb.memory.managed", true,
		"Whether rocksdb state shares the managed memory; false gives each keyed operator instance 64 MB of its own.")
	RocksDBFixedPerSlot = Memory("state.backend.rocksdb.memory.fixed-per-slot", "",
		"Fixed memory per slot for rocksdb state, replacing the managed memory: shared by the keyed operator instances of one subtask index.")
	CheckpointsDir = String("state.checkpoints.dir", "",
		"Where checkpoints are stored: a local path, file:// or s3:// URI. Unset: a directory under the system's temporary directory.", nil,
		"execution.checkpointing.dir")
	NumRetained = Int("state.checkpoints.num-retained", 1, 1,
		"Completed checkpoints kept.")
	RecoveryPath = String("execution.state-recovery.path", "",
		"A savepoint or checkpoint (its directory or _metadata) the next job starts from.", nil,
		"execution.savepoint.path")
	ClaimMode = Enum("execution.state-recovery.claim-mode", "NO_CLAIM", []string{"CLAIM", "NO_CLAIM"},
		"Who owns the snapshot named by 'execution.state-recovery.path': NO_CLAIM, the job never deletes or changes it and its first checkpoint is a full one; CLAIM, the job owns it and deletes it once a checkpoint of its own subsumes it.",
		"execution.savepoint-restore-mode")
	IgnoreUnclaimedState = Bool("execution.state-recovery.ignore-unclaimed-state", false,
		"Allow to skip state of the snapshot named by 'execution.state-recovery.path' that cannot be restored: state of operators the job no longer has (EXPLAIN MIGRATION calls it dropped). Incompatible state is refused whatever this says.",
		"execution.savepoint.ignore-unclaimed-state")
	SavepointsDir = String("state.savepoints.dir", "",
		"The default directory of savepoints (STOP JOB ... WITH SAVEPOINT, flinksql savepoint): a local path, file:// or s3:// URI. Setting it also turns checkpointing on for jobs without 'execution.checkpointing.interval' (a checkpoint is then taken only for a savepoint).", nil,
		"execution.checkpointing.savepoint-dir")

	RestartStrategy = Enum("restart-strategy.type", "",
		[]string{"none", "disable", "off", "fixed-delay", "fixeddelay", "exponential-delay", "exponentialdelay"},
		"How failed jobs restart; unset: exponential-delay with checkpointing on, none without.")
	FixedDelayAttempts = Int("restart-strategy.fixed-delay.attempts", 1, 0,
		"Restarts before a fixed-delay job fails for good.")
	FixedDelay = Duration("restart-strategy.fixed-delay.delay", "1 s",
		"Pause before each fixed-delay restart.")
	ExpInitialBackoff = Duration("restart-strategy.exponential-delay.initial-backoff", "1 s",
		"First pause of exponential-delay restarts.")
	ExpMaxBackoff = Duration("restart-strategy.exponential-delay.max-backoff", "1 min",
		"Longest pause of exponential-delay restarts.")
	ExpMultiplier = Float("restart-strategy.exponential-delay.backoff-multiplier", 1.5, 1, inf,
		"Factor the pause grows by after each restart.")
	ExpAttemptsBeforeReset = Int("restart-strategy.exponential-delay.attempts-before-reset-backoff", 2147483647, 1,
		"Restarts before an exponential-delay job fails for good.")
	ExpResetThreshold = Duration("restart-strategy.exponential-delay.reset-backoff-threshold", "1 h",
		"Running time after which the pause starts again from the initial backoff.")
	ExpJitter = Float("restart-strategy.exponential-delay.jitter-factor", 0.1, 0, 1,
		"Share of the pause chosen at random, so restarts of many jobs spread out.")

	S3Endpoint = String("s3.endpoint", "",
		"Endpoint of the S3-compatible service of s3:// checkpoint directories.", nil)
	S3PathStyle = Bool("s3.path.style.access", false,
		"Address buckets by path (http://host/bucket) instead of by host name.")
	S3AccessKey = String("s3.access-key", "",
		"Access key of s3:// checkpoint directories; unset: the AWS SDK's default credentials.", nil)
	S3SecretKey = String("s3.secret-key", "",
		"Secret key going with s3.access-key.", nil)
	S3Region = String("s3.region", "us-east-1",
		"Region of s3:// checkpoint directories.", nil)
	RESTPort = Int("rest.port", 8081, 0,
		"Port of the REST API and the web dashboard. They run in the interactive shell (a port in use is reported and the shell goes on without them); with -f or -e only when 'rest.port' or 'rest.address' is given. 0 picks a free port. Read when flinksql starts (-D).")
	RESTAddress = String("rest.address", "",
		"Address the REST API and the dashboard listen on; unset means the loopback address 127.0.0.1, so that only this machine reaches them. Read when flinksql starts (-D).", nil)
	PromPort = String("metrics.reporter.prom.port", "",
		"Port, or range of ports such as 9250-9260 (the first free one is taken), of the Prometheus endpoint /metrics, with Flink's metric names and labels; unset means no Prometheus endpoint. It listens on 'rest.address' (loopback when unset). Read when flinksql starts (-D).", checkPortRange)
	GCHeapHeadroom = Memory("flinksql.gc.heap-headroom", "256 mb",
		"flinksql's own (Go has no JVM heap to size): after each garbage collection the next one starts when the heap has grown by the larger of this headroom and the memory that survived (Go's default pacing), so that jobs with little state do not collect dozens of times a second; jobs whose state exceeds the headroom pace as Go does by default. The GOGC environment variable, when set, replaces this policy. Read when flinksql starts (-D).")
	LogFile = String("log.file", "",
		"File the structured log (log/slog, text) is appended to: job notices, completed checkpoints, warnings. In the interactive shell it defaults to $XDG_STATE_HOME/flinksql/flinksql.log (~/.local/state/flinksql/flinksql.log); with -f or -e the log goes to stderr, and also to this file when it is set. Read when flinksql starts (-D).", nil)
)

var inf = math.Inf(1)

// Session is the registry of the session options.
func Session() *Registry {
	return NewRegistry(
		&RuntimeMode.Spec, &Parallelism.Spec, &MaxParallelism.Spec, &PipelineName.Spec, &BufferTimeout.Spec,
		&AutoWatermarkInterval.Spec, &IdleTimeout.Spec, &CDCEventsDuplicate.Spec, &LocalTimeZone.Spec, &ResultMode.Spec, &MaxColumnWidth.Spec,
		&StateTTL.Spec, &MiniBatchEnabled.Spec, &MiniBatchLatency.Spec, &MiniBatchSize.Spec, &NotNullEnforcer.Spec,
		&AsyncLookupCapacity.Spec, &AsyncLookupTimeout.Spec, &AsyncLookupOutputMode.Spec,
		&AllowLateness.Spec, &EarlyFireEnabled.Spec, &EarlyFireDelay.Spec, &LateFireEnabled.Spec, &LateFireDelay.Spec,
		&CheckpointInterval.Spec, &CheckpointMode.Spec, &CheckpointTimeout.Spec, &CheckpointMinPause.Spec,
		&CheckpointMaxConcurrent.Spec, &TolerableFailures.Spec, &Incremental.Spec, &CheckpointRetention.Spec,
		&StateBackend.Spec, &ManagedMemory.Spec, &RocksDBManaged.Spec, &RocksDBFixedPerSlot.Spec, &CheckpointsDir.Spec,
		&NumRetained.Spec, &RecoveryPath.Spec, &ClaimMode.Spec, &IgnoreUnclaimedState.Spec, &SavepointsDir.Spec,
		&RestartStrategy.Spec, &FixedDelayAttempts.Spec, &FixedDelay.Spec, &ExpInitialBackoff.Spec, &ExpMaxBackoff.Spec,
		&ExpMultiplier.Spec, &ExpAttemptsBeforeReset.Spec, &ExpResetThreshold.Spec, &ExpJitter.Spec,
		&S3Endpoint.Spec, &S3PathStyle.Spec, &S3AccessKey.Spec, &S3SecretKey.Spec, &S3Region.Spec,
		&RESTPort.Spec, &RESTAddress.Spec, &PromPort.Spec, &LogFile.Spec, &GCHeapHeadroom.Spec,
	)
}

// PortRange parses a port or a range of ports "from-to".
func PortRange(v string) (from, to int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(v), "-")
	from, err = strconv.Atoi(strings.TrimSpace(a))
	to = from
	if err == nil && isRange {
		to, err = strconv.Atoi(strings.TrimSpace(b))
	}
	if err != nil || from < 0 || to > 65535 || to < from {
		return 0, 0, fmt.Errorf("expected a port or a range of ports such as 9250-9260")
	}
	return from, to, nil
}

func checkPortRange(v string) error {
	if v == "" {
		return nil // unset: off
	}
	_, _, err := PortRange(v)
	return err
}

// StartupOptions are read once, when flinksql starts: setting them in a
// running session would change nothing, so SET refuses them.
var StartupOptions = []*Spec{&RESTPort.Spec, &RESTAddress.Spec, &PromPort.Spec, &LogFile.Spec, &GCHeapHeadroom.Spec}

// IsStartupOption reports whether key is one of StartupOptions.
func IsStartupOption(key string) bool {
	for _, s := range StartupOptions {
		if s.Key == key {
			return true
		}
	}
	return false
}

// ResolveZone resolves table.local-time-zone: 'default' is the machine's
// zone.
func ResolveZone(v string) (*time.Location, error) {
	if v == "" || strings.EqualFold(v, "default") {
		return time.Local, nil
	}
	if loc, err := time.LoadLocation(v); err == nil && !strings.EqualFold(v, "local") {
		return loc, nil
	}
	// GMT+08:00 style custom zone ids.
	if s, ok := strings.CutPrefix(v, "GMT"); ok && len(s) == 6 && (s[0] == '+' || s[0] == '-') && s[3] == ':' {
		h, e1 := strconv.Atoi(s[1:3])
		m, e2 := strconv.Atoi(s[4:6])
		if e1 == nil && e2 == nil && h <= 18 && m < 60 {
			off := h*3600 + m*60
			if s[0] == '-' {
				off = -off
			}
			return time.FixedZone(v, off), nil
		}
	}
	return nil, fmt.Errorf("the supported Zone ID is either a full name such as 'America/Los_Angeles', or a custom timezone id such as 'GMT-08:00', but configured Zone ID is '%s'", v)
}
