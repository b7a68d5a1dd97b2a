package sqltext

import (
	"github.com/flinksql/flinksql/types"
)

const (
	nanosPerMilli = 1_000_000
	millisPerDay  = 86_400_000
	nanosPerDay   = 86_400 * 1_000_000_000
)

// TimeSyntax selects how much of a time of day must be written.
type TimeSyntax uint8

const (
	// SQLTime is Flink's "HH:mm:ss[.fffffffff]" (seconds required).
	SQLTime TimeSyntax = iota
	// ISOTime is java.time's ISO_LOCAL_TIME "HH:mm[:ss[.fffffffff]]".
	ISOTime
)

// ParseISODate parses java.time's ISO_LOCAL_DATE (yyyy-MM-dd, years beyond
// 9999 with a sign) and returns days since 1970-01-01. With strict, an
// impossible day of month (2019-02-30) is an error, as for a lone
// ISO_LOCAL_DATE; without it, the day is clamped to the month's last day, as
// java.time's SMART resolver does inside the timestamp formats.
func ParseISODate(s []byte, strict bool) (days int64, rest []byte, ok bool) {
	year, s, ok := parseYear(s)
	if !ok || len(s) < 6 || s[0] != '-' || s[3] != '-' {
		return 0, nil, false
	}
	month, ok1 := twoDigits(s[1:3])
	day, ok2 := twoDigits(s[4:6])
	if !ok1 || !ok2 || month < 1 || month > 12 || day < 1 || day > 31 {
		return 0, nil, false
	}
	if last := daysInMonth(year, month); day > last {
		if strict {
			return 0, nil, false
		}
		day = last
	}
	return types.DaysFromCivil(year, month, day), s[6:], true
}

// ParseJavaSQLDate parses as java.sql.Date.valueOf: yyyy-[m]m-[d]d with a
// four-digit year; a day beyond the month's end rolls over into the next
// month, as the legacy Date constructor does.
func ParseJavaSQLDate(s []byte) (days int64, ok bool) {
	d1 := indexByte(s, '-')
	if d1 != 4 {
		return 0, false
	}
	d2 := indexByte(s[d1+1:], '-')
	if d2 < 1 || d2 > 2 {
		return 0, false
	}
	d2 += d1 + 1
	dayText := s[d2+1:]
	if len(dayText) < 1 || len(dayText) > 2 {
		return 0, false
	}
	year, ok0 := digitsValue(s[:4])
	month, ok1 := digitsValue(s[d1+1 : d2])
	day, ok2 := digitsValue(dayText)
	if !ok0 || !ok1 || !ok2 || month < 1 || month > 12 || day < 1 || day > 31 {
		return 0, false
	}
	// DaysFromCivil is linear in the day, so an overlong day rolls over.
	return types.DaysFromCivil(int64(year), month, day), true
}

// ParseTime parses a time of day and returns nanoseconds of the day.
func ParseTime(s []byte, syntax TimeSyntax) (nanos int64, rest []byte, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, nil, false
	}
	h, ok1 := twoDigits(s[0:2])
	m, ok2 := twoDigits(s[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, nil, false
	}
	nanos = int64(h)*3600e9 + int64(m)*60e9
	s = s[5:]
	if len(s) == 0 || s[0] != ':' {
		if syntax == ISOTime {
			return nanos, s, true
		}
		return 0, nil, false
	}
	if len(s) < 3 {
		return 0, nil, false
	}
	sec, ok3 := twoDigits(s[1:3])
	if !ok3 || sec > 59 {
		return 0, nil, false
	}
	nanos += int64(sec) * 1e9
	s = s[3:]
	if len(s) > 0 && s[0] == '.' {
		s = s[1:]
		var frac int64
		n := 0
		for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
			frac = frac*10 + int64(s[n]-'0')
			n++
		}
		for k := n; k < 9; k++ {
			frac *= 10
		}
		nanos += frac
		s = s[n:]
	}
	return nanos, s, true
}

// ParseTimestamp parses date sep time [Z] (Flink's SQL form with sep ' ' and
// SQLTime, or ISO-8601 with sep 'T' and ISOTime) into epoch milliseconds and
// nanoseconds of the millisecond. With zulu the text must end with 'Z'.
func ParseTimestamp(s []byte, sep byte, syntax TimeSyntax, zulu bool) (millis int64, nanoOfMilli int32, ok bool) {
	days, s, ok := ParseISODate(s, false)
	if !ok || len(s) == 0 || s[0] != sep {
		return 0, 0, false
	}
	nanos, s, ok := ParseTime(s[1:], syntax)
	if !ok {
		return 0, 0, false
	}
	if zulu {
		if len(s) != 1 || s[0] != 'Z' {
			return 0, 0, false
		}
	} else if len(s) != 0 {
		return 0, 0, false
	}
	return days*millisPerDay + nanos/nanosPerMilli, int32(nanos % nanosPerMilli), true
}

// AppendISODate renders days since the epoch as java.time's ISO_LOCAL_DATE.
func AppendISODate(dst []byte, days int64) []byte {
	y, m, d := types.CivilFromDays(days)
	switch {
	case y > 9999:
		dst = append(dst, '+')
		dst = appendInt(dst, y)
	case y < 0:
		dst = append(dst, '-')
		dst = appendPadded(dst, -y, 4)
	default:
		dst = appendPadded(dst, y, 4)
	}
	dst = append(dst, '-')
	dst = appendPadded(dst, int64(m), 2)
	dst = append(dst, '-')
	return appendPadded(dst, int64(d), 2)
}

// AppendLocalTime renders nanoseconds of the day as HH:mm:ss followed by the
// fraction with its trailing zeros removed (java.time's appendFraction with
// minimum width 0): 12:00:00, 12:00:00.1, 12:00:00.123456.
func AppendLocalTime(dst []byte, nanos int64) []byte {
	dst = appendPadded(dst, nanos/3600e9, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, nanos/60e9%60, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, nanos/1e9%60, 2)
	frac := nanos % 1e9
	if frac == 0 {
		return dst
	}
	width := 9
	for frac%10 == 0 {
		frac /= 10
		width--
	}
	dst = append(dst, '.')
	return appendPadded(dst, frac, width)
}

// AppendLocalDateTime renders a TIMESTAMP (epoch millis and nanos of the
// milli, read as UTC) as date sep time, the time as AppendLocalTime does.
func AppendLocalDateTime(dst []byte, millis int64, nanoOfMilli int32, sep byte) []byte {
	days, msOfDay := millis/millisPerDay, millis%millisPerDay
	if msOfDay < 0 {
		days--
		msOfDay += millisPerDay
	}
	dst = AppendISODate(dst, days)
	dst = append(dst, sep)
	return AppendLocalTime(dst, msOfDay*nanosPerMilli+int64(nanoOfMilli))
}

// TruncateNanos drops the digits of a nanosecond-of-day (or of-second) count
// beyond precision fractional digits of a second.
func TruncateNanos(nanos int64, precision int) int64 {
	if precision >= 9 || precision < 0 {
		return nanos
	}
	unit := int64(1)
	for p := precision; p < 9; p++ {
		unit *= 10
	}
	return nanos - nanos%unit
}

func parseYear(s []byte) (int64, []byte, bool) {
	sign := int64(1)
	signed := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		signed = true
		if s[0] == '-' {
			sign = -1
		}
		s = s[1:]
	}
	n := 0
	var y int64
	for n < len(s) && n < 10 && s[n] >= '0' && s[n] <= '9' {
		y = y*10 + int64(s[n]-'0')
		n++
	}
	// Four digits exactly without a sign; more than four only with one. The
	// cap keeps epoch milliseconds inside int64.
	if n < 4 || (n > 4 && !signed) || y > 99_999_999 {
		return 0, nil, false
	}
	return sign * y, s[n:], true
}

func twoDigits(s []byte) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func digitsValue(s []byte) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func indexByte(s []byte, c byte) int {
	for i, b := range s {
		if b == c {
			return i
		}
	}
	return -1
}

func daysInMonth(year int64, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func appendPadded(dst []byte, n int64, width int) []byte {
	switch {
	case width == 2 && n >= 0 && n < 100:
		return append(dst, byte('0'+n/10), byte('0'+n%10))
	case width == 4 && n >= 0 && n < 10000:
		return append(dst, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 || width > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	return append(dst, buf[i:]...)
}

func appendInt(dst []byte, n int64) []byte { return appendPadded(dst, n, 1) }
