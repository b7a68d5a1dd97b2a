package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// BenchmarkWriter measures the sink's cost per row: Arrow conversion,
// Parquet encoding and one commit per 100 batches (a checkpoint).
func BenchmarkWriter(b *testing.B) {
	schema := types.Schema{
		{Name: "id", Type: types.BigIntType},
		{Name: "k", Type: types.IntType},
		{Name: "name", Type: types.StringType},
		{Name: "price", Type: types.DoubleType},
		{Name: "ts", Type: types.TimestampType(3)},
	}
	tc := testContext(b.TempDir(), nil)
	tc.Physical = schema
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		b.Fatal(err)
	}
	sw, _ := snk.NewWriter(0, 1)
	w := sw.(*writer)
	defer w.Close()
	cw, _ := snk.(connectors.CommittingSink).NewCommitter()
	c := cw.(*committer)
	defer c.Close()
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		b.Fatal(err)
	}
	batch := types.NewBatch(len(schema), types.DefaultBatchSize)
	for i := range types.DefaultBatchSize {
		batch.AppendRow(types.Insert, types.Row{
			types.Int(int64(i)), types.Int(int64(i % 1000)), types.String(fmt.Sprintf("name-%07d", i)),
			types.Float(float64(i) * 1.5), types.TimestampMillis(1700000000000 + int64(i)),
		})
	}
	b.ReportAllocs()
	b.ResetTimer()
	ckp := exec.CheckpointID(0)
	for i := 0; i < b.N; i++ {
		if err := w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			ckp++
			if err := handOver(c, []*writer{w}, ckp); err != nil {
				b.Fatal(err)
			}
			cs, err := c.PrepareCommit(ckp)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Commit(cs); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := w.PrepareCommittables(ckp + 1); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*types.DefaultBatchSize), "ns/row")
}

// upsertBench is a writer in upsert mode (PRIMARY KEY id) with its
// committer, and a batch of UpdateAfter rows whose keys cycle through
// keys distinct ids (batch i holds ids i·1024 … mod keys).
func upsertBench(b *testing.B) (*writer, *committer, func(i int) *types.Batch) {
	schema := types.Schema{
		{Name: "id", Type: types.BigIntType.WithNullable(false)},
		{Name: "k", Type: types.IntType},
		{Name: "name", Type: types.StringType},
		{Name: "price", Type: types.DoubleType},
		{Name: "ts", Type: types.TimestampType(3)},
	}
	tc := testContext(b.TempDir(), nil)
	tc.Physical = schema
	tc.PrimaryKey = []int{0}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		b.Fatal(err)
	}
	if snk.AcceptedChangelogMode(types.Retract) != types.Retract {
		b.Fatal("not in upsert mode")
	}
	sw, _ := snk.NewWriter(0, 1)
	w := sw.(*writer)
	b.Cleanup(func() { w.Close() })
	cw, _ := snk.(connectors.CommittingSink).NewCommitter()
	c := cw.(*committer)
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		b.Fatal(err)
	}
	if err := c.Open(ctx); err != nil {
		b.Fatal(err)
	}
	const keys = 50_000
	names := make([]types.Value, keys)
	for i := range names {
		names[i] = types.String(fmt.Sprintf("name-%07d", i))
	}
	batch := types.NewBatch(len(schema), types.DefaultBatchSize)
	return w, c, func(i int) *types.Batch {
		batch.Reset()
		for j := range types.DefaultBatchSize {
			id := (i*types.DefaultBatchSize + j) % keys
			r := batch.Append(types.UpdateAfter)
			r[0], r[1], r[2] = types.Int(int64(id)), types.Int(int64(id%1000)), names[id]
			r[3], r[4] = types.Float(float64(i)*1.5), types.TimestampMillis(1700000000000+int64(i))
		}
		return batch
	}
}

// BenchmarkUpsertWriter measures upsert mode end to end per row: the
// buffer by key, then at each checkpoint (every 100 batches, 102 400
// changes over 50 000 keys) the keys' equality deletes and last rows
// written as Parquet and committed as one row-delta snapshot.
func BenchmarkUpsertWriter(b *testing.B) {
	w, c, next := upsertBench(b)
	b.ReportAllocs()
	b.ResetTimer()
	ckp := exec.CheckpointID(0)
	for i := 0; i < b.N; i++ {
		if err := w.Write(context.Background(), next(i)); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			ckp++
			if err := handOver(c, []*writer{w}, ckp); err != nil {
				b.Fatal(err)
			}
			cs, err := c.PrepareCommit(ckp)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Commit(cs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*types.DefaultBatchSize), "ns/row")
}

// BenchmarkUpsertBuffer measures the row path of upsert mode alone: a
// change buffered by key (emptied, as at a barrier, every 100 batches).
// Once its slices have grown it allocates nothing per row.
func BenchmarkUpsertBuffer(b *testing.B) {
	w, _, next := upsertBench(b)
	for i := range 100 { // grow the buffer to a checkpoint's keys
		w.buffer(next(i))
	}
	w.upsert.reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.buffer(next(i))
		if i%100 == 99 {
			w.upsert.reset()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*types.DefaultBatchSize), "ns/row")
}
