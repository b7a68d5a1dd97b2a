package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/types"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/connectors/datagen"
	"github.com/flinksql/flinksql/session"
)

// gatedFactory is datagen whose readers fail once, at the first read after
// failAfter rows that follows a completed checkpoint: the restart then
// surely restores state (on a loaded machine a checkpoint can take longer
// than reading failAfter rows).
type gatedFactory struct {
	*datagen.Factory
	failAfter int64
	read      atomic.Int64
	completed atomic.Bool // a checkpoint completed (seen in the log)
	failed    atomic.Bool
}

func (f *gatedFactory) Identifier() string { return "gated-datagen" }

func (f *gatedFactory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	inner := *tc
	inner.Options = map[string]string{}
	for k, v := range tc.Options {
		inner.Options[k] = v
	}
	inner.Options["connector"] = "datagen"
	src, err := f.Factory.CreateSource(&inner)
	if err != nil {
		return nil, err
	}
	return &gatedSource{ScanSource: src, f: f}, nil
}

type gatedSource struct {
	connectors.ScanSource
	f *gatedFactory
}

func (s *gatedSource) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r, err := s.ScanSource.NewReader(subtask, parallelism)
	if err != nil {
		return nil, err
	}
	return &gatedReader{CheckpointedReader: r.(exec.CheckpointedReader), f: s.f}, nil
}

type gatedReader struct {
	exec.CheckpointedReader
	f *gatedFactory
}

func (r *gatedReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	res, err := r.CheckpointedReader.Read(ctx, b)
	if r.f.read.Add(int64(b.Len())) > r.f.failAfter && r.f.completed.Load() && r.f.failed.CompareAndSwap(false, true) {
		return res, fmt.Errorf("injected failure after %d rows", r.f.read.Load())
	}
	return res, err
}

// lockedBuffer collects the session's log (subtasks write concurrently)
// and tells the factory when a checkpoint completed.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	t  *testing.T
	f  *gatedFactory
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	if bytes.Contains(p, []byte("Completed checkpoint")) {
		w.f.completed.Store(true)
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
				f := &gatedFactory{Factory: datagen.NewFactory(), failAfter: 1000}
				reg := builtin.NewRegistry(os.Stdout, os.Stderr)
				reg.Register(f)
				dir := t.TempDir()
				log := &lockedBuffer{t: t, f: f}
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
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'gated-datagen', 'rows-per-second' = '4000',
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
