package statecache

import (
	"slices"
	"testing"
	"time"
)

// TestSweeper: one sweep timer armed at a time; Due only at or after it;
// a TTL under a millisecond counts as one; no TTL arms nothing.
func TestSweeper(t *testing.T) {
	var armed []int64
	reg := func(at int64) { armed = append(armed, at) }
	s := NewSweeper(10 * time.Second)
	if !s.Enabled() || s.TTL != 10_000 || s.Options().TTL != 10*time.Second {
		t.Fatalf("NewSweeper(10s) = %+v", s)
	}
	s.Schedule(reg, 100)
	s.Schedule(reg, 50) // one is armed: ignored
	if s.Due(99) {
		t.Error("Due(99) before the sweep at 100")
	}
	if !s.Due(100) || s.Due(100) {
		t.Error("Due(100) must be true once")
	}
	s.Schedule(reg, 200)
	if want := []int64{100, 200}; !slices.Equal(armed, want) {
		t.Errorf("armed %v, want %v", armed, want)
	}
	if us := NewSweeper(500 * time.Microsecond); us.TTL != 1 {
		t.Errorf("a TTL of 500µs is %d ms, want 1", us.TTL)
	}
	off := NewSweeper(0)
	off.Schedule(reg, 300)
	if off.Enabled() || len(armed) != 2 {
		t.Errorf("without TTL: enabled %v, armed %v", off.Enabled(), armed)
	}
}
