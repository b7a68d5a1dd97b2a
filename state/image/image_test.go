package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPebbleDescriberInherit: SSTs inherited from a restored image keep
// the upload names the image gave them, new SSTs take the new
// incarnation's id, and other files are private to the checkpoint.
func TestPebbleDescriberInherit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("000004.sst", "old table")
	write("000009.sst", "new table")
	write("MANIFEST-000008", "manifest")
	sum, err := FileSHA256(filepath.Join(dir, "000004.sst"))
	if err != nil {
		t.Fatal(err)
	}
	d := NewPebbleDescriber("new-id")
	d.Inherit([]File{
		{Name: "old-id-000004.sst", LocalName: "000004.sst", Size: 9, SHA256: sum, Shared: true},
		{Name: "old-id-7-MANIFEST-000001", LocalName: "MANIFEST-000001", Size: 3, Shared: false},
	})
	im, err := d.Describe(12, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Hashing waits for Finish (the checkpoint's asynchronous part).
	for _, f := range im.Files {
		if f.LocalName != "000004.sst" && f.SHA256 != "" {
			t.Errorf("%s hashed by Describe", f.LocalName)
		}
	}
	if err := im.Finish(); err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range im.Files {
		got[f.LocalName] = f
	}
	want := map[string]string{
		"000004.sst":      "old-id-000004.sst",
		"000009.sst":      "new-id-000009.sst",
		"MANIFEST-000008": "new-id-12-MANIFEST-000008",
	}
	for local, name := range want {
		f, ok := got[local]
		if !ok || f.Name != name || f.Shared != strings.HasSuffix(local, ".sst") {
			t.Errorf("%s: got %+v, want name %s", local, f, name)
		}
	}
	newSum, err := FileSHA256(filepath.Join(dir, "000009.sst"))
	if err != nil {
		t.Fatal(err)
	}
	if got["000009.sst"].Size != 9 || got["000009.sst"].SHA256 != newSum || got["000004.sst"].SHA256 != sum || im.Bytes != 9+9+8 {
		t.Errorf("sizes: %+v, total %d", got, im.Bytes)
	}
	// A second description keeps the inherited name (now from its cache).
	im, err = d.Describe(13, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range im.Files {
		if f.LocalName == "000004.sst" && f.Name != "old-id-000004.sst" {
			t.Errorf("second description renamed the inherited SST to %s", f.Name)
		}
	}
}

// TestPebbleDescriberHashesOnce: an SST that stays from one checkpoint to
// the next is read once. The second image's Finish must not read it again:
// the test replaces the file's content in the second image's directory (a
// hard link would share it; a copy with other bytes proves which one was
// read) and expects the hash of the first.
func TestPebbleDescriberHashesOnce(t *testing.T) {
	base := t.TempDir()
	dir1, dir2 := filepath.Join(base, "chk-1"), filepath.Join(base, "chk-2")
	for _, d := range []string{dir1, dir2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir1, "000005.sst"), []byte("table five"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "000005.sst"), []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := FileSHA256(filepath.Join(dir1, "000005.sst"))
	if err != nil {
		t.Fatal(err)
	}
	d := NewPebbleDescriber("id")
	im1, err := d.Describe(1, dir1)
	if err != nil {
		t.Fatal(err)
	}
	if err := im1.Finish(); err != nil {
		t.Fatal(err)
	}
	im2, err := d.Describe(2, dir2)
	if err != nil {
		t.Fatal(err)
	}
	if err := im2.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := im2.Files[0].SHA256; got != want {
		t.Errorf("second image hashed the SST again: %s, want the first hash %s", got, want)
	}
}
