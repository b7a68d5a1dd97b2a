// Package session owns one SQL session: its configuration (SET/RESET), its
// catalog, the execution of statements, and the registry of the jobs it
// started (SHOW JOBS, STOP JOB). The shell talks only to this package.
package session

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/jobs"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/plan"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/types"
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
	// Log receives the jobs' log: what operators and the runtime report,
	// completed checkpoints, warnings. Nil writes its lines to Stderr.
	Log *slog.Logger
	// Fault is called at the runtime's fault-injection points (crash
	// drills, see exec.FaultPoints; ParseFault builds it from the text of
	// FaultEnv, which cmd/flinksql reads). Nil in production.
	Fault exec.FaultFunc
	// StateMemory, when set, is told each job's state budget as it starts
	// and released when it ends (exec.Config.StateMemory); cmd/flinksql
	// sets the Go memory limit from it.
	StateMemory func(budget int64) (release func())
}

// Session is one SQL session. Its methods may be called from one goroutine at
// a time; jobs it starts run in the background until they end or are stopped.
type Session struct {
	stderr      io.Writer
	log         *slog.Logger // nil: log lines go to stderr
	logMu       sync.Mutex   // serializes job log lines (subtasks write concurrently)
	cat         *catalog.Catalog
	reg         *connectors.Registry
	conf        *options.Values
	now         func() time.Time
	fault       exec.FaultFunc
	stateMemory func(budget int64) (release func())
	jobs        *jobs.Supervisor
	// pendingSet collects INSERTs between BEGIN STATEMENT SET and END.
	pendingSet []*parser.Insert
	inSet      bool
	// script are the statements that shaped the catalog and options so far
	// (DDL, SET, RESET, USE), recorded with each job for its savepoints
	// (sensitive option values masked: script.go).
	script []string
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
	s := &Session{stderr: opts.Stderr, log: opts.Log, cat: catalog.New(), reg: reg, conf: options.Session().NewValues(), now: now, fault: fault, stateMemory: opts.StateMemory}
	s.jobs = jobs.New(jobs.Config{Stderr: opts.Stderr, Logf: s.logf, Log: lineWriter(s.logLine), Now: now})
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
	s.jobs.Close()
	return nil
}

// logLine writes one line of a running job's log to stderr.
func (s *Session) logLine(msg string) { s.logf("%s", msg) }

// Get returns the current value of an option.
func (s *Session) Get(key string) string { return s.conf.Get(key) }

// IsSet reports whether an option was given a value (-D or SET).
func (s *Session) IsSet(key string) bool {
	_, ok := s.conf.Raw(key)
	return ok
}

// Completions returns table and view names and SQL keywords for the REPL.
func (s *Session) Completions() []string {
	tables := s.cat.TableNames()
	words := append([]string{}, tables...)
	words = append(words, s.columnCompletions(tables)...)
	words = append(words, "SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "INSERT INTO",
		"CREATE TABLE", "CREATE VIEW", "DROP TABLE", "DROP VIEW", "SHOW TABLES", "SHOW VIEWS", "SHOW FUNCTIONS",
		"SHOW JOBS", "SHOW CREATE TABLE", "DESCRIBE", "EXPLAIN", "SET", "RESET", "STOP JOB", "TUMBLE", "HOP",
		"CUMULATE", "SESSION", "DESCRIPTOR", "WATERMARK FOR", "INTERVAL", "EXECUTE STATEMENT SET",
		"ALTER TABLE", "ALTER VIEW", "CREATE DATABASE", "DROP DATABASE", "USE", "SHOW DATABASES", "SHOW CREATE VIEW", "SHOW COLUMNS",
		"DESCRIBE JOB")
	// Option keys, for SET 'key' and RESET 'key'.
	for _, spec := range options.Session().Specs() {
		if !options.IsStartupOption(spec.Key) {
			words = append(words, spec.Key)
		}
	}
	return words
}

// columnCompletions lists, for every table and view of the current
// database, its column names both plain and qualified by the object
// ("orders.amount"), so that completion works in a select list and after a
// table name and a dot. A view's columns are the ones its schema had when it
// was created.
func (s *Session) columnCompletions(objects []string) []string {
	var words []string
	add := func(object, column string) {
		words = append(words, column, object+"."+column)
	}
	for _, name := range objects {
		id, err := s.cat.Qualify([]string{name})
		if err != nil {
			continue
		}
		if t, ok := s.cat.Table(id); ok {
			for _, c := range t.Columns {
				add(name, c.Name)
			}
		} else if v, ok := s.cat.View(id); ok {
			for _, c := range v.Schema {
				add(name, c.Name)
			}
		}
	}
	return words
}

func (s *Session) planner(ctx context.Context) (*plan.Planner, error) {
	loc, err := options.ResolveZone(options.LocalTimeZone.Get(s.conf))
	if err != nil {
		return nil, err
	}
	mode, err := plan.ParseRuntimeMode(options.RuntimeMode.Get(s.conf))
	if err != nil {
		return nil, err
	}
	mb := plan.MiniBatch{
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
	return plan.New(s.cat, s.reg, plan.Config{
		Parallelism:    options.Parallelism.Get(s.conf),
		MaxParallelism: options.MaxParallelism.Get(s.conf),
		RuntimeMode:    mode,
		Loc:            loc,
		FileSystem:     s.conf.WithPrefix("s3."),
		Now:            s.now,
		StateTTL:       options.StateTTL.Get(s.conf),
		MiniBatch:      mb,
		// Jobs log to the session's stderr, as the runtime's other warnings.
		NotNullEnforcer: notNull,
		Log:             s.logLine,
		Emit: plan.EmitOptions{
			AllowLateness:     options.AllowLateness.Get(s.conf),
			AllowLatenessText: s.conf.Get(options.AllowLateness.Key),
			EarlyFire:         options.EarlyFireEnabled.Get(s.conf),
			LateFire:          options.LateFireEnabled.Get(s.conf),
		},
		IdleTimeout:        options.IdleTimeout.Get(s.conf),
		CDCEventsDuplicate: options.CDCEventsDuplicate.Get(s.conf),
		AsyncLookup: plan.AsyncLookup{
			Capacity:  options.AsyncLookupCapacity.Get(s.conf),
			Timeout:   options.AsyncLookupTimeout.Get(s.conf),
			Unordered: options.AsyncLookupOutputMode.Get(s.conf) == "ALLOW_UNORDERED",
		},
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
		StateMemory:           s.stateMemory,
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

// logf writes one line to the session's log (Options.Log, else stderr);
// jobs log from many goroutines, so lines are written whole, one at a
// time. A line's "[WARN]"-style prefix gives its level.
func (s *Session) logf(format string, args ...any) {
	if s.log != nil {
		msg := fmt.Sprintf(format, args...)
		s.log.Log(context.Background(), levelOf(msg), msg)
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.stderr, format+"\n", args...)
}

// levelOf reads the level of a log line from its prefix.
func levelOf(msg string) slog.Level {
	switch {
	case strings.HasPrefix(msg, "[ERROR]"):
		return slog.LevelError
	case strings.HasPrefix(msg, "[WARN"), strings.HasPrefix(msg, "checkpoint warning"):
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// lineWriter turns writes of whole lines (the checkpoint storage's log)
// into calls of f, one per line.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w(line)
	}
	return len(p), nil
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
	r, err := s.executeStatement(ctx, st)
	if err == nil && shapesJob(st) {
		s.script = append(s.script, maskSecrets(strings.TrimSpace(st.Text())))
	}
	return r, err
}

func (s *Session) executeStatement(ctx context.Context, st parser.Statement) (*Result, error) {
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
	if r, ok, err := s.executeCatalogStatement(ctx, st); ok {
		return r, err
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
			err = s.cat.DropView(id, x.Temporary, x.IfExists)
		} else {
			err = s.cat.DropTable(id, x.Temporary, x.IfExists)
		}
		if err != nil {
			return nil, err
		}
		return okResult, nil
	case *parser.Set:
		if x.Key == "" {
			return &Result{Table: &StaticTable{Columns: []string{"key", "value"}, Rows: s.conf.List()}}, nil
		}
		if options.IsStartupOption(x.Key) {
			return nil, fmt.Errorf("'%s' is read when flinksql starts and cannot be changed in a running session; start flinksql with -D %s=%s", x.Key, x.Key, x.Value)
		}
		warning, err := s.conf.Set(x.Key, x.Value)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			// For the user who typed the SET, not for the job log.
			s.logMu.Lock()
			fmt.Fprintf(s.stderr, "[WARNING] %s\n", warning)
			s.logMu.Unlock()
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
		if x.MigrationFrom != "" {
			text, _, err := s.ExplainMigration(ctx, x.MigrationFrom, x.Statement)
			if err != nil {
				return nil, err
			}
			return &Result{Text: text}, nil
		}
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
		return s.submit(ctx, plan, x.Text())
	case *parser.StatementSet:
		return s.executeStatementSet(ctx, x)
	case *parser.BeginStatementSet:
		s.inSet = true
		return &Result{Message: "Begin a statement set."}, nil
	case *parser.End:
		return nil, fmt.Errorf("No statement set to END; start one with BEGIN STATEMENT SET")
	case *parser.StopJob:
		return s.stopJob(ctx, x)
	case *parser.DescribeJob:
		return s.describeJob(x)
	}
	return nil, &plan.UnsupportedError{Msg: fmt.Sprintf("Unsupported statement: %s", firstLine(st.Text()))}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// ExplainMigration plans stmt (an INSERT or a statement set) with the
// session's catalog and options, and returns what restoring the savepoint
// or checkpoint at path into it would do with each stateful operator's
// state (EXPLAIN MIGRATION FROM 'path' stmt), and whether that restore
// would be refused. Nothing runs.
func (s *Session) ExplainMigration(ctx context.Context, path string, stmt parser.Statement) (string, bool, error) {
	p, err := s.planner(ctx)
	if err != nil {
		return "", false, err
	}
	var pl *plan.Plan
	switch x := stmt.(type) {
	case *parser.Insert:
		pl, err = p.PlanInsert(x)
	case *parser.StatementSet:
		pl, err = p.PlanStatementSet(x)
	default:
		return "", false, fmt.Errorf("EXPLAIN MIGRATION explains an INSERT or a statement set, not %s", strings.TrimSpace(stmt.Text()))
	}
	if err != nil {
		return "", false, err
	}
	return s.jobs.ExplainMigration(ctx, pl, s.conf, path)
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
	return s.submit(ctx, plan, x.Text())
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
	rj, err := s.jobs.Submit(ctx, plan, s.conf, s.execConfig())
	if err != nil {
		return nil, err
	}
	loc, _ := options.ResolveZone(options.LocalTimeZone.Get(s.conf))
	qr := &QueryResult{Schema: plan.Schema, Loc: loc, ChangelogMode: plan.Mode, Batch: plan.Batch}
	qr.next = func(ctx context.Context) ([]Change, error) {
		select {
		case c := <-rows:
			return c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-rj.Done():
		}
		// The job ended: everything it wrote is already in the channel.
		select {
		case c := <-rows:
			return c, nil
		default:
		}
		if err := rj.Wait(context.Background()); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	var once sync.Once
	qr.cancel = func() { once.Do(rj.Stop) }
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

func (s *Session) stopJob(ctx context.Context, x *parser.StopJob) (*Result, error) {
	rj, ok := s.jobs.Lookup(x.JobID)
	if !ok {
		return nil, fmt.Errorf("Could not stop job %s: no such job in this session", x.JobID)
	}
	if x.WithSavepoint {
		// Flink's STOP JOB ... WITH SAVEPOINT [WITH DRAIN]: the result is
		// the savepoint's path.
		sp, err := rj.StopWithSavepoint(ctx, "", x.WithDrain)
		if err != nil {
			return nil, err
		}
		return &Result{Table: &StaticTable{Columns: []string{"savepoint path"}, Rows: [][]string{{sp.Path}}}}, nil
	}
	if x.WithDrain {
		return nil, fmt.Errorf("STOP JOB '%s' WITH DRAIN needs WITH SAVEPOINT: draining ends the job's event time, which only a stop with savepoint does", x.JobID)
	}
	rj.Stop()
	return okResult, nil
}

const timeLayout = "2006-01-02T15:04:05.000Z"

// lastCheckpoint describes a job's latest completed checkpoint for SHOW
// JOBS: "-" without checkpointing, "none" before the first.
func lastCheckpoint(rj *jobs.Job) string {
	cs, on := rj.CheckpointStats()
	switch {
	case !on:
		return "-"
	case cs.LatestCompleted == nil:
		return "none"
	}
	c := cs.LatestCompleted
	return fmt.Sprintf("%d at %s", c.ID, c.LatestAck.UTC().Format(timeLayout))
}

// describeJob is DESCRIBE JOB 'id': one job's status, restarts,
// checkpoints and latest failure, one property per row.
func (s *Session) describeJob(x *parser.DescribeJob) (*Result, error) {
	rj, ok := s.jobs.Lookup(x.JobID)
	if !ok {
		return nil, fmt.Errorf("Could not describe job %s: no such job in this session", x.JobID)
	}
	st := rj.Status()
	rows := [][]string{{"job id", st.ID}, {"job name", st.Name}, {"status", st.State},
		{"start time", st.Start.UTC().Format(timeLayout)}}
	if !st.End.IsZero() {
		rows = append(rows, []string{"end time", st.End.UTC().Format(timeLayout)})
	}
	rows = append(rows, []string{"restarts", fmt.Sprint(st.Restarts)})
	if cs, on := rj.CheckpointStats(); !on {
		rows = append(rows, []string{"checkpointing", "off"})
	} else {
		rows = append(rows, []string{"checkpoints", fmt.Sprintf("%d completed, %d failed, %d in progress", cs.Completed, cs.Failed, cs.InProgress)})
		if c := cs.LatestCompleted; c != nil {
			rows = append(rows, []string{"last checkpoint", fmt.Sprintf("%d at %s, %d bytes (%d uploaded), %s",
				c.ID, c.LatestAck.UTC().Format(timeLayout), c.StateSize, c.CheckpointedSize, c.EndToEnd())})
		} else {
			rows = append(rows, []string{"last checkpoint", "none"})
		}
		if c := cs.LatestFailed; c != nil {
			rows = append(rows, []string{"last failed checkpoint", fmt.Sprintf("%d at %s: %s", c.ID, c.Failure.UTC().Format(timeLayout), c.FailureMessage)})
		}
		if r := cs.LatestRestored; r != nil {
			rows = append(rows, []string{"restored from", fmt.Sprintf("%d (%s)", r.ID, r.ExternalPath)})
		}
	}
	if len(st.Exceptions) > 0 {
		e := st.Exceptions[0]
		rows = append(rows, []string{"last failure", fmt.Sprintf("%s: %s", e.Time.UTC().Format(timeLayout), e.Message)})
	}
	return &Result{Table: &StaticTable{Columns: []string{"property", "value"}, Rows: rows}}, nil
}

// Jobs is the session's job supervisor (the control endpoint reaches the
// jobs through it).
func (s *Session) Jobs() *jobs.Supervisor { return s.jobs }

func (s *Session) show(x *parser.Show) (*Result, error) {
	switch x.What {
	case "TABLES", "VIEWS":
		db := s.cat.CurrentDatabase()
		if len(x.From) > 0 {
			cat, name, err := s.databaseName(x.From)
			if err != nil {
				return nil, err
			}
			if _, ok := s.cat.Database(name); !ok || cat != catalog.DefaultCatalog {
				return nil, fmt.Errorf("Database '%s' does not exist in catalog '%s'.", name, cat)
			}
			db = name
		}
		if x.What == "VIEWS" {
			return listTable("view name", filterLike(s.cat.ObjectNames(db, false), x)), nil
		}
		return listTable("table name", filterLike(s.cat.ObjectNames(db, true), x)), nil
	case "FUNCTIONS", "USER FUNCTIONS":
		var names []string
		if x.What == "FUNCTIONS" {
			seen := map[string]bool{}
			for _, n := range append(append(append(expr.Functions(), agg.Names()...), agg.OverFunctionNames()...), plan.GroupingFunctions()...) {
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
		return listTable("database name", filterLike(s.cat.DatabaseNames(), x)), nil
	case "CURRENT CATALOG":
		return listTable("current catalog name", []string{s.cat.CurrentCatalog()}), nil
	case "CURRENT DATABASE":
		return listTable("current database name", []string{s.cat.CurrentDatabase()}), nil
	case "JOBS":
		// Flink's columns, then the restarts and the latest completed
		// checkpoint of each job.
		t := &StaticTable{Columns: []string{"job id", "job name", "status", "start time", "restarts", "last checkpoint"}}
		for _, j := range s.jobs.List() {
			row := []string{j.ID, j.Name, j.Status, j.Start.UTC().Format(timeLayout), "", ""}
			if rj, ok := s.jobs.Lookup(j.ID); ok {
				st := rj.Status()
				row[4] = fmt.Sprint(st.Restarts)
				row[5] = lastCheckpoint(rj)
			}
			t.Rows = append(t.Rows, row)
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
	return nil, &plan.UnsupportedError{Msg: "SHOW " + x.What + " is not supported yet"}
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
			if _, isTable := s.cat.Table(id); isTable {
				return nil, fmt.Errorf("SHOW CREATE VIEW is only supported for views, but %s is a table. Please use SHOW CREATE TABLE instead.", serializable(id))
			}
			return nil, fmt.Errorf("Could not execute SHOW CREATE VIEW. View with identifier %s does not exist.", serializable(id))
		}
		return &Result{Text: showCreateView(v)}, nil
	}
	t, ok := s.cat.Table(id)
	if !ok {
		if _, isView := s.cat.View(id); isView {
			return nil, fmt.Errorf("SHOW CREATE TABLE is only supported for tables, but %s is a view. Please use SHOW CREATE VIEW instead.", id)
		}
		return nil, fmt.Errorf("Could not execute SHOW CREATE TABLE. Table with identifier %s does not exist.", id)
	}
	return &Result{Text: plan.ShowCreateTable(t)}, nil
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

// submit starts the job of plan and returns it as a statement's result.
func (s *Session) submit(ctx context.Context, plan *plan.Plan, sql string) (*Result, error) {
	rj, err := s.jobs.Submit(ctx, plan, s.conf, s.execConfig())
	if err != nil {
		return nil, err
	}
	rj.SetSQL(sql)
	rj.SetScript(append(append([]string(nil), s.script...), maskSecrets(strings.TrimSpace(sql))))
	return &Result{Job: &Job{
		ID:        rj.ID(),
		Name:      rj.Name(),
		wait:      rj.Wait,
		stop:      rj.Stop,
		stopClean: rj.StopClean,
		done:      rj.Done(),
		progress:  func() (int64, int64) { return sourceProgress(rj.Status().Metrics) },
	}}, nil
}
