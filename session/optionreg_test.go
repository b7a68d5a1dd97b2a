package session

import (
	"context"
	"strings"
	"testing"
)

// TestSetWarnsOnUnknownKey: SET of a key no option declares succeeds (as
// in Flink) and warns on the session's stderr with the nearest known key.
func TestSetWarnsOnUnknownKey(t *testing.T) {
	var errOut syncBuffer
	s, err := New(Options{Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), "SET 'paralelism.default' = '4';"); err != nil {
		t.Fatal(err)
	}
	if got := errOut.take(); !strings.Contains(got, "[WARNING] 'paralelism.default' is not an option flinksql reads") ||
		!strings.Contains(got, "Did you mean 'parallelism.default'?") {
		t.Fatalf("stderr = %q", got)
	}
	if got := s.Get("parallelism.default"); got != "1" {
		t.Fatalf("parallelism.default = %s, want the default 1 (the typo set another key)", got)
	}
}

// TestIncrementalContradictingBackendRefused: the rocksdb backend always
// checkpoints incrementally and hashmap always fully, so an explicit
// 'execution.checkpointing.incremental' that says otherwise is refused
// when the job starts instead of being ignored.
func TestIncrementalContradictingBackendRefused(t *testing.T) {
	for _, tc := range []struct{ backend, incremental, want string }{
		{"rocksdb", "false", "'execution.checkpointing.incremental' = 'false' is not supported with 'state.backend.type' = 'rocksdb'"},
		{"hashmap", "true", "'execution.checkpointing.incremental' = 'true' is not supported with 'state.backend.type' = 'hashmap'"},
	} {
		s := newTestSession(t, map[string]string{
			"state.backend.type": tc.backend, "execution.checkpointing.incremental": tc.incremental,
			"execution.checkpointing.interval": "1 s", "state.checkpoints.dir": t.TempDir(),
		})
		_, err := s.Execute(context.Background(), `
CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;`)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with incremental %s: %v, want %q", tc.backend, tc.incremental, err, tc.want)
		}
	}
	// Agreeing values run.
	s := newTestSession(t, map[string]string{
		"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
		"execution.checkpointing.interval": "1 s", "state.checkpoints.dir": t.TempDir(),
	})
	if _, err := s.Execute(context.Background(), `
CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;`); err != nil {
		t.Fatal(err)
	}
}
