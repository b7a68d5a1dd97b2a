package shell

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
)

// funcReader gives the lines fns return, one per readLine.
type funcReader struct{ fns []func() string }

func (f *funcReader) readLine(string) (string, error) {
	if len(f.fns) == 0 {
		return "", io.EOF
	}
	fn := f.fns[0]
	f.fns = f.fns[1:]
	return fn(), nil
}

func (f *funcReader) saveHistory(string) {}

// TestREPLStopJobWithSavepoint: in the shell, STOP JOB '<id>' WITH
// SAVEPOINT stops a running INSERT and prints the savepoint's path, as
// Flink's SQL client does, and the savepoint is there.
func TestREPLStopJobWithSavepoint(t *testing.T) {
	spDir := t.TempDir()
	sess, err := session.New(session.Options{Config: map[string]string{
		"state.savepoints.dir":  spDir,
		"state.checkpoints.dir": t.TempDir(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out, errOut syncBuffer
	jobID := regexp.MustCompile(`Job ID: ([0-9a-f]+)`)
	lr := &funcReader{fns: []func() string{
		func() string {
			return "CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '100', 'fields.k.min' = '1', 'fields.k.max' = '5');"
		},
		func() string { return "CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');" },
		func() string { return "INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;" },
		func() string {
			m := jobID.FindStringSubmatch(out.String())
			if m == nil {
				t.Errorf("no job id in the output:\n%s", out.String())
				return "QUIT;"
			}
			return "STOP JOB '" + m[1] + "' WITH SAVEPOINT;"
		},
	}}
	r := &runner{be: executorBackend{sess}, out: &out, errOut: &errOut}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	got := out.String()
	path := regexp.MustCompile(`\| (\S+/savepoint-[0-9a-f]{6}-[0-9a-f]{12}) \|`).FindStringSubmatch(got)
	if path == nil || !strings.Contains(got, "savepoint path |") {
		t.Fatalf("no savepoint path table in the output:\n%s\n%s", got, errOut.String())
	}
	if !strings.HasPrefix(path[1], spDir+"/") {
		t.Errorf("savepoint %s is not in %s", path[1], spDir)
	}
	if _, err := os.Stat(filepath.Join(path[1], "_metadata")); err != nil {
		t.Error(err)
	}
}
