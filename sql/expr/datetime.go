package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

const (
	msPerSecond = 1000
	msPerMinute = 60 * msPerSecond
	msPerHour   = 60 * msPerMinute
	msPerDay    = 24 * msPerHour
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// localToInstant interprets a local date-time (epoch millis as if UTC) in loc.
func localToInstant(localMillis int64, loc *time.Location) int64 {
	if loc == time.UTC {
		return localMillis
	}
	days := floorDiv(localMillis, msPerDay)
	ms := floorMod(localMillis, msPerDay)
	y, m, d := types.CivilFromDays(days)
	t := time.Date(int(y), time.Month(m), d, int(ms/msPerHour), int(ms/msPerMinute%60), int(ms/msPerSecond%60), int(ms%1000)*1e6, loc)
	return t.UnixMilli()
}

// instantToLocal renders an instant as the local date-time in loc (millis as if UTC).
func instantToLocal(millis int64, loc *time.Location) int64 {
	if loc == time.UTC {
		return millis
	}
	_, off := time.UnixMilli(millis).In(loc).Zone()
	return millis + int64(off)*1000
}

// civil is a broken-down local date-time.
type civil struct {
	year                 int64
	month, day           int
	hour, minute, second int
	nano                 int // nanoseconds of the second
}

func civilOf(localMillis int64, nanoOfMilli int32) civil {
	days := floorDiv(localMillis, msPerDay)
	ms := floorMod(localMillis, msPerDay)
	y, m, d := types.CivilFromDays(days)
	return civil{year: y, month: m, day: d, hour: int(ms / msPerHour), minute: int(ms / msPerMinute % 60),
		second: int(ms / msPerSecond % 60), nano: int(ms%1000)*1e6 + int(nanoOfMilli)}
}

func (c civil) millis() (int64, int32) {
	days := types.DaysFromCivil(c.year, c.month, c.day)
	ms := days*msPerDay + int64(c.hour)*msPerHour + int64(c.minute)*msPerMinute + int64(c.second)*msPerSecond + int64(c.nano/1e6)
	return ms, int32(c.nano % 1e6)
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

// addMonths adds months to a local date-time, clamping the day of month.
func addMonths(localMillis int64, months int64) int64 {
	days := floorDiv(localMillis, msPerDay)
	ms := floorMod(localMillis, msPerDay)
	y, m, d := types.CivilFromDays(days)
	total := y*12 + int64(m-1) + months
	ny, nm := floorDiv(total, 12), int(floorMod(total, 12))+1
	d = min(d, daysInMonth(ny, nm))
	return types.DaysFromCivil(ny, nm, d)*msPerDay + ms
}

func addMonthsToDate(days int64, months int64) int64 {
	return floorDiv(addMonths(days*msPerDay, months), msPerDay)
}

func atoiN(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// parseDate parses yyyy-[M]M-[d]d; a time part after ' ' or 'T' is ignored.
func parseDate(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " T"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, "-")
	neg := false
	if len(parts) == 4 && parts[0] == "" {
		neg, parts = true, parts[1:]
	}
	if len(parts) != 3 {
		return 0, false
	}
	y, ok1 := atoiN(parts[0])
	m, ok2 := atoiN(parts[1])
	d, ok3 := atoiN(parts[2])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return 0, false
	}
	yy := int64(y)
	if neg {
		yy = -yy
	}
	if d > daysInMonth(yy, m) {
		return 0, false
	}
	return types.DaysFromCivil(yy, m, d), true
}

// parseTimeOfDay parses HH:mm[:ss[.fffffffff]] into millis of day and nanos of milli.
func parseTimeOfDay(s string) (int64, int32, bool) {
	s = strings.TrimSpace(s)
	hms, frac, hasFrac := strings.Cut(s, ".")
	parts := strings.Split(hms, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, false
	}
	h, ok1 := atoiN(parts[0])
	mi, ok2 := atoiN(parts[1])
	sec, ok3 := 0, true
	if len(parts) == 3 {
		sec, ok3 = atoiN(parts[2])
	}
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || sec > 59 {
		return 0, 0, false
	}
	nanos := 0
	if hasFrac {
		if len(frac) == 0 || len(frac) > 9 {
			return 0, 0, false
		}
		f, ok := atoiN(frac)
		if !ok {
			return 0, 0, false
		}
		for i := len(frac); i < 9; i++ {
			f *= 10
		}
		nanos = f
	}
	ms := int64(h)*msPerHour + int64(mi)*msPerMinute + int64(sec)*msPerSecond + int64(nanos/1e6)
	return ms, int32(nanos % 1e6), true
}

// parseTimestamp parses yyyy-MM-dd[( |T)HH:mm[:ss[.f…]]] as a local date-time.
func parseTimestamp(s string) (int64, int32, bool) {
	s = strings.TrimSpace(s)
	datePart, timePart := s, ""
	if i := strings.IndexAny(s, " T"); i >= 0 {
		datePart, timePart = s[:i], strings.TrimSpace(s[i+1:])
	}
	days, ok := parseDate(datePart)
	if !ok {
		return 0, 0, false
	}
	if timePart == "" {
		return days * msPerDay, 0, true
	}
	ms, nanos, ok := parseTimeOfDay(timePart)
	if !ok {
		return 0, 0, false
	}
	return days*msPerDay + ms, nanos, true
}

// truncateFraction keeps precision fractional digits of a timestamp.
func truncateFraction(millis int64, nanos int32, precision int) (int64, int32) {
	switch {
	case precision >= 9:
		return millis, nanos
	case precision >= 3:
		step := int32(pow10Int64[9-precision])
		return millis, nanos / step * step
	}
	step := pow10Int64[3-precision]
	return floorDiv(millis, step) * step, 0
}

// unitMillis is the fixed length of day-time units.
func unitMillis(unit string) (int64, bool) {
	switch unit {
	case "MILLISECOND":
		return 1, true
	case "SECOND":
		return msPerSecond, true
	case "MINUTE":
		return msPerMinute, true
	case "HOUR":
		return msPerHour, true
	case "DAY":
		return msPerDay, true
	case "WEEK":
		return 7 * msPerDay, true
	}
	return 0, false
}

// normalizeUnit maps plural and synonym spellings of time units to Flink's names.
func normalizeUnit(u string) string {
	u = strings.ToUpper(strings.TrimSpace(u))
	switch u {
	case "YEARS":
		return "YEAR"
	case "MONTHS":
		return "MONTH"
	case "DAYS":
		return "DAY"
	case "HOURS":
		return "HOUR"
	case "MINUTES":
		return "MINUTE"
	case "SECONDS":
		return "SECOND"
	case "WEEKS":
		return "WEEK"
	case "QUARTERS":
		return "QUARTER"
	case "MILLISECONDS":
		return "MILLISECOND"
	case "MICROSECONDS":
		return "MICROSECOND"
	case "NANOSECONDS":
		return "NANOSECOND"
	case "SQL_TSI_YEAR":
		return "YEAR"
	case "SQL_TSI_MONTH":
		return "MONTH"
	case "SQL_TSI_DAY":
		return "DAY"
	case "SQL_TSI_HOUR":
		return "HOUR"
	case "SQL_TSI_MINUTE":
		return "MINUTE"
	case "SQL_TSI_SECOND":
		return "SECOND"
	case "SQL_TSI_WEEK":
		return "WEEK"
	case "SQL_TSI_QUARTER":
		return "QUARTER"
	}
	return u
}

// floorLocal truncates a local date-time to the start of unit.
func floorLocal(ms int64, unit string) (int64, bool) {
	switch unit {
	case "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY":
		u, _ := unitMillis(unit)
		return floorDiv(ms, u) * u, true
	case "WEEK":
		// Weeks start on Sunday, as Calcite's DateTimeUtils floors them.
		days := floorDiv(ms, msPerDay)
		dow := floorMod(days+4, 7) // 0 = Sunday; 1970-01-01 was a Thursday
		return (days - dow) * msPerDay, true
	case "MONTH", "QUARTER", "YEAR":
		days := floorDiv(ms, msPerDay)
		y, m, _ := types.CivilFromDays(days)
		switch unit {
		case "QUARTER":
			m = (m-1)/3*3 + 1
		case "YEAR":
			m = 1
		}
		return types.DaysFromCivil(y, m, 1) * msPerDay, true
	case "DECADE", "CENTURY", "MILLENNIUM":
		days := floorDiv(ms, msPerDay)
		y, _, _ := types.CivilFromDays(days)
		span := map[string]int64{"DECADE": 10, "CENTURY": 100, "MILLENNIUM": 1000}[unit]
		var start int64
		if unit == "DECADE" {
			start = floorDiv(y, span) * span
		} else {
			start = floorDiv(y-1, span)*span + 1
		}
		return types.DaysFromCivil(start, 1, 1) * msPerDay, true
	}
	return 0, false
}

// ceilLocal rounds a local date-time up to the start of the next unit unless already aligned.
func ceilLocal(ms int64, nanos int32, unit string) (int64, bool) {
	f, ok := floorLocal(ms, unit)
	if !ok {
		return 0, false
	}
	if f == ms && nanos == 0 {
		return f, true
	}
	switch unit {
	case "MONTH":
		return addMonths(f, 1), true
	case "QUARTER":
		return addMonths(f, 3), true
	case "YEAR":
		return addMonths(f, 12), true
	case "DECADE":
		return addMonths(f, 120), true
	case "CENTURY":
		return addMonths(f, 1200), true
	case "MILLENNIUM":
		return addMonths(f, 12000), true
	}
	u, _ := unitMillis(unit)
	return f + u, true
}

// isoWeek returns the ISO-8601 week number of a date.
func isoWeek(days int64) int64 {
	y, m, d := types.CivilFromDays(days)
	_, w := time.Date(int(y), time.Month(m), d, 0, 0, 0, 0, time.UTC).ISOWeek()
	return int64(w)
}

// extractField returns EXTRACT(unit FROM local date-time).
func extractField(unit string, ms int64, nanos int32) (int64, bool) {
	c := civilOf(ms, nanos)
	days := floorDiv(ms, msPerDay)
	switch unit {
	case "YEAR":
		return c.year, true
	case "QUARTER":
		return int64((c.month-1)/3 + 1), true
	case "MONTH":
		return int64(c.month), true
	case "WEEK":
		return isoWeek(days), true
	case "DAY":
		return int64(c.day), true
	case "DOW":
		return floorMod(days+4, 7) + 1, true // 1 = Sunday
	case "ISODOW":
		return floorMod(days+3, 7) + 1, true // 1 = Monday
	case "DOY":
		return days - types.DaysFromCivil(c.year, 1, 1) + 1, true
	case "HOUR":
		return int64(c.hour), true
	case "MINUTE":
		return int64(c.minute), true
	case "SECOND":
		return int64(c.second), true
	case "MILLISECOND":
		return int64(c.second)*1000 + int64(c.nano/1e6), true
	case "MICROSECOND":
		return int64(c.second)*1e6 + int64(c.nano/1e3), true
	case "NANOSECOND":
		return int64(c.second)*1e9 + int64(c.nano), true
	case "EPOCH":
		return floorDiv(ms, 1000), true
	case "DECADE":
		return floorDiv(c.year, 10), true
	case "CENTURY":
		if c.year > 0 {
			return (c.year + 99) / 100, true
		}
		return -((-c.year + 99) / 100), true
	case "MILLENNIUM":
		if c.year > 0 {
			return (c.year + 999) / 1000, true
		}
		return -((-c.year + 999) / 1000), true
	case "ISOYEAR":
		y, _ := time.Date(int(c.year), time.Month(c.month), c.day, 0, 0, 0, 0, time.UTC).ISOWeek()
		return int64(y), true
	}
	return 0, false
}

// Java DateTimeFormatter / SimpleDateFormat patterns ---------------------------------

type patToken struct {
	letter  byte // 0 for literal text
	count   int
	literal string
}

func compilePattern(p string) ([]patToken, error) {
	var toks []patToken
	for i := 0; i < len(p); {
		ch := p[i]
		switch {
		case ch == '\'':
			j := i + 1
			var lit strings.Builder
			for j < len(p) {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteByte(p[j])
				j++
			}
			if j >= len(p) && !strings.HasSuffix(p, "'") {
				return nil, fmt.Errorf("unterminated quote in date format pattern '%s'", p)
			}
			if j == i+1 {
				lit.WriteByte('\'')
			}
			toks = append(toks, patToken{literal: lit.String()})
			i = j + 1
		case (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'):
			j := i
			for j < len(p) && p[j] == ch {
				j++
			}
			switch ch {
			case 'y', 'Y', 'u', 'M', 'L', 'd', 'D', 'H', 'h', 'k', 'K', 'm', 's', 'S', 'a', 'E', 'e', 'z', 'Z', 'X', 'x', 'w', 'q', 'Q', 'n':
			default:
				return nil, fmt.Errorf("Illegal pattern character '%c' in date format pattern '%s'", ch, p)
			}
			toks = append(toks, patToken{letter: ch, count: j - i})
			i = j
		default:
			toks = append(toks, patToken{literal: string(ch)})
			i++
		}
	}
	return toks, nil
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

func appendPadded(dst []byte, n int64, width int) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// formatLocal renders a local date-time with a compiled pattern. offsetSec is
// the zone offset shown by Z/X/z letters.
func formatLocal(dst []byte, toks []patToken, ms int64, nanos int32, offsetSec int, zoneName string) []byte {
	c := civilOf(ms, nanos)
	days := floorDiv(ms, msPerDay)
	for _, t := range toks {
		if t.letter == 0 {
			dst = append(dst, t.literal...)
			continue
		}
		switch t.letter {
		case 'y', 'u', 'Y':
			if t.count == 2 {
				dst = appendPadded(dst, floorMod(c.year, 100), 2)
			} else {
				dst = appendPadded(dst, c.year, t.count)
			}
		case 'M', 'L':
			switch {
			case t.count >= 4:
				dst = append(dst, monthNames[c.month-1]...)
			case t.count == 3:
				dst = append(dst, monthNames[c.month-1][:3]...)
			default:
				dst = appendPadded(dst, int64(c.month), t.count)
			}
		case 'q', 'Q':
			dst = appendPadded(dst, int64((c.month-1)/3+1), t.count)
		case 'd':
			dst = appendPadded(dst, int64(c.day), t.count)
		case 'D':
			dst = appendPadded(dst, days-types.DaysFromCivil(c.year, 1, 1)+1, t.count)
		case 'H':
			dst = appendPadded(dst, int64(c.hour), t.count)
		case 'k':
			h := c.hour
			if h == 0 {
				h = 24
			}
			dst = appendPadded(dst, int64(h), t.count)
		case 'h':
			h := c.hour % 12
			if h == 0 {
				h = 12
			}
			dst = appendPadded(dst, int64(h), t.count)
		case 'K':
			dst = appendPadded(dst, int64(c.hour%12), t.count)
		case 'm':
			dst = appendPadded(dst, int64(c.minute), t.count)
		case 's':
			dst = appendPadded(dst, int64(c.second), t.count)
		case 'S':
			frac := fmt.Sprintf("%09d", c.nano)
			if t.count <= 9 {
				dst = append(dst, frac[:t.count]...)
			} else {
				dst = append(dst, frac...)
				for i := 9; i < t.count; i++ {
					dst = append(dst, '0')
				}
			}
		case 'n':
			dst = appendPadded(dst, int64(c.nano), t.count)
		case 'a':
			if c.hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case 'E', 'e':
			dow := floorMod(days+4, 7)
			if t.count >= 4 {
				dst = append(dst, dayNames[dow]...)
			} else {
				dst = append(dst, dayNames[dow][:3]...)
			}
		case 'w':
			dst = appendPadded(dst, isoWeek(days), t.count)
		case 'z':
			dst = append(dst, zoneName...)
		case 'Z', 'X', 'x':
			if t.letter == 'X' && offsetSec == 0 {
				dst = append(dst, 'Z')
				continue
			}
			sign := byte('+')
			off := offsetSec
			if off < 0 {
				sign, off = '-', -off
			}
			dst = append(dst, sign)
			dst = appendPadded(dst, int64(off/3600), 2)
			if t.count >= 3 && t.letter != 'Z' {
				dst = append(dst, ':')
			}
			if !(t.letter != 'Z' && t.count == 1) {
				dst = appendPadded(dst, int64(off/60%60), 2)
			}
		}
	}
	return dst
}

// parseLocal parses text with a compiled pattern into a local date-time.
// zoneOffset reports an offset given in the text, if any.
func parseLocal(s string, toks []patToken) (ms int64, nanos int32, zoneOffset *int, ok bool) {
	c := civil{year: 1970, month: 1, day: 1}
	pm, hasAmPm := false, false
	pos := 0
	readNum := func(maxDigits int) (int64, bool) {
		start := pos
		neg := false
		if pos < len(s) && (s[pos] == '-' || s[pos] == '+') && maxDigits > 4 {
			neg = s[pos] == '-'
			pos++
			start = pos
		}
		for pos < len(s) && pos-start < maxDigits && s[pos] >= '0' && s[pos] <= '9' {
			pos++
		}
		if pos == start {
			return 0, false
		}
		n, _ := strconv.ParseInt(s[start:pos], 10, 64)
		if neg {
			n = -n
		}
		return n, true
	}
	for i, t := range toks {
		if t.letter == 0 {
			if !strings.HasPrefix(s[pos:], t.literal) {
				return 0, 0, nil, false
			}
			pos += len(t.literal)
			continue
		}
		// Adjacent numeric fields (yyyyMMdd) are read with their exact widths.
		width := 10
		if i+1 < len(toks) && toks[i+1].letter != 0 {
			width = t.count
		}
		switch t.letter {
		case 'y', 'u', 'Y':
			n, ok := readNum(max(width, t.count))
			if !ok {
				return 0, 0, nil, false
			}
			if t.count == 2 && n < 100 {
				n += 2000
			}
			c.year = n
		case 'M', 'L':
			if t.count >= 3 {
				found := false
				for mi, name := range monthNames {
					cand := name
					if t.count == 3 {
						cand = name[:3]
					}
					if len(s)-pos >= len(cand) && strings.EqualFold(s[pos:pos+len(cand)], cand) {
						c.month, pos, found = mi+1, pos+len(cand), true
						break
					}
				}
				if !found {
					return 0, 0, nil, false
				}
				continue
			}
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.month = int(n)
		case 'd':
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.day = int(n)
		case 'H', 'k':
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.hour = int(n) % 24
		case 'h', 'K':
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.hour = int(n) % 12
		case 'm':
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.minute = int(n)
		case 's':
			n, ok := readNum(max(width, 2))
			if !ok {
				return 0, 0, nil, false
			}
			c.second = int(n)
		case 'S':
			start := pos
			for pos < len(s) && pos-start < max(width, 9) && s[pos] >= '0' && s[pos] <= '9' {
				pos++
			}
			digits := s[start:pos]
			if digits == "" {
				return 0, 0, nil, false
			}
			if len(digits) > 9 {
				digits = digits[:9]
			}
			n, _ := strconv.Atoi(digits + strings.Repeat("0", 9-len(digits)))
			c.nano = n
		case 'a':
			if len(s)-pos < 2 {
				return 0, 0, nil, false
			}
			switch strings.ToUpper(s[pos : pos+2]) {
			case "AM":
			case "PM":
				pm = true
			default:
				return 0, 0, nil, false
			}
			hasAmPm = true
			pos += 2
		case 'E', 'e':
			for pos < len(s) && ((s[pos] >= 'a' && s[pos] <= 'z') || (s[pos] >= 'A' && s[pos] <= 'Z')) {
				pos++
			}
		case 'Z', 'X', 'x', 'z':
			if pos < len(s) && s[pos] == 'Z' {
				pos++
				z := 0
				zoneOffset = &z
				continue
			}
			if pos >= len(s) || (s[pos] != '+' && s[pos] != '-') {
				return 0, 0, nil, false
			}
			sign := 1
			if s[pos] == '-' {
				sign = -1
			}
			pos++
			rest := strings.ReplaceAll(s[pos:min(pos+5, len(s))], ":", "")
			consumed := 0
			for consumed < len(s)-pos && consumed < 5 && (s[pos+consumed] == ':' || (s[pos+consumed] >= '0' && s[pos+consumed] <= '9')) {
				consumed++
			}
			if len(rest) < 2 {
				return 0, 0, nil, false
			}
			h, _ := strconv.Atoi(rest[:2])
			m := 0
			if len(rest) >= 4 {
				m, _ = strconv.Atoi(rest[2:4])
			}
			pos += consumed
			z := sign * (h*3600 + m*60)
			zoneOffset = &z
		default:
			if _, ok := readNum(max(width, t.count)); !ok {
				return 0, 0, nil, false
			}
		}
	}
	if pos != len(s) {
		return 0, 0, nil, false
	}
	if hasAmPm && pm {
		c.hour += 12
	}
	if c.month < 1 || c.month > 12 || c.day < 1 || c.day > daysInMonth(c.year, c.month) || c.minute > 59 || c.second > 59 {
		return 0, 0, nil, false
	}
	ms, nanos = c.millis()
	return ms, nanos, zoneOffset, true
}

// zoneLabel is the short zone name Java prints for 'z'.
func zoneLabel(loc *time.Location, instant int64) (string, int) {
	return time.UnixMilli(instant).In(loc).Zone()
}
