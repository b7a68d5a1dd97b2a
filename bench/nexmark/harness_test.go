// Package nexmark runs Nexmark's queries (examples/nexmark) against the
// nexmark connector: a benchmark harness that reports, per query, what
// Nexmark reports (events per CPU-second of the process, generator
// included), and correctness checks of the queries' rows against Go
// reference computations over the same events.
//
//	go test ./bench/nexmark -run '^$' -bench . -benchtime 1x \
//	    -nexmark.queries q0,q1,q2 -nexmark.events 10000000 -nexmark.parallelism 2 -nexmark.backend hashmap
//
// Each query runs in a process of its own (the test binary, re-executed), so
// that its CPU time and peak RSS are its own.
package nexmark

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/gcpolicy"
	"github.com/flinksql/flinksql/options"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/units"
)

var (
	flagQueries     = flag.String("nexmark.queries", "q0,q1,q2", "comma-separated queries of examples/nexmark to run, or 'all'")
	flagEvents      = flag.Int64("nexmark.events", 1_000_000, "events the source generates (events.num)")
	flagParallelism = flag.Int("nexmark.parallelism", 1, "parallelism.default of the job")
	flagBackend     = flag.String("nexmark.backend", "hashmap", "state.backend.type: hashmap or rocksdb")
	flagTPS         = flag.Int64("nexmark.tps", 10_000_000, "first-event.rate and next-event.rate (${TPS}; Nexmark's default workload uses 10 M)")
	flagCheckpoint  = flag.String("nexmark.checkpoint-interval", "", "execution.checkpointing.interval (to a temporary directory); empty: no checkpoints")
	flagSink        = flag.String("nexmark.sink", "blackhole", "sink of the queries: blackhole (as published) or filesystem (csv files in a temporary directory, committed on checkpoints)")
	flagCPUProfile  = flag.String("nexmark.cpuprofile", "", "write each query's CPU profile to this file prefix (<prefix>-<query>.pprof)")
	flagMemProfile  = flag.String("nexmark.memprofile", "", "write each query's heap profile, taken when its heap was largest (sampled every second), to this file prefix (<prefix>-<query>.heap)")
)

// examplesDir holds Nexmark's published SQL.
const examplesDir = "../../examples/nexmark"

// allQueries are the published queries in order.
var allQueries = func() []string {
	var qs []string
	for i := 0; i <= 22; i++ {
		qs = append(qs, "q"+strconv.Itoa(i))
	}
	return qs
}()

// params fill Nexmark's placeholders.
type params struct {
	events int64
	tps    int64
	// firstEventTime, when set, is added to the table's options (fixed
	// timestamps, for the correctness checks).
	firstEventTime string
	sideInput      string // ${SIDE_INPUT}: path of q13's side input file
	// sinkDir, when set, replaces the blackhole sink with a filesystem sink
	// writing csv files there.
	sinkDir   string
	flinkHome string // ${FLINK_HOME}: the directory of data/side_input.txt
}

// script returns ddl_gen.sql, ddl_views.sql and the query's file with the
// placeholders filled in.
func script(query string, p params) (string, error) {
	var b strings.Builder
	for _, f := range []string{"ddl_gen.sql", "ddl_views.sql", query + ".sql"} {
		data, err := os.ReadFile(filepath.Join(examplesDir, f))
		if err != nil {
			return "", err
		}
		b.Write(data)
		b.WriteString(";\n")
	}
	s := strings.NewReplacer(
		"${TPS}", strconv.FormatInt(p.tps, 10),
		"${EVENTS_NUM}", strconv.FormatInt(p.events, 10),
		"${PERSON_PROPORTION}", "1",
		"${AUCTION_PROPORTION}", "3",
		"${BID_PROPORTION}", "46",
		"${NEXMARK_TABLE}", "datagen",
		"${SIDE_INPUT}", p.sideInput,
		"${FLINK_HOME}", p.flinkHome,
	).Replace(b.String())
	if p.firstEventTime != "" {
		s = strings.Replace(s, "'connector' = 'nexmark',", "'connector' = 'nexmark',\n    'first-event.time' = '"+p.firstEventTime+"',", 1)
	}
	if p.sinkDir != "" {
		s = strings.ReplaceAll(s, "'connector' = 'blackhole'", "'connector' = 'filesystem', 'path' = 'file://"+p.sinkDir+"', 'format' = 'csv'")
	}
	if m := regexp.MustCompile(`\$\{[A-Z_]+\}`).FindString(s); m != "" {
		return "", fmt.Errorf("%s: placeholder %s is not filled in", query, m)
	}
	return s, nil
}

// childEnv names the query a re-executed test binary runs.
const childEnv = "FLINKSQL_NEXMARK_CHILD"

func TestMain(m *testing.M) {
	if q := os.Getenv(childEnv); q != "" {
		flag.Parse()
		if err := runChild(q); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs one query to the end of its input in this process.
func runChild(query string) error {
	if *flagCPUProfile != "" {
		f, err := os.Create(*flagCPUProfile + "-" + query + ".pprof")
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *flagMemProfile != "" {
		stop := watchHeap(*flagMemProfile + "-" + query + ".heap")
		defer stop()
	}
	home, err := os.MkdirTemp("", "nexmark-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	sideInput, err := writeSideInput(home)
	if err != nil {
		return err
	}
	p := params{events: *flagEvents, tps: *flagTPS, sideInput: sideInput, flinkHome: home}
	switch *flagSink {
	case "blackhole":
	case "filesystem":
		p.sinkDir = filepath.Join(home, "out")
	default:
		return fmt.Errorf("-nexmark.sink %q: want blackhole or filesystem", *flagSink)
	}
	sql, err := script(query, p)
	if err != nil {
		return err
	}
	conf := map[string]string{
		"parallelism.default":   strconv.Itoa(*flagParallelism),
		"table.local-time-zone": "UTC",
		"state.backend.type":    *flagBackend,
	}
	if *flagCheckpoint != "" {
		dir, err := os.MkdirTemp("", "nexmark-checkpoints-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		conf["execution.checkpointing.interval"] = *flagCheckpoint
		conf["state.checkpoints.dir"] = "file://" + dir
	}
	sess, err := session.New(session.Options{Config: conf})
	if err != nil {
		return err
	}
	defer sess.Close()
	// The child paces its collector as the flinksql binary does.
	if os.Getenv("GOGC") == "" {
		headroom, _ := units.ParseMemorySize(sess.Get(options.GCHeapHeadroom.Key))
		defer gcpolicy.Start(headroom).Stop()
	}
	return execute(context.Background(), sess, sql)
}

// watchHeap writes a heap profile to path each time the heap's objects
// exceed by a tenth the most seen so far (read every second), so that the
// file last written shows the heap near its peak: what a query's RSS is
// made of. The returned func stops the watch.
func watchHeap(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var most uint64
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > most+most/10 {
				most = v
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// execute runs a script and waits for the jobs it submits to end.
func execute(ctx context.Context, sess *session.Session, sql string) error {
	results, err := sess.Execute(ctx, sql)
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.Job != nil {
			if err := r.Job.Wait(ctx); err != nil {
				return fmt.Errorf("job %s: %w", r.Job.Name, err)
			}
		}
	}
	return nil
}

// writeSideInput writes Nexmark's side input for q13 (side_input_gen.sh:
// the lines "i,i" for i below 10 000) to home/data/side_input.txt and
// returns its path.
func writeSideInput(home string) (string, error) {
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(home, "data", "side_input.txt"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "%d,%d\n", i, i)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// measurement is one query's run.
type measurement struct {
	query      string
	events     int64
	wall, cpu  time.Duration
	peakRSSKiB int64
	err        string
}

// BenchmarkNexmark runs each of -nexmark.queries once, in a child process,
// and reports per query the events, wall and CPU seconds, events per
// CPU-second (per core), events per wall second and the peak RSS. Use
// -benchtime 1x: every iteration runs the whole query again.
func BenchmarkNexmark(b *testing.B) {
	queries := strings.Split(*flagQueries, ",")
	if *flagQueries == "all" {
		queries = allQueries
	}
	var results []measurement
	for _, q := range queries {
		q = strings.TrimSpace(q)
		b.Run(q, func(b *testing.B) {
			for range b.N {
				m := runQuery(b, q)
				results = append(results, m)
				if m.err != "" {
					b.Logf("%s failed: %s", q, m.err)
					return
				}
				b.ReportMetric(float64(m.events)/m.cpu.Seconds(), "events/cpu-s")
				b.ReportMetric(float64(m.events)/m.wall.Seconds(), "events/s")
				b.ReportMetric(float64(m.peakRSSKiB)/1024, "peak-RSS-MiB")
			}
		})
	}
	fmt.Printf("\nnexmark: %d events, parallelism %d, %s, tps %d, checkpoints %q, sink %s\n", *flagEvents, *flagParallelism, *flagBackend, *flagTPS, *flagCheckpoint, *flagSink)
	fmt.Printf("%-15s %12s %8s %8s %14s %12s %10s\n", "query", "events", "wall s", "CPU s", "events/cpu-s", "events/s", "peak RSS")
	for _, m := range results {
		if m.err != "" {
			fmt.Printf("%-15s failed: %s\n", m.query, firstLine(m.err))
			continue
		}
		fmt.Printf("%-15s %12d %8.2f %8.2f %14.0f %12.0f %7d MiB\n", m.query, m.events, m.wall.Seconds(), m.cpu.Seconds(),
			float64(m.events)/m.cpu.Seconds(), float64(m.events)/m.wall.Seconds(), m.peakRSSKiB/1024)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func runQuery(b *testing.B, q string) measurement {
	m := measurement{query: q, events: *flagEvents}
	cmd := exec.Command(os.Args[0],
		"-nexmark.events", strconv.FormatInt(*flagEvents, 10),
		"-nexmark.parallelism", strconv.Itoa(*flagParallelism),
		"-nexmark.backend", *flagBackend,
		"-nexmark.tps", strconv.FormatInt(*flagTPS, 10),
		"-nexmark.checkpoint-interval", *flagCheckpoint,
		"-nexmark.sink", *flagSink,
		"-nexmark.cpuprofile", *flagCPUProfile,
		"-nexmark.memprofile", *flagMemProfile)
	cmd.Env = append(os.Environ(), childEnv+"="+q)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	m.wall = time.Since(start)
	if err != nil {
		m.err = fmt.Sprintf("%v: %s", err, out)
		return m
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		b.Fatalf("no resource usage for the child process")
	}
	m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	m.peakRSSKiB = ru.Maxrss // kilobytes on Linux
	return m
}
