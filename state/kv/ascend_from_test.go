package kv

import (
	"slices"
	"strings"
	"testing"
)

// TestAscendFromLongKey: a from key longer than the spare capacity of the
// backend's scratch buffer (the first scan of a fresh backend) is still
// sought, not a slice-bounds panic.
func TestAscendFromLongKey(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		sm, err := NewSortedMapState(b, "rows", Bytes{}, String{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "k")
		for _, c := range []string{"a", "b", "c"} {
			if err := sm.Put(nil, []byte(c), c); err != nil {
				t.Fatal(err)
			}
		}
		from := []byte("b" + strings.Repeat("x", 300))
		var got []string
		if err := sm.Ascend(nil, &from, func(_ []byte, v string) bool { got = append(got, v); return true }); err != nil {
			t.Fatal(err)
		}
		if want := []string{"c"}; !slices.Equal(got, want) {
			t.Errorf("Ascend from b… = %v, want %v", got, want)
		}
	})
}
