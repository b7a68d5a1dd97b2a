package optest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// Kinds are the keyed-state backends every keyed operator is checked on.
var Kinds = []image.Kind{image.Hashmap, image.RocksDB}

// KeyedBudget is the memory budget of the rocksdb backends the harness
// opens: small, so that tests with a few thousand keys already go through
// Pebble.
const KeyedBudget = kv.MinMemoryBudget

// Keyed opens keyed operators on a kv backend the way the runtime does
// (subtask 0 of 1 over 128 key groups), snapshots their backends and
// restores fresh operators from the snapshots.
type Keyed struct {
	Kind image.Kind
	// CacheBytes, when not 0, sizes the rocksdb write-back cache, so that a
	// test can force evictions.
	CacheBytes int64
	Clock      func() int64
	root       string
	n          int
}

// NewKeyed returns a harness for backends of kind under t's temporary
// directory.
func NewKeyed(t testing.TB, kind image.Kind) *Keyed {
	return &Keyed{Kind: kind, root: t.TempDir()}
}

func (k *Keyed) config(dir string) kv.Config {
	cfg := kv.Config{Kind: k.Kind, Dir: dir, MaxParallelism: 128, Clock: k.Clock}
	if k.Kind == image.RocksDB {
		cfg.MemoryBudget, cfg.CacheBytes = KeyedBudget, k.CacheBytes
	}
	return cfg
}

func (k *Keyed) dir(what string) string {
	k.n++
	return filepath.Join(k.root, fmt.Sprintf("%s-%d", what, k.n))
}

// Open gives op a fresh backend (closed at the end of the test).
func (k *Keyed) Open(t testing.TB, op exec.KeyedOperator) *kv.Backend {
	t.Helper()
	b, err := kv.Open(k.config(k.dir("db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := op.OpenKeyedState(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// KeyedSnapshot is a completed checkpoint of one backend: its image's
// files copied aside, and the entries it held.
type KeyedSnapshot struct {
	dir     string
	files   []image.File
	Entries []string
}

// Snapshot takes checkpoint id of op's backend b as the runtime does
// (PrepareSnapshot, then the backend's snapshot, finished and copied
// aside as an upload would).
func (k *Keyed) Snapshot(t testing.TB, op exec.KeyedOperator, b *kv.Backend, id exec.CheckpointID) *KeyedSnapshot {
	t.Helper()
	if err := op.PrepareSnapshot(id); err != nil {
		t.Fatal(err)
	}
	entries := Dump(t, b)
	im, err := b.Snapshot(int64(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Finish(); err != nil {
		t.Fatal(err)
	}
	s := &KeyedSnapshot{dir: k.dir("chk"), files: slices.Clone(im.Files), Entries: entries}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range im.Files {
		if err := copyFile(filepath.Join(im.Dir, f.LocalName), filepath.Join(s.dir, f.LocalName)); err != nil {
			t.Fatal(err)
		}
	}
	if err := im.Discard(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Restore gives op a backend restored from s (as downloaded from a
// checkpoint) and returns it.
func (k *Keyed) Restore(t testing.TB, op exec.KeyedOperator, s *KeyedSnapshot) *kv.Backend {
	t.Helper()
	b := k.RestoreBackend(t, s)
	if err := op.OpenKeyedState(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// RestoreBackend returns a backend restored from s, checked to hold the
// snapshot's entries, for a test that hands it to an operator itself
// (e.g. to see OpenKeyedState refuse it).
func (k *Keyed) RestoreBackend(t testing.TB, s *KeyedSnapshot) *kv.Backend {
	t.Helper()
	dir := k.dir("restored")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.files {
		if err := copyFile(filepath.Join(s.dir, f.LocalName), filepath.Join(dir, f.LocalName)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := kv.Restore(k.config(dir), s.files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if got := Dump(t, b); !slices.Equal(got, s.Entries) {
		t.Fatalf("restored backend holds %d entries, the snapshot %d:\n%s", len(got), len(s.Entries), diffLines(got, s.Entries))
	}
	return b
}

// Dump lists the live entries of b, one string each, in stored order.
func Dump(t testing.TB, b *kv.Backend) []string {
	t.Helper()
	var out []string
	err := b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		out = append(out, fmt.Sprintf("%d %s %x/%x/%x = %x @%d", e.KeyGroup, e.State, e.Key, e.Namespace, e.UserKey, e.Value, e.LastWrite))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffLines(got, want []string) string {
	var buf bytes.Buffer
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&buf, "+ %s\n", g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&buf, "- %s\n", w)
		}
	}
	return buf.String()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// checkKeyedRestores is CheckRestores for a KeyedOperator on backend kind.
func checkKeyedRestores[S Step](t *testing.T, kind image.Kind, mk func() exec.Operator, newCollector func() *Collector,
	start int64, script []S, late int64, want ...string) {
	t.Helper()
	k := NewKeyed(t, kind)
	rt := &Runtime{Now: start}
	k.Clock = func() int64 { return rt.Now }
	open := func(op exec.Operator, rt *Runtime) {
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
	}
	op := mk().(exec.KeyedOperator)
	b := k.Open(t, op)
	open(op, rt)
	checkpoints := []*KeyedSnapshot{k.Snapshot(t, op, b, 1)}
	clocks := []int64{rt.Now}
	lateAt := []int64{0}
	var outs [][]string
	for i, s := range script {
		c := newCollector()
		s.Run(t, op, rt, c)
		outs = append(outs, c.Events)
		checkpoints = append(checkpoints, k.Snapshot(t, op, b, exec.CheckpointID(i+2)))
		clocks = append(clocks, rt.Now)
		lateAt = append(lateAt, rt.Metrics.LateRowsDropped.Load())
	}
	normalize := func(e []string) []string { return e }
	if n := newCollector().Normalize; n != nil {
		normalize = n
	}
	Expect(t, fmt.Sprintf("%s: uninterrupted run", kind), normalize(slices.Concat(outs...)), want...)
	if n := rt.Metrics.LateRowsDropped.Load(); n != late {
		t.Errorf("%s: uninterrupted run: %d late rows dropped, want %d", kind, n, late)
	}
	for i := range checkpoints {
		restored := mk().(exec.KeyedOperator)
		rt := &Runtime{Now: clocks[i]}
		k.Clock = func() int64 { return rt.Now }
		k.Restore(t, restored, checkpoints[i])
		open(restored, rt)
		got := slices.Concat(outs[:i]...)
		c := newCollector()
		for _, s := range script[i:] {
			s.Run(t, restored, rt, c)
		}
		Expect(t, fmt.Sprintf("%s: restored after step %d", kind, i), normalize(append(got, c.Events...)), want...)
		if n := lateAt[i] + rt.Metrics.LateRowsDropped.Load(); n != late {
			t.Errorf("%s: restored after step %d: %d late rows dropped, want %d", kind, i, n, late)
		}
	}
}
