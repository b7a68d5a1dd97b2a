package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/state/image"
)

// TestKeyedStateOptions: state.backend.type and the rocksdb memory options
// reach the runtime's KeyedStateConfig; a bad value is refused on SET with
// Flink's message naming the key, and leaves the option as it was.
func TestKeyedStateOptions(t *testing.T) {
	ctx := context.Background()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Defaults: hashmap, 512 MB managed memory, managed, no fixed-per-slot.
	if got, want := s.keyedStateConfig(), (exec.KeyedStateConfig{Kind: image.Hashmap, ManagedMemory: 512 << 20}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	for _, stmt := range []string{
		"SET 'state.backend.type' = 'rocksdb';",
		"SET 'taskmanager.memory.managed.size' = '256 mb';",
		"SET 'state.backend.rocksdb.memory.managed' = 'FALSE';",
		"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '1g';",
	} {
		if _, err := s.Execute(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	want := exec.KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 256 << 20, Unmanaged: true, FixedPerSlot: 1 << 30}
	if got := s.keyedStateConfig(); got != want {
		t.Errorf("after SET: %+v, want %+v", got, want)
	}
	for _, c := range []struct{ stmt, want string }{
		{"SET 'taskmanager.memory.managed.size' = 'lots';",
			`Could not parse value 'lots' for key 'taskmanager.memory.managed.size': "lots" does not start with a number.`},
		{"SET 'taskmanager.memory.managed.size' = '12 parsecs';",
			`Could not parse value '12 parsecs' for key 'taskmanager.memory.managed.size': unknown memory unit "parsecs" in "12 parsecs".`},
		{"SET 'taskmanager.memory.managed.size' = '0 mb';",
			`Could not parse value '0 mb' for key 'taskmanager.memory.managed.size': the memory must be more than 0 bytes.`},
		{"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '0';",
			`Could not parse value '0' for key 'state.backend.rocksdb.memory.fixed-per-slot': the memory must be more than 0 bytes.`},
		{"SET 'state.backend.rocksdb.memory.managed' = 'maybe';",
			`Could not parse value 'maybe' for key 'state.backend.rocksdb.memory.managed': expected one of [true, false].`},
		{"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '-1 mb';",
			`Could not parse value '-1 mb' for key 'state.backend.rocksdb.memory.fixed-per-slot': "-1 mb" does not start with a number.`},
	} {
		_, err := s.Execute(ctx, c.stmt)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s\n got %v\nwant %s", c.stmt, err, c.want)
		}
	}
	if got := s.keyedStateConfig(); got != want {
		t.Errorf("after refused SETs: %+v, want %+v unchanged", got, want)
	}
}

// TestKeyedStateBudgetRefused: a rocksdb job whose managed memory leaves a
// keyed operator instance less than the backend needs is refused when it
// starts, naming the option.
func TestKeyedStateBudgetRefused(t *testing.T) {
	s := newTestSession(t, map[string]string{"state.backend.type": "rocksdb", "taskmanager.memory.managed.size": "1 mb"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.Execute(ctx, `
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE out_t (k INT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k FROM gen ORDER BY k LIMIT 3;`)
	want := "'taskmanager.memory.managed.size' (1048576 bytes) split among the job's 1 keyed operator instances gives each 1048576 bytes, less than the 4194304 bytes a rocksdb state backend needs"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("job with 1 MB of managed memory: %v\nwant an error containing %s", err, want)
	}
}

// TestKeyedStateSizeInCheckpoint: a checkpointed job's keyed operator
// records its state size in the checkpoint, which 'flinksql checkpoints'
// lists per operator: here the final checkpoint of a stopped job.
func TestKeyedStateSizeInCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := newTestSession(t, map[string]string{"state.backend.type": "rocksdb",
		"execution.checkpointing.interval": "1 h", "state.checkpoints.dir": dir, "pipeline.name": "limited"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stmts, err := parser.ParseScript(`
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '1000');
CREATE TABLE out_t (k INT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k FROM gen LIMIT 30;`)
	if err != nil {
		t.Fatal(err)
	}
	var job *Job
	for _, st := range stmts {
		r, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Job != nil {
			job = r.Job
		}
	}
	if job == nil {
		t.Fatal("the INSERT started no job")
	}
	if _, err := job.StopClean(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := checkpoint.OpenStorage(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mds, err := checkpoint.ListCheckpoints(ctx, st, "limited")
	if err != nil || len(mds) == 0 {
		t.Fatalf("checkpoints of the stopped job: %v, %v", mds, err)
	}
	var keyed []checkpoint.StateSize
	for _, sz := range mds[len(mds)-1].StateSizes() {
		if sz.Keyed {
			keyed = append(keyed, sz)
		}
	}
	// The limit's state, on rocksdb: entries estimated, a DB on disk.
	if len(keyed) != 1 || keyed[0].StateKind != "rocksdb" || keyed[0].Subtasks != 1 || !keyed[0].Estimated || keyed[0].DiskBytes <= 0 {
		t.Errorf("keyed state sizes of the final checkpoint: %+v, want the limit's on rocksdb, on disk", keyed)
	}
}

// TestStateMemoryHook: a job tells Options.StateMemory its state budget
// when it starts (a rocksdb job the managed memory its keyed instances
// share, a hashmap job exec.UnboundedState) and releases it before the
// INSERT returns.
func TestStateMemoryHook(t *testing.T) {
	type call struct {
		budget   int64
		released bool
	}
	var calls []*call
	s, err := New(Options{StateMemory: func(budget int64) func() {
		c := &call{budget: budget}
		calls = append(calls, c)
		return func() { c.released = true }
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Execute(ctx, `
SET 'parallelism.default' = '2';
SET 'state.backend.type' = 'rocksdb';
SET 'taskmanager.memory.managed.size' = '256 mb';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '100',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99');
CREATE TABLE snk (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id % 10, COUNT(*) FROM src GROUP BY id % 10;`); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].budget != 256<<20 || !calls[0].released {
		t.Fatalf("after the rocksdb job: calls %+v, want one of 256 MiB (two instances of 128 MiB), released", calls)
	}
	if _, err := s.Execute(ctx, `
SET 'state.backend.type' = 'hashmap';
INSERT INTO snk SELECT id % 10, COUNT(*) FROM src GROUP BY id % 10;`); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1].budget != exec.UnboundedState || !calls[1].released {
		t.Fatalf("after the hashmap job: calls %+v, want a second one, unbounded, released", calls[1:])
	}
}
