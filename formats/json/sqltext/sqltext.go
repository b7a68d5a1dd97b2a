// Package sqltext owns the text forms that Flink's text formats (json, csv)
// give to SQL values: the java.time patterns for dates, times and timestamps,
// Java's BigDecimal and number syntax, and Java's lenient boolean parsing.
// Parsers take byte slices and never allocate for scalars; appenders write
// into a caller's buffer.
//
// It lives under formats/json because that is the directory its owner was
// given; it has no JSON-specific code and the csv format uses it too.
package sqltext

import (
	"math"
	"math/big"
	"strconv"

	"github.com/flinksql/flinksql/types"
)

// TrimJava removes leading and trailing bytes <= ' ', as Java's String.trim does.
func TrimJava(s []byte) []byte {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// ParseJavaBool parses as Java's Boolean.parseBoolean: "true" in any case is
// true, anything else is false.
func ParseJavaBool(s []byte) bool {
	return len(s) == 4 && (s[0]|0x20) == 't' && (s[1]|0x20) == 'r' && (s[2]|0x20) == 'u' && (s[3]|0x20) == 'e'
}

// ParseJavaInt parses as Java's Integer/Long/Short/Byte.parseX: an optional
// sign followed by ASCII digits, within the range of a signed integer of the
// given bit size. ok is false on bad syntax or overflow.
func ParseJavaInt(s []byte, bits int) (n int64, ok bool) {
	if len(s) == 0 {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // magnitude of the minimum
	var u uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (limit+9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > limit {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // also right for the minimum: -(1<<63) wraps to itself
	}
	if u == limit {
		return 0, false
	}
	return int64(u), true
}

// ParseJavaFloat parses as Java's Double.parseDouble (bits 64) or
// Float.parseFloat (bits 32) after the caller trimmed the text: NaN,
// [+-]Infinity, decimal numbers with an optional exponent and an optional
// type suffix f/F/d/D. Values beyond the range become infinities, as in Java.
func ParseJavaFloat(s []byte, bits int) (f float64, ok bool) {
	body := s
	if len(body) > 0 && body[0] == '+' || len(body) > 0 && body[0] == '-' {
		body = body[1:]
	}
	switch string(body) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'f', 'F', 'd', 'D':
			s = s[:n-1]
		}
	}
	if !isJavaDecimalSyntax(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(s), bits)
	if err != nil {
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return v, true
		}
		return 0, false
	}
	return v, true
}

// isJavaDecimalSyntax reports whether s is [+-]? (d+ [. d*] | . d+) ([eE] [+-]? d+)?.
func isJavaDecimalSyntax(s []byte) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			fracDigits++
		}
	}
	if intDigits+fracDigits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		expDigits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			expDigits++
		}
		if expDigits == 0 {
			return false
		}
	}
	return i == len(s)
}

// Decimal results of ParseDecimal.
const (
	DecimalOK       = iota
	DecimalSyntax   // not a number
	DecimalOverflow // more integer digits than precision - scale
)

// ParseDecimal parses text in Java's BigDecimal syntax ([+-]? digits with an
// optional point and exponent) and rounds it HALF_UP to scale, as Flink's
// DecimalData.fromBigDecimal does. A value that needs more than precision
// digits after rounding yields DecimalOverflow (Flink then produces NULL).
func ParseDecimal(s []byte, precision, scale int) (types.Value, int) {
	if !isJavaDecimalSyntax(s) {
		return types.Value{}, DecimalSyntax
	}
	neg := false
	i := 0
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		i++
	}
	// Collect the significant digits and the exponent of the last one.
	var digitsBuf [64]byte
	digits := digitsBuf[:0]
	exp := 0 // value = digits * 10^exp
	seenPoint := false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			seenPoint = true
			continue
		}
		if c == 'e' || c == 'E' {
			e, ok := parseSmallExp(s[i+1:])
			if !ok {
				return types.Value{}, DecimalOverflow
			}
			exp += e
			break
		}
		if len(digits) == 0 && c == '0' {
			if seenPoint {
				exp--
			}
			continue // leading zeros carry no information
		}
		digits = append(digits, c)
		if seenPoint {
			exp--
		}
	}
	// Shift to the target scale: unscaled = digits * 10^(exp+scale).
	shift := exp + scale
	roundUp := false
	if shift < 0 {
		drop := -shift
		if drop > len(digits) {
			digits = digits[:0]
		} else {
			roundUp = digits[len(digits)-drop] >= '5'
			digits = digits[:len(digits)-drop]
		}
		shift = 0
	}
	nDigits := len(digits) + shift
	if len(digits) == 0 {
		nDigits = 0
	}
	if nDigits > precision+1 || nDigits > 80 {
		return types.Value{}, DecimalOverflow
	}
	if nDigits <= 18 {
		var u int64
		for _, c := range digits {
			u = u*10 + int64(c-'0')
		}
		for k := 0; k < shift && len(digits) > 0; k++ {
			u *= 10
		}
		if roundUp {
			u++
		}
		if u >= pow10(precision) {
			return types.Value{}, DecimalOverflow
		}
		if neg {
			u = -u
		}
		return types.DecimalFromUnscaled(u, scale), DecimalOK
	}
	b := new(big.Int)
	b.SetString(string(digits), 10)
	if shift > 0 {
		b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	}
	if roundUp {
		b.Add(b, big.NewInt(1))
	}
	if len(b.String()) > precision {
		return types.Value{}, DecimalOverflow
	}
	if neg {
		b.Neg(b)
	}
	return types.DecimalFromBig(b, scale), DecimalOK
}

// pow10 returns 10^n for n <= 18 and MaxInt64 above.
func pow10(n int) int64 {
	if n > 18 {
		return math.MaxInt64
	}
	p := int64(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// parseSmallExp parses a decimal exponent; absurd exponents are reported as
// not ok, which the caller treats as overflow.
func parseSmallExp(s []byte) (int, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	e := 0
	for _, c := range s {
		e = e*10 + int(c-'0')
		if e > 100000 {
			if neg {
				return -100000, true // rounds to zero at any sane scale
			}
			return 0, false
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

// AppendJavaDecimal renders a DECIMAL value the way Jackson writes the
// BigDecimal of a Flink DecimalData: trailing zeros stripped (zero becomes
// 0), then BigDecimal.toString (scientific notation when the exponent is
// positive or below -6) or, with plain, BigDecimal.toPlainString.
func AppendJavaDecimal(dst []byte, v types.Value, plain bool) []byte {
	var buf [24]byte
	var digits []byte
	neg := false
	scale := int(v.Aux)
	if v.IsBigDecimal() {
		b := v.DecimalBig()
		neg = b.Sign() < 0
		digits = b.Abs(b).Append(nil, 10)
	} else {
		n := v.N
		if n == 0 {
			return append(dst, '0')
		}
		u := uint64(n)
		if n < 0 {
			neg = true
			u = uint64(-n)
		}
		digits = strconv.AppendUint(buf[:0], u, 10)
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale--
	}
	if len(digits) == 1 && digits[0] == '0' {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	adjusted := -scale + len(digits) - 1
	switch {
	case plain || scale == 0 || (scale > 0 && adjusted >= -6):
		return appendPlain(dst, digits, scale)
	default:
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'E')
		if adjusted > 0 {
			dst = append(dst, '+')
		}
		return strconv.AppendInt(dst, int64(adjusted), 10)
	}
}

func appendPlain(dst, digits []byte, scale int) []byte {
	switch {
	case scale <= 0:
		dst = append(dst, digits...)
		for i := 0; i < -scale; i++ {
			dst = append(dst, '0')
		}
		return dst
	case len(digits) <= scale:
		dst = append(dst, "0."...)
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	default:
		dst = append(dst, digits[:len(digits)-scale]...)
		dst = append(dst, '.')
		return append(dst, digits[len(digits)-scale:]...)
	}
}
