package parser

import (
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) Statement {
	t.Helper()
	st, err := ParseStatement(src)
	if err != nil {
		t.Fatalf("ParseStatement(%q): %v", src, err)
	}
	return st
}

func mustQuery(t *testing.T, src string) *Query {
	t.Helper()
	st := mustParse(t, src)
	q, ok := st.(*QueryStmt)
	if !ok {
		t.Fatalf("%q: got %T, want *QueryStmt", src, st)
	}
	return q.Query
}

// queryTests map a query to its canonical single-line form.
var queryTests = []struct{ in, want string }{
	{"select a, b from t", "SELECT a, b FROM t"},
	{"SELECT * FROM t", "SELECT * FROM t"},
	{"SELECT t.*, u.x AS y FROM t, u", "SELECT t.*, u.x AS y FROM t, u"},
	{"SELECT DISTINCT a FROM cat.db.t AS x", "SELECT DISTINCT a FROM cat.db.t AS x"},
	{"SELECT a FROM t x WHERE a > 1", "SELECT a FROM t AS x WHERE a > 1"},
	{"SELECT a c FROM t", "SELECT a AS c FROM t"},
	{"SELECT 1", "SELECT 1"},
	{"SELECT * FROM ticker MATCH_RECOGNIZE (partition by symbol order by rowtime measures FIRST(A.price) as p, LAST(b.price, 1) as q one row per match after match skip to last B pattern (A B*? C{2,} D{,3}? E) within interval '1' hour define B as B.price < A.price, c as true) as t",
		"SELECT * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.price) AS p, LAST(b.price, 1) AS q ONE ROW PER MATCH AFTER MATCH SKIP TO LAST B PATTERN (A B*? C{2,} D{,3}? E) WITHIN INTERVAL '1' HOUR DEFINE B AS B.price < A.price, c AS TRUE) AS t"},
	{"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.x AS x AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B?) DEFINE A AS x > 0)",
		"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES A.x AS x ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B?) DEFINE A AS x > 0)"},
	{"SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1", "SELECT a, COUNT(*) FROM t GROUP BY a HAVING COUNT(*) > 1"},
	{"SELECT a FROM t ORDER BY a DESC NULLS FIRST, b ASC LIMIT 10 OFFSET 5", "SELECT a FROM t ORDER BY a DESC NULLS FIRST, b LIMIT 10 OFFSET 5"},
	{"SELECT a FROM t FETCH FIRST 3 ROWS ONLY", "SELECT a FROM t LIMIT 3"},
	{"SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT c FROM v", "SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT c FROM v"},
	{"SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v", "SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v"},
	{"(SELECT a FROM t UNION SELECT b FROM u) INTERSECT SELECT c FROM v", "(SELECT a FROM t UNION SELECT b FROM u) INTERSECT SELECT c FROM v"},
	{"SELECT a FROM t EXCEPT SELECT a FROM u", "SELECT a FROM t EXCEPT SELECT a FROM u"},
	{"VALUES (1, 'a'), (2, 'b')", "VALUES (1, 'a'), (2, 'b')"},
	{"VALUES 1, 2", "VALUES (1), (2)"},
	{"WITH x AS (SELECT a FROM t), y (c) AS (SELECT 1) SELECT * FROM x, y", "WITH x AS (SELECT a FROM t), y (c) AS (SELECT 1) SELECT * FROM x, y"},
	{"(SELECT a FROM t)", "(SELECT a FROM t)"},
	{"SELECT * FROM (SELECT a FROM t) AS s (x)", "SELECT * FROM (SELECT a FROM t) AS s (x)"},
	{"SELECT * FROM (SELECT a FROM t) s", "SELECT * FROM (SELECT a FROM t) AS s"},
	{"SELECT * FROM a JOIN b ON a.id = b.id LEFT OUTER JOIN c USING (id) CROSS JOIN d",
		"SELECT * FROM a INNER JOIN b ON a.id = b.id LEFT JOIN c USING (id) CROSS JOIN d"},
	{"SELECT * FROM a FULL JOIN b ON TRUE RIGHT JOIN c ON x", "SELECT * FROM a FULL JOIN b ON TRUE RIGHT JOIN c ON x"},
	{"SELECT * FROM a NATURAL JOIN b", "SELECT * FROM a NATURAL INNER JOIN b"},
	{"SELECT * FROM (a JOIN b ON x) JOIN c ON y", "SELECT * FROM a INNER JOIN b ON x INNER JOIN c ON y"},
	{"SELECT * FROM a JOIN (b JOIN c ON y) ON x", "SELECT * FROM a INNER JOIN (b INNER JOIN c ON y) ON x"},
	{"SELECT o.id, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.proc_time AS r ON o.cur = r.cur",
		"SELECT o.id, r.rate FROM orders AS o INNER JOIN rates FOR SYSTEM_TIME AS OF o.proc_time AS r ON o.cur = r.cur"},
	{"SELECT s, w FROM t, LATERAL TABLE(split(s)) AS T(w)", "SELECT s, w FROM t, LATERAL TABLE(split(s)) AS T (w)"},
	{"SELECT s, w FROM t LEFT JOIN LATERAL TABLE(split(s)) AS x(w) ON TRUE", "SELECT s, w FROM t LEFT JOIN LATERAL TABLE(split(s)) AS x (w) ON TRUE"},
	{"SELECT a, v FROM t CROSS JOIN UNNEST(arr) AS u (v)", "SELECT a, v FROM t CROSS JOIN UNNEST(arr) AS u (v)"},
	{"SELECT * FROM t WHERE a IN (SELECT b FROM u) AND EXISTS (SELECT 1 FROM v)", "SELECT * FROM t WHERE a IN (SELECT b FROM u) AND EXISTS (SELECT 1 FROM v)"},
	{"SELECT a, b, COUNT(*) FROM t GROUP BY GROUPING SETS ((a, b), (a), ())", "SELECT a, b, COUNT(*) FROM t GROUP BY GROUPING SETS((a, b), a, ())"},
	{"SELECT a FROM t GROUP BY ROLLUP (a, b), CUBE (c)", "SELECT a FROM t GROUP BY ROLLUP(a, b), CUBE(c)"},
	{"SELECT a FROM t GROUP BY ()", "SELECT a FROM t GROUP BY ()"},
	{"SELECT user_id, TUMBLE_START(ts, INTERVAL '1' HOUR) FROM t GROUP BY user_id, TUMBLE(ts, INTERVAL '1' HOUR)",
		"SELECT user_id, TUMBLE_START(ts, INTERVAL '1' HOUR) FROM t GROUP BY user_id, TUMBLE(ts, INTERVAL '1' HOUR)"},
	{"SELECT COUNT(*) OVER w FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)", "SELECT COUNT(*) OVER w FROM t WINDOW w AS (PARTITION BY a ORDER BY ts)"},
	// Flink documentation examples for window TVFs
	{"SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE))"},
	{"SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTE))"},
	{"SELECT window_start, window_end, SUM(price) AS total_price FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
		"SELECT window_start, window_end, SUM(price) AS total_price FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE)) GROUP BY window_start, window_end"},
	{"SELECT * FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTE, INTERVAL '10' MINUTE))"},
	{"SELECT * FROM TABLE(HOP(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SLIDE => INTERVAL '5' MINUTES, SIZE => INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(HOP(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SLIDE => INTERVAL '5' MINUTE, SIZE => INTERVAL '10' MINUTE))"},
	{"SELECT * FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))",
		"SELECT * FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTE, INTERVAL '10' MINUTE))"},
	{"SELECT * FROM TABLE(SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))",
		"SELECT * FROM TABLE(SESSION(TABLE Bid PARTITION BY item, DESCRIPTOR(bidtime), INTERVAL '5' MINUTE))"},
	{"SELECT * FROM TABLE(SESSION(DATA => TABLE Bid PARTITION BY item, TIMECOL => DESCRIPTOR(bidtime), GAP => INTERVAL '5' MINUTES))",
		"SELECT * FROM TABLE(SESSION(DATA => TABLE Bid PARTITION BY item, TIMECOL => DESCRIPTOR(bidtime), GAP => INTERVAL '5' MINUTE))"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES, INTERVAL '1' MINUTES))",
		"SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE, INTERVAL '1' MINUTE))"},
	{"SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTES, OFFSET => INTERVAL '1' MINUTES))",
		"SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTE, OFFSET => INTERVAL '1' MINUTE))"},
	{"SELECT * FROM (SELECT bidtime, price, item, supplier_id, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))) WHERE rownum <= 3",
		"SELECT * FROM (SELECT bidtime, price, item, supplier_id, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTE))) WHERE rownum <= 3"},
	{"SELECT * FROM TABLE(TUMBLE(TABLE (SELECT * FROM Bid WHERE price > 1), DESCRIPTOR(bidtime), INTERVAL '1' HOUR))",
		"SELECT * FROM TABLE(TUMBLE(TABLE (SELECT * FROM Bid WHERE price > 1), DESCRIPTOR(bidtime), INTERVAL '1' HOUR))"},
	// keywords are case-insensitive, identifiers keep their case
	{"sElEcT MyCol FrOm MyTable wHeRe MyCol iS nOt NuLl", "SELECT MyCol FROM MyTable WHERE MyCol IS NOT NULL"},
	// backticks
	{"SELECT `value`, `timestamp`, `a b` FROM `my table`", "SELECT `value`, `timestamp`, `a b` FROM `my table`"},
	// comments everywhere
	{"/* c1 */ SELECT -- c2\n a /* c3 */, -- c4\n b FROM /* c5 */ t -- c6\n WHERE /* c7 */ a = 1 -- end",
		"SELECT a, b FROM t WHERE a = 1"},
	// non-reserved keywords as column names
	{"SELECT ts, name, topic, data, comment, watermark, metadata, `partition` FROM t",
		"SELECT ts, name, topic, data, comment, watermark, metadata, `partition` FROM t"},
}

func TestQueries(t *testing.T) {
	for _, tc := range queryTests {
		st, err := ParseStatement(tc.in)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tc.in, err)
			continue
		}
		q, ok := st.(*QueryStmt)
		if !ok {
			t.Errorf("%q: got %T", tc.in, st)
			continue
		}
		got := FormatQuery(q.Query)
		if got != tc.want {
			t.Errorf("FormatQuery(%q)\n got  %s\n want %s", tc.in, got, tc.want)
			continue
		}
		// The canonical form re-parses to itself.
		q2 := mustQuery(t, got)
		if again := FormatQuery(q2); again != got {
			t.Errorf("query round trip %q -> %q", got, again)
		}
		if !strings.Contains(tc.in, "--") && st.Text() != tc.in {
			t.Errorf("Text() = %q, want %q", st.Text(), tc.in)
		}
		forEachExpr(st, func(e Expr) { checkRoundTrip(t, e) })
	}
}

// standaloneExpr reports whether e can be parsed by ParseExpr on its own
// (select-list stars and GROUP BY grouping sets cannot).
func standaloneExpr(e Expr) bool {
	switch x := e.(type) {
	case *Star, *GroupingSet:
		return false
	case *RowExpr:
		return len(x.Fields) > 0
	}
	return true
}

func TestSelectShape(t *testing.T) {
	q := mustQuery(t, "SELECT a AS x, t.* FROM t WHERE b GROUP BY c HAVING d ORDER BY e LIMIT 5")
	sel, ok := q.Body.(*Select)
	if !ok {
		t.Fatalf("body %T", q.Body)
	}
	if len(sel.Items) != 2 || sel.Items[0].Alias != "x" || sexpr(sel.Items[1].Expr) != "t.*" {
		t.Fatalf("items %+v", sel.Items)
	}
	if tn, ok := sel.From.(*TableName); !ok || tn.Name[0] != "t" {
		t.Fatalf("from %#v", sel.From)
	}
	if sexpr(sel.Where) != "b" || sexpr(sel.GroupBy[0]) != "c" || sexpr(sel.Having) != "d" || sexpr(q.Limit) != "5" || sexpr(q.OrderBy[0].Expr) != "e" {
		t.Fatalf("clauses wrong")
	}
	if sel.Pos() != (Pos{Line: 1, Col: 1, Offset: 0}) {
		t.Fatalf("pos %v", sel.Pos())
	}
	if p := sel.Where.Pos(); p.Col != 33 {
		t.Fatalf("where pos %v", p)
	}

	q = mustQuery(t, "SELECT * FROM TABLE(SESSION(DATA => TABLE Bid PARTITION BY (item, x), TIMECOL => DESCRIPTOR(bidtime), GAP => INTERVAL '5' MINUTES)) AS w")
	tf, ok := q.Body.(*Select).From.(*TableFunc)
	if !ok {
		t.Fatalf("from %T", q.Body.(*Select).From)
	}
	if tf.Alias != "w" || tf.Call.FuncName() != "SESSION" || len(tf.Call.Args) != 3 {
		t.Fatalf("tvf %+v", tf)
	}
	ta, ok := tf.Call.Args[0].Value.(*TableArg)
	if !ok || tf.Call.Args[0].Name != "DATA" || ta.Name[0] != "Bid" || len(ta.PartitionBy) != 2 {
		t.Fatalf("table arg %+v", tf.Call.Args[0])
	}
	d, ok := tf.Call.Args[1].Value.(*Descriptor)
	if !ok || tf.Call.Args[1].Name != "TIMECOL" || !reflect.DeepEqual(d.Columns, []string{"bidtime"}) {
		t.Fatalf("descriptor %+v", tf.Call.Args[1])
	}
	iv, ok := tf.Call.Args[2].Value.(*IntervalLit)
	if !ok || tf.Call.Args[2].Name != "GAP" || iv.Value != "5" || iv.Qualifier.Start != "MINUTE" {
		t.Fatalf("gap %+v", tf.Call.Args[2])
	}

	q = mustQuery(t, "SELECT a FROM t UNION ALL SELECT b FROM u")
	so, ok := q.Body.(*SetOp)
	if !ok || so.Op != "UNION" || !so.All {
		t.Fatalf("setop %+v", q.Body)
	}
	j := mustQuery(t, "SELECT * FROM a LEFT JOIN b ON a.x = b.x").Body.(*Select).From.(*Join)
	if j.Kind != JoinLeft || sexpr(j.On) != "(= a.x b.x)" {
		t.Fatalf("join %+v", j)
	}
	tn := mustQuery(t, "SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF o.pt ON o.k = r.k").Body.(*Select).From.(*Join).Right.(*TableName)
	if sexpr(tn.SystemTime) != "o.pt" {
		t.Fatalf("system time %+v", tn)
	}
}

func TestCreateTable(t *testing.T) {
	src := `CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (
  order_id BIGINT NOT NULL COMMENT 'the id',
  ` + "`user`" + ` STRING,
  price DECIMAL(10, 2),
  tags ARRAY<STRING>,
  attrs MAP<STRING, INT>,
  addr ROW<city STRING, zip INT 'postal code'>,
  ts TIMESTAMP(3),
  ltz TIMESTAMP_LTZ(3),
  event_time TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL,
  ` + "`partition`" + ` BIGINT METADATA VIRTUAL,
  headers MAP<STRING, BYTES> METADATA,
  total AS price * 2 COMMENT 'computed',
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  CONSTRAINT pk PRIMARY KEY (order_id) NOT ENFORCED
) COMMENT 'orders table'
PARTITIONED BY (order_id)
WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json'
)`
	ct, ok := mustParse(t, src).(*CreateTable)
	if !ok {
		t.Fatal("not a CreateTable")
	}
	if !ct.Temporary || !ct.IfNotExists || !reflect.DeepEqual(ct.Name, []string{"cat", "db", "orders"}) {
		t.Errorf("header %+v", ct)
	}
	if ct.Text() != src {
		t.Errorf("Text mismatch")
	}
	type col struct {
		name, kind, typ, expr, key string
		virtual                    bool
	}
	want := []col{
		{"order_id", "PHYSICAL", "BIGINT NOT NULL", "", "", false},
		{"user", "PHYSICAL", "STRING", "", "", false},
		{"price", "PHYSICAL", "DECIMAL(10, 2)", "", "", false},
		{"tags", "PHYSICAL", "ARRAY<STRING>", "", "", false},
		{"attrs", "PHYSICAL", "MAP<STRING, INT>", "", "", false},
		{"addr", "PHYSICAL", "ROW<city STRING, zip INT 'postal code'>", "", "", false},
		{"ts", "PHYSICAL", "TIMESTAMP(3)", "", "", false},
		{"ltz", "PHYSICAL", "TIMESTAMP_LTZ(3)", "", "", false},
		{"event_time", "METADATA", "TIMESTAMP(3)", "", "timestamp", true},
		{"partition", "METADATA", "BIGINT", "", "", true},
		{"headers", "METADATA", "MAP<STRING, BYTES>", "", "", false},
		{"total", "COMPUTED", "", "price * 2", "", false},
		{"proc", "COMPUTED", "", "PROCTIME()", "", false},
	}
	if len(ct.Columns) != len(want) {
		t.Fatalf("got %d columns", len(ct.Columns))
	}
	for i, w := range want {
		c := ct.Columns[i]
		typ, expr := "", ""
		if c.Type != nil {
			typ = FormatDataType(c.Type)
		}
		if c.Expr != nil {
			expr = FormatExpr(c.Expr)
		}
		got := col{c.Name, c.Kind.String(), typ, expr, c.MetadataKey, c.Virtual}
		if got != w {
			t.Errorf("column %d: got %+v want %+v", i, got, w)
		}
	}
	if c := ct.Columns[0]; !c.HasComment || c.Comment != "the id" {
		t.Errorf("column comment %+v", c)
	}
	if ct.Columns[11].ExprText != "price * 2" || ct.Columns[11].Comment != "computed" {
		t.Errorf("computed %+v", ct.Columns[11])
	}
	if len(ct.Watermarks) != 1 || ct.Watermarks[0].Column[0] != "ts" || FormatExpr(ct.Watermarks[0].Expr) != "ts - INTERVAL '5' SECOND" ||
		ct.Watermarks[0].ExprText != "ts - INTERVAL '5' SECOND" {
		t.Errorf("watermark %+v", ct.Watermarks)
	}
	if ct.PrimaryKey == nil || ct.PrimaryKey.ConstraintName != "pk" || !reflect.DeepEqual(ct.PrimaryKey.Columns, []string{"order_id"}) || ct.PrimaryKey.Enforced {
		t.Errorf("pk %+v", ct.PrimaryKey)
	}
	if ct.Comment != "orders table" || !reflect.DeepEqual(ct.PartitionedBy, []string{"order_id"}) {
		t.Errorf("comment/partition %+v", ct)
	}
	if len(ct.Options) != 4 || ct.Options[0].Key != "connector" || ct.Options[0].Value != "kafka" || ct.Options[3].Key != "format" {
		t.Errorf("options %+v", ct.Options)
	}
	// 'topic' is on line 21, column 3; its value at column 13.
	if p := ct.Options[1].KeyPos; p.Line != 21 || p.Col != 3 {
		t.Errorf("option key pos %v", p)
	}
	if p := ct.Options[1].ValuePos; p.Line != 21 || p.Col != 13 {
		t.Errorf("option value pos %v", p)
	}
	forEachExpr(ct, func(e Expr) { checkRoundTrip(t, e) })
}

func TestCreateTableVariants(t *testing.T) {
	ct := mustParse(t, "create table t (id INT PRIMARY KEY NOT ENFORCED, v STRING) with ('connector'='datagen')").(*CreateTable)
	if ct.PrimaryKey == nil || ct.PrimaryKey.Columns[0] != "id" || !ct.Columns[0].PrimaryKey {
		t.Errorf("inline pk %+v", ct.PrimaryKey)
	}
	ct = mustParse(t, "CREATE TABLE t2 WITH ('connector' = 'print') LIKE t (EXCLUDING ALL INCLUDING WATERMARKS)").(*CreateTable)
	if ct.Like == nil || ct.Like.Name[0] != "t" || len(ct.Like.Options) != 2 || ct.Like.Options[1] != (LikeOption{"INCLUDING", "WATERMARKS"}) {
		t.Errorf("like %+v", ct.Like)
	}
	ct = mustParse(t, "CREATE TABLE t3 WITH ('connector' = 'print') AS SELECT a FROM t").(*CreateTable)
	if ct.AsQuery == nil || FormatQuery(ct.AsQuery) != "SELECT a FROM t" {
		t.Errorf("ctas %+v", ct)
	}
	ct = mustParse(t, "CREATE TABLE t (a INT) WITH ()").(*CreateTable)
	if len(ct.Options) != 0 || len(ct.Columns) != 1 {
		t.Errorf("empty with %+v", ct)
	}
	types := map[string]string{
		"BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INTEGER": "INT", "BIGINT": "BIGINT",
		"FLOAT": "FLOAT", "REAL": "FLOAT", "DOUBLE PRECISION": "DOUBLE", "DEC(5)": "DECIMAL(5)", "NUMERIC": "DECIMAL",
		"CHAR(3)": "CHAR(3)", "CHARACTER VARYING(4)": "VARCHAR(4)", "VARCHAR": "VARCHAR", "STRING NOT NULL": "STRING NOT NULL",
		"BINARY(2)": "BINARY(2)", "VARBINARY(9)": "VARBINARY(9)", "BYTES": "BYTES", "DATE": "DATE", "TIME(3)": "TIME(3)",
		"TIMESTAMP": "TIMESTAMP", "TIMESTAMP(6) WITHOUT TIME ZONE": "TIMESTAMP(6)",
		"TIMESTAMP(3) WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ": "TIMESTAMP_LTZ",
		"INTERVAL YEAR TO MONTH": "INTERVAL YEAR TO MONTH", "INTERVAL DAY(2) TO SECOND(3)": "INTERVAL DAY(2) TO SECOND(3)",
		"INTERVAL SECOND(3)":                     "INTERVAL SECOND(3)",
		"ARRAY<INT NOT NULL>":                    "ARRAY<INT NOT NULL>",
		"INT ARRAY":                              "ARRAY<INT>",
		"STRING MULTISET NOT NULL":               "MULTISET<STRING> NOT NULL",
		"MULTISET<STRING>":                       "MULTISET<STRING>",
		"MAP<STRING, ARRAY<ROW<a INT>>>":         "MAP<STRING, ARRAY<ROW<a INT>>>",
		"ROW(a INT, `b c` STRING 'd')":           "ROW<a INT, `b c` STRING 'd'>",
		"ROW<>":                                  "ROW<>",
		"ROW<`from` TIMESTAMP(3) NOT NULL> NULL": "ROW<`from` TIMESTAMP(3) NOT NULL>",
	}
	for in, want := range types {
		ct := mustParse(t, "CREATE TABLE t (c "+in+")").(*CreateTable)
		if got := FormatDataType(ct.Columns[0].Type); got != want {
			t.Errorf("type %q: got %q want %q", in, got, want)
		}
	}
	dt := mustParse(t, "CREATE TABLE t (c TIMESTAMP(3) WITH LOCAL TIME ZONE)").(*CreateTable).Columns[0].Type
	if dt.Name != "TIMESTAMP_LTZ" || !dt.WithLocalTimeZone || !reflect.DeepEqual(dt.Params, []int{3}) {
		t.Errorf("ltz %+v", dt)
	}
}

func TestOtherStatements(t *testing.T) {
	cv := mustParse(t, "CREATE TEMPORARY VIEW IF NOT EXISTS v (x, y) AS SELECT a, b FROM t").(*CreateView)
	if !cv.Temporary || !cv.IfNotExists || cv.Name[0] != "v" || !reflect.DeepEqual(cv.Columns, []string{"x", "y"}) ||
		cv.QueryText != "SELECT a, b FROM t" || FormatQuery(cv.Query) != "SELECT a, b FROM t" {
		t.Errorf("view %+v", cv)
	}
	d := mustParse(t, "DROP TEMPORARY VIEW IF EXISTS v").(*Drop)
	if d.Object != "VIEW" || !d.Temporary || !d.IfExists || d.Name[0] != "v" {
		t.Errorf("drop %+v", d)
	}
	d = mustParse(t, "drop table db.t;").(*Drop)
	if d.Object != "TABLE" || d.IfExists || len(d.Name) != 2 || d.Text() != "drop table db.t" {
		t.Errorf("drop %+v", d)
	}

	inserts := map[string]string{
		"INSERT INTO sink SELECT * FROM src":                          "SELECT * FROM src",
		"INSERT INTO sink (a, b) VALUES (1, 'x'), (2, 'y')":           "VALUES (1, 'x'), (2, 'y')",
		"INSERT INTO sink WITH w AS (SELECT 1) SELECT * FROM w":       "WITH w AS (SELECT 1) SELECT * FROM w",
		"INSERT INTO sink (SELECT a FROM t)":                          "(SELECT a FROM t)",
		"INSERT INTO sink SELECT a FROM t UNION ALL SELECT a FROM u":  "SELECT a FROM t UNION ALL SELECT a FROM u",
		"INSERT OVERWRITE sink SELECT 1":                              "SELECT 1",
		"INSERT INTO p PARTITION (dt = '2024-01-01') SELECT a FROM t": "SELECT a FROM t",
		"EXECUTE INSERT INTO sink SELECT 1":                           "SELECT 1",
	}
	for in, want := range inserts {
		ins, ok := mustParse(t, in).(*Insert)
		if !ok {
			t.Errorf("%q not an insert", in)
			continue
		}
		if got := FormatQuery(ins.Query); got != want {
			t.Errorf("%q: query %q want %q", in, got, want)
		}
		if ins.Text() != in {
			t.Errorf("%q: text %q", in, ins.Text())
		}
	}
	ins := mustParse(t, "INSERT INTO sink (a, b) VALUES (1, 'x')").(*Insert)
	if !reflect.DeepEqual(ins.Columns, []string{"a", "b"}) || ins.Overwrite || ins.Table[0] != "sink" {
		t.Errorf("insert %+v", ins)
	}
	ins = mustParse(t, "INSERT OVERWRITE p PARTITION (dt = '2024-01-01', h = 1) SELECT a FROM t").(*Insert)
	if !ins.Overwrite || len(ins.Partition) != 2 || ins.Partition[1].Column != "h" {
		t.Errorf("insert partition %+v", ins)
	}

	sets := []struct {
		in, key, value string
	}{
		{"SET", "", ""},
		{"SET 'execution.runtime-mode' = 'streaming'", "execution.runtime-mode", "streaming"},
		{"set table.exec.state.ttl = '1 h'", "table.exec.state.ttl", "1 h"},
		{"SET 'parallelism.default'='2';", "parallelism.default", "2"},
		{"SET execution.runtime-mode = batch", "execution.runtime-mode", "batch"},
	}
	for _, tc := range sets {
		s := mustParse(t, tc.in).(*Set)
		if s.Key != tc.key || s.Value != tc.value {
			t.Errorf("%q: got %q=%q", tc.in, s.Key, s.Value)
		}
	}
	if r := mustParse(t, "RESET").(*Reset); r.Key != "" {
		t.Errorf("reset %+v", r)
	}
	if r := mustParse(t, "RESET 'a.b'").(*Reset); r.Key != "a.b" {
		t.Errorf("reset %+v", r)
	}

	shows := map[string]string{
		"SHOW TABLES": "TABLES", "show views": "VIEWS", "SHOW FUNCTIONS": "FUNCTIONS", "SHOW USER FUNCTIONS": "USER FUNCTIONS",
		"SHOW JOBS": "JOBS", "SHOW CATALOGS": "CATALOGS", "SHOW DATABASES": "DATABASES", "SHOW CURRENT CATALOG": "CURRENT CATALOG",
		"SHOW CURRENT DATABASE": "CURRENT DATABASE", "SHOW MODULES": "MODULES", "SHOW FULL MODULES": "FULL MODULES",
	}
	for in, want := range shows {
		if s := mustParse(t, in).(*Show); s.What != want {
			t.Errorf("%q: %q", in, s.What)
		}
	}
	s := mustParse(t, "SHOW TABLES FROM cat.db NOT LIKE 'a%'").(*Show)
	if !reflect.DeepEqual(s.From, []string{"cat", "db"}) || !s.NotLike || s.Like != "a%" {
		t.Errorf("show %+v", s)
	}
	sc := mustParse(t, "SHOW CREATE TABLE db.t").(*ShowCreate)
	if sc.Object != "TABLE" || len(sc.Name) != 2 {
		t.Errorf("show create %+v", sc)
	}
	if sc := mustParse(t, "SHOW CREATE VIEW v").(*ShowCreate); sc.Object != "VIEW" {
		t.Errorf("show create %+v", sc)
	}
	if d := mustParse(t, "DESCRIBE t").(*Describe); d.Name[0] != "t" {
		t.Errorf("describe %+v", d)
	}
	if d := mustParse(t, "desc `my t`").(*Describe); d.Name[0] != "my t" {
		t.Errorf("desc %+v", d)
	}

	e := mustParse(t, "EXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT * FROM t").(*Explain)
	if !reflect.DeepEqual(e.Details, []string{"CHANGELOG_MODE", "ESTIMATED_COST"}) {
		t.Errorf("explain %+v", e)
	}
	if q, ok := e.Statement.(*QueryStmt); !ok || q.Text() != "SELECT * FROM t" {
		t.Errorf("explain inner %+v", e.Statement)
	}
	e = mustParse(t, "EXPLAIN PLAN FOR INSERT INTO s SELECT 1").(*Explain)
	if !e.PlanFor || len(e.Details) != 0 {
		t.Errorf("explain %+v", e)
	}
	if _, ok := e.Statement.(*Insert); !ok {
		t.Errorf("explain inner %T", e.Statement)
	}
	e = mustParse(t, "EXPLAIN json_execution_plan, plan_advice SELECT 1").(*Explain)
	if !reflect.DeepEqual(e.Details, []string{"JSON_EXECUTION_PLAN", "PLAN_ADVICE"}) {
		t.Errorf("explain %+v", e)
	}
	e = mustParse(t, "EXPLAIN STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2; END").(*Explain)
	if ss, ok := e.Statement.(*StatementSet); !ok || len(ss.Inserts) != 2 {
		t.Errorf("explain statement set %+v", e.Statement)
	}

	ss := mustParse(t, "EXECUTE STATEMENT SET\nBEGIN\n  INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t;\n  INSERT INTO b SELECT 2;\nEND;").(*StatementSet)
	if len(ss.Inserts) != 2 || ss.Inserts[1].Table[0] != "b" {
		t.Errorf("statement set %+v", ss)
	}
	if ss.Inserts[1].Pos().Line != 4 || ss.Inserts[1].Text() != "INSERT INTO b SELECT 2" {
		t.Errorf("insert in set %v %q", ss.Inserts[1].Pos(), ss.Inserts[1].Text())
	}
	if _, ok := mustParse(t, "BEGIN STATEMENT SET").(*BeginStatementSet); !ok {
		t.Error("begin statement set")
	}
	if _, ok := mustParse(t, "END").(*End); !ok {
		t.Error("end")
	}

	sj := mustParse(t, "STOP JOB 'abc123' WITH SAVEPOINT WITH DRAIN").(*StopJob)
	if sj.JobID != "abc123" || !sj.WithSavepoint || !sj.WithDrain {
		t.Errorf("stop job %+v", sj)
	}
	if sj := mustParse(t, "STOP JOB 'x'").(*StopJob); sj.WithSavepoint || sj.WithDrain {
		t.Errorf("stop job %+v", sj)
	}
	if u := mustParse(t, "USE CATALOG my_cat").(*Use); !u.Catalog || u.Name[0] != "my_cat" {
		t.Errorf("use %+v", u)
	}
	if u := mustParse(t, "USE cat.db").(*Use); u.Catalog || len(u.Name) != 2 {
		t.Errorf("use %+v", u)
	}
}

func TestParseScript(t *testing.T) {
	src := `-- a script
SET 'execution.runtime-mode' = 'streaming';

CREATE TABLE src (a INT) WITH ('connector' = 'datagen');
CREATE TABLE s1 (a INT) WITH ('connector' = 'print'); ;
/* statement set, SQL-client style */
BEGIN STATEMENT SET;
INSERT INTO s1 SELECT a FROM src;
INSERT INTO s1 SELECT a + 1 FROM src;
END;
EXECUTE STATEMENT SET BEGIN
  INSERT INTO s1 SELECT 'a;b' FROM src;
END;
SELECT ';' AS semi FROM src -- no trailing semicolon
`
	stmts, err := ParseScript(src)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, s := range stmts {
		kinds = append(kinds, strings.TrimPrefix(reflect.TypeOf(s).String(), "*parser."))
	}
	want := []string{"Set", "CreateTable", "CreateTable", "StatementSet", "StatementSet", "QueryStmt"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v", kinds)
	}
	if p := stmts[1].Pos(); p.Line != 4 || p.Col != 1 {
		t.Errorf("pos %v", p)
	}
	set := stmts[3].(*StatementSet)
	if len(set.Inserts) != 2 || !strings.HasPrefix(set.Text(), "BEGIN STATEMENT SET;") || !strings.HasSuffix(set.Text(), "END") {
		t.Errorf("client set %q", set.Text())
	}
	if got := stmts[5].Text(); got != "SELECT ';' AS semi FROM src" {
		t.Errorf("text %q", got)
	}
	if got := stmts[2].Text(); got != "CREATE TABLE s1 (a INT) WITH ('connector' = 'print')" {
		t.Errorf("text %q", got)
	}
	if stmts, err := ParseScript("  -- nothing\n ; ;"); err != nil || len(stmts) != 0 {
		t.Errorf("empty script: %v %v", stmts, err)
	}
}

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		in       string
		complete []string
		rest     string
	}{
		{"SELECT 1;", []string{"SELECT 1"}, ""},
		{"SELECT 1; SELECT 2", []string{"SELECT 1"}, "SELECT 2"},
		{"SELECT ';'", nil, "SELECT ';'"},
		{"SELECT 'a;\nb'; SELECT `x;y` FROM t; -- c;\n", []string{"SELECT 'a;\nb'", "SELECT `x;y` FROM t"}, ""},
		{"SELECT 'abc;", nil, "SELECT 'abc;"},
		{"SELECT 1 /* ; */;", []string{"SELECT 1"}, ""},
		{"SELECT 1 /* ; ", nil, "SELECT 1 /* ; "},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t;", nil,
			"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t;"},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END; SELECT 2;",
			[]string{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END", "SELECT 2"}, ""},
		{"BEGIN STATEMENT SET; INSERT INTO a SELECT 1;", []string{"BEGIN STATEMENT SET", "INSERT INTO a SELECT 1"}, ""},
		{"  ;; \n", nil, ""},
		{"-- only a comment", nil, ""},
		{"SELECT \"x\";", []string{"SELECT \"x\""}, ""},
	}
	for _, tc := range tests {
		c, r := SplitStatements(tc.in)
		if !reflect.DeepEqual(c, tc.complete) || r != tc.rest {
			t.Errorf("SplitStatements(%q) = %q, %q; want %q, %q", tc.in, c, r, tc.complete, tc.rest)
		}
	}
}

// forEachExpr calls fn for the top-level expressions of a statement.
func forEachExpr(st Statement, fn func(Expr)) {
	var query func(q *Query)
	var table func(r TableRef)
	table = func(r TableRef) {
		switch x := r.(type) {
		case *Join:
			table(x.Left)
			table(x.Right)
			if x.On != nil {
				fn(x.On)
			}
		case *TableFunc:
			fn(x.Call)
		case *DerivedTable:
			query(x.Query)
		case *TableName:
			if x.SystemTime != nil {
				fn(x.SystemTime)
			}
		}
	}
	var body func(b QueryExpr)
	body = func(b QueryExpr) {
		switch x := b.(type) {
		case *Select:
			for _, it := range x.Items {
				fn(it.Expr)
			}
			if x.From != nil {
				table(x.From)
			}
			for _, e := range []Expr{x.Where, x.Having} {
				if e != nil {
					fn(e)
				}
			}
			for _, g := range x.GroupBy {
				fn(g)
			}
		case *SetOp:
			body(x.Left)
			body(x.Right)
		case *Query:
			query(x)
		case *Values:
			for _, r := range x.Rows {
				for _, e := range r {
					fn(e)
				}
			}
		}
	}
	orig := fn
	fn = func(e Expr) {
		if standaloneExpr(e) {
			orig(e)
		}
	}
	query = func(q *Query) {
		if q == nil {
			return
		}
		for _, c := range q.With {
			query(c.Query)
		}
		body(q.Body)
		for _, o := range q.OrderBy {
			fn(o.Expr)
		}
	}
	switch x := st.(type) {
	case *QueryStmt:
		query(x.Query)
	case *Insert:
		query(x.Query)
	case *CreateView:
		query(x.Query)
	case *CreateTable:
		for _, c := range x.Columns {
			if c.Expr != nil {
				fn(c.Expr)
			}
		}
		for _, w := range x.Watermarks {
			fn(w.Expr)
		}
		query(x.AsQuery)
	}
}

// Table hints are parsed, not skipped as comments (issue 9 item 20); a
// plain block comment still is.
func TestTableHints(t *testing.T) {
	st, err := ParseStatement("SELECT a FROM t /* note */ /*+ OPTIONS('k' = 'v', k2 = 'w'), LOOKUP(x) */ AS u")
	if err != nil {
		t.Fatal(err)
	}
	tn := st.(*QueryStmt).Query.Body.(*Select).From.(*TableName)
	if len(tn.Hints) != 2 || tn.Alias != "u" {
		t.Fatalf("hints %+v, alias %q", tn.Hints, tn.Alias)
	}
	h := tn.Hints[0]
	if h.Name != "OPTIONS" || len(h.Options) != 2 || h.Options[0].Key != "k" || h.Options[0].Value != "v" || h.Options[1].Key != "k2" || h.Options[1].Value != "w" {
		t.Errorf("OPTIONS hint %+v", h)
	}
	if l := tn.Hints[1]; l.Name != "LOOKUP" || len(l.Args) != 1 || l.Args[0] != "x" {
		t.Errorf("LOOKUP hint %+v", l)
	}
	if got, want := FormatQuery(st.(*QueryStmt).Query), "SELECT a FROM t /*+ OPTIONS('k' = 'v', 'k2' = 'w'), LOOKUP('x') */ AS u"; got != want {
		t.Errorf("formatted %q, want %q", got, want)
	}
	ins, err := ParseStatement("INSERT INTO s /*+ OPTIONS('sink.parallelism' = '2') */ SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	if h := ins.(*Insert).Hints; len(h) != 1 || h[0].Options[0].Key != "sink.parallelism" {
		t.Errorf("INSERT hints %+v", h)
	}
	if _, err := ParseStatement("SELECT a FROM t /*+ OPTIONS('k' = 'v')"); err == nil {
		t.Error("an unterminated hint parsed")
	}
}

// TestParseExplainMigration: EXPLAIN MIGRATION FROM 'path' takes an INSERT
// or a statement set; anything else, or no path, is refused.
func TestParseExplainMigration(t *testing.T) {
	e := mustParse(t, "EXPLAIN MIGRATION FROM 'file:///sp/savepoint-1' INSERT INTO o SELECT k FROM t").(*Explain)
	if e.MigrationFrom != "file:///sp/savepoint-1" {
		t.Errorf("path %q", e.MigrationFrom)
	}
	if ins, ok := e.Statement.(*Insert); !ok || ins.Text() != "INSERT INTO o SELECT k FROM t" {
		t.Errorf("statement %T %q", e.Statement, e.Statement.Text())
	}
	e = mustParse(t, "EXPLAIN MIGRATION FROM '/sp' EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2; END").(*Explain)
	if ss, ok := e.Statement.(*StatementSet); !ok || len(ss.Inserts) != 2 || e.MigrationFrom != "/sp" {
		t.Errorf("statement set: %T %+v", e.Statement, e)
	}
	// A plain EXPLAIN of a table named migration is still a query.
	if e := mustParse(t, "EXPLAIN SELECT * FROM migration").(*Explain); e.MigrationFrom != "" {
		t.Errorf("plain explain %+v", e)
	}
	for src, want := range map[string]string{
		"EXPLAIN MIGRATION FROM '' INSERT INTO o SELECT 1": "EXPLAIN MIGRATION FROM needs the path of a savepoint or checkpoint",
		"EXPLAIN MIGRATION FROM '/sp' SELECT 1":            `Was expecting one of:`,
		"EXPLAIN MIGRATION FROM INSERT INTO o SELECT 1":    `Encountered "INSERT"`,
	} {
		if _, err := ParseStatement(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", src, err, want)
		}
	}
}
