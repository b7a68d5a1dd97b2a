package parser

import (
	"strings"
	"testing"
	"time"
)

func fuzzSeeds() []string {
	var seeds []string
	for _, tc := range queryTests {
		seeds = append(seeds, tc.in)
	}
	for _, tc := range exprTests {
		seeds = append(seeds, "SELECT "+tc.in)
	}
	seeds = append(seeds,
		"CREATE TABLE t (id BIGINT, ts TIMESTAMP(3), `partition` BIGINT METADATA VIRTUAL, c AS id + 1, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'kafka')",
		"CREATE TABLE t (a ROW<b ARRAY<MAP<STRING, INT>>>, c INT ARRAY NOT NULL) COMMENT 'x' PARTITIONED BY (a) WITH ('k'='v') LIKE s (EXCLUDING ALL)",
		"CREATE TEMPORARY VIEW v (a) AS SELECT 1",
		"DROP TABLE IF EXISTS a.b.c",
		"INSERT INTO s PARTITION (dt='1') (a, b) SELECT * FROM t",
		"SET 'a' = 'b'; RESET; SHOW TABLES; SHOW CREATE TABLE t; DESC t; USE CATALOG c",
		"EXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT 1",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END;",
		"BEGIN STATEMENT SET; INSERT INTO a SELECT 1; END;",
		"STOP JOB 'x' WITH SAVEPOINT WITH DRAIN",
		"SELECT 'abc", "SELECT \"x\"", "/* open", "SELECT X'zz'", "SELECT `", "SELECT 1e",
	)
	return seeds
}

func FuzzParseScript(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		stmts, err := ParseScript(src)
		if err != nil {
			if pe, ok := err.(*Error); !ok {
				t.Fatalf("non-*Error error %T", err)
			} else if strings.Contains(pe.Msg, "internal parser error") {
				t.Fatalf("recovered panic: %v", pe)
			}
		}
		for _, s := range stmts {
			if s.Text() == "" {
				t.Fatalf("empty statement text")
			}
			forEachExpr(s, func(e Expr) {
				// Formatting a parsed expression must re-parse.
				txt := FormatExpr(e)
				e2, err := ParseExpr(txt)
				if err != nil {
					if pe, ok := err.(*Error); ok && strings.Contains(pe.Msg, "Nesting too deep") {
						return
					}
					t.Fatalf("FormatExpr output %q does not parse: %v", txt, err)
				}
				if txt2 := FormatExpr(e2); txt2 != txt {
					t.Fatalf("round trip %q -> %q", txt, txt2)
				}
			})
		}
		_, _ = ParseStatement(src)
		_, _ = ParseExpr(src)
		c, r := SplitStatements(src)
		_ = c
		if len(r) > len(src) {
			t.Fatalf("rest longer than input")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("too slow: %v", d)
		}
	})
}

func TestSeedsParse(t *testing.T) {
	// Every well-formed seed must parse (guards the fuzz corpus against rot).
	for _, s := range fuzzSeeds()[:len(queryTests)] {
		if _, err := ParseScript(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
