package shell

import (
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

func ch(kind types.RowKind, vals ...types.Value) session.Change {
	return session.Change{Kind: kind, Row: types.Row(vals)}
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func tsMillis(y int, mo time.Month, d, h, mi, s, ms int) types.Value {
	return types.TimestampMillis(time.Date(y, mo, d, h, mi, s, ms*1e6, time.UTC).UnixMilli())
}

// The widths of a streaming table come from the types: INT 11, STRING the
// maximum column width (30), TIMESTAMP(3) 23, and the op column 2. Values are
// right-aligned; a value wider than its column keeps width-3 characters and
// ends in "...".
func TestTableauStreamingChangelog(t *testing.T) {
	schema := types.Schema{
		{Name: "id", Type: types.IntType},
		{Name: "name", Type: types.StringType},
		{Name: "ts", Type: types.TimestampType(3)},
	}
	var out strings.Builder
	p := NewTableauPrinter(&out, schema, time.UTC, true, 0)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	// The header is visible before any row arrives.
	wantHeader := lines(
		"+----+-------------+--------------------------------+-------------------------+",
		"| op |          id |                           name |                      ts |",
		"+----+-------------+--------------------------------+-------------------------+",
	)
	if out.String() != wantHeader {
		t.Fatalf("header:\n%s\nwant:\n%s", out.String(), wantHeader)
	}
	batch1 := []session.Change{
		ch(types.Insert, types.Int(1), types.String("alice"), tsMillis(2024, 1, 15, 10, 30, 0, 123)),
		ch(types.Insert, types.Int(2), types.NullValue, types.NullValue),
	}
	batch2 := []session.Change{
		ch(types.UpdateBefore, types.Int(1), types.String("alice"), tsMillis(2024, 1, 15, 10, 30, 0, 123)),
		ch(types.UpdateAfter, types.Int(1), types.String("a very long name that does not fit"), tsMillis(2024, 1, 15, 10, 30, 0, 100)),
		ch(types.Delete, types.NullValue, types.String("你好"), types.TimestampMillis(0)),
	}
	for _, b := range [][]session.Change{batch1, batch2} {
		if err := p.Print(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	want := wantHeader + lines(
		"| +I |           1 |                          alice | 2024-01-15 10:30:00.123 |",
		"| +I |           2 |                         <NULL> |                  <NULL> |",
		"| -U |           1 |                          alice | 2024-01-15 10:30:00.123 |",
		"| +U |           1 | a very long name that does ... | 2024-01-15 10:30:00.100 |",
		"| -D |      <NULL> |                           你好 | 1970-01-01 00:00:00.000 |",
		"+----+-------------+--------------------------------+-------------------------+",
		"Received a total of 5 rows",
	)
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if p.Rows() != 5 {
		t.Fatalf("Rows() = %d, want 5", p.Rows())
	}
}

// TIMESTAMP_LTZ is shown in the session time zone; types with a fixed
// width (BOOLEAN 5 widened to 6 for <NULL>, BIGINT 20, DECIMAL(p) p+2, DATE 10, TIME(0) 8) and a
// column name longer than its type's width.
func TestTableauStreamingTypesAndTimeZone(t *testing.T) {
	schema := types.Schema{
		{Name: "flag", Type: types.BooleanType},
		{Name: "total_amount_in_cents", Type: types.BigIntType},
		{Name: "price", Type: types.DecimalType(5, 2)},
		{Name: "d", Type: types.DateType},
		{Name: "t", Type: types.TimeType(0)},
		{Name: "at", Type: types.TimestampLTZType(0)},
	}
	shanghai := time.FixedZone("UTC+8", 8*3600)
	var out strings.Builder
	p := NewTableauPrinter(&out, schema, shanghai, true, 0)
	must(t, p.Start())
	instant := time.Date(2024, 1, 15, 20, 0, 5, 0, time.UTC).UnixMilli()
	must(t, p.Print([]session.Change{ch(types.Insert,
		types.Bool(true),
		types.Int(-9000000000),
		types.DecimalFromUnscaled(-12345, 2),
		types.Int(19737), // 2024-01-15
		types.Int((13*3600+5*60+9)*1000),
		types.TimestampMillis(instant),
	)}))
	must(t, p.Finish())
	want := lines(
		"+----+--------+-----------------------+---------+------------+----------+---------------------+",
		"| op |   flag | total_amount_in_cents |   price |          d |        t |                  at |",
		"+----+--------+-----------------------+---------+------------+----------+---------------------+",
		"| +I |   TRUE |           -9000000000 | -123.45 | 2024-01-15 | 13:05:09 | 2024-01-16 04:00:05 |",
		"+----+--------+-----------------------+---------+------------+----------+---------------------+",
		"Received a total of 1 row",
	)
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTableauStreamingEmptyAndTerminated(t *testing.T) {
	schema := types.Schema{{Name: "n", Type: types.SmallIntType}}
	header := lines(
		"+----+--------+",
		"| op |      n |",
		"+----+--------+",
	)

	var out strings.Builder
	p := NewTableauPrinter(&out, schema, nil, true, 0)
	must(t, p.Start())
	must(t, p.Finish())
	// No rows: no closing border, singular "row" as the SQL client prints.
	if want := header + "Received a total of 0 row\n"; out.String() != want {
		t.Fatalf("empty: got:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	p = NewTableauPrinter(&out, schema, nil, true, 0)
	must(t, p.Start())
	must(t, p.Print([]session.Change{ch(types.Insert, types.Int(7))}))
	must(t, p.Terminate())
	want := header + lines(
		"| +I |      7 |",
		"Query terminated, received a total of 1 row",
	)
	if out.String() != want {
		t.Fatalf("terminated: got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// In batch mode the widths come from the data (capped at the maximum
// column width), there is no op column, and the footer counts rows in set.
func TestTableauBatch(t *testing.T) {
	schema := types.Schema{
		{Name: "name", Type: types.StringType},
		{Name: "cnt", Type: types.BigIntType},
	}
	rows := []session.Change{
		ch(types.Insert, types.String("Bob"), types.Int(2)),
		ch(types.Insert, types.String("Alice"), types.Int(1)),
		ch(types.Insert, types.String("Greg"), types.NullValue),
	}
	tests := []struct {
		name     string
		maxWidth int
		rows     []session.Change
		want     string
	}{
		{
			name: "widths from data",
			rows: rows,
			want: lines(
				"+-------+--------+",
				"|  name |    cnt |",
				"+-------+--------+",
				"|   Bob |      2 |",
				"| Alice |      1 |",
				"|  Greg | <NULL> |",
				"+-------+--------+",
				"3 rows in set",
			),
		},
		{
			name:     "capped at max width",
			maxWidth: 4,
			rows:     rows,
			want: lines(
				"+------+------+",
				"| name |  cnt |",
				"+------+------+",
				"|  Bob |    2 |",
				"| A... |    1 |",
				"| Greg | <... |",
				"+------+------+",
				"3 rows in set",
			),
		},
		{name: "empty", want: "Empty set\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			p := NewTableauPrinter(&out, schema, nil, false, tc.maxWidth)
			must(t, p.Start())
			// Rows may arrive in several batches; nothing shows before the end.
			for _, r := range tc.rows {
				must(t, p.Print([]session.Change{r}))
			}
			if out.Len() != 0 {
				t.Fatalf("batch mode printed before the end: %q", out.String())
			}
			must(t, p.Finish())
			if out.String() != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestWriteStaticTable(t *testing.T) {
	tests := []struct {
		name  string
		table session.StaticTable
		want  string
	}{
		{
			name:  "show tables",
			table: session.StaticTable{Columns: []string{"table name"}, Rows: [][]string{{"orders"}}},
			want: lines(
				"+------------+",
				"| table name |",
				"+------------+",
				"|     orders |",
				"+------------+",
				"1 row in set",
			),
		},
		{
			// Nothing is truncated in a static table, whatever its width.
			name: "describe",
			table: session.StaticTable{
				Columns: []string{"name", "type", "null", "key", "extras", "watermark"},
				Rows: [][]string{
					{"id", "BIGINT", "FALSE", "PRI(id)", "", ""},
					{"ts", "TIMESTAMP(3) *ROWTIME*", "TRUE", "", "", "`ts` - INTERVAL '5' SECOND"},
				},
			},
			want: lines(
				"+------+------------------------+-------+---------+--------+----------------------------+",
				"| name |                   type |  null |     key | extras |                  watermark |",
				"+------+------------------------+-------+---------+--------+----------------------------+",
				"|   id |                 BIGINT | FALSE | PRI(id) |        |                            |",
				"|   ts | TIMESTAMP(3) *ROWTIME* |  TRUE |         |        | `ts` - INTERVAL '5' SECOND |",
				"+------+------------------------+-------+---------+--------+----------------------------+",
				"2 rows in set",
			),
		},
		{
			name:  "empty",
			table: session.StaticTable{Columns: []string{"table name"}},
			want:  "Empty set\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			must(t, WriteStaticTable(&out, &tc.table))
			if out.String() != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestDisplayWidthAndTruncation(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string // the cell between "|" and "|"
	}{
		{"abc", 5, "   abc "},
		{"abcdef", 5, " ab... "},
		{"你好世界", 8, " 你好世界 "},
		// 5 columns minus "..." leaves 2: one wide character.
		{"你好世界", 5, " 你... "},
		// 6 minus 3 leaves 3: the second wide character does not fit, so
		// the cut is padded on the left.
		{"你好世界", 6, "  你... "},
		// Combining marks take no column of their own: "e\u0301" is é
		// drawn in one column, the Hangul syllable built from jamo
		// (U+1100 U+1161) in two.
		{"caf\u0065\u0301", 6, "   caf\u0065\u0301 "},
		{"\u1100\u1161x", 4, "  \u1100\u1161x "},
		// A zero-width joiner between two emoji (each 2 wide) adds nothing.
		{"\U0001F469\u200D\U0001F4BB", 5, "  \U0001F469\u200D\U0001F4BB "},
		// A cut keeps a kept character's marks: 6 columns of text in 5
		// leave 2 before "...": the accented e and "a".
		{"e\u0301\u0301abxyz", 5, " e\u0301\u0301a... "},
	}
	for _, tc := range tests {
		got := string(appendCellString(nil, tc.in, tc.width))
		if got != tc.want+"|" {
			t.Errorf("cell(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want+"|")
		}
		if got2 := string(appendCell(nil, []byte(tc.in), tc.width)); got2 != got {
			t.Errorf("byte and string cells differ: %q vs %q", got2, got)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTableauStreaming measures printing a batch of 1024 changes. The
// shell's own work allocates nothing per row ("scalar"); the second case
// shows what formatting DECIMAL, DOUBLE and TIMESTAMP values in types
// costs on top.
func BenchmarkTableauStreaming(b *testing.B) {
	cases := []struct {
		name   string
		schema types.Schema
		row    func(i int) session.Change
	}{
		{
			name: "scalar",
			schema: types.Schema{
				{Name: "id", Type: types.BigIntType},
				{Name: "name", Type: types.StringType},
				{Name: "flag", Type: types.BooleanType},
				{Name: "nothing", Type: types.IntType},
			},
			row: func(i int) session.Change {
				return ch(types.Insert, types.Int(int64(i)), types.String("some customer name"),
					types.Bool(i%2 == 0), types.NullValue)
			},
		},
		{
			name: "decimal-double-timestamp",
			schema: types.Schema{
				{Name: "price", Type: types.DecimalType(10, 2)},
				{Name: "ratio", Type: types.DoubleType},
				{Name: "ts", Type: types.TimestampType(3)},
			},
			row: func(i int) session.Change {
				return ch(types.Insert, types.DecimalFromUnscaled(int64(i)*125, 2), types.Float(float64(i)*1.25),
					types.TimestampMillis(1705314600123+int64(i)))
			},
		},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			changes := make([]session.Change, 1024)
			for i := range changes {
				changes[i] = tc.row(i)
			}
			p := NewTableauPrinter(discard{}, tc.schema, time.UTC, true, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := p.Print(changes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(changes)), "ns/row")
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
