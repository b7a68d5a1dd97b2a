package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkpointedScript is a bounded job with 50 ms checkpoints: it runs long
// enough (2000 rows at 2000 rows/s) to complete several.
func checkpointedScript(dir string) string {
	return fmt.Sprintf(`SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = '%s';
CREATE TABLE gen (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '2000', 'rows-per-second' = '2000', 'fields.k.min' = '1', 'fields.k.max' = '9');
CREATE TABLE out_t (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out_t SELECT k, COUNT(*) FROM gen GROUP BY k;
`, filepath.Join(dir, "ckpt"))
}

var completedLine = regexp.MustCompile(`(?m)Completed checkpoint \d+ for job `)

// TestShellLogsToFile: in the shell (statements from stdin, no -f or -e)
// the job's checkpoint lines go to the log file, by default under
// $XDG_STATE_HOME, not to the terminal; the REST API starts with the
// shell.
func TestShellLogsToFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	var out, errOut lockedBuffer
	// The INSERT returns at once in the shell; the bounded query after it
	// (400 rows at 1000 rows/s) keeps the shell busy while the job
	// checkpoints every 50 ms.
	script := checkpointedScript(dir) + `CREATE TABLE slow (x INT) WITH ('connector' = 'datagen', 'number-of-rows' = '400', 'rows-per-second' = '1000');
SELECT COUNT(*) FROM slow;
QUIT;
`
	if code := run([]string{"-D", "rest.port=0", "--history", filepath.Join(dir, "hist")}, strings.NewReader(script), &out, &errOut); code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	logPath := filepath.Join(dir, "state", "flinksql", "flinksql.log")
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !completedLine.Match(log) || !strings.Contains(string(log), "level=INFO") {
		t.Errorf("the log file has no completed checkpoint (slog text lines):\n%s", log)
	}
	if completedLine.MatchString(errOut.String()) || completedLine.MatchString(out.String()) {
		t.Errorf("checkpoint lines reached the shell:\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "Log: "+logPath) || !regexp.MustCompile(`REST API and dashboard: http://127\.0\.0\.1:\d+/`).MatchString(errOut.String()) {
		t.Errorf("the shell does not say where its log and REST API are:\n%s", errOut.String())
	}
}

// TestScriptLogsToStderr: with -f the log goes to stderr as plain lines
// (scripts grep them), and also to log.file when it is set; no REST API
// starts unless asked for.
func TestScriptLogsToStderr(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(path, []byte(checkpointedScript(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "logs", "job.log")
	var out, errOut lockedBuffer
	if code := run([]string{"-D", "log.file=" + logFile, "-f", path}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit code %d\nstderr:\n%s", code, errOut.String())
	}
	if !regexp.MustCompile(`(?m)^Completed checkpoint \d+ for job `).MatchString(errOut.String()) {
		t.Errorf("no checkpoint line on stderr:\n%s", errOut.String())
	}
	log, err := os.ReadFile(logFile)
	if err != nil || !completedLine.Match(log) {
		t.Errorf("log.file: %v\n%s", err, log)
	}
	if strings.Contains(errOut.String(), "REST API") {
		t.Errorf("-f started the REST API without rest.port:\n%s", errOut.String())
	}
	var errOut2 lockedBuffer
	if code := run([]string{"-D", "rest.port=0", "-e", "SELECT 1;"}, strings.NewReader(""), &out, &errOut2); code != 0 ||
		!strings.Contains(errOut2.String(), "REST API and dashboard: http://127.0.0.1:") {
		t.Errorf("-e with rest.port: exit %d\n%s", code, errOut2.String())
	}
}

// TestInitFileVersionAndShowJobs: -i runs Flink's initialization file
// before the -f/-e statements and refuses a query or INSERT in it;
// --version prints the version; SHOW JOBS works in a script.
func TestInitFileVersionAndShowJobs(t *testing.T) {
	dir := t.TempDir()
	init := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(init, []byte("SET 'parallelism.default' = '3';\nCREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '7');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut lockedBuffer
	code := run([]string{"-i", init, "-e", "CREATE TABLE o (k INT) WITH ('connector' = 'blackhole'); INSERT INTO o SELECT k FROM g; SET; SHOW JOBS;"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if !regexp.MustCompile(`\|\s+parallelism.default\s+\|\s+3\s+\|`).MatchString(out.String()) {
		t.Errorf("the init file's SET did not reach the session:\n%s", out.String())
	}
	if !regexp.MustCompile(`\|\s+[0-9a-f]{32}\s+\|\s+insert-into_default_catalog.default_database.o\s+\|\s+FINISHED\s+\|`).MatchString(out.String()) {
		t.Errorf("SHOW JOBS in -e does not list the finished job:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "Successfully initialized from sql script: file:"+init) {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("CREATE TABLE o (k INT) WITH ('connector' = 'blackhole');\nINSERT INTO o VALUES (1);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out2, errOut2 lockedBuffer
	if code := run([]string{"-i", bad, "-e", "SHOW TABLES;"}, strings.NewReader(""), &out2, &errOut2); code != 1 ||
		!strings.Contains(errOut2.String(), "unsupported statement 'INSERT INTO o VALUES (1)'") || strings.Contains(out2.String(), "table name") {
		t.Errorf("an INSERT in the init file: exit %d\nstdout:\n%s\nstderr:\n%s", code, out2.String(), errOut2.String())
	}
	var out3, errOut3 lockedBuffer
	if code := run([]string{"--version"}, nil, &out3, &errOut3); code != 0 || !strings.HasPrefix(out3.String(), "flinksql ") {
		t.Errorf("--version: exit %d, %q", code, out3.String())
	}
}
