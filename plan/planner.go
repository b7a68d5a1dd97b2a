// Package planner owns the translation of SQL statements into running
// plans: it binds names against the catalog, infers types and changelog
// modes, validates sources and sinks through the connector registry, builds
// the physical plan (with exchanges and parallelism) that EXPLAIN prints, and
// turns it into an exec.JobGraph.
package plan

import (
	"context"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Config holds the session options the planner reads.
type Config struct {
	Parallelism    int            // parallelism.default
	MaxParallelism int            // pipeline.max-parallelism
	Loc            *time.Location // table.local-time-zone, resolved
	// FileSystem are the session's s3.* options (those the checkpoint
	// storage uses), for connectors that write to s3:// locations.
	FileSystem  map[string]string
	Now         func() time.Time
	StateTTL    time.Duration // table.exec.state.ttl
	MiniBatch   MiniBatch     // table.exec.mini-batch.*
	IdleTimeout time.Duration // table.exec.source.idle-timeout (EXPLAIN shows it)
	// CDCEventsDuplicate is table.exec.source.cdc-events-duplicate: change
	// events of a changelog source may come more than once, so they are
	// deduplicated by the table's primary key.
	CDCEventsDuplicate bool
	// NotNullEnforcer is table.exec.sink.not-null-enforcer.
	NotNullEnforcer exec.NotNullAction
	// Log receives the warnings of running jobs (rows a sink drops); nil
	// discards them.
	Log  func(msg string)
	Emit EmitOptions // table.exec.emit.*
	// AsyncLookup is table.exec.async-lookup.*.
	AsyncLookup AsyncLookup
	// RuntimeMode is execution.runtime-mode (batch.go).
	RuntimeMode RuntimeMode
}

// AsyncLookup holds the table.exec.async-lookup.* options.
type AsyncLookup struct {
	Capacity  int           // buffer-capacity
	Timeout   time.Duration // timeout
	Unordered bool          // output-mode = ALLOW_UNORDERED
}

// MiniBatch is the mini-batch setting of unwindowed aggregations
// (table.exec.mini-batch.*).
type MiniBatch struct {
	Enabled      bool
	AllowLatency time.Duration // table.exec.mini-batch.allow-latency
	Size         int           // table.exec.mini-batch.size: rows buffered before a flush
}

// EmitOptions are the table.exec.emit.* options: Flink's emit strategy of
// legacy group windows (allowed lateness, early and late firing). flinksql
// does not implement them, so a window aggregation is refused while any of
// them is on (see checkEmit), rather than run as if it were off.
type EmitOptions struct {
	AllowLateness     time.Duration // table.exec.emit.allow-lateness
	AllowLatenessText string        // as set, for messages
	EarlyFire         bool          // table.exec.emit.early-fire.enabled
	LateFire          bool          // table.exec.emit.late-fire.enabled
}

// Planner plans statements against one session's catalog.
type Planner struct {
	cat *catalog.Catalog
	reg *connectors.Registry
	cfg Config
	// ctx, when set, is checked while planning (see WithContext).
	ctx context.Context
	// batch: the statement being planned runs in batch mode (batch.go).
	batch bool
}

// WithContext returns a planner whose planning stops with ctx's error
// (context.Canceled after Ctrl-C or SIGTERM) once ctx is done: a statement
// with a huge expression or many nested queries can take a while to plan.
func (p *Planner) WithContext(ctx context.Context) *Planner {
	q := *p
	q.ctx = ctx
	return &q
}

// detached is p without its context: a Plan outlives the statement that
// planned it (its job graph is built again at every restart).
func (p *Planner) detached() *Planner {
	q := *p
	q.ctx = nil
	return &q
}

// canceller checks a context every so many units of planning work, so that
// the check costs nothing measurable per expression node.
type canceller struct {
	ctx   context.Context
	ticks int
}

// cancelEvery is how many expression nodes are bound between two checks.
const cancelEvery = 256

// check returns the context's error, if it is done.
func (c *canceller) check() error {
	if c == nil || c.ctx == nil {
		return nil
	}
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("planning cancelled: %w", err)
	}
	return nil
}

// tick counts one unit of work and checks every cancelEvery units.
func (c *canceller) tick() error {
	if c == nil {
		return nil
	}
	c.ticks++
	if c.ticks%cancelEvery != 0 {
		return nil
	}
	return c.check()
}

// New returns a planner.
func New(cat *catalog.Catalog, reg *connectors.Registry, cfg Config) *Planner {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 1
	}
	if cfg.MaxParallelism <= 0 {
		cfg.MaxParallelism = 128
	}
	if cfg.Loc == nil {
		cfg.Loc = time.Local
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Planner{cat: cat, reg: reg, cfg: cfg}
}

func (p *Planner) exprConfig() *expr.Config {
	return &expr.Config{Loc: p.cfg.Loc, Now: p.cfg.Now}
}

// CreateTable validates a CREATE TABLE statement and returns the table to
// store in the catalog.
func (p *Planner) CreateTable(st *parser.CreateTable) (*catalog.Table, error) {
	return p.buildTable(st)
}

// CreateView validates a CREATE VIEW statement and returns the view.
func (p *Planner) CreateView(st *parser.CreateView) (*catalog.View, error) {
	id, err := p.qualify(st, st.Name)
	if err != nil {
		return nil, err
	}
	pc := p.newPlanContext()
	rel, err := pc.planQuery(st.Query, nil)
	if err != nil {
		return nil, err
	}
	schema := rel.scope.schema()
	if len(st.Columns) > 0 {
		if len(st.Columns) != len(schema) {
			return nil, errAt(st, "List of column aliases must have same degree as table; table has %d columns %s, whereas alias list has %d columns",
				len(schema), schema, len(st.Columns))
		}
		for i := range schema {
			schema[i].Name = st.Columns[i]
		}
	}
	return &catalog.View{ID: id, Query: st.Query, QueryText: st.QueryText, Columns: st.Columns, Schema: schema,
		Comment: st.Comment, Temporary: st.Temporary,
		Scope: catalog.Identifier{Catalog: p.cat.CurrentCatalog(), Database: p.cat.CurrentDatabase()}}, nil
}

// Plan is a planned job: one sink per INSERT (or the collect sink of a
// SELECT).
type Plan struct {
	Sinks []*SinkNode
	// Schema and Mode describe the result of a SELECT.
	Schema types.Schema
	Mode   types.ChangelogMode
	// Name is the default job name (insert-into_<sink>, or collect).
	Name string
	// Batch: the job runs in batch mode (final results, no checkpoints).
	Batch bool

	planner *Planner
}

// CollectFactory creates the writer of the client-side sink of a SELECT.
type CollectFactory func(subtask, parallelism int) (exec.SinkWriter, error)

// PlanQuery plans a SELECT whose rows go to the collect sink.
func (p *Planner) PlanQuery(q *parser.Query, collect CollectFactory) (*Plan, error) {
	return p.planInMode(func(p *Planner) (*Plan, error) { return p.planQuery(q, collect) })
}

func (p *Planner) planQuery(q *parser.Query, collect CollectFactory) (*Plan, error) {
	pc := p.newPlanContext()
	rel, err := pc.planQuery(q, nil)
	if err != nil {
		return nil, err
	}
	if err := resolveMarkers(rel); err != nil {
		return nil, err
	}
	if err := checkSupported(rel.node); err != nil {
		return nil, err
	}
	rel.node = pruneJoinInputs(rel.node)
	if rel, err = pc.finishBatch(rel); err != nil {
		return nil, err
	}
	resolveChangelog(rel.node, true)
	if err := checkFinal(rel.node); err != nil {
		return nil, err
	}
	schema := rel.scope.schema()
	sink := &SinkNode{Name: "collect", Sink: &collectSink{newWriter: collect}, Fields: schema.Names()}
	sink.inputs = []Node{rel.node}
	sink.schema = schema
	sink.mode = rel.node.Mode()
	out := make(types.Schema, len(schema))
	for i, c := range schema {
		out[i] = types.Column{Name: c.Name, Type: c.Type.WithoutTimeAttr()}
	}
	return &Plan{Sinks: []*SinkNode{sink}, Schema: out, Mode: rel.node.Mode(), Name: "collect", planner: p.detached()}, nil
}

// PlanInsert plans an INSERT INTO.
func (p *Planner) PlanInsert(st *parser.Insert) (*Plan, error) {
	return p.planInMode(func(p *Planner) (*Plan, error) { return p.planInsert(st) })
}

func (p *Planner) planInsert(st *parser.Insert) (*Plan, error) {
	pc := p.newPlanContext()
	sink, err := pc.planInsert(st)
	if err != nil {
		return nil, err
	}
	return &Plan{Sinks: []*SinkNode{sink}, Name: "insert-into_" + sink.Name, planner: p.detached()}, nil
}

// PlanStatementSet plans the INSERTs of a statement set as one job.
func (p *Planner) PlanStatementSet(st *parser.StatementSet) (*Plan, error) {
	return p.planInMode(func(p *Planner) (*Plan, error) { return p.planStatementSet(st) })
}

func (p *Planner) planStatementSet(st *parser.StatementSet) (*Plan, error) {
	if len(st.Inserts) == 0 {
		return nil, errAt(st, "A statement set must contain at least one INSERT statement")
	}
	pc := p.newPlanContext()
	plan := &Plan{planner: p.detached()}
	var names []string
	for _, ins := range st.Inserts {
		sink, err := pc.planInsert(ins)
		if err != nil {
			return nil, err
		}
		plan.Sinks = append(plan.Sinks, sink)
		names = append(names, sink.Name)
	}
	plan.Name = "insert-into_" + names[0]
	for _, n := range names[1:] {
		plan.Name += "," + n
	}
	return plan, nil
}

// collectSink adapts the session's collect writer to the connector Sink
// interface so the plan treats it like any other sink.
type collectSink struct {
	newWriter CollectFactory
}

func (c *collectSink) AcceptedChangelogMode(req types.ChangelogMode) types.ChangelogMode { return req }
func (c *collectSink) Parallelism(int) int                                               { return 1 }
func (c *collectSink) WritableMetadata() map[string]types.Type                           { return nil }
func (c *collectSink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	return c.newWriter(subtask, parallelism)
}
