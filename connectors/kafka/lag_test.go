package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flinksql/flinksql/types"
)

// TestRecordsLagMax: the reader's records-lag-max is the largest number
// of records a partition holds beyond the reader's position: checked
// against the partitions' end offsets as an independent admin client
// lists them while the reader is part way through, and 0 once it read
// everything.
func TestRecordsLagMax(t *testing.T) {
	addr := seedEvents(t) // 3 partitions of 4 records
	var recs []testRecord
	for i := range 7 {
		recs = append(recs, testRecord{partition: 1, value: fmt.Sprintf(`{"id":%d,"name":"x"}`, 100+i)})
	}
	produce(t, addr, "events", recs...) // partition 1 ends at 11
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset"}))
	r, err := src.NewKafkaReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if lag := r.RecordsLagMax(); lag != -1 {
		t.Errorf("lag before any fetch: %d, want -1 (unknown)", lag)
	}
	// Read a batch of at most 2 rows at a time: once the fetches have seen
	// every partition's end, the lag is the largest end less position,
	// while records are still unread.
	b := types.NewBatch(2, 2)
	read, matched := 0, false
	for read < 19 {
		b.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if _, err := r.Read(ctx, b); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		read += b.Len()
		want := int64(0)
		for tp, pos := range r.Offsets() {
			end, _ := ends.Lookup(tp.Topic, tp.Partition)
			want = max(want, end.Offset-pos)
		}
		if lag := r.RecordsLagMax(); want > 0 && lag == want {
			matched = true
		} else if lag > want {
			t.Fatalf("lag %d after %d rows: more than the end offsets allow (%d)", lag, read, want)
		}
	}
	if !matched {
		t.Error("the lag never equalled the end offsets less the positions while records were unread")
	}
	if lag := r.RecordsLagMax(); lag != 0 {
		t.Errorf("lag after reading all 19 records: %d, want 0", lag)
	}
}

// TestRemainingRows: a bounded read reports the records it has still to
// read before its stop offsets (19 records seeded, no transactions, so
// offsets and records agree), counting down by what each read returned to
// 0; an unbounded read reports -1 (unknown).
func TestRemainingRows(t *testing.T) {
	addr := seedEvents(t) // 3 partitions of 4 records
	var recs []testRecord
	for i := range 7 {
		recs = append(recs, testRecord{partition: 1, value: fmt.Sprintf(`{"id":%d,"name":"x"}`, 100+i)})
	}
	produce(t, addr, "events", recs...)
	open := func(opts map[string]string) *Reader {
		src := mustSource(t, tableContext(addr, eventSchema, opts))
		r, err := src.NewKafkaReader(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n := r.RemainingRows(); n != -1 {
			t.Errorf("before Open: %d remaining, want -1", n)
		}
		if err := r.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	unbounded := open(map[string]string{"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset"})
	if n := unbounded.RemainingRows(); n != -1 {
		t.Errorf("unbounded read: %d remaining, want -1", n)
	}
	r := open(map[string]string{"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset",
		"scan.bounded.mode": "latest-offset"})
	want := int64(19)
	if n := r.RemainingRows(); n != want {
		t.Fatalf("after Open: %d remaining, want %d", n, want)
	}
	b := types.NewBatch(2, 2)
	for want > 0 {
		b.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		res, err := r.Read(ctx, b)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		want -= int64(b.Len())
		if n := r.RemainingRows(); n != want {
			t.Fatalf("after reading %d more rows: %d remaining, want %d", b.Len(), n, want)
		}
		if res.End {
			break
		}
	}
	if want != 0 {
		t.Errorf("the read ended with %d rows unread", want)
	}
}
