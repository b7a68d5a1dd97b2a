package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// ambiguousStorage stores the object at ambiguous and still reports the Put
// failed, as a storage does whose response was lost after the upload; with
// failDelete it also fails to delete that object.
type ambiguousStorage struct {
	Storage
	ambiguous  string
	failDelete bool
}

func (a *ambiguousStorage) Put(ctx context.Context, p string, data io.Reader, size int64) error {
	if err := a.Storage.Put(ctx, p, data, size); err != nil {
		return err
	}
	if p == a.ambiguous {
		return errors.New("injected: response lost after the upload")
	}
	return nil
}

func (a *ambiguousStorage) Delete(ctx context.Context, p string) error {
	if a.failDelete && p == a.ambiguous {
		return errors.New("injected: delete failed")
	}
	return a.Storage.Delete(ctx, p)
}

// lockedBuffer is a log written by concurrent Persist calls.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restoreAll downloads every instance of md, as a restore would.
func restoreAll(t *testing.T, m *Manager, md *Metadata) error {
	t.Helper()
	rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), md).(*runtimeStore)
	for i := range md.Instances {
		if _, err := rs.download(context.Background(), &md.Instances[i], t.TempDir()); err != nil {
			return err
		}
	}
	return nil
}

// TestAmbiguousMetadataWrite: the _metadata of checkpoint 2 is stored but
// its Put reports an error, so the coordinator aborts checkpoint 2 and its
// files are deleted. The old code left the _metadata, and the next start
// picked checkpoint 2 and could not restore it. Now the _metadata is removed
// (the next start restores checkpoint 1), or, when that fails too, the files
// are kept (the next start restores checkpoint 2).
func TestAmbiguousMetadataWrite(t *testing.T) {
	for _, kind := range []string{"file", "s3"} {
		for _, failDelete := range []bool{false, true} {
			name := kind + "/delete-ok"
			if failDelete {
				name = kind + "/delete-fails"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				base := openTestStorage(t, kind)
				st := &ambiguousStorage{Storage: base, ambiguous: testJob + "/chk-2/_metadata", failDelete: failDelete}
				var log lockedBuffer
				m := newManager(t, st, 1, WithLog(&log))
				checkpointFiles(t, m, 1, sh("A"), pr("p1"))
				s := sealImage(t, m, 2, "v1-0", 0, []testFile{sh("B"), pr("p2")})
				ack, err := s.Persist(ctx)
				if err != nil {
					t.Fatal(err)
				}
				rs := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil)
				if err := rs.Complete(ctx, 2, []exec.InstanceAck{ack}); err == nil {
					t.Fatal("completing checkpoint 2 should report the failed write")
				}
				rs.Abort(2) // what the coordinator does with a failed completion
				if err := m.Close(false); err != nil {
					t.Fatal(err)
				}

				m2 := newManager(t, base, 1)
				md, err := m2.LatestRestorable(ctx, 0)
				if err != nil || md == nil {
					t.Fatalf("LatestRestorable = %v, %v", md, err)
				}
				wantID := int64(1)
				if failDelete {
					wantID = 2
					if !strings.Contains(log.String(), "its files are kept") {
						t.Errorf("no warning about the kept files:\n%s", log.String())
					}
				}
				if md.ID != wantID {
					t.Fatalf("the next start restores checkpoint %d, want %d", md.ID, wantID)
				}
				if err := restoreAll(t, m2, md); err != nil {
					t.Fatalf("restoring checkpoint %d: %v", md.ID, err)
				}
			})
		}
	}
}

// TestCorruptMetadataSkipped: a corrupt _metadata of the newest checkpoint
// does not stop the start (the old code refused to open the job's
// checkpoints at all); the older checkpoint is restored, with a warning
// naming the skipped one, its number is not reused, and no shared file is
// deleted while the corrupt one might reference it.
func TestCorruptMetadataSkipped(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 2)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	checkpointFiles(t, m, 2, sh("A"), sh("B"), pr("p2"))
	if err := m.Close(false); err != nil {
		t.Fatal(err)
	}
	garbage := `{"version": 1, "id": 2, "instances": [{"operator": "v1-0", "fil`
	if err := st.Put(ctx, testJob+"/chk-2/_metadata", strings.NewReader(garbage), int64(len(garbage))); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	m2, err := NewManager(ctx, st, testJob, 2, true, WithLog(&log))
	if err != nil {
		t.Fatalf("a corrupt _metadata blocked the start: %v", err)
	}
	md, err := m2.LatestRestorable(ctx, 0)
	if err != nil || md == nil || md.ID != 1 {
		t.Fatalf("LatestRestorable = %+v, %v; want checkpoint 1", md, err)
	}
	if err := restoreAll(t, m2, md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "checkpoint 2 is skipped, it cannot be restored") ||
		!strings.Contains(log.String(), "restoring checkpoint 1 instead of newer ones") {
		t.Errorf("log does not say why checkpoint 2 was skipped:\n%s", log.String())
	}
	if m2.NextID() != 3 {
		t.Errorf("NextID = %d, want 3 (chk-2 is taken)", m2.NextID())
	}
	wantObjects(t, st, "after the start", "shared/A", "shared/B", "chk-1/p1", "chk-1/_metadata", "chk-2/p2", "chk-2/_metadata")

	// With no older checkpoint, a corrupt one fails the start instead of a
	// silent fresh start.
	st2 := openTestStorage(t, "file")
	m3 := newManager(t, st2, 1)
	checkpointFiles(t, m3, 1, sh("A"))
	if err := st2.Put(ctx, testJob+"/chk-1/_metadata", strings.NewReader("{"), 1); err != nil {
		t.Fatal(err)
	}
	m4 := newManager(t, st2, 1)
	if md, err := m4.LatestRestorable(ctx, 0); !errors.Is(err, exec.ErrCheckpointUnrestorable) || md != nil {
		t.Fatalf("only checkpoint corrupt: %v, %v; want an error wrapping ErrCheckpointUnrestorable", md, err)
	}
}

// TestMissingFileSkipsToOlder: a retained checkpoint whose shared file is
// gone is skipped for the previous one, saying which file; when none is
// left, the error says so.
func TestMissingFileSkipsToOlder(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 2)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	checkpointFiles(t, m, 2, sh("A"), sh("B"), pr("p2"))
	if err := st.Delete(ctx, testJob+"/shared/B"); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	m2 := newManager(t, st, 2, WithLog(&log))
	md, err := m2.LatestRestorable(ctx, 0)
	if err != nil || md == nil || md.ID != 1 {
		t.Fatalf("LatestRestorable = %+v, %v; want checkpoint 1", md, err)
	}
	if !strings.Contains(log.String(), "checkpoint 2 cannot be restored: its file orders/shared/B (operator v1-0 subtask 0) is missing") {
		t.Errorf("log:\n%s", log.String())
	}
	// Only this run's checkpoints (from 2 on) may replace the restored one.
	if _, err := m2.LatestRestorable(ctx, 2); !errors.Is(err, exec.ErrCheckpointUnrestorable) {
		t.Errorf("from checkpoint 2 on: %v, want ErrCheckpointUnrestorable", err)
	}
	if err := st.Delete(ctx, testJob+"/chk-1/p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.LatestRestorable(ctx, 0); !errors.Is(err, exec.ErrCheckpointUnrestorable) ||
		!strings.Contains(err.Error(), "no retained checkpoint of job \"orders\" can be restored") {
		t.Errorf("none restorable: %v", err)
	}
}

// TestRestoreErrorsClassified: a restore that cannot succeed says so in a
// way recovery can tell: a file that changed is
// exec.ErrCheckpointUnrestorable (an older checkpoint may help). Another
// state backend or parallelism is no longer an incompatibility: the state
// is read as entries.
func TestRestoreErrorsClassified(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 1)
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	md, err := m.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another backend or parallelism reads the state as entries: the
	// files here are no rocksdb store, which is damage, not a mismatch.
	rs := NewRuntimeStore(m, state.Hashmap, t.TempDir(), md)
	if _, err = rs.OpenInstance("v1-0", 0, 1); err == nil || errors.Is(err, ErrIncompatibleRestore) {
		t.Errorf("switched backend: %v", err)
	}
	// Same size, other bytes.
	data := []byte(strings.Repeat("X", len(content("A", 10))))
	if err := st.Put(ctx, testJob+"/shared/A", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	_, err = NewRuntimeStore(m, state.RocksDB, t.TempDir(), md).OpenInstance("v1-0", 0, 1)
	if !errors.Is(err, exec.ErrCheckpointUnrestorable) || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("changed file: %v", err)
	}
}
