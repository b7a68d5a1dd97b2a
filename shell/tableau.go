package shell

import (
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// DefaultMaxColumnWidth is the default of 'sql-client.display.max-column-width'.
const DefaultMaxColumnWidth = 30

const (
	nullCell      = "<NULL>"
	truncatedMark = "..."
	rowKindHeader = "op"
)

// TableauPrinter renders the changes of a query in the SQL client's tableau
// layout.
//
// In streaming mode the column widths are fixed up front from the column
// types (so rows can be printed as they arrive), an "op" column shows each
// row's kind, and values wider than their column are cut and end in "...".
// In batch mode rows are collected until the query ends and the widths come
// from the data, capped at the maximum column width.
//
// A TableauPrinter is not safe for concurrent use.
type TableauPrinter struct {
	w         io.Writer
	names     []string
	types     []types.Type
	loc       *time.Location
	streaming bool
	maxWidth  int

	widths []int // streaming: one per printed column, the op column first
	rows   int64

	cells [][]string // batch: formatted values of the collected rows

	buf  []byte // output of one Print call, reused
	cell []byte // one formatted value, reused
}

// NewTableauPrinter returns a printer for rows of the given schema.
// TIMESTAMP_LTZ values are shown in loc (UTC when nil). maxColumnWidth <= 0
// means DefaultMaxColumnWidth.
func NewTableauPrinter(w io.Writer, schema types.Schema, loc *time.Location, streaming bool, maxColumnWidth int) *TableauPrinter {
	if maxColumnWidth <= 0 {
		maxColumnWidth = DefaultMaxColumnWidth
	}
	if loc == nil {
		loc = time.UTC
	}
	p := &TableauPrinter{
		w:         w,
		names:     schema.Names(),
		types:     schema.Types(),
		loc:       loc,
		streaming: streaming,
		maxWidth:  maxColumnWidth,
	}
	if streaming {
		p.widths = make([]int, 0, len(schema)+1)
		p.widths = append(p.widths, len(rowKindHeader))
		for _, c := range schema {
			p.widths = append(p.widths, max(displayWidth(c.Name), typeWidth(c.Type, maxColumnWidth), len(nullCell)))
		}
	}
	return p
}

// typeWidth is the width a streaming column needs for any value of type t,
// as the SQL client computes it: exact for numbers and temporal types, the
// maximum column width for everything else.
func typeWidth(t types.Type, maxWidth int) int {
	switch t.Root {
	case types.RootTinyInt:
		return 4 // -128
	case types.RootSmallInt:
		return 6
	case types.RootInt:
		return 11
	case types.RootBigInt:
		return 20
	case types.RootDecimal:
		return t.Precision + 2 // sign and decimal point
	case types.RootBoolean:
		return 5
	case types.RootDate:
		return 10
	case types.RootTime:
		if t.Precision == 0 {
			return 8
		}
		return 9 + t.Precision
	case types.RootTimestamp, types.RootTimestampLTZ:
		// The SQL client reserves room for milli, micro or nano digits.
		switch {
		case t.Precision == 0:
			return 19
		case t.Precision <= 3:
			return 23
		case t.Precision <= 6:
			return 26
		default:
			return 29
		}
	}
	return maxWidth
}

// Start prints the header. In streaming mode it does so at once, so that the
// user sees the query is running before the first row arrives; in batch mode
// the header waits for the data.
func (p *TableauPrinter) Start() error {
	if !p.streaming {
		return nil
	}
	p.buf = appendBorder(p.buf[:0], p.widths)
	p.buf = p.appendHeader(p.buf, p.widths, true)
	p.buf = appendBorder(p.buf, p.widths)
	return p.flush()
}

// Print renders a batch of changes. Streaming mode writes them at once;
// batch mode keeps their text for Finish. The changes are not retained.
func (p *TableauPrinter) Print(changes []session.Change) error {
	if !p.streaming {
		for _, c := range changes {
			row := make([]string, len(p.types))
			for i := range row {
				p.cell = p.formatValue(p.cell[:0], c.Row, i)
				row[i] = string(p.cell)
			}
			p.cells = append(p.cells, row)
			p.rows++
		}
		return nil
	}
	p.buf = p.buf[:0]
	for _, c := range changes {
		p.buf = append(p.buf, '|')
		p.buf = appendCellString(p.buf, c.Kind.String(), p.widths[0])
		for i := range p.types {
			p.cell = p.formatValue(p.cell[:0], c.Row, i)
			p.buf = appendCell(p.buf, p.cell, p.widths[i+1])
		}
		p.buf = append(p.buf, '\n')
		p.rows++
	}
	return p.flush()
}

func (p *TableauPrinter) formatValue(dst []byte, row types.Row, i int) []byte {
	if i >= len(row) || row[i].K == types.KindNull {
		return append(dst, nullCell...)
	}
	return types.AppendSQL(dst, row[i], p.types[i], p.loc)
}

// Finish prints the end of a query that ran to completion: in streaming mode
// the closing border (when rows were printed) and "Received a total of N
// rows"; in batch mode the whole table and "N rows in set", or "Empty set".
func (p *TableauPrinter) Finish() error {
	if p.streaming {
		p.buf = p.buf[:0]
		if p.rows > 0 {
			p.buf = appendBorder(p.buf, p.widths)
		}
		p.buf = fmt.Appendf(p.buf, "Received a total of %d %s\n", p.rows, rowWord(p.rows))
		return p.flush()
	}
	if p.rows == 0 {
		_, err := io.WriteString(p.w, "Empty set\n")
		return err
	}
	widths := contentWidths(p.names, p.cells, p.maxWidth)
	p.buf = appendBorder(p.buf[:0], widths)
	p.buf = p.appendHeader(p.buf, widths, false)
	p.buf = appendBorder(p.buf, widths)
	for _, row := range p.cells {
		p.buf = appendRow(p.buf, row, widths)
	}
	p.buf = appendBorder(p.buf, widths)
	p.buf = fmt.Appendf(p.buf, "%d %s in set\n", p.rows, rowWord(p.rows))
	return p.flush()
}

// Terminate prints the end of a query the user cancelled.
func (p *TableauPrinter) Terminate() error {
	_, err := fmt.Fprintf(p.w, "Query terminated, received a total of %d %s\n", p.rows, rowWord(p.rows))
	return err
}

// Rows is the number of changes received so far, of every row kind.
func (p *TableauPrinter) Rows() int64 { return p.rows }

func (p *TableauPrinter) flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	_, err := p.w.Write(p.buf)
	return err
}

func (p *TableauPrinter) appendHeader(dst []byte, widths []int, withKind bool) []byte {
	dst = append(dst, '|')
	col := 0
	if withKind {
		dst = appendCellString(dst, rowKindHeader, widths[0])
		col = 1
	}
	for _, name := range p.names {
		dst = appendCellString(dst, name, widths[col])
		col++
	}
	return append(dst, '\n')
}

// WriteStaticTable renders a materialized result (SHOW, DESCRIBE, SET) the
// way the SQL client does: widths from the data, values right-aligned,
// nothing truncated, then "N rows in set", or only "Empty set".
func WriteStaticTable(w io.Writer, t *session.StaticTable) error {
	if len(t.Rows) == 0 {
		_, err := io.WriteString(w, "Empty set\n")
		return err
	}
	widths := contentWidths(t.Columns, t.Rows, 0)
	buf := appendBorder(nil, widths)
	buf = appendRow(buf, t.Columns, widths)
	buf = appendBorder(buf, widths)
	for _, row := range t.Rows {
		buf = appendRow(buf, row, widths)
	}
	buf = appendBorder(buf, widths)
	buf = fmt.Appendf(buf, "%d %s in set\n", len(t.Rows), rowWord(int64(len(t.Rows))))
	_, err := w.Write(buf)
	return err
}

// contentWidths sizes each column to its widest name or value, capped at
// maxWidth when maxWidth > 0. Short rows leave their missing cells empty.
func contentWidths(names []string, rows [][]string, maxWidth int) []int {
	widths := make([]int, len(names))
	for i, n := range names {
		widths[i] = displayWidth(n)
	}
	for _, row := range rows {
		for i := 0; i < len(row) && i < len(widths); i++ {
			widths[i] = max(widths[i], displayWidth(row[i]))
		}
	}
	if maxWidth > 0 {
		for i := range widths {
			widths[i] = min(widths[i], maxWidth)
		}
	}
	return widths
}

func appendRow(dst []byte, row []string, widths []int) []byte {
	dst = append(dst, '|')
	for i, wd := range widths {
		var s string
		if i < len(row) {
			s = row[i]
		}
		dst = appendCellString(dst, s, wd)
	}
	return append(dst, '\n')
}

func appendBorder(dst []byte, widths []int) []byte {
	dst = append(dst, '+')
	for _, wd := range widths {
		for range wd + 2 {
			dst = append(dst, '-')
		}
		dst = append(dst, '+')
	}
	return append(dst, '\n')
}

// appendCell appends " <value> |" with the value right-aligned in width
// columns, or cut to width-3 columns followed by "..." when it is wider.
func appendCell(dst, v []byte, width int) []byte {
	dst = append(dst, ' ')
	if w := displayWidthBytes(v); w <= width {
		dst = appendSpaces(dst, width-w)
		dst = append(dst, v...)
	} else {
		dst = appendTruncated(dst, v, width-len(truncatedMark))
		dst = append(dst, truncatedMark...)
	}
	return append(dst, " |"...)
}

func appendCellString(dst []byte, s string, width int) []byte {
	dst = append(dst, ' ')
	if w := displayWidth(s); w <= width {
		dst = appendSpaces(dst, width-w)
		dst = append(dst, s...)
	} else {
		dst = appendTruncatedString(dst, s, width-len(truncatedMark))
		dst = append(dst, truncatedMark...)
	}
	return append(dst, " |"...)
}

// appendTruncated appends the longest prefix of v that fits in target
// columns, padded on the left when a wide character did not fit.
func appendTruncated(dst, v []byte, target int) []byte {
	used, end := 0, 0
	for end < len(v) {
		r, size := utf8.DecodeRune(v[end:])
		rw := runeWidth(r)
		if used+rw > target {
			break
		}
		used += rw
		end += size
	}
	dst = appendSpaces(dst, target-used)
	return append(dst, v[:end]...)
}

func appendTruncatedString(dst []byte, s string, target int) []byte {
	used, end := 0, 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		rw := runeWidth(r)
		if used+rw > target {
			break
		}
		used += rw
		end += size
	}
	dst = appendSpaces(dst, target-used)
	return append(dst, s[:end]...)
}

func appendSpaces(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, ' ')
	}
	return dst
}

func rowWord(n int64) string {
	if n > 1 {
		return "rows"
	}
	return "row"
}

// displayWidth is the number of terminal columns s occupies (see runeWidth): East Asian wide
// and full-width characters take two.
func displayWidth(s string) int {
	w := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			for _, r := range s[i:] {
				w += runeWidth(r)
			}
			return w
		}
		w++
	}
	return w
}

func displayWidthBytes(b []byte) int {
	w := 0
	for i := 0; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			rest := b[i:]
			for len(rest) > 0 {
				r, size := utf8.DecodeRune(rest)
				w += runeWidth(r)
				rest = rest[size:]
			}
			return w
		}
		w++
	}
	return w
}

// runeWidth is the number of terminal columns r takes: 2 for East Asian
// wide characters, 0 for those a terminal draws onto the previous character
// (combining and enclosing marks, the Hangul vowels and final consonants
// that join a leading consonant) or does not draw (format characters such as
// the zero-width space and joiner), 1 for the others.
func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		return 1
	case isWide(r):
		return 2
	case r >= 0x1160 && r <= 0x11FF,
		unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	return 1
}

// wideRanges are the main East Asian Wide (W) and Fullwidth (F) blocks of
// Unicode (UAX #11): Hangul Jamo, CJK symbols and ideographs, kana, Hangul
// syllables, compatibility and full-width forms, and the emoji blocks.
var wideRanges = [...][2]rune{
	{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC},
	{0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},
	{0xA000, 0xA4CF}, {0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
	{0xFE10, 0xFE19}, {0xFE30, 0xFE6F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6},
	{0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
}

func isWide(r rune) bool {
	if r < 0x1100 {
		return false
	}
	for _, rg := range wideRanges {
		if r < rg[0] {
			return false
		}
		if r <= rg[1] {
			return true
		}
	}
	return false
}

// parseColumnWidth reads 'sql-client.display.max-column-width'.
func parseColumnWidth(v string) (int, error) {
	if v == "" {
		return DefaultMaxColumnWidth, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid value %q for 'sql-client.display.max-column-width': a positive integer is required", v)
	}
	return n, nil
}
