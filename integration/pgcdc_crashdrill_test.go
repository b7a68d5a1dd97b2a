package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// The CDC drill (issue 17): postgres-cdc → GROUP BY → jdbc exactly-once
// into another table of the same PostgreSQL server, while a load
// goroutine inserts, updates (amounts and group keys) and deletes rows of
// the source table. The engine runs as a process of its own and is
// killed with SIGKILL at random moments and at each point of the sink's
// two-phase commit; each run restores the latest checkpoint (the source's
// LSN among it). When the load has stopped a last run catches up, and the
// derived table must then equal the same GROUP BY computed by PostgreSQL
// over the source table: a change lost or applied twice anywhere would
// show as a wrong count or sum.
func TestPostgresCDCCrashDrill(t *testing.T) { cdcCrashDrill(t, "") }

// TestPostgresCDCIncrementalCrashDrill is the drill with the incremental
// snapshot at parallelism 2, in chunks of 10 rows (200 chunks of the 2000
// rows, so that the first run's snapshot outlasts its first checkpoints):
// kills fall during the snapshot too, whose checkpoints record the chunks
// each subtask emitted; a restore reads the others again.
func TestPostgresCDCIncrementalCrashDrill(t *testing.T) {
	cdcCrashDrill(t, `,
  'scan.incremental.snapshot.enabled' = 'true',
  'scan.incremental.snapshot.chunk.size' = '10'`)
}

// cdcCrashDrill runs the drill with the source's extra options.
func cdcCrashDrill(t *testing.T, extra string) {
	start := time.Now()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	pg := pgtest.Start(t, pgtest.Options{})
	db := pg.CreateDB(t)
	db.Exec(t, `CREATE TABLE src (id int PRIMARY KEY, k text NOT NULL, amount bigint NOT NULL);
ALTER TABLE src REPLICA IDENTITY FULL;
INSERT INTO src SELECT i, 'k' || (i % 20), i FROM generate_series(1, 2000) i;
CREATE TABLE totals (k text PRIMARY KEY, n bigint NOT NULL, total bigint NOT NULL)`)
	script := filepath.Join(dir, "cdc.sql")
	tmp := filepath.Join(dir, "tmp")
	mkdir(t, tmp)
	writeFile(t, script, cdcDrillSQL(pg, db, filepath.Join(dir, "checkpoints"), extra))

	seed := uint64(drillSeed)
	if v := os.Getenv("FLINKSQL_DRILL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FLINKSQL_DRILL_SEED: %v", err)
		}
		seed = n
	}
	load := startCDCLoad(t, db.DSN(), seed)
	count := func() string {
		return fmt.Sprintf("%s derived rows, %d load transactions so far", db.Query(t, "SELECT count(*) FROM totals")[0], load.count())
	}
	// One round is 4 random and 4 fault-point kills (seconds, for CI);
	// FLINKSQL_DRILL_ROUNDS repeats it for a long drill, FLINKSQL_DRILL_SEED
	// changes the load and the kill moments.
	rounds := 1
	envInt(t, "FLINKSQL_DRILL_ROUNDS", &rounds)
	var plan []drillRun
	for range rounds {
		plan = append(plan, drillRun{random: true}, drillRun{fault: "before-precommit"}, drillRun{random: true}, drillRun{fault: "after-precommit"},
			drillRun{fault: "after-complete"}, drillRun{random: true}, drillRun{fault: "during-commit"}, drillRun{random: true})
	}
	st := runDrill(t, bin, script, tmp, plan, seed, nil, count)
	if st.loss != "" {
		t.Fatalf("the job reported lost output: %s", st.loss)
	}
	txns := load.stop(t)

	want := db.Query(t, `SELECT k, count(*), sum(amount) FROM src GROUP BY k ORDER BY k`)
	got, took := catchUp(t, bin, script, tmp, db, want)
	t.Logf("%d runs (%d random kills, %d fault-point kills, %d restores), %d load transactions; the last run caught up in %v; %d groups; %v in all",
		st.runs, st.randomKills, st.faultKills, st.restores, txns, took.Round(time.Millisecond), len(want), time.Since(start).Round(time.Millisecond))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("derived table != PostgreSQL's GROUP BY over the source:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st.restores < len(plan)-1 {
		t.Errorf("%d of %d runs restored a checkpoint, want every run after the first", st.restores, len(plan))
	}
}

func cdcDrillSQL(pg *pgtest.Server, db *pgtest.DB, checkpoints, extra string) string {
	return drillSettingsSQL("file://"+checkpoints, "cdc-drill") + fmt.Sprintf(`
CREATE TABLE src (
  id INT,
  k STRING,
  amount BIGINT,
  PRIMARY KEY (id) NOT ENFORCED
) WITH (
  'connector' = 'postgres-cdc',
  'hostname' = '%s',
  'port' = '%d',
  'username' = 'postgres',
  'password' = 'unused',
  'database-name' = '%s',
  'schema-name' = 'public',
  'table-name' = 'src',
  'slot.name' = 'cdc_drill',
  'decoding.plugin.name' = 'pgoutput'%s
);

CREATE TABLE totals (
  k STRING,
  n BIGINT,
  total BIGINT,
  PRIMARY KEY (k) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = '%s?user=postgres',
  'table-name' = 'totals',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'cdc-drill'
);

INSERT INTO totals SELECT k, COUNT(*), SUM(amount) FROM src GROUP BY k;
`, pg.Host, pg.Port, db.Name, extra, db.JDBCURL())
}

// cdcLoad changes the source table in small transactions until stopped.
type cdcLoad struct {
	cancel   context.CancelFunc
	finished chan struct{} // closed when the goroutine ended, err set
	err      error
	mu       sync.Mutex
	txns     int
}

func (l *cdcLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.txns
}

// stop ends the load and returns the number of transactions it committed.
func (l *cdcLoad) stop(t *testing.T) int {
	t.Helper()
	l.cancel()
	<-l.finished
	if l.err != nil {
		t.Fatalf("load: %v", l.err)
	}
	return l.count()
}

// startCDCLoad runs transactions of 1 to 4 statements: inserts of new ids,
// updates of amounts, moves of rows to another group, deletes. stop fails
// the test on any error but the load's own cancellation.
func startCDCLoad(t *testing.T, dsn string, seed uint64) *cdcLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &cdcLoad{cancel: cancel, finished: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, 7))
	go func() {
		defer close(l.finished)
		defer conn.Close(context.Background())
		next := 2001
		// Pace the load so that it spans the kills instead of racing
		// through the machine's CPU: one transaction every 2 ms at most.
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			tx, err := conn.Begin(ctx)
			if err != nil {
				l.err = loadErr(ctx, err)
				return
			}
			for n := 1 + rng.IntN(4); n > 0; n-- {
				id := 1 + rng.IntN(next)
				var sql string
				var args []any
				switch op := rng.IntN(10); {
				case op < 3:
					sql, args = `INSERT INTO src VALUES ($1, $2, $3)`, []any{next, fmt.Sprintf("k%d", rng.IntN(20)), 1 + rng.Int64N(1000)}
					next++
				case op < 6:
					sql, args = `UPDATE src SET amount = amount + $2 WHERE id = $1`, []any{id, rng.Int64N(100) - 50}
				case op < 8:
					sql, args = `UPDATE src SET k = $2 WHERE id = $1`, []any{id, fmt.Sprintf("k%d", rng.IntN(22))}
				default:
					sql, args = `DELETE FROM src WHERE id = $1`, []any{id}
				}
				if _, err := tx.Exec(ctx, sql, args...); err != nil {
					_ = tx.Rollback(context.Background())
					l.err = loadErr(ctx, err)
					return
				}
			}
			if err := tx.Commit(ctx); err != nil {
				l.err = loadErr(ctx, err)
				return
			}
			l.mu.Lock()
			l.txns++
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-l.finished
	})
	return l
}

func loadErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// catchUp runs the job once more, after the load stopped, until the
// derived table equals want (or the time is up), then kills it; it returns
// the table as the run left it and how long that took.
func catchUp(t *testing.T, bin, script, tmp string, db *pgtest.DB, want []string) ([]string, time.Duration) {
	t.Helper()
	began := time.Now()
	cmd := exec.Command(bin, "-f", script)
	cmd.Env = append([]string{"TMPDIR=" + tmp}, os.Environ()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		log []string
	)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log = append(log, sc.Text())
			mu.Unlock()
		}
		exited <- cmd.Wait()
	}()
	read := func() []string { return db.Query(t, `SELECT k, n, total FROM totals ORDER BY k`) }
	var got []string
	deadline := time.Now().Add(drillRunTimeout)
	for {
		got = read()
		if strings.Join(got, "\n") == strings.Join(want, "\n") || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the last run ended (%v) before it caught up:\n%s", err, strings.Join(log, "\n"))
		case <-time.After(100 * time.Millisecond): // the next look at the table
		}
	}
	took := time.Since(began)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	return read(), took
}
