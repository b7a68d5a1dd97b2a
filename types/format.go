package types

import (
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// FormatSQL renders a value as Flink's CAST(v AS STRING) does, which is also
// what the SQL client shows: TRUE/FALSE, timestamps as
// 'yyyy-MM-dd HH:mm:ss[.fff]' padded to the type's precision, TIMESTAMP_LTZ in
// the session time zone loc. NULL renders as "NULL".
func FormatSQL(v Value, t Type, loc *time.Location) string {
	return string(AppendSQL(nil, v, t, loc))
}

// AppendSQL appends FormatSQL's rendering to dst.
func AppendSQL(dst []byte, v Value, t Type, loc *time.Location) []byte {
	if v.K == KindNull {
		return append(dst, "NULL"...)
	}
	switch t.Root {
	case RootBoolean:
		if v.Bool() {
			return append(dst, "TRUE"...)
		}
		return append(dst, "FALSE"...)
	case RootTinyInt, RootSmallInt, RootInt, RootBigInt:
		return strconv.AppendInt(dst, v.N, 10)
	case RootFloat:
		return AppendJavaFloat(dst, v.Float(), 32)
	case RootDouble:
		return AppendJavaFloat(dst, v.Float(), 64)
	case RootDecimal:
		return AppendDecimal(dst, v)
	case RootChar, RootVarChar, RootSymbol:
		return append(dst, v.S...)
	case RootBinary, RootVarBinary:
		dst = append(dst, "x'"...)
		dst = hex.AppendEncode(dst, []byte(v.S))
		return append(dst, '\'')
	case RootDate:
		return AppendDate(dst, v.N)
	case RootTime:
		return AppendTime(dst, v.N, 0, t.Precision)
	case RootTimestamp:
		return AppendTimestamp(dst, v.N, v.Aux, t.Precision, time.UTC)
	case RootTimestampLTZ:
		if loc == nil {
			loc = time.UTC
		}
		return AppendTimestamp(dst, v.N, v.Aux, t.Precision, loc)
	case RootIntervalYearMonth:
		return appendIntervalYM(dst, v.N)
	case RootIntervalDayTime:
		return appendIntervalDT(dst, v.N)
	case RootArray, RootMultiset:
		dst = append(dst, '[')
		for i, e := range v.Array() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendSQL(dst, e, *t.Elem, loc)
		}
		return append(dst, ']')
	case RootMap:
		m := v.Map()
		dst = append(dst, '{')
		for i := range m.Keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendSQL(dst, m.Keys[i], *t.Elem, loc)
			dst = append(dst, '=')
			dst = AppendSQL(dst, m.Values[i], *t.Value, loc)
		}
		return append(dst, '}')
	case RootRow:
		dst = append(dst, '(')
		for i, e := range v.RowOf() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendSQL(dst, e, t.Fields[i].Type, loc)
		}
		return append(dst, ')')
	}
	return append(dst, v.S...)
}

// FormatJava renders a value as Flink's Row.toString shows it in the output of
// the print connector: Java's toString of the external type (true, 1.0E10,
// 2020-04-15T08:05, 2020-04-15T08:05:00Z for an instant).
func FormatJava(v Value, t Type) string { return string(AppendJava(nil, v, t)) }

// AppendJava appends FormatJava's rendering to dst.
func AppendJava(dst []byte, v Value, t Type) []byte {
	if v.K == KindNull {
		return append(dst, "null"...)
	}
	switch t.Root {
	case RootBoolean:
		return strconv.AppendBool(dst, v.Bool())
	case RootBinary, RootVarBinary:
		dst = append(dst, '[')
		for i := 0; i < len(v.S); i++ {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = strconv.AppendInt(dst, int64(int8(v.S[i])), 10)
		}
		return append(dst, ']')
	case RootTime:
		return appendJavaLocalTime(dst, v.N*1e6)
	case RootTimestamp:
		days, msOfDay := floorDiv(v.N, 86400000)
		dst = AppendDate(dst, days)
		dst = append(dst, 'T')
		return appendJavaLocalTime(dst, msOfDay*1e6+int64(v.Aux))
	case RootTimestampLTZ:
		days, msOfDay := floorDiv(v.N, 86400000)
		dst = AppendDate(dst, days)
		dst = append(dst, 'T')
		nanos := msOfDay*1e6 + int64(v.Aux)
		dst = appendTwo(dst, nanos/3600e9)
		dst = append(dst, ':')
		dst = appendTwo(dst, nanos/60e9%60)
		dst = append(dst, ':')
		dst = appendTwo(dst, nanos/1e9%60)
		dst = appendJavaFraction(dst, nanos%1e9)
		return append(dst, 'Z')
	case RootArray, RootMultiset:
		dst = append(dst, '[')
		for i, e := range v.Array() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendJava(dst, e, *t.Elem)
		}
		return append(dst, ']')
	case RootMap:
		m := v.Map()
		dst = append(dst, '{')
		for i := range m.Keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendJava(dst, m.Keys[i], *t.Elem)
			dst = append(dst, '=')
			dst = AppendJava(dst, m.Values[i], *t.Value)
		}
		return append(dst, '}')
	case RootRow:
		dst = append(dst, "+I["...)
		for i, e := range v.RowOf() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendJava(dst, e, t.Fields[i].Type)
		}
		return append(dst, ']')
	}
	return AppendSQL(dst, v, t, time.UTC)
}

// AppendDecimal renders a DECIMAL value in plain notation with its scale.
func AppendDecimal(dst []byte, v Value) []byte {
	scale := int(v.Aux)
	var digits string
	neg := false
	if v.IsBigDecimal() {
		b := v.DecimalBig()
		neg = b.Sign() < 0
		digits = new(big.Int).Abs(b).String()
	} else {
		n := v.N
		if n < 0 {
			neg = true
			digits = strconv.FormatUint(uint64(-n), 10) // also right for MinInt64
		} else {
			digits = strconv.FormatInt(n, 10)
		}
	}
	if neg {
		dst = append(dst, '-')
	}
	if scale <= 0 {
		dst = append(dst, digits...)
		for i := 0; i < -scale; i++ {
			dst = append(dst, '0')
		}
		return dst
	}
	if len(digits) <= scale {
		dst = append(dst, "0."...)
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

// AppendJavaFloat renders a float as Java's Double.toString / Float.toString:
// shortest digits that round-trip, plain notation for 1e-3 <= |x| < 1e7 with at
// least one fractional digit, otherwise d.dddE±n.
func AppendJavaFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		dst = append(dst, s...)
		if !strings.Contains(s, ".") {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // e.g. 1.5e+10, 1e-05
	mant, exp, _ := strings.Cut(s, "e")
	dst = append(dst, mant...)
	if !strings.Contains(mant, ".") {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	e, _ := strconv.Atoi(exp)
	return strconv.AppendInt(dst, int64(e), 10)
}

// AppendDate renders days since 1970-01-01 as yyyy-MM-dd.
func AppendDate(dst []byte, days int64) []byte {
	y, m, d := CivilFromDays(days)
	if y < 0 || y > 9999 {
		dst = strconv.AppendInt(dst, y, 10)
	} else {
		dst = appendFour(dst, y)
	}
	dst = append(dst, '-')
	dst = appendTwo(dst, int64(m))
	dst = append(dst, '-')
	return appendTwo(dst, int64(d))
}

// AppendTime renders milliseconds of the day (plus nanos within the
// millisecond) as HH:mm:ss with precision fractional digits.
func AppendTime(dst []byte, msOfDay int64, nanoOfMilli int32, precision int) []byte {
	dst = appendTwo(dst, msOfDay/3600000)
	dst = append(dst, ':')
	dst = appendTwo(dst, msOfDay/60000%60)
	dst = append(dst, ':')
	dst = appendTwo(dst, msOfDay/1000%60)
	if precision > 0 {
		nanos := (msOfDay%1000)*1e6 + int64(nanoOfMilli)
		frac := strconv.AppendInt(nil, 1e9+nanos, 10)[1:] // 9 digits
		dst = append(dst, '.')
		dst = append(dst, frac[:min(precision, 9)]...)
	}
	return dst
}

// AppendTimestamp renders epoch milliseconds (plus nanos) as
// yyyy-MM-dd HH:mm:ss[.f…] in loc with precision fractional digits.
func AppendTimestamp(dst []byte, millis int64, nanoOfMilli int32, precision int, loc *time.Location) []byte {
	if loc != nil && loc != time.UTC {
		_, off := time.UnixMilli(millis).In(loc).Zone()
		millis += int64(off) * 1000
	}
	days, msOfDay := floorDiv(millis, 86400000)
	dst = AppendDate(dst, days)
	dst = append(dst, ' ')
	return AppendTime(dst, msOfDay, nanoOfMilli, precision)
}

func appendJavaLocalTime(dst []byte, nanosOfDay int64) []byte {
	dst = appendTwo(dst, nanosOfDay/3600e9)
	dst = append(dst, ':')
	dst = appendTwo(dst, nanosOfDay/60e9%60)
	sec, nano := nanosOfDay/1e9%60, nanosOfDay%1e9
	if sec == 0 && nano == 0 {
		return dst
	}
	dst = append(dst, ':')
	dst = appendTwo(dst, sec)
	return appendJavaFraction(dst, nano)
}

func appendJavaFraction(dst []byte, nano int64) []byte {
	if nano == 0 {
		return dst
	}
	dst = append(dst, '.')
	switch {
	case nano%1e6 == 0:
		return append(dst, strconv.AppendInt(nil, 1000+nano/1e6, 10)[1:]...)
	case nano%1e3 == 0:
		return append(dst, strconv.AppendInt(nil, 1e6+nano/1e3, 10)[1:]...)
	}
	return append(dst, strconv.AppendInt(nil, 1e9+nano, 10)[1:]...)
}

func appendIntervalYM(dst []byte, months int64) []byte {
	if months < 0 {
		dst = append(dst, '-')
		months = -months
	} else {
		dst = append(dst, '+')
	}
	dst = strconv.AppendInt(dst, months/12, 10)
	dst = append(dst, '-')
	return appendTwo(dst, months%12)
}

func appendIntervalDT(dst []byte, ms int64) []byte {
	if ms < 0 {
		dst = append(dst, '-')
		ms = -ms
	} else {
		dst = append(dst, '+')
	}
	dst = strconv.AppendInt(dst, ms/86400000, 10)
	dst = append(dst, ' ')
	return AppendTime(dst, ms%86400000, 0, 3)
}

func appendTwo(dst []byte, n int64) []byte {
	return append(dst, byte('0'+n/10%10), byte('0'+n%10))
}

func appendFour(dst []byte, n int64) []byte {
	return append(dst, byte('0'+n/1000%10), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// CivilFromDays converts days since 1970-01-01 to a proleptic Gregorian date.
func CivilFromDays(days int64) (year int64, month, day int) {
	// Howard Hinnant's days_from_civil inverse.
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, int(m), int(d)
}

// DaysFromCivil converts a proleptic Gregorian date to days since 1970-01-01.
func DaysFromCivil(year int64, month, day int) int64 {
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	m := int64(month)
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
