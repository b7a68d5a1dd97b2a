package bench

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/monitor"
	"github.com/flinksql/flinksql/session"
)

// BenchmarkTumbleSumCountMonitored is (b) with the REST API and the
// Prometheus endpoint serving, the sampler at its 1 s default and
// /metrics scraped every second (Prometheus scrapes every 15 s by
// default): the cost of watching a job, to compare with
// BenchmarkTumbleSumCount.
func BenchmarkTumbleSumCountMonitored(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	sess, err := session.New(session.Options{Config: map[string]string{"parallelism.default": "1", "table.local-time-zone": "UTC"}})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	srv, err := monitor.Start(sess.Jobs(), monitor.Config{RESTAddress: "127.0.0.1", RESTPort: 0, PromAddress: "127.0.0.1", PromPort: 0})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
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
				if resp, err := http.Get("http://" + srv.PromAddr() + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	if _, err := sess.Execute(ctx, source(b.N)); err != nil {
		b.Fatal(err)
	}
	cpu0, wall0 := cpuTime(), time.Now()
	b.StartTimer()
	if _, err := sess.Execute(ctx, `INSERT INTO sink
SELECT CAST(k AS BIGINT), CAST(SUM(v) AS BIGINT), COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "rows/s")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "rows/cpu-s")
}
