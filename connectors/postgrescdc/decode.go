package postgrescdc

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/formats/json/sqltext"
	"github.com/flinksql/flinksql/types"
)

// pgTypes lists, per Flink type root, the PostgreSQL types a column may
// have (Flink CDC's Postgres type mapping: int2 → SMALLINT, int4 → INT,
// int8 → BIGINT, float4 → FLOAT, float8 → DOUBLE, numeric → DECIMAL,
// bool → BOOLEAN, date, time, timestamp → TIMESTAMP, timestamptz →
// TIMESTAMP_LTZ, char/varchar/text/json/jsonb/uuid → STRING, bytea →
// BYTES; plus the narrower integer types into a wider Flink integer).
var pgTypes = map[types.Root][]string{
	types.RootBoolean:      {"bool"},
	types.RootTinyInt:      {"int2"},
	types.RootSmallInt:     {"int2"},
	types.RootInt:          {"int2", "int4"},
	types.RootBigInt:       {"int2", "int4", "int8"},
	types.RootFloat:        {"float4"},
	types.RootDouble:       {"float4", "float8"},
	types.RootDecimal:      {"numeric", "int2", "int4", "int8"},
	types.RootChar:         {"bpchar", "varchar", "text", "name", "json", "jsonb", "uuid", "xml", "inet", "cidr", "macaddr"},
	types.RootVarChar:      {"bpchar", "varchar", "text", "name", "json", "jsonb", "uuid", "xml", "inet", "cidr", "macaddr"},
	types.RootBinary:       {"bytea"},
	types.RootVarBinary:    {"bytea"},
	types.RootDate:         {"date"},
	types.RootTime:         {"time"},
	types.RootTimestamp:    {"timestamp"},
	types.RootTimestampLTZ: {"timestamptz"},
}

// checkType refuses a Flink column type this connector cannot produce.
func checkType(t types.Type) error {
	if _, ok := pgTypes[t.Root]; !ok {
		return fmt.Errorf("the postgres-cdc connector does not support the type %s (supported: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, CHAR, VARCHAR/STRING, BINARY, VARBINARY/BYTES, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ)", t)
	}
	return nil
}

// checkPGType says whether a PostgreSQL column of base type pg can be read
// into a Flink column of type t.
func checkPGType(t types.Type, pg string) error {
	for _, ok := range pgTypes[t.Root] {
		if ok == pg {
			return nil
		}
	}
	return fmt.Errorf("a PostgreSQL %s column cannot be read as %s (allowed PostgreSQL types: %s)", pg, t, strings.Join(pgTypes[t.Root], ", "))
}

// parseText converts a value in PostgreSQL's text output format (the
// sessions run with TimeZone UTC, DateStyle ISO and bytea_output hex) into
// a Flink value of type t. Only strings and bytes allocate.
func parseText(t types.Type, s []byte) (types.Value, error) {
	switch t.Root {
	case types.RootBoolean:
		if len(s) == 1 && (s[0] == 't' || s[0] == 'f') {
			return types.Bool(s[0] == 't'), nil
		}
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt:
		bits := 64
		switch t.Root {
		case types.RootTinyInt:
			bits = 8
		case types.RootSmallInt:
			bits = 16
		case types.RootInt:
			bits = 32
		}
		if n, ok := sqltext.ParseJavaInt(s, bits); ok {
			return types.Int(n), nil
		}
		if t.Root == types.RootTinyInt {
			return types.NullValue, fmt.Errorf("the value %s does not fit TINYINT", s)
		}
	case types.RootFloat, types.RootDouble:
		bits := 64
		if t.Root == types.RootFloat {
			bits = 32
		}
		if f, ok := sqltext.ParseJavaFloat(s, bits); ok {
			return types.Float(f), nil
		}
	case types.RootDecimal:
		v, res := sqltext.ParseDecimal(s, t.Precision, t.Scale)
		switch res {
		case sqltext.DecimalOK:
			return v, nil
		case sqltext.DecimalOverflow:
			return types.NullValue, nil // Flink's DECIMAL overflow is NULL
		}
	case types.RootChar, types.RootVarChar:
		return types.String(string(s)), nil
	case types.RootBinary, types.RootVarBinary:
		if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
			b := make([]byte, hex.DecodedLen(len(s)-2))
			if _, err := hex.Decode(b, s[2:]); err == nil {
				return types.Bytes(b), nil
			}
		}
	case types.RootDate:
		if days, rest, ok := sqltext.ParseISODate(s, true); ok && len(rest) == 0 {
			return types.Int(days), nil
		}
	case types.RootTime:
		if nanos, rest, ok := sqltext.ParseTime(s, sqltext.SQLTime); ok && len(rest) == 0 {
			return types.Int(nanos / 1e6), nil
		}
	case types.RootTimestamp:
		if ms, nano, ok := sqltext.ParseTimestamp(s, ' ', sqltext.SQLTime, false); ok {
			return types.Timestamp(ms, nano), nil
		}
	case types.RootTimestampLTZ:
		body, offset, ok := splitOffset(s)
		if ok {
			if ms, nano, ok := sqltext.ParseTimestamp(body, ' ', sqltext.SQLTime, false); ok {
				return types.Timestamp(ms-offset, nano), nil
			}
		}
	}
	return types.NullValue, fmt.Errorf("cannot read the PostgreSQL text %q as %s", s, t)
}

// splitOffset splits "2024-01-02 03:04:05.5+05:30" into the local part and
// the offset in milliseconds.
func splitOffset(s []byte) (body []byte, offsetMillis int64, ok bool) {
	// The offset starts after the time, which starts 11 bytes in.
	i := len(s) - 1
	for i > 11 && s[i] != '+' && s[i] != '-' {
		i--
	}
	if i <= 11 {
		return nil, 0, false
	}
	sign := int64(1)
	if s[i] == '-' {
		sign = -1
	}
	// HH, HH:MM or HH:MM:SS.
	off := s[i+1:]
	var parts [3]int64
	for n := 0; ; n++ {
		if n == 3 || len(off) < 2 || off[0] < '0' || off[0] > '9' || off[1] < '0' || off[1] > '9' {
			return nil, 0, false
		}
		parts[n] = int64(off[0]-'0')*10 + int64(off[1]-'0')
		off = off[2:]
		if len(off) == 0 {
			break
		}
		if off[0] != ':' {
			return nil, 0, false
		}
		off = off[1:]
	}
	return s[:i], sign * (parts[0]*3600 + parts[1]*60 + parts[2]) * 1000, true
}
