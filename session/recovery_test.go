package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/flinksql/flinksql/jobs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newTestSession(t *testing.T, conf map[string]string) *Session {
	t.Helper()
	s, err := New(Options{Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stateChildEnv makes the test binary, run again as a child, run a
// checkpointed job until the fault armed by FLINKSQL_FAULT kills it.
const stateChildEnv = "FLINKSQL_STATE_DIR_TEST_CHILD"

// TestStaleStateDirsRemoved: a run killed with -9 leaves its local state
// directory behind (the old code never removed it); the next start of a
// checkpointed job removes it, but neither a live owner's directory nor a
// fresh one without a lock file yet.
func TestStaleStateDirsRemoved(t *testing.T) {
	if ckpts := os.Getenv(stateChildEnv); ckpts != "" {
		fault, err := ParseFault(os.Getenv(FaultEnv), os.Stderr)
		if err != nil {
			os.Exit(3)
		}
		s, err := New(Options{Stderr: os.Stderr, Fault: fault, Config: map[string]string{
			"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": ckpts, "pipeline.name": "stale-dirs",
			"state.backend.type": "rocksdb"}})
		if err != nil {
			os.Exit(3)
		}
		_, err = s.Execute(context.Background(), `
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000', 'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE out_t (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k, COUNT(*) FROM gen GROUP BY k;`)
		fmt.Fprintf(os.Stderr, "the job ended without the fault: %v\n", err)
		os.Exit(4)
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleStateDirsRemoved$")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, FaultEnv+"=after-complete@2", stateChildEnv+"="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("child ended with %v, want death by SIGKILL; stderr:\n%s", err, stderr.String())
	}
	leftover, _ := filepath.Glob(filepath.Join(tmp, jobs.LocalStatePrefix+"*"))
	if len(leftover) != 1 {
		t.Fatalf("the killed run left %d local state directories, want 1: %v", len(leftover), leftover)
	}

	live, release, err := jobs.NewLocalStateDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	young := filepath.Join(tmp, jobs.LocalStatePrefix+"young")
	old := filepath.Join(tmp, jobs.LocalStatePrefix+"old")
	for _, d := range []string{young, old} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}

	t.Setenv("TMPDIR", tmp)
	var log syncBuffer
	s, err := New(Options{Stderr: &log, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Execute(ctx, `
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE out_t (k INT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k FROM gen;`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		kept bool
	}{{leftover[0], false}, {old, false}, {live, true}, {young, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept = %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
	if !strings.Contains(log.take(), "[INFO] Removed the local state directory "+leftover[0]) {
		t.Errorf("the removal was not logged")
	}
	// The job's own directory is gone once it finished.
	if dirs, _ := filepath.Glob(filepath.Join(tmp, jobs.LocalStatePrefix+"*")); len(dirs) != 2 {
		t.Errorf("local state directories after the run: %v, want only the live and the young one", dirs)
	}
}
