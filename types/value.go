package types

import (
	"math"
	"math/big"
)

// Kind tags the representation held by a Value. The zero Value is NULL.
type Kind uint8

const (
	KindNull      Kind = iota
	KindBool           // N: 0 or 1
	KindInt            // N: TINYINT…BIGINT, DATE (days since epoch), TIME (ms of day), intervals (months or ms)
	KindFloat          // N: math.Float64bits (FLOAT values are kept rounded to float32)
	KindDecimal        // N: unscaled value; Aux: scale. X: *big.Int when it does not fit in int64
	KindString         // S
	KindBytes          // S holds the bytes
	KindTimestamp      // N: epoch milliseconds; Aux: nanoseconds within the millisecond
	KindArray          // X: []Value
	KindMap            // X: *MapValue
	KindRow            // X: Row
	KindSymbol         // S: upper-case symbol (time unit, TRIM flag, …)
)

// Value is one SQL value. It is a small struct, not an interface, so that
// scalars are never boxed: integers, floats, dates and timestamps live in N,
// strings and bytes in S, and only nested or very large values use X.
//
// TIMESTAMP values hold the local date-time as if it were UTC; TIMESTAMP_LTZ
// values hold the instant. Both use N (epoch milliseconds) and Aux (nanos of
// the millisecond, 0…999999).
type Value struct {
	K   Kind
	Aux int32
	N   int64
	S   string
	X   any
}

// MapValue is the representation of MAP and MULTISET values: parallel key and value slices.
type MapValue struct {
	Keys, Values []Value
}

// NullValue is the SQL NULL.
var NullValue = Value{}

// Bool returns a BOOLEAN value.
func Bool(b bool) Value {
	if b {
		return Value{K: KindBool, N: 1}
	}
	return Value{K: KindBool}
}

// Int returns an integer value (any of TINYINT…BIGINT, DATE, TIME, INTERVAL).
func Int(n int64) Value { return Value{K: KindInt, N: n} }

// Float returns a FLOAT or DOUBLE value.
func Float(f float64) Value { return Value{K: KindFloat, N: int64(math.Float64bits(f))} }

// String returns a CHAR/VARCHAR value.
func String(s string) Value { return Value{K: KindString, S: s} }

// Bytes returns a BINARY/VARBINARY value. The bytes are copied.
func Bytes(b []byte) Value { return Value{K: KindBytes, S: string(b)} }

// Timestamp returns a TIMESTAMP or TIMESTAMP_LTZ value.
func Timestamp(millis int64, nanoOfMilli int32) Value {
	return Value{K: KindTimestamp, N: millis, Aux: nanoOfMilli}
}

// TimestampMillis returns a TIMESTAMP value with millisecond precision.
func TimestampMillis(millis int64) Value { return Value{K: KindTimestamp, N: millis} }

// DecimalFromUnscaled returns a DECIMAL value unscaled/10^scale.
func DecimalFromUnscaled(unscaled int64, scale int) Value {
	return Value{K: KindDecimal, N: unscaled, Aux: int32(scale)}
}

// DecimalFromBig returns a DECIMAL value, using the compact form when it fits.
func DecimalFromBig(unscaled *big.Int, scale int) Value {
	if unscaled.IsInt64() {
		return DecimalFromUnscaled(unscaled.Int64(), scale)
	}
	return Value{K: KindDecimal, Aux: int32(scale), X: new(big.Int).Set(unscaled)}
}

// ArrayValue returns an ARRAY value.
func ArrayValue(elems []Value) Value { return Value{K: KindArray, X: elems} }

// MapOf returns a MAP value.
func MapOf(keys, values []Value) Value {
	return Value{K: KindMap, X: &MapValue{Keys: keys, Values: values}}
}

// RowValue returns a ROW value.
func RowValue(r Row) Value { return Value{K: KindRow, X: r} }

// SymbolValue returns a symbol argument (e.g. a time unit).
func SymbolValue(s string) Value { return Value{K: KindSymbol, S: s} }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.K == KindNull }

// Bool returns the BOOLEAN payload.
func (v Value) Bool() bool { return v.N != 0 }

// Int returns the integer payload.
func (v Value) Int() int64 { return v.N }

// Float returns the floating-point payload.
func (v Value) Float() float64 { return math.Float64frombits(uint64(v.N)) }

// Str returns the string or bytes payload.
func (v Value) Str() string { return v.S }

// Millis returns the epoch milliseconds of a timestamp.
func (v Value) Millis() int64 { return v.N }

// NanoOfMilli returns the nanoseconds within the millisecond of a timestamp.
func (v Value) NanoOfMilli() int32 { return v.Aux }

// DecimalScale returns the scale of a DECIMAL value.
func (v Value) DecimalScale() int { return int(v.Aux) }

// DecimalBig returns the unscaled value of a DECIMAL as a big.Int.
func (v Value) DecimalBig() *big.Int {
	if b, ok := v.X.(*big.Int); ok {
		return new(big.Int).Set(b)
	}
	return big.NewInt(v.N)
}

// IsBigDecimal reports whether a DECIMAL value does not fit the compact form.
func (v Value) IsBigDecimal() bool { _, ok := v.X.(*big.Int); return ok }

// Array returns the elements of an ARRAY value.
func (v Value) Array() []Value { a, _ := v.X.([]Value); return a }

// Map returns the entries of a MAP value.
func (v Value) Map() *MapValue { m, _ := v.X.(*MapValue); return m }

// RowOf returns the fields of a ROW value.
func (v Value) RowOf() Row { r, _ := v.X.(Row); return r }

// Row is one row: a slice of values, one per column.
type Row []Value

// Clone returns a copy of the row that shares no slice with r.
func (r Row) Clone() Row {
	c := make(Row, len(r))
	copy(c, r)
	return c
}

// RowKind is the change a row carries in a changelog.
type RowKind uint8

const (
	Insert       RowKind = iota // +I
	UpdateBefore                // -U
	UpdateAfter                 // +U
	Delete                      // -D
)

// String returns Flink's short form: +I, -U, +U, -D.
func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return "?"
}

// IsAccumulate reports whether the kind adds a row (+I, +U).
func (k RowKind) IsAccumulate() bool { return k == Insert || k == UpdateAfter }

// IsRetract reports whether the kind withdraws a row (-U, -D).
func (k RowKind) IsRetract() bool { return k == UpdateBefore || k == Delete }
