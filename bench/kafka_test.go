package bench

// Kafka pipelines (issue 4): Kafka → JSON → … → JSON → Kafka through the
// `kafka` connector, against the embedded broker running in a process of its
// own (this test binary re-executed), so that the engine's CPU (getrusage of
// this process) and the broker's (/proc/<pid>/stat of the child) are
// measured apart.
//
//	go test ./bench -run '^$' -bench Kafka -benchtime 2000000x
//
// One op is one input record: ~200 bytes of JSON in a topic of 4
// partitions, produced before the timer starts. The job reads the topic with
// 'scan.bounded.mode' = 'latest-offset', so it ends when it has read all of
// it; the output topic's end offsets are then checked against the number of
// rows worked out from the generated data.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/broker"
	"github.com/flinksql/flinksql/session"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerChildEnv, when set, makes this test binary run as the benchmark's
// broker process instead of running tests.
const brokerChildEnv = "FLINKSQL_BENCH_BROKER"

func TestMain(m *testing.M) {
	if os.Getenv(brokerChildEnv) != "" {
		os.Exit(serveBrokerChild())
	}
	os.Exit(m.Run())
}

// serveBrokerChild runs a broker until SIGTERM or until its stdin closes
// (the benchmark process went away), printing its address first.
func serveBrokerChild() int {
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", Partitions: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	fmt.Printf("Kafka broker listening on %s\n", b.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	stdinClosed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-sig:
	case <-stdinClosed:
	}
	return 0
}

// brokerChild is the broker process of a benchmark.
type brokerChild struct {
	cmd  *exec.Cmd
	addr string
}

func startBrokerChild(b *testing.B) *brokerChild {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), brokerChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "Kafka broker listening on ")
	if err != nil || !ok {
		b.Fatalf("broker process: first line %q: %v", line, err)
	}
	return &brokerChild{cmd: cmd, addr: addr}
}

// cpu returns the CPU time (user + system) the broker process has used.
func (c *brokerChild) cpu(b *testing.B) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the line, in clock ticks (USER_HZ, 100 on
	// Linux).
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parsing /proc/%d/stat: %q", c.cmd.Process.Pid, s)
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// kafkaRecord is input record i: a sequence id, a key over 10 000 values
// (every 10 000 consecutive ids hit each key once), a value 0..1000 and an
// event time advancing 0.1 ms per record (as the datagen benchmarks: a
// 10-second window holds 100 000 records), padded to ~200 bytes.
func kafkaRecord(i int) (k, v int, value []byte) {
	k = i * 7919 % 10000
	v = i * 31 % 1001
	ms := i / 10
	ts := time.UnixMilli(int64(ms)).UTC().Format("2006-01-02 15:04:05.000")
	return k, v, fmt.Appendf(nil, `{"id":%d,"k":%d,"v":%d,"ts":"%s","note":"padding so that every record is about two hundred bytes long, as in the issue","tag":"flinksql-kafka-bench"}`,
		i, k, v, ts)
}

// preload writes n records to a new 4-partition topic, keyed by id.
func preload(b *testing.B, addr, topic string, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(100_000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, -1, nil, topic); err != nil {
		b.Fatalf("create topic %s: %v", topic, err)
	}
	errs := make(chan error, 1)
	for i := 0; i < n; i++ {
		_, _, value := kafkaRecord(i)
		cl.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case err := <-errs:
		b.Fatalf("preload %s: %v", topic, err)
	default:
	}
}

// runKafkaPipeline preloads b.N records, runs the statements of sinkDDL and
// insert (with {in}, {out} and {addr} replaced) and checks that the output
// topic holds wantOut(b.N) records.
func runKafkaPipeline(b *testing.B, sinkDDL, insert string, wantOut func(n int) int, conf ...string) {
	b.Helper()
	b.StopTimer()
	child := startBrokerChild(b)
	in, out := "in", "out"
	preload(b, child.addr, in, b.N)

	r := strings.NewReplacer("{in}", in, "{out}", out, "{addr}", child.addr)
	ddl := r.Replace(`
CREATE TABLE src (
  id   BIGINT,
  k    INT,
  v    INT,
  ts   TIMESTAMP(3),
  note STRING,
  tag  STRING,
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = '{in}',
  'properties.bootstrap.servers' = '{addr}',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);` + sinkDDL)

	ctx := context.Background()
	config := map[string]string{"parallelism.default": "1", "table.local-time-zone": "UTC"}
	for i := 0; i+1 < len(conf); i += 2 {
		config[conf[i]] = conf[i+1]
	}
	sess, err := session.New(session.Options{Config: config})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Execute(ctx, ddl); err != nil {
		b.Fatal(err)
	}
	brokerCPU0 := child.cpu(b)
	cpu0, wall0 := cpuTime(), time.Now()
	b.StartTimer()
	if _, err := sess.Execute(ctx, r.Replace(insert)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu, wall, brokerCPU := cpuTime()-cpu0, time.Since(wall0), child.cpu(b)-brokerCPU0

	if got, want := committedRecords(b, child.addr, out, wantOut(b.N)), wantOut(b.N); got != want {
		b.Fatalf("output topic holds %d committed records, want %d", got, want)
	}
	b.ReportMetric(float64(b.N)/wall.Seconds(), "rec/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "rec/cpu-s")
	if brokerCPU > 0 {
		b.ReportMetric(float64(b.N)/brokerCPU.Seconds(), "rec/broker-cpu-s")
	}
	b.ReportMetric(brokerCPU.Seconds(), "broker-cpu-s")
	b.ReportMetric(cpu.Seconds(), "engine-cpu-s")
}

// (a) Kafka → JSON → filter/projection → JSON → Kafka.
func BenchmarkKafkaFilterProject(b *testing.B) {
	runKafkaPipeline(b, `
CREATE TABLE sink (id BIGINT, v2 BIGINT, k BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{addr}', 'format' = 'json'
);`,
		`INSERT INTO sink SELECT id, CAST(v * 2 AS BIGINT), CAST(k AS BIGINT) FROM src WHERE v > 10;`,
		func(n int) int {
			kept := 0
			for i := 0; i < n; i++ {
				if _, v, _ := kafkaRecord(i); v > 10 {
					kept++
				}
			}
			return kept
		})
}

// (b) Kafka → JSON → TUMBLE 10 s SUM/COUNT per key over 10 000 keys → JSON →
// Kafka.
func BenchmarkKafkaTumble(b *testing.B) {
	runKafkaPipeline(b, `
CREATE TABLE sink (window_start TIMESTAMP(3), k INT, s BIGINT, c BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{addr}', 'format' = 'json'
);`,
		`INSERT INTO sink
SELECT window_start, k, CAST(SUM(v) AS BIGINT), COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`,
		func(n int) int {
			// One row per (window, key) that has a record: a window is
			// 100 000 consecutive ids.
			groups := map[[2]int]struct{}{}
			for i := 0; i < n; i++ {
				k, _, _ := kafkaRecord(i)
				groups[[2]int{i / 100_000, k}] = struct{}{}
			}
			return len(groups)
		})
}

// committedRecords counts the records of a topic a read_committed reader
// sees (end offsets would also count transaction markers): it reads until it
// has want records, then briefly for any extra.
func committedRecords(b *testing.B, addr, topic string, want int) int {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	for n < want && ctx.Err() == nil {
		n += cl.PollFetches(ctx).NumRecords()
	}
	extra, cancelExtra := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelExtra()
	n += cl.PollFetches(extra).NumRecords()
	return n
}
