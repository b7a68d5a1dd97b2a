package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
)

// The binary form of values used by state snapshots: a kind byte, then
// varint integers, length-prefixed strings, and nested values for arrays,
// maps and rows. It is self-describing, so a snapshot can be read without
// the schema, and stable across versions of the engine.

// AppendValue appends the binary form of v to dst.
func AppendValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.K))
	switch v.K {
	case KindNull:
	case KindBool, KindInt:
		dst = binary.AppendVarint(dst, v.N)
	case KindFloat:
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.N))
	case KindDecimal:
		dst = binary.AppendUvarint(dst, uint64(v.Aux))
		if b, ok := v.X.(*big.Int); ok {
			dst = append(dst, 1, byte(b.Sign()+1))
			mag := b.Bytes()
			dst = binary.AppendUvarint(dst, uint64(len(mag)))
			dst = append(dst, mag...)
		} else {
			dst = append(dst, 0)
			dst = binary.AppendVarint(dst, v.N)
		}
	case KindString, KindBytes, KindSymbol:
		dst = binary.AppendUvarint(dst, uint64(len(v.S)))
		dst = append(dst, v.S...)
	case KindTimestamp:
		dst = binary.AppendVarint(dst, v.N)
		dst = binary.AppendUvarint(dst, uint64(v.Aux))
	case KindArray:
		a := v.Array()
		dst = binary.AppendUvarint(dst, uint64(len(a)))
		for _, e := range a {
			dst = AppendValue(dst, e)
		}
	case KindRow:
		r := v.RowOf()
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		for _, e := range r {
			dst = AppendValue(dst, e)
		}
	case KindMap:
		m := v.Map()
		dst = binary.AppendUvarint(dst, uint64(len(m.Keys)))
		for i := range m.Keys {
			dst = AppendValue(dst, m.Keys[i])
			dst = AppendValue(dst, m.Values[i])
		}
	}
	return dst
}

// AppendRow appends the binary form of a row: its length, then its values.
func AppendRow(dst []byte, r Row) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(r)))
	for _, v := range r {
		dst = AppendValue(dst, v)
	}
	return dst
}

var errShort = errors.New("truncated value")

// DecodeValue reads one value from src and returns it with the rest of src.
func DecodeValue(src []byte) (Value, []byte, error) {
	if len(src) == 0 {
		return Value{}, nil, errShort
	}
	k := Kind(src[0])
	src = src[1:]
	var v Value
	v.K = k
	var err error
	switch k {
	case KindNull:
	case KindBool, KindInt:
		v.N, src, err = varint(src)
	case KindFloat:
		if len(src) < 8 {
			return Value{}, nil, errShort
		}
		v.N = int64(binary.BigEndian.Uint64(src))
		src = src[8:]
	case KindDecimal:
		var scale uint64
		if scale, src, err = uvarint(src); err != nil {
			return Value{}, nil, err
		}
		v.Aux = int32(scale)
		if len(src) == 0 {
			return Value{}, nil, errShort
		}
		big := src[0] == 1
		src = src[1:]
		if !big {
			v.N, src, err = varint(src)
			break
		}
		if len(src) == 0 {
			return Value{}, nil, errShort
		}
		sign := int(src[0]) - 1
		var mag []byte
		if mag, src, err = bytesField(src[1:]); err != nil {
			return Value{}, nil, err
		}
		b := newBig(mag, sign)
		return DecimalFromBig(b, int(scale)), src, nil
	case KindString, KindBytes, KindSymbol:
		var s []byte
		s, src, err = bytesField(src)
		v.S = string(s)
	case KindTimestamp:
		if v.N, src, err = varint(src); err != nil {
			return Value{}, nil, err
		}
		var aux uint64
		aux, src, err = uvarint(src)
		v.Aux = int32(aux)
	case KindArray, KindRow:
		var n uint64
		if n, src, err = uvarint(src); err != nil {
			return Value{}, nil, err
		}
		if n > uint64(len(src)) {
			return Value{}, nil, errShort
		}
		elems := make([]Value, n)
		for i := range elems {
			if elems[i], src, err = DecodeValue(src); err != nil {
				return Value{}, nil, err
			}
		}
		if k == KindArray {
			v.X = elems
		} else {
			v.X = Row(elems)
		}
	case KindMap:
		var n uint64
		if n, src, err = uvarint(src); err != nil {
			return Value{}, nil, err
		}
		if n > uint64(len(src)) {
			return Value{}, nil, errShort
		}
		m := &MapValue{Keys: make([]Value, n), Values: make([]Value, n)}
		for i := range m.Keys {
			if m.Keys[i], src, err = DecodeValue(src); err != nil {
				return Value{}, nil, err
			}
			if m.Values[i], src, err = DecodeValue(src); err != nil {
				return Value{}, nil, err
			}
		}
		v.X = m
	default:
		return Value{}, nil, fmt.Errorf("unknown value kind %d", k)
	}
	if err != nil {
		return Value{}, nil, err
	}
	return v, src, nil
}

// DecodeRow reads a row written by AppendRow.
func DecodeRow(src []byte) (Row, []byte, error) {
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src)) {
		return nil, nil, errShort
	}
	r := make(Row, n)
	for i := range r {
		if r[i], src, err = DecodeValue(src); err != nil {
			return nil, nil, err
		}
	}
	return r, src, nil
}

func varint(src []byte) (int64, []byte, error) {
	x, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, errShort
	}
	return x, src[n:], nil
}

func uvarint(src []byte) (uint64, []byte, error) {
	x, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, errShort
	}
	return x, src[n:], nil
}

func bytesField(src []byte) ([]byte, []byte, error) {
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src)) {
		return nil, nil, errShort
	}
	return src[:n], src[n:], nil
}

func newBig(mag []byte, sign int) *big.Int {
	b := new(big.Int).SetBytes(mag)
	if sign < 0 {
		b.Neg(b)
	}
	return b
}
