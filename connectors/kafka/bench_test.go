package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchSchema has ~200-byte JSON records.
var benchSchema = types.Schema{
	{Name: "user_id", Type: types.BigIntType},
	{Name: "item_id", Type: types.BigIntType},
	{Name: "category", Type: types.StringType},
	{Name: "behavior", Type: types.StringType},
	{Name: "price", Type: types.DoubleType},
	{Name: "ts", Type: types.TimestampType(3)},
	{Name: "note", Type: types.StringType},
}

func benchValue(i int) string {
	return fmt.Sprintf(`{"user_id":%d,"item_id":%d,"category":"electronics-%d","behavior":"purchase","price":%d.25,"ts":"2024-05-01 12:%02d:%02d.123","note":"a note long enough to make the record about two hundred bytes"}`,
		100000+i, 5000000+i%977, i%13, i%500, (i/60)%60, i%60)
}

const benchRecords = 100_000

func seedBench(b *testing.B, topic string) string {
	b.Helper()
	_, addr := startCluster(b, map[string]int32{topic: 4})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < benchRecords; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(benchValue(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return addr
}

// BenchmarkSourceDecode reads 100 000 JSON records (~200 bytes, 4
// partitions) from kfake per iteration, decoding them into rows.
func BenchmarkSourceDecode(b *testing.B) {
	addr := seedBench(b, "bench")
	src := mustSource(b, tableContext(addr, benchSchema, map[string]string{"topic": "bench", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	batch := types.NewBatch(len(benchSchema), types.DefaultBatchSize)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rows := 0
	for i := 0; i < b.N; i++ {
		r, err := src.NewReader(0, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Open(ctx); err != nil {
			b.Fatal(err)
		}
		for {
			batch.Reset()
			res, err := r.Read(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			rows += batch.Len()
			if res.End {
				break
			}
		}
		r.Close()
	}
	if rows != b.N*benchRecords {
		b.Fatalf("read %d rows, want %d", rows, b.N*benchRecords)
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkSinkProduce encodes rows as JSON and produces them to a
// 4-partition kfake topic; each iteration is one batch of 1024 rows, with
// the final flush inside the timing.
func BenchmarkSinkProduce(b *testing.B) {
	_, addr := startCluster(b, map[string]int32{"out": 4})
	s := mustSink(b, tableContext(addr, benchSchema, map[string]string{"topic": "out", "format": "json"}))
	w, err := s.NewKafkaWriter(0, 1)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	batch := types.NewBatch(len(benchSchema), types.DefaultBatchSize)
	for i := 0; i < types.DefaultBatchSize; i++ {
		batch.AppendRow(types.Insert, types.Row{types.Int(int64(100000 + i)), types.Int(int64(5000000 + i)),
			types.String(fmt.Sprintf("electronics-%d", i%13)), types.String("purchase"), types.Float(float64(i%500) + 0.25),
			types.TimestampMillis(1714565000123 + int64(i)), types.String("a note long enough to make the record about two hundred bytes")})
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Finish(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch.Len())/time.Since(start).Seconds(), "rows/s")
}

// benchDebezium is a Debezium change event of a benchSchema row: creates,
// updates (with before and after) and deletes, with a MySQL source block.
func benchDebezium(i int) string {
	src := fmt.Sprintf(`{"version":"2.7.0.Final","connector":"mysql","name":"dbserver1","ts_ms":%d,"snapshot":"false","db":"shop","table":"events","server_id":223344,"file":"mysql-bin.000003","pos":%d,"row":0}`, 1714565000000+int64(i), 154+i)
	switch i % 10 {
	case 0, 1, 2, 3, 4, 5:
		return fmt.Sprintf(`{"before":null,"after":%s,"source":%s,"op":"c","ts_ms":%d}`, benchValue(i), src, 1714565000100+int64(i))
	case 6, 7, 8:
		return fmt.Sprintf(`{"before":%s,"after":%s,"source":%s,"op":"u","ts_ms":%d}`, benchValue(i-1), benchValue(i), src, 1714565000100+int64(i))
	}
	return fmt.Sprintf(`{"before":%s,"after":null,"source":%s,"op":"d","ts_ms":%d}`, benchValue(i), src, 1714565000100+int64(i))
}

// BenchmarkSourceDecodeDebezium reads 100 000 debezium-json change events
// (60 % creates, 30 % updates, 10 % deletes; ~450-750 bytes; 4 partitions)
// from kfake per iteration into rows (an update is two rows). One reader:
// events/s is per core.
func BenchmarkSourceDecodeDebezium(b *testing.B) {
	_, addr := startCluster(b, map[string]int32{"dbz": 4})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("dbz"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < benchRecords; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(benchDebezium(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	src := mustSource(b, tableContext(addr, benchSchema, map[string]string{"topic": "dbz", "format": "debezium-json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	batch := types.NewBatch(len(benchSchema), types.DefaultBatchSize)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rows := 0
	for i := 0; i < b.N; i++ {
		r, err := src.NewReader(0, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Open(ctx); err != nil {
			b.Fatal(err)
		}
		for {
			batch.Reset()
			res, err := r.Read(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			rows += batch.Len()
			if res.End {
				break
			}
		}
		r.Close()
	}
	if want := b.N * benchRecords * 13 / 10; rows != want {
		b.Fatalf("read %d rows, want %d", rows, want)
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*benchRecords)/secs, "events/s")
	b.ReportMetric(float64(rows)/secs, "rows/s")
}
