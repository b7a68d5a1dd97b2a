package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// flakyFactory is datagen whose readers fail once, on the first attempt,
// after failAfter rows in total: an injected task failure.
type flakyFactory struct {
	failAfter int64
	// ready, when set, holds the failure back until it reports true (a
	// checkpoint exists), so the failed job surely leaves one however slow
	// the machine.
	ready  func() bool
	read   atomic.Int64
	failed atomic.Bool
}

// connector is the 'flaky-datagen' connector of f.
func (f *flakyFactory) connector() *wrappedDatagen {
	return newWrappedDatagen("flaky-datagen", func(r exec.CheckpointedReader) exec.SourceReader {
		return &flakyReader{CheckpointedReader: r, f: f}
	})
}

type flakyReader struct {
	exec.CheckpointedReader
	f *flakyFactory
}

func (r *flakyReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	res, err := r.CheckpointedReader.Read(ctx, b)
	if r.f.read.Add(int64(b.Len())) > r.f.failAfter && r.f.checkpointed() && r.f.failed.CompareAndSwap(false, true) {
		return res, fmt.Errorf("injected failure after %d rows", r.f.failAfter)
	}
	return res, err
}

func (f *flakyFactory) checkpointed() bool { return f.ready == nil || f.ready() }

// metadataWith returns a ready function for flakyFactory: true once a
// _metadata of job in dir contains want.
func metadataWith(dir, job, want string) func() bool {
	return func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, job, "chk-*", "_metadata"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), want) {
				return true
			}
		}
		return false
	}
}

// committedIDs reads the ids in the committed (visible) part files of dir.
func committedIDs(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			id, err := strconv.Atoi(strings.SplitN(sc.Text(), ",", 2)[0])
			if err != nil {
				t.Fatalf("%s: %q: %v", e.Name(), sc.Text(), err)
			}
			ids = append(ids, id)
		}
		f.Close()
	}
	sort.Ints(ids)
	return ids
}

// checkExactlyOnce asserts ids are exactly 0..n-1, each once.
func checkExactlyOnce(t *testing.T, ids []int, n int) {
	t.Helper()
	if len(ids) != n {
		dups, missing := 0, 0
		seen := map[int]int{}
		for _, id := range ids {
			seen[id]++
		}
		for i := 0; i < n; i++ {
			switch c := seen[i]; {
			case c == 0:
				missing++
			case c > 1:
				dups += c - 1
			}
		}
		t.Fatalf("committed %d rows, want %d (%d duplicates, %d missing)", len(ids), n, dups, missing)
	}
	for i, id := range ids {
		if id != i {
			t.Fatalf("row %d is id %d: duplicates or gaps", i, id)
		}
	}
}

// TestRecoveryFromInjectedFailures fails the source once at a random row,
// for several seeds and both state backends; the job restarts from its last
// completed checkpoint and the filesystem sink's committed output must hold
// every id exactly once, as a failure-free run does.
func TestRecoveryFromInjectedFailures(t *testing.T) {
	const rows = 3000
	for _, backend := range []string{"hashmap", "rocksdb"} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", backend, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				f := &flakyFactory{failAfter: 300 + rng.Int64N(rows-600)}
				reg := builtin.NewRegistry(os.Stdout, os.Stderr)
				reg.Register(f.connector())
				dir := t.TempDir()
				s, err := session.New(session.Options{Registry: reg, Stderr: testWriter{t}, Config: map[string]string{
					"execution.checkpointing.interval":      "50 ms",
					"state.checkpoints.dir":                 filepath.Join(dir, "checkpoints"),
					"state.backend.type":                    backend,
					"restart-strategy.type":                 "fixed-delay",
					"restart-strategy.fixed-delay.attempts": "3",
					"restart-strategy.fixed-delay.delay":    "10 ms",
					"parallelism.default":                   "2",
					"pipeline.name":                         "recovery-" + backend,
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out := filepath.Join(dir, "out")
				run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'flaky-datagen', 'rows-per-second' = '20000',
  'number-of-rows' = '%[1]d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d',
  'fields.k.min' = '0', 'fields.k.max' = '9');
CREATE TABLE sink_out (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '%[3]s', 'format' = 'csv');
INSERT INTO sink_out SELECT id, k FROM gen;`, rows, rows-1, out))
				if !f.failed.Load() {
					t.Fatalf("the failure after %d rows was never injected", f.failAfter)
				}
				checkExactlyOnce(t, committedIDs(t, out), rows)
			})
		}
	}
}

// testWriter sends the session's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestFinishedJobLeavesNoCheckpoint: a bounded job that finished discards its
// checkpoints (as Flink does), so running the same pipeline again starts from
// the beginning instead of resuming after the end: both runs write every row.
func TestFinishedJobLeavesNoCheckpoint(t *testing.T) {
	dir := t.TempDir()
	for attempt := 1; attempt <= 2; attempt++ {
		out := filepath.Join(dir, fmt.Sprintf("out%d", attempt))
		s, err := session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
			"execution.checkpointing.interval": "50 ms",
			"state.checkpoints.dir":            filepath.Join(dir, "checkpoints"),
			"pipeline.name":                    "same-name",
		}})
		if err != nil {
			t.Fatal(err)
		}
		run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '5000',
  'number-of-rows' = '500', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '499');
CREATE TABLE sink_out (id BIGINT, k INT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO sink_out SELECT id, k FROM gen;`, out))
		s.Close()
		checkExactlyOnce(t, committedIDs(t, out), 500)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "checkpoints", "same-name")); len(entries) != 0 {
		t.Errorf("the finished job left %d entries in its checkpoint directory", len(entries))
	}
}

// failedRun runs a job whose source fails after 200 rows with no restart, so
// the job fails and keeps its checkpoints, as a crashed one would.
func failedRun(t *testing.T, dir string, conf map[string]string, insert string) {
	t.Helper()
	failedRunAfter(t, dir, conf, insert, 200)
}

// failedRunAfter is failedRun failing after rows rows, once a checkpoint
// completed.
func failedRunAfter(t *testing.T, dir string, conf map[string]string, insert string, rows int64) {
	t.Helper()
	job := "*"
	if n, ok := conf["pipeline.name"]; ok {
		job = n
	}
	failedRunWhen(t, dir, conf, insert, rows, metadataWith(dir, job, ""))
}

// failedRunWhen is failedRun failing after rows rows once ready.
func failedRunWhen(t *testing.T, dir string, conf map[string]string, insert string, rows int64, ready func() bool) {
	t.Helper()
	f := &flakyFactory{failAfter: rows, ready: ready}
	reg := builtin.NewRegistry(os.Stdout, os.Stderr)
	reg.Register(f.connector())
	all := map[string]string{"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "restart-strategy.type": "none"}
	for k, v := range conf {
		all[k] = v
	}
	s, err := session.New(session.Options{Registry: reg, Stderr: testWriter{t}, Config: all})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = s.Execute(ctx, `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'flaky-datagen', 'rows-per-second' = '2000',
  'number-of-rows' = '100000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
`+insert)
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("the job should fail with the injected failure, got %v", err)
	}
}

// TestCheckpointIdentity: a checkpoint is resumed only by the job it belongs
// to. Unnamed jobs (default name insert-into_<sink>) never resume each other;
// a named job refuses a checkpoint taken by a different plan; two live runs of
// one named job are refused.
func TestCheckpointIdentity(t *testing.T) {
	dir := t.TempDir()
	var log lockedLog
	// Unnamed: the failed job's checkpoints stay, but a different query into
	// the same sink starts fresh.
	failedRun(t, dir, nil, `INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`)
	s, err := session.New(session.Options{Stderr: &log, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s, `
CREATE TABLE g2 (id BIGINT, k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '0', 'fields.id.end' = '9');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, SUM(id) FROM g2 GROUP BY k;`)
	s.Close()
	if strings.Contains(log.String(), "Restoring") {
		t.Errorf("an unnamed job resumed another job's checkpoint:\n%s", log.String())
	}

	// Named: a different plan under the same name is refused.
	named := map[string]string{"pipeline.name": "totals-job"}
	failedRun(t, dir, named, `INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`)
	s, err = session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "totals-job"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = s.Execute(ctx, `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, CAST(SUM(id) AS BIGINT) FROM gen GROUP BY k;`)
	if err == nil || !strings.Contains(err.Error(), "was taken by a different plan") {
		t.Fatalf("resuming a checkpoint of a different plan: %v", err)
	}

	// Two live runs of one named job: the second is refused.
	first, err := session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "live-job"}})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	unbounded := `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`
	stmts, err := parser.ParseScript(unbounded)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		if _, err := first.ExecuteStatement(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	second, err := session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "live-job"}})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.Execute(ctx, unbounded); err == nil || !strings.Contains(err.Error(), "another running job uses this name") {
		t.Fatalf("a second live run of a named job: %v", err)
	}
}

// lockedLog collects what a session writes to stderr from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMaxParallelismRecorded: keyed state is split into
// pipeline.max-parallelism key groups, so a checkpoint taken with 128 cannot
// be restored with 64 (the counts would land on the wrong subtasks); the
// restore is refused with Flink's message. A job that leaves the option unset
// adopts the checkpoint's, as in Flink.
func TestMaxParallelismRecorded(t *testing.T) {
	dir := t.TempDir()
	insert := `INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`
	failedRun(t, dir, map[string]string{"pipeline.name": "maxpar-job", "parallelism.default": "2"}, insert)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script := `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'number-of-rows' = '100000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
` + insert
	s, err := session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "maxpar-job",
		"parallelism.default": "2", "pipeline.max-parallelism": "64"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Execute(ctx, script)
	s.Close()
	if err == nil || !strings.Contains(err.Error(), "The maximum parallelism (128) with which the latest checkpoint") ||
		!strings.Contains(err.Error(), "the current maximum parallelism (64) changed. This is currently not supported.") {
		t.Fatalf("restoring a max-parallelism 128 checkpoint with 64: %v", err)
	}

	failedRun(t, dir, map[string]string{"pipeline.name": "maxpar-256", "pipeline.max-parallelism": "256"}, insert)
	var log lockedLog
	s, err = session.New(session.Options{Stderr: &log, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "maxpar-256"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		if _, err := s.ExecuteStatement(ctx, st); err != nil {
			t.Fatalf("restoring with the option unset: %v", err)
		}
	}
	if !strings.Contains(log.String(), "uses the maximum parallelism 256 of checkpoint") {
		t.Fatalf("the job did not adopt the checkpoint's max parallelism:\n%s", log.String())
	}
}

// TestUnrestorableFailsAtOnce: a restore that cannot succeed fails the job
// with a clear message instead of restarting it again and again: a
// checkpoint whose shared file is gone. (A checkpoint taken with rocksdb
// restored with hashmap used to be the other case; it now restores, see
// TestRestoreCheckpointAtOtherParallelism.)
func TestUnrestorableFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	insert := `INSERT INTO totals SELECT k, COUNT(*) FROM gen GROUP BY k;`
	script := `
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '2000',
  'number-of-rows' = '100000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999');
CREATE TABLE totals (k INT, n BIGINT) WITH ('connector' = 'blackhole');
` + insert
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// A shared file of the only checkpoint is gone: the start fails, naming it.
	// Fail once a completed checkpoint references a shared file (an SST).
	failedRunWhen(t, dir, map[string]string{"pipeline.name": "lost-file", "state.backend.type": "rocksdb"}, insert, 1000,
		metadataWith(dir, "lost-file", `"shared": true`))
	st, err := checkpoint.OpenStorage(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mds, err := checkpoint.ListCheckpoints(ctx, st, "lost-file")
	if err != nil || len(mds) == 0 {
		t.Fatalf("checkpoints of the failed run: %v, %v", mds, err)
	}
	var shared []string
	for _, in := range mds[len(mds)-1].Instances {
		for _, f := range in.Files {
			if f.Shared {
				shared = append(shared, filepath.Join(dir, "lost-file", filepath.FromSlash(f.Path)))
			}
		}
	}
	if len(shared) == 0 {
		t.Fatalf("the latest checkpoint %d references no shared file", mds[len(mds)-1].ID)
	}
	if err := os.Remove(shared[0]); err != nil {
		t.Fatal(err)
	}
	s, err := session.New(session.Options{Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval": "20 ms", "state.checkpoints.dir": dir, "pipeline.name": "lost-file",
		"state.backend.type": "rocksdb"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Execute(ctx, script)
	if err == nil || !strings.Contains(err.Error(), "can be restored") || !strings.Contains(err.Error(), filepath.Base(shared[0])+" (operator") {
		t.Fatalf("restoring a checkpoint whose shared file is gone: %v", err)
	}
}
