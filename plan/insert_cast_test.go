package plan

import (
	"io"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// TestInsertCastsToSinkColumnTypes: a query column whose type differs from
// the sink column's is cast before the sink, even when the cast is
// implicit. An INT written into a DOUBLE column is 1.0 and a DECIMAL(5, 2)
// 2.50 written into DECIMAL(10, 4) is 2.5000 (Flink's implicit casts on
// INSERT); the cast used to be dropped as an identity because an implicit
// cast prints as its operand, so the sink got the INT's bits as a double
// (5.0E-324).
func TestInsertCastsToSinkColumnTypes(t *testing.T) {
	cat := catalog.New()
	p := New(cat, builtin.NewRegistry(io.Discard, io.Discard), Config{Loc: time.UTC})
	if err := execDDL(p, cat, `
CREATE TABLE s (a INT, n DECIMAL(5, 2)) WITH ('connector' = 'values', 'data' = '1,2.50');
CREATE TABLE out_t (d DOUBLE, e DECIMAL(10, 4)) WITH ('connector' = 'print');`); err != nil {
		t.Fatal(err)
	}
	st, err := parser.ParseStatement("INSERT INTO out_t SELECT a, n FROM s")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.PlanInsert(st.(*parser.Insert))
	if err != nil {
		t.Fatal(err)
	}
	calc, ok := plan.Sinks[0].Inputs()[0].(*CalcNode)
	if !ok || calc.Project == nil {
		t.Fatalf("the sink's input is %T, want a Calc casting to the sink's column types", plan.Sinks[0].Inputs()[0])
	}
	in := types.Row{types.Int(1), types.DecimalFromUnscaled(250, 2)}
	out := make(types.Row, 2)
	if err := expr.NewProjector(calc.Project, p.exprConfig()).Project(in, out); err != nil {
		t.Fatal(err)
	}
	if out[0].K != types.KindFloat || out[0].Float() != 1.0 {
		t.Errorf("INT 1 into a DOUBLE column: got %v (kind %v), want 1.0", out[0], out[0].K)
	}
	if got := types.FormatJava(out[1], types.DecimalType(10, 4)); got != "2.5000" {
		t.Errorf("DECIMAL(5, 2) 2.50 into a DECIMAL(10, 4) column: got %s, want 2.5000", got)
	}
}
