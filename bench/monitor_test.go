package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/monitor"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
)

// The Monitored benchmarks are (a), (b) and (c) with the REST API and the
// Prometheus endpoint serving, the sampler at its 1 s default, and every
// second a scrape of /metrics plus the requests of an open dashboard
// (/jobs/overview, /jobs/:id, /jobs/:id/operators; Prometheus itself
// scrapes every 15 s by default): the cost of watching a job, to compare
// with the same benchmark without "Monitored". The "scrapes" metric is
// the number of scrape rounds, for the callgrind figures in BENCHMARKS.md
// (instructions per round).
func BenchmarkFilterProjectMonitored(b *testing.B)  { runMonitored(b, filterProjectSQL) }
func BenchmarkTumbleSumCountMonitored(b *testing.B) { runMonitored(b, tumbleSumCountSQL) }
func BenchmarkHopCountMonitored(b *testing.B)       { runMonitored(b, hopCountSQL) }

// monitoredSession is a session of one subtask per operator with the REST
// API and the Prometheus endpoint serving on free loopback ports, both
// closed when the benchmark ends.
func monitoredSession(b *testing.B) (*session.Session, *monitor.Server) {
	b.Helper()
	sess, err := session.New(session.Options{Config: map[string]string{"parallelism.default": "1", "table.local-time-zone": "UTC"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	srv, err := monitor.Start(sess.Jobs(), monitor.Config{RESTAddress: "127.0.0.1", RESTPort: 0, PromAddress: "127.0.0.1", PromPort: 0})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close) // runs first: no request reaches a closing session
	return sess, srv
}

func runMonitored(b *testing.B, insert string) {
	b.StopTimer()
	ctx := context.Background()
	sess, srv := monitoredSession(b)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var scrapes int
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				scrapeRound("http://"+srv.RESTAddr(), "http://"+srv.PromAddr())
				scrapes++
			}
		}
	}()
	if _, err := sess.Execute(ctx, source(b.N)); err != nil {
		b.Fatal(err)
	}
	cpu0, wall0 := cpuTime(), time.Now()
	b.StartTimer()
	_, err := sess.Execute(ctx, insert)
	b.StopTimer()
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(scrapes), "scrapes")
}

// scrapeRound reads /metrics and what the dashboard's job page reads.
// Failures only make a round cheaper; the benchmark does not check them.
func scrapeRound(rest, prom string) {
	get := func(url string) []byte {
		resp, err := http.Get(url)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return body
	}
	get(prom + "/metrics")
	var list struct {
		Jobs []struct{ ID string } `json:"jobs"`
	}
	_ = json.Unmarshal(get(rest+"/jobs"), &list)
	get(rest + "/jobs/overview")
	for _, j := range list.Jobs {
		get(rest + "/jobs/" + j.ID)
		get(rest + "/jobs/" + j.ID + "/operators")
	}
}

// BenchmarkScrapeRound is the cost of one monitoring round (see
// scrapeRound) while (b)'s pipeline runs, client and server together: one
// op is one round. CPU-seconds per round over one second is the share of
// a core that watching a job takes at a round a second; unlike the
// pipeline benchmarks it does not need to resolve a few percent of a long
// run.
func BenchmarkScrapeRound(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	sess, srv := monitoredSession(b)
	// An unbounded, slow source keeps the job and its state alive without
	// taking the CPU the rounds are measured on.
	if _, err := sess.Execute(ctx, strings.Replace(source(1e9), "'rows-per-second' = '1000000000'", "'rows-per-second' = '10000'", 1)); err != nil {
		b.Fatal(err)
	}
	stmts, err := parser.ParseScript(tumbleSumCountSQL)
	if err != nil {
		b.Fatal(err)
	}
	res, err := sess.ExecuteStatement(ctx, stmts[0]) // returns with the job running
	if err != nil || res.Job == nil {
		b.Fatalf("starting the job: %v", err)
	}
	defer res.Job.Stop()
	rest, prom := "http://"+srv.RESTAddr(), "http://"+srv.PromAddr()
	scrapeRound(rest, prom) // the first round sets up connections
	cpu0 := cpuTime()
	b.StartTimer()
	for range b.N {
		scrapeRound(rest, prom)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/round")
}
