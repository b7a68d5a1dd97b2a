package jdbc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
)

// benchRows is the size of one benchmark job.
const benchRows = 200000

// benchSink runs b.N jobs writing benchRows datagen rows (id sequence, the
// key of upserts) into a jdbc table with opts, and reports
// rows/s. 'execution.checkpointing.interval' is 10 s where given.
func benchSink(b *testing.B, upsert bool, checkpointing bool, opts string) {
	db := pgtest.NewDB(b)
	pk, pgPK := "", ""
	if upsert {
		pk, pgPK = ", PRIMARY KEY (k) NOT ENFORCED", " PRIMARY KEY"
	}
	conf := map[string]string{"table.local-time-zone": "UTC"}
	if checkpointing {
		conf["execution.checkpointing.interval"] = "10 s"
		conf["state.checkpoints.dir"] = "file://" + b.TempDir()
	}
	s := newSessionB(b, conf)
	// Every row its own key: the reduced buffer saves nothing, each row is
	// one INSERT … ON CONFLICT.
	key := "id"
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db.Exec(b, fmt.Sprintf("DROP TABLE IF EXISTS t; CREATE TABLE t (k bigint%s, id bigint, name text, amount numeric(12,2), ts timestamp(3))", pgPK))
		sql := fmt.Sprintf(`
CREATE TEMPORARY TABLE gen%[1]d (id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP(3)) WITH ('connector' = 'datagen',
  'number-of-rows' = '%[2]d', 'rows-per-second' = '100000000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '%[2]d',
  'fields.name.length' = '12');
CREATE TEMPORARY TABLE t%[1]d (k BIGINT, id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP(3)%[3]s) WITH (
  'connector' = 'jdbc', 'url' = '%[4]s', 'table-name' = 't'%[5]s);
INSERT INTO t%[1]d SELECT %[6]s, id, name, amount, ts FROM gen%[1]d;`, i, benchRows, pk, jdbcURL(db), opts, key)
		b.StartTimer()
		begin := time.Now()
		if err := execute(s, sql); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(begin)
	}
	b.ReportMetric(float64(benchRows*b.N)/elapsed.Seconds(), "rows/s")
}

func newSessionB(b *testing.B, conf map[string]string) *sessionT {
	s, err := newSessionConf(conf)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkSinkAppend(b *testing.B) {
	benchSink(b, false, false, ", 'sink.buffer-flush.max-rows' = '5000'")
}
func BenchmarkSinkAppendDefaultBuffer(b *testing.B) { benchSink(b, false, false, "") }
func BenchmarkSinkUpsert(b *testing.B) {
	benchSink(b, true, false, ", 'sink.buffer-flush.max-rows' = '5000'")
}
func BenchmarkSinkAppendAtLeastOnce10s(b *testing.B) {
	benchSink(b, false, true, ", 'sink.buffer-flush.max-rows' = '5000'")
}
func BenchmarkSinkAppendExactlyOnce10s(b *testing.B) {
	benchSink(b, false, true, ", 'sink.buffer-flush.max-rows' = '5000', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'bench'")
}
func BenchmarkSinkUpsertAtLeastOnce10s(b *testing.B) {
	benchSink(b, true, true, ", 'sink.buffer-flush.max-rows' = '5000'")
}
func BenchmarkSinkUpsertExactlyOnce10s(b *testing.B) {
	benchSink(b, true, true, ", 'sink.buffer-flush.max-rows' = '5000', 'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'bench'")
}

// benchLookup joins benchRows stream rows (keys 1…1000) against a
// 1000-row table, into a blackhole, and reports rows/s.
func benchLookup(b *testing.B, cache string) {
	db := pgtest.NewDB(b)
	db.Exec(b, "CREATE TABLE dim (id int PRIMARY KEY, name text); INSERT INTO dim SELECT i, 'name-' || i FROM generate_series(1, 1000) i")
	s := newSessionB(b, map[string]string{"table.local-time-zone": "UTC"})
	const rows = 50000
	var elapsed time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sql := fmt.Sprintf(`
CREATE TEMPORARY TABLE clicks%[1]d (id BIGINT, uid INT, proc AS PROCTIME()) WITH ('connector' = 'datagen', 'number-of-rows' = '%[2]d',
  'rows-per-second' = '100000000', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '%[2]d', 'fields.uid.min' = '1', 'fields.uid.max' = '1000');
CREATE TEMPORARY TABLE dim%[1]d (id INT, name STRING) WITH ('connector' = 'jdbc', 'url' = '%[3]s', 'table-name' = 'dim'%[4]s);
CREATE TEMPORARY TABLE out%[1]d (id BIGINT, name STRING) WITH ('connector' = 'blackhole');
INSERT INTO out%[1]d SELECT c.id, d.name FROM clicks%[1]d AS c JOIN dim%[1]d FOR SYSTEM_TIME AS OF c.proc AS d ON c.uid = d.id;`, i, rows, jdbcURL(db), cache)
		begin := time.Now()
		if err := execute(s, sql); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(begin)
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "rows/s")
}

func BenchmarkLookupNoCache(b *testing.B) { benchLookup(b, "") }
func BenchmarkLookupPartialCache(b *testing.B) {
	benchLookup(b, ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '10000'")
}
