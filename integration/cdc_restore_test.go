package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/connectors/kafka"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// flakyKafka is the kafka connector whose readers fail once, after
// failAfter rows in total and once ready() (a checkpoint completed); until
// ready they hold back further rows (empty reads), so the failure comes
// after a checkpoint however fast the topic is read.
type flakyKafka struct {
	*kafka.Factory
	failAfter int64
	ready     func() bool
	read      atomic.Int64
	failed    atomic.Bool
}

func (f *flakyKafka) Identifier() string { return "flaky-kafka" }

func (f *flakyKafka) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	inner := *tc
	inner.Options = map[string]string{}
	for k, v := range tc.Options {
		inner.Options[k] = v
	}
	inner.Options["connector"] = "kafka"
	src, err := f.Factory.CreateSource(&inner)
	if err != nil {
		return nil, err
	}
	return &flakyKafkaSource{Source: src.(*kafka.Source), f: f}, nil
}

type flakyKafkaSource struct {
	*kafka.Source
	f *flakyKafka
}

func (s *flakyKafkaSource) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r, err := s.Source.NewKafkaReader(subtask, parallelism)
	if err != nil {
		return nil, err
	}
	return &flakyKafkaReader{Reader: r, f: s.f}, nil
}

type flakyKafkaReader struct {
	*kafka.Reader
	f *flakyKafka
}

func (r *flakyKafkaReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	f := r.f
	if !f.failed.Load() && f.read.Load() >= f.failAfter {
		if !f.ready() {
			return exec.ReadResult{Split: -1}, nil // hold back until a checkpoint completed
		}
		if f.failed.CompareAndSwap(false, true) {
			return exec.ReadResult{Split: -1}, fmt.Errorf("injected failure after %d rows", f.failAfter)
		}
	}
	res, err := r.Reader.Read(ctx, b)
	f.read.Add(int64(b.Len()))
	return res, err
}

// TestDebeziumKafkaSurvivesRestore: 3 700 Debezium change events (creates,
// updates of the weight, updates that move a product to another category,
// deletes) on two partitions, read as a changelog, aggregated per category
// and written to upsert-kafka; the source fails once after 1 500 rows and a
// completed checkpoint, and the job restarts from it. The last value per
// category must be what the same GROUP BY gives over the final table,
// computed here from the events: a restore that re-read or skipped events
// would count them twice or not at all.
func TestDebeziumKafkaSurvivesRestore(t *testing.T) {
	const n = 2000
	addr := startBroker(t, map[string]int32{"dbz-restore": 2, "dbz-restore-out-hashmap": 1, "dbz-restore-out-rocksdb": 1})
	type prod struct{ cat, w int }
	table := map[int]prod{}
	var recs []rec
	emit := func(op string, id int, before, after *prod) {
		enc := func(p *prod) string {
			if p == nil {
				return ""
			}
			return fmt.Sprintf(`{"id":%d,"category":"c%d","weight":%d}`, id, p.cat, p.w)
		}
		recs = append(recs, rec{partition: int32(id % 2), key: fmt.Sprintf(`{"id":%d}`, id), value: debeziumEvent(op, enc(before), enc(after), 1700000000000+int64(len(recs)))})
	}
	for id := 0; id < n; id++ {
		p := prod{cat: id % 5, w: 1}
		table[id] = p
		emit("c", id, nil, &p)
	}
	for id := 0; id < n; id += 2 {
		old, p := table[id], table[id]
		p.w = 2
		table[id] = p
		emit("u", id, &old, &p)
	}
	for id := 0; id < n; id += 4 {
		old, p := table[id], table[id]
		p.cat = (p.cat + 1) % 5
		table[id] = p
		emit("u", id, &old, &p)
	}
	for id := 9; id < n; id += 10 {
		old := table[id]
		delete(table, id)
		emit("d", id, &old, nil)
	}
	produce(t, addr, "dbz-restore", recs...)
	type agg struct{ n, w int }
	want := map[string]agg{}
	for _, p := range table {
		a := want[fmt.Sprintf("c%d", p.cat)]
		a.n++
		a.w += p.w
		want[fmt.Sprintf("c%d", p.cat)] = a
	}

	for _, backend := range []string{"hashmap", "rocksdb"} {
		t.Run(backend, func(t *testing.T) {
			var completed atomic.Bool
			f := &flakyKafka{Factory: kafka.NewFactory(), failAfter: 1500, ready: completed.Load}
			reg := builtin.NewRegistry(os.Stdout, os.Stderr)
			reg.Register(f)
			dir := t.TempDir()
			log := &lockedBuffer{t: t, completed: &completed}
			s, err := session.New(session.Options{Registry: reg, Stderr: log, Config: map[string]string{
				"table.local-time-zone":                 "UTC",
				"parallelism.default":                   "2",
				"execution.checkpointing.interval":      "20 ms",
				"state.checkpoints.dir":                 filepath.Join(dir, "checkpoints"),
				"state.backend.type":                    backend,
				"restart-strategy.type":                 "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "3",
				"restart-strategy.fixed-delay.delay":    "10 ms",
				"pipeline.name":                         "dbz-restore-" + backend,
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			topic := "dbz-restore-out-" + backend
			run(t, s, fmt.Sprintf(`
CREATE TABLE products (id INT, category STRING, weight INT) WITH (
  'connector' = 'flaky-kafka', 'topic' = 'dbz-restore', 'properties.bootstrap.servers' = '%[1]s',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'value.format' = 'debezium-json');
CREATE TABLE totals (category STRING, n BIGINT, weight INT, PRIMARY KEY (category) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '%[2]s', 'properties.bootstrap.servers' = '%[1]s',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT category, COUNT(*), SUM(weight) FROM products GROUP BY category;`, addr, topic))
			if !f.failed.Load() {
				t.Fatal("the failure after a completed checkpoint was never injected")
			}
			if !strings.Contains(log.String(), "from checkpoint") {
				t.Fatal("the job did not restart from a checkpoint; the test proves nothing")
			}
			last := map[string]agg{}
			for _, r := range readAllUntilQuiet(t, addr, topic) {
				var k struct{ Category string }
				if err := json.Unmarshal(r.Key, &k); err != nil {
					t.Fatal(err)
				}
				if r.Value == nil {
					delete(last, k.Category)
					continue
				}
				var v struct {
					N      int
					Weight int
				}
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatal(err)
				}
				last[k.Category] = agg{v.N, v.Weight}
			}
			if fmt.Sprint(sortedAggs(last)) != fmt.Sprint(sortedAggs(want)) {
				t.Errorf("last value per category = %v, want %v", sortedAggs(last), sortedAggs(want))
			}
		})
	}
}

func sortedAggs[V any](m map[string]V) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(out)
	return out
}
