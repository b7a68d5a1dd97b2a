package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/broker"
	"github.com/twmb/franz-go/pkg/kgo"
)

const brokerTestTimeout = 20 * time.Second

// buildFlinksql builds this command into a temporary directory.
func buildFlinksql(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flinksql")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// brokerProcess is a `flinksql broker` child process.
type brokerProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr strings.Builder
	done   chan error // the result of Wait
}

// startBrokerProcess starts `flinksql broker args...` and waits for its
// "listening" line, which it prints once clients can connect.
func startBrokerProcess(t *testing.T, bin string, args ...string) *brokerProcess {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &brokerProcess{cmd: exec.Command(bin, append([]string{"broker"}, args...)...), done: make(chan error, 1)}
	p.cmd.Stdout = w
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the child holds the write end; EOF comes when it exits
	lines := make(chan string, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // only the first line matters; keep draining
			}
		}
	}()
	go func() {
		<-readerDone // Wait must not run before reads finish
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
		<-p.done
	})
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "Kafka broker listening on ")
		if !ok {
			t.Fatalf("first line of flinksql broker = %q, want \"Kafka broker listening on host:port\"", line)
		}
		p.addr = addr
	case err := <-p.done:
		p.done <- err
		t.Fatalf("flinksql broker exited before listening: %v\nstderr:\n%s", err, p.stderr.String())
	case <-time.After(brokerTestTimeout):
		t.Fatalf("flinksql broker printed no listening line within %v", brokerTestTimeout)
	}
	return p
}

// stop sends sig and returns the exit code, failing if the process does not
// exit within a bounded time.
func (p *brokerProcess) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		p.done <- nil // for the cleanup
	case <-time.After(brokerTestTimeout):
		t.Fatalf("flinksql broker did not exit within %v of %v", brokerTestTimeout, sig)
	}
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -int(ws.Signal())
	}
	return ws.ExitStatus()
}

func produceValues(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brokerTestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func consumeValues(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brokerTestTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

// TestBrokerProcess runs `flinksql broker` as a process: it serves clients,
// keeps its data across kill -9 with --data-dir, and stops cleanly (exit 0)
// on SIGTERM and SIGINT.
func TestBrokerProcess(t *testing.T) {
	bin := buildFlinksql(t)
	dataDir := t.TempDir()

	p := startBrokerProcess(t, bin, "--listen", "127.0.0.1:0", "--partitions", "2", "--data-dir", dataDir)
	produceValues(t, p.addr, "orders", "o1", "o2", "o3")
	if got, want := consumeValues(t, p.addr, "orders", 3), []string{"o1", "o2", "o3"}; !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
	if code := p.stop(t, syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("after SIGKILL: exit %d", code)
	}

	// Acknowledged records survive kill -9 (the OS still has the writes).
	p = startBrokerProcess(t, bin, "--listen", p.addr, "--data-dir", dataDir)
	produceValues(t, p.addr, "orders", "o4")
	if got, want := consumeValues(t, p.addr, "orders", 4), []string{"o1", "o2", "o3", "o4"}; !slices.Equal(got, want) {
		t.Fatalf("after kill -9 and restart consumed %v, want %v", got, want)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}

	p = startBrokerProcess(t, bin, "--listen", p.addr, "--data-dir", dataDir)
	if got, want := consumeValues(t, p.addr, "orders", 4), []string{"o1", "o2", "o3", "o4"}; !slices.Equal(got, want) {
		t.Fatalf("after a clean restart consumed %v, want %v", got, want)
	}
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Fatalf("SIGINT: exit %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
}

func TestBrokerFlags(t *testing.T) {
	busy, err := broker.Start(broker.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	for _, tc := range []struct {
		args       []string
		code       int
		stderrHas  string
		stdoutHave string
	}{
		{[]string{"--partitions", "0"}, 2, "--partitions must be at least 1, got 0", ""},
		{[]string{"--partitions", "x"}, 2, `invalid value "x" for flag -partitions`, ""},
		{[]string{"--nope"}, 2, "flag provided but not defined: -nope", ""},
		{[]string{"extra"}, 2, `unexpected argument "extra"`, ""},
		{[]string{"--listen", "9092"}, 1, `listen address "9092": want host:port`, ""},
		{[]string{"--listen", busy.Addr()}, 1, "flinksql broker: cannot listen on " + busy.Addr() + ": the address is already in use", ""},
		{[]string{"-h"}, 0, "--data-dir DIR", ""},
		// A context already done: start, print the line, stop cleanly.
		{[]string{"--listen", "127.0.0.1:0"}, 0, "", "Kafka broker listening on 127.0.0.1:"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errOut lockedBuffer
		code := serveBroker(ctx, tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.stderrHas) || !strings.Contains(out.String(), tc.stdoutHave) {
			t.Errorf("flinksql broker %v: exit %d, want %d\nstdout: %s\nstderr: %s\nwant stderr to contain %q, stdout %q",
				tc.args, code, tc.code, out.String(), errOut.String(), tc.stderrHas, tc.stdoutHave)
		}
	}
}

// TestEmbeddedBrokerFlag: --embedded-broker starts a broker for the session,
// prints where it listens and stops it at exit, freeing the address.
func TestEmbeddedBrokerFlag(t *testing.T) {
	// Find a free port, then give it back for the session's broker.
	probe, err := broker.Start(broker.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr()
	probe.Close()

	var out, errOut lockedBuffer
	if code := run([]string{"--embedded-broker=" + addr, "-e", "SELECT 1;"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if want := "Kafka broker listening on " + addr + "\n"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", errOut.String(), want)
	}
	// Closed at exit: the address is free again.
	again, err := broker.Start(broker.Config{Listen: addr})
	if err != nil {
		t.Fatalf("the session's broker still holds %s after exit: %v", addr, err)
	}
	again.Close()

	for _, tc := range []struct {
		set     []string
		enabled bool
		addr    string
	}{
		{nil, false, ""},
		{[]string{"true"}, true, broker.DefaultListen},
		{[]string{"127.0.0.1:0"}, true, "127.0.0.1:0"},
		{[]string{"true", "false"}, false, ""},
	} {
		var f embeddedBrokerFlag
		for _, v := range tc.set {
			if err := f.Set(v); err != nil {
				t.Fatal(err)
			}
		}
		if f.enabled != tc.enabled || f.addr != tc.addr {
			t.Errorf("after Set %v: %+v, want enabled=%v addr=%q", tc.set, f, tc.enabled, tc.addr)
		}
	}
}
