package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// keyedCount is a small KeyedOperator: a running count per key (column 0)
// in a value state, emitting (key, count) for every row it is given.
type keyedCount struct {
	base
	log      *keyedLog
	b        *kv.Backend
	count    *kv.ValueState[int64]
	key      []byte
	out      *types.Batch
	prepared int
}

// keyedLog records what the keyedCount instances of a job saw of their
// backends.
type keyedLog struct {
	mu sync.Mutex
	// opened has one line per OpenKeyedState: kind, budget, key groups
	// and the number of entries the backend held then.
	opened []string
	// onOpen, when set, runs in OpenKeyedState.
	onOpen func(b *kv.Backend)
}

var keyCols0 = []int{0}

func (l *keyedLog) op() func() (Operator, error) {
	return func() (Operator, error) { return &keyedCount{log: l}, nil }
}

func (o *keyedCount) OpenKeyedState(b *kv.Backend) error {
	o.b = b
	var err error
	if o.count, err = kv.NewValueState(b, "count", kv.Int64{}, kv.Options{}); err != nil {
		return err
	}
	o.log.mu.Lock()
	defer o.log.mu.Unlock()
	kgs := b.KeyGroups()
	o.log.opened = append(o.log.opened, fmt.Sprintf("%s budget=%d kgs=[%d,%d] entries=%d", b.Kind(), b.MemoryBudget(), kgs.First, kgs.Last, b.Size().Entries))
	if o.log.onOpen != nil {
		o.log.onOpen(b)
	}
	return nil
}

func (o *keyedCount) PrepareSnapshot(CheckpointID) error { o.prepared++; return nil }

func (o *keyedCount) ProcessBatch(_ int, b *types.Batch, out Output) error {
	if o.out == nil {
		o.out = types.NewBatch(2, max(b.Cap(), 1))
	}
	o.out.Reset()
	for _, r := range b.Rows {
		o.key = binary.BigEndian.AppendUint64(o.key[:0], uint64(r[0].Int()))
		if err := o.b.SetCurrentKey(types.HashColumns(r, keyCols0), o.key); err != nil {
			return err
		}
		n, _, err := o.count.Get(nil)
		if err != nil {
			return err
		}
		n++
		if err := o.count.Put(nil, n); err != nil {
			return err
		}
		o.out.AppendRow(types.Insert, types.Row{r[0], types.Int(n)})
	}
	return out.Push(o.out)
}

// keyedData is the test input: keys 0…5, each ten times, interleaved.
func keyedData() []int64 {
	var d []int64
	for i := range int64(60) {
		d = append(d, (i*7)%6)
	}
	return d
}

// runningCounts is what a per-key running count emits for data[from:]
// after counting data[:from]: "key,count" per row, sorted.
func runningCounts(data []int64, from int) []string {
	seen := map[int64]int64{}
	var out []string
	for i, k := range data {
		seen[k]++
		if i >= from {
			out = append(out, fmt.Sprintf("+I%d,%d", k, seen[k]))
		}
	}
	slices.Sort(out)
	return out
}

func keyedGraph(r *posReader, par int, l *keyedLog, cs *collectSink) *JobGraph {
	return &JobGraph{Vertices: []*Vertex{
		posSource(1, r),
		{ID: 2, Name: "KeyedCount", Parallelism: par, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
			Chain: chain(l.op())},
		cs.vertex(3, 1, Input{From: 2, Partitioner: Partitioner{Kind: Global}}),
	}}
}

// TestKeyedOperatorRestore: a keyed operator's backend is opened by the
// runtime (one per subtask, over its key groups), checkpointed and restored:
// a job that reads 24 rows, takes checkpoint 1, reads 12 more and dies is
// restored from checkpoint 1 and goes on counting from the counts of the
// first 24 rows, on both backends and at parallelism 1 and 4.
func TestKeyedOperatorRestore(t *testing.T) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		for _, par := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/p%d", kind, par), func(t *testing.T) {
				testKeyedOperatorRestore(t, kind, par)
			})
		}
	}
}

func testKeyedOperatorRestore(t *testing.T, kind image.Kind, par int) {
	data := keyedData()
	store := newMemStore().withKeyed(kind, t.TempDir())
	cfg := Config{KeyedState: KeyedStateConfig{Kind: kind}, Checkpointing: ckptConfig(store, ExactlyOnce)}
	l1, cs1 := &keyedLog{}, newCollectSink()
	r1 := &posReader{data: data, allow: make(chan int)}
	j, err := Start(context.Background(), keyedGraph(r1, par, l1, cs1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	grant(t, j, r1, 24)
	if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
		t.Fatalf("checkpoint %d", id)
	}
	grant(t, j, r1, 12)
	j.Cancel()
	if err := waitJob(t, j); !errors.Is(err, context.Canceled) {
		t.Fatalf("run 1: %v", err)
	}
	// Every keyed instance was opened empty, with the backend of the job
	// and its own key groups (128 split in par ranges).
	wantOpened := func(entries []int64) []string {
		var out []string
		for st := range par {
			kgs := keyGroupRange(st, par, 128)
			budget := int64(0)
			if kind == image.RocksDB {
				budget = DefaultManagedMemory / int64(par)
			}
			out = append(out, fmt.Sprintf("%s budget=%d kgs=[%d,%d] entries=%d", kind, budget, kgs.First, kgs.Last, entries[st]))
		}
		slices.Sort(out)
		return out
	}
	opened := slices.Sorted(slices.Values(l1.opened))
	if want := wantOpened(make([]int64, par)); !slices.Equal(opened, want) {
		t.Errorf("run 1 opened %v, want %v", opened, want)
	}
	got := store.instances(1)
	var keyedInsts []string
	entries := make([]int64, par)
	for _, in := range got {
		if strings.HasPrefix(in, "v2-0/") {
			keyedInsts = append(keyedInsts, in)
			var st int
			fmt.Sscanf(in, "v2-0/%d", &st)
			img := store.image(1, "v2-0", st)
			if img.keyed == nil || img.keyed.kind != kind {
				t.Fatalf("checkpoint 1 of %s: not a %s backend image: %+v", in, kind, img)
			}
			// One count entry per key the subtask owns.
			entries[st] = int64(len(img.keyed.entries))
		}
	}
	if len(keyedInsts) != par {
		t.Fatalf("checkpoint 1 holds %v, want %d keyed instances", got, par)
	}
	var total int64
	for _, n := range entries {
		total += n
	}
	if total != 6 {
		t.Errorf("checkpoint 1 holds %d count entries (%v), want one per key: 6", total, entries)
	}
	if store.keyedOpen != 0 {
		t.Errorf("run 1 left %d keyed backends open", store.keyedOpen)
	}

	// Run 2 restores checkpoint 1: the reader resumes at row 24 and every
	// count goes on from what the first 24 rows gave.
	rs := store.restoredFrom(1)
	cfg.Checkpointing = ckptConfig(rs, ExactlyOnce)
	cfg.Checkpointing.RestoreID = 1
	l2, cs2 := &keyedLog{}, newCollectSink()
	if err := run(t, keyedGraph(&posReader{data: data}, par, l2, cs2), cfg); err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if got, want := cs2.all(), runningCounts(data, 24); !slices.Equal(got, want) {
		t.Errorf("restored run emitted\n%v\nwant\n%v", got, want)
	}
	if hashmapExact := kind == image.Hashmap; hashmapExact {
		// Size().Entries is exact for hashmap: each restored backend held
		// what checkpoint 1 had for its key groups.
		if opened, want := slices.Sorted(slices.Values(l2.opened)), wantOpened(entries); !slices.Equal(opened, want) {
			t.Errorf("run 2 opened %v, want %v", opened, want)
		}
	}
	// The final checkpoint holds the counts of all 60 rows: 10 per key.
	final := rs.completedIDs()
	if len(final) != 1 {
		t.Fatalf("run 2 completed checkpoints %v, want the final one", final)
	}
	var counts []string
	for st := range par {
		img := rs.image(final[0], "v2-0", st)
		if img == nil || img.keyed == nil {
			t.Fatalf("final checkpoint has no keyed image of subtask %d", st)
		}
		for _, e := range img.keyed.entries {
			counts = append(counts, e[strings.LastIndexByte(e, '=')+1:])
		}
	}
	ten := fmt.Sprintf("%x", kv.Int64{}.Append(nil, 10))
	if len(counts) != 6 || slices.ContainsFunc(counts, func(c string) bool { return c != ten }) {
		t.Errorf("final checkpoint counts %v, want six times %s", counts, ten)
	}
	if rs.keyedOpen != 0 {
		t.Errorf("run 2 left %d keyed backends open", rs.keyedOpen)
	}
}

// TestKeyedOperatorWithoutCheckpointing: without checkpointing a keyed
// operator still gets a backend (its working state) in a directory of its
// own under KeyedStateConfig.Dir, removed when the task ends.
func TestKeyedOperatorWithoutCheckpointing(t *testing.T) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		t.Run(string(kind), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "state")
			data := keyedData()
			var mu sync.Mutex
			dirs := map[string]bool{}
			l := &keyedLog{onOpen: func(*kv.Backend) {
				es, err := os.ReadDir(root)
				if err != nil {
					t.Errorf("reading %s: %v", root, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, e := range es {
					dirs[e.Name()] = true
				}
			}}
			cs := newCollectSink()
			cfg := Config{KeyedState: KeyedStateConfig{Kind: kind, Dir: root, ManagedMemory: 64 << 20}}
			if err := run(t, keyedGraph(&posReader{data: data}, 4, l, cs), cfg); err != nil {
				t.Fatal(err)
			}
			if got, want := cs.all(), runningCounts(data, 0); !slices.Equal(got, want) {
				t.Errorf("emitted\n%v\nwant\n%v", got, want)
			}
			if len(dirs) == 0 {
				t.Fatalf("no working directory under %s while the operators opened", root)
			}
			for d := range dirs {
				if !strings.HasPrefix(d, "flinksql-state-v2-0-") {
					t.Errorf("working directory %s, want flinksql-state-v2-0-<subtask>-…", d)
				}
			}
			for _, line := range l.opened {
				budget := "budget=0"
				if kind == image.RocksDB {
					budget = fmt.Sprintf("budget=%d", (64<<20)/4)
				}
				if !strings.Contains(line, budget) {
					t.Errorf("opened %q, want %s", line, budget)
				}
			}
			left, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("%d working directories left after the job: %v", len(left), left)
			}
		})
	}
}

// TestKeyedAndCheckpointedRefused: an operator is keyed or checkpoints
// its own state, not both.
func TestKeyedAndCheckpointedRefused(t *testing.T) {
	mk := func() (Operator, error) { return &keyedAndOwn{keyedCount: keyedCount{log: &keyedLog{}}}, nil }
	g := &JobGraph{Vertices: []*Vertex{
		posSource(1, &posReader{data: keyedData()}),
		{ID: 2, Name: "Both", Parallelism: 1, Inputs: []Input{{From: 1}}, Chain: chain(mk)},
	}}
	err := run(t, g, Config{})
	if err == nil || !strings.Contains(err.Error(), "keeps keyed state and also checkpoints state of its own") {
		t.Fatalf("job with an operator that is both: %v", err)
	}
}

type keyedAndOwn struct{ keyedCount }

func (*keyedAndOwn) SnapshotState(CheckpointID, StateWriter) error { return nil }
func (*keyedAndOwn) RestoreState(StateReader) error                { return nil }

// TestMemoryBudgets: a rocksdb job's memory is split among its keyed
// operator instances: the managed memory evenly over all of them, or each
// slot's fixed memory over the keyed instances of that subtask index.
func TestMemoryBudgets(t *testing.T) {
	keyed := &keyedCount{log: &keyedLog{}}
	plain := identity{}
	// Vertex A (parallelism 2) chains a stateless and a keyed operator,
	// vertex B (parallelism 4) two keyed ones: 2 + 8 = 10 keyed instances;
	// slots 0 and 1 hold 3 of them each, slots 2 and 3 two.
	tasks := [][]*task{
		{{subtask: 0, ops: []Operator{plain, keyed}}, {subtask: 1, ops: []Operator{plain, keyed}}},
		{{subtask: 0, ops: []Operator{keyed, keyed}}, {subtask: 1, ops: []Operator{keyed, keyed}},
			{subtask: 2, ops: []Operator{keyed, keyed}}, {subtask: 3, ops: []Operator{keyed, keyed}}},
	}
	const mb = 1 << 20
	render := func(bs map[*task][]int64) string {
		var parts []string
		for v, ts := range tasks {
			for _, t := range ts {
				parts = append(parts, fmt.Sprintf("%c%d=%v", 'A'+v, t.subtask, bs[t]))
			}
		}
		return strings.Join(parts, " ")
	}
	for _, c := range []struct {
		name string
		cfg  KeyedStateConfig
		want string
		sum  int64 // the job's state budget, the sum of the instances'
	}{
		{"managed", KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 400 * mb},
			"A0=[0 41943040] A1=[0 41943040] B0=[41943040 41943040] B1=[41943040 41943040] B2=[41943040 41943040] B3=[41943040 41943040]", 400 * mb},
		{"default managed size 512 MB", KeyedStateConfig{Kind: image.RocksDB},
			"A0=[0 53687091] A1=[0 53687091] B0=[53687091 53687091] B1=[53687091 53687091] B2=[53687091 53687091] B3=[53687091 53687091]", 10 * 53687091},
		// 120 MB per slot: 40 MB each in slots 0 and 1 (3 instances), 60 MB
		// in slots 2 and 3 (2 instances).
		{"fixed per slot", KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 400 * mb, FixedPerSlot: 120 * mb},
			"A0=[0 41943040] A1=[0 41943040] B0=[41943040 41943040] B1=[41943040 41943040] B2=[62914560 62914560] B3=[62914560 62914560]", 4 * 120 * mb},
		// fixed-per-slot overrides state.backend.rocksdb.memory.managed.
		{"fixed per slot, unmanaged", KeyedStateConfig{Kind: image.RocksDB, Unmanaged: true, FixedPerSlot: 120 * mb},
			"A0=[0 41943040] A1=[0 41943040] B0=[41943040 41943040] B1=[41943040 41943040] B2=[62914560 62914560] B3=[62914560 62914560]", 4 * 120 * mb},
		{"unmanaged", KeyedStateConfig{Kind: image.RocksDB, Unmanaged: true, ManagedMemory: 40 * mb},
			"A0=[0 67108864] A1=[0 67108864] B0=[67108864 67108864] B1=[67108864 67108864] B2=[67108864 67108864] B3=[67108864 67108864]", 10 * 64 * mb},
	} {
		bs, err := memoryBudgets(c.cfg, tasks)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := render(bs); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		if got := stateBudget(c.cfg, bs); got != c.sum {
			t.Errorf("%s: job state budget %d, want %d", c.name, got, c.sum)
		}
	}
	if bs, err := memoryBudgets(KeyedStateConfig{Kind: image.Hashmap, ManagedMemory: 1}, tasks); bs != nil || err != nil {
		t.Errorf("hashmap: budgets %v, %v; want none", bs, err)
	} else if got := stateBudget(KeyedStateConfig{Kind: image.Hashmap}, bs); got != UnboundedState {
		t.Errorf("hashmap: job state budget %d, want UnboundedState", got)
	}

	// A share below kv.MinMemoryBudget (4 MB) is refused, naming the
	// option and the split.
	for _, c := range []struct {
		cfg  KeyedStateConfig
		want string
	}{
		{KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 30 * mb},
			"'taskmanager.memory.managed.size' (31457280 bytes) split among the job's 10 keyed operator instances gives each 3145728 bytes, less than the 4194304 bytes a rocksdb state backend needs; raise the option or lower the parallelism"},
		{KeyedStateConfig{Kind: image.RocksDB, FixedPerSlot: 9 * mb},
			"'state.backend.rocksdb.memory.fixed-per-slot' (9437184 bytes) split among the 3 keyed operator instances of slot 0 gives each 3145728 bytes, less than the 4194304 bytes a rocksdb state backend needs; raise the option or lower the parallelism"},
	} {
		_, err := memoryBudgets(c.cfg, tasks)
		if err == nil || err.Error() != c.want {
			t.Errorf("budgets of %+v:\n got %v\nwant %s", c.cfg, err, c.want)
		}
	}

	// Start refuses such a job before it runs anything.
	g := keyedGraph(&posReader{data: keyedData()}, 4, &keyedLog{}, newCollectSink())
	_, err := Start(context.Background(), g, Config{KeyedState: KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 12 * mb}})
	if want := "'taskmanager.memory.managed.size' (12582912 bytes) split among the job's 4 keyed operator instances gives each 3145728 bytes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Start with 12 MB for 4 instances: %v", err)
	}
}

// TestKeyedStateSizeReported: the runtime measures each keyed instance's
// backend when it opens it and at every checkpoint, in the operator's
// metrics and in the checkpoint's acknowledgement (which the store records
// per instance).
func TestKeyedStateSizeReported(t *testing.T) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		t.Run(string(kind), func(t *testing.T) {
			const par = 2
			store := newMemStore().withKeyed(kind, t.TempDir())
			cfg := Config{KeyedState: KeyedStateConfig{Kind: kind}, Checkpointing: ckptConfig(store, ExactlyOnce)}
			r := &posReader{data: keyedData(), allow: make(chan int)}
			j, err := Start(context.Background(), keyedGraph(r, par, &keyedLog{}, newCollectSink()), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				j.Cancel()
				waitJob(t, j)
			}()
			sizes := func() (total StateSize, subtasks []StateSize) {
				for _, v := range j.Metrics() {
					if v.Name != "KeyedCount" {
						continue
					}
					for _, s := range v.Operators[0].Subtasks {
						subtasks = append(subtasks, s.StateSize)
					}
					return v.Operators[0].StateSize, subtasks
				}
				t.Fatal("no KeyedCount vertex in the metrics")
				return
			}
			// Checkpoint 1 before any row: the backends are empty.
			if id := awaitTrigger(t, triggerAsync(j)); id != 1 {
				t.Fatalf("checkpoint %d", id)
			}
			if total, _ := sizes(); total.Entries != 0 {
				t.Errorf("empty backends report %d entries", total.Entries)
			}
			// 24 rows hold all six keys: checkpoint 2 measures six count
			// entries over the two subtasks.
			grant(t, j, r, 24)
			if id := awaitTrigger(t, triggerAsync(j)); id != 2 {
				t.Fatalf("checkpoint %d", id)
			}
			total, subtasks := sizes()
			switch kind {
			case image.Hashmap:
				if total.Entries != 6 || total.MemoryBytes <= 0 || total.DiskBytes != 0 {
					t.Errorf("hashmap state size %+v, want 6 entries, some memory, no disk", total)
				}
			case image.RocksDB:
				// Entries are estimated from the SSTs the checkpoint flushed.
				if total.Entries < 6 || total.MemoryBytes <= 0 || total.DiskBytes <= 0 {
					t.Errorf("rocksdb state size %+v, want at least 6 entries, some memory and disk", total)
				}
			}
			// The checkpoint records what the gauges say, per instance.
			for st := range par {
				img := store.image(2, "v2-0", st)
				if img == nil || img.keyed == nil {
					t.Fatalf("checkpoint 2 has no keyed image of subtask %d", st)
				}
				got := StateSize{Entries: img.keyed.size.Entries, MemoryBytes: img.keyed.size.MemoryBytes, DiskBytes: img.keyed.size.DiskBytes}
				if got != subtasks[st] {
					t.Errorf("subtask %d: checkpoint 2 records %+v, the metrics %+v", st, got, subtasks[st])
				}
				if exact := img.keyed.size.EntriesExact; exact != (kind == image.Hashmap) {
					t.Errorf("subtask %d: entries exact %v on %s", st, exact, kind)
				}
			}
		})
	}
}
