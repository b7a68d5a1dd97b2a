package parser

import (
	"errors"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	tests := []struct {
		in          string
		line, col   int
		encountered string
		expected    []string // must all be present
		msg         string   // substring of Error() when set
	}{
		{in: "SELECT a FORM t", line: 1, col: 15, encountered: "t", expected: []string{`"FROM"`, `","`, `"UNION"`, `<EOF>`}},
		{in: "CREATE TABLE t (a INT,) WITH ()", line: 1, col: 23, encountered: ")",
			expected: []string{"<IDENTIFIER>", `"WATERMARK"`, `"PRIMARY"`, `"CONSTRAINT"`}},
		{in: "SELECT 'abc", line: 1, col: 8, msg: `Lexical error at line 1, column 8.  Encountered: <EOF> after : "'abc"`},
		{in: "SELECT * FROM t WHERE a =", line: 1, col: 26, encountered: "<EOF>", expected: []string{"<expression>"}},
		{in: "SELECT \"a\" FROM t", line: 1, col: 8, msg: "double-quoted identifiers are not supported"},
		{in: "SELECT a FROM t /* open", line: 1, col: 17, msg: "Unterminated comment"},
		{in: "SELECT value FROM t", line: 1, col: 8, encountered: "value"},
		{in: "SELECT a FROM t WHERE", line: 1, col: 22, encountered: "<EOF>"},
		{in: "SELEC a", line: 1, col: 1, encountered: "SELEC", expected: []string{`"SELECT"`, `"INSERT"`, `"CREATE"`}},
		{in: "SELECT a,\n  FROM t", line: 2, col: 3, encountered: "FROM"},
		{in: "INSERT t SELECT 1", line: 1, col: 8, encountered: "t", expected: []string{`"INTO"`, `"OVERWRITE"`}},
		{in: "CREATE TABLE t (a INT) WITH ('k' = 1)", line: 1, col: 36, encountered: "1", expected: []string{"<QUOTED_STRING>"}},
		{in: "CREATE TABLE t (a INT PRIMARY KEY, b INT)", line: 1, col: 34, encountered: ",", expected: []string{`"NOT"`, `"ENFORCED"`}},
		{in: "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED)", line: 1, col: 54, msg: "Duplicate primary key"},
		{in: "CREATE TABLE t (a FOO)", line: 1, col: 19, encountered: "FOO", expected: []string{"<data type>"}},
		{in: "SELECT CAST(a AS) FROM t", line: 1, col: 17, encountered: ")"},
		{in: "SELECT (a + b FROM t", line: 1, col: 15, encountered: "FROM", expected: []string{`")"`}},
		{in: "SELECT * FROM t JOIN u", line: 1, col: 23, encountered: "<EOF>", expected: []string{`"ON"`, `"USING"`}},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A | B) DEFINE A AS a > 0)", line: 1, col: 45, msg: "Currently, CEP doesn't support branching patterns."},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A (B C)+) DEFINE A AS a > 0)", line: 1, col: 45, msg: "group patterns"},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (PERMUTE(A, B)) DEFINE A AS a > 0)", line: 1, col: 43, msg: "Currently, CEP doesn't support PERMUTE patterns."},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A {- B -} C) DEFINE A AS a > 0)", line: 1, col: 45, msg: "Currently, CEP doesn't support '{-' '-}' patterns."},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A{0}) DEFINE A AS a > 0)", line: 1, col: 44, msg: "Invalid quantifier {0}"},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A{3,2} B) DEFINE A AS a > 0)", line: 1, col: 44, msg: "greater than the upper bound"},
		{in: "SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A B) SUBSET S = (A, B) DEFINE A AS a > 0)", line: 1, col: 48, msg: "SUBSET is not supported"},
		{in: "SELECT * FROM u JOIN t MATCH_RECOGNIZE (PATTERN (A))", line: 1, col: 52, encountered: ")"},
		{in: "SELECT INTERVAL '1' FORTNIGHT", line: 1, col: 21, encountered: "FORTNIGHT"},
		{in: "SELECT 1 2", line: 1, col: 10, encountered: "2"},
		{in: "EXPLAIN CHANGELOG_MODE, FOO SELECT 1", line: 1, col: 25, encountered: "FOO", expected: []string{`"ESTIMATED_COST"`}},
		{in: "SHOW TABLEZ", line: 1, col: 6, encountered: "TABLEZ", expected: []string{`"TABLES"`}},
		{in: "SELECT a FROM t; SELECT b", line: 1, col: 18, encountered: "SELECT", expected: []string{"<EOF>"}},
		{in: "SELECT CASE WHEN a THEN b FROM t", line: 1, col: 27, encountered: "FROM", expected: []string{`"END"`, `"WHEN"`, `"ELSE"`}},
		{in: "SELECT f(a, ) FROM t", line: 1, col: 13, encountered: ")"},
		{in: "SELECT * FROM TABLE(TUMBLE(TABLE, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", line: 1, col: 33, encountered: ","},
		{in: "SELECT ARRAY(1)", line: 1, col: 13},
		{in: "SELECT 99999999999999999999 FROM t LIMIT 1", line: 0, col: 0}, // valid: big numbers are kept as text
		{in: "CREATE TABLE t (a VARCHAR(99999999999999999999))", line: 1, col: 27, msg: "out of range"},
	}
	for _, tc := range tests {
		_, err := ParseStatement(tc.in)
		if tc.line == 0 {
			if err != nil {
				t.Errorf("%q: unexpected error %v", tc.in, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want *Error", tc.in, err)
			continue
		}
		if pe.Pos.Line != tc.line || pe.Pos.Col != tc.col {
			t.Errorf("%q: at %d:%d, want %d:%d (%v)", tc.in, pe.Pos.Line, pe.Pos.Col, tc.line, tc.col, err)
		}
		if tc.encountered != "" && pe.Encountered != tc.encountered {
			t.Errorf("%q: encountered %q, want %q", tc.in, pe.Encountered, tc.encountered)
		}
		for _, x := range tc.expected {
			found := false
			for _, y := range pe.Expected {
				if x == y {
					found = true
				}
			}
			if !found {
				t.Errorf("%q: expected list %v lacks %s", tc.in, pe.Expected, x)
			}
		}
		if len(pe.Expected) > 20 {
			t.Errorf("%q: expected list too long: %v", tc.in, pe.Expected)
		}
		if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: message %q lacks %q", tc.in, err.Error(), tc.msg)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := ParseStatement("SELECT * FROM t WHERE a =")
	want := "SQL parse failed. Encountered \"<EOF>\" at line 1, column 26.\nWas expecting:\n    <expression> ..."
	if err == nil || err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
	_, err = ParseStatement("DROP TABLE IF t")
	want = "SQL parse failed. Encountered \"t\" at line 1, column 15.\nWas expecting:\n    \"EXISTS\" ..."
	if err == nil || err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
	_, err = ParseStatement("DROP t")
	want = "SQL parse failed. Encountered \"t\" at line 1, column 6.\nWas expecting one of:\n    \"TEMPORARY\" ...\n    \"FUNCTION\" ...\n    \"DATABASE\" ...\n    \"TABLE\" ...\n    \"VIEW\" ..."
	if err == nil || err.Error() != want {
		t.Errorf("got %q\nwant %q", err, want)
	}
}

func TestScriptErrorPosition(t *testing.T) {
	src := "SET 'a' = 'b';\n" + // line 1
		"\n" + // 2
		"-- comment\n" + // 3
		"CREATE TABLE t (a INT)\n" + // 4
		"WITH ('connector' = 'datagen');\n" + // 5
		"\n" + // 6
		"SELECT a,\n" + // 7
		"       b\n" + // 8
		"  FROM t WHERE ORDER;\n" // 9: ORDER at column 16
	_, err := ParseScript(src)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("got %v", err)
	}
	if pe.Pos.Line != 9 || pe.Pos.Col != 16 || pe.Encountered != "ORDER" {
		t.Fatalf("got %v at %v", err, pe.Pos)
	}
	if pe.Pos.Offset != strings.Index(src, "ORDER") {
		t.Fatalf("offset %d", pe.Pos.Offset)
	}
	// unicode: columns count runes
	_, err = ParseScript("SELECT 'äöü' AS x FROM t\nWHERE ; ")
	if !errors.As(err, &pe) || pe.Pos.Line != 2 || pe.Pos.Col != 7 {
		t.Fatalf("got %v", err)
	}
	_, err = ParseScript("SELECT 'äöü', § FROM t")
	if !errors.As(err, &pe) || pe.Pos.Col != 15 {
		t.Fatalf("got %v", err)
	}
	// statement set errors
	_, err = ParseScript("BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nSELECT 1;\nEND;")
	if !errors.As(err, &pe) || pe.Pos.Line != 3 {
		t.Fatalf("got %v", err)
	}
	_, err = ParseScript("BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\n")
	if !errors.As(err, &pe) || pe.Encountered != "<EOF>" {
		t.Fatalf("got %v", err)
	}
}
