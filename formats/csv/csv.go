// Package csv owns Flink's 'csv' format: options and their validation, a
// decoder that splits one record (a line without its line break) into fields
// by position and converts them straight into the row's slots, and an
// encoder that appends one record, quoting fields the way Flink's Jackson
// CSV writer does.
//
// The semantics follow Flink 1.20's CsvRowDataDeserializationSchema and
// CsvRowDataSerializationSchema: fields map to columns by position, nested
// ROW and ARRAY columns are split by the array element delimiter, lenient
// Java number parsing, TIMESTAMP in the SQL text form.
package csv

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Option keys, without the format prefix.
const (
	OptFieldDelimiter           = "field-delimiter"
	OptDisableQuoteCharacter    = "disable-quote-character"
	OptQuoteCharacter           = "quote-character"
	OptAllowComments            = "allow-comments"
	OptIgnoreParseErrors        = "ignore-parse-errors"
	OptArrayElementDelimiter    = "array-element-delimiter"
	OptEscapeCharacter          = "escape-character"
	OptNullLiteral              = "null-literal"
	OptWriteBigDecimalScientifc = "write-bigdecimal-in-scientific-notation"
)

var optionalOptions = []string{
	OptFieldDelimiter,
	OptDisableQuoteCharacter,
	OptQuoteCharacter,
	OptAllowComments,
	OptIgnoreParseErrors,
	OptArrayElementDelimiter,
	OptEscapeCharacter,
	OptNullLiteral,
	OptWriteBigDecimalScientifc,
}

// Factory creates csv decoders and encoders.
type Factory struct{}

// NewFactory returns the 'csv' format factory.
func NewFactory() *Factory { return &Factory{} }

var _ formats.Factory = (*Factory)(nil)

// Identifier implements formats.Factory.
func (*Factory) Identifier() string { return "csv" }

// OptionalOptions implements formats.Factory.
func (*Factory) OptionalOptions() []string {
	return append([]string(nil), optionalOptions...)
}

// noChar marks a disabled quote or escape character.
const noChar rune = -1

type config struct {
	delim         rune
	quote         rune
	escape        rune
	arrayDelim    string
	allowComments bool
	ignoreErrors  bool
	nullLiteral   string
	hasNull       bool
	scientific    bool
}

func parseConfig(c *formats.Context) (*config, error) {
	cfg := &config{delim: ',', quote: '"', escape: noChar, arrayDelim: ";", scientific: true}
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
		return nil, fmt.Errorf("Unsupported options found for format 'csv'.\n\nUnsupported options:\n\n%s\n\nSupported options:\n\n%s",
			strings.Join(unknown, "\n"), strings.Join(supported, "\n"))
	}
	var err error
	boolOpt := func(key string, dst *bool) {
		if err == nil {
			*dst, err = boolOption(c, key, *dst)
		}
	}
	disableQuote := false
	boolOpt(OptDisableQuoteCharacter, &disableQuote)
	boolOpt(OptAllowComments, &cfg.allowComments)
	boolOpt(OptIgnoreParseErrors, &cfg.ignoreErrors)
	boolOpt(OptWriteBigDecimalScientifc, &cfg.scientific)
	if err != nil {
		return nil, err
	}
	_, hasQuote := c.Options[OptQuoteCharacter]
	if disableQuote && hasQuote {
		return nil, fmt.Errorf("Format cannot define a quote character and disabled quote character at the same time.")
	}
	if cfg.delim, err = charOption(c, OptFieldDelimiter, cfg.delim, true); err != nil {
		return nil, err
	}
	if cfg.quote, err = charOption(c, OptQuoteCharacter, cfg.quote, false); err != nil {
		return nil, err
	}
	if cfg.escape, err = charOption(c, OptEscapeCharacter, cfg.escape, false); err != nil {
		return nil, err
	}
	arrayDelim, err := charOption(c, OptArrayElementDelimiter, ';', false)
	if err != nil {
		return nil, err
	}
	cfg.arrayDelim = string(arrayDelim)
	if disableQuote {
		cfg.quote = noChar
	}
	if v, ok := c.Options[OptNullLiteral]; ok {
		cfg.nullLiteral, cfg.hasNull = v, true
	}
	return cfg, nil
}

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

// charOption reads an option that must be one character. The field
// delimiter may be written with a Java escape ('\t', '\u0001').
func charOption(c *formats.Context, key string, def rune, unescape bool) (rune, error) {
	v, ok := c.Options[key]
	if !ok {
		return def, nil
	}
	s := v
	if unescape {
		s = unescapeJava(v)
	}
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || size != len(s) || r > 0xFFFF {
		return 0, fmt.Errorf("Option '%s%s' must be a string with single character, but was: %s", c.Prefix, key, v)
	}
	return r, nil
}

// unescapeJava applies the escapes of Java string literals: \t \b \n \r \f
// \' \" \\, octal \0 to \377 and \uXXXX. Unknown escapes are kept as is.
func unescapeJava(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 't':
			b.WriteByte('\t')
		case 'b':
			b.WriteByte('\b')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case '\'', '"', '\\':
			b.WriteByte(e)
		case 'u':
			j := i + 1
			for j < len(s) && s[j] == 'u' {
				j++
			}
			if j+4 <= len(s) {
				if n, err := strconv.ParseUint(s[j:j+4], 16, 32); err == nil {
					b.WriteRune(rune(n))
					i = j + 3
					continue
				}
			}
			b.WriteString(`\u`)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' && n*8+int(s[j]-'0') <= 0377 {
				n = n*8 + int(s[j]-'0')
				j++
			}
			b.WriteRune(rune(n))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

// CreateDecoder implements formats.Factory. The decoder keeps no state
// between calls and may be shared by goroutines.
func (*Factory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	cfg, err := parseConfig(c)
	if err != nil {
		return nil, err
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
	e := &Encoder{cfg: cfg, root: root}
	// Jackson's loose quoting check: any character below the larger of the
	// separator and the quote character needs quotes.
	e.minSafe = max(cfg.delim, cfg.quote) + 1
	return e, nil
}

// node is one column or nested field type.
type node struct {
	t      types.Type
	root   types.Root
	elem   *node  // ARRAY element
	fields []node // ROW fields
	names  []string
}

func compileSchema(s types.Schema) (*node, error) {
	n := &node{root: types.RootRow, fields: make([]node, len(s)), names: make([]string, len(s))}
	fs := make([]types.Field, len(s))
	for i, c := range s {
		f, err := compile(c.Name, c.Type, 1)
		if err != nil {
			return nil, err
		}
		n.fields[i], n.names[i] = *f, c.Name
		fs[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	n.t = types.RowType(fs...)
	return n, nil
}

// compile checks a column type; level 1 is a column, level 2 a field or
// element of a nested ROW or ARRAY, which must be a simple type.
func compile(name string, t types.Type, level int) (*node, error) {
	n := &node{t: t, root: t.Root}
	switch t.Root {
	case types.RootNull, types.RootBoolean, types.RootTinyInt, types.RootSmallInt, types.RootInt,
		types.RootBigInt, types.RootFloat, types.RootDouble, types.RootDecimal, types.RootChar,
		types.RootVarChar, types.RootBinary, types.RootVarBinary, types.RootDate,
		types.RootTimestamp, types.RootTimestampLTZ, types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return n, nil
	case types.RootTime:
		if t.Precision > 3 {
			return nil, fmt.Errorf("Csv does not support TIME type with precision: %d, it only supports precision 0 ~ 3.", t.Precision)
		}
		return n, nil
	case types.RootArray, types.RootRow:
		if level > 1 {
			return nil, fmt.Errorf("Only simple types are supported in the second level nesting of fields '%s' but was: %s", name, t)
		}
		if t.Root == types.RootArray {
			if t.Elem == nil {
				break
			}
			e, err := compile(name, *t.Elem, level+1)
			if err != nil {
				return nil, err
			}
			n.elem = e
			return n, nil
		}
		n.fields = make([]node, len(t.Fields))
		n.names = make([]string, len(t.Fields))
		for i, f := range t.Fields {
			c, err := compile(f.Name, f.Type, level+1)
			if err != nil {
				return nil, err
			}
			n.fields[i], n.names[i] = *c, f.Name
		}
		return n, nil
	}
	return nil, fmt.Errorf("Unsupported type: %s", t)
}
