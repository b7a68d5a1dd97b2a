package values

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

// parser turns the 'data' option into rows.
type parser struct {
	table    string
	schema   types.Schema
	loc      *time.Location
	mode     types.ChangelogMode
	modeText string
}

// field is one parsed field of a line: its text and whether it was quoted.
type field struct {
	text   string
	quoted bool
}

func (p *parser) parseData(data string) ([]types.Row, []types.RowKind, error) {
	var rows []types.Row
	var kinds []types.RowKind
	for i, line := range strings.Split(data, "\n") {
		lineNo := i + 1
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		kind, rest, err := p.rowKind(line)
		if err != nil {
			return nil, nil, fmt.Errorf("values table %s, line %d: %w", p.table, lineNo, err)
		}
		fields, err := splitFields(rest)
		if err != nil {
			return nil, nil, fmt.Errorf("values table %s, line %d: %w", p.table, lineNo, err)
		}
		if len(fields) != len(p.schema) {
			return nil, nil, fmt.Errorf("values table %s, line %d: expected %d fields (%s), but found %d",
				p.table, lineNo, len(p.schema), strings.Join(p.schema.Names(), ", "), len(fields))
		}
		row := make(types.Row, len(fields))
		for j, f := range fields {
			col := p.schema[j]
			if !f.quoted && (f.text == "" || strings.EqualFold(f.text, "NULL")) {
				if col.Type.NotNull {
					return nil, nil, fmt.Errorf("values table %s, line %d, column %s: NULL in a NOT NULL column of type %s",
						p.table, lineNo, col.Name, col.Type)
				}
				continue
			}
			v, err := parseValue(f.text, col.Type, p.loc)
			if err != nil {
				return nil, nil, fmt.Errorf("values table %s, line %d, column %s: cannot parse '%s' as %s: %w",
					p.table, lineNo, col.Name, f.text, col.Type, err)
			}
			row[j] = v
		}
		rows = append(rows, row)
		kinds = append(kinds, kind)
	}
	return rows, kinds, nil
}

// rowKind strips an optional "+I ", "-U ", "+U " or "-D " prefix and checks
// that the table's changelog mode allows the kind.
func (p *parser) rowKind(line string) (types.RowKind, string, error) {
	trimmed := strings.TrimLeft(line, " \t")
	kind, allowed := types.Insert, p.mode.Insert
	if len(trimmed) >= 3 && (trimmed[2] == ' ' || trimmed[2] == '\t') {
		prefix := trimmed[:2]
		known := true
		switch prefix {
		case "+I":
			kind, allowed = types.Insert, p.mode.Insert
		case "-U":
			kind, allowed = types.UpdateBefore, p.mode.UpdateBefore
		case "+U":
			kind, allowed = types.UpdateAfter, p.mode.UpdateAfter
		case "-D":
			kind, allowed = types.Delete, p.mode.Delete
		default:
			known = false
		}
		if known {
			trimmed = trimmed[3:]
		}
	}
	if !allowed {
		return 0, "", fmt.Errorf("row kind %s is not allowed by 'changelog-mode' = '%s' (mode %s)", kind, p.modeText, p.mode)
	}
	return kind, trimmed, nil
}

// splitFields splits a line at commas, honouring CSV quotes.
func splitFields(line string) ([]field, error) {
	var fields []field
	i := 0
	for {
		// Skip blanks before the field.
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i < len(line) && line[i] == '"' {
			var b strings.Builder
			i++
			closed := false
			for i < len(line) {
				c := line[i]
				if c == '"' {
					if i+1 < len(line) && line[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteByte(c)
				i++
			}
			if !closed {
				return nil, errors.New("unterminated quoted field")
			}
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			if i < len(line) && line[i] != ',' {
				return nil, fmt.Errorf("unexpected text after a quoted field at character %d", i+1)
			}
			fields = append(fields, field{text: b.String(), quoted: true})
		} else {
			end := strings.IndexByte(line[i:], ',')
			if end < 0 {
				end = len(line) - i
			}
			fields = append(fields, field{text: strings.TrimSpace(line[i : i+end])})
			i += end
		}
		if i >= len(line) {
			return fields, nil
		}
		i++ // the comma
	}
}

// parseValue parses text as a value of type t.
func parseValue(text string, t types.Type, loc *time.Location) (types.Value, error) {
	switch t.Root {
	case types.RootArray, types.RootMap, types.RootMultiset, types.RootRow:
		return parseNested(text, t, loc)
	case types.RootBoolean:
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "true":
			return types.Bool(true), nil
		case "false":
			return types.Bool(false), nil
		}
		return types.NullValue, errors.New("expected TRUE or FALSE")
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt:
		bits := map[types.Root]int{types.RootTinyInt: 8, types.RootSmallInt: 16, types.RootInt: 32, types.RootBigInt: 64}[t.Root]
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, bits)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return types.NullValue, errors.New("out of range")
			}
			return types.NullValue, errors.New("not an integer")
		}
		return types.Int(n), nil
	case types.RootFloat, types.RootDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return types.NullValue, errors.New("not a number")
		}
		if t.Root == types.RootFloat {
			f = float64(float32(f))
		}
		return types.Float(f), nil
	case types.RootDecimal:
		return parseDecimal(strings.TrimSpace(text), t.Precision, t.Scale)
	case types.RootChar, types.RootVarChar:
		return types.String(text), nil
	case types.RootBinary, types.RootVarBinary:
		if len(text) >= 3 && (text[0] == 'x' || text[0] == 'X') && text[1] == '\'' && text[len(text)-1] == '\'' {
			b, err := hex.DecodeString(text[2 : len(text)-1])
			if err != nil {
				return types.NullValue, errors.New("bad hex digits")
			}
			return types.Bytes(b), nil
		}
		return types.Bytes([]byte(text)), nil
	case types.RootDate:
		days, err := parseDate(strings.TrimSpace(text))
		if err != nil {
			return types.NullValue, err
		}
		return types.Int(days), nil
	case types.RootTime:
		nanos, err := parseTime(strings.TrimSpace(text))
		if err != nil {
			return types.NullValue, err
		}
		nanos = truncNanos(nanos, t.Precision)
		return types.Int(nanos / 1e6), nil
	case types.RootTimestamp, types.RootTimestampLTZ:
		days, nanos, err := parseTimestamp(strings.TrimSpace(text))
		if err != nil {
			return types.NullValue, err
		}
		nanos = truncNanos(nanos, t.Precision)
		millis := days*86400000 + nanos/1e6
		if t.Root == types.RootTimestampLTZ && loc != nil && loc != time.UTC {
			// The text is a wall-clock time in the session zone.
			y, mo, d := types.CivilFromDays(days)
			ns := nanos
			tm := time.Date(int(y), time.Month(mo), d, int(ns/3600e9), int(ns/60e9%60), int(ns/1e9%60), int(ns%1e9), loc)
			millis = tm.UnixMilli()
		}
		return types.Timestamp(millis, int32(nanos%1e6)), nil
	}
	return types.NullValue, fmt.Errorf("type %s is not supported", t)
}

func truncNanos(nanos int64, precision int) int64 {
	if precision >= 9 || precision < 0 {
		return nanos
	}
	unit := int64(math.Pow10(9 - precision))
	return nanos / unit * unit
}

// parseDecimal parses a decimal number (plain or with exponent), rounds it
// half-up to scale and checks it fits precision.
func parseDecimal(text string, precision, scale int) (types.Value, error) {
	r, ok := new(big.Rat).SetString(text)
	if !ok || strings.ContainsAny(text, "/") {
		return types.NullValue, errors.New("not a decimal number")
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	r.Mul(r, new(big.Rat).SetInt(pow))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	// Half-up: away from zero when the remainder is at least half.
	if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(r.Denom()) >= 0 {
		if r.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	if new(big.Int).Abs(q).Cmp(limit) >= 0 {
		return types.NullValue, fmt.Errorf("does not fit DECIMAL(%d, %d)", precision, scale)
	}
	return types.DecimalFromBig(q, scale), nil
}

// digits reads 1…max decimal digits at s[i:].
func digits(s string, i, maxDigits int) (int, int, bool) {
	n, j := 0, i
	for j < len(s) && j-i < maxDigits && s[j] >= '0' && s[j] <= '9' {
		n = n*10 + int(s[j]-'0')
		j++
	}
	return n, j, j > i
}

var errDate = errors.New("expected a date 'yyyy-MM-dd'")

func parseDate(s string) (int64, error) {
	days, rest, err := parseDatePrefix(s)
	if err != nil {
		return 0, err
	}
	if rest != "" {
		return 0, errDate
	}
	return days, nil
}

func parseDatePrefix(s string) (int64, string, error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	y, i, ok := digits(s, i, 9)
	if !ok || i >= len(s) || s[i] != '-' {
		return 0, "", errDate
	}
	mo, i, ok := digits(s, i+1, 2)
	if !ok || i >= len(s) || s[i] != '-' {
		return 0, "", errDate
	}
	d, i, ok := digits(s, i+1, 2)
	if !ok {
		return 0, "", errDate
	}
	if neg {
		y = -y
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysInMonth(int64(y), mo) {
		return 0, "", errors.New("no such date")
	}
	return types.DaysFromCivil(int64(y), mo, d), s[i:], nil
}

func daysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

var errTime = errors.New("expected a time 'HH:mm:ss[.fff]'")

// parseTime parses HH:mm[:ss[.fffffffff]] into nanoseconds of the day.
func parseTime(s string) (int64, error) {
	h, i, ok := digits(s, 0, 2)
	if !ok || i >= len(s) || s[i] != ':' {
		return 0, errTime
	}
	m, i, ok := digits(s, i+1, 2)
	if !ok {
		return 0, errTime
	}
	sec, frac := 0, int64(0)
	if i < len(s) && s[i] == ':' {
		if sec, i, ok = digits(s, i+1, 2); !ok {
			return 0, errTime
		}
		if i < len(s) && s[i] == '.' {
			start := i + 1
			var f int
			if f, i, ok = digits(s, start, 9); !ok {
				return 0, errTime
			}
			frac = int64(f)
			for k := i - start; k < 9; k++ {
				frac *= 10
			}
		}
	}
	if i != len(s) {
		return 0, errTime
	}
	if h > 23 || m > 59 || sec > 59 {
		return 0, errors.New("no such time")
	}
	return int64(h)*3600e9 + int64(m)*60e9 + int64(sec)*1e9 + frac, nil
}

// parseTimestamp parses 'yyyy-MM-dd[( |T)HH:mm[:ss[.f…]]]' into days and
// nanoseconds of the day.
func parseTimestamp(s string) (int64, int64, error) {
	days, rest, err := parseDatePrefix(s)
	if err != nil {
		return 0, 0, errors.New("expected a timestamp 'yyyy-MM-dd HH:mm:ss[.fff]'")
	}
	if rest == "" {
		return days, 0, nil
	}
	if rest[0] != ' ' && rest[0] != 'T' {
		return 0, 0, errors.New("expected a timestamp 'yyyy-MM-dd HH:mm:ss[.fff]'")
	}
	nanos, err := parseTime(strings.TrimLeft(rest[1:], " "))
	if err != nil {
		return 0, 0, errors.New("expected a timestamp 'yyyy-MM-dd HH:mm:ss[.fff]'")
	}
	return days, nanos, nil
}
