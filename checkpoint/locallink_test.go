package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/kv"
)

// TestLocalRestoreLinksSSTs: restoring a rocksdb keyed instance from a
// checkpoint on the local file system hard-links its SSTs (no copy: the
// restore reads no byte of them before the job goes on) and copies the
// files the restored DB writes to; the restored state is complete, and a
// damaged SST is still refused: no checkpoint of it completes.
func TestLocalRestoreLinksSSTs(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "file")
	m := newManager(t, st, 1)
	rs := NewRuntimeStore(m, state.RocksDB, filepath.Join(t.TempDir(), "local"), nil)
	cfg := kv.Config{MaxParallelism: 128, MemoryBudget: kv.MinMemoryBudget}
	ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := ki.Backend()
	vs, err := kv.NewValueState(b, "count", kv.Int64{}, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		if err := b.SetCurrentKeyInGroup(i%128, fmt.Appendf(nil, "k%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := vs.Put(nil, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := ki.Seal(1)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := ss.Persist(ctx)
	ss.Discard()
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Complete(ctx, 1, []exec.InstanceAck{ack}); err != nil {
		t.Fatal(err)
	}
	if err := ki.Close(); err != nil {
		t.Fatal(err)
	}
	md, err := m.Latest(ctx)
	if err != nil || md == nil {
		t.Fatalf("latest: %v %v", md, err)
	}

	restore := func() (exec.KeyedInstance, string, error) {
		local := filepath.Join(t.TempDir(), "local2")
		ki, err := NewRuntimeStore(newManager(t, st, 1), state.RocksDB, local, md).(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfg)
		return ki, local, err
	}
	ki2, local, err := restore()
	if err != nil {
		t.Fatal(err)
	}
	defer ki2.Close()
	root := strings.TrimPrefix(st.(*fileStorage).root, "file://")
	linked, copied := 0, 0
	for _, f := range md.Instances[0].Files {
		stored, err := os.Stat(filepath.Join(root, testJob, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		matches, _ := filepath.Glob(filepath.Join(local, "*", "*", "*", f.LocalName))
		if len(matches) == 0 && !f.Shared {
			continue // a file Pebble dropped when it opened the DB (an empty log)
		}
		if len(matches) != 1 {
			t.Fatalf("%s: %d copies in the working directory %v", f.LocalName, len(matches), matches)
		}
		working, err := os.Stat(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		same := os.SameFile(stored, working)
		switch {
		case f.Shared && same:
			linked++
		case !f.Shared && !same:
			copied++
		default:
			t.Errorf("%s (shared %v): same file as the checkpoint's: %v", f.LocalName, f.Shared, same)
		}
	}
	if linked == 0 || copied == 0 {
		t.Fatalf("%d files linked, %d copied; want the SSTs linked and the rest copied", linked, copied)
	}
	b2 := ki2.Backend()
	vs2, err := kv.NewValueState(b2, "count", kv.Int64{}, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2500, n - 1} {
		if err := b2.SetCurrentKeyInGroup(i%128, fmt.Appendf(nil, "k%d", i)); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := vs2.Get(nil); err != nil || !ok || v != int64(i) {
			t.Fatalf("k%d = %d %v %v after the restore, want %d", i, v, ok, err, i)
		}
	}

	// A damaged SST in the checkpoint is refused even though it is linked.
	for _, f := range md.Instances[0].Files {
		if f.Shared {
			p := filepath.Join(root, testJob, f.Path)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0xff
			// A new file in its place (in-place writes would also reach
			// the working DB that links it, as they would any reader).
			if err := os.WriteFile(p+".new", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// The linked files' checksums are compared in the background, so the
	// restore opens; no checkpoint of the damaged state completes (Persist
	// reports the mismatch) and the next one fails at once (Seal).
	ki3, _, err := restore()
	if err != nil {
		t.Fatalf("restore from a damaged linked SST: %v, want it to open and the verification to fail later", err)
	}
	defer ki3.Close()
	// The comparison may end before Seal (which then fails) or after it
	// (then Persist, which waits for it, fails): either way no checkpoint
	// of the damaged state completes.
	ss, err = ki3.Seal(2)
	if err == nil {
		_, err = ss.Persist(ctx)
		ss.Discard()
	}
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !errors.Is(err, exec.ErrCheckpointUnrestorable) {
		t.Fatalf("persisting a checkpoint of damaged restored state: %v, want a checksum mismatch (ErrCheckpointUnrestorable)", err)
	}
	if _, err := ki3.Seal(3); err == nil || !errors.Is(err, exec.ErrCheckpointUnrestorable) {
		t.Fatalf("the next checkpoint of damaged restored state: %v, want the task to fail", err)
	}
}
