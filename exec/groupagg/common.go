package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
)

// minSweepInterval and maxSweepInterval bound how often expired state is
// swept: about twice per TTL, but not more often than every second (the scan
// visits every key; lookups expire keys lazily in between) and at least every
// minute.
const (
	minSweepInterval = int64(time.Second / time.Millisecond)
	maxSweepInterval = int64(time.Minute / time.Millisecond)
)

// stateTTL is table.exec.state.ttl: a key not written for TTL milliseconds
// of processing time is forgotten (Flink's OnCreateAndWrite and
// NeverReturnExpired; statecache applies the rule to the cached entries).
// The group operators sweep their cache every interval, about twice per
// TTL.
type stateTTL struct {
	statecache.Sweeper
	interval int64
}

func newStateTTL(d time.Duration) (stateTTL, error) {
	if d < 0 {
		return stateTTL{}, fmt.Errorf("table.exec.state.ttl must not be negative, got %s", d)
	}
	s := statecache.NewSweeper(d)
	return stateTTL{Sweeper: s, interval: min(max(s.TTL/2, minSweepInterval), maxSweepInterval)}, nil
}

// arm registers the next sweep unless one is pending.
func (t *stateTTL) arm(ctx *exec.OperatorContext, now int64) {
	t.Schedule(ctx.RegisterProcessingTimer, now+t.interval)
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
