// Package cdc owns Flink's changelog JSON formats: 'debezium-json',
// 'canal-json' and 'maxwell-json'. Each record is a change event of a
// database table; the decoders turn it into +I/-U/+U/-D rows
// (formats.ChangelogDecoder) and the encoders write a changelog as such
// events (formats.ChangelogEncoder), as Flink 1.20 does: an update becomes a
// delete event of the old row and an insert event of the new one.
//
// The envelope of each format is read by the json package's schema-driven
// decoder with an envelope row type built from the table's columns (the
// 'before'/'after' objects are ROWs of the table's columns), so the value
// conversions, the ignore-parse-errors field semantics and the timestamp
// standard are exactly the json format's.
package cdc

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/json"
	"github.com/flinksql/flinksql/types"
)

// Option keys shared by the three formats, without prefix.
const (
	OptIgnoreParseErrors       = "ignore-parse-errors"
	OptTimestampFormatStandard = "timestamp-format.standard"
	OptMapNullKeyMode          = "map-null-key.mode"
	OptMapNullKeyLiteral       = "map-null-key.literal"
	OptEncodeDecimalAsPlain    = "encode.decimal-as-plain-number"
)

// jsonOptions are the options passed through to the json format that
// reads and writes the envelope.
var jsonOptions = []string{
	OptIgnoreParseErrors,
	OptTimestampFormatStandard,
	OptMapNullKeyMode,
	OptMapNullKeyLiteral,
	OptEncodeDecimalAsPlain,
}

// retractMode is what every changelog format here produces and accepts.
var retractMode = types.Retract

// checkOptions refuses options the format does not know, with Flink's text.
func checkOptions(id string, c *formats.Context, known []string) error {
	var unknown []string
	for k := range c.Options {
		if !contains(known, k) {
			unknown = append(unknown, c.Prefix+k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	supported := make([]string, len(known))
	for i, k := range known {
		supported[i] = c.Prefix + k
	}
	sort.Strings(supported)
	return fmt.Errorf("Unsupported options found for format '%s'.\n\nUnsupported options:\n\n%s\n\nSupported options:\n\n%s",
		id, strings.Join(unknown, "\n"), strings.Join(supported, "\n"))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// boolOption reads a boolean option as Flink does.
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

// envelopeContext is the json format's context for an envelope schema: the
// options json knows, under the same prefix so that its messages name the
// user's keys.
func envelopeContext(c *formats.Context, schema types.Schema, encoding bool) *formats.Context {
	opts := map[string]string{}
	for _, k := range jsonOptions {
		if v, ok := c.Options[k]; ok {
			if !encoding && (k == OptMapNullKeyMode || k == OptMapNullKeyLiteral || k == OptEncodeDecimalAsPlain) {
				continue
			}
			opts[k] = v
		}
	}
	if encoding {
		delete(opts, OptIgnoreParseErrors)
	}
	return &formats.Context{Options: opts, Prefix: c.Prefix, Schema: schema, Loc: c.Loc}
}

// physicalRow is the ROW type of the table's columns, as the 'before',
// 'after' and 'data' objects hold them.
func physicalRow(s types.Schema) types.Type {
	fs := make([]types.Field, len(s))
	for i, c := range s {
		fs[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return types.RowType(fs...)
}

// metadataSlots resolves the requested metadata keys against a format's.
func metadataSlots(id string, c *formats.Context, readable map[string]types.Type, order []string) error {
	for _, k := range c.Metadata {
		if _, ok := readable[k]; !ok {
			return fmt.Errorf("format '%s' has no metadata key '%s'; it has: %s", id, k, strings.Join(order, ", "))
		}
	}
	return nil
}

// mapGet returns the value of key in a MAP value, or NULL.
func mapGet(v types.Value, key string) types.Value {
	m := v.Map()
	if m == nil {
		return types.Value{}
	}
	for i, k := range m.Keys {
		if k.Str() == key {
			return m.Values[i]
		}
	}
	return types.Value{}
}

// millisOf returns a TIMESTAMP_LTZ(3) of epoch milliseconds given as BIGINT
// or as its text (in a MAP<STRING,STRING>), times scale; NULL if absent.
func millisOf(v types.Value, scale int64) (types.Value, error) {
	switch {
	case v.IsNull():
		return types.Value{}, nil
	case v.K == types.KindString:
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64)
		if err != nil {
			return types.Value{}, fmt.Errorf("invalid epoch milliseconds %q: %w", v.Str(), err)
		}
		return types.TimestampMillis(n * scale), nil
	}
	return types.TimestampMillis(v.Int() * scale), nil
}

// fillBefore completes the old row of an update from the new one: canal
// and maxwell list only the changed columns in 'old', so a column absent
// (or NULL) there did not change (Flink's rule).
func fillBefore(before, after types.Row) {
	for i := range before {
		if before[i].IsNull() && i < len(after) {
			before[i] = after[i]
		}
	}
}

// includePattern compiles a Java-Pattern-compatible regular expression
// that must match the whole text, as Flink's matcher().matches() does.
func includePattern(c *formats.Context, key string) (*regexp.Regexp, error) {
	v, ok := c.Options[key]
	if !ok {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + v + ")$")
	if err != nil {
		return nil, fmt.Errorf("Invalid value for option '%s%s'. Expected a regular expression, but was: %s (%v)", c.Prefix, key, v, err)
	}
	return re, nil
}

// newJSONDecoder and newJSONEncoder create the json format's codecs of an
// envelope schema.
func newJSONDecoder(c *formats.Context, schema types.Schema) (formats.Decoder, error) {
	return json.NewFactory().CreateDecoder(envelopeContext(c, schema, false))
}

func newJSONEncoder(c *formats.Context, schema types.Schema) (formats.Encoder, error) {
	return json.NewFactory().CreateEncoder(envelopeContext(c, schema, true))
}

// validateCommon checks the shared options' values once, for both
// directions (the json format checks them again when building codecs).
func validateCommon(c *formats.Context) error {
	if _, err := boolOption(c, OptIgnoreParseErrors, false); err != nil {
		return err
	}
	if _, err := boolOption(c, OptEncodeDecimalAsPlain, false); err != nil {
		return err
	}
	if v, ok := c.Options[OptTimestampFormatStandard]; ok && v != "SQL" && v != "ISO-8601" {
		return fmt.Errorf("Unsupported value '%s' for %s%s. Supported values are [SQL, ISO-8601].", v, c.Prefix, OptTimestampFormatStandard)
	}
	if v, ok := c.Options[OptMapNullKeyMode]; ok {
		switch strings.ToUpper(v) {
		case "FAIL", "DROP", "LITERAL":
		default:
			return fmt.Errorf("Unsupported value '%s' for option %s%s. Supported values are [FAIL, DROP, LITERAL].", v, c.Prefix, OptMapNullKeyMode)
		}
	}
	return nil
}

// recordText quotes a record for an error message, cut to a readable size.
func recordText(data []byte) string {
	const max = 200
	if len(data) > max {
		return strings.ToValidUTF8(string(data[:max]), "\uFFFD") + "..."
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// envelope is what the three JSON changelog formats' factories share: the
// identifier, the options and the metadata each offers, and that each
// reads and writes a retract changelog.
type envelope struct {
	id       string
	options  []string
	metadata map[string]types.Type
	keys     []string // metadata keys in Flink's documented order
}

// Identifier implements formats.Factory.
func (e *envelope) Identifier() string { return e.id }

// OptionalOptions implements formats.Factory.
func (e *envelope) OptionalOptions() []string { return append([]string(nil), e.options...) }

// DecodingChangelogMode implements formats.ChangelogFormat.
func (*envelope) DecodingChangelogMode() types.ChangelogMode { return retractMode }

// EncodingChangelogMode implements formats.ChangelogFormat.
func (*envelope) EncodingChangelogMode() types.ChangelogMode { return retractMode }

// ReadableMetadata implements formats.MetadataFormat.
func (e *envelope) ReadableMetadata() map[string]types.Type { return e.metadata }

// MetadataKeys implements formats.MetadataFormat.
func (e *envelope) MetadataKeys() []string { return e.keys }

// check validates a decoder's or an encoder's options.
func (e *envelope) check(c *formats.Context) error {
	if err := checkOptions(e.id, c, e.options); err != nil {
		return err
	}
	return validateCommon(c)
}

// decoderOptions is check plus what every decoder takes: whether to skip
// records that do not parse, and the metadata columns asked for.
func (e *envelope) decoderOptions(c *formats.Context) (ignore bool, err error) {
	if err := e.check(c); err != nil {
		return false, err
	}
	ignore, _ = boolOption(c, OptIgnoreParseErrors, false)
	if err := metadataSlots(e.id, c, e.metadata, e.keys); err != nil {
		return false, err
	}
	return ignore, nil
}

// envelopeReader decodes a change event's JSON envelope into env: the
// part the three decoders share, with their error text.
type envelopeReader struct {
	name   string // "Debezium", "Canal", "Maxwell"
	inner  formats.Decoder
	ignore bool
	env    types.Row
}

// read decodes data's envelope into env.
func (r *envelopeReader) read(data []byte) error {
	clear(r.env)
	if err := r.inner.Decode(data, r.env); err != nil {
		if errors.Is(err, formats.ErrSkipRecord) {
			return err
		}
		return r.corrupt(data, err)
	}
	return nil
}

// fail reports an event that decoded but makes no sense, or skips it
// when parse errors are ignored.
func (r *envelopeReader) fail(data []byte, err error) error {
	if r.ignore {
		return formats.ErrSkipRecord
	}
	return r.corrupt(data, err)
}

func (r *envelopeReader) corrupt(data []byte, err error) error {
	return fmt.Errorf("Corrupt %s JSON message '%s'.\nCaused by: %w", r.name, recordText(data), err)
}

// typeEncoder writes the change events of Canal and Maxwell: the row (in
// a one-element array for Canal) and a type, an insert for +I/+U and a
// delete for -U/-D. It keeps no state between calls.
type typeEncoder struct {
	inner          formats.Encoder
	inArray        bool
	insert, delete types.Value
}

var _ formats.ChangelogEncoder = (*typeEncoder)(nil)

// Encode implements formats.Encoder: a row without a kind is an insert.
func (e *typeEncoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	return e.EncodeChangelog(dst, types.Insert, row)
}

// EncodeChangelog implements formats.ChangelogEncoder.
func (e *typeEncoder) EncodeChangelog(dst []byte, kind types.RowKind, row types.Row) ([]byte, error) {
	var one [1]types.Value
	data := types.RowValue(row)
	if e.inArray {
		one[0] = data
		data = types.ArrayValue(one[:])
	}
	env := [2]types.Value{data, e.insert}
	if kind.IsRetract() {
		env[1] = e.delete
	}
	return e.inner.Encode(dst, env[:])
}
