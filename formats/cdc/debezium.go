package cdc

import (
	"errors"
	"fmt"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// OptSchemaInclude is 'debezium-json.schema-include': the records carry
// Kafka Connect's {"schema": ..., "payload": ...} envelope.
const OptSchemaInclude = "schema-include"

var debeziumOptions = []string{
	OptSchemaInclude,
	OptIgnoreParseErrors,
	OptTimestampFormatStandard,
	OptMapNullKeyMode,
	OptMapNullKeyLiteral,
	OptEncodeDecimalAsPlain,
}

// Debezium metadata keys (exposed by kafka as 'value.<key>').
const (
	DebeziumSchema             = "schema"
	DebeziumIngestionTimestamp = "ingestion-timestamp"
	DebeziumSourceTimestamp    = "source.timestamp"
	DebeziumSourceDatabase     = "source.database"
	DebeziumSourceSchema       = "source.schema"
	DebeziumSourceTable        = "source.table"
	DebeziumSourceProperties   = "source.properties"
)

var debeziumMetadataKeys = []string{
	DebeziumSchema, DebeziumIngestionTimestamp, DebeziumSourceTimestamp, DebeziumSourceDatabase,
	DebeziumSourceSchema, DebeziumSourceTable, DebeziumSourceProperties,
}

var debeziumMetadata = map[string]types.Type{
	DebeziumSchema:             types.StringType,
	DebeziumIngestionTimestamp: types.TimestampLTZType(3),
	DebeziumSourceTimestamp:    types.TimestampLTZType(3),
	DebeziumSourceDatabase:     types.StringType,
	DebeziumSourceSchema:       types.StringType,
	DebeziumSourceTable:        types.StringType,
	DebeziumSourceProperties:   types.MapType(types.StringType, types.StringType),
}

// DebeziumFactory is the 'debezium-json' format.
type DebeziumFactory struct{ envelope }

// NewDebezium returns the 'debezium-json' format factory.
func NewDebezium() *DebeziumFactory {
	return &DebeziumFactory{envelope{id: "debezium-json", options: debeziumOptions, metadata: debeziumMetadata, keys: debeziumMetadataKeys}}
}

var (
	_ formats.Factory         = (*DebeziumFactory)(nil)
	_ formats.ChangelogFormat = (*DebeziumFactory)(nil)
	_ formats.MetadataFormat  = (*DebeziumFactory)(nil)
)

// Envelope field positions of the decoder's schema.
const (
	dzBefore = iota
	dzAfter
	dzOp
	dzSource
	dzTsMs
	dzFields
)

// CreateDecoder implements formats.Factory.
func (f *DebeziumFactory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	ignore, err := f.decoderOptions(c)
	if err != nil {
		return nil, err
	}
	schemaInclude, err := boolOption(c, OptSchemaInclude, false)
	if err != nil {
		return nil, err
	}
	row := physicalRow(c.Schema)
	payload := types.Schema{
		{Name: "before", Type: row},
		{Name: "after", Type: row},
		{Name: "op", Type: types.StringType},
		// Flink reads 'source' as a map of texts for every source.* key.
		// Fields no metadata needs are skipped, not decoded: the envelope
		// names them only when asked for (the names stay at their
		// positions, a name no record has is never found).
		{Name: "\x00source", Type: types.MapType(types.StringType, types.StringType)},
		{Name: "\x00ts_ms", Type: types.BigIntType},
	}
	for _, k := range c.Metadata {
		switch k {
		case DebeziumIngestionTimestamp:
			payload[dzTsMs].Name = "ts_ms"
		case DebeziumSourceTimestamp, DebeziumSourceDatabase, DebeziumSourceSchema, DebeziumSourceTable, DebeziumSourceProperties:
			payload[dzSource].Name = "source"
		}
	}
	schema := payload
	if schemaInclude {
		fs := make([]types.Field, len(payload))
		for i, col := range payload {
			fs[i] = types.Field{Name: col.Name, Type: col.Type}
		}
		schema = types.Schema{
			{Name: "payload", Type: types.RowType(fs...)},
			{Name: "schema", Type: types.StringType}, // its JSON text
		}
	}
	inner, err := newJSONDecoder(c, schema)
	if err != nil {
		return nil, err
	}
	return &DebeziumDecoder{
		envelopeReader: envelopeReader{name: "Debezium", inner: inner, ignore: ignore, env: make(types.Row, len(schema))},
		schemaInclude:  schemaInclude,
		width:          len(c.Schema), meta: append([]string(nil), c.Metadata...),
		out: make(types.Row, len(c.Schema)+len(c.Metadata)),
	}, nil
}

// DebeziumDecoder decodes Debezium change events. It keeps scratch rows:
// one goroutine uses it.
type DebeziumDecoder struct {
	envelopeReader
	schemaInclude bool
	width         int
	meta          []string
	out           types.Row // the row handed to emit
}

var _ formats.ChangelogDecoder = (*DebeziumDecoder)(nil)

// errReplicaIdentity is Flink's text for an update or delete without the
// old row (a PostgreSQL table without REPLICA IDENTITY FULL).
const errReplicaIdentity = "The \"before\" field of %s message is null, if you are using Debezium Postgres Connector, please check the Postgres table has been set REPLICA IDENTITY to FULL level."

// Decode implements formats.Decoder: a changelog format cannot be read as
// plain rows.
func (d *DebeziumDecoder) Decode([]byte, types.Row) error {
	return errors.New("debezium-json produces a changelog: the connector must read it with DecodeChangelog")
}

// DecodeChangelog implements formats.ChangelogDecoder.
func (d *DebeziumDecoder) DecodeChangelog(data []byte, emit func(types.RowKind, types.Row)) error {
	if len(data) == 0 {
		return nil // a tombstone after a delete
	}
	if err := d.read(data); err != nil {
		return err
	}
	payload := d.env
	if d.schemaInclude {
		payload = d.env[0].RowOf()
		if payload == nil {
			return d.fail(data, fmt.Errorf("the message has no \"payload\" field although '%s' is true", OptSchemaInclude))
		}
	}
	before, after := payload[dzBefore].RowOf(), payload[dzAfter].RowOf()
	op := payload[dzOp]
	if op.IsNull() && !d.schemaInclude && before == nil && after == nil {
		return d.fail(data, errors.New("the message has no \"op\", \"before\" or \"after\" field; if it carries Kafka Connect's schema envelope "+
			"({\"schema\": ..., \"payload\": ...}), set 'debezium-json.schema-include' = 'true'"))
	}
	switch op.Str() {
	case "c", "r":
		if after == nil {
			return d.fail(data, errors.New("the \"after\" field of a create event is null"))
		}
		d.emit(emit, types.Insert, after, payload, data)
	case "u":
		if before == nil {
			return d.fail(data, fmt.Errorf(errReplicaIdentity, "UPDATE"))
		}
		if after == nil {
			return d.fail(data, errors.New("the \"after\" field of an update event is null"))
		}
		d.emit(emit, types.UpdateBefore, before, payload, data)
		d.emit(emit, types.UpdateAfter, after, payload, data)
	case "d":
		if before == nil {
			return d.fail(data, fmt.Errorf(errReplicaIdentity, "DELETE"))
		}
		d.emit(emit, types.Delete, before, payload, data)
	default:
		return d.fail(data, fmt.Errorf("Unknown \"op\" value \"%s\". The Debezium JSON message is '%s'", op.Str(), recordText(data)))
	}
	return nil
}

// fail is a bad event: dropped under ignore-parse-errors, else an error.
func (d *DebeziumDecoder) emit(emit func(types.RowKind, types.Row), kind types.RowKind, row types.Row, payload types.Row, data []byte) {
	out := d.out
	copy(out[:d.width], row)
	for j, k := range d.meta {
		out[d.width+j] = d.metadata(k, payload)
	}
	emit(kind, out)
}

func (d *DebeziumDecoder) metadata(key string, payload types.Row) types.Value {
	src := payload[dzSource]
	switch key {
	case DebeziumSchema:
		if d.schemaInclude {
			return d.env[1]
		}
		return types.Value{}
	case DebeziumIngestionTimestamp:
		v, _ := millisOf(payload[dzTsMs], 1)
		return v
	case DebeziumSourceTimestamp:
		v, err := millisOf(mapGet(src, "ts_ms"), 1)
		if err != nil {
			return types.Value{}
		}
		return v
	case DebeziumSourceDatabase:
		return mapGet(src, "db")
	case DebeziumSourceSchema:
		return mapGet(src, "schema")
	case DebeziumSourceTable:
		if v := mapGet(src, "table"); !v.IsNull() {
			return v
		}
		return mapGet(src, "collection")
	case DebeziumSourceProperties:
		return src
	}
	return types.Value{}
}

// CreateEncoder implements formats.Factory: {"before":…,"after":…,"op":…}
// per row; -U and -D rows are delete events, +I and +U create events.
func (f *DebeziumFactory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	if err := f.check(c); err != nil {
		return nil, err
	}
	if inc, err := boolOption(c, OptSchemaInclude, false); err != nil {
		return nil, err
	} else if inc {
		return nil, fmt.Errorf("Debezium JSON serialization doesn't support '%s%s' option been set to true.", c.Prefix, OptSchemaInclude)
	}
	row := physicalRow(c.Schema)
	inner, err := newJSONEncoder(c, types.Schema{
		{Name: "before", Type: row},
		{Name: "after", Type: row},
		{Name: "op", Type: types.StringType},
	})
	if err != nil {
		return nil, err
	}
	return &DebeziumEncoder{inner: inner}, nil
}

// DebeziumEncoder writes Debezium change events. It keeps no state between
// calls.
type DebeziumEncoder struct {
	inner formats.Encoder
}

var _ formats.ChangelogEncoder = (*DebeziumEncoder)(nil)

var (
	opCreate = types.String("c")
	opDelete = types.String("d")
)

// Encode implements formats.Encoder: a row without a kind is an insert.
func (e *DebeziumEncoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	return e.EncodeChangelog(dst, types.Insert, row)
}

// EncodeChangelog implements formats.ChangelogEncoder.
func (e *DebeziumEncoder) EncodeChangelog(dst []byte, kind types.RowKind, row types.Row) ([]byte, error) {
	var env [3]types.Value
	if kind.IsRetract() {
		env[0], env[2] = types.RowValue(row), opDelete
	} else {
		env[1], env[2] = types.RowValue(row), opCreate
	}
	return e.inner.Encode(dst, env[:])
}
