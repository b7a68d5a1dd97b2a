package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/jobs"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// TestControlSocket: another process's 'flinksql jobs', 'flinksql
// savepoint' and 'flinksql stop' reach a job through the control socket:
// the job is listed, a savepoint of it is taken while it runs (it goes on
// running), and it is stopped with a savepoint into a given directory.
func TestControlSocket(t *testing.T) {
	ctl := filepath.Join(t.TempDir(), "ctl")
	t.Setenv(ControlDirEnv, ctl)
	spDir := t.TempDir()
	sess, err := session.New(session.Options{Config: map[string]string{
		"state.savepoints.dir":             spDir,
		"state.checkpoints.dir":            t.TempDir(),
		"execution.checkpointing.interval": "1 h",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	stop := startControl(sess.Jobs(), os.Stderr)
	defer stop()
	if fi, err := os.Stat(ctl); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("control dir: %v %v", fi, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stmts, err := parser.ParseScript(`
CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '200', 'fields.k.min' = '1', 'fields.k.max' = '9');
CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;`)
	if err != nil {
		t.Fatal(err)
	}
	var job *session.Job
	for _, st := range stmts {
		r, err := sess.ExecuteStatement(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if r.Job != nil {
			job = r.Job
		}
	}
	var out, errOut bytes.Buffer
	if rc := run([]string{"jobs"}, nil, &out, &errOut); rc != 0 || !strings.Contains(out.String(), job.ID+"  ") || !strings.Contains(out.String(), "RUNNING") {
		t.Fatalf("flinksql jobs: exit %d\n%s%s", rc, out.String(), errOut.String())
	}
	pathRE := regexp.MustCompile(`^Savepoint completed\. Path: (\S+)\n$`)
	out.Reset()
	if rc := run([]string{"savepoint", job.ID}, nil, &out, &errOut); rc != 0 {
		t.Fatalf("flinksql savepoint: exit %d: %s", rc, errOut.String())
	}
	m := pathRE.FindStringSubmatch(out.String())
	if m == nil || !strings.HasPrefix(m[1], spDir+"/savepoint-") {
		t.Fatalf("flinksql savepoint printed %q", out.String())
	}
	md, err := checkpoint.Load(ctx, m[1], nil)
	if err != nil || md.Type != checkpoint.TypeSavepoint || len(md.SQL) != 1 || !strings.HasPrefix(md.SQL[0], "INSERT INTO b") {
		t.Fatalf("savepoint of the running job: %+v, %v", md, err)
	}
	select {
	case <-job.Done():
		t.Fatal("the job ended after a savepoint without stop")
	default:
	}
	// 'flinksql savepoints' shows the operators' identities and state
	// schemas, and the whole job script.
	out.Reset()
	if rc := run([]string{"savepoints", m[1]}, nil, &out, &errOut); rc != 0 {
		t.Fatalf("flinksql savepoints: exit %d: %s", rc, errOut.String())
	}
	for _, want := range []string{"Operator identities:\n", ": GroupAggregate(groupBy=[k], select=[k, COUNT(*) AS EXPR$1])\n",
		"    keys: k INT\n", "    accumulator COUNT(*): BIGINT NOT NULL, slots 1-1\n", "    state acc: value, codec flinksql.values/1\n",
		"Job script:\n  CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '200', 'fields.k.min' = '1', 'fields.k.max' = '9');\n" +
			"  CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'blackhole');\n  INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k;\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("flinksql savepoints lacks %q:\n%s", want, out.String())
		}
	}
	// --against judges an edited script: a filter added keeps every
	// operator's state (exit 0), another key drops the aggregation's
	// (exit 1: the restore would be refused).
	ddl := "CREATE TABLE g (k INT, s STRING) WITH ('connector' = 'datagen');\n" +
		"CREATE TABLE b (k INT, n BIGINT) WITH ('connector' = 'print');\n"
	for _, c := range []struct {
		insert string
		rc     int
		want   []string
	}{
		{"INSERT INTO b SELECT k, COUNT(*) FROM g WHERE k > 2 GROUP BY k;", 0,
			[]string{"  Source  ", "GroupAggregate  kept\n", "  Sink  ", "Result: compatible: 3 operator(s) keep their state, 0 start empty\n"}},
		{"INSERT INTO b SELECT CHAR_LENGTH(s), COUNT(*) FROM g GROUP BY CHAR_LENGTH(s);", 1,
			[]string{"GroupAggregate  new (starts empty)\n", "GroupAggregate  dropped (state not restored)\n", "Result: restorable only with 'execution.state-recovery.ignore-unclaimed-state' = 'true'"}},
	} {
		script := filepath.Join(t.TempDir(), "job.sql")
		if err := os.WriteFile(script, []byte(ddl+c.insert), 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		errOut.Reset()
		if rc := run([]string{"savepoints", m[1], "--against", script}, nil, &out, &errOut); rc != c.rc {
			t.Errorf("savepoints --against (%s): exit %d, want %d: %s%s", c.insert, rc, c.rc, out.String(), errOut.String())
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("savepoints --against (%s) lacks %q:\n%s", c.insert, want, out.String())
			}
		}
	}
	other := t.TempDir()
	out.Reset()
	if rc := run([]string{"stop", "--savepoint", other, "--drain", job.ID}, nil, &out, &errOut); rc != 0 {
		t.Fatalf("flinksql stop: exit %d: %s", rc, errOut.String())
	}
	if m = pathRE.FindStringSubmatch(out.String()); m == nil || !strings.HasPrefix(m[1], other+"/savepoint-") {
		t.Fatalf("flinksql stop printed %q", out.String())
	}
	<-job.Done()
	errOut.Reset()
	if rc := run([]string{"stop", job.ID + "x"}, nil, &out, &errOut); rc != 1 || !strings.Contains(errOut.String(), "runs job "+job.ID+"x") {
		t.Errorf("stop of an unknown job: exit %d: %s", rc, errOut.String())
	}
}

// TestControlDirMustBePrivate: a control directory others can enter (which
// another user may have created in a shared temporary directory) gets no
// socket; the process says why.
func TestControlDirMustBePrivate(t *testing.T) {
	ctl := filepath.Join(t.TempDir(), "ctl")
	if err := os.Mkdir(ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ControlDirEnv, ctl)
	var errOut bytes.Buffer
	startControl(nil, &errOut)()
	if !strings.Contains(errOut.String(), "must be a directory of user") {
		t.Errorf("stderr: %q", errOut.String())
	}
	if socks, _ := filepath.Glob(filepath.Join(ctl, "*.sock")); len(socks) != 0 {
		t.Errorf("sockets %v in a shared directory", socks)
	}
}

// TestStopTimeout: 'flinksql stop --timeout' gives up waiting for a
// process that does not answer the stop (here a control socket that lists
// the job and holds every stop request until the test ends) with an error
// naming the timeout and saying that the stop goes on; a bad duration is
// refused.
func TestStopTimeout(t *testing.T) {
	ctl := filepath.Join(t.TempDir(), "ctl")
	if err := os.Mkdir(ctl, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ControlDirEnv, ctl)
	ln, err := net.Listen("unix", filepath.Join(ctl, "1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode([]jobs.ControlJob{{ID: "j1", Name: "slow", Status: "RUNNING"}})
	})
	mux.HandleFunc("POST /v1/jobs/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		close(release)
		srv.Close()
		<-done
	})
	var out, errOut bytes.Buffer
	rc := run([]string{"stop", "--timeout", "200 ms", "j1"}, nil, &out, &errOut)
	if rc != 1 || !strings.Contains(errOut.String(), "job j1 did not finish stopping with a savepoint within 200ms (--timeout)") ||
		!strings.Contains(errOut.String(), "goes on with it") {
		t.Errorf("exit %d, stderr %q", rc, errOut.String())
	}
	errOut.Reset()
	if rc := run([]string{"stop", "--timeout", "soon", "j1"}, nil, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "invalid value \"soon\" for flag -timeout") {
		t.Errorf("bad duration: exit %d, stderr %q", rc, errOut.String())
	}
}
