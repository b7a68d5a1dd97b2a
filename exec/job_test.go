package exec

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// doubleV keeps (k, v) rows with v >= 20 and doubles v.
func doubleVCalc() (Operator, error) {
	return NewCalc(
		predicateFunc(func(in types.Row) (bool, error) { return in[1].Int() >= 20, nil }),
		projectorFunc(func(in, out types.Row) error {
			out[0] = in[0]
			out[1] = types.Int(in[1].Int() * 2)
			return nil
		}), 2), nil
}

func TestForwardChain(t *testing.T) {
	src := sliceSource(1, 2, 1,
		[]step{rowsStep(0, ints(1, 10), ints(2, 20)), rowsStep(0, ints(3, 30))},
		[]step{rowsStep(0, ints(4, 40), ints(5, 50))},
	)
	src.Chain = chain(doubleVCalc)
	cs := newCollectSink()
	sink := cs.vertex(2, 2, Input{From: 1, Partitioner: Partitioner{Kind: Forward}})
	if err := run(t, &JobGraph{Vertices: []*Vertex{src, sink}}, Config{}); err != nil {
		t.Fatal(err)
	}
	// Forward keeps every row on the subtask that produced it.
	want := map[int][]string{0: {"+I2,40", "+I3,60"}, 1: {"+I4,80", "+I5,100"}}
	for st, rows := range want {
		if got := cs.rows[st]; !slices.Equal(got, rows) {
			t.Errorf("subtask %d: got %v, want %v", st, got, rows)
		}
	}
	if cs.finished.Load() != 2 || cs.closed.Load() != 2 {
		t.Errorf("finished %d, closed %d sink operators, want 2 and 2", cs.finished.Load(), cs.closed.Load())
	}
}

func TestHashExchange(t *testing.T) {
	// Two source subtasks each produce 100 rows (k, v) with k = v % 17.
	var steps [2][]step
	var want []string
	for st := range 2 {
		var rows []types.Row
		for i := range 100 {
			v := int64(st*1000 + i)
			rows = append(rows, ints(v%17, v))
			want = append(want, fmt.Sprintf("+I%d,%d", v%17, v))
			if len(rows) == 7 { // several batches per subtask
				steps[st] = append(steps[st], step{split: 0, rows: rows})
				rows = nil
			}
		}
		steps[st] = append(steps[st], step{split: 0, rows: rows})
	}
	slices.Sort(want)
	for _, p := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			cs := newCollectSink()
			g := &JobGraph{Vertices: []*Vertex{
				sliceSource(1, 2, 1, steps[0], steps[1]),
				cs.vertex(2, p, Input{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}),
			}}
			if err := run(t, g, Config{BatchSize: 5}); err != nil {
				t.Fatal(err)
			}
			if got := cs.all(); !slices.Equal(got, want) {
				t.Fatalf("rows differ: got %d rows, want %d", len(got), len(want))
			}
			for st, rows := range cs.rows {
				for _, r := range rows {
					var k int64
					fmt.Sscanf(r, "+I%d,", &k)
					kg := types.KeyGroup(types.HashColumns(ints(k), []int{0}), DefaultMaxParallelism)
					if owner := types.SubtaskForKeyGroup(kg, p, DefaultMaxParallelism); owner != st {
						t.Fatalf("key %d on subtask %d, its key group %d belongs to subtask %d", k, st, kg, owner)
					}
				}
			}
		})
	}
}

func TestPartitioners(t *testing.T) {
	var rows []types.Row
	for i := range 8 {
		rows = append(rows, ints(int64(i)))
	}
	all := []string{"+I0", "+I1", "+I2", "+I3", "+I4", "+I5", "+I6", "+I7"}
	tests := []struct {
		kind PartitionKind
		p    int
		want map[int][]string
	}{
		// Round robin per row, starting at the producer's own index (0).
		{Rebalance, 4, map[int][]string{0: {"+I0", "+I4"}, 1: {"+I1", "+I5"}, 2: {"+I2", "+I6"}, 3: {"+I3", "+I7"}}},
		{Broadcast, 3, map[int][]string{0: all, 1: all, 2: all}},
		{Global, 3, map[int][]string{0: all}},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			cs := newCollectSink()
			g := &JobGraph{Vertices: []*Vertex{
				sliceSource(1, 1, 1, []step{{split: 0, rows: rows}}),
				cs.vertex(2, tc.p, Input{From: 1, Partitioner: Partitioner{Kind: tc.kind}}),
			}}
			if err := run(t, g, Config{}); err != nil {
				t.Fatal(err)
			}
			for st := range tc.p {
				if got := cs.rows[st]; !slices.Equal(got, tc.want[st]) {
					t.Errorf("subtask %d: got %v, want %v", st, got, tc.want[st])
				}
			}
			if n := cs.finished.Load(); n != int32(tc.p) {
				t.Errorf("%d sink subtasks finished, want %d", n, tc.p)
			}
		})
	}
}

func TestUnion(t *testing.T) {
	rc := newRecorder(0)
	g := &JobGraph{Vertices: []*Vertex{
		sliceSource(1, 1, 1, []step{rowsStep(0, ints(1), ints(2))}),
		sliceSource(2, 1, 1, []step{rowsStep(0, ints(3))}, []step{rowsStep(0, ints(4))}),
		{
			ID: 3, Name: "Union", Parallelism: 1,
			Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}, {From: 2, Partitioner: Partitioner{Kind: Global}}},
			Chain:  chain(func() (Operator, error) { return NewIdentity(), nil }, rc.op()),
		},
	}}
	if err := run(t, g, Config{}); err != nil {
		t.Fatal(err)
	}
	if got, want := rc.sortedRows(), []string{"1", "2", "3", "4"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Every source ends with the maximum watermark; the union sees it once
	// all three channels have it, then finishes.
	if got, want := rc.strings(-1, "wm", "finish"), []string{"wm(max)", "finish"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestEmitOnEventOrder(t *testing.T) {
	tests := []struct {
		name   string
		splits int
		steps  []step
		want   []string
	}{
		{
			name: "one split", splits: 1,
			steps: []step{rowsStep(0, ints(1), ints(3), ints(2), ints(5))},
			want:  []string{"+I1", "wm(1)", "+I3", "wm(3)", "+I2", "+I5", "wm(5)", "wm(max)", "finish"},
		},
		{
			// The watermark is the minimum over splits: split 1 holds it
			// at MinWatermark until it has rows; a finished split no
			// longer holds it back.
			name: "two splits", splits: 2,
			steps: []step{
				rowsStep(0, ints(10), ints(20)),
				rowsStep(1, ints(5), ints(15)),
				rowsStep(0, ints(30)),
				{split: 1, rows: []types.Row{ints(25)}, splitDone: true},
			},
			want: []string{"+I10", "+I20", "+I5", "wm(5)", "+I15", "wm(15)", "+I30", "+I25", "wm(25)", "wm(30)", "wm(max)", "finish"},
		},
		{
			name: "NULL time produces no watermark", splits: 1,
			steps: []step{rowsStep(0, types.Row{types.NullValue}, ints(4))},
			want:  []string{"+INULL", "+I4", "wm(4)", "wm(max)", "finish"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRecorder(0)
			src := sliceSource(1, 1, tc.splits, tc.steps)
			src.Source.Watermark = tsWatermark(0, 0, true)
			src.Chain = chain(rc.op())
			if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{}); err != nil {
				t.Fatal(err)
			}
			if got := rc.strings(-1); !slices.Equal(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPrepareBeforeWatermark(t *testing.T) {
	// The reader produces (a, b); Prepare computes (b, a+b) and the
	// watermark is taken from the prepared column 1 minus 2.
	rc := newRecorder(0)
	src := sliceSource(1, 2, 1, []step{rowsStep(0, ints(1, 10), ints(5, 1))})
	src.Source.Prepare = func() (Projector, error) {
		return projectorFunc(func(in, out types.Row) error {
			out[0] = in[1]
			out[1] = types.Int(in[0].Int() + in[1].Int())
			return nil
		}), nil
	}
	src.Source.PreparedWidth = 2
	src.Source.Watermark = tsWatermark(1, 2, true)
	src.Chain = chain(rc.op())
	if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"+I10,11", "wm(9)", "+I1,6", "wm(max)", "finish"}
	if got := rc.strings(-1); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestPeriodicWatermarkAndIdleSplit(t *testing.T) {
	clock := newFakeClock(0)
	r := newChanReader(2)
	rc := newRecorder(100)
	src := chanSource(1, 1, tsWatermark(0, 0, false), r)
	src.Chain = chain(rc.op())
	cfg := Config{Now: clock.now, AutoWatermarkInterval: time.Minute, IdleTimeout: 5 * time.Minute}
	j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{src}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()

	r.steps <- rowsStep(0, ints(1000))
	r.steps <- rowsStep(1, ints(100))
	clock.advance(60_000) // the periodic emission is due at 60 000
	r.steps <- step{}
	if wm := nextWatermark(t, rc); wm != 100 {
		t.Fatalf("first watermark %d, want 100 (the slow split holds it back)", wm)
	}
	// Split 1 stays silent for the idle timeout while split 0 goes on:
	// split 1 turns idle and no longer holds the watermark back.
	// A periodic tick may run before the task reads the 2500 row (a
	// read's deadline ends on real time): split 0 then looks idle as well
	// and only the following tick, after the row, emits. Another interval
	// and a wake-up make that tick happen on either path.
	clock.advance(360_000)
	r.steps <- rowsStep(0, ints(2500))
	clock.advance(60_000)
	r.steps <- step{}
	if wm := nextWatermark(t, rc); wm != 2500 {
		t.Fatalf("watermark %d after split 1 went idle, want 2500", wm)
	}
	// Split 1 produces again and counts again.
	r.steps <- rowsStep(1, ints(3000))
	r.steps <- rowsStep(0, ints(4000))
	clock.advance(60_000)
	r.steps <- step{}
	if wm := nextWatermark(t, rc); wm != 3000 {
		t.Fatalf("watermark %d after split 1 resumed, want 3000", wm)
	}
	r.steps <- step{end: true}
	if wm := nextWatermark(t, rc); wm != MaxWatermark {
		t.Fatalf("watermark %d at end, want MaxWatermark", wm)
	}
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	rows := rc.strings(-1, "row")
	if want := []string{"+I1000", "+I100", "+I2500", "+I3000", "+I4000"}; !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
}

func TestWatermarkAcrossChannels(t *testing.T) {
	clock := newFakeClock(0)
	r0, r1 := newChanReader(1), newChanReader(1)
	rc := newRecorder(100)
	src := chanSource(1, 1, tsWatermark(0, 0, true), r0, r1)
	g := &JobGraph{Vertices: []*Vertex{src, {
		ID: 2, Name: "Rec", Parallelism: 1,
		Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}},
		Chain:  chain(rc.op()),
	}}}
	cfg := Config{Now: clock.now, AutoWatermarkInterval: time.Minute, IdleTimeout: 5 * time.Minute}
	j, err := Start(context.Background(), g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	expect := func(want int64) {
		t.Helper()
		if wm := nextWatermark(t, rc); wm != want {
			t.Fatalf("watermark %d, want %d", wm, want)
		}
	}
	r0.steps <- rowsStep(0, ints(1000))
	r1.steps <- rowsStep(0, ints(100))
	expect(100) // min(1000, 100)
	r1.steps <- rowsStep(0, ints(5000))
	expect(1000)
	r0.steps <- rowsStep(0, ints(1500))
	expect(1500)

	clock.advance(360_000)
	r0.steps <- rowsStep(0, ints(7000))
	expect(5000)       // subtask 1 still counts
	r1.steps <- step{} // its periodic check finds its split idle
	expect(7000)

	// Subtask 1 comes back behind the current watermark: it does not hold
	// the watermark back until it catches up (Flink's alignment).
	r1.steps <- rowsStep(0, ints(6500))
	r0.steps <- rowsStep(0, ints(8000))
	expect(8000)
	r1.steps <- rowsStep(0, ints(9000))
	awaitEvent(t, rc, "+I9000") // now subtask 1 is aligned again
	// The row can arrive before subtask 1's watermark 9000 is processed;
	// a second row of subtask 1 comes after that watermark on the same
	// channel, so once it arrived the watermark was taken into account.
	r1.steps <- rowsStep(0, ints(9000))
	awaitEvent(t, rc, "+I9000")
	r0.steps <- rowsStep(0, ints(10000))
	expect(9000)
	r0.steps <- step{end: true}
	r1.steps <- step{end: true}
	// Which subtask's end arrives first decides whether 10000 shows up
	// before the maximum.
	if wm := nextWatermark(t, rc); wm == 10000 {
		expect(MaxWatermark)
	} else if wm != MaxWatermark {
		t.Fatalf("watermark %d, want 10000 or MaxWatermark", wm)
	}
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
}

// finishOp emits one row carrying id when it finishes.
type finishOp struct {
	base
	id int64
}

func (o *finishOp) ProcessBatch(_ int, b *types.Batch, out Output) error { return out.Push(b) }
func (o *finishOp) Finish(out Output) error {
	b := types.NewBatch(1, 1)
	b.AppendRow(types.Insert, ints(o.id))
	return out.Push(b)
}

func TestFinishOrder(t *testing.T) {
	rc := newRecorder(0)
	src := sliceSource(1, 1, 1, []step{rowsStep(0, ints(5))})
	src.Source.Watermark = tsWatermark(0, 0, false)
	src.Chain = chain(opOf(&finishOp{id: 101}), opOf(&finishOp{id: 102}), rc.op())
	if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"+I5", "wm(max)", "+I101", "+I102", "finish"}
	if got := rc.strings(-1); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

var errBoom = errors.New("boom")

// stuckReader returns its steps, then blocks until its context is canceled.
type stuckReader struct {
	steps []step
}

func (r *stuckReader) Open(context.Context) error { return nil }
func (r *stuckReader) NumSplits() int             { return 1 }
func (r *stuckReader) Close() error               { return nil }
func (r *stuckReader) Read(ctx context.Context, b *types.Batch) (ReadResult, error) {
	if len(r.steps) > 0 {
		s := r.steps[0]
		r.steps = r.steps[1:]
		fill(b, s)
		return s.result(), nil
	}
	<-ctx.Done()
	return ReadResult{Split: -1}, nil
}

func TestOperatorErrorFailsJob(t *testing.T) {
	src := &Vertex{ID: 1, Name: "Source: T", Parallelism: 4, Source: &SourceSpec{Width: 1,
		NewReader: func(st, p int) (SourceReader, error) {
			var rows []types.Row
			for i := range 10 {
				rows = append(rows, ints(int64(st*10+i)))
			}
			return &stuckReader{steps: []step{{split: 0, rows: rows}}}, nil
		}}}
	failing := func() (Operator, error) {
		return NewCalc(nil, projectorFunc(func(in, out types.Row) error {
			if in[0].Int() == 13 {
				return fmt.Errorf("cast failed: %w", errBoom)
			}
			out[0] = in[0]
			return nil
		}), 1), nil
	}
	cs := newCollectSink()
	calc := &Vertex{ID: 2, Name: "Calc(select=[a])", Parallelism: 4,
		Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
		Chain:  chain(failing, func() (Operator, error) { return &collectOp{cs: cs}, nil }), ChainNames: []string{"Calc(select=[a])", "Sink"},
	}
	err := run(t, &JobGraph{Vertices: []*Vertex{src, calc}}, Config{})
	if !errors.Is(err, errBoom) {
		t.Fatalf("got %v, want boom", err)
	}
	if want := "Calc(select=[a]) (2/4): cast failed: boom"; err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}

func TestChainedOperatorErrorNamesOperator(t *testing.T) {
	src := sliceSource(1, 1, 1, []step{rowsStep(0, ints(1))})
	src.Name = "Source: T -> Calc(select=[a])"
	src.ChainNames = []string{"Calc(select=[a])"}
	src.Chain = chain(func() (Operator, error) {
		return NewCalc(predicateFunc(func(types.Row) (bool, error) { return false, errBoom }), nil, 1), nil
	})
	err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{})
	// A single chained operator: the vertex name says enough.
	if want := "Source: T -> Calc(select=[a]) (1/1): boom"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	src.Chain = append(src.Chain, opOf(NewIdentity()))
	src.ChainNames = append(src.ChainNames, "Identity")
	err = run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{})
	if want := "Source: T -> Calc(select=[a]) (1/1): Calc(select=[a]): boom"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestCancelUnboundedJob(t *testing.T) {
	before := runtime.NumGoroutine()
	r0, r1 := newChanReader(1), newChanReader(1)
	cs := newCollectSink()
	g := &JobGraph{Vertices: []*Vertex{
		chanSource(1, 1, nil, r0, r1),
		cs.vertex(2, 2, Input{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}),
	}}
	j, err := Start(context.Background(), g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	r0.steps <- rowsStep(0, ints(1))
	j.Cancel()
	start := time.Now()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after Cancel: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if cs.finished.Load() != 0 {
		t.Fatalf("a canceled job finished its sink")
	}
	if cs.closed.Load() != 2 {
		t.Fatalf("closed %d sink operators, want 2", cs.closed.Load())
	}
	awaitGoroutines(t, before)
}

func TestParentContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := newChanReader(1)
	j, err := Start(ctx, &JobGraph{Vertices: []*Vertex{chanSource(1, 1, nil, r)}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// blockingSink blocks in its first Write until release is closed, and
// counts rows.
type blockingSink struct {
	release chan struct{}
	rows    *int64
}

func (s *blockingSink) Open(context.Context) error { return nil }
func (s *blockingSink) Write(ctx context.Context, b *types.Batch) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	*s.rows += int64(b.Len())
	return nil
}
func (s *blockingSink) Finish(context.Context) error { return nil }
func (s *blockingSink) Close() error                 { return nil }

// countingReader produces batches of batch rows, total rows in all.
type countingReader struct {
	batch, total int
	produced     *Counter
}

func (r *countingReader) Open(context.Context) error { return nil }
func (r *countingReader) NumSplits() int             { return 1 }
func (r *countingReader) Close() error               { return nil }
func (r *countingReader) Read(_ context.Context, b *types.Batch) (ReadResult, error) {
	n := int(r.produced.Load())
	for i := 0; i < r.batch && n+i < r.total; i++ {
		b.Append(types.Insert)[0] = types.Int(int64(n + i))
	}
	r.produced.Add(int64(b.Len()))
	return ReadResult{Split: 0, End: int(r.produced.Load()) >= r.total}, nil
}

func TestBackpressure(t *testing.T) {
	const batch, capacity, total = 10, 2, 1000
	produced := &Counter{}
	var written int64
	snk := &blockingSink{release: make(chan struct{}), rows: &written}
	g := &JobGraph{Vertices: []*Vertex{
		{ID: 1, Name: "Source", Parallelism: 1, Source: &SourceSpec{Width: 1, NewReader: func(int, int) (SourceReader, error) {
			return &countingReader{batch: batch, total: total, produced: produced}, nil
		}}},
		{ID: 2, Name: "Sink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
			Chain: chain(func() (Operator, error) { return NewSinkOperator(snk), nil })},
	}}
	j, err := Start(context.Background(), g, Config{BatchSize: batch, ChannelCapacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	// The channel owns capacity+1 batches: one the sink holds in Write, the
	// rest queued or being filled; the source also holds the batch it is
	// pushing when it blocks.
	bound := int64((capacity+1)*batch + batch)
	deadline := time.Now().Add(10 * time.Second)
	for produced.Load() < int64((capacity+1)*batch) {
		if time.Now().After(deadline) {
			t.Fatalf("source produced only %d rows", produced.Load())
		}
		runtime.Gosched()
	}
	// Observation window for a negative property: nothing can signal that
	// the source stays blocked, so give it time to overrun if it could.
	time.Sleep(100 * time.Millisecond)
	if n := produced.Load(); n > bound {
		t.Fatalf("source produced %d rows while the sink was blocked, bound %d", n, bound)
	}
	close(snk.release)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	if written != total {
		t.Fatalf("sink wrote %d rows, want %d", written, total)
	}
}

func TestBufferTimeoutFlushes(t *testing.T) {
	// Nothing ends and no watermark is sent: only the buffer timeout can
	// move the row, first out of the source task, then out of the middle
	// task.
	r := newChanReader(1)
	rc := newRecorder(10)
	g := &JobGraph{Vertices: []*Vertex{
		chanSource(1, 1, nil, r),
		{ID: 2, Name: "Mid", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}},
			Chain: chain(func() (Operator, error) { return NewIdentity(), nil })},
		{ID: 3, Name: "Rec", Parallelism: 1, Inputs: []Input{{From: 2, Partitioner: Partitioner{Kind: Rebalance}}},
			Chain: chain(rc.op())},
	}}
	j, err := Start(context.Background(), g, Config{BufferTimeout: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.steps <- rowsStep(0, ints(42))
	if e := nextEvent(t, rc); e.String() != "+I42" {
		t.Fatalf("got %v, want +I42", e)
	}
	j.Cancel()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestReadResultFlush: with partial batches sent only before watermarks
// and at the end of input (buffer timeout -1), a read that asks for a
// flush still moves its rows out of the source task at once.
func TestReadResultFlush(t *testing.T) {
	r := newChanReader(1)
	rc := newRecorder(10)
	g := &JobGraph{Vertices: []*Vertex{
		chanSource(1, 1, nil, r),
		{ID: 2, Name: "Rec", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}},
			Chain: chain(rc.op())},
	}}
	j, err := Start(context.Background(), g, Config{BufferTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := rowsStep(0, ints(7))
	s.flush = true
	r.steps <- s
	if e := nextEvent(t, rc); e.String() != "+I7" {
		t.Fatalf("got %v, want +I7", e)
	}
	j.Cancel()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// timerOp registers processing-time timers and emits a row per firing.
type timerOp struct {
	base
	ctx  *OperatorContext
	next int
}

func (o *timerOp) Open(ctx *OperatorContext) error {
	o.ctx = ctx
	const t = 1010 // fixed: the test clock may already have moved
	ctx.RegisterProcessingTimer(t)
	ctx.RegisterProcessingTimer(t) // coalesced
	return nil
}
func (o *timerOp) ProcessBatch(_ int, b *types.Batch, out Output) error { return out.Push(b) }
func (o *timerOp) OnProcessingTime(t int64, out Output) error {
	b := types.NewBatch(1, 1)
	b.AppendRow(types.Insert, ints(t))
	if o.next++; o.next < 2 {
		o.ctx.RegisterProcessingTimer(t + 10)
	}
	return out.Push(b)
}

func TestProcessingTimers(t *testing.T) {
	clock := newFakeClock(1000)
	r := newChanReader(1)
	rc := newRecorder(10)
	g := &JobGraph{Vertices: []*Vertex{
		chanSource(1, 1, nil, r),
		{ID: 2, Name: "Timers", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
			Chain: chain(func() (Operator, error) { return &timerOp{}, nil }, rc.op())},
	}}
	j, err := Start(context.Background(), g, Config{Now: clock.now, BufferTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	clock.advance(10)
	if e := nextEvent(t, rc); e.String() != "+I1010" {
		t.Fatalf("got %v, want +I1010", e)
	}
	clock.advance(15)
	if e := nextEvent(t, rc); e.String() != "+I1020" {
		t.Fatalf("got %v, want +I1020", e)
	}
	r.steps <- step{end: true}
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	// Exactly two firings, then the maximum watermark and finish.
	want := []string{"+I1010", "+I1020", "wm(max)", "finish"}
	if got := rc.strings(-1); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestMetrics(t *testing.T) {
	src := sliceSource(1, 2, 1,
		[]step{rowsStep(0, ints(1, 10), ints(2, 20)), rowsStep(0, ints(3, 30))},
		[]step{rowsStep(0, ints(4, 40), ints(5, 5))},
	)
	src.Source.Watermark = tsWatermark(1, 0, false)
	src.Chain = chain(doubleVCalc)
	src.ChainNames = []string{"Calc"}
	cs := newCollectSink()
	g := &JobGraph{Vertices: []*Vertex{src, cs.vertex(2, 1, Input{From: 1, Partitioner: Partitioner{Kind: Rebalance}})}}
	j, err := Start(context.Background(), g, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	m := j.Metrics()
	if len(m) != 2 {
		t.Fatalf("%d vertices", len(m))
	}
	s := m[0]
	if s.RowsRead != 5 || s.SourceWatermark != MaxWatermark {
		t.Errorf("source: read %d, watermark %d", s.RowsRead, s.SourceWatermark)
	}
	calc := s.Operators[0]
	if calc.Name != "Calc" || calc.RowsIn != 5 || calc.RowsOut != 3 || calc.Watermark != MaxWatermark || len(calc.Subtasks) != 2 {
		t.Errorf("calc metrics %+v", calc)
	}
	if calc.Subtasks[0].RowsIn != 3 || calc.Subtasks[0].RowsOut != 2 || calc.Subtasks[1].RowsOut != 1 {
		t.Errorf("calc subtasks %+v", calc.Subtasks)
	}
	sink := m[1].Operators[0]
	if sink.Name != "Sink" || sink.RowsIn != 3 || sink.RowsOut != 0 || sink.Watermark != MaxWatermark {
		t.Errorf("sink metrics %+v", sink)
	}
}

func TestValidate(t *testing.T) {
	src := func(id, p int) *Vertex {
		return &Vertex{ID: id, Name: "S", Parallelism: p, Source: &SourceSpec{Width: 1, NewReader: func(int, int) (SourceReader, error) { return nil, nil }}}
	}
	op := func(id, p int, in ...Input) *Vertex {
		return &Vertex{ID: id, Name: "O", Parallelism: p, Inputs: in, Chain: chain(opOf(NewIdentity()))}
	}
	tests := []struct {
		name string
		g    *JobGraph
		want string
	}{
		{"empty", &JobGraph{}, "no vertices"},
		{"duplicate id", &JobGraph{Vertices: []*Vertex{src(1, 1), src(1, 1)}}, "duplicate vertex id 1"},
		{"no source", &JobGraph{Vertices: []*Vertex{op(1, 1)}}, "neither a source nor any input"},
		{"not topological", &JobGraph{Vertices: []*Vertex{op(2, 1, Input{From: 1}), src(1, 1)}}, "not an earlier vertex"},
		{"self input", &JobGraph{Vertices: []*Vertex{src(1, 1), op(2, 1, Input{From: 2})}}, "input from itself"},
		{"forward parallelism", &JobGraph{Vertices: []*Vertex{src(1, 2), op(2, 3, Input{From: 1})}}, "FORWARD input from vertex 1 needs equal parallelism, got 2 and 3"},
		{"parallelism", &JobGraph{Vertices: []*Vertex{src(1, 0)}}, "parallelism 0 is outside 1…128"},
		{"too parallel", &JobGraph{Vertices: []*Vertex{src(1, 129)}}, "parallelism 129 is outside 1…128"},
		{"source with input", &JobGraph{Vertices: []*Vertex{src(1, 1), func() *Vertex { v := src(2, 1); v.Inputs = []Input{{From: 1}}; return v }()}}, "cannot have inputs"},
		{"chain names", &JobGraph{Vertices: []*Vertex{func() *Vertex { v := src(1, 1); v.ChainNames = []string{"a"}; return v }()}}, "1 chain names for 0 operators"},
		{"no source vertex", &JobGraph{Vertices: []*Vertex{}}, "no vertices"},
		{"ok", &JobGraph{Vertices: []*Vertex{src(1, 2), op(2, 2, Input{From: 1}), op(3, 5, Input{From: 2, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}})}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.g, Config{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if _, err := Start(context.Background(), tc.g, Config{}); err == nil {
				t.Fatalf("Start accepted an invalid graph")
			}
		})
	}
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		// A job that succeeds, one that fails and one that is canceled.
		cs := newCollectSink()
		g := &JobGraph{Vertices: []*Vertex{
			sliceSource(1, 2, 1, []step{rowsStep(0, ints(1, 10))}, []step{rowsStep(0, ints(2, 20))}),
			cs.vertex(2, 3, Input{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}),
		}}
		if err := run(t, g, Config{}); err != nil {
			t.Fatal(err)
		}
		src := sliceSource(1, 1, 1, []step{rowsStep(0, ints(1))})
		src.Chain = chain(func() (Operator, error) { return nil, errBoom })
		if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{}); !errors.Is(err, errBoom) {
			t.Fatalf("got %v", err)
		}
		j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{chanSource(1, 1, nil, newChanReader(1))}}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		j.Cancel()
		_ = waitJob(t, j)
	}
	awaitGoroutines(t, before)
}

// The table's 'scan.watermark.idle-timeout' (WatermarkSpec.IdleTimeout)
// replaces table.exec.source.idle-timeout for its source, both ways: it
// turns idleness on where the session has it off, and off ('0 ms') where the
// session has it on. The script is TestPeriodicWatermarkAndIdleSplit's:
// split 1 stays silent for 7 minutes while split 0 reaches 2500.
func TestTableIdleTimeoutOverridesConfig(t *testing.T) {
	for _, c := range []struct {
		name        string
		config      time.Duration
		table       time.Duration
		watermarks  []string // every watermark the job emits
		idleRelease bool
	}{
		{"table on, session off", 0, 5 * time.Minute, []string{"wm(100)", "wm(2500)", "wm(max)"}, true},
		{"table off, session on", 5 * time.Minute, 0, []string{"wm(100)", "wm(max)"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newFakeClock(0)
			r := newChanReader(2)
			rc := newRecorder(100)
			wm := tsWatermark(0, 0, false)
			wm.IdleTimeout, wm.HasIdleTimeout = c.table, true
			src := chanSource(1, 1, wm, r)
			src.Chain = chain(rc.op())
			cfg := Config{Now: clock.now, AutoWatermarkInterval: time.Minute, IdleTimeout: c.config}
			j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{src}}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Cancel()
			r.steps <- rowsStep(0, ints(1000))
			r.steps <- rowsStep(1, ints(100))
			clock.advance(60_000)
			r.steps <- step{}
			if wm := nextWatermark(t, rc); wm != 100 {
				t.Fatalf("first watermark %d, want 100", wm)
			}
			clock.advance(360_000)
			r.steps <- rowsStep(0, ints(2500))
			clock.advance(60_000)
			r.steps <- step{}
			if c.idleRelease {
				if wm := nextWatermark(t, rc); wm != 2500 {
					t.Fatalf("watermark %d after split 1 went idle, want 2500", wm)
				}
			}
			r.steps <- step{end: true}
			if err := waitJob(t, j); err != nil {
				t.Fatal(err)
			}
			if got := rc.strings(-1, "wm"); !slices.Equal(got, c.watermarks) {
				t.Fatalf("watermarks %v, want %v", got, c.watermarks)
			}
		})
	}
}
