package kafka

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// seedEvents writes 4 records to each of the 3 partitions of "events":
// partition p, offset i holds {"id": 10p+i, "name": "p<p>-<i>"} with the
// CreateTime 1000+100i.
func seedEvents(t *testing.T) string {
	t.Helper()
	_, addr := startCluster(t, map[string]int32{"events": 3})
	var recs []testRecord
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 4; i++ {
			recs = append(recs, testRecord{partition: p,
				value: fmt.Sprintf(`{"id":%d,"name":"p%d-%d"}`, int(p)*10+i, p, i), ts: int64(1000 + 100*i)})
		}
	}
	produce(t, addr, "events", recs...)
	return addr
}

// eventRows lists the rows of the given offsets per partition, sorted.
func eventRows(offsets map[int][]int) []string {
	var out []string
	for p, os := range offsets {
		for _, i := range os {
			out = append(out, fmt.Sprintf("+I %d|p%d-%d", p*10+i, p, i))
		}
	}
	return sorted(out)
}

func readAllSubtasks(t *testing.T, src *Source, width int) ([]string, error) {
	t.Helper()
	r, err := src.NewReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readBounded(t, r, width)
	return sorted(rows), err
}

func commitGroup(t *testing.T, addr, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	os := kadm.Offsets{}
	for p, o := range offsets {
		os.AddOffset(topic, p, o, -1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestStartupAndBoundedModes(t *testing.T) {
	addr := seedEvents(t)
	commitGroup(t, addr, "g1", "events", map[int32]int64{0: 1, 1: 3, 2: 4})
	all := []int{0, 1, 2, 3}
	cases := []struct {
		name string
		opts map[string]string
		want map[int][]int
	}{
		{"earliest to latest", map[string]string{"scan.startup.mode": "earliest-offset"},
			map[int][]int{0: all, 1: all, 2: all}},
		{"latest to latest is empty", map[string]string{"scan.startup.mode": "latest-offset"}, nil},
		{"group offsets", map[string]string{"scan.startup.mode": "group-offsets", "properties.group.id": "g1"},
			map[int][]int{0: {1, 2, 3}, 1: {3}}},
		{"group offsets is the default mode", map[string]string{"properties.group.id": "g1"},
			map[int][]int{0: {1, 2, 3}, 1: {3}}},
		{"group without commits falls back to earliest",
			map[string]string{"scan.startup.mode": "group-offsets", "properties.group.id": "none-yet", "properties.auto.offset.reset": "earliest"},
			map[int][]int{0: all, 1: all, 2: all}},
		{"timestamp", map[string]string{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1150"},
			map[int][]int{0: {2, 3}, 1: {2, 3}, 2: {2, 3}}},
		{"timestamp after every record", map[string]string{"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "99999"}, nil},
		{"specific offsets, unlisted partition from earliest",
			map[string]string{"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:3;partition:2,offset:1"},
			map[int][]int{0: {3}, 1: all, 2: {1, 2, 3}}},
		{"specific offsets, unlisted partition from the group",
			map[string]string{"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:3", "properties.group.id": "g1"},
			map[int][]int{0: {3}, 1: {3}}},
		{"bounded by timestamp",
			map[string]string{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "1250"},
			map[int][]int{0: {0, 1, 2}, 1: {0, 1, 2}, 2: {0, 1, 2}}},
		{"bounded by specific offsets",
			map[string]string{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "specific-offsets",
				"scan.bounded.specific-offsets": "partition:0,offset:2;partition:1,offset:0;partition:2,offset:4"},
			map[int][]int{0: {0, 1}, 2: all}},
		{"bounded by group offsets",
			map[string]string{"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "group-offsets", "properties.group.id": "g1"},
			map[int][]int{0: {0}, 1: {0, 1, 2}, 2: all}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]string{"topic": "events", "format": "json"}
			if _, ok := tc.opts["scan.bounded.mode"]; !ok {
				opts["scan.bounded.mode"] = "latest-offset"
			}
			for k, v := range tc.opts {
				opts[k] = v
			}
			src := mustSource(t, tableContext(addr, eventSchema, opts))
			if !src.Bounded() {
				t.Fatal("source with a bounded mode is not bounded")
			}
			got, err := readAllSubtasks(t, src, 2)
			if err != nil {
				t.Fatal(err)
			}
			if want := eventRows(tc.want); !equalStrings(got, want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
		})
	}
}

func TestGroupOffsetsWithoutCommitFails(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "properties.group.id": "nobody", "scan.bounded.mode": "latest-offset"}))
	_, err := readAllSubtasks(t, src, 2)
	if e := errContains(err, "events-0", "no committed offset", "'nobody'", "properties.auto.offset.reset"); e != nil {
		t.Fatal(e)
	}
}

func TestLatestReadsOnlyNewRecords(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "latest-offset"}))
	if src.Bounded() {
		t.Fatal("unbounded source says bounded")
	}
	r, err := src.NewKafkaReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	produce(t, addr, "events", testRecord{partition: 1, value: `{"id":99,"name":"new"}`})
	got := readN(t, r, 2, 1)
	if want := []string{"+I 99|new"}; !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	want := map[TopicPartition]int64{{"events", 0}: 4, {"events", 1}: 5, {"events", 2}: 4}
	if got := r.Offsets(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}

func TestBoundedLatestIgnoresLaterRecords(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	r, err := src.NewKafkaReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Written after the reader fixed its stop offsets: not part of the read.
	produce(t, addr, "events", testRecord{partition: 0, value: `{"id":99,"name":"late"}`})
	got, err := readToEnd(t, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3}
	if want := eventRows(map[int][]int{0: all, 1: all, 2: all}); !equalStrings(sorted(got), want) {
		t.Fatalf("got %v, want %v", sorted(got), want)
	}
}

func TestRestoreOffsets(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	r, _ := src.NewKafkaReader(0, 1)
	r.RestoreOffsets(map[TopicPartition]int64{{"events", 0}: 3, {"events", 2}: 4})
	got, err := readBounded(t, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := eventRows(map[int][]int{0: {3}, 1: {0, 1, 2, 3}}); !equalStrings(sorted(got), want) {
		t.Fatalf("got %v, want %v", sorted(got), want)
	}
	want := map[TopicPartition]int64{{"events", 0}: 4, {"events", 1}: 4, {"events", 2}: 4}
	if got := r.Offsets(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}
}

func TestMetadataColumns(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"m": 2})
	produce(t, addr, "m",
		testRecord{partition: 1, value: `{"id":1,"name":"a"}`, ts: 1700000000123,
			headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: []byte("v2")}}},
		testRecord{partition: 1, value: `{"id":2,"name":"b"}`, ts: 1700000000456},
	)
	meta := []connectors.MetadataColumn{metaCol("topic"), metaCol("partition"), metaCol("offset"),
		metaCol("timestamp"), metaCol("timestamp-type"), metaCol("headers"), metaCol("leader-epoch")}
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "m", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}, meta...))
	r, _ := src.NewReader(0, 1)
	got, err := readBounded(t, r, 2+len(meta))
	if err != nil {
		t.Fatal(err)
	}
	// kfake's partitions start at leader epoch 0.
	want := []string{
		"+I 1|a|m|1|0|1700000000123|CreateTime|{h1=v1,h2=v2}|0",
		"+I 2|b|m|1|1|1700000000456|CreateTime|{}|0",
	}
	if !equalStrings(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestKeyFieldsExceptKey(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"kv": 1})
	produce(t, addr, "kv",
		testRecord{key: `{"id":7}`, value: `{"name":"x","cnt":3}`},
		testRecord{key: `{"id":8}`, value: `{"name":"y"}`},
	)
	schema := types.Schema{{Name: "k_id", Type: types.IntType}, {Name: "name", Type: types.StringType}, {Name: "cnt", Type: types.IntType}}
	src := mustSource(t, tableContext(addr, schema, map[string]string{
		"topic": "kv", "key.format": "json", "key.fields": "k_id", "key.fields-prefix": "k_",
		"value.format": "json", "value.fields-include": "EXCEPT_KEY",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	r, _ := src.NewReader(0, 1)
	got, err := readBounded(t, r, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"+I 7|x|3", "+I 8|y|NULL"}; !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestKeyFieldsAllValueFields(t *testing.T) {
	// With value.fields-include ALL the value holds every column and wins
	// over the key, as in Flink's output projection.
	_, addr := startCluster(t, map[string]int32{"kv": 1})
	produce(t, addr, "kv", testRecord{key: `{"id":7}`, value: `{"id":70,"name":"x"}`})
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "kv", "key.format": "json", "key.fields": "id", "value.format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	r, _ := src.NewReader(0, 1)
	got, err := readBounded(t, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"+I 70|x"}; !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTopicListAndPattern(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"a": 1, "b": 2, "c": 1})
	produce(t, addr, "a", testRecord{value: `{"id":1,"name":"a"}`})
	produce(t, addr, "b", testRecord{partition: 1, value: `{"id":2,"name":"b"}`})
	produce(t, addr, "c", testRecord{value: `{"id":3,"name":"c"}`})
	meta := metaCol("topic")
	for _, opts := range []map[string]string{{"topic": "a;b"}, {"topic-pattern": "a|b"}, {"topic-pattern": "[ab]"}} {
		opts["format"] = "json"
		opts["scan.startup.mode"] = "earliest-offset"
		opts["scan.bounded.mode"] = "latest-offset"
		src := mustSource(t, tableContext(addr, eventSchema, opts, meta))
		r, _ := src.NewKafkaReader(0, 1)
		got, err := readBounded(t, r, 3)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"+I 1|a|a", "+I 2|b|b"}; !equalStrings(sorted(got), want) {
			t.Fatalf("%v: got %v, want %v", opts, got, want)
		}
		if got := fmt.Sprint(r.Partitions()); got != "[a-0 b-0 b-1]" {
			t.Fatalf("%v: partitions %s", opts, got)
		}
	}
}

func TestPartitionDiscovery(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"grow": 1})
	produce(t, addr, "grow", testRecord{value: `{"id":1,"name":"first"}`})
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "grow", "format": "json", "scan.startup.mode": "earliest-offset",
		"scan.topic-partition-discovery.interval": "50 ms"}, metaCol("partition")))
	r, _ := src.NewKafkaReader(0, 1)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := readN(t, r, 3, 1); !equalStrings(got, []string{"+I 1|first|0"}) {
		t.Fatalf("got %v", got)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addr))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreatePartitions(ctx, 1, "grow"); err != nil {
		t.Fatal(err)
	}
	// Records written to the new partition before it is discovered are read
	// too: discovered partitions start at the earliest offset.
	produce(t, addr, "grow", testRecord{partition: 1, value: `{"id":2,"name":"second"}`})
	if got := readN(t, r, 3, 1); !equalStrings(got, []string{"+I 2|second|1"}) {
		t.Fatalf("got %v", got)
	}
	if n := r.NumSplits(); n != 2 {
		t.Fatalf("NumSplits = %d, want 2", n)
	}
}

func TestBadRecord(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"bad": 2})
	produce(t, addr, "bad",
		testRecord{partition: 1, value: `{"id":1,"name":"ok"}`},
		testRecord{partition: 1, value: `{"id":2,"name":"broken` + strings.Repeat("x", 150)},
		testRecord{partition: 1, value: `{"id":3,"name":"ok too"}`},
	)
	opts := map[string]string{"topic": "bad", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}
	src := mustSource(t, tableContext(addr, eventSchema, opts))
	r, _ := src.NewReader(0, 1)
	_, err := readBounded(t, r, 2)
	if e := errContains(err, "topic 'bad'", "partition 1", "offset 1", `"{\"id\":2,\"name\":\"broken`, "(first 100 of 172 bytes)"); e != nil {
		t.Fatal(e)
	}

	opts["json.ignore-parse-errors"] = "true"
	src = mustSource(t, tableContext(addr, eventSchema, opts))
	r, _ = src.NewReader(0, 1)
	got, err := readBounded(t, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"+I 1|ok", "+I 3|ok too"}; !equalStrings(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if n := src.SkippedRecords().Load(); n != 1 {
		t.Fatalf("skipped %d records, want 1", n)
	}
}

func TestMissingTopicAndUnreachableBroker(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"exists": 1})
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{"topic": "exists;nope", "format": "json",
		"scan.startup.mode": "earliest-offset"}))
	r, _ := src.NewReader(0, 1)
	start := time.Now()
	err := r.Open(context.Background())
	r.Close()
	if e := errContains(err, "Topic 'nope' does not exist in the Kafka cluster at "+addr); e != nil {
		t.Fatal(e)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("missing topic took %s", d)
	}

	c2, dead := startCluster(t, nil)
	c2.Close() // nothing listens there any more
	src = mustSource(t, tableContext(dead, eventSchema, map[string]string{"topic": "x", "format": "json",
		"scan.startup.mode": "earliest-offset", "properties.request.timeout.ms": "500"}))
	r, _ = src.NewReader(0, 1)
	start = time.Now()
	err = r.Open(context.Background())
	r.Close()
	if e := errContains(err, "Kafka cluster at "+dead, "within 500ms"); e != nil {
		t.Fatal(e)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("unreachable broker took %s", d)
	}
}

func TestSplitsOverSubtasks(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"t": 3})
	for p := int32(0); p < 3; p++ {
		produce(t, addr, "t", testRecord{partition: p, value: fmt.Sprintf(`{"id":%d,"name":"p%d"}`, p, p)})
	}
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{"topic": "t", "format": "json",
		"scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	// Java's "t".hashCode() is 116; 116*31 = 3596 is even, so with 2
	// subtasks partition p goes to subtask p mod 2.
	want := [][]string{{"+I 0|p0", "+I 2|p2"}, {"+I 1|p1"}}
	wantParts := []string{"[t-0 t-2]", "[t-1]"}
	for st := 0; st < 2; st++ {
		r, _ := src.NewKafkaReader(st, 2)
		got, err := readBounded(t, r, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !equalStrings(sorted(got), want[st]) {
			t.Fatalf("subtask %d: got %v, want %v", st, got, want[st])
		}
		if got := fmt.Sprint(r.Partitions()); got != wantParts[st] {
			t.Fatalf("subtask %d: partitions %s, want %s", st, got, wantParts[st])
		}
	}
	// A subtask without partitions ends at once in bounded mode.
	r, _ := src.NewKafkaReader(3, 4)
	got, err := readBounded(t, r, 2)
	if err != nil || len(got) != 0 || r.NumSplits() != 0 {
		t.Fatalf("subtask 3 of 4: %v %v (%d splits)", got, err, r.NumSplits())
	}
}

func TestSplitOwnerMatchesFlink(t *testing.T) {
	// Hand-worked: "events".hashCode() = -1291329255; times 31 is
	// -40 031 206 905, which wraps (+10*2^32) to 2 918 466 055, an int32 of
	// -1 376 501 241; & 0x7fffffff = 770 982 407, whose digits sum to 44, so
	// mod 3 = 2: partition 0 → subtask 2, 1 → 0, 2 → 1.
	if h := javaStringHash("events"); h != -1291329255 {
		t.Fatalf("hash = %d", h)
	}
	for p, want := range []int{2, 0, 1} {
		if got := splitOwner(TopicPartition{"events", int32(p)}, 3); got != want {
			t.Fatalf("partition %d owner %d, want %d", p, got, want)
		}
	}
}

func TestSourceOptionErrors(t *testing.T) {
	cases := []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"topic": "a", "topic-pattern": "a.*", "format": "json"}, "Option 'topic' and 'topic-pattern' shouldn't be set together."},
		{map[string]string{"format": "json"}, "Either 'topic' or 'topic-pattern' must be set."},
		{map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "timestamp"},
			"'scan.startup.timestamp-millis' is required in 'timestamp' startup mode but missing."},
		{map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset"},
			"Invalid properties 'scan.startup.specific-offsets' should follow the format 'partition:0,offset:42;partition:1,offset:300', but is 'partition:0,offset'."},
		{map[string]string{"topic": "a;b", "format": "json", "scan.bounded.mode": "specific-offsets", "scan.bounded.specific-offsets": "partition:0,offset:1"},
			"Currently Kafka source only supports specific offset for single topic."},
		{map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "first"},
			"Invalid value for option 'scan.startup.mode'. Expected one of [earliest-offset, latest-offset, group-offsets, timestamp, specific-offsets], but was: first"},
		{map[string]string{"topic": "a", "format": "json"}, "Property group.id is required when using committed offset for offsets initializer"},
		{map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset", "properties.isolation.level": "dirty"},
			"Invalid value for option 'properties.isolation.level'. Expected one of [read_committed, read_uncommitted], but was: dirty"},
		{map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bogus": "1"}, "Unsupported options found for 'kafka'."},
		{map[string]string{"topic": "a", "format": "json", "key.fields": "id", "scan.startup.mode": "earliest-offset"},
			"The option 'key.fields' can only be declared if a key format is defined using 'key.format'."},
		{map[string]string{"topic": "a", "value.format": "json", "key.format": "json", "scan.startup.mode": "earliest-offset"},
			"A key format 'key.format' requires the declaration of one or more of key fields using 'key.fields'."},
		{map[string]string{"topic": "a", "value.format": "json", "key.format": "json", "key.fields": "nope", "scan.startup.mode": "earliest-offset"},
			"Could not find the field 'nope' in the table schema for usage in the key format."},
		{map[string]string{"topic": "a", "value.format": "json", "key.format": "json", "key.fields": "id", "key.fields-prefix": "k_", "scan.startup.mode": "earliest-offset"},
			"All fields in 'key.fields' must be prefixed with 'k_' when option 'key.fields-prefix' is set but field 'id' is not prefixed."},
		{map[string]string{"topic": "a", "value.format": "json", "key.format": "json", "key.fields": "id", "key.fields-prefix": "i", "scan.startup.mode": "earliest-offset"},
			"A key prefix is not allowed when option 'value.fields-include' is set to 'ALL'."},
		{map[string]string{"topic": "a", "scan.startup.mode": "earliest-offset"}, "Could not find required scan format 'value.format'."},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateSource(tableContext("127.0.0.1:1", eventSchema, c.opts))
		if e := errContains(err, c.want); e != nil {
			t.Errorf("%v: %v", c.opts, e)
		}
	}
	// Unknown client properties are refused: TestUnknownClientPropertiesRefused.
	// Unknown metadata keys name the supported ones.
	_, err := NewFactory().CreateSource(tableContext("127.0.0.1:1", eventSchema, map[string]string{
		"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset"},
		connectors.MetadataColumn{Name: "x", Key: "key", Type: types.StringType}))
	if e := errContains(err, "Invalid metadata key 'key' in column 'x'", "topic\npartition\nheaders\nleader-epoch\noffset\ntimestamp\ntimestamp-type"); e != nil {
		t.Fatal(e)
	}
	// A primary key needs an upsert format.
	tc := tableContext("127.0.0.1:1", eventSchema, map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset"})
	tc.PrimaryKey = []int{0}
	_, err = NewFactory().CreateSource(tc)
	if e := errContains(err, "with 'json' format doesn't support defining PRIMARY KEY constraint"); e != nil {
		t.Fatal(e)
	}
}
