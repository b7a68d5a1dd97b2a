// Package formats owns the contract for serialization formats (json, csv,
// raw, …): factories found by the 'format' option, schema-driven decoders
// that write straight into row slots, encoders that append to a caller's
// buffer, and the registry. Each format lives in a subpackage.
package formats

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

// ErrSkipRecord is returned (wrapped or not) by a decoder that was told to
// ignore parse errors and dropped the record; the caller counts it.
var ErrSkipRecord = errors.New("record skipped")

// Context is what a format factory is given.
type Context struct {
	// Options are the format's own options with the prefix removed: for
	// 'json.fail-on-missing-field' the key is 'fail-on-missing-field'.
	Options map[string]string
	// Prefix is the option prefix the options were given under ("json.",
	// "key.json.", "value.csv."), for error messages.
	Prefix string
	// Schema lists the fields the decoder fills / the encoder writes, in order.
	Schema types.Schema
	// Loc is the session time zone (for TIMESTAMP_LTZ text forms).
	Loc *time.Location
	// Metadata lists the metadata keys (of the factory's
	// MetadataFormat.ReadableMetadata) a decoder fills after the Schema
	// slots, in order. Empty for formats without metadata.
	Metadata []string
}

// Decoder turns one record into one row. row has len(Schema) slots, all
// NULL on entry. Strings it stores must not alias data.
type Decoder interface {
	Decode(data []byte, row types.Row) error
}

// Encoder appends the serialized form of row to dst.
type Encoder interface {
	Encode(dst []byte, row types.Row) ([]byte, error)
}

// ChangelogDecoder is implemented by the decoders of changelog formats
// (debezium-json, canal-json, maxwell-json), whose records are change
// events: one record is zero or more rows, each with its kind (an update
// event is a -U row and a +U row).
type ChangelogDecoder interface {
	// DecodeChangelog decodes one record and calls emit once per row, in
	// order, after the whole record was read (a bad record emits nothing).
	// The row has len(Schema) + len(Metadata) slots: the columns, then the
	// requested metadata. It is the decoder's, valid only during the call:
	// the caller copies what it keeps. An empty record (a Kafka tombstone)
	// emits nothing and is no error. A record dropped under
	// ignore-parse-errors returns ErrSkipRecord.
	DecodeChangelog(data []byte, emit func(kind types.RowKind, row types.Row)) error
}

// ChangelogEncoder is implemented by the encoders of changelog formats:
// the row's kind is part of the record.
type ChangelogEncoder interface {
	EncodeChangelog(dst []byte, kind types.RowKind, row types.Row) ([]byte, error)
}

// ChangelogFormat is implemented by factories of formats whose records carry
// row kinds. Their decoders implement ChangelogDecoder, their encoders
// ChangelogEncoder. A factory that does not implement it is insert-only.
type ChangelogFormat interface {
	// DecodingChangelogMode is what the decoders produce.
	DecodingChangelogMode() types.ChangelogMode
	// EncodingChangelogMode is what the encoders accept.
	EncodingChangelogMode() types.ChangelogMode
}

// MetadataFormat is implemented by factories whose decoders can read
// metadata of a record (e.g. debezium-json's source.table). Connectors
// expose them with the prefix "value." (Flink's format metadata).
type MetadataFormat interface {
	ReadableMetadata() map[string]types.Type
	// MetadataKeys lists the keys in the order Flink documents them.
	MetadataKeys() []string
}

// DecodingMode returns the changelog mode of f's decoders.
func DecodingMode(f Factory) types.ChangelogMode {
	if c, ok := f.(ChangelogFormat); ok {
		return c.DecodingChangelogMode()
	}
	return types.InsertOnly
}

// EncodingMode returns the changelog mode f's encoders accept.
func EncodingMode(f Factory) types.ChangelogMode {
	if c, ok := f.(ChangelogFormat); ok {
		return c.EncodingChangelogMode()
	}
	return types.InsertOnly
}

// Factory creates decoders and encoders for one format identifier.
type Factory interface {
	Identifier() string
	// OptionalOptions lists the format's option keys, without prefix.
	OptionalOptions() []string
	CreateDecoder(c *Context) (Decoder, error)
	CreateEncoder(c *Context) (Encoder, error)
}

// Registry maps format identifiers to factories. Built once, then read-only.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a factory; a duplicate identifier is a programming error.
func (r *Registry) Register(f Factory) {
	if _, dup := r.factories[f.Identifier()]; dup {
		panic("formats: duplicate factory " + f.Identifier())
	}
	r.factories[f.Identifier()] = f
}

// Identifiers returns the registered format identifiers, sorted.
func (r *Registry) Identifiers() []string {
	ids := make([]string, 0, len(r.factories))
	for id := range r.factories {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the factory for identifier or an error naming the available ones.
func (r *Registry) Lookup(identifier string) (Factory, error) {
	if f, ok := r.factories[identifier]; ok {
		return f, nil
	}
	ids := r.Identifiers()
	return nil, fmt.Errorf("Could not find any format factory for identifier '%s' in the classpath.\n\nAvailable factory identifiers are:\n\n%s",
		identifier, strings.Join(ids, "\n"))
}
