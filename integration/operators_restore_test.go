package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/session"
)

// lockedBuffer collects the session's log (subtasks write concurrently)
// and records when a checkpoint completed.
type lockedBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	t         *testing.T
	completed *atomic.Bool
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	if bytes.Contains(p, []byte("Completed checkpoint")) {
		w.completed.Store(true)
	}
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSortAndLimitSurviveRestore (issue 9 item 15): a bounded ORDER BY …
// LIMIT and a streaming LIMIT, each failing once after at least 1000 of
// 6000 source rows and a completed checkpoint, and restarted from the last
// completed checkpoint, commit exactly
// what an uninterrupted run does: the 1000 lowest ids for the sort (before
// the fix the rows the sort had buffered before the checkpoint were lost,
// and it sorted only the ones read after it),
// the first 1500 ids once each for the limit (before the fix it passed up
// to 1500 rows more after the restore).
func TestSortAndLimitSurviveRestore(t *testing.T) {
	const rows = 6000
	for _, tc := range []struct {
		name, query string
		from, to    int // the ids committed, [from, to)
	}{
		{"sort", "SELECT id, k FROM gen ORDER BY id LIMIT 1000", 0, 1000},
		{"limit", "SELECT id, k FROM gen LIMIT 1500", 0, 1500},
	} {
		for _, backend := range []string{"hashmap", "rocksdb"} {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				// The failure comes at the first read after 1000 rows that
				// follows a completed checkpoint, so the restart surely
				// restores state (on a loaded machine a checkpoint can take
				// longer than reading 1000 rows).
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
					"pipeline.name":                         "operators-" + tc.name + "-" + backend,
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out := filepath.Join(dir, "out")
				run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'flaky-datagen', 'rows-per-second' = '4000',
  'number-of-rows' = '%[1]d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d',
  'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE sink_out (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '%[3]s', 'format' = 'csv');
INSERT INTO sink_out %[4]s;`, rows, rows-1, out, tc.query))
				if !f.failed.Load() {
					t.Fatalf("the failure after %d rows and a completed checkpoint was never injected", f.failAfter)
				}
				if !strings.Contains(log.String(), "from checkpoint") {
					t.Fatalf("the job did not restart from a checkpoint; the test proves nothing")
				}
				ids := committedIDs(t, out)
				for i := range ids {
					ids[i] -= tc.from
				}
				checkExactlyOnce(t, ids, tc.to-tc.from)
			})
		}
	}
}
