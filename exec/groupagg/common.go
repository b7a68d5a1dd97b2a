package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// minSweepInterval and maxSweepInterval bound how often expired state is
// swept: about twice per TTL, but not more often than every second (the scan
// visits every key; lookups expire keys lazily in between) and at least every
// minute.
const (
	minSweepInterval = int64(time.Second / time.Millisecond)
	maxSweepInterval = int64(time.Minute / time.Millisecond)
)

// stateTTL is table.exec.state.ttl: a key not written for ms milliseconds of
// processing time is forgotten. As in Flink (TTL updated on create and
// write, expired state never returned) a key written at t is expired from
// t+ms on. The kv states are declared with the TTL, which the backend
// applies to what it holds; the operators' caches apply the same rule to
// their entries (cache.go) and sweep them on the timer armed here, so that
// expired keys do not stay in memory.
type stateTTL struct {
	ms       int64
	interval int64
	pending  int64 // time of the registered sweep timer; 0 when none
}

func newStateTTL(d time.Duration) (stateTTL, error) {
	if d < 0 {
		return stateTTL{}, fmt.Errorf("table.exec.state.ttl must not be negative, got %s", d)
	}
	ms := d.Milliseconds()
	if d > 0 && ms == 0 {
		ms = 1
	}
	return stateTTL{ms: ms, interval: min(max(ms/2, minSweepInterval), maxSweepInterval)}, nil
}

func (t *stateTTL) enabled() bool { return t.ms > 0 }

// arm registers the next sweep unless one is pending.
func (t *stateTTL) arm(ctx *exec.OperatorContext, now int64) {
	if t.ms > 0 && t.pending == 0 {
		t.pending = now + t.interval
		ctx.RegisterProcessingTimer(t.pending)
	}
}

// due reports whether the timer at ts is the pending sweep, and clears it.
func (t *stateTTL) due(ts int64) bool {
	if t.pending == 0 || ts < t.pending {
		return false
	}
	t.pending = 0
	return true
}

// checkClock makes sure the runtime gives the operator a clock and
// processing-time timers when it needs them.
func checkClock(ctx *exec.OperatorContext, name, why string) error {
	if ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil {
		return fmt.Errorf("%s: %s needs a processing-time clock and timers", name, why)
	}
	return nil
}

func checkKeyCols(name string, cols []int) error {
	for _, c := range cols {
		if c < 0 {
			return fmt.Errorf("%s: invalid key column %d", name, c)
		}
	}
	return nil
}

// checkWidth makes sure every key column exists in rows of width w.
func checkWidth(name string, cols []int, w int) error {
	for _, c := range cols {
		if c >= w {
			return fmt.Errorf("%s: key column %d is out of range for rows of %d columns", name, c, w)
		}
	}
	return nil
}
