package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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
	// firstID is the first checkpoint ID this run uses: a restart resumes
	// the run's own latest checkpoint once it has one (ID >= firstID), and
	// until then the checkpoint it started from.
	firstID int64
	// lock holds the named job's directory for this process.
	lock *os.File
	// retainOnCancel keeps checkpoints of a cancelled job
	// (RETAIN_ON_CANCELLATION); otherwise they are deleted, as when the job
	// finishes. Only a failed or crashed job leaves checkpoints to resume from.
	retainOnCancel bool
	// bad are the checkpoints a restore found unrestorable
	// (exec.ErrCheckpointUnrestorable): recovery never picks them again.
	bad map[int64]bool
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// checkpointSetup reads the checkpoint options for a job; nil when
// checkpointing is off. It finds the checkpoint to resume from: the one named
// by execution.state-recovery.path, or else, for a job whose 'pipeline.name'
// was set, the latest retained checkpoint of that name in
// state.checkpoints.dir, if it was taken by the same plan. A job without an
// explicit name checkpoints into a directory of its own and never resumes by
// name: default names such as insert-into_<sink> are shared by different
// queries.
func (s *Session) checkpointSetup(ctx context.Context, job, plan string) (*checkpointing, error) {
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
	_, named := s.conf.set["pipeline.name"]
	jobDir := unsafePath.ReplaceAllString(job, "_")
	if !named {
		jobDir += "-" + newJobID()[:12]
	} else if local, ok := localDir(dir); ok {
		// One process at a time per named job and directory: two would
		// resume the same checkpoint and delete each other's files.
		if c.lock, err = lockJob(local, jobDir); err != nil {
			return nil, fmt.Errorf("'pipeline.name' '%s': %w", job, err)
		}
	}
	m, err := checkpoint.NewManager(ctx, st, jobDir, s.conf.intValue("state.checkpoints.num-retained"), c.retainOnCancel,
		checkpoint.WithLog(s.stderr), checkpoint.WithPlan(plan))
	if err != nil {
		c.unlock()
		return nil, err
	}
	c.manager = m
	switch {
	case recovery != "":
		if c.restore, err = m.Load(ctx, recovery); err != nil {
			c.unlock()
			return nil, fmt.Errorf("execution.state-recovery.path: %w", err)
		}
	case named:
		if c.restore, err = m.Latest(ctx); err != nil {
			c.unlock()
			return nil, err
		}
	}
	if c.restore != nil && c.restore.Plan != "" && c.restore.Plan != plan {
		c.unlock()
		return nil, fmt.Errorf("Checkpoint %d of job '%s' was taken by a different plan (the query or its tables changed), so its state cannot be restored into this one. "+
			"Use another 'pipeline.name', delete that job's checkpoints from '%s', or set 'execution.state-recovery.path' to a checkpoint of this plan.",
			c.restore.ID, job, dir)
	}
	c.firstID = m.NextID()
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
		cfg.CanFallBack = c.previous() != nil
	}
	return &cfg
}

// previous returns the newest retained checkpoint older than the one being
// restored that no restore found unrestorable, or nil.
func (c *checkpointing) previous() *checkpoint.Metadata {
	if c.restore == nil {
		return nil
	}
	var prev *checkpoint.Metadata
	retained := false
	for _, md := range c.manager.Retained() {
		retained = retained || md == c.restore || md.ID == c.restore.ID && md.Dir() == c.restore.Dir()
		if md.ID < c.restore.ID && !c.bad[md.ID] {
			prev = md
		}
	}
	if !retained {
		// A checkpoint or savepoint named by execution.state-recovery.path
		// elsewhere: this job's older checkpoints are not its predecessors.
		return nil
	}
	return prev
}

// fallBack handles an attempt that failed because the checkpoint it
// restored cannot be restored (exec.ErrCheckpointUnrestorable): the next
// attempt restores the previous retained checkpoint instead, and the bad one
// is never picked again. It reports whether it chose one.
//
// For a checkpoint whose transactions the broker had all aborted, the
// previous checkpoint loses and duplicates nothing: its own committables
// were committed when it completed (or are committed again by the restore,
// which checks them the same way), and nothing the newer checkpoint covered
// became visible, so replaying from the older one writes it exactly once.
func (c *checkpointing) fallBack(log func(format string, args ...any), job string, err error) bool {
	if c == nil || c.restore == nil || !errors.Is(err, exec.ErrCheckpointUnrestorable) {
		return false
	}
	prev := c.previous()
	if prev == nil {
		return false
	}
	if c.bad == nil {
		c.bad = map[int64]bool{}
	}
	c.bad[c.restore.ID] = true
	log("[WARN] Job '%s': checkpoint %d cannot be restored (%v); restoring the previous retained checkpoint %d (taken %s) instead, and checkpoint %d is not used again.",
		job, c.restore.ID, err, prev.ID, prev.Timestamp.UTC().Format(time.RFC3339), c.restore.ID)
	c.restore = prev
	return true
}

// latest returns the newest retained checkpoint that no restore found
// unrestorable, or nil.
func (c *checkpointing) latest(ctx context.Context) (*checkpoint.Metadata, error) {
	md, err := c.manager.Latest(ctx)
	if err != nil || md == nil || !c.bad[md.ID] {
		return md, err
	}
	var good *checkpoint.Metadata
	for _, r := range c.manager.Retained() {
		if !c.bad[r.ID] {
			good = r
		}
	}
	return good, nil
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

// localDir returns the local path of a file:// or plain checkpoint directory.
func localDir(dir string) (string, bool) {
	if p, ok := strings.CutPrefix(dir, "file://"); ok {
		return p, true
	}
	if strings.HasPrefix(dir, "/") {
		return dir, true
	}
	return "", false
}

// lockJob takes an exclusive lock on <dir>/.<job>.lock. The kernel releases
// it when the process dies, so a killed run never blocks its restart.
func lockJob(dir, job string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "."+job+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another running job uses this name with checkpoint directory '%s'; a named pipeline runs in one process at a time", dir)
	}
	return f, nil
}

// unlock releases the job's directory lock.
func (c *checkpointing) unlock() {
	if c.lock != nil {
		c.lock.Close()
		c.lock = nil
	}
}

// transactionBudget is how long a transaction of an exactly-once sink may
// have to stay open before the checkpoint that seals it commits it: the
// checkpoint interval, then every checkpoint that may fail in a row and the
// one that completes, each up to its timeout, then the longest delay before
// a restarted attempt commits it. what spells the sum out with the options'
// names and values.
func (s *Session) transactionBudget(cp *checkpointing) (time.Duration, string) {
	cc := cp.cfg
	timeout := cc.Timeout
	if timeout <= 0 {
		timeout = exec.DefaultCheckpointTimeout
	}
	tolerable := max(cc.TolerableFailures, 0)
	strategy := s.restartStrategy(cc.Interval > 0)
	restart, restartWhat := strategy.longestDelay()
	const most = time.Duration(1<<63 - 1)
	need := cc.Interval
	add := func(d time.Duration) {
		if need > most-d {
			need = most
		} else {
			need += d
		}
	}
	if rounds := int64(tolerable) + 1; int64(timeout) > int64(most)/rounds {
		need = most
	} else {
		add(time.Duration(int64(timeout) * rounds))
	}
	add(restart)
	what := fmt.Sprintf("'execution.checkpointing.interval' (%s) + 'execution.checkpointing.timeout' (%s) × (1 + 'execution.checkpointing.tolerable-failed-checkpoints' (%d)) + %s (%s)",
		cc.Interval, timeout, tolerable, restartWhat, restart)
	return need, what
}

// longestDelay is the longest wait before a restart, and where it comes
// from.
func (r restartStrategy) longestDelay() (time.Duration, string) {
	switch r.kind {
	case "fixed-delay":
		return r.delay, "'restart-strategy.fixed-delay.delay'"
	case "exponential-delay":
		return max(r.max, r.initial), "'restart-strategy.exponential-delay.max-backoff'"
	}
	return 0, "no restart delay ('restart-strategy.type' = 'none')"
}
