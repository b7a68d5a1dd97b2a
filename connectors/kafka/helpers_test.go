package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/avro"
	"github.com/flinksql/flinksql/formats/cdc"
	"github.com/flinksql/flinksql/formats/csv"
	"github.com/flinksql/flinksql/formats/json"
	"github.com/flinksql/flinksql/formats/raw"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testTimeout bounds every wait on the broker in tests.
const testTimeout = 20 * time.Second

// startCluster starts an in-process broker on a random port with the given
// topics (name → partitions) and returns its address.
func startCluster(t testing.TB, topics map[string]int32) (*kfake.Cluster, string) {
	t.Helper()
	opts := []kfake.Opt{kfake.Ports(0)}
	for name, n := range topics {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// testRecord is a record to produce to an exact partition.
type testRecord struct {
	partition int32
	key       string // "" = null key
	value     string // "<nil>" = null value
	ts        int64  // epoch ms; 0 = now
	headers   []kgo.RecordHeader
}

const nullValue = "<nil>"

func produce(t testing.TB, addr, topic string, recs ...testRecord) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, r := range recs {
		rec := &kgo.Record{Topic: topic, Partition: r.partition, Headers: r.headers}
		if r.key != "" {
			rec.Key = []byte(r.key)
		}
		if r.value != nullValue {
			rec.Value = []byte(r.value)
		}
		if r.ts != 0 {
			rec.Timestamp = time.UnixMilli(r.ts)
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("producing %+v: %v", r, err)
		}
	}
}

// consumeAll reads n records of topic with an independent client.
func consumeAll(t testing.TB, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("consuming %s: %v", topic, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("read %d records of %s, want %d", len(out), topic, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

func formatRegistry() *formats.Registry {
	reg := formats.NewRegistry()
	reg.Register(json.NewFactory())
	reg.Register(csv.NewFactory())
	reg.Register(raw.NewFactory())
	reg.Register(cdc.NewDebezium())
	reg.Register(cdc.NewCanal())
	reg.Register(cdc.NewMaxwell())
	reg.Register(avro.NewFactory())
	return reg
}

// eventSchema is the schema of most test tables.
var eventSchema = types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}

func tableContext(addr string, physical types.Schema, opts map[string]string, meta ...connectors.MetadataColumn) *connectors.TableContext {
	all := map[string]string{"connector": "kafka", "properties.bootstrap.servers": addr}
	for k, v := range opts {
		all[k] = v
	}
	return &connectors.TableContext{
		Name: "default_catalog.default_database.t", ObjectName: "t", Options: all,
		Physical: physical, Metadata: meta, Formats: formatRegistry(),
	}
}

func metaCol(key string) connectors.MetadataColumn {
	return connectors.MetadataColumn{Name: "m_" + key, Key: key, Type: readableMetadata[key], Virtual: true}
}

// rowString renders a row as its values joined by '|'.
func rowString(kind types.RowKind, row types.Row) string {
	parts := make([]string, len(row))
	for i, v := range row {
		switch {
		case v.IsNull():
			parts[i] = "NULL"
		case v.K == types.KindMap:
			m := v.Map()
			var kv []string
			for j := range m.Keys {
				kv = append(kv, m.Keys[j].S+"="+m.Values[j].S)
			}
			parts[i] = "{" + strings.Join(kv, ",") + "}"
		case v.K == types.KindString || v.K == types.KindBytes:
			parts[i] = v.S
		default:
			parts[i] = fmt.Sprint(v.N)
		}
	}
	return kind.String() + " " + strings.Join(parts, "|")
}

// readBounded reads a bounded source's reader to its end.
func readBounded(t testing.TB, r exec.SourceReader, width int) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.Open(ctx); err != nil {
		return nil, err
	}
	defer r.Close()
	return readToEnd(t, r, width)
}

// readToEnd reads an open bounded reader to its end.
func readToEnd(t testing.TB, r exec.SourceReader, width int) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []string
	b := types.NewBatch(width, 4)
	done := map[int]bool{}
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			return out, err
		}
		if ctx.Err() != nil {
			t.Fatalf("bounded read did not end: %d rows so far", len(out))
		}
		if b.Len() > 0 && (res.Split < 0 || res.Split >= r.NumSplits()) {
			t.Fatalf("rows from split %d of %d", res.Split, r.NumSplits())
		}
		if b.Len() > 0 && done[res.Split] {
			t.Fatalf("rows from split %d after it was done", res.Split)
		}
		for i, row := range b.Rows {
			out = append(out, rowString(b.Kinds[i], row))
		}
		if res.SplitDone {
			done[res.Split] = true
		}
		if res.End {
			if len(done) != r.NumSplits() {
				t.Fatalf("end with %d of %d splits done", len(done), r.NumSplits())
			}
			return out, nil
		}
	}
}

// readN reads an unbounded reader until it produced n rows, with short
// deadlines like the runtime's.
func readN(t testing.TB, r exec.SourceReader, width, n int) []string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	var out []string
	b := types.NewBatch(width, 4)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d rows: %v", len(out), n, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		b.Reset()
		res, err := r.Read(ctx, b)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.End {
			t.Fatal("unbounded reader ended")
		}
		for i, row := range b.Rows {
			out = append(out, rowString(b.Kinds[i], row))
		}
	}
	return out
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustSource(t testing.TB, tc *connectors.TableContext) *Source {
	t.Helper()
	s, err := NewFactory().CreateSource(tc)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Source)
}

func mustSink(t testing.TB, tc *connectors.TableContext) *Sink {
	t.Helper()
	s, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Sink)
}

func errContains(err error, parts ...string) error {
	if err == nil {
		return errors.New("no error")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			return fmt.Errorf("error %q does not contain %q", err, p)
		}
	}
	return nil
}
