package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Codec serializes the values (or keys) of a state. ID names the format;
// it is recorded with the state's declaration and a state restored from a
// snapshot written with another ID is refused, so a format change cannot
// silently misread old state.
type Codec[T any] interface {
	ID() string
	// Append appends the encoding of v to dst.
	Append(dst []byte, v T) []byte
	// Decode decodes src. The result may alias src, which stays valid only
	// until the next call on the Backend; codecs of types that outlive it
	// copy.
	Decode(src []byte) (T, error)
}

// OrderedCodec is a Codec whose encodings sort, as bytes, in the order of
// the values: the key codec of a SortedMapState.
type OrderedCodec[T any] interface {
	Codec[T]
	// OrderPreserving marks the codec; it is never called.
	OrderPreserving()
}

// Bytes is the identity codec. Decoded slices alias the backend's memory.
type Bytes struct{}

func (Bytes) ID() string                         { return "bytes" }
func (Bytes) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (Bytes) Decode(src []byte) ([]byte, error)  { return src, nil }
func (Bytes) OrderPreserving()                   {}

// String encodes a string as its bytes; decoding copies.
type String struct{}

func (String) ID() string                         { return "string" }
func (String) Append(dst []byte, v string) []byte { return append(dst, v...) }
func (String) Decode(src []byte) (string, error)  { return string(src), nil }
func (String) OrderPreserving()                   {}

// Int64 encodes an int64 in 8 bytes, big-endian with the sign bit flipped,
// so encodings sort like the numbers.
type Int64 struct{}

func (Int64) ID() string { return "int64" }
func (Int64) Append(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}
func (Int64) Decode(src []byte) (int64, error) {
	if len(src) != 8 {
		return 0, fmt.Errorf("int64: %d bytes, want 8", len(src))
	}
	return int64(binary.BigEndian.Uint64(src) ^ (1 << 63)), nil
}
func (Int64) OrderPreserving() {}

// Float64 encodes a float64 in 8 bytes so that encodings sort like the
// numbers (negative values with all bits flipped, others with the sign
// bit set); NaN sorts after +Inf.
type Float64 struct{}

func (Float64) ID() string { return "float64" }
func (Float64) Append(dst []byte, v float64) []byte {
	b := math.Float64bits(v)
	if b&(1<<63) != 0 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return binary.BigEndian.AppendUint64(dst, b)
}
func (Float64) Decode(src []byte) (float64, error) {
	if len(src) != 8 {
		return 0, errors.New("float64: want 8 bytes")
	}
	b := binary.BigEndian.Uint64(src)
	if b&(1<<63) != 0 {
		b &^= 1 << 63
	} else {
		b = ^b
	}
	return math.Float64frombits(b), nil
}
func (Float64) OrderPreserving() {}
