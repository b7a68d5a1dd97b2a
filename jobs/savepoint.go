package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
)

// savepointRequest is a stop with savepoint waiting for the job to end.
type savepointRequest struct {
	dir string
	// Set by the supervisor once the job ended.
	result *checkpoint.Savepoint
	err    error
}

// SetSQL records the statements of the job, stored in its savepoints.
func (rj *Job) SetSQL(stmts ...string) {
	rj.s.mu.Lock()
	rj.sql = append([]string(nil), stmts...)
	rj.s.mu.Unlock()
}

// SetScript records the whole job script (the DDL and SET statements it
// was planned with, then its INSERT or statement set), stored in its
// savepoints so that they can plan it again.
func (rj *Job) SetScript(stmts []string) {
	rj.s.mu.Lock()
	rj.script = append([]string(nil), stmts...)
	rj.s.mu.Unlock()
}

// savepointDir is the directory a savepoint goes to: dir, or else
// state.savepoints.dir.
func (rj *Job) savepointDir(dir string) (string, error) {
	if rj.cp == nil {
		return "", fmt.Errorf("Cannot take a savepoint of job %s ('%s'): it runs without checkpointing. Set 'state.savepoints.dir' (or 'execution.checkpointing.interval') before submitting the job.", rj.id, rj.name)
	}
	if dir = strings.TrimSpace(dir); dir == "" {
		dir = rj.cp.savepointsDir
	}
	if dir == "" {
		return "", fmt.Errorf("Cannot take a savepoint of job %s ('%s'): no savepoint directory was given and 'state.savepoints.dir' is not set.", rj.id, rj.name)
	}
	return dir, nil
}

// StopWithSavepoint stops the job as Flink's stop-with-savepoint does: the
// sources stop, a final checkpoint covers everything read and commits the
// output of exactly-once sinks, and a savepoint of it is written into dir
// (empty: state.savepoints.dir). With drain, the sources first emit the
// maximum watermark, so event-time windows and timers fire; without it,
// pending windows are in the savepoint. When the savepoint cannot be
// written, the final checkpoint is kept and the error names it. It waits
// until the job ended and the savepoint is written, or ctx is done.
func (rj *Job) StopWithSavepoint(ctx context.Context, dir string, drain bool) (*checkpoint.Savepoint, error) {
	dir, err := rj.savepointDir(dir)
	if err != nil {
		return nil, err
	}
	s := rj.s
	s.mu.Lock()
	if rj.status != "RUNNING" {
		status := rj.status
		s.mu.Unlock()
		return nil, fmt.Errorf("Cannot stop job %s ('%s') with a savepoint: it is %s.", rj.id, rj.name, status)
	}
	if rj.savepoint != nil || rj.stopping {
		s.mu.Unlock()
		return nil, fmt.Errorf("Job %s ('%s') is already being stopped.", rj.id, rj.name)
	}
	req := &savepointRequest{dir: dir}
	rj.savepoint, rj.stopping, rj.drain = req, true, drain
	j := rj.current
	s.mu.Unlock()
	j.StopSources(drain)
	select {
	case <-rj.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	status, jerr := rj.status, rj.err
	s.mu.Unlock()
	switch {
	case status == "FAILED":
		return nil, fmt.Errorf("job %s ('%s') failed while stopping with a savepoint: %w", rj.id, rj.name, jerr)
	case status == "CANCELED":
		return nil, fmt.Errorf("job %s ('%s') was cancelled before its savepoint was taken", rj.id, rj.name)
	case req.err != nil:
		return nil, req.err
	case req.result == nil:
		return nil, fmt.Errorf("job %s ('%s') ended without a savepoint", rj.id, rj.name)
	}
	return req.result, nil
}

// writeFinalSavepoint writes the savepoint a stop asked for from the job's
// final checkpoint, which the supervisor calls once the job finished. It
// reports whether the job's checkpoints may go (the savepoint holds
// everything).
func (s *Supervisor) writeFinalSavepoint(rj *Job, req *savepointRequest) bool {
	latest, err := rj.cp.manager.Latest(context.Background())
	if err == nil && latest == nil {
		err = errors.New("the job completed no checkpoint")
	}
	if err == nil {
		s.mu.Lock()
		sql, script := rj.sql, rj.script
		s.mu.Unlock()
		req.result, err = checkpoint.WriteSavepoint(context.Background(), latest, req.dir,
			checkpoint.SavepointOptions{JobID: rj.id, SQL: sql, Script: script, TempDir: s.cfg.TempDir, Storage: rj.cp.storageOpts})
	}
	if err != nil {
		where := ""
		if latest != nil {
			where = fmt.Sprintf(" Its final checkpoint %d is kept: set 'execution.state-recovery.path' to %s to resume from it.", latest.ID, latest.Location())
		}
		req.err = fmt.Errorf("job %s ('%s') stopped, but its savepoint could not be written: %w.%s", rj.id, rj.name, err, where)
		return false
	}
	rj.tracker.savepoint(latest.ID, req.result.Path)
	s.cfg.Logf("Job %s ('%s'): savepoint %s written in %s.", rj.id, rj.name, req.result.Path, req.result.Duration.Round(time.Millisecond))
	return true
}

// TriggerSavepoint writes a savepoint of the running job without stopping
// it: a checkpoint is triggered now (its completion commits exactly-once
// sinks, as every checkpoint's does) and copied into a savepoint in dir
// (empty: state.savepoints.dir), while the job goes on.
func (rj *Job) TriggerSavepoint(ctx context.Context, dir string) (*checkpoint.Savepoint, error) {
	dir, err := rj.savepointDir(dir)
	if err != nil {
		return nil, err
	}
	s := rj.s
	var lastErr error
	// A checkpoint completing right after the triggered one may subsume it
	// before it is pinned: trigger again then.
	for range 3 {
		s.mu.Lock()
		j, status, sql, script := rj.current, rj.status, rj.sql, rj.script
		s.mu.Unlock()
		if status != "RUNNING" {
			return nil, fmt.Errorf("Cannot take a savepoint of job %s ('%s'): it is %s.", rj.id, rj.name, status)
		}
		id, err := j.TriggerCheckpoint(ctx)
		if err != nil {
			return nil, fmt.Errorf("taking a savepoint of job %s ('%s'): %w", rj.id, rj.name, err)
		}
		md, release, err := rj.cp.manager.Pin(int64(id))
		if err != nil {
			lastErr = err
			continue
		}
		sp, err := checkpoint.WriteSavepoint(ctx, md, dir,
			checkpoint.SavepointOptions{JobID: rj.id, SQL: sql, Script: script, TempDir: s.cfg.TempDir, Storage: rj.cp.storageOpts})
		release()
		if err != nil {
			return nil, fmt.Errorf("taking a savepoint of job %s ('%s'): %w", rj.id, rj.name, err)
		}
		rj.tracker.savepoint(int64(id), sp.Path)
		s.cfg.Logf("Job %s ('%s'): savepoint %s written in %s.", rj.id, rj.name, sp.Path, sp.Duration.Round(time.Millisecond))
		return sp, nil
	}
	return nil, fmt.Errorf("taking a savepoint of job %s ('%s'): %w", rj.id, rj.name, lastErr)
}
