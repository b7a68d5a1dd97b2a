// Package exec owns the runtime: the job graph, tasks (one goroutine per
// subtask of a chain of operators), exchanges between tasks, watermarks,
// timers and the built-in operators.
//
// Evaluation of expressions and aggregates is reached through the narrow
// interfaces below (Projector, Predicate, AggsHandle), which the sql/expr
// packages implement; connectors implement SourceReader and SinkWriter. exec
// imports neither, so the runtime can be tested with hand-written rows.
package exec

import (
	"context"
	"math"
	"time"

	"github.com/flinksql/flinksql/types"
)

// MaxWatermark is the watermark that closes every event-time window; bounded
// sources emit it at end of input.
const MaxWatermark = math.MaxInt64

// MinWatermark is the watermark before any has been seen.
const MinWatermark = math.MinInt64

// Projector computes len(out) output columns from an input row. Instances are
// created per subtask and used by one goroutine.
type Projector interface {
	Project(in types.Row, out types.Row) error
}

// Predicate filters rows; NULL counts as false (SQL WHERE semantics).
type Predicate interface {
	Test(in types.Row) (bool, error)
}

// AggsHandle evaluates a fixed list of aggregate calls whose accumulators live
// in one flat []types.Value of AccWidth values per group. Arguments (and FILTER
// flags) are read from the input row at positions fixed when the handle was
// built. Instances are per subtask.
type AggsHandle interface {
	NumAggs() int
	AccWidth() int
	Init(acc []types.Value)
	Accumulate(acc []types.Value, in types.Row) error
	Retract(acc []types.Value, in types.Row) error
	// Merge folds other into acc (slices of sliding windows, merged sessions).
	Merge(acc, other []types.Value) error
	// Result writes NumAggs values computed from acc.
	Result(acc []types.Value, out []types.Value) error
}

// Output receives what an operator emits. A batch passed to Push is only
// valid during the call; the operator may reuse it afterwards.
type Output interface {
	Push(b *types.Batch) error
	PushWatermark(wm int64) error
}

// OperatorContext is what the runtime gives an operator when it opens.
type OperatorContext struct {
	Ctx            context.Context
	Name           string
	Subtask        int
	Parallelism    int
	MaxParallelism int
	// Now returns the processing time in epoch milliseconds.
	Now func() int64
	// RegisterProcessingTimer asks the runtime to call OnProcessingTime at or
	// after t (epoch ms). Timers with the same t are coalesced.
	RegisterProcessingTimer func(t int64)
	// Metrics of this operator instance.
	Metrics *OperatorMetrics
	// Log is the job's log (Config.Log).
	Log LogFunc
}

// Operator processes a stream. One goroutine drives an instance; there are no
// locks inside. Every operator is also a CheckpointedOperator or declares
// that it has no state (StatelessOperator); with checkpointing on, the
// runtime refuses one that is neither.
type Operator interface {
	Open(ctx *OperatorContext) error
	ProcessBatch(input int, b *types.Batch, out Output) error
	// ProcessWatermark is called with the watermark already min-combined over
	// all inputs and channels, only when it advances. The operator forwards it
	// (or a derived one) downstream itself.
	ProcessWatermark(wm int64, out Output) error
	// Finish is called once at end of input, after the final watermark.
	Finish(out Output) error
	Close() error
}

// ProcessingTimeHandler is implemented by operators that register
// processing-time timers.
type ProcessingTimeHandler interface {
	OnProcessingTime(t int64, out Output) error
}

// OperatorMetrics counts what an operator instance did. Counters are written
// by the owning goroutine and read atomically by observers.
type OperatorMetrics struct {
	RowsIn, RowsOut Counter
	LateRowsDropped Counter
	// NotNullRowsDropped counts the rows a sink's not-null enforcer dropped
	// (table.exec.sink.not-null-enforcer = DROP).
	NotNullRowsDropped Counter
	// LostCommits counts committables of a two-phase-commit sink found
	// aborted by the external system when they were committed, with the
	// sink set to continue after such a loss (AbortedCommitError.Continue).
	LostCommits      Counter
	CurrentWatermark Gauge
	// The size of a keyed operator instance's state (kv.Backend.Size), set
	// by the runtime when the backend is opened and at every checkpoint:
	// entries (estimated for rocksdb), bytes in memory, bytes on disk.
	StateEntries, StateMemoryBytes, StateDiskBytes Gauge
}

// SourceReader reads the splits assigned to one source subtask.
type SourceReader interface {
	Open(ctx context.Context) error
	// NumSplits is the number of splits the reader currently owns, numbered
	// 0…n-1. It may grow (partition discovery). Watermarks are tracked per split.
	NumSplits() int
	// Read appends rows from a single split to b and says which one. It blocks
	// until data is available, the reader ends, or ctx is done (then it returns
	// with what it has, possibly nothing, and a nil error).
	Read(ctx context.Context, b *types.Batch) (ReadResult, error)
	Close() error
}

// ReadResult describes one Read.
type ReadResult struct {
	Split     int  // the split the rows came from; -1 when b is empty
	SplitDone bool // that split has no more data and no longer holds back watermarks
	End       bool // the reader has no more data at all (bounded input)
	// Flush asks the task to send every row it buffers for its outputs
	// before the next Read: a reader about to tell another subtask that
	// its rows are on their way (a CDC snapshot chunk before the stream
	// starts elsewhere) relies on the exchanges' order from then on.
	Flush bool
}

// SinkWriter writes one sink subtask's rows (with their row kinds) to the
// outside world.
type SinkWriter interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, b *types.Batch) error
	// Finish is called at end of input: flush and make the output complete.
	Finish(ctx context.Context) error
	Close() error
}

// WindowKind is the kind of a window assigner.
type WindowKind uint8

const (
	Tumble WindowKind = iota
	Hop
	Cumulate
	Session
)

// WindowSpec describes how rows are assigned to windows. Durations are in
// milliseconds.
type WindowSpec struct {
	Kind      WindowKind
	TimeCol   int  // position of the time attribute in the input row (event time)
	EventTime bool // false: processing time (the operator's clock)
	Size      int64
	Slide     int64 // Hop
	Step      int64 // Cumulate
	Gap       int64 // Session
	Offset    int64
	// Loc is the session time zone when the time attribute is TIMESTAMP_LTZ
	// (or processing time): windows are aligned to wall-clock time there, and
	// window_start/window_end are local TIMESTAMP(3) values. nil means the time
	// attribute is TIMESTAMP and everything is UTC arithmetic.
	Loc *time.Location
	// Attached marks a window aggregation over rows that already carry
	// their window (Flink's window-attached strategy: the output of a
	// window TVF or of a window aggregation, through projections and
	// filters): EndCol is the window_end column of the input row, and
	// Kind/Size/Slide/Step/Offset describe the window that produced it.
	// TimeCol is not used.
	Attached bool
	EndCol   int
	// Legacy marks a legacy group window (TUMBLE/HOP/SESSION in GROUP BY,
	// Flink's GroupWindowAggregate): a HOP's size need not be a multiple of
	// its slide, and the input may be updating (Retracting).
	Legacy bool
	// Retracting: the input carries -U/-D rows; a window whose rows were
	// all retracted emits nothing (Flink's record counter).
	Retracting bool
}
