package integration_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/session"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runJob runs one INSERT to its end.
func runJob(t *testing.T, s *session.Session, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rs, err := s.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("%v\nin:\n%s", err, sql)
	}
	for _, r := range rs {
		if r.Job != nil {
			if err := r.Job.Wait(ctx); err != nil {
				t.Fatalf("job: %v\nin:\n%s", err, sql)
			}
		}
	}
}

// TestKafkaOffsetsCommittedOnCheckpoint: a checkpointed job commits its
// source offsets to 'properties.group.id' when a checkpoint completes (here
// the final one, at the end of the bounded read), and a new job started with
// 'group-offsets' reads only what was written after them.
func TestKafkaOffsetsCommittedOnCheckpoint(t *testing.T) {
	addr := startBroker(t, map[string]int32{"events": 2, "out1": 1, "out2": 1})
	ev := func(id int) string { return fmt.Sprintf(`{"id":%d}`, id) }
	produce(t, addr, "events", rec{partition: 0, value: ev(1)}, rec{partition: 0, value: ev(2)}, rec{partition: 0, value: ev(3)},
		rec{partition: 1, value: ev(4)}, rec{partition: 1, value: ev(5)}, rec{partition: 1, value: ev(6)})
	ddl := func(startup string) string {
		return fmt.Sprintf(`
CREATE TABLE events (id INT) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = '%[1]s', 'properties.group.id' = 'etl',
  'properties.auto.offset.reset' = 'none',
  'scan.startup.mode' = '%[2]s', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE out1 (id INT) WITH ('connector' = 'kafka', 'topic' = 'out1', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
CREATE TABLE out2 (id INT) WITH ('connector' = 'kafka', 'topic' = 'out2', 'properties.bootstrap.servers' = '%[1]s', 'format' = 'json');
`, addr, startup)
	}
	conf := func() map[string]string {
		return map[string]string{"parallelism.default": "2", "execution.checkpointing.interval": "1 h",
			"state.checkpoints.dir": "file://" + t.TempDir()}
	}
	s1 := newSession(t, conf())
	run(t, s1, ddl("earliest-offset"))
	runJob(t, s1, "INSERT INTO out1 SELECT id FROM events;")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsetsForTopics(ctx, "etl", "events")
	if err != nil {
		t.Fatal(err)
	}
	var committed []string
	resp.Each(func(o kadm.OffsetResponse) { committed = append(committed, fmt.Sprintf("%d:%d", o.Partition, o.At)) })
	sort.Strings(committed)
	if got := strings.Join(committed, " "); got != "0:3 1:3" {
		t.Fatalf("group 'etl' committed %q, want the end of both partitions \"0:3 1:3\"", got)
	}

	produce(t, addr, "events", rec{partition: 0, value: ev(7)}, rec{partition: 1, value: ev(8)})
	s2 := newSession(t, conf())
	run(t, s2, ddl("group-offsets"))
	runJob(t, s2, "INSERT INTO out2 SELECT id FROM events;")
	var got []string
	for _, r := range readAll(t, addr, "out2", 2) {
		got = append(got, string(r.Value))
	}
	sort.Strings(got)
	if want := []string{`{"id":7}`, `{"id":8}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the second job read %v, want only the records after the committed offsets %v", got, want)
	}
	// Nothing more than those two: the group's offsets moved to the end again.
	resp, err = kadm.NewClient(cl).FetchOffsetsForTopics(ctx, "etl", "events")
	if err != nil {
		t.Fatal(err)
	}
	committed = nil
	resp.Each(func(o kadm.OffsetResponse) { committed = append(committed, fmt.Sprintf("%d:%d", o.Partition, o.At)) })
	sort.Strings(committed)
	if got := strings.Join(committed, " "); got != "0:4 1:4" {
		t.Fatalf("after the second job group 'etl' committed %q, want \"0:4 1:4\"", got)
	}
}
