package connectors

import (
	"fmt"
	"github.com/flinksql/flinksql/units"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// WatermarkOptions are the source options the planner interprets itself
// (watermark emission, idleness and alignment); every source accepts them.
var WatermarkOptions = []string{
	"scan.watermark.emit.strategy",
	"scan.watermark.idle-timeout",
	"scan.watermark.alignment.group",
	"scan.watermark.alignment.max-drift",
	"scan.watermark.alignment.update-interval",
}

// ValidateOptions checks a table's WITH options against a factory, the way
// Flink's FactoryUtil does: every required option must be present and no
// option may be unknown. The options of the formats named by formatKeys
// ("format", "key.format", "value.format") are checked against those
// formats' factories under their prefixes ("json.", "key.json.", …). A '#'
// segment of a declared key stands for the name of a physical column. Sources
// also accept WatermarkOptions.
func ValidateOptions(tc *TableContext, f Factory, formatKeys ...string) error {
	optional := f.OptionalOptions()
	if _, ok := f.(SourceFactory); ok {
		optional = append(append([]string(nil), optional...), WatermarkOptions...)
	}
	return ValidateOptionKeys(tc, f.Identifier(), f.RequiredOptions(), optional, formatKeys...)
}

// ValidateOptionKeys is ValidateOptions with explicit key lists, for
// connectors whose accepted keys depend on the table (datagen accepts per
// column only the options that fit the column's type).
func ValidateOptionKeys(tc *TableContext, identifier string, required, optional []string, formatKeys ...string) error {
	columns := tc.Physical.Names()
	var missing []string
	for _, key := range expandKeys(required, columns) {
		if _, ok := tc.Options[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("One or more required options are missing.\n\nMissing required options are:\n\n%s",
			strings.Join(missing, "\n"))
	}

	supported := map[string]bool{"connector": true}
	for _, key := range expandKeys(required, columns) {
		supported[key] = true
	}
	for _, key := range expandKeys(optional, columns) {
		supported[key] = true
	}
	for _, formatKey := range formatKeys {
		id, ok := tc.Options[formatKey]
		if !ok {
			continue
		}
		supported[formatKey] = true
		ff, err := lookupFormat(tc, id)
		if err != nil {
			return err
		}
		prefix := FormatPrefix(formatKey, id)
		for _, opt := range ff.OptionalOptions() {
			supported[prefix+opt] = true
		}
	}

	var unsupported []string
	for key := range tc.Options {
		if !supported[key] {
			unsupported = append(unsupported, key)
		}
	}
	if len(unsupported) == 0 {
		return nil
	}
	sort.Strings(unsupported)
	all := make([]string, 0, len(supported))
	for key := range supported {
		all = append(all, key)
	}
	sort.Strings(all)
	return fmt.Errorf("Unsupported options found for '%s'.\n\nUnsupported options:\n\n%s\n\nSupported options:\n\n%s",
		identifier, strings.Join(unsupported, "\n"), strings.Join(all, "\n"))
}

// expandKeys replaces a '#' segment by each column name.
func expandKeys(keys, columns []string) []string {
	out := make([]string, 0, len(keys))
	for _, key := range keys {
		if !strings.Contains(key, "#") {
			out = append(out, key)
			continue
		}
		for _, c := range columns {
			out = append(out, strings.ReplaceAll(key, "#", c))
		}
	}
	return out
}

func lookupFormat(tc *TableContext, id string) (formats.Factory, error) {
	if tc.Formats == nil {
		return nil, fmt.Errorf("table %s: no format registry to resolve format '%s'", tc.Name, id)
	}
	return tc.Formats.Lookup(id)
}

// FormatPrefix returns the prefix under which the options of format id are
// given for the format option formatKey: "json." for "format",
// "key.json." for "key.format", "value.json." for "value.format".
func FormatPrefix(formatKey, id string) string {
	return strings.TrimSuffix(formatKey, "format") + id + "."
}

// formatContext collects the options of the format named by formatKey.
func formatContext(tc *TableContext, formatKey string, schema types.Schema) (formats.Factory, *formats.Context, error) {
	id, ok := tc.Options[formatKey]
	if !ok {
		return nil, nil, fmt.Errorf("Table options do not contain an option key '%s' for discovering a format.", formatKey)
	}
	ff, err := lookupFormat(tc, id)
	if err != nil {
		return nil, nil, err
	}
	prefix := FormatPrefix(formatKey, id)
	opts := map[string]string{}
	for k, v := range tc.Options {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			opts[rest] = v
		}
	}
	loc := tc.Loc
	if loc == nil {
		loc = time.UTC
	}
	return ff, &formats.Context{Options: opts, Prefix: prefix, Schema: schema, Loc: loc}, nil
}

// FormatFactory returns the factory of the format named by the option
// formatKey (e.g. to ask for its changelog mode or metadata).
func FormatFactory(tc *TableContext, formatKey string) (formats.Factory, error) {
	id, ok := tc.Options[formatKey]
	if !ok {
		return nil, fmt.Errorf("Table options do not contain an option key '%s' for discovering a format.", formatKey)
	}
	return lookupFormat(tc, id)
}

// CreateDecoder creates a decoder of the format named by the option
// formatKey, given that format's options with their prefix removed.
func CreateDecoder(tc *TableContext, formatKey string, schema types.Schema) (formats.Decoder, error) {
	return CreateDecoderWithMetadata(tc, formatKey, schema, nil)
}

// CreateDecoderWithMetadata is CreateDecoder for a decoder that also fills
// the given metadata keys of a formats.MetadataFormat after the schema's
// slots.
func CreateDecoderWithMetadata(tc *TableContext, formatKey string, schema types.Schema, metadata []string) (formats.Decoder, error) {
	ff, fc, err := formatContext(tc, formatKey, schema)
	if err != nil {
		return nil, err
	}
	fc.Metadata = metadata
	d, err := ff.CreateDecoder(fc)
	if err != nil {
		return nil, fmt.Errorf("table %s: format '%s': %w", tc.Name, ff.Identifier(), err)
	}
	return d, nil
}

// CreateEncoder creates an encoder of the format named by the option
// formatKey, given that format's options with their prefix removed.
func CreateEncoder(tc *TableContext, formatKey string, schema types.Schema) (formats.Encoder, error) {
	ff, fc, err := formatContext(tc, formatKey, schema)
	if err != nil {
		return nil, err
	}
	e, err := ff.CreateEncoder(fc)
	if err != nil {
		return nil, fmt.Errorf("table %s: format '%s': %w", tc.Name, ff.Identifier(), err)
	}
	return e, nil
}

// Options reads typed values from a table's WITH options. Each getter returns
// def when the key is absent and an error naming the key, the expected form
// and the given text when the value does not parse.
type Options map[string]string

// Has reports whether key is set.
func (o Options) Has(key string) bool { _, ok := o[key]; return ok }

// String returns the value of key, or def.
func (o Options) String(key, def string) string {
	if v, ok := o[key]; ok {
		return v
	}
	return def
}

func invalid(key, expected, value string) error {
	return fmt.Errorf("Invalid value for option '%s'. Expected %s, but was: %s", key, expected, value)
}

// Int returns key as a 32-bit integer.
func (o Options) Int(key string, def int) (int, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, invalid(key, "an integer", v)
	}
	return int(n), nil
}

// Long returns key as a 64-bit integer.
func (o Options) Long(key string, def int64) (int64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, invalid(key, "a long integer", v)
	}
	return n, nil
}

// Float returns key as a floating-point number.
func (o Options) Float(key string, def float64) (float64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, invalid(key, "a number", v)
	}
	return f, nil
}

// Bool returns key as a boolean ('true' or 'false', any case).
func (o Options) Bool(key string, def bool) (bool, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(key, "one of [true, false]", v)
}

// Duration returns key parsed with ParseDuration.
func (o Options) Duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, invalid(key, "a duration such as '500 ms', '10 s', '1 min', '2 h' or '1 d'", v)
	}
	return d, nil
}

// MemorySize returns key in bytes, parsed with ParseMemorySize.
func (o Options) MemorySize(key string, def int64) (int64, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := ParseMemorySize(v)
	if err != nil {
		return 0, invalid(key, "a memory size such as '128mb', '1 gb' or '512kb'", v)
	}
	return n, nil
}

// Enum returns key, which must be one of allowed (compared ignoring case;
// the allowed spelling is returned).
func (o Options) Enum(key string, allowed []string, def string) (string, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	for _, a := range allowed {
		if strings.EqualFold(strings.TrimSpace(v), a) {
			return a, nil
		}
	}
	return "", invalid(key, "one of ["+strings.Join(allowed, ", ")+"]", v)
}

// ParseDuration parses Flink's duration syntax (see units.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return units.ParseDuration(s) }

// ParseMemorySize parses Flink's memory size syntax (see
// units.ParseMemorySize).
func ParseMemorySize(s string) (int64, error) { return units.ParseMemorySize(s) }
