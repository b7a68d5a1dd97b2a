package gcpolicy

import (
	"math"
	"runtime/debug"
	"testing"
)

func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// TestLimiterFollowsRunningJobs: the limit is the allowance plus the sum
// of the running jobs' budgets (worked out by hand below), and returns to
// the limit the process had once the last job is released.
func TestLimiterFollowsRunningJobs(t *testing.T) {
	const mib = 1 << 20
	before := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(before)

	l := NewLimiter(128 * mib)
	if got := memoryLimit(); got != math.MaxInt64 {
		t.Fatalf("limit before any job = %d, want none (MaxInt64)", got)
	}
	releaseA := l.Reserve(256 * mib) // the join script's job
	if got, want := memoryLimit(), int64(384*mib); got != want {
		t.Errorf("limit with one 256 MiB job = %d, want %d (128 + 256 MiB)", got, want)
	}
	releaseB := l.Reserve(512 * mib) // a second job in the same shell
	if got, want := memoryLimit(), int64(896*mib); got != want {
		t.Errorf("limit with 256 + 512 MiB jobs = %d, want %d (128 + 768 MiB)", got, want)
	}
	releaseA()
	releaseA() // a second release changes nothing
	if got, want := memoryLimit(), int64(640*mib); got != want {
		t.Errorf("limit after the first job ended = %d, want %d (128 + 512 MiB)", got, want)
	}
	releaseH := l.Reserve(Unbounded) // a hashmap job: no limit while it runs
	if got := memoryLimit(); got != math.MaxInt64 {
		t.Errorf("limit while a job without a bound runs = %d, want none (MaxInt64)", got)
	}
	releaseH()
	if got, want := memoryLimit(), int64(640*mib); got != want {
		t.Errorf("limit after the unbounded job ended = %d, want %d (128 + 512 MiB)", got, want)
	}
	releaseC := l.Reserve(0) // a rocksdb job without keyed state: the allowance stays
	releaseB()
	if got, want := memoryLimit(), int64(128*mib); got != want {
		t.Errorf("limit with only a job without budget = %d, want %d", got, want)
	}
	releaseC()
	if got := memoryLimit(); got != math.MaxInt64 {
		t.Errorf("limit after every job ended = %d, want the one before (MaxInt64)", got)
	}
}

// TestLimiterRestoresPreviousLimit: a limit the process had before the
// first job (set elsewhere) comes back when the jobs end.
func TestLimiterRestoresPreviousLimit(t *testing.T) {
	before := debug.SetMemoryLimit(3 << 30)
	defer debug.SetMemoryLimit(before)
	l := NewLimiter(1 << 20)
	release := l.Reserve(1 << 20)
	if got := memoryLimit(); got != 2<<20 {
		t.Errorf("limit during the job = %d, want %d", got, 2<<20)
	}
	release()
	if got := memoryLimit(); got != 3<<30 {
		t.Errorf("limit after the job = %d, want %d (the one before)", got, int64(3<<30))
	}
}

func TestLimitForSaturates(t *testing.T) {
	if got := LimitFor(1<<20, math.MaxInt64-1); got != math.MaxInt64 {
		t.Errorf("LimitFor near the top = %d, want MaxInt64", got)
	}
}
