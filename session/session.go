// Package session owns one SQL session: its configuration (SET/RESET), its
// catalog, the execution of statements, and the registry of the jobs it
// started (SHOW JOBS, STOP JOB). The shell talks only to this package.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/sql/planner"
	"github.com/flinksql/flinksql/sql/types"
	"github.com/flinksql/flinksql/state"
)

// Options configure a new session.
type Options struct {
	// Stdout and Stderr receive what the print connector writes.
	Stdout, Stderr io.Writer
	// Config holds initial option values, as if SET.
	Config map[string]string
	// Registry overrides the built-in connectors (tests).
	Registry *connectors.Registry
	// Now overrides the processing clock (tests).
	Now func() time.Time
	// Fault is called at the runtime's fault-injection points (crash
	// drills, see exec.FaultPoints; ParseFault builds it from the text of
	// FaultEnv, which cmd/flinksql reads). Nil in production.
	Fault exec.FaultFunc
}

// Session is one SQL session. Its methods may be called from one goroutine at
// a time; jobs it starts run in the background until they end or are stopped.
type Session struct {
	stderr io.Writer
	logMu  sync.Mutex // serializes job log lines (subtasks write concurrently)
	cat    *catalog.Catalog
	reg    *connectors.Registry
	conf   *options.Values
	now    func() time.Time
	fault  exec.FaultFunc
	mu     sync.Mutex // guards jobs
	jobs   map[string]*runningJob
	order  []string // job ids in start order
	jobsWG sync.WaitGroup
	// pendingSet collects INSERTs between BEGIN STATEMENT SET and END.
	pendingSet []*parser.Insert
	inSet      bool
}

type runningJob struct {
	id, name string
	start    time.Time
	current  *exec.Job // the running attempt; guarded by Session.mu
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
	// stopping is set by stopClean (guarded by Session.mu): the job is
	// being stopped with a final checkpoint, which is kept.
	stopping bool
	// releaseLeases gives back the job's prefix leases when it has ended.
	releaseLeases func()
}

// New creates a session.
func New(opts Options) (*Session, error) {
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	reg := opts.Registry
	if reg == nil {
		reg = builtin.NewRegistry(opts.Stdout, opts.Stderr)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	fault := opts.Fault
	s := &Session{stderr: opts.Stderr, cat: catalog.New(), reg: reg, conf: options.Session().NewValues(), now: now, fault: fault, jobs: map[string]*runningJob{}}
	for k, v := range opts.Config {
		if warning, err := s.conf.Set(k, v); err != nil {
			return nil, err
		} else if warning != "" {
			fmt.Fprintf(s.stderr, "[WARNING] %s\n", warning)
		}
	}
	return s, nil
}

// Close stops every running job and waits for them.
func (s *Session) Close() error {
	s.mu.Lock()
	jobs := make([]*runningJob, 0, len(s.jobs))
	for _, j := range s.jobs {
		jobs = append(jobs, j)
	}
	s.mu.Unlock()
	for _, j := range jobs {
		s.stop(j)
	}
	s.jobsWG.Wait()
	return nil
}

// logLine writes one line of a running job's log to stderr.
func (s *Session) logLine(msg string) { s.logf("%s", msg) }

// Get returns the current value of an option.
func (s *Session) Get(key string) string { return s.conf.Get(key) }

// Completions returns table and view names and SQL keywords for the REPL.
func (s *Session) Completions() []string {
	words := append([]string{}, s.cat.TableNames()...)
	words = append(words, "SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "INSERT INTO",
		"CREATE TABLE", "CREATE VIEW", "DROP TABLE", "DROP VIEW", "SHOW TABLES", "SHOW VIEWS", "SHOW FUNCTIONS",
		"SHOW JOBS", "SHOW CREATE TABLE", "DESCRIBE", "EXPLAIN", "SET", "RESET", "STOP JOB", "TUMBLE", "HOP",
		"CUMULATE", "SESSION", "DESCRIPTOR", "WATERMARK FOR", "INTERVAL", "EXECUTE STATEMENT SET")
	return words
}

func (s *Session) planner(ctx context.Context) (*planner.Planner, error) {
	loc, err := options.ResolveZone(options.LocalTimeZone.Get(s.conf))
	if err != nil {
		return nil, err
	}
	if mode := options.RuntimeMode.Get(s.conf); mode != "streaming" {
		return nil, &planner.UnsupportedError{Msg: fmt.Sprintf("execution.runtime-mode '%s' is not supported yet; flinksql runs queries in streaming mode", mode)}
	}
	mb := planner.MiniBatch{
		Enabled:      options.MiniBatchEnabled.Get(s.conf),
		AllowLatency: options.MiniBatchLatency.Get(s.conf),
		Size:         options.MiniBatchSize.Get(s.conf),
	}
	if mb.Enabled && (mb.AllowLatency <= 0 || mb.Size <= 0) {
		return nil, fmt.Errorf("With 'table.exec.mini-batch.enabled' = 'true', 'table.exec.mini-batch.allow-latency' must be greater than 0 (is '%s') and 'table.exec.mini-batch.size' must be greater than 0 (is '%s').",
			s.conf.Get(options.MiniBatchLatency.Key), s.conf.Get(options.MiniBatchSize.Key))
	}
	notNull, err := exec.ParseNotNullAction(options.NotNullEnforcer.Get(s.conf))
	if err != nil {
		return nil, err
	}
	return planner.New(s.cat, s.reg, planner.Config{
		Parallelism:    options.Parallelism.Get(s.conf),
		MaxParallelism: options.MaxParallelism.Get(s.conf),
		Loc:            loc,
		Now:            s.now,
		StateTTL:       options.StateTTL.Get(s.conf),
		MiniBatch:      mb,
		// Jobs log to the session's stderr, as the runtime's other warnings.
		NotNullEnforcer: notNull,
		Log:             s.logLine,
		Emit: planner.EmitOptions{
			AllowLateness:     options.AllowLateness.Get(s.conf),
			AllowLatenessText: s.conf.Get(options.AllowLateness.Key),
			EarlyFire:         options.EarlyFireEnabled.Get(s.conf),
			LateFire:          options.LateFireEnabled.Get(s.conf),
		},
		IdleTimeout: options.IdleTimeout.Get(s.conf),
	}).WithContext(ctx), nil // Ctrl-C or SIGTERM cancels the planning of a statement
}

func (s *Session) execConfig() exec.Config {
	return exec.Config{
		MaxParallelism:        options.MaxParallelism.Get(s.conf),
		BufferTimeout:         options.BufferTimeout.Get(s.conf),
		AutoWatermarkInterval: options.AutoWatermarkInterval.Get(s.conf),
		IdleTimeout:           options.IdleTimeout.Get(s.conf),
		Now:                   func() int64 { return s.now().UnixMilli() },
		Fault:                 s.fault,
		Log:                   s.logf,
		KeyedState:            s.keyedStateConfig(),
	}
}

// keyedStateConfig is where keyed operators keep their working state:
// state.backend.type and the rocksdb memory options (validated on SET).
func (s *Session) keyedStateConfig() exec.KeyedStateConfig {
	kind, _ := state.ParseKind(options.StateBackend.Get(s.conf))
	return exec.KeyedStateConfig{
		Kind:          kind,
		ManagedMemory: options.ManagedMemory.Get(s.conf),
		FixedPerSlot:  options.RocksDBFixedPerSlot.Get(s.conf),
		Unmanaged:     !options.RocksDBManaged.Get(s.conf),
	}
}

// logf writes one line to the session's log (stderr); jobs log from many
// goroutines, so lines are written whole, one at a time.
func (s *Session) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.stderr, format+"\n", args...)
}

// Execute parses a script and runs its statements in order, stopping at the
// first error. INSERT jobs are waited for (bounded input) before the next
// statement; SELECT results are drained into the returned results' rows.
func (s *Session) Execute(ctx context.Context, text string) ([]*Result, error) {
	stmts, err := parser.ParseScript(text)
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, st := range stmts {
		r, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			return out, err
		}
		if r.Job != nil {
			if err := r.Job.Wait(ctx); err != nil {
				return out, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

var okResult = &Result{Message: "Execute statement succeeded."}

// ExecuteStatement runs one statement. A SELECT or INSERT returns with its
// job running.
func (s *Session) ExecuteStatement(ctx context.Context, st parser.Statement) (*Result, error) {
	if s.inSet {
		switch x := st.(type) {
		case *parser.Insert:
			s.pendingSet = append(s.pendingSet, x)
			return &Result{Message: "Add SQL update statement to the statement set."}, nil
		case *parser.End:
			inserts := s.pendingSet
			s.inSet, s.pendingSet = false, nil
			return s.executeStatementSet(ctx, &parser.StatementSet{StmtBase: x.StmtBase, Inserts: inserts})
		default:
			return nil, fmt.Errorf("Only INSERT statements can be added to a statement set; end it with END")
		}
	}
	switch x := st.(type) {
	case *parser.CreateTable:
		p, err := s.planner(ctx)
		if err != nil {
			return nil, err
		}
		t, err := p.CreateTable(x)
		if err != nil {
			return nil, err
		}
		if err := s.cat.CreateTable(t, x.IfNotExists); err != nil {
			return nil, err
		}
		return okResult, nil
	case *parser.CreateView:
		p, err := s.planner(ctx)
		if err != nil {
			return nil, err
		}
		v, err := p.CreateView(x)
		if err != nil {
			return nil, err
		}
		if err := s.cat.CreateView(v, x.IfNotExists); err != nil {
			return nil, err
		}
		return okResult, nil
	case *parser.Drop:
		id, err := s.cat.Qualify(x.Name)
		if err != nil {
			return nil, err
		}
		if x.Object == "VIEW" {
			err = s.cat.DropView(id, x.IfExists)
		} else {
			err = s.cat.DropTable(id, x.IfExists)
		}
		if err != nil {
			return nil, err
		}
		return okResult, nil
	case *parser.Set:
		if x.Key == "" {
			return &Result{Table: &StaticTable{Columns: []string{"key", "value"}, Rows: s.conf.List()}}, nil
		}
		warning, err := s.conf.Set(x.Key, x.Value)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			s.logf("[WARNING] %s", warning)
		}
		return okResult, nil
	case *parser.Reset:
		s.conf.Reset(x.Key)
		return okResult, nil
	case *parser.Show:
		return s.show(x)
	case *parser.ShowCreate:
		return s.showCreate(x)
	case *parser.Describe:
		return s.describe(x)
	case *parser.Explain:
		p, err := s.planner(ctx)
		if err != nil {
			return nil, err
		}
		text, err := p.Explain(x)
		if err != nil {
			return nil, err
		}
		return &Result{Text: text}, nil
	case *parser.QueryStmt:
		return s.executeQuery(ctx, x)
	case *parser.Insert:
		p, err := s.planner(ctx)
		if err != nil {
			return nil, err
		}
		plan, err := p.PlanInsert(x)
		if err != nil {
			return nil, err
		}
		return s.submit(plan)
	case *parser.StatementSet:
		return s.executeStatementSet(ctx, x)
	case *parser.BeginStatementSet:
		s.inSet = true
		return &Result{Message: "Begin a statement set."}, nil
	case *parser.End:
		return nil, fmt.Errorf("No statement set to END; start one with BEGIN STATEMENT SET")
	case *parser.StopJob:
		return s.stopJob(x)
	case *parser.Use:
		if x.Catalog && (len(x.Name) != 1 || x.Name[0] != catalog.DefaultCatalog) {
			return nil, fmt.Errorf("A catalog with name [%s] does not exist.", strings.Join(x.Name, "."))
		}
		if !x.Catalog && strings.Join(x.Name, ".") != catalog.DefaultDatabase && strings.Join(x.Name, ".") != catalog.DefaultCatalog+"."+catalog.DefaultDatabase {
			return nil, fmt.Errorf("A database with name [%s] does not exist in the catalog: [%s].", strings.Join(x.Name, "."), catalog.DefaultCatalog)
		}
		return okResult, nil
	}
	return nil, &planner.UnsupportedError{Msg: fmt.Sprintf("Unsupported statement: %s", firstLine(st.Text()))}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

func (s *Session) executeStatementSet(ctx context.Context, x *parser.StatementSet) (*Result, error) {
	p, err := s.planner(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := p.PlanStatementSet(x)
	if err != nil {
		return nil, err
	}
	return s.submit(plan)
}

func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Session) jobName(plan *planner.Plan) string {
	if n := options.PipelineName.Get(s.conf); n != "" {
		return n
	}
	return plan.Name
}

// start builds and starts the job of a plan and registers it. A supervisor
// goroutine restarts it after failures, as the restart strategy allows, from
// the latest completed checkpoint.
func (s *Session) start(plan *planner.Plan) (*runningJob, error) {
	name := s.jobName(plan)
	ctx := context.Background()
	cp, err := s.checkpointSetup(ctx, name, plan.Fingerprint())
	if err != nil {
		return nil, err
	}
	prefixes, err := s.validateSinks(ctx, plan, cp)
	if err != nil {
		cp.abandon()
		return nil, err
	}
	releaseLeases, err := s.acquirePrefixLeases(ctx, plan, name)
	if err != nil {
		cp.abandon()
		return nil, err
	}
	j, cleanup, err := s.startAttempt(plan, name, cp)
	if err != nil {
		releaseLeases()
		cp.abandon()
		return nil, err
	}
	rj := &runningJob{id: newJobID(), name: name, start: s.now(), current: j, status: "RUNNING",
		done: make(chan struct{}), stopCh: make(chan struct{}), txnPrefixes: prefixes, cp: cp, releaseLeases: releaseLeases}
	s.mu.Lock()
	s.jobs[rj.id] = rj
	s.order = append(s.order, rj.id)
	s.mu.Unlock()
	s.jobsWG.Add(1)
	go s.supervise(rj, plan, cp, j, cleanup)
	return rj, nil
}

// startAttempt starts one attempt of a job: a fresh job graph, restoring from
// cp.restore when there is one.
func (s *Session) startAttempt(plan *planner.Plan, name string, cp *checkpointing) (*exec.Job, func(), error) {
	g, err := plan.JobGraph(name)
	if err != nil {
		return nil, nil, err
	}
	cfg := s.execConfig()
	removeStaleStateDirs(os.TempDir(), s.stderr)
	local, cleanup, err := newLocalStateDir(os.TempDir())
	if err != nil {
		return nil, nil, err
	}
	cfg.KeyedState.Dir = local
	if cp != nil {
		cfg.Checkpointing = cp.attemptConfig(local)
		cfg.MaxParallelism = cp.maxParallelism
	}
	j, err := exec.Start(context.Background(), g, cfg)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return j, cleanup, nil
}

// supervise waits for a job's attempts and restarts failed ones.
func (s *Session) supervise(rj *runningJob, plan *planner.Plan, cp *checkpointing, j *exec.Job, cleanup func()) {
	defer s.jobsWG.Done()
	defer close(rj.done)
	defer rj.releaseLeases()
	strategy := s.restartStrategy(cp != nil && cp.cfg.Interval > 0)
	finish := func(status string, err error) {
		s.mu.Lock()
		if rj.status != "CANCELED" {
			rj.status, rj.err = status, err
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
		fellBack := cp.fallBack(s.logf, rj.name, err)
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
		fmt.Fprintf(s.stderr, "[WARN] Job '%s' failed: %v\n[INFO] Restarting it in %s (restart %d, strategy %s).\n", rj.name, err, delay, n, strategy.kind)
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
		next, nextCleanup, serr := s.startAttempt(plan, rj.name, cp)
		if serr != nil {
			finish("FAILED", serr)
			break
		}
		started = time.Now()
		s.mu.Lock()
		rj.current, rj.restarts = next, n
		// A stop that came while the attempt was starting cancelled the old
		// attempt; cancel this one too.
		stopped, stopping := rj.stoppedNow(), rj.stopping
		s.mu.Unlock()
		if stopped {
			next.Cancel()
		} else if stopping {
			next.StopSources(cp == nil)
		}
		j, cleanup = next, nextCleanup
	}
	if cp != nil {
		// As in Flink: a finished job discards its checkpoints, a cancelled one
		// too unless RETAIN_ON_CANCELLATION; a failed one keeps them, so that
		// running the pipeline again resumes where it stopped.
		s.mu.Lock()
		status, stopping := rj.status, rj.stopping
		s.mu.Unlock()
		var err error
		switch {
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
			fmt.Fprintf(s.stderr, "[WARN] %v\n", err)
		}
		cp.unlock()
	}
}

func (rj *runningJob) stoppedNow() bool {
	select {
	case <-rj.stopCh:
		return true
	default:
		return false
	}
}

func (s *Session) stop(rj *runningJob) {
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
	<-rj.done
}

func (s *Session) submit(plan *planner.Plan) (*Result, error) {
	rj, err := s.start(plan)
	if err != nil {
		return nil, err
	}
	return &Result{Job: &Job{
		ID:   rj.id,
		Name: rj.name,
		wait: func(ctx context.Context) error {
			select {
			case <-rj.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			return rj.err
		},
		stop:      func() { s.stop(rj) },
		stopClean: func(ctx context.Context) (string, error) { return s.stopClean(ctx, rj) },
		done:      rj.done,
	}}, nil
}

// stopClean stops a job without losing what it read: its sources stop, and
// with checkpointing a final checkpoint commits the output of everything
// read so far and is kept, so that running the pipeline again resumes from
// it; without checkpointing the job ends as if its input had ended (open
// windows fire, sinks write out what they hold). It waits until the job
// ended, or ctx is done, and describes what happened.
func (s *Session) stopClean(ctx context.Context, rj *runningJob) (string, error) {
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

// executeQuery runs a SELECT into a collect sink read by QueryResult.Next.
func (s *Session) executeQuery(ctx context.Context, q *parser.QueryStmt) (*Result, error) {
	p, err := s.planner(ctx)
	if err != nil {
		return nil, err
	}
	rows := make(chan []Change, 16)
	plan, err := p.PlanQuery(q.Query, func(subtask, parallelism int) (exec.SinkWriter, error) {
		return &collectWriter{out: rows}, nil
	})
	if err != nil {
		return nil, err
	}
	rj, err := s.start(plan)
	if err != nil {
		return nil, err
	}
	loc, _ := options.ResolveZone(options.LocalTimeZone.Get(s.conf))
	qr := &QueryResult{Schema: plan.Schema, Loc: loc, ChangelogMode: plan.Mode}
	qr.next = func(ctx context.Context) ([]Change, error) {
		select {
		case c := <-rows:
			return c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-rj.done:
		}
		// The job ended: everything it wrote is already in the channel.
		select {
		case c := <-rows:
			return c, nil
		default:
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if rj.err != nil {
			return nil, rj.err
		}
		return nil, io.EOF
	}
	var once sync.Once
	qr.cancel = func() { once.Do(func() { s.stop(rj) }) }
	return &Result{Query: qr}, nil
}

// collectWriter hands a SELECT's rows to the client.
type collectWriter struct {
	out chan<- []Change
}

func (w *collectWriter) Open(context.Context) error { return nil }
func (w *collectWriter) Finish(context.Context) error {
	return nil
}
func (w *collectWriter) Close() error { return nil }
func (w *collectWriter) Write(ctx context.Context, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	changes := make([]Change, b.Len())
	for i, r := range b.Rows {
		changes[i] = Change{Kind: b.Kinds[i], Row: r.Clone()}
	}
	select {
	case w.out <- changes:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) stopJob(x *parser.StopJob) (*Result, error) {
	if x.WithSavepoint {
		return nil, &planner.UnsupportedError{Msg: "STOP JOB ... WITH SAVEPOINT is not supported yet"}
	}
	s.mu.Lock()
	rj, ok := s.jobs[x.JobID]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("Could not stop job %s: no such job in this session", x.JobID)
	}
	s.stop(rj)
	return okResult, nil
}

func (s *Session) show(x *parser.Show) (*Result, error) {
	switch x.What {
	case "TABLES":
		return listTable("table name", filterLike(s.cat.TableNames(), x)), nil
	case "VIEWS":
		return listTable("view name", filterLike(s.cat.ViewNames(), x)), nil
	case "FUNCTIONS", "USER FUNCTIONS":
		var names []string
		if x.What == "FUNCTIONS" {
			seen := map[string]bool{}
			for _, n := range append(expr.Functions(), agg.Names()...) {
				n = strings.ToLower(n)
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
			sort.Strings(names)
		}
		return listTable("function name", filterLike(names, x)), nil
	case "CATALOGS":
		return listTable("catalog name", []string{catalog.DefaultCatalog}), nil
	case "DATABASES":
		return listTable("database name", []string{catalog.DefaultDatabase}), nil
	case "CURRENT CATALOG":
		return listTable("current catalog name", []string{s.cat.CurrentCatalog()}), nil
	case "CURRENT DATABASE":
		return listTable("current database name", []string{s.cat.CurrentDatabase()}), nil
	case "JOBS":
		s.mu.Lock()
		defer s.mu.Unlock()
		t := &StaticTable{Columns: []string{"job id", "job name", "status", "start time"}}
		for _, id := range s.order {
			j := s.jobs[id]
			t.Rows = append(t.Rows, []string{j.id, j.name, j.status, j.start.UTC().Format("2006-01-02T15:04:05.000Z")})
		}
		return &Result{Table: t}, nil
	case "COLUMNS":
		r, err := s.describe(&parser.Describe{StmtBase: x.StmtBase, Name: x.From})
		if err != nil || !x.HasLike {
			return r, err
		}
		// [NOT] LIKE filters on the column name, as Flink does.
		rows := r.Table.Rows[:0]
		for _, row := range r.Table.Rows {
			if likeMatch(row[0], x.Like, x.ILike) != x.NotLike {
				rows = append(rows, row)
			}
		}
		r.Table.Rows = rows
		return r, nil
	}
	return nil, &planner.UnsupportedError{Msg: "SHOW " + x.What + " is not supported yet"}
}

func filterLike(names []string, x *parser.Show) []string {
	if !x.HasLike {
		return names
	}
	var out []string
	for _, n := range names {
		m := likeMatch(n, x.Like, x.ILike)
		if m != x.NotLike {
			out = append(out, n)
		}
	}
	return out
}

// likeMatch implements SQL LIKE with % and _ (no escape) for SHOW ... LIKE.
func likeMatch(s, pattern string, fold bool) bool {
	if fold {
		s, pattern = strings.ToLower(s), strings.ToLower(pattern)
	}
	sr, pr := []rune(s), []rune(pattern)
	var match func(i, j int) bool
	match = func(i, j int) bool {
		for j < len(pr) {
			switch pr[j] {
			case '%':
				for k := i; k <= len(sr); k++ {
					if match(k, j+1) {
						return true
					}
				}
				return false
			case '_':
				if i >= len(sr) {
					return false
				}
			default:
				if i >= len(sr) || sr[i] != pr[j] {
					return false
				}
			}
			i++
			j++
		}
		return i == len(sr)
	}
	return match(0, 0)
}

func listTable(col string, names []string) *Result {
	t := &StaticTable{Columns: []string{col}}
	for _, n := range names {
		t.Rows = append(t.Rows, []string{n})
	}
	return &Result{Table: t}
}

func (s *Session) showCreate(x *parser.ShowCreate) (*Result, error) {
	id, err := s.cat.Qualify(x.Name)
	if err != nil {
		return nil, err
	}
	if x.Object == "VIEW" {
		v, ok := s.cat.View(id)
		if !ok {
			return nil, fmt.Errorf("Could not execute SHOW CREATE VIEW. View with identifier %s does not exist.", id)
		}
		return &Result{Text: fmt.Sprintf("CREATE VIEW %s.%s.%s AS\n%s\n", types.QuoteIdent(id.Catalog), types.QuoteIdent(id.Database), types.QuoteIdent(id.Object), v.QueryText)}, nil
	}
	t, ok := s.cat.Table(id)
	if !ok {
		if _, isView := s.cat.View(id); isView {
			return nil, fmt.Errorf("SHOW CREATE TABLE is only supported for tables, but %s is a view. Please use SHOW CREATE VIEW instead.", id)
		}
		return nil, fmt.Errorf("Could not execute SHOW CREATE TABLE. Table with identifier %s does not exist.", id)
	}
	return &Result{Text: planner.ShowCreateTable(t)}, nil
}

// describe renders DESCRIBE as Flink 1.20 does: name, type, null, key,
// extras, watermark. The type is printed nullable (nullability has its own
// column) and expressions with back-quoted column names, as Flink stores them.
func (s *Session) describe(x *parser.Describe) (*Result, error) {
	id, err := s.cat.Qualify(x.Name)
	if err != nil {
		return nil, err
	}
	tbl := &StaticTable{Columns: []string{"name", "type", "null", "key", "extras", "watermark"}}
	nullStr := func(t types.Type) string {
		if t.Nullable() {
			return "TRUE"
		}
		return "FALSE"
	}
	if v, ok := s.cat.View(id); ok {
		for _, c := range v.Schema {
			tbl.Rows = append(tbl.Rows, []string{c.Name, c.Type.WithNullable(true).String(), nullStr(c.Type), "", "", ""})
		}
		return &Result{Table: tbl}, nil
	}
	t, ok := s.cat.Table(id)
	if !ok {
		return nil, fmt.Errorf("Tables or views with the identifier '%s' doesn't exist.", id)
	}
	for _, c := range t.Columns {
		key, extras, wm := "", "", ""
		if t.PrimaryKey != nil {
			for _, k := range t.PrimaryKey.Columns {
				if k == c.Name {
					key = "PRI(" + strings.Join(t.PrimaryKey.Columns, ", ") + ")"
				}
			}
		}
		switch c.Kind {
		case parser.ComputedColumn:
			extras = "AS " + parser.FormatExprQuoted(c.Expr)
		case parser.MetadataColumn:
			extras = "METADATA"
			if c.MetadataKey != c.Name {
				extras += " FROM '" + c.MetadataKey + "'"
			}
			if c.Virtual {
				extras += " VIRTUAL"
			}
		}
		if t.Watermark != nil && t.Watermark.Column == c.Name {
			wm = parser.FormatExprQuoted(t.Watermark.Expr)
		}
		tbl.Rows = append(tbl.Rows, []string{c.Name, c.Type.WithNullable(true).String(), nullStr(c.Type), key, extras, wm})
	}
	return &Result{Table: tbl}, nil
}

// validateSinks runs the checks sinks need before a job starts (an
// exactly-once Kafka sink asks the broker about transaction timeouts) and
// makes sure no running job of this session uses the same transactional-id
// prefix. It returns the prefixes the job will use.
func (s *Session) validateSinks(ctx context.Context, plan *planner.Plan, cp *checkpointing) ([]string, error) {
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
			need, what := s.transactionBudget(cp)
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
