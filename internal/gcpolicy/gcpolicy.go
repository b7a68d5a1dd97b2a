// Package gcpolicy owns the pacing of the process's garbage collector.
//
// Go's default pacing (GOGC=100) starts a collection whenever the heap has
// grown by as much as survived the last one. A streaming job whose state is
// small (a filter, a projection, a small window) allocates short-lived row
// memory at hundreds of megabytes per second over a live heap of a few
// megabytes, so with the default it collects dozens of times a second, and
// spends a third or more of its CPU marking and in write barriers. The
// policy here gives the heap a fixed headroom instead: after each
// collection the next one is due when the heap has grown by the larger of
// the live heap (Go's default) and the headroom. Jobs with large state keep
// Go's default pacing; small ones trade at most the headroom in memory for
// far fewer collections.
package gcpolicy

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// defaultPercent is Go's default GOGC.
const defaultPercent = 100

// maxPercent bounds the percentage whatever the headroom.
const maxPercent = 100_000

// heapMinimum is the runtime's smallest heap goal at GOGC=100; it scales
// with the percentage, so a percentage above 100·headroom/heapMinimum would
// let even an empty heap grow past the headroom.
const heapMinimum = 4 << 20

// Policy is a running pacing policy. Stop it to return to the pacing the
// process had before.
type Policy struct {
	headroom uint64
	previous int
	stopped  atomic.Bool
	percent  atomic.Int64 // the percentage set last
	sample   []metrics.Sample
}

// Start paces collections for a heap headroom of headroom bytes (more than
// 0) and returns the running policy. The policy re-evaluates after every
// collection from the runtime's finalizer goroutine, so it needs no
// goroutine of its own.
func Start(headroom int64) *Policy {
	p := &Policy{headroom: uint64(max(headroom, 1)), sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.previous = debug.SetGCPercent(defaultPercent)
	p.percent.Store(defaultPercent)
	p.adjust()
	p.arm()
	return p
}

// Percent is the GOGC percentage the policy set last.
func (p *Policy) Percent() int { return int(p.percent.Load()) }

// Stop restores the percentage the process had before Start.
func (p *Policy) Stop() {
	if p.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(p.previous)
}

// arm sets a finalizer on a fresh object: it runs after the next collection
// has found the object unreachable, adjusts the pacing and arms again.
func (p *Policy) arm() {
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) {
		if p.stopped.Load() {
			return
		}
		p.adjust()
		p.arm()
	})
}

// adjust sets the percentage for the live heap the last collection left.
func (p *Policy) adjust() {
	metrics.Read(p.sample)
	var live uint64
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		live = p.sample[0].Value.Uint64()
	}
	want := percentFor(live, p.headroom)
	if old := p.percent.Load(); old == want || (old > 0 && math.Abs(float64(want-old))/float64(old) < 0.05) {
		return // changes under 5 % are not worth re-pacing the collector
	}
	p.percent.Store(want)
	debug.SetGCPercent(int(want))
}

// percentFor is the GOGC percentage at which a heap of live bytes grows by
// max(live, headroom) before the next collection.
// Before the first collection (live 0) and while the live heap is under the
// runtime's minimum, the minimum's scaling bounds it.
func percentFor(live, headroom uint64) int64 {
	if headroom <= max(live, heapMinimum) {
		return defaultPercent
	}
	pc := float64(headroom) / float64(max(live, heapMinimum)) * 100
	return int64(min(pc, maxPercent))
}
