package json

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats/json/sqltext"
	"github.com/flinksql/flinksql/types"
)

// Encoder writes a row as one JSON object, fields in schema order.
type Encoder struct {
	cfg  *config
	root *node
}

// Encode implements formats.Encoder.
func (e *Encoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	if len(row) < len(e.root.fields) {
		return dst, fmt.Errorf("json: row has %d values for %d columns", len(row), len(e.root.fields))
	}
	return e.appendObject(dst, e.root, row)
}

func (e *Encoder) appendObject(dst []byte, n *node, row types.Row) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for i := range n.fields {
		v := row[i]
		if v.K == types.KindNull && e.cfg.ignoreNulls {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, n.quotedNames[i]...)
		var err error
		if dst, err = e.appendValue(dst, &n.fields[i], v); err != nil {
			return dst, fmt.Errorf("Fail to serialize at field: %s: %w", n.names[i], err)
		}
	}
	return append(dst, '}'), nil
}

func (e *Encoder) appendValue(dst []byte, n *node, v types.Value) ([]byte, error) {
	if v.K == types.KindNull {
		return append(dst, "null"...), nil
	}
	switch n.root {
	case types.RootNull:
		return append(dst, "null"...), nil
	case types.RootBoolean:
		return strconv.AppendBool(dst, v.Bool()), nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return strconv.AppendInt(dst, v.N, 10), nil
	case types.RootFloat:
		return appendFloat(dst, v.Float(), 32), nil
	case types.RootDouble:
		return appendFloat(dst, v.Float(), 64), nil
	case types.RootDecimal:
		if v.K != types.KindDecimal {
			return dst, fmt.Errorf("value of kind %d is not a DECIMAL", v.K)
		}
		return sqltext.AppendJavaDecimal(dst, v, e.cfg.plainDecimal), nil
	case types.RootChar, types.RootVarChar:
		return appendString(dst, v.S), nil
	case types.RootBinary, types.RootVarBinary:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, []byte(v.S))
		return append(dst, '"'), nil
	case types.RootDate:
		dst = append(dst, '"')
		dst = sqltext.AppendISODate(dst, v.N)
		return append(dst, '"'), nil
	case types.RootTime:
		// Flink writes whole seconds: LocalTime.ofSecondOfDay(millis / 1000).
		dst = append(dst, '"')
		dst = sqltext.AppendLocalTime(dst, v.N/1000*1e9)
		return append(dst, '"'), nil
	case types.RootTimestamp, types.RootTimestampLTZ:
		sep := byte(' ')
		if e.cfg.iso8601 {
			sep = 'T'
		}
		dst = append(dst, '"')
		dst = sqltext.AppendLocalDateTime(dst, v.N, v.Aux, sep)
		if n.root == types.RootTimestampLTZ {
			dst = append(dst, 'Z') // the instant in UTC, whatever the session zone
		}
		return append(dst, '"'), nil
	case types.RootArray:
		dst = append(dst, '[')
		for i, el := range v.Array() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.appendValue(dst, n.elem, el); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case types.RootMap, types.RootMultiset:
		return e.appendMap(dst, n, v)
	case types.RootRow:
		r := v.RowOf()
		if len(r) < len(n.fields) {
			return dst, fmt.Errorf("ROW value has %d fields, type %s has %d", len(r), n.t, len(n.fields))
		}
		return e.appendObject(dst, n, r)
	}
	return dst, fmt.Errorf("Unsupported type: %s", n.t)
}

func (e *Encoder) appendMap(dst []byte, n *node, v types.Value) ([]byte, error) {
	m := v.Map()
	if m == nil {
		return dst, fmt.Errorf("value of kind %d is not a %s", v.K, n.t)
	}
	dst = append(dst, '{')
	first := true
	for i := range m.Keys {
		k := m.Keys[i]
		key := k.S
		if k.K == types.KindNull {
			switch e.cfg.nullKeyMode {
			case nullKeyDrop:
				continue
			case nullKeyLiteral:
				key = e.cfg.nullKeyLiteral
			default:
				return dst, fmt.Errorf("JSON format doesn't support to serialize map data with null keys. You can drop null key entries or encode null in literals by specifying %s%s option.",
					e.cfg.prefix, OptMapNullKeyMode)
			}
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, key)
		dst = append(dst, ':')
		var val types.Value
		if i < len(m.Values) {
			val = m.Values[i]
		}
		var err error
		if dst, err = e.appendValue(dst, n.value, val); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendFloat writes a FLOAT or DOUBLE as Jackson does: Java's toString
// digits, and NaN and the infinities as strings.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		dst = append(dst, '"')
		dst = types.AppendJavaFloat(dst, f, bits)
		return append(dst, '"')
	}
	return types.AppendJavaFloat(dst, f, bits)
}

const hexDigits = "0123456789ABCDEF"

// appendString writes s as a JSON string the way Jackson escapes it: the
// quote and backslash, \b \t \n \f \r, other control characters as \u00XX;
// everything else, '/' and non-ASCII included, as is. Invalid UTF-8 becomes
// U+FFFD so that the output is always valid JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time.
		for i+8 <= len(s) && !needsEscape8(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// needsEscape8 reports whether any of eight bytes is a control character, a
// quote, a backslash or non-ASCII. It may report true for a block that needs
// nothing (a borrow crosses bytes); it never misses one that does.
func needsEscape8(x uint64) bool {
	m := x & highs
	m |= (x - ones*0x20) & ^x & highs
	q := x ^ (ones * '"')
	m |= (q - ones) & ^q & highs
	b := x ^ (ones * '\\')
	m |= (b - ones) & ^b & highs
	return m != 0
}
