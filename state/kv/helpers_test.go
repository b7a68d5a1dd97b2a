package kv

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// fakeClock is a processing-time clock the test moves by hand.
type fakeClock struct{ now int64 }

func (c *fakeClock) read() int64 { return c.now }

// variant is one backend configuration the conformance tests run on.
type variant struct {
	name string
	kind image.Kind
	// cache overrides the rocksdb write-back cache (a tiny one evicts on
	// almost every access).
	cache int64
}

func variants() []variant {
	return []variant{
		{name: "hashmap", kind: image.Hashmap},
		{name: "rocksdb", kind: image.RocksDB},
		{name: "rocksdb-tiny-cache", kind: image.RocksDB, cache: 2 << 10},
	}
}

func forVariants(t *testing.T, fn func(t *testing.T, v variant)) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) { fn(t, v) })
	}
}

func (v variant) config(dir string, clk *fakeClock) Config {
	cfg := Config{Kind: v.kind, Dir: dir, MaxParallelism: 128, Clock: clk.read}
	if v.kind == image.RocksDB {
		cfg.MemoryBudget, cfg.CacheBytes = MinMemoryBudget, v.cache
	}
	return cfg
}

func openVariant(t testing.TB, v variant, clk *fakeClock) *Backend {
	t.Helper()
	b, err := Open(v.config(filepath.Join(t.TempDir(), "be"), clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// setKey makes the string s the current key, hashed as a one-column row
// the way the exchange hashes it.
func setKey(t testing.TB, b *Backend, s string) {
	t.Helper()
	if err := b.SetCurrentKey(hashOf(s), []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func hashOf(s string) uint64 {
	return types.HashColumns(types.Row{types.String(s)}, []int{0})
}

// snapshotAndRestore takes a snapshot of b, copies its files to a fresh
// directory as the checkpoint download would, and restores a backend of
// the same variant from them.
func snapshotAndRestore(t testing.TB, b *Backend, v variant, clk *fakeClock, id int64) (*Backend, *image.Image) {
	t.Helper()
	im, err := b.Snapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Finish(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range im.Files {
		copyFile(t, filepath.Join(im.Dir, f.LocalName), filepath.Join(dir, f.LocalName))
	}
	r, err := Restore(v.config(dir, clk), im.Files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, im
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// dump is every entry of b as "state|key|ns|userkey=value" strings in
// Entries order.
func dump(t testing.TB, b *Backend) []string {
	t.Helper()
	var out []string
	err := b.Entries(KeyGroupRange{0, b.MaxParallelism() - 1}, func(e Entry) error {
		out = append(out, e.State+"|"+string(e.Key)+"|"+string(e.Namespace)+"|"+string(e.UserKey)+"="+string(e.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func mustMkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
