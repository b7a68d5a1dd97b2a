package jobs

import (
	"slices"
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// CheckpointHistorySize is how many recent checkpoints a job's statistics
// remember, Flink's default of web.checkpoints.history.
const CheckpointHistorySize = 10

// ExceptionHistorySize is how many failures a job's exception history
// keeps, Flink's default of web.exception-history-size.
const ExceptionHistorySize = 16

// Checkpoint statuses, Flink's names.
const (
	CheckpointInProgress = "IN_PROGRESS"
	CheckpointCompleted  = "COMPLETED"
	CheckpointFailed     = "FAILED"
)

// CheckpointRecord is one checkpoint in a job's statistics.
type CheckpointRecord struct {
	ID     int64
	Status string
	// Final is the job's final checkpoint (end of input or a stop).
	Final            bool
	Trigger          time.Time
	LatestAck        time.Time // zero while no task acknowledged
	Failure          time.Time // failed ones
	FailureMessage   string
	CheckpointedSize int64 // bytes this checkpoint uploaded
	StateSize        int64 // bytes of all state it references
	// Incremental: it reused files of earlier checkpoints.
	Incremental bool
	// NumSubtasks counts the job's tasks, NumAcknowledged those that
	// acknowledged it.
	NumSubtasks, NumAcknowledged int
	// ExternalPath is where a completed checkpoint lies.
	ExternalPath string
	// Operators are the per-operator figures of a completed checkpoint,
	// in job-graph order.
	Operators []OperatorCheckpoint
}

// EndToEnd is the time from trigger to the latest acknowledgement, in
// whole milliseconds of the two timestamps (as Flink reports both).
func (r CheckpointRecord) EndToEnd() time.Duration {
	if r.LatestAck.IsZero() {
		return 0
	}
	return time.Duration(r.LatestAck.UnixMilli()-r.Trigger.UnixMilli()) * time.Millisecond
}

// OperatorCheckpoint sums one operator's instances in a checkpoint.
type OperatorCheckpoint struct {
	// Vertex is the job-graph vertex, Index the operator's position in
	// its chain (-1: the vertex's source reader).
	Vertex, Index    int
	Name             string
	Subtasks         int
	CheckpointedSize int64
	StateSize        int64
	// Sync and Async are the longest synchronous and asynchronous parts
	// among the instances.
	Sync, Async time.Duration
}

// RestoredCheckpoint is what an attempt of the job started from.
type RestoredCheckpoint struct {
	ID           int64
	At           time.Time
	Savepoint    bool
	ExternalPath string
}

// SavepointRecord is a savepoint the job wrote.
type SavepointRecord struct {
	CheckpointID int64
	At           time.Time
	Path         string
}

// CheckpointStats are a job's checkpoint statistics, kept across its
// attempts, as Flink's checkpoint statistics tracker keeps them.
type CheckpointStats struct {
	Triggered, InProgress, Completed, Failed, Restored int
	// History holds the latest checkpoints, newest first.
	History                       []CheckpointRecord
	LatestCompleted, LatestFailed *CheckpointRecord
	LatestRestored                *RestoredCheckpoint
	LatestSavepoint               *SavepointRecord
	// Summaries over every completed checkpoint.
	CheckpointedSize, StateSize, EndToEnd Summary
}

// Summary is the minimum, maximum and sum of a figure over completed
// checkpoints.
type Summary struct {
	Count         int
	Min, Max, Sum int64
}

func (s *Summary) add(v int64) {
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if s.Count == 0 || v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
}

// Avg is the mean, 0 without values.
func (s Summary) Avg() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / int64(s.Count)
}

// checkpointTracker collects a job's CheckpointStats from the coordinator's
// callbacks (OnTrigger, OnComplete, OnAbort), which run on its goroutine.
type checkpointTracker struct {
	mu       sync.Mutex
	stats    CheckpointStats
	subtasks int                                     // tasks of the job
	locate   func(id int64) string                   // external path of a completed checkpoint
	onChange func(CheckpointRecord, CheckpointStats) // for the log; nil: none
}

func (t *checkpointTracker) hook(cfg *exec.CheckpointConfig) {
	cfg.OnTrigger = t.triggered
	cfg.OnAbort = t.aborted
	cfg.OnComplete = t.completed
}

func (t *checkpointTracker) record(id int64) *CheckpointRecord {
	for i := range t.stats.History {
		if t.stats.History[i].ID == id {
			return &t.stats.History[i]
		}
	}
	return nil
}

func (t *checkpointTracker) triggered(id exec.CheckpointID, at time.Time, final bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Triggered++
	t.stats.InProgress++
	t.stats.History = slices.Insert(t.stats.History, 0, CheckpointRecord{ID: int64(id), Status: CheckpointInProgress,
		Final: final, Trigger: at, NumSubtasks: t.subtasks})
	if len(t.stats.History) > CheckpointHistorySize {
		// Drop the oldest that is not in progress.
		for i := len(t.stats.History) - 1; i >= 0; i-- {
			if t.stats.History[i].Status != CheckpointInProgress {
				t.stats.History = slices.Delete(t.stats.History, i, i+1)
				break
			}
		}
	}
}

func (t *checkpointTracker) aborted(id exec.CheckpointID, reason string) {
	t.mu.Lock()
	r := t.record(int64(id))
	if r == nil || r.Status != CheckpointInProgress {
		t.mu.Unlock()
		return
	}
	t.stats.InProgress--
	t.stats.Failed++
	r.Status, r.Failure, r.FailureMessage = CheckpointFailed, time.Now(), reason
	cp := *r
	t.stats.LatestFailed = &cp
	stats, onChange := t.stats, t.onChange
	t.mu.Unlock()
	if onChange != nil {
		onChange(cp, stats)
	}
}

func (t *checkpointTracker) completed(id exec.CheckpointID, acks []exec.InstanceAck, _, _ time.Duration) {
	now := time.Now()
	ops := operatorFigures(acks)
	var path string
	if t.locate != nil {
		path = t.locate(int64(id))
	}
	t.mu.Lock()
	r := t.record(int64(id))
	if r == nil {
		// Triggered before the tracker knew (cannot happen) or already out
		// of the history: count it all the same.
		t.stats.History = slices.Insert(t.stats.History, 0, CheckpointRecord{ID: int64(id), Trigger: now, NumSubtasks: t.subtasks})
		t.stats.InProgress++
		r = &t.stats.History[0]
	}
	if r.Status == CheckpointInProgress {
		t.stats.InProgress--
	}
	t.stats.Completed++
	r.Status, r.LatestAck, r.ExternalPath, r.Operators = CheckpointCompleted, now, path, ops
	r.NumAcknowledged = r.NumSubtasks // the coordinator completes it when every task acknowledged
	r.CheckpointedSize, r.StateSize = 0, 0
	for _, a := range acks {
		r.CheckpointedSize += a.UploadedBytes
		r.StateSize += a.FullBytes
	}
	r.Incremental = r.CheckpointedSize < r.StateSize
	t.stats.CheckpointedSize.add(r.CheckpointedSize)
	t.stats.StateSize.add(r.StateSize)
	t.stats.EndToEnd.add(r.EndToEnd().Milliseconds())
	cp := *r
	t.stats.LatestCompleted = &cp
	stats, onChange := t.stats, t.onChange
	t.mu.Unlock()
	if onChange != nil {
		onChange(cp, stats)
	}
}

func (t *checkpointTracker) restored(id int64, savepoint bool, path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Restored++
	t.stats.LatestRestored = &RestoredCheckpoint{ID: id, At: time.Now(), Savepoint: savepoint, ExternalPath: path}
}

func (t *checkpointTracker) savepoint(id int64, path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.LatestSavepoint = &SavepointRecord{CheckpointID: id, At: time.Now(), Path: path}
}

// snapshot copies the statistics.
func (t *checkpointTracker) snapshot() CheckpointStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.History = slices.Clone(s.History)
	return s
}

// operatorFigures sums acknowledgements per operator, in job-graph order.
func operatorFigures(acks []exec.InstanceAck) []OperatorCheckpoint {
	at := map[exec.OperatorID]int{}
	var out []OperatorCheckpoint
	for _, a := range acks {
		i, ok := at[a.Op]
		if !ok {
			i = len(out)
			at[a.Op] = i
			out = append(out, OperatorCheckpoint{Vertex: a.Vertex, Index: a.Index, Name: a.Name})
		}
		o := &out[i]
		o.Subtasks++
		o.CheckpointedSize += a.UploadedBytes
		o.StateSize += a.FullBytes
		o.Sync = max(o.Sync, a.SyncDuration)
		o.Async = max(o.Async, a.AsyncDuration)
	}
	slices.SortFunc(out, func(a, b OperatorCheckpoint) int {
		if a.Vertex != b.Vertex {
			return a.Vertex - b.Vertex
		}
		return a.Index - b.Index
	})
	return out
}

// init learns the job's graph and where its checkpoints lie, once.
func (t *checkpointTracker) init(g *exec.JobGraph, cp *checkpointing) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subtasks != 0 {
		return
	}
	for _, v := range g.Vertices {
		t.subtasks += v.Parallelism
	}
	if cp != nil {
		m := cp.manager
		t.locate = func(id int64) string {
			for _, md := range m.Retained() {
				if md.ID == id {
					return md.Location()
				}
			}
			return ""
		}
	}
}
