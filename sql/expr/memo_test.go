package expr

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

type countingEval struct {
	inner evaluator
	n     *int
}

func (c *countingEval) eval(row types.Row) (types.Value, error) {
	*c.n++
	return c.inner.eval(row)
}

// TestFilterProjectorSharesCalls runs rows as a Calc does (Test, then
// Project for the rows kept) through a filter and a projection that both
// extract the same group of a regex: the regex runs once per row, and every
// output is the one of that row.
func TestFilterProjectorSharesCalls(t *testing.T) {
	url := Column(0, "url", types.StringType)
	ch := Column(1, "channel", types.StringType)
	extract := func() Expr { return call(t, "REGEXP_EXTRACT", url, str("id=([^&]*)"), num(t, "1")) }
	pred, proj := NewFilterProjector(call(t, "IS NOT NULL", extract()), []Expr{extract(), ch}, nil)

	m, ok := proj.evals[0].(*memoEval)
	if !ok {
		t.Fatalf("the projected REGEXP_EXTRACT compiled to %T, want the filter's memo", proj.evals[0])
	}
	var calls int
	m.inner = &countingEval{inner: m.inner, n: &calls}

	rows := []struct {
		url, channel string
		kept         bool
		want         string // projected id when kept
	}{
		{"a=1&id=42", "x", true, "42"},
		{"a=1", "y", false, ""},
		{"id=&b", "z", true, ""}, // an empty group is a match, not NULL
		{"id=7", "w", true, "7"},
	}
	// One row slice for all rows, as a reused batch gives: the memo must
	// tell the rows apart by more than their address.
	in := make(types.Row, 2)
	for _, r := range rows {
		in[0], in[1] = types.String(r.url), types.String(r.channel)
		kept, err := pred.Test(in)
		if err != nil {
			t.Fatal(err)
		}
		if kept != r.kept {
			t.Fatalf("%q: kept %v, want %v", r.url, kept, r.kept)
		}
		if !kept {
			continue
		}
		out := make(types.Row, 2)
		if err := proj.Project(in, out); err != nil {
			t.Fatal(err)
		}
		if out[0].IsNull() || out[0].S != r.want || out[1].S != r.channel {
			t.Errorf("%q: projected %v, want (%q, %q)", r.url, out, r.want, r.channel)
		}
	}
	if calls != len(rows) {
		t.Errorf("REGEXP_EXTRACT evaluated %d times for %d rows, want once per row", calls, len(rows))
	}

	// A row the filter did not test is computed afresh, not given the
	// last tested row's value.
	out := make(types.Row, 2)
	if err := proj.Project(types.Row{types.String("id=99"), types.String("v")}, out); err != nil {
		t.Fatal(err)
	}
	if out[0].S != "99" {
		t.Errorf("untested row: projected %q, want \"99\"", out[0].S)
	}
}

// TestFilterProjectorKeepsDifferentCalls: calls that differ in an operand
// are not shared.
func TestFilterProjectorKeepsDifferentCalls(t *testing.T) {
	url := Column(0, "url", types.StringType)
	pred, proj := NewFilterProjector(
		call(t, "IS NOT NULL", call(t, "REGEXP_EXTRACT", url, str("id=([^&]*)"), num(t, "1"))),
		[]Expr{call(t, "REGEXP_EXTRACT", url, str("id=([^&]*)"), num(t, "0"))}, nil)
	in := types.Row{types.String("a&id=5")}
	if kept, err := pred.Test(in); err != nil || !kept {
		t.Fatalf("kept %v, %v", kept, err)
	}
	out := make(types.Row, 1)
	if err := proj.Project(in, out); err != nil {
		t.Fatal(err)
	}
	if out[0].S != "id=5" {
		t.Errorf("group 0 projected %q, want \"id=5\"", out[0].S)
	}
}
