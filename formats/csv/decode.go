package csv

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/json/sqltext"
	"github.com/flinksql/flinksql/types"
)

// Decoder decodes one CSV record into a row, fields by position.
type Decoder struct {
	cfg  *config
	root *node
}

// recordPrefixLen is how much of a bad record an error message quotes.
const recordPrefixLen = 100

// field is one field of a record: its text after quotes and escapes are
// removed.
type field struct {
	text []byte
}

// Decode implements formats.Decoder. A trailing line break is ignored; an
// empty record and, with allow-comments, a line starting with '#' yield no
// row (formats.ErrSkipRecord).
func (d *Decoder) Decode(data []byte, row types.Row) error {
	n := len(d.root.fields)
	if len(row) < n {
		return fmt.Errorf("csv: row has %d slots for %d columns", len(row), n)
	}
	line := data
	if k := len(line); k > 0 && line[k-1] == '\n' {
		line = line[:k-1]
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	if len(line) == 0 || (d.cfg.allowComments && line[0] == '#') {
		return formats.ErrSkipRecord
	}
	var buf [32]field
	fields, err := d.split(line, buf[:0])
	if err == nil {
		err = d.convertRow(fields, row)
	}
	if err == nil {
		return nil
	}
	if d.cfg.ignoreErrors {
		clear(row[:n])
		return formats.ErrSkipRecord
	}
	return fmt.Errorf("Failed to deserialize CSV row '%s': %w", recordPrefix(data), err)
}

func recordPrefix(data []byte) string {
	if len(data) <= recordPrefixLen {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	cut := recordPrefixLen
	for cut > recordPrefixLen-utf8.UTFMax && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(data[:cut]), "\uFFFD") + "..."
}

// at reports whether the character r (which may be noChar) starts at s[i],
// and its length in bytes.
func at(s []byte, i int, r rune) (bool, int) {
	if r < 0 || i >= len(s) {
		return false, 0
	}
	if r < utf8.RuneSelf {
		return s[i] == byte(r), 1
	}
	got, size := utf8.DecodeRune(s[i:])
	return got == r, size
}

// split cuts a record into fields. A field is quoted if it starts with the
// quote character; inside quotes a doubled quote is one quote. The escape
// character, when set, takes the next character literally (\n, \r, \t and
// \0 as the control characters).
func (d *Decoder) split(line []byte, fields []field) ([]field, error) {
	cfg := d.cfg
	i := 0
	for {
		// One field.
		var text []byte
		var owned []byte // set once the field needed rewriting
		if ok, qn := at(line, i, cfg.quote); ok {
			i += qn
			start := i
			closed := false
			for i < len(line) {
				if ok, n := at(line, i, cfg.quote); ok {
					if ok2, n2 := at(line, i+n, cfg.quote); ok2 {
						if owned == nil {
							owned = append([]byte(nil), line[start:i]...)
						}
						owned = append(owned, line[i:i+n]...)
						i += n + n2
						continue
					}
					if owned == nil {
						text = line[start:i]
					} else {
						text = owned
					}
					i += n
					closed = true
					break
				}
				if ok, n := at(line, i, cfg.escape); ok && i+n < len(line) {
					if owned == nil {
						owned = append([]byte(nil), line[start:i]...)
					}
					owned = appendEscaped(owned, line[i+n])
					i += n + 1
					continue
				}
				if owned != nil {
					owned = append(owned, line[i])
				}
				i++
			}
			if !closed {
				return nil, fmt.Errorf("Missing closing quote for value")
			}
			if i < len(line) {
				if ok, _ := at(line, i, cfg.delim); !ok {
					return nil, fmt.Errorf("Expected column separator character (%q) or end-of-line after a quoted value, found %q",
						cfg.delim, rune(line[i]))
				}
			}
		} else {
			start := i
			for i < len(line) {
				if ok, _ := at(line, i, cfg.delim); ok {
					break
				}
				if ok, n := at(line, i, cfg.escape); ok && i+n < len(line) {
					if owned == nil {
						owned = append([]byte(nil), line[start:i]...)
					}
					owned = appendEscaped(owned, line[i+n])
					i += n + 1
					continue
				}
				if owned != nil {
					owned = append(owned, line[i])
				}
				i++
			}
			if owned == nil {
				text = line[start:i]
			} else {
				text = owned
			}
		}
		fields = append(fields, field{text: text})
		if i >= len(line) {
			return fields, nil
		}
		_, n := at(line, i, cfg.delim)
		i += n
	}
}

func appendEscaped(dst []byte, c byte) []byte {
	switch c {
	case 'n':
		return append(dst, '\n')
	case 'r':
		return append(dst, '\r')
	case 't':
		return append(dst, '\t')
	case '0':
		return append(dst, 0)
	}
	return append(dst, c)
}

// convertRow converts the top-level fields into row.
func (d *Decoder) convertRow(fields []field, row types.Row) error {
	n := d.root
	if len(fields) > len(n.fields) {
		extra := fields[len(n.fields)].text
		return fmt.Errorf("Too many entries: expected at most %d (value #%d (%d chars) \"%s\")",
			len(n.fields), len(n.fields), utf8.RuneCount(extra), extra)
	}
	if len(fields) < len(n.fields) && !d.cfg.ignoreErrors {
		return fmt.Errorf("Row length mismatch. %d fields expected but was %d.", len(n.fields), len(fields))
	}
	for i, f := range fields {
		v, err := d.convert(&n.fields[i], f.text)
		if err != nil {
			if !d.cfg.ignoreErrors {
				return fmt.Errorf("Fail to deserialize at field: %s: %w", n.names[i], err)
			}
			v = types.Value{}
		}
		row[i] = v
	}
	return nil
}

// convert converts one field's text to type n.
func (d *Decoder) convert(n *node, text []byte) (types.Value, error) {
	if d.cfg.hasNull && string(text) == d.cfg.nullLiteral {
		return types.Value{}, nil
	}
	switch n.root {
	case types.RootNull:
		return types.Value{}, nil
	case types.RootBoolean:
		return types.Bool(sqltext.ParseJavaBool(sqltext.TrimJava(text))), nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		if v, ok := sqltext.ParseJavaInt(sqltext.TrimJava(text), intBits(n.root)); ok {
			return types.Int(v), nil
		}
		return types.Value{}, fmt.Errorf("For input string: \"%s\" (cannot convert to %s)", text, n.t)
	case types.RootFloat, types.RootDouble:
		bits := 64
		if n.root == types.RootFloat {
			bits = 32
		}
		if f, ok := sqltext.ParseJavaFloat(sqltext.TrimJava(text), bits); ok {
			return types.Float(f), nil
		}
		return types.Value{}, fmt.Errorf("For input string: \"%s\" (cannot convert to %s)", text, n.t)
	case types.RootDecimal:
		v, res := sqltext.ParseDecimal(text, n.t.Precision, n.t.Scale)
		switch res {
		case sqltext.DecimalOK:
			return v, nil
		case sqltext.DecimalOverflow:
			return types.Value{}, nil // Flink's DecimalData.fromBigDecimal gives null
		}
		return types.Value{}, fmt.Errorf("Character array is not a valid decimal number: \"%s\"", text)
	case types.RootChar, types.RootVarChar:
		return types.String(string(text)), nil
	case types.RootBinary, types.RootVarBinary:
		enc := base64.StdEncoding
		if len(text)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		out := make([]byte, enc.DecodedLen(len(text)))
		k, err := enc.Decode(out, text)
		if err != nil {
			return types.Value{}, fmt.Errorf("Unable to deserialize byte array: %w", err)
		}
		return types.Value{K: types.KindBytes, S: string(out[:k])}, nil
	case types.RootDate:
		if days, ok := sqltext.ParseJavaSQLDate(text); ok {
			return types.Int(days), nil
		}
		return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as DATE 'yyyy-[m]m-[d]d'", text)
	case types.RootTime:
		nanos, rest, ok := sqltext.ParseTime(text, sqltext.ISOTime)
		if !ok || len(rest) != 0 {
			return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as TIME 'HH:mm[:ss[.fffffffff]]'", text)
		}
		ms := nanos / 1e6
		unit := int64(1000)
		for p := 0; p < n.t.Precision && unit > 1; p++ {
			unit /= 10
		}
		return types.Int(ms - ms%unit), nil
	case types.RootTimestamp, types.RootTimestampLTZ:
		ltz := n.root == types.RootTimestampLTZ
		ms, nano, ok := sqltext.ParseTimestamp(sqltext.TrimJava(text), ' ', sqltext.SQLTime, ltz)
		if ok {
			return types.Timestamp(ms, nano), nil
		}
		want := "yyyy-MM-dd HH:mm:ss[.fffffffff]"
		if ltz {
			want += "Z"
		}
		return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as %s '%s'", text, n.t, want)
	case types.RootArray:
		parts := d.splitElements(text)
		elems := make([]types.Value, len(parts))
		for i, p := range parts {
			v, err := d.convert(n.elem, p)
			if err != nil {
				if !d.cfg.ignoreErrors {
					return types.Value{}, err
				}
				v = types.Value{}
			}
			elems[i] = v
		}
		return types.ArrayValue(elems), nil
	case types.RootRow:
		parts := d.splitElements(text)
		if len(parts) == 0 {
			return types.Value{}, nil
		}
		if len(parts) < len(n.fields) && !d.cfg.ignoreErrors {
			return types.Value{}, fmt.Errorf("Row length mismatch. %d fields expected but was %d.", len(n.fields), len(parts))
		}
		r := make(types.Row, len(n.fields))
		for i := range n.fields {
			if i >= len(parts) {
				break
			}
			v, err := d.convert(&n.fields[i], parts[i])
			if err != nil {
				if !d.cfg.ignoreErrors {
					return types.Value{}, fmt.Errorf("Fail to deserialize at field: %s: %w", n.names[i], err)
				}
				v = types.Value{}
			}
			r[i] = v
		}
		return types.RowValue(r), nil
	}
	return types.Value{}, fmt.Errorf("Unsupported type: %s", n.t)
}

// splitElements splits the text of an ARRAY or nested ROW field by the array
// element delimiter; an empty text has no elements.
func (d *Decoder) splitElements(text []byte) [][]byte {
	if len(text) == 0 {
		return nil
	}
	var parts [][]byte
	sep := d.cfg.arrayDelim
	for {
		k := strings.Index(string(text), sep)
		if k < 0 {
			return append(parts, text)
		}
		parts = append(parts, text[:k])
		text = text[k+len(sep):]
	}
}

func intBits(r types.Root) int {
	switch r {
	case types.RootTinyInt:
		return 8
	case types.RootSmallInt:
		return 16
	case types.RootInt, types.RootIntervalYearMonth:
		return 32
	}
	return 64
}
