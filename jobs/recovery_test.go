package jobs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	engine "github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/options"
)

// testConf returns option values with conf set, failing t on a bad one.
func testConf(t *testing.T, conf map[string]string) *options.Values {
	t.Helper()
	v := options.Session().NewValues()
	for k, val := range conf {
		if _, err := v.Set(k, val); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// testStrategy is the restart strategy of the options conf.
func testStrategy(t *testing.T, conf map[string]string, checkpointing bool) *restartStrategy {
	t.Helper()
	return (&Supervisor{}).restartStrategy(testConf(t, conf), checkpointing)
}

// TestExponentialDelayDefaults: with Flink 1.20's defaults (initial-backoff
// 1 s, backoff-multiplier 1.5, max-backoff 1 min) and no jitter the delays are
// 1 s · 1.5^(n-1) until they reach 1 min, then 1 min for ever. The old code
// multiplied n-1 times before capping and turned negative from restart 58 on.
func TestExponentialDelayDefaults(t *testing.T) {
	r := testStrategy(t, map[string]string{"restart-strategy.exponential-delay.jitter-factor": "0"}, true)
	if r.kind != "exponential-delay" {
		t.Fatalf("default strategy with checkpointing is %q, want exponential-delay", r.kind)
	}
	// 1.5^k seconds, worked out by hand: 1, 1.5, 2.25, 3.375, 5.0625,
	// 7.59375, 11.390625, 17.0859375, 25.62890625, 38.443359375,
	// 57.6650390625, then 86.5 > 60 is capped.
	want := []time.Duration{
		1 * time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond,
		5062500 * time.Microsecond, 7593750 * time.Microsecond, 11390625 * time.Microsecond,
		17085937500 * time.Nanosecond, 25628906250 * time.Nanosecond, 38443359375 * time.Nanosecond,
		57665039062500 * time.Nanosecond / 1000,
	}
	for n := 1; n <= 200; n++ {
		d, ok := r.onFailure(time.Second)
		if !ok {
			t.Fatalf("restart %d refused; attempts-before-reset-backoff defaults to 2147483647", n)
		}
		exp := time.Minute
		if n <= len(want) {
			exp = want[n-1]
		}
		if diff := d - exp; diff < -time.Microsecond || diff > time.Microsecond {
			t.Fatalf("restart %d: delay %v, want %v", n, d, exp)
		}
	}
}

// TestExponentialDelayReset: an attempt that ran for
// reset-backoff-threshold resets the backoff to initial-backoff and the count
// of attempts-before-reset-backoff.
func TestExponentialDelayReset(t *testing.T) {
	s := testConf(t, map[string]string{
		"restart-strategy.type":                                            "exponential-delay",
		"restart-strategy.exponential-delay.initial-backoff":               "100 ms",
		"restart-strategy.exponential-delay.max-backoff":                   "1 s",
		"restart-strategy.exponential-delay.backoff-multiplier":            "2",
		"restart-strategy.exponential-delay.jitter-factor":                 "0",
		"restart-strategy.exponential-delay.reset-backoff-threshold":       "10 min",
		"restart-strategy.exponential-delay.attempts-before-reset-backoff": "3",
	})
	r := (&Supervisor{}).restartStrategy(s, false)
	steps := []struct {
		ran  time.Duration
		want time.Duration
		ok   bool
	}{
		{time.Second, 100 * time.Millisecond, true},
		{time.Second, 200 * time.Millisecond, true},
		{9 * time.Minute, 400 * time.Millisecond, true}, // below the threshold
		{time.Second, 0, false},                         // a fourth attempt before any reset
	}
	for i, st := range steps {
		d, ok := r.onFailure(st.ran)
		if ok != st.ok || (ok && d != st.want) {
			t.Fatalf("step %d: (%v, %v), want (%v, %v)", i, d, ok, st.want, st.ok)
		}
	}
	// A fresh strategy, failing fast three times, then running stably.
	r = (&Supervisor{}).restartStrategy(s, false)
	for _, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if d, ok := r.onFailure(time.Second); !ok || d != want {
			t.Fatalf("got (%v, %v), want (%v, true)", d, ok, want)
		}
	}
	if d, ok := r.onFailure(10 * time.Minute); !ok || d != 100*time.Millisecond {
		t.Fatalf("after a stable run of the threshold: (%v, %v), want (100ms, true)", d, ok)
	}
	if d, ok := r.onFailure(time.Second); !ok || d != 200*time.Millisecond {
		t.Fatalf("second failure after the reset: (%v, %v), want (200ms, true)", d, ok)
	}
}

// TestExponentialDelayJitter: with the default jitter-factor 0.1 a delay of
// backoff b lies in [0.9 b, 1.1 b]; the extremes of the random draw give the
// bounds.
func TestExponentialDelayJitter(t *testing.T) {
	s := testConf(t, map[string]string{"restart-strategy.exponential-delay.initial-backoff": "10 s"})
	for _, c := range []struct {
		draw float64
		want time.Duration
	}{{0, 9 * time.Second}, {0.5, 10 * time.Second}, {0.75, 10500 * time.Millisecond}} {
		r := (&Supervisor{}).restartStrategy(s, true)
		r.random = func() float64 { return c.draw }
		if d, _ := r.onFailure(0); d != c.want {
			t.Errorf("draw %v: delay %v, want %v", c.draw, d, c.want)
		}
	}
	// The jitter never makes the max-backoff delay overflow or go negative.
	r := (&Supervisor{}).restartStrategy(s, true)
	r.random = func() float64 { return 0.999999 }
	for n := 0; n < 100; n++ {
		d, _ := r.onFailure(0)
		if d <= 0 || d > 66*time.Second {
			t.Fatalf("restart %d: delay %v outside (0, 66s]", n+1, d)
		}
	}
}

// TestLongestRestartDelay: max-backoff 1 min plus 10 % jitter is 66 s; a
// fixed delay is itself; no strategy waits 0.
func TestLongestRestartDelay(t *testing.T) {
	for _, c := range []struct {
		conf map[string]string
		want time.Duration
	}{
		{map[string]string{"restart-strategy.type": "exponential-delay"}, 66 * time.Second},
		{map[string]string{"restart-strategy.type": "exponential-delay", "restart-strategy.exponential-delay.jitter-factor": "0"}, time.Minute},
		{map[string]string{"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "7 s"}, 7 * time.Second},
		{map[string]string{"restart-strategy.type": "none"}, 0},
	} {
		if got := testStrategy(t, c.conf, true).longestDelay(); got != c.want {
			t.Errorf("%v: longest delay %v, want %v", c.conf, got, c.want)
		}
	}
}

func TestRestartOptionsValidated(t *testing.T) {
	for k, v := range map[string]string{
		"restart-strategy.exponential-delay.backoff-multiplier":      "0.5",
		"restart-strategy.exponential-delay.jitter-factor":           "1.5",
		"restart-strategy.exponential-delay.reset-backoff-threshold": "soon",
	} {
		_, err := options.Session().NewValues().Set(k, v)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s = %s: %v, want an error naming the option", k, v, err)
		}
	}
}

// TestFallBackOnlyWhenOutputWasAborted: recovery goes back to an earlier
// checkpoint only on the restore verdict that none of the restored
// checkpoint's output became visible. Damaged or missing state says nothing
// about that (the checkpoint completed, so its transactions were likely
// committed, and a replay from an older one would write them twice): such a
// restore fails the job instead.
func TestFallBackOnlyWhenOutputWasAborted(t *testing.T) {
	c := &checkpointing{restore: &checkpoint.Metadata{ID: 7}}
	logf := func(string, ...any) { t.Error("fallBack logged a fallback") }
	damaged := fmt.Errorf("restoring from checkpoint 7: file chk-7/x: SHA-256 mismatch: %w", engine.ErrCheckpointUnrestorable)
	if c.fallBack(logf, "job", damaged) {
		t.Fatal("fell back on damaged state")
	}
	if c.restore.ID != 7 {
		t.Fatalf("restore changed to checkpoint %d", c.restore.ID)
	}
	if err := permanentFailure(damaged, c); err == nil || !strings.Contains(err.Error(), "is not restarted") {
		t.Fatalf("damaged state: %v, want a permanent failure", err)
	}
	aborted := fmt.Errorf("checkpoint 7: %w", engine.ErrRestoredOutputAborted)
	if err := permanentFailure(aborted, c); err == nil || !strings.Contains(err.Error(), "no earlier retained checkpoint") {
		t.Fatalf("aborted output without an earlier checkpoint: %v, want a permanent failure", err)
	}
}
