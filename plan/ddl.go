package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// convertType turns a parsed data type into a logical type, with Flink SQL's
// defaults for omitted parameters: VARCHAR and VARBINARY without a length are
// STRING and BYTES (Flink's type system gives them the maximum length, unlike
// the Table API's DataTypes.VARCHAR()), CHAR and BINARY have length 1,
// DECIMAL is DECIMAL(10, 0), TIMESTAMP is TIMESTAMP(6), TIME is TIME(0).
func convertType(d *parser.DataType) (types.Type, error) {
	param := func(i, def int) int {
		if i < len(d.Params) {
			return d.Params[i]
		}
		return def
	}
	var t types.Type
	switch d.Name {
	case "BOOLEAN":
		t = types.BooleanType
	case "TINYINT":
		t = types.TinyIntType
	case "SMALLINT":
		t = types.SmallIntType
	case "INT":
		t = types.IntType
	case "BIGINT":
		t = types.BigIntType
	case "FLOAT":
		t = types.FloatType
	case "DOUBLE":
		t = types.DoubleType
	case "DECIMAL":
		p, s := param(0, 10), param(1, 0)
		if p < 1 || p > 38 {
			return t, errAt(d, "Decimal precision must be between 1 and 38 (both inclusive).")
		}
		if s < 0 || s > p {
			return t, errAt(d, "Decimal scale must be between 0 and the precision %d (both inclusive).", p)
		}
		t = types.DecimalType(p, s)
	case "CHAR":
		n := param(0, 1)
		if n < 1 {
			return t, errAt(d, "Character string length must be between 1 and %d (both inclusive).", types.MaxLength)
		}
		t = types.CharType(n)
	case "VARCHAR":
		n := param(0, types.MaxLength)
		if n < 1 {
			return t, errAt(d, "Variable character string length must be between 1 and %d (both inclusive).", types.MaxLength)
		}
		t = types.VarCharType(n)
	case "STRING":
		t = types.StringType
	case "BINARY":
		t = types.Type{Root: types.RootBinary, Precision: param(0, 1)}
	case "VARBINARY":
		t = types.Type{Root: types.RootVarBinary, Precision: param(0, types.MaxLength)}
	case "BYTES":
		t = types.BytesType
	case "DATE":
		t = types.DateType
	case "TIME":
		p := param(0, 0)
		if p < 0 || p > 9 {
			return t, errAt(d, "Time precision must be between 0 and 9 (both inclusive).")
		}
		t = types.TimeType(p)
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		p := param(0, 6)
		if p < 0 || p > 9 {
			return t, errAt(d, "Timestamp precision must be between 0 and 9 (both inclusive).")
		}
		if d.Name == "TIMESTAMP_LTZ" || d.WithLocalTimeZone {
			t = types.TimestampLTZType(p)
		} else {
			t = types.TimestampType(p)
		}
	case "INTERVAL":
		if d.Interval == nil {
			return t, errAt(d, "INTERVAL type needs a qualifier such as DAY TO SECOND")
		}
		q := d.Interval
		unit := q.Start
		if q.End != "" {
			unit += " TO " + q.End
		}
		switch q.Start {
		case "YEAR", "MONTH":
			t = types.Type{Root: types.RootIntervalYearMonth, IntervalUnit: unit}
		default:
			t = types.Type{Root: types.RootIntervalDayTime, IntervalUnit: unit}
		}
	case "ARRAY", "MULTISET":
		if d.Elem == nil {
			return t, errAt(d, "%s type needs an element type", d.Name)
		}
		e, err := convertType(d.Elem)
		if err != nil {
			return t, err
		}
		t = types.ArrayType(e)
		if d.Name == "MULTISET" {
			t.Root = types.RootMultiset
		}
	case "MAP":
		if d.Key == nil || d.Value == nil {
			return t, errAt(d, "MAP type needs a key and a value type")
		}
		k, err := convertType(d.Key)
		if err != nil {
			return t, err
		}
		v, err := convertType(d.Value)
		if err != nil {
			return t, err
		}
		t = types.MapType(k, v)
	case "ROW":
		fields := make([]types.Field, len(d.Fields))
		for i, f := range d.Fields {
			ft, err := convertType(f.Type)
			if err != nil {
				return t, err
			}
			fields[i] = types.Field{Name: f.Name, Type: ft}
		}
		t = types.RowType(fields...)
	default:
		return t, errAt(d, "Unknown data type %s", d.Name)
	}
	t.NotNull = d.NotNull
	return t, nil
}

// buildTable validates a CREATE TABLE statement and resolves its schema.
func (p *Planner) buildTable(st *parser.CreateTable) (*catalog.Table, error) {
	id, err := p.qualify(st, st.Name)
	if err != nil {
		return nil, err
	}
	if st.AsQuery != nil {
		return nil, errAt(st, "CREATE TABLE ... AS SELECT creates the table and runs the INSERT: plan it with CreateTableAs")
	}
	if st.Like != nil {
		if st, err = p.mergeLike(st); err != nil {
			return nil, err
		}
	}
	t := &catalog.Table{ID: id, Temporary: st.Temporary, Comment: st.Comment}
	seen := map[string]*parser.ColumnDef{}
	for _, c := range st.Columns {
		if prev, dup := seen[c.Name]; dup {
			return nil, errAt(c, "A column named '%s' is already defined at line %d, column %d.", c.Name, prev.P.Line, prev.P.Col)
		}
		seen[c.Name] = c
	}
	// Physical and metadata columns first: computed columns may reference
	// them, and see a primary key column NOT NULL, as Flink's do.
	inKey := map[string]bool{}
	if st.PrimaryKey != nil {
		for _, k := range st.PrimaryKey.Columns {
			inKey[k] = true
		}
	}
	var base types.Schema
	for _, c := range st.Columns {
		col := catalog.Column{Name: c.Name, Kind: c.Kind, Comment: c.Comment}
		if c.Kind != parser.ComputedColumn {
			ct, err := convertType(c.Type)
			if err != nil {
				return nil, err
			}
			if c.Kind == parser.PhysicalColumn && inKey[c.Name] {
				ct.NotNull = true
			}
			col.Type = ct
			base = append(base, types.Column{Name: c.Name, Type: ct})
		}
		if c.Kind == parser.MetadataColumn {
			col.MetadataKey = c.MetadataKey
			if col.MetadataKey == "" {
				col.MetadataKey = c.Name
			}
			col.Virtual = c.Virtual
		}
		t.Columns = append(t.Columns, col)
	}
	baseScope := newScope(id.Object, base)
	for i, c := range st.Columns {
		if c.Kind != parser.ComputedColumn {
			continue
		}
		b := &binder{scope: baseScope, clause: "computed column"}
		x, err := b.bind(c.Expr)
		if err != nil {
			return nil, err
		}
		t.Columns[i].Type = x.Type()
		t.Columns[i].Expr = c.Expr
		t.Columns[i].ExprText = c.ExprText
	}
	if len(st.Watermarks) > 1 {
		return nil, errAt(st.Watermarks[1], "Multiple WATERMARK statements is not supported yet.")
	}
	if len(st.Watermarks) == 1 {
		w := st.Watermarks[0]
		if len(w.Column) != 1 {
			return nil, errAt(w, "Watermarks on nested fields are not supported yet.")
		}
		ci := -1
		for i, c := range t.Columns {
			if c.Name == w.Column[0] {
				ci = i
			}
		}
		if ci < 0 {
			return nil, errAt(w, "The rowtime attribute field '%s' is not defined in the table schema, at %d:%d\nAvailable fields: [%s]",
				w.Column[0], w.P.Line, w.P.Col, quotedNames(t.Columns))
		}
		rt := t.Columns[ci].Type
		if !rt.IsTimestamp() || rt.Precision > 3 {
			return nil, errAt(w, "Invalid data type of time field for watermark definition. The field must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the time field type is %s", rt)
		}
		full := newScope(id.Object, t.Schema())
		b := &binder{scope: full, clause: "WATERMARK"}
		x, err := b.bind(w.Expr)
		if err != nil {
			return nil, err
		}
		if wt := x.Type(); !wt.IsTimestamp() || wt.Precision > 3 {
			return nil, errAt(w, "Invalid data type of expression for watermark definition. The field must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the watermark expression type is %s", wt)
		}
		t.Columns[ci].Type.TimeAttr = types.RowtimeAttr
		t.Watermark = &catalog.Watermark{Column: w.Column[0], Expr: w.Expr, ExprText: w.ExprText, Type: x.Type()}
	}
	if err := partitionKeys(st, t); err != nil {
		return nil, err
	}
	if pk := st.PrimaryKey; pk != nil {
		if pk.Enforced {
			return nil, errAt(pk, "Flink doesn't support ENFORCED mode for PRIMARY KEY constraint. ENFORCED/NOT ENFORCED controls if the constraint checks are performed on the incoming/outgoing data. Flink does not own the data therefore the only supported mode is the NOT ENFORCED mode")
		}
		for _, name := range pk.Columns {
			found := false
			for i := range t.Columns {
				c := &t.Columns[i]
				if c.Name != name {
					continue
				}
				found = true
				if c.Kind != parser.PhysicalColumn {
					return nil, errAt(pk, "Could not create a PRIMARY KEY with column '%s' at line %d, column %d.\nA PRIMARY KEY constraint must be declared on physical columns.", name, pk.P.Line, pk.P.Col)
				}
				c.Type.NotNull = true
			}
			if !found {
				return nil, errAt(pk, "Primary key column '%s' is not defined in the schema at line %d, column %d", name, pk.P.Line, pk.P.Col)
			}
		}
		name := pk.ConstraintName
		if name == "" {
			name = "PK_" + strings.Join(pk.Columns, "_")
		}
		t.PrimaryKey = &catalog.PrimaryKey{Name: name, Columns: pk.Columns}
	}
	for _, o := range st.Options {
		t.Options = append(t.Options, catalog.Option{Key: o.Key, Value: o.Value})
	}
	return t, nil
}

func quotedNames(cols []catalog.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = "'" + c.Name + "'"
	}
	return strings.Join(names, ", ")
}

func (p *Planner) qualify(n parser.Node, name []string) (catalog.Identifier, error) {
	id, err := p.cat.Qualify(name)
	if err != nil {
		return id, errAt(n, "%s", err.Error())
	}
	if err := p.cat.CheckKnown(id); err != nil {
		return id, errAt(n, "%s", err.Error())
	}
	return id, nil
}

// partitionKeys validates PARTITIONED BY as Flink does and records the keys
// in t: each must name a physical column, once.
func partitionKeys(st *parser.CreateTable, t *catalog.Table) error {
	seen := map[string]bool{}
	for _, k := range st.PartitionedBy {
		var col *catalog.Column
		for i := range t.Columns {
			if t.Columns[i].Name == k {
				col = &t.Columns[i]
			}
		}
		switch {
		case col == nil:
			return &ValidationError{Msg: fmt.Sprintf("Partition column '%s' not defined in the table schema. Available columns: [%s]", k, quotedNames(t.Columns))}
		case col.Kind != parser.PhysicalColumn:
			return &ValidationError{Msg: fmt.Sprintf("Invalid partition key '%s'. A partition key must reference a physical column in the schema. Available columns are: [%s]", k, quotedNames(t.Columns))}
		case seen[k]:
			return &ValidationError{Msg: fmt.Sprintf("Partition column '%s' is declared more than once in PARTITIONED BY.", k)}
		}
		seen[k] = true
		t.PartitionKeys = append(t.PartitionKeys, k)
	}
	return nil
}

// ShowCreateTable renders a table's DDL as Flink's SHOW CREATE TABLE does.
func ShowCreateTable(t *catalog.Table) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if t.Temporary {
		b.WriteString("TEMPORARY ")
	}
	fmt.Fprintf(&b, "TABLE %s.%s.%s (\n", types.QuoteIdent(t.ID.Catalog), types.QuoteIdent(t.ID.Database), types.QuoteIdent(t.ID.Object))
	var lines []string
	for _, c := range t.Columns {
		line := "  " + types.QuoteIdent(c.Name) + " "
		switch c.Kind {
		case parser.ComputedColumn:
			line += "AS " + parser.FormatExprQuoted(c.Expr)
		case parser.MetadataColumn:
			line += c.Type.SQLString() + " METADATA"
			if c.MetadataKey != c.Name {
				line += " FROM '" + strings.ReplaceAll(c.MetadataKey, "'", "''") + "'"
			}
			if c.Virtual {
				line += " VIRTUAL"
			}
		default:
			line += c.Type.SQLString()
		}
		if c.Comment != "" {
			line += " COMMENT '" + strings.ReplaceAll(c.Comment, "'", "''") + "'"
		}
		lines = append(lines, line)
	}
	if w := t.Watermark; w != nil {
		lines = append(lines, "  WATERMARK FOR "+types.QuoteIdent(w.Column)+" AS "+parser.FormatExprQuoted(w.Expr))
	}
	if pk := t.PrimaryKey; pk != nil {
		cols := make([]string, len(pk.Columns))
		for i, c := range pk.Columns {
			cols[i] = types.QuoteIdent(c)
		}
		lines = append(lines, "  CONSTRAINT "+types.QuoteIdent(pk.Name)+" PRIMARY KEY ("+strings.Join(cols, ", ")+") NOT ENFORCED")
	}
	b.WriteString(strings.Join(lines, ",\n"))
	b.WriteString("\n)")
	if t.Comment != "" {
		b.WriteString("\nCOMMENT '" + strings.ReplaceAll(t.Comment, "'", "''") + "'")
	}
	if len(t.PartitionKeys) > 0 {
		keys := make([]string, len(t.PartitionKeys))
		for i, k := range t.PartitionKeys {
			keys[i] = types.QuoteIdent(k)
		}
		b.WriteString("\nPARTITIONED BY (" + strings.Join(keys, ", ") + ")")
	}
	b.WriteString(" WITH (\n")
	opts := make([]string, len(t.Options))
	for i, o := range t.Options {
		opts[i] = "  '" + strings.ReplaceAll(o.Key, "'", "''") + "' = '" + strings.ReplaceAll(o.Value, "'", "''") + "'"
	}
	b.WriteString(strings.Join(opts, ",\n"))
	b.WriteString("\n)\n")
	return b.String()
}

// castableImplicitly reports whether a value of type from may be written
// into a column of type to without an explicit CAST, following Flink's
// implicit-cast rules for INSERT.
func castableImplicitly(from, to types.Type) bool {
	if from.Root == types.RootNull {
		return true
	}
	if from.EqualIgnoringNull(to) {
		return true
	}
	switch {
	case from.IsInteger() && to.IsInteger():
		return from.Root <= to.Root
	case from.IsNumeric() && (to.Root == types.RootDecimal || to.IsApprox()):
		return true
	case from.IsString() && to.IsString():
		return true
	case from.IsBinary() && to.IsBinary():
		return true
	case from.Root == to.Root && (from.Root == types.RootTimestamp || from.Root == types.RootTimestampLTZ || from.Root == types.RootTime):
		return true
	case from.Root == types.RootArray && to.Root == types.RootArray:
		return castableImplicitly(*from.Elem, *to.Elem)
	}
	return false
}

var _ = expr.Column // keep the import used when the file is edited alone
