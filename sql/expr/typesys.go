package expr

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// sqlTypeName renders a type as Calcite's RelDataType does in validator
// messages (INTEGER, VARCHAR(5), TIMESTAMP_WITH_LOCAL_TIME_ZONE(3) …).
func sqlTypeName(t types.Type) string {
	switch t.Root {
	case types.RootNull:
		return "NULL"
	case types.RootInt:
		return "INTEGER"
	case types.RootVarChar:
		return fmt.Sprintf("VARCHAR(%d)", t.Precision)
	case types.RootVarBinary:
		return fmt.Sprintf("VARBINARY(%d)", t.Precision)
	case types.RootTimestampLTZ:
		return fmt.Sprintf("TIMESTAMP_WITH_LOCAL_TIME_ZONE(%d)", t.Precision)
	case types.RootIntervalYearMonth, types.RootIntervalDayTime:
		u := t.IntervalUnit
		if u == "" {
			if t.Root == types.RootIntervalYearMonth {
				u = "YEAR TO MONTH"
			} else {
				u = "DAY TO SECOND"
			}
		}
		return "INTERVAL " + stripPrecisions(u)
	case types.RootArray:
		return sqlTypeName(*t.Elem) + " ARRAY"
	case types.RootMultiset:
		return sqlTypeName(*t.Elem) + " MULTISET"
	case types.RootMap:
		return "(" + sqlTypeName(*t.Elem) + ", " + sqlTypeName(*t.Value) + ") MAP"
	case types.RootRow:
		var b strings.Builder
		b.WriteString("RecordType(")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(sqlTypeName(f.Type))
			b.WriteString(" ")
			b.WriteString(f.Name)
		}
		b.WriteString(")")
		return b.String()
	case types.RootSymbol:
		return "SYMBOL"
	}
	t.NotNull = false
	return t.SQLString()
}

func stripPrecisions(u string) string {
	var b strings.Builder
	depth := 0
	for _, r := range u {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// familyName is Calcite's type family as shown in "No match found for
// function signature" messages.
func familyName(t types.Type) string {
	switch {
	case t.Root == types.RootNull:
		return "NULL"
	case t.Root == types.RootBoolean:
		return "BOOLEAN"
	case t.IsNumeric():
		return "NUMERIC"
	case t.IsString():
		return "CHARACTER"
	case t.IsBinary():
		return "BINARY"
	case t.Root == types.RootDate:
		return "DATE"
	case t.Root == types.RootTime:
		return "TIME"
	case t.IsTimestamp():
		return "TIMESTAMP"
	case t.Root == types.RootIntervalDayTime:
		return "INTERVAL_DAY_TIME"
	case t.Root == types.RootIntervalYearMonth:
		return "INTERVAL_YEAR_MONTH"
	case t.Root == types.RootArray:
		return "ARRAY"
	case t.Root == types.RootMap:
		return "MAP"
	case t.Root == types.RootMultiset:
		return "MULTISET"
	case t.Root == types.RootRow:
		return "ROW"
	}
	return "ANY"
}

// sameFamily reports whether two types are in the same Calcite family.
func sameFamily(a, b types.Type) bool { return familyName(a) == familyName(b) }

// integerDigits is the number of decimal digits an integer type needs, which
// is the precision of the DECIMAL(p, 0) it widens to.
func integerDigits(r types.Root) int {
	switch r {
	case types.RootTinyInt:
		return 3
	case types.RootSmallInt:
		return 5
	case types.RootInt:
		return 10
	}
	return 19
}

// asDecimalType returns the DECIMAL type an exact numeric type widens to.
func asDecimalType(t types.Type) types.Type {
	if t.Root == types.RootDecimal {
		return t
	}
	return types.DecimalType(integerDigits(t.Root), 0).WithNullable(t.Nullable())
}

const maxDecimalPrecision = 38

// adjustDecimal caps a derived precision at 38, keeping at least 6 fractional
// digits where the scale allows, as Flink's LogicalTypeMerging does.
func adjustDecimal(p, s int) types.Type {
	if p <= maxDecimalPrecision {
		return types.DecimalType(p, s)
	}
	intDigits := p - s
	minScale := min(s, 6)
	return types.DecimalType(maxDecimalPrecision, max(maxDecimalPrecision-intDigits, minScale))
}

func decimalPlus(a, b types.Type) types.Type {
	s := max(a.Scale, b.Scale)
	p := max(a.Precision-a.Scale, b.Precision-b.Scale) + s + 1
	return adjustDecimal(p, s)
}

func decimalTimes(a, b types.Type) types.Type {
	return adjustDecimal(a.Precision+b.Precision+1, a.Scale+b.Scale)
}

func decimalDivide(a, b types.Type) types.Type {
	s := max(6, a.Scale+b.Precision+1)
	p := a.Precision - a.Scale + b.Scale + s
	return adjustDecimal(p, s)
}

func decimalMod(a, b types.Type) types.Type {
	s := max(a.Scale, b.Scale)
	p := min(a.Precision-a.Scale, b.Precision-b.Scale) + s
	return adjustDecimal(p, s)
}

// LeastRestrictive returns Flink's common type of ts, as used for UNION,
// CASE, COALESCE and IN: numeric widening, CHAR of different lengths to
// VARCHAR, timestamps to the highest precision, NULL to anything. The
// result is nullable when any input is.
func LeastRestrictive(ts ...types.Type) (types.Type, error) {
	if len(ts) == 0 {
		return types.NullType, nil
	}
	nullable := false
	var res types.Type
	first := true
	for _, t := range ts {
		if t.Nullable() {
			nullable = true
		}
		t = t.WithoutTimeAttr()
		if t.Root == types.RootNull {
			continue
		}
		if first {
			res, first = t, false
			continue
		}
		m, ok := mergeTypes(res, t)
		if !ok {
			return types.Type{}, fmt.Errorf("Could not find a common type for arguments: %s", joinTypes(ts))
		}
		res = m
	}
	if first {
		return types.NullType, nil
	}
	res.NotNull = !nullable
	return res, nil
}

func joinTypes(ts []types.Type) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

func mergeTypes(a, b types.Type) (types.Type, bool) {
	a.NotNull, b.NotNull = false, false
	if a.EqualIgnoringNull(b) {
		return a, true
	}
	switch {
	case a.IsNumeric() && b.IsNumeric():
		return mergeNumeric(a, b), true
	case a.IsString() && b.IsString():
		if a.Root == types.RootChar && b.Root == types.RootChar && a.Precision == b.Precision {
			return a, true
		}
		return types.VarCharType(max(a.Precision, b.Precision)), true
	case a.IsBinary() && b.IsBinary():
		if a.Root == types.RootBinary && b.Root == types.RootBinary && a.Precision == b.Precision {
			return a, true
		}
		return types.Type{Root: types.RootVarBinary, Precision: max(a.Precision, b.Precision)}, true
	case a.Root == types.RootBoolean && b.Root == types.RootBoolean:
		return a, true
	case a.IsTimestamp() && b.IsTimestamp():
		r := a.Root
		if b.Root == types.RootTimestampLTZ {
			r = types.RootTimestampLTZ
		}
		return types.Type{Root: r, Precision: max(a.Precision, b.Precision)}, true
	case a.Root == types.RootDate && b.IsTimestamp():
		return types.Type{Root: b.Root, Precision: b.Precision}, true
	case b.Root == types.RootDate && a.IsTimestamp():
		return types.Type{Root: a.Root, Precision: a.Precision}, true
	case a.Root == types.RootTime && b.Root == types.RootTime:
		return types.TimeType(max(a.Precision, b.Precision)), true
	case a.Root == b.Root && a.IsInterval():
		if a.Root == types.RootIntervalDayTime {
			return types.Type{Root: a.Root, IntervalUnit: "DAY(2) TO SECOND(3)"}, true
		}
		return types.Type{Root: a.Root, IntervalUnit: "YEAR(2) TO MONTH"}, true
	case a.Root == types.RootArray && b.Root == types.RootArray:
		e, err := LeastRestrictive(*a.Elem, *b.Elem)
		if err != nil {
			return a, false
		}
		return types.ArrayType(e), true
	case a.Root == types.RootMap && b.Root == types.RootMap:
		k, err1 := LeastRestrictive(*a.Elem, *b.Elem)
		v, err2 := LeastRestrictive(*a.Value, *b.Value)
		if err1 != nil || err2 != nil {
			return a, false
		}
		return types.MapType(k, v), true
	case a.Root == types.RootRow && b.Root == types.RootRow && len(a.Fields) == len(b.Fields):
		fs := make([]types.Field, len(a.Fields))
		for i := range fs {
			ft, err := LeastRestrictive(a.Fields[i].Type, b.Fields[i].Type)
			if err != nil {
				return a, false
			}
			fs[i] = types.Field{Name: a.Fields[i].Name, Type: ft}
		}
		return types.RowType(fs...), true
	}
	return a, false
}

func mergeNumeric(a, b types.Type) types.Type {
	switch {
	case a.Root == types.RootDouble || b.Root == types.RootDouble:
		return types.DoubleType
	case a.Root == types.RootFloat || b.Root == types.RootFloat:
		if a.Root == types.RootDecimal || b.Root == types.RootDecimal {
			return types.DoubleType
		}
		return types.FloatType
	case a.Root == types.RootDecimal || b.Root == types.RootDecimal:
		da, db := asDecimalType(a), asDecimalType(b)
		s := max(da.Scale, db.Scale)
		p := min(max(da.Precision-da.Scale, db.Precision-db.Scale)+s, maxDecimalPrecision)
		return types.DecimalType(p, s)
	}
	if a.Root >= b.Root {
		return types.Type{Root: a.Root}
	}
	return types.Type{Root: b.Root}
}

// comparable reports whether Calcite lets a and b be compared, and returns
// the types both sides are cast to when the comparison needs a cast (a
// character operand against a non-character one).
func comparisonTypes(a, b types.Type) (ta, tb types.Type, ok bool) {
	if a.Root == types.RootNull || b.Root == types.RootNull {
		return a, b, true
	}
	if sameFamily(a, b) {
		if a.IsTimestamp() && a.Root != b.Root {
			// TIMESTAMP vs TIMESTAMP_LTZ: compare as TIMESTAMP_LTZ.
			t := types.TimestampLTZType(max(a.Precision, b.Precision))
			return t.WithNullable(a.Nullable()), t.WithNullable(b.Nullable()), true
		}
		if a.Root == types.RootRow || a.Root == types.RootArray || a.Root == types.RootMap {
			return a, b, a.EqualIgnoringNull(b) || true
		}
		return a, b, true
	}
	aChar, bChar := a.IsString(), b.IsString()
	if aChar == bChar || !stringComparable(map[bool]types.Type{true: b, false: a}[aChar]) {
		return a, b, false
	}
	other := b
	if bChar {
		other = a
	}
	target := other
	if other.IsNumeric() {
		target = mergeNumeric(other, types.BigIntType)
	}
	target.NotNull = false
	target.TimeAttr = types.NoTimeAttr
	return target.WithNullable(a.Nullable()), target.WithNullable(b.Nullable()), true
}

func stringComparable(t types.Type) bool {
	return t.IsNumeric() || t.IsTemporal() || t.IsInterval() || t.Root == types.RootBoolean
}
