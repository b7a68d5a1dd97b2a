package exec

import (
	"fmt"
	"time"
)

// JobGraph is what the planner hands to the runtime: vertices in topological
// order (every input of a vertex comes from an earlier one). A vertex is one
// chain of operators run as Parallelism subtasks.
type JobGraph struct {
	Name     string
	Vertices []*Vertex
}

// Vertex is a chain of operators with a common parallelism. It either starts
// with a source (Source != nil, no Inputs) or reads from upstream vertices.
// The rows leaving the last operator of the chain go to every vertex that
// names this one as input; a vertex with no consumers ends in a sink operator.
type Vertex struct {
	ID          int
	Name        string // shown in logs and metrics, e.g. "Calc(select=[a, b])"
	Parallelism int
	Source      *SourceSpec
	Inputs      []Input
	// Chain builds the operators of one subtask, in order. It is called once
	// per subtask.
	Chain []func() (Operator, error)
	// Names of the chained operators, parallel to Chain, for metrics.
	ChainNames []string
	// States describe the chained operators' state, parallel to Chain (or
	// nil): an entry's ID is the operator's identity in checkpoints instead
	// of its position in the graph. SourceState does the same for the
	// source reader's position.
	States      []*OperatorState
	SourceState *OperatorState
}

// Input connects an upstream vertex to an input of this vertex's first
// operator. Several Inputs may feed the same input index (UNION ALL).
type Input struct {
	From        int // ID of the upstream vertex
	InputIndex  int
	Partitioner Partitioner
}

// PartitionKind says how an exchange routes rows to the downstream subtasks.
type PartitionKind uint8

const (
	Forward   PartitionKind = iota // subtask i → subtask i; equal parallelism
	Hash                           // by key group of KeyCols
	Rebalance                      // round robin
	Broadcast                      // every row to every subtask
	Global                         // everything to subtask 0
)

func (k PartitionKind) String() string {
	switch k {
	case Forward:
		return "FORWARD"
	case Hash:
		return "HASH"
	case Rebalance:
		return "REBALANCE"
	case Broadcast:
		return "BROADCAST"
	case Global:
		return "GLOBAL"
	}
	return fmt.Sprintf("PartitionKind(%d)", k)
}

// Partitioner is an exchange's routing rule.
type Partitioner struct {
	Kind    PartitionKind
	KeyCols []int // Hash only
}

// SourceSpec is the head of a source vertex.
type SourceSpec struct {
	// NewReader creates the reader of one subtask.
	NewReader func(subtask, parallelism int) (SourceReader, error)
	// Width of the rows the reader produces.
	Width int
	// Prepare, when set, turns each row read into the row the rest of the
	// plan sees (computed columns, column order), PreparedWidth wide. It runs
	// before watermark generation, per split.
	Prepare       func() (Projector, error)
	PreparedWidth int
	// Watermark, when set, generates watermarks per split from the prepared rows.
	Watermark *WatermarkSpec
}

// WatermarkSpec is a WATERMARK FOR declaration pushed into the source.
type WatermarkSpec struct {
	// Expr computes one TIMESTAMP/TIMESTAMP_LTZ value (the watermark
	// candidate) from a prepared row; NULL produces no watermark.
	Expr func() (Projector, error)
	// EmitOnEvent emits a watermark after every row that advances it
	// ('scan.watermark.emit.strategy' = 'on-event'); otherwise watermarks are
	// emitted every Config.AutoWatermarkInterval.
	EmitOnEvent bool
	// IdleTimeout, when HasIdleTimeout, is the table's
	// 'scan.watermark.idle-timeout': it replaces Config.IdleTimeout for
	// this source (0 turns idleness detection off).
	IdleTimeout    time.Duration
	HasIdleTimeout bool
	// Shift, when set, says what Expr computes in the common case WATERMARK
	// FOR ts AS ts - INTERVAL …: the TIMESTAMP of a column plus a constant
	// number of milliseconds, which the source then reads from the rows
	// without evaluating Expr per row.
	Shift *WatermarkShift
}

// WatermarkShift is a watermark expression column + Millis, with Go's
// integer arithmetic (that of TIMESTAMP + INTERVAL).
type WatermarkShift struct {
	Col    int
	Millis int64
}

// Config holds the runtime options taken from the session configuration.
type Config struct {
	MaxParallelism        int           // pipeline.max-parallelism (default 128)
	BufferTimeout         time.Duration // execution.buffer-timeout (default 100ms); 0 flushes after every batch
	AutoWatermarkInterval time.Duration // pipeline.auto-watermark-interval (default 200ms)
	IdleTimeout           time.Duration // table.exec.source.idle-timeout (0 = disabled)
	BatchSize             int           // rows per batch (default types.DefaultBatchSize)
	ChannelCapacity       int           // batches buffered per exchange channel before backpressure (default 4)
	Now                   func() int64  // processing clock in epoch ms (default wall clock); tests substitute
	// KeyedState says where keyed operators keep their working state.
	KeyedState KeyedStateConfig
	// StateMemory, when set, is told the memory budget of the job's
	// state when the job starts (the sum of its rocksdb instances'
	// budgets; UnboundedState for hashmap state, which has none) and
	// calls the returned release once every task has ended, before Wait
	// returns. The process sets its Go memory limit from it.
	StateMemory func(budget int64) (release func())
	// Checkpointing turns on barrier checkpoints (nil: off).
	Checkpointing *CheckpointConfig
	// Fault, when set, is called at the fault-injection points of the
	// checkpoint protocol (FaultPoints, fault.go); crash drills kill the
	// process there. Nil in production.
	Fault FaultFunc
	// Log receives the job's notable events: tolerated checkpoint failures
	// and their cause, and what sinks report (LogReceiver). It must be safe
	// for concurrent use; nil discards them.
	Log LogFunc
}
