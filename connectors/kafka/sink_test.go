package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

// writeRows runs one writer over rows (all +I unless kinds is given).
func writeRows(t *testing.T, s *Sink, subtask, parallelism int, rows []types.Row, kinds ...types.RowKind) {
	t.Helper()
	w, err := s.NewKafkaWriter(subtask, parallelism)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	width := len(rows[0])
	b := types.NewBatch(width, 3)
	for i, row := range rows {
		kind := types.Insert
		if kinds != nil {
			kind = kinds[i]
		}
		b.AppendRow(kind, row)
		if b.Full() || i == len(rows)-1 {
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
}

func eventRow(id int, name string) types.Row {
	return types.Row{types.Int(int64(id)), types.String(name)}
}

func TestSinkPartitioners(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"fixed": 3, "rr": 3, "keyed": 3})

	// fixed: subtask i writes to partition i mod 3.
	s := mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": "fixed", "format": "json", "sink.partitioner": "fixed"}))
	for st := 0; st < 4; st++ {
		writeRows(t, s, st, 4, []types.Row{eventRow(st, "a"), eventRow(st, "b")})
	}
	got := map[string]int32{}
	for _, r := range consumeAll(t, addr, "fixed", 8) {
		got[string(r.Value)] = r.Partition
	}
	for st := 0; st < 4; st++ {
		for _, name := range []string{"a", "b"} {
			v := fmt.Sprintf(`{"id":%d,"name":"%s"}`, st, name)
			if p, ok := got[v]; !ok || p != int32(st%3) {
				t.Fatalf("%s in partition %d (found %v), want %d", v, p, ok, st%3)
			}
		}
	}

	// round-robin: 6 records over 3 partitions, 2 each.
	s = mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": "rr", "format": "json", "sink.partitioner": "round-robin"}))
	var rows []types.Row
	for i := 0; i < 6; i++ {
		rows = append(rows, eventRow(i, "x"))
	}
	writeRows(t, s, 0, 1, rows)
	perPartition := map[int32]int{}
	for _, r := range consumeAll(t, addr, "rr", 6) {
		perPartition[r.Partition]++
	}
	if fmt.Sprint(perPartition) != "map[0:2 1:2 2:2]" {
		t.Fatalf("round-robin spread %v", perPartition)
	}

	// default with a key: one key, one partition.
	s = mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": "keyed", "key.format": "json", "key.fields": "id",
		"value.format": "json", "value.fields-include": "EXCEPT_KEY"}))
	rows = nil
	for i := 0; i < 12; i++ {
		rows = append(rows, eventRow(i%3, fmt.Sprint(i)))
	}
	writeRows(t, s, 0, 1, rows)
	keyPartition := map[string]int32{}
	for _, r := range consumeAll(t, addr, "keyed", 12) {
		if p, ok := keyPartition[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		keyPartition[string(r.Key)] = r.Partition
		if string(r.Value) == "" || string(r.Value)[0] != '{' || len(r.Value) > len(`{"name":"11"}`) {
			t.Fatalf("value %q should hold only the name", r.Value)
		}
	}
	if len(keyPartition) != 3 {
		t.Fatalf("keys %v", keyPartition)
	}
}

func TestSinkTimestampAndHeaders(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"meta": 1})
	meta := []connectors.MetadataColumn{
		{Name: "ts", Key: "timestamp", Type: types.TimestampLTZType(3)},
		{Name: "offs", Key: "offset", Type: types.BigIntType, Virtual: true}, // virtual: not written, not in the row
		{Name: "hs", Key: "headers", Type: headersType},
	}
	s := mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": "meta", "format": "json"}, meta...))
	hdrs := types.MapOf([]types.Value{types.String("trace"), types.String("empty")}, []types.Value{types.Bytes([]byte("abc")), {}})
	writeRows(t, s, 0, 1, []types.Row{
		{types.Int(1), types.String("a"), types.Timestamp(1600000000123, 0), hdrs},
		{types.Int(2), types.String("b"), {}, {}},
	})
	recs := consumeAll(t, addr, "meta", 2)
	if got := recs[0].Timestamp.UnixMilli(); got != 1600000000123 {
		t.Fatalf("timestamp %d", got)
	}
	if got := fmt.Sprintf("%s=%q %s=%v", recs[0].Headers[0].Key, recs[0].Headers[0].Value, recs[0].Headers[1].Key, recs[0].Headers[1].Value == nil); got != `trace="abc" empty=true` {
		t.Fatalf("headers %s", got)
	}
	if string(recs[0].Value) != `{"id":1,"name":"a"}` {
		t.Fatalf("value %s", recs[0].Value)
	}
	// No timestamp: the producer's current time, as Kafka's CreateTime.
	if recs[1].Timestamp.UnixMilli() < 1600000000123 || len(recs[1].Headers) != 0 {
		t.Fatalf("second record %v %v", recs[1].Timestamp, recs[1].Headers)
	}
	// The sink's records read back through the source.
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{"topic": "meta", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}, metaCol("timestamp"), metaCol("headers")))
	r, _ := src.NewReader(0, 1)
	got, err := readBounded(t, r, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "+I 1|a|1600000000123|{trace=abc,empty=}" {
		t.Fatalf("read back %v", got)
	}
}

func TestSinkFinishFlushesEverything(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"many": 4})
	for _, guarantee := range []string{"at-least-once", "none"} {
		topic := "many"
		s := mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": topic, "format": "json",
			"sink.delivery-guarantee": guarantee, "properties.linger.ms": "50"}))
		if s.DeliveryGuarantee() != guarantee {
			t.Fatalf("guarantee %s", s.DeliveryGuarantee())
		}
		w, _ := s.NewKafkaWriter(0, 1)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if err := w.Open(ctx); err != nil {
			t.Fatal(err)
		}
		b := types.NewBatch(2, 100)
		for i := 0; i < 2000; i++ {
			b.AppendRow(types.Insert, eventRow(i, "row"))
			if b.Full() {
				if err := w.Write(ctx, b); err != nil {
					t.Fatal(err)
				}
				b.Reset()
			}
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		// Finish waited for every acknowledgement: the client holds nothing.
		if n := w.cl.BufferedProduceRecords(); n != 0 {
			t.Fatalf("%s: %d records still buffered after Finish", guarantee, n)
		}
		w.Close()
		cancel()
	}
	if n := len(consumeAll(t, addr, "many", 4000)); n != 4000 {
		t.Fatalf("read %d records", n)
	}
}

func TestSinkOptionErrors(t *testing.T) {
	cases := []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"topic": "a", "format": "json", "sink.delivery-guarantee": "exactly-once"},
			"sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE."},
		{map[string]string{"topic": "a", "format": "json", "sink.delivery-guarantee": "twice"},
			"Invalid value for option 'sink.delivery-guarantee'. Expected one of [at-least-once, exactly-once, none], but was: twice"},
		{map[string]string{"topic": "a", "format": "json", "sink.partitioner": "com.example.MyPartitioner"},
			"Could not find and instantiate partitioner class 'com.example.MyPartitioner'"},
		{map[string]string{"topic": "a", "key.format": "json", "key.fields": "id", "value.format": "json", "sink.partitioner": "round-robin"},
			"Currently 'round-robin' partitioner only works when option 'key.fields' is not specified."},
		{map[string]string{"topic": "a;b", "format": "json"}, "the sink writes to exactly one topic"},
		{map[string]string{"topic-pattern": "a.*", "format": "json"}, "the sink writes to exactly one topic"},
		{map[string]string{"topic": "a", "format": "json", "properties.acks": "some"},
			"Invalid value for option 'properties.acks'. Expected one of [all, -1, 0, 1], but was: some"},
		{map[string]string{"topic": "a", "format": "json", "sink.parallelism": "0"},
			"Invalid value for option 'sink.parallelism'. Expected a positive number, but was: 0"},
		{map[string]string{"topic": "a", "format": "json", "properties.security.protocol": "SASL_SSL"},
			"Only PLAINTEXT connections are supported yet"},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateSink(tableContext("127.0.0.1:1", eventSchema, c.opts))
		if e := errContains(err, c.want); e != nil {
			t.Errorf("%v: %v", c.opts, e)
		}
	}
	_, err := NewFactory().CreateSink(tableContext("127.0.0.1:1", eventSchema, map[string]string{"topic": "a", "format": "json"},
		connectors.MetadataColumn{Name: "o", Key: "offset", Type: types.BigIntType}))
	if e := errContains(err, "Invalid metadata key 'offset' in column 'o'", "for writing:\nheaders\ntimestamp"); e != nil {
		t.Fatal(e)
	}
	// The planner rejects updating queries for this mode.
	s := mustSink(t, tableContext("127.0.0.1:1", eventSchema, map[string]string{"topic": "a", "format": "json"}))
	if m := s.AcceptedChangelogMode(types.Retract); m != types.InsertOnly {
		t.Fatalf("accepted %v", m)
	}
}
