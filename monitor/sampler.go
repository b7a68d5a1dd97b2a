package monitor

import (
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/jobs"
)

// The runtime keeps only totals (rows in and out, nanoseconds waited),
// atomic and per batch. Rates, as Flink's meters give them
// (numRecordsInPerSecond, backPressuredTimeMsPerSecond, …), come from two
// samples of the totals: the sampler takes one every interval and keeps
// the rates between the last two.

// rates are one job's rates between its last two samples.
type rates struct {
	at time.Time
	// [vertex index][operator][subtask], per second.
	in, out [][][]float64
	// [vertex index][subtask]: milliseconds per second.
	backPressured, idle [][]float64
	// [vertex index]: rows read per second by the source readers.
	read []float64
}

// sample is what the sampler read of a job last time.
type sample struct {
	at      time.Time
	metrics []exec.VertexMetrics
}

// sampler takes the samples of every running job.
type sampler struct {
	sup      *jobs.Supervisor
	interval time.Duration

	mu    sync.Mutex
	last  map[string]sample
	rates map[string]*rates
}

func newSampler(sup *jobs.Supervisor, interval time.Duration) *sampler {
	return &sampler{sup: sup, interval: interval, last: map[string]sample{}, rates: map[string]*rates{}}
}

// run samples until stop is closed.
func (s *sampler) run(stop <-chan struct{}) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	s.tick(time.Now())
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.tick(now)
		}
	}
}

func (s *sampler) tick(now time.Time) {
	for _, info := range s.sup.List() {
		rj, ok := s.sup.Lookup(info.ID)
		if !ok {
			continue
		}
		if info.Status != "RUNNING" {
			// An ended job has no rates; its totals stay in the REST API.
			s.mu.Lock()
			delete(s.last, info.ID)
			delete(s.rates, info.ID)
			s.mu.Unlock()
			continue
		}
		st := rj.Status()
		cur := sample{at: now, metrics: st.Metrics}
		s.mu.Lock()
		prev, ok := s.last[info.ID]
		s.last[info.ID] = cur
		if ok && sameShape(prev.metrics, cur.metrics) {
			s.rates[info.ID] = rateBetween(prev, cur)
		}
		s.mu.Unlock()
	}
}

// sameShape: both samples are of the same graph (a restarted attempt
// starts its counters at zero, so the rate across a restart is skipped).
func sameShape(a, b []exec.VertexMetrics) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i].Operators) != len(b[i].Operators) || len(a[i].Tasks) != len(b[i].Tasks) {
			return false
		}
		for o := range a[i].Operators {
			for st := range a[i].Operators[o].Subtasks {
				if b[i].Operators[o].Subtasks[st].RowsIn < a[i].Operators[o].Subtasks[st].RowsIn {
					return false
				}
			}
		}
	}
	return true
}

func rateBetween(prev, cur sample) *rates {
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	perSec := func(a, b int64) float64 { return float64(b-a) / secs }
	msPerSec := func(a, b time.Duration) float64 {
		v := float64(b-a) / float64(time.Millisecond) / secs
		return min(max(v, 0), 1000)
	}
	r := &rates{at: cur.at}
	for vi, v := range cur.metrics {
		pv := prev.metrics[vi]
		in := make([][]float64, len(v.Operators))
		out := make([][]float64, len(v.Operators))
		for oi, op := range v.Operators {
			in[oi] = make([]float64, len(op.Subtasks))
			out[oi] = make([]float64, len(op.Subtasks))
			for st, m := range op.Subtasks {
				pm := pv.Operators[oi].Subtasks[st]
				in[oi][st] = perSec(pm.RowsIn, m.RowsIn)
				out[oi][st] = perSec(pm.RowsOut, m.RowsOut)
			}
		}
		bp := make([]float64, len(v.Tasks))
		idle := make([]float64, len(v.Tasks))
		for st, tt := range v.Tasks {
			bp[st] = msPerSec(pv.Tasks[st].BackPressured, tt.BackPressured)
			idle[st] = msPerSec(pv.Tasks[st].Idle, tt.Idle)
			if bp[st]+idle[st] > 1000 {
				idle[st] = 1000 - bp[st]
			}
		}
		r.in, r.out = append(r.in, in), append(r.out, out)
		r.backPressured, r.idle = append(r.backPressured, bp), append(r.idle, idle)
		r.read = append(r.read, perSec(pv.RowsRead, v.RowsRead))
	}
	return r
}

// ratesOf returns a job's latest rates, nil before two samples.
func (s *sampler) ratesOf(id string) *rates {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rates[id]
}

// opRate is the rate of operator o of vertex vi summed over its subtasks
// (of in, or out).
func (r *rates) opRate(out bool, vi, o int) float64 {
	if r == nil || vi >= len(r.in) || o >= len(r.in[vi]) {
		return 0
	}
	src := r.in
	if out {
		src = r.out
	}
	var sum float64
	for _, v := range src[vi][o] {
		sum += v
	}
	return sum
}

func (r *rates) subtaskRate(out bool, vi, o, st int) float64 {
	if r == nil || vi >= len(r.in) || o >= len(r.in[vi]) || st >= len(r.in[vi][o]) {
		return 0
	}
	if out {
		return r.out[vi][o][st]
	}
	return r.in[vi][o][st]
}

// taskTimes returns backpressured and idle ms/s of a subtask.
func (r *rates) taskTimes(vi, st int) (bp, idle float64, ok bool) {
	if r == nil || vi >= len(r.backPressured) || st >= len(r.backPressured[vi]) {
		return 0, 0, false
	}
	return r.backPressured[vi][st], r.idle[vi][st], true
}
