package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// keyedValues is a keyed instance's state in the tests: one value state,
// "v", holding a string per key.
type keyedValues struct {
	b *kv.Backend
	v *kv.ValueState[string]
}

func declareValues(t *testing.T, b *kv.Backend) *keyedValues {
	t.Helper()
	v, err := kv.NewValueState(b, "v", kv.String{}, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &keyedValues{b: b, v: v}
}

func (kvs *keyedValues) setKey(t *testing.T, key string) {
	t.Helper()
	if err := kvs.b.SetCurrentKey(types.HashColumns(types.Row{types.String(key)}, []int{0}), []byte(key)); err != nil {
		t.Fatal(err)
	}
}

func (kvs *keyedValues) put(t *testing.T, key, value string) {
	t.Helper()
	kvs.setKey(t, key)
	if err := kvs.v.Put(nil, value); err != nil {
		t.Fatal(err)
	}
}

func (kvs *keyedValues) get(t *testing.T, key string) (string, bool) {
	t.Helper()
	kvs.setKey(t, key)
	v, ok, err := kvs.v.Get(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// checkpointKeyed takes checkpoint id of one keyed instance as the runtime
// does: Seal and measure the backend on the task's goroutine, Persist off
// it, then Complete.
func checkpointKeyed(t *testing.T, rs exec.CheckpointStore, ki exec.KeyedInstance, id exec.CheckpointID) exec.InstanceAck {
	t.Helper()
	ss, err := ki.Seal(id)
	if err != nil {
		t.Fatal(err)
	}
	size := ki.Backend().Size()
	done := make(chan struct{})
	var ack exec.InstanceAck
	go func() {
		defer close(done)
		defer ss.Discard()
		ack, err = ss.Persist(context.Background())
	}()
	<-done
	if err != nil {
		t.Fatalf("persist %d: %v", id, err)
	}
	ack.StateSize = &size
	if err := rs.Complete(context.Background(), id, []exec.InstanceAck{ack}); err != nil {
		t.Fatalf("complete %d: %v", id, err)
	}
	return ack
}

func keyName(i int) string { return fmt.Sprintf("key-%06d", i) }

// TestKeyedInstanceEndToEnd: a keyed instance's backend is opened by the
// runtime store, sealed, persisted and completed (format kv/1), and a new
// process restores it through NewRuntimeStore with the state it had at the
// latest checkpoint, on both backends. With rocksdb the second checkpoint,
// after three keys changed, uploads only the SSTs the first lacks.
func TestKeyedInstanceEndToEnd(t *testing.T) {
	for _, kind := range []state.Kind{state.Hashmap, state.RocksDB} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			st := openTestStorage(t, "file")
			m := newManager(t, st, 2)
			rs := NewRuntimeStore(m, kind, filepath.Join(t.TempDir(), "local"), nil)
			kstore, ok := rs.(exec.KeyedCheckpointStore)
			if !ok {
				t.Fatalf("the runtime store %T keeps no keyed state", rs)
			}
			cfg := kv.Config{MaxParallelism: 128, KeyGroups: &kv.KeyGroupRange{First: 0, Last: 63}}
			if kind == state.RocksDB {
				cfg.MemoryBudget = kv.MinMemoryBudget
			}
			ki, err := kstore.OpenKeyedInstance("v1-0", 0, 2, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if ki.Restored() {
				t.Fatal("a fresh keyed instance reports restored state")
			}
			if ki.Backend().Kind() != kind {
				t.Fatalf("backend %s, want %s", ki.Backend().Kind(), kind)
			}
			// About 2.5 MB: 20 000 keys of subtask 0's key groups, 120-byte
			// values.
			vals := declareValues(t, ki.Backend())
			want := map[string]string{}
			var keys []string
			for i := 0; len(want) < 20000; i++ {
				k := keyName(i)
				if kg := kv.KeyGroupOf(types.HashColumns(types.Row{types.String(k)}, []int{0}), 128); kg > 63 {
					continue
				}
				v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 100))
				vals.put(t, k, v)
				want[k] = v
				keys = append(keys, k)
			}
			ack1 := checkpointKeyed(t, rs, ki, 1)
			// Checkpoints 2…5: three keys change before each.
			acks := []exec.InstanceAck{ack1}
			for id := exec.CheckpointID(2); id <= 5; id++ {
				for _, k := range keys[3*(id-2) : 3*(id-1)] {
					want[k] = fmt.Sprintf("changed before %d", id)
					vals.put(t, k, want[k])
				}
				acks = append(acks, checkpointKeyed(t, rs, ki, id))
			}
			if err := ki.Close(); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(false); err != nil {
				t.Fatal(err)
			}

			mds, err := ListCheckpoints(ctx, st, testJob)
			if err != nil || len(mds) != 2 || mds[1].ID != 5 {
				t.Fatalf("retained %v, %v; want checkpoints 4 and 5", mds, err)
			}
			for _, md := range mds {
				in := md.Instances[0]
				if in.Format != KeyedFormat || in.StateKind != string(kind) || in.Operator != "v1-0" || in.Subtask != 0 || in.Parallelism != 2 {
					t.Errorf("checkpoint %d: instance %s/%d parallelism %d, kind %s, format %q; want v1-0/0 of 2, %s, %q",
						md.ID, in.Operator, in.Subtask, in.Parallelism, in.StateKind, in.Format, kind, KeyedFormat)
				}
				if in.KeyGroups[0] < 0 || in.KeyGroups[1] > 63 || in.KeyGroups[0] > in.KeyGroups[1] {
					t.Errorf("checkpoint %d: key groups %v, want inside [0, 63]", md.ID, in.KeyGroups)
				}
				// The state size the runtime measured is recorded.
				sz := acks[md.ID-1].StateSize
				if in.StateEntries != sz.Entries || in.EntriesEstimated == sz.EntriesExact || in.MemoryBytes != sz.MemoryBytes || in.DiskBytes != sz.DiskBytes {
					t.Errorf("checkpoint %d records entries %d (estimated %v), memory %d, disk %d; measured %+v",
						md.ID, in.StateEntries, in.EntriesEstimated, in.MemoryBytes, in.DiskBytes, *sz)
				}
				switch kind {
				case state.Hashmap:
					if in.StateEntries != 20000 || in.EntriesEstimated || in.MemoryBytes < 20000*120 || in.DiskBytes != 0 {
						t.Errorf("checkpoint %d: hashmap state of %d entries (estimated %v), %d bytes in memory, %d on disk; want 20000 exact, ≥ 2.4 MB, none on disk",
							md.ID, in.StateEntries, in.EntriesEstimated, in.MemoryBytes, in.DiskBytes)
					}
				case state.RocksDB:
					if in.StateEntries < 20000 || !in.EntriesEstimated || in.DiskBytes <= 0 || in.MemoryBytes <= 0 {
						t.Errorf("checkpoint %d: rocksdb state of %d entries (estimated %v), %d bytes in memory, %d on disk; want ≥ 20000 estimated, some memory and disk",
							md.ID, in.StateEntries, in.EntriesEstimated, in.MemoryBytes, in.DiskBytes)
					}
				}
				sizes := md.StateSizes()
				if len(sizes) != 1 || !sizes[0].Keyed || sizes[0].Entries != in.StateEntries || sizes[0].Subtasks != 1 || sizes[0].FullBytes != in.FullBytes {
					t.Errorf("checkpoint %d: StateSizes %+v", md.ID, sizes)
				}
			}
			if ack1.UploadedBytes != ack1.FullBytes || ack1.FullBytes == 0 {
				t.Errorf("checkpoint 1 uploaded %d of %d bytes, want all of them", ack1.UploadedBytes, ack1.FullBytes)
			}
			var figures []string
			for i, a := range acks {
				figures = append(figures, fmt.Sprintf("%d: %d of %d", i+1, a.UploadedBytes, a.FullBytes))
			}
			t.Logf("%s: uploaded bytes per checkpoint %s", kind, strings.Join(figures, ", "))
			switch kind {
			case state.RocksDB:
				// Incremental: what checkpoint 5 uploads is its private files
				// and the SSTs checkpoint 4 lacked.
				inPrev := map[string]bool{}
				for _, f := range mds[0].Instances[0].Files {
					inPrev[f.Path] = true
				}
				var wantUpload int64
				for _, f := range mds[1].Instances[0].Files {
					if !f.Shared || !inPrev[f.Path] {
						wantUpload += f.Size
					}
				}
				if last := acks[len(acks)-1]; last.UploadedBytes != wantUpload || mds[1].UploadedBytes != wantUpload {
					t.Errorf("checkpoint 5 uploaded %d bytes (metadata: %d), its new files are %d", last.UploadedBytes, mds[1].UploadedBytes, wantUpload)
				}
				// Three changed keys take about 1 % of the state. A
				// background compaction may rewrite earlier SSTs, which the
				// next checkpoint then uploads, but not before every one of
				// four checkpoints: the smallest upload is a few percent.
				least := acks[1]
				for _, a := range acks[1:] {
					if a.UploadedBytes < least.UploadedBytes {
						least = a
					}
					if a.UploadedBytes >= ack1.UploadedBytes {
						t.Errorf("a checkpoint after three changes uploaded %d bytes, as much as the first (%d)", a.UploadedBytes, ack1.UploadedBytes)
					}
				}
				if least.UploadedBytes*20 > least.FullBytes {
					t.Errorf("the smallest of checkpoints 2…5 uploaded %d of %d bytes, want under 5%%", least.UploadedBytes, least.FullBytes)
				}
			case state.Hashmap:
				for i, a := range acks {
					if a.UploadedBytes != a.FullBytes {
						t.Errorf("hashmap checkpoint %d uploaded %d of %d bytes, want a full image", i+1, a.UploadedBytes, a.FullBytes)
					}
				}
			}

			// A new process restores checkpoint 5.
			m2 := newManager(t, st, 2)
			latest, err := m2.Latest(ctx)
			if err != nil || latest == nil || latest.ID != 5 {
				t.Fatalf("latest = %v, %v", latest, err)
			}
			rs2 := NewRuntimeStore(m2, kind, filepath.Join(t.TempDir(), "local2"), latest)
			ki2, err := rs2.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 2, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ki2.Close()
			if !ki2.Restored() {
				t.Fatal("the restored keyed instance reports a fresh start")
			}
			vals2 := declareValues(t, ki2.Backend())
			// Every entry is there (one scan), and point reads of the
			// changed keys and some others find the latest values.
			got := map[string]string{}
			err = ki2.Backend().Entries(ki2.Backend().KeyGroups(), func(e kv.Entry) error {
				if e.State != "v" {
					return fmt.Errorf("entry of state %q", e.State)
				}
				got[string(e.Key)] = string(e.Value)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for k, v := range want {
				if got[k] != v {
					if bad++; bad <= 3 {
						t.Errorf("restored %s = %q, want %q", k, got[k], v)
					}
				}
			}
			if bad > 0 || len(got) != len(want) {
				t.Errorf("%d of %d keys restored wrong; %d restored", bad, len(want), len(got))
			}
			for _, k := range keys[:200] {
				if got, ok := vals2.get(t, k); !ok || got != want[k] {
					t.Errorf("restored %s = %q (%v), want %q", k, got, ok, want[k])
				}
			}
			for i := 1_000_000; ; i++ {
				k := keyName(i)
				if kv.KeyGroupOf(types.HashColumns(types.Row{types.String(k)}, []int{0}), 128) > 63 {
					continue
				}
				if got, ok := vals2.get(t, k); ok {
					t.Errorf("restored a key never written: %s = %q", k, got)
				}
				break
			}
			if s := ki2.Backend().Size(); kind == state.Hashmap && s.Entries != int64(len(want)) {
				t.Errorf("restored hashmap backend holds %d entries, want %d", s.Entries, len(want))
			}

			// The same state at another parallelism, and with the other
			// backend, is restored through its entries: subtask 1 of 4 owns
			// key groups 32…63 and gets exactly the keys written there.
			cfg4 := cfg
			cfg4.KeyGroups = &kv.KeyGroupRange{First: 32, Last: 63}
			ki4, err := rs2.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 1, 4, cfg4)
			if err != nil {
				t.Fatalf("rescaled keyed restore: %v", err)
			}
			want4 := map[string]string{}
			for k, v := range want {
				if kv.KeyGroupOf(types.HashColumns(types.Row{types.String(k)}, []int{0}), 128) >= 32 {
					want4[k] = v
				}
			}
			checkEntries(t, "rescaled to 4", ki4.Backend(), want4)
			ki4.Close()
			other := state.Hashmap
			cfgOther := kv.Config{MaxParallelism: 128, KeyGroups: cfg.KeyGroups}
			if kind == state.Hashmap {
				other = state.RocksDB
				cfgOther.MemoryBudget = kv.MinMemoryBudget
			}
			rs3 := NewRuntimeStore(m2, other, t.TempDir(), latest)
			ki3, err := rs3.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 2, cfgOther)
			if err != nil {
				t.Fatalf("keyed restore with another backend: %v", err)
			}
			if ki3.Backend().Kind() != other || !ki3.Restored() {
				t.Errorf("restored into %s (restored %v), want %s", ki3.Backend().Kind(), ki3.Restored(), other)
			}
			checkEntries(t, "other backend", ki3.Backend(), want)
			ki3.Close()
		})
	}
}

// checkEntries compares the entries of state "v" of b with want.
func checkEntries(t *testing.T, what string, b *kv.Backend, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	if err := b.Entries(kv.KeyGroupRange{First: 0, Last: b.MaxParallelism() - 1}, func(e kv.Entry) error {
		got[string(e.Key)] = string(e.Value)
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	bad := 0
	for k, v := range want {
		if got[k] != v {
			if bad++; bad <= 3 {
				t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
			}
		}
	}
	if bad > 0 || len(got) != len(want) {
		t.Errorf("%s: %d of %d keys wrong; %d restored", what, bad, len(want), len(got))
	}
}

// TestKeyedRestoreRefusesEntryStores: an operator that now keeps keyed
// state cannot read the entry store an earlier release checkpointed for it
// (and an entry-store operator cannot read a kv image): the restore is
// refused as incompatible, with a message saying what to do, not retried.
func TestKeyedRestoreRefusesEntryStores(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 1)
	rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
	is, err := rs.OpenInstance("v1-0", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkpointAll(t, rs, []exec.InstanceState{is}, 1, []snapshot{{puts: keyedEntries(0, 10, 10)}})
	is.Close()
	m2 := newManager(t, st, 1)
	latest, err := m2.Latest(ctx)
	if err != nil || latest == nil {
		t.Fatalf("latest = %v, %v", latest, err)
	}
	rs2 := NewRuntimeStore(m2, state.RocksDB, t.TempDir(), latest)
	cfg := kv.Config{MaxParallelism: 128, MemoryBudget: kv.MinMemoryBudget}
	_, err = rs2.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfg)
	want := "restoring operator v1-0 subtask 0 from checkpoint 1: the checkpoint holds the operator's state as entries of its own (the format of flinksql releases before keyed state), which this release does not read into keyed state (format \"kv/1\"); start the job afresh (without 'execution.state-recovery.path', or with another 'pipeline.name')"
	if !errors.Is(err, ErrIncompatibleRestore) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("keyed restore of an entry store:\n got %v\nwant %s…", err, want)
	}

	// The other way round: an entry-store operator restored from a kv image.
	rs3 := NewRuntimeStore(newManager(t, openTestStorage(t, "file"), 1), state.Hashmap, t.TempDir(), nil)
	ki, err := rs3.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, kv.Config{MaxParallelism: 128})
	if err != nil {
		t.Fatal(err)
	}
	declareValues(t, ki.Backend()).put(t, "a", "1")
	checkpointKeyed(t, rs3, ki, 1)
	ki.Close()
	md, err := rs3.(*runtimeStore).m.Latest(ctx)
	if err != nil || md == nil {
		t.Fatalf("latest = %v, %v", md, err)
	}
	rs4 := NewRuntimeStore(rs3.(*runtimeStore).m, state.Hashmap, t.TempDir(), md)
	if _, err := rs4.OpenInstance("v1-0", 0, 1); !errors.Is(err, ErrIncompatibleRestore) || !strings.Contains(err.Error(), `the checkpoint holds its state in the format "kv/1"`) {
		t.Errorf("entry-store restore of a kv image: %v", err)
	}
}
