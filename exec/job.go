package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flinksql/flinksql/types"
)

// Default values of the Config fields left zero.
const (
	DefaultMaxParallelism        = 128
	DefaultBufferTimeout         = 100 * time.Millisecond
	DefaultAutoWatermarkInterval = 200 * time.Millisecond
	DefaultChannelCapacity       = 4
)

// WithDefaults returns c with every zero field set to its default, except
// BufferTimeout: as Config documents, 0 there means "send after every batch"
// (execution.buffer-timeout = 0), so callers that want the default must set
// DefaultBufferTimeout themselves. A negative BufferTimeout sends partial
// batches only before watermarks and at end of input (Flink's -1).
func (c Config) WithDefaults() Config {
	if c.MaxParallelism <= 0 {
		c.MaxParallelism = DefaultMaxParallelism
	}
	if c.AutoWatermarkInterval <= 0 {
		c.AutoWatermarkInterval = DefaultAutoWatermarkInterval
	}
	if c.BatchSize <= 0 {
		c.BatchSize = types.DefaultBatchSize
	}
	if c.ChannelCapacity <= 0 {
		c.ChannelCapacity = DefaultChannelCapacity
	}
	if c.Now == nil {
		c.Now = func() int64 { return time.Now().UnixMilli() }
	}
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	return c
}

// Job is a running job graph.
type Job struct {
	name   string
	graph  *JobGraph
	maxPar int
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{}

	mu  sync.Mutex
	err error

	vertices []*vertexRun

	// stop is set by StopSources: stopSuspend or stopDrain.
	stop atomic.Int32

	// Checkpointing (nil coord when off). bg owns the coordinator and the
	// upload goroutines; the job is done only after they returned.
	coord *coordinator
	bg    sync.WaitGroup

	// verdict collects what the restore's commits found (nil on a fresh
	// start).
	verdict *restoreVerdict
	logf    LogFunc
}

// vertexRun holds the metrics of one vertex's subtasks.
type vertexRun struct {
	v *Vertex
	// ops[subtask][i] are the metrics of chained operator i.
	ops      [][]*OperatorMetrics
	rowsRead []*Counter // sources only
	srcWM    []*Gauge   // sources only
	srcLag   []*Gauge   // sources only
	srcLeft  []*Gauge   // sources only
	names    []string
	// times[subtask] are the task's wait times.
	times []*taskTimes
}

// taskTimes are the nanoseconds a task spent waiting: for the channels of
// its outputs (backpressured) and for input (idle, non-source tasks).
type taskTimes struct {
	backPressured, idle Counter
}

// Start validates g and starts its tasks. The job runs until every task has
// ended, a task fails (which cancels the rest), ctx is done or Cancel is
// called; Wait reports which.
func Start(ctx context.Context, g *JobGraph, cfg Config) (*Job, error) {
	cfg = cfg.WithDefaults()
	if err := Validate(g, cfg); err != nil {
		return nil, err
	}
	if cfg.Checkpointing != nil {
		cc := cfg.Checkpointing.withDefaults()
		cfg.Checkpointing = &cc
	}
	jctx, cancel := context.WithCancel(ctx)
	j := &Job{name: g.Name, graph: g, maxPar: cfg.MaxParallelism, ctx: jctx, cancel: cancel, done: make(chan struct{}), logf: cfg.Log}

	byID := make(map[int]int, len(g.Vertices))
	tasks := make([][]*task, len(g.Vertices))
	for vi, v := range g.Vertices {
		byID[v.ID] = vi
		vr := &vertexRun{v: v}
		tasks[vi] = make([]*task, v.Parallelism)
		for st := range v.Parallelism {
			t := &task{job: j, v: v, subtask: st, cfg: cfg, ctx: jctx, valve: valve{last: MinWatermark}}
			t.send = &sender{ctx: jctx, batchSize: cfg.BatchSize, timeout: cfg.BufferTimeout}
			t.times = &taskTimes{}
			vr.times = append(vr.times, t.times)
			t.metrics = make([]*OperatorMetrics, len(v.Chain))
			for i := range t.metrics {
				m := &OperatorMetrics{}
				m.CurrentWatermark.Set(MinWatermark)
				t.metrics[i] = m
			}
			if v.Source != nil {
				t.srcRowsRead = &Counter{}
				t.srcWM = &Gauge{}
				t.srcWM.Set(MinWatermark)
				t.srcLag = &Gauge{}
				t.srcLag.Set(-1)
				vr.srcLag = append(vr.srcLag, t.srcLag)
				t.srcLeft = &Gauge{}
				t.srcLeft.Set(-1)
				vr.srcLeft = append(vr.srcLeft, t.srcLeft)
				vr.rowsRead = append(vr.rowsRead, t.srcRowsRead)
				vr.srcWM = append(vr.srcWM, t.srcWM)
			}
			vr.ops = append(vr.ops, t.metrics)
			tasks[vi][st] = t
		}
		for i := range v.Chain {
			vr.names = append(vr.names, tasks[vi][0].opName(i))
		}
		j.vertices = append(j.vertices, vr)
	}

	for _, ts := range tasks {
		for _, t := range ts {
			t.createErr = t.createOperators()
		}
	}
	budgets, err := memoryBudgets(cfg.KeyedState, tasks)
	if err != nil {
		cancel()
		return nil, err
	}
	for t, bs := range budgets {
		t.budgets = bs
	}

	// Wire the exchanges: one channel per (producer subtask, consumer
	// subtask) pair that the partitioner connects.
	credits := cfg.ChannelCapacity + 1
	var channels [][]*channel // per consumer task, parallel to its inputs
	chanIndex := map[*task]int{}
	for vi, v := range g.Vertices {
		for _, in := range v.Inputs {
			for ps, producer := range tasks[byID[in.From]] {
				out := &exchangeOut{s: producer.send, kind: in.Partitioner.Kind, keyCols: in.Partitioner.KeyCols, maxPar: cfg.MaxParallelism, next: ps % v.Parallelism}
				var consumers []int
				switch in.Partitioner.Kind {
				case Forward:
					consumers = []int{ps}
				case Global:
					consumers = []int{0}
				default:
					for cs := range v.Parallelism {
						consumers = append(consumers, cs)
					}
				}
				if in.Partitioner.Kind == Hash {
					out.route = make([]int, cfg.MaxParallelism)
					for kg := range out.route {
						out.route[kg] = types.SubtaskForKeyGroup(kg, v.Parallelism, cfg.MaxParallelism)
					}
				}
				for _, cs := range consumers {
					consumer := tasks[vi][cs]
					ci, ok := chanIndex[consumer]
					if !ok {
						ci = len(channels)
						chanIndex[consumer] = ci
						channels = append(channels, nil)
					}
					c := newChannel(int32(len(consumer.inputs)), credits)
					c.backPressured = &producer.times.backPressured
					consumer.inputs = append(consumer.inputs, inChannel{
						inputIndex: in.InputIndex, free: c.free, wm: MinWatermark, aligned: true,
					})
					channels[ci] = append(channels[ci], c)
					out.targets = append(out.targets, c)
				}
				producer.send.outs = append(producer.send.outs, out)
			}
		}
	}
	for consumer, ci := range chanIndex {
		n := len(channels[ci])
		consumer.inbound = make(chan element, n*(credits+1))
		for _, c := range channels[ci] {
			c.inbound = consumer.inbound
		}
	}

	if cfg.Checkpointing != nil {
		var all []*task
		for _, ts := range tasks {
			all = append(all, ts...)
		}
		j.coord = newCoordinator(j, jctx, *cfg.Checkpointing, all)
		if cfg.Checkpointing.RestoreID > 0 {
			j.verdict = &restoreVerdict{cfg: cfg, pending: len(all)}
		}
		j.bg.Add(1)
		go func() {
			defer j.bg.Done()
			j.coord.run()
		}()
	}

	releaseMemory := func() {}
	if cfg.StateMemory != nil {
		releaseMemory = cfg.StateMemory(stateBudget(cfg.KeyedState, budgets))
	}
	var wg sync.WaitGroup
	for _, ts := range tasks {
		for _, t := range ts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := t.run(); err != nil {
					j.fail(t, err)
				}
			}()
		}
	}
	go func() {
		wg.Wait()
		cancel()
		j.bg.Wait() // the coordinator and uploads in flight, now canceled
		releaseMemory()
		close(j.done)
	}()
	return j, nil
}

// fail records a task's error as the job's (if it is the first) and cancels
// every other task.
func (j *Job) fail(t *task, err error) {
	j.failJob(fmt.Errorf("%s: %w", t, err))
}

// failJob records err as the job's error (if it is the first) and cancels
// every task.
func (j *Job) failJob(err error) {
	j.mu.Lock()
	if j.err == nil {
		if j.ctx.Err() != nil {
			// Canceled from outside (Cancel or the parent context): the
			// error is a consequence, not the cause.
			j.err = j.ctx.Err()
		} else {
			j.err = err
		}
	}
	j.mu.Unlock()
	j.cancel()
}

// log writes a line to the job's log (Config.Log).
func (j *Job) log(format string, args ...any) {
	if j.logf != nil {
		j.logf(format, args...)
	}
}

// Name is the name of the job graph.
func (j *Job) Name() string { return j.name }

// Graph is the job graph the job runs (read only).
func (j *Job) Graph() *JobGraph { return j.graph }

// MaxParallelism is the number of key groups the job runs with.
func (j *Job) MaxParallelism() int { return j.maxPar }

// Done is closed when every task has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait blocks until every task has ended and returns the first error: a
// task's failure wrapped with its vertex name and subtask, for example
// "Calc(select=[a]) (2/4): cast failed: …". After Cancel (or when the
// context given to Start is done) it returns context.Canceled (or the
// context's error), unless the job had already ended by then, in which case
// it returns what the job ended with (nil on success).
func (j *Job) Wait() error {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Cancel stops the job: sources stop reading and every task exits promptly
// without finishing its operators. It does not wait; call Wait for that.
func (j *Job) Cancel() { j.cancel() }

// Stop modes of StopSources.
const (
	stopSuspend = 1
	stopDrain   = 2
)

// StopSources ends the job cleanly, as Flink's stop-with-savepoint does:
// every source stops reading at its next read and its input counts as ended
// from there, so the job finishes the way a bounded job does. With
// checkpointing the final checkpoint then covers everything read so far and
// two-phase-commit sinks commit it before the job ends (Wait returns nil).
//
// With drain the sources emit the maximum watermark before they end, as at
// the end of bounded input: event-time windows and timers fire. Without it
// (Flink's default, for a job that will be resumed from its final
// checkpoint) no watermark is emitted and the ended inputs do not advance
// event time, so pending windows stay in the checkpointed state instead of
// firing early. It does not wait; call Wait for that.
func (j *Job) StopSources(drain bool) {
	mode := int32(stopSuspend)
	if drain {
		mode = stopDrain
	}
	j.stop.CompareAndSwap(0, mode)
}

// suspending reports a stop without drain.
func (j *Job) suspending() bool { return j.stop.Load() == stopSuspend }

// VertexMetrics is a snapshot of one vertex's counters.
type VertexMetrics struct {
	ID          int
	Name        string
	Parallelism int
	// RowsRead counts the rows source readers produced (source vertices),
	// RowsReadBySubtask per subtask.
	RowsRead          int64
	RowsReadBySubtask []int64
	// SourceLagMax is each source subtask's records-lag-max (-1: the
	// reader does not know it, see LagReporter).
	SourceLagMax []int64
	// SourceRemaining is each source subtask's count of rows still to
	// read from a bounded input (-1: unknown, see RemainingReporter).
	SourceRemaining []int64
	// SourceWatermark is the lowest watermark the source subtasks emitted
	// (source vertices; MinWatermark before any).
	SourceWatermark int64
	// Operators has one entry per chained operator.
	Operators []OperatorSnapshot
	// Tasks has the wait times of each subtask.
	Tasks []TaskTimes
}

// TaskTimes are the accumulated wait times of one subtask: waiting for a
// full output channel (backpressured) and, for tasks with inputs, waiting
// for input (idle). Their rates over an interval give Flink's
// backPressuredTimeMsPerSecond and idleTimeMsPerSecond; the rest of the
// interval the task was busy.
type TaskTimes struct {
	BackPressured, Idle time.Duration
}

// OperatorSnapshot sums one chained operator's counters over its subtasks.
type OperatorSnapshot struct {
	Name                             string
	RowsIn, RowsOut, LateRowsDropped int64
	NotNullRowsDropped               int64
	// LostCommits counts committables found aborted that a sink set to
	// continue after losses went past (OperatorMetrics.LostCommits).
	LostCommits int64
	// Watermark is the lowest current watermark over the subtasks.
	Watermark int64
	// StateSize sums the keyed-state sizes of the subtasks.
	StateSize StateSize
	Subtasks  []SubtaskMetrics
}

// SubtaskMetrics are one operator instance's counters.
type SubtaskMetrics struct {
	RowsIn, RowsOut, LateRowsDropped int64
	NotNullRowsDropped               int64
	Watermark                        int64
	StateSize                        StateSize
}

// StateSize is the size of keyed state as last measured (when the backend
// was opened, and at each checkpoint): zero for operators without keyed
// state.
type StateSize struct {
	Entries, MemoryBytes, DiskBytes int64
}

// Metrics returns a snapshot of every vertex's counters. The runtime counts
// rows into and out of each operator and its current watermark; operators
// count only the rows they drop (late, or NULL in a NOT NULL sink column). It is safe to call at any time, also
// after the job ended.
func (j *Job) Metrics() []VertexMetrics {
	out := make([]VertexMetrics, 0, len(j.vertices))
	for _, vr := range j.vertices {
		vm := VertexMetrics{ID: vr.v.ID, Name: vr.v.Name, Parallelism: vr.v.Parallelism, SourceWatermark: MinWatermark}
		for _, tt := range vr.times {
			vm.Tasks = append(vm.Tasks, TaskTimes{BackPressured: time.Duration(tt.backPressured.Load()), Idle: time.Duration(tt.idle.Load())})
		}
		for i, c := range vr.rowsRead {
			n := c.Load()
			vm.RowsRead += n
			vm.RowsReadBySubtask = append(vm.RowsReadBySubtask, n)
			vm.SourceLagMax = append(vm.SourceLagMax, vr.srcLag[i].Load())
			vm.SourceRemaining = append(vm.SourceRemaining, vr.srcLeft[i].Load())
			if wm := vr.srcWM[i].Load(); i == 0 || wm < vm.SourceWatermark {
				vm.SourceWatermark = wm
			}
		}
		for i, name := range vr.names {
			os := OperatorSnapshot{Name: name, Watermark: MaxWatermark}
			for _, ms := range vr.ops {
				m := ms[i]
				s := SubtaskMetrics{RowsIn: m.RowsIn.Load(), RowsOut: m.RowsOut.Load(), LateRowsDropped: m.LateRowsDropped.Load(),
					NotNullRowsDropped: m.NotNullRowsDropped.Load(), Watermark: m.CurrentWatermark.Load(),
					StateSize: StateSize{Entries: m.StateEntries.Load(), MemoryBytes: m.StateMemoryBytes.Load(), DiskBytes: m.StateDiskBytes.Load()}}
				os.StateSize.Entries += s.StateSize.Entries
				os.StateSize.MemoryBytes += s.StateSize.MemoryBytes
				os.StateSize.DiskBytes += s.StateSize.DiskBytes
				os.RowsIn += s.RowsIn
				os.RowsOut += s.RowsOut
				os.LateRowsDropped += s.LateRowsDropped
				os.NotNullRowsDropped += s.NotNullRowsDropped
				os.LostCommits += m.LostCommits.Load()
				os.Watermark = min(os.Watermark, s.Watermark)
				os.Subtasks = append(os.Subtasks, s)
			}
			vm.Operators = append(vm.Operators, os)
		}
		out = append(out, vm)
	}
	return out
}

// Validate checks that g can run with cfg: unique vertex ids, vertices in
// topological order, parallelism within 1…MaxParallelism, Forward edges
// between equal parallelisms, sources without inputs, at least one source.
func Validate(g *JobGraph, cfg Config) error {
	cfg = cfg.WithDefaults()
	if g == nil || len(g.Vertices) == 0 {
		return errors.New("job graph has no vertices")
	}
	seen := make(map[int]*Vertex, len(g.Vertices))
	sources := 0
	for i, v := range g.Vertices {
		if v == nil {
			return fmt.Errorf("job graph vertex %d is nil", i)
		}
		name := fmt.Sprintf("vertex %d (%s)", v.ID, v.Name)
		if _, dup := seen[v.ID]; dup {
			return fmt.Errorf("%s: duplicate vertex id %d", name, v.ID)
		}
		if v.Parallelism < 1 || v.Parallelism > cfg.MaxParallelism {
			return fmt.Errorf("%s: parallelism %d is outside 1…%d (pipeline.max-parallelism)", name, v.Parallelism, cfg.MaxParallelism)
		}
		if len(v.ChainNames) != 0 && len(v.ChainNames) != len(v.Chain) {
			return fmt.Errorf("%s: %d chain names for %d operators", name, len(v.ChainNames), len(v.Chain))
		}
		for k, mk := range v.Chain {
			if mk == nil {
				return fmt.Errorf("%s: chain operator %d has no constructor", name, k)
			}
		}
		if v.Source != nil {
			sources++
			if len(v.Inputs) > 0 {
				return fmt.Errorf("%s: a source vertex cannot have inputs", name)
			}
			if v.Source.NewReader == nil {
				return fmt.Errorf("%s: source has no reader constructor", name)
			}
			if v.Source.Prepare != nil && v.Source.PreparedWidth <= 0 {
				return fmt.Errorf("%s: source projection needs a positive PreparedWidth", name)
			}
			if v.Source.Watermark != nil && v.Source.Watermark.Expr == nil {
				return fmt.Errorf("%s: watermark has no expression", name)
			}
		} else if len(v.Inputs) == 0 {
			return fmt.Errorf("%s: neither a source nor any input", name)
		}
		for _, in := range v.Inputs {
			up, ok := seen[in.From]
			if !ok {
				if in.From == v.ID {
					return fmt.Errorf("%s: input from itself", name)
				}
				return fmt.Errorf("%s: input from vertex %d, which is not an earlier vertex", name, in.From)
			}
			if in.InputIndex < 0 {
				return fmt.Errorf("%s: negative input index %d", name, in.InputIndex)
			}
			switch in.Partitioner.Kind {
			case Forward:
				if up.Parallelism != v.Parallelism {
					return fmt.Errorf("%s: FORWARD input from vertex %d needs equal parallelism, got %d and %d", name, in.From, up.Parallelism, v.Parallelism)
				}
			case Hash:
				for _, c := range in.Partitioner.KeyCols {
					if c < 0 {
						return fmt.Errorf("%s: negative hash key column %d", name, c)
					}
				}
			case Rebalance, Broadcast, Global:
			default:
				return fmt.Errorf("%s: unknown partitioner %v", name, in.Partitioner.Kind)
			}
		}
		seen[v.ID] = v
	}
	if sources == 0 {
		return errors.New("job graph has no source vertex")
	}
	if cfg.Checkpointing != nil {
		return cfg.Checkpointing.validate()
	}
	return nil
}
