package parser

import (
	"fmt"
	"strings"
	"testing"
)

var exprTests = []struct{ in, want string }{
	// precedence
	{"a OR b AND NOT c = d", "(OR a (AND b (NOT (= c d))))"},
	{"-a * b", "(* (- a) b)"},
	{"a || b || c", "(|| (|| a b) c)"},
	{"x BETWEEN 1 AND 2 AND y", "(AND (BETWEEN x 1 2) y)"},
	{"a + b * c - d / e % f", "(- (+ a (* b c)) (% (/ d e) f))"},
	{"a - b - c", "(- (- a b) c)"},
	{"a - (b - c)", "(- a (- b c))"},
	{"a || b + c", "(|| a (+ b c))"},
	{"a = b IS NULL", "(IS-NULL (= a b))"},
	{"NOT a IS NULL", "(NOT (IS-NULL a))"},
	{"NOT a AND b", "(AND (NOT a) b)"},
	{"NOT NOT a", "(NOT (NOT a))"},
	{"a AND b OR c AND d", "(OR (AND a b) (AND c d))"},
	{"a < b = c", "(= (< a b) c)"},
	{"a != b", "(<> a b)"},
	{"a <> b", "(<> a b)"},
	{"- - a", "(- (- a))"},
	{"+a", "(+ a)"},
	{"-a.b[1]", "(- (index a.b 1))"},
	{"a + b BETWEEN c AND d + e", "(BETWEEN (+ a b) c (+ d e))"},
	{"a NOT BETWEEN SYMMETRIC 1 AND 2", "(NOT-BETWEEN-SYM a 1 2)"},
	{"a BETWEEN ASYMMETRIC 1 AND 2", "(BETWEEN a 1 2)"},
	{"a = 1 AND b BETWEEN 1 AND 2 OR c", "(OR (AND (= a 1) (BETWEEN b 1 2)) c)"},
	{"a IN (1, 2, 3)", "(IN a 1 2 3)"},
	{"a NOT IN ('x')", "(NOT-IN a 'x')"},
	{"a IN (SELECT b FROM t)", "(IN a (query SELECT b FROM t))"},
	{"a LIKE 'x%'", "(LIKE a 'x%')"},
	{"a NOT LIKE 'x!%' ESCAPE '!'", "(NOT-LIKE a 'x!%' ESCAPE '!')"},
	{"a SIMILAR TO 'a|b'", "(SIMILAR-TO a 'a|b')"},
	{"a NOT SIMILAR TO 'a' ESCAPE '\\'", "(NOT-SIMILAR-TO a 'a' ESCAPE '\\')"},
	{"a IS NOT NULL", "(IS-NOT-NULL a)"},
	{"a IS TRUE OR b IS NOT FALSE", "(OR (IS-TRUE a) (IS-NOT-FALSE b))"},
	{"a IS UNKNOWN", "(IS-UNKNOWN a)"},
	{"a IS DISTINCT FROM b", "(IS-DISTINCT a b)"},
	{"a IS NOT DISTINCT FROM b + 1", "(IS-NOT-DISTINCT a (+ b 1))"},
	// literals
	{"123", "123"},
	{"1.5", "1.5"},
	{".5", ".5"},
	{"1e10", "1e10"},
	{"1.5E-3", "1.5E-3"},
	{"'it''s'", "'it's'"},
	{"X'0A1b'", "X'0A1b'"},
	{"TRUE AND false", "(AND TRUE FALSE)"},
	{"NULL", "NULL"},
	{"unknown", "UNKNOWN"},
	{"DATE '2024-01-01'", "(DATE '2024-01-01')"},
	{"time '12:00:00'", "(TIME '12:00:00')"},
	{"TIMESTAMP '2024-01-01 00:00:00.123'", "(TIMESTAMP '2024-01-01 00:00:00.123')"},
	{"INTERVAL '10' SECOND", "(INTERVAL '10' SECOND)"},
	{"INTERVAL '10' MINUTES", "(INTERVAL '10' MINUTE)"},
	{"INTERVAL '1 02:03' DAY TO MINUTE", "(INTERVAL '1 02:03' DAY TO MINUTE)"},
	{"INTERVAL '2-3' YEAR TO MONTH", "(INTERVAL '2-3' YEAR TO MONTH)"},
	{"INTERVAL '10' SECOND(3)", "(INTERVAL '10' SECOND(3))"},
	{"INTERVAL '1 02:03:04.5' DAY(2) TO SECOND(3)", "(INTERVAL '1 02:03:04.5' DAY(2) TO SECOND(3))"},
	{"INTERVAL -'5' MINUTE", "(INTERVAL -'5' MINUTE)"},
	{"ts - INTERVAL '5' SECOND", "(- ts (INTERVAL '5' SECOND))"},
	// identifiers
	{"`order`.`id`", "order.id"},
	{"`a b` + `c``d`", "(+ a b c`d)"},
	{"t.a.b", "t.a.b"},
	{"t.`value`", "t.value"},
	{"MyCol", "MyCol"},
	// calls
	{"COUNT(*)", "(call COUNT *)"},
	{"count(DISTINCT a)", "(call COUNT DISTINCT a)"},
	{"SUM(a) FILTER (WHERE b > 0)", "(call SUM a FILTER (> b 0))"},
	{"my_udf(a, 'x', 1)", "(call my_udf a 'x' 1)"},
	{"cat.db.f(a)", "(call cat.db.f a)"},
	{"f()", "(call f)"},
	{"f(a).b", "(field (call f a) b)"},
	{"arr[1].name", "(field (index arr 1) name)"},
	{"m['k']", "(index m 'k')"},
	{"ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC)", "(call ROW_NUMBER OVER (PARTITION BY a ORDER BY ts DESC))"},
	{"SUM(x) OVER (PARTITION BY a ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)",
		"(call SUM x OVER (PARTITION BY a ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW))"},
	{"AVG(x) OVER (ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)", "(call AVG x OVER (ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW))"},
	{"COUNT(a) OVER w", "(call COUNT a OVER (w))"},
	{"CASE WHEN a > 1 THEN 'x' WHEN b THEN 'y' ELSE 'z' END", "(case (when (> a 1) 'x') (when b 'y') (else 'z'))"},
	{"CASE a WHEN 1 THEN 'one' END", "(case a (when 1 'one'))"},
	{"CAST(a AS BIGINT)", "(cast a BIGINT)"},
	{"TRY_CAST(a AS DECIMAL(10, 2) NOT NULL)", "(try_cast a DECIMAL(10, 2) NOT NULL)"},
	{"CAST(s AS TIMESTAMP(3) WITH LOCAL TIME ZONE)", "(cast s TIMESTAMP_LTZ(3))"},
	{"EXTRACT(HOUR FROM ts)", "(extract HOUR ts)"},
	{"FLOOR(ts TO MINUTE)", "(floor ts MINUTE)"},
	{"CEIL(ts TO HOUR)", "(ceil ts HOUR)"},
	{"FLOOR(x)", "(call FLOOR x)"},
	{"CEILING(x)", "(call CEIL x)"},
	{"TRIM(s)", "(trim BOTH nil s)"},
	{"TRIM(LEADING 'x' FROM s)", "(trim LEADING 'x' s)"},
	{"TRIM(BOTH FROM s)", "(trim BOTH nil s)"},
	{"TRIM('x' FROM s)", "(trim BOTH 'x' s)"},
	{"SUBSTRING(s FROM 2 FOR 3)", "(substring s 2 3)"},
	{"SUBSTRING(s, 2)", "(substring s 2 nil)"},
	{"POSITION('a' IN s)", "(position 'a' s)"},
	{"OVERLAY(s PLACING 'x' FROM 2 FOR 1)", "(overlay s 'x' 2 1)"},
	{"TIMESTAMPADD(DAY, 1, ts)", "(call TIMESTAMPADD DAY 1 ts)"},
	{"TIMESTAMPDIFF(SECOND, a, b)", "(call TIMESTAMPDIFF SECOND a b)"},
	{"CURRENT_TIMESTAMP", "(call CURRENT_TIMESTAMP noparens)"},
	{"current_date", "(call CURRENT_DATE noparens)"},
	{"LOCALTIMESTAMP", "(call LOCALTIMESTAMP noparens)"},
	{"CURRENT_ROW_TIMESTAMP()", "(call CURRENT_ROW_TIMESTAMP)"},
	{"PROCTIME()", "(call PROCTIME)"},
	{"ROW(a, b)", "(ROW a b)"},
	{"(a, b)", "(row a b)"},
	{"ARRAY[1, 2]", "(array 1 2)"},
	{"MAP['a', 1, 'b', 2]", "(map 'a' 1 'b' 2)"},
	{"(SELECT MAX(a) FROM t)", "(subquery SELECT MAX(a) FROM t)"},
	{"EXISTS (SELECT 1 FROM t)", "(exists SELECT 1 FROM t)"},
	{"NOT EXISTS (SELECT 1)", "(NOT (exists SELECT 1))"},
	{"TUMBLE(ts, INTERVAL '1' HOUR)", "(call TUMBLE ts (INTERVAL '1' HOUR))"},
	{"TUMBLE_START(ts, INTERVAL '1' HOUR)", "(call TUMBLE_START ts (INTERVAL '1' HOUR))"},
	{"HOP(ts, INTERVAL '1' MINUTE, INTERVAL '1' HOUR)", "(call HOP ts (INTERVAL '1' MINUTE) (INTERVAL '1' HOUR))"},
	{"SESSION(ts, INTERVAL '5' MINUTE)", "(call SESSION ts (INTERVAL '5' MINUTE))"},
	{"LEFT(s, 2) || UPPER(s)", "(|| (call LEFT s 2) (call UPPER s))"},
	{"IF(a > 1, 'x', 'y')", "(call IF (> a 1) 'x' 'y')"},
	{"LISTAGG(a, ',') WITHIN GROUP (ORDER BY a)", "(call LISTAGG a ',')"},
	// comments and case-insensitivity
	{"a /* one */ + -- two\n b", "(+ a b)"},
	{"a and B Or not C", "(OR (AND a B) (NOT C))"},
}

func TestExprShapes(t *testing.T) {
	for _, tc := range exprTests {
		e, err := ParseExpr(tc.in)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.in, err)
			continue
		}
		if got := sexpr(e); got != tc.want {
			t.Errorf("ParseExpr(%q)\n got  %s\n want %s", tc.in, got, tc.want)
		}
	}
}

func TestFormatExpr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ts - interval '5' second", "ts - INTERVAL '5' SECOND"},
		{"cast(a as bigint)", "CAST(a AS BIGINT)"},
		{"`order`.`id`", "`order`.id"},
		{"`order`.`from`", "`order`.`from`"},
		{"`a b`", "`a b`"},
		{"`x`", "x"},
		{"a*(b+c)", "a * (b + c)"},
		{"(a*b)+c", "a * b + c"},
		{"a - (b - c)", "a - (b - c)"},
		{"(a - b) - c", "a - b - c"},
		{"-(-a)", "-(-a)"},
		{"- (a + b)", "-(a + b)"},
		{"not (a and b)", "NOT (a AND b)"},
		{"(a or b) and c", "(a OR b) AND c"},
		{"(a = b) is null", "a = b IS NULL"},
		{"a = (b is null)", "a = (b IS NULL)"},
		{"x between 1 and 2 and y", "x BETWEEN 1 AND 2 AND y"},
		{"x between (1 and 2) and y", "x BETWEEN (1 AND 2) AND y"},
		{"count(*)", "COUNT(*)"},
		{"count(distinct a)", "COUNT(DISTINCT a)"},
		{"'it''s'", "'it''s'"},
		{"interval '10' minutes", "INTERVAL '10' MINUTE"},
		{"current_timestamp", "CURRENT_TIMESTAMP"},
		{"substring(s, 1, 2)", "SUBSTRING(s FROM 1 FOR 2)"},
		{"trim(s)", "TRIM(BOTH FROM s)"},
		{"case when a then 1 end", "CASE WHEN a THEN 1 END"},
		{"row(a, 1)", "ROW(a, 1)"},
		{"array[1]", "ARRAY[1]"},
		{"map['a', 1]", "MAP['a', 1]"},
		{"cast(x as row<a int, b string 'desc'>)", "CAST(x AS ROW<a INT, b STRING 'desc'>)"},
		{"cast(x as map<string, array<int>>)", "CAST(x AS MAP<STRING, ARRAY<INT>>)"},
		{"cast(x as int array)", "CAST(x AS ARRAY<INT>)"},
		{"a not in (1, 2)", "a NOT IN (1, 2)"},
		{"`user`", "`user`"},
		{"`timestamp` + 1", "`timestamp` + 1"},
		{"f(`select`)", "f(`select`)"},
		{"row_number() over (partition by a order by b desc nulls last)", "ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC NULLS LAST)"},
		{"tumble(data => table t, timecol => descriptor(ts), size => interval '1' minute)", "tumble(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '1' MINUTE)"},
		{"(a).b", "(a).b"},
		{"x'ff'", "X'ff'"},
		{"a || 'x'", "a || 'x'"},
		{"- 1", "-1"},
		{"(0).a", "(0).a"},
		{"`TRY_CAST`(a)", "`TRY_CAST`(a)"},
		{"`timestampadd`(a, b)", "`timestampadd`(a, b)"},
		{"`map`[1]", "`map`[1]"},
		{"`count`(a)", "`count`(a)"},
	}
	for _, tc := range tests {
		e, err := ParseExpr(tc.in)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.in, err)
			continue
		}
		if got := FormatExpr(e); got != tc.want {
			t.Errorf("FormatExpr(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkRoundTrip(t, e)
	}
}

// checkRoundTrip asserts that ParseExpr(FormatExpr(e)) formats identically.
func checkRoundTrip(t *testing.T, e Expr) {
	t.Helper()
	s := FormatExpr(e)
	e2, err := ParseExpr(s)
	if err != nil {
		t.Errorf("round trip: ParseExpr(%q): %v", s, err)
		return
	}
	if s2 := FormatExpr(e2); s2 != s {
		t.Errorf("round trip: %q re-formats as %q", s, s2)
	}
	if a, b := sexpr(e), sexpr(e2); a != b {
		t.Errorf("round trip changed shape of %q:\n %s\n %s", s, a, b)
	}
}

func TestExprRoundTrip(t *testing.T) {
	for _, tc := range exprTests {
		e, err := ParseExpr(tc.in)
		if err != nil {
			continue
		}
		checkRoundTrip(t, e)
	}
}

func TestExprDepthLimit(t *testing.T) {
	deep := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	_, err := ParseExpr(deep)
	if err == nil || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("expected depth error, got %v", err)
	}
	_, err = ParseExpr(strings.Repeat("- ", 5000) + "1")
	if err == nil || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("expected depth error, got %v", err)
	}
	ok := strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200)
	if _, err := ParseExpr(ok); err != nil {
		t.Fatalf("moderate nesting rejected: %v", err)
	}
	// long flat chains are iterative, not recursive
	flat := "a" + strings.Repeat(" + a", 20000)
	if _, err := ParseExpr(flat); err != nil {
		t.Fatalf("long chain rejected: %v", err)
	}
}

// A flat chain is a left-deep tree as tall as the chain is long; later
// stages walk it recursively, so the parser bounds its height (a clear error
// instead of a fatal stack overflow further on) while 100 000-term chains
// stay accepted. Parsing stays linear: twice the terms, twice the
// allocations.
func TestExprLongChain(t *testing.T) {
	chain := func(n int, op string) string { return "a" + strings.Repeat(op+"a", n-1) }
	for _, op := range []string{" OR ", " + "} {
		e, err := ParseExpr(chain(100_000, op))
		if err != nil {
			t.Fatalf("%q chain of 100000 terms: %v", op, err)
		}
		// Left-deep: the right operand of every level is a single term.
		height := 0
		for b, ok := e.(*BinaryExpr); ok; b, ok = b.L.(*BinaryExpr) {
			if _, leaf := b.R.(*Ident); !leaf {
				t.Fatalf("%q chain: right operand %T, want a term", op, b.R)
			}
			height++
		}
		if height != 99_999 {
			t.Fatalf("%q chain: height %d, want 99999", op, height)
		}
	}
	_, err := ParseExpr(chain(MaxExprHeight+1, " OR "))
	if err == nil || !strings.Contains(err.Error(), "Expression too deep (more than 250000 nested operators)") {
		t.Fatalf("chain of %d terms: got %v, want a height error", MaxExprHeight+1, err)
	}
	// The height adds up across nesting: a parenthesized chain as the
	// first operand of another chain.
	half := chain(MaxExprHeight/2+1, " + ")
	if _, err := ParseExpr("(" + half + ") * " + half); err == nil || !strings.Contains(err.Error(), "Expression too deep") {
		t.Fatalf("nested chains of total height %d: got %v, want a height error", MaxExprHeight+1, err)
	}
	if _, err := ParseExpr("(" + half + ") * " + chain(10, " + ")); err != nil {
		t.Fatalf("nested chains within the bound: %v", err)
	}

	allocs := func(n int) float64 {
		src := chain(n, " OR ")
		return testing.AllocsPerRun(3, func() {
			if _, err := ParseExpr(src); err != nil {
				t.Fatal(err)
			}
		})
	}
	a1, a2 := allocs(10_000), allocs(20_000)
	if ratio := a2 / a1; ratio > 2.2 {
		t.Fatalf("parsing 10000 terms took %.0f allocations, 20000 terms %.0f: ratio %.2f, want about 2", a1, a2, ratio)
	}
}

func BenchmarkParseChain(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		src := "a" + strings.Repeat(" OR a", n-1)
		b.Run(fmt.Sprintf("OR/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := ParseExpr(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
