package exec

import (
	"context"
	"slices"
	"testing"
	"time"
)

// StopSources ends an unbounded job the way the end of its input does,
// without a maximum watermark unless drained: event time does not jump to
// the end, so windows would not fire early; drained, it does.
func TestStopSources(t *testing.T) {
	for _, drain := range []bool{false, true} {
		r0, r1 := newChanReader(1), newChanReader(1)
		rc := newRecorder(100)
		src := chanSource(1, 1, tsWatermark(0, 0, true), r0, r1)
		g := &JobGraph{Vertices: []*Vertex{src, {
			ID: 2, Name: "Rec", Parallelism: 1,
			Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Rebalance}}},
			Chain:  chain(rc.op()),
		}}}
		j, err := Start(context.Background(), g, Config{AutoWatermarkInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r0.steps <- rowsStep(0, ints(1000))
		r1.steps <- rowsStep(0, ints(2000))
		for rows := 0; rows < 2; { // both rows went through, in either order
			if nextEvent(t, rc).what == "row" {
				rows++
			}
		}
		j.StopSources(drain)
		if err := waitJob(t, j); err != nil {
			t.Fatalf("drain=%v: a stopped job ended with %v, want nil", drain, err)
		}
		got := rc.strings(-1, "wm", "finish")
		if !slices.Contains(got, "finish") {
			t.Fatalf("drain=%v: the chain was not finished: %q", drain, got)
		}
		if slices.Contains(got, "wm(max)") != drain {
			t.Fatalf("drain=%v: watermarks %q; the maximum watermark must come only with drain", drain, got)
		}
		if rows := rc.sortedRows(); len(rows) != 2 {
			t.Fatalf("drain=%v: rows %q, want the two read", drain, rows)
		}
	}
}
