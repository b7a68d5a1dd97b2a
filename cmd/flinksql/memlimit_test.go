package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestStateMemoryLimit: without GOMEMLIMIT a rocksdb job of 256 MiB sets
// the Go memory limit to 128 + 256 MiB while it runs and lifts it when it
// ends; with GOMEMLIMIT the process's limit is left alone.
func TestStateMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(before)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	reserve := stateMemoryLimit(getenv)
	if reserve == nil {
		t.Fatal("no limiter without GOMEMLIMIT")
	}
	release := reserve(256 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(384<<20); got != want {
		t.Errorf("limit during a 256 MiB job = %d, want %d", got, want)
	}
	release()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after the job = %d, want none (MaxInt64)", got)
	}

	env["GOMEMLIMIT"] = "192MiB"
	if reserve := stateMemoryLimit(getenv); reserve != nil {
		t.Error("GOMEMLIMIT set: a limiter was returned, want none (the user's limit stands)")
	}
}
