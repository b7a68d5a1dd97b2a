package postgrescdc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// TestMain is the package's (reader_test.go): one server for both test packages.

const timeout = 60 * time.Second

func newSession(t *testing.T, conf map[string]string) *session.Session {
	t.Helper()
	conf["table.local-time-zone"] = "UTC"
	s, err := session.New(session.Options{Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func cdcTable(db *pgtest.DB, name, slot, extra string) string {
	return fmt.Sprintf(`CREATE TABLE %s (id INT, k STRING, amount BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'postgres-cdc', 'hostname' = '%s', 'port' = '%d', 'username' = 'postgres', 'password' = 'secret',
  'database-name' = '%s', 'schema-name' = 'public', 'table-name' = 'src', 'slot.name' = '%s'%s)`, name, db.Host, db.Port, db.Name, slot, extra)
}

// TestExplainChangelogMode: with 'changelog-mode' = 'all' (the default)
// the source produces a retract changelog; with 'upsert' an upsert one,
// which the planner normalizes by the key.
func TestExplainChangelogMode(t *testing.T) {
	db := pgtest.NewDB(t)
	s := newSession(t, map[string]string{})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := s.Execute(ctx, cdcTable(db, "src_all", "x1", "")+";\n"+cdcTable(db, "src_upsert", "x2", ", 'changelog-mode' = 'upsert'")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, want string }{
		{"src_all", "TableSourceScan(table=[[default_catalog, default_database, src_all]], fields=[id, k, amount], changelogMode=[I,UB,UA,D]"},
		{"src_upsert", "TableSourceScan(table=[[default_catalog, default_database, src_upsert]], fields=[id, k, amount], changelogMode=[I,UA,D]"},
	} {
		res, err := s.Execute(ctx, "EXPLAIN CHANGELOG_MODE SELECT k, SUM(amount) FROM "+c.table+" GROUP BY k")
		if err != nil {
			t.Fatal(err)
		}
		if text := res[0].Text; !strings.Contains(text, c.want) {
			t.Errorf("EXPLAIN of %s:\n%s\nwant it to contain %s", c.table, text, c.want)
		}
	}
}

// TestConnectionOptions: hostname, port, username and database-name
// reach the server; a wrong one fails the job naming it.
func TestConnectionOptions(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE src (id int PRIMARY KEY, k text, amount bigint)`)
	for _, c := range []struct{ from, to, want string }{
		{"'database-name' = '" + db.Name + "'", "'database-name' = 'nodb'", `database "nodb" does not exist`},
		{"'username' = 'postgres'", "'username' = 'nobody'", `role "nobody" does not exist`},
		{"'hostname' = '" + db.Host + "'", "'hostname' = 'no-such-host.invalid'", "cannot connect to no-such-host.invalid"},
		{fmt.Sprintf("'port' = '%d'", db.Port), "'port' = '1'", "cannot connect to 127.0.0.1:1"},
	} {
		s := newSession(t, map[string]string{})
		ddl := strings.Replace(cdcTable(db, "src", "conn", ", 'changelog-mode' = 'upsert'"), c.from, c.to, 1)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := s.Execute(ctx, ddl+";\nCREATE TABLE sink_out (id INT, k STRING, amount BIGINT) WITH ('connector' = 'blackhole');\nINSERT INTO sink_out SELECT * FROM src")
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("with %s: error %v, want it to contain %q", c.to, err, c.want)
		}
	}
}

// TestJobIntoJDBCExactlyOnce runs postgres-cdc → GROUP BY → jdbc
// exactly-once with checkpoints: the snapshot and the changes made while
// the job runs end in the derived table, equal to PostgreSQL's GROUP BY.
func TestJobIntoJDBCExactlyOnce(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE src (id int PRIMARY KEY, k text, amount bigint);
ALTER TABLE src REPLICA IDENTITY FULL;
CREATE TABLE totals (k text PRIMARY KEY, n bigint, total bigint);
INSERT INTO src SELECT i, 'k' || (i % 3), i FROM generate_series(1, 30) i`)
	s := newSession(t, map[string]string{
		"execution.checkpointing.interval": "100 ms", "state.checkpoints.dir": "file://" + t.TempDir(), "parallelism.default": "2",
	})
	script := cdcTable(db, "src", "job_slot", "") + `;
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'jdbc',
  'url' = '` + db.JDBCURL() + `?user=postgres', 'table-name' = 'totals', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'cdc-job');
INSERT INTO totals SELECT k, COUNT(*), SUM(amount) FROM src GROUP BY k`
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	var job *session.Job
	for _, st := range stmts {
		res, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		job = res.Job
	}
	defer func() {
		job.Stop()
		_ = job.Wait(ctx)
	}()
	// Snapshot: k0 = 3+6+…+30 = 165 (10 rows), k1 = 1+4+…+28 = 145, k2 = 155.
	awaitTable(t, db, job, []string{"k0|10|165", "k1|10|145", "k2|10|155"})
	db.Exec(t, `UPDATE src SET amount = amount + 100 WHERE id <= 3`) // k1 +100, k2 +100, k0 +100
	db.Exec(t, `DELETE FROM src WHERE k = 'k2'`)
	db.Exec(t, `INSERT INTO src VALUES (31, 'k3', 7)`)
	db.Exec(t, `UPDATE src SET k = 'k3' WHERE id = 30`) // k0 loses 30 to k3
	awaitTable(t, db, job, []string{"k0|9|235", "k1|10|245", "k3|2|37"})
	equalRows(t, db.Query(t, `SELECT k, count(*), sum(amount) FROM src GROUP BY k ORDER BY k`), []string{"k0|9|235", "k1|10|245", "k3|2|37"})
}

// awaitTable waits (polling the table with psql) until totals holds want,
// failing if the job ends or the time runs out.
func awaitTable(t *testing.T, db *pgtest.DB, job *session.Job, want []string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := db.Query(t, `SELECT k, n, total FROM totals ORDER BY k`)
		if strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		select {
		case <-job.Done():
			t.Fatalf("the job ended (%v) with totals %v, want %v", job.Wait(context.Background()), got, want)
		case <-time.After(50 * time.Millisecond): // the next look at the table
		}
		if time.Now().After(deadline) {
			t.Fatalf("totals %v, want %v", got, want)
		}
	}
}

func equalRows(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestIncrementalJobIntoJDBC runs the incremental snapshot at parallelism
// 2 (chunks of 4 rows: 8 chunks over the two subtasks) into a GROUP BY
// and an exactly-once jdbc sink with checkpoints taken during the
// snapshot, while changes are made concurrently with it: the derived
// table ends equal to PostgreSQL's own GROUP BY.
func TestIncrementalJobIntoJDBC(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE src (id int PRIMARY KEY, k text, amount bigint);
ALTER TABLE src REPLICA IDENTITY FULL;
CREATE TABLE totals (k text PRIMARY KEY, n bigint, total bigint);
INSERT INTO src SELECT i, 'k' || (i % 3), i FROM generate_series(1, 30) i`)
	s := newSession(t, map[string]string{
		"execution.checkpointing.interval": "100 ms", "state.checkpoints.dir": "file://" + t.TempDir(), "parallelism.default": "2",
	})
	script := cdcTable(db, "src", "inc_job_slot", `, 'scan.incremental.snapshot.enabled' = 'true', 'scan.incremental.snapshot.chunk.size' = '4'`) + `;
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'jdbc',
  'url' = '` + db.JDBCURL() + `?user=postgres', 'table-name' = 'totals', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'cdc-inc-job');
INSERT INTO totals SELECT k, COUNT(*), SUM(amount) FROM src GROUP BY k`
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	var job *session.Job
	for _, st := range stmts {
		res, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		job = res.Job
	}
	defer func() {
		job.Stop()
		_ = job.Wait(ctx)
	}()
	// Changes while the chunks are read (racing them on purpose): every
	// one must be counted once, whichever chunk or the stream carries it.
	db.Exec(t, `UPDATE src SET amount = amount + 100 WHERE id <= 3`)
	db.Exec(t, `DELETE FROM src WHERE id IN (13, 14, 29)`)
	db.Exec(t, `INSERT INTO src VALUES (31, 'k3', 7), (0, 'k0', 1000)`)
	db.Exec(t, `UPDATE src SET k = 'k3' WHERE id = 30`)
	db.Exec(t, `UPDATE src SET amount = amount * 2 WHERE id BETWEEN 10 AND 20`)
	want := db.Query(t, `SELECT k, count(*), sum(amount) FROM src GROUP BY k ORDER BY k`)
	awaitTable(t, db, job, want)
	// And after the snapshot, the stream alone.
	db.Exec(t, `DELETE FROM src WHERE k = 'k2'`)
	want = db.Query(t, `SELECT k, count(*), sum(amount) FROM src GROUP BY k ORDER BY k`)
	awaitTable(t, db, job, want)
}
