// Package types owns Flink's logical types and the runtime representation of
// values, rows and row batches shared by every layer of the engine.
package types

import (
	"fmt"
	"strings"
)

// Root is the root of a logical type, as in Flink's LogicalTypeRoot.
type Root uint8

// The logical type roots, in Flink's order of precedence where it matters.
const (
	RootNull Root = iota
	RootBoolean
	RootTinyInt
	RootSmallInt
	RootInt
	RootBigInt
	RootFloat
	RootDouble
	RootDecimal
	RootChar
	RootVarChar
	RootBinary
	RootVarBinary
	RootDate
	RootTime
	RootTimestamp    // TIMESTAMP(p) WITHOUT TIME ZONE
	RootTimestampLTZ // TIMESTAMP(p) WITH LOCAL TIME ZONE
	RootIntervalYearMonth
	RootIntervalDayTime
	RootArray
	RootMap
	RootMultiset
	RootRow
	RootSymbol // internal: time-unit and flag arguments of functions (DAY, BOTH, …)
)

// MaxLength is the length of STRING and BYTES (VARCHAR/VARBINARY of maximum length).
const MaxLength = 2147483647

// TimeAttr marks a column as a time attribute.
type TimeAttr uint8

const (
	NoTimeAttr TimeAttr = iota
	RowtimeAttr
	ProctimeAttr
)

// Type is a Flink logical type. The zero value is the nullable NULL type.
type Type struct {
	Root      Root
	NotNull   bool
	Precision int // DECIMAL precision; CHAR/VARCHAR/BINARY/VARBINARY length; TIME/TIMESTAMP fractional digits
	Scale     int // DECIMAL scale
	Elem      *Type
	Value     *Type // MAP value type (Elem is the key type)
	Fields    []Field
	TimeAttr  TimeAttr
	// Resolution of an interval type, e.g. "DAY TO SECOND(3)"; informational.
	IntervalUnit string
}

// Field is a named field of a ROW type.
type Field struct {
	Name string
	Type Type
}

// Constructors for the common types; all nullable.
var (
	BooleanType  = Type{Root: RootBoolean}
	TinyIntType  = Type{Root: RootTinyInt}
	SmallIntType = Type{Root: RootSmallInt}
	IntType      = Type{Root: RootInt}
	BigIntType   = Type{Root: RootBigInt}
	FloatType    = Type{Root: RootFloat}
	DoubleType   = Type{Root: RootDouble}
	StringType   = Type{Root: RootVarChar, Precision: MaxLength}
	BytesType    = Type{Root: RootVarBinary, Precision: MaxLength}
	DateType     = Type{Root: RootDate}
	NullType     = Type{Root: RootNull}
)

// DecimalType returns DECIMAL(p, s).
func DecimalType(p, s int) Type { return Type{Root: RootDecimal, Precision: p, Scale: s} }

// TimestampType returns TIMESTAMP(p).
func TimestampType(p int) Type { return Type{Root: RootTimestamp, Precision: p} }

// TimestampLTZType returns TIMESTAMP_LTZ(p).
func TimestampLTZType(p int) Type { return Type{Root: RootTimestampLTZ, Precision: p} }

// TimeType returns TIME(p).
func TimeType(p int) Type { return Type{Root: RootTime, Precision: p} }

// VarCharType returns VARCHAR(n).
func VarCharType(n int) Type { return Type{Root: RootVarChar, Precision: n} }

// CharType returns CHAR(n).
func CharType(n int) Type { return Type{Root: RootChar, Precision: n} }

// ArrayType returns ARRAY<elem>.
func ArrayType(elem Type) Type { return Type{Root: RootArray, Elem: &elem} }

// MapType returns MAP<k, v>.
func MapType(k, v Type) Type { return Type{Root: RootMap, Elem: &k, Value: &v} }

// RowType returns ROW<fields>.
func RowType(fields ...Field) Type { return Type{Root: RootRow, Fields: fields} }

// WithNullable returns t with the given nullability.
func (t Type) WithNullable(nullable bool) Type { t.NotNull = !nullable; return t }

// Nullable reports whether the type admits NULL.
func (t Type) Nullable() bool { return !t.NotNull }

// WithoutTimeAttr returns t as a regular (non time attribute) type.
func (t Type) WithoutTimeAttr() Type { t.TimeAttr = NoTimeAttr; return t }

// IsNumeric reports whether t is an exact or approximate numeric type.
func (t Type) IsNumeric() bool { return t.Root >= RootTinyInt && t.Root <= RootDecimal }

// IsInteger reports whether t is TINYINT, SMALLINT, INT or BIGINT.
func (t Type) IsInteger() bool { return t.Root >= RootTinyInt && t.Root <= RootBigInt }

// IsExact reports whether t is an exact numeric type.
func (t Type) IsExact() bool { return t.IsInteger() || t.Root == RootDecimal }

// IsApprox reports whether t is FLOAT or DOUBLE.
func (t Type) IsApprox() bool { return t.Root == RootFloat || t.Root == RootDouble }

// IsString reports whether t is CHAR or VARCHAR.
func (t Type) IsString() bool { return t.Root == RootChar || t.Root == RootVarChar }

// IsBinary reports whether t is BINARY or VARBINARY.
func (t Type) IsBinary() bool { return t.Root == RootBinary || t.Root == RootVarBinary }

// IsTimestamp reports whether t is TIMESTAMP or TIMESTAMP_LTZ.
func (t Type) IsTimestamp() bool { return t.Root == RootTimestamp || t.Root == RootTimestampLTZ }

// IsInterval reports whether t is an interval type.
func (t Type) IsInterval() bool {
	return t.Root == RootIntervalYearMonth || t.Root == RootIntervalDayTime
}

// IsTemporal reports whether t is DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ.
func (t Type) IsTemporal() bool { return t.Root >= RootDate && t.Root <= RootTimestampLTZ }

// IsTimeAttr reports whether t is a rowtime or proctime attribute.
func (t Type) IsTimeAttr() bool { return t.TimeAttr != NoTimeAttr }

// Equal reports whether a and b are the same type, nullability and time
// attribute markers included.
func (t Type) Equal(o Type) bool { return t.String() == o.String() }

// EqualIgnoringNull reports whether a and b are the same type apart from nullability and time attributes.
func (t Type) EqualIgnoringNull(o Type) bool {
	t.NotNull, o.NotNull = false, false
	t.TimeAttr, o.TimeAttr = NoTimeAttr, NoTimeAttr
	return t.String() == o.String()
}

// String formats the type as Flink prints it (DESCRIBE, error messages).
func (t Type) String() string {
	var b strings.Builder
	t.format(&b)
	return b.String()
}

// SQLString formats the type without time attribute markers, as usable in DDL.
func (t Type) SQLString() string {
	t.TimeAttr = NoTimeAttr
	return t.String()
}

func (t Type) format(b *strings.Builder) {
	switch t.Root {
	case RootNull:
		b.WriteString("NULL")
	case RootBoolean:
		b.WriteString("BOOLEAN")
	case RootTinyInt:
		b.WriteString("TINYINT")
	case RootSmallInt:
		b.WriteString("SMALLINT")
	case RootInt:
		b.WriteString("INT")
	case RootBigInt:
		b.WriteString("BIGINT")
	case RootFloat:
		b.WriteString("FLOAT")
	case RootDouble:
		b.WriteString("DOUBLE")
	case RootDecimal:
		fmt.Fprintf(b, "DECIMAL(%d, %d)", t.Precision, t.Scale)
	case RootChar:
		fmt.Fprintf(b, "CHAR(%d)", t.Precision)
	case RootVarChar:
		if t.Precision == MaxLength {
			b.WriteString("STRING")
		} else {
			fmt.Fprintf(b, "VARCHAR(%d)", t.Precision)
		}
	case RootBinary:
		fmt.Fprintf(b, "BINARY(%d)", t.Precision)
	case RootVarBinary:
		if t.Precision == MaxLength {
			b.WriteString("BYTES")
		} else {
			fmt.Fprintf(b, "VARBINARY(%d)", t.Precision)
		}
	case RootDate:
		b.WriteString("DATE")
	case RootTime:
		fmt.Fprintf(b, "TIME(%d)", t.Precision)
	case RootTimestamp:
		fmt.Fprintf(b, "TIMESTAMP(%d)", t.Precision)
	case RootTimestampLTZ:
		fmt.Fprintf(b, "TIMESTAMP_LTZ(%d)", t.Precision)
	case RootIntervalYearMonth, RootIntervalDayTime:
		b.WriteString("INTERVAL ")
		if t.IntervalUnit != "" {
			b.WriteString(t.IntervalUnit)
		} else if t.Root == RootIntervalYearMonth {
			b.WriteString("YEAR(2) TO MONTH")
		} else {
			b.WriteString("DAY(2) TO SECOND(3)")
		}
	case RootArray:
		b.WriteString("ARRAY<")
		t.Elem.format(b)
		b.WriteString(">")
	case RootMultiset:
		b.WriteString("MULTISET<")
		t.Elem.format(b)
		b.WriteString(">")
	case RootMap:
		b.WriteString("MAP<")
		t.Elem.format(b)
		b.WriteString(", ")
		t.Value.format(b)
		b.WriteString(">")
	case RootRow:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteIdent(f.Name))
			b.WriteString(" ")
			f.Type.format(b)
		}
		b.WriteString(">")
	case RootSymbol:
		b.WriteString("SYMBOL")
	default:
		fmt.Fprintf(b, "UNKNOWN(%d)", t.Root)
	}
	if t.NotNull {
		b.WriteString(" NOT NULL")
	}
	switch t.TimeAttr {
	case RowtimeAttr:
		b.WriteString(" *ROWTIME*")
	case ProctimeAttr:
		b.WriteString(" *PROCTIME*")
	}
}

// QuoteIdent back-quotes a name, doubling back-quotes inside it.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// Column is a named column of a row schema.
type Column struct {
	Name string
	Type Type
}

// Schema is the ordered list of columns of a row.
type Schema []Column

// Names returns the column names.
func (s Schema) Names() []string {
	n := make([]string, len(s))
	for i, c := range s {
		n[i] = c.Name
	}
	return n
}

// Types returns the column types.
func (s Schema) Types() []Type {
	t := make([]Type, len(s))
	for i, c := range s {
		t[i] = c.Type
	}
	return t
}

// Index returns the position of the column with the given name, or -1.
func (s Schema) Index(name string) int {
	for i, c := range s {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// String formats the schema as ROW<`a` INT, ...>.
func (s Schema) String() string {
	fs := make([]Field, len(s))
	for i, c := range s {
		fs[i] = Field{Name: c.Name, Type: c.Type}
	}
	return RowType(fs...).String()
}
