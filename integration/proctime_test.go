package integration_test

import (
	"context"
	"testing"

	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// TestProcessingTimeTumble runs an unbounded datagen source with a
// processing-time attribute and a 1-second tumbling window, and waits for the
// first window to fire. Which rows land in which window depends on the wall
// clock, so the test checks what does not: the window is one second long,
// aligned to a whole second, and counted some rows, and window_time is a
// proctime attribute one millisecond before the end.
func TestProcessingTimeTumble(t *testing.T) {
	s := newSession(t, nil)
	run(t, s, `CREATE TABLE clicks (id BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen', 'rows-per-second' = '200');`)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := parser.ParseStatement(`SELECT window_start, window_end, window_time, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(pt), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, window_time`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Query.Cancel()
	if got := r.Query.Schema[2].Type.String(); got != "TIMESTAMP_LTZ(3) NOT NULL" {
		t.Errorf("window_time type = %s", got)
	}
	cs, err := r.Query.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	row := cs[0].Row
	start, end, wt, n := row[0].Millis(), row[1].Millis(), row[2].Millis(), row[3].Int()
	if cs[0].Kind != types.Insert || end-start != 1000 || start%1000 != 0 || n <= 0 {
		t.Errorf("first window = %s: want +I, a whole 1-second window with rows", formatChange(cs[0], r.Query.Schema))
	}
	// Session zone is UTC here, so window_time is the instant end - 1 ms.
	if wt != end-1 {
		t.Errorf("window_time = %d, want window_end - 1 ms = %d", wt, end-1)
	}
}
