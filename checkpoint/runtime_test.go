package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// instanceSpec is an operator instance of the test job.
type instanceSpec struct {
	op          exec.OperatorID
	subtask     int
	parallelism int
}

var testInstances = []instanceSpec{
	{"v0-source", 0, 1},
	{"v1-0", 0, 2},
	{"v1-0", 1, 2},
}

type entryKey struct {
	kg  int
	key string
}

// snapshot is what an instance checkpoints: entries and a position.
type snapshot struct {
	puts    map[entryKey]string
	deletes []entryKey
	pos     string
}

// checkpointAll opens nothing: it writes one snapshot per instance, seals
// them, persists them concurrently (as the runtime does, off the task
// goroutine) and completes the checkpoint.
func checkpointAll(t *testing.T, rs exec.CheckpointStore, insts []exec.InstanceState, id exec.CheckpointID, snaps []snapshot) []exec.InstanceAck {
	t.Helper()
	sealed := make([]exec.SealedState, len(insts))
	for i, is := range insts {
		w := is.Writer()
		for k, v := range snaps[i].puts {
			if err := w.Put(k.kg, []byte(k.key), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range snaps[i].deletes {
			if err := w.Delete(k.kg, []byte(k.key)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := is.Seal(id, []byte(snaps[i].pos))
		if err != nil {
			t.Fatal(err)
		}
		sealed[i] = s
	}
	acks := make([]exec.InstanceAck, len(sealed))
	errs := make([]error, len(sealed))
	var wg sync.WaitGroup
	for i, s := range sealed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Discard()
			acks[i], errs[i] = s.Persist(context.Background())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("persist %d: %v", id, err)
		}
	}
	if err := rs.Complete(context.Background(), id, acks); err != nil {
		t.Fatalf("complete %d: %v", id, err)
	}
	return acks
}

func openAll(t *testing.T, rs exec.CheckpointStore) []exec.InstanceState {
	t.Helper()
	var insts []exec.InstanceState
	for _, spec := range testInstances {
		is, err := rs.OpenInstance(spec.op, spec.subtask, spec.parallelism)
		if err != nil {
			t.Fatalf("open %s/%d: %v", spec.op, spec.subtask, err)
		}
		t.Cleanup(func() { is.Close() })
		insts = append(insts, is)
	}
	return insts
}

func readState(t *testing.T, r exec.StateReader) map[entryKey]string {
	t.Helper()
	got := map[entryKey]string{}
	err := r.Each(func(kg int, key, value []byte) error {
		got[entryKey{kg, string(key)}] = string(value)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// keyedEntries returns n entries of subtask sub of a two-way keyed operator
// (key groups 0-63 for subtask 0, 64-127 for subtask 1), with values of
// valueLen bytes.
func keyedEntries(sub, n, valueLen int) map[entryKey]string {
	m := make(map[entryKey]string, n)
	for i := range n {
		v := fmt.Sprintf("value-%d-%d-", sub, i)
		v += strings.Repeat("x", max(0, valueLen-len(v)))
		m[entryKey{sub*64 + i%64, fmt.Sprintf("key-%06d", i)}] = v
	}
	return m
}

func TestRuntimeStoreEndToEnd(t *testing.T) {
	for _, storage := range []string{"file", "s3"} {
		for _, kind := range []state.Kind{state.Hashmap, state.RocksDB} {
			t.Run(storage+"/"+string(kind), func(t *testing.T) {
				testRuntimeStoreEndToEnd(t, storage, kind)
			})
		}
	}
}

func testRuntimeStoreEndToEnd(t *testing.T, storage string, kind state.Kind) {
	ctx := context.Background()
	st := openTestStorage(t, storage)
	m := newManager(t, st, 1)
	rs := NewRuntimeStore(m, kind, filepath.Join(t.TempDir(), "local"), nil)
	insts := openAll(t, rs)
	for _, is := range insts {
		if _, _, ok := is.Restored(); ok {
			t.Fatal("a fresh instance reports restored state")
		}
	}

	// Checkpoint 1: the source has only its position (and one operator
	// state entry); each keyed subtask 200 entries.
	source1 := map[entryKey]string{{exec.KeyGroupNone, "splits"}: "file-a,file-b"}
	sub0, sub1 := keyedEntries(0, 200, 40), keyedEntries(1, 200, 40)
	checkpointAll(t, rs, insts, 1, []snapshot{
		{puts: source1, pos: "offset=100"},
		{puts: sub0},
		{puts: sub1},
	})

	// Checkpoint 2 changes little: subtask 0 updates one key and deletes
	// another, subtask 1 adds one; the source moves on.
	upd := entryKey{5, "key-000005"}
	del := entryKey{7, "key-000007"}
	add := entryKey{64 + 3, "key-new"}
	checkpointAll(t, rs, insts, 2, []snapshot{
		{puts: map[entryKey]string{}, pos: "offset=250"},
		{puts: map[entryKey]string{upd: "updated"}, deletes: []entryKey{del}},
		{puts: map[entryKey]string{add: "added"}},
	})
	for _, is := range insts {
		if err := is.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(false); err != nil {
		t.Fatal(err)
	}

	// Only checkpoint 2 is retained (num-retained 1), and nothing of
	// checkpoint 1 that it does not use is left.
	objs := listAll(t, st)
	md2, err := ListCheckpoints(ctx, st, testJob)
	if err != nil || len(md2) != 1 || md2[0].ID != 2 {
		t.Fatalf("retained %v, %v; want checkpoint 2 only", md2, err)
	}
	want := []string{testJob + "/chk-2/_metadata"}
	for _, in := range md2[0].Instances {
		for _, f := range in.Files {
			want = append(want, testJob+"/"+f.Path)
		}
	}
	sort.Strings(want)
	if !reflect.DeepEqual(objs, want) {
		t.Errorf("storage holds %v\nwant %v", objs, want)
	}

	// A new process restores from the latest checkpoint into a new local
	// directory and reads back the same entries and positions.
	m2 := newManager(t, st, 1)
	latest, err := m2.Latest(ctx)
	if err != nil || latest == nil || latest.ID != 2 {
		t.Fatalf("latest = %v, %v", latest, err)
	}
	rs2 := NewRuntimeStore(m2, kind, filepath.Join(t.TempDir(), "local2"), latest)
	insts2 := openAll(t, rs2)
	sub0[upd] = "updated"
	delete(sub0, del)
	sub1[add] = "added"
	wants := []struct {
		entries map[entryKey]string
		pos     string
	}{{source1, "offset=250"}, {sub0, ""}, {sub1, ""}}
	for i, is := range insts2 {
		r, pos, ok := is.Restored()
		if !ok {
			t.Fatalf("%v: not restored", testInstances[i])
		}
		if string(pos) != wants[i].pos {
			t.Errorf("%v: position %q, want %q", testInstances[i], pos, wants[i].pos)
		}
		if got := readState(t, r); !reflect.DeepEqual(got, wants[i].entries) {
			t.Errorf("%v: restored %d entries, want %d (equal: %v)", testInstances[i], len(got), len(wants[i].entries), reflect.DeepEqual(got, wants[i].entries))
		}
	}
	// The metadata keeps each keyed snapshot's key-group range.
	for _, in := range latest.Instances {
		var want [2]int
		switch {
		case in.Operator == "v0-source":
			want = [2]int{-1, -1}
		case in.Subtask == 0:
			want = [2]int{0, 63}
		default:
			want = [2]int{64, 127}
		}
		if in.KeyGroups != want || in.StateKind != string(kind) || in.Parallelism != map[string]int{"v0-source": 1, "v1-0": 2}[in.Operator] {
			t.Errorf("instance %s/%d: key groups %v kind %s parallelism %d", in.Operator, in.Subtask, in.KeyGroups, in.StateKind, in.Parallelism)
		}
	}

	// At another parallelism an entry store of old subtask j goes to new
	// subtask j mod the parallelism: at 1, subtask 0 replays both; at 4,
	// subtask 0 the old subtask 0's and subtask 3 nothing.
	union := map[entryKey]string{}
	for k, v := range sub0 {
		union[k] = v
	}
	for k, v := range sub1 {
		union[k] = v
	}
	for _, c := range []struct {
		subtask, parallelism int
		want                 map[entryKey]string
	}{{0, 1, union}, {0, 4, sub0}, {3, 4, map[entryKey]string{}}} {
		is, err := rs2.OpenInstance("v1-0", c.subtask, c.parallelism)
		if err != nil {
			t.Fatalf("rescaled restore to %d/%d: %v", c.subtask, c.parallelism, err)
		}
		r, _, ok := is.Restored()
		if !ok {
			t.Fatalf("rescaled restore to %d/%d: not restored", c.subtask, c.parallelism)
		}
		if got := readState(t, r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("rescaled restore to %d/%d: %d entries, want %d", c.subtask, c.parallelism, len(got), len(c.want))
		}
		is.Close()
	}
	// The source's position goes to every subtask, marked rescaled.
	src, err := rs2.OpenInstance("v0-source", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ps, rescaled := src.(exec.RescaledPositions).RestoredPositions(); !rescaled || len(ps) != 1 || string(ps[0]) != "offset=250" {
		t.Errorf("rescaled source positions %q (rescaled %v), want [offset=250] rescaled", ps, rescaled)
	}
	src.Close()
	other := state.Hashmap
	if kind == state.Hashmap {
		other = state.RocksDB
	}
	rs3 := NewRuntimeStore(m2, other, t.TempDir(), latest)
	is3, err := rs3.OpenInstance("v1-0", 0, 2)
	if err != nil {
		t.Fatalf("restore with another backend: %v", err)
	}
	if r, _, ok := is3.Restored(); !ok || !reflect.DeepEqual(readState(t, r), sub0) {
		t.Errorf("restore with another backend: restored %v", ok)
	}
	is3.Close()
}

// TestIncrementalUpload: with rocksdb, a checkpoint after few changes uploads
// only the SST files the previous checkpoint lacked, plus the small private
// files; with hashmap every checkpoint uploads everything.
func TestIncrementalUpload(t *testing.T) {
	for _, kind := range []state.Kind{state.RocksDB, state.Hashmap} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			st := openTestStorage(t, "file")
			m := newManager(t, st, 2)
			rs := NewRuntimeStore(m, kind, t.TempDir(), nil)
			is, err := rs.OpenInstance("v1-0", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer is.Close()
			insts := []exec.InstanceState{is}
			// About 2.5 MB of state.
			ack1 := checkpointAll(t, rs, insts, 1, []snapshot{{puts: keyedEntries(0, 20000, 120)}})[0]
			ack2 := checkpointAll(t, rs, insts, 2, []snapshot{{puts: map[entryKey]string{
				{1, "key-000001"}: "changed", {2, "key-000002"}: "changed", {3, "key-extra"}: "new",
			}}})[0]
			mds, err := ListCheckpoints(ctx, st, testJob)
			if err != nil || len(mds) != 2 {
				t.Fatal(mds, err)
			}
			// What checkpoint 2 had to upload: its private files and the
			// shared files checkpoint 1 did not have.
			inFirst := map[string]bool{}
			for _, f := range mds[0].Instances[0].Files {
				inFirst[f.Path] = true
			}
			var wantUpload, reused int64
			for _, f := range mds[1].Instances[0].Files {
				if !f.Shared || !inFirst[f.Path] {
					wantUpload += f.Size
				} else {
					reused += f.Size
				}
			}
			if ack2.UploadedBytes != wantUpload || mds[1].UploadedBytes != wantUpload {
				t.Errorf("checkpoint 2 uploaded %d bytes (metadata says %d), want %d", ack2.UploadedBytes, mds[1].UploadedBytes, wantUpload)
			}
			if ack1.UploadedBytes != ack1.FullBytes {
				t.Errorf("checkpoint 1 uploaded %d of %d bytes, want all", ack1.UploadedBytes, ack1.FullBytes)
			}
			switch kind {
			case state.RocksDB:
				if reused == 0 || ack2.UploadedBytes*20 > ack2.FullBytes {
					t.Errorf("incremental checkpoint uploaded %d of %d bytes (reused %d), want under 5%%", ack2.UploadedBytes, ack2.FullBytes, reused)
				}
			case state.Hashmap:
				if reused != 0 || ack2.UploadedBytes != ack2.FullBytes {
					t.Errorf("hashmap checkpoint 2 uploaded %d of %d bytes, want a full upload", ack2.UploadedBytes, ack2.FullBytes)
				}
			}
			t.Logf("%s: checkpoint 1 %d bytes, checkpoint 2 uploaded %d of %d", kind, ack1.FullBytes, ack2.UploadedBytes, ack2.FullBytes)
		})
	}
}

// TestRestoreFromOtherJobPath: execution.state-recovery.path may name a
// checkpoint of another job, as a URI or path to the directory or its
// _metadata. The new job reads it where it lies, uploads its own copies of
// what it checkpoints, and leaves the old job's files alone.
func TestRestoreFromOtherJobPath(t *testing.T) {
	for _, storage := range []string{"file", "s3"} {
		t.Run(storage, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStorage(t, storage)
			m := newManager(t, st, 1)
			rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
			is, err := rs.OpenInstance("v1-0", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			entries := keyedEntries(0, 50, 10)
			checkpointAll(t, rs, []exec.InstanceState{is}, 1, []snapshot{{puts: entries, pos: "p"}})
			is.Close()
			oldJob := listAll(t, st)

			uri, _ := st.(locatedStorage).location()
			m2, err := NewManager(ctx, st, "orders-v2", 1, true)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			paths = append(paths, uri+"/orders/chk-1", uri+"/orders/chk-1/_metadata", "orders/chk-1/")
			if storage == "file" {
				paths = append(paths, strings.TrimPrefix(uri, "file://")+"/orders/chk-1")
			}
			for _, p := range paths {
				md, err := m2.Load(ctx, p)
				if err != nil || md.ID != 1 || md.Job != testJob {
					t.Fatalf("Load(%q) = %+v, %v", p, md, err)
				}
			}
			md, _ := m2.Load(ctx, paths[0])
			rs2 := NewRuntimeStore(m2, state.RocksDB, t.TempDir(), md)
			is2, err := rs2.OpenInstance("v1-0", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer is2.Close()
			r, pos, ok := is2.Restored()
			if !ok || string(pos) != "p" || !reflect.DeepEqual(readState(t, r), entries) {
				t.Fatalf("restored ok=%v pos=%q", ok, pos)
			}
			acks := checkpointAll(t, rs2, []exec.InstanceState{is2}, 1, []snapshot{{puts: entries}})
			if acks[0].UploadedBytes != acks[0].FullBytes {
				t.Errorf("the new job uploaded %d of %d bytes, want all (its files live in its own directory)", acks[0].UploadedBytes, acks[0].FullBytes)
			}
			var oldNow, newJob []string
			for _, o := range listAll(t, st) {
				if strings.HasPrefix(o, "orders-v2/") {
					newJob = append(newJob, o)
				} else {
					oldNow = append(oldNow, o)
				}
			}
			if !reflect.DeepEqual(oldNow, oldJob) || len(newJob) == 0 {
				t.Errorf("old job now %v (was %v); new job %v", oldNow, oldJob, newJob)
			}
			if _, err := m2.Load(ctx, uri+"/orders/chk-9"); err == nil {
				t.Error("loading a missing checkpoint succeeded")
			}
		})
	}
}
