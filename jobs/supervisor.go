// Package jobs owns job supervision: submitting a plan's job, its attempts
// and their local state directories, the restart strategy, recovery from
// checkpoints (which one a restart restores, falling back from one that
// cannot be restored), what happens to the checkpoints when the job ends,
// and the registry of jobs behind SHOW JOBS and STOP JOB.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/plan"
)

// Config is what a Supervisor needs from its owner.
type Config struct {
	// Stderr receives the supervisor's notices ([INFO] and [WARN] lines).
	Stderr io.Writer
	// Logf writes one line of a job's log; safe for concurrent use.
	Logf func(format string, args ...any)
	// Log receives the lines of the jobs' checkpoint storage (completed
	// checkpoints, retention); nil means Stderr.
	Log io.Writer
	// Now is the clock of job start times; nil means time.Now.
	Now func() time.Time
	// TempDir is where attempts keep their local state directories; empty
	// means os.TempDir().
	TempDir string
}

// Supervisor runs and watches the jobs of one session.
type Supervisor struct {
	cfg   Config
	mu    sync.Mutex // guards jobs, order and the Job fields that say so
	jobs  map[string]*Job
	order []string // job ids in start order
	wg    sync.WaitGroup
}

// New returns a supervisor without jobs.
func New(cfg Config) *Supervisor {
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Log == nil {
		cfg.Log = cfg.Stderr
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	return &Supervisor{cfg: cfg, jobs: map[string]*Job{}}
}

// Info describes a job for SHOW JOBS.
type Info struct {
	ID, Name, Status string
	Start            time.Time
}

// List describes the jobs in start order.
func (s *Supervisor) List() []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Info, 0, len(s.order))
	for _, id := range s.order {
		j := s.jobs[id]
		out = append(out, Info{ID: j.id, Name: j.name, Status: j.status, Start: j.start})
	}
	return out
}

// Lookup finds a job by id.
func (s *Supervisor) Lookup(id string) (*Job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	return j, ok
}

// Close stops every job and waits until each has ended.
func (s *Supervisor) Close() {
	s.mu.Lock()
	jobs := make([]*Job, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	s.mu.Unlock()
	for _, j := range jobs {
		j.Stop()
	}
	s.wg.Wait()
}

// ID is the job's id (STOP JOB takes it).
func (rj *Job) ID() string { return rj.id }

// Name is the job's name (pipeline.name, or derived from its sinks).
func (rj *Job) Name() string { return rj.name }

// Done is closed when the job has ended.
func (rj *Job) Done() <-chan struct{} { return rj.done }

// Wait blocks until the job has ended, or ctx is done, and returns why the
// job failed (nil when it finished or was cancelled).
func (rj *Job) Wait(ctx context.Context) error {
	select {
	case <-rj.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	rj.s.mu.Lock()
	defer rj.s.mu.Unlock()
	return rj.err
}

// Job is a submitted job: its attempts, its status and its checkpoints.
type Job struct {
	s        *Supervisor
	id, name string
	start    time.Time
	current  *exec.Job // the running attempt; guarded by Supervisor.mu
	restarts int
	status   string // RUNNING, FINISHED, FAILED, CANCELED
	err      error
	done     chan struct{}
	stopCh   chan struct{} // closed by stop
	stopOnce sync.Once
	// txnPrefixes are the transactional-id prefixes of its exactly-once sinks.
	txnPrefixes []string
	// cp is its checkpointing, nil when off.
	cp *checkpointing
	// stopping is set by StopClean (guarded by Supervisor.mu): the job is
	// being stopped with a final checkpoint, which is kept.
	stopping bool
	// releaseLeases gives back the job's prefix leases when it has ended.
	releaseLeases func()
	// savepoint is the stop with savepoint in progress (guarded by
	// Supervisor.mu), drain whether it drains; sql the job's statements.
	savepoint *savepointRequest
	drain     bool
	sql       []string
	script    []string
	// tracker keeps the checkpoint statistics (all attempts); interval is
	// the checkpoint interval (0: periodic checkpoints off).
	tracker  *checkpointTracker
	interval time.Duration
	// end is when the job ended; exceptions its failures, newest first
	// (both guarded by Supervisor.mu).
	end        time.Time
	exceptions []Exception
	// attemptStart is when the running attempt started (Supervisor.mu).
	attemptStart time.Time
}

func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func jobName(conf *options.Values, plan *plan.Plan) string {
	if n := options.PipelineName.Get(conf); n != "" {
		return n
	}
	return plan.Name
}

// Submit builds and starts the job of a plan with the options of conf and
// the runtime configuration execCfg (both read now: later changes of the
// session's options do not reach the job), and registers it. A supervisor
// goroutine restarts it after failures, as the restart strategy allows,
// from the latest completed checkpoint. ctx bounds the setup (checkpoint
// storage, leases, sink checks), not the job.
func (s *Supervisor) Submit(ctx context.Context, plan *plan.Plan, conf *options.Values, execCfg exec.Config) (*Job, error) {
	name := jobName(conf, plan)
	cp, err := s.checkpointSetup(ctx, conf, name, plan)
	if err != nil {
		return nil, err
	}
	strategy := s.restartStrategy(conf, cp != nil && cp.cfg.Interval > 0)
	prefixes, err := s.validateSinks(ctx, conf, plan, cp)
	if err != nil {
		cp.abandon()
		return nil, err
	}
	releaseLeases, err := s.acquirePrefixLeases(ctx, plan, name)
	if err != nil {
		cp.abandon()
		return nil, err
	}
	tracker := &checkpointTracker{}
	j, cleanup, err := s.startAttempt(plan, name, cp, execCfg, tracker)
	if err != nil {
		releaseLeases()
		cp.abandon()
		return nil, err
	}
	rj := &Job{s: s, id: newJobID(), name: name, start: s.cfg.Now(), current: j, status: "RUNNING",
		done: make(chan struct{}), stopCh: make(chan struct{}), txnPrefixes: prefixes, cp: cp, releaseLeases: releaseLeases,
		tracker: tracker, interval: execCheckpointInterval(cp)}
	rj.attemptStart = rj.start
	s.mu.Lock()
	s.jobs[rj.id] = rj
	s.order = append(s.order, rj.id)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.supervise(rj, plan, cp, j, cleanup, strategy, execCfg)
	return rj, nil
}

func execCheckpointInterval(cp *checkpointing) time.Duration {
	if cp == nil {
		return 0
	}
	return cp.cfg.Interval
}

// startAttempt starts one attempt of a job: a fresh job graph, restoring from
// cp.restore when there is one.
func (s *Supervisor) startAttempt(plan *plan.Plan, name string, cp *checkpointing, cfg exec.Config, tracker *checkpointTracker) (*exec.Job, func(), error) {
	g, err := plan.JobGraph(name)
	if err != nil {
		return nil, nil, err
	}
	tracker.init(g, cp)
	removeStaleStateDirs(s.cfg.TempDir, s.cfg.Stderr)
	local, cleanup, err := NewLocalStateDir(s.cfg.TempDir)
	if err != nil {
		return nil, nil, err
	}
	cfg.KeyedState.Dir = local
	if cp != nil {
		cfg.Checkpointing = cp.attemptConfig(local)
		cfg.MaxParallelism = cp.maxParallelism
		tracker.hook(cfg.Checkpointing)
	}
	j, err := exec.Start(context.Background(), g, cfg)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if cp != nil && cp.restore != nil {
		tracker.restored(cp.restore.ID, cp.restore.Type == checkpoint.TypeSavepoint, cp.restore.Location())
	}
	return j, cleanup, nil
}

// supervise waits for a job's attempts and restarts failed ones.
func (s *Supervisor) supervise(rj *Job, plan *plan.Plan, cp *checkpointing, j *exec.Job, cleanup func(), strategy *restartStrategy, execCfg exec.Config) {
	defer s.wg.Done()
	defer close(rj.done)
	defer rj.releaseLeases()
	finish := func(status string, err error) {
		s.mu.Lock()
		if rj.status != "CANCELED" {
			rj.status, rj.err = status, err
		}
		rj.end = s.cfg.Now()
		if err != nil {
			rj.addException(err, false)
		}
		s.mu.Unlock()
	}
	started := time.Now()
	for n := 1; ; n++ {
		err := j.Wait()
		ran := time.Since(started)
		cleanup()
		if rj.stoppedNow() {
			finish("CANCELED", nil)
			break
		}
		if err == nil {
			finish("FINISHED", nil)
			break
		}
		// A restore that cannot succeed from its checkpoint goes back to
		// the previous retained one at once; lost output, and restores that
		// no restart can make succeed, fail for good.
		// A run that lost its checkpoint lease to another run must not
		// restore at all, not even an earlier checkpoint.
		if lerr := cp.leaseLost(); lerr != nil {
			finish("FAILED", fmt.Errorf("the job is not restarted: %w (job error: %v)", lerr, err))
			break
		}
		fellBack := cp.fallBack(s.cfg.Logf, rj.name, err)
		if !fellBack && errors.Is(err, exec.ErrOutputLost) {
			finish("FAILED", err)
			break
		}
		if !fellBack {
			if perr := permanentFailure(err, cp); perr != nil {
				finish("FAILED", perr)
				break
			}
		}
		var delay time.Duration
		ok := true
		if fellBack {
			n-- // not a failure of the job's own: no backoff, no attempt used
		} else {
			delay, ok = strategy.onFailure(ran)
		}
		if !ok {
			if n > 1 {
				err = fmt.Errorf("job '%s' failed after %d restarts: %w", rj.name, n-1, err)
			}
			finish("FAILED", err)
			break
		}
		s.mu.Lock()
		rj.addException(err, true)
		s.mu.Unlock()
		fmt.Fprintf(s.cfg.Stderr, "[WARN] Job '%s' failed: %v\n[INFO] Restarting it in %s (restart %d, strategy %s).\n", rj.name, err, delay, n, strategy.kind)
		select {
		case <-time.After(delay):
		case <-rj.stopCh:
		}
		if rj.stoppedNow() {
			break
		}
		if cp != nil {
			if lerr := s.pickRestore(rj.name, cp, fellBack); lerr != nil {
				finish("FAILED", lerr)
				break
			}
		}
		next, nextCleanup, serr := s.startAttempt(plan, rj.name, cp, execCfg, rj.tracker)
		if serr != nil {
			finish("FAILED", serr)
			break
		}
		started = time.Now()
		s.mu.Lock()
		rj.current, rj.restarts, rj.attemptStart = next, n, s.cfg.Now()
		// A stop that came while the attempt was starting cancelled the old
		// attempt; cancel this one too.
		stopped, stopping := rj.stoppedNow(), rj.stopping
		s.mu.Unlock()
		if stopped {
			next.Cancel()
		} else if stopping {
			s.mu.Lock()
			drain := rj.drain || cp == nil
			s.mu.Unlock()
			next.StopSources(drain)
		}
		j, cleanup = next, nextCleanup
	}
	if cp != nil {
		// As in Flink: a finished job discards its checkpoints, a cancelled one
		// too unless RETAIN_ON_CANCELLATION; a failed one keeps them, so that
		// running the pipeline again resumes where it stopped.
		s.mu.Lock()
		status, stopping, sp := rj.status, rj.stopping, rj.savepoint
		s.mu.Unlock()
		var err error
		switch {
		case status == "FINISHED" && sp != nil:
			if s.writeFinalSavepoint(rj, sp) {
				// The savepoint holds everything: the job finished, and its
				// checkpoints go, as in Flink.
				err = cp.manager.Discard()
			} else {
				err = cp.manager.Close(false)
			}
		case status == "FINISHED" && stopping:
			err = cp.manager.Close(false) // stopped with a final checkpoint: resumable
		case status == "FINISHED":
			err = cp.manager.Discard()
		case status == "CANCELED":
			err = cp.manager.Close(true)
		default:
			err = cp.manager.Close(false)
		}
		if err != nil {
			fmt.Fprintf(s.cfg.Stderr, "[WARN] %v\n", err)
		}
		cp.unlock()
	}
}

func (rj *Job) stoppedNow() bool {
	select {
	case <-rj.stopCh:
		return true
	default:
		return false
	}
}

// Stop cancels the job (status CANCELED) and waits until it has ended.
func (rj *Job) Stop() {
	rj.Cancel()
	<-rj.done
}

// StopClean stops a job without losing what it read: its sources stop, and
// with checkpointing a final checkpoint commits the output of everything
// read so far and is kept, so that running the pipeline again resumes from
// it; without checkpointing the job ends as if its input had ended (open
// windows fire, sinks write out what they hold). It waits until the job
// ended, or ctx is done, and describes what happened.
func (rj *Job) StopClean(ctx context.Context) (string, error) {
	s := rj.s
	s.mu.Lock()
	rj.stopping = true
	j := rj.current
	s.mu.Unlock()
	j.StopSources(rj.cp == nil)
	select {
	case <-rj.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	s.mu.Lock()
	status, err := rj.status, rj.err
	s.mu.Unlock()
	switch {
	case status == "FAILED":
		return "", fmt.Errorf("job %s ('%s') failed while stopping: %w", rj.id, rj.name, err)
	case status == "CANCELED":
		return fmt.Sprintf("Job %s ('%s') was cancelled before it could be stopped cleanly.", rj.id, rj.name), nil
	case rj.cp == nil:
		return fmt.Sprintf("Job %s ('%s') has been stopped: its sources stopped reading and, with checkpointing off, it ended as at the end of its input (windows fired, sinks wrote out everything they held).", rj.id, rj.name), nil
	}
	latest, lerr := rj.cp.manager.Latest(context.Background())
	if lerr != nil || latest == nil {
		return fmt.Sprintf("Job %s ('%s') has been stopped with a final checkpoint: its committed output holds everything it read.", rj.id, rj.name), nil
	}
	if !rj.cp.named {
		return fmt.Sprintf("Job %s ('%s') has been stopped with a final checkpoint (%d): its committed output holds everything it read. The job has no 'pipeline.name', so running it again starts afresh; to resume, set 'execution.state-recovery.path' to that checkpoint's %s directory under 'state.checkpoints.dir'.", rj.id, rj.name, latest.ID, latest.Dir()), nil
	}
	return fmt.Sprintf("Job %s ('%s') has been stopped with a final checkpoint (%d): its committed output holds everything it read; running the pipeline again resumes from that checkpoint.", rj.id, rj.name, latest.ID), nil
}

// validateSinks runs the checks sinks need before a job starts (an
// exactly-once Kafka sink asks the broker about transaction timeouts) and
// makes sure no running job of this session uses the same transactional-id
// prefix. It returns the prefixes the job will use.
func (s *Supervisor) validateSinks(ctx context.Context, conf *options.Values, plan *plan.Plan, cp *checkpointing) ([]string, error) {
	var interval time.Duration
	if cp != nil {
		interval = cp.cfg.Interval
	}
	var prefixes []string
	for _, sink := range plan.Sinks {
		if p, ok := sink.Sink.(interface{ TransactionalIDPrefix() string }); ok && p.TransactionalIDPrefix() != "" {
			prefix := p.TransactionalIDPrefix()
			s.mu.Lock()
			for _, other := range s.jobs {
				if other.status != "RUNNING" {
					continue
				}
				for _, used := range other.txnPrefixes {
					if used == prefix {
						s.mu.Unlock()
						return nil, fmt.Errorf("The 'sink.transactional-id-prefix' '%s' of table '%s' is already used by running job %s ('%s'); every exactly-once sink needs a prefix of its own.",
							prefix, sink.Name, other.id, other.name)
					}
				}
			}
			s.mu.Unlock()
			for _, used := range prefixes {
				if used == prefix {
					return nil, fmt.Errorf("The 'sink.transactional-id-prefix' '%s' is used by two sinks of the same job; every exactly-once sink needs a prefix of its own.", prefix)
				}
			}
			prefixes = append(prefixes, prefix)
		}
		if v, ok := sink.Sink.(interface {
			ValidateTransactionTimeout(need time.Duration, what string) error
		}); ok && cp != nil && interval > 0 {
			need, what := s.transactionBudget(conf, cp)
			if err := v.ValidateTransactionTimeout(need, what); err != nil {
				return nil, err
			}
		}
		if v, ok := sink.Sink.(interface {
			ValidateStart(context.Context, time.Duration) error
		}); ok {
			if err := v.ValidateStart(ctx, interval); err != nil {
				return nil, err
			}
		}
	}
	return prefixes, nil
}
