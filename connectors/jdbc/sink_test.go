package jdbc_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/session"
)

// TestMain is the package's (xa_test.go): one server for both test packages.

const timeout = 60 * time.Second

type sessionT = session.Session

func newSessionConf(conf map[string]string) (*session.Session, error) {
	if conf == nil {
		conf = map[string]string{}
	}
	conf["table.local-time-zone"] = "UTC"
	return session.New(session.Options{Config: conf})
}

func newSession(t *testing.T, conf map[string]string) *session.Session {
	t.Helper()
	s, err := newSessionConf(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func execute(s *session.Session, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := s.Execute(ctx, sql)
	return err
}

func run(t *testing.T, s *session.Session, sql string) {
	t.Helper()
	if err := execute(s, sql); err != nil {
		t.Fatalf("%v\nin:\n%s", err, sql)
	}
}

// jdbcURL is the database's url as a table names it; the test server
// trusts the user postgres.
func jdbcURL(db *pgtest.DB) string { return db.JDBCURL() + "?user=postgres" }

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestAppendSinkTypeMapping writes every type of Flink's PostgreSQL
// mapping through the append (COPY) path; psql shows the values as
// PostgreSQL stores them.
func TestAppendSinkTypeMapping(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE typed (
  b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
  dc numeric(10,2), s varchar(10), txt text, bin bytea, d date, tm time(3), ts timestamp(3), ltz timestamptz(3))`)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE src (b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT, f4 FLOAT, f8 DOUBLE, dc DECIMAL(10,2), s STRING, txt STRING,
  bin BYTES, d DATE, tm TIME(3), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3)) WITH ('connector' = 'values', 'data' = '
TRUE,-32768,2147483647,-9223372036854775808,1.5,2.25,12345678.91,héllo,"a,b",x''00ff'',2024-02-29,23:59:59.125,2024-01-01 00:00:00.001,2024-06-01 12:00:00.5
FALSE,,,,,,,,,,,,,
');
CREATE TABLE typed (b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT, f4 FLOAT, f8 DOUBLE, dc DECIMAL(10,2), s STRING, txt STRING,
  bin BYTES, d DATE, tm TIME(3), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3)) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'typed');
INSERT INTO typed SELECT * FROM src;`, jdbcURL(db)))
	got := db.Query(t, `SET TIME ZONE 'UTC'; SELECT b, i2, i4, i8, f4, f8, dc, s, txt, encode(bin, 'hex'), d, tm, ts, ltz FROM typed ORDER BY b DESC`)
	equal(t, "rows", got, []string{
		"t|-32768|2147483647|-9223372036854775808|1.5|2.25|12345678.91|héllo|a,b|00ff|2024-02-29|23:59:59.125|2024-01-01 00:00:00.001|2024-06-01 12:00:00.5+00",
		"f|||||||||||||",
	})
	// Read back through the scan: the same values as the source's.
	got = query(t, s, "SELECT * FROM typed")
	sort.Strings(got)
	equal(t, "scan", got, []string{
		"+I[FALSE, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]",
		"+I[TRUE, -32768, 2147483647, -9223372036854775808, 1.5, 2.25, 12345678.91, héllo, a,b, x'00ff', 2024-02-29, 23:59:59.125, 2024-01-01 00:00:00.001, 2024-06-01 12:00:00.500]",
	})
}

// TestUpsertSinkFromUpdatingQuery: a GROUP BY's changelog (+I, -U/+U per
// update) ends as one row per key; a key the aggregate retracts is
// deleted.
func TestUpsertSinkFromUpdatingQuery(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE totals (name text PRIMARY KEY, total bigint, cnt bigint)`)
	// A row that the job must replace, and one it must leave alone.
	db.Exec(t, `INSERT INTO totals VALUES ('bob', 999, 9), ('zed', 1, 1)`)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE orders (name STRING, amount BIGINT) WITH ('connector' = 'values', 'data' = '
alice,10
bob,5
alice,7
carol,1
bob,1
');
CREATE TABLE totals (name STRING, total BIGINT, cnt BIGINT, PRIMARY KEY (name) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'totals', 'sink.buffer-flush.max-rows' = '2');
INSERT INTO totals SELECT name, SUM(amount), COUNT(*) FROM orders GROUP BY name;`, jdbcURL(db)))
	// alice 10+7 in 2 rows, bob 5+1 in 2 rows (replacing 999), carol 1.
	equal(t, "after the aggregate", db.Query(t, "SELECT name, total, cnt FROM totals ORDER BY name"),
		[]string{"alice|17|2", "bob|6|2", "carol|1|1", "zed|1|1"})

	// A retraction in the input makes the aggregate delete carol's row,
	// which the first job wrote.
	run(t, s, fmt.Sprintf(`
CREATE TABLE changes (name STRING, amount BIGINT) WITH ('connector' = 'values', 'changelog-mode' = 'I,UB,UA,D', 'data' = '
+I dave,4
+I carol,1
-D carol,1
+I dave,4
');
CREATE TABLE totals2 (name STRING, total BIGINT, cnt BIGINT, PRIMARY KEY (name) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'totals', 'sink.buffer-flush.max-rows' = '1');
INSERT INTO totals2 SELECT name, SUM(amount), COUNT(*) FROM changes GROUP BY name;`, jdbcURL(db)))
	equal(t, "after the changelog", db.Query(t, "SELECT name, total, cnt FROM totals ORDER BY name"),
		[]string{"alice|17|2", "bob|6|2", "dave|8|2", "zed|1|1"})
}

// TestBadValuesNameRowAndColumn: a value the column cannot hold fails the
// job with the row and the column named, and a failed flush writes none
// of its rows.
func TestBadValuesNameRowAndColumn(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE narrow (id int PRIMARY KEY, code varchar(3), price numeric(4,2), small smallint NOT NULL, CHECK (id > 0))`)
	s := newSession(t, nil)
	url := jdbcURL(db)
	cases := []struct {
		data, pk string
		want     []string
	}{
		{"1,abc,1.5,1\n2,abcd,1.5,1", "",
			[]string{"row +I[2, abcd, 1.50, 1]", "column 'code' (character varying(3))", "too long"}},
		{"1,abc,1.5,1\n2,ab,100.00,1", "",
			[]string{"row +I[2, ab, 100.00, 1]", "column 'price' (numeric(4,2))", "at most 2 digits before the decimal point"}},
		{"3,ab,1.5,40000", ", PRIMARY KEY (id) NOT ENFORCED",
			[]string{"row +I[3, ab, 1.50, 40000]", "column 'small' (smallint)", "out of the range of smallint"}},
		// Server-side: NOT NULL through COPY (append) and through upsert.
		{"1,abc,1.5,1\n4,ab,1.5,", "",
			[]string{"row +I[4, ab, 1.50, NULL]", "(column 'small')", "SQLSTATE 23502"}},
		{"5,ab,1.5,", ", PRIMARY KEY (id) NOT ENFORCED",
			[]string{"row +I[5, ab, 1.50, NULL]", "(column 'small')", "SQLSTATE 23502"}},
		// A CHECK constraint names no column; the row is named.
		{"1,abc,1.5,1\n-1,ab,1.5,1", ", PRIMARY KEY (id) NOT ENFORCED",
			[]string{"row +I[-1, ab, 1.50, 1]", "narrow_id_check", "SQLSTATE 23514"}},
	}
	for i, c := range cases {
		err := execute(s, fmt.Sprintf(`
CREATE TEMPORARY TABLE src%[1]d (id INT, code STRING, price DECIMAL(10,2), small INT) WITH ('connector' = 'values', 'data' = '%[2]s');
CREATE TEMPORARY TABLE narrow%[1]d (id INT, code STRING, price DECIMAL(10,2), small INT%[3]s)
  WITH ('connector' = 'jdbc', 'url' = '%[4]s', 'table-name' = 'narrow', 'sink.max-retries' = '0');
INSERT INTO narrow%[1]d SELECT * FROM src%[1]d;`, i, c.data, c.pk, url))
		if err == nil {
			t.Errorf("case %d: the job succeeded", i)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error does not say %q:\n%v", i, w, err)
			}
		}
		if got := db.Query(t, "SELECT count(*) FROM narrow"); got[0] != "0" {
			t.Errorf("case %d: the failed flush left %s rows", i, got[0])
		}
	}
}

// TestMissingTableAndColumn: the job fails at start naming what is missing.
func TestMissingTableAndColumn(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE present (id int, name text)`)
	s := newSession(t, nil)
	run(t, s, `CREATE TABLE src (id INT, extra STRING) WITH ('connector' = 'values', 'data' = '1,x');`)
	err := execute(s, fmt.Sprintf(`CREATE TABLE t1 (id INT, extra STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'absent');
INSERT INTO t1 SELECT * FROM src;`, jdbcURL(db)))
	if err == nil || !strings.Contains(err.Error(), "the table 'absent' does not exist in database "+db.Name) {
		t.Errorf("missing table: %v", err)
	}
	err = execute(s, fmt.Sprintf(`CREATE TABLE t2 (id INT, extra STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'public.present');
INSERT INTO t2 SELECT * FROM src;`, jdbcURL(db)))
	if err == nil || !strings.Contains(err.Error(), "column 'extra' does not exist in PostgreSQL table public.present (its columns are id, name)") {
		t.Errorf("missing column: %v", err)
	}
	err = execute(s, fmt.Sprintf(`CREATE TABLE t3 (id STRING, name STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'present');
INSERT INTO t3 SELECT CAST(id AS STRING), extra FROM src;`, jdbcURL(db)))
	if err == nil || !strings.Contains(err.Error(), "column 'id' of PostgreSQL table present is integer, which does not map to the Flink type STRING") {
		t.Errorf("wrong type: %v", err)
	}
}

// TestOptionErrors: Flink's validation messages.
func TestOptionErrors(t *testing.T) {
	s := newSession(t, nil)
	base := "'connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:1/db', 'table-name' = 't'"
	cases := []struct{ opts, want string }{
		{"'connector' = 'jdbc', 'url' = 'jdbc:mysql://127.0.0.1:3306/db', 'table-name' = 't'",
			"Could not find any jdbc dialect factory that can handle url 'jdbc:mysql://127.0.0.1:3306/db'"},
		{base + ", 'username' = 'u'", "Either all or none of the following options should be provided:\nusername\npassword"},
		{base + ", 'scan.partition.column' = 'id'", "Either all or none of the following options should be provided:\nscan.partition.column"},
		{base + ", 'sink.max-retries' = '-1'", "The value of 'sink.max-retries' option shouldn't be negative, but is -1."},
		{base + ", 'lookup.max-retries' = '-2'", "The value of 'lookup.max-retries' option shouldn't be negative, but is -2."},
		{base + ", 'sink.delivery-guarantee' = 'none'", "Invalid value for option 'sink.delivery-guarantee'. Expected one of [at-least-once, exactly-once], but was: none"},
		{base + ", 'sink.delivery-guarantee' = 'exactly-once'", "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE."},
		{base + ", 'connection.max-retry-timeout' = '500 ms'", "The value of 'connection.max-retry-timeout' option must be in second granularity and shouldn't be smaller than 1 second"},
		{base + ", 'lookup.cache' = 'ALL'", "Invalid value for option 'lookup.cache'. Expected one of [NONE, PARTIAL, FULL], but was: ALL"},
		{base + ", 'sink.semantic' = 'x'", "Unsupported options found for 'jdbc'."},
		{base + ", 'scan.partition.column' = 'id', 'scan.partition.num' = '2', 'scan.partition.lower-bound' = '5', 'scan.partition.upper-bound' = '1'",
			"'scan.partition.lower-bound'='5' must not be larger than 'scan.partition.upper-bound'='1'."},
		{"'connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:1/db?foo=1', 'table-name' = 't'", "the url parameter 'foo' is not supported"},
	}
	for i, c := range cases {
		err := execute(s, fmt.Sprintf("CREATE TEMPORARY TABLE o%d (id INT) WITH (%s);\nINSERT INTO o%d SELECT 1;", i, c.opts, i))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.opts, err, c.want)
		}
	}
	// A type the dialect does not take.
	err := execute(s, fmt.Sprintf("CREATE TEMPORARY TABLE m (id INT, m MAP<STRING, INT>) WITH (%s);\nINSERT INTO m SELECT 1, CAST(NULL AS MAP<STRING, INT>);", base))
	if err == nil || !strings.Contains(err.Error(), "The PostgreSQL dialect doesn't support type: MAP<STRING, INT>.") {
		t.Errorf("MAP column: %v", err)
	}
}

// TestUsernameAndPassword: the sink connects as 'username' (the test
// server trusts every local user, so the password is sent but not
// checked); the url without user= would connect as the OS user.
func TestUsernameAndPassword(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'writer') THEN CREATE ROLE writer LOGIN PASSWORD 'secret'; END IF; END $$;
CREATE TABLE who (id int, by_user text DEFAULT current_user); GRANT INSERT ON who TO writer`)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE who (id INT) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'who', 'username' = 'writer', 'password' = 'secret');
INSERT INTO who VALUES (1);`, db.JDBCURL()))
	equal(t, "rows", db.Query(t, "SELECT id, by_user FROM who"), []string{"1|writer"})
}

// TestExactlyOnceCheckpointedJob: an exactly-once sink at parallelism 2 in
// a checkpointed job: every row is committed once by the end (the final
// checkpoint commits the last transactions) and nothing stays prepared.
func TestExactlyOnceCheckpointedJob(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE counts (k int PRIMARY KEY, n bigint); CREATE TABLE events (k int, v bigint)`)
	s := newSession(t, map[string]string{"execution.checkpointing.interval": "50 ms", "state.checkpoints.dir": "file://" + t.TempDir()})
	run(t, s, fmt.Sprintf(`
CREATE TABLE src (k INT, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3000', 'rows-per-second' = '20000',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '1', 'fields.k.end' = '3000', 'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.end' = '3000');
CREATE TABLE events (k INT, v BIGINT) WITH ('connector' = 'jdbc', 'url' = '%[1]s', 'table-name' = 'events',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'eo-append', 'sink.parallelism' = '2');
CREATE TABLE counts (k INT, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'jdbc', 'url' = '%[1]s', 'table-name' = 'counts',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'eo-upsert', 'sink.parallelism' = '2');
INSERT INTO events SELECT k, v FROM src;
INSERT INTO counts SELECT MOD(k, 10), COUNT(*) FROM src GROUP BY MOD(k, 10);`, jdbcURL(db)))
	// 1..3000 once each: count 3000, sum 3000·3001/2.
	equal(t, "append", db.Query(t, "SELECT count(*), count(DISTINCT k), sum(v) FROM events"), []string{"3000|3000|4501500"})
	// 300 of each remainder.
	equal(t, "upsert", db.Query(t, "SELECT count(*), min(n), max(n) FROM counts"), []string{"10|300|300"})
	equal(t, "prepared", db.Query(t, "SELECT count(*) FROM pg_prepared_xacts"), []string{"0"})
}

// TestArrays: ARRAY columns map to PostgreSQL arrays of the element type,
// NULL elements included, written and read back; an element the column
// cannot hold is named.
func TestArrays(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE arr (id int, ints integer[], names varchar(3)[])`)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE src (id INT, ints ARRAY<INT>, names ARRAY<STRING>) WITH ('connector' = 'values', 'data' = '
1,"[1, 2, 3]","[ab, c]"
2,[],
');
CREATE TABLE arr (id INT, ints ARRAY<INT>, names ARRAY<STRING>) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = 'arr');
INSERT INTO arr SELECT * FROM src;
INSERT INTO arr SELECT 3, ARRAY[CAST(NULL AS INT), 7], ARRAY['x'];`, jdbcURL(db)))
	equal(t, "psql", db.Query(t, "SELECT id, ints, names FROM arr ORDER BY id"), []string{"1|{1,2,3}|{ab,c}", "2|{}|", "3|{NULL,7}|{x}"})
	got := query(t, s, "SELECT * FROM arr")
	sort.Strings(got)
	equal(t, "scan", got, []string{"+I[1, [1, 2, 3], [ab, c]]", "+I[2, [], NULL]", "+I[3, [NULL, 7], [x]]"})
	err := execute(s, "INSERT INTO arr SELECT 4, ARRAY[1], ARRAY['abcd'];")
	if err == nil || !strings.Contains(err.Error(), "column 'names' (character varying(3)[])") || !strings.Contains(err.Error(), "element 1: the value of 4 characters is too long") {
		t.Errorf("too long element: %v", err)
	}
}
