// Package json owns Flink's 'json' format: options and their validation, a
// schema-driven decoder that scans one JSON object straight into the slots of
// a row (no generic maps, no reflection), and an encoder that appends a row
// as a JSON object to a caller's buffer without allocating for scalar rows.
//
// The semantics follow Flink 1.20's JsonParser-based deserializer and its
// JsonRowDataSerializationSchema: lenient conversions (numbers from strings,
// strings from any JSON value), per-field NULLs under ignore-parse-errors,
// DECIMAL written as Jackson writes a BigDecimal, and TIMESTAMP text in the
// 'SQL' or 'ISO-8601' standard.
package json

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Option keys, without the format prefix.
const (
	OptFailOnMissingField      = "fail-on-missing-field"
	OptIgnoreParseErrors       = "ignore-parse-errors"
	OptTimestampFormatStandard = "timestamp-format.standard"
	OptMapNullKeyMode          = "map-null-key.mode"
	OptMapNullKeyLiteral       = "map-null-key.literal"
	OptEncodeDecimalAsPlain    = "encode.decimal-as-plain-number"
	OptEncodeIgnoreNullFields  = "encode.ignore-null-fields"
	OptDecodeJSONParserEnabled = "decode.json-parser.enabled"
)

var optionalOptions = []string{
	OptFailOnMissingField,
	OptIgnoreParseErrors,
	OptTimestampFormatStandard,
	OptMapNullKeyMode,
	OptMapNullKeyLiteral,
	OptEncodeDecimalAsPlain,
	OptEncodeIgnoreNullFields,
	OptDecodeJSONParserEnabled,
}

// Factory creates json decoders and encoders.
type Factory struct{}

// NewFactory returns the 'json' format factory.
func NewFactory() *Factory { return &Factory{} }

var _ formats.Factory = (*Factory)(nil)

// Identifier implements formats.Factory.
func (*Factory) Identifier() string { return "json" }

// OptionalOptions implements formats.Factory.
func (*Factory) OptionalOptions() []string {
	return append([]string(nil), optionalOptions...)
}

// mapNullKeyMode is how the encoder treats a NULL map key.
type mapNullKeyMode uint8

const (
	nullKeyFail mapNullKeyMode = iota
	nullKeyDrop
	nullKeyLiteral
)

// config holds the parsed options.
type config struct {
	prefix         string
	failOnMissing  bool
	ignoreErrors   bool
	iso8601        bool
	nullKeyMode    mapNullKeyMode
	nullKeyLiteral string
	plainDecimal   bool
	ignoreNulls    bool
}

func parseConfig(c *formats.Context) (*config, error) {
	cfg := &config{prefix: c.Prefix, nullKeyLiteral: "null"}
	known := map[string]bool{}
	for _, k := range optionalOptions {
		known[k] = true
	}
	var unknown []string
	for k := range c.Options {
		if !known[k] {
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
		return nil, fmt.Errorf("Unsupported options found for format 'json'.\n\nUnsupported options:\n\n%s\n\nSupported options:\n\n%s",
			strings.Join(unknown, "\n"), strings.Join(supported, "\n"))
	}
	var err error
	boolOpt := func(key string, dst *bool) {
		if err != nil {
			return
		}
		*dst, err = boolOption(c, key, *dst)
	}
	var parserEnabled = true
	boolOpt(OptFailOnMissingField, &cfg.failOnMissing)
	boolOpt(OptIgnoreParseErrors, &cfg.ignoreErrors)
	boolOpt(OptEncodeDecimalAsPlain, &cfg.plainDecimal)
	boolOpt(OptEncodeIgnoreNullFields, &cfg.ignoreNulls)
	boolOpt(OptDecodeJSONParserEnabled, &parserEnabled) // both of Flink's decoders behave alike here
	if err != nil {
		return nil, err
	}
	if v, ok := c.Options[OptTimestampFormatStandard]; ok {
		switch v {
		case "SQL":
		case "ISO-8601":
			cfg.iso8601 = true
		default:
			return nil, fmt.Errorf("Unsupported value '%s' for %s%s. Supported values are [SQL, ISO-8601].",
				v, c.Prefix, OptTimestampFormatStandard)
		}
	}
	if v, ok := c.Options[OptMapNullKeyMode]; ok {
		switch strings.ToUpper(v) {
		case "FAIL":
		case "DROP":
			cfg.nullKeyMode = nullKeyDrop
		case "LITERAL":
			cfg.nullKeyMode = nullKeyLiteral
		default:
			return nil, fmt.Errorf("Unsupported value '%s' for option %s%s. Supported values are [FAIL, DROP, LITERAL].",
				v, c.Prefix, OptMapNullKeyMode)
		}
	}
	if v, ok := c.Options[OptMapNullKeyLiteral]; ok {
		cfg.nullKeyLiteral = v
	}
	return cfg, nil
}

// CreateDecoder implements formats.Factory. The decoder keeps no state
// between calls and may be shared by goroutines.
func (*Factory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	cfg, err := parseConfig(c)
	if err != nil {
		return nil, err
	}
	if cfg.failOnMissing && cfg.ignoreErrors {
		return nil, fmt.Errorf("%s%s and %s%s shouldn't both be true.",
			c.Prefix, OptFailOnMissingField, c.Prefix, OptIgnoreParseErrors)
	}
	root, err := compileSchema(c.Schema)
	if err != nil {
		return nil, err
	}
	return &Decoder{cfg: cfg, root: root}, nil
}

// CreateEncoder implements formats.Factory. The encoder keeps no state
// between calls and may be shared by goroutines.
func (*Factory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	cfg, err := parseConfig(c)
	if err != nil {
		return nil, err
	}
	root, err := compileSchema(c.Schema)
	if err != nil {
		return nil, err
	}
	return &Encoder{cfg: cfg, root: root}, nil
}

// node is one type of the schema, compiled once for decoding and encoding.
type node struct {
	t     types.Type
	root  types.Root
	elem  *node // ARRAY element; MAP and MULTISET key
	value *node // MAP value; MULTISET count (INT)

	// ROW only.
	fields      []node
	names       []string
	quotedNames []string       // `"name":`, escaped, for the encoder
	index       map[string]int // for rows too wide for a linear scan
}

var multisetCount = types.Type{Root: types.RootInt, NotNull: true}

func compileSchema(s types.Schema) (*node, error) {
	fs := make([]types.Field, len(s))
	for i, c := range s {
		fs[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return compile(types.RowType(fs...))
}

func compile(t types.Type) (*node, error) {
	n := &node{t: t, root: t.Root}
	switch t.Root {
	case types.RootNull, types.RootBoolean, types.RootTinyInt, types.RootSmallInt, types.RootInt,
		types.RootBigInt, types.RootFloat, types.RootDouble, types.RootDecimal, types.RootChar,
		types.RootVarChar, types.RootBinary, types.RootVarBinary, types.RootDate, types.RootTime,
		types.RootTimestamp, types.RootTimestampLTZ, types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return n, nil
	case types.RootArray:
		if t.Elem == nil {
			return nil, fmt.Errorf("Unsupported type: %s", t)
		}
		e, err := compile(*t.Elem)
		if err != nil {
			return nil, err
		}
		n.elem = e
		return n, nil
	case types.RootMap, types.RootMultiset:
		if t.Elem == nil || (t.Root == types.RootMap && t.Value == nil) {
			return nil, fmt.Errorf("Unsupported type: %s", t)
		}
		if !t.Elem.IsString() {
			return nil, fmt.Errorf("JSON format doesn't support non-string as key type of map. The type is: %s", t)
		}
		k, err := compile(*t.Elem)
		if err != nil {
			return nil, err
		}
		vt := multisetCount
		if t.Root == types.RootMap {
			vt = *t.Value
		}
		v, err := compile(vt)
		if err != nil {
			return nil, err
		}
		n.elem, n.value = k, v
		return n, nil
	case types.RootRow:
		n.fields = make([]node, len(t.Fields))
		n.names = make([]string, len(t.Fields))
		n.quotedNames = make([]string, len(t.Fields))
		for i, f := range t.Fields {
			c, err := compile(f.Type)
			if err != nil {
				return nil, err
			}
			n.fields[i] = *c
			n.names[i] = f.Name
			n.quotedNames[i] = string(appendString(nil, f.Name)) + ":"
		}
		if len(t.Fields) > linearLookupMax {
			n.index = make(map[string]int, len(t.Fields))
			for i := len(t.Fields) - 1; i >= 0; i-- { // the first of duplicate names wins
				n.index[t.Fields[i].Name] = i
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("Unsupported type: %s", t)
}

// linearLookupMax is the widest row whose field names are found by
// comparing names in order rather than through a map; comparing a few short
// names beats hashing.
const linearLookupMax = 12

// lookup returns the index of the field named key, trying hint first
// (records usually list fields in schema order), or -1.
func (n *node) lookup(key []byte, hint int) int {
	if hint < len(n.names) && n.names[hint] == string(key) {
		return hint
	}
	if n.index != nil {
		if i, ok := n.index[string(key)]; ok {
			return i
		}
		return -1
	}
	for i, name := range n.names {
		if name == string(key) {
			return i
		}
	}
	return -1
}

// boolOption reads a boolean option as Flink does (true/false in any case).
func boolOption(c *formats.Context, key string, def bool) (bool, error) {
	v, ok := c.Options[key]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("Could not parse value '%s' for key '%s%s'. Supported values are [true, false].", v, c.Prefix, key)
}
