package session

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// collect runs a SELECT to its end and returns its changes.
func collect(t *testing.T, s *Session, sql string) []Change {
	t.Helper()
	st, err := parser.ParseStatement(sql)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecuteStatement(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Query.Cancel()
	var got []Change
	for {
		c, err := r.Query.Next(context.Background())
		got = append(got, c...)
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A 100 000-term flat expression goes through parsing, binding, type
// inference, folding, compilation and evaluation.
func TestLongFlatExpressions(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	got := collect(t, s, "SELECT "+strings.Repeat("a OR ", n-1)+"a, "+strings.Repeat("1 + ", n-1)+"1 FROM (VALUES (TRUE), (FALSE)) AS t(a)")
	if len(got) != 2 {
		t.Fatalf("got %d rows, want 2", len(got))
	}
	for i, want := range []bool{true, false} {
		row := got[i].Row
		if got[i].Kind != types.Insert || row[0] != types.Bool(want) || row[1].N != n {
			t.Errorf("row %d: %v %v, want +I[%v, %d]", i, got[i].Kind, row, want, n)
		}
	}
}

// cancelAt is a context cancelled by its own n-th Err call, i.e. during
// planning, at a point the planner's progress fixes (no clock).
type cancelAt struct {
	context.Context
	left int
}

func (c *cancelAt) Err() error {
	if c.left > 0 {
		c.left--
		return nil
	}
	return context.Canceled
}

// Cancelling the statement's context (Ctrl-C in the shell, SIGTERM with -f)
// while a statement is being planned ends it with context.Canceled.
func TestExecuteCancelledWhilePlanning(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), "CREATE TABLE snk (b BOOLEAN) WITH ('connector' = 'blackhole')"); err != nil {
		t.Fatal(err)
	}
	chain := strings.Repeat("a OR ", 50_000) + "a"
	for _, sql := range []string{
		"SELECT " + chain + " FROM (VALUES (TRUE)) AS t(a)",
		"INSERT INTO snk SELECT " + chain + " FROM (VALUES (TRUE)) AS t(a)",
		"EXPLAIN SELECT " + chain + " FROM (VALUES (TRUE)) AS t(a)",
	} {
		st, err := parser.ParseStatement(sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.ExecuteStatement(&cancelAt{Context: context.Background(), left: 20}, st)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%.30s…: got %v, want context.Canceled", sql, err)
		}
	}
	if n := len(s.jobs.List()); n != 0 {
		t.Fatalf("%d jobs started by cancelled statements", n)
	}
}
