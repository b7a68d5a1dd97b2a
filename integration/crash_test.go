package integration_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds flinksql into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "flinksql")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/flinksql")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestKillAndResume runs a bounded job as a separate process, kills it with
// SIGKILL at random moments several times, and starts it again with the same
// pipeline.name and checkpoint directory until it finishes. Every run resumes
// from the latest completed checkpoint; the filesystem sink commits only what
// a completed checkpoint covers, so the committed output must hold every id
// exactly once, like a run that was never killed.
func TestKillAndResume(t *testing.T) {
	const rows = 6000
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	out := filepath.Join(dir, "out")
	script := filepath.Join(dir, "job.sql")
	sql := fmt.Sprintf(`
SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = '%s';
SET 'state.backend.type' = 'rocksdb';
SET 'pipeline.name' = 'kill-and-resume';
SET 'parallelism.default' = '2';
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '3000',
  'number-of-rows' = '%d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%d',
  'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE sink_out (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO sink_out SELECT id, k FROM gen;
`, filepath.Join(dir, "checkpoints"), rows, rows-1, out)
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(42, 1))
	kills := 0
	for run := 1; ; run++ {
		if run > 20 {
			t.Fatalf("the job did not finish after %d runs", run-1)
		}
		cmd := exec.Command(bin, "-f", script)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill the first four runs once a checkpoint has completed (so each run
		// makes progress) plus a random delay; let the fifth run finish.
		done := make(chan error, 1)
		checkpointed := make(chan struct{}, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "Completed checkpoint") {
					select {
					case checkpointed <- struct{}{}:
					default:
					}
				}
				if strings.Contains(line, "Restoring job") {
					t.Logf("run %d: %s", run, line)
				}
			}
			done <- cmd.Wait()
		}()
		if kills < 4 {
			select {
			case <-checkpointed:
				time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond) // the random moment of the kill
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-done
				kills++
				t.Logf("run %d: killed", run)
				continue
			case err := <-done:
				t.Fatalf("run %d ended before it could be killed: %v", run, err)
			case <-time.After(timeout):
				_ = cmd.Process.Kill()
				t.Fatalf("run %d: no checkpoint within %s", run, timeout)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("final run %d failed: %v", run, err)
			}
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			t.Fatalf("final run %d did not finish within %s", run, timeout)
		}
		break
	}
	if kills < 4 {
		t.Fatalf("only %d kills", kills)
	}
	checkExactlyOnce(t, committedIDs(t, out), rows)
	// Each restore cleared the hidden in-progress files of the killed run.
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover file %s", e.Name())
		}
	}
}
