//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shellHelperEnv makes the test binary run flinksql's main instead of the
// tests: TestPromptStaysClean starts it on a pseudo-terminal, as a user's
// terminal (tmux, xterm) runs the shell.
const shellHelperEnv = "FLINKSQL_TEST_SHELL_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(shellHelperEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// openPTY returns the two ends of a new pseudo-terminal of 40 rows of 160
// columns.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal side: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}); err != nil {
		t.Fatalf("sizing the terminal: %v", err)
	}
	return m, s
}

// terminalOutput collects what the shell writes to its terminal and lets
// the test wait until it shows something.
type terminalOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced at every write
}

func (o *terminalOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *terminalOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// await waits until the output from offset on matches re and returns the
// submatches and the offset after the match.
func (o *terminalOutput) await(t *testing.T, ctx context.Context, from int, re *regexp.Regexp) ([]string, int) {
	t.Helper()
	for {
		o.mu.Lock()
		text := o.buf.String()[from:]
		changed := o.changed
		o.mu.Unlock()
		if loc := re.FindStringSubmatchIndex(text); loc != nil {
			var subs []string
			for i := 0; i < len(loc); i += 2 {
				subs = append(subs, text[loc[i]:loc[i+1]])
			}
			return subs, from + loc[1]
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the terminal never showed %s; it shows:\n%q", re, text)
		}
	}
}

// ansiSequence matches the terminal control sequences readline writes
// (cursor moves, erase to the end of the line) and carriage returns.
var ansiSequence = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]|\r")

// TestPromptStaysClean runs the interactive shell on a pseudo-terminal,
// starts a job with checkpoints every 100 ms, waits until ten have
// completed (the REST API counts them), then types SHOW JOBS: between the
// prompt that followed the job's submission and the echo of that command
// the terminal received nothing but the prompt (no checkpoint or log line
// interrupted it), and SHOW JOBS lists the job RUNNING. SIGTERM then ends
// the shell, stopping the job cleanly.
func TestPromptStaysClean(t *testing.T) {
	dir := t.TempDir()
	master, slave := openPTY(t)
	defer master.Close()
	args := []string{"-D", "rest.port=0", "-D", "log.file=" + filepath.Join(dir, "flinksql.log"), "--history", filepath.Join(dir, "hist")}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), shellHelperEnv+"="+strings.Join(args, "\x1f"), "HOME="+dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the shell holds its own copies; EOF on master once it exits
	out := &terminalOutput{changed: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		var b [4096]byte
		for {
			n, err := master.Read(b[:])
			out.Write(b[:n])
			if err != nil {
				return // EIO once the shell has exited
			}
		}
	}()
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	m, at := out.await(t, ctx, 0, regexp.MustCompile(`REST API and dashboard: (http://127\.0\.0\.1:\d+)/`))
	rest := m[1]
	_, at = out.await(t, ctx, at, regexp.MustCompile(`Flink SQL> `))
	type_ := func(line string) {
		if _, err := master.WriteString(line + "\r"); err != nil {
			t.Fatal(err)
		}
	}
	type_(fmt.Sprintf("SET 'execution.checkpointing.interval' = '100 ms'; SET 'state.checkpoints.dir' = '%s';", filepath.Join(dir, "ckpt")))
	_, at = out.await(t, ctx, at, regexp.MustCompile(`(?s)succeeded.*succeeded.*Flink SQL> `))
	type_("CREATE TABLE gen (seq BIGINT, ts AS TO_TIMESTAMP_LTZ(seq * 10, 3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', " +
		"'fields.seq.kind' = 'sequence', 'fields.seq.start' = '1', 'fields.seq.end' = '100000000', 'rows-per-second' = '1000');")
	_, at = out.await(t, ctx, at, regexp.MustCompile(`Flink SQL> `))
	type_("CREATE TABLE sink (ws TIMESTAMP(3), n BIGINT) WITH ('connector' = 'blackhole');")
	_, at = out.await(t, ctx, at, regexp.MustCompile(`Flink SQL> `))
	type_("INSERT INTO sink SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE gen, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end;")
	m, at = out.await(t, ctx, at, regexp.MustCompile(`Job ID: ([0-9a-f]{32})`))
	id := m[1]
	_, clean := out.await(t, ctx, at, regexp.MustCompile(`Flink SQL> `))

	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for done := 0; done < 10; <-poll.C {
		resp, err := http.Get(rest + "/jobs/" + id + "/checkpoints")
		if err != nil {
			t.Fatal(err)
		}
		var cps struct {
			Counts struct{ Completed int } `json:"counts"`
		}
		err = json.NewDecoder(resp.Body).Decode(&cps)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		done = cps.Counts.Completed
		if ctx.Err() != nil {
			t.Fatalf("only %d checkpoints completed", done)
		}
	}
	type_("SHOW JOBS;")
	_, echoed := out.await(t, ctx, clean, regexp.MustCompile(`SHOW JOBS;`))
	_, _ = out.await(t, ctx, echoed, regexp.MustCompile(`(?s)`+id+`.*RUNNING.*Flink SQL> `))
	text := out.String()
	// readline redraws the prompt line at every key: what came between is
	// the prompt followed by ever longer prefixes of the command, and
	// nothing else.
	between := ansiSequence.ReplaceAllString(text[clean:echoed], "")
	for _, piece := range strings.Split(between, "Flink SQL> ") {
		if p := strings.TrimSpace(strings.ReplaceAll(piece, "\b", "")); !strings.HasPrefix("SHOW JOBS;", p) {
			t.Errorf("the terminal showed %q beside the prompt while 10 checkpoints completed:\n%q", p, text[clean:echoed])
		}
	}
	if completedLine.MatchString(text) {
		t.Errorf("checkpoint lines reached the terminal:\n%s", text)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	exited = true
	<-copied
	if err != nil {
		t.Fatalf("the shell ended with %v:\n%s", err, out.String())
	}
	if final := out.String()[echoed:]; !strings.Contains(final, "has been stopped with a final checkpoint") || strings.Contains(final, "Stop them and quit?") {
		t.Errorf("after SIGTERM the shell did not stop the job cleanly without asking:\n%s", final)
	}
}
