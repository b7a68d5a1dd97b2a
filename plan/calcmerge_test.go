package plan

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

type collectOutput struct{ rows []types.Row }

func (o *collectOutput) Push(b *types.Batch) error {
	for _, r := range b.Rows {
		o.rows = append(o.rows, append(types.Row(nil), r...))
	}
	return nil
}
func (*collectOutput) PushWatermark(int64) error { return nil }

// TestCalcMerge: a query's Calc over a view's Calc runs as one operator,
// whose filter is the view's AND the query's (in that order) and whose
// projection reads the view's expressions in place of its columns; the
// merged operator keeps and computes what the two did (rows worked out by
// hand). Calcs are not merged when the upper one reads a non-deterministic
// or a costly expression of the lower one twice.
func TestCalcMerge(t *testing.T) {
	cat := catalog.New()
	reg := builtin.NewRegistry(io.Discard, io.Discard)
	p := New(cat, reg, Config{Loc: time.UTC, Parallelism: 1})
	if err := execDDL(p, cat, `
CREATE TABLE t (a INT, b STRING, r ROW<x INT, y STRING>) WITH ('connector' = 'datagen');
CREATE VIEW v AS SELECT a, b, a * 2 AS a2, r.x AS x FROM t WHERE a > 1;
CREATE VIEW rnd AS SELECT a, RAND() AS r FROM t;`); err != nil {
		t.Fatal(err)
	}
	graph := func(query string) *exec.JobGraph {
		t.Helper()
		st, err := parser.ParseStatement(query)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := New(cat, reg, Config{Loc: time.UTC, Parallelism: 1}).PlanQuery(st.(*parser.QueryStmt).Query, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, err := pl.JobGraph("test")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	chain := func(query string) []string { return graph(query).Vertices[0].ChainNames }
	names := chain("SELECT b, a2, x + x AS x2 FROM v WHERE b <> 'z' AND x > 0")
	want := "Calc(select=[b, *(a, 2) AS a2, +(DOT(r, x), DOT(r, x)) AS x2], where=[AND(>(a, 1), AND(<>(b, 'z'), >(DOT(r, x), 0)))])"
	if len(names) != 2 || names[0] != want || !strings.HasPrefix(names[1], "Sink") {
		t.Fatalf("chain %q, want [%s, Sink]", names, want)
	}
	for _, q := range []string{
		"SELECT a2 + a2 FROM v",    // a * 2 twice: not merged
		"SELECT r, r + 1 FROM rnd", // RAND() twice: not merged
	} {
		if names := chain(q); len(names) != 3 || !strings.HasPrefix(names[0], "Calc") || !strings.HasPrefix(names[1], "Calc") {
			t.Errorf("%s: chain %q, want two Calcs and the sink", q, names)
		}
	}
	// The merged operator on rows: a > 1 drops the first, b <> 'z' the
	// second, r.x > 0 the third (NULL r: NULL, dropped), the last stays.
	op, err := graph("SELECT b, a2, x + x AS x2 FROM v WHERE b <> 'z' AND x > 0").Vertices[0].Chain[0]()
	if err != nil {
		t.Fatal(err)
	}
	in := types.NewBatch(3, 8)
	row := func(a int64, b string, r types.Value) {
		copy(in.Append(types.Insert), types.Row{types.Int(a), types.String(b), r})
	}
	nested := func(x int64) types.Value { return types.RowValue(types.Row{types.Int(x), types.String("y")}) }
	row(1, "a", nested(5))
	row(2, "z", nested(5))
	row(3, "b", types.NullValue)
	row(4, "c", nested(-1))
	row(5, "d", nested(7))
	out := &collectOutput{}
	if err := op.ProcessBatch(0, in, out); err != nil {
		t.Fatal(err)
	}
	if len(out.rows) != 1 || out.rows[0][0].S != "d" || out.rows[0][1].N != 10 || out.rows[0][2].N != 14 {
		t.Fatalf("rows %v, want one: d, 10, 14", out.rows)
	}
}
