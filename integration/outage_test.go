package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stallingS3 is an S3-compatible server (gofakes3) whose writes of
// checkpoint metadata can be held: the storage outage of the test below.
type stallingS3 struct {
	next http.Handler

	mu       sync.Mutex
	from     int // hold the _metadata PUT of chk-<n> for n >= from; 0: none
	lastPut  int
	stalled  chan int      // receives the held checkpoint
	released chan struct{} // closed to let held writes through
}

func (s *stallingS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/_metadata") {
		var n int
		if i := strings.LastIndex(r.URL.Path, "/chk-"); i >= 0 {
			fmt.Sscanf(r.URL.Path[i:], "/chk-%d/", &n)
		}
		s.mu.Lock()
		hold := s.from > 0 && n >= s.from
		if !hold {
			s.lastPut = max(s.lastPut, n)
		}
		s.mu.Unlock()
		if hold {
			select {
			case s.stalled <- n:
			default:
			}
			select {
			case <-s.released:
			case <-r.Context().Done():
				http.Error(w, "storage unavailable", http.StatusServiceUnavailable)
				return
			}
		}
	}
	s.next.ServeHTTP(w, r)
}

// TestCheckpointStorageOutageLongerThanTransactionTimeout: the checkpoint
// storage of an exactly-once job stops answering (the write of a
// checkpoint's metadata hangs) for longer than the sink's transaction
// timeout, so the broker aborts the transactions that checkpoint was to
// commit. When the write finally succeeds, the commit finds them aborted:
// the job must report the loss or recover it (restoring an earlier
// checkpoint, when one is retained, whose replay writes the output again) —
// never finish with rows missing. Before, the commit only logged that the
// transaction "ended before", to a log nobody received, and the job
// finished with the checkpoint's rows missing.
func TestCheckpointStorageOutageLongerThanTransactionTimeout(t *testing.T) {
	for _, retained := range []int{2, 1} {
		t.Run(fmt.Sprintf("num-retained=%d", retained), func(t *testing.T) {
			storageOutage(t, retained)
		})
	}
}

func storageOutage(t *testing.T, retained int) {
	addr := startBroker(t, map[string]int32{"events": 1, "totals": 1})
	backend := s3mem.New()
	if err := backend.CreateBucket("ckpts"); err != nil {
		t.Fatal(err)
	}
	s3 := &stallingS3{next: gofakes3.New(backend).Server(), stalled: make(chan int, 1), released: make(chan struct{})}
	srv := httptest.NewServer(s3)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-s3.released:
		default:
			close(s3.released)
		}
	})

	// Events of 20 one-second windows, 10 per window, amount 1: every
	// window's total is 10. The first half goes in before the job starts,
	// the second once the storage hangs.
	event := func(i int) rec {
		return rec{value: fmt.Sprintf(`{"amount":1,"ts":"2024-01-01 00:00:%02d.%03d"}`, i/10, (i%10)*100)}
	}
	const events = 200
	var first []rec
	for i := range events / 2 {
		first = append(first, event(i))
	}
	produce(t, addr, "events", first...)

	var log lockedLog
	s, err := session.New(session.Options{Stderr: &log, Config: map[string]string{
		"table.local-time-zone":                 "UTC",
		"parallelism.default":                   "1",
		"execution.checkpointing.interval":      "100 ms",
		"execution.checkpointing.timeout":       "1 s",
		"state.checkpoints.num-retained":        fmt.Sprint(retained),
		"state.checkpoints.dir":                 "s3://ckpts/outage",
		"s3.endpoint":                           srv.URL,
		"s3.path.style.access":                  "true",
		"s3.access-key":                         "k",
		"s3.secret-key":                         "s",
		"pipeline.name":                         "outage",
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "5",
		"restart-strategy.fixed-delay.delay":    "100 ms",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	run(t, s, fmt.Sprintf(`
CREATE TABLE events (amount BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'specific-offsets',
  'scan.bounded.specific-offsets' = 'partition:0,offset:%[2]d', 'format' = 'json');
CREATE TABLE totals (window_start TIMESTAMP(3), total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'totals', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'outage',
  'properties.transaction.timeout.ms' = '2000');`, addr, events))
	st, err := parser.ParseStatement(`INSERT INTO totals
SELECT window_start, SUM(amount) FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	res, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// Some windows are committed: the job runs and checkpoints.
	readAll(t, addr, "totals", 1)
	s3.mu.Lock()
	// Hold every checkpoint from the next one on: with lastPut+2 the
	// job could read the second half and end with its final checkpoint
	// lastPut+1 before any checkpoint was held (seen when the test ran
	// again in the same process, with a warm broker). Only one checkpoint
	// runs at a time, so the job cannot end while one is held.
	s3.from = s3.lastPut + 1
	s3.mu.Unlock()
	var second []rec
	for i := events / 2; i < events; i++ {
		second = append(second, event(i))
	}
	produce(t, addr, "events", second...)
	var held int
	select {
	case held = <-s3.stalled:
	case <-res.Job.Done():
		t.Fatalf("the job ended (%v) before a checkpoint's metadata write was held; log:\n%s", res.Job.Wait(ctx), log.String())
	case <-ctx.Done():
		t.Fatalf("no checkpoint metadata write reached the storage; log:\n%s", log.String())
	}
	// The outage lasts until the broker aborted the job's transactions
	// (transaction.timeout.ms = 2 s): none of them is open any more.
	awaitNoOpenTransactions(t, ctx, addr, "outage")
	close(s3.released)
	err = res.Job.Wait(ctx)
	out := readCommittedTotals(t, addr)
	t.Logf("checkpoint %d's metadata write was held past the transaction timeout; job: %v; %d windows committed; log:\n%s", held, err, len(out), log.String())
	if err != nil {
		if !strings.Contains(err.Error(), "output is lost") && !strings.Contains(err.Error(), "their records are lost") {
			t.Fatalf("the job failed without reporting lost output: %v", err)
		}
		return // reported
	}
	// Finished: then every window exactly once, with its total.
	if len(out) != events/10 {
		t.Errorf("the job finished with %d windows committed, want %d: %v", len(out), events/10, out)
	}
	for w, n := range out {
		if n != "10" {
			t.Errorf("window %s: totals %s, want one total of 10", w, n)
		}
	}
}

// awaitNoOpenTransactions waits until the broker lists no open transaction
// of the prefix.
func awaitNoOpenTransactions(t *testing.T, ctx context.Context, addr, prefix string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort"})
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, l := range listed.Sorted() {
			if strings.HasPrefix(l.TxnID, prefix+"-") && l.State == "Ongoing" {
				open++
			}
		}
		if open == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the broker did not abort the transactions of %s", prefix)
		case <-time.After(50 * time.Millisecond): // polling the broker's state: it announces nothing
		}
	}
}

// readCommittedTotals reads the committed totals: window start → the
// totals seen for it, comma separated.
func readCommittedTotals(t *testing.T, addr string) map[string]string {
	t.Helper()
	recs := readDrillOutput(t, addr, "totals", true)
	out := map[string]string{}
	for _, r := range recs {
		var v struct {
			WindowStart string `json:"window_start"`
			Total       int64  `json:"total"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("record %q: %v", r.Value, err)
		}
		if prev, ok := out[v.WindowStart]; ok {
			out[v.WindowStart] = prev + "," + fmt.Sprint(v.Total)
		} else {
			out[v.WindowStart] = fmt.Sprint(v.Total)
		}
	}
	return out
}
