package exec

// Fault injection. Crash drills need the process to die at exact places of
// the two-phase-commit protocol, not only at random moments, because the
// dangerous windows (between pre-commit and completion, between completion
// and commit, between the commits of two subtasks) are short. Config.Fault
// is called at each of the points below; a drill's hook kills the process
// there. Production configurations leave it nil, which costs one nil check
// per checkpoint and subtask.

// Fault points, in the order a checkpoint passes them.
const (
	// FaultBeforePreCommit: a sink subtask is at the barrier of the
	// checkpoint and has neither flushed nor called PrepareCommit.
	FaultBeforePreCommit = "before-precommit"
	// FaultAfterPreCommit: PrepareCommit returned the sink subtask's
	// committables (a sink without two-phase commit: its flush returned);
	// the checkpoint is neither acknowledged nor completed.
	FaultAfterPreCommit = "after-precommit"
	// FaultAfterComplete: the coordinator completed the checkpoint (the
	// store wrote its metadata); no task has been told yet, so nothing of it
	// is committed.
	FaultAfterComplete = "after-complete"
	// FaultDuringCommit: a two-phase-commit sink subtask, told that the
	// checkpoint completed, committed the committables of one pre-committed
	// checkpoint; the other subtasks (and its own later committables) may
	// not have committed yet. Sinks without two-phase commit never reach it,
	// nor does the commit of restored committables.
	FaultDuringCommit = "during-commit"
)

// FaultPoints returns the fault points in protocol order.
func FaultPoints() []string {
	return []string{FaultBeforePreCommit, FaultAfterPreCommit, FaultAfterComplete, FaultDuringCommit}
}

// FaultFunc is the type of Config.Fault: it is called with a fault point and
// the checkpoint the caller is working on. It may not return (a drill kills
// the process); when it returns, the runtime goes on as if nothing happened.
// Sink subtasks and the coordinator call it from their own goroutines, so it
// must be safe for concurrent use.
type FaultFunc = func(point string, id CheckpointID)

// fault calls f when set.
func fault(f FaultFunc, point string, id CheckpointID) {
	if f != nil {
		f(point, id)
	}
}
