package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logLines is a session's stderr that hands every complete line to a channel,
// so a test can wait for what the session reports.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLogLines() *logLines { return &logLines{lines: make(chan string, 1000)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // incomplete: keep it for the next write
			return len(p), nil
		}
		select {
		case l.lines <- strings.TrimSuffix(line, "\n"):
		default: // nobody reads that many lines; dropping them loses nothing the tests wait for
		}
	}
}

// await returns once n lines containing what were written.
func (l *logLines) await(t *testing.T, ctx context.Context, what string, n int) {
	t.Helper()
	for n > 0 {
		select {
		case line := <-l.lines:
			if strings.Contains(line, what) {
				n--
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %d more lines with %q: %v", n, what, ctx.Err())
		}
	}
}

// TestKafkaRestoreReadsNewPartitionsFromEarliest: a job reading with
// 'scan.startup.mode' = 'latest-offset' is cancelled with its checkpoint
// retained; meanwhile its topic gets a partition and a topic matching its
// 'topic-pattern' appears, both with records. Started again, the job restores
// the checkpoint and reads those partitions from their earliest offset
// (FLIP-288): the startup mode only applies at the first start.
func TestKafkaRestoreReadsNewPartitionsFromEarliest(t *testing.T) {
	addr := startBroker(t, map[string]int32{"grow": 1, "out": 1})
	dir := "file://" + t.TempDir()
	ddl := fmt.Sprintf(`
CREATE TABLE src (v STRING) WITH ('connector' = 'kafka', 'topic-pattern' = 'grow.*', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'latest-offset', 'format' = 'raw');
CREATE TABLE sink_out (v STRING) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'raw');
`, addr)
	start := func(log *logLines) (*session.Session, *session.Job) {
		s, err := session.New(session.Options{Stderr: log, Config: map[string]string{
			"table.local-time-zone": "UTC", "parallelism.default": "1",
			"execution.checkpointing.interval": "50 ms", "state.checkpoints.dir": dir, "pipeline.name": "grow-job",
			"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		}})
		if err != nil {
			t.Fatal(err)
		}
		run(t, s, ddl)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		st, err := parser.ParseStatement("INSERT INTO sink_out SELECT v FROM src")
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.ExecuteStatement(ctx, st) // submits the unbounded job
		if err != nil || r.Job == nil {
			t.Fatalf("INSERT: %v %v", r, err)
		}
		return s, r.Job
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	log1 := newLogLines()
	s1, job1 := start(log1)
	log1.await(t, ctx, "Completed checkpoint", 1) // the reader is open: latest-offset is fixed
	produce(t, addr, "grow", rec{value: "a"})
	readAll(t, addr, "out", 1)
	// Two checkpoints complete after "a" was written out: the second was
	// triggered after the first completed, so its position is past "a".
	log1.await(t, ctx, "Completed checkpoint", 2)
	job1.Stop()
	s1.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreatePartitions(ctx, 1, "grow"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "grow-more"); err != nil {
		t.Fatal(err)
	}
	produce(t, addr, "grow", rec{partition: 1, value: "b-new-partition"}, rec{partition: 0, value: "d-after-checkpoint"})
	produce(t, addr, "grow-more", rec{value: "c-new-topic"})

	log2 := newLogLines()
	s2, job2 := start(log2)
	defer s2.Close()
	defer job2.Stop()
	log2.await(t, ctx, "Restoring job 'grow-job' from checkpoint", 1)
	var got []string
	for _, r := range readAll(t, addr, "out", 4) {
		got = append(got, string(r.Value))
	}
	sort.Strings(got)
	if want := "a b-new-partition c-new-topic d-after-checkpoint"; strings.Join(got, " ") != want {
		t.Fatalf("out holds %v, want %s", got, want)
	}
}
