package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// countOp is a stateful operator: it counts the rows it passed and sums
// their first column, snapshots both as one operator-state entry, and
// records the checkpoint notifications it receives.
type countOp struct {
	base
	log      *listenLog
	name     string
	subtask  int
	count    int64
	sum      int64
	restored bool
}

// listenLog collects what countOps saw, per instance ("name/subtask").
type listenLog struct {
	mu       sync.Mutex
	complete map[string][]CheckpointID
	aborted  map[string][]CheckpointID
	restored map[string]string
}

func newListenLog() *listenLog {
	return &listenLog{complete: map[string][]CheckpointID{}, aborted: map[string][]CheckpointID{}, restored: map[string]string{}}
}

func (l *listenLog) op(name string) func() (Operator, error) {
	return func() (Operator, error) { return &countOp{log: l, name: name}, nil }
}

func (l *listenLog) completes() map[string][]CheckpointID {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]CheckpointID{}
	for k, v := range l.complete {
		out[k] = slices.Clone(v)
	}
	return out
}

func (o *countOp) key() string { return fmt.Sprintf("%s/%d", o.name, o.subtask) }

func (o *countOp) Open(ctx *OperatorContext) error {
	o.subtask = ctx.Subtask
	if o.restored {
		o.log.mu.Lock()
		o.log.restored[o.key()] = fmt.Sprintf("%d,%d", o.count, o.sum)
		o.log.mu.Unlock()
	}
	return nil
}

func (o *countOp) ProcessBatch(_ int, b *types.Batch, out Output) error {
	for _, r := range b.Rows {
		o.count++
		o.sum += r[0].Int()
	}
	return out.Push(b)
}

func (o *countOp) SnapshotState(_ CheckpointID, w StateWriter) error {
	return w.Put(KeyGroupNone, []byte("count"), fmt.Appendf(nil, "%d,%d", o.count, o.sum))
}

func (o *countOp) RestoreState(r StateReader) error {
	return r.Each(func(kg int, key, value []byte) error {
		if kg != KeyGroupNone || string(key) != "count" {
			return fmt.Errorf("unexpected entry %d:%s", kg, key)
		}
		o.restored = true
		_, err := fmt.Sscanf(string(value), "%d,%d", &o.count, &o.sum)
		return err
	})
}

func (o *countOp) NotifyCheckpointComplete(id CheckpointID) error {
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	o.log.complete[o.key()] = append(o.log.complete[o.key()], id)
	return nil
}

func (o *countOp) NotifyCheckpointAborted(id CheckpointID) {
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	o.log.aborted[o.key()] = append(o.log.aborted[o.key()], id)
}

// posReader is a CheckpointedReader over a fixed list of one-column rows;
// its position is the number of rows read. When allow is set, each Read
// waits for a grant of n rows (emitting up to n; a negative grant ends the
// input); otherwise it reads everything and ends. A
// stubborn reader ignores the read context (only the job's, from Open,
// stops it), so a checkpoint waits until the test lets Read return.
type posReader struct {
	data     []int64
	pos      int
	allow    chan int
	stubborn bool
	snapped  chan int64    // positions snapshotted, when set
	waiting  chan struct{} // a Read starts waiting for a grant, when set
	// interrupted, when set, hears when a stubborn Read's own context is
	// canceled (a control message reached the source) while it waits on.
	interrupted chan struct{}
	jobCtx      context.Context
}

func (r *posReader) Open(ctx context.Context) error { r.jobCtx = ctx; return nil }
func (r *posReader) NumSplits() int                 { return 1 }
func (r *posReader) Close() error                   { return nil }

func (r *posReader) Read(ctx context.Context, b *types.Batch) (ReadResult, error) {
	n := len(r.data) - r.pos
	if r.allow != nil {
		wait := ctx
		if r.stubborn {
			wait = r.jobCtx
		}
		if r.waiting != nil {
			r.waiting <- struct{}{}
		}
		var interrupt <-chan struct{}
		if r.stubborn && r.interrupted != nil {
			interrupt = ctx.Done()
		}
	await:
		for {
			select {
			case <-interrupt:
				if errors.Is(ctx.Err(), context.Canceled) {
					r.interrupted <- struct{}{}
				}
				interrupt = nil
			case g := <-r.allow:
				if g < 0 {
					if n > 0 {
						return ReadResult{}, fmt.Errorf("told to end with %d rows left", n)
					}
					return ReadResult{Split: -1, End: true}, nil
				}
				n = min(n, g)
				break await
			case <-wait.Done():
				return ReadResult{Split: -1}, nil
			}
		}
	}
	n = min(n, b.Cap())
	for range n {
		b.Append(types.Insert)[0] = types.Int(r.data[r.pos])
		r.pos++
	}
	split := 0
	if n == 0 {
		split = -1
	}
	return ReadResult{Split: split, End: r.allow == nil && r.pos == len(r.data)}, nil
}

func (r *posReader) SnapshotPosition() ([]byte, error) {
	if r.snapped != nil {
		r.snapped <- int64(r.pos)
	}
	return binary.BigEndian.AppendUint64(nil, uint64(r.pos)), nil
}

func (r *posReader) RestorePosition(pos []byte) error {
	if len(pos) != 8 {
		return fmt.Errorf("bad position %x", pos)
	}
	r.pos = int(binary.BigEndian.Uint64(pos))
	return nil
}

func posSource(id int, readers ...*posReader) *Vertex {
	return &Vertex{
		ID: id, Name: fmt.Sprintf("Source%d", id), Parallelism: len(readers),
		Source: &SourceSpec{Width: 1, NewReader: func(st, p int) (SourceReader, error) { return readers[st], nil }},
	}
}

func position(t *testing.T, img *memImage) int64 {
	t.Helper()
	if img == nil || len(img.pos) != 8 {
		t.Fatalf("no source position in %+v", img)
	}
	return int64(binary.BigEndian.Uint64(img.pos))
}

func seq(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}

// grant lets r emit n more rows (n < 0: end) of job j.
func grant(t *testing.T, j *Job, r *posReader, n int) {
	t.Helper()
	select {
	case r.allow <- n:
	case <-j.Done():
		t.Fatalf("job ended while the test fed it: %v", j.Wait())
	case <-time.After(10 * time.Second):
		t.Fatalf("reader does not read")
	}
}

// await waits for a signal on ch, failing the test after 10 s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for %s", what)
	}
}

func ckptConfig(store *memStore, mode CheckpointMode) *CheckpointConfig {
	return &CheckpointConfig{Store: store, Mode: mode, Timeout: time.Minute}
}

// triggerAsync runs TriggerCheckpoint in the background.
func triggerAsync(j *Job) <-chan triggerResult {
	ch := make(chan triggerResult, 1)
	go func() {
		id, err := j.TriggerCheckpoint(context.Background())
		ch <- triggerResult{id, err}
	}()
	return ch
}

func awaitTrigger(t *testing.T, ch <-chan triggerResult) CheckpointID {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("checkpoint: %v", r.err)
		}
		return r.id
	case <-time.After(10 * time.Second):
		t.Fatalf("checkpoint did not complete")
	}
	return 0
}

func TestBarrierAlignment(t *testing.T) {
	// Two sources feed one counting task. Source 1 takes checkpoint 1
	// after rows 1, 2 and then reads 1000; source 2 takes it after row 10
	// only once the test lets its blocked Read return, so 1000 reaches the
	// counting task before source 2's barrier. EXACTLY_ONCE holds 1000 back
	// (channel 1 is blocked after its barrier): the snapshot holds exactly
	// the rows before barrier 1 on each channel. AT_LEAST_ONCE does not
	// block: 1000 is counted before the snapshot.
	tests := []struct {
		name string
		mode CheckpointMode
		want string // count,sum in checkpoint 1
	}{
		{"EXACTLY_ONCE", ExactlyOnce, "3,13"},
		{"AT_LEAST_ONCE", AtLeastOnce, "4,1013"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			log := newListenLog()
			r0 := &posReader{data: []int64{1, 2, 1000}, allow: make(chan int), snapped: make(chan int64, 4)}
			r1 := &posReader{data: []int64{10}, allow: make(chan int), snapped: make(chan int64, 4), stubborn: true,
				waiting: make(chan struct{}, 8), interrupted: make(chan struct{}, 8)}
			cs := newCollectSink()
			g := &JobGraph{Vertices: []*Vertex{
				posSource(1, r0), posSource(2, r1),
				{ID: 3, Name: "Count", Parallelism: 1,
					Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}, {From: 2, Partitioner: Partitioner{Kind: Rebalance}}},
					Chain:  chain(log.op("count"), func() (Operator, error) { return &collectOp{cs: cs}, nil })},
			}}
			j, err := Start(context.Background(), g, Config{Checkpointing: ckptConfig(store, tc.mode),
				// No periodic watermark deadline on Read: source 2's context
				// then ends only when the trigger reaches it.
				AutoWatermarkInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Cancel()
			grant(t, j, r0, 2)
			grant(t, j, r1, 1)
			<-r1.waiting
			<-r1.waiting // source 2 is back in Read, which ignores the trigger
			done := triggerAsync(j)
			if pos := <-r0.snapped; pos != 2 {
				t.Fatalf("source 1 snapshotted position %d, want 2", pos)
			}
			grant(t, j, r0, 1) // 1000, after barrier 1 on channel 1
			grant(t, j, r0, 0) // returns only after 1000 was sent (buffer timeout 0)
			// The trigger may reach source 2 after source 1 snapshotted:
			// release its Read only once the trigger interrupted it, or it
			// reads again before serving the trigger and never snapshots.
			await(t, r1.interrupted, "the trigger to reach source 2")
			grant(t, j, r1, 0) // source 2's Read returns; it takes checkpoint 1
			if pos := <-r1.snapped; pos != 1 {
				t.Fatalf("source 2 snapshotted position %d, want 1", pos)
			}
			if id := awaitTrigger(t, done); id != 1 {
				t.Fatalf("checkpoint id %d, want 1", id)
			}
			if got := store.image(1, "v3-0", 0).entryStrings(); !slices.Equal(got, []string{"-1:count=" + tc.want}) {
				t.Errorf("count snapshot %v, want count,sum %s", got, tc.want)
			}
			if p := position(t, store.image(1, "v1-source", 0)); p != 2 {
				t.Errorf("source 1 position %d, want 2", p)
			}
			if p := position(t, store.image(1, "v2-source", 0)); p != 1 {
				t.Errorf("source 2 position %d, want 1", p)
			}
			grant(t, j, r0, -1)
			grant(t, j, r1, -1)
			if err := waitJob(t, j); err != nil {
				t.Fatal(err)
			}
			// The final checkpoint (2) covers every row.
			if got := store.image(2, "v3-0", 0).entryStrings(); !slices.Equal(got, []string{"-1:count=4,1013"}) {
				t.Errorf("final snapshot %v", got)
			}
			if got := log.completes()["count/0"]; !slices.Equal(got, []CheckpointID{1, 2}) {
				t.Errorf("notifications %v, want [1 2]", got)
			}
			if got, want := cs.all(), []string{"+I1", "+I10", "+I1000", "+I2"}; !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v", got, want)
			}
		})
	}
}

func TestCheckpointNotificationsInOrder(t *testing.T) {
	// Listeners in a source chain (2 subtasks) and behind a hash exchange
	// (3 subtasks): each sees checkpoints 1, 2, 3 and the final 4, in
	// order. OnComplete logs each completed checkpoint with one ack per
	// stateful instance: 2 readers + 2 + 3 counting operators.
	store := newMemStore()
	log := newListenLog()
	var mu sync.Mutex
	var logged []string
	cfg := ckptConfig(store, ExactlyOnce)
	cfg.OnComplete = func(id CheckpointID, acks []InstanceAck, sync, async time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf("%d:%d", id, len(acks)))
	}
	readers := []*posReader{{data: seq(1, 6), allow: make(chan int)}, {data: seq(7, 12), allow: make(chan int)}}
	src := posSource(1, readers...)
	src.Chain = chain(log.op("src"))
	g := &JobGraph{Vertices: []*Vertex{src, {
		ID: 2, Name: "Count", Parallelism: 3,
		Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
		Chain:  chain(log.op("down")),
	}}}
	j, err := Start(context.Background(), g, Config{Checkpointing: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	for want := CheckpointID(1); want <= 3; want++ {
		grant(t, j, readers[0], 2)
		grant(t, j, readers[1], 2)
		if id := awaitTrigger(t, triggerAsync(j)); id != want {
			t.Fatalf("checkpoint %d, want %d", id, want)
		}
	}
	grant(t, j, readers[0], -1)
	grant(t, j, readers[1], -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	got := log.completes()
	want := []CheckpointID{1, 2, 3, 4}
	for _, k := range []string{"src/0", "src/1", "down/0", "down/1", "down/2"} {
		if !slices.Equal(got[k], want) {
			t.Errorf("%s: notifications %v, want %v", k, got[k], want)
		}
	}
	if want := []string{"1:7", "2:7", "3:7", "4:7"}; !slices.Equal(logged, want) {
		t.Errorf("OnComplete %v, want %v", logged, want)
	}
	// Every row was counted exactly once by the final checkpoint.
	var count, sum int64
	for st := range 3 {
		var c, s int64
		fmt.Sscanf(strings.TrimPrefix(store.image(4, "v2-0", st).entryStrings()[0], "-1:count="), "%d,%d", &c, &s)
		count += c
		sum += s
	}
	if count != 12 || sum != 78 {
		t.Errorf("final state count %d sum %d, want 12 and 78", count, sum)
	}
	store.mu.Lock()
	opened, closed := len(store.opened), store.closed
	store.mu.Unlock()
	if opened != 7 || closed != 7 {
		t.Errorf("opened %d, closed %d instance states, want 7 and 7", opened, closed)
	}
}

// tpcLog is the outside world of tpcWriters: transactions by name.
type tpcLog struct {
	mu          sync.Mutex
	store       *memStore
	committed   map[string][]string // transaction → rows
	commitCalls map[string]int
	dropCommits bool // simulate a crash between completion and commit
	finished    int
	violations  []string
	// commits, when set, receives the name of every transaction committed,
	// so a test can wait for a commit instead of racing it.
	commits chan string
}

func newTPCLog(store *memStore) *tpcLog {
	return &tpcLog{store: store, committed: map[string][]string{}, commitCalls: map[string]int{}}
}

func (l *tpcLog) rows() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, rs := range l.committed {
		out = append(out, rs...)
	}
	slices.Sort(out)
	return out
}

func (l *tpcLog) sink(id, parallelism int, inputs ...Input) *Vertex {
	return &Vertex{ID: id, Name: "Sink", Parallelism: parallelism, Inputs: inputs,
		Chain: chain(func() (Operator, error) {
			// The writer is created at Open (as the planner does): restored
			// committables are committed then.
			return NewSinkOperatorFunc(func(subtask, _ int) (SinkWriter, error) {
				return &tpcWriter{log: l, subtask: subtask}, nil
			}), nil
		})}
}

// tpcWriter writes rows into a transaction per checkpoint; committables
// are "<transaction>|row,row,…".
type tpcWriter struct {
	log     *tpcLog
	subtask int
	open    []string
}

func (w *tpcWriter) Open(context.Context) error { return nil }
func (w *tpcWriter) Close() error               { return nil }
func (w *tpcWriter) Write(_ context.Context, b *types.Batch) error {
	for _, r := range b.Rows {
		w.open = append(w.open, rowString(r))
	}
	return nil
}

func (w *tpcWriter) Finish(context.Context) error {
	w.log.mu.Lock()
	defer w.log.mu.Unlock()
	w.log.finished++
	if len(w.open) > 0 {
		w.log.violations = append(w.log.violations, fmt.Sprintf("finish with uncommitted rows %v", w.open))
	}
	return nil
}

func (w *tpcWriter) PrepareCommit(id CheckpointID) ([]Committable, error) {
	if len(w.open) == 0 {
		return nil, nil
	}
	// A writer knows its subtask from the rows here: key v's subtask is
	// not needed, the checkpoint ID and rows name the transaction.
	c := Committable(fmt.Sprintf("txn-%d-%s|%s", id, w.open[0], strings.Join(w.open, ",")))
	w.open = nil
	return []Committable{c}, nil
}

func (w *tpcWriter) Commit(cs []Committable) error {
	l := w.log
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cs {
		name, rows, _ := strings.Cut(string(c), "|")
		var id CheckpointID
		fmt.Sscanf(name, "txn-%d-", &id)
		if !l.store.completedSince(id) {
			l.violations = append(l.violations, fmt.Sprintf("%s committed before a checkpoint ≥ %d completed", name, id))
		}
		l.commitCalls[name]++
		if l.dropCommits {
			continue
		}
		if _, ok := l.committed[name]; !ok {
			l.committed[name] = strings.Split(rows, ",")
		}
		if l.commits != nil {
			l.commits <- name
		}
	}
	return nil
}

func (w *tpcWriter) Abort([]Committable) error { return nil }

func TestTwoPhaseCommitSink(t *testing.T) {
	// Source → [Sort at Finish → 2PC sink]: checkpoint 1 commits rows 3, 1;
	// the rest only reaches the sink through the sort's Finish, which runs
	// before the final checkpoint's barrier, so the final checkpoint (2)
	// commits it before the job ends. (The sort keeps keyed state.)
	store := newMemStore().withKeyed(image.Hashmap, t.TempDir())
	tl := newTPCLog(store)
	tl.commits = make(chan string, 8)
	r := &posReader{data: []int64{3, 1, 9, 7}, allow: make(chan int)}
	g := &JobGraph{Vertices: []*Vertex{
		posSource(1, r),
		{ID: 2, Name: "Sink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
			Chain: chain(opOf(NewSinkOperator(&tpcWriter{log: tl})))},
		{ID: 3, Name: "SortedSink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
			Chain: chain(func() (Operator, error) { return NewSort([]SortKey{{Col: 0}}, 0, -1), nil },
				func() (Operator, error) { return NewSinkOperator(&tpcWriter{log: tl}), nil })},
	}}
	j, err := Start(context.Background(), g, Config{Checkpointing: ckptConfig(store, ExactlyOnce)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	grant(t, j, r, 2)
	if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
		t.Fatalf("checkpoint %d", id)
	}
	// The notification of checkpoint 1 reaches the sink asynchronously;
	// until it commits, checkpoint 1's committable is still the sink's
	// state and would be in checkpoint 2 too. Wait for it so that the
	// final checkpoint's contents are known.
	select {
	case name := <-tl.commits:
		if name != "txn-1-3" {
			t.Fatalf("first commit %s, want txn-1-3", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("checkpoint 1 was not committed")
	}
	grant(t, j, r, 2)
	grant(t, j, r, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.violations) > 0 {
		t.Fatalf("violations: %v", tl.violations)
	}
	want := map[string][]string{
		"txn-1-3": {"3", "1"},           // the plain sink at checkpoint 1
		"txn-2-9": {"9", "7"},           // the plain sink's tail, final checkpoint
		"txn-2-1": {"1", "3", "7", "9"}, // the sorted sink: everything at Finish
	}
	if len(tl.committed) != len(want) {
		t.Fatalf("committed %v, want %v", tl.committed, want)
	}
	for name, rows := range want {
		if !slices.Equal(tl.committed[name], rows) {
			t.Errorf("%s: committed %v, want %v", name, tl.committed[name], rows)
		}
	}
	if tl.finished != 2 {
		t.Errorf("%d writers finished, want 2", tl.finished)
	}
	// The committables are part of the checkpoint until committed: the
	// final checkpoint holds the tail's, checkpoint 1 the first ones.
	if got := store.image(1, "v2-0", 0).entryStrings(); !slices.Equal(got, []string{"-1:committable/1/0=txn-1-3|3,1"}) {
		t.Errorf("checkpoint 1 sink state %v", got)
	}
	if got := store.image(2, "v2-0", 0).entryStrings(); !slices.Equal(got, []string{"-1:committable/2/0=txn-2-9|9,7"}) {
		t.Errorf("checkpoint 2 sink state %v", got)
	}
}

func TestRestore(t *testing.T) {
	// Run 1 reads rows 1…4, takes checkpoint 1, reads 5…7, and fails
	// before it commits checkpoint 1's transactions (commits are dropped,
	// as if the process died right after the checkpoint completed).
	// Run 2 restores checkpoint 1: the reader resumes at position 4, the
	// counting operators get their counts back, the sink commits
	// checkpoint 1's transactions again, and the output is every row
	// exactly once. Run 3 restores checkpoint 1 once more, with no input
	// left after it: the recovery commit repeats (idempotently) and the
	// output stays the same.
	data := seq(1, 10)
	store := newMemStore()
	tl := newTPCLog(store)
	tl.dropCommits = true
	log1 := newListenLog()
	graph := func(r *posReader, log *listenLog) *JobGraph {
		return &JobGraph{Vertices: []*Vertex{
			posSource(1, r),
			{ID: 2, Name: "Count", Parallelism: 2, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
				Chain: chain(log.op("count"))},
			tl.sink(3, 1, Input{From: 2, Partitioner: Partitioner{Kind: Global}}),
		}}
	}
	r1 := &posReader{data: data, allow: make(chan int)}
	j, err := Start(context.Background(), graph(r1, log1), Config{Checkpointing: ckptConfig(store, ExactlyOnce)})
	if err != nil {
		t.Fatal(err)
	}
	grant(t, j, r1, 4)
	if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
		t.Fatalf("checkpoint %d", id)
	}
	grant(t, j, r1, 3)
	j.Cancel()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatalf("run 1: %v", err)
	}
	if got := tl.rows(); len(got) != 0 {
		t.Fatalf("run 1 committed %v", got)
	}
	tl.mu.Lock()
	tl.dropCommits = false
	recoveryCommits := func() (n int) {
		for name, calls := range tl.commitCalls {
			if strings.HasPrefix(name, "txn-1-") {
				n += calls
			}
		}
		return n
	}
	before := recoveryCommits()
	tl.mu.Unlock()

	for attempt := 2; attempt <= 3; attempt++ {
		log := newListenLog()
		rs := store.restoredFrom(1)
		tl.mu.Lock()
		tl.store = rs
		tl.mu.Unlock()
		cfg := ckptConfig(rs, ExactlyOnce)
		cfg.RestoreID = 1
		r := &posReader{data: data}
		if attempt == 3 {
			r.data = data[:4]
		}
		if err := run(t, graph(r, log), Config{Checkpointing: cfg}); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		// Checkpoint 1 held counts of rows 1…4 split by key over two
		// subtasks: together 4 rows summing to 10.
		var count, sum int64
		for _, v := range log.restored {
			var c, s int64
			fmt.Sscanf(v, "%d,%d", &c, &s)
			count += c
			sum += s
		}
		if count != 4 || sum != 10 {
			t.Errorf("attempt %d: restored count %d sum %d (%v), want 4 and 10", attempt, count, sum, log.restored)
		}
		if got := rs.completedIDs(); !slices.Equal(got, []CheckpointID{2}) {
			t.Errorf("attempt %d: completed %v, want the final checkpoint 2 after the restored 1", attempt, got)
		}
		tl.mu.Lock()
		if n := recoveryCommits() - before; n != attempt-1 {
			t.Errorf("after attempt %d: checkpoint 1's transaction committed %d times on recovery, want %d", attempt, n, attempt-1)
		}
		tl.mu.Unlock()
		if got, want := tl.rows(), []string{"1", "10", "2", "3", "4", "5", "6", "7", "8", "9"}; !slices.Equal(got, want) {
			t.Errorf("attempt %d: committed %v, want %v", attempt, got, want)
		}
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.violations) > 0 {
		t.Fatalf("violations: %v", tl.violations)
	}
	var txns []string
	for name := range tl.committed {
		txns = append(txns, name[:len("txn-1")])
	}
	slices.Sort(txns)
	if want := []string{"txn-1", "txn-2"}; !slices.Equal(txns, want) {
		t.Errorf("transactions %v, want one of checkpoint 1 and one of the final checkpoint 2", txns)
	}
}

func TestCheckpointTimeoutExceedsTolerableFailures(t *testing.T) {
	// Uploads never finish: every checkpoint expires. Two failures are
	// tolerated, the third fails the job.
	store := newMemStore()
	store.persistHook = func(ctx context.Context, _ CheckpointID, _ instKey) error {
		<-ctx.Done()
		return ctx.Err()
	}
	log := newListenLog()
	r := &posReader{data: seq(1, 3), allow: make(chan int)}
	src := posSource(1, r)
	src.Chain = chain(log.op("count"))
	cfg := ckptConfig(store, ExactlyOnce)
	cfg.Interval = time.Millisecond
	cfg.Timeout = 5 * time.Millisecond
	cfg.TolerableFailures = 2
	err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{Checkpointing: cfg})
	if !errors.Is(err, ErrTolerableFailuresExceeded) {
		t.Fatalf("got %v, want the tolerable failure threshold", err)
	}
	want := "Exceeded checkpoint tolerable failure threshold. The latest checkpoint 3 failed: Checkpoint expired before completing."
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if got := store.abortedIDs(); !slices.Equal(got[:3], []CheckpointID{1, 2, 3}) {
		t.Errorf("aborted %v, want 1, 2, 3 first", got)
	}
	if got := store.completedIDs(); len(got) != 0 {
		t.Errorf("completed %v", got)
	}
}

func TestCheckpointFailuresAbort(t *testing.T) {
	// A failed upload (checkpoint 1) and a failed Complete (checkpoint 2)
	// abort their checkpoints; with failures tolerated the job goes on,
	// checkpoint 3 completes and resets the count, and listeners hear of
	// every abort and completion in order.
	store := newMemStore()
	store.persistHook = func(_ context.Context, id CheckpointID, _ instKey) error {
		if id == 1 {
			return errors.New("disk full")
		}
		return nil
	}
	store.completeHook = func(id CheckpointID) error {
		if id == 2 {
			return errors.New("metadata write failed")
		}
		return nil
	}
	log := newListenLog()
	r := &posReader{data: seq(1, 3), allow: make(chan int)}
	src := posSource(1, r)
	src.Chain = chain(log.op("count"))
	cfg := ckptConfig(store, ExactlyOnce)
	cfg.TolerableFailures = 2
	var jobLog lockedLines
	j, err := Start(context.Background(), &JobGraph{Name: "tolerant", Vertices: []*Vertex{src}}, Config{Checkpointing: cfg, Log: jobLog.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	wantErrs := []string{
		"checkpoint 1 aborted: Source1 (1/1): persist state of v1-source: disk full",
		"checkpoint 2 aborted: completing the checkpoint failed: metadata write failed",
	}
	for _, want := range wantErrs {
		if _, err := j.TriggerCheckpoint(context.Background()); err == nil || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
	}
	if id := awaitTrigger(t, triggerAsync(j)); id != 3 {
		t.Fatalf("checkpoint %d, want 3", id)
	}
	grant(t, j, r, 3)
	grant(t, j, r, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if got := log.aborted["count/0"]; !slices.Equal(got, []CheckpointID{1, 2}) {
		t.Errorf("aborted notifications %v", got)
	}
	if got := log.complete["count/0"]; !slices.Equal(got, []CheckpointID{3, 4}) {
		t.Errorf("complete notifications %v", got)
	}
	if got := store.abortedIDs(); !slices.Equal(got, []CheckpointID{1, 2}) {
		t.Errorf("store aborted %v", got)
	}
	// Tolerated failures are not silent: each is in the job's log with its
	// cause (issue 9 item 5).
	wantLog := "[WARN] Checkpoint 1 of job 'tolerant' failed (1 consecutive failures, 2 tolerated by 'execution.checkpointing.tolerable-failed-checkpoints'): Source1 (1/1): persist state of v1-source: disk full\n" +
		"[WARN] Checkpoint 2 of job 'tolerant' failed (2 consecutive failures, 2 tolerated by 'execution.checkpointing.tolerable-failed-checkpoints'): completing the checkpoint failed: metadata write failed"
	if got := jobLog.String(); got != wantLog {
		t.Errorf("job log:\n%s\nwant:\n%s", got, wantLog)
	}
}

func TestFinalCheckpointRetry(t *testing.T) {
	// The final checkpoint's upload fails once: the coordinator retries it
	// as checkpoint 2 directly at every task, which commits the tail.
	store := newMemStore()
	store.persistHook = func(_ context.Context, id CheckpointID, _ instKey) error {
		if id == 1 {
			return errors.New("flaky storage")
		}
		return nil
	}
	tl := newTPCLog(store)
	cfg := ckptConfig(store, ExactlyOnce)
	cfg.TolerableFailures = 1
	g := &JobGraph{Vertices: []*Vertex{
		posSource(1, &posReader{data: seq(1, 3)}),
		tl.sink(2, 2, Input{From: 1, Partitioner: Partitioner{Kind: Rebalance}}),
	}}
	if err := run(t, g, Config{Checkpointing: cfg}); err != nil {
		t.Fatal(err)
	}
	if got := store.completedIDs(); !slices.Equal(got, []CheckpointID{2}) {
		t.Errorf("completed %v, want [2]", got)
	}
	if got, want := tl.rows(), []string{"1", "2", "3"}; !slices.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.violations) > 0 || tl.finished != 2 {
		t.Errorf("violations %v, %d writers finished", tl.violations, tl.finished)
	}
}

func TestPeriodicCheckpoints(t *testing.T) {
	// With a 1 ms interval checkpoints complete on their own while the
	// job runs; each keeps its IDs in order from NextID.
	store := newMemStore()
	r := &posReader{data: seq(1, 3), allow: make(chan int)}
	cfg := ckptConfig(store, ExactlyOnce)
	cfg.Interval = time.Millisecond
	cfg.NextID = 7
	completed := make(chan CheckpointID, 1000)
	cfg.OnComplete = func(id CheckpointID, _ []InstanceAck, _, _ time.Duration) {
		select {
		case completed <- id:
		default:
		}
	}
	// A sink whose writer is created at Open and does not commit in two
	// phases: it keeps (empty) state and finishes at end of input.
	var written atomic.Int64
	lazy := &Vertex{ID: 2, Name: "Sink", Parallelism: 1, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Forward}}},
		Chain: chain(func() (Operator, error) {
			return NewSinkOperatorFunc(func(int, int) (SinkWriter, error) { return countWriter{&written}, nil }), nil
		})}
	j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{posSource(1, r), lazy}}, Config{Checkpointing: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	for want := CheckpointID(7); want < 10; want++ {
		select {
		case id := <-completed:
			if id != want {
				t.Fatalf("completed %d, want %d", id, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no periodic checkpoint")
		}
	}
	grant(t, j, r, 3)
	grant(t, j, r, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	ids := store.completedIDs()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("completed out of order: %v", ids)
		}
	}
	if p := position(t, store.image(ids[len(ids)-1], "v1-source", 0)); p != 3 {
		t.Errorf("final position %d, want 3", p)
	}
	if n := written.Load(); n != 3 {
		t.Errorf("sink wrote %d rows, want 3", n)
	}
	if got := store.image(ids[len(ids)-1], "v2-0", 0).entryStrings(); len(got) != 0 {
		t.Errorf("a sink without two-phase commit has state %v", got)
	}
}

func TestSupersededAlignment(t *testing.T) {
	// A task aligning checkpoint 1 (channel 0 delivered it, channel 1 did
	// not) sees barrier 2 on channel 1: it declines 1, releases channel 0's
	// held rows, and aligns 2 instead. Driven directly on a task.
	coord := &coordinator{inbox: newMailbox[coordMsg]()}
	free := make(chan *types.Batch, 4)
	tk := &task{metrics: []*OperatorMetrics{{}},
		v: &Vertex{ID: 9, Name: "T", Parallelism: 1}, ctx: context.Background(),
		cfg:   Config{Checkpointing: &CheckpointConfig{Mode: ExactlyOnce}},
		coord: coord, send: &sender{ctx: context.Background()},
		inputs: []inChannel{{free: free, wm: MinWatermark, aligned: true}, {free: free, wm: MinWatermark, aligned: true}},
		valve:  valve{last: MinWatermark},
	}
	rc := newRecorder(0)
	tk.v.Chain = chain(rc.op())
	if err := tk.openOperators(); err != nil {
		t.Fatal(err)
	}
	tk.cp.open = 2
	batch := func(v int64) element {
		b := types.NewBatch(1, 1)
		b.AppendRow(types.Insert, ints(v))
		return element{kind: elemBatch, batch: b}
	}
	on := func(ch int32, e element) {
		t.Helper()
		e.channel = ch
		if err := tk.handle(e); err != nil {
			t.Fatal(err)
		}
	}
	on(0, element{kind: elemBarrier, ckpt: 1})
	on(0, batch(5)) // held: channel 0 is blocked
	if got := rc.strings(-1); len(got) != 0 {
		t.Fatalf("blocked channel delivered %v", got)
	}
	on(1, element{kind: elemBarrier, ckpt: 2})
	if len(tk.cp.ready) != 1 || tk.inputs[0].blocked || !tk.inputs[1].blocked {
		t.Fatalf("after supersede: ready %d, blocked %v %v", len(tk.cp.ready), tk.inputs[0].blocked, tk.inputs[1].blocked)
	}
	e := tk.cp.ready[0]
	tk.cp.ready = tk.cp.ready[1:]
	on(0, e)
	on(1, batch(6))                            // held behind barrier 2
	on(0, element{kind: elemBarrier, ckpt: 1}) // a late barrier of the declined checkpoint: ignored
	on(0, element{kind: elemBarrier, ckpt: 2})
	if got, want := rc.strings(-1), []string{"+I5"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if len(tk.cp.ready) != 1 || tk.cp.lastBarrier != 2 {
		t.Fatalf("ready %d, last barrier %d", len(tk.cp.ready), tk.cp.lastBarrier)
	}
	msgs := coord.inbox.take(nil)
	if len(msgs) != 2 || msgs[0].id != 1 || msgs[0].err == nil || msgs[1].id != 2 || msgs[1].err != nil {
		t.Fatalf("coordinator got %+v, want a decline of 1 and an ack of 2", msgs)
	}
	if want := "T (1/1): checkpoint 1 was superseded by checkpoint 2 before its barriers aligned"; msgs[0].err.Error() != want {
		t.Errorf("decline %q, want %q", msgs[0].err, want)
	}
}

func TestCheckpointingNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		// Succeeds with periodic checkpoints.
		store := newMemStore()
		cfg := ckptConfig(store, AtLeastOnce)
		cfg.Interval = time.Millisecond
		g := &JobGraph{Vertices: []*Vertex{
			posSource(1, &posReader{data: seq(1, 100)}, &posReader{data: seq(101, 200)}),
			newTPCLog(store).sink(2, 3, Input{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}),
		}}
		if err := run(t, g, Config{Checkpointing: cfg}); err != nil {
			t.Fatal(err)
		}
		// Canceled while an upload blocks.
		store = newMemStore()
		uploading := make(chan struct{}, 10)
		store.persistHook = func(ctx context.Context, _ CheckpointID, _ instKey) error {
			uploading <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		r := &posReader{data: seq(1, 3), allow: make(chan int)}
		j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{posSource(1, r)}}, Config{Checkpointing: ckptConfig(store, ExactlyOnce)})
		if err != nil {
			t.Fatal(err)
		}
		done := triggerAsync(j)
		<-uploading
		j.Cancel()
		if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if r := <-done; r.err == nil {
			t.Fatalf("checkpoint of a canceled job completed")
		}
		// Fails in a snapshot.
		src := posSource(1, &posReader{data: seq(1, 3)})
		src.Chain = chain(opOf(&failingSnapshot{}))
		if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{Checkpointing: ckptConfig(newMemStore(), ExactlyOnce)}); !errors.Is(err, errBoom) {
			t.Fatalf("got %v, want boom", err)
		}
	}
	awaitGoroutines(t, before)
}

// failingSnapshot fails every snapshot.
type failingSnapshot struct{ identity }

func (failingSnapshot) SnapshotState(CheckpointID, StateWriter) error { return errBoom }
func (failingSnapshot) RestoreState(StateReader) error                { return nil }

func TestCheckpointConfigValidation(t *testing.T) {
	src := posSource(1, &posReader{})
	tests := []struct {
		cfg  CheckpointConfig
		want string
	}{
		{CheckpointConfig{}, "checkpointing needs a checkpoint store"},
		{CheckpointConfig{Store: newMemStore(), Interval: -1}, "execution.checkpointing.interval must not be negative"},
		{CheckpointConfig{Store: newMemStore(), TolerableFailures: -1}, "execution.checkpointing.tolerable-failed-checkpoints must not be negative"},
		{CheckpointConfig{Store: newMemStore(), Mode: 7}, "execution.checkpointing.mode: unknown mode 7, want EXACTLY_ONCE or AT_LEAST_ONCE"},
		{CheckpointConfig{Store: newMemStore(), RestoreID: 5, NextID: 5}, "the next checkpoint ID 5 must come after the restored checkpoint 5"},
	}
	for _, tc := range tests {
		cfg := tc.cfg
		_, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{src}}, Config{Checkpointing: &cfg})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
	j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{posSource(1, &posReader{})}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.TriggerCheckpoint(context.Background()); err == nil || !strings.Contains(err.Error(), "not enabled") {
		t.Errorf("TriggerCheckpoint without checkpointing: %v", err)
	}
	_ = waitJob(t, j)
}

// completeReader is a posReader that records the positions the runtime hands
// it when checkpoints complete.
type completeReader struct {
	posReader
	mu       sync.Mutex
	notified []string // "checkpoint:position"
}

func (r *completeReader) NotifyPositionComplete(id CheckpointID, pos []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notified = append(r.notified, fmt.Sprintf("%d:%d", id, binary.BigEndian.Uint64(pos)))
	return nil
}

func TestReaderNotifiedOfCompletedPositions(t *testing.T) {
	// Positions 2 and 5 are taken at checkpoints 1 and 2; the final
	// checkpoint 3 holds position 6 (every row). Each completion hands the
	// reader the position its own checkpoint took, not the reader's current one.
	r := &completeReader{posReader: posReader{data: seq(1, 6), allow: make(chan int)}}
	src := &Vertex{ID: 1, Name: "Source", Parallelism: 1,
		Source: &SourceSpec{Width: 1, NewReader: func(int, int) (SourceReader, error) { return r, nil }}}
	rc := newRecorder(100)
	src.Chain = chain(rc.op())
	j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{src}}, Config{Checkpointing: ckptConfig(newMemStore(), ExactlyOnce)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	grant(t, j, &r.posReader, 2)
	awaitTrigger(t, triggerAsync(j))
	grant(t, j, &r.posReader, 3)
	awaitTrigger(t, triggerAsync(j))
	grant(t, j, &r.posReader, 1)
	grant(t, j, &r.posReader, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if want := []string{"1:2", "2:5", "3:6"}; !slices.Equal(r.notified, want) {
		t.Fatalf("notified %v, want %v", r.notified, want)
	}
}

// undeclared keeps a count but neither checkpoints it nor declares that it
// has no state.
type undeclared struct {
	base
	n int
}

func (u *undeclared) ProcessBatch(_ int, b *types.Batch, out Output) error {
	u.n += b.Len()
	return out.Push(b)
}

// TestUndeclaredStateRefused: with checkpointing on, an operator that is
// neither a CheckpointedOperator nor a StatelessOperator fails the job when
// it starts, naming the operator, and so does a source reader that is not a
// CheckpointedReader; without checkpointing they run.
func TestUndeclaredStateRefused(t *testing.T) {
	src := posSource(1, &posReader{data: seq(1, 3)})
	src.Chain = chain(opOf(&undeclared{}))
	src.ChainNames = []string{"Counter"}
	err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{Checkpointing: ckptConfig(newMemStore(), ExactlyOnce)})
	if err == nil || !strings.Contains(err.Error(), "operator Counter (*exec.undeclared) neither keeps keyed state (exec.KeyedOperator) nor takes part in checkpoints") {
		t.Fatalf("got %v, want the refusal of the undeclared operator", err)
	}
	src = posSource(1, &posReader{data: seq(1, 3)})
	src.Chain = chain(opOf(&undeclared{}))
	if err := run(t, &JobGraph{Vertices: []*Vertex{src}}, Config{}); err != nil {
		t.Fatalf("without checkpointing: %v", err)
	}
	// A reader that records no position would read everything again after
	// a restore.
	plain := sliceSource(1, 1, 1, []step{rowsStep(0, ints(1))})
	err = run(t, &JobGraph{Vertices: []*Vertex{plain}}, Config{Checkpointing: ckptConfig(newMemStore(), ExactlyOnce)})
	if err == nil || !strings.Contains(err.Error(), "source reader *exec.sliceReader does not record its position in checkpoints") {
		t.Fatalf("got %v, want the refusal of the reader without a position", err)
	}
}

// holdReader is a posReader that cannot be checkpointed before it read
// `until` rows (a CDC source reading its snapshot).
type holdReader struct {
	*posReader
	until int
}

func (r *holdReader) HoldCheckpoint() string {
	if r.pos < r.until {
		return fmt.Sprintf("reading row %d of the snapshot", r.pos+1)
	}
	return ""
}

// TestCheckpointHeldByReader: a trigger that reaches a source whose reader
// holds checkpoints waits, logged with the reader's reason, and is taken
// between the reads once the reader lets it: at the position it then has.
func TestCheckpointHeldByReader(t *testing.T) {
	store := newMemStore()
	r := &holdReader{posReader: &posReader{data: []int64{1, 2, 3}, allow: make(chan int), snapped: make(chan int64, 4)}, until: 2}
	held := make(chan string, 4)
	cs := newCollectSink()
	g := &JobGraph{Vertices: []*Vertex{
		{ID: 1, Name: "Source1", Parallelism: 1,
			Source: &SourceSpec{Width: 1, NewReader: func(int, int) (SourceReader, error) { return r, nil }}},
		{ID: 2, Name: "Collect", Parallelism: 1, Inputs: []Input{{From: 1}},
			Chain: chain(func() (Operator, error) { return &collectOp{cs: cs}, nil })},
	}}
	logf := func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); strings.Contains(line, "is held") {
			held <- line
		}
	}
	j, err := Start(context.Background(), g, Config{Checkpointing: ckptConfig(store, ExactlyOnce), Log: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Cancel()
	grant(t, j, r.posReader, 1)
	done := triggerAsync(j)
	select {
	case line := <-held:
		if !strings.Contains(line, "Checkpoint 1 of job") || !strings.Contains(line, "reading row 2 of the snapshot") {
			t.Errorf("log line %q, want checkpoint 1 and the reader's reason", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the trigger was not held")
	}
	grant(t, j, r.posReader, 1) // row 2: the reader no longer holds
	if pos := <-r.snapped; pos != 2 {
		t.Fatalf("position snapshotted %d, want 2 (after the held rows)", pos)
	}
	if id := awaitTrigger(t, done); id != 1 {
		t.Fatalf("checkpoint id %d, want 1", id)
	}
	if p := position(t, store.image(1, "v1-source", 0)); p != 2 {
		t.Errorf("position in checkpoint 1: %d, want 2", p)
	}
	grant(t, j, r.posReader, 1)
	grant(t, j, r.posReader, -1)
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	if got, want := cs.all(), []string{"+I1", "+I2", "+I3"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}
