package iceberg

import (
	"fmt"

	"github.com/flinksql/flinksql/types"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// appendFunc appends one non-NULL value to a column builder.
type appendFunc func(b array.Builder, v types.Value) error

// appender returns the appendFunc for an Arrow column of type dt, which is
// what iceberg-go maps the table's field to; the value's representation is
// the engine's (types.Value) for the Flink type that maps to that field.
func appender(dt arrow.DataType) (appendFunc, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return func(b array.Builder, v types.Value) error { b.(*array.BooleanBuilder).Append(v.Bool()); return nil }, nil
	case *arrow.Int32Type:
		return func(b array.Builder, v types.Value) error { b.(*array.Int32Builder).Append(int32(v.Int())); return nil }, nil
	case *arrow.Int64Type:
		return func(b array.Builder, v types.Value) error { b.(*array.Int64Builder).Append(v.Int()); return nil }, nil
	case *arrow.Float32Type:
		return func(b array.Builder, v types.Value) error {
			b.(*array.Float32Builder).Append(float32(v.Float()))
			return nil
		}, nil
	case *arrow.Float64Type:
		return func(b array.Builder, v types.Value) error { b.(*array.Float64Builder).Append(v.Float()); return nil }, nil
	case *arrow.StringType:
		return func(b array.Builder, v types.Value) error { b.(*array.StringBuilder).Append(v.Str()); return nil }, nil
	case *arrow.BinaryType:
		return func(b array.Builder, v types.Value) error { b.(*array.BinaryBuilder).AppendString(v.Str()); return nil }, nil
	case *arrow.FixedSizeBinaryType:
		n := t.ByteWidth
		return func(b array.Builder, v types.Value) error {
			s := v.Str()
			if len(s) > n {
				return fmt.Errorf("a value of %d bytes does not fit BINARY(%d)", len(s), n)
			}
			buf := make([]byte, n) // BINARY(n) is right-padded with zero bytes
			copy(buf, s)
			b.(*array.FixedSizeBinaryBuilder).Append(buf)
			return nil
		}, nil
	case *arrow.Date32Type:
		return func(b array.Builder, v types.Value) error {
			b.(*array.Date32Builder).Append(arrow.Date32(v.Int()))
			return nil
		}, nil
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			break
		}
		// TIME values are milliseconds of the day.
		return func(b array.Builder, v types.Value) error {
			b.(*array.Time64Builder).Append(arrow.Time64(v.Int() * 1000))
			return nil
		}, nil
	case *arrow.TimestampType:
		if t.Unit != arrow.Microsecond {
			break
		}
		return func(b array.Builder, v types.Value) error {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.Millis()*1000 + int64(v.NanoOfMilli())/1000))
			return nil
		}, nil
	case *arrow.Decimal128Type:
		scale := int(t.Scale)
		return func(b array.Builder, v types.Value) error {
			if v.DecimalScale() != scale {
				return fmt.Errorf("a DECIMAL value of scale %d in a column of scale %d", v.DecimalScale(), scale)
			}
			if v.IsBigDecimal() {
				b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(v.DecimalBig()))
			} else {
				b.(*array.Decimal128Builder).Append(decimal128.FromI64(v.Int()))
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("arrow type %s is not supported by the iceberg sink", dt)
}
