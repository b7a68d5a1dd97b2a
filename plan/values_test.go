package plan

import (
	"context"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// TestValuesReaderRestore: the VALUES reader records how far it read, so a
// reader restored from that position emits exactly the rows after it.
func TestValuesReaderRestore(t *testing.T) {
	var rows []types.Row
	for i := int64(1); i <= 5; i++ {
		rows = append(rows, types.Row{types.Int(i)})
	}
	read := func(r exec.SourceReader) (got []int64, end bool) {
		b := types.NewBatch(1, 2)
		res, err := r.Read(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			got = append(got, row[0].Int())
		}
		return got, res.End
	}
	for at := 0; at <= 3; at++ { // restore after `at` reads of up to 2 rows
		first := &valuesReader{rows: rows}
		var want []int64
		for i := 0; i < at; i++ {
			got, _ := read(first)
			want = append(want, got...)
		}
		cr, ok := exec.SourceReader(first).(exec.CheckpointedReader)
		if !ok {
			t.Fatal("the VALUES reader does not record its position")
		}
		pos, err := cr.SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		restored := &valuesReader{rows: rows}
		if err := restored.RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
		got := want
		for end := len(want) == len(rows); !end; {
			var more []int64
			more, end = read(restored)
			got = append(got, more...)
		}
		if len(got) != 5 {
			t.Fatalf("restored after %d reads: got rows %v, want 1…5 once each", at, got)
		}
		for i, v := range got {
			if v != int64(i+1) {
				t.Fatalf("restored after %d reads: got rows %v, want 1…5 once each", at, got)
			}
		}
	}
}
