package exec

import (
	"context"
	"testing"

	"github.com/flinksql/flinksql/types"
)

type discardWriter struct{ n int }

func (*discardWriter) Open(context.Context) error                      { return nil }
func (w *discardWriter) Write(_ context.Context, b *types.Batch) error { w.n += b.Len(); return nil }
func (*discardWriter) Finish(context.Context) error                    { return nil }
func (*discardWriter) Close() error                                    { return nil }

// TestNotNullDropMetric: the rows a sink's enforcer drops show in the job's
// metrics, per subtask and summed per operator.
func TestNotNullDropMetric(t *testing.T) {
	nullRow := types.Row{types.NullValue, types.Int(2)}
	src := sliceSource(0, 2, 1, []step{rowsStep(0, ints(1, 1), nullRow, nullRow, ints(3, 3))})
	w := &discardWriter{}
	src.Chain = chain(opOf(NewSinkOperator(w, WithNotNull(NotNullSpec{Table: "t", Cols: []int{0}, Names: []string{"a"}, Action: NotNullDrop}))))
	src.ChainNames = []string{"Sink"}
	j, err := Start(context.Background(), &JobGraph{Vertices: []*Vertex{src}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitJob(t, j); err != nil {
		t.Fatal(err)
	}
	op := j.Metrics()[0].Operators[0]
	if op.NotNullRowsDropped != 2 || op.Subtasks[0].NotNullRowsDropped != 2 || op.RowsIn != 4 || w.n != 2 {
		t.Errorf("dropped %d (subtask %d), in %d, written %d; want 2, 2, 4, 2", op.NotNullRowsDropped, op.Subtasks[0].NotNullRowsDropped, op.RowsIn, w.n)
	}
}
