package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// Two running jobs with the same 'sink.transactional-id-prefix' would abort
// each other's transactions (issue 9 item 8): a second job is refused
// before it starts, within one session and across sessions (as across
// processes: the lease lives in the broker).

// startPrefixJob defines an exactly-once sink table of the given prefix
// writing topic sink and starts an unbounded INSERT into it; it returns the
// start's error.
func startPrefixJob(t *testing.T, s *session.Session, addr, sink, prefix string) error {
	t.Helper()
	run(t, s, fmt.Sprintf(`
CREATE TABLE IF NOT EXISTS src (v STRING) WITH (
  'connector' = 'kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'format' = 'raw'
);
CREATE TABLE %[2]s_%[3]s (v STRING) WITH (
  'connector' = 'kafka', 'topic' = '%[2]s', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'raw',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%[3]s',
  'properties.transaction.timeout.ms' = '60000'
);`, addr, sink, prefix))
	st, err := parser.ParseStatement(fmt.Sprintf("INSERT INTO %s_%s SELECT v FROM src", sink, prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = s.ExecuteStatement(ctx, st)
	return err
}

func TestTransactionalIDPrefixUniqueAcrossSessions(t *testing.T) {
	addr := startBroker(t, map[string]int32{"in": 1, "out1": 1, "out2": 1})
	conf := func() map[string]string {
		return map[string]string{"execution.checkpointing.interval": "200 ms", "state.checkpoints.dir": "file://" + t.TempDir()}
	}
	first := newSession(t, conf())
	if err := startPrefixJob(t, first, addr, "out1", "shared"); err != nil {
		t.Fatal(err)
	}

	// The same session: refused by the session's own check.
	err := startPrefixJob(t, first, addr, "out2", "shared")
	if err == nil || !strings.Contains(err.Error(), "The 'sink.transactional-id-prefix' 'shared' of table 'default_catalog.default_database.out2_shared' is already used by running job") {
		t.Fatalf("second job in the same session: %v", err)
	}

	// Another session (another process sees the same): refused by the
	// lease the first job renews in the broker.
	second := newSession(t, conf())
	err = startPrefixJob(t, second, addr, "out2", "shared")
	if err == nil || !strings.Contains(err.Error(), "The 'sink.transactional-id-prefix' 'shared' is in use by another running job: job '") ||
		!strings.Contains(err.Error(), "give this sink a 'sink.transactional-id-prefix' of its own") {
		t.Fatalf("second job in another session: %v", err)
	}
	// A prefix of its own is fine.
	if err := startPrefixJob(t, second, addr, "out2", "other"); err != nil {
		t.Fatal(err)
	}

	// Once the first job ended, its prefix is free at once.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := newSession(t, conf())
	if err := startPrefixJob(t, third, addr, "out1", "shared"); err != nil {
		t.Fatal(err)
	}
}
