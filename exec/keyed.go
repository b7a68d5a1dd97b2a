package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// Keyed state owned by the runtime. An operator whose state is keyed
// implements KeyedOperator: the runtime opens one kv.Backend per operator
// instance (restored from the checkpoint when the job restores), hands it to
// the operator before Open, snapshots it at every barrier and closes it when
// the task ends. The operator declares its states on the backend and reads
// and writes them there; the backend is its working state, so with the
// rocksdb backend the state lives on disk behind a bounded cache.

// KeyedOperator is an operator whose state lives in the keyed-state backend
// the runtime owns for each of its instances.
type KeyedOperator interface {
	Operator
	// OpenKeyedState is called once, before Open, with the instance's
	// backend. On a restore the backend already holds the restored states;
	// the operator declares its states again (the same names and codecs)
	// and finds their entries there.
	OpenKeyedState(b *kv.Backend) error
	// PrepareSnapshot writes back to the backend whatever the operator
	// holds outside it (decoded entries it keeps for speed), in the
	// synchronous part of checkpoint id, before the runtime snapshots the
	// backend.
	PrepareSnapshot(id CheckpointID) error
}

// KeyedStateConfig says where and how the keyed operator instances of a job
// keep their working state.
type KeyedStateConfig struct {
	// Kind is the backend (state.backend.type); empty means hashmap.
	Kind image.Kind
	// Dir is the local directory under which each instance gets a working
	// directory; empty means the system's temporary directory.
	Dir string
	// ManagedMemory is the memory the rocksdb instances of the job share
	// (taskmanager.memory.managed.size with
	// state.backend.rocksdb.memory.managed): each of the N keyed instances
	// gets ManagedMemory/N. Zero means DefaultManagedMemory.
	ManagedMemory int64
	// FixedPerSlot, when set (state.backend.rocksdb.memory.fixed-per-slot),
	// replaces ManagedMemory: it is the memory of one slot, shared by the
	// keyed instances of one subtask index (a slot holds one subtask of
	// every vertex, as with Flink's slot sharing).
	FixedPerSlot int64
	// Unmanaged (state.backend.rocksdb.memory.managed = false, no
	// fixed-per-slot) gives every rocksdb instance UnmanagedMemory of its
	// own instead of a share of the managed memory.
	Unmanaged bool
	// CacheBytes overrides the write-back cache's share of each instance's
	// budget (tests and tuning); 0 leaves it to the backend.
	CacheBytes int64
}

// DefaultManagedMemory is the managed memory of a job when
// taskmanager.memory.managed.size is not set.
const DefaultManagedMemory = 512 << 20

// UnmanagedMemory is the memory of each rocksdb instance when
// state.backend.rocksdb.memory.managed is false.
const UnmanagedMemory = 64 << 20

func (c KeyedStateConfig) kind() image.Kind {
	if c.Kind == "" {
		return image.Hashmap
	}
	return c.Kind
}

// KeyedCheckpointStore is implemented by a CheckpointStore that keeps the
// backends of keyed operator instances.
type KeyedCheckpointStore interface {
	// OpenKeyedInstance opens the backend of one keyed operator instance:
	// empty on a fresh start, or restored from the checkpoint that holds
	// the instance. cfg carries everything but the directory and kind,
	// which the store chooses.
	OpenKeyedInstance(op OperatorID, subtask, parallelism int, cfg kv.Config) (KeyedInstance, error)
}

// KeyedInstance is the backend of one keyed operator instance inside a
// checkpoint store.
type KeyedInstance interface {
	Backend() *kv.Backend
	// Restored says that the backend holds a restored checkpoint's state.
	Restored() bool
	// Seal snapshots the backend for checkpoint id (the synchronous part:
	// for rocksdb a flush and hard links) and returns the image to upload.
	Seal(id CheckpointID) (SealedState, error)
	Close() error
}

// keyedInstance is the state of one keyed chained operator of a task.
type keyedInstance struct {
	id  OperatorID
	op  KeyedOperator
	ki  KeyedInstance // with checkpointing
	b   *kv.Backend
	dir string // the working directory without checkpointing
}

func (k *keyedInstance) close() error {
	var err error
	if k.ki != nil {
		err = k.ki.Close()
	} else if k.b != nil {
		err = k.b.Close()
	}
	if k.dir != "" {
		if rerr := os.RemoveAll(k.dir); err == nil && rerr != nil {
			err = rerr
		}
	}
	return err
}

// keyGroupRange returns the key groups subtask owns of maxParallelism
// (the inverse of types.SubtaskForKeyGroup).
func keyGroupRange(subtask, parallelism, maxParallelism int) kv.KeyGroupRange {
	first := (subtask*maxParallelism + parallelism - 1) / parallelism
	last := ((subtask+1)*maxParallelism - 1) / parallelism
	return kv.KeyGroupRange{First: first, Last: last}
}

// memoryBudgets returns, per task and chained operator, the memory budget
// of every keyed instance of a rocksdb job (nil for hashmap): the managed
// memory split evenly, or each slot's fixed memory split among the keyed
// instances of that subtask index.
func memoryBudgets(cfg KeyedStateConfig, tasks [][]*task) (map[*task][]int64, error) {
	if cfg.kind() != image.RocksDB {
		return nil, nil
	}
	budgets := map[*task][]int64{}
	total := 0
	perSlot := map[int]int{}
	for _, ts := range tasks {
		for _, t := range ts {
			for _, op := range t.ops {
				if _, ok := op.(KeyedOperator); ok {
					total++
					perSlot[t.subtask]++
				}
			}
		}
	}
	if total == 0 {
		return budgets, nil
	}
	for _, ts := range tasks {
		for _, t := range ts {
			bs := make([]int64, len(t.ops))
			for i, op := range t.ops {
				if _, ok := op.(KeyedOperator); !ok {
					continue
				}
				var b int64
				var what string
				switch {
				case cfg.FixedPerSlot > 0:
					b = cfg.FixedPerSlot / int64(perSlot[t.subtask])
					what = fmt.Sprintf("'state.backend.rocksdb.memory.fixed-per-slot' (%d bytes) split among the %d keyed operator instances of slot %d", cfg.FixedPerSlot, perSlot[t.subtask], t.subtask)
				case cfg.Unmanaged:
					b = UnmanagedMemory
				default:
					m := cfg.ManagedMemory
					if m <= 0 {
						m = DefaultManagedMemory
					}
					b = m / int64(total)
					what = fmt.Sprintf("'taskmanager.memory.managed.size' (%d bytes) split among the job's %d keyed operator instances", m, total)
				}
				if b < kv.MinMemoryBudget {
					return nil, fmt.Errorf("%s gives each %d bytes, less than the %d bytes a rocksdb state backend needs; raise the option or lower the parallelism", what, b, kv.MinMemoryBudget)
				}
				bs[i] = b
			}
			budgets[t] = bs
		}
	}
	return budgets, nil
}

// UnboundedState is the state budget (Config.StateMemory) of a job whose
// keyed state has no bound: hashmap state lives on the Go heap.
const UnboundedState = -1

// stateBudget is the memory budget of a job's state: the sum of its
// rocksdb instances' budgets, or UnboundedState for hashmap.
func stateBudget(cfg KeyedStateConfig, budgets map[*task][]int64) int64 {
	if cfg.kind() != image.RocksDB {
		return UnboundedState
	}
	var sum int64
	for _, bs := range budgets {
		for _, b := range bs {
			sum += b
		}
	}
	return sum
}

// openKeyedStates opens the backend of every keyed chained operator and
// hands it to the operator (before Open).
func (t *task) openKeyedStates() error {
	t.keyed = make([]*keyedInstance, len(t.ops))
	ks := t.cfg.KeyedState
	for i, op := range t.ops {
		ko, ok := op.(KeyedOperator)
		if !ok {
			continue
		}
		if _, both := op.(CheckpointedOperator); both {
			return t.wrapOp(i, fmt.Errorf("operator %s (%T) keeps keyed state and also checkpoints state of its own; an operator does one or the other", t.opName(i), op))
		}
		id := t.operatorID(i)
		kgs := keyGroupRange(t.subtask, t.v.Parallelism, t.cfg.MaxParallelism)
		kcfg := kv.Config{
			Kind:           ks.kind(),
			MaxParallelism: t.cfg.MaxParallelism,
			KeyGroups:      &kgs,
			Clock:          t.cfg.Now,
		}
		if kcfg.Kind == image.RocksDB {
			kcfg.MemoryBudget = t.budgets[i]
			kcfg.CacheBytes = ks.CacheBytes
		}
		in := &keyedInstance{id: id, op: ko}
		t.keyed[i] = in
		if cp := t.cfg.Checkpointing; cp != nil {
			kstore, ok := cp.Store.(KeyedCheckpointStore)
			if !ok {
				return t.wrapOp(i, fmt.Errorf("the checkpoint store %T cannot keep keyed state", cp.Store))
			}
			ki, err := kstore.OpenKeyedInstance(id, t.subtask, t.v.Parallelism, kcfg)
			if err != nil {
				if cp.RestoreID > 0 {
					return t.wrapOp(i, fmt.Errorf("restore state of %s from checkpoint %d: %w", id, cp.RestoreID, err))
				}
				return t.wrapOp(i, fmt.Errorf("open state of %s: %w", id, err))
			}
			in.ki, in.b = ki, ki.Backend()
		} else {
			root := ks.Dir
			if root == "" {
				root = os.TempDir()
			}
			if err := os.MkdirAll(root, 0o755); err != nil {
				return t.wrapOp(i, fmt.Errorf("open state of %s: %w", id, err))
			}
			dir, err := os.MkdirTemp(root, "flinksql-state-"+string(id)+"-"+strconv.Itoa(t.subtask)+"-")
			if err != nil {
				return t.wrapOp(i, fmt.Errorf("open state of %s: %w", id, err))
			}
			in.dir = dir
			kcfg.Dir = filepath.Join(dir, "db")
			if in.b, err = kv.Open(kcfg); err != nil {
				return t.wrapOp(i, fmt.Errorf("open state of %s: %w", id, err))
			}
		}
		if err := ko.OpenKeyedState(in.b); err != nil {
			return t.wrapOp(i, fmt.Errorf("declare the keyed state of %s: %w", id, err))
		}
		t.reportStateSize(i)
	}
	return nil
}

// reportStateSize sets the state-size gauges of keyed chained operator i
// from its backend and returns the size.
func (t *task) reportStateSize(i int) kv.Sizes {
	s := t.keyed[i].b.Size()
	m := t.metrics[i]
	m.StateEntries.Set(s.Entries)
	m.StateMemoryBytes.Set(s.MemoryBytes)
	m.StateDiskBytes.Set(s.DiskBytes)
	return s
}

// closeKeyedStates closes every opened keyed backend.
func (t *task) closeKeyedStates() error {
	var errs []error
	for _, in := range t.keyed {
		if in == nil {
			continue
		}
		if err := in.close(); err != nil {
			errs = append(errs, fmt.Errorf("close state of %s: %w", in.id, err))
		}
	}
	t.keyed = nil
	return errors.Join(errs...)
}

// snapshotKeyed is the synchronous part of checkpoint id for keyed chained
// operator i.
func (t *task) snapshotKeyed(i int, id CheckpointID) (SealedState, error) {
	in := t.keyed[i]
	if err := in.op.PrepareSnapshot(id); err != nil {
		return nil, fmt.Errorf("write back state: %w", err)
	}
	ss, err := in.ki.Seal(id)
	if err != nil {
		return nil, fmt.Errorf("seal state of %s: %w", in.id, err)
	}
	return ss, nil
}
