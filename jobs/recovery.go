package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/plan"
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
	// maxParallelism is the pipeline.max-parallelism the job runs with: the
	// restored checkpoint's when the option was not set explicitly, as in
	// Flink.
	maxParallelism int
	// named: 'pipeline.name' was set, so running the pipeline again
	// resumes from the latest retained checkpoint.
	named bool
	// lock holds the named job's directory for this process; lease does
	// the same on S3.
	lock  *os.File
	lease *checkpoint.Lease
	// retainOnCancel keeps checkpoints of a cancelled job
	// (RETAIN_ON_CANCELLATION); otherwise they are deleted, as when the job
	// finishes. Only a failed or crashed job leaves checkpoints to resume from.
	retainOnCancel bool
	// retention is execution.checkpointing.externalized-checkpoint-retention
	// as set (reported by CheckpointSettings).
	retention string
	// savepointsDir is state.savepoints.dir; storageOpts the s3.* options
	// of the storages.
	savepointsDir string
	storageOpts   map[string]string
	// noClaim is the snapshot restored in NO_CLAIM mode: attempts that
	// restore it make their first checkpoint a full one.
	noClaim *checkpoint.Metadata
	// bad are the checkpoints a restore found unrestorable
	// (exec.ErrCheckpointUnrestorable): recovery never picks them again.
	bad map[int64]bool
	// migration maps the state of migrated (the snapshot the job started
	// from) onto the job's operators; attempts that restore another
	// checkpoint (one of this run's) need none.
	migration *checkpoint.Migration
	migrated  *checkpoint.Metadata
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
func (s *Supervisor) checkpointSetup(ctx context.Context, conf *options.Values, job string, pl *plan.Plan) (*checkpointing, error) {
	plan := pl.Fingerprint()
	iv := strings.TrimSpace(conf.Get(options.CheckpointInterval.Key))
	recovery := strings.TrimSpace(options.RecoveryPath.Get(conf))
	savepoints := strings.TrimSpace(options.SavepointsDir.Get(conf))
	if iv == "" && recovery == "" && savepoints == "" {
		return nil, nil
	}
	if pl.Batch {
		if recovery != "" {
			return nil, fmt.Errorf("'%s' = '%s' cannot be used in batch mode: a batch job has no checkpoints and does not restore state; run it with 'execution.runtime-mode' = 'streaming' or reset the option", options.RecoveryPath.Key, recovery)
		}
		// Flink's StreamGraphGenerator disables checkpointing in batch mode
		// and says so in its log.
		if iv != "" && s.cfg.Logf != nil {
			s.cfg.Logf("Disabled Checkpointing. Checkpointing is not supported and not needed when executing jobs in BATCH mode.")
		}
		return nil, nil
	}
	c := &checkpointing{savepointsDir: savepoints, storageOpts: map[string]string{}}
	if iv != "" {
		c.cfg.Interval = options.CheckpointInterval.Get(conf)
		if c.cfg.Interval <= 0 {
			return nil, fmt.Errorf("'execution.checkpointing.interval' must be a positive duration, but was '%s'", iv)
		}
	}
	if options.CheckpointMode.Get(conf) == "AT_LEAST_ONCE" {
		c.cfg.Mode = exec.AtLeastOnce
	}
	c.cfg.Timeout = options.CheckpointTimeout.Get(conf)
	c.cfg.MinPause = options.CheckpointMinPause.Get(conf)
	c.cfg.MaxConcurrent = options.CheckpointMaxConcurrent.Get(conf)
	c.cfg.TolerableFailures = options.TolerableFailures.Get(conf)
	kind, err := state.ParseKind(options.StateBackend.Get(conf))
	if err != nil {
		return nil, err
	}
	c.kind = kind
	switch inc := options.Incremental.Get(conf); {
	case inc == "false" && kind == state.RocksDB:
		return nil, fmt.Errorf("'%s' = 'false' is not supported with '%s' = 'rocksdb': its checkpoints are always incremental (they upload only new SST files); leave the option unset or use 'hashmap'", options.Incremental.Key, options.StateBackend.Key)
	case inc == "true" && kind == state.Hashmap:
		return nil, fmt.Errorf("'%s' = 'true' is not supported with '%s' = 'hashmap': its checkpoints are always full; leave the option unset or use 'rocksdb'", options.Incremental.Key, options.StateBackend.Key)
	}
	dir := strings.TrimSpace(options.CheckpointsDir.Get(conf))
	if dir == "" {
		// Flink keeps checkpoints in the JobManager's memory when no directory
		// is set; a single process keeps them on local disk instead, so a
		// restart of the same pipeline on this machine can resume.
		dir = filepath.Join(os.TempDir(), "flinksql-checkpoints")
	}
	storageOpts := c.storageOpts
	for k, v := range conf.WithPrefix("s3.") {
		storageOpts[k] = v
	}
	st, err := checkpoint.OpenStorage(ctx, dir, storageOpts)
	if err != nil {
		return nil, fmt.Errorf("state.checkpoints.dir: %w", err)
	}
	retention := options.CheckpointRetention.Get(conf)
	c.retainOnCancel = retention == "RETAIN_ON_CANCELLATION"
	c.retention = retention
	named := options.PipelineName.IsSet(conf)
	c.named = named
	jobDir := unsafePath.ReplaceAllString(job, "_")
	if !named {
		jobDir += "-" + newJobID()[:12]
	} else if local, ok := localDir(dir); ok {
		// One process at a time per named job and directory: two would
		// resume the same checkpoint and delete each other's files.
		if c.lock, err = lockJob(local, jobDir); err != nil {
			return nil, fmt.Errorf("'pipeline.name' '%s': %w", job, err)
		}
	} else if checkpoint.SupportsLease(st) {
		// The same on S3, where there are no file locks: a lease object
		// written with conditional PUTs and renewed while the run lives.
		if c.lease, err = checkpoint.AcquireLease(ctx, st, jobDir, checkpoint.LeaseOptions{Where: dir, Log: s.cfg.Stderr}); err != nil {
			return nil, fmt.Errorf("'pipeline.name' '%s': %w", job, err)
		}
	}
	// The identities and state schemas of the job's stateful operators,
	// recorded in every checkpoint and compared with the restored one's.
	g, err := pl.JobGraph(job)
	if err != nil {
		c.unlock()
		return nil, err
	}
	ops, err := exec.DescribeStates(g, s.cfg.TempDir)
	if err != nil {
		c.unlock()
		return nil, fmt.Errorf("describing the job's state: %w", err)
	}
	mopts := []checkpoint.Option{checkpoint.WithLog(s.cfg.Log), checkpoint.WithPlan(plan), checkpoint.WithOperators(ops)}
	if c.lease != nil {
		mopts = append(mopts, checkpoint.WithGuard(c.lease.Check))
	}
	m, err := checkpoint.NewManager(ctx, st, jobDir, options.NumRetained.Get(conf), c.retainOnCancel, mopts...)
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
		if c.restore, err = m.LatestRestorable(ctx, 0); err != nil {
			c.unlock()
			return nil, err
		}
	}
	if recovery == "" && c.restore != nil && c.restore.Plan != "" && c.restore.Plan != plan {
		c.unlock()
		return nil, fmt.Errorf("Checkpoint %d of job '%s' was taken by a different plan (the query or its tables changed), so its state cannot be restored into this one. "+
			"Use another 'pipeline.name', delete that job's checkpoints from '%s', or set 'execution.state-recovery.path' to a checkpoint of this plan.",
			c.restore.ID, job, dir)
	}
	if c.restore != nil {
		// Which state of the snapshot goes to which operator (query
		// evolution: checkpoint.PlanMigration).
		mg, err := checkpoint.PlanMigration(c.restore, ops, plan, checkpoint.PositionalIDs(g))
		if err == nil {
			err = mg.Check(options.IgnoreUnclaimedState.Get(conf))
		}
		if err != nil {
			c.unlock()
			if recovery != "" {
				return nil, fmt.Errorf("execution.state-recovery.path: %w", err)
			}
			return nil, fmt.Errorf("resuming job '%s' from its latest checkpoint: %w", job, err)
		}
		for _, v := range mg.Operators {
			switch {
			case v.Verdict == checkpoint.VerdictDropped:
				fmt.Fprintf(s.cfg.Stderr, "[WARN] The state of operator %s (%s) in %s is not restored: the job has no such operator ('%s' is true).\n", v.From, v.Name, mg.Snapshot, options.IgnoreUnclaimedState.Key)
			case v.Verdict == checkpoint.VerdictKept && v.Why != "":
				fmt.Fprintf(s.cfg.Stderr, "[INFO] Migrating the state of operator %s (%s): %s.\n", v.ID, v.Name, v.Why)
			}
		}
		c.migration, c.migrated = mg, c.restore
	}
	if recovery != "" && c.restore != nil {
		// Who owns the snapshot named explicitly (Flink's claim modes); a
		// job resuming its own latest checkpoint owns it anyway.
		if options.ClaimMode.Get(conf) == "CLAIM" {
			if !m.Owns(c.restore) {
				m.Claim(c.restore)
			}
		} else {
			m.Protect(c.restore)
			c.noClaim = c.restore
		}
	}
	if err := s.checkMaxParallelism(conf, c, job); err != nil {
		c.unlock()
		return nil, err
	}
	m.SetMaxParallelism(c.maxParallelism)
	if c.restore != nil {
		m.NumberAfter(c.restore.ID)
	}
	c.firstID = m.NextID()
	if c.restore != nil {
		what := fmt.Sprintf("checkpoint %d", c.restore.ID)
		if c.restore.Type == checkpoint.TypeSavepoint {
			what = "savepoint " + c.restore.Location()
		}
		fmt.Fprintf(s.cfg.Stderr, "[INFO] Restoring job '%s' from %s (taken %s).\n",
			job, what, c.restore.Timestamp.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// checkMaxParallelism sets c.maxParallelism. Keyed state lives in key
// groups, as many as pipeline.max-parallelism: a checkpoint taken with one
// number cannot be read with another (keys would be looked up in other key
// groups, on other subtasks). As in Flink, a job that does not set the option
// adopts the restored checkpoint's; one that sets another value is refused.
func (s *Supervisor) checkMaxParallelism(conf *options.Values, c *checkpointing, job string) error {
	c.maxParallelism = options.MaxParallelism.Get(conf)
	if c.restore == nil || c.restore.MaxParallelism <= 0 || c.restore.MaxParallelism == c.maxParallelism {
		return nil
	}
	if options.MaxParallelism.IsSet(conf) {
		return fmt.Errorf("The maximum parallelism (%d) with which the latest checkpoint (%d) of job '%s' has been taken and the current maximum parallelism (%d) changed. This is currently not supported. "+
			"Set 'pipeline.max-parallelism' to %d (or leave it unset) to restore this checkpoint.",
			c.restore.MaxParallelism, c.restore.ID, job, c.maxParallelism, c.restore.MaxParallelism)
	}
	fmt.Fprintf(s.cfg.Stderr, "[INFO] Job '%s' uses the maximum parallelism %d of checkpoint %d ('pipeline.max-parallelism' is not set).\n",
		job, c.restore.MaxParallelism, c.restore.ID)
	c.maxParallelism = c.restore.MaxParallelism
	return nil
}

// pickRestore chooses what a restarted attempt restores: the newest
// restorable checkpoint of this run, or, until it has one, the checkpoint it
// started from (a newer checkpoint of an earlier run must not be picked up).
func (s *Supervisor) pickRestore(job string, c *checkpointing, fellBack bool) error {
	if !fellBack {
		latest, err := c.manager.LatestRestorable(context.Background(), c.firstID)
		if err != nil {
			return err
		}
		if latest != nil && c.bad[latest.ID] {
			latest = c.newestGood(c.firstID)
		}
		if latest != nil {
			c.restore = latest
		}
	}
	if c.restore != nil {
		fmt.Fprintf(s.cfg.Stderr, "[INFO] Restoring job '%s' from checkpoint %d.\n", job, c.restore.ID)
	}
	return nil
}

// permanentFailure returns the error to fail a job with at once, without
// restarting it, or nil when a restart may help. A restore that cannot
// succeed (the job differs from the checkpoint's: another state backend,
// another parallelism; or a file the checkpoint needs is gone or damaged and
// no other checkpoint replaces it) would fail the same way at every restart.
func permanentFailure(err error, c *checkpointing) error {
	if lerr := c.leaseLost(); lerr != nil {
		return fmt.Errorf("the job is not restarted: %w (job error: %v)", lerr, err)
	}
	switch {
	case errors.Is(err, checkpoint.ErrIncompatibleRestore):
		return fmt.Errorf("the job cannot be restored from its checkpoint, so it is not restarted: %w", err)
	case errors.Is(err, exec.ErrRestoredOutputAborted):
		return fmt.Errorf("the job is not restarted: no earlier retained checkpoint to restore instead: %w", err)
	case errors.Is(err, exec.ErrCheckpointUnrestorable):
		return fmt.Errorf("the checkpoint the job restores cannot be read, so it is not restarted: %w", err)
	}
	return nil
}

// attemptConfig returns the runtime configuration of the next attempt.
func (c *checkpointing) attemptConfig(localDir string) *exec.CheckpointConfig {
	cfg := c.cfg
	var opts []checkpoint.StoreOption
	if c.restore != nil && c.restore == c.noClaim {
		opts = append(opts, checkpoint.NoClaim())
	}
	if c.restore != nil && c.restore == c.migrated {
		opts = append(opts, checkpoint.WithMigration(c.migration))
	}
	cfg.Store = checkpoint.NewRuntimeStore(c.manager, c.kind, localDir, c.restore, opts...)
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
	if c == nil || c.restore == nil || !errors.Is(err, exec.ErrRestoredOutputAborted) {
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

// restartStrategy decides whether and when a failed job starts again. It
// keeps the state of the exponential-delay backoff between failures.
type restartStrategy struct {
	kind       string // none, fixed-delay, exponential-delay
	attempts   int
	delay      time.Duration
	initial    time.Duration
	max        time.Duration
	multiplier float64
	jitter     float64       // restart-strategy.exponential-delay.jitter-factor
	reset      time.Duration // restart-strategy.exponential-delay.reset-backoff-threshold
	// random returns a number in [0, 1) for the jitter.
	random func() float64

	restarts int           // restarts since the start or the last backoff reset
	backoff  time.Duration // the current exponential backoff, before jitter
}

func (s *Supervisor) restartStrategy(conf *options.Values, checkpointing bool) *restartStrategy {
	kind := strings.ToLower(options.RestartStrategy.Get(conf))
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
	r := &restartStrategy{kind: kind, random: rand.Float64}
	switch kind {
	case "fixed-delay":
		r.attempts = options.FixedDelayAttempts.Get(conf)
		r.delay = options.FixedDelay.Get(conf)
	case "exponential-delay":
		r.attempts = options.ExpAttemptsBeforeReset.Get(conf)
		r.initial = options.ExpInitialBackoff.Get(conf)
		r.max = options.ExpMaxBackoff.Get(conf)
		r.reset = options.ExpResetThreshold.Get(conf)
		// Both were validated when set (package options).
		r.multiplier = options.ExpMultiplier.Get(conf)
		r.jitter = options.ExpJitter.Get(conf)
	}
	return r
}

// onFailure is told that the running attempt failed after it had run for
// ran; it returns the delay before the next attempt, or false when the
// strategy gives up.
//
// exponential-delay works as Flink's: the first restart waits
// initial-backoff, each further one the previous backoff times
// backoff-multiplier, capped at max-backoff; an attempt that ran for at least
// reset-backoff-threshold resets both the backoff and the count of attempts
// (attempts-before-reset-backoff). The jitter-factor shifts each delay by a
// random amount of at most that fraction of the backoff, either way.
func (r *restartStrategy) onFailure(ran time.Duration) (time.Duration, bool) {
	switch r.kind {
	case "fixed-delay":
		r.restarts++
		return r.delay, r.restarts <= r.attempts
	case "exponential-delay":
		if r.restarts == 0 || ran >= r.reset {
			r.restarts, r.backoff = 0, r.initial
			if r.max > 0 && r.backoff > r.max {
				r.backoff = r.max
			}
		} else {
			r.backoff = r.grow(r.backoff)
		}
		r.restarts++
		if r.restarts > r.attempts {
			return 0, false
		}
		return r.jittered(r.backoff), true
	}
	return 0, false
}

// longestDelay is the longest delay the strategy can wait before a restart
// (what a transaction must outlive across a restart); 0 for none.
func (r *restartStrategy) longestDelay() time.Duration {
	switch r.kind {
	case "fixed-delay":
		return r.delay
	case "exponential-delay":
		longest := r.max
		if longest <= 0 {
			longest = r.initial
		}
		return r.jitteredMax(longest)
	}
	return 0
}

// jitteredMax is the largest value jittered can return for d.
func (r *restartStrategy) jitteredMax(d time.Duration) time.Duration {
	if r.jitter <= 0 {
		return d
	}
	out := float64(d) * (1 + r.jitter)
	if out >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(out)
}

// grow multiplies the backoff, capping it before the multiplication can
// overflow: time.Duration(f) of a float beyond MaxInt64 is undefined, and was
// negative from restart 58 on with the defaults.
func (r *restartStrategy) grow(b time.Duration) time.Duration {
	limit := r.max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	next := float64(b) * r.multiplier
	if next >= float64(limit) {
		return limit
	}
	return time.Duration(next)
}

// jittered shifts d by up to ±jitter·d.
func (r *restartStrategy) jittered(d time.Duration) time.Duration {
	if r.jitter <= 0 || d <= 0 {
		return d
	}
	span := float64(d) * r.jitter
	out := float64(d) + (2*r.random()-1)*span
	if out < 0 {
		return 0
	}
	if out >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(out)
}

// Local state directories: each attempt of a job keeps its
// operators' working state in <tmp>/flinksql-state-*, removed when the
// attempt ends. A process killed with -9 cannot remove its own, so every
// start removes those whose owner is gone. The owner holds a flock on
// <dir>/.owner.lock for as long as it uses the directory; the kernel drops it
// when the process dies.
const (
	// LocalStatePrefix starts the names of local state directories.
	LocalStatePrefix = "flinksql-state-"
	localStateLock   = ".owner.lock"
	// staleUnlocked is how old a directory without a lock file must be to be
	// removed: one being created has its lock within microseconds, and one of
	// a build before the lock files has no other mark.
	staleUnlocked = 10 * time.Minute
)

// NewLocalStateDir creates a local state directory under tmp, locked by this
// process until release, which also removes it. Attempts make theirs with
// it; other users of the prefix (tests of the clean-up) too.
func NewLocalStateDir(tmp string) (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(tmp, LocalStatePrefix)
	if err != nil {
		return "", nil, fmt.Errorf("local state directory: %w", err)
	}
	// Lock under a temporary name, then rename: a lock file another start
	// can see is always locked by a live owner or by nobody.
	tmpLock := filepath.Join(dir, localStateLock+".new")
	f, err := os.OpenFile(tmpLock, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			err = os.Rename(tmpLock, filepath.Join(dir, localStateLock))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("local state directory %s: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		f.Close()
	}, nil
}

// removeStaleStateDirs removes the local state directories under tmp that
// no live process holds, saying so on log.
func removeStaleStateDirs(tmp string, log io.Writer) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), LocalStatePrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		f, err := os.OpenFile(filepath.Join(dir, localStateLock), os.O_RDWR, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fi, serr := os.Stat(dir)
			if serr != nil || time.Since(fi.ModTime()) < staleUnlocked {
				continue
			}
		case err != nil:
			continue
		default:
			if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				f.Close() // a live owner
				continue
			}
		}
		rerr := os.RemoveAll(dir)
		if f != nil {
			f.Close()
		}
		if rerr != nil {
			fmt.Fprintf(log, "[WARN] Could not remove the local state directory %s of a run that ended without cleaning up: %v\n", dir, rerr)
			continue
		}
		fmt.Fprintf(log, "[INFO] Removed the local state directory %s of a run that ended without cleaning up.\n", dir)
	}
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

// abandon closes the checkpoints of a job that did not start, keeping them,
// and releases its lock or lease. c may be nil.
func (c *checkpointing) abandon() {
	if c == nil {
		return
	}
	_ = c.manager.Close(false)
	c.unlock()
}

// unlock releases the job's directory lock or lease.
func (c *checkpointing) unlock() {
	if c.lock != nil {
		c.lock.Close()
		c.lock = nil
	}
	if c.lease != nil {
		c.lease.Release()
		c.lease = nil
	}
}

// transactionBudget is how long a transaction of an exactly-once sink may
// have to stay open before the checkpoint that seals it commits it: the
// checkpoint interval, then every checkpoint that may fail in a row and the
// one that completes, each up to its timeout, then the longest delay before
// a restarted attempt commits it. what spells the sum out with the options'
// names and values.
func (s *Supervisor) transactionBudget(conf *options.Values, cp *checkpointing) (time.Duration, string) {
	cc := cp.cfg
	timeout := cc.Timeout
	if timeout <= 0 {
		timeout = exec.DefaultCheckpointTimeout
	}
	tolerable := max(cc.TolerableFailures, 0)
	strategy := s.restartStrategy(conf, cc.Interval > 0)
	restart, restartWhat := strategy.longestDelay(), strategy.longestDelayOption()
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

// leaseLost returns why the run lost its checkpoint lease (s3://) to
// another run, or nil.
func (c *checkpointing) leaseLost() error {
	if c == nil || c.lease == nil {
		return nil
	}
	return c.lease.Lost()
}

// newestGood returns the newest retained checkpoint from minID on that no
// restore found unrestorable, or nil.
func (c *checkpointing) newestGood(minID int64) *checkpoint.Metadata {
	var good *checkpoint.Metadata
	for _, md := range c.manager.Retained() {
		if md.ID >= minID && !c.bad[md.ID] {
			good = md
		}
	}
	return good
}

// longestDelayOption names the option that bounds longestDelay.
func (r *restartStrategy) longestDelayOption() string {
	switch r.kind {
	case "fixed-delay":
		return "'restart-strategy.fixed-delay.delay'"
	case "exponential-delay":
		return "'restart-strategy.exponential-delay.max-backoff' with its 'restart-strategy.exponential-delay.jitter-factor'"
	}
	return "no restart delay ('restart-strategy.type' = 'none')"
}
