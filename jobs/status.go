package jobs

import (
	"slices"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// Exception is a failure of one of a job's attempts.
type Exception struct {
	Time    time.Time
	Message string
	// Restarted: the job was restarted after it (else the job failed).
	Restarted bool
}

// addException records a failure; the caller holds Supervisor.mu.
func (rj *Job) addException(err error, restarted bool) {
	rj.exceptions = slices.Insert(rj.exceptions, 0, Exception{Time: rj.s.cfg.Now(), Message: err.Error(), Restarted: restarted})
	if len(rj.exceptions) > ExceptionHistorySize {
		rj.exceptions = rj.exceptions[:ExceptionHistorySize]
	}
}

// Status is what the REST API, the metrics and DESCRIBE JOB show of a job.
type Status struct {
	ID, Name string
	// State is RUNNING, FINISHED, FAILED or CANCELED.
	State      string
	Start, End time.Time // End is zero while it runs
	Restarts   int
	// AttemptStart is when the current attempt started.
	AttemptStart time.Time
	// Graph is the job graph (the same for every attempt), MaxParallelism
	// its number of key groups.
	Graph          *exec.JobGraph
	MaxParallelism int
	// Metrics are the counters of the current (or last) attempt.
	Metrics []exec.VertexMetrics
	// Checkpointing is on (periodic with Interval > 0, or only final and
	// triggered checkpoints with 0).
	Checkpointing bool
	Interval      time.Duration
	// Exceptions are the attempts' failures, newest first; Err is why the
	// job failed.
	Exceptions []Exception
	Err        string
	// Stoppable: a stop with savepoint may be asked (it runs with
	// checkpointing).
	Stoppable bool
}

// Status describes the job now.
func (rj *Job) Status() Status {
	s := rj.s
	s.mu.Lock()
	st := Status{ID: rj.id, Name: rj.name, State: rj.status, Start: rj.start, End: rj.end, Restarts: rj.restarts, AttemptStart: rj.attemptStart,
		Checkpointing: rj.cp != nil, Interval: rj.interval, Exceptions: slices.Clone(rj.exceptions), Stoppable: rj.cp != nil}
	if rj.err != nil {
		st.Err = rj.err.Error()
	}
	current := rj.current
	s.mu.Unlock()
	st.Graph, st.MaxParallelism = current.Graph(), current.MaxParallelism()
	st.Metrics = current.Metrics()
	return st
}

// UptimeMillis is Flink's uptime: how long the job has been running
// without interruption (since its current attempt started); 0 once ended.
func (st Status) UptimeMillis() int64 {
	if !st.End.IsZero() {
		return 0
	}
	return time.Since(st.AttemptStart).Milliseconds()
}

// CheckpointStats returns the job's checkpoint statistics; false when it
// runs without checkpointing.
func (rj *Job) CheckpointStats() (CheckpointStats, bool) {
	if rj.cp == nil {
		return CheckpointStats{}, false
	}
	return rj.tracker.snapshot(), true
}

// CheckpointSettings are the checkpoint options a job runs with, as read
// when it was submitted.
type CheckpointSettings struct {
	// Interval is 0 when only final and triggered checkpoints are taken.
	Interval, Timeout, MinPause time.Duration
	AtLeastOnce                 bool
	MaxConcurrent               int
	TolerableFailures           int
	// Retention is execution.checkpointing.externalized-checkpoint-retention.
	Retention string
	Backend   state.Kind
}

// CheckpointSettings returns the job's checkpoint options; false when it
// runs without checkpointing.
func (rj *Job) CheckpointSettings() (CheckpointSettings, bool) {
	c := rj.cp
	if c == nil {
		return CheckpointSettings{}, false
	}
	return CheckpointSettings{
		Interval: c.cfg.Interval, Timeout: c.cfg.Timeout, MinPause: c.cfg.MinPause,
		AtLeastOnce: c.cfg.Mode == exec.AtLeastOnce, MaxConcurrent: c.cfg.MaxConcurrent,
		TolerableFailures: c.cfg.TolerableFailures, Retention: c.retention, Backend: c.kind,
	}, true
}

// Cancel cancels the job, as Flink's cancel: it ends CANCELED, its output
// since the last checkpoint is not committed. Unlike Stop it does not wait.
func (rj *Job) Cancel() {
	s := rj.s
	s.mu.Lock()
	if rj.status == "RUNNING" {
		rj.status = "CANCELED"
	}
	// Closing stopCh under the lock pairs with the supervisor's check after
	// it installs a new attempt: either it sees the stop, or this cancels it.
	rj.stopOnce.Do(func() { close(rj.stopCh) })
	j := rj.current
	s.mu.Unlock()
	j.Cancel()
}
