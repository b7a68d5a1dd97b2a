package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHashmapStreamRoundTrip: a file written record by record reads back
// with ReadHashmap (the in-memory reader) and ScanHashmapFile, and a file
// of WriteHashmap scans; keys out of order and damaged files are errors.
func TestHashmapStreamRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.entries")
	w, err := CreateHashmap(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 1000 {
		k, v := fmt.Sprintf("k%04d", i), strings.Repeat("v", i%7)
		if err := w.Add([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want = append(want, k+"="+v)
	}
	if err := w.Add([]byte("k0000"), nil); err == nil {
		t.Error("a key out of order was accepted")
	}
	size, sum, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != size || len(sum) != 64 {
		t.Errorf("size %d (file %d), sum %q", size, len(data), sum)
	}
	var got []string
	if err := ReadHashmap(data, func([]byte) bool { return true }, func(uint64) {}, func(k, v []byte) {
		got = append(got, string(k)+"="+string(v))
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ReadHashmap read %d records, want %d", len(got), len(want))
	}
	got = got[:0]
	n, err := ScanHashmapFile(path, func(k, v []byte) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	if err != nil || n != 1000 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ScanHashmapFile: %d records, %v", n, err)
	}
	// WriteHashmap's files scan the same.
	p2 := filepath.Join(dir, "w.entries")
	if _, _, err := WriteHashmap(p2, 3, func(buf []byte, lo, hi int) []byte {
		for i := lo; i < hi; i++ {
			buf = AppendHashmapRecord(buf, fmt.Sprintf("x%d", i), []byte("y"))
		}
		return buf
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := ScanHashmapFile(p2, func(k, v []byte) error { return nil }); n != 3 || err != nil {
		t.Errorf("scanning WriteHashmap's file: %d, %v", n, err)
	}
	for _, damage := range []string{"flip", "truncate"} {
		bad := append([]byte(nil), data...)
		if damage == "flip" {
			bad[len(bad)/2] ^= 0x10
		} else {
			bad = bad[:len(bad)-30]
		}
		p := filepath.Join(dir, damage)
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ScanHashmapFile(p, func(k, v []byte) error { return nil }); err == nil {
			t.Errorf("%s: no error", damage)
		}
	}
}
