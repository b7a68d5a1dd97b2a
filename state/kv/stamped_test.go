package kv

import (
	"testing"
	"time"
)

// TestStampedValues: a value put with an earlier write time expires from
// that time on (TTL 1 s), on every backend and across a restore, and
// GetStamped reports the time it was put with.
func TestStampedValues(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{now: 5000}
		b := openVariant(t, v, clk)
		s, err := NewValueState[int64](b, "s", Int64{}, Options{TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, b, "a")
		if err := s.PutStamped(nil, 7, 4200); err != nil { // written at 4200: expires at 5200
			t.Fatal(err)
		}
		setKey(t, b, "b")
		if err := s.Put(nil, 8); err != nil { // written now, 5000: expires at 6000
			t.Fatal(err)
		}
		setKey(t, b, "a")
		got, at, ok, err := s.GetStamped(nil)
		if err != nil || !ok || got != 7 || at != 4200 {
			t.Fatalf("a at 5000: %d written at %d (%v, %v); want 7 written at 4200", got, at, ok, err)
		}
		clk.now = 5199
		r, _ := snapshotAndRestore(t, b, v, clk, 1)
		s, err = NewValueState[int64](r, "s", Int64{}, Options{TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		setKey(t, r, "a")
		if got, at, ok, err := s.GetStamped(nil); err != nil || !ok || got != 7 || at != 4200 {
			t.Fatalf("a restored at 5199: %d written at %d (%v, %v); want 7 written at 4200", got, at, ok, err)
		}
		clk.now = 5200
		if _, _, ok, err := s.GetStamped(nil); err != nil || ok {
			t.Fatalf("a at 5200: found %v (%v); want expired", ok, err)
		}
		setKey(t, r, "b")
		if got, at, ok, err := s.GetStamped(nil); err != nil || !ok || got != 8 || at != 5000 {
			t.Fatalf("b at 5200: %d written at %d (%v, %v); want 8 written at 5000", got, at, ok, err)
		}
	})
}
