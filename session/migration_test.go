package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/sql/parser"
)

const migSrc = `CREATE TABLE src (k INT, s STRING, v %s, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (
  'connector' = 'datagen', 'rows-per-second' = '500', 'fields.k.min' = '1', 'fields.k.max' = '9',
  'fields.s.length' = '2', 'fields.v.min' = '1', 'fields.v.max' = '5');
`

// takeSavepoint runs script (DDL and one INSERT) in a session of its own
// and stops the job with a savepoint once it has run for a moment.
func takeSavepoint(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newTestSession(t, map[string]string{"state.savepoints.dir": "file://" + t.TempDir(), "state.checkpoints.dir": "file://" + t.TempDir()})
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var job *Job
	for _, st := range stmts {
		r, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatalf("%v\nin %s", err, st.Text())
		}
		if r.Job != nil {
			job = r.Job
		}
	}
	if job == nil {
		t.Fatal("no job")
	}
	rs, err := s.Execute(ctx, fmt.Sprintf("STOP JOB '%s' WITH SAVEPOINT;", job.ID))
	if err != nil {
		t.Fatal(err)
	}
	return rs[0].Table.Rows[0][0]
}

// explainAgainst runs the DDL and SET statements of script in s, then
// EXPLAIN MIGRATION FROM sp of its INSERT or statement set.
func explainAgainst(t *testing.T, s *Session, sp, script string) (string, bool) {
	t.Helper()
	text, refused, err := s.ExplainMigrationScript(context.Background(), sp, script)
	if err != nil {
		t.Fatal(err)
	}
	return text, refused
}

// verdictsOf returns EXPLAIN MIGRATION's verdict column in row order,
// "kind: verdict".
func verdictsOf(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && !strings.HasPrefix(lines[0], "OPERATOR") {
		lines = lines[1:]
	}
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		f := strings.Fields(l)
		out = append(out, f[1]+": "+strings.Join(f[2:], " "))
	}
	return out
}

// TestExplainMigrationVerdicts: one savepoint per old job, the new job's
// script judged against it; each verdict worked out from the rules of
// checkpoint.PlanMigration (identity = kind, keys' names, window, table,
// upstream operators; the schema compared).
func TestExplainMigrationVerdicts(t *testing.T) {
	const sinkKN = "CREATE TABLE o (k INT, n BIGINT) WITH ('connector' = 'blackhole');\n"
	groupCount := migSrc + sinkKN + "INSERT INTO o SELECT k, COUNT(*) FROM src WHERE v > 0 GROUP BY k;"
	joinKS := fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, s STRING) WITH ('connector' = 'blackhole');\n" +
		"INSERT INTO o SELECT a.k, b.s FROM src a JOIN src b ON a.k = b.k;"
	groupSum := func(vt, key, sinkKey string) string {
		return fmt.Sprintf(migSrc, vt) + "CREATE TABLE o (k " + sinkKey + ", n " + vt + ") WITH ('connector' = 'blackhole');\n" +
			"INSERT INTO o SELECT k, SUM(v) FROM (SELECT " + key + ", v FROM src) GROUP BY k;"
	}
	for _, c := range []struct {
		name     string
		old, new string
		want     []string
		refused  bool
		result   string
	}{
		{"filter and sink options changed", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT) WITH ('connector' = 'print');\n" +
				"INSERT INTO o SELECT k, COUNT(*) FROM src WHERE v > 3 GROUP BY k;",
			[]string{"Source: kept", "GroupAggregate: kept", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 0 start empty"},
		{"projection column added", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT, k2 INT) WITH ('connector' = 'blackhole');\n" +
				"INSERT INTO o SELECT k, COUNT(*), k * 2 FROM src WHERE v > 0 GROUP BY k;",
			[]string{"Source: kept", "GroupAggregate: kept", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 0 start empty"},
		{"sink added in a statement set", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + sinkKN + "CREATE TABLE o2 (k INT, v INT) WITH ('connector' = 'blackhole');\n" +
				"EXECUTE STATEMENT SET BEGIN INSERT INTO o SELECT k, COUNT(*) FROM src WHERE v > 0 GROUP BY k; INSERT INTO o2 SELECT k, v FROM src; END;",
			[]string{"Source: kept", "GroupAggregate: kept", "Sink: kept", "Source: new (starts empty)", "Sink: new (starts empty)"}, false,
			"Result: compatible: 3 operator(s) keep their state, 2 start empty"},
		// The new INSERT comes first: the old one's scan keeps its position
		// all the same (a source's identity names the table it feeds).
		{"sink added first in a statement set", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + sinkKN + "CREATE TABLE o2 (k INT, v INT) WITH ('connector' = 'blackhole');\n" +
				"EXECUTE STATEMENT SET BEGIN INSERT INTO o2 SELECT k, v FROM src; INSERT INTO o SELECT k, COUNT(*) FROM src WHERE v > 0 GROUP BY k; END;",
			[]string{"Source: new (starts empty)", "Sink: new (starts empty)", "Source: kept", "GroupAggregate: kept", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 2 start empty"},
		{"aggregate added", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT, m INT) WITH ('connector' = 'blackhole');\n" +
				"INSERT INTO o SELECT k, COUNT(*), MAX(v) FROM src WHERE v > 0 GROUP BY k;",
			[]string{"Source: kept", "GroupAggregate: kept (migrated: MAX(v) added, starting from its initial value)", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 0 start empty"},
		{"argument widened INT to BIGINT", groupSum("INT", "k", "INT"), groupSum("BIGINT", "k", "INT"),
			[]string{"Source: kept", "GroupAggregate: kept (migrated: the argument of SUM(v) widened from INT to BIGINT)", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 0 start empty"},
		{"argument changed INT to DOUBLE", groupSum("INT", "k", "INT"), groupSum("DOUBLE", "k", "INT"),
			[]string{"Source: kept", "GroupAggregate: incompatible (the argument of SUM(v) has type INT in the snapshot and DOUBLE in the job, which is not a widening of it)", "Sink: kept"}, true,
			"Result: incompatible: 1 operator(s) cannot restore their state; the job is refused"},
		{"key widened INT to BIGINT", groupSum("INT", "k", "INT"), groupSum("INT", "CAST(k AS BIGINT) AS k", "BIGINT"),
			[]string{"Source: kept", "GroupAggregate: kept (migrated: key k widened from INT to BIGINT)", "Sink: kept"}, false,
			"Result: compatible: 3 operator(s) keep their state, 0 start empty"},
		{"key changed to another column", fmt.Sprintf(groupCount, "INT"),
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k STRING, n BIGINT) WITH ('connector' = 'blackhole');\n" +
				"INSERT INTO o SELECT s, COUNT(*) FROM src WHERE v > 0 GROUP BY s;",
			[]string{"Source: kept", "GroupAggregate: new (starts empty)", "Sink: kept", "GroupAggregate: dropped (state not restored)"}, true,
			"Result: restorable only with 'execution.state-recovery.ignore-unclaimed-state' = 'true' (alias 'execution.savepoint.ignore-unclaimed-state'): the state of 1 operator(s) would not be restored"},
		// A join stores only the columns read of its inputs
		// (plan/joinprune.go). A new column computed from what it already
		// stores keeps its state; reading another input column changes
		// what it stores (its left rows: k, then k and v), and the
		// snapshot's rows lack it. The join's identity is the same in
		// both, so it is that verdict, not a dropped and a new join.
		{"projection over a join extended", joinKS,
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, s STRING, k2 INT) WITH ('connector' = 'blackhole');\n" +
				"INSERT INTO o SELECT a.k, b.s, a.k * 2 FROM src a JOIN src b ON a.k = b.k;",
			[]string{"Source: kept", "Source: kept", "Join: kept", "Sink: kept"}, false,
			"Result: compatible: 4 operator(s) keep their state, 0 start empty"},
		{"join input column read", joinKS,
			fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, s STRING, v INT) WITH ('connector' = 'blackhole');\n" +
				"INSERT INTO o SELECT a.k, b.s, a.v FROM src a JOIN src b ON a.k = b.k;",
			[]string{"Source: kept", "Source: kept", "Join: incompatible (the snapshot stores 3 stored row columns (k INT, k INT, s STRING), the job 4 (k INT, v INT, k INT, s STRING))", "Sink: kept"}, true,
			"Result: incompatible: 1 operator(s) cannot restore their state; the job is refused"},
		{"state TTL enabled", fmt.Sprintf(groupCount, "INT"),
			"SET 'table.exec.state.ttl' = '1 h';\n" + fmt.Sprintf(groupCount, "INT"),
			[]string{"Source: kept", `GroupAggregate: incompatible (state "acc" was written with state TTL 0s and is now read with 1h0m0s; enabling or disabling 'table.exec.state.ttl' on existing state is not supported)`, "Sink: kept"}, true,
			"Result: incompatible: 1 operator(s) cannot restore their state; the job is refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := takeSavepoint(t, c.old)
			s := newTestSession(t, nil)
			text, refused := explainAgainst(t, s, sp, c.new)
			if got := verdictsOf(text); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("verdicts\n%s\nwant\n%s\nin\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), text)
			}
			if refused != c.refused || !strings.Contains(text, c.result) {
				t.Errorf("refused %v, want %v; result line wanted: %s\n%s", refused, c.refused, c.result, text)
			}
		})
	}
}

// TestRestoreRefusesUnclaimedAndIncompatibleState: a restore with dropped
// state is refused with Flink's message unless
// execution.savepoint.ignore-unclaimed-state is true; an incompatible one
// is refused whatever it says, with the explanation EXPLAIN MIGRATION
// gives.
func TestRestoreRefusesUnclaimedAndIncompatibleState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT, m INT) WITH ('connector' = 'blackhole');\n" +
		"INSERT INTO o SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k;"
	sp := takeSavepoint(t, old)
	dropped := fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT, m INT) WITH ('connector' = 'blackhole');\n" +
		"INSERT INTO o SELECT k, CAST(v AS BIGINT), v FROM src;"
	incompatible := fmt.Sprintf(migSrc, "DOUBLE") + "CREATE TABLE o (k INT, n BIGINT, m DOUBLE) WITH ('connector' = 'blackhole');\n" +
		"INSERT INTO o SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k;"
	for _, c := range []struct {
		name, script string
		ignore       bool
		wantErr      string
	}{
		{"dropped", dropped, false, "Failed to rollback to checkpoint/savepoint " + sp + ". Cannot map checkpoint/savepoint state for operator GroupAggregate-"},
		{"dropped, ignored", dropped, true, ""},
		{"incompatible, ignored", incompatible, true, "Cannot restore the state of operator GroupAggregate-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := map[string]string{"execution.state-recovery.path": sp, "state.checkpoints.dir": "file://" + t.TempDir()}
			if c.ignore {
				conf["execution.savepoint.ignore-unclaimed-state"] = "true"
			}
			s := newTestSession(t, conf)
			stmts, err := parser.ParseScript(c.script)
			if err != nil {
				t.Fatal(err)
			}
			var job *Job
			for _, st := range stmts {
				var r *Result
				if r, err = s.ExecuteStatement(ctx, st); err != nil {
					break
				}
				if r.Job != nil {
					job = r.Job
				}
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if job == nil {
					t.Fatal("no job started")
				}
				job.Stop()
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, c.wantErr)
			}
			if c.name == "dropped" && !strings.Contains(err.Error(), "set 'execution.state-recovery.ignore-unclaimed-state' = 'true'") {
				t.Errorf("the refusal does not name the option: %v", err)
			}
		})
	}
}

// TestRestoreSnapshotWithPositionIDs: a snapshot of a build whose operator
// ids were plan positions ("v1-0", no recorded identities; made here by
// rewriting a savepoint's _metadata as such a build wrote it) restores
// into the same query, its operators mapped by position, and is refused
// for an edited one, which it cannot be mapped onto.
func TestRestoreSnapshotWithPositionIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT) WITH ('connector' = 'blackhole');\n" +
		"INSERT INTO o SELECT k, COUNT(*) FROM src GROUP BY k;"
	sp := takeSavepoint(t, script)
	path := filepath.Join(strings.TrimPrefix(sp, "file://"), "_metadata")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	if err := json.Unmarshal(data, &md); err != nil {
		t.Fatal(err)
	}
	// The job graph: v0 source (Calc), v1 GroupAggregate -> Sink.
	rename := map[string]string{}
	for _, o := range md["operators"].([]any) {
		id := o.(map[string]any)["id"].(string)
		switch o.(map[string]any)["kind"] {
		case "Source":
			rename[id] = "v0-source"
		case "GroupAggregate":
			rename[id] = "v1-0"
		case "Sink":
			rename[id] = "v1-1"
		}
	}
	delete(md, "operators")
	for _, in := range md["instances"].([]any) {
		m := in.(map[string]any)
		old := m["operator"].(string)
		if rename[old] == "" {
			t.Fatalf("operator %s not renamed", old)
		}
		m["operator"] = rename[old]
	}
	if data, err = json.Marshal(md); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	s := newTestSession(t, nil)
	text, refused := explainAgainst(t, s, sp, script)
	if refused || !strings.Contains(text, "predates operator identities") ||
		strings.Join(verdictsOf(text), "\n") != "Source: kept\nGroupAggregate: kept\nSink: kept" {
		t.Errorf("same query: refused %v\n%s", refused, text)
	}
	edited := strings.Replace(script, "FROM src GROUP BY k", "FROM src WHERE v > 1 GROUP BY k", 1)
	_, _, err = newTestSession(t, nil).ExplainMigrationScript(ctx, sp, edited)
	if err == nil || !strings.Contains(err.Error(), "identified operators by their position in the plan, and by a different plan") {
		t.Errorf("edited query: %v", err)
	}

	// The same query restores it.
	s = newTestSession(t, map[string]string{"execution.state-recovery.path": sp, "state.checkpoints.dir": "file://" + t.TempDir()})
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		r, err := s.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Job != nil {
			r.Job.Stop()
		}
	}
}

// TestSavepointRecordsJobScript: a savepoint holds the statements that
// shaped the job (DDL, SET; not SHOW, EXPLAIN or a failed statement), then
// its INSERT, with secret option values masked.
func TestSavepointRecordsJobScript(t *testing.T) {
	script := "SET 's3.secret-key' = 'hunter2';\nSET 'parallelism.default' = '1';\nSHOW TABLES;\n" +
		fmt.Sprintf(migSrc, "INT") + "CREATE TABLE o (k INT, n BIGINT) WITH ('connector' = 'blackhole');\n" +
		"EXPLAIN INSERT INTO o SELECT k, COUNT(*) FROM src GROUP BY k;\n" +
		"INSERT INTO o SELECT k, COUNT(*) FROM src GROUP BY k;"
	sp := takeSavepoint(t, script)
	md, err := checkpoint.Load(context.Background(), sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"SET 's3.secret-key' = '******'",
		"SET 'parallelism.default' = '1'",
		strings.TrimSuffix(strings.TrimSpace(fmt.Sprintf(migSrc, "INT")), ";"),
		"CREATE TABLE o (k INT, n BIGINT) WITH ('connector' = 'blackhole')",
		"INSERT INTO o SELECT k, COUNT(*) FROM src GROUP BY k",
	}
	if strings.Join(md.Script, "\n") != strings.Join(want, "\n") {
		t.Errorf("script\n%s\nwant\n%s", strings.Join(md.Script, "\n"), strings.Join(want, "\n"))
	}
	for in, out := range map[string]string{
		"CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'properties.sasl.jaas.config' = 'x y ''z''', 'key.format' = 'json')": "CREATE TABLE t (a INT) WITH ('connector' = 'kafka', 'properties.sasl.jaas.config' = '******', 'key.format' = 'json')",
		"SET 'password'='p'":                 "SET 'password'='******'",
		"SET 's3.access-key' = 'A'":          "SET 's3.access-key' = '******'",
		"SET 'table.exec.state.ttl' = '1 h'": "SET 'table.exec.state.ttl' = '1 h'",
	} {
		if got := maskSecrets(in); got != out {
			t.Errorf("maskSecrets(%s) = %s, want %s", in, got, out)
		}
	}
}
