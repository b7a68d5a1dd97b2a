package integration_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The crash drill for PostgreSQL (issue 16): the drill's windowed pipeline
// (Kafka → TUMBLE(10 s) SUM per key, parallelism 2) writes to a 'jdbc'
// table of a real PostgreSQL server instead of a topic. The engine runs as
// a process of its own and is killed with SIGKILL at random moments and at
// each point of the two-phase commit (before and after the pre-commit,
// after the checkpoint completed, during the commits), then started again
// until a run finishes. psql (an independent client) then reads the table:
//
//   - exactly-once (append mode, PREPARE TRANSACTION per subtask and
//     checkpoint): every (key, window) exactly once with its sum, and
//     pg_prepared_xacts empty;
//   - the same in upsert mode (PRIMARY KEY (window_start, k));
//   - at-least-once in upsert mode (PRIMARY KEY (window_start, k)): every
//     (key, window) once with its sum, the replays being idempotent;
//   - at-least-once in append mode: every (key, window) at least once with
//     its sum; the duplicates are reported.
func TestJDBCCrashDrill(t *testing.T) {
	start := time.Now()
	// A shorter input than the Kafka drill's: each run here ends in a
	// kill after about one checkpoint interval, so fewer events outlast
	// the plan.
	saved := drillEvents
	drillEvents = 40000
	t.Cleanup(func() { drillEvents = saved })

	dir := t.TempDir()
	bin := buildBinary(t, dir)
	broker := drillBroker(t, bin, filepath.Join(dir, "broker"))
	pg := pgtest.Start(t, pgtest.Options{})
	seed := uint64(drillSeed)
	evs := drillInput(seed)
	want := drillExpected(evs)
	produceDrillInput(t, broker.addr, evs)
	t.Logf("broker %s, PostgreSQL on port %d: %d events, %d (key, window) results expected; setup took %v",
		broker.addr, pg.Port, len(evs), len(want), time.Since(start).Round(time.Millisecond))

	// Every two-phase-commit point is killed at in every mode; the random
	// kills between them are few, to keep the suite's time (CI runs this
	// under -race on 2 cores).
	randomKills := func(n int) []drillRun {
		runs := make([]drillRun, n)
		for i := range runs {
			runs[i].random = true
		}
		return runs
	}
	targeted := func(points ...string) []drillRun {
		var runs []drillRun
		for _, p := range points {
			runs = append(runs, drillRun{fault: p})
		}
		return runs
	}

	drill := func(t *testing.T, name, guarantee string, upsert bool, plan []drillRun) (drillReport, *pgtest.DB) {
		db := pg.CreateDB(t)
		pk, pgPK := "", ""
		if upsert {
			pk, pgPK = ",\n  PRIMARY KEY (window_start, k) NOT ENFORCED", ", PRIMARY KEY (window_start, k)"
		}
		db.Exec(t, "CREATE TABLE totals (window_start timestamp(3), k text, total bigint"+pgPK+")")
		script := filepath.Join(dir, name+".sql")
		tmp := filepath.Join(dir, "tmp-"+name)
		writeFile(t, script, jdbcDrillSQL(broker.addr, db.JDBCURL()+"?user=postgres", filepath.Join(dir, "checkpoints-"+name), name, guarantee, pk))
		mkdir(t, tmp)
		count := func() string {
			return fmt.Sprintf("%s rows, %s prepared", db.Query(t, "SELECT count(*) FROM totals")[0],
				db.Query(t, "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()")[0])
		}
		st := runDrill(t, bin, script, tmp, plan, seed, nil, count)
		if st.loss != "" {
			t.Fatalf("the job reported lost output: %s", st.loss)
		}
		rep := checkDrillOutput(readTotals(t, db), want)
		t.Logf("%s: %d runs (%d random kills, %d fault-point kills, %d restores); %d rows, %d of %d (key, window) results, %d duplicated (%d extra rows), %d missing, %d wrong; %v",
			name, st.runs, st.randomKills, st.faultKills, st.restores, rep.records, rep.distinct, len(want),
			len(rep.duplicates), rep.duplicateRecordsTotal, len(rep.missing), len(rep.wrong), time.Since(start).Round(time.Millisecond))
		return rep, db
	}

	t.Run("exactly-once", func(t *testing.T) {
		var plan []drillRun
		plan = append(plan, randomKills(2)...)
		plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete", "during-commit")...)
		plan = append(plan, randomKills(1)...)
		plan = append(plan, drillRun{})
		rep, db := drill(t, "jdbc-exactly-once", "exactly-once", false, plan)
		rep.errorf(t, true)
		if rep.records != len(want) {
			t.Errorf("%d rows, want exactly %d", rep.records, len(want))
		}
		if got := db.Query(t, "SELECT gid FROM pg_prepared_xacts"); len(got) != 0 {
			t.Errorf("prepared transactions left: %v", got)
		}
	})
	t.Run("exactly-once-upsert", func(t *testing.T) {
		var plan []drillRun
		plan = append(plan, randomKills(1)...)
		plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete", "during-commit")...)
		plan = append(plan, drillRun{})
		rep, db := drill(t, "jdbc-exactly-once-upsert", "exactly-once", true, plan)
		rep.errorf(t, true)
		if got := db.Query(t, "SELECT gid FROM pg_prepared_xacts"); len(got) != 0 {
			t.Errorf("prepared transactions left: %v", got)
		}
	})
	t.Run("at-least-once-upsert", func(t *testing.T) {
		var plan []drillRun
		plan = append(plan, randomKills(2)...)
		plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete")...)
		plan = append(plan, drillRun{})
		rep, _ := drill(t, "jdbc-alo-upsert", "at-least-once", true, plan)
		rep.errorf(t, true) // the key makes the replays idempotent
	})
	t.Run("at-least-once-append", func(t *testing.T) {
		var plan []drillRun
		plan = append(plan, randomKills(1)...)
		plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete")...)
		plan = append(plan, drillRun{})
		rep, _ := drill(t, "jdbc-alo-append", "at-least-once", false, plan)
		rep.errorf(t, false) // duplicates are at-least-once's
	})
}

// readTotals reads the table with psql, as records checkDrillOutput takes.
func readTotals(t *testing.T, db *pgtest.DB) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	for i, line := range db.Query(t, "SELECT to_char(window_start, 'YYYY-MM-DD HH24:MI:SS.MS'), k, total FROM totals ORDER BY 1, 2") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("psql row %q", line)
		}
		var total int64
		if _, err := fmt.Sscan(f[2], &total); err != nil {
			t.Fatalf("psql row %q: %v", line, err)
		}
		v, _ := json.Marshal(totalRecord{WindowStart: f[0], K: f[1], Total: &total})
		recs = append(recs, &kgo.Record{Value: v, Offset: int64(i)})
	}
	return recs
}

// jdbcDrillSQL is drillSQL's pipeline with a jdbc sink.
func jdbcDrillSQL(addr, url, checkpoints, name, guarantee, pk string) string {
	sinkOpts := fmt.Sprintf(`'sink.delivery-guarantee' = '%s'`, guarantee)
	if guarantee == "exactly-once" {
		sinkOpts += `, 'sink.transactional-id-prefix' = 'drill'`
	}
	return drillPipelineSQL(addr, checkpoints, name, pk, fmt.Sprintf(`
  'connector' = 'jdbc',
  'url' = '%s',
  'table-name' = 'totals',
  %s`, url, sinkOpts))
}
