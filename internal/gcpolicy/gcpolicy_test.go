package gcpolicy

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// gogc reads the percentage in force from the runtime.
func gogc(t *testing.T) int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatalf("the runtime does not report /gc/gogc:percent")
	}
	return int64(s[0].Value.Uint64())
}

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int64
	}{
		{0, 256 * mib, 6400},                   // nothing measured yet: 256 MiB over the 4 MiB minimum
		{1, 256 * mib, 6400},                   // under the minimum: likewise
		{2 * mib, 2 * mib, defaultPercent},     // a headroom under the minimum
		{512 * mib, 256 * mib, defaultPercent}, // large state: Go's default
		{256 * mib, 256 * mib, defaultPercent}, // the headroom is the live heap
		{64 * mib, 256 * mib, 400},             // grows by 256 MiB = 400 % of 64 MiB
		{10 * mib, 256 * mib, 2560},            // grows by 256 MiB = 2560 % of 10 MiB
		{1, 1 << 50, maxPercent},               // bounded whatever the headroom
	} {
		if got := percentFor(c.live, c.headroom); got != c.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// TestStartStop: the policy raises GOGC over a small live heap, follows it
// after collections, and Stop restores the percentage the process had.
func TestStartStop(t *testing.T) {
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	p := Start(1 << 40) // a headroom far above any live heap of this test
	if got := gogc(t); got != int64(p.Percent()) || got <= defaultPercent {
		t.Errorf("GOGC while the policy runs = %d, policy says %d; want the same, above %d", got, p.Percent(), defaultPercent)
	}
	p.Stop()
	if got := gogc(t); got != 150 {
		t.Errorf("GOGC after Stop = %d, want 150 (the value before Start)", got)
	}
	runtime.GC() // a finalizer armed before Stop must not change it again
	runtime.GC()
	if got := gogc(t); got != 150 {
		t.Errorf("GOGC after a collection following Stop = %d, want 150", got)
	}
}

// TestFollowsLiveHeap: with 32 MiB live and a 64 MiB headroom the heap may
// grow by 64 MiB, 200 % of the live heap (a little less for the test's own
// live memory); once the 32 MiB are garbage the percentage rises again.
func TestFollowsLiveHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	p := Start(64 << 20)
	defer p.Stop()
	live := make([]byte, 32<<20)
	for i := range live {
		live[i] = byte(i)
	}
	if got := collectUntil(t, func(pc int64) bool { return pc <= 200 }); got < 150 || got > 200 {
		t.Errorf("GOGC with 32 MiB live = %d, want 150…200", got)
	}
	runtime.KeepAlive(live)
	live = nil
	if got := collectUntil(t, func(pc int64) bool { return pc >= 1000 }); got < 1000 {
		t.Errorf("GOGC after the 32 MiB became garbage = %d, want ≥ 1000", got)
	}
}

// collectUntil collects until the policy's finalizer (which runs on the
// runtime's finalizer goroutine after a collection) has set a percentage
// that satisfies done, at most 100 collections, and returns the percentage.
func collectUntil(t *testing.T, done func(int64) bool) int64 {
	t.Helper()
	var pc int64
	for range 100 {
		runtime.GC()
		runtime.Gosched()
		if pc = gogc(t); done(pc) {
			break
		}
	}
	return pc
}
