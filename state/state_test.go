package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const none = KeyGroupNone

type entry struct {
	kg         int
	key, value string
}

func kinds() []Kind { return []Kind{Hashmap, RocksDB} }

func forKinds(t *testing.T, fn func(t *testing.T, kind Kind)) {
	for _, k := range kinds() {
		t.Run(string(k), func(t *testing.T) { fn(t, k) })
	}
}

func open(t testing.TB, kind Kind) Store {
	t.Helper()
	st, err := Open(kind, filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t testing.TB, w Writer, kg int, key, value string) {
	t.Helper()
	if err := w.Put(kg, []byte(key), []byte(value)); err != nil {
		t.Fatal(err)
	}
}

func del(t testing.TB, w Writer, kg int, key string) {
	t.Helper()
	if err := w.Delete(kg, []byte(key)); err != nil {
		t.Fatal(err)
	}
}

func seal(t testing.TB, st Store, id int64) *Image {
	t.Helper()
	im, err := st.Seal(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Discard() })
	if err := im.Finish(); err != nil {
		t.Fatal(err)
	}
	return im
}

func readAll(t testing.TB, st Store) []entry {
	t.Helper()
	var got []entry
	err := st.Reader().Each(func(kg int, key, value []byte) error {
		got = append(got, entry{kg, string(key), string(value)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// download copies an image's files into a fresh directory under their local
// names, as the checkpoint package does on recovery.
func download(t testing.TB, im *Image) (string, []File) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restore")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range im.Files {
		b, err := os.ReadFile(filepath.Join(im.Dir, f.LocalName))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.LocalName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, slices.Clone(im.Files)
}

func restore(t testing.TB, kind Kind, im *Image) Store {
	t.Helper()
	dir, files := download(t, im)
	st, err := Restore(kind, dir, files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func wantEntries(t *testing.T, what string, got, want []entry) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
		err  string
	}{
		{in: "hashmap", want: Hashmap},
		{in: "HashMap", want: Hashmap},
		{in: "rocksdb", want: RocksDB},
		{in: "RocksDB", want: RocksDB},
		{in: "pebble", want: RocksDB},
		{in: "PEBBLE", want: RocksDB},
		{in: "memory", err: "Invalid value for option 'state.backend.type'. Expected one of [hashmap, rocksdb], but was: memory"},
		{in: "", err: "Invalid value for option 'state.backend.type'. Expected one of [hashmap, rocksdb], but was: "},
	} {
		got, err := ParseKind(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseKind(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// writeSample writes entries in several key groups and operator state, out
// of order, with an overwrite and deletes.
func writeSample(t *testing.T, w Writer) {
	put(t, w, 5, "b", "v5b")
	put(t, w, 5, "a", "old")
	put(t, w, 300, "k", "v300")
	put(t, w, none, "src", "offset=7")
	put(t, w, 0, "z", "v0z")
	put(t, w, 5, "c", "gone")
	put(t, w, 5, "a", "v5a") // overwrite
	del(t, w, 5, "c")
	del(t, w, 7, "missing") // deleting a missing key is fine
	put(t, w, none, "", "empty key")
	put(t, w, 1, "x", "") // empty value
}

// The expected replay: key groups ascending, keys ascending within one,
// operator state (KeyGroupNone, 0xFFFF) last.
var sampleWant = []entry{
	{0, "z", "v0z"},
	{1, "x", ""},
	{5, "a", "v5a"},
	{5, "b", "v5b"},
	{300, "k", "v300"},
	{none, "", "empty key"},
	{none, "src", "offset=7"},
}

func TestRoundTrip(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		if !w.Full() {
			t.Fatal("first writer of a fresh store: Full() = false")
		}
		writeSample(t, w)
		wantEntries(t, "live store", readAll(t, st), sampleWant)
		if n := st.Len(); n != 7 {
			t.Fatalf("Len = %d, want 7", n)
		}
		im := seal(t, st, 1)
		if im.Kind != kind {
			t.Errorf("image kind %q, want %q", im.Kind, kind)
		}
		if im.KeyGroups != [2]int{0, 300} {
			t.Errorf("KeyGroups = %v, want [0 300]", im.KeyGroups)
		}
		checkImageFiles(t, im)

		rs := restore(t, kind, im)
		if !rs.Writer().Full() {
			t.Fatal("first writer of a restored store: Full() = false")
		}
		wantEntries(t, "restored", readAll(t, rs), sampleWant)
		if n := rs.Len(); n != 7 {
			t.Fatalf("restored Len = %d, want 7", n)
		}
	})
}

// checkImageFiles checks sizes, checksums, names and Bytes against the files
// on disk.
func checkImageFiles(t *testing.T, im *Image) {
	t.Helper()
	if len(im.Files) == 0 {
		t.Fatal("image has no files")
	}
	var total int64
	for _, f := range im.Files {
		b, err := os.ReadFile(filepath.Join(im.Dir, f.LocalName))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != f.Size {
			t.Errorf("%s: size %d, recorded %d", f.LocalName, len(b), f.Size)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: SHA-256 mismatch", f.LocalName)
		}
		if f.Shared != strings.HasSuffix(f.LocalName, ".sst") {
			t.Errorf("%s: Shared = %v", f.LocalName, f.Shared)
		}
		if !strings.HasSuffix(f.Name, "-"+f.LocalName) {
			t.Errorf("Name %q does not end in its local name %q", f.Name, f.LocalName)
		}
		total += f.Size
	}
	if total != im.Bytes {
		t.Errorf("Bytes = %d, files sum to %d", im.Bytes, total)
	}
}

func TestEmptyStore(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		im := seal(t, st, 1)
		if im.KeyGroups != [2]int{-1, -1} {
			t.Errorf("KeyGroups = %v, want [-1 -1]", im.KeyGroups)
		}
		rs := restore(t, kind, im)
		wantEntries(t, "restored", readAll(t, rs), nil)

		// Only operator state: still no key group.
		put(t, st.Writer(), none, "pos", "1")
		im = seal(t, st, 2)
		if im.KeyGroups != [2]int{-1, -1} {
			t.Errorf("KeyGroups with only operator state = %v, want [-1 -1]", im.KeyGroups)
		}
	})
}

func TestImageUnaffectedByLaterWrites(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		writeSample(t, st.Writer())
		im1 := seal(t, st, 1)

		w := st.Writer()
		put(t, w, 5, "a", "changed")
		del(t, w, 0, "z")
		put(t, w, 9, "new", "n")
		// Read the live store mid-snapshot too: it must not touch the image.
		readAll(t, st)
		im2 := seal(t, st, 2)
		put(t, st.Writer(), 10, "later", "l")

		checkImageFiles(t, im1)
		wantEntries(t, "image 1", readAll(t, restore(t, kind, im1)), sampleWant)
		wantEntries(t, "image 2", readAll(t, restore(t, kind, im2)), []entry{
			{1, "x", ""},
			{5, "a", "changed"},
			{5, "b", "v5b"},
			{9, "new", "n"},
			{300, "k", "v300"},
			{none, "", "empty key"},
			{none, "src", "offset=7"},
		})
		if im2.KeyGroups != [2]int{1, 300} {
			t.Errorf("image 2 KeyGroups = %v, want [1 300]", im2.KeyGroups)
		}
	})
}

// TestFrozenImageWrittenDuringWrites writes a frozen image (Freeze, then
// Finish on another goroutine, as the checkpoint runtime does) while the
// store keeps taking writes, including same-length overwrites that a store
// could apply in place: the image must hold the state as of the Freeze.
func TestFrozenImageWrittenDuringWrites(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		writeSample(t, st.Writer())
		im, err := st.Freeze(1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { im.Discard() })
		finished := make(chan error, 1)
		go func() { finished <- im.Finish() }()

		w := st.Writer()
		for i := range 200 {
			put(t, w, 5, "a", fmt.Sprintf("%03d", i%1000)) // "v5a" has 3 bytes too
			put(t, w, 0, "z", "new")
			put(t, w, 2, fmt.Sprintf("k%d", i), "added")
		}
		del(t, w, 5, "b")
		if err := <-finished; err != nil {
			t.Fatal(err)
		}
		checkImageFiles(t, im)
		wantEntries(t, "frozen image", readAll(t, restore(t, kind, im)), sampleWant)

		// The store itself has every write, and the next image sees them.
		im2 := seal(t, st, 2)
		got := readAll(t, restore(t, kind, im2))
		if len(got) != len(sampleWant)-1+200 {
			t.Fatalf("image 2 has %d entries, want %d", len(got), len(sampleWant)-1+200)
		}
		for _, e := range got {
			switch {
			case e.kg == 5 && e.key == "a" && e.value != "199":
				t.Errorf("image 2: 5/a = %q, want the last write %q", e.value, "199")
			case e.kg == 0 && e.key == "z" && e.value != "new":
				t.Errorf("image 2: 0/z = %q, want %q", e.value, "new")
			case e.kg == 5 && e.key == "b":
				t.Errorf("image 2 still holds the deleted 5/b")
			}
		}
	})
}

func TestFullFlag(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		if !st.Writer().Full() {
			t.Fatal("fresh: Full() = false")
		}
		put(t, st.Writer(), 1, "a", "1")
		if !st.Writer().Full() {
			t.Fatal("before the first Seal: Full() = false")
		}
		im := seal(t, st, 1)
		if st.Writer().Full() {
			t.Fatal("after the first Seal: Full() = true")
		}
		seal(t, st, 2)
		if st.Writer().Full() {
			t.Fatal("after the second Seal: Full() = true")
		}
		rs := restore(t, kind, im)
		if !rs.Writer().Full() {
			t.Fatal("restored: Full() = false")
		}
		seal(t, rs, 2)
		if rs.Writer().Full() {
			t.Fatal("restored, after Seal: Full() = true")
		}
	})
}

// A full snapshot replaces the store: after a restore the operator writes
// everything it still has, and what it does not write is gone.
func TestFullSnapshotReplacesRestoredContents(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		writeSample(t, st.Writer())
		im1 := seal(t, st, 1)

		rs := restore(t, kind, im1)
		w := rs.Writer()
		put(t, w, 5, "a", "v5a")
		put(t, w, none, "src", "offset=9")
		im2 := seal(t, rs, 2)
		want := []entry{{5, "a", "v5a"}, {none, "src", "offset=9"}}
		wantEntries(t, "restored store after full snapshot", readAll(t, rs), want)
		wantEntries(t, "image of the full snapshot", readAll(t, restore(t, kind, im2)), want)

		// A full snapshot that writes nothing leaves an empty image.
		rs2 := restore(t, kind, im1)
		im3 := seal(t, rs2, 2)
		wantEntries(t, "empty full snapshot", readAll(t, restore(t, kind, im3)), nil)

		// Later snapshots are incremental: unwritten entries stay.
		put(t, rs.Writer(), 6, "b", "x")
		im4 := seal(t, rs, 3)
		wantEntries(t, "incremental after restore", readAll(t, restore(t, kind, im4)),
			[]entry{{5, "a", "v5a"}, {6, "b", "x"}, {none, "src", "offset=9"}})
	})
}

func TestDeleteAndReadd(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		put(t, w, 2, "k", "v1")
		put(t, w, 2, "j", "j1")
		im1 := seal(t, st, 1)

		del(t, w, 2, "k")
		im2 := seal(t, st, 2)

		put(t, w, 2, "k", "v2")
		// Within one interval: add, delete, add again.
		put(t, w, 3, "m", "m1")
		del(t, w, 3, "m")
		put(t, w, 3, "m", "m2")
		del(t, w, 2, "j")
		im3 := seal(t, st, 3)

		wantEntries(t, "image 1", readAll(t, restore(t, kind, im1)), []entry{{2, "j", "j1"}, {2, "k", "v1"}})
		wantEntries(t, "image 2", readAll(t, restore(t, kind, im2)), []entry{{2, "j", "j1"}})
		wantEntries(t, "image 3", readAll(t, restore(t, kind, im3)), []entry{{2, "k", "v2"}, {3, "m", "m2"}})
		if st.Len() != 2 {
			t.Fatalf("Len = %d, want 2", st.Len())
		}
	})
}

// Many keys, deleted and re-added over several checkpoints, exercise the
// hashmap's slot reuse and incremental ordering against a plain map.
func TestChurnMatchesModel(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		cur := map[[2]string]entry{}
		var id int64
		for round := range 6 {
			w := st.Writer()
			for i := range 500 {
				n := (i*7 + round*131) % 400
				kg := n % 5
				key := fmt.Sprintf("key%03d", n)
				if (i+round)%3 == 0 {
					del(t, w, kg, key)
					delete(cur, [2]string{fmt.Sprint(kg), key})
					continue
				}
				v := fmt.Sprintf("r%d-i%d", round, i)
				put(t, w, kg, key, v)
				cur[[2]string{fmt.Sprint(kg), key}] = entry{kg, key, v}
			}
			id++
			im := seal(t, st, id)
			var want []entry
			for _, e := range cur {
				want = append(want, e)
			}
			slices.SortFunc(want, func(a, b entry) int {
				if a.kg != b.kg {
					return a.kg - b.kg
				}
				return strings.Compare(a.key, b.key)
			})
			wantEntries(t, fmt.Sprintf("round %d live", round), readAll(t, st), want)
			wantEntries(t, fmt.Sprintf("round %d image", round), readAll(t, restore(t, kind, im)), want)
		}
	})
}

func TestRestoreOlderImageAfterNewerOnes(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		for i := range 200 {
			put(t, w, i%4, fmt.Sprintf("k%03d", i), "v0")
		}
		im1 := seal(t, st, 1)
		for round := int64(2); round <= 4; round++ {
			for i := range 200 {
				if i%10 == int(round) {
					put(t, w, i%4, fmt.Sprintf("k%03d", i), fmt.Sprint("v", round))
				}
			}
			del(t, w, 0, fmt.Sprintf("k%03d", round*4))
			im := seal(t, st, round)
			if round == 3 {
				im.Discard() // a subsumed image is gone; image 1 must not depend on it
			}
		}
		got := readAll(t, restore(t, kind, im1))
		if len(got) != 200 {
			t.Fatalf("image 1 restored %d entries, want 200", len(got))
		}
		for _, e := range got {
			if e.value != "v0" {
				t.Fatalf("image 1 entry %v changed by later writes", e)
			}
		}
	})
}

func TestReaderSlicesStayValid(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		for i := range 3000 {
			put(t, w, 1, fmt.Sprintf("key-%05d", i), strings.Repeat("v", i%50)+fmt.Sprint(i))
		}
		var keys, values [][]byte
		if err := st.Reader().Each(func(_ int, k, v []byte) error {
			keys, values = append(keys, k), append(values, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range 3000 {
			if string(keys[i]) != fmt.Sprintf("key-%05d", i) || string(values[i]) != strings.Repeat("v", i%50)+fmt.Sprint(i) {
				t.Fatalf("entry %d: kept slices now %q=%q", i, keys[i], values[i])
			}
		}
	})
}

func TestWriterArgumentsAreCopied(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		k, v := []byte("key"), []byte("value")
		if err := w.Put(1, k, v); err != nil {
			t.Fatal(err)
		}
		copy(k, "XXX")
		copy(v, "YYYYY")
		wantEntries(t, "after reusing buffers", readAll(t, st), []entry{{1, "key", "value"}})
	})
}

func TestWriterErrors(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		w := st.Writer()
		for _, kg := range []int{-2, 32768, 70000} {
			if err := w.Put(kg, []byte("k"), nil); err == nil || !strings.Contains(err.Error(), "key group") {
				t.Errorf("Put with key group %d: error %v", kg, err)
			}
			if err := w.Delete(kg, []byte("k")); err == nil || !strings.Contains(err.Error(), "key group") {
				t.Errorf("Delete with key group %d: error %v", kg, err)
			}
		}
		put(t, w, 32767, "max", "ok")
		seal(t, st, 5)
		if _, err := st.Seal(5); err == nil || !strings.Contains(err.Error(), "not after") {
			t.Errorf("Seal with a repeated id: error %v", err)
		}
		if _, err := st.Seal(3); err == nil {
			t.Error("Seal with a smaller id: no error")
		}
		im := seal(t, st, 6)
		if im.KeyGroups != [2]int{32767, 32767} {
			t.Errorf("KeyGroups = %v", im.KeyGroups)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Writer().Put(1, []byte("k"), nil); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Put after Close: error %v", err)
		}
		if _, err := st.Seal(7); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Seal after Close: error %v", err)
		}
		if err := st.Reader().Each(func(int, []byte, []byte) error { return nil }); err == nil {
			t.Error("Reader after Close: no error")
		}
		// Images outlive their store.
		checkImageFiles(t, im)
		if err := im.Discard(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(im.Dir); !os.IsNotExist(err) {
			t.Errorf("image dir after Discard: %v", err)
		}
	})
}

func TestOpenRejectsNonEmptyDir(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(kind, dir); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("Open in a non-empty dir: error %v", err)
		}
	})
	if _, err := Open("memory", t.TempDir()); err == nil {
		t.Fatal("Open with an unknown kind: no error")
	}
}

func TestDiscardKeepsLiveStore(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		put(t, st.Writer(), 1, "a", "b")
		im, err := st.Seal(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := im.Discard(); err != nil {
			t.Fatal(err)
		}
		put(t, st.Writer(), 1, "c", "d")
		im = seal(t, st, 2)
		wantEntries(t, "after discarding the previous image", readAll(t, restore(t, kind, im)),
			[]entry{{1, "a", "b"}, {1, "c", "d"}})
	})
}

func TestDiscardRemovesClosedStoreDir(t *testing.T) {
	forKinds(t, func(t *testing.T, kind Kind) {
		dir := filepath.Join(t.TempDir(), "store")
		st, err := Open(kind, dir)
		if err != nil {
			t.Fatal(err)
		}
		put(t, st.Writer(), 1, "a", "b")
		im, err := st.Seal(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(im.Dir); err != nil {
			t.Fatalf("image dir after store Close: %v", err)
		}
		if err := im.Discard(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("store dir after Close and Discard: %v", err)
		}
	})
}

func TestCorruptImage(t *testing.T) {
	type corruption struct {
		name string
		// damage changes the downloaded files; it returns the file list to
		// restore with.
		damage func(t *testing.T, dir string, files []File) []File
		want   string
	}
	biggest := func(files []File) int {
		j := 0
		for i, f := range files {
			if f.Size > files[j].Size {
				j = i
			}
		}
		return j
	}
	cases := []corruption{
		{"truncated", func(t *testing.T, dir string, files []File) []File {
			f := files[biggest(files)]
			if err := os.Truncate(filepath.Join(dir, f.LocalName), f.Size/2); err != nil {
				t.Fatal(err)
			}
			return files
		}, "truncated"},
		{"flipped byte", func(t *testing.T, dir string, files []File) []File {
			flip(t, filepath.Join(dir, files[biggest(files)].LocalName))
			return files
		}, "SHA-256"},
		{"missing file", func(t *testing.T, dir string, files []File) []File {
			if err := os.Remove(filepath.Join(dir, files[0].LocalName)); err != nil {
				t.Fatal(err)
			}
			return files
		}, "no such file"},
		{"path in local name", func(t *testing.T, dir string, files []File) []File {
			files[0].LocalName = "../" + files[0].LocalName
			return files
		}, "invalid local file name"},
		{"no files", func(t *testing.T, dir string, files []File) []File { return nil }, "no files"},
	}
	forKinds(t, func(t *testing.T, kind Kind) {
		st := open(t, kind)
		writeSample(t, st.Writer())
		im := seal(t, st, 1)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				dir, files := download(t, im)
				files = tc.damage(t, dir, files)
				rs, err := Restore(kind, dir, files)
				if err == nil {
					rs.Close()
					t.Fatal("Restore of a damaged image: no error")
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), string(kind)) {
					t.Fatalf("error %q, want it to mention %q and %q", err, tc.want, kind)
				}
			})
		}
	})
}

func flip(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Without recorded checksums the hashmap image still verifies itself.
func TestHashmapImageSelfCheck(t *testing.T) {
	st := open(t, Hashmap)
	writeSample(t, st.Writer())
	im := seal(t, st, 1)
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   string
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "CRC-32C"},
		{"cut short", func(b []byte) []byte { return b[:len(b)-7] }, "end marker"},
		{"tiny", func(b []byte) []byte { return b[:10] }, "truncated"},
		{"other file", func(b []byte) []byte { return []byte(strings.Repeat("not an image ", 5)) }, "not a hashmap state image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, files := download(t, im)
			path := filepath.Join(dir, files[0].LocalName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b = tc.damage(b)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			files[0].SHA256, files[0].Size = "", int64(len(b))
			_, err = Restore(Hashmap, dir, files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
