package avro

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	hamba "github.com/hamba/avro/v2"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// maxDepth bounds nesting so that a hostile schema-conforming record
// cannot exhaust the stack (the schema bounds it anyway; this is a guard).
const maxDepth = 1000

// Decoder decodes one Avro datum per record into a row. It reuses a reader:
// one goroutine uses it.
type Decoder struct {
	root   *node
	schema hamba.Schema
	r      *hamba.Reader
}

// Schema returns the Avro schema the decoder reads.
func (d *Decoder) Schema() hamba.Schema { return d.schema }

// errCorrupt is a datum that does not match the schema.
var errCorrupt = errors.New("the record is not an Avro datum of the table's schema")

// Decode implements formats.Decoder. An empty record is a NULL row: Flink's
// deserializer returns null for it, which the connector drops.
func (d *Decoder) Decode(data []byte, row types.Row) error {
	if len(data) == 0 {
		return formats.ErrSkipRecord
	}
	if len(row) < len(d.root.fields) {
		return fmt.Errorf("avro: row has %d slots for %d columns", len(row), len(d.root.fields))
	}
	r := d.r.Reset(data)
	r.Error = nil
	remaining := len(data)
	for i, f := range d.root.fields {
		v, err := decodeValue(r, f, remaining, 0)
		if err == nil && r.Error != nil {
			err = r.Error
		}
		if err != nil {
			clear(row[:len(d.root.fields)])
			return fmt.Errorf("Failed to deserialize Avro record: field %s: %w", d.root.t.Fields[i].Name, err)
		}
		row[i] = v
	}
	return nil
}

func decodeValue(r *hamba.Reader, n *node, size, depth int) (types.Value, error) {
	if depth > maxDepth {
		return types.Value{}, errCorrupt
	}
	if n.nullable {
		switch idx := r.ReadLong(); idx {
		case 0:
			return types.Value{}, nil
		case 1:
		default:
			if r.Error != nil {
				return types.Value{}, r.Error
			}
			return types.Value{}, fmt.Errorf("%w: union branch %d of [null, %s]", errCorrupt, idx, n.t)
		}
	}
	switch n.root {
	case types.RootBoolean:
		return types.Bool(r.ReadBool()), nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootDate, types.RootTime:
		return types.Int(int64(r.ReadInt())), nil
	case types.RootBigInt:
		return types.Int(r.ReadLong()), nil
	case types.RootFloat:
		return types.Float(float64(r.ReadFloat())), nil
	case types.RootDouble:
		return types.Float(r.ReadDouble()), nil
	case types.RootChar, types.RootVarChar:
		// The reader's strings live in memory of their own (a slab it
		// never reuses), not in data.
		return types.String(r.ReadString()), nil
	case types.RootBinary, types.RootVarBinary:
		return types.Bytes(r.ReadBytes()), nil
	case types.RootDecimal:
		b := r.ReadBytes()
		if r.Error != nil {
			return types.Value{}, r.Error
		}
		return decimalFromTwosComplement(b, n.scale), nil
	case types.RootTimestamp, types.RootTimestampLTZ:
		v := r.ReadLong()
		if n.micros {
			ms, us := v/1000, v%1000
			if us < 0 {
				ms, us = ms-1, us+1000
			}
			return types.Timestamp(ms, int32(us*1000)), nil
		}
		return types.TimestampMillis(v), nil
	case types.RootArray:
		var elems []types.Value
		for {
			count, _ := r.ReadBlockHeader()
			if r.Error != nil {
				return types.Value{}, r.Error
			}
			if count == 0 {
				break
			}
			if count < 0 || count > int64(size) {
				return types.Value{}, fmt.Errorf("%w: array block of %d items in a record of %d bytes", errCorrupt, count, size)
			}
			for ; count > 0; count-- {
				v, err := decodeValue(r, n.elem, size, depth+1)
				if err != nil {
					return types.Value{}, err
				}
				if r.Error != nil {
					return types.Value{}, r.Error
				}
				elems = append(elems, v)
			}
		}
		if elems == nil {
			elems = []types.Value{}
		}
		return types.ArrayValue(elems), nil
	case types.RootMap, types.RootMultiset:
		var keys, vals []types.Value
		for {
			count, _ := r.ReadBlockHeader()
			if r.Error != nil {
				return types.Value{}, r.Error
			}
			if count == 0 {
				break
			}
			if count < 0 || count > int64(size) {
				return types.Value{}, fmt.Errorf("%w: map block of %d entries in a record of %d bytes", errCorrupt, count, size)
			}
			for ; count > 0; count-- {
				k := types.String(r.ReadString())
				v, err := decodeValue(r, n.value, size, depth+1)
				if err != nil {
					return types.Value{}, err
				}
				if r.Error != nil {
					return types.Value{}, r.Error
				}
				keys, vals = append(keys, k), append(vals, v)
			}
		}
		return types.Value{K: types.KindMap, X: &types.MapValue{Keys: keys, Values: vals}}, nil
	case types.RootRow:
		row := make(types.Row, len(n.fields))
		for i, f := range n.fields {
			v, err := decodeValue(r, f, size, depth+1)
			if err != nil {
				return types.Value{}, err
			}
			row[i] = v
		}
		return types.RowValue(row), nil
	}
	return types.Value{}, fmt.Errorf("Unsupported type: %s", n.t)
}

// decimalFromTwosComplement reads Avro's decimal: the unscaled value as a
// big-endian two's-complement integer.
func decimalFromTwosComplement(b []byte, scale int) types.Value {
	if len(b) <= 8 {
		var u int64
		for _, c := range b {
			u = u<<8 | int64(c)
		}
		if len(b) > 0 && len(b) < 8 && b[0]&0x80 != 0 {
			u -= 1 << (8 * uint(len(b))) // sign-extend
		}
		return types.DecimalFromUnscaled(u, scale)
	}
	x := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return types.DecimalFromBig(x, scale)
}

// Encoder writes a row as one Avro datum. It reuses a writer: one goroutine
// uses it.
type Encoder struct {
	root   *node
	schema hamba.Schema
	w      *hamba.Writer
	dec    []byte // scratch for decimals
}

// Schema returns the Avro schema the encoder writes.
func (e *Encoder) Schema() hamba.Schema { return e.schema }

// Encode implements formats.Encoder.
func (e *Encoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	if len(row) < len(e.root.fields) {
		return dst, fmt.Errorf("avro: row has %d values for %d columns", len(row), len(e.root.fields))
	}
	e.w.Reset(nil)
	for i, f := range e.root.fields {
		if err := e.encodeValue(f, row[i]); err != nil {
			return dst, fmt.Errorf("Failed to serialize row to Avro: field %s: %w", e.root.t.Fields[i].Name, err)
		}
	}
	return append(dst, e.w.Buffer()...), nil
}

func (e *Encoder) encodeValue(n *node, v types.Value) error {
	w := e.w
	if n.nullable {
		if v.IsNull() {
			w.WriteLong(0)
			return nil
		}
		w.WriteLong(1)
	} else if v.IsNull() {
		return fmt.Errorf("NULL for the NOT NULL type %s", n.t)
	}
	switch n.root {
	case types.RootBoolean:
		w.WriteBool(v.Bool())
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootDate, types.RootTime:
		if v.N < math.MinInt32 || v.N > math.MaxInt32 {
			return fmt.Errorf("%d does not fit an Avro int", v.N)
		}
		w.WriteInt(int32(v.N))
	case types.RootBigInt:
		w.WriteLong(v.N)
	case types.RootFloat:
		w.WriteFloat(float32(v.Float()))
	case types.RootDouble:
		w.WriteDouble(v.Float())
	case types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary:
		w.WriteString(v.S)
	case types.RootDecimal:
		b, err := e.decimalBytes(v, n.scale)
		if err != nil {
			return err
		}
		w.WriteBytes(b)
	case types.RootTimestamp, types.RootTimestampLTZ:
		if n.micros {
			w.WriteLong(v.N*1000 + int64(v.Aux)/1000)
		} else {
			w.WriteLong(v.N)
		}
	case types.RootArray:
		elems := v.Array()
		if len(elems) > 0 {
			w.WriteBlockHeader(int64(len(elems)), 0)
			for _, el := range elems {
				if err := e.encodeValue(n.elem, el); err != nil {
					return err
				}
			}
		}
		w.WriteLong(0)
	case types.RootMap, types.RootMultiset:
		m := v.Map()
		if m == nil {
			return fmt.Errorf("value of kind %d is not a %s", v.K, n.t)
		}
		if len(m.Keys) > 0 {
			w.WriteBlockHeader(int64(len(m.Keys)), 0)
			for i, k := range m.Keys {
				if k.IsNull() {
					return errors.New("Avro maps cannot hold a NULL key")
				}
				w.WriteString(k.S)
				if err := e.encodeValue(n.value, m.Values[i]); err != nil {
					return err
				}
			}
		}
		w.WriteLong(0)
	case types.RootRow:
		r := v.RowOf()
		if len(r) < len(n.fields) {
			return fmt.Errorf("ROW value has %d fields, type %s has %d", len(r), n.t, len(n.fields))
		}
		for i, f := range n.fields {
			if err := e.encodeValue(f, r[i]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("Unsupported type: %s", n.t)
	}
	return nil
}

// decimalBytes is the minimal big-endian two's-complement form of v's
// unscaled value at scale.
func (e *Encoder) decimalBytes(v types.Value, scale int) ([]byte, error) {
	if v.K != types.KindDecimal {
		return nil, fmt.Errorf("value of kind %d is not a DECIMAL", v.K)
	}
	if !v.IsBigDecimal() && v.DecimalScale() == scale {
		u := v.N
		n := 8
		for n > 1 {
			top := byte(u >> (8 * uint(n-1)))
			next := byte(u >> (8 * uint(n-2)))
			if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
				n--
				continue
			}
			break
		}
		e.dec = e.dec[:0]
		for i := n - 1; i >= 0; i-- {
			e.dec = append(e.dec, byte(u>>(8*uint(i))))
		}
		return e.dec, nil
	}
	x := v.DecimalBig()
	if d := scale - v.DecimalScale(); d > 0 {
		x.Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil))
	} else if d < 0 {
		x.Quo(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d)), nil))
	}
	return twosComplement(x), nil
}

func twosComplement(x *big.Int) []byte {
	if x.Sign() >= 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -x = 2^n - |x| for the smallest n with a set sign bit.
	n := (x.BitLen() + 8) / 8
	m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*n)), x)
	b := m.Bytes()
	for len(b) < n {
		b = append([]byte{0xff}, b...)
	}
	return b
}
