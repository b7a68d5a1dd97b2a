package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

const testJob = "orders"

// content is the bytes of a test file named name: its name repeated, so
// every file has a distinct size and checksum that a test can work out.
func content(name string, reps int) []byte {
	return bytes.Repeat([]byte(name), reps)
}

// testFile describes a file of a synthetic image: shared names are upper
// case in the tests (like SSTs), private ones lower case.
type testFile struct {
	name   string
	shared bool
}

// sealImage builds a local image directory holding files, as a state
// backend would after Seal, and returns it wrapped for checkpoint id.
func sealImage(t *testing.T, m *Manager, id int64, op string, subtask int, files []testFile) *sealedState {
	t.Helper()
	dir := t.TempDir()
	img := &state.Image{Kind: state.RocksDB, Dir: dir, KeyGroups: [2]int{0, 63}}
	for _, f := range files {
		data := content(f.name, 10)
		local := "local-" + f.name
		if err := os.WriteFile(filepath.Join(dir, local), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		img.Files = append(img.Files, state.File{Name: f.name, LocalName: local, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Shared: f.shared})
		img.Bytes += int64(len(data))
	}
	return &sealedState{m: m, id: id, op: exec.OperatorID(op), subtask: subtask, parallelism: 1, img: img, position: []byte("pos-" + fmt.Sprint(id))}
}

// checkpointFiles persists one instance holding files as checkpoint id and
// completes it, returning the acknowledgement.
func checkpointFiles(t *testing.T, m *Manager, id int64, files ...testFile) exec.InstanceAck {
	t.Helper()
	s := sealImage(t, m, id, "v1-0", 0, files)
	ack, err := s.Persist(context.Background())
	if err != nil {
		t.Fatalf("persist %d: %v", id, err)
	}
	rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
	if err := rs.Complete(context.Background(), exec.CheckpointID(id), []exec.InstanceAck{ack}); err != nil {
		t.Fatalf("complete %d: %v", id, err)
	}
	return ack
}

func sh(name string) testFile { return testFile{name, true} }
func pr(name string) testFile { return testFile{name, false} }

func listAll(t *testing.T, st Storage) []string {
	t.Helper()
	objs, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func wantObjects(t *testing.T, st Storage, step string, want ...string) {
	t.Helper()
	want = append([]string(nil), want...)
	for i := range want {
		want[i] = testJob + "/" + want[i]
	}
	sort.Strings(want)
	if got := listAll(t, st); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: storage holds\n  %v\nwant\n  %v", step, got, want)
	}
}

func newManager(t *testing.T, st Storage, retained int, opts ...Option) *Manager {
	t.Helper()
	m, err := NewManager(context.Background(), st, testJob, retained, true, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRegistryRetainOne: with one retained checkpoint, completing n subsumes
// n-1; a shared file goes exactly when no retained checkpoint names it.
func TestRegistryRetainOne(t *testing.T) {
	for _, kind := range []string{"file", "s3"} {
		t.Run(kind, func(t *testing.T) {
			st := openTestStorage(t, kind)
			m := newManager(t, st, 1)

			ack := checkpointFiles(t, m, 1, sh("A"), sh("B"), pr("p1"))
			wantObjects(t, st, "chk 1", "shared/A", "shared/B", "chk-1/p1", "chk-1/_metadata")
			// Everything was new: 10 × (1+1+2) bytes.
			if ack.UploadedBytes != 40 || ack.FullBytes != 40 {
				t.Errorf("chk 1 uploaded %d of %d bytes, want 40 of 40", ack.UploadedBytes, ack.FullBytes)
			}

			ack = checkpointFiles(t, m, 2, sh("B"), sh("C"), pr("p2"))
			// chk-1 subsumed: A only it used goes, B stays for chk-2.
			wantObjects(t, st, "chk 2", "shared/B", "shared/C", "chk-2/p2", "chk-2/_metadata")
			// Only C (10 bytes) and p2 (20 bytes) were uploaded; B was reused.
			if ack.UploadedBytes != 30 || ack.FullBytes != 40 {
				t.Errorf("chk 2 uploaded %d of %d bytes, want 30 of 40", ack.UploadedBytes, ack.FullBytes)
			}

			checkpointFiles(t, m, 3, sh("C"), pr("p3"))
			wantObjects(t, st, "chk 3", "shared/C", "chk-3/p3", "chk-3/_metadata")

			checkpointFiles(t, m, 4, sh("D"), pr("p4"))
			wantObjects(t, st, "chk 4", "shared/D", "chk-4/p4", "chk-4/_metadata")

			latest, err := m.Latest(context.Background())
			if err != nil || latest == nil || latest.ID != 4 {
				t.Fatalf("latest = %v, %v; want checkpoint 4", latest, err)
			}
		})
	}
}

// TestRegistryRetainTwo: a shared file outlives the subsumption of the
// checkpoint that uploaded it while a later retained checkpoint uses it.
func TestRegistryRetainTwo(t *testing.T) {
	st := openTestStorage(t, "file")
	m := newManager(t, st, 2)

	checkpointFiles(t, m, 1, sh("A"), sh("B"), pr("p1"))
	checkpointFiles(t, m, 2, sh("B"), sh("C"), pr("p2"))
	wantObjects(t, st, "chk 2",
		"shared/A", "shared/B", "shared/C",
		"chk-1/p1", "chk-1/_metadata", "chk-2/p2", "chk-2/_metadata")

	checkpointFiles(t, m, 3, sh("C"), sh("D"), pr("p3"))
	// chk-1 goes: A (chk-1 only) is deleted; B stays for chk-2.
	wantObjects(t, st, "chk 3",
		"shared/B", "shared/C", "shared/D",
		"chk-2/p2", "chk-2/_metadata", "chk-3/p3", "chk-3/_metadata")

	checkpointFiles(t, m, 4, sh("D"), sh("E"), pr("p4"))
	// chk-2 goes: B is deleted now; C stays for chk-3.
	wantObjects(t, st, "chk 4",
		"shared/C", "shared/D", "shared/E",
		"chk-3/p3", "chk-3/_metadata", "chk-4/p4", "chk-4/_metadata")

	var ids []int64
	for _, md := range m.Retained() {
		ids = append(ids, md.ID)
	}
	if !reflect.DeepEqual(ids, []int64{3, 4}) {
		t.Errorf("retained %v, want [3 4]", ids)
	}
}

// TestRegistryRestartAndRestoreOlder: a new manager rebuilds the registry
// from what is retained and deletes nothing; restoring from the older
// retained checkpoint deletes nothing either; the next checkpoint subsumes
// by retention as usual.
func TestRegistryRestartAndRestoreOlder(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 2)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	checkpointFiles(t, m, 2, sh("A"), sh("B"), pr("p2"))
	checkpointFiles(t, m, 3, sh("B"), sh("C"), pr("p3"))
	before := []string{"shared/A", "shared/B", "shared/C", "chk-2/p2", "chk-2/_metadata", "chk-3/p3", "chk-3/_metadata"}
	wantObjects(t, st, "before restart", before...)

	m2 := newManager(t, st, 2)
	wantObjects(t, st, "after restart", before...)
	if m2.NextID() != 4 {
		t.Errorf("NextID = %d, want 4", m2.NextID())
	}
	older, err := m2.Load(ctx, testJob+"/chk-2")
	if err != nil {
		t.Fatal(err)
	}
	if older.ID != 2 || older.Instances[0].Files[0].Path != "shared/A" {
		t.Fatalf("loaded %+v", older)
	}
	// Open the restored state (downloads only).
	rs := NewRuntimeStore(m2, state.RocksDB, t.TempDir(), older)
	if _, err := rs.(*runtimeStore).download(ctx, &older.Instances[0], t.TempDir()); err != nil {
		t.Fatal(err)
	}
	wantObjects(t, st, "after restoring chk-2", before...)

	// The restored job checkpoints A and B again (inherited from chk-2) and
	// a new D, as checkpoint 4: chk-2 is subsumed, but A and B are named by
	// chk-4 and C by chk-3, so no shared file goes.
	ack := checkpointFiles(t, m2, 4, sh("A"), sh("B"), sh("D"), pr("p4"))
	if ack.UploadedBytes != 10+20 {
		t.Errorf("chk 4 uploaded %d bytes, want 30 (D and p4)", ack.UploadedBytes)
	}
	wantObjects(t, st, "chk 4 after restore",
		"shared/A", "shared/B", "shared/C", "shared/D",
		"chk-3/p3", "chk-3/_metadata", "chk-4/p4", "chk-4/_metadata")

	// Reusing a retained checkpoint's ID is refused before any upload.
	s := sealImage(t, m2, 3, "v1-0", 0, []testFile{pr("zz")})
	if _, err := s.Persist(ctx); err == nil || !strings.Contains(err.Error(), "checkpoint 3 of job \"orders\" already exists") {
		t.Errorf("persist of an existing id: %v", err)
	}
}

// TestIncompleteCheckpointIgnoredAndCleaned: a chk directory without
// _metadata is not a checkpoint; a new manager removes it, and shared files
// no retained checkpoint references.
func TestIncompleteCheckpointIgnoredAndCleaned(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 3)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	// A crash during checkpoint 2: files uploaded, no _metadata.
	for _, p := range []string{"chk-2/p2", "shared/X"} {
		if err := st.Put(ctx, testJob+"/"+p, strings.NewReader("junk"), 4); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ListCheckpoints(ctx, st, testJob)
	if err != nil || len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("ListCheckpoints = %v, %v; want only checkpoint 1", got, err)
	}
	m2 := newManager(t, st, 3)
	if latest, _ := m2.Latest(ctx); latest == nil || latest.ID != 1 {
		t.Fatalf("latest = %+v, want checkpoint 1", latest)
	}
	wantObjects(t, st, "after restart", "shared/A", "chk-1/p1", "chk-1/_metadata")
}

// recordingStorage remembers the order of successful Puts and can fail the
// Put of one path.
type recordingStorage struct {
	Storage
	mu      sync.Mutex
	puts    []string
	failPut string
}

func (r *recordingStorage) Put(ctx context.Context, p string, data io.Reader, size int64) error {
	if p == r.failPut {
		return errors.New("injected failure")
	}
	if err := r.Storage.Put(ctx, p, data, size); err != nil {
		return err
	}
	r.mu.Lock()
	r.puts = append(r.puts, p)
	r.mu.Unlock()
	return nil
}

func TestMetadataWrittenLast(t *testing.T) {
	ctx := context.Background()
	st := &recordingStorage{Storage: openTestStorage(t, "file")}
	m := newManager(t, st, 1)
	rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
	var acks []exec.InstanceAck
	for sub := range 3 {
		s := sealImage(t, m, 1, "v2-0", sub, []testFile{sh(fmt.Sprintf("S%d", sub)), pr(fmt.Sprintf("p%d", sub))})
		ack, err := s.Persist(ctx)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, ack)
	}
	if err := rs.Complete(ctx, 1, acks); err != nil {
		t.Fatal(err)
	}
	if n := len(st.puts); n != 7 || st.puts[n-1] != testJob+"/chk-1/_metadata" {
		t.Fatalf("puts %v: want 6 files, then chk-1/_metadata", st.puts)
	}

	// Checkpoint 2 fails while writing _metadata: it does not exist, and the
	// abort removes what it uploaded without touching checkpoint 1.
	st.failPut = testJob + "/chk-2/_metadata"
	s := sealImage(t, m, 2, "v2-0", 0, []testFile{sh("S0"), sh("T"), pr("q")})
	ack, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Complete(ctx, 2, []exec.InstanceAck{ack}); err == nil {
		t.Fatal("complete succeeded without its metadata")
	}
	if latest, _ := m.Latest(ctx); latest.ID != 1 {
		t.Errorf("latest = %d after a failed completion, want 1", latest.ID)
	}
	rs.Abort(2)
	wantObjects(t, st, "after abort",
		"shared/S0", "shared/S1", "shared/S2", "chk-1/p0", "chk-1/p1", "chk-1/p2", "chk-1/_metadata")
	s = sealImage(t, m, 2, "v2-0", 0, []testFile{pr("late")})
	if _, err := s.Persist(ctx); err == nil {
		t.Error("persist for an aborted checkpoint succeeded")
	}
	wantObjects(t, st, "after late persist",
		"shared/S0", "shared/S1", "shared/S2", "chk-1/p0", "chk-1/p1", "chk-1/p2", "chk-1/_metadata")

	// The metadata describes the instances in operator and subtask order.
	md, err := ListCheckpoints(ctx, st, testJob)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, in := range md[0].Instances {
		order = append(order, fmt.Sprintf("%s/%d", in.Operator, in.Subtask))
	}
	if want := []string{"v2-0/0", "v2-0/1", "v2-0/2"}; !reflect.DeepEqual(order, want) {
		t.Errorf("instances %v, want %v", order, want)
	}
}

// TestConcurrentCheckpointsShareUpload: two checkpoints in flight that both
// need the same new shared file upload it once, and aborting one keeps it
// for the other.
func TestConcurrentCheckpointsShareUpload(t *testing.T) {
	ctx := context.Background()
	st := &recordingStorage{Storage: openTestStorage(t, "file")}
	m := newManager(t, st, 1)
	s1 := sealImage(t, m, 1, "v1-0", 0, []testFile{sh("BIG"), pr("a")})
	s2 := sealImage(t, m, 2, "v1-0", 0, []testFile{sh("BIG"), pr("b")})
	var wg sync.WaitGroup
	acks := make([]exec.InstanceAck, 2)
	errs := make([]error, 2)
	for i, s := range []*sealedState{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks[i], errs[i] = s.Persist(ctx)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if up := acks[0].UploadedBytes + acks[1].UploadedBytes; up != 30+10+10 {
		t.Errorf("uploaded %d bytes in all, want 50 (BIG once, a, b)", up)
	}
	rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
	rs.Abort(1)
	if err := rs.Complete(ctx, 2, acks[1:]); err != nil {
		t.Fatal(err)
	}
	wantObjects(t, st, "after abort 1 and complete 2", "shared/BIG", "chk-2/b", "chk-2/_metadata")
	if err := rs.Complete(ctx, 1, acks[:1]); err == nil {
		t.Error("completing an aborted checkpoint succeeded")
	}
}

func TestCloseDeleteOnCancellation(t *testing.T) {
	for _, tc := range []struct {
		retainOnCancel, cancelled bool
		wantLeft                  int
	}{
		{retainOnCancel: false, cancelled: true, wantLeft: 0},
		{retainOnCancel: false, cancelled: false, wantLeft: 3},
		{retainOnCancel: true, cancelled: true, wantLeft: 3},
	} {
		st := openTestStorage(t, "file")
		other := testJob + "-other/chk-1/_metadata"
		if err := st.Put(context.Background(), other, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		m, err := NewManager(context.Background(), st, testJob, 1, tc.retainOnCancel)
		if err != nil {
			t.Fatal(err)
		}
		checkpointFiles(t, m, 1, sh("A"), pr("p"))
		if err := m.Close(tc.cancelled); err != nil {
			t.Fatal(err)
		}
		got := listAll(t, st)
		if len(got) != tc.wantLeft+1 || !containsString(got, other) {
			t.Errorf("%+v: storage holds %v, want %d objects of the job and the other job's", tc, got, tc.wantLeft)
		}
	}
}

func TestLogAndClock(t *testing.T) {
	var log bytes.Buffer
	st := openTestStorage(t, "file")
	at := time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	m := newManager(t, st, 1, WithLog(&log), WithClock(func() time.Time { return at }))
	s := sealImage(t, m, 7, "v1-0", 0, []testFile{sh("A"), pr("b")})
	ack, err := s.Persist(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ack.SyncDuration, ack.AsyncDuration = 1500*time.Microsecond, 42*time.Millisecond
	if err := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil).Complete(context.Background(), 7, []exec.InstanceAck{ack}); err != nil {
		t.Fatal(err)
	}
	want := "Completed checkpoint 7 for job orders (full 20 bytes, uploaded 20 bytes, sync 1.5ms, async 42ms)\n"
	if log.String() != want {
		t.Errorf("log = %q\nwant %q", log.String(), want)
	}
	md, _ := m.Latest(context.Background())
	if !md.Timestamp.Equal(at) || md.SharedFiles() != 1 || md.PrivateFiles() != 1 || string(md.Instances[0].Position) != "pos-7" {
		t.Errorf("metadata %+v", md)
	}
}

func TestNewManagerErrors(t *testing.T) {
	st := openTestStorage(t, "file")
	for _, tc := range []struct {
		job      string
		retained int
		want     string
	}{
		{"a/b", 1, `job name "a/b" cannot name a checkpoint directory`},
		{"", 1, `job name "" cannot name a checkpoint directory`},
		{"ok", 0, `invalid value 0 for option 'state.checkpoints.num-retained': must be at least 1`},
	} {
		_, err := NewManager(context.Background(), st, tc.job, tc.retained, false)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewManager(%q, %d) = %v, want %s…", tc.job, tc.retained, err, tc.want)
		}
	}
	// A damaged _metadata, with no older checkpoint to restore instead,
	// stops the restore with its path and first bytes (issue 9 item 11: it
	// no longer stops opening the job's checkpoints).
	if err := st.Put(context.Background(), "bad/chk-1/_metadata", strings.NewReader("garbage"), 7); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(context.Background(), st, "bad", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.LatestRestorable(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), `bad/chk-1/_metadata is not valid`) || !strings.Contains(err.Error(), `"garbage"`) {
		t.Errorf("damaged metadata: %v", err)
	}
}

// TestNextIDSkipsAbortedCheckpoints: an attempt that failed with checkpoint 2
// in flight aborted it; the restarted attempt restores checkpoint 1 and must
// number its next checkpoint 3, since ID 2 is refused as aborted.
func TestNextIDSkipsAbortedCheckpoints(t *testing.T) {
	st := openTestStorage(t, "file")
	m := newManager(t, st, 1)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	if got := m.NextID(); got != 2 {
		t.Fatalf("NextID after checkpoint 1 = %d, want 2", got)
	}
	s := sealImage(t, m, 2, "v1-0", 0, []testFile{sh("B"), pr("p2")})
	if _, err := s.Persist(context.Background()); err != nil {
		t.Fatal(err)
	}
	NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil).Abort(2)
	if got := m.NextID(); got != 3 {
		t.Fatalf("NextID after aborting checkpoint 2 = %d, want 3", got)
	}
	wantObjects(t, st, "after abort", "shared/A", "chk-1/p1", "chk-1/_metadata")
}

// TestDiscardDeletesEverything: a finished job discards all its checkpoints,
// whatever the retention on cancellation says.
func TestDiscardDeletesEverything(t *testing.T) {
	st := openTestStorage(t, "file")
	m, err := NewManager(context.Background(), st, testJob, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	checkpointFiles(t, m, 2, sh("A"), sh("B"), pr("p2"))
	if err := m.Discard(); err != nil {
		t.Fatal(err)
	}
	wantObjects(t, st, "after discard")
}
