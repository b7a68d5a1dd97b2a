package state

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchKey and benchValue give deterministic keys spread over 128 key groups
// and values of a realistic size for aggregation state.
func benchKey(i int) (int, []byte) {
	var k [16]byte
	binary.BigEndian.PutUint64(k[:], uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	return int(k[0]) % 128, k[:]
}

func benchValue(buf []byte, i, version int) []byte {
	buf = buf[:0]
	for j := 0; len(buf) < 64; j++ {
		buf = binary.BigEndian.AppendUint64(buf, uint64(i)*31+uint64(version)*1_000_003+uint64(j))
	}
	return buf
}

func fillStore(t testing.TB, st Store, n int) {
	w := st.Writer()
	var buf []byte
	for i := range n {
		kg, k := benchKey(i)
		buf = benchValue(buf, i, 0)
		if err := w.Put(kg, k, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// updateFraction rewrites n distinct random keys out of total.
func updateFraction(t testing.TB, st Store, rng *rand.Rand, total, n, version int) {
	w := st.Writer()
	var buf []byte
	seen := make(map[int]bool, n)
	for len(seen) < n {
		i := rng.IntN(total)
		if seen[i] {
			continue
		}
		seen[i] = true
		kg, k := benchKey(i)
		buf = benchValue(buf, i, version)
		if err := w.Put(kg, k, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// uploadBytes is what the checkpoint package uploads for im after prev:
// the shared files prev lacks, plus every private file.
func uploadBytes(prev, im *Image) (shared, private int64) {
	had := map[string]bool{}
	if prev != nil {
		for _, f := range prev.Files {
			if f.Shared {
				had[f.Name] = true
			}
		}
	}
	for _, f := range im.Files {
		switch {
		case !f.Shared:
			private += f.Size
		case !had[f.Name]:
			shared += f.Size
		}
	}
	return shared, private
}

// nameBook records the content of every Name seen and fails when a Name
// comes back with other content.
type nameBook map[string]string

func (b nameBook) add(t *testing.T, im *Image) {
	t.Helper()
	for _, f := range im.Files {
		data, err := os.ReadFile(filepath.Join(im.Dir, f.LocalName))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		got := hex.EncodeToString(sum[:])
		if got != f.SHA256 {
			t.Fatalf("%s: recorded SHA-256 differs from content", f.Name)
		}
		if prev, ok := b[f.Name]; ok && prev != got {
			t.Fatalf("name %s reused for different content", f.Name)
		}
		b[f.Name] = got
	}
}

func TestPebbleIncremental(t *testing.T) {
	const keys = 100_000
	st := open(t, RocksDB)
	fillStore(t, st, keys)
	im1 := seal(t, st, 1)
	book := nameBook{}
	book.add(t, im1)

	rng := rand.New(rand.NewPCG(1, 2))
	updateFraction(t, st, rng, keys, keys/100, 1)
	im2 := seal(t, st, 2)
	book.add(t, im2)

	shared, private := uploadBytes(im1, im2)
	t.Logf("full %d bytes, new shared %d (%.2f%%), private %d", im2.Bytes, shared, 100*float64(shared)/float64(im2.Bytes), private)
	if shared > im2.Bytes/5 {
		t.Fatalf("second checkpoint adds %d bytes of SSTs, more than 20%% of the %d-byte image", shared, im2.Bytes)
	}
	if shared == 0 {
		t.Fatal("second checkpoint adds no SST although 1000 keys changed")
	}
	// The image is complete: every key, the updated ones with new values.
	rs := restore(t, RocksDB, im2)
	if n := rs.Len(); n != keys {
		t.Fatalf("restored %d keys, want %d", n, keys)
	}
}

// Two restores of one image, and the original store, all keep writing; no
// Name may ever stand for two different contents.
func TestPebbleRestoredNamesNeverCollide(t *testing.T) {
	st := open(t, RocksDB)
	fillStore(t, st, 5000)
	im1 := seal(t, st, 1)
	book := nameBook{}
	book.add(t, im1)

	a := restore(t, RocksDB, im1)
	b := restore(t, RocksDB, im1)
	rng := rand.New(rand.NewPCG(3, 4))
	for id := int64(2); id <= 4; id++ {
		for i, s := range []Store{st, a, b} {
			if s.Writer().Full() {
				fillStore(t, s, 5000)
			}
			updateFraction(t, s, rng, 5000, 500, int(id)*10+i)
			book.add(t, seal(t, s, id))
		}
	}
	prefixes := map[string]bool{}
	for name := range book {
		prefixes[name[:36]] = true
	}
	// The original store, two restored ones: one store id each.
	if len(prefixes) != 3 {
		t.Fatalf("%d store ids among names, want 3: %v", len(prefixes), prefixes)
	}
}

func TestPebbleImageFileKinds(t *testing.T) {
	st := open(t, RocksDB)
	writeSample(t, st.Writer())
	im := seal(t, st, 1)
	var sst, manifest, options int
	for _, f := range im.Files {
		switch {
		case strings.HasSuffix(f.LocalName, ".sst"):
			sst++
			if !strings.HasPrefix(f.Name, strings.TrimSuffix(f.Name, "-"+f.LocalName)) || strings.Count(f.Name, "-") != 5 {
				t.Errorf("SST name %q is not <uuid>-<file>", f.Name)
			}
		case strings.HasPrefix(f.LocalName, "MANIFEST-"):
			manifest++
		case strings.HasPrefix(f.LocalName, "OPTIONS-"):
			options++
		}
		if !f.Shared && !strings.Contains(f.Name, "-1-"+f.LocalName) {
			t.Errorf("private file name %q lacks the checkpoint id", f.Name)
		}
	}
	if sst == 0 || manifest != 1 || options != 1 {
		t.Fatalf("image files %+v: %d SSTs, %d manifests, %d options", im.Files, sst, manifest, options)
	}
}

// A corrupt SST whose checksum was not recorded is still caught, by Pebble,
// as an error.
func TestPebbleCorruptSSTWithoutChecksum(t *testing.T) {
	st := open(t, RocksDB)
	fillStore(t, st, 20000)
	im := seal(t, st, 1)
	dir, files := download(t, im)
	for i := range files {
		files[i].SHA256 = ""
		if files[i].Shared {
			flip(t, filepath.Join(dir, files[i].LocalName))
		}
	}
	rs, err := Restore(RocksDB, dir, files)
	if err == nil {
		defer rs.Close()
		err = rs.Reader().Each(func(int, []byte, []byte) error { return nil })
	}
	if err == nil {
		t.Fatal("corrupt SSTs read without error")
	}
	t.Log(err)
}

func TestPebbleLargeSnapshotCommitsInPieces(t *testing.T) {
	st := open(t, RocksDB)
	w := st.Writer()
	big := []byte(strings.Repeat("x", 1<<20))
	for i := range 40 { // 40 MiB: more than one batch
		if err := w.Put(1, []byte(fmt.Sprintf("k%02d", i)), big); err != nil {
			t.Fatal(err)
		}
	}
	im := seal(t, st, 1)
	if n := restore(t, RocksDB, im).Len(); n != 40 {
		t.Fatalf("restored %d entries, want 40", n)
	}
}
