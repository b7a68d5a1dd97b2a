package parser

import "testing"

// TestFunctionSyntax checks the function forms with syntax of their own:
// each parses and formats back to the canonical text.
func TestFunctionSyntax(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"JSON_VALUE(s, '$.a')", "JSON_VALUE(s, '$.a')"},
		{"JSON_VALUE(s, 'lax $.a' RETURNING INT DEFAULT 0 ON EMPTY ERROR ON ERROR)", "JSON_VALUE(s, 'lax $.a' RETURNING INT DEFAULT 0 ON EMPTY ERROR ON ERROR)"},
		{"JSON_VALUE(s, '$.a' NULL ON ERROR)", "JSON_VALUE(s, '$.a' NULL ON ERROR)"},
		{"JSON_QUERY(s, '$.a' WITH WRAPPER)", "JSON_QUERY(s, '$.a' WITH UNCONDITIONAL ARRAY WRAPPER)"},
		{"JSON_QUERY(s, '$.a' WITH CONDITIONAL ARRAY WRAPPER EMPTY ARRAY ON EMPTY EMPTY OBJECT ON ERROR)",
			"JSON_QUERY(s, '$.a' WITH CONDITIONAL ARRAY WRAPPER EMPTY ARRAY ON EMPTY EMPTY OBJECT ON ERROR)"},
		{"JSON_QUERY(s, '$.a' WITHOUT WRAPPER)", "JSON_QUERY(s, '$.a' WITHOUT ARRAY WRAPPER)"},
		{"JSON_EXISTS(s, 'strict $.a' UNKNOWN ON ERROR)", "JSON_EXISTS(s, 'strict $.a' UNKNOWN ON ERROR)"},
		{"JSON_OBJECT()", "JSON_OBJECT()"},
		{"JSON_OBJECT('a' VALUE 1, KEY 'b' VALUE x ABSENT ON NULL)", "JSON_OBJECT(KEY 'a' VALUE 1, KEY 'b' VALUE x ABSENT ON NULL)"},
		{"JSON_ARRAY(1, x NULL ON NULL)", "JSON_ARRAY(1, x NULL ON NULL)"},
		{"JSON_ARRAY(NULL ON NULL)", "JSON_ARRAY(NULL ON NULL)"},
		{"s IS JSON", "s IS JSON VALUE"},
		// JSON_ARRAYAGG is the LISTAGG of its elements' JSON text.
		{"JSON_ARRAYAGG(x)", "CONCAT('[', COALESCE(LISTAGG($JSON_TEXT(x), ','), ''), ']')"},
		{"JSON_OBJECTAGG(KEY k VALUE v ABSENT ON NULL)", "$JSON_MEMBERS_OBJECT(LISTAGG($JSON_MEMBER_ABSENT(k, v), ','))"},
		{"JSON_ARRAYAGG(x NULL ON NULL)", "CONCAT('[', COALESCE(LISTAGG($JSON_TEXT_NULL(x), ','), ''), ']')"},
		{"s IS NOT JSON OBJECT", "s IS NOT JSON OBJECT"},
		{"CASE a WHEN 1, 2 THEN 'x' WHEN 3 THEN 'y' END", "CASE a WHEN 1, 2 THEN 'x' WHEN 3 THEN 'y' END"},
		{"TRIM(BOTH ' x ')", "TRIM(BOTH FROM ' x ')"},
		{"(a, b) OVERLAPS (c, d)", "(a, b) OVERLAPS (c, d)"},
		{"TIMESTAMPADD(SQL_TSI_DAY, 1, d)", "TIMESTAMPADD(DAY, 1, d)"},
		{"TIMESTAMPDIFF(SQL_TSI_FRAC_SECOND, a, b)", "TIMESTAMPDIFF(MICROSECOND, a, b)"},
	} {
		e, err := ParseExpr(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := FormatExpr(e); got != c.want {
			t.Errorf("%s: formats as %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{
		"JSON_VALUE(s, '$.a' EMPTY ARRAY ON EMPTY)", // JSON_QUERY's behaviour
		"JSON_EXISTS(s, '$.a' DEFAULT 1 ON ERROR)",
		"JSON_QUERY(s, '$.a' ON EMPTY)",
		"CASE WHEN a, b THEN 1 END", // a list only after CASE x
		"JSON_ARRAYAGG(a, b)",
	} {
		if _, err := ParseExpr(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
