package expr

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

func registerTimeFunctions(m map[string]builder) {
	m["EXTRACT"] = buildExtract
	for name, unit := range map[string]string{
		"YEAR": "YEAR", "QUARTER": "QUARTER", "MONTH": "MONTH", "WEEK": "WEEK", "DAYOFMONTH": "DAY",
		"DAYOFYEAR": "DOY", "DAYOFWEEK": "DOW", "HOUR": "HOUR", "MINUTE": "MINUTE", "SECOND": "SECOND",
	} {
		m[name] = extractAlias(unit)
	}
	m["DATE_FORMAT"] = buildDateFormat
	m["TO_TIMESTAMP"] = buildToTimestamp
	m["TO_TIMESTAMP_LTZ"] = buildToTimestampLTZ
	m["TO_DATE"] = buildToDate
	m["UNIX_TIMESTAMP"] = buildUnixTimestamp
	m["FROM_UNIXTIME"] = buildFromUnixtime
	m["CONVERT_TZ"] = buildConvertTZ
	m["TIMESTAMPADD"] = buildTimestampAdd
	m["TIMESTAMPDIFF"] = buildTimestampDiff
	m["CURRENT_DATE"] = clockFunc(types.DateType)
	m["CURRENT_TIME"] = clockFunc(types.TimeType(0))
	m["LOCALTIME"] = clockFunc(types.TimeType(0))
	m["CURRENT_TIMESTAMP"] = clockFunc(types.TimestampLTZType(3))
	m["NOW"] = clockFunc(types.TimestampLTZType(3))
	m["CURRENT_ROW_TIMESTAMP"] = clockFunc(types.TimestampLTZType(3))
	m["LOCALTIMESTAMP"] = clockFunc(types.TimestampType(3))
	m["CURRENT_WATERMARK"] = buildCurrentWatermark
	m["PROCTIME"] = clockFunc(types.Type{Root: types.RootTimestampLTZ, Precision: 3, TimeAttr: types.ProctimeAttr})
}

// localMillis returns the local date-time of a temporal value: TIMESTAMP_LTZ
// is shifted into the session zone, DATE becomes midnight.
func localMillisFn(t types.Type) func(c *evalCtx, v types.Value) (int64, int32) {
	switch t.Root {
	case types.RootTimestampLTZ:
		return func(c *evalCtx, v types.Value) (int64, int32) { return instantToLocal(v.N, c.loc), v.Aux }
	case types.RootDate:
		return func(_ *evalCtx, v types.Value) (int64, int32) { return v.N * msPerDay, 0 }
	}
	return func(_ *evalCtx, v types.Value) (int64, int32) { return v.N, v.Aux }
}

func symbolOf(e Expr) (string, bool) {
	if e.Type().Root != types.RootSymbol {
		return "", false
	}
	v, _ := LiteralValue(e)
	return normalizeUnit(v.S), true
}

var extractUnits = map[string]bool{
	"YEAR": true, "QUARTER": true, "MONTH": true, "WEEK": true, "DAY": true, "DOW": true, "ISODOW": true,
	"DOY": true, "HOUR": true, "MINUTE": true, "SECOND": true, "MILLISECOND": true, "MICROSECOND": true,
	"NANOSECOND": true, "EPOCH": true, "DECADE": true, "CENTURY": true, "MILLENNIUM": true, "ISOYEAR": true,
}

func buildExtract(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, wrongArgCount(name, args, "2")
	}
	unit, ok := symbolOf(args[0])
	t := args[1].Type()
	if !ok || !extractUnits[unit] || !(famDatetime(t) || t.IsInterval()) {
		return nil, cannotApply(name, args, "EXTRACT(<DATETIME_INTERVAL> FROM <DATETIME_INTERVAL>)", "EXTRACT(<DATETIME> FROM <DATETIME>)")
	}
	args = []Expr{Symbol(unit), args[1]}
	rt := types.BigIntType.WithNullable(false)
	switch {
	case t.IsInterval():
		return newCall(name, args, rt, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			n := v[1].N
			if t.Root == types.RootIntervalYearMonth {
				switch unit {
				case "YEAR":
					return types.Int(n / 12), nil
				case "MONTH":
					return types.Int(n % 12), nil
				case "QUARTER":
					return types.Int(n % 12 / 3), nil
				}
				return types.Int(0), nil
			}
			switch unit {
			case "DAY":
				return types.Int(n / msPerDay), nil
			case "HOUR":
				return types.Int(n % msPerDay / msPerHour), nil
			case "MINUTE":
				return types.Int(n % msPerHour / msPerMinute), nil
			case "SECOND":
				return types.Int(n % msPerMinute / msPerSecond), nil
			case "MILLISECOND":
				return types.Int(n % msPerMinute), nil
			case "EPOCH":
				return types.Int(n / 1000), nil
			}
			return types.Int(0), nil
		})), nil
	case t.Root == types.RootTime:
		if unit != "HOUR" && unit != "MINUTE" && unit != "SECOND" && unit != "MILLISECOND" && unit != "MICROSECOND" && unit != "NANOSECOND" && unit != "EPOCH" {
			return nil, fmt.Errorf("Extract %s from TIME is not supported", unit)
		}
	case t.Root == types.RootDate:
		switch unit {
		case "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "NANOSECOND":
			return nil, fmt.Errorf("Extract %s from DATE is not supported", unit)
		}
	}
	local := localMillisFn(t)
	return newCall(name, args, rt, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		ms, ns := local(c, v[1])
		n, _ := extractField(unit, ms, ns)
		return types.Int(n), nil
	})), nil
}

func extractAlias(unit string) builder {
	return func(name string, args []Expr) (Expr, error) {
		if len(args) != 1 || !famDatetime(args[0].Type()) {
			return nil, cannotApply(name, args, name+"(<DATETIME>)")
		}
		e, err := buildExtract("EXTRACT", []Expr{Symbol(unit), args[0]})
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}

func buildTemporalFloorCeil(name string, args []Expr) (Expr, error) {
	if name == "CEILING" {
		name = "CEIL"
	}
	unit, _ := symbolOf(args[1])
	t := args[0].Type()
	if !famDatetime(t) {
		return nil, cannotApply(name, args, name+"(<DATETIME> TO <TIME_UNIT>)")
	}
	switch unit {
	case "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR", "DECADE", "CENTURY", "MILLENNIUM":
	default:
		return nil, fmt.Errorf("%s TO %s is not supported", name, unit)
	}
	args = []Expr{args[0], Symbol(unit)}
	floor := name == "FLOOR"
	round := func(ms int64, ns int32) (int64, int32) {
		if floor {
			r, _ := floorLocal(ms, unit)
			return r, 0
		}
		r, _ := ceilLocal(ms, ns, unit)
		return r, 0
	}
	rt := t.WithoutTimeAttr()
	var fn func(c *evalCtx, v []types.Value) (types.Value, error)
	switch t.Root {
	case types.RootDate:
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			r, _ := round(v[0].N*msPerDay, 0)
			return types.Int(floorDiv(r, msPerDay)), nil
		}
	case types.RootTime:
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			r, _ := round(v[0].N, 0)
			return types.Int(r), nil
		}
	case types.RootTimestampLTZ:
		fn = func(c *evalCtx, v []types.Value) (types.Value, error) {
			r, ns := round(instantToLocal(v[0].N, c.loc), v[0].Aux)
			return types.Timestamp(localToInstant(r, c.loc), ns), nil
		}
	default:
		fn = func(_ *evalCtx, v []types.Value) (types.Value, error) {
			r, ns := round(v[0].N, v[0].Aux)
			return types.Timestamp(r, ns), nil
		}
	}
	return newCall(name, args, rt, strictImpl(fn)), nil
}

// patternCache compiles a date format argument once when it is constant.
type patternArg struct {
	fixed []patToken
	err   error
	isLit bool
}

func newPatternArg(e Expr) *patternArg {
	p := &patternArg{}
	if v, ok := LiteralValue(e); ok && !v.IsNull() {
		p.isLit = true
		p.fixed, p.err = compilePattern(v.S)
	}
	return p
}

func (p *patternArg) get(s string) ([]patToken, error) {
	if p.isLit {
		return p.fixed, p.err
	}
	return compilePattern(s)
}

const defaultTimestampFormat = "yyyy-MM-dd HH:mm:ss"

func buildDateFormat(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || !(famTimestamp(args[0].Type()) || famString(args[0].Type()) || args[0].Type().Root == types.RootDate) || !famString(args[1].Type()) {
		return nil, cannotApply(name, args, "DATE_FORMAT(<TIMESTAMP>, <CHARACTER>)", "DATE_FORMAT(<CHARACTER>, <CHARACTER>)")
	}
	pat := newPatternArg(args[1])
	if pat.err != nil {
		return nil, pat.err
	}
	t := args[0].Type()
	isStr := t.IsString()
	local := localMillisFn(t)
	c := newCall(name, args, types.StringType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		toks, err := pat.get(v[1].S)
		if err != nil {
			return types.Value{}, nil
		}
		var ms int64
		var ns int32
		if isStr {
			var ok bool
			if ms, ns, ok = parseTimestamp(v[0].S); !ok {
				return types.Value{}, nil
			}
		} else {
			ms, ns = local(c, v[0])
		}
		instant := ms
		if t.Root == types.RootTimestampLTZ {
			instant = v[0].N
		} else {
			instant = localToInstant(ms, c.loc)
		}
		zone, off := zoneLabel(c.loc, instant)
		c.buf = formatLocal(c.buf[:0], toks, ms, ns, off, zone)
		return types.String(string(c.buf)), nil
	}))
	c.t.NotNull = false
	if pat.isLit && !isStr && dateFieldsOnly(pat.fixed) {
		toks := pat.fixed
		c.impl.build = func(cc *compiler, args []evaluator) evaluator {
			return &dayFormatEval{ctx: cc.ctx, arg: args[0], local: local, toks: toks}
		}
	}
	return c, nil
}

// dateFieldsOnly reports whether a pattern shows nothing finer than the
// calendar date (no time of day, fraction or zone), so that its text is the
// same for every instant of a local day.
func dateFieldsOnly(toks []patToken) bool {
	for _, t := range toks {
		switch t.letter {
		case 0, 'y', 'u', 'Y', 'M', 'L', 'q', 'Q', 'd', 'D', 'E', 'e', 'w':
		default:
			return false
		}
	}
	return true
}

// dayFormatEval is DATE_FORMAT of a date-time with a constant pattern of
// date fields only. Consecutive rows of a stream nearly always fall on the
// same local day (Nexmark's GROUP BY day: one text for millions of rows),
// so the last day's text is kept instead of formatting and allocating a
// string per row.
type dayFormatEval struct {
	ctx   *evalCtx
	arg   evaluator
	local func(c *evalCtx, v types.Value) (int64, int32)
	toks  []patToken
	day   int64
	text  string
	valid bool
}

func (e *dayFormatEval) eval(row types.Row) (types.Value, error) {
	v, err := e.arg.eval(row)
	if err != nil || v.K == types.KindNull {
		return types.Value{}, err
	}
	ms, _ := e.local(e.ctx, v)
	if day := floorDiv(ms, msPerDay); !e.valid || day != e.day {
		e.ctx.buf = formatLocal(e.ctx.buf[:0], e.toks, day*msPerDay, 0, 0, "")
		e.text, e.day, e.valid = string(e.ctx.buf), day, true
	}
	return types.String(e.text), nil
}

func buildToTimestamp(name string, args []Expr) (Expr, error) {
	if len(args) < 1 || len(args) > 2 || !famString(args[0].Type()) || (len(args) == 2 && !famString(args[1].Type())) {
		return nil, cannotApply(name, args, "TO_TIMESTAMP(<CHARACTER>)", "TO_TIMESTAMP(<CHARACTER>, <CHARACTER>)")
	}
	var pat *patternArg
	if len(args) == 2 {
		pat = newPatternArg(args[1])
		if pat.err != nil {
			return nil, pat.err
		}
	}
	c := newCall(name, args, types.TimestampType(3), strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		ms, ns, ok := parseWithFormat(v, pat)
		if !ok {
			return types.Value{}, nil
		}
		ms, ns = truncateFraction(ms, ns, 3)
		return types.Timestamp(ms, ns), nil
	}))
	c.t.NotNull = false
	return c, nil
}

// parseWithFormat parses v[0] with the pattern in v[1] (or the default
// timestamp format, leniently, when there is none).
func parseWithFormat(v []types.Value, pat *patternArg) (int64, int32, bool) {
	if pat == nil {
		return parseTimestamp(v[0].S)
	}
	toks, err := pat.get(v[1].S)
	if err != nil {
		return 0, 0, false
	}
	ms, ns, off, ok := parseLocal(v[0].S, toks)
	if ok && off != nil {
		// A zone in the text: normalise to UTC local time.
		ms -= int64(*off) * 1000
	}
	return ms, ns, ok
}

func buildToTimestampLTZ(name string, args []Expr) (Expr, error) {
	rt := types.TimestampLTZType(3)
	if len(args) == 1 {
		// Flink 1.20 has only TO_TIMESTAMP_LTZ(numeric, precision).
		return nil, wrongArgCount(name, args, "2")
	}
	switch {
	case len(args) == 2 && famNumeric(args[0].Type()) && famInteger(args[1].Type()):
		v, ok := LiteralValue(args[1])
		if !ok || v.IsNull() || (v.N != 0 && v.N != 3) {
			return nil, fmt.Errorf("The precision value '%s' for function TO_TIMESTAMP_LTZ(numeric, precision) is unsupported, the supported value is '0' for second or '3' for millisecond.", args[1])
		}
		prec := v.N
		// Flink's range: 0000-01-01 00:00:00 to 9999-12-31 23:59:59.999
		// UTC; anything outside (or NaN) is NULL, so the result is
		// nullable whatever the argument.
		const minMillis, maxMillis = -62167219200000, 253402300799999
		arg := args[0]
		c := newCall(name, []Expr{arg}, rt, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			var n int64
			switch v[0].K {
			case types.KindInt, types.KindDecimal:
				// Integers, and decimals truncated toward zero in their
				// own unit (Flink's RoundingMode.DOWN): 1.9 seconds is 1 s.
				n = v[0].N
				if v[0].K == types.KindDecimal {
					u, sc := decUnscaled(v[0])
					q := new(big.Int).Quo(u, bigPow10(sc))
					if !q.IsInt64() {
						return types.Value{}, nil
					}
					n = q.Int64()
				}
				if prec == 0 {
					if n < minMillis/1000 || n > maxMillis/1000 {
						return types.Value{}, nil
					}
					n *= 1000
				}
			default:
				f := types.ToFloat(v[0])
				if prec == 0 {
					if !(f >= minMillis/1000 && f <= maxMillis/1000) {
						return types.Value{}, nil
					}
					f *= 1000
				}
				if !(f >= minMillis && f <= maxMillis) {
					return types.Value{}, nil
				}
				// Java's (long) cast: toward zero.
				n = int64(f)
			}
			if n < minMillis || n > maxMillis {
				return types.Value{}, nil
			}
			return types.Timestamp(n, 0), nil
		}))
		c.t.NotNull = false
		return c, nil
	case len(args) >= 1 && len(args) <= 3 && famString(args[0].Type()) && (len(args) < 2 || famString(args[1].Type())) && (len(args) < 3 || famString(args[2].Type())):
		var pat *patternArg
		if len(args) >= 2 {
			pat = newPatternArg(args[1])
		}
		c := newCall(name, args, rt, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
			var ms int64
			var ns int32
			var off *int
			var ok bool
			if pat == nil {
				ms, ns, ok = parseTimestamp(v[0].S)
			} else {
				toks, err := pat.get(v[1].S)
				if err != nil {
					return types.Value{}, nil
				}
				ms, ns, off, ok = parseLocal(v[0].S, toks)
			}
			if !ok {
				return types.Value{}, nil
			}
			ms, ns = truncateFraction(ms, ns, 3)
			if off != nil {
				return types.Timestamp(ms-int64(*off)*1000, ns), nil
			}
			loc := c.loc
			if len(v) == 3 {
				l, err := loadZone(v[2].S)
				if err != nil {
					return types.Value{}, nil
				}
				loc = l
			}
			return types.Timestamp(localToInstant(ms, loc), ns), nil
		}))
		c.t.NotNull = false
		return c, nil
	}
	return nil, cannotApply(name, args, "TO_TIMESTAMP_LTZ(<NUMERIC>, <INTEGER>)", "TO_TIMESTAMP_LTZ(<CHARACTER>, <CHARACTER>)")
}

// loadZone resolves a zone id as Java's ZoneId.of does for region ids and offsets.
func loadZone(id string) (*time.Location, error) {
	switch id {
	case "UTC", "Z", "GMT", "UT":
		return time.UTC, nil
	}
	for _, prefix := range []string{"UTC", "GMT", "UT", ""} {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok || rest == "" || (rest[0] != '+' && rest[0] != '-') {
			continue
		}
		sign := 1
		if rest[0] == '-' {
			sign = -1
		}
		hm := strings.ReplaceAll(rest[1:], ":", "")
		h, m := 0, 0
		switch len(hm) {
		case 1, 2:
			h, _ = atoiN(hm)
		case 4:
			h, _ = atoiN(hm[:2])
			m, _ = atoiN(hm[2:])
		default:
			return nil, fmt.Errorf("invalid time zone offset '%s'", id)
		}
		return time.FixedZone(id, sign*(h*3600+m*60)), nil
	}
	return time.LoadLocation(id)
}

func buildToDate(name string, args []Expr) (Expr, error) {
	if len(args) < 1 || len(args) > 2 || !famString(args[0].Type()) || (len(args) == 2 && !famString(args[1].Type())) {
		return nil, cannotApply(name, args, "TO_DATE(<CHARACTER>)", "TO_DATE(<CHARACTER>, <CHARACTER>)")
	}
	var pat *patternArg
	if len(args) == 2 {
		pat = newPatternArg(args[1])
		if pat.err != nil {
			return nil, pat.err
		}
	}
	c := newCall(name, args, types.DateType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		if pat == nil {
			d, ok := parseDate(v[0].S)
			if !ok {
				return types.Value{}, nil
			}
			return types.Int(d), nil
		}
		ms, _, ok := parseWithFormat(v, pat)
		if !ok {
			return types.Value{}, nil
		}
		return types.Int(floorDiv(ms, msPerDay)), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildUnixTimestamp(name string, args []Expr) (Expr, error) {
	switch {
	case len(args) == 0:
		return &callExpr{name: name, t: types.BigIntType.WithNullable(false), impl: impl{fn: func(c *evalCtx, _ []types.Value) (types.Value, error) {
			return types.Int(c.now().Unix()), nil
		}}}, nil
	case len(args) <= 2 && famString(args[0].Type()) && (len(args) == 1 || famString(args[1].Type())):
		var pat *patternArg
		if len(args) == 2 {
			pat = newPatternArg(args[1])
		} else {
			pat = newPatternArg(StringLiteral(defaultTimestampFormat))
		}
		c := newCall(name, args, types.BigIntType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
			toks, err := pat.get(patternText(v))
			if err != nil {
				return types.Value{}, nil
			}
			ms, _, off, ok := parseLocal(v[0].S, toks)
			if !ok {
				return types.Value{}, nil
			}
			if off != nil {
				return types.Int(floorDiv(ms-int64(*off)*1000, 1000)), nil
			}
			return types.Int(floorDiv(localToInstant(ms, c.loc), 1000)), nil
		}))
		c.t.NotNull = false
		return c, nil
	}
	return nil, cannotApply(name, args, "UNIX_TIMESTAMP()", "UNIX_TIMESTAMP(<CHARACTER>)", "UNIX_TIMESTAMP(<CHARACTER>, <CHARACTER>)")
}

func patternText(v []types.Value) string {
	if len(v) > 1 {
		return v[1].S
	}
	return defaultTimestampFormat
}

func buildFromUnixtime(name string, args []Expr) (Expr, error) {
	if len(args) < 1 || len(args) > 2 || !famNumeric(args[0].Type()) || (len(args) == 2 && !famString(args[1].Type())) {
		return nil, cannotApply(name, args, "FROM_UNIXTIME(<NUMERIC>)", "FROM_UNIXTIME(<NUMERIC>, <CHARACTER>)")
	}
	var pat *patternArg
	if len(args) == 2 {
		pat = newPatternArg(args[1])
		if pat.err != nil {
			return nil, pat.err
		}
	} else {
		pat = newPatternArg(StringLiteral(defaultTimestampFormat))
	}
	arg := implicit(args[0], types.BigIntType)
	rest := append([]Expr{arg}, args[1:]...)
	return newCall(name, rest, types.StringType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		toks, err := pat.get(patternText(v))
		if err != nil {
			return types.Value{}, nil
		}
		instant := v[0].N * 1000
		zone, off := zoneLabel(c.loc, instant)
		c.buf = formatLocal(c.buf[:0], toks, instantToLocal(instant, c.loc), 0, off, zone)
		return types.String(string(c.buf)), nil
	})), nil
}

func buildConvertTZ(name string, args []Expr) (Expr, error) {
	if err := checkArgs(name, args, "CONVERT_TZ(<CHARACTER>, <CHARACTER>, <CHARACTER>)", famString, famString, famString); err != nil {
		return nil, err
	}
	toks, _ := compilePattern(defaultTimestampFormat)
	c := newCall(name, args, types.StringType, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		from, err := loadZone(v[1].S)
		if err != nil {
			return types.Value{}, fmt.Errorf("CONVERT_TZ: unknown time zone '%s'", v[1].S)
		}
		to, err := loadZone(v[2].S)
		if err != nil {
			return types.Value{}, fmt.Errorf("CONVERT_TZ: unknown time zone '%s'", v[2].S)
		}
		ms, _, ok := parseTimestamp(v[0].S)
		if !ok {
			return types.Value{}, nil
		}
		instant := localToInstant(ms, from)
		zone, off := zoneLabel(to, instant)
		c.buf = formatLocal(c.buf[:0], toks, instantToLocal(instant, to), 0, off, zone)
		return types.String(string(c.buf)), nil
	}))
	c.t.NotNull = false
	return c, nil
}

func buildTimestampAdd(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, wrongArgCount(name, args, "3")
	}
	unit, ok := symbolOf(args[0])
	t := args[2].Type()
	if !ok || !famInteger(args[1].Type()) || !famDatetime(t) {
		return nil, cannotApply(name, args, "TIMESTAMPADD(<ANY>, <INTEGER>, <DATETIME>)")
	}
	var months bool
	var step int64
	switch unit {
	case "YEAR":
		months, step = true, 12
	case "QUARTER":
		months, step = true, 3
	case "MONTH":
		months, step = true, 1
	case "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND":
		step, _ = unitMillis(unit)
	case "MICROSECOND", "NANOSECOND":
	default:
		return nil, fmt.Errorf("TIMESTAMPADD does not support unit %s", unit)
	}
	args = []Expr{Symbol(unit), args[1], args[2]}
	rt := t.WithoutTimeAttr()
	if rt.Root == types.RootDate && !months && step < msPerDay {
		rt = types.TimestampType(3).WithNullable(t.Nullable())
	}
	return newCall(name, args, rt, strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		n := v[1].N
		switch t.Root {
		case types.RootDate:
			if months {
				return types.Int(addMonthsToDate(v[2].N, n*step)), nil
			}
			if step >= msPerDay {
				return types.Int(v[2].N + n*step/msPerDay), nil
			}
			return types.Timestamp(v[2].N*msPerDay+n*step, 0), nil
		case types.RootTime:
			if months {
				return v[2], nil
			}
			return types.Int(floorMod(v[2].N+n*step, msPerDay)), nil
		}
		ts := v[2]
		if months {
			return types.Timestamp(addMonths(ts.N, n*step), ts.Aux), nil
		}
		if step == 0 { // micro / nanoseconds
			nanos := int64(ts.Aux)
			if unit == "MICROSECOND" {
				nanos += n * 1000
			} else {
				nanos += n
			}
			return types.Timestamp(ts.N+floorDiv(nanos, 1e6), int32(floorMod(nanos, 1e6))), nil
		}
		return types.Timestamp(ts.N+n*step, ts.Aux), nil
	})), nil
}

// monthsBetween counts whole months from a to b (local date-times), as
// Calcite's TIMESTAMPDIFF does.
func monthsBetween(a, b int64) int64 {
	ca, cb := civilOf(a, 0), civilOf(b, 0)
	m := (cb.year-ca.year)*12 + int64(cb.month-ca.month)
	// Remove a partial month.
	restA := a - types.DaysFromCivil(ca.year, ca.month, 1)*msPerDay
	restB := b - types.DaysFromCivil(cb.year, cb.month, 1)*msPerDay
	if m > 0 && restB < restA {
		m--
	} else if m < 0 && restB > restA {
		m++
	}
	return m
}

func buildTimestampDiff(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, wrongArgCount(name, args, "3")
	}
	unit, ok := symbolOf(args[0])
	a, b := args[1].Type(), args[2].Type()
	if !ok || !famDatetime(a) || !famDatetime(b) || a.Root == types.RootTime != (b.Root == types.RootTime) {
		return nil, cannotApply(name, args, "TIMESTAMPDIFF(<ANY>, <DATETIME>, <DATETIME>)")
	}
	var monthStep, msStep int64
	switch unit {
	case "YEAR":
		monthStep = 12
	case "QUARTER":
		monthStep = 3
	case "MONTH":
		monthStep = 1
	case "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND":
		msStep, _ = unitMillis(unit)
	default:
		return nil, fmt.Errorf("TIMESTAMPDIFF does not support unit %s", unit)
	}
	la, lb := localMillisFn(a), localMillisFn(b)
	ltz := a.Root == types.RootTimestampLTZ || b.Root == types.RootTimestampLTZ
	args = []Expr{Symbol(unit), args[1], args[2]}
	return newCall(name, args, types.IntType.WithNullable(false), strictImpl(func(c *evalCtx, v []types.Value) (types.Value, error) {
		x, _ := la(c, v[1])
		y, _ := lb(c, v[2])
		if msStep > 0 {
			if ltz && a.Root == b.Root {
				x, y = v[1].N, v[2].N
			}
			return types.Int(int64(int32((y - x) / msStep))), nil
		}
		return types.Int(int64(int32(monthsBetween(x, y) / monthStep))), nil
	})), nil
}

// clockFunc builds the functions that read the processing clock.
func clockFunc(t types.Type) builder {
	t.NotNull = true
	return func(name string, args []Expr) (Expr, error) {
		if len(args) != 0 {
			return nil, wrongArgCount(name, args, "0")
		}
		var fn func(c *evalCtx, _ []types.Value) (types.Value, error)
		switch t.Root {
		case types.RootDate:
			fn = func(c *evalCtx, _ []types.Value) (types.Value, error) {
				return types.Int(floorDiv(instantToLocal(c.now().UnixMilli(), c.loc), msPerDay)), nil
			}
		case types.RootTime:
			fn = func(c *evalCtx, _ []types.Value) (types.Value, error) {
				ms := floorMod(instantToLocal(c.now().UnixMilli(), c.loc), msPerDay)
				return types.Int(ms - ms%1000), nil
			}
		case types.RootTimestamp:
			fn = func(c *evalCtx, _ []types.Value) (types.Value, error) {
				return types.TimestampMillis(instantToLocal(c.now().UnixMilli(), c.loc)), nil
			}
		default:
			fn = func(c *evalCtx, _ []types.Value) (types.Value, error) {
				return types.TimestampMillis(c.now().UnixMilli()), nil
			}
		}
		return &callExpr{name: name, t: t, impl: impl{fn: fn}}, nil
	}
}

// buildCurrentWatermark is CURRENT_WATERMARK(rowtime): the watermark of the
// operator evaluating it, typed like the rowtime attribute with precision 3,
// NULL while no watermark has arrived (as in Flink).
func buildCurrentWatermark(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, wrongArgCount(name, args, "1")
	}
	at := args[0].Type()
	if at.Root != types.RootTimestamp && at.Root != types.RootTimestampLTZ {
		return nil, fmt.Errorf("CURRENT_WATERMARK() must be called with a single rowtime attribute argument, but '%s' cannot be a time attribute.", at)
	}
	if at.TimeAttr != types.RowtimeAttr {
		return nil, fmt.Errorf("The argument of CURRENT_WATERMARK() must be a rowtime attribute, but was '%s'.", at)
	}
	t := types.Type{Root: at.Root, Precision: 3}
	fn := func(c *evalCtx, _ []types.Value) (types.Value, error) {
		if c.wm == nil {
			return types.Value{}, fmt.Errorf("CURRENT_WATERMARK is only supported in a SELECT list or a WHERE clause evaluated on its own (a projection or filter), not inside this operator")
		}
		wm := c.wm()
		if wm == math.MinInt64 {
			return types.NullValue, nil
		}
		return types.TimestampMillis(wm), nil
	}
	return &callExpr{name: name, args: args, t: t, impl: impl{fn: fn}}, nil
}
