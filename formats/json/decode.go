package json

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/json/sqltext"
	"github.com/flinksql/flinksql/types"
)

// Decoder decodes one JSON object per record into a row.
type Decoder struct {
	cfg  *config
	root *node
}

// maxDepth bounds nesting, as Jackson's StreamReadConstraints do, so that a
// hostile record cannot exhaust the stack.
const maxDepth = 1000

// recordPrefixLen is how much of a bad record an error message quotes.
const recordPrefixLen = 100

// syntaxError is malformed JSON: the record cannot be read at all. Every
// other error of the scanner is a conversion error of one value, which
// ignore-parse-errors turns into NULL.
type syntaxError struct {
	msg string
	pos int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

// Decode implements formats.Decoder. An empty record yields no row
// (formats.ErrSkipRecord), as in Flink.
func (d *Decoder) Decode(data []byte, row types.Row) error {
	if len(data) == 0 {
		return formats.ErrSkipRecord
	}
	if len(row) < len(d.root.fields) {
		return fmt.Errorf("json: row has %d slots for %d columns", len(row), len(d.root.fields))
	}
	p := parser{data: data, cfg: d.cfg}
	p.skipSpace()
	var err error
	if p.pos >= len(data) {
		err = p.syntaxErr("Expected a JSON object but found end of input")
	} else if data[p.pos] != '{' {
		err = p.syntaxErr("Expected a JSON object but found " + describeByte(data[p.pos]))
	} else {
		err = p.readObject(d.root, row, 0)
	}
	// Whatever follows the object is not read, as with Flink's parser.
	if err == nil {
		return nil
	}
	if d.cfg.ignoreErrors {
		clear(row[:len(d.root.fields)])
		return formats.ErrSkipRecord
	}
	return fmt.Errorf("Failed to deserialize JSON '%s': %w", recordPrefix(data), err)
}

// recordPrefix quotes the start of a record for an error message.
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

type parser struct {
	data []byte
	pos  int
	cfg  *config
}

func (p *parser) syntaxErr(msg string) error { return &syntaxError{msg: msg, pos: p.pos} }

func (p *parser) unexpected() error {
	if p.pos >= len(p.data) {
		return p.syntaxErr("Unexpected end of input")
	}
	return p.syntaxErr("Unexpected character " + describeByte(p.data[p.pos]))
}

func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("'%c'", c)
	}
	return fmt.Sprintf("0x%02x", c)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// expect consumes c after optional whitespace.
func (p *parser) expect(c byte) error {
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != c {
		return p.unexpected()
	}
	p.pos++
	return nil
}

// isSyntax reports whether err is malformed JSON; every other error is a
// conversion error, which ignore-parse-errors replaces by NULL.
func isSyntax(err error) bool {
	var se *syntaxError
	return errors.As(err, &se)
}

// readObject reads the object at p.pos into out, one slot per field of n.
func (p *parser) readObject(n *node, out types.Row, depth int) error {
	if depth >= maxDepth {
		return p.syntaxErr(fmt.Sprintf("Document nesting depth exceeds the maximum allowed (%d)", maxDepth))
	}
	p.pos++ // '{'
	var seenSmall uint64
	var seenLarge []bool
	if len(n.fields) > 64 {
		seenLarge = make([]bool, len(n.fields))
	}
	hint := 0
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return p.unexpected()
			}
			key, escaped, err := p.scanString()
			if err != nil {
				return err
			}
			if escaped {
				key = unescape(key)
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			p.skipSpace()
			i := n.lookup(key, hint)
			if i < 0 {
				if err := p.skipValue(depth + 1); err != nil {
					return err
				}
			} else {
				hint = i + 1
				v, err := p.readValue(&n.fields[i], depth+1)
				if err != nil {
					if isSyntax(err) {
						return err
					}
					if !p.cfg.ignoreErrors {
						return fmt.Errorf("Fail to deserialize at field: %s: %w", n.names[i], err)
					}
					v = types.Value{}
				}
				out[i] = v
				if seenLarge != nil {
					seenLarge[i] = true
				} else {
					seenSmall |= 1 << uint(i)
				}
			}
			p.skipSpace()
			if p.pos >= len(p.data) {
				return p.unexpected()
			}
			if c := p.data[p.pos]; c == ',' {
				p.pos++
				continue
			} else if c == '}' {
				p.pos++
				break
			}
			return p.unexpected()
		}
	}
	if p.cfg.failOnMissing {
		for i := range n.fields {
			seen := seenSmall&(1<<uint(i)) != 0
			if seenLarge != nil {
				seen = seenLarge[i]
			}
			if !seen {
				return fmt.Errorf("Could not find field with name '%s'.", n.names[i])
			}
		}
	}
	return nil
}

// readValue reads the value at p.pos (whitespace skipped) as type n.
func (p *parser) readValue(n *node, depth int) (types.Value, error) {
	if p.pos >= len(p.data) {
		return types.Value{}, p.unexpected()
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		s, escaped, err := p.scanString()
		if err != nil {
			return types.Value{}, err
		}
		return p.fromString(n, s, escaped)
	case c == '-' || (c >= '0' && c <= '9'):
		num, isInt, err := p.scanNumber()
		if err != nil {
			return types.Value{}, err
		}
		return fromNumber(n, num, isInt)
	case c == 't' || c == 'f' || c == 'n':
		lit, err := p.scanLiteral()
		if err != nil {
			return types.Value{}, err
		}
		if lit == litNull {
			return types.Value{}, nil
		}
		return fromBool(n, lit == litTrue)
	case c == '{':
		switch n.root {
		case types.RootRow:
			out := make(types.Row, len(n.fields))
			if err := p.readObject(n, out, depth); err != nil {
				return types.Value{}, err
			}
			return types.RowValue(out), nil
		case types.RootMap, types.RootMultiset:
			return p.readMap(n, depth)
		}
		return p.fromContainer(n, depth)
	case c == '[':
		if n.root == types.RootArray {
			return p.readArray(n, depth)
		}
		return p.fromContainer(n, depth)
	}
	return types.Value{}, p.unexpected()
}

func (p *parser) readArray(n *node, depth int) (types.Value, error) {
	if depth >= maxDepth {
		return types.Value{}, p.syntaxErr(fmt.Sprintf("Document nesting depth exceeds the maximum allowed (%d)", maxDepth))
	}
	p.pos++ // '['
	elems := []types.Value{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return types.ArrayValue(elems), nil
	}
	for {
		p.skipSpace()
		v, err := p.readValue(n.elem, depth+1)
		if err != nil {
			if isSyntax(err) || !p.cfg.ignoreErrors {
				return types.Value{}, err
			}
			v = types.Value{}
		}
		elems = append(elems, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return types.Value{}, p.unexpected()
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			continue
		case ']':
			p.pos++
			return types.ArrayValue(elems), nil
		}
		return types.Value{}, p.unexpected()
	}
}

func (p *parser) readMap(n *node, depth int) (types.Value, error) {
	if depth >= maxDepth {
		return types.Value{}, p.syntaxErr(fmt.Sprintf("Document nesting depth exceeds the maximum allowed (%d)", maxDepth))
	}
	p.pos++ // '{'
	keys, vals := []types.Value{}, []types.Value{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return types.MapOf(keys, vals), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return types.Value{}, p.unexpected()
		}
		key, escaped, err := p.scanString()
		if err != nil {
			return types.Value{}, err
		}
		if escaped {
			key = unescape(key)
		}
		if err := p.expect(':'); err != nil {
			return types.Value{}, err
		}
		p.skipSpace()
		v, err := p.readValue(n.value, depth+1)
		if err != nil {
			if isSyntax(err) || !p.cfg.ignoreErrors {
				return types.Value{}, err
			}
			v = types.Value{}
		}
		// A repeated key keeps its first position and its last value, as
		// Flink's HashMap does.
		k := string(key)
		dup := false
		for i := range keys {
			if keys[i].S == k {
				vals[i], dup = v, true
				break
			}
		}
		if !dup {
			keys = append(keys, types.String(k))
			vals = append(vals, v)
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return types.Value{}, p.unexpected()
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
			return types.MapOf(keys, vals), nil
		}
		return types.Value{}, p.unexpected()
	}
}

// fromContainer converts an object or array given for a scalar type: a
// string type takes the compact JSON text; BOOLEAN reads false (Flink parses
// the token text leniently); any other type is a conversion error.
func (p *parser) fromContainer(n *node, depth int) (types.Value, error) {
	start := p.pos
	if err := p.skipValue(depth); err != nil {
		return types.Value{}, err
	}
	switch n.root {
	case types.RootChar, types.RootVarChar:
		return types.String(string(compactJSON(p.data[start:p.pos]))), nil
	case types.RootBoolean:
		return types.Bool(false), nil
	case types.RootNull:
		return types.Value{}, nil
	}
	return types.Value{}, fmt.Errorf("cannot convert a JSON %s to %s", containerName(p.data[start]), n.t)
}

func containerName(c byte) string {
	if c == '[' {
		return "array"
	}
	return "object"
}

// skipValue validates and skips the value at p.pos.
func (p *parser) skipValue(depth int) error {
	if depth >= maxDepth {
		return p.syntaxErr(fmt.Sprintf("Document nesting depth exceeds the maximum allowed (%d)", maxDepth))
	}
	if p.pos >= len(p.data) {
		return p.unexpected()
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		_, _, err := p.scanString()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.scanNumber()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, err := p.scanLiteral()
		return err
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		p.pos++
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == closing {
			p.pos++
			return nil
		}
		for {
			p.skipSpace()
			if c == '{' {
				if p.pos >= len(p.data) || p.data[p.pos] != '"' {
					return p.unexpected()
				}
				if _, _, err := p.scanString(); err != nil {
					return err
				}
				if err := p.expect(':'); err != nil {
					return err
				}
				p.skipSpace()
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			p.skipSpace()
			if p.pos >= len(p.data) {
				return p.unexpected()
			}
			switch p.data[p.pos] {
			case ',':
				p.pos++
				continue
			case closing:
				p.pos++
				return nil
			}
			return p.unexpected()
		}
	}
	return p.unexpected()
}

// scanString scans the string at p.pos and returns its raw content (escapes
// not applied) and whether it contains escapes. Unescaped control characters
// are accepted, as Flink configures Jackson to.
func (p *parser) scanString() (raw []byte, escaped bool, err error) {
	start := p.pos + 1
	i := start
	hi := false
	data := p.data
	for i < len(data) {
		// Skip eight bytes at a time while none is a quote, a backslash or
		// non-ASCII.
		for i+8 <= len(data) && !stopsString8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		switch {
		case c == '"':
			raw = p.data[start:i]
			if hi && !utf8.Valid(raw) {
				p.pos = start
				return nil, false, p.syntaxErr("Invalid UTF-8 in string")
			}
			p.pos = i + 1
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(p.data) {
				p.pos = i
				return nil, false, p.syntaxErr("Unexpected end of input in string")
			}
			switch p.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p.data) || !isHex4(p.data[i+2:i+6]) {
					p.pos = i
					return nil, false, p.syntaxErr("Invalid \\u escape in string")
				}
				i += 6
			default:
				p.pos = i
				return nil, false, p.syntaxErr(fmt.Sprintf("Unrecognized character escape '\\%c'", p.data[i+1]))
			}
		case c >= 0x80:
			hi = true
			i++
		default:
			i++
		}
	}
	p.pos = len(p.data)
	return nil, false, p.syntaxErr("Unexpected end of input in string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hexVal(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		default:
			r |= rune(c-'A') + 10
		}
	}
	return r
}

// unescape applies the escapes of a string already validated by scanString.
// A lone surrogate becomes U+FFFD.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		e := raw[i+1]
		i += 2
		switch e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexVal(raw[i : i+4])
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if lo := hexVal(raw[i+2 : i+6]); lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			out = utf8.AppendRune(out, r) // surrogates left alone encode as U+FFFD
		default: // '"', '\\', '/'
			out = append(out, e)
		}
	}
	return out
}

// scanNumber scans a JSON number (RFC 8259 grammar; Jackson rejects leading
// zeros and a leading '+' too) and reports whether it is an integer.
func (p *parser) scanNumber() (num []byte, isInt bool, err error) {
	start := p.pos
	i := start
	if p.data[i] == '-' {
		i++
	}
	switch {
	case i < len(p.data) && p.data[i] == '0':
		i++
		if i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			p.pos = i
			return nil, false, p.syntaxErr("Invalid numeric value: Leading zeroes not allowed")
		}
	case i < len(p.data) && p.data[i] >= '1' && p.data[i] <= '9':
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, false, p.syntaxErr("Invalid numeric value: expected a digit")
	}
	isInt = true
	if i < len(p.data) && p.data[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return nil, false, p.syntaxErr("Invalid numeric value: Decimal point not followed by a digit")
		}
	}
	if i < len(p.data) && (p.data[i] == 'e' || p.data[i] == 'E') {
		isInt = false
		i++
		if i < len(p.data) && (p.data[i] == '+' || p.data[i] == '-') {
			i++
		}
		d := i
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return nil, false, p.syntaxErr("Invalid numeric value: Exponent indicator not followed by a digit")
		}
	}
	p.pos = i
	return p.data[start:i], isInt, nil
}

type literal uint8

const (
	litNull literal = iota
	litTrue
	litFalse
)

func (p *parser) scanLiteral() (literal, error) {
	rest := p.data[p.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "null":
		p.pos += 4
		return litNull, nil
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.pos += 4
		return litTrue, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.pos += 5
		return litFalse, nil
	}
	return 0, p.syntaxErr("Unrecognized token")
}

// fromString converts a JSON string to type n. raw is the string's content
// before unescaping.
func (p *parser) fromString(n *node, raw []byte, escaped bool) (types.Value, error) {
	text := raw
	if escaped {
		text = unescape(raw)
	}
	switch n.root {
	case types.RootNull:
		return types.Value{}, nil
	case types.RootChar, types.RootVarChar:
		return types.String(string(text)), nil
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
		return decimalFrom(n, sqltext.TrimJava(text))
	case types.RootBinary, types.RootVarBinary:
		b, err := decodeBase64(text)
		if err != nil {
			return types.Value{}, fmt.Errorf("Unable to deserialize byte array: %w", err)
		}
		return types.Value{K: types.KindBytes, S: string(b)}, nil
	case types.RootDate:
		if days, rest, ok := sqltext.ParseISODate(text, true); ok && len(rest) == 0 {
			return types.Int(days), nil
		}
		return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as DATE 'yyyy-MM-dd'", text)
	case types.RootTime:
		if nanos, rest, ok := sqltext.ParseTime(text, sqltext.SQLTime); ok && len(rest) == 0 {
			return types.Int(nanos / 1e6), nil
		}
		return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as TIME 'HH:mm:ss[.fffffffff]'", text)
	case types.RootTimestamp, types.RootTimestampLTZ:
		return p.timestampFrom(n, text)
	}
	return types.Value{}, fmt.Errorf("cannot convert a JSON string to %s", n.t)
}

func (p *parser) timestampFrom(n *node, text []byte) (types.Value, error) {
	ltz := n.root == types.RootTimestampLTZ
	var ms int64
	var nano int32
	var ok bool
	var want string
	if p.cfg.iso8601 {
		ms, nano, ok = sqltext.ParseTimestamp(text, 'T', sqltext.ISOTime, ltz)
		want = "yyyy-MM-ddTHH:mm[:ss[.fffffffff]]"
	} else {
		ms, nano, ok = sqltext.ParseTimestamp(text, ' ', sqltext.SQLTime, ltz)
		want = "yyyy-MM-dd HH:mm:ss[.fffffffff]"
	}
	if ok {
		return types.Timestamp(ms, nano), nil
	}
	if ltz {
		want += "Z"
	}
	return types.Value{}, fmt.Errorf("Text '%s' could not be parsed as %s '%s'", text, n.t, want)
}

func decodeBase64(text []byte) ([]byte, error) {
	enc := base64.StdEncoding
	if len(text)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	out := make([]byte, enc.DecodedLen(len(text)))
	k, err := enc.Decode(out, text)
	if err != nil {
		return nil, err
	}
	return out[:k], nil
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

// decimalFrom converts decimal text; a value too wide for the type is NULL,
// as Flink's DecimalData.fromBigDecimal returns null.
func decimalFrom(n *node, text []byte) (types.Value, error) {
	v, res := sqltext.ParseDecimal(text, n.t.Precision, n.t.Scale)
	switch res {
	case sqltext.DecimalOK:
		return v, nil
	case sqltext.DecimalOverflow:
		return types.Value{}, nil
	}
	return types.Value{}, fmt.Errorf("Character array is not a valid decimal number: \"%s\"", text)
}

// fromNumber converts a JSON number token to type n.
func fromNumber(n *node, num []byte, isInt bool) (types.Value, error) {
	switch n.root {
	case types.RootNull:
		return types.Value{}, nil
	case types.RootChar, types.RootVarChar:
		return types.String(string(num)), nil
	case types.RootBoolean:
		return types.Bool(false), nil // Boolean.parseBoolean of the number's text
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		bits := intBits(n.root)
		if isInt {
			if v, ok := sqltext.ParseJavaInt(num, bits); ok {
				return types.Int(v), nil
			}
			return types.Value{}, fmt.Errorf("Numeric value (%s) out of range of %s", num, n.t)
		}
		// Jackson truncates a fractional number for INT and BIGINT; Flink
		// parses the text for TINYINT and SMALLINT, which fails.
		if bits < 32 {
			return types.Value{}, fmt.Errorf("For input string: \"%s\" (cannot convert to %s)", num, n.t)
		}
		f, err := strconv.ParseFloat(string(num), 64)
		lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
		if bits == 64 {
			lo, hi = -9.223372036854775808e18, 9.223372036854775807e18
		}
		if err != nil || f < lo || f > hi {
			return types.Value{}, fmt.Errorf("Numeric value (%s) out of range of %s", num, n.t)
		}
		if bits == 64 && f >= 9.223372036854775807e18 {
			return types.Int(math.MaxInt64), nil
		}
		return types.Int(int64(f)), nil
	case types.RootFloat, types.RootDouble:
		bits := 64
		if n.root == types.RootFloat {
			bits = 32
		}
		f, _ := strconv.ParseFloat(string(num), bits) // JSON syntax is valid Go syntax; overflow gives ±Inf as in Java
		return types.Float(f), nil
	case types.RootDecimal:
		return decimalFrom(n, num)
	}
	return types.Value{}, fmt.Errorf("cannot convert the JSON number %s to %s", num, n.t)
}

// fromBool converts a JSON true/false token to type n.
func fromBool(n *node, b bool) (types.Value, error) {
	switch n.root {
	case types.RootNull:
		return types.Value{}, nil
	case types.RootBoolean:
		return types.Bool(b), nil
	case types.RootChar, types.RootVarChar:
		return types.String(strconv.FormatBool(b)), nil
	}
	return types.Value{}, fmt.Errorf("For input string: \"%t\" (cannot convert to %s)", b, n.t)
}

// compactJSON removes the insignificant whitespace of validated JSON text,
// which is how Flink renders an object or array read into a STRING column.
func compactJSON(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			out = append(out, c)
			switch c {
			case '\\':
				i++
				out = append(out, raw[i])
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		}
		out = append(out, c)
	}
	return out
}

// stopsString8 reports whether any of eight bytes ends the fast scan of a
// string: a quote, a backslash or a non-ASCII byte. False positives are
// possible (a borrow crosses bytes), misses are not.
func stopsString8(x uint64) bool {
	m := x & highs
	q := x ^ (ones * '"')
	m |= (q - ones) & ^q & highs
	b := x ^ (ones * '\\')
	m |= (b - ones) & ^b & highs
	return m != 0
}
