package session

import (
	"context"
	"errors"
	"io"
	"sort"
	"testing"
	"time"
)

// functionSamples holds one call of every function SHOW FUNCTIONS lists,
// over the one-row table fn (i INT, s STRING, d DOUBLE, ts TIMESTAMP(3), b
// BOOLEAN); aggregates are marked.
var functionSamples = map[string]string{
	"!=": "i != 2", "%": "i % 2", "*": "i * 2", "+": "i + 2", "-": "i - 2", "/": "i / 2", "<": "i < 2", "<=": "i <= 2",
	"<>": "i <> 2", "=": "i = 2", ">": "i > 2", ">=": "i >= 2", "||": "s || 'x'",
	"abs": "ABS(-i)", "acos": "ACOS(0.5)", "and": "b AND TRUE", "array": "ARRAY[i, 2]", "ascii": "ASCII(s)", "asin": "ASIN(0.5)",
	"atan": "ATAN(d)", "atan2": "ATAN2(d, 1.0)", "between": "i BETWEEN 0 AND 2", "bin": "BIN(i)", "btrim": "BTRIM(s)",
	"cardinality": "CARDINALITY(ARRAY[1, 2])", "case": "CASE i WHEN 1, 2 THEN 'a' END", "cast": "CAST(i AS STRING)",
	"ceil": "CEIL(d)", "ceiling": "CEILING(d)", "char_length": "CHAR_LENGTH(s)", "character_length": "CHARACTER_LENGTH(s)",
	"chr": "CHR(65)", "coalesce": "COALESCE(s, 'x')", "concat": "CONCAT(s, 'x')", "concat_ws": "CONCAT_WS('-', s, 'x')",
	"convert_tz": "CONVERT_TZ('1970-01-01 00:00:00', 'UTC', 'America/Los_Angeles')", "cos": "COS(d)", "cosh": "COSH(d)",
	"cot": "COT(d)", "current_date": "CURRENT_DATE", "current_row_timestamp": "CURRENT_ROW_TIMESTAMP()",
	"current_time": "CURRENT_TIME", "current_timestamp": "CURRENT_TIMESTAMP", "date_format": "DATE_FORMAT(ts, 'yyyy-MM-dd')",
	"dayofmonth": "DAYOFMONTH(ts)", "dayofweek": "DAYOFWEEK(ts)", "dayofyear": "DAYOFYEAR(ts)",
	"decode": "DECODE(ENCODE(s, 'UTF-8'), 'UTF-8')", "degrees": "DEGREES(d)", "e": "E()", "element": "ELEMENT(ARRAY[i])",
	"encode": "ENCODE(s, 'UTF-8')", "exp": "EXP(d)", "extract": "EXTRACT(YEAR FROM ts)", "floor": "FLOOR(d)",
	"from_base64": "FROM_BASE64('aGk=')", "from_unixtime": "FROM_UNIXTIME(0)", "greatest": "GREATEST(i, 3)", "hex": "HEX(i)",
	"hour": "HOUR(ts)", "if": "IF(b, 1, 2)", "ifnull": "IFNULL(s, 'x')", "in": "i IN (1, 2)", "initcap": "INITCAP(s)",
	"instr": "INSTR(s, 'b', 1, 1)", "is distinct from": "i IS DISTINCT FROM 2", "is false": "b IS FALSE",
	"is json array": "s IS JSON ARRAY", "is json object": "s IS JSON OBJECT", "is json scalar": "s IS JSON SCALAR",
	"is json value": "s IS JSON VALUE", "is not distinct from": "i IS NOT DISTINCT FROM 2", "is not false": "b IS NOT FALSE",
	"is not json array": "s IS NOT JSON ARRAY", "is not json object": "s IS NOT JSON OBJECT",
	"is not json scalar": "s IS NOT JSON SCALAR", "is not json value": "s IS NOT JSON VALUE", "is not null": "s IS NOT NULL",
	"is not true": "b IS NOT TRUE", "is not unknown": "b IS NOT UNKNOWN", "is null": "s IS NULL", "is true": "b IS TRUE",
	"is unknown": "b IS UNKNOWN", "json_array": "JSON_ARRAY(i, s)", "json_exists": "JSON_EXISTS('{\"a\":1}', '$.a')",
	"json_object": "JSON_OBJECT('k' VALUE i)", "json_query": "JSON_QUERY('{\"a\":[1]}', '$.a')", "json_string": "JSON_STRING(i)",
	"json_value": "JSON_VALUE('{\"a\":1}', '$.a' RETURNING INT)", "least": "LEAST(i, 3)", "left": "LEFT(s, 1)",
	"like": "s LIKE 'a%'", "ln": "LN(d)", "localtime": "LOCALTIME", "localtimestamp": "LOCALTIMESTAMP", "locate": "LOCATE('b', s)",
	"log": "LOG(d)", "log10": "LOG10(d)", "log2": "LOG2(d)", "lower": "LOWER(s)", "lpad": "LPAD(s, 5, '*')", "ltrim": "LTRIM(s)",
	"map": "MAP['k', i]", "md5": "MD5(s)", "minute": "MINUTE(ts)", "mod": "MOD(i, 2)", "month": "MONTH(ts)", "not": "NOT b",
	"not between": "i NOT BETWEEN 5 AND 6", "not in": "i NOT IN (5, 6)", "not like": "s NOT LIKE 'x%'",
	"not similar to": "s NOT SIMILAR TO 'x%'", "now": "NOW()", "nullif": "NULLIF(i, 2)", "or": "b OR FALSE",
	"overlaps": "(ts, INTERVAL '1' HOUR) OVERLAPS (ts, INTERVAL '2' HOUR)", "overlay": "OVERLAY(s PLACING 'x' FROM 1)",
	"parse_url": "PARSE_URL('http://a.b/c', 'HOST')", "pi": "PI()", "position": "POSITION('b' IN s)", "pow": "POW(d, 2)",
	"power": "POWER(d, 2)", "proctime": "PROCTIME()", "quarter": "QUARTER(ts)", "radians": "RADIANS(d)", "rand": "RAND()",
	"rand_integer": "RAND_INTEGER(10)", "regexp": "REGEXP(s, 'a.*')", "regexp_extract": "REGEXP_EXTRACT(s, '(b)', 1)",
	"regexp_replace": "REGEXP_REPLACE(s, 'b', 'x')", "repeat": "REPEAT(s, 2)", "replace": "REPLACE(s, 'b', 'x')",
	"reverse": "REVERSE(s)", "right": "RIGHT(s, 1)", "round": "ROUND(d, 1)", "row": "ROW(i, s)", "rpad": "RPAD(s, 5, '*')",
	"rtrim": "RTRIM(s)", "second": "SECOND(ts)", "sha1": "SHA1(s)", "sha2": "SHA2(s, 256)", "sha224": "SHA224(s)",
	"sha256": "SHA256(s)", "sha384": "SHA384(s)", "sha512": "SHA512(s)", "sign": "SIGN(d)", "similar to": "s SIMILAR TO 'a%'",
	"sin": "SIN(d)", "sinh": "SINH(d)", "split_index": "SPLIT_INDEX(s, 98, 0)", "sqrt": "SQRT(d)",
	"str_to_map": "STR_TO_MAP('a=1,b=2')", "substr": "SUBSTR(s, 2)", "substring": "SUBSTRING(s FROM 2 FOR 1)", "tan": "TAN(d)",
	"tanh": "TANH(d)", "timestampadd": "TIMESTAMPADD(SQL_TSI_DAY, 1, ts)", "timestampdiff": "TIMESTAMPDIFF(HOUR, ts, ts)",
	"to_base64": "TO_BASE64(s)", "to_date": "TO_DATE('2024-01-01')", "to_timestamp": "TO_TIMESTAMP('2024-01-01 00:00:00')",
	"to_timestamp_ltz": "TO_TIMESTAMP_LTZ(0, 3)", "trim": "TRIM(BOTH ' x ')", "truncate": "TRUNCATE(d, 1)",
	"try_cast": "TRY_CAST(s AS INT)", "unix_timestamp": "UNIX_TIMESTAMP()", "upper": "UPPER(s)", "uuid": "UUID()",
	"week": "WEEK(ts)", "year": "YEAR(ts)",
}

// aggregateSamples are the aggregate functions SHOW FUNCTIONS lists.
var aggregateSamples = map[string]string{
	"avg": "AVG(i)", "json_arrayagg": "JSON_ARRAYAGG(i)", "json_objectagg": "JSON_OBJECTAGG(KEY s VALUE i)", "collect": "COLLECT(i)", "count": "COUNT(i)", "first_value": "FIRST_VALUE(s)", "last_value": "LAST_VALUE(s)",
	"listagg": "LISTAGG(s)", "max": "MAX(i)", "min": "MIN(i)", "stddev": "STDDEV(d)", "stddev_pop": "STDDEV_POP(d)",
	"grouping": "GROUPING(i)", "grouping_id": "GROUPING_ID(i)", "group_id": "GROUP_ID()",
	"stddev_samp": "STDDEV_SAMP(d)", "sum": "SUM(i)", "var_pop": "VAR_POP(d)", "var_samp": "VAR_SAMP(d)", "variance": "VARIANCE(d)",
}

// overSamples are the functions SHOW FUNCTIONS lists that only run with
// OVER, or over a rowtime attribute (fn's rt).
var overSamples = map[string]string{
	"row_number": "ROW_NUMBER() OVER (ORDER BY rt)", "rank": "RANK() OVER (ORDER BY rt)",
	"dense_rank": "DENSE_RANK() OVER (ORDER BY rt)", "lag": "LAG(i) OVER (ORDER BY rt)",
	"current_watermark": "CURRENT_WATERMARK(rt)",
}

// batchOverSamples are the over functions SHOW FUNCTIONS lists that run in
// batch mode only (Flink's streaming OVER refuses them).
var batchOverSamples = map[string]string{
	"lead": "LEAD(i) OVER (ORDER BY s)", "ntile": "NTILE(2) OVER (ORDER BY s)",
	"cume_dist": "CUME_DIST() OVER (ORDER BY s)", "percent_rank": "PERCENT_RANK() OVER (ORDER BY s)",
}

// TestShowFunctionsRun checks that every function SHOW FUNCTIONS lists has
// a sample here, and that every sample plans and evaluates.
func TestShowFunctionsRun(t *testing.T) {
	s, err := New(Options{Config: map[string]string{"table.local-time-zone": "UTC"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := s.Execute(ctx, "SHOW FUNCTIONS;")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range rs[0].Table.Rows {
		name := r[0]
		listed = append(listed, name)
		if functionSamples[name] == "" && aggregateSamples[name] == "" && overSamples[name] == "" && batchOverSamples[name] == "" {
			t.Errorf("SHOW FUNCTIONS lists %q, which has no sample call in this test", name)
		}
	}
	if len(listed) < 150 {
		t.Fatalf("SHOW FUNCTIONS lists %d functions, expected more than 150", len(listed))
	}
	if _, err := s.Execute(ctx, `CREATE TABLE fn (i INT, s STRING, d DOUBLE, ts TIMESTAMP(3), b BOOLEAN, rt AS ts, WATERMARK FOR rt AS rt) WITH (
		'connector' = 'values', 'data' = '1,abc,0.5,2024-01-01 10:00:00,true');`); err != nil {
		t.Fatal(err)
	}
	run := func(name, sql string) {
		t.Helper()
		r, err := s.Execute(ctx, sql)
		if err != nil {
			t.Errorf("%s: %s: %v", name, sql, err)
			return
		}
		q := r[0].Query
		rows := 0
		for {
			changes, err := q.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: %s: %v", name, sql, err)
				return
			}
			rows += len(changes)
		}
		if rows == 0 {
			t.Errorf("%s: %s gave no row", name, sql)
		}
	}
	sort.Strings(listed)
	for _, name := range listed {
		if sample := functionSamples[name]; sample != "" {
			run(name, "SELECT "+sample+" FROM fn;")
		} else if sample := aggregateSamples[name]; sample != "" {
			run(name, "SELECT "+sample+" FROM fn GROUP BY i;")
		} else if sample := overSamples[name]; sample != "" {
			run(name, "SELECT "+sample+" FROM fn;")
		}
	}
	if _, err := s.Execute(ctx, "SET 'execution.runtime-mode' = 'batch';"); err != nil {
		t.Fatal(err)
	}
	for _, name := range listed {
		if sample := batchOverSamples[name]; sample != "" {
			run(name, "SELECT "+sample+" FROM fn;")
		}
	}
	// A sample for a function that is not listed is a function that runs
	// but SHOW FUNCTIONS forgot.
	for name := range functionSamples {
		if !contains(listed, name) {
			t.Errorf("%q runs but SHOW FUNCTIONS does not list it", name)
		}
	}
	for name := range overSamples {
		if !contains(listed, name) {
			t.Errorf("%q runs but SHOW FUNCTIONS does not list it", name)
		}
	}
	for name := range aggregateSamples {
		if !contains(listed, name) {
			t.Errorf("aggregate %q runs but SHOW FUNCTIONS does not list it", name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
