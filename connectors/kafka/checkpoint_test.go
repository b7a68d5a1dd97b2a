package kafka

import (
	"context"
	"testing"

	"github.com/flinksql/flinksql/types"
)

func TestReaderPositionRestore(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	all := eventRows(map[int][]int{0: {0, 1, 2, 3}, 1: {0, 1, 2, 3}, 2: {0, 1, 2, 3}})
	for _, stop := range []int{0, 1, 3} { // Reads before the checkpoint (batches of 4)
		r, _ := src.NewKafkaReader(0, 1)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		b := types.NewBatch(2, 4)
		for i := 0; i < stop; i++ {
			b.Reset()
			if _, err := r.Read(ctx, b); err != nil {
				t.Fatal(err)
			}
			for j, row := range b.Rows {
				got = append(got, rowString(b.Kinds[j], row))
			}
		}
		pos, err := r.SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		cancel()
		r2, _ := src.NewKafkaReader(0, 1)
		if err := r2.RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
		rest, err := readBounded(t, r2, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rest...)
		if !equalStrings(sorted(got), all) {
			t.Errorf("checkpoint after %d reads: read %v, want every record once: %v", stop, sorted(got), all)
		}
	}
	r, _ := src.NewKafkaReader(0, 1)
	if err := r.RestorePosition([]byte{1, 1, 9}); err == nil {
		t.Error("a truncated position was accepted")
	}
}

func TestOffsetsRoundTrip(t *testing.T) {
	in := map[TopicPartition]int64{{"a", 0}: 0, {"a", 7}: 1 << 40, {"b-c", 2}: 5}
	out, err := decodeOffsets(encodeOffsets(in))
	if err != nil || len(out) != len(in) {
		t.Fatalf("%v %v", out, err)
	}
	for tp, o := range in {
		if out[tp] != o {
			t.Errorf("%v: %d, want %d", tp, out[tp], o)
		}
	}
}

func TestWriterPrepareCommitFlushes(t *testing.T) {
	_, addr := startCluster(t, map[string]int32{"out": 1})
	s := mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": "out", "format": "json"}))
	w, err := s.NewKafkaWriter(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := types.NewBatch(2, 2)
	b.AppendRow(types.Insert, eventRow(1, "a"))
	b.AppendRow(types.Insert, eventRow(2, "b"))
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	cs, err := w.PrepareCommit(1)
	if err != nil || len(cs) != 0 {
		t.Fatalf("prepare: %v %v", cs, err)
	}
	// Acknowledged at the barrier: a consumer sees both without Finish.
	if recs := consumeAll(t, addr, "out", 2); len(recs) != 2 {
		t.Fatalf("%d records after PrepareCommit", len(recs))
	}
	if err := w.Commit(cs); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(cs); err != nil {
		t.Fatal(err)
	}
}

// TestMergePositionsRescales: positions taken at one parallelism, merged
// (exec.PositionMerger) and restored at another, make the new subtasks
// read every record of the three partitions once, together with what the
// old subtasks read before the checkpoint; conflicting offsets of one
// partition are refused.
func TestMergePositionsRescales(t *testing.T) {
	addr := seedEvents(t)
	src := mustSource(t, tableContext(addr, eventSchema, map[string]string{
		"topic": "events", "format": "json", "scan.startup.mode": "earliest-offset", "scan.bounded.mode": "latest-offset"}))
	all := eventRows(map[int][]int{0: {0, 1, 2, 3}, 1: {0, 1, 2, 3}, 2: {0, 1, 2, 3}})
	for _, c := range []struct{ from, to int }{{1, 2}, {2, 3}, {3, 1}} {
		var got []string
		var positions [][]byte
		for st := range c.from {
			r, _ := src.NewKafkaReader(st, c.from)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			if err := r.Open(ctx); err != nil {
				t.Fatal(err)
			}
			b := types.NewBatch(2, 4)
			if _, err := r.Read(ctx, b); err != nil { // one batch before the checkpoint
				t.Fatal(err)
			}
			for j, row := range b.Rows {
				got = append(got, rowString(b.Kinds[j], row))
			}
			pos, err := r.SnapshotPosition()
			if err != nil {
				t.Fatal(err)
			}
			positions = append(positions, pos)
			r.Close()
			cancel()
		}
		for st := range c.to {
			r, _ := src.NewKafkaReader(st, c.to)
			merged, err := r.MergePositions(positions)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RestorePosition(merged); err != nil {
				t.Fatal(err)
			}
			rest, err := readBounded(t, r, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rest...)
		}
		if !equalStrings(sorted(got), all) {
			t.Errorf("%d → %d: read %v, want every record once: %v", c.from, c.to, sorted(got), all)
		}
	}
	r, _ := src.NewKafkaReader(0, 1)
	a := encodePosition(&position{next: map[TopicPartition]int64{{"events", 0}: 3}})
	b := encodePosition(&position{next: map[TopicPartition]int64{{"events", 0}: 5}})
	if _, err := r.MergePositions([][]byte{a, b}); err == nil {
		t.Error("two offsets of one partition were merged")
	}
}
