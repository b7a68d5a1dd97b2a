package gcpolicy

import (
	"math"
	"runtime/debug"
	"sync"
)

// LimitAllowance is what a memory limit allows the Go runtime beyond the
// running jobs' state budgets: the pipelines' batches, channels, decoders
// and the collector's own room to work.
const LimitAllowance = 128 << 20

// Limiter sets the Go runtime's soft memory limit (debug.SetMemoryLimit)
// from the state budgets of the jobs that run: while any does, and every
// running job's state is bounded, the limit is the allowance plus the sum
// of their budgets; otherwise (no job, or a job whose state has no bound,
// such as hashmap state on the Go heap) it is the limit the process had
// before (none, unless set elsewhere). A job without a bound lifts the
// limit rather than risk a collector that runs without end once its live
// heap reaches a limit set for the other jobs.
//
// Each budget is charged in full although only part of it is on the Go
// heap (rocksdb's write-back cache and evicted-write batch, 1/2 of it, and a
// join's key filters, 1/8; Pebble's block cache and memtables are allocated
// outside the Go heap when cgo is on): the rest is room for the collector,
// so that a job whose live heap is near its budget does not collect
// continuously. Without a limit Go lets the heap grow to twice its live
// part, and that doubling of the state's cache is what the limit removes.
//
// A Limiter is safe for concurrent use: jobs start and end on their own
// goroutines.
type Limiter struct {
	allowance int64
	mu        sync.Mutex
	budgets   int64 // the sum of the reserved budgets
	running   int   // reservations not yet released
	unbounded int   // the running ones without a bound
	previous  int64 // the limit before the first reservation
}

// NewLimiter returns a Limiter that allows allowance bytes beyond the
// budgets. It changes nothing until the first Reserve.
func NewLimiter(allowance int64) *Limiter {
	return &Limiter{allowance: allowance}
}

// LimitFor is the memory limit for jobs whose state budgets sum to budgets.
func LimitFor(allowance, budgets int64) int64 {
	if budgets > math.MaxInt64-allowance {
		return math.MaxInt64
	}
	return allowance + budgets
}

// Unbounded is the budget of a job whose state has no bound.
const Unbounded = -1

// Reserve charges a job's state budget (bytes, 0 or more, or Unbounded)
// to the limit and returns the function that releases it when the job has
// ended; calling it again does nothing.
func (l *Limiter) Reserve(budget int64) (release func()) {
	l.mu.Lock()
	if l.running == 0 {
		l.previous = debug.SetMemoryLimit(-1)
	}
	l.running++
	if budget < 0 {
		l.unbounded++
	} else {
		l.budgets += budget
	}
	l.apply()
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.running--
			if budget < 0 {
				l.unbounded--
			} else {
				l.budgets -= budget
			}
			l.apply()
		})
	}
}

// apply sets the limit for the running reservations (l.mu held).
func (l *Limiter) apply() {
	if l.running == 0 || l.unbounded > 0 {
		debug.SetMemoryLimit(l.previous)
		return
	}
	debug.SetMemoryLimit(LimitFor(l.allowance, l.budgets))
}
