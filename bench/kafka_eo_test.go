package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 6: the windowed Kafka → Kafka pipeline with each delivery guarantee,
// checkpoints every 10 s:
//
//	go test ./bench -run '^$' -bench 'KafkaTumbleDelivery' -benchtime 6000000x
func tumbleDelivery(b *testing.B, guarantee string) {
	extra := ""
	if guarantee == "exactly-once" {
		extra = `, 'sink.transactional-id-prefix' = 'bench-eo', 'properties.transaction.timeout.ms' = '600000'`
	}
	runKafkaPipeline(b, fmt.Sprintf(`
CREATE TABLE sink (window_start TIMESTAMP(3), k INT, s BIGINT, c BIGINT) WITH (
  'connector' = 'kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{addr}', 'format' = 'json',
  'sink.delivery-guarantee' = '%s'%s
);`, guarantee, extra),
		`INSERT INTO sink
SELECT window_start, k, CAST(SUM(v) AS BIGINT), COUNT(*)
FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, k;`,
		func(n int) int {
			groups := map[[2]int]struct{}{}
			for i := 0; i < n; i++ {
				k, _, _ := kafkaRecord(i)
				groups[[2]int{i / 100_000, k}] = struct{}{}
			}
			return len(groups)
		},
		"execution.checkpointing.interval", "10 s",
		// The transaction timeout (10 min) must outlive interval + timeout + restart delay.
		"execution.checkpointing.timeout", "1 min",
		"state.checkpoints.dir", b.TempDir(),
		"pipeline.name", "bench-"+guarantee)
}

func BenchmarkKafkaTumbleDeliveryNone(b *testing.B)        { tumbleDelivery(b, "none") }
func BenchmarkKafkaTumbleDeliveryAtLeastOnce(b *testing.B) { tumbleDelivery(b, "at-least-once") }
func BenchmarkKafkaTumbleDeliveryExactlyOnce(b *testing.B) { tumbleDelivery(b, "exactly-once") }

// Visibility latency of exactly-once output: records are produced at a steady
// rate with their send time, a pass-through pipeline writes them to an
// exactly-once sink, and a read_committed consumer records how long after
// sending each became visible. Visibility waits for the checkpoint that
// covers a record, so p50 is about half an interval and p99 about one.
//
//	go test ./bench -run '^$' -bench 'KafkaVisibility' -benchtime 1x
func visibility(b *testing.B, interval time.Duration) {
	const rate = 5000 // records per second
	run := 4 * interval
	if run < 15*time.Second {
		run = 15 * time.Second
	}
	child := startBrokerChild(b)
	ctx, cancel := context.WithTimeout(context.Background(), run+2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(child.addr))
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 4, -1, nil, "lat_in", "lat_out"); err != nil {
		b.Fatal(err)
	}
	sess, err := session.New(session.Options{Config: map[string]string{
		"parallelism.default":              "1",
		"execution.checkpointing.interval": interval.String(),
		"execution.checkpointing.timeout":  "1 min",
		"state.checkpoints.dir":            b.TempDir(),
		"pipeline.name":                    "bench-visibility",
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	r, err := sess.Execute(ctx, fmt.Sprintf(`
CREATE TABLE lat_in (id BIGINT, sent BIGINT) WITH ('connector' = 'kafka', 'topic' = 'lat_in',
  'properties.bootstrap.servers' = '%[1]s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE lat_out (id BIGINT, sent BIGINT) WITH ('connector' = 'kafka', 'topic' = 'lat_out',
  'properties.bootstrap.servers' = '%[1]s', 'format' = 'json', 'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = 'bench-lat', 'properties.transaction.timeout.ms' = '600000');`, child.addr))
	if err != nil || len(r) != 2 {
		b.Fatal(err)
	}
	st := mustParse(b, `INSERT INTO lat_out SELECT id, sent FROM lat_in`)
	res, err := sess.ExecuteStatement(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Job.Stop()

	// The consumer records latencies until it has seen every record sent.
	cons, err := kgo.NewClient(kgo.SeedBrokers(child.addr), kgo.ConsumeTopics("lat_out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(child.addr), kgo.DefaultProduceTopic("lat_in"))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()

	var sent int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the producer: rate records per second for run
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for time.Since(start) < run {
			<-tick.C
			due := int(time.Since(start).Seconds() * rate)
			for ; sent < due; sent++ {
				now := time.Now().UnixMicro()
				prod.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, `{"id":%d,"sent":%d}`, sent, now)}, nil)
			}
		}
		_ = prod.Flush(ctx)
	}()
	var lat []time.Duration
	total := int(run.Seconds() * rate)
	for len(lat) < total && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		now := time.Now().UnixMicro()
		fs.EachRecord(func(rec *kgo.Record) {
			// {"id":N,"sent":T}
			v := string(rec.Value)
			i := len(v) - 1
			j := i
			for j > 0 && v[j-1] != ':' {
				j--
			}
			t, _ := strconv.ParseInt(v[j:i], 10, 64)
			lat = append(lat, time.Duration(now-t)*time.Microsecond)
		})
	}
	wg.Wait()
	if len(lat) == 0 {
		b.Fatal("nothing became visible")
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	b.ReportMetric(p(0.5).Seconds()*1000, "p50-ms")
	b.ReportMetric(p(0.99).Seconds()*1000, "p99-ms")
	b.ReportMetric(float64(len(lat)), "records")
}

func BenchmarkKafkaVisibility1s(b *testing.B)  { visibility(b, time.Second) }
func BenchmarkKafkaVisibility10s(b *testing.B) { visibility(b, 10*time.Second) }

func mustParse(b *testing.B, sql string) parser.Statement {
	b.Helper()
	st, err := parser.ParseStatement(sql)
	if err != nil {
		b.Fatal(err)
	}
	return st
}
