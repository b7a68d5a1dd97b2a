package plan

import (
	"io"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
)

// TestWatermarkShift: the watermark expressions the source computes from a
// column without evaluating them (column, column ± a day-time interval
// constant: its milliseconds), and ones it evaluates.
func TestWatermarkShift(t *testing.T) {
	for _, c := range []struct {
		wm   string
		want *exec.WatermarkShift // nil: evaluated per row
	}{
		{"ts - INTERVAL '4' SECOND", &exec.WatermarkShift{Col: 1, Millis: -4000}},
		{"ts + INTERVAL '1' MINUTE", &exec.WatermarkShift{Col: 1, Millis: 60_000}},
		{"ts", &exec.WatermarkShift{Col: 1}},
		{"ts - INTERVAL '1' MONTH", nil},      // months are not a fixed number of milliseconds
		{"ts - INTERVAL '1' SECOND * 2", nil}, // not a constant operand
		{"TIMESTAMPADD(SECOND, -1, ts)", nil}, // another function
	} {
		cat := catalog.New()
		reg := builtin.NewRegistry(io.Discard, io.Discard)
		p := New(cat, reg, Config{Loc: time.UTC, Parallelism: 1})
		if err := execDDL(p, cat, "CREATE TABLE t (a INT, ts TIMESTAMP(3), WATERMARK FOR ts AS "+c.wm+") WITH ('connector' = 'datagen')"); err != nil {
			t.Fatalf("%s: %v", c.wm, err)
		}
		st, err := parser.ParseStatement("SELECT a FROM t")
		if err != nil {
			t.Fatal(err)
		}
		pl, err := p.PlanQuery(st.(*parser.QueryStmt).Query, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := pl.JobGraph("test")
		if err != nil {
			t.Fatal(err)
		}
		got := g.Vertices[0].Source.Watermark.Shift
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("WATERMARK FOR ts AS %s: shift %+v, want %+v", c.wm, got, c.want)
		}
	}
}
