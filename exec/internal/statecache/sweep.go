package statecache

import (
	"time"

	"github.com/flinksql/flinksql/state/kv"
)

// Sweeper is state TTL (table.exec.state.ttl) as the operator families
// apply it in front of their backend: the TTL itself, the kv.Options that
// declare it on the states (the backend expires what it holds), and the
// one processing-time timer, armed at most once at a time, on which the
// operator sweeps its cache (Cache.Sweep) so that idle keys leave memory.
// When the sweep runs is the operator's choice (Schedule's time).
type Sweeper struct {
	// TTL in ms; 0 disables TTL.
	TTL     int64
	pending int64 // time of the armed sweep timer; 0 when none
}

// NewSweeper returns the Sweeper of a TTL of d (rounded up to a whole ms;
// the caller rejected a negative one).
func NewSweeper(d time.Duration) Sweeper {
	ms := d.Milliseconds()
	if d > 0 && ms == 0 {
		ms = 1
	}
	return Sweeper{TTL: ms}
}

// Enabled reports whether a TTL is set.
func (s *Sweeper) Enabled() bool { return s.TTL > 0 }

// Options declares a state with the TTL.
func (s *Sweeper) Options() kv.Options {
	return kv.Options{TTL: time.Duration(s.TTL) * time.Millisecond}
}

// Schedule arms a sweep at processing time at, with register (the
// runtime's RegisterProcessingTimer), unless TTL is off or one is armed.
func (s *Sweeper) Schedule(register func(int64), at int64) {
	if s.TTL > 0 && s.pending == 0 {
		s.pending = at
		register(at)
	}
}

// Due reports whether the timer at ts is the armed sweep, and disarms it.
func (s *Sweeper) Due(ts int64) bool {
	if s.pending == 0 || ts < s.pending {
		return false
	}
	s.pending = 0
	return true
}
