package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/parser"
)

func runStatements(t *testing.T, s *Session, ctx context.Context, sql string) *Job {
	t.Helper()
	stmts, err := parser.ParseScript(sql)
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
	return job
}

func table(t *testing.T, s *Session, ctx context.Context, sql string) *StaticTable {
	t.Helper()
	rs, err := s.Execute(ctx, sql)
	if err != nil || len(rs) != 1 || rs[0].Table == nil {
		t.Fatalf("%s: %v %v", sql, rs, err)
	}
	return rs[0].Table
}

func property(tb *StaticTable, name string) string {
	for _, r := range tb.Rows {
		if r[0] == name {
			return r[1]
		}
	}
	return ""
}

// TestShowJobsAndDescribeJob: SHOW JOBS lists each job's restarts and
// latest completed checkpoint; DESCRIBE JOB shows one job's status,
// restarts, checkpoint counts and latest failure.
func TestShowJobsAndDescribeJob(t *testing.T) {
	s := newTestSession(t, map[string]string{"restart-strategy.type": "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "2", "restart-strategy.fixed-delay.delay": "10 ms"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Row 2 has a NULL id for a NOT NULL column: every attempt fails, the
	// job is restarted twice and then fails.
	failing := runStatements(t, s, ctx, `
CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'values', 'data' = '
1,a
,b
');
CREATE TABLE out_nn (id INT NOT NULL, name STRING) WITH ('connector' = 'blackhole');
INSERT INTO out_nn SELECT id, name FROM src;`)
	if failing == nil {
		t.Fatal("no job")
	}
	<-failing.Done()

	dir := t.TempDir()
	if _, err := s.Execute(ctx, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '50 ms'; SET 'state.checkpoints.dir' = '%s';`, dir)); err != nil {
		t.Fatal(err)
	}
	done := runStatements(t, s, ctx, `
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '600', 'rows-per-second' = '2000');
CREATE TABLE out_t (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k, COUNT(*) FROM gen GROUP BY k;`)
	if err := done.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	jobs := table(t, s, ctx, "SHOW JOBS;")
	if got := strings.Join(jobs.Columns, ","); got != "job id,job name,status,start time,restarts,last checkpoint" {
		t.Errorf("SHOW JOBS columns: %s", got)
	}
	if len(jobs.Rows) != 2 {
		t.Fatalf("SHOW JOBS: %v", jobs.Rows)
	}
	if r := jobs.Rows[0]; r[0] != failing.ID || r[2] != "FAILED" || r[4] != "2" || r[5] != "-" {
		t.Errorf("SHOW JOBS row of the failing job: %v, want FAILED, 2 restarts, no checkpointing", r)
	}
	d := table(t, s, ctx, "DESCRIBE JOB '"+done.ID+"';")
	// No checkpoint failed, and checkpoint ids count from 1: the latest
	// completed one, the final checkpoint at the end of input, has the id
	// of the number completed.
	var completed int
	if _, err := fmt.Sscanf(property(d, "checkpoints"), "%d completed, 0 failed, 0 in progress", &completed); err != nil || completed < 1 {
		t.Fatalf("DESCRIBE JOB checkpoints: %q (%v); %v", property(d, "checkpoints"), err, d.Rows)
	}
	if r := jobs.Rows[1]; r[0] != done.ID || r[2] != "FINISHED" || r[4] != "0" || !strings.HasPrefix(r[5], fmt.Sprintf("%d at ", completed)) {
		t.Errorf("SHOW JOBS row of the finished job: %v, want FINISHED, 0 restarts, checkpoint %d", r, completed)
	}
	if property(d, "status") != "FINISHED" || property(d, "restarts") != "0" || !strings.HasPrefix(property(d, "last checkpoint"), fmt.Sprintf("%d at ", completed)) {
		t.Errorf("DESCRIBE JOB of the finished job: %v", d.Rows)
	}
	f := table(t, s, ctx, "DESCRIBE JOB '"+failing.ID+"';")
	if property(f, "status") != "FAILED" || property(f, "restarts") != "2" || property(f, "checkpointing") != "off" ||
		!strings.Contains(property(f, "last failure"), "Column 'id' is NOT NULL") {
		t.Errorf("DESCRIBE JOB of the failed job: %v", f.Rows)
	}
	if _, err := s.Execute(ctx, "DESCRIBE JOB 'nope';"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("DESCRIBE JOB of an unknown job: %v", err)
	}
	// Startup options cannot change in a running session.
	if _, err := s.Execute(ctx, "SET 'rest.port' = '9999';"); err == nil || !strings.Contains(err.Error(), "-D rest.port=9999") {
		t.Errorf("SET 'rest.port': %v", err)
	}
}

// TestCompletionsOfferOptionKeys: the shell's completion words include
// the session's option keys (for SET), not the startup-only ones.
func TestCompletionsOfferOptionKeys(t *testing.T) {
	s := newTestSession(t, nil)
	words := map[string]bool{}
	for _, w := range s.Completions() {
		words[w] = true
	}
	if !words["execution.checkpointing.interval"] || !words["table.local-time-zone"] || words["rest.port"] || !words["DESCRIBE JOB"] {
		t.Errorf("completion words lack option keys or offer startup options: %d words", len(words))
	}
}

// TestCompletionsOfferColumns: after CREATE TABLE and CREATE VIEW the
// completion words hold the table, the view and their columns, plain and
// qualified by the object's name.
func TestCompletionsOfferColumns(t *testing.T) {
	s := newTestSession(t, nil)
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE TABLE orders (order_id BIGINT, amount DOUBLE) WITH ('connector' = 'datagen');",
		"CREATE VIEW big_orders AS SELECT order_id AS big_id FROM orders WHERE amount > 100;",
	} {
		if _, err := s.Execute(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	words := map[string]bool{}
	for _, w := range s.Completions() {
		words[w] = true
	}
	for _, want := range []string{"orders", "big_orders", "order_id", "amount", "orders.order_id", "orders.amount", "big_id", "big_orders.big_id"} {
		if !words[want] {
			t.Errorf("completion words lack %q", want)
		}
	}
	if words["orders.big_id"] || words["big_orders.amount"] {
		t.Errorf("completion words qualify a column by the wrong object")
	}
}

// TestSourceProgress: rows read add up over source vertices; the
// remaining rows are known only when every source subtask knows its own.
func TestSourceProgress(t *testing.T) {
	vms := []exec.VertexMetrics{
		{RowsRead: 100, SourceRemaining: []int64{10, 20}},
		{RowsRead: 0}, // not a source
		{RowsRead: 50, SourceRemaining: []int64{5}},
	}
	if r, left := sourceProgress(vms); r != 150 || left != 35 {
		t.Errorf("known: %d read, %d remaining; want 150, 35", r, left)
	}
	vms[2].SourceRemaining[0] = -1
	if r, left := sourceProgress(vms); r != 150 || left != -1 {
		t.Errorf("one subtask unknown: %d read, %d remaining; want 150, -1", r, left)
	}
	vms[0].SourceRemaining[0] = -1
	vms[2].SourceRemaining[0] = 7
	if r, left := sourceProgress(vms); r != 150 || left != -1 {
		t.Errorf("first subtask unknown: %d read, %d remaining; want 150, -1", r, left)
	}
	if _, left := sourceProgress(nil); left != -1 {
		t.Errorf("no sources: %d remaining, want -1", left)
	}
}
