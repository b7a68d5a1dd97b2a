package cdc

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Canal's own option keys.
const (
	OptDatabaseInclude = "database.include"
	OptTableInclude    = "table.include"
)

var canalOptions = []string{
	OptIgnoreParseErrors,
	OptTimestampFormatStandard,
	OptMapNullKeyMode,
	OptMapNullKeyLiteral,
	OptEncodeDecimalAsPlain,
	OptDatabaseInclude,
	OptTableInclude,
}

// Canal metadata keys.
const (
	CanalDatabase           = "database"
	CanalTable              = "table"
	CanalSQLType            = "sql-type"
	CanalPKNames            = "pk-names"
	CanalIngestionTimestamp = "ingestion-timestamp"
)

var canalMetadataKeys = []string{CanalDatabase, CanalTable, CanalSQLType, CanalPKNames, CanalIngestionTimestamp}

var canalMetadata = map[string]types.Type{
	CanalDatabase:           types.StringType,
	CanalTable:              types.StringType,
	CanalSQLType:            types.MapType(types.StringType, types.IntType),
	CanalPKNames:            types.ArrayType(types.StringType),
	CanalIngestionTimestamp: types.TimestampLTZType(3),
}

// CanalFactory is the 'canal-json' format.
type CanalFactory struct{ envelope }

// NewCanal returns the 'canal-json' format factory.
func NewCanal() *CanalFactory {
	return &CanalFactory{envelope{id: "canal-json", options: canalOptions, metadata: canalMetadata, keys: canalMetadataKeys}}
}

var (
	_ formats.Factory         = (*CanalFactory)(nil)
	_ formats.ChangelogFormat = (*CanalFactory)(nil)
	_ formats.MetadataFormat  = (*CanalFactory)(nil)
)

// Envelope field positions of the canal decoder's schema.
const (
	cnData = iota
	cnOld
	cnType
	cnDatabase
	cnTable
	cnSQLType
	cnPKNames
	cnTs
	cnIsDdl
)

// CreateDecoder implements formats.Factory.
func (f *CanalFactory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	ignore, err := f.decoderOptions(c)
	if err != nil {
		return nil, err
	}
	dbRe, err := includePattern(c, OptDatabaseInclude)
	if err != nil {
		return nil, err
	}
	tableRe, err := includePattern(c, OptTableInclude)
	if err != nil {
		return nil, err
	}
	rows := types.ArrayType(physicalRow(c.Schema))
	schema := types.Schema{
		{Name: "data", Type: rows},
		{Name: "old", Type: rows},
		{Name: "type", Type: types.StringType},
		{Name: "database", Type: types.StringType},
		{Name: "table", Type: types.StringType},
		{Name: "sqlType", Type: types.MapType(types.StringType, types.IntType)},
		{Name: "pkNames", Type: types.ArrayType(types.StringType)},
		{Name: "ts", Type: types.BigIntType},
		{Name: "isDdl", Type: types.BooleanType},
	}
	inner, err := newJSONDecoder(c, schema)
	if err != nil {
		return nil, err
	}
	return &CanalDecoder{
		envelopeReader: envelopeReader{name: "Canal", inner: inner, ignore: ignore, env: make(types.Row, len(schema))},
		dbRe:           dbRe, tableRe: tableRe,
		width: len(c.Schema), meta: append([]string(nil), c.Metadata...),
		out: make(types.Row, len(c.Schema)+len(c.Metadata)),
	}, nil
}

// CanalDecoder decodes Canal change events. One goroutine uses it.
type CanalDecoder struct {
	envelopeReader
	dbRe, tableRe *regexp.Regexp
	width         int
	meta          []string
	out           types.Row
	before        types.Row // an update's old row, completed from the new
}

var _ formats.ChangelogDecoder = (*CanalDecoder)(nil)

// Decode implements formats.Decoder: a changelog format cannot be read as
// plain rows.
func (d *CanalDecoder) Decode([]byte, types.Row) error {
	return errors.New("canal-json produces a changelog: the connector must read it with DecodeChangelog")
}

// DecodeChangelog implements formats.ChangelogDecoder.
func (d *CanalDecoder) DecodeChangelog(data []byte, emit func(types.RowKind, types.Row)) error {
	if len(data) == 0 {
		return nil
	}
	if err := d.read(data); err != nil {
		return err
	}
	env := d.env
	if d.dbRe != nil && !d.dbRe.MatchString(env[cnDatabase].Str()) {
		return nil // another database's events: not this table's
	}
	if d.tableRe != nil && !d.tableRe.MatchString(env[cnTable].Str()) {
		return nil
	}
	typ := env[cnType].Str()
	rows := env[cnData].Array()
	switch typ {
	case "INSERT", "DELETE":
		if env[cnData].IsNull() {
			return d.fail(data, fmt.Errorf("the \"data\" field of an %s event is null", typ))
		}
		kind := types.Insert
		if typ == "DELETE" {
			kind = types.Delete
		}
		for _, r := range rows {
			if rr := r.RowOf(); rr != nil {
				d.emit(emit, kind, rr)
			}
		}
	case "UPDATE":
		old := env[cnOld].Array()
		if env[cnData].IsNull() || env[cnOld].IsNull() || len(old) != len(rows) {
			return d.fail(data, errors.New("an UPDATE event needs a \"data\" and an \"old\" array of the same length"))
		}
		for i, r := range rows {
			after := r.RowOf()
			if after == nil {
				continue
			}
			if cap(d.before) < d.width {
				d.before = make(types.Row, d.width)
			}
			before := d.before[:d.width]
			clear(before)
			if o := old[i].RowOf(); o != nil {
				copy(before, o)
			}
			fillBefore(before, after)
			d.emit(emit, types.UpdateBefore, before)
			d.emit(emit, types.UpdateAfter, after)
		}
	case "CREATE":
		// A CREATE TABLE: "data" is null, a DDL change event, skipped as in Flink.
	default:
		if env[cnIsDdl].Bool() && !env[cnIsDdl].IsNull() {
			return nil // other DDL (ALTER, ERASE, ...) carries no rows
		}
		return d.fail(data, fmt.Errorf("Unknown \"type\" value \"%s\". The Canal JSON message is '%s'", typ, recordText(data)))
	}
	return nil
}

func (d *CanalDecoder) emit(emit func(types.RowKind, types.Row), kind types.RowKind, row types.Row) {
	out := d.out
	copy(out[:d.width], row)
	env := d.env
	for j, k := range d.meta {
		var v types.Value
		switch k {
		case CanalDatabase:
			v = env[cnDatabase]
		case CanalTable:
			v = env[cnTable]
		case CanalSQLType:
			v = env[cnSQLType]
		case CanalPKNames:
			v = env[cnPKNames]
		case CanalIngestionTimestamp:
			v, _ = millisOf(env[cnTs], 1)
		}
		out[d.width+j] = v
	}
	emit(kind, out)
}

// CreateEncoder implements formats.Factory: {"data":[row],"type":…} per
// row; -U and -D rows are DELETE events, +I and +U INSERT events.
func (f *CanalFactory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	if err := f.check(c); err != nil {
		return nil, err
	}
	if _, err := includePattern(c, OptDatabaseInclude); err != nil {
		return nil, err
	}
	if _, err := includePattern(c, OptTableInclude); err != nil {
		return nil, err
	}
	inner, err := newJSONEncoder(c, types.Schema{
		{Name: "data", Type: types.ArrayType(physicalRow(c.Schema))},
		{Name: "type", Type: types.StringType},
	})
	if err != nil {
		return nil, err
	}
	// The row goes in a one-element array, as Canal batches rows.
	return &typeEncoder{inner: inner, inArray: true, insert: types.String("INSERT"), delete: types.String("DELETE")}, nil
}
