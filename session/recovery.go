package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// checkpointing is a job's checkpoint setup: where checkpoints go, which
// state backend keeps operator state, and what a restarted attempt restores.
type checkpointing struct {
	cfg     exec.CheckpointConfig
	manager *checkpoint.Manager
	kind    state.Kind
	restore *checkpoint.Metadata // what the next attempt starts from (nil: fresh)
	// retainOnCancel keeps checkpoints of a cancelled job
	// (RETAIN_ON_CANCELLATION); otherwise they are deleted, as when the job
	// finishes. Only a failed or crashed job leaves checkpoints to resume from.
	retainOnCancel bool
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// checkpointSetup reads the checkpoint options for a job; nil when
// checkpointing is off. It finds the checkpoint to resume from: the one named
// by execution.state-recovery.path, or else the latest retained checkpoint of
// a job with the same name in state.checkpoints.dir.
func (s *Session) checkpointSetup(ctx context.Context, job string) (*checkpointing, error) {
	iv := strings.TrimSpace(s.conf.get("execution.checkpointing.interval"))
	recovery := strings.TrimSpace(s.conf.get("execution.state-recovery.path"))
	if iv == "" && recovery == "" {
		return nil, nil
	}
	c := &checkpointing{}
	if iv != "" {
		c.cfg.Interval = s.conf.duration("execution.checkpointing.interval")
		if c.cfg.Interval <= 0 {
			return nil, fmt.Errorf("'execution.checkpointing.interval' must be a positive duration, but was '%s'", iv)
		}
	}
	if strings.EqualFold(s.conf.get("execution.checkpointing.mode"), "AT_LEAST_ONCE") {
		c.cfg.Mode = exec.AtLeastOnce
	}
	c.cfg.Timeout = s.conf.duration("execution.checkpointing.timeout")
	c.cfg.MinPause = s.conf.duration("execution.checkpointing.min-pause")
	c.cfg.MaxConcurrent = s.conf.intValue("execution.checkpointing.max-concurrent-checkpoints")
	c.cfg.TolerableFailures = s.conf.intValue("execution.checkpointing.tolerable-failed-checkpoints")
	kind, err := state.ParseKind(s.conf.get("state.backend.type"))
	if err != nil {
		return nil, err
	}
	c.kind = kind
	dir := strings.TrimSpace(s.conf.get("state.checkpoints.dir"))
	if dir == "" {
		// Flink keeps checkpoints in the JobManager's memory when no directory
		// is set; a single process keeps them on local disk instead, so a
		// restart of the same pipeline on this machine can resume.
		dir = filepath.Join(os.TempDir(), "flinksql-checkpoints")
	}
	storageOpts := map[string]string{}
	for k, v := range s.conf.set {
		if strings.HasPrefix(k, "s3.") {
			storageOpts[k] = v
		}
	}
	st, err := checkpoint.OpenStorage(ctx, dir, storageOpts)
	if err != nil {
		return nil, fmt.Errorf("state.checkpoints.dir: %w", err)
	}
	retention := strings.ToUpper(s.conf.get("execution.checkpointing.externalized-checkpoint-retention"))
	c.retainOnCancel = retention == "RETAIN_ON_CANCELLATION"
	m, err := checkpoint.NewManager(ctx, st, unsafePath.ReplaceAllString(job, "_"), s.conf.intValue("state.checkpoints.num-retained"), c.retainOnCancel,
		checkpoint.WithLog(s.stderr))
	if err != nil {
		return nil, err
	}
	c.manager = m
	if recovery != "" {
		if c.restore, err = m.Load(ctx, recovery); err != nil {
			return nil, fmt.Errorf("execution.state-recovery.path: %w", err)
		}
	} else if c.restore, err = m.Latest(ctx); err != nil {
		return nil, err
	}
	if c.restore != nil {
		fmt.Fprintf(s.stderr, "[INFO] Restoring job '%s' from checkpoint %d (taken %s).\n",
			job, c.restore.ID, c.restore.Timestamp.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// attemptConfig returns the runtime configuration of the next attempt.
func (c *checkpointing) attemptConfig(localDir string) *exec.CheckpointConfig {
	cfg := c.cfg
	cfg.Store = checkpoint.NewRuntimeStore(c.manager, c.kind, localDir, c.restore)
	// New checkpoint IDs continue after every retained one, also when an
	// older checkpoint was restored, so no chk-<n> directory is reused.
	cfg.RestoreID, cfg.NextID = 0, exec.CheckpointID(c.manager.NextID())
	if c.restore != nil {
		cfg.RestoreID = exec.CheckpointID(c.restore.ID)
	}
	return &cfg
}

// restartStrategy decides whether and when a failed job starts again.
type restartStrategy struct {
	kind       string // none, fixed-delay, exponential-delay
	attempts   int
	delay      time.Duration
	initial    time.Duration
	max        time.Duration
	multiplier float64
}

func (s *Session) restartStrategy(checkpointing bool) restartStrategy {
	kind := strings.ToLower(strings.TrimSpace(s.conf.get("restart-strategy.type")))
	switch kind {
	case "":
		// Flink's default: exponential-delay when checkpointing is on, none otherwise.
		if checkpointing {
			kind = "exponential-delay"
		} else {
			kind = "none"
		}
	case "disable", "off":
		kind = "none"
	case "fixeddelay":
		kind = "fixed-delay"
	case "exponentialdelay":
		kind = "exponential-delay"
	}
	r := restartStrategy{kind: kind}
	switch kind {
	case "fixed-delay":
		r.attempts = s.conf.intValue("restart-strategy.fixed-delay.attempts")
		r.delay = s.conf.duration("restart-strategy.fixed-delay.delay")
	case "exponential-delay":
		r.attempts = s.conf.intValue("restart-strategy.exponential-delay.attempts-before-reset-backoff")
		r.initial = s.conf.duration("restart-strategy.exponential-delay.initial-backoff")
		r.max = s.conf.duration("restart-strategy.exponential-delay.max-backoff")
		r.multiplier, _ = strconv.ParseFloat(s.conf.get("restart-strategy.exponential-delay.backoff-multiplier"), 64)
		if r.multiplier < 1 {
			r.multiplier = 1
		}
	}
	return r
}

// next returns the delay before restart number n (1-based), or false when the
// strategy gives up.
func (r restartStrategy) next(n int) (time.Duration, bool) {
	switch r.kind {
	case "fixed-delay":
		return r.delay, n <= r.attempts
	case "exponential-delay":
		if n > r.attempts {
			return 0, false
		}
		d := float64(r.initial)
		for i := 1; i < n; i++ {
			d *= r.multiplier
		}
		if r.max > 0 && time.Duration(d) > r.max {
			return r.max, true
		}
		return time.Duration(d), true
	}
	return 0, false
}
