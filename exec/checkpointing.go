package exec

import (
	"context"
	"errors"
	"github.com/flinksql/flinksql/state"
	"math"
	"strings"
	"time"

	"github.com/flinksql/flinksql/state/kv"
)

// Checkpointing contracts (DESIGN.md §3-4). Operators keep their working
// state in memory; at a checkpoint barrier the runtime asks each stateful
// operator instance for the state that changed since its previous snapshot
// (everything when the writer says Full), stores it in the instance's state
// store, and uploads the store's new files asynchronously. On restore the
// runtime replays the stored entries into the operator before Open.
//
// Keyed entries are addressed by key group so that a snapshot can be split by
// key-group range; operator (non-keyed) state, such as source offsets and the
// committables of a two-phase-commit sink, is written under KeyGroupNone.

// CheckpointID numbers checkpoints of a job, from 1.
type CheckpointID int64

// KeyGroupNone marks operator (non-keyed) state entries.
const KeyGroupNone = state.KeyGroupNone

// StateWriter receives one operator instance's snapshot during the
// synchronous part of a checkpoint (see state.Writer).
type StateWriter = state.Writer

// StateReader replays a restored snapshot into an operator instance (see
// state.Reader).
type StateReader = state.Reader

// CheckpointedOperator is implemented by operators with state.
type CheckpointedOperator interface {
	Operator
	// RestoreState is called before Open when the job starts from a checkpoint.
	RestoreState(r StateReader) error
	// SnapshotState is the short synchronous part at barrier id.
	SnapshotState(id CheckpointID, w StateWriter) error
}

// StatelessOperator is implemented by operators that keep nothing a restore
// would need: whatever they hold between calls is rebuilt from the input
// that follows. With checkpointing on, the runtime refuses an operator that
// is neither a CheckpointedOperator nor a StatelessOperator, so an operator
// cannot lose its state at a restore by forgetting to snapshot it.
type StatelessOperator interface {
	Operator
	// Stateless declares the operator stateless; it is never called.
	Stateless()
}

// CheckpointListener is implemented by operators that act when a checkpoint
// completes or is aborted (two-phase-commit sinks commit here).
type CheckpointListener interface {
	NotifyCheckpointComplete(id CheckpointID) error
	NotifyCheckpointAborted(id CheckpointID)
}

// PreBarrierOperator is implemented by operators that emit downstream when
// a checkpoint's barrier reaches them, before their state is snapshotted and
// the barrier is forwarded (Flink's prepareSnapshotPreBarrier): what they
// emit there belongs to the checkpoint, ahead of its barrier on every
// output channel.
type PreBarrierOperator interface {
	PrepareSnapshotPreBarrier(id CheckpointID, out Output) error
}

// CommittableEmitter is a SinkWriter whose committables are committed not
// by the writer's own subtask but by a single committer downstream (Flink's
// two-operator sink: parallel writers, one committer). At each barrier, and
// at end of input, the sink operator emits them as rows of one BYTES column
// (CommittableColumn) ahead of the barrier; the writer itself keeps no
// state. The committer is a TwoPhaseCommitWriter run by a sink operator at
// parallelism 1, whose input is those rows.
type CommittableEmitter interface {
	SinkWriter
	// PrepareCommittables seals what was written since the previous call
	// and returns its committables; id is the checkpoint, or
	// EndOfInputCheckpoint at end of input without checkpointing.
	PrepareCommittables(id CheckpointID) ([]Committable, error)
}

// EndOfInputCheckpoint is the checkpoint ID under which a job without
// checkpointing hands over and commits its output at end of input (Flink's
// Long.MAX_VALUE).
const EndOfInputCheckpoint CheckpointID = math.MaxInt64

// CheckpointedReader is implemented by source readers whose position can be
// restored (Kafka offsets, file positions, generator counters).
type CheckpointedReader interface {
	SourceReader
	// SnapshotPosition returns the reader's position, called between reads.
	SnapshotPosition() ([]byte, error)
	// RestorePosition is called before Open with what SnapshotPosition returned.
	RestorePosition(pos []byte) error
}

// PositionMerger is a CheckpointedReader whose positions can be
// reassigned when a job is restored at another parallelism (Flink
// reassigns a Kafka source's splits): MergePositions combines the
// positions of every old subtask into one that RestorePosition takes,
// from which the reader keeps the splits its new subtask owns. A reader
// without it cannot be rescaled, and such a restore is refused.
type PositionMerger interface {
	MergePositions(positions [][]byte) ([]byte, error)
}

// RescaledPositions is implemented by an InstanceState of a source restored
// through a savepoint or at another parallelism: the positions assigned to
// the instance, and whether the parallelism changed.
type RescaledPositions interface {
	RestoredPositions() (positions [][]byte, rescaled bool)
}

// CheckpointCompleteReader is a CheckpointedReader that acts when a
// checkpoint holding its position completes, as Flink's
// SourceReader.notifyCheckpointComplete: a Kafka source commits the
// checkpoint's offsets to its consumer group. The call runs on the task's
// goroutine and should not wait on the network.
type CheckpointCompleteReader interface {
	CheckpointedReader
	// NotifyPositionComplete is called when checkpoint id completed with
	// pos, what SnapshotPosition returned for it. An error fails the task.
	NotifyPositionComplete(id CheckpointID, pos []byte) error
}

// CheckpointHolder is a CheckpointedReader that cannot record a position
// during part of its work: a CDC source reading its initial snapshot in
// one transaction (Flink CDC's non-incremental snapshot, where a
// checkpoint waits for the snapshot to end). A trigger that arrives while
// HoldCheckpoint returns a reason waits, logged with that reason, and is
// taken between reads once it returns ""; the coordinator's timeout still
// applies to it.
type CheckpointHolder interface {
	CheckpointedReader
	HoldCheckpoint() (reason string)
}

// Committable is what a two-phase-commit sink writer hands over at a barrier
// and its committer later commits (a transaction handle, pending file names).
type Committable []byte

// TwoPhaseCommitWriter is a SinkWriter whose output becomes visible only when
// the checkpoint that covers it completes. With checkpointing on, the runtime
// calls its Finish only after the job's final checkpoint committed (so Finish
// finds nothing left to commit); without checkpointing, Finish at end of
// input must make the output visible itself.
type TwoPhaseCommitWriter interface {
	SinkWriter
	// PrepareCommit flushes and seals what was written since the previous
	// barrier and returns the committables; called at barrier id.
	PrepareCommit(id CheckpointID) ([]Committable, error)
	// Commit makes committables visible. It must be idempotent: after a
	// failure the committables of the restored checkpoint are committed again.
	Commit(committables []Committable) error
	// Abort discards work that no checkpoint will cover (after a restore, the
	// attempts begun after the restored checkpoint).
	Abort(committables []Committable) error
}

// OperatorID identifies an operator instance's state across restarts: the
// stable identity the planner derived from what determines the state
// (OperatorState.ID), or, in graphs without one, the vertex ID and the
// position in its chain ("v3-1"), or "v0-source" for a source reader. A
// source's ID ends in "-source" either way (IsSourceOperator).
type OperatorID string

// IsSourceOperator reports whether id is the state of a source reader (its
// positions), which a restore at another parallelism gives every subtask.
func IsSourceOperator(id string) bool { return strings.HasSuffix(id, "-source") }

// CheckpointMode is execution.checkpointing.mode.
type CheckpointMode uint8

const (
	ExactlyOnce CheckpointMode = iota // align barriers at multi-input tasks
	AtLeastOnce                       // do not align
)

// CheckpointConfig turns on checkpointing for a job.
type CheckpointConfig struct {
	Interval          time.Duration // execution.checkpointing.interval; 0: only Job.TriggerCheckpoint and the final checkpoint
	Mode              CheckpointMode
	Timeout           time.Duration // execution.checkpointing.timeout (default 10 min)
	MinPause          time.Duration // execution.checkpointing.min-pause
	MaxConcurrent     int           // execution.checkpointing.max-concurrent-checkpoints (default 1)
	TolerableFailures int           // execution.checkpointing.tolerable-failed-checkpoints (default 0)
	Store             CheckpointStore
	// RestoreID is the checkpoint the job starts from (0: a fresh start).
	// The Store knows its contents; the runtime replays them.
	RestoreID CheckpointID
	// NextID is the first checkpoint ID to use (restored ID + 1 after a restore).
	// Zero means RestoreID + 1.
	NextID CheckpointID
	// OnComplete, when set, is called by the coordinator after each completed
	// checkpoint (for logging): sync is the longest synchronous pause of a
	// task, async the longest upload of an instance. It must not block.
	OnComplete func(id CheckpointID, acks []InstanceAck, sync, async time.Duration)
	// OnTrigger and OnAbort, when set, are called by the coordinator when
	// it triggers a checkpoint (final: the job's final one) and when it
	// gives one up (expired, declined, subsumed, or the job ended), for the
	// checkpoint statistics. They must not block.
	OnTrigger func(id CheckpointID, at time.Time, final bool)
	OnAbort   func(id CheckpointID, reason string)
	// CanFallBack says that an older retained checkpoint than RestoreID
	// exists: when every committable of the restored checkpoint turns out
	// aborted and none committed, the restore then fails with
	// ErrRestoredOutputAborted so that recovery restores that one instead
	// (nothing of the restored checkpoint's output became visible, so its
	// replay loses and duplicates nothing). Without one, the loss is
	// reported like any other.
	CanFallBack bool
}

// Defaults of the CheckpointConfig fields left zero.
const (
	DefaultCheckpointTimeout = 10 * time.Minute
	DefaultMaxConcurrent     = 1
)

// ErrTolerableFailuresExceeded is what a job fails with when more than
// CheckpointConfig.TolerableFailures consecutive checkpoints failed; the
// job's error wraps it and names the latest failure.
var ErrTolerableFailuresExceeded = errors.New("Exceeded checkpoint tolerable failure threshold.") //nolint:staticcheck // Flink's text

// ErrCheckpointUnrestorable marks a restore that cannot succeed from the
// chosen checkpoint but may from an earlier retained one: its metadata or a
// file it needs is unreadable, or every committable it recorded was aborted by
// the broker before it could be committed (nothing of it became visible, so
// replaying from the previous checkpoint loses and duplicates nothing).
// Errors wrapping it make recovery fall back to the previous retained
// checkpoint and say why; any other restore error fails the attempt.
var ErrCheckpointUnrestorable = errors.New("checkpoint cannot be restored")

// ErrRestoredOutputAborted is the restore verdict that every transaction the
// restored checkpoint was to commit had been aborted and none committed:
// none of its output became visible, so restoring the previous retained
// checkpoint (whose own output was committed) and replaying from there
// loses and duplicates nothing. It is the only error recovery falls back on;
// damaged or missing state (ErrCheckpointUnrestorable) fails the job, since
// the checkpoint's output may have been committed and a replay from an older
// one would write it twice.
var ErrRestoredOutputAborted = errors.New("every transaction of the restored checkpoint was aborted")

// ErrOutputLost marks a job failure caused by output that a completed
// checkpoint covered but that can no longer be committed (the external system
// aborted the transactions holding it). Restarting from the same checkpoint
// cannot bring it back, so recovery does not retry such a failure.
var ErrOutputLost = errors.New("output of a completed checkpoint was lost")

// AbortedCommitError is what TwoPhaseCommitWriter.Commit returns when some of
// the committables it was given had been aborted by the external system
// before they could be committed (a Kafka transaction that outlived its
// timeout, or a broker that lost its in-flight transactions): their output
// is lost. Commit still commits the others; Committed counts those that
// carried output.
type AbortedCommitError struct {
	// Message names the sink, the aborted committables and where their
	// output was, and the likely cause.
	Message string
	// Aborted is the number of aborted committables.
	Aborted int
	// Committed is the number of committables of the call, with output, that
	// are committed (now or by an earlier attempt).
	Committed int
	// Continue is the sink's choice to go on after such a loss: the runtime
	// then logs the error and counts it (OperatorMetrics.LostCommits)
	// instead of failing the job.
	Continue bool
}

func (e *AbortedCommitError) Error() string { return e.Message }

// CommittableSizer is implemented by two-phase-commit writers whose
// committables may carry no output (an empty transaction): such a
// committable is neither committed nor lost, which matters when recovery
// decides whether an earlier checkpoint can be restored instead.
type CommittableSizer interface {
	// HasOutput reports whether committing c makes output visible.
	HasOutput(c Committable) bool
}

// LogFunc receives one line for the job's log; the line starts with its
// level ("[INFO] ", "[WARN] ", "[ERROR] ").
type LogFunc func(format string, args ...any)

// LogReceiver is implemented by writers that report what they do (fenced
// transactions, commits that found their transaction ended) to the job's
// log; the runtime hands it Config.Log before the first commit or Open.
type LogReceiver interface {
	SetLog(LogFunc)
}

// FlushingWriter is a SinkWriter that buffers writes. With checkpointing on,
// the sink operator flushes it at every barrier, so that nothing written
// before a completed checkpoint can be lost (at-least-once delivery without
// transactions).
type FlushingWriter interface {
	SinkWriter
	Flush(ctx context.Context) error
}

// CheckpointStore is where the runtime keeps operator state and completed
// checkpoints (implemented by package checkpoint over a state backend and a
// file:// or s3:// storage).
type CheckpointStore interface {
	// OpenInstance opens the state of one operator instance: empty on a fresh
	// start, or holding the restored checkpoint's entries for that instance.
	OpenInstance(op OperatorID, subtask, parallelism int) (InstanceState, error)
	// Complete makes checkpoint id durable once every instance acknowledged
	// it: _metadata is written last, atomically. Called by the coordinator.
	Complete(ctx context.Context, id CheckpointID, acks []InstanceAck) error
	// Abort forgets a checkpoint that will not complete. Uploads of it may
	// still be running. Operators do not write again what they wrote for an
	// aborted snapshot, so the next incremental snapshot of an instance must
	// still carry those changes.
	Abort(id CheckpointID)
}

// InstanceState is one operator instance's state store.
type InstanceState interface {
	// Restored returns the restored entries and position, if the job started
	// from a checkpoint that holds this instance.
	Restored() (StateReader, []byte, bool)
	// Writer is the StateWriter for the next snapshot.
	Writer() StateWriter
	// Seal ends the synchronous part of snapshot id: the entries written so
	// far, plus position (a source reader's, or nil), become an immutable
	// local image. It must be quick (a flush and hard links, or a file write).
	Seal(id CheckpointID, position []byte) (SealedState, error)
	Close() error
}

// SealedState is a sealed local snapshot waiting for upload.
type SealedState interface {
	// Persist uploads it; it runs off the task's goroutine, concurrently with
	// processing, and returns the acknowledgement for the coordinator.
	Persist(ctx context.Context) (InstanceAck, error)
	// Discard removes the local image (after upload or abort).
	Discard()
}

// InstanceAck describes one instance's part of a checkpoint; the store
// decodes Handle, the runtime only carries it.
type InstanceAck struct {
	Op            OperatorID
	Subtask       int
	Handle        any
	FullBytes     int64 // size of the instance's state in this checkpoint
	UploadedBytes int64 // bytes uploaded for it by this checkpoint
	SyncDuration  time.Duration
	AsyncDuration time.Duration
	// StateSize is the size of a keyed operator instance's backend when it
	// was sealed (nil for other instances), measured by the runtime.
	StateSize *kv.Sizes
	// Name describes the operator (as EXPLAIN's job graph names it);
	// States are a keyed instance's declared states. Both are recorded for
	// inspection (flinksql savepoints).
	Name   string
	States []kv.Declaration
	// Vertex and Index say where the instance runs: its job-graph vertex
	// and its operator's position in the vertex's chain (-1: the source
	// reader). Operator ids are stable identities and do not say it.
	Vertex, Index int
}
