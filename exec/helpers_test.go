package exec

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// step is one Read result of a test reader.
type step struct {
	split     int
	rows      []types.Row
	kinds     []types.RowKind // nil: all +I
	splitDone bool
	end       bool
	flush     bool
}

func rowsStep(split int, rows ...types.Row) step { return step{split: split, rows: rows} }

func fill(b *types.Batch, s step) {
	for i, r := range s.rows {
		k := types.Insert
		if s.kinds != nil {
			k = s.kinds[i]
		}
		b.AppendRow(k, r)
	}
}

func (s step) result() ReadResult {
	split := s.split
	if len(s.rows) == 0 && !s.splitDone {
		split = -1
	}
	return ReadResult{Split: split, SplitDone: s.splitDone, End: s.end, Flush: s.flush}
}

// sliceReader returns its steps one per Read, then ends.
type sliceReader struct {
	splits int
	steps  []step
	closed *atomic.Int32
}

func (r *sliceReader) Open(context.Context) error { return nil }
func (r *sliceReader) NumSplits() int             { return r.splits }
func (r *sliceReader) Read(_ context.Context, b *types.Batch) (ReadResult, error) {
	if len(r.steps) == 0 {
		return ReadResult{Split: -1, End: true}, nil
	}
	s := r.steps[0]
	r.steps = r.steps[1:]
	fill(b, s)
	res := s.result()
	if len(r.steps) == 0 {
		res.End = true
	}
	return res, nil
}
func (r *sliceReader) Close() error {
	if r.closed != nil {
		r.closed.Add(1)
	}
	return nil
}

// sliceSource is a source vertex whose subtask i reads steps[i].
func sliceSource(id, width, splits int, steps ...[]step) *Vertex {
	return &Vertex{
		ID: id, Name: fmt.Sprintf("Source%d", id), Parallelism: len(steps),
		Source: &SourceSpec{Width: width, NewReader: func(st, p int) (SourceReader, error) {
			return &sliceReader{splits: splits, steps: slices.Clone(steps[st])}, nil
		}},
	}
}

// chanReader returns what the test sends it; an empty step just wakes the
// source loop. It returns empty-handed when its context is done.
type chanReader struct {
	splits atomic.Int32
	steps  chan step
	reads  atomic.Int64
}

func newChanReader(splits int) *chanReader {
	r := &chanReader{steps: make(chan step)}
	r.splits.Store(int32(splits))
	return r
}

func (r *chanReader) Open(context.Context) error { return nil }
func (r *chanReader) NumSplits() int             { return int(r.splits.Load()) }
func (r *chanReader) Close() error               { return nil }
func (r *chanReader) Read(ctx context.Context, b *types.Batch) (ReadResult, error) {
	select {
	case s := <-r.steps:
		r.reads.Add(1)
		fill(b, s)
		return s.result(), nil
	case <-ctx.Done():
		return ReadResult{Split: -1}, nil
	}
}

func chanSource(id, width int, wm *WatermarkSpec, readers ...*chanReader) *Vertex {
	return &Vertex{
		ID: id, Name: fmt.Sprintf("Source%d", id), Parallelism: len(readers),
		Source: &SourceSpec{Width: width, Watermark: wm, NewReader: func(st, p int) (SourceReader, error) {
			return readers[st], nil
		}},
	}
}

// tsWatermark is a WATERMARK FOR on column col holding epoch millis as an
// integer (the test rows' time column), minus delay.
func tsWatermark(col int, delay int64, onEvent bool) *WatermarkSpec {
	return &WatermarkSpec{EmitOnEvent: onEvent, Expr: func() (Projector, error) {
		return projectorFunc(func(in, out types.Row) error {
			if in[col].IsNull() {
				out[0] = types.Value{}
				return nil
			}
			out[0] = types.TimestampMillis(in[col].Int() - delay)
			return nil
		}), nil
	}}
}

type projectorFunc func(in, out types.Row) error

func (f projectorFunc) Project(in, out types.Row) error { return f(in, out) }

type predicateFunc func(in types.Row) (bool, error)

func (f predicateFunc) Test(in types.Row) (bool, error) { return f(in) }

func ints(vs ...int64) types.Row {
	r := make(types.Row, len(vs))
	for i, v := range vs {
		r[i] = types.Int(v)
	}
	return r
}

// event is what a recorder saw.
type event struct {
	subtask int
	what    string // "row", "wm", "finish"
	kind    types.RowKind
	row     types.Row
	wm      int64
}

func (e event) String() string {
	switch e.what {
	case "row":
		return e.kind.String() + rowString(e.row)
	case "wm":
		if e.wm == MaxWatermark {
			return "wm(max)"
		}
		return fmt.Sprintf("wm(%d)", e.wm)
	}
	return e.what
}

func rowString(r types.Row) string {
	var sb strings.Builder
	for i, v := range r {
		if i > 0 {
			sb.WriteByte(',')
		}
		switch v.K {
		case types.KindNull:
			sb.WriteString("NULL")
		case types.KindString:
			sb.WriteString(v.S)
		default:
			fmt.Fprint(&sb, v.N)
		}
	}
	return sb.String()
}

// recorder is an operator (and a sink writer factory) that logs what it
// receives, forwards it and, when events is set, also sends each event
// there so a test can await it.
type recorder struct {
	mu     sync.Mutex
	log    []event
	events chan event
	name   string
}

func newRecorder(buffered int) *recorder {
	rc := &recorder{}
	if buffered > 0 {
		rc.events = make(chan event, buffered)
	}
	return rc
}

func (rc *recorder) add(e event) {
	rc.mu.Lock()
	rc.log = append(rc.log, e)
	rc.mu.Unlock()
	if rc.events != nil {
		rc.events <- e
	}
}

func (rc *recorder) snapshot() []event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.log)
}

// strings renders the log, optionally only one subtask's events (-1: all).
func (rc *recorder) strings(subtask int, what ...string) []string {
	var out []string
	for _, e := range rc.snapshot() {
		if (subtask < 0 || e.subtask == subtask) && (len(what) == 0 || slices.Contains(what, e.what)) {
			out = append(out, e.String())
		}
	}
	return out
}

// rows returns the recorded rows as sorted strings.
func (rc *recorder) sortedRows() []string {
	var out []string
	for _, e := range rc.snapshot() {
		if e.what == "row" {
			out = append(out, rowString(e.row))
		}
	}
	sort.Strings(out)
	return out
}

func (rc *recorder) op() func() (Operator, error) {
	return func() (Operator, error) { return &recordOp{rc: rc}, nil }
}

type recordOp struct {
	rc      *recorder
	subtask int
}

func (o *recordOp) Open(ctx *OperatorContext) error { o.subtask = ctx.Subtask; return nil }
func (o *recordOp) ProcessBatch(_ int, b *types.Batch, out Output) error {
	for i, r := range b.Rows {
		o.rc.add(event{subtask: o.subtask, what: "row", kind: b.Kinds[i], row: r.Clone()})
	}
	return out.Push(b)
}
func (o *recordOp) ProcessWatermark(wm int64, out Output) error {
	o.rc.add(event{subtask: o.subtask, what: "wm", wm: wm})
	return out.PushWatermark(wm)
}
func (o *recordOp) Finish(Output) error {
	o.rc.add(event{subtask: o.subtask, what: "finish"})
	return nil
}
func (o *recordOp) Close() error { return nil }

// nextEvent awaits the recorder's next event.
func nextEvent(t *testing.T, rc *recorder) event {
	t.Helper()
	select {
	case e := <-rc.events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for an event; log so far: %v", rc.snapshot())
	}
	return event{}
}

// awaitEvent awaits the event that prints as want, skipping others.
func awaitEvent(t *testing.T, rc *recorder, want string) {
	t.Helper()
	for nextEvent(t, rc).String() != want {
	}
}

// nextWatermark awaits the next watermark event, skipping rows.
func nextWatermark(t *testing.T, rc *recorder) int64 {
	t.Helper()
	for {
		if e := nextEvent(t, rc); e.what == "wm" {
			return e.wm
		}
	}
}

// collectSink records rows per subtask.
type collectSink struct {
	mu       sync.Mutex
	rows     map[int][]string
	finished atomic.Int32
	closed   atomic.Int32
}

func newCollectSink() *collectSink { return &collectSink{rows: map[int][]string{}} }

func (cs *collectSink) vertex(id, parallelism int, inputs ...Input) *Vertex {
	return &Vertex{
		ID: id, Name: "Sink", Parallelism: parallelism, Inputs: inputs,
		Chain: []func() (Operator, error){func() (Operator, error) { return &collectOp{cs: cs}, nil }},
	}
}

type collectOp struct {
	base
	cs      *collectSink
	subtask int
}

func (o *collectOp) Open(ctx *OperatorContext) error {
	o.subtask = ctx.Subtask
	return nil
}
func (o *collectOp) ProcessBatch(_ int, b *types.Batch, _ Output) error {
	o.cs.mu.Lock()
	defer o.cs.mu.Unlock()
	for i, r := range b.Rows {
		o.cs.rows[o.subtask] = append(o.cs.rows[o.subtask], b.Kinds[i].String()+rowString(r))
	}
	return nil
}
func (o *collectOp) ProcessWatermark(int64, Output) error { return nil }
func (o *collectOp) Finish(Output) error                  { o.cs.finished.Add(1); return nil }
func (o *collectOp) Close() error                         { o.cs.closed.Add(1); return nil }

func (cs *collectSink) all() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for _, rs := range cs.rows {
		out = append(out, rs...)
	}
	sort.Strings(out)
	return out
}

// run starts g and waits for it with a generous deadline.
func run(t *testing.T, g *JobGraph, cfg Config) error {
	t.Helper()
	j, err := Start(context.Background(), g, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return waitJob(t, j)
}

func waitJob(t *testing.T, j *Job) error {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(20 * time.Second):
		j.Cancel()
		t.Fatalf("job did not end")
	}
	return j.Wait()
}

// fakeClock is a processing clock the test moves.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() int64      { return c.ms.Load() }
func (c *fakeClock) advance(d int64) { c.ms.Add(d) }
func newFakeClock(start int64) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(start)
	return c
}

// awaitGoroutines waits until the goroutine count drops to at most n.
func awaitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), n, buf)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

func chain(ops ...func() (Operator, error)) []func() (Operator, error) { return ops }

func opOf(op Operator) func() (Operator, error) {
	return func() (Operator, error) { return op, nil }
}

// The recording test operators keep what they saw outside the job, for the
// test to read; they have nothing to restore.
func (*recordOp) Stateless()  {}
func (*collectOp) Stateless() {}
