package plan

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// hintedFactory makes sources that record the skip hints they are offered.
type hintedFactory struct{ made []*hintedSource }

func (*hintedFactory) Identifier() string        { return "hinted" }
func (*hintedFactory) RequiredOptions() []string { return nil }
func (*hintedFactory) OptionalOptions() []string { return nil }
func (f *hintedFactory) CreateSource(*connectors.TableContext) (connectors.ScanSource, error) {
	s := &hintedSource{}
	f.made = append(f.made, s)
	return s, nil
}

type hintedSource struct{ hints []string }

func (*hintedSource) Bounded() bool                           { return true }
func (*hintedSource) ChangelogMode() types.ChangelogMode      { return types.InsertOnly }
func (*hintedSource) Parallelism(int) int                     { return 1 }
func (*hintedSource) ReadableMetadata() map[string]types.Type { return nil }
func (*hintedSource) NewReader(int, int) (exec.SourceReader, error) {
	return nil, fmt.Errorf("not read in this test")
}
func (s *hintedSource) SkipUnlessIn(column int, values []types.Value) bool {
	var ns []int64
	for _, v := range values {
		ns = append(ns, v.N)
	}
	s.hints = append(s.hints, fmt.Sprintf("%d in %v", column, ns))
	return true
}

// TestSkipHints: the filter right above a scan is offered to a skipping
// source conjunct by conjunct, as read-row column and constants (the
// computed column k sits between x and y in the table row, not in the read
// row, so y is read column 1); conditions that are not "column in
// constants" are not offered.
func TestSkipHints(t *testing.T) {
	cat := catalog.New()
	reg := builtin.NewRegistry(io.Discard, io.Discard)
	f := &hintedFactory{}
	reg.Register(f)
	p := New(cat, reg, Config{Loc: time.UTC})
	if err := execDDL(p, cat, `
CREATE TABLE s (x INT, k AS x + 1, y INT) WITH ('connector' = 'hinted');
CREATE TABLE out_t (a INT) WITH ('connector' = 'blackhole');`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"SELECT x FROM s WHERE y = 3", []string{"1 in [3]"}},
		{"SELECT x FROM s WHERE 3 = y", []string{"1 in [3]"}},
		{"SELECT x FROM s WHERE x IN (1, 2) AND y = 5", []string{"0 in [1 2]", "1 in [5]"}},
		{"SELECT x FROM s WHERE x = 1 OR x = 4", []string{"0 in [1 4]"}},
		{"SELECT x FROM s WHERE x = 1 OR y = 2", nil},
		{"SELECT x FROM s WHERE k = 2", nil},
		{"SELECT x FROM s WHERE x > 2", nil},
		{"SELECT x FROM s WHERE x = y", nil},
		{"SELECT CAST(COUNT(*) AS INT) FROM s WHERE y = 7 GROUP BY x", []string{"1 in [7]"}},
		{"SELECT x FROM s", nil},
	} {
		f.made = nil
		st, err := parser.ParseStatement("INSERT INTO out_t " + c.query)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.PlanInsert(st.(*parser.Insert)); err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if len(f.made) != 1 {
			t.Fatalf("%s: %d sources made, want 1", c.query, len(f.made))
		}
		if got := f.made[0].hints; !slices.Equal(got, c.want) {
			t.Errorf("%s: hints %q, want %q", c.query, got, c.want)
		}
	}
}
