// Package raw owns Flink's 'raw' format: a single column read from and
// written to the whole record, text in a charset, numbers as fixed-width
// binary in big- or little-endian order, bytes as they are. A NULL value is
// a null record (nil bytes), as a Kafka tombstone.
package raw

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Option keys, without the format prefix.
const (
	OptCharset    = "charset"
	OptEndianness = "endianness"
)

// Factory creates raw decoders and encoders.
type Factory struct{}

// NewFactory returns the 'raw' format factory.
func NewFactory() *Factory { return &Factory{} }

var _ formats.Factory = (*Factory)(nil)

// Identifier implements formats.Factory.
func (*Factory) Identifier() string { return "raw" }

// OptionalOptions implements formats.Factory.
func (*Factory) OptionalOptions() []string { return []string{OptCharset, OptEndianness} }

// charset is a text encoding the format can read and write.
type charset uint8

const (
	utf8Charset charset = iota
	asciiCharset
	latin1Charset
	utf16BECharset
	utf16LECharset
	utf16Charset // decodes a byte-order mark, big-endian without; encodes big-endian with one
)

var charsets = map[string]charset{
	"UTF-8": utf8Charset, "UTF8": utf8Charset,
	"US-ASCII": asciiCharset, "ASCII": asciiCharset,
	"ISO-8859-1": latin1Charset, "ISO8859_1": latin1Charset, "LATIN1": latin1Charset,
	"UTF-16BE": utf16BECharset, "UTF-16LE": utf16LECharset, "UTF-16": utf16Charset,
}

// codec reads and writes the single column.
type codec struct {
	t       types.Type
	charset charset
	order   byteOrder
}

// byteOrder reads and appends fixed-width integers.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func newCodec(c *formats.Context) (*codec, error) {
	for k := range c.Options {
		if k != OptCharset && k != OptEndianness {
			return nil, fmt.Errorf("Unsupported options found for format 'raw'.\n\nUnsupported options:\n\n%s%s\n\nSupported options:\n\n%s%s\n%s%s",
				c.Prefix, k, c.Prefix, OptCharset, c.Prefix, OptEndianness)
		}
	}
	cd := &codec{order: binary.BigEndian}
	if v, ok := c.Options[OptEndianness]; ok {
		switch strings.ToLower(v) {
		case "big-endian":
		case "little-endian":
			cd.order = binary.LittleEndian
		default:
			return nil, fmt.Errorf("Unsupported endianness name: %s. Valid values of '%s%s' option are 'big-endian' and 'little-endian'.",
				v, c.Prefix, OptEndianness)
		}
	}
	if v, ok := c.Options[OptCharset]; ok {
		cs, found := charsets[strings.ToUpper(v)]
		if !found {
			names := make([]string, 0, len(charsets))
			for n := range charsets {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("Unsupported '%s%s' name: %s. Supported charsets are %s.",
				c.Prefix, OptCharset, v, strings.Join(names, ", "))
		}
		cd.charset = cs
	}
	if len(c.Schema) != 1 {
		cols := make([]string, len(c.Schema))
		for i, col := range c.Schema {
			cols[i] = types.QuoteIdent(col.Name) + " " + col.Type.String()
		}
		return nil, fmt.Errorf("The 'raw' format only supports single physical column. However the defined schema contains %d physical columns: [%s]",
			len(c.Schema), strings.Join(cols, ", "))
	}
	cd.t = c.Schema[0].Type
	switch cd.t.Root {
	case types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary, types.RootBoolean,
		types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt, types.RootFloat, types.RootDouble:
	default:
		return nil, fmt.Errorf("The 'raw' format doesn't supports '%s' as column type.", cd.t)
	}
	return cd, nil
}

// CreateDecoder implements formats.Factory. The decoder keeps no state
// between calls and may be shared by goroutines.
func (*Factory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	cd, err := newCodec(c)
	if err != nil {
		return nil, err
	}
	return &Decoder{cd}, nil
}

// CreateEncoder implements formats.Factory. The encoder keeps no state
// between calls and may be shared by goroutines.
func (*Factory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	cd, err := newCodec(c)
	if err != nil {
		return nil, err
	}
	return &Encoder{cd}, nil
}

// Decoder reads the whole record into the single column.
type Decoder struct{ c *codec }

// Decode implements formats.Decoder. A nil record is NULL.
func (d *Decoder) Decode(data []byte, row types.Row) error {
	if len(row) < 1 {
		return fmt.Errorf("raw: row has no slot for the column")
	}
	if data == nil {
		row[0] = types.Value{}
		return nil
	}
	c := d.c
	size := 0
	switch c.t.Root {
	case types.RootChar, types.RootVarChar:
		row[0] = types.String(c.decodeText(data))
		return nil
	case types.RootBinary, types.RootVarBinary:
		row[0] = types.Bytes(data)
		return nil
	case types.RootBoolean, types.RootTinyInt:
		size = 1
	case types.RootSmallInt:
		size = 2
	case types.RootInt, types.RootFloat:
		size = 4
	case types.RootBigInt, types.RootDouble:
		size = 8
	}
	if len(data) != size {
		return fmt.Errorf("Size of data received for deserializing %s type is not %d (got %d bytes: %s).",
			c.t, size, len(data), hexPrefix(data))
	}
	switch c.t.Root {
	case types.RootBoolean:
		row[0] = types.Bool(data[0] != 0)
	case types.RootTinyInt:
		row[0] = types.Int(int64(int8(data[0])))
	case types.RootSmallInt:
		row[0] = types.Int(int64(int16(c.order.Uint16(data))))
	case types.RootInt:
		row[0] = types.Int(int64(int32(c.order.Uint32(data))))
	case types.RootBigInt:
		row[0] = types.Int(int64(c.order.Uint64(data)))
	case types.RootFloat:
		row[0] = types.Float(float64(math.Float32frombits(c.order.Uint32(data))))
	case types.RootDouble:
		row[0] = types.Float(math.Float64frombits(c.order.Uint64(data)))
	}
	return nil
}

func hexPrefix(data []byte) string {
	const max = 16
	if len(data) > max {
		return fmt.Sprintf("%x...", data[:max])
	}
	return fmt.Sprintf("%x", data)
}

// decodeText converts text in the charset to a Go string; malformed input
// becomes U+FFFD, as Java's String constructor does.
func (c *codec) decodeText(data []byte) string {
	switch c.charset {
	case asciiCharset:
		b := make([]rune, 0, len(data))
		for _, x := range data {
			if x >= 0x80 {
				b = append(b, utf8.RuneError)
			} else {
				b = append(b, rune(x))
			}
		}
		return string(b)
	case latin1Charset:
		b := make([]byte, 0, len(data)*2)
		for _, x := range data {
			b = utf8.AppendRune(b, rune(x))
		}
		return string(b)
	case utf16BECharset, utf16LECharset, utf16Charset:
		order := binary.ByteOrder(binary.BigEndian)
		if c.charset == utf16LECharset {
			order = binary.LittleEndian
		}
		if c.charset == utf16Charset && len(data) >= 2 {
			switch {
			case data[0] == 0xFE && data[1] == 0xFF:
				data = data[2:]
			case data[0] == 0xFF && data[1] == 0xFE:
				data, order = data[2:], binary.LittleEndian
			}
		}
		units := make([]uint16, 0, len(data)/2)
		for i := 0; i+1 < len(data); i += 2 {
			units = append(units, order.Uint16(data[i:]))
		}
		s := string(utf16.Decode(units))
		if len(data)%2 == 1 {
			s += "\uFFFD"
		}
		return s
	}
	if utf8.Valid(data) {
		return string(data)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// Encoder writes the single column as the whole record.
type Encoder struct{ c *codec }

// Encode implements formats.Encoder. A NULL value returns nil: the connector
// writes a null record.
func (e *Encoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	if len(row) < 1 {
		return dst, fmt.Errorf("raw: row has no value for the column")
	}
	v := row[0]
	if v.K == types.KindNull {
		return nil, nil
	}
	if dst == nil {
		dst = []byte{} // an empty value is not a null record
	}
	c := e.c
	switch c.t.Root {
	case types.RootChar, types.RootVarChar:
		return c.appendText(dst, v.S), nil
	case types.RootBinary, types.RootVarBinary:
		return append(dst, v.S...), nil
	case types.RootBoolean:
		if v.Bool() {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case types.RootTinyInt:
		return append(dst, byte(v.N)), nil
	case types.RootSmallInt:
		return c.order.AppendUint16(dst, uint16(v.N)), nil
	case types.RootInt:
		return c.order.AppendUint32(dst, uint32(v.N)), nil
	case types.RootBigInt:
		return c.order.AppendUint64(dst, uint64(v.N)), nil
	case types.RootFloat:
		return c.order.AppendUint32(dst, math.Float32bits(float32(v.Float()))), nil
	case types.RootDouble:
		return c.order.AppendUint64(dst, math.Float64bits(v.Float())), nil
	}
	return dst, fmt.Errorf("The 'raw' format doesn't supports '%s' as column type.", c.t)
}

// appendText writes s in the charset; a character it cannot hold becomes
// '?', as Java's String.getBytes does.
func (c *codec) appendText(dst []byte, s string) []byte {
	switch c.charset {
	case asciiCharset, latin1Charset:
		limit := rune(0x80)
		if c.charset == latin1Charset {
			limit = 0x100
		}
		for _, r := range s {
			if r >= limit {
				r = '?'
			}
			dst = append(dst, byte(r))
		}
		return dst
	case utf16BECharset, utf16LECharset, utf16Charset:
		order := byteOrder(binary.BigEndian)
		if c.charset == utf16LECharset {
			order = binary.LittleEndian
		}
		if c.charset == utf16Charset {
			dst = append(dst, 0xFE, 0xFF)
		}
		for _, u := range utf16.Encode([]rune(s)) {
			dst = order.AppendUint16(dst, u)
		}
		return dst
	}
	return append(dst, s...)
}
