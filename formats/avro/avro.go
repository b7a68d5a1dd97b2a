// Package avro owns Flink's 'avro' format: one Avro datum per record in
// Avro's binary encoding, with the Avro schema derived from the table's
// columns as Flink's AvroSchemaConverter derives it (a nullable type is the
// union ["null", type]; ROW is a record named after its position,
// "record", "record_<field>", …; DECIMAL is bytes with the decimal logical
// type; TIMESTAMP(p ≤ 3) timestamp-millis, TIMESTAMP(p ≤ 6)
// timestamp-micros).
//
// The schema is built and checked with github.com/hamba/avro/v2; records
// are decoded straight into row slots and encoded from them with its
// Reader and Writer primitives, walking a tree compiled once from the
// schema (no generic maps, no reflection).
//
// 'avro-confluent' and 'debezium-avro-confluent' need a Confluent Schema
// Registry; their factories refuse every table with a message saying so.
package avro

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	hamba "github.com/hamba/avro/v2"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Option keys, without the 'avro.' prefix.
const (
	OptEncoding               = "encoding"
	OptCodec                  = "codec"
	OptTimestampMappingLegacy = "timestamp_mapping.legacy"
)

var optionalOptions = []string{OptEncoding, OptCodec, OptTimestampMappingLegacy}

// Factory is the 'avro' format.
type Factory struct{}

// NewFactory returns the 'avro' format factory.
func NewFactory() *Factory { return &Factory{} }

var _ formats.Factory = (*Factory)(nil)

// Identifier implements formats.Factory.
func (*Factory) Identifier() string { return "avro" }

// OptionalOptions implements formats.Factory.
func (*Factory) OptionalOptions() []string { return append([]string(nil), optionalOptions...) }

type config struct {
	legacyTimestamps bool
}

func parseConfig(c *formats.Context) (*config, error) {
	var unknown []string
	for k := range c.Options {
		if !contains(optionalOptions, k) {
			unknown = append(unknown, c.Prefix+k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		supported := make([]string, len(optionalOptions))
		for i, k := range optionalOptions {
			supported[i] = c.Prefix + k
		}
		sort.Strings(supported)
		return nil, fmt.Errorf("Unsupported options found for format 'avro'.\n\nUnsupported options:\n\n%s\n\nSupported options:\n\n%s",
			strings.Join(unknown, "\n"), strings.Join(supported, "\n"))
	}
	cfg := &config{legacyTimestamps: true}
	if v, ok := c.Options[OptEncoding]; ok {
		switch strings.ToLower(v) {
		case "binary":
		case "json":
			return nil, fmt.Errorf("Option '%s%s' = 'json' (Avro's JSON encoding) is not supported yet; use 'binary' (the default)", c.Prefix, OptEncoding)
		default:
			return nil, fmt.Errorf("Invalid value for option '%s%s'. Expected one of [binary, json], but was: %s", c.Prefix, OptEncoding, v)
		}
	}
	if v, ok := c.Options[OptCodec]; ok {
		switch v {
		case "null", "deflate", "snappy", "bzip2", "xz":
			return nil, fmt.Errorf("Option '%s%s' applies to the Avro files of the filesystem connector only, and flinksql does not read or write Avro files yet; remove it (a Kafka record holds one uncompressed datum)", c.Prefix, OptCodec)
		default:
			return nil, fmt.Errorf("Invalid value for option '%s%s'. Expected one of [null, deflate, snappy, bzip2, xz], but was: %s", c.Prefix, OptCodec, v)
		}
	}
	if v, ok := c.Options[OptTimestampMappingLegacy]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
		case "false":
			cfg.legacyTimestamps = false
		default:
			return nil, fmt.Errorf("Could not parse value '%s' for key '%s%s'. Supported values are [true, false].", v, c.Prefix, OptTimestampMappingLegacy)
		}
	}
	return cfg, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// CreateDecoder implements formats.Factory.
func (*Factory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	cfg, err := parseConfig(c)
	if err != nil {
		return nil, err
	}
	root, schema, err := compileSchema(c.Schema, cfg)
	if err != nil {
		return nil, err
	}
	return &Decoder{root: root, schema: schema, r: hamba.NewReader(nil, 0)}, nil
}

// CreateEncoder implements formats.Factory.
func (*Factory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	cfg, err := parseConfig(c)
	if err != nil {
		return nil, err
	}
	root, schema, err := compileSchema(c.Schema, cfg)
	if err != nil {
		return nil, err
	}
	return &Encoder{root: root, schema: schema, w: hamba.NewWriter(nil, 256)}, nil
}

// node is one type of the schema, compiled for decoding and encoding.
type node struct {
	t        types.Type
	root     types.Root
	nullable bool // a union ["null", type]
	micros   bool // TIMESTAMP with precision 4..6
	scale    int  // DECIMAL
	elem     *node
	value    *node // MAP value, MULTISET count
	fields   []*node
}

// compileSchema derives the Avro schema of a table's columns (a record,
// not nullable) and compiles it.
func compileSchema(s types.Schema, cfg *config) (*node, hamba.Schema, error) {
	fs := make([]types.Field, len(s))
	for i, c := range s {
		fs[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	row := types.RowType(fs...)
	row.NotNull = true
	n, js, err := derive(row, "record", cfg, true)
	if err != nil {
		return nil, nil, err
	}
	rec := js.(map[string]any)
	rec["namespace"] = "org.apache.flink.avro.generated"
	text, err := json.Marshal(js)
	if err != nil {
		return nil, nil, err
	}
	schema, err := hamba.Parse(string(text))
	if err != nil {
		return nil, nil, fmt.Errorf("the Avro schema derived from the table's columns is invalid: %w", err)
	}
	return n, schema, nil
}

// derive returns the compiled node of t and its Avro schema as JSON
// values; name names a record.
func derive(t types.Type, name string, cfg *config, top bool) (*node, any, error) {
	n := &node{t: t, root: t.Root, nullable: !t.NotNull && !top}
	var js any
	switch t.Root {
	case types.RootBoolean:
		js = "boolean"
	case types.RootTinyInt, types.RootSmallInt, types.RootInt:
		js = "int"
	case types.RootBigInt:
		js = "long"
	case types.RootFloat:
		js = "float"
	case types.RootDouble:
		js = "double"
	case types.RootChar, types.RootVarChar:
		js = "string"
	case types.RootBinary, types.RootVarBinary:
		js = "bytes"
	case types.RootDecimal:
		n.scale = t.Scale
		js = map[string]any{"type": "bytes", "logicalType": "decimal", "precision": t.Precision, "scale": t.Scale}
	case types.RootDate:
		js = map[string]any{"type": "int", "logicalType": "date"}
	case types.RootTime:
		if t.Precision > 3 {
			return nil, nil, fmt.Errorf("Avro does not support TIME type with precision: %d, it only supports precision less than 3.", t.Precision)
		}
		js = map[string]any{"type": "int", "logicalType": "time-millis"}
	case types.RootTimestamp, types.RootTimestampLTZ:
		if t.Precision > 6 {
			return nil, nil, fmt.Errorf("Avro does not support %s type with precision: %d, it only supports precision less than 6.", timestampName(t), t.Precision)
		}
		n.micros = t.Precision > 3
		logical := "timestamp-millis"
		if n.micros {
			logical = "timestamp-micros"
		}
		if !cfg.legacyTimestamps && t.Root == types.RootTimestamp {
			logical = "local-" + logical // a local date-time, no zone
		}
		js = map[string]any{"type": "long", "logicalType": logical}
	case types.RootArray:
		e, ejs, err := derive(*t.Elem, name, cfg, false)
		if err != nil {
			return nil, nil, err
		}
		n.elem = e
		js = map[string]any{"type": "array", "items": ejs}
	case types.RootMap, types.RootMultiset:
		if !t.Elem.IsString() {
			return nil, nil, fmt.Errorf("Avro format doesn't support non-string as key type of map. The key type is: %s", t.Elem)
		}
		vt := types.Type{Root: types.RootInt, NotNull: true} // a MULTISET's count
		if t.Root == types.RootMap {
			vt = *t.Value
		}
		v, vjs, err := derive(vt, name, cfg, false)
		if err != nil {
			return nil, nil, err
		}
		n.value = v
		js = map[string]any{"type": "map", "values": vjs}
	case types.RootRow:
		fields := make([]any, len(t.Fields))
		for i, f := range t.Fields {
			c, cjs, err := derive(f.Type, name+"_"+f.Name, cfg, false)
			if err != nil {
				return nil, nil, err
			}
			n.fields = append(n.fields, c)
			field := map[string]any{"name": f.Name, "type": cjs}
			if c.nullable {
				field["default"] = nil
			}
			fields[i] = field
		}
		js = map[string]any{"type": "record", "name": name, "fields": fields}
	default:
		return nil, nil, fmt.Errorf("Unsupported to derive Schema for type: %s", t)
	}
	if n.nullable {
		js = []any{"null", js}
	}
	return n, js, nil
}

func timestampName(t types.Type) string {
	if t.Root == types.RootTimestampLTZ {
		return "TIMESTAMP_LTZ"
	}
	return "TIMESTAMP"
}
