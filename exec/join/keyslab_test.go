package join

import (
	"bytes"
	"testing"
)

// TestKeySlab stores keys of every size (empty, short, filling the first
// page past its doublings, longer than a page) and reads each back by its
// address after all the others were added: a page copied without its
// bytes, or an address into the wrong page, returns other bytes.
func TestKeySlab(t *testing.T) {
	var s keySlab
	type stored struct {
		off int
		key []byte
	}
	var all []stored
	total := 0
	for i := range 6000 {
		n := (i * 37) % 700
		if i%1000 == 999 {
			n = keyPage + i // a page of its own
		}
		k := make([]byte, n)
		for j := range k {
			k[j] = byte(i + j*7)
		}
		all = append(all, stored{s.add(k), k})
		total += n
	}
	if s.used != total {
		t.Fatalf("used = %d, want %d", s.used, total)
	}
	if len(s.pages) < 3 {
		t.Fatalf("%d pages for %d bytes", len(s.pages), total)
	}
	for i, e := range all {
		got := s.get(e.off, int32(len(e.key)))
		if !bytes.Equal(got, e.key) || cap(got) != len(e.key) {
			t.Fatalf("key %d (%d bytes) read back wrong (%d bytes, cap %d)", i, len(e.key), len(got), cap(got))
		}
	}
	for i, p := range s.pages[:len(s.pages)-1] {
		if len(p) > keyPage && len(p) != cap(p) {
			t.Fatalf("page %d: %d bytes of %d", i, len(p), cap(p))
		}
	}
}
