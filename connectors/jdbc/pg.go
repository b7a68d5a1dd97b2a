package jdbc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

func sortStrings(s []string) { sort.Strings(s) }

// checkSupportedType refuses what Flink's PostgreSQL dialect does not
// support, with its message.
func checkSupportedType(t types.Type) error {
	switch t.Root {
	case types.RootBoolean, types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt,
		types.RootFloat, types.RootDouble, types.RootChar, types.RootVarChar, types.RootBinary, types.RootVarBinary,
		types.RootDate, types.RootTime:
		return nil
	case types.RootDecimal:
		if t.Precision < 1 || t.Precision > 1000 {
			return fmt.Errorf("The precision of field '%s' is out of the DECIMAL precision range [1, 1000] supported by PostgreSQL dialect.", t)
		}
		return nil
	case types.RootTimestamp, types.RootTimestampLTZ:
		if t.Precision > 6 {
			return fmt.Errorf("The precision of field '%s' is out of the TIMESTAMP precision range [0, 6] supported by PostgreSQL dialect.", t)
		}
		return nil
	case types.RootArray:
		// One-dimensional arrays of the scalar types.
		if e := *t.Elem; e.Root != types.RootArray && checkSupportedType(e) == nil {
			return nil
		}
	}
	return fmt.Errorf("The PostgreSQL dialect doesn't support type: %s.", t)
}

// connect opens a connection, retrying until timeout (Flink's
// connection.max-retry-timeout bounds how long a connection is awaited).
func connect(ctx context.Context, c *config) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(c.connStr)
	if err != nil {
		return nil, fmt.Errorf("jdbc table %s: url '%s': %w", c.name, c.url, err)
	}
	if cc.ConnectTimeout == 0 || cc.ConnectTimeout > c.connTimeout {
		cc.ConnectTimeout = c.connTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("jdbc table %s: cannot connect to %s: %w", c.name, c.url, err)
	}
	return conn, nil
}

// pgColumn is a column of the PostgreSQL table.
type pgColumn struct {
	name    string
	typ     string // format_type: "character varying(3)", "numeric(5,2)", …
	base    string // pg_type.typname of the column's type: varchar, int4, …
	typmod  int32
	notNull bool
}

// tableColumns reads the columns of the table, or an error saying that the
// table does not exist.
func tableColumns(ctx context.Context, conn *pgx.Conn, c *config) (map[string]pgColumn, error) {
	rows, err := conn.Query(ctx, `
SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname, a.atttypmod, a.attnotnull
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, c.table.SQL())
	if err != nil {
		return nil, fmt.Errorf("jdbc table %s: reading the columns of %s: %w", c.name, c.table, err)
	}
	cols := map[string]pgColumn{}
	for rows.Next() {
		var col pgColumn
		if err := rows.Scan(&col.name, &col.typ, &col.base, &col.typmod, &col.notNull); err != nil {
			rows.Close()
			return nil, err
		}
		cols[col.name] = col
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("jdbc table %s: the table '%s' does not exist in database %s (or has no columns)", c.name, c.table, c.database)
	}
	return cols, nil
}

// compatible lists, per Flink type root, the PostgreSQL types a column may
// have to take or give its values (Flink's PostgreSQL type mapping, plus
// the wider types that hold every value).
var compatible = map[types.Root][]string{
	types.RootBoolean:      {"bool"},
	types.RootTinyInt:      {"int2", "int4", "int8", "numeric"},
	types.RootSmallInt:     {"int2", "int4", "int8", "numeric"},
	types.RootInt:          {"int2", "int4", "int8", "numeric"},
	types.RootBigInt:       {"int2", "int4", "int8", "numeric"},
	types.RootFloat:        {"float4", "float8"},
	types.RootDouble:       {"float4", "float8"},
	types.RootDecimal:      {"numeric"},
	types.RootChar:         {"text", "varchar", "bpchar", "name", "json", "jsonb", "uuid"},
	types.RootVarChar:      {"text", "varchar", "bpchar", "name", "json", "jsonb", "uuid"},
	types.RootBinary:       {"bytea"},
	types.RootVarBinary:    {"bytea"},
	types.RootDate:         {"date"},
	types.RootTime:         {"time"},
	types.RootTimestamp:    {"timestamp"},
	types.RootTimestampLTZ: {"timestamptz"},
}

// column is one Flink column and the PostgreSQL column it maps to.
type column struct {
	idx  int    // position in the physical row
	name string // Flink name
	typ  types.Type
	pg   pgColumn
}

// resolveColumns maps the given Flink columns to the table's, with a clear
// error for a missing column or one whose type cannot hold the values.
func resolveColumns(c *config, pgCols map[string]pgColumn, idx []int) ([]column, error) {
	out := make([]column, 0, len(idx))
	for _, i := range idx {
		fc := c.physical[i]
		pc, ok := pgCols[columnIdent(fc.Name)]
		if !ok {
			names := make([]string, 0, len(pgCols))
			for n := range pgCols {
				names = append(names, n)
			}
			sortStrings(names)
			return nil, fmt.Errorf("jdbc table %s: column '%s' does not exist in PostgreSQL table %s (its columns are %s)", c.name, columnIdent(fc.Name), c.table, strings.Join(names, ", "))
		}
		root, base, prefix := fc.Type.Root, pc.base, ""
		if root == types.RootArray {
			// PostgreSQL names an array type by its element's with '_'.
			root, prefix = fc.Type.Elem.Root, "_"
		}
		okType := false
		var allowed []string
		for _, b := range compatible[root] {
			okType = okType || prefix+b == base
			allowed = append(allowed, prefix+b)
		}
		if !okType {
			return nil, fmt.Errorf("jdbc table %s: column '%s' of PostgreSQL table %s is %s, which does not map to the Flink type %s (expected one of %s)",
				c.name, pc.name, c.table, pc.typ, fc.Type, strings.Join(allowed, ", "))
		}
		out = append(out, column{idx: i, name: fc.Name, typ: fc.Type, pg: pc})
	}
	return out, nil
}

// valueError is a value the column cannot hold.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

// toPG converts a Flink value to what pgx encodes for the column, checking
// that the PostgreSQL column can hold it.
func toPG(col *column, v types.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	switch col.typ.Root {
	case types.RootBoolean:
		return v.Bool(), nil
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt:
		n := v.N
		switch col.pg.base {
		case "int2":
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, &valueError{fmt.Sprintf("%d is out of the range of smallint", n)}
			}
			return int16(n), nil
		case "int4":
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, &valueError{fmt.Sprintf("%d is out of the range of integer", n)}
			}
			return int32(n), nil
		case "numeric":
			return checkNumeric(col, big.NewInt(n), 0)
		}
		return n, nil
	case types.RootFloat:
		if col.pg.base == "float4" {
			return float32(v.Float()), nil
		}
		return float64(float32(v.Float())), nil
	case types.RootDouble:
		if col.pg.base == "float4" {
			return float32(v.Float()), nil
		}
		return v.Float(), nil
	case types.RootDecimal:
		return checkNumeric(col, v.DecimalBig(), v.DecimalScale())
	case types.RootChar, types.RootVarChar:
		s := v.S
		if n := int(col.pg.typmod) - 4; n >= 0 && (col.pg.base == "varchar" || col.pg.base == "bpchar") {
			if l := utf8.RuneCountInString(s); l > n {
				// PostgreSQL cuts excess trailing spaces instead of failing.
				if strings.TrimRight(s, " ") == s || utf8.RuneCountInString(strings.TrimRight(s, " ")) > n {
					return nil, &valueError{fmt.Sprintf("the value of %d characters is too long for %s", l, col.pg.typ)}
				}
			}
		}
		return s, nil
	case types.RootBinary, types.RootVarBinary:
		return []byte(v.S), nil
	case types.RootDate:
		return pgtype.Date{Time: time.Unix(v.N*86400, 0).UTC(), Valid: true}, nil
	case types.RootTime:
		return pgtype.Time{Microseconds: v.N * 1000, Valid: true}, nil
	case types.RootTimestamp:
		return pgtype.Timestamp{Time: time.UnixMilli(v.N).Add(time.Duration(v.Aux)).UTC(), Valid: true}, nil
	case types.RootTimestampLTZ:
		return time.UnixMilli(v.N).Add(time.Duration(v.Aux)), nil
	case types.RootArray:
		// The elements are checked as values of the element type (a
		// varchar(n)[] column limits each element).
		elem := column{idx: col.idx, name: col.name, typ: *col.typ.Elem,
			pg: pgColumn{name: col.pg.name, typ: col.pg.typ, base: strings.TrimPrefix(col.pg.base, "_"), typmod: col.pg.typmod}}
		vals := v.Array()
		out := make([]any, len(vals))
		for i, e := range vals {
			pv, err := toPG(&elem, e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i+1, err)
			}
			out[i] = pv
		}
		return out, nil
	}
	return nil, fmt.Errorf("The PostgreSQL dialect doesn't support type: %s.", col.typ)
}

// checkNumeric checks a decimal against numeric(p,s) the way PostgreSQL
// does: the value is rounded to s digits, and then may have at most p-s
// digits before the point.
func checkNumeric(col *column, unscaled *big.Int, scale int) (any, error) {
	num := pgtype.Numeric{Int: unscaled, Exp: int32(-scale), Valid: true}
	tm := col.pg.typmod
	if col.pg.base != "numeric" || tm < 4 {
		return num, nil
	}
	p := int((tm - 4) >> 16)
	s := int(int16((tm - 4) & 0xffff))
	r := new(big.Int).Set(unscaled)
	switch {
	case scale > s:
		// round half away from zero to s digits
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-s)), nil)
		q, m := new(big.Int).QuoRem(r, d, new(big.Int))
		m.Abs(m).Mul(m, big.NewInt(2))
		if m.Cmp(d) >= 0 {
			if r.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		r = q
	case scale < s:
		r.Mul(r, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-scale)), nil))
	}
	if limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil); new(big.Int).Abs(r).Cmp(limit) >= 0 {
		return nil, &valueError{fmt.Sprintf("the value %s does not fit %s (at most %d digits before the decimal point)", types.FormatSQL(types.DecimalFromBig(unscaled, scale), types.DecimalType(38, scale), nil), col.pg.typ, p-s)}
	}
	return num, nil
}

// fromPG converts what pgx decoded from a column to a Flink value of type t.
func fromPG(t types.Type, v any) (types.Value, error) {
	if v == nil {
		return types.NullValue, nil
	}
	switch t.Root {
	case types.RootBoolean:
		if b, ok := v.(bool); ok {
			return types.Bool(b), nil
		}
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt:
		switch n := v.(type) {
		case int16:
			return types.Int(int64(n)), nil
		case int32:
			return types.Int(int64(n)), nil
		case int64:
			return types.Int(n), nil
		case pgtype.Numeric:
			i, err := n.Int64Value()
			if err == nil && i.Valid {
				return types.Int(i.Int64), nil
			}
		}
	case types.RootFloat:
		switch f := v.(type) {
		case float32:
			return types.Float(float64(f)), nil
		case float64:
			return types.Float(float64(float32(f))), nil
		}
	case types.RootDouble:
		switch f := v.(type) {
		case float32:
			return types.Float(float64(f)), nil
		case float64:
			return types.Float(f), nil
		}
	case types.RootDecimal:
		if n, ok := v.(pgtype.Numeric); ok && n.Valid && !n.NaN && n.InfinityModifier == 0 {
			u := new(big.Int).Set(n.Int)
			exp := int(n.Exp)
			scale := t.Scale
			// value = u * 10^exp; want unscaled at scale (rounding half up).
			shift := exp + scale
			if shift >= 0 {
				u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
			} else {
				d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-shift)), nil)
				q, m := new(big.Int).QuoRem(u, d, new(big.Int))
				m.Abs(m).Mul(m, big.NewInt(2))
				if m.Cmp(d) >= 0 {
					if u.Sign() < 0 {
						q.Sub(q, big.NewInt(1))
					} else {
						q.Add(q, big.NewInt(1))
					}
				}
				u = q
			}
			if new(big.Int).Abs(u).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)) >= 0 {
				return types.NullValue, nil // Flink's DECIMAL overflow is NULL
			}
			return types.DecimalFromBig(u, scale), nil
		}
	case types.RootChar, types.RootVarChar:
		switch s := v.(type) {
		case string:
			return types.String(s), nil
		case [16]byte: // uuid
			return types.String(fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])), nil
		case map[string]any, []any, float64, bool:
			return types.String(fmt.Sprint(s)), nil
		}
	case types.RootBinary, types.RootVarBinary:
		if b, ok := v.([]byte); ok {
			return types.Bytes(b), nil
		}
	case types.RootDate:
		if d, ok := v.(time.Time); ok {
			return types.Int(floorDiv(d.Unix(), 86400)), nil
		}
	case types.RootTime:
		if tm, ok := v.(pgtype.Time); ok && tm.Valid {
			return types.Int(tm.Microseconds / 1000), nil
		}
	case types.RootTimestamp, types.RootTimestampLTZ:
		if ts, ok := v.(time.Time); ok {
			if t.Root == types.RootTimestamp {
				// timestamp without time zone: pgx gives the wall clock in UTC.
				ts = time.Date(ts.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC)
			}
			ns := ts.UnixNano()
			ms := floorDiv(ns, 1e6)
			return types.Timestamp(ms, int32(ns-ms*1e6)), nil
		}
	case types.RootArray:
		if a, ok := v.([]any); ok {
			out := make([]types.Value, len(a))
			for i, e := range a {
				ev, err := fromPG(*t.Elem, e)
				if err != nil {
					return types.NullValue, fmt.Errorf("element %d: %w", i+1, err)
				}
				out[i] = ev
			}
			return types.ArrayValue(out), nil
		}
	}
	return types.NullValue, fmt.Errorf("cannot read a %T as %s", v, t)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// deterministic reports whether err will happen again on a retry: the
// statement or its data is wrong, not the connection.
func deterministic(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "22", "23", "42", "0A", "2B", "44":
			return true
		}
		return false
	}
	var ve *valueError
	return errors.As(err, &ve)
}

// formatRow renders a row with its kind as Flink prints it: +I[1, abc].
func formatRow(kind types.RowKind, r types.Row, schema types.Schema, loc *time.Location) string {
	var b strings.Builder
	b.WriteString(kind.String())
	b.WriteByte('[')
	for i, col := range schema {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(r) {
			b.WriteString(types.FormatSQL(r[i], col.Type, loc))
		}
	}
	b.WriteByte(']')
	return b.String()
}
