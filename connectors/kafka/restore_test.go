package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminClient is a kadm client on its own connection, closed with the test.
func adminClient(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createPartitions(t testing.TB, adm *kadm.Client, add int, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := adm.CreatePartitions(ctx, add, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("adding %d partitions to %s: %v", add, topic, err)
	}
}

func createTopic(t testing.TB, adm *kadm.Client, partitions int32, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}

// snapshotAndClose takes the reader's checkpointed position and closes it,
// as a job does at a checkpoint before it fails.
func snapshotAndClose(t testing.TB, r *Reader) []byte {
	t.Helper()
	pos, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return pos
}

func restoredReader(t testing.TB, src *Source, pos []byte) *Reader {
	t.Helper()
	r, err := src.NewKafkaReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	return r
}

// FLIP-288: after a restore, a partition the checkpoint does not hold (added
// to the topic, or of a topic that newly matches the pattern) is read from
// its earliest offset whatever 'scan.startup.mode' says; the startup mode
// only applies at the job's first start. Records written to such a partition
// before the restore were never read by anyone, so they must not be skipped.
func TestRestoreNewPartitionsStartEarliest(t *testing.T) {
	for _, opts := range []map[string]string{{"topic": "grow"}, {"topic-pattern": "grow|grow-.*"}} {
		_, addr := startCluster(t, map[string]int32{"grow": 1})
		adm := adminClient(t, addr)
		produce(t, addr, "grow", testRecord{value: `{"id":1,"name":"before-start"}`})
		opts["format"] = "json"
		opts["scan.startup.mode"] = "latest-offset"
		src := mustSource(t, tableContext(addr, eventSchema, opts, metaCol("topic"), metaCol("partition")))
		r, _ := src.NewKafkaReader(0, 1)
		if err := r.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		produce(t, addr, "grow", testRecord{value: `{"id":2,"name":"read"}`})
		if got := readN(t, r, 4, 1); !equalStrings(got, []string{"+I 2|read|grow|0"}) {
			t.Fatalf("%v: before the checkpoint got %v", opts, got)
		}
		pos := snapshotAndClose(t, r)

		// Between the checkpoint and the restore the topic grows and, for
		// the pattern, a matching topic appears; all of it is written
		// before the restored reader starts.
		createPartitions(t, adm, 1, "grow")
		produce(t, addr, "grow", testRecord{partition: 1, value: `{"id":3,"name":"new-partition"}`},
			testRecord{partition: 0, value: `{"id":4,"name":"after-checkpoint"}`})
		want := []string{"+I 3|new-partition|grow|1", "+I 4|after-checkpoint|grow|0"}
		if _, ok := opts["topic-pattern"]; ok {
			createTopic(t, adm, 2, "grow-more")
			produce(t, addr, "grow-more", testRecord{partition: 1, value: `{"id":5,"name":"new-topic"}`})
			want = append(want, "+I 5|new-topic|grow-more|1")
		}
		r2 := restoredReader(t, src, pos)
		if err := r2.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := readN(t, r2, 4, len(want))
		r2.Close()
		if !equalStrings(sorted(got), sorted(want)) {
			t.Fatalf("%v: after the restore got %v, want %v", opts, sorted(got), sorted(want))
		}
	}
}

// A restored bounded job reads exactly what the uninterrupted job reads: the
// stop offsets fixed at the first start are part of the checkpoint, so
// records written after the first start are not read after a restore either.
func TestRestoredBoundedReadKeepsStopOffsets(t *testing.T) {
	all := []int{0, 1, 2, 3}
	cases := []struct {
		name string
		opts map[string]string
		want []string // what an uninterrupted read returns
	}{
		{"latest-offset", map[string]string{"scan.bounded.mode": "latest-offset"},
			eventRows(map[int][]int{0: all, 1: all, 2: all})},
		// No record is at or after 5000 at the first start: the bound is
		// the end of each partition then, not the end at the restore.
		{"timestamp", map[string]string{"scan.bounded.mode": "timestamp", "scan.bounded.timestamp-millis": "5000"},
			eventRows(map[int][]int{0: all, 1: all, 2: all})},
		{"group-offsets", map[string]string{"scan.bounded.mode": "group-offsets", "properties.group.id": "bound"},
			eventRows(map[int][]int{0: {0, 1}, 1: {0, 1, 2}, 2: all})},
	}
	for _, c := range cases {
		addr := seedEvents(t) // 4 records in each of 3 partitions, CreateTime 1000+100i
		commitGroup(t, addr, "bound", "events", map[int32]int64{0: 2, 1: 3, 2: 4})
		opts := map[string]string{"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset"}
		for k, v := range c.opts {
			opts[k] = v
		}
		src := mustSource(t, tableContext(addr, eventSchema, opts))
		r, _ := src.NewKafkaReader(0, 1)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		b := types.NewBatch(2, 1)
		for len(got) < 2 {
			b.Reset()
			if _, err := r.Read(ctx, b); err != nil {
				t.Fatal(err)
			}
			for j, row := range b.Rows {
				got = append(got, rowString(b.Kinds[j], row))
			}
		}
		pos := snapshotAndClose(t, r)
		cancel()

		// After the checkpoint: more records at a timestamp inside the
		// bound, and the group moves on (as a committing job would).
		for p := int32(0); p < 3; p++ {
			produce(t, addr, "events", testRecord{partition: p, value: `{"id":99,"name":"late"}`, ts: 1050})
		}
		commitGroup(t, addr, "bound", "events", map[int32]int64{0: 5, 1: 5, 2: 5})

		// A new process: a new source object restores the checkpoint.
		rest, err := readBounded(t, restoredReader(t, mustSource(t, tableContext(addr, eventSchema, opts)), pos), 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rest...)
		if !equalStrings(sorted(got), c.want) {
			t.Errorf("%s: restored read got %v, want %v", c.name, sorted(got), c.want)
		}
	}
}

// A restart in the same process before any checkpoint completed starts the
// read afresh, but with the stop offsets of the job's first start: a new
// reader of the same source does not read records written since.
func TestRestartedBoundedReadKeepsFirstStopOffsets(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	r := src.mustReader(t)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	readRows(t, r, 1)
	r.Close() // the attempt fails
	produce(t, addr, "events", testRecord{partition: 2, value: `{"id":99,"name":"late"}`})
	got, err := readBounded(t, src.mustReader(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3}
	if want := eventRows(map[int][]int{0: all, 1: all, 2: all}); !equalStrings(sorted(got), want) {
		t.Fatalf("the restarted read got %v, want %v", sorted(got), want)
	}
}

// A bounded read restored from a position with stop offsets does not take up
// a partition added after its first start (the uninterrupted read never
// discovers it) and says so.
func TestRestoredBoundedReadLeavesOutNewPartitions(t *testing.T) {
	addr := seedEvents(t)
	adm := adminClient(t, addr)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	var logged []string
	src.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	r, _ := src.NewKafkaReader(0, 1)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	pos := snapshotAndClose(t, r)
	createPartitions(t, adm, 1, "events")
	produce(t, addr, "events", testRecord{partition: 3, value: `{"id":30,"name":"p3-0"}`})
	got, err := readBounded(t, restoredReader(t, src, pos), 2)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3}
	if want := eventRows(map[int][]int{0: all, 1: all, 2: all}); !equalStrings(sorted(got), want) {
		t.Fatalf("got %v, want %v", sorted(got), want)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "events-3") {
		t.Fatalf("logged %q, want one line naming events-3", logged)
	}
}

func TestPositionRoundTrip(t *testing.T) {
	for _, in := range []*position{
		{next: map[TopicPartition]int64{{"a", 0}: 0, {"a", 7}: 1 << 40, {"b-c", 2}: 5}},
		{next: map[TopicPartition]int64{{"a", 0}: 3, {"b", 1}: 9}, stop: map[TopicPartition]int64{{"a", 0}: 4, {"b", 1}: -1}},
		{next: map[TopicPartition]int64{}, stop: map[TopicPartition]int64{}},
	} {
		out, err := decodePosition(encodePosition(in))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(out.next) != fmt.Sprint(in.next) || (out.stop == nil) != (in.stop == nil) || fmt.Sprint(out.stop) != fmt.Sprint(in.stop) {
			t.Errorf("round trip of %+v gave %+v", in, out)
		}
	}
	// A position of the first layout still restores (its stops are resolved again).
	p, err := decodePosition(encodeOffsets(map[TopicPartition]int64{{"a", 1}: 2}))
	if err != nil || p.stop != nil || p.next[TopicPartition{"a", 1}] != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := decodePosition([]byte{2, 1, 1, 1, 'a', 0, 2}); err == nil {
		t.Error("a position without its stop offset was accepted")
	}
}

// groupOffsets fetches a group's committed offsets of topic over TCP.
func groupOffsets(t testing.TB, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}
	}
	if err != nil {
		t.Fatalf("fetching offsets of group %s: %v", group, err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// readRows reads up to n rows in batches of one, as a job does between
// checkpoints.
func readRows(t testing.TB, r *Reader, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var got []string
	b := types.NewBatch(2, 1)
	for len(got) < n {
		b.Reset()
		if _, err := r.Read(ctx, b); err != nil {
			t.Fatal(err)
		}
		for j, row := range b.Rows {
			got = append(got, rowString(b.Kinds[j], row))
		}
	}
	return got
}

// The offsets of a completed checkpoint are committed to the consumer group,
// those of a checkpoint that did not complete are not, and a job started
// fresh with 'group-offsets' continues at the last completed checkpoint.
func TestOffsetsCommittedOnCheckpointComplete(t *testing.T) {
	addr := seedEvents(t) // 4 records in each of 3 partitions
	adm := adminClient(t, addr)
	opts := map[string]string{"topic": "events", "format": "json", "properties.group.id": "job",
		"scan.startup.mode": "earliest-offset"}
	src := mustSource(t, tableContext(addr, eventSchema, opts))
	var logged []string
	src.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	r, _ := src.NewKafkaReader(0, 1)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := readRows(t, r, 5)
	pos1, _ := r.SnapshotPosition() // checkpoint 1
	readRows(t, r, 3)
	pos2, _ := r.SnapshotPosition() // checkpoint 2, never completes
	_ = pos2
	if err := r.NotifyPositionComplete(1, pos1); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil { // waits for the commit
		t.Fatal(err)
	}
	p1, _ := decodePosition(pos1)
	want := map[int32]int64{}
	for tp, o := range p1.next {
		want[tp.Partition] = o
	}
	if got := groupOffsets(t, adm, "job", "events"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want checkpoint 1's offsets %v", got, want)
	}
	if len(logged) != 0 || src.CommitsFailed().Load() != 0 {
		t.Fatalf("commit failures: %v", logged)
	}

	// A fresh start from the group: exactly the records after checkpoint 1.
	opts["scan.startup.mode"] = "group-offsets"
	opts["scan.bounded.mode"] = "latest-offset"
	rest, err := readBounded(t, mustSource(t, tableContext(addr, eventSchema, opts)).mustReader(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3}
	if got := sorted(append(before, rest...)); !equalStrings(got, eventRows(map[int][]int{0: all, 1: all, 2: all})) {
		t.Fatalf("before checkpoint 1 %v and after a fresh start %v: not every record once", before, rest)
	}
}

func (s *Source) mustReader(t testing.TB) *Reader {
	t.Helper()
	r, err := s.NewKafkaReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOffsetsNotCommittedWhenDisabled(t *testing.T) {
	addr := seedEvents(t)
	adm := adminClient(t, addr)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{"topic": "events", "format": "json",
		"properties.group.id": "quiet", "properties.commit.offsets.on.checkpoint": "false", "scan.startup.mode": "earliest-offset"}))
	r := src.mustReader(t)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	readRows(t, r, 4)
	pos, _ := r.SnapshotPosition()
	if err := r.NotifyPositionComplete(1, pos); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := groupOffsets(t, adm, "quiet", "events"); len(got) != 0 {
		t.Fatalf("committed %v with commit.offsets.on.checkpoint = false", got)
	}
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"properties.commit.offsets.on.checkpoint": "true"}, "Property group.id is required when offset commit is enabled"},
		{map[string]string{"properties.group.id": "g", "properties.commit.offsets.on.checkpoint": "sometimes"},
			"Invalid value for option 'properties.commit.offsets.on.checkpoint'. Expected one of [true, false], but was: sometimes"},
	} {
		c.opts["topic"], c.opts["format"], c.opts["scan.startup.mode"] = "events", "json", "earliest-offset"
		_, err := NewFactory().CreateSource(tableContext(addr, eventSchema, c.opts))
		if e := errContains(err, c.want); e != nil {
			t.Error(e)
		}
	}
}

// A commit that fails (here: the broker is gone) is logged with the
// checkpoint and the group and counted; it does not fail the job, as in
// Flink, because the checkpoint itself holds the offsets.
func TestOffsetCommitFailureLoggedAndCounted(t *testing.T) {
	cluster, addr := startCluster(t, map[string]int32{"events": 1})
	produce(t, addr, "events", testRecord{value: `{"id":1,"name":"a"}`})
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{"topic": "events", "format": "json",
		"properties.group.id": "lost", "scan.startup.mode": "earliest-offset", "properties.request.timeout.ms": "500"}))
	var logged []string
	src.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	r := src.mustReader(t)
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	readRows(t, r, 1)
	pos, _ := r.SnapshotPosition()
	cluster.Close()
	if err := r.NotifyPositionComplete(7, pos); err != nil {
		t.Fatalf("a failing commit must not fail the task: %v", err)
	}
	if err := r.Close(); err != nil { // waits for the commit attempt
		t.Fatal(err)
	}
	if n := src.CommitsFailed().Load(); n != 1 {
		t.Fatalf("CommitsFailed = %d, want 1", n)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "checkpoint 7") || !strings.Contains(logged[0], "consumer group 'lost'") {
		t.Fatalf("logged %q", logged)
	}
}
