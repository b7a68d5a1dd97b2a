package jdbc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// query runs a bounded SELECT and returns its rows as "+I[a, b]" lines.
func query(t *testing.T, s *session.Session, sql string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, err := parser.ParseStatement(sql)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.ExecuteStatement(ctx, st)
	if err != nil {
		t.Fatalf("%v\nin: %s", err, sql)
	}
	defer r.Query.Cancel()
	var lines []string
	for {
		cs, err := r.Query.Next(ctx)
		if errors.Is(err, io.EOF) {
			return lines
		}
		if err != nil {
			t.Fatalf("%v\nin: %s", err, sql)
		}
		for _, c := range cs {
			line := c.Kind.String() + "["
			for i, col := range r.Query.Schema {
				if i > 0 {
					line += ", "
				}
				line += types.FormatSQL(c.Row[i], col.Type, nil)
			}
			lines = append(lines, line+"]")
		}
	}
}

// TestScanPartitionsEqualPlainScan: a scan split into 4 partitions of the
// id range reads the rows a plain scan reads, at parallelism 2 and with a
// small fetch size; rows outside the bounds are not read (Flink's bounds
// filter too).
func TestScanPartitionsEqualPlainScan(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE items (id bigint PRIMARY KEY, name varchar(20), price numeric(8,2), seen timestamp(3));
INSERT INTO items SELECT i, 'item-' || i, i * 1.25, timestamp '2024-01-01 00:00:00' + i * interval '1 second' FROM generate_series(1, 50) i;
INSERT INTO items VALUES (51, NULL, NULL, NULL)`)
	s := newSession(t, map[string]string{"parallelism.default": "2"})
	run(t, s, fmt.Sprintf(`
CREATE TABLE plain (id BIGINT, name STRING, price DECIMAL(8,2), seen TIMESTAMP(3)) WITH (
  'connector' = 'jdbc', 'url' = '%[1]s', 'table-name' = 'items');
CREATE TABLE parts (id BIGINT, name STRING, price DECIMAL(8,2), seen TIMESTAMP(3)) WITH (
  'connector' = 'jdbc', 'url' = '%[1]s', 'table-name' = 'items', 'scan.fetch-size' = '3',
  'scan.partition.column' = 'id', 'scan.partition.num' = '4',
  'scan.partition.lower-bound' = '1', 'scan.partition.upper-bound' = '51');
CREATE TABLE bounded (id BIGINT, name STRING, price DECIMAL(8,2), seen TIMESTAMP(3)) WITH (
  'connector' = 'jdbc', 'url' = '%[1]s', 'table-name' = 'items',
  'scan.partition.column' = 'id', 'scan.partition.num' = '3',
  'scan.partition.lower-bound' = '10', 'scan.partition.upper-bound' = '12');`, jdbcURL(db)))
	plain := query(t, s, "SELECT * FROM plain")
	parts := query(t, s, "SELECT * FROM parts")
	sort.Strings(plain)
	sort.Strings(parts)
	if len(plain) != 51 {
		t.Fatalf("plain scan: %d rows, want 51", len(plain))
	}
	equal(t, "partitioned scan", parts, plain)
	// Worked out by hand from the INSERT: id 3 is item-3, 3.75, 3 s past midnight.
	found := false
	for _, l := range plain {
		found = found || l == "+I[3, item-3, 3.75, 2024-01-01 00:00:03.000]"
	}
	if !found {
		t.Errorf("row 3 not read as +I[3, item-3, 3.75, 2024-01-01 00:00:03.000]: %v", plain[:5])
	}
	got := query(t, s, "SELECT id FROM bounded")
	sort.Strings(got)
	equal(t, "bounds filter", got, []string{"+I[10]", "+I[11]", "+I[12]"})
}

// TestLookupJoinPartialCache joins a stream against a PostgreSQL table
// with a PARTIAL cache: a key seen twice joins the same row both times, a
// missing key gives no row (inner join) or NULLs (left join).
func TestLookupJoinPartialCache(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE users (id int PRIMARY KEY, name text, tier smallint);
INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 2), (3, 'cid', 3)`)
	// The server logs each lookup with its key.
	db.Exec(t, "ALTER DATABASE "+db.Name+" SET log_statement = 'all'")
	lookups := func(key string) int { return strings.Count(db.Log(), "parameters: $1 = '"+key+"'") }
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE clicks (uid INT, page STRING, proc AS PROCTIME()) WITH ('connector' = 'values', 'data' = '
1,home
2,cart
4,home
1,cart
');
CREATE TABLE users (id INT, name STRING, tier SMALLINT, PRIMARY KEY (id) NOT ENFORCED) WITH (
  'connector' = 'jdbc', 'url' = '%s', 'table-name' = 'users',
  'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100', 'lookup.partial-cache.expire-after-write' = '1 h',
  'lookup.max-retries' = '1');`, jdbcURL(db)))
	got := query(t, s, "SELECT c.uid, c.page, u.name, u.tier FROM clicks AS c JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.uid = u.id")
	equal(t, "inner lookup join", got, []string{"+I[1, home, ann, 1]", "+I[2, cart, bob, 2]", "+I[1, cart, ann, 1]"})
	// Key 1 came twice but was read once; the missing key 4 once
	// ('lookup.partial-cache.cache-missing-key' defaults to true).
	if n1, n4 := lookups("1"), lookups("4"); n1 != 1 || n4 != 1 {
		t.Errorf("lookups of key 1: %d, of key 4: %d; want 1 each with the cache", n1, n4)
	}
	got = query(t, s, "SELECT c.uid, u.name FROM clicks AS c LEFT JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.uid = u.id")
	equal(t, "left lookup join", got, []string{"+I[1, ann]", "+I[2, bob]", "+I[4, NULL]", "+I[1, ann]"})
	// The finished jobs' lookup connections are closed (when the job's
	// context ends, so await it: the server sees the close a moment later).
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := db.Query(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")[0]
		if n == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s connections of finished lookup jobs still open", n)
		}
	}
}

// TestLookupJoinFullCache: with 'lookup.cache' = 'FULL' the table is read
// whole once; the join finds the same rows.
func TestLookupJoinFullCache(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE users (id int PRIMARY KEY, name text);
INSERT INTO users VALUES (1, 'ann'), (2, 'bob')`)
	s := newSession(t, nil)
	run(t, s, fmt.Sprintf(`
CREATE TABLE clicks (uid INT, proc AS PROCTIME()) WITH ('connector' = 'values', 'data' = '
2
3
1
');
CREATE TABLE users (id INT, name STRING) WITH (
  'connector' = 'jdbc', 'url' = '%s', 'table-name' = 'users',
  'lookup.cache' = 'FULL', 'lookup.full-cache.periodic-reload.interval' = '1 h');`, jdbcURL(db)))
	got := query(t, s, "SELECT c.uid, u.name FROM clicks AS c LEFT JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.uid = u.id")
	equal(t, "full-cache lookup join", got, []string{"+I[2, bob]", "+I[3, NULL]", "+I[1, ann]"})
}
