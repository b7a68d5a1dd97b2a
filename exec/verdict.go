package exec

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// After a restore every two-phase-commit sink subtask commits the
// committables of the restored checkpoint again. Whether a committable the
// external system aborted can be made good depends on all of them, across
// subtasks and sinks: when every one with output was aborted and none
// committed, nothing the restored checkpoint covered became visible, and an
// older checkpoint's replay writes it all again; when some committed, going
// back would duplicate those, so the aborted ones are lost. The
// restoreVerdict collects each task's findings and decides once the last
// task has reported, before that task takes part in any checkpoint, so no
// new commit can happen before the decision.

// restoreVerdict is the job-wide tally of the restored commits.
type restoreVerdict struct {
	cfg Config

	mu        sync.Mutex
	pending   int // tasks that have not reported
	committed int // committables with output that are committed
	losses    []restoreLoss
}

// restoreLoss is one commit call of a restored sink that found aborted
// committables.
type restoreLoss struct {
	sink    *sink
	id      CheckpointID // the checkpoint that sealed the committables
	err     *AbortedCommitError
	metrics *OperatorMetrics
}

// report records a task's restored commits and, for the last task, returns
// the verdict: nil to go on, or the job's error.
func (v *restoreVerdict) report(sinks []barrierSink) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range sinks {
		committed, losses := s.takeRestoreReport()
		v.committed += committed
		v.losses = append(v.losses, losses...)
	}
	v.pending--
	if v.pending > 0 || len(v.losses) == 0 {
		return nil
	}
	restored := v.cfg.Checkpointing.RestoreID
	var msgs []string
	aborted, cont := 0, true
	for _, l := range v.losses {
		msgs = append(msgs, fmt.Sprintf("committables of checkpoint %d: %s", l.id, l.err.Message))
		aborted += l.err.Aborted
		cont = cont && l.err.Continue
	}
	detail := strings.Join(msgs, "; ")
	if v.committed == 0 && v.cfg.Checkpointing.CanFallBack {
		v.cfg.Log("[WARN] Restoring checkpoint %d: every transaction it was to commit (%d) had been aborted and none committed, so none of its output is visible; the previous retained checkpoint is restored instead, and its replay writes that output again (%s).",
			restored, aborted, detail)
		return fmt.Errorf("%w: checkpoint %d: %d transactions aborted, none committed (%s)",
			ErrRestoredOutputAborted, restored, aborted, detail)
	}
	why := "some of its transactions committed, so restoring an earlier checkpoint would duplicate their output"
	switch {
	case v.committed == 0:
		why = "no earlier checkpoint is retained to replay it from (state.checkpoints.num-retained)"
	}
	if cont {
		for _, l := range v.losses {
			l.metrics.LostCommits.Add(int64(l.err.Aborted))
		}
		v.cfg.Log("[ERROR] Restoring checkpoint %d: %d of the transactions it was to commit had been aborted, their output is LOST (%s; %s). The sinks are set to continue after such a loss.",
			restored, aborted, why, detail)
		return nil
	}
	return fmt.Errorf("%w: restoring checkpoint %d: %d of the transactions it was to commit had been aborted and their output is lost (%s): %s",
		ErrOutputLost, restored, aborted, why, detail)
}

// commitLost handles an AbortedCommitError of a commit while the job runs
// (checkpoint id completed): logged and counted when the sink continues
// after losses, otherwise the job's error, so that recovery restores the
// checkpoint and decides what can be made good.
func (s *sink) commitLost(id CheckpointID, err error) error {
	var ae *AbortedCommitError
	if !errors.As(err, &ae) {
		return fmt.Errorf("commit committables of checkpoint %d: %w", id, err)
	}
	if ae.Continue {
		if s.metrics != nil {
			s.metrics.LostCommits.Add(int64(ae.Aborted))
		}
		s.logf("[ERROR] Checkpoint %d completed, but its output is LOST: %s. The sink is set to continue after such a loss.", id, ae.Message)
		return nil
	}
	// Not ErrOutputLost yet: if every committable of the checkpoint was
	// aborted and none committed, the restore of this checkpoint finds so
	// and falls back to an older one; it decides (restoreVerdict).
	return fmt.Errorf("checkpoint %d completed, but %s", id, ae.Message)
}

func (s *sink) logf(format string, args ...any) {
	if s.log != nil {
		s.log(format, args...)
	}
}
