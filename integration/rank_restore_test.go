package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/session"
)

// TestDeduplicateSurvivesRestore (issue 10): a keep-first deduplication
// over 100 keys (id % 100) of 6000 sequential ids keeps its state in the
// runtime-owned keyed backend; the job fails once after at least 1000 rows
// and a completed checkpoint and restarts from the last completed
// checkpoint. The committed rows are the first row of each key, ids 0…99,
// each once: a restore that lost the seen keys would emit the first row
// after the checkpoint of every key again.
func TestDeduplicateSurvivesRestore(t *testing.T) {
	const rows = 6000
	for _, backend := range []string{"hashmap", "rocksdb"} {
		t.Run(backend, func(t *testing.T) {
			var completed atomic.Bool
			f := &flakyFactory{failAfter: 1000, ready: completed.Load}
			reg := builtin.NewRegistry(os.Stdout, os.Stderr)
			reg.Register(f.connector())
			dir := t.TempDir()
			log := &lockedBuffer{t: t, completed: &completed}
			s, err := session.New(session.Options{Registry: reg, Stderr: log, Config: map[string]string{
				"execution.checkpointing.interval":      "20 ms",
				"state.checkpoints.dir":                 filepath.Join(dir, "checkpoints"),
				"state.backend.type":                    backend,
				"restart-strategy.type":                 "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3",
				"restart-strategy.fixed-delay.delay":    "10 ms",
				"pipeline.name":                         "dedup-" + backend,
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			out := filepath.Join(dir, "out")
			run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, k INT, pt AS PROCTIME()) WITH ('connector' = 'flaky-datagen', 'rows-per-second' = '4000',
  'number-of-rows' = '%[1]d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d',
  'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE sink_out (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '%[3]s', 'format' = 'csv');
INSERT INTO sink_out SELECT id, k FROM (
  SELECT id, k, ROW_NUMBER() OVER (PARTITION BY m ORDER BY pt ASC) AS rn
  FROM (SELECT id, k, id %% 100 AS m, pt FROM gen))
WHERE rn = 1;`, rows, rows-1, out))
			if !f.failed.Load() {
				t.Fatalf("the failure after %d rows and a completed checkpoint was never injected", f.failAfter)
			}
			if !strings.Contains(log.String(), "from checkpoint") {
				t.Fatalf("the job did not restart from a checkpoint; the test proves nothing")
			}
			checkExactlyOnce(t, committedIDs(t, out), 100)
		})
	}
}
