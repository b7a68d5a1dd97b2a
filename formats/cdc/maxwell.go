package cdc

import (
	"errors"
	"fmt"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

var maxwellOptions = []string{
	OptIgnoreParseErrors,
	OptTimestampFormatStandard,
	OptMapNullKeyMode,
	OptMapNullKeyLiteral,
	OptEncodeDecimalAsPlain,
}

// Maxwell metadata keys.
const (
	MaxwellDatabase           = "database"
	MaxwellTable              = "table"
	MaxwellPrimaryKeyColumns  = "primary-key-columns"
	MaxwellIngestionTimestamp = "ingestion-timestamp"
)

var maxwellMetadataKeys = []string{MaxwellDatabase, MaxwellTable, MaxwellPrimaryKeyColumns, MaxwellIngestionTimestamp}

var maxwellMetadata = map[string]types.Type{
	MaxwellDatabase:           types.StringType,
	MaxwellTable:              types.StringType,
	MaxwellPrimaryKeyColumns:  types.ArrayType(types.StringType),
	MaxwellIngestionTimestamp: types.TimestampLTZType(3),
}

// MaxwellFactory is the 'maxwell-json' format.
type MaxwellFactory struct{ envelope }

// NewMaxwell returns the 'maxwell-json' format factory.
func NewMaxwell() *MaxwellFactory {
	return &MaxwellFactory{envelope{id: "maxwell-json", options: maxwellOptions, metadata: maxwellMetadata, keys: maxwellMetadataKeys}}
}

var (
	_ formats.Factory         = (*MaxwellFactory)(nil)
	_ formats.ChangelogFormat = (*MaxwellFactory)(nil)
	_ formats.MetadataFormat  = (*MaxwellFactory)(nil)
)

// Envelope field positions of the maxwell decoder's schema.
const (
	mxData = iota
	mxOld
	mxType
	mxDatabase
	mxTable
	mxPKColumns
	mxTs
)

// CreateDecoder implements formats.Factory.
func (f *MaxwellFactory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	ignore, err := f.decoderOptions(c)
	if err != nil {
		return nil, err
	}
	row := physicalRow(c.Schema)
	schema := types.Schema{
		{Name: "data", Type: row},
		{Name: "old", Type: row},
		{Name: "type", Type: types.StringType},
		{Name: "database", Type: types.StringType},
		{Name: "table", Type: types.StringType},
		{Name: "primary_key_columns", Type: types.ArrayType(types.StringType)},
		{Name: "ts", Type: types.BigIntType},
	}
	inner, err := newJSONDecoder(c, schema)
	if err != nil {
		return nil, err
	}
	return &MaxwellDecoder{
		envelopeReader: envelopeReader{name: "Maxwell", inner: inner, ignore: ignore, env: make(types.Row, len(schema))},
		width:          len(c.Schema), meta: append([]string(nil), c.Metadata...),
		out:    make(types.Row, len(c.Schema)+len(c.Metadata)),
		before: make(types.Row, len(c.Schema)),
	}, nil
}

// MaxwellDecoder decodes Maxwell change events. One goroutine uses it.
type MaxwellDecoder struct {
	envelopeReader
	width  int
	meta   []string
	out    types.Row
	before types.Row
}

var _ formats.ChangelogDecoder = (*MaxwellDecoder)(nil)

// Decode implements formats.Decoder: a changelog format cannot be read as
// plain rows.
func (d *MaxwellDecoder) Decode([]byte, types.Row) error {
	return errors.New("maxwell-json produces a changelog: the connector must read it with DecodeChangelog")
}

// DecodeChangelog implements formats.ChangelogDecoder.
func (d *MaxwellDecoder) DecodeChangelog(data []byte, emit func(types.RowKind, types.Row)) error {
	if len(data) == 0 {
		return nil
	}
	if err := d.read(data); err != nil {
		return err
	}
	env := d.env
	after := env[mxData].RowOf()
	typ := env[mxType].Str()
	switch typ {
	case "insert", "delete":
		if after == nil {
			return d.fail(data, fmt.Errorf("the \"data\" field of an %s event is null", typ))
		}
		kind := types.Insert
		if typ == "delete" {
			kind = types.Delete
		}
		d.emit(emit, kind, after)
	case "update":
		if after == nil {
			return d.fail(data, errors.New("the \"data\" field of an update event is null"))
		}
		before := d.before
		clear(before)
		if o := env[mxOld].RowOf(); o != nil {
			copy(before, o)
		}
		fillBefore(before, after)
		d.emit(emit, types.UpdateBefore, before)
		d.emit(emit, types.UpdateAfter, after)
	default:
		return d.fail(data, fmt.Errorf("Unknown \"type\" value \"%s\". The Maxwell JSON message is '%s'", typ, recordText(data)))
	}
	return nil
}

func (d *MaxwellDecoder) emit(emit func(types.RowKind, types.Row), kind types.RowKind, row types.Row) {
	out := d.out
	copy(out[:d.width], row)
	env := d.env
	for j, k := range d.meta {
		var v types.Value
		switch k {
		case MaxwellDatabase:
			v = env[mxDatabase]
		case MaxwellTable:
			v = env[mxTable]
		case MaxwellPrimaryKeyColumns:
			v = env[mxPKColumns]
		case MaxwellIngestionTimestamp:
			v, _ = millisOf(env[mxTs], 1000) // Maxwell's ts is in seconds
		}
		out[d.width+j] = v
	}
	emit(kind, out)
}

// CreateEncoder implements formats.Factory: {"data":row,"type":…} per row;
// -U and -D rows are delete events, +I and +U insert events.
func (f *MaxwellFactory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	if err := f.check(c); err != nil {
		return nil, err
	}
	inner, err := newJSONEncoder(c, types.Schema{
		{Name: "data", Type: physicalRow(c.Schema)},
		{Name: "type", Type: types.StringType},
	})
	if err != nil {
		return nil, err
	}
	return &typeEncoder{inner: inner, insert: types.String("insert"), delete: types.String("delete")}, nil
}
