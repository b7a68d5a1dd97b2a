package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/session"
)

// TestJDBCExactlyOnceInProcessRestart: a task failure restarts the job in
// the same process (restart-strategy fixed-delay); the restarted exactly-
// once jdbc sinks (append and upsert) take their prefixes again, commit the
// restored checkpoint's transactions and roll back the later ones, so the
// tables hold every row once and nothing stays prepared.
func TestJDBCExactlyOnceInProcessRestart(t *testing.T) {
	const rows = 3000
	pg := pgtest.Start(t, pgtest.Options{})
	db := pg.CreateDB(t)
	db.Exec(t, "CREATE TABLE ids (id bigint, k int); CREATE TABLE counts (k int PRIMARY KEY, n bigint)")
	dir := t.TempDir()
	f := &flakyFactory{failAfter: 1200}
	// Fail once a checkpoint completed (its sinks had prepared rows: the
	// source has read 1200 rows by then).
	f.ready = func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "chk-*", "_metadata"))
		return len(files) > 0
	}
	reg := builtin.NewRegistry(os.Stdout, os.Stderr)
	reg.Register(f.connector())
	s, err := session.New(session.Options{Registry: reg, Stderr: testWriter{t}, Config: map[string]string{
		"execution.checkpointing.interval":      "50 ms",
		"state.checkpoints.dir":                 filepath.Join(dir, "checkpoints"),
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "3",
		"restart-strategy.fixed-delay.delay":    "10 ms",
		"parallelism.default":                   "2",
		"pipeline.name":                         "jdbc-recovery",
		"table.local-time-zone":                 "UTC",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := db.JDBCURL() + "?user=postgres"
	run(t, s, fmt.Sprintf(`
CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'flaky-datagen', 'rows-per-second' = '10000',
  'number-of-rows' = '%[1]d', 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '%[2]d',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '0', 'fields.k.end' = '%[2]d');
CREATE TABLE ids (id BIGINT, k INT) WITH ('connector' = 'jdbc', 'url' = '%[3]s', 'table-name' = 'ids',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'rec-ids');
CREATE TABLE counts (k INT, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'jdbc', 'url' = '%[3]s', 'table-name' = 'counts',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'rec-counts');
EXECUTE STATEMENT SET BEGIN
INSERT INTO ids SELECT id, k FROM gen;
INSERT INTO counts SELECT MOD(k, 7), COUNT(*) FROM gen GROUP BY MOD(k, 7);
END;`, rows, rows-1, url))
	if !f.failed.Load() {
		t.Fatal("the failure was never injected")
	}
	// 0…2999 once each: sum 2999·3000/2.
	if got := db.Query(t, "SELECT count(*), count(DISTINCT id), sum(id) FROM ids"); got[0] != "3000|3000|4498500" {
		t.Errorf("ids: %v, want 3000|3000|4498500", got)
	}
	// k mod 7 over 0…2999: 2996 = 7·428, so remainders 0…3 (of 2996…2999) have 429 values, 4…6 have 428.
	if got := strings.Join(db.Query(t, "SELECT k, n FROM counts ORDER BY k"), ","); got != "0|429,1|429,2|429,3|429,4|428,5|428,6|428" {
		t.Errorf("counts: %s", got)
	}
	if got := db.Query(t, "SELECT gid FROM pg_prepared_xacts"); len(got) != 0 {
		t.Errorf("prepared transactions left: %v", got)
	}
}
