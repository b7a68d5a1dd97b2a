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
