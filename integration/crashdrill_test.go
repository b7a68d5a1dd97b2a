package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The crash drill (issue 6): a windowed Kafka → Kafka pipeline runs as a
// separate process against a broker in its own process, is killed with
// SIGKILL at random moments and at each fault-injection point, and is
// restarted (same pipeline.name and checkpoint directory, so it resumes from
// the latest checkpoint) until a run finishes. An independent franz-go
// reader then checks the output against sums computed here from the
// generated events. With 'exactly-once' a read_committed reader must see
// exactly one record per (key, window) with the right sum; with
// 'at-least-once' a read_uncommitted reader must see every (key, window)
// with the right sum at least once, and the drill reports the duplicates.
//
// The broker is killed too (issue 9): with SIGKILL at a random moment of a
// run (the engine goes on against the restarted broker, or fails and is
// started again), and between runs, right after the engine killed itself at
// a fault point, so that the transactions the engine had prepared are open
// when the broker dies. The embedded broker (kfake) aborts every open
// transaction when it restarts after kill -9, where Kafka keeps them; the
// engine must then either restore an earlier checkpoint that loses and
// duplicates nothing (every transaction of the restored one was aborted and
// none committed) or fail with the loss named — never finish with results
// missing. The broker restarts on the same address and --data-dir.
//
// Pacing. The whole input is in the topic before the first run, and the
// engine would read tens of thousands of events in a few tens of
// milliseconds, far less than one checkpoint interval, leaving nothing to
// kill. The drill therefore writes every event as its own record batch and
// sets the source's 'properties.max.partition.fetch.bytes' to hold one batch
// but not two: a fetch returns one event per partition, so a reader subtask
// takes two events (its two partitions) per round trip to the broker and the
// job lasts seconds, during which checkpoints complete every 200 ms. (A limit on the whole fetch,
// 'properties.fetch.max.bytes', would not do: the broker fills a fetch from
// the partition it served last, so one partition would be drained before
// the next, and the watermark, the minimum over the partitions, would not
// move until the last one started.)
//
// FLINKSQL_DRILL_ROUNDS repeats the exactly-once kill plan (the script
// variant, scripts/crash-drill.sh go, runs 100+ kills that way) and
// FLINKSQL_DRILL_EVENTS sizes the input to last for them.

// drillEvents is the number of input events (FLINKSQL_DRILL_EVENTS): enough
// for the kills of one round and the replays after broker kills.
var drillEvents = 100000

const (
	drillKeys       = 8
	drillSpanMs     = 200_000 // event time covered by the input
	drillJitterMs   = 2000    // an event's timestamp is up to this much before its nominal time
	drillWindowMs   = 10_000
	drillPartitions = 4
	drillSeed       = 20240601 // FLINKSQL_DRILL_SEED overrides it, to explore other kill moments
	// drillMaxKillDelay bounds the random delay between the first completed
	// checkpoint of a run and the kill: one checkpoint interval, so that the
	// kill falls anywhere in the cycle of barriers, pre-commits, completions
	// and commits while each run adds as little progress as possible (the
	// input must outlast all the kills).
	drillMaxKillDelay = 200 * time.Millisecond
	drillRunTimeout   = 60 * time.Second
	drillFinalTimeout = 5 * time.Minute
)

// drillEpoch is where the drill's event time starts (ts 0).
var drillEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type drillEvent struct {
	key       string
	amount    int64
	ts        int64 // ms since drillEpoch
	partition int32
}

// windowKey is one result of the pipeline: a key's 10-second window.
type windowKey struct {
	start int64 // ms since drillEpoch
	key   string
}

func (w windowKey) String() string {
	return fmt.Sprintf("(%s, %s)", w.key, drillEpoch.Add(time.Duration(w.start)*time.Millisecond).Format("2006-01-02 15:04:05"))
}

// drillInput generates the events: nominal times evenly spread over
// drillSpanMs, each timestamp moved back by up to drillJitterMs (so the
// input is out of order by at most that much, less than the watermark's 3 s
// delay: no event is late), random keys and amounts, partitions round robin
// (each partition's events are in nominal order).
func drillInput(seed uint64) []drillEvent {
	rng := rand.New(rand.NewPCG(seed, 0))
	evs := make([]drillEvent, drillEvents)
	for i := range evs {
		nominal := int64(drillJitterMs) + int64(i)*drillSpanMs/int64(drillEvents)
		evs[i] = drillEvent{
			key:       fmt.Sprintf("k%d", rng.IntN(drillKeys)),
			amount:    1 + rng.Int64N(100),
			ts:        nominal - rng.Int64N(drillJitterMs+1),
			partition: int32(i % drillPartitions),
		}
	}
	return evs
}

// drillExpected is what a TUMBLE(10 s) SUM per key gives, worked out
// directly from the events.
func drillExpected(evs []drillEvent) map[windowKey]int64 {
	want := map[windowKey]int64{}
	for _, e := range evs {
		start := e.ts - e.ts%drillWindowMs // ts ≥ 0
		want[windowKey{start, e.key}] += e.amount
	}
	return want
}

// drillPad fills an event's record so that a record batch of
// drillBatchBytes holds one event and the source's fetch limit per partition
// (400 bytes) one batch (see Pacing above); the table has no such column and
// the json format ignores it.
var drillPad = strings.Repeat("x", 170)

// drillBatchBytes is the producer's batch size limit (franz-go's smallest).
const drillBatchBytes = 512

func (e drillEvent) json() []byte {
	ts := drillEpoch.Add(time.Duration(e.ts) * time.Millisecond).Format("2006-01-02 15:04:05.000")
	return fmt.Appendf(nil, `{"k":"%s","amount":%d,"ts":"%s","pad":"%s"}`, e.key, e.amount, ts, drillPad)
}

// drillBrokerProc is `flinksql broker --data-dir` in a process of its own,
// which the drill kills and starts again on the same address.
type drillBrokerProc struct {
	bin     string
	dataDir string
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  *bytes.Buffer
	kills   int
}

// drillBroker starts the broker on a free port.
func drillBroker(t *testing.T, bin, dataDir string) *drillBrokerProc {
	t.Helper()
	b := &drillBrokerProc{bin: bin, dataDir: dataDir}
	b.addr = b.start(t, "127.0.0.1:0")
	t.Cleanup(func() {
		if b.cmd == nil {
			return
		}
		_ = b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(timeout):
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	})
	return b
}

// kill kills the broker with SIGKILL and starts it again on its address
// with its data directory.
func (b *drillBrokerProc) kill(t *testing.T) {
	t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.exited
	b.cmd = nil
	b.kills++
	if addr := b.start(t, b.addr); addr != b.addr {
		t.Fatalf("the restarted broker listens on %s, want %s", addr, b.addr)
	}
}

// start runs the broker process and returns the address it listens on.
func (b *drillBrokerProc) start(t *testing.T, listen string) string {
	t.Helper()
	cmd := exec.Command(b.bin, "broker", "--listen", listen, "--data-dir", b.dataDir, "--partitions", fmt.Sprint(drillPartitions))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	b.cmd, b.exited, b.stderr = cmd, exited, stderr
	lines := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "Kafka broker listening on ")
		if !ok {
			t.Fatalf("unexpected first line from flinksql broker: %q", line)
		}
		return addr
	case <-exited:
		t.Fatalf("flinksql broker exited before listening: %s", stderr.String())
	case <-time.After(timeout):
		t.Fatalf("flinksql broker printed no listening line within %s", timeout)
	}
	return ""
}

// drillRetained is state.checkpoints.num-retained of the drill's jobs: older
// checkpoints to fall back to when the broker aborted every transaction of
// the latest one.
const drillRetained = 3

// produceDrillInput creates the topics and writes the events, one record
// batch per event (see Pacing above).
func produceDrillInput(t *testing.T, addr string, evs []drillEvent, outTopics ...string) {
	t.Helper()
	// Setup, not the thing under test: 400 000 single-record batches take
	// 8–30 s with the race detector on a busy 2-core machine, so the bound
	// is generous.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// Room for one event's record, not two.
		kgo.ProducerBatchMaxBytes(drillBatchBytes), kgo.ProducerLinger(0),
		// One batch per partition and request: many requests in flight
		// keep setup short. Without idempotence a retried request could
		// reorder or duplicate events; the broker is local and answers
		// every request, and the sums below would show it.
		kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(200), kgo.MaxBufferedRecords(100000),
		// Uncompressed: cheaper to produce, and an event's batch (about
		// 300 bytes) stays alone in a 400-byte fetch.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(ctx, drillPartitions, 1, nil, append([]string{"events"}, outTopics...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, e := range evs {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: "events", Partition: e.partition, Value: e.json(),
			Timestamp: drillEpoch.Add(time.Duration(e.ts) * time.Millisecond)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("producing the events: %v", firstErr)
	}
}

// drillSQL is the pipeline. The source reads the events up to their end
// offsets at the start; the sink writes one record per (key, window).
func drillSQL(addr, checkpoints, guarantee, outTopic string) string {
	sinkOpts := fmt.Sprintf(`'sink.delivery-guarantee' = '%s'`, guarantee)
	if guarantee == "exactly-once" {
		sinkOpts += `,
  'sink.transactional-id-prefix' = 'drill',
  'properties.transaction.timeout.ms' = '60000'`
	}
	return drillPipelineSQL(addr, checkpoints, guarantee, "", fmt.Sprintf(`
  'connector' = 'kafka',
  'topic' = '%s',
  'properties.bootstrap.servers' = '%s',
  %s,
  'format' = 'json'`, outTopic, addr, sinkOpts))
}

// drillPipelineSQL is the drills' job: the events from Kafka, summed per
// key over 10-second tumbling windows into a totals table (extra columns
// and the WITH options given), named after name.
func drillPipelineSQL(addr, checkpoints, name, totalsExtra, totalsWith string) string {
	return drillSettingsSQL(checkpoints, "crash-drill-"+name) + fmt.Sprintf(`
CREATE TABLE events (
  k STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '3' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'events',
  'properties.bootstrap.servers' = '%s',
  'scan.startup.mode' = 'earliest-offset',
  `+drillBoundedRead+`
  'properties.isolation.level' = 'read_committed',
  'properties.max.partition.fetch.bytes' = '400',
  'format' = 'json'
);

CREATE TABLE totals (
  window_start TIMESTAMP(3),
  k STRING,
  total BIGINT%s
) WITH (%s
);

INSERT INTO totals
SELECT window_start, k, SUM(amount)
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;
`, addr, totalsExtra, totalsWith)
}

// drillSettingsSQL is the SET statements of a drill's job: parallelism 2,
// a checkpoint every 200 ms into checkpoints, retained as the drill
// needs, pipeline.name name (so that each run restores the last one's
// latest checkpoint), no restarts inside a process.
func drillSettingsSQL(checkpoints, name string) string {
	return fmt.Sprintf(`
SET 'parallelism.default' = '2';
SET 'execution.checkpointing.interval' = '200 ms';
SET 'execution.checkpointing.timeout' = '10 s';
SET 'state.checkpoints.num-retained' = '%d';
SET 'state.checkpoints.dir' = '%s';
SET 'pipeline.name' = '%s';
SET 'restart-strategy.type' = 'none';
SET 'table.local-time-zone' = 'UTC';
`, drillRetained, checkpoints, name)
}

// drillRun is one planned run: killed by the test at a random moment, killed
// by itself at a fault point, or left to finish.
type drillRun struct {
	fault  string // FLINKSQL_FAULT, "" for none
	random bool   // the test kills it
	// brokerKill: the test kills the broker (SIGKILL, then starts it
	// again) at a random moment of the run, and lets the run end as it
	// will: it may finish, go on, or fail and be started again.
	brokerKill bool
	// brokerAfter: the test kills the broker after the run ended, before
	// the next one (with a fault point: the transactions the engine left
	// prepared are open when the broker dies).
	brokerAfter bool
}

// runResult is how a run ended.
type runResult struct {
	signaled     bool  // died by SIGKILL (the test's or its own)
	faulted      bool  // printed the [FAULT] line
	restoredFrom int64 // the checkpoint "Restoring job" named, 0 for none
	delay        time.Duration
	ckpts        int   // "Completed checkpoint" lines
	latest       int64 // the last completed checkpoint
	took         time.Duration
	failed       bool     // exited with an error (after a broker kill)
	finished     bool     // exited 0: the job finished
	fellBack     int      // restores that went back to an earlier checkpoint
	loss         string   // the line reporting lost output, if any
	notes        []string // the run's log lines about recovery and transactions
}

// drillStats is what a drill did.
type drillStats struct {
	randomKills, faultKills, brokerKills, runs, restores, fallbacks, failed int
	loss                                                                    string // a run failed reporting lost output
	notes                                                                   []string
}

// runDrillProcess runs the pipeline once as a process; a fault run arms
// its point for checkpoint faultAt.
func runDrillProcess(t *testing.T, bin, script, tmp string, r drillRun, faultAt int64, rng *rand.Rand, broker *drillBrokerProc) (runResult, error) {
	cmd := exec.Command(bin, "-f", script)
	env := []string{"TMPDIR=" + tmp} // local state directories of killed runs stay in the test's directory
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLINKSQL_FAULT=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	if r.fault != "" {
		env = append(env, fmt.Sprintf("FLINKSQL_FAULT=%s@%d", r.fault, faultAt))
	}
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return runResult{}, err
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return runResult{}, err
	}
	var (
		mu       sync.Mutex
		res      runResult
		log      []string
		firstCkp = make(chan struct{})
		ckptCh   = make(chan struct{}, 1) // a checkpoint completed
		done     = make(chan error, 1)
	)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log = append(log, line)
			switch {
			case strings.HasPrefix(line, "Completed checkpoint"):
				res.ckpts++
				if res.ckpts == 1 {
					close(firstCkp)
				}
				select {
				case ckptCh <- struct{}{}:
				default:
				}
				_, _ = fmt.Sscanf(line, "Completed checkpoint %d", &res.latest)
			case strings.HasPrefix(line, "[FAULT]"):
				res.faulted = true
			case strings.HasPrefix(line, "[INFO] Restoring job"):
				_, _ = fmt.Sscanf(line[strings.LastIndex(line, " from checkpoint ")+1:], "from checkpoint %d", &res.restoredFrom)
			case strings.Contains(line, "cannot be restored") && strings.Contains(line, "restoring the previous retained checkpoint"):
				res.fellBack++
			case strings.Contains(line, "output is lost"):
				res.loss = line
			}
			if strings.HasPrefix(line, "[WARN]") || strings.HasPrefix(line, "[ERROR]") || strings.HasPrefix(line, "[INFO] Restoring") ||
				strings.Contains(line, "committed by an earlier attempt") || strings.HasPrefix(line, "[FAULT]") || strings.HasPrefix(line, "Completed checkpoint") {
				res.notes = append(res.notes, line)
			}
			mu.Unlock()
		}
		done <- cmd.Wait()
	}()
	tail := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("stderr:\n%s\nstdout:\n%s", strings.Join(log, "\n"), stdout.String())
	}
	wait := func(within time.Duration) (ended bool, err error) {
		select {
		case err := <-done:
			return true, err
		case <-time.After(within):
			_ = cmd.Process.Kill()
			<-done
			return false, nil
		}
	}
	var exitErr error
	if r.brokerKill {
		select {
		case <-firstCkp:
		case err := <-done:
			mu.Lock()
			loss := res.loss
			mu.Unlock()
			if loss != "" { // the restore reported lost output
				return runResult{failed: true, loss: loss, restoredFrom: res.restoredFrom}, nil
			}
			return runResult{}, fmt.Errorf("the run ended (%v) before it completed a checkpoint\n%s", err, tail())
		case <-time.After(drillRunTimeout):
			_ = cmd.Process.Kill()
			<-done
			return runResult{}, fmt.Errorf("no checkpoint completed within %s\n%s", drillRunTimeout, tail())
		}
		delay := time.Duration(rng.Int64N(int64(drillMaxKillDelay)))
		time.Sleep(delay) // the random moment of the broker's kill
		broker.kill(t)
		res.delay = delay
		// The engine either fails, or goes on against the restarted
		// broker: then it is killed too once it completed a checkpoint.
		select {
		case <-ckptCh:
		default:
		}
		select {
		case <-ckptCh:
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				return runResult{}, err
			}
			_, exitErr = wait(timeout)
		case exitErr = <-done:
		case <-time.After(drillRunTimeout):
			_ = cmd.Process.Kill()
			<-done
			return runResult{}, fmt.Errorf("the run neither ended nor completed a checkpoint within %s after the broker was killed\n%s", drillRunTimeout, tail())
		}
	} else if r.random {
		select {
		case <-firstCkp:
		case err := <-done:
			return runResult{}, fmt.Errorf("the run ended (%v) before it completed a checkpoint\n%s", err, tail())
		case <-time.After(drillRunTimeout):
			_ = cmd.Process.Kill()
			<-done
			return runResult{}, fmt.Errorf("no checkpoint completed within %s\n%s", drillRunTimeout, tail())
		}
		delay := time.Duration(rng.Int64N(int64(drillMaxKillDelay)))
		time.Sleep(delay) // the random moment of the kill
		// A process that already ended is reported below (exit 0: the
		// job finished before the kill).
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return runResult{}, err
		}
		res.delay = delay
		_, exitErr = wait(timeout)
	} else {
		// A run that is not killed reads what is left of the input: with
		// a large FLINKSQL_DRILL_EVENTS that takes longer than the others.
		limit := drillRunTimeout
		if r.fault == "" {
			limit = drillFinalTimeout
		}
		var ended bool
		ended, exitErr = wait(limit)
		if !ended {
			return runResult{}, fmt.Errorf("the run did not end within %s\n%s", limit, tail())
		}
	}
	mu.Lock()
	out := res
	mu.Unlock()
	out.took = time.Since(began)
	var ee *exec.ExitError
	switch {
	case exitErr == nil:
		out.finished = true
	case errors.As(exitErr, &ee):
		ws, ok := ee.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			// A run fails after a broker kill (its transactions or its
			// connection were lost), or when it reports lost output.
			if out.loss != "" || r.brokerKill {
				out.failed = true
				return out, nil
			}
			return out, fmt.Errorf("the run failed: %v\n%s", exitErr, tail())
		}
		out.signaled = true
	default:
		return out, exitErr
	}
	if r.brokerKill {
		return out, nil
	}
	if r.random && out.finished {
		return out, nil // the input ended first; runDrill ends the drill
	}
	want := r.random || r.fault != ""
	if out.signaled != want {
		hint := ""
		if r.random {
			hint = " (the job finished before the random kill: the input lasts too short a time on this machine)"
		}
		return out, fmt.Errorf("the run ended with %v, want death by SIGKILL: %t%s\n%s", exitErr, want, hint, tail())
	}
	if r.fault != "" && !out.faulted {
		return out, fmt.Errorf("killed without reaching fault point %s\n%s", r.fault, tail())
	}
	return out, nil
}

// faultDepth is how many checkpoints into a run a fault point is armed: by
// then windows fire and the transactions hold records (the first checkpoint
// of a run usually comes before the first watermark).
const faultDepth = 2

// runDrill runs the planned runs in order and returns what happened.
func runDrill(t *testing.T, bin, script, tmp string, plan []drillRun, seed uint64, broker *drillBrokerProc, afterRun func() string) drillStats {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var st drillStats
	var latest int64 // the latest checkpoint a run reported completed
	killedScript := drillKilledScript(t, script)
	for i, r := range plan {
		faultAt := latest + faultDepth
		runScript := script
		if r.random || r.fault != "" || r.brokerKill {
			runScript = killedScript
		}
		res, err := runDrillProcess(t, bin, runScript, tmp, r, faultAt, rng, broker)
		if err != nil {
			t.Fatalf("run %d (%+v): %v", i+1, r, err)
		}
		st.runs++
		st.fallbacks += res.fellBack
		for _, n := range res.notes {
			st.notes = append(st.notes, fmt.Sprintf("run %d: %s", i+1, n))
		}
		if res.failed {
			st.failed++
		}
		restored := "a fresh start"
		if res.restoredFrom > 0 {
			st.restores++
			restored = fmt.Sprintf("restored checkpoint %d", res.restoredFrom)
		}
		took := res.took.Round(time.Millisecond)
		if res.fellBack > 0 {
			restored += fmt.Sprintf(" (after %d fallbacks to an earlier checkpoint)", res.fellBack)
		}
		if r.random && (res.finished || res.signaled && res.latest > 0 && !drillKeepsCheckpoints(t, script)) {
			// The job read its bounded input to the end and finished
			// before the kill: a finished job discards its checkpoints
			// (as in Flink), so a next run would be a new job reading the
			// input again. Its output is complete.
			t.Logf("run %d: %s, the job finished before the random kill landed (%d checkpoints completed) after %v; the drill ends here; %s",
				i+1, restored, res.ckpts, took, afterRun())
			if i > 0 && res.restoredFrom < latest && res.fellBack == 0 {
				t.Errorf("run %d restored checkpoint %d, want the latest completed one, %d", i+1, res.restoredFrom, latest)
			}
			return st
		}
		switch {
		case r.brokerKill:
			st.brokerKills++
			how := "went on and was killed after its next checkpoint"
			switch {
			case res.failed:
				how = "failed"
			case res.finished:
				how = "finished"
			}
			t.Logf("run %d: %s, broker killed %v after the run's first completed checkpoint; the run %s (%d checkpoints completed) after %v; %s",
				i+1, restored, res.delay.Round(time.Millisecond), how, res.ckpts, took, afterRun())
		case r.random:
			st.randomKills++
			t.Logf("run %d: %s, killed %v after its first completed checkpoint (%d completed) after %v; %s",
				i+1, restored, res.delay.Round(time.Millisecond), res.ckpts, took, afterRun())
		case r.fault != "":
			st.faultKills++
			t.Logf("run %d: %s, killed itself at %s@%d (%d checkpoints completed) after %v; %s",
				i+1, restored, r.fault, faultAt, res.ckpts, took, afterRun())
		default:
			t.Logf("run %d: %s, finished (%d checkpoints completed) after %v; %s",
				i+1, restored, res.ckpts, took, afterRun())
		}
		// A run resumes from the latest completed checkpoint, or from a
		// later one when the kill came between its completion and the
		// log line, or from an earlier one it fell back to.
		if i > 0 && res.restoredFrom < latest && res.fellBack == 0 {
			t.Errorf("run %d restored checkpoint %d, want the latest completed one, %d", i+1, res.restoredFrom, latest)
		}
		latest = max(latest, res.restoredFrom, res.latest)
		if res.loss != "" {
			t.Logf("run %d reported lost output: %s", i+1, res.loss)
			st.loss = res.loss
			return st
		}
		if r.brokerAfter {
			broker.kill(t)
			st.brokerKills++
			t.Logf("broker killed after run %d and started again; %s", i+1, afterRun())
		}
		if res.finished && r.brokerKill {
			return st // the job finished: the rest of the plan has nothing to kill
		}
	}
	return st
}

// drillBoundedRead is how the drills' Kafka inputs end: at the offsets
// the topic's partitions have when the job first starts.
const drillBoundedRead = "'scan.bounded.mode' = 'latest-offset',"

// drillKilledScript returns the script the runs that are to be killed
// run: when script bounds its Kafka input (drillBoundedRead), a copy that
// reads it unbounded, written next to it; else script itself. A run
// planned to die at a fault point (two checkpoints after the latest) or
// at a random moment must not finish first, which a loaded machine makes
// it do when it reads the rest of the input in less time (a finished job
// discards its checkpoints, so the drill would end with its kills not
// made). Unbounded, it waits for more input instead. Its checkpoints hold
// no stop offsets, so the run that finishes, bounded, resolves them at
// its start: the ends of the whole input, which is produced before the
// first run.
func drillKilledScript(t *testing.T, script string) string {
	t.Helper()
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), drillBoundedRead) {
		return script
	}
	killed := strings.TrimSuffix(script, ".sql") + "-killed.sql"
	writeFile(t, killed, strings.ReplaceAll(string(text), drillBoundedRead, ""))
	return killed
}

// drillKeepsCheckpoints reports whether the checkpoint directory that
// script sets ('state.checkpoints.dir') holds a checkpoint's metadata; true
// when the script sets none.
func drillKeepsCheckpoints(t *testing.T, script string) bool {
	t.Helper()
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	const set = "SET 'state.checkpoints.dir' = '"
	i := strings.Index(string(text), set)
	if i < 0 {
		return true
	}
	dir, _, _ := strings.Cut(string(text[i+len(set):]), "'")
	found := false
	err = filepath.WalkDir(strings.TrimPrefix(dir, "file://"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "_metadata" {
			found = true
			return filepath.SkipAll
		}
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return found
}

// readDrillOutput reads every record of topic up to its end with an
// independent client: for read_committed up to the last stable offset, which
// must equal the high watermark once the job ended (an open transaction
// would hold read_committed readers back).
func readDrillOutput(t *testing.T, addr, topic string, committed bool) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	// Control records are kept so that the reader can tell it reached the
	// end: every offset up to the end is then a record it sees.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hw, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := hw.Error(); err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end := map[int32]int64{}
	hw.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	if committed {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = lso.Error()
		}
		if err != nil {
			t.Fatalf("last stable offsets of %s: %v", topic, err)
		}
		lso.Each(func(o kadm.ListedOffset) {
			if o.Offset != end[o.Partition] {
				t.Errorf("%s[%d]: last stable offset %d < high watermark %d: a transaction is still open", topic, o.Partition, o.Offset, end[o.Partition])
				end[o.Partition] = o.Offset
			}
		})
	}
	if committed {
		end = appendEndMarkers(t, ctx, cl, topic, end)
	}
	next := map[int32]int64{}
	left := 0
	for p, e := range end {
		if e > 0 {
			left++
		}
		next[p] = 0
	}
	var out []*kgo.Record
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: positions %v, ends %v: %v", topic, next, end, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("reading %s: %v", topic, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end[r.Partition] {
				return
			}
			if !r.Attrs.IsControl() && !(committed && r.Offset == end[r.Partition]-1) {
				out = append(out, r)
			}
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] == end[r.Partition] {
				left--
			}
		})
	}
	return out
}

// appendEndMarkers writes one plain record at the end of every partition of
// topic and returns the offsets after them. A read_committed reader cannot
// otherwise tell that it reached the end of a partition whose tail is a
// transaction kfake aborted on reloading its data after a crash: kfake
// writes no abort marker then, so the reader's last visible offset stays
// below the end for good. The marker is the last record it sees instead.
func appendEndMarkers(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, end map[int32]int64) map[int32]int64 {
	t.Helper()
	marked := make(map[int32]int64, len(end))
	for p := range end {
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte("end-of-drill")}
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("end marker for %s[%d]: %v", topic, p, err)
		}
		marked[p] = r.Offset + 1
	}
	return marked
}

// totalRecord is a record the sink wrote.
type totalRecord struct {
	WindowStart string `json:"window_start"`
	K           string `json:"k"`
	Total       *int64 `json:"total"`
}

// drillReport compares the records with the expected sums.
type drillReport struct {
	records, distinct     int
	missing, duplicates   []string
	wrong, unknown, bad   []string
	duplicateRecordsTotal int
}

func checkDrillOutput(recs []*kgo.Record, want map[windowKey]int64) drillReport {
	rep := drillReport{records: len(recs)}
	seen := map[windowKey]int{}
	for _, r := range recs {
		where := fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset)
		var tr totalRecord
		if err := json.Unmarshal(r.Value, &tr); err != nil || tr.Total == nil {
			rep.bad = append(rep.bad, fmt.Sprintf("%s: %q", where, r.Value))
			continue
		}
		ws, err := time.Parse("2006-01-02 15:04:05.999999999", tr.WindowStart)
		if err != nil {
			rep.bad = append(rep.bad, fmt.Sprintf("%s: window_start %q: %v", where, tr.WindowStart, err))
			continue
		}
		k := windowKey{ws.Sub(drillEpoch).Milliseconds(), tr.K}
		sum, ok := want[k]
		switch {
		case !ok:
			rep.unknown = append(rep.unknown, fmt.Sprintf("%s: %s", where, r.Value))
			continue
		case *tr.Total != sum:
			rep.wrong = append(rep.wrong, fmt.Sprintf("%s: %v total %d, want %d", where, k, *tr.Total, sum))
		}
		seen[k]++
	}
	var keys []windowKey
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].start != keys[j].start {
			return keys[i].start < keys[j].start
		}
		return keys[i].key < keys[j].key
	})
	for _, k := range keys {
		switch n := seen[k]; {
		case n == 0:
			rep.missing = append(rep.missing, k.String())
		case n > 1:
			rep.duplicates = append(rep.duplicates, fmt.Sprintf("%v ×%d", k, n))
			rep.duplicateRecordsTotal += n - 1
		}
		if seen[k] > 0 {
			rep.distinct++
		}
	}
	return rep
}

func (rep drillReport) errorf(t *testing.T, exact bool) {
	t.Helper()
	if len(rep.missing) > 0 {
		t.Errorf("%d (key, window) results missing: %v", len(rep.missing), rep.missing)
	}
	if exact && len(rep.duplicates) > 0 {
		t.Errorf("%d (key, window) results duplicated (%d extra records): %v", len(rep.duplicates), rep.duplicateRecordsTotal, rep.duplicates)
	}
	if len(rep.wrong) > 0 {
		t.Errorf("%d records with a wrong sum: %v", len(rep.wrong), rep.wrong)
	}
	if len(rep.unknown) > 0 {
		t.Errorf("%d records for no (key, window) of the input: %v", len(rep.unknown), rep.unknown)
	}
	if len(rep.bad) > 0 {
		t.Errorf("%d records that do not decode: %v", len(rep.bad), rep.bad)
	}
}

// TestCrashDrill is the crash drill of issue 6; see the top of this file.
func TestCrashDrill(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	t.Logf("built the binary in %v", time.Since(start).Round(time.Millisecond))
	broker := drillBroker(t, bin, filepath.Join(dir, "broker"))
	addr := broker.addr
	seed := uint64(drillSeed)
	if v := os.Getenv("FLINKSQL_DRILL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FLINKSQL_DRILL_SEED: %v", err)
		}
		seed = n
	}
	rounds := 1
	envInt(t, "FLINKSQL_DRILL_ROUNDS", &rounds)
	envInt(t, "FLINKSQL_DRILL_EVENTS", &drillEvents)
	t.Logf("seed %d", seed)
	evs := drillInput(seed)
	want := drillExpected(evs)
	produceDrillInput(t, addr, evs, "totals", "totals_alo")
	t.Logf("broker %s: %d events over %d keys, %d (key, window) results expected; setup took %v",
		addr, len(evs), drillKeys, len(want), time.Since(start).Round(time.Millisecond))

	targeted := func(points ...string) []drillRun {
		var runs []drillRun
		for _, p := range points {
			runs = append(runs, drillRun{fault: p})
		}
		return runs
	}
	randomKills := func(n int) []drillRun {
		runs := make([]drillRun, n)
		for i := range runs {
			runs[i].random = true
		}
		return runs
	}

	t.Run("exactly-once", func(t *testing.T) {
		begin := time.Now()
		// Per round: engine kills at random moments and at each fault
		// point, the same fault points each followed by a broker kill, and
		// broker kills at random moments.
		var plan []drillRun
		for range rounds {
			plan = append(plan, randomKills(4)...)
			plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete", "during-commit")...)
			for _, r := range targeted("before-precommit", "after-precommit", "after-complete", "during-commit") {
				r.brokerAfter = true
				plan = append(plan, r)
			}
			for range 4 {
				plan = append(plan, drillRun{brokerKill: true})
			}
		}
		plan = append(plan, drillRun{}) // the run that finishes
		script := filepath.Join(dir, "exactly-once.sql")
		tmp := filepath.Join(dir, "tmp-exactly-once")
		writeFile(t, script, drillSQL(addr, filepath.Join(dir, "checkpoints-exactly-once"), "exactly-once", "totals"))
		mkdir(t, tmp)
		st := runDrill(t, bin, script, tmp, plan, seed, broker, func() string { return topicEnds(t, addr, "totals") })
		if st.loss != "" {
			// Never silent: the job failed naming what was lost.
			for _, part := range []string{"checkpoint", "transactional id", "partitions", "Likely cause"} {
				if !strings.Contains(st.loss, part) {
					t.Errorf("the loss report does not name %q: %s", part, st.loss)
				}
			}
			t.Logf("exactly-once: %d runs (%d random kills, %d fault-point kills, %d broker kills, %d restores, %d fallbacks, %d failed runs); the job reported lost output, %v",
				st.runs, st.randomKills, st.faultKills, st.brokerKills, st.restores, st.fallbacks, st.failed, time.Since(begin).Round(time.Millisecond))
			return
		}
		rep := checkDrillOutput(readDrillOutput(t, addr, "totals", true), want)
		if len(rep.missing)+len(rep.duplicates) > 0 {
			t.Logf("what the runs logged about recovery:\n%s", strings.Join(st.notes, "\n"))
		}
		t.Logf("exactly-once: %d runs (%d random kills, %d fault-point kills, %d broker kills, %d restores, %d fallbacks, %d failed runs); read_committed: %d records, %d of %d (key, window) results, %d duplicated, %d missing, %d wrong; %v",
			st.runs, st.randomKills, st.faultKills, st.brokerKills, st.restores, st.fallbacks, st.failed, rep.records, rep.distinct, len(want),
			len(rep.duplicates), len(rep.missing), len(rep.wrong), time.Since(begin).Round(time.Millisecond))
		rep.errorf(t, true)
		if rep.records != len(want) {
			t.Errorf("read %d records, want exactly %d", rep.records, len(want))
		}
	})

	t.Run("at-least-once", func(t *testing.T) {
		begin := time.Now()
		// The same kills but during-commit, which a sink without
		// transactions never reaches. A window fires about every other
		// checkpoint interval, so a kill finds records written after the
		// last completed checkpoint (which the next run writes again) about
		// every other time.
		var plan []drillRun
		plan = append(plan, randomKills(5)...)
		plan = append(plan, targeted("before-precommit", "after-precommit", "after-complete")...)
		plan = append(plan, drillRun{})
		script := filepath.Join(dir, "at-least-once.sql")
		tmp := filepath.Join(dir, "tmp-at-least-once")
		writeFile(t, script, drillSQL(addr, filepath.Join(dir, "checkpoints-at-least-once"), "at-least-once", "totals_alo"))
		mkdir(t, tmp)
		st := runDrill(t, bin, script, tmp, plan, seed+1, broker, func() string { return topicEnds(t, addr, "totals_alo") })
		rep := checkDrillOutput(readDrillOutput(t, addr, "totals_alo", false), want)
		t.Logf("at-least-once: %d runs (%d random kills, %d fault-point kills, %d restores); read_uncommitted: %d records, %d of %d (key, window) results, %d duplicated (%d extra records), %d missing, %d wrong; %v",
			st.runs, st.randomKills, st.faultKills, st.restores, rep.records, rep.distinct, len(want),
			len(rep.duplicates), rep.duplicateRecordsTotal, len(rep.missing), len(rep.wrong), time.Since(begin).Round(time.Millisecond))
		rep.errorf(t, false)
	})
	t.Logf("crash drill wall time %v", time.Since(start).Round(time.Millisecond))
}

// envInt sets *v from the environment variable name, when it is set to a
// positive integer; anything else fails the test.
func envInt(t *testing.T, name string, v *int) {
	t.Helper()
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s: want a positive integer, got %q", name, s)
		}
		*v = n
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// topicEnds describes the end offsets of a topic.
func topicEnds(t *testing.T, addr, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hw, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var h, l int64
	hw.Each(func(o kadm.ListedOffset) { h += o.Offset })
	lso.Each(func(o kadm.ListedOffset) { l += o.Offset })
	return fmt.Sprintf("%s: end offsets %d, last stable %d", topic, h, l)
}
