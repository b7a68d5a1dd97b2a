package upsertkafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/json"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const testTimeout = 20 * time.Second

func startCluster(t *testing.T, topic string, partitions int32) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

var schema = types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}

func tableContext(addr string, opts map[string]string, pk ...int) *connectors.TableContext {
	reg := formats.NewRegistry()
	reg.Register(json.NewFactory())
	all := map[string]string{"connector": Identifier, "properties.bootstrap.servers": addr, "topic": "users",
		"key.format": "json", "value.format": "json"}
	for k, v := range opts {
		all[k] = v
	}
	return &connectors.TableContext{Name: "default_catalog.default_database.users", ObjectName: "users",
		Options: all, Physical: schema, PrimaryKey: pk, Formats: reg}
}

func rowString(kind types.RowKind, row types.Row) string {
	parts := make([]string, len(row))
	for i, v := range row {
		if v.IsNull() {
			parts[i] = "NULL"
		} else if v.K == types.KindString {
			parts[i] = v.S
		} else {
			parts[i] = fmt.Sprint(v.N)
		}
	}
	return kind.String() + " " + strings.Join(parts, "|")
}

func produce(t *testing.T, addr string, kvs ...[2]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, kv := range kvs {
		rec := &kgo.Record{Key: []byte(kv[0])}
		if kv[1] != "" {
			rec.Value = []byte(kv[1])
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consume returns "key=value" ("key=<tombstone>") of n records, per partition in offset order.
func consume(t *testing.T, addr string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("users"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(recs), n)
		}
		recs = append(recs, fs.Records()...)
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	var out []string
	for _, r := range recs {
		v := string(r.Value)
		if r.Value == nil {
			v = "<tombstone>"
		}
		out = append(out, string(r.Key)+"="+v)
	}
	return out
}

func TestSourceReadsChangelog(t *testing.T) {
	addr := startCluster(t, "users", 1)
	produce(t, addr,
		[2]string{`{"id":1}`, `{"id":1,"name":"ann"}`},
		[2]string{`{"id":2}`, `{"id":2,"name":"bob"}`},
		[2]string{`{"id":1}`, `{"id":1,"name":"anna"}`},
		[2]string{`{"id":2}`, ""},
		[2]string{`{"id":3}`, `{"id":3,"name":"cy"}`},
	)
	s, err := NewFactory().CreateSource(tableContext(addr, map[string]string{"scan.bounded.mode": "latest-offset"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	if s.ChangelogMode() != types.Upsert {
		t.Fatalf("changelog mode %v", s.ChangelogMode())
	}
	r, err := s.NewReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	b := types.NewBatch(2, 16)
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range b.Rows {
			got = append(got, rowString(b.Kinds[i], row))
		}
		if res.End {
			break
		}
	}
	// Values keep the value format's kind (+I), as Flink's deserializer
	// does; a tombstone is a -D holding the key and NULL elsewhere.
	want := []string{"+I 1|ann", "+I 2|bob", "+I 1|anna", "-D 2|NULL", "+I 3|cy"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func write(t *testing.T, s connectors.Sink, kinds []types.RowKind, rows []types.Row) {
	t.Helper()
	w, err := s.NewWriter(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := types.NewBatch(2, len(rows))
	for i, row := range rows {
		b.AppendRow(kinds[i], row)
	}
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

func row(id int, name string) types.Row {
	if name == "" {
		return types.Row{types.Int(int64(id)), {}}
	}
	return types.Row{types.Int(int64(id)), types.String(name)}
}

func TestSinkWritesTombstonesAndDropsUpdateBefore(t *testing.T) {
	addr := startCluster(t, "users", 1)
	s, err := NewFactory().CreateSink(tableContext(addr, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	if m := s.AcceptedChangelogMode(types.Retract); m != types.Upsert {
		t.Fatalf("accepted %v", m)
	}
	write(t, s,
		[]types.RowKind{types.Insert, types.UpdateBefore, types.UpdateAfter, types.Delete},
		[]types.Row{row(1, "a"), row(1, "a"), row(1, "b"), row(1, "b")})
	want := []string{`{"id":1}={"id":1,"name":"a"}`, `{"id":1}={"id":1,"name":"b"}`, `{"id":1}=<tombstone>`}
	if got := consume(t, addr, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestSinkBufferFlushReducesPerKey(t *testing.T) {
	addr := startCluster(t, "users", 1)
	s, err := NewFactory().CreateSink(tableContext(addr, map[string]string{
		"sink.buffer-flush.max-rows": "100", "sink.buffer-flush.interval": "1 h", "value.fields-include": "EXCEPT_KEY"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	write(t, s,
		[]types.RowKind{types.Insert, types.UpdateAfter, types.UpdateAfter, types.Insert, types.Delete},
		[]types.Row{row(1, "a"), row(1, "b"), row(1, "c"), row(2, "x"), row(2, "x")})
	// Only the last change per key, in the order the keys first appeared.
	want := []string{`{"id":1}={"name":"c"}`, `{"id":2}=<tombstone>`}
	if got := consume(t, addr, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestSinkBufferFlushAtMaxRows(t *testing.T) {
	addr := startCluster(t, "users", 1)
	s, err := NewFactory().CreateSink(tableContext(addr, map[string]string{
		"sink.buffer-flush.max-rows": "2", "sink.buffer-flush.interval": "1 h"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Keys 1 and 2 fill the buffer (flushed: 1=b, 2=x); then 1=c alone
	// until Finish.
	write(t, s,
		[]types.RowKind{types.Insert, types.UpdateAfter, types.Insert, types.UpdateAfter},
		[]types.Row{row(1, "a"), row(1, "b"), row(2, "x"), row(1, "c")})
	want := []string{`{"id":1}={"id":1,"name":"b"}`, `{"id":2}={"id":2,"name":"x"}`, `{"id":1}={"id":1,"name":"c"}`}
	if got := consume(t, addr, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestOptionErrors(t *testing.T) {
	_, err := NewFactory().CreateSource(tableContext("127.0.0.1:1", nil))
	if err == nil || err.Error() != errNoPrimaryKey.Error() {
		t.Fatalf("got %v", err)
	}
	_, err = NewFactory().CreateSink(tableContext("127.0.0.1:1", nil))
	if err == nil || !strings.HasPrefix(err.Error(), "'upsert-kafka' tables require to define a PRIMARY KEY constraint.") {
		t.Fatalf("got %v", err)
	}
	_, err = NewFactory().CreateSink(tableContext("127.0.0.1:1", map[string]string{"sink.buffer-flush.max-rows": "10"}, 0))
	if err == nil || err.Error() != "'sink.buffer-flush.max-rows' and 'sink.buffer-flush.interval' must be set to be greater than zero together to enable sink buffer flushing." {
		t.Fatalf("got %v", err)
	}
	tc := tableContext("127.0.0.1:1", nil, 0)
	delete(tc.Options, "key.format")
	_, err = NewFactory().CreateSink(tc)
	if err == nil || !strings.Contains(err.Error(), "Missing required options are:\n\nkey.format") {
		t.Fatalf("got %v", err)
	}
	_, err = NewFactory().CreateSource(tableContext("127.0.0.1:1", map[string]string{"scan.startup.mode": "earliest-offset"}, 0))
	if err == nil || !strings.Contains(err.Error(), "Unsupported options found for 'upsert-kafka'.") {
		t.Fatalf("got %v", err)
	}
	_, err = NewFactory().CreateSink(tableContext("127.0.0.1:1", map[string]string{"sink.delivery-guarantee": "exactly-once"}, 0))
	if err == nil || !strings.Contains(err.Error(), "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE.") {
		t.Fatalf("got %v", err)
	}
}

// TestSinkRefusesNullKey: an upsert-kafka sink never writes a record whose
// key (the primary key) is NULL, which no reader could apply to any row:
// the batch fails before any of it is produced, naming the column. (The
// sink's not-null enforcer stops such rows first; this is the sink's own
// guarantee.)
func TestSinkRefusesNullKey(t *testing.T) {
	addr := startCluster(t, "users", 1)
	s, err := NewFactory().CreateSink(tableContext(addr, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []types.RowKind{types.Insert, types.UpdateAfter, types.Delete} {
		w, err := s.NewWriter(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if err := w.Open(ctx); err != nil {
			t.Fatal(err)
		}
		b := types.NewBatch(2, 3)
		b.AppendRow(types.Insert, row(1, "a"))
		b.AppendRow(kind, types.Row{types.NullValue, types.String("x")})
		b.AppendRow(types.Insert, row(2, "b"))
		err = w.Write(ctx, b)
		want := "upsert-kafka table default_catalog.default_database.users: a " + kind.String() +
			" row has a NULL in primary key column 'id'; upsert-kafka never writes a record without a key"
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", kind, err, want)
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		w.Close()
		cancel()
	}
	// Nothing of the failed batches reached the topic; a marker written
	// afterwards is the first record.
	write(t, s, []types.RowKind{types.Insert}, []types.Row{row(9, "end")})
	if got := consume(t, addr, 1); fmt.Sprint(got) != `[{"id":9}={"id":9,"name":"end"}]` {
		t.Fatalf("topic holds %v, want only the marker", got)
	}
}
