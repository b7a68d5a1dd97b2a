package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/sql/parser"
)

const spJobSQL = `
CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '200', 'fields.k.min' = '1', 'fields.k.max' = '9');
CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;`

func startSPJob(t *testing.T, s *Session) *Job {
	t.Helper()
	stmts, err := parser.ParseScript(spJobSQL)
	if err != nil {
		t.Fatal(err)
	}
	var job *Job
	for _, st := range stmts {
		r, err := s.ExecuteStatement(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Job != nil {
			job = r.Job
		}
	}
	return job
}

// TestStopWithSavepointRefusals: a savepoint needs checkpointing and a
// directory, WITH DRAIN needs WITH SAVEPOINT, and the job must exist; each
// refusal says so and leaves the job running.
func TestStopWithSavepointRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name string
		conf map[string]string
		stmt string
		want string
	}{
		{"no checkpointing", nil, "STOP JOB '%s' WITH SAVEPOINT",
			"runs without checkpointing. Set 'state.savepoints.dir' (or 'execution.checkpointing.interval') before submitting the job."},
		{"no directory", map[string]string{"execution.checkpointing.interval": "1 h", "state.checkpoints.dir": t.TempDir()}, "STOP JOB '%s' WITH SAVEPOINT WITH DRAIN",
			"no savepoint directory was given and 'state.savepoints.dir' is not set."},
		{"drain alone", nil, "STOP JOB '%s' WITH DRAIN", "WITH DRAIN needs WITH SAVEPOINT"},
		{"unknown job", nil, "STOP JOB 'nope%.0s' WITH SAVEPOINT", "Could not stop job nope: no such job in this session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSession(t, c.conf)
			job := startSPJob(t, s)
			_, err := s.Execute(ctx, strings.Replace(c.stmt, "%s", job.ID, 1)+";")
			if c.name == "unknown job" {
				_, err = s.Execute(ctx, "STOP JOB 'nope' WITH SAVEPOINT;")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant an error containing %q", err, c.want)
			}
			select {
			case <-job.Done():
				t.Error("the refused stop ended the job")
			default:
			}
			job.Stop()
		})
	}
}

// TestRecoveryClaimModes: a job restored from a checkpoint named by
// 'execution.state-recovery.path' leaves it alone in NO_CLAIM mode (the
// default: it outlives the new run's checkpoints, which subsume it), and
// deletes it once it has a checkpoint of its own in CLAIM mode.
func TestRecoveryClaimModes(t *testing.T) {
	for _, mode := range []string{"", "NO_CLAIM", "CLAIM"} {
		t.Run("mode="+mode, func(t *testing.T) {
			dir := t.TempDir()
			conf := map[string]string{"execution.checkpointing.interval": "1 h", "state.checkpoints.dir": dir, "pipeline.name": "claims"}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s1 := newTestSession(t, conf)
			if _, err := startSPJob(t, s1).StopClean(ctx); err != nil {
				t.Fatal(err)
			}
			s1.Close()
			chks, _ := filepath.Glob(filepath.Join(dir, "claims", "chk-*"))
			if len(chks) != 1 {
				t.Fatalf("after the first run: %v, want one retained checkpoint", chks)
			}
			restored := chks[0]
			conf["execution.state-recovery.path"] = restored
			if mode != "" {
				conf["execution.state-recovery.claim-mode"] = mode
			}
			s2 := newTestSession(t, conf)
			if _, err := startSPJob(t, s2).StopClean(ctx); err != nil {
				t.Fatal(err)
			}
			s2.Close()
			_, err := os.Stat(filepath.Join(restored, "_metadata"))
			switch {
			case mode == "CLAIM" && err == nil:
				t.Errorf("CLAIM: the restored checkpoint %s is still there after the run's own checkpoint", restored)
			case mode != "CLAIM" && err != nil:
				t.Errorf("%s: the restored checkpoint is gone: %v", mode, err)
			}
		})
	}
}
