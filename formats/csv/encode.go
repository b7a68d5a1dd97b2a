package csv

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats/json/sqltext"
	"github.com/flinksql/flinksql/types"
)

// Encoder writes a row as one CSV record without a line break; the
// connector separates records.
type Encoder struct {
	cfg     *config
	root    *node
	minSafe rune
}

// maxQuoteCheck is the length (in UTF-16 units) beyond which Jackson's CSV
// writer quotes a text value without looking at it.
const maxQuoteCheck = 24

// Encode implements formats.Encoder.
func (e *Encoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	n := e.root
	if len(row) < len(n.fields) {
		return dst, fmt.Errorf("csv: row has %d values for %d columns", len(row), len(n.fields))
	}
	for i := range n.fields {
		if i > 0 {
			dst = utf8.AppendRune(dst, e.cfg.delim)
		}
		var err error
		if dst, err = e.appendField(dst, &n.fields[i], row[i]); err != nil {
			return dst, fmt.Errorf("Fail to serialize at field: %s: %w", n.names[i], err)
		}
	}
	return dst, nil
}

// appendField writes one column: numbers and booleans as they are, text
// through the quoting rule, nested ROW and ARRAY values as their elements
// joined by the array element delimiter and then quoted as one text.
func (e *Encoder) appendField(dst []byte, n *node, v types.Value) ([]byte, error) {
	switch n.root {
	case types.RootArray, types.RootRow:
		if v.K == types.KindNull {
			return append(dst, e.cfg.nullLiteral...), nil
		}
		start := len(dst)
		var err error
		if dst, err = e.appendJoined(dst, n, v); err != nil {
			return dst, err
		}
		return e.quoteInPlace(dst, start), nil
	}
	start := len(dst)
	dst, isText, err := e.appendScalar(dst, n, v)
	if err != nil || !isText {
		return dst, err
	}
	return e.quoteInPlace(dst, start), nil
}

func (e *Encoder) appendJoined(dst []byte, n *node, v types.Value) ([]byte, error) {
	if n.root == types.RootArray {
		for i, el := range v.Array() {
			if i > 0 {
				dst = append(dst, e.cfg.arrayDelim...)
			}
			var err error
			if dst, _, err = e.appendScalar(dst, n.elem, el); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	r := v.RowOf()
	if len(r) < len(n.fields) {
		return dst, fmt.Errorf("ROW value has %d fields, type %s has %d", len(r), n.t, len(n.fields))
	}
	for i := range n.fields {
		if i > 0 {
			dst = append(dst, e.cfg.arrayDelim...)
		}
		var err error
		if dst, _, err = e.appendScalar(dst, &n.fields[i], r[i]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendScalar writes a simple value unquoted and reports whether it is
// text (subject to quoting) rather than a number, boolean or NULL.
func (e *Encoder) appendScalar(dst []byte, n *node, v types.Value) ([]byte, bool, error) {
	if v.K == types.KindNull {
		return append(dst, e.cfg.nullLiteral...), false, nil
	}
	switch n.root {
	case types.RootNull:
		return append(dst, e.cfg.nullLiteral...), false, nil
	case types.RootBoolean:
		return strconv.AppendBool(dst, v.Bool()), false, nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return strconv.AppendInt(dst, v.N, 10), false, nil
	case types.RootFloat:
		return types.AppendJavaFloat(dst, v.Float(), 32), false, nil
	case types.RootDouble:
		return types.AppendJavaFloat(dst, v.Float(), 64), false, nil
	case types.RootDecimal:
		if v.K != types.KindDecimal {
			return dst, false, fmt.Errorf("value of kind %d is not a DECIMAL", v.K)
		}
		return sqltext.AppendJavaDecimal(dst, v, !e.cfg.scientific), false, nil
	case types.RootChar, types.RootVarChar:
		return append(dst, v.S...), true, nil
	case types.RootBinary, types.RootVarBinary:
		return base64.StdEncoding.AppendEncode(dst, []byte(v.S)), true, nil
	case types.RootDate:
		return sqltext.AppendISODate(dst, v.N), true, nil
	case types.RootTime:
		return sqltext.AppendLocalTime(dst, v.N*1e6), true, nil
	case types.RootTimestamp:
		return sqltext.AppendLocalDateTime(dst, v.N, v.Aux, ' '), true, nil
	case types.RootTimestampLTZ:
		dst = sqltext.AppendLocalDateTime(dst, v.N, v.Aux, ' ')
		return append(dst, 'Z'), true, nil
	}
	return dst, false, fmt.Errorf("Unsupported type: %s", n.t)
}

// quoteInPlace quotes the text dst[start:] if Jackson's loose check asks for
// it: more than 24 characters, or any character below the separator and the
// quote character, or the escape character. Inside quotes the quote
// character is doubled, and so is the escape character.
func (e *Encoder) quoteInPlace(dst []byte, start int) []byte {
	q := e.cfg.quote
	if q == noChar {
		return dst
	}
	text := dst[start:]
	if !e.needsQuotes(text) {
		return dst
	}
	// Rewrite the text after the current end, then move it into place.
	end := len(dst)
	dst = utf8.AppendRune(dst, q)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(dst[start+i : end])
		if r == q || (e.cfg.escape != noChar && r == e.cfg.escape) {
			dst = append(dst, dst[start+i:start+i+size]...)
		}
		dst = append(dst, dst[start+i:start+i+size]...)
		i += size
	}
	dst = utf8.AppendRune(dst, q)
	n := copy(dst[start:], dst[end:])
	return dst[:start+n]
}

func (e *Encoder) needsQuotes(text []byte) bool {
	units := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		i += size
		units++
		if r > 0xFFFF {
			units++ // a surrogate pair in Java
		}
		if r < e.minSafe || (e.cfg.escape != noChar && r == e.cfg.escape) {
			return true
		}
	}
	return units > maxQuoteCheck
}
