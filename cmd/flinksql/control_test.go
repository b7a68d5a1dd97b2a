package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/checkpoint"
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
	// 'flinksql savepoints' shows the operators' identities and states.
	out.Reset()
	if rc := run([]string{"savepoints", m[1]}, nil, &out, &errOut); rc != 0 {
		t.Fatalf("flinksql savepoints: exit %d: %s", rc, errOut.String())
	}
	for _, want := range []string{"Operator identities:\n", ": GroupAggregate(", "    state ", "SQL:\n  INSERT INTO b SELECT k, COUNT(*) FROM g GROUP BY k\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("flinksql savepoints lacks %q:\n%s", want, out.String())
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
