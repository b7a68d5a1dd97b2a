package parser

import "testing"

func TestMoreSyntax(t *testing.T) {
	ok := []string{
		"SELECT a FROM t WHERE a IN ((SELECT b FROM u))",
		"SELECT COUNT(*) AS cnt, TUMBLE_END(rowtime, INTERVAL '1' DAY) FROM t GROUP BY TUMBLE(rowtime, INTERVAL '1' DAY), HOP(rowtime, INTERVAL '1' HOUR, INTERVAL '1' DAY)",
		"SELECT * FROM ((SELECT a FROM t) UNION ALL (SELECT a FROM u)) AS x",
		"SELECT * FROM (t AS x JOIN u AS y ON x.a = y.a)",
		"SELECT a FROM t LIMIT ALL",
		"SELECT a FROM t ORDER BY a OFFSET 3 ROWS FETCH NEXT 2 ROWS ONLY",
		"SELECT JSON_VALUE(j, '$.a'), `user`.name FROM t AS `user`",
		"SELECT CAST(a AS ARRAY<ROW<x INT>>)[1].x FROM t",
		"SELECT LAG(a, 1) OVER (PARTITION BY k ORDER BY ts ROWS 5 PRECEDING) FROM t",
		"SELECT * FROM t MINUS SELECT * FROM u",
		"SELECT a FROM t WHERE b = ANY (ARRAY[1])",
		"CREATE TABLE t (a INT NULL, `b` BIGINT COMMENT 'x', c AS CAST(a AS STRING) COMMENT 'y', WATERMARK FOR a.b AS a)",
		"EXECUTE SELECT 1",
		"SHOW JARS",
		"SHOW COLUMNS FROM t LIKE '%a'",
		"DESCRIBE EXTENDED db.t",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2 END",
		"SELECT CURRENT_TIMESTAMP, LOCALTIME, CURRENT_TIME, CURRENT_DATE, LOCALTIMESTAMP",
		"SELECT DATE_FORMAT(ts, 'yyyy-MM-dd'), IFNULL(a, 0), COALESCE(a, b), NULLIF(a, b), MOD(a, 2) FROM t",
		"SELECT HOUR(ts), MINUTE(ts), YEAR(ts), DAYOFMONTH(ts) FROM t",
	}
	for _, s := range ok {
		if _, err := ParseStatement(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
