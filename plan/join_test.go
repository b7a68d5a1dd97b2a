package plan

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
)

// planJoinQuery plans a query over two datagen tables o and c and returns
// its regular join node.
func planJoinQuery(t *testing.T, cfg Config, query string) (*JoinNode, error) {
	t.Helper()
	cat := catalog.New()
	reg := builtin.NewRegistry(io.Discard, io.Discard)
	cfg.Loc = time.UTC
	p := New(cat, reg, cfg)
	if err := execDDL(p, cat, `CREATE TABLE o (oid INT, cid INT) WITH ('connector' = 'datagen');
CREATE TABLE c (cid INT, name STRING) WITH ('connector' = 'datagen');`); err != nil {
		t.Fatal(err)
	}
	st, err := parser.ParseStatement(query)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.PlanQuery(st.(*parser.QueryStmt).Query, nil)
	if err != nil {
		return nil, err
	}
	var found *JoinNode
	var walk func(n Node)
	walk = func(n Node) {
		if j, ok := n.(*JoinNode); ok && found == nil {
			found = j
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	for _, s := range plan.Sinks {
		walk(s)
	}
	if found == nil {
		t.Fatalf("%s: no join planned", query)
	}
	return found, nil
}

// STATE_TTL('alias' = 'duration') sets the retention of that join input's
// rows; the other side keeps table.exec.state.ttl.
func TestStateTTLHint(t *testing.T) {
	cfg := Config{StateTTL: time.Hour}
	for _, tc := range []struct {
		query       string
		left, right time.Duration
	}{
		{"SELECT * FROM o JOIN c ON o.cid = c.cid", time.Hour, time.Hour},
		{"SELECT /*+ STATE_TTL('o' = '1d') */ * FROM o JOIN c ON o.cid = c.cid", 24 * time.Hour, time.Hour},
		{"SELECT /*+ STATE_TTL('c' = '12h', 'o' = '30 min') */ * FROM o, c WHERE o.cid = c.cid", 30 * time.Minute, 12 * time.Hour},
		{"SELECT /*+ STATE_TTL('y' = '2s') */ * FROM o x JOIN c y ON x.cid = y.cid", time.Hour, 2 * time.Second},
		{"SELECT /*+ STATE_TTL('o' = '0s') */ * FROM o LEFT JOIN c ON o.cid = c.cid", 0, time.Hour},
	} {
		j, err := planJoinQuery(t, cfg, tc.query)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if j.LeftTTL != tc.left || j.RightTTL != tc.right {
			t.Errorf("%s: TTLs left %s, right %s; want %s, %s", tc.query, j.LeftTTL, j.RightTTL, tc.left, tc.right)
		}
	}
}

func TestStateTTLHintRefusals(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"SELECT /*+ STATE_TTL('x' = '1d') */ * FROM o JOIN c ON o.cid = c.cid",
			"The options of following hints cannot match the name of input tables or views: \n`x` in STATE_TTL"},
		{"SELECT /*+ STATE_TTL('o' = 'soon') */ * FROM o JOIN c ON o.cid = c.cid", "Invalid STATE_TTL value 'soon' for 'o'"},
		{"SELECT /*+ STATE_TTL('o') */ * FROM o JOIN c ON o.cid = c.cid", "Invalid STATE_TTL hint"},
		{"SELECT /*+ BROADCAST(c) */ * FROM o JOIN c ON o.cid = c.cid", "the query hint BROADCAST is not supported yet"},
		{"SELECT /*+ STATE_TTL('o' = '1d') */ COUNT(*) FROM o GROUP BY cid", "the STATE_TTL hint on an aggregation is not supported yet"},
	} {
		_, err := planJoinQuery(t, Config{}, tc.query)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.query, err, tc.want)
		}
	}
}
