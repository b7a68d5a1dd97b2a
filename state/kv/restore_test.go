package kv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/state/image"
)

// TestRestoreRejectsDamagedImages: a truncated or altered download is an
// error naming the file, never a backend with silently missing state.
func TestRestoreRejectsDamagedImages(t *testing.T) {
	for _, v := range variants()[:2] {
		t.Run(v.name, func(t *testing.T) {
			clk := &fakeClock{}
			b := openVariant(t, v, clk)
			vs, _ := NewValueState(b, "v", Bytes{}, Options{})
			setKey(t, b, "k")
			must(t, vs.Put(nil, []byte("value")))
			im, err := b.Snapshot(1)
			must(t, err)
			must(t, im.Finish())
			for _, damage := range []string{"truncate", "flip", "missing"} {
				dir := filepath.Join(t.TempDir(), damage)
				mustMkdir(t, dir)
				for _, f := range im.Files {
					copyFile(t, filepath.Join(im.Dir, f.LocalName), filepath.Join(dir, f.LocalName))
				}
				victim := filepath.Join(dir, im.Files[len(im.Files)-1].LocalName)
				for _, f := range im.Files {
					if f.Size > 0 && (v.kind == image.Hashmap || strings.HasSuffix(f.LocalName, ".sst")) {
						victim = filepath.Join(dir, f.LocalName)
					}
				}
				data, err := os.ReadFile(victim)
				must(t, err)
				switch damage {
				case "truncate":
					data = data[:len(data)/2]
				case "flip":
					data[len(data)/2] ^= 0x40
				}
				if damage == "missing" {
					must(t, os.Remove(victim))
				} else {
					must(t, os.WriteFile(victim, data, 0o644))
				}
				_, err = Restore(v.config(dir, clk), im.Files)
				if err == nil || !strings.Contains(err.Error(), filepath.Base(victim)) {
					t.Errorf("%s %s: Restore = %v, want an error naming the file", damage, filepath.Base(victim), err)
				}
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Kind: "memory", Dir: dir + "/a"}, `unknown state backend "memory"`},
		{Config{Kind: image.RocksDB, Dir: dir + "/b", MemoryBudget: 1 << 20}, "memory budget of at least 4194304 bytes"},
		{Config{Kind: image.Hashmap, Dir: dir + "/c", MemoryBudget: 1 << 30}, "hashmap backend takes no memory budget"},
		{Config{Kind: image.Hashmap, Dir: dir + "/d", MaxParallelism: 1 << 16}, "max parallelism 65536 out of range"},
		{Config{Kind: image.Hashmap, Dir: dir + "/e", KeyGroups: &KeyGroupRange{10, 200}}, "key-group range [10, 200] is not within [0, 127]"},
	} {
		if _, err := Open(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
	nonEmpty := filepath.Join(dir, "full")
	mustMkdir(t, nonEmpty)
	must(t, os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644))
	if _, err := Open(Config{Kind: image.Hashmap, Dir: nonEmpty}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Open in a non-empty dir: %v", err)
	}
}

// TestTTLValidation: a negative or sub-millisecond TTL is refused.
func TestTTLValidation(t *testing.T) {
	b := openVariant(t, variants()[0], &fakeClock{})
	for _, ttl := range []Options{{TTL: -1}, {TTL: 10}} {
		if _, err := NewValueState(b, "v", Int64{}, ttl); err == nil || !strings.Contains(err.Error(), "at least 1 ms") {
			t.Errorf("TTL %v: %v", ttl.TTL, err)
		}
	}
}

// TestSizes: entries, memory and disk as the operator-instance metrics
// will report them.
func TestSizes(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		vs, _ := NewValueState(b, "v", Int64{}, Options{})
		if sz := b.Size(); sz.Entries != 0 {
			t.Errorf("empty backend: %+v", sz)
		}
		for i := range 10_000 {
			setKey(t, b, string(rune('a'+i%26))+string(rune(i)))
			must(t, vs.Put(nil, int64(i)))
		}
		im, err := b.Snapshot(1)
		must(t, err)
		must(t, im.Finish())
		sz := b.Size()
		// After a snapshot every rocksdb entry is in SSTs, whose statistics
		// count them exactly when nothing was overwritten.
		if sz.Entries != 10_000 {
			t.Errorf("Entries = %d, want 10000 (%+v)", sz.Entries, sz)
		}
		if sz.EntriesExact != (v.kind == image.Hashmap) {
			t.Errorf("EntriesExact = %v for %s", sz.EntriesExact, v.kind)
		}
		if sz.MemoryBytes <= 0 {
			t.Errorf("MemoryBytes = %d", sz.MemoryBytes)
		}
		if (sz.DiskBytes > 0) != (v.kind == image.RocksDB) {
			t.Errorf("DiskBytes = %d for %s", sz.DiskBytes, v.kind)
		}
		must(t, im.Discard())
	})
}
