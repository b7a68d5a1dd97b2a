package checkpoint

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

var updateFixture = flag.Bool("update-savepoint-fixture", false, "rewrite testdata/savepoint-v1 (only when the savepoint format version changes: the old fixture must stay)")

const spMaxPar = 128

// spKeys are the keys of the test job's keyed operator v1-0: key-000 …
// key-059 with value "v-<i>".
func spKeys() map[string]string {
	m := map[string]string{}
	for i := range 60 {
		m[fmt.Sprintf("key-%03d", i)] = fmt.Sprintf("v-%d", i)
	}
	return m
}

func keyGroupOfKey(k string) int {
	return kv.KeyGroupOf(types.HashColumns(types.Row{types.String(k)}, []int{0}), spMaxPar)
}

// subtaskRange is Flink's key-group range of a subtask (exec's formula).
func subtaskRange(subtask, parallelism int) kv.KeyGroupRange {
	return kv.KeyGroupRange{First: (subtask*spMaxPar + parallelism - 1) / parallelism, Last: ((subtask+1)*spMaxPar - 1) / parallelism}
}

// writeTestJobCheckpoint completes checkpoint 1 of a job of parallelism 2
// on backend kind: source v0-source (positions "pos-0", "pos-1"), keyed
// operator v1-0 (spKeys, each in its subtask) and an entry store v2-0 (one
// operator-state entry "c" = "c-<subtask>" per subtask).
func writeTestJobCheckpoint(t *testing.T, m *Manager, kind state.Kind) *Metadata {
	t.Helper()
	ctx := context.Background()
	rs := NewRuntimeStore(m, kind, t.TempDir(), nil)
	var acks []exec.InstanceAck
	persist := func(ss exec.SealedState) {
		ack, err := ss.Persist(ctx)
		ss.Discard()
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, ack)
	}
	keys := spKeys()
	for sub := range 2 {
		src, err := rs.OpenInstance("v0-source", sub, 2)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := src.Seal(1, []byte(fmt.Sprintf("pos-%d", sub)))
		if err != nil {
			t.Fatal(err)
		}
		persist(ss)
		src.Close()

		es, err := rs.OpenInstance("v2-0", sub, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := es.Writer().Put(exec.KeyGroupNone, []byte("c"), []byte(fmt.Sprintf("c-%d", sub))); err != nil {
			t.Fatal(err)
		}
		if ss, err = es.Seal(1, nil); err != nil {
			t.Fatal(err)
		}
		persist(ss)
		es.Close()

		r := subtaskRange(sub, 2)
		cfg := kv.Config{MaxParallelism: spMaxPar, KeyGroups: &r}
		if kind == state.RocksDB {
			cfg.MemoryBudget = kv.MinMemoryBudget
		}
		ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", sub, 2, cfg)
		if err != nil {
			t.Fatal(err)
		}
		vals := declareValues(t, ki.Backend())
		for k, v := range keys {
			if r.Contains(keyGroupOfKey(k)) {
				vals.put(t, k, v)
			}
		}
		if ss, err = ki.Seal(1); err != nil {
			t.Fatal(err)
		}
		persist(ss)
		ki.Close()
	}
	if err := rs.Complete(ctx, 1, acks); err != nil {
		t.Fatal(err)
	}
	md, err := m.Latest(ctx)
	if err != nil || md == nil {
		t.Fatalf("latest: %v %v", md, err)
	}
	return md
}

// checkRestoredTestJob restores every instance of the test job from md at
// parallelism p on backend kind and compares with what was written.
func checkRestoredTestJob(t *testing.T, m *Manager, md *Metadata, kind state.Kind, p int) {
	t.Helper()
	rs := NewRuntimeStore(m, kind, t.TempDir(), md)
	got := map[string]string{}
	for sub := range p {
		r := subtaskRange(sub, p)
		cfg := kv.Config{MaxParallelism: spMaxPar, KeyGroups: &r}
		if kind == state.RocksDB {
			cfg.MemoryBudget = kv.MinMemoryBudget
		}
		ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", sub, p, cfg)
		if err != nil {
			t.Fatalf("%s at %d: subtask %d: %v", kind, p, sub, err)
		}
		if ki.Backend().Kind() != kind || !ki.Restored() {
			t.Errorf("%s at %d: subtask %d restored %v into %s", kind, p, sub, ki.Restored(), ki.Backend().Kind())
		}
		vals := declareValues(t, ki.Backend()) // the restored declaration is taken over
		err = ki.Backend().Entries(kv.KeyGroupRange{First: 0, Last: spMaxPar - 1}, func(e kv.Entry) error {
			if !r.Contains(e.KeyGroup) {
				return fmt.Errorf("key %s in key group %d, outside [%d, %d]", e.Key, e.KeyGroup, r.First, r.Last)
			}
			got[string(e.Key)] = string(e.Value)
			return nil
		})
		if err != nil {
			t.Fatalf("%s at %d: subtask %d: %v", kind, p, sub, err)
		}
		for k := range spKeys() {
			if r.Contains(keyGroupOfKey(k)) {
				if v, ok := vals.get(t, k); !ok || v != spKeys()[k] {
					t.Errorf("%s at %d: get(%s) = %q, %v", kind, p, k, v, ok)
				}
			}
		}
		ki.Close()

		// Entry store: old subtask j goes to new subtask j mod p.
		es, err := rs.OpenInstance("v2-0", sub, p)
		if err != nil {
			t.Fatal(err)
		}
		sr, _, ok := es.Restored()
		if !ok {
			t.Fatalf("v2-0/%d of %d not restored", sub, p)
		}
		var cs []string
		_ = sr.Each(func(kg int, key, value []byte) error {
			cs = append(cs, fmt.Sprintf("%d:%s=%s", kg, key, value))
			return nil
		})
		var want []string
		for j := range 2 {
			if j%p == sub {
				want = append(want, fmt.Sprintf("-1:c=c-%d", j))
			}
		}
		sort.Strings(cs)
		if !reflect.DeepEqual(cs, want) {
			t.Errorf("%s at %d: v2-0/%d replays %v, want %v", kind, p, sub, cs, want)
		}
		es.Close()

		// Source: every subtask gets both positions, to reassign.
		src, err := rs.OpenInstance("v0-source", sub, p)
		if err != nil {
			t.Fatal(err)
		}
		ps, rescaled := src.(exec.RescaledPositions).RestoredPositions()
		wantPS := []string{"pos-0", "pos-1"}
		if p == 2 {
			wantPS = []string{fmt.Sprintf("pos-%d", sub)}
		}
		var gotPS []string
		for _, b := range ps {
			gotPS = append(gotPS, string(b))
		}
		if !reflect.DeepEqual(gotPS, wantPS) || rescaled != (p != 2) {
			t.Errorf("%s at %d: source positions %q rescaled %v", kind, p, ps, rescaled)
		}
		src.Close()
	}
	if !reflect.DeepEqual(got, spKeys()) {
		t.Errorf("%s at %d: restored %d keys, want %d (equal %v)", kind, p, len(got), len(spKeys()), reflect.DeepEqual(got, spKeys()))
	}
}

// TestSavepointSelfContained: a savepoint of a checkpoint copies every
// file it needs into its own directory (the checkpoint may go, the
// directory may move), records its type, format version, the job's SQL and
// backend, and restores on either backend at parallelism 1, 2 and 3.
func TestSavepointSelfContained(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []state.Kind{state.Hashmap, state.RocksDB} {
		t.Run(string(kind), func(t *testing.T) {
			root := t.TempDir()
			st, err := OpenStorage(ctx, "file://"+filepath.Join(root, "chk"), nil)
			if err != nil {
				t.Fatal(err)
			}
			m := newManager(t, st, 1)
			md := writeTestJobCheckpoint(t, m, kind)
			spDir := filepath.Join(root, "sp")
			sp, err := WriteSavepoint(ctx, md, "file://"+spDir, SavepointOptions{JobID: "abcdef0123", SQL: []string{"INSERT INTO t SELECT 1"}})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(sp.Path, "file://"+spDir+"/savepoint-abcdef-") {
				t.Errorf("savepoint path %s", sp.Path)
			}
			// Self-contained: the checkpoints go, the savepoint moves.
			if err := os.RemoveAll(filepath.Join(root, "chk")); err != nil {
				t.Fatal(err)
			}
			moved := filepath.Join(root, "moved", "my-savepoint")
			if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(strings.TrimPrefix(sp.Path, "file://"), moved); err != nil {
				t.Fatal(err)
			}
			st2, err := OpenStorage(ctx, "file://"+filepath.Join(root, "other"), nil)
			if err != nil {
				t.Fatal(err)
			}
			m2 := newManager(t, st2, 1)
			loaded, err := m2.Load(ctx, moved)
			if err != nil {
				t.Fatal(err)
			}
			if loaded.Type != TypeSavepoint || loaded.SavepointFormat != SavepointFormatVersion || loaded.StateBackend != string(kind) ||
				!reflect.DeepEqual(loaded.SQL, []string{"INSERT INTO t SELECT 1"}) || loaded.MaxParallelism != 0 && loaded.MaxParallelism != spMaxPar {
				t.Errorf("savepoint metadata: type %q format %d backend %q sql %q", loaded.Type, loaded.SavepointFormat, loaded.StateBackend, loaded.SQL)
			}
			for _, in := range loaded.Instances {
				for _, f := range in.Files {
					if f.Shared || strings.Contains(f.Path, "/") {
						t.Errorf("%s/%d: file %s (shared %v) is not the savepoint's own", in.Operator, in.Subtask, f.Path, f.Shared)
					}
				}
				want := map[string]string{"v0-source": StoreEntriesFormat, "v1-0": EntriesFormat, "v2-0": StoreEntriesFormat}[in.Operator]
				if in.Format != want {
					t.Errorf("%s/%d: format %q, want %q", in.Operator, in.Subtask, in.Format, want)
				}
			}
			for _, target := range []state.Kind{state.Hashmap, state.RocksDB} {
				for _, p := range []int{1, 2, 3} {
					checkRestoredTestJob(t, m2, loaded, target, p)
				}
			}
		})
	}
}

// TestSavepointFixture restores testdata/savepoint-v1, a savepoint of
// format version 1 written by the release that introduced savepoints (of
// the test job of writeTestJobCheckpoint on hashmap): every later release
// must still restore it, on both backends and at another parallelism.
func TestSavepointFixture(t *testing.T) {
	ctx := context.Background()
	fixture, err := filepath.Abs(filepath.Join("testdata", "savepoint-v1"))
	if err != nil {
		t.Fatal(err)
	}
	if *updateFixture {
		st, err := OpenStorage(ctx, "file://"+t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		md := writeTestJobCheckpoint(t, newManager(t, st, 1), state.Hashmap)
		out := t.TempDir()
		sp, err := WriteSavepoint(ctx, md, out, SavepointOptions{JobID: "fixture", SQL: []string{"INSERT INTO sink SELECT k, v FROM src"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(fixture), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(fixture); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(strings.TrimPrefix(sp.Path, "file://"), fixture); err != nil {
			t.Fatal(err)
		}
	}
	st, err := OpenStorage(ctx, "file://"+t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, st, 1)
	md, err := m.Load(ctx, "file://"+fixture)
	if err != nil {
		t.Fatal(err)
	}
	if md.SavepointFormat != 1 || md.Type != TypeSavepoint {
		t.Fatalf("fixture: type %q format %d", md.Type, md.SavepointFormat)
	}
	var entries int64
	for _, in := range md.Instances {
		entries += in.StateEntries
	}
	if entries != int64(len(spKeys())) {
		t.Errorf("fixture records %d keyed entries, want %d", entries, len(spKeys()))
	}
	for _, kind := range []state.Kind{state.Hashmap, state.RocksDB} {
		for _, p := range []int{2, 3} {
			checkRestoredTestJob(t, m, md, kind, p)
		}
	}
}

// TestSavepointNewerFormatRefused: a savepoint of a format this build does
// not know is refused with a message saying so, not misread.
func TestSavepointNewerFormatRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sp := filepath.Join(dir, "savepoint-x")
	if err := os.MkdirAll(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"version": 1, "type": "savepoint", "savepointFormat": 99, "job": "j", "id": 3, "instances": []}`
	if err := os.WriteFile(filepath.Join(sp, MetadataName), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStorage(ctx, "file://"+t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newManager(t, st, 1).Load(ctx, sp)
	if err == nil || !strings.Contains(err.Error(), "has savepoint format 99; this build reads formats 1 to 1") {
		t.Errorf("Load = %v", err)
	}
}

// TestClaimModes: NO_CLAIM leaves the restored checkpoint alone (not
// subsumed, not removed when the job's checkpoints are discarded) and the
// first checkpoint after the restore uploads everything (full); CLAIM of a
// savepoint deletes it once the job completed a checkpoint of its own.
func TestClaimModes(t *testing.T) {
	ctx := context.Background()
	t.Run("NO_CLAIM", func(t *testing.T) {
		st := openTestStorage(t, "file")
		m := newManager(t, st, 1)
		md := writeTestJobCheckpoint(t, m, state.RocksDB)
		m.Close(false)
		before := listAll(t, st)
		m2 := newManager(t, st, 1)
		restored, err := m2.Load(ctx, testJob+"/chk-1")
		if err != nil {
			t.Fatal(err)
		}
		if !m2.Protect(restored) {
			t.Fatal("Protect: the restored checkpoint is not the manager's")
		}
		m2.NumberAfter(md.ID)
		rs := NewRuntimeStore(m2, state.RocksDB, t.TempDir(), restored, NoClaim())
		r := subtaskRange(0, 1)
		ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 2, kv.Config{MaxParallelism: spMaxPar, KeyGroups: &kv.KeyGroupRange{First: 0, Last: 63}, MemoryBudget: kv.MinMemoryBudget})
		if err != nil {
			t.Fatal(err)
		}
		_ = r
		ack := checkpointKeyed(t, rs, ki, exec.CheckpointID(m2.NextID()))
		ki.Close()
		if ack.UploadedBytes != ack.FullBytes || ack.FullBytes == 0 {
			t.Errorf("first checkpoint after a NO_CLAIM restore uploaded %d of %d bytes, want a full one", ack.UploadedBytes, ack.FullBytes)
		}
		if err := m2.Discard(); err != nil {
			t.Fatal(err)
		}
		// Everything of checkpoint 1 is still there, and nothing else.
		if got := listAll(t, st); !reflect.DeepEqual(got, before) {
			t.Errorf("after the run: %v\nwant the restored checkpoint's %v", got, before)
		}
	})
	t.Run("CLAIM", func(t *testing.T) {
		st := openTestStorage(t, "file")
		md := writeTestJobCheckpoint(t, newManager(t, st, 1), state.Hashmap)
		spDir := t.TempDir()
		sp, err := WriteSavepoint(ctx, md, spDir, SavepointOptions{JobID: "j"})
		if err != nil {
			t.Fatal(err)
		}
		m2 := newManager(t, openTestStorage(t, "file"), 1)
		restored, err := m2.Load(ctx, sp.Path)
		if err != nil {
			t.Fatal(err)
		}
		if m2.Owns(restored) {
			t.Fatal("a savepoint elsewhere is owned by the manager")
		}
		m2.Claim(restored)
		m2.NumberAfter(restored.ID)
		rs := NewRuntimeStore(m2, state.Hashmap, t.TempDir(), restored)
		ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, kv.Config{MaxParallelism: spMaxPar})
		if err != nil {
			t.Fatal(err)
		}
		if entries, _ := os.ReadDir(strings.TrimPrefix(sp.Path, "file://")); len(entries) == 0 {
			t.Fatal("the savepoint is gone before the first checkpoint")
		}
		checkpointKeyed(t, rs, ki, exec.CheckpointID(m2.NextID()))
		ki.Close()
		if entries, _ := os.ReadDir(strings.TrimPrefix(sp.Path, "file://")); len(entries) != 0 {
			t.Errorf("the claimed savepoint still holds %d files after the job's first checkpoint", len(entries))
		}
	})
}

// TestSavepointOnS3: a savepoint written to an S3-compatible server over
// HTTP, of a checkpoint on S3, lists, loads and restores from there (at
// another parallelism, on the other backend) with the storage options, and
// CLAIM deletes it there.
func TestSavepointOnS3(t *testing.T) {
	ctx := context.Background()
	uri, opts := newS3(t)
	st, err := OpenStorage(ctx, uri+"/checkpoints", opts)
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, st, 1)
	md := writeTestJobCheckpoint(t, m, state.RocksDB)
	sp, err := WriteSavepoint(ctx, md, uri+"/savepoints", SavepointOptions{JobID: "s3job", Storage: opts})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sp.Path, uri+"/savepoints/savepoint-s3job-") {
		t.Errorf("savepoint path %s", sp.Path)
	}
	list, err := ListSavepoints(ctx, uri+"/savepoints", opts)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListSavepoints: %v, %v", list, err)
	}
	loaded, err := Load(ctx, sp.Path, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkRestoredTestJob(t, m, loaded, state.Hashmap, 3)
	m.Claim(loaded)
	m.NumberAfter(loaded.ID)
	rs := NewRuntimeStore(m, state.Hashmap, t.TempDir(), loaded)
	ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, kv.Config{MaxParallelism: spMaxPar})
	if err != nil {
		t.Fatal(err)
	}
	checkpointKeyed(t, rs, ki, exec.CheckpointID(m.NextID()))
	ki.Close()
	spSt, err := OpenStorage(ctx, uri+"/savepoints", opts)
	if err != nil {
		t.Fatal(err)
	}
	if objs := listAll(t, spSt); len(objs) != 0 {
		t.Errorf("the claimed savepoint left %v on S3", objs)
	}
}
