package optest_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/plan"
	"github.com/flinksql/flinksql/sql/catalog"
	sqlparser "github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// TestEveryOperatorKindRestores runs the restore-at-every-step check
// (optest.CheckRestores) over whole planned queries, one per kind of plan
// node the job graph builder turns into runtime parts. The kinds are read
// from the builder's source (the cases of graphBuilder.buildNode), so a new kind
// without a query here fails the test. Every operator of every query must
// take part in checkpoints or declare that it has no state, and every source
// reader must record its position; the output after a restore from the
// checkpoint of any step must be what the uninterrupted run gave, which is
// the expected result worked out by hand.
func TestEveryOperatorKindRestores(t *testing.T) {
	kinds := buildKinds(t)
	covered := map[string][]string{}
	opTypes := map[string]bool{} // the runtime operator types the cases ran
	for _, c := range restoreCases {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{t: t, c: c, opTypes: opTypes}
			plan := h.plan()
			for _, k := range nodeKinds(plan) {
				covered[k] = append(covered[k], c.name)
			}
			optest.CheckRestores(t, h.build, newCollector, 1000, c.script, 0, c.want...)
		})
	}
	for _, k := range kinds {
		if len(covered[k]) == 0 {
			t.Errorf("plan node kind %s has no query in restoreCases: add one, so that its operators' restore is checked", k)
		}
	}
	// Every operator type of the runtime packages ran in some case, or is
	// one the planner never builds.
	for _, typ := range operatorTypes(t) {
		if !opTypes[typ] && notPlanned[typ] == "" {
			t.Errorf("operator type %s ran in no query of restoreCases: add one that plans it (or list it in notPlanned if the planner cannot build it)", typ)
		}
	}
}

// notPlanned lists the operator types the planner does not build, and why.
// They still declare their state (a compile-time assertion in their package).
var notPlanned = map[string]string{
	"*groupagg.dropUpdateBefore": "no plan node builds it; it declares exec.StatelessOperator",
}

// operatorTypes lists the types of the runtime packages that have a
// ProcessBatch method ("*window.sessionAggregate", …), read from their
// non-test sources.
func operatorTypes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"exec", "exec/window", "exec/rank", "exec/groupagg", "exec/join", "exec/lookup", "exec/temporal", "exec/unnest", "exec/setop", "exec/over"} {
		pkgs, err := parser.ParseDir(token.NewFileSet(), "../../../"+dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Recv == nil || fd.Name.Name != "ProcessBatch" {
						continue
					}
					typ := fd.Recv.List[0].Type
					ptr := ""
					if st, ok := typ.(*ast.StarExpr); ok {
						typ, ptr = st.X, "*"
					}
					if id, ok := typ.(*ast.Ident); ok {
						out = append(out, ptr+name+"."+id.Name)
					}
				}
			}
		}
	}
	sort.Strings(out)
	if len(out) < 10 {
		t.Fatalf("found only %v; have the runtime packages moved?", out)
	}
	return out
}

// buildKinds returns the plan node types the cases of graphBuilder.build
// (jobgraph.go) switch on.
func buildKinds(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../../plan/jobgraph.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "buildNode" || fd.Recv == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSwitchStmt)
			if !ok {
				return true
			}
			for _, s := range ts.Body.List {
				for _, e := range s.(*ast.CaseClause).List {
					if st, ok := e.(*ast.StarExpr); ok {
						if id, ok := st.X.(*ast.Ident); ok {
							kinds = append(kinds, id.Name)
						}
					}
				}
			}
			return false
		})
	}
	if len(kinds) < 10 {
		t.Fatalf("found only %v in graphBuilder.buildNode; has jobgraph.go changed shape?", kinds)
	}
	return kinds
}

// nodeKinds lists the node types of a plan ("GroupAggNode", …).
func nodeKinds(p *plan.Plan) []string {
	seen := map[string]bool{}
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		seen[strings.TrimPrefix(fmt.Sprintf("%T", n), "*plan.")] = true
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	for _, s := range p.Sinks {
		walk(s)
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// restoreCase is a query with its input script and hand-worked output
// (the rows its sink receives, in order).
type restoreCase struct {
	name   string
	ddl    string // besides the common tables
	query  string // a SELECT (collect sink) or an INSERT
	script []pstep
	want   []string
	// cdcDuplicates plans with table.exec.source.cdc-events-duplicate.
	cdcDuplicates bool
	// batch plans in batch runtime mode (execution.runtime-mode = batch).
	batch bool
}

// The common tables. bids' rows are read one per step by read(0, 1);
// ts is seconds after midnight.
const commonDDL = `
CREATE TABLE bids (bidder STRING, price INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data' = '
a,1,2024-01-01 00:00:01
b,2,2024-01-01 00:00:02
a,3,2024-01-01 00:00:12
d,4,2024-01-01 00:00:14
');
CREATE TABLE sink_out (bidder STRING NOT NULL, price INT) WITH ('connector' = 'restore-test');
`

var restoreCases = []restoreCase{
	{
		name:  "calc and limit",
		query: "SELECT bidder, price * 10 FROM bids WHERE price > 1 LIMIT 2",
		// price > 1: b, a(3), d; the first two pass.
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(b, 20)", "+I(a, 30)"},
	},
	{
		name:   "sort",
		query:  "SELECT bidder, price FROM bids ORDER BY price DESC LIMIT 3",
		script: []pstep{read(0, 1), read(0, 2), wm(0, sec(5)), read(0, 1), end()},
		want:   []string{"+I(d, 4)", "+I(a, 3)", "+I(b, 2)"},
	},
	{
		name: "over aggregate",
		query: `SELECT bidder, price, SUM(price) OVER (PARTITION BY bidder ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
FROM bids`,
		// Rows wait for the watermark: 5 s releases a 1 and b 2, the end a 3
		// (with a 1 before it in the frame) and d 4.
		script: []pstep{read(0, 1), read(0, 1), wm(0, day(5)), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(a, 1, 1)", "+I(b, 2, 2)", "+I(a, 3, 4)", "+I(d, 4, 4)"},
	},
	{
		name: "match recognize",
		query: `SELECT * FROM bids MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(A.price) AS p1, B.price AS p2
AFTER MATCH SKIP PAST LAST ROW PATTERN (A B) DEFINE B AS B.price > A.price)`,
		// In time order 1, 2, 3, 4: A 1 B 2, then A 3 B 4; rows wait for
		// the watermark (5 s releases the first two).
		script: []pstep{read(0, 1), read(0, 1), wm(0, day(5)), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(1, 2)", "+I(3, 4)"},
	},
	{
		name: "temporal sort",
		// An unbounded copy of bids, so that ORDER BY its rowtime is the
		// streaming temporal sort rather than a sort at end of input.
		ddl: `CREATE TABLE ubids (bidder STRING, price INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'bounded' = 'false', 'data' = '
a,1,2024-01-01 00:00:01
b,2,2024-01-01 00:00:02
a,3,2024-01-01 00:00:12
d,4,2024-01-01 00:00:14
');`,
		query: "SELECT bidder, price FROM ubids ORDER BY ts",
		// Released in rowtime order as the watermark passes them: the 5 s
		// watermark releases 1 s and 2 s, the end of input the rest.
		script: []pstep{read(0, 1), read(0, 1), wm(0, day(5)), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(a, 1)", "+I(b, 2)", "+I(a, 3)", "+I(d, 4)"},
	},
	{
		name:  "batch group aggregate (final rows)",
		query: "SELECT bidder, COUNT(*), SUM(price) FROM bids GROUP BY bidder ORDER BY bidder",
		batch: true,
		// Batch mode: one final row per group, no -U/+U: a has 1 and 3.
		script: []pstep{read(0, 1), read(0, 1), read(0, 2), end()},
		want:   []string{"+I(a, 2, 4)", "+I(b, 1, 2)", "+I(d, 1, 4)"},
	},
	{
		name: "batch over, ordered by a non-time column",
		query: `SELECT * FROM (SELECT bidder, price, SUM(price) OVER (PARTITION BY bidder ORDER BY price) AS s FROM bids)
ORDER BY bidder, price`,
		batch: true,
		// RANGE UNBOUNDED PRECEDING to CURRENT ROW by price: a 1 → 1, a 3 → 4;
		// b 2 → 2; d 4 → 4.
		script: []pstep{read(0, 1), read(0, 1), read(0, 2), end()},
		want:   []string{"+I(a, 1, 1)", "+I(a, 3, 4)", "+I(b, 2, 2)", "+I(d, 4, 4)"},
	},
	{
		name:   "group aggregate",
		query:  "SELECT bidder, COUNT(*), SUM(price) FROM bids GROUP BY bidder",
		script: []pstep{read(0, 1), read(0, 1), read(0, 2), end()},
		want:   []string{"+I(a, 1, 1)", "+I(b, 1, 2)", "-U(a, 1, 1)", "+U(a, 2, 4)", "+I(d, 1, 4)"},
	},
	{
		name:  "grouping sets",
		query: "SELECT bidder, COUNT(*), SUM(price), GROUPING(bidder) FROM bids GROUP BY ROLLUP(bidder)",
		// Every row counts for its bidder (GROUPING 0) and then for the
		// total (bidder NULL, GROUPING 1), in that order (the sets'
		// order in the Expand).
		script: []pstep{read(0, 1), read(0, 1), read(0, 2), end()},
		want: []string{"+I(a, 1, 1, 0)", "+I(NULL, 1, 1, 1)",
			"+I(b, 1, 2, 0)", "-U(NULL, 1, 1, 1)", "+U(NULL, 2, 3, 1)",
			"-U(a, 1, 1, 0)", "+U(a, 2, 4, 0)", "-U(NULL, 2, 3, 1)", "+U(NULL, 3, 6, 1)",
			"+I(d, 1, 4, 0)", "-U(NULL, 3, 6, 1)", "+U(NULL, 4, 10, 1)"},
	},
	{
		name: "window aggregate",
		query: `SELECT window_start, window_end, COUNT(*), SUM(price)
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end`,
		// [0s, 10s) holds a 1 and b 2, [10s, 20s) a 3 and d 4.
		script: []pstep{read(0, 1), read(0, 1), wm(0, sec(3)), read(0, 1), wm(0, sec(12)), read(0, 1), end()},
		want:   []string{"+I(00:00:00, 00:00:10, 2, 3)", "+I(00:00:10, 00:00:20, 2, 7)"},
	},
	{
		name: "session window aggregate",
		query: `SELECT bidder, window_start, window_end, COUNT(*)
FROM TABLE(SESSION(TABLE bids PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY bidder, window_start, window_end`,
		// Gap 5 s: a [1s, 6s) and [12s, 17s), b [2s, 7s), d [14s, 19s).
		// The watermark at 8 s closes a's and b's first sessions, the
		// end the rest, each time in order of the sessions' ends.
		script: []pstep{read(0, 1), read(0, 1), wm(0, sec(8)), read(0, 1), read(0, 1), end()},
		want: []string{"+I(a, 00:00:01, 00:00:06, 1)", "+I(b, 00:00:02, 00:00:07, 1)",
			"+I(a, 00:00:12, 00:00:17, 1)", "+I(d, 00:00:14, 00:00:19, 1)"},
	},
	{
		name: "window table function",
		query: `SELECT bidder, window_start, window_end
FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE price < 3`,
		// a at 1s and b at 2s: windows [0s, 10s) and [-5s, 5s), the latest
		// first, as Flink's sliding window assigner lists them.
		script: []pstep{read(0, 1), read(0, 1), read(0, 2), end()},
		want:   []string{"+I(a, 00:00:00, 00:00:10)", "+I(a, 23:59:55, 00:00:05)", "+I(b, 00:00:00, 00:00:10)", "+I(b, 23:59:55, 00:00:05)"},
	},
	{
		name: "deduplicate keep last",
		query: `SELECT bidder, price FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) AS rn FROM bids) WHERE rn = 1`,
		// a 3 (at 12s) replaces a 1 (at 1s).
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(a, 1)", "+I(b, 2)", "-U(a, 1)", "+U(a, 3)", "+I(d, 4)"},
	},
	{
		name: "top-n",
		query: `SELECT * FROM (
  SELECT bidder, price, ROW_NUMBER() OVER (ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 2`,
		// Top 2 by price over all rows: a1; b2 a1; a3 b2 (a1 leaves);
		// d4 a3 (b2 leaves).
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), read(0, 1), end()},
		want: []string{
			"+I(a, 1, 1)",
			"-U(a, 1, 1)", "+U(b, 2, 1)", "+I(a, 1, 2)",
			"-U(b, 2, 1)", "+U(a, 3, 1)", "-U(a, 1, 2)", "+U(b, 2, 2)",
			"-U(a, 3, 1)", "+U(d, 4, 1)", "-U(b, 2, 2)", "+U(a, 3, 2)",
		},
	},
	{
		name: "window top-n",
		query: `SELECT bidder, price, window_start, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))) WHERE rn <= 1`,
		script: []pstep{read(0, 1), read(0, 1), wm(0, sec(5)), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(b, 2, 00:00:00, 1)", "+I(d, 4, 00:00:10, 1)"},
	},
	{
		name: "changelog normalize",
		ddl: `CREATE TABLE ups (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'values', 'changelog-mode' = 'I,UA,D', 'data' = '
+I a,1
+I b,5
+U a,2
-D b,5
');`,
		query:  "SELECT k, v FROM ups",
		script: []pstep{read(0, 1), read(0, 2), read(0, 1), end()},
		want:   []string{"+I(a, 1)", "+I(b, 5)", "-U(a, 1)", "+U(a, 2)", "-D(b, 5)"},
	},
	{
		// Duplicated change events (table.exec.source.cdc-events-duplicate):
		// DropUpdateBefore drops the -U rows, ChangelogNormalize by the key
		// drops a row equal to the key's current one and a delete of a key
		// it does not hold; +U a,2 becomes -U a,1 / +U a,2.
		name: "changelog normalize of duplicated events",
		ddl: `CREATE TABLE dupups (k STRING, v INT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'values', 'changelog-mode' = 'I,UB,UA,D', 'data' = '
+I a,1
+I a,1
-U a,1
+U a,2
-U a,1
+U a,2
+I b,5
-D b,5
-D b,5
');`,
		query:         "SELECT k, v FROM dupups",
		cdcDuplicates: true,
		script:        []pstep{read(0, 2), read(0, 2), read(0, 2), read(0, 3), end()},
		want:          []string{"+I(a, 1)", "-U(a, 1)", "+U(a, 2)", "+I(b, 5)", "-D(b, 5)"},
	},
	{
		name: "sink materializer and not-null enforcer",
		ddl: `CREATE TABLE by_count (bidder STRING, c BIGINT NOT NULL, PRIMARY KEY (c) NOT ENFORCED) WITH ('connector' = 'restore-test');
CREATE TABLE nb (bidder STRING, price INT) WITH ('connector' = 'values', 'data' = '
a,1
b,2
,3
a,4
');`,
		query: "INSERT INTO by_count SELECT bidder, COUNT(*) FROM nb GROUP BY bidder",
		// Counts: a 1, b 1, NULL 1, a 2. Keyed by the count: c=1 holds
		// a, then b (the latest), then NULL; a's retraction leaves b
		// and NULL; c=2 gets a. The NULL bidder is a nullable column.
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(a, 1)", "+U(b, 1)", "+U(NULL, 1)", "+I(a, 2)"},
	},
	{
		name: "union and not-null drop",
		ddl: `CREATE TABLE more (bidder STRING, price INT) WITH ('connector' = 'values', 'data' = '
x,7
,8
');`,
		query: "INSERT INTO sink_out SELECT bidder, price FROM bids WHERE price >= 3 UNION ALL SELECT bidder, price FROM more",
		// The NULL bidder of more is dropped (DROP in these tests).
		script: []pstep{read(1, 1), read(0, 3), read(1, 1), read(0, 1), end()},
		want:   []string{"+I(x, 7)", "+I(a, 3)", "+I(d, 4)"},
	},
	{
		name: "regular join",
		ddl: `CREATE TABLE names (bidder STRING, name STRING) WITH ('connector' = 'values', 'data' = '
a,Ann
b,Bob
');`,
		query: "SELECT b.bidder, b.price, n.name FROM bids b LEFT JOIN names n ON b.bidder = n.bidder",
		// Source 0 is bids, 1 names. b 2 comes before Bob: padded, then
		// retracted when Bob arrives; d has no name.
		script: []pstep{read(1, 1), read(0, 1), read(0, 1), read(1, 1), read(0, 2), end()},
		want:   []string{"+I(a, 1, Ann)", "+I(b, 2, NULL)", "-D(b, 2, NULL)", "+I(b, 2, Bob)", "+I(a, 3, Ann)", "+I(d, 4, NULL)"},
	},
	{
		name: "semi join",
		ddl: `CREATE TABLE names (bidder STRING, name STRING) WITH ('connector' = 'values', 'data' = '
b,Bob
d,Dan
');`,
		query: "SELECT bidder, price FROM bids WHERE bidder NOT IN (SELECT bidder FROM names)",
		// NOT IN over nullable columns: one task, a NULL-aware anti join.
		// a 1 and a 3 match no name; Bob arrives before b 2 and Dan
		// before d 4, so neither is ever shown.
		script: []pstep{read(0, 1), read(1, 1), read(0, 2), read(1, 1), read(0, 1), end()},
		want:   []string{"+I(a, 1)", "+I(a, 3)"},
	},
	{
		name: "interval join",
		ddl: `CREATE TABLE asks (bidder STRING, price INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data' = '
a,10,2024-01-01 00:00:02
b,20,2024-01-01 00:00:03
a,30,2024-01-01 00:00:13
d,40,2024-01-01 00:00:30
');`,
		query: `SELECT b.bidder, b.price, a.price FROM bids b LEFT JOIN asks a
  ON b.bidder = a.bidder AND b.ts BETWEEN a.ts - INTERVAL '5' SECOND AND a.ts + INTERVAL '5' SECOND`,
		// a1@1s-a10@2s, b2@2s-b20@3s, a3@12s-a30@13s match; d4@14s is
		// 16 s before d40: padded when the end expires it.
		script: []pstep{read(1, 2), read(0, 2), wm(0, sec(12)), wm(1, sec(3)), read(0, 1), read(1, 1), read(0, 1), read(1, 1), end()},
		want:   []string{"+I(a, 1, 10)", "+I(b, 2, 20)", "+I(a, 3, 30)", "+I(d, 4, NULL)"},
	},
	{
		name: "window join",
		ddl: `CREATE TABLE asks (bidder STRING, price INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data' = '
a,10,2024-01-01 00:00:02
a,30,2024-01-01 00:00:13
d,40,2024-01-01 00:00:30
');`,
		query: `SELECT L.bidder, L.price, R.price FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) L
  JOIN TABLE(TUMBLE(TABLE asks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) R
  ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.bidder = R.bidder`,
		// [0s, 10s): a1·a10 (b2 alone) fires at 12 s; [10s, 20s): a3·a30
		// at the end; d4 and d40 are in different windows.
		script: []pstep{read(0, 2), read(1, 1), wm(0, sec(12)), wm(1, sec(12)), read(0, 2), read(1, 2), end()},
		want:   []string{"+I(a, 1, 10)", "+I(a, 3, 30)"},
	},
	{
		name: "set operation",
		ddl: `CREATE TABLE names (bidder STRING) WITH ('connector' = 'values', 'data' = '
a
d
x
');`,
		query: "SELECT bidder FROM bids INTERSECT ALL SELECT bidder FROM names",
		// Source 0 is bids, 1 names; a row is in the result min(left,
		// right) times. a shows once when names' a arrives (bids' second
		// a finds no second name a), d when bids' d joins names' d.
		script: []pstep{read(0, 2), read(1, 1), read(0, 1), read(1, 2), read(0, 1), end()},
		want:   []string{"+I(a)", "+I(d)"},
	},
	{
		name: "lookup join",
		ddl: `CREATE TABLE bp (bidder STRING, price INT, pt AS PROCTIME()) WITH ('connector' = 'values', 'data' = '
a,1
c,2
b,3
');
CREATE TABLE names (b STRING, full_name STRING) WITH ('connector' = 'values', 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '1', 'data' = '
a,Anna
b,Ben
');`,
		query: "SELECT bp.bidder, n.full_name FROM bp LEFT JOIN names FOR SYSTEM_TIME AS OF bp.pt AS n ON bp.bidder = n.b",
		// c has no name: padded.
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(a, Anna)", "+I(c, NULL)", "+I(b, Ben)"},
	},
	{
		name: "temporal join",
		ddl: `CREATE TABLE limits (bidder STRING, lim INT, lt TIMESTAMP(3), PRIMARY KEY (bidder) NOT ENFORCED, WATERMARK FOR lt AS lt)
WITH ('connector' = 'values', 'changelog-mode' = 'I,UA,D', 'data' = '
+I a,10,2024-01-01 00:00:00
+I d,5,2024-01-01 00:00:00
+U a,20,2024-01-01 00:00:10
');`,
		query: "SELECT b.bidder, b.price, l.lim FROM bids AS b LEFT JOIN limits FOR SYSTEM_TIME AS OF b.ts AS l ON b.bidder = l.bidder",
		// Source 0 is bids, 1 limits. a at 1s finds a's limit of 0s (10),
		// b none; a at 12s finds a's of 10s (20), d at 14s d's (5). Each
		// is emitted when both watermarks passed it.
		script: []pstep{read(1, 3), read(0, 1), wm(0, day(1.5)), wm(1, day(1.5)), read(0, 1), wm(0, day(3)), wm(1, day(3)),
			read(0, 1), wm(0, day(13)), wm(1, day(13)), read(0, 1), end()},
		want: []string{"+I(a, 1, 10)", "+I(b, 2, NULL)", "+I(a, 3, 20)", "+I(d, 4, 5)"},
	},
	{
		name: "unnest",
		ddl: `CREATE TABLE arrs (id INT, xs ARRAY<INT>) WITH ('connector' = 'values', 'data' = '
1,"[1, 2]"
2,[]
3,"[3]"
');`,
		query:  "SELECT id, x FROM arrs CROSS JOIN UNNEST(xs) AS u(x)",
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(1, 1)", "+I(1, 2)", "+I(3, 3)"},
	},
	{
		name:   "values",
		query:  "SELECT a, b FROM (VALUES (1, 'x'), (2, 'y'), (3, 'z')) AS v(a, b) WHERE a <> 2",
		script: []pstep{read(0, 1), read(0, 1), read(0, 1), end()},
		want:   []string{"+I(1, x)", "+I(3, z)"},
	},
}

func sec(s float64) int64 { return int64(s * 1000) }

// day is s seconds into 2024-01-01 (the day of the tables' rows), in epoch
// milliseconds.
func day(s float64) int64 { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + sec(s) }

func newCollector() *optest.Collector {
	return &optest.Collector{Time: func(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05") }}
}

// pstep is one step of a script over a planned query: read up to n rows
// from the source vertex src (in vertex order), a watermark from it, or the
// end of every input.
type pstep struct {
	src, n int
	wm     int64
	end    bool
}

func read(src, n int) pstep     { return pstep{src: src, n: n} }
func wm(src int, t int64) pstep { return pstep{src: src, wm: t} }
func end() pstep                { return pstep{end: true} }

func (s pstep) Run(t *testing.T, op exec.Operator, _ *optest.Runtime, c *optest.Collector) {
	t.Helper()
	p := op.(*pipeline)
	p.cur = c
	var err error
	switch {
	case s.end:
		err = p.end()
	case s.wm != 0:
		err = p.watermark(p.sources[s.src], s.wm)
	default:
		err = p.read(s.src, s.n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// harness plans a case and builds pipelines of it.
type harness struct {
	t       *testing.T
	c       restoreCase
	opTypes map[string]bool
}

// collectFactory is the 'restore-test' sink connector: its writers hand
// the rows to the pipeline that opened them.
type collectFactory struct{ cur **pipeline }

func (collectFactory) Identifier() string        { return "restore-test" }
func (collectFactory) RequiredOptions() []string { return nil }
func (collectFactory) OptionalOptions() []string { return nil }
func (f collectFactory) CreateSink(*connectors.TableContext) (connectors.Sink, error) {
	return collectSink{f.cur}, nil
}

type collectSink struct{ cur **pipeline }

func (collectSink) AcceptedChangelogMode(req types.ChangelogMode) types.ChangelogMode {
	req.UpdateBefore = false // an upsert sink
	return req
}
func (collectSink) Parallelism(int) int                     { return 0 }
func (collectSink) WritableMetadata() map[string]types.Type { return nil }
func (s collectSink) NewWriter(int, int) (exec.SinkWriter, error) {
	return &collectWriter{p: *s.cur}, nil
}

type collectWriter struct{ p *pipeline }

func (*collectWriter) Open(context.Context) error { return nil }
func (w *collectWriter) Write(_ context.Context, b *types.Batch) error {
	return w.p.cur.Push(b)
}
func (*collectWriter) Finish(context.Context) error { return nil }
func (*collectWriter) Close() error                 { return nil }

// plan plans the case's query in a fresh catalog; the writers of its sinks
// write to *cur.
func (h *harness) planWith(cur **pipeline) *plan.Plan {
	t := h.t
	reg := builtin.NewRegistry(io.Discard, io.Discard)
	reg.Register(collectFactory{cur})
	cat := catalog.New()
	p := plan.New(cat, reg, plan.Config{Parallelism: 1, Loc: time.UTC, NotNullEnforcer: exec.NotNullDrop, CDCEventsDuplicate: h.c.cdcDuplicates, RuntimeMode: h.runtimeMode()})
	stmts, err := sqlparser.ParseScript(commonDDL + h.c.ddl)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		tbl, err := p.CreateTable(st.(*sqlparser.CreateTable))
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.CreateTable(tbl, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err := sqlparser.ParseStatement(h.c.query)
	if err != nil {
		t.Fatal(err)
	}
	var plan *plan.Plan
	switch x := st.(type) {
	case *sqlparser.Insert:
		plan, err = p.PlanInsert(x)
	case *sqlparser.QueryStmt:
		plan, err = p.PlanQuery(x.Query, func(int, int) (exec.SinkWriter, error) { return &collectWriter{p: *cur}, nil })
	default:
		t.Fatalf("unexpected statement %T", st)
	}
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func (h *harness) runtimeMode() plan.RuntimeMode {
	if h.c.batch {
		return plan.Batch
	}
	return plan.Streaming
}

func (h *harness) plan() *plan.Plan {
	var p *pipeline
	return h.planWith(&p)
}

// build plans the query again and instantiates its job graph as one
// pipeline (every vertex at parallelism 1, so every exchange forwards).
func (h *harness) build() (exec.Operator, error) {
	p := &pipeline{t: h.t}
	plan := h.planWith(&p.self)
	g, err := plan.JobGraph("restore-test")
	if err != nil {
		return nil, err
	}
	p.self = p
	if err := p.instantiate(g); err != nil {
		return nil, err
	}
	for _, pv := range p.verts {
		for _, op := range pv.ops {
			h.opTypes[fmt.Sprintf("%T", op)] = true
		}
	}
	return p, nil
}
