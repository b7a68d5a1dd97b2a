package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
  'properties.transaction.timeout.ms' = '900000'
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

// TestPoolingTransactionalIDsEndToEnd: an exactly-once job runs over many
// checkpoints (datagen at 300 rows/s for 1 s, checkpoints every 50 ms) with
// sink parallelism 2, once with 'POOLING' and once with 'INCREMENTING'.
// Both outputs are exactly the 300 rows; with POOLING each subtask used at
// most 3 transactional ids (one being committed, one pre-committed, one
// open), with INCREMENTING one per checkpoint, more than 3.
func TestPoolingTransactionalIDsEndToEnd(t *testing.T) {
	addr := startBroker(t, map[string]int32{"POOLING": 2, "INCREMENTING": 2})
	const rows = 300
	for _, naming := range []string{"POOLING", "INCREMENTING"} {
		s := newSession(t, map[string]string{"execution.checkpointing.interval": "50 ms", "state.checkpoints.dir": "file://" + t.TempDir()})
		run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '300',
  'number-of-rows' = '%[2]d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[3]d');
CREATE TABLE eo_out (id BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '%[4]s', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'csv',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%[4]s',
  'sink.transaction-naming-strategy' = '%[4]s', 'sink.parallelism' = '2',
  'properties.transaction.timeout.ms' = '900000'
);
INSERT INTO eo_out SELECT id FROM gen;`, addr, rows, rows-1, naming))
		recs := readAll(t, addr, naming, rows)
		seen := map[string]bool{}
		for _, r := range recs {
			seen[string(r.Value)] = true
		}
		if len(recs) != rows || len(seen) != rows {
			t.Fatalf("%s: read %d records, %d distinct; want %d", naming, len(recs), len(seen), rows)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]map[string][]string{} // naming -> subtask -> ids
	for _, l := range listed.Sorted() {
		naming, rest, _ := strings.Cut(l.TxnID, "-")
		sub, _, _ := strings.Cut(rest, "-")
		if ids[naming] == nil {
			ids[naming] = map[string][]string{}
		}
		ids[naming][sub] = append(ids[naming][sub], l.TxnID)
	}
	if len(ids["POOLING"]) != 2 || len(ids["INCREMENTING"]) != 2 {
		t.Fatalf("transactional ids by subtask: %v", ids)
	}
	for sub, used := range ids["POOLING"] {
		if len(used) > 3 {
			t.Errorf("POOLING: subtask %s used %d transactional ids, want at most 3: %v", sub, len(used), used)
		}
	}
	for sub, used := range ids["INCREMENTING"] {
		if len(used) <= 3 {
			t.Errorf("INCREMENTING: subtask %s used only %d transactional ids: too few checkpoints to tell the strategies apart: %v", sub, len(used), used)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the job's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestFreshStartFencesLingeringTransactions: an earlier run with sink
// parallelism 3 left a transaction of its subtask 2 open (pre-committed,
// never committed); the job starts fresh with sink parallelism 2. Subtask 0
// owns old subtask 2 and aborts it before writing, which the job's log
// says, and read_committed readers of the topic are not held back.
func TestFreshStartFencesLingeringTransactions(t *testing.T) {
	addr := startBroker(t, map[string]int32{"fenced": 1})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	old, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("lingering-2-7"), kgo.DefaultProduceTopic("fenced"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("999")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	stderr := &syncBuffer{}
	s, err := session.New(session.Options{Stderr: stderr, Config: map[string]string{"table.local-time-zone": "UTC",
		"execution.checkpointing.interval": "50 ms", "state.checkpoints.dir": "file://" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '9');
CREATE TABLE fenced (id BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'fenced', 'properties.bootstrap.servers' = '%s', 'format' = 'csv',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'lingering', 'sink.parallelism' = '2',
  'properties.transaction.timeout.ms' = '900000'
);
INSERT INTO fenced SELECT id FROM gen;`, addr))
	// readAll reads with read_committed: it would wait for the lingering
	// transaction, which holds the last stable offset before the job's rows.
	var got []string
	for _, r := range readAll(t, addr, "fenced", 10) {
		got = append(got, string(r.Value))
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "0,1,2,3,4,5,6,7,8,9" {
		t.Errorf("read_committed: %v", got)
	}
	if !strings.Contains(stderr.String(), "fenced transactional id lingering-2-7") {
		t.Errorf("the job's log does not mention the fence:\n%s", stderr)
	}
}
