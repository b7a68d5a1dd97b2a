package expr

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// NumericLiteral types a numeric literal as Calcite does: an integer is INT
// when it fits 32 bits, else BIGINT, else DECIMAL(p, 0); a literal with a
// decimal point is DECIMAL(p, s) with p the number of digits; one with an
// exponent is DOUBLE. All are NOT NULL.
func NumericLiteral(text string) (Expr, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, fmt.Errorf("invalid numeric literal '%s'", text)
	}
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return nil, fmt.Errorf("invalid numeric literal '%s'", text)
		}
		return &literal{v: types.Float(f), t: types.DoubleType.WithNullable(false)}, nil
	}
	body := strings.TrimLeft(s, "+-")
	intPart, frac, hasDot := strings.Cut(body, ".")
	if hasDot && frac != "" {
		u, scale, ok := parseDecimalText(s)
		if !ok {
			return nil, fmt.Errorf("invalid numeric literal '%s'", text)
		}
		p := len(intPart) + len(frac)
		if p > maxDecimalPrecision {
			return nil, fmt.Errorf("Numeric literal '%s' out of range", text)
		}
		t := types.DecimalType(max(p, scale), scale).WithNullable(false)
		return &literal{v: types.DecimalFromBig(u, scale), t: t}, nil
	}
	u, ok := new(big.Int).SetString(strings.TrimPrefix(intPart, "+"), 10)
	if !ok {
		return nil, fmt.Errorf("invalid numeric literal '%s'", text)
	}
	if strings.HasPrefix(s, "-") {
		u.Neg(u)
	}
	switch {
	case u.IsInt64() && u.Int64() >= math.MinInt32 && u.Int64() <= math.MaxInt32:
		return &literal{v: types.Int(u.Int64()), t: types.IntType.WithNullable(false)}, nil
	case u.IsInt64():
		return &literal{v: types.Int(u.Int64()), t: types.BigIntType.WithNullable(false)}, nil
	}
	p := len(strings.TrimLeft(intPart, "0"))
	if p > maxDecimalPrecision {
		return nil, fmt.Errorf("Numeric literal '%s' out of range", text)
	}
	return &literal{v: types.DecimalFromBig(u, 0), t: types.DecimalType(p, 0).WithNullable(false)}, nil
}

// BinaryLiteral parses the hex digits of X'…' into a BINARY(n) NOT NULL literal.
func BinaryLiteral(hexDigits string) (Expr, error) {
	s := strings.ReplaceAll(hexDigits, " ", "")
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("Binary literal string must contain an even number of hexits")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("Binary literal string must contain only characters '0' - '9', 'A' - 'F'")
	}
	return &literal{v: types.Bytes(b), t: types.Type{Root: types.RootBinary, Precision: max(len(b), 1), NotNull: true}}, nil
}

// TypedLiteral builds DATE '…', TIME '…', TIMESTAMP '…' and
// TIMESTAMP_LTZ / TIMESTAMP WITH LOCAL TIME ZONE '…' literals. The precision
// of TIME and TIMESTAMP literals is the number of fractional digits given.
func TypedLiteral(typeName string, text string) (Expr, error) {
	tn := strings.ToUpper(strings.Join(strings.Fields(typeName), " "))
	s := strings.TrimSpace(text)
	fracDigits := func(s string) int {
		i := strings.LastIndexByte(s, '.')
		if i < 0 || strings.LastIndexByte(s, ':') > i {
			return 0
		}
		return len(s) - i - 1
	}
	switch tn {
	case "DATE":
		d, ok := parseDate(s)
		if !ok || strings.ContainsAny(s, " T") {
			return nil, fmt.Errorf("Illegal DATE literal '%s': not in format 'yyyy-MM-dd'", text)
		}
		return &literal{v: types.Int(d), t: types.DateType.WithNullable(false)}, nil
	case "TIME":
		ms, _, ok := parseTimeOfDay(s)
		if !ok || len(strings.Split(strings.SplitN(s, ".", 2)[0], ":")) != 3 {
			return nil, fmt.Errorf("Illegal TIME literal '%s': not in format 'HH:mm:ss'", text)
		}
		p := min(fracDigits(s), 9)
		return &literal{v: types.Int(ms), t: types.TimeType(p).WithNullable(false)}, nil
	case "TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE":
		ms, ns, ok := parseTimestamp(s)
		if !ok || !strings.Contains(s, ":") {
			return nil, fmt.Errorf("Illegal TIMESTAMP literal '%s': not in format 'yyyy-MM-dd HH:mm:ss'", text)
		}
		p := min(fracDigits(s), 9)
		if tn == "TIMESTAMP" {
			return &literal{v: types.Timestamp(ms, ns), t: types.TimestampType(p).WithNullable(false)}, nil
		}
		// The text is a local date-time in the session zone; it is resolved
		// to an instant when evaluated.
		t := types.TimestampLTZType(p).WithNullable(false)
		return &callExpr{name: "TIMESTAMP_LTZ", args: []Expr{StringLiteral(s)}, t: t, impl: impl{fn: func(c *evalCtx, _ []types.Value) (types.Value, error) {
			return types.Timestamp(localToInstant(ms, c.loc), ns), nil
		}}}, nil
	}
	return nil, fmt.Errorf("Unsupported typed literal %s '%s'", typeName, text)
}

var intervalUnitsOrder = map[string]int{"YEAR": 0, "MONTH": 1, "DAY": 2, "HOUR": 3, "MINUTE": 4, "SECOND": 5}

// splitUnitPrecision parses "SECOND(3)" or "DAY(5)" into unit and precision (-1 when absent).
func splitUnitPrecision(u string) (string, int, int, error) {
	u = strings.ToUpper(strings.TrimSpace(u))
	name, rest, ok := strings.Cut(u, "(")
	if !ok {
		return normalizeUnit(name), -1, -1, nil
	}
	rest = strings.TrimSuffix(strings.TrimSpace(rest), ")")
	a, b, two := strings.Cut(rest, ",")
	p1, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return "", 0, 0, fmt.Errorf("invalid interval precision in '%s'", u)
	}
	p2 := -1
	if two {
		if p2, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return "", 0, 0, fmt.Errorf("invalid interval precision in '%s'", u)
		}
	}
	return normalizeUnit(strings.TrimSpace(name)), p1, p2, nil
}

// IntervalLiteral builds INTERVAL 'text' from [TO to]: year-month intervals
// count months, day-time intervals count milliseconds. Units may be plural.
// A leading field has at most 2 digits unless a precision is given
// (SECOND(3) …), as in Calcite.
func IntervalLiteral(text string, from, to string, negative bool) (Expr, error) {
	fu, fp, fracP, err := splitUnitPrecision(from)
	if err != nil {
		return nil, err
	}
	tu, _, tFracP, err := splitUnitPrecision(to)
	if err != nil {
		return nil, err
	}
	if to == "" {
		tu = ""
	}
	fo, ok := intervalUnitsOrder[fu]
	if !ok {
		return nil, fmt.Errorf("Unsupported interval unit %s", from)
	}
	qual := fu
	if tu != "" {
		toOrder, ok := intervalUnitsOrder[tu]
		if !ok || toOrder <= fo || (fo <= 1) != (toOrder <= 1) {
			return nil, fmt.Errorf("Unsupported interval qualifier %s TO %s", fu, tu)
		}
		qual = fu + " TO " + tu
	}
	startPrec := fp
	if startPrec < 0 {
		startPrec = 2
	}
	s := strings.TrimSpace(text)
	sign := int64(1)
	if negative {
		sign = -1
	}
	if strings.HasPrefix(s, "-") {
		sign, s = -sign, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	bad := func() error {
		return fmt.Errorf("Illegal interval literal format '%s' for INTERVAL %s", text, qual)
	}
	// Split the text into fields by the separators the qualifier implies.
	var fields []string
	var frac string
	switch qual {
	case "YEAR TO MONTH":
		a, b, ok := strings.Cut(s, "-")
		if !ok {
			return nil, bad()
		}
		fields = []string{a, b}
	case "DAY TO HOUR":
		fields = strings.Fields(s)
		if len(fields) != 2 {
			return nil, bad()
		}
	case "DAY TO MINUTE", "DAY TO SECOND":
		d, rest, ok := strings.Cut(s, " ")
		if !ok {
			return nil, bad()
		}
		fields = append([]string{d}, strings.Split(strings.TrimSpace(rest), ":")...)
	default:
		fields = strings.Split(s, ":")
	}
	if strings.HasSuffix(qual, "SECOND") {
		last := fields[len(fields)-1]
		if a, b, ok := strings.Cut(last, "."); ok {
			fields[len(fields)-1], frac = a, b
		}
	}
	units := []string{fu}
	if tu != "" {
		order := []string{"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"}
		units = order[fo : intervalUnitsOrder[tu]+1]
	}
	if len(fields) != len(units) {
		return nil, bad()
	}
	limits := map[string]int64{"MONTH": 11, "HOUR": 23, "MINUTE": 59, "SECOND": 59}
	var months, ms int64
	for i, f := range fields {
		n, ok := atoiN(strings.TrimSpace(f))
		if !ok {
			return nil, bad()
		}
		v := int64(n)
		if i == 0 {
			if len(strings.TrimLeft(strings.TrimSpace(f), "0")) > startPrec {
				return nil, fmt.Errorf("Interval field value %d exceeds precision of %s(%d) field", v, units[0], startPrec)
			}
		} else if v > limits[units[i]] {
			return nil, fmt.Errorf("Illegal interval literal format '%s' for INTERVAL %s", text, qual)
		}
		switch units[i] {
		case "YEAR":
			months += v * 12
		case "MONTH":
			months += v
		default:
			u, _ := unitMillis(units[i])
			ms += v * u
		}
	}
	if frac != "" {
		fp := fracP
		if tu != "" {
			fp = tFracP
		}
		if fp < 0 {
			fp = 6
		}
		if len(frac) > max(fp, 9) {
			return nil, bad()
		}
		n, ok := atoiN((frac + "000")[:3])
		if !ok {
			return nil, bad()
		}
		ms += int64(n)
	}
	if fu == "YEAR" || fu == "MONTH" {
		unit := "MONTH"
		switch qual {
		case "YEAR":
			unit = fmt.Sprintf("YEAR(%d)", startPrec)
		case "YEAR TO MONTH":
			unit = fmt.Sprintf("YEAR(%d) TO MONTH", startPrec)
		}
		t := types.Type{Root: types.RootIntervalYearMonth, NotNull: true, IntervalUnit: unit}
		return &literal{v: types.Int(sign * months), t: t}, nil
	}
	unit := dayTimeUnitName(fu, tu, startPrec)
	t := types.Type{Root: types.RootIntervalDayTime, NotNull: true, IntervalUnit: unit}
	return &literal{v: types.Int(sign * ms), t: t}, nil
}

// dayTimeUnitName renders a day-time resolution as Flink's DayTimeIntervalType does.
func dayTimeUnitName(from, to string, startPrec int) string {
	part := func(u string) string {
		switch u {
		case "DAY":
			return fmt.Sprintf("DAY(%d)", startPrec)
		case "SECOND":
			return "SECOND(3)"
		}
		return u
	}
	if to == "" {
		return part(from)
	}
	return part(from) + " TO " + part(to)
}
