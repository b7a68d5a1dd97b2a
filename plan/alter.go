package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// This file holds the DDL that derives a table from another one: ALTER
// TABLE, CREATE TABLE ... LIKE and CREATE TABLE ... AS SELECT. Each builds a
// CREATE TABLE statement and validates it with buildTable, so a derived
// table passes the same checks as one written by hand.

// tableAST returns a stored table as the CREATE TABLE statement SHOW CREATE
// TABLE prints for it, parsed again.
func tableAST(t *catalog.Table) (*parser.CreateTable, error) {
	st, err := parser.ParseStatement(ShowCreateTable(t))
	if err != nil {
		return nil, fmt.Errorf("internal error: the DDL of %s does not parse again: %w", t.ID, err)
	}
	ct, ok := st.(*parser.CreateTable)
	if !ok {
		return nil, fmt.Errorf("internal error: the DDL of %s is not a CREATE TABLE", t.ID)
	}
	return ct, nil
}

func alterErr(format string, args ...any) error {
	return &ValidationError{Msg: "Failed to execute ALTER TABLE statement.\n" + fmt.Sprintf(format, args...)}
}

// AlterTable validates an ALTER TABLE statement against the permanent table
// it names and returns the changed table. It returns nil, nil when IF
// EXISTS found no table.
func (p *Planner) AlterTable(st *parser.AlterTable) (*catalog.Table, error) {
	id, err := p.cat.Qualify(st.Name)
	if err != nil {
		return nil, errAt(st, "%s", err.Error())
	}
	// A temporary object of the name shadows the permanent table: Flink
	// finds the temporary one and refuses it.
	old, ok := p.cat.PermanentTable(id)
	if !ok || p.cat.IsTemporary(id) {
		if _, isView := p.cat.PermanentView(id); isView && !p.cat.IsTemporary(id) {
			return nil, &ValidationError{Msg: "ALTER TABLE for a view is not allowed"}
		}
		if st.IfExists {
			return nil, nil
		}
		return nil, &ValidationError{Msg: fmt.Sprintf("Table `%s`.`%s`.`%s` doesn't exist or is a temporary table.", id.Catalog, id.Database, id.Object)}
	}
	ct, err := tableAST(old)
	if err != nil {
		return nil, err
	}
	ct.Temporary = false
	newID := id
	fromBase := map[*parser.ColumnDef]bool{}
	for _, c := range ct.Columns {
		fromBase[c] = true
	}
	switch st.Action {
	case parser.AlterCompact:
		return nil, &ValidationError{Msg: fmt.Sprintf("ALTER TABLE COMPACT operation is not supported for non-managed table `%s`.`%s`.`%s`", id.Catalog, id.Database, id.Object)}
	case parser.AlterPartition:
		if len(old.PartitionKeys) == 0 {
			return nil, &ValidationError{Msg: fmt.Sprintf("Table %s is not partitioned.", id)}
		}
		return nil, &UnsupportedError{Msg: fmt.Sprintf("ALTER TABLE ... ADD/DROP PARTITION is not supported: the partitions of table %s are the connector's (no catalog keeps a partition list here)", id)}
	case parser.AlterRenameTable:
		if newID, err = p.qualify(st, st.NewName); err != nil {
			return nil, err
		}
	case parser.AlterSetOptions:
		for _, o := range st.Options {
			replaced := false
			for _, e := range ct.Options {
				if e.Key == o.Key {
					e.Value, replaced = o.Value, true
				}
			}
			if !replaced {
				ct.Options = append(ct.Options, o)
			}
		}
	case parser.AlterResetOptions:
		if len(st.Keys) == 0 {
			return nil, &ValidationError{Msg: "ALTER TABLE RESET does not support empty key"}
		}
		for _, k := range st.Keys {
			if k == "connector" {
				return nil, &ValidationError{Msg: "ALTER TABLE RESET does not support changing 'connector'"}
			}
		}
		kept := ct.Options[:0]
		for _, o := range ct.Options {
			drop := false
			for _, k := range st.Keys {
				drop = drop || o.Key == k
			}
			if !drop {
				kept = append(kept, o)
			}
		}
		ct.Options = kept
	case parser.AlterAdd, parser.AlterModify:
		if err := alterSchema(ct, st); err != nil {
			return nil, err
		}
	case parser.AlterDropColumns:
		if err := dropColumns(ct, st.DropColumns); err != nil {
			return nil, err
		}
	case parser.AlterDropWatermark:
		if len(ct.Watermarks) == 0 {
			return nil, alterErr("The base table does not define any watermark strategy.")
		}
		ct.Watermarks = nil
	case parser.AlterDropPrimaryKey:
		if ct.PrimaryKey == nil {
			return nil, alterErr("The base table does not define any primary key.")
		}
		ct.PrimaryKey = nil
	case parser.AlterDropConstraint:
		if ct.PrimaryKey == nil {
			return nil, alterErr("The base table does not define any primary key.")
		}
		if ct.PrimaryKey.ConstraintName != st.ConstraintName {
			return nil, alterErr("The base table does not define a primary key constraint named '%s'. Available constraint name: ['%s'].", st.ConstraintName, ct.PrimaryKey.ConstraintName)
		}
		ct.PrimaryKey = nil
	case parser.AlterRenameColumn:
		if err := renameColumn(ct, st.OldColumn, st.NewColumn); err != nil {
			return nil, err
		}
	}
	// A computed column of the table that no longer binds (its input was
	// modified) is Flink's "Invalid expression for computed column".
	var base types.Schema
	for _, c := range ct.Columns {
		if c.Kind != parser.ComputedColumn {
			t, err := convertType(c.Type)
			if err != nil {
				return nil, err
			}
			base = append(base, types.Column{Name: c.Name, Type: t})
		}
	}
	for _, c := range ct.Columns {
		if c.Kind == parser.ComputedColumn && fromBase[c] {
			b := &binder{scope: newScope(id.Object, base), clause: "computed column"}
			if _, err := b.bind(c.Expr); err != nil {
				return nil, alterErr("Invalid expression for computed column '%s'.", c.Name)
			}
		}
	}
	ct.Name = []string{newID.Catalog, newID.Database, newID.Object}
	t, err := p.buildTable(ct)
	if err != nil {
		if ve, ok := err.(*ValidationError); ok {
			return nil, alterErr("%s", ve.Msg)
		}
		return nil, err
	}
	t.Comment = old.Comment
	return t, nil
}

func columnIndex(cols []*parser.ColumnDef, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func removeColumn(cols []*parser.ColumnDef, i int) []*parser.ColumnDef {
	return append(cols[:i:i], cols[i+1:]...)
}

func insertColumn(cols []*parser.ColumnDef, i int, c *parser.ColumnDef) []*parser.ColumnDef {
	out := make([]*parser.ColumnDef, 0, len(cols)+1)
	out = append(out, cols[:i]...)
	out = append(out, c)
	return append(out, cols[i:]...)
}

// alterSchema applies ADD or MODIFY with Flink's rules: ADD refuses what
// exists, MODIFY refuses what does not; a column goes FIRST, AFTER another,
// or (ADD) at the end or (MODIFY) where it was.
func alterSchema(ct *parser.CreateTable, st *parser.AlterTable) error {
	add := st.Action == parser.AlterAdd
	for _, cp := range st.Columns {
		c := cp.Column
		at := columnIndex(ct.Columns, c.Name)
		if add && at >= 0 {
			return alterErr("Try to add a column `%s` which already exists in the table.", c.Name)
		}
		if !add && at < 0 {
			return alterErr("Try to modify a column `%s` which does not exist in the table.", c.Name)
		}
		if !add {
			ct.Columns = removeColumn(ct.Columns, at)
		} else {
			at = len(ct.Columns)
		}
		switch {
		case cp.First:
			at = 0
		case cp.After != "":
			a := columnIndex(ct.Columns, cp.After)
			if a < 0 {
				return alterErr("Referenced column `%s` by 'AFTER' does not exist in the table.", cp.After)
			}
			at = a + 1
		}
		ct.Columns = insertColumn(ct.Columns, at, c)
	}
	if w := st.Watermark; w != nil {
		if len(w.Column) != 1 {
			return alterErr("Watermark strategy on nested column is not supported yet.")
		}
		if add && len(ct.Watermarks) > 0 {
			old := ct.Watermarks[0]
			return alterErr("The base table has already defined the watermark strategy `%s` AS %s. You might want to drop it before adding a new one.",
				old.Column[0], parser.FormatExprQuoted(old.Expr))
		}
		if !add && len(ct.Watermarks) == 0 {
			return alterErr("The base table does not define any watermark. You might want to add a new one.")
		}
		ct.Watermarks = []*parser.Watermark{w}
	}
	if pk := st.PrimaryKey; pk != nil {
		if add && ct.PrimaryKey != nil {
			cols := make([]string, len(ct.PrimaryKey.Columns))
			for i, c := range ct.PrimaryKey.Columns {
				cols[i] = "`" + c + "`"
			}
			return alterErr("The base table has already defined the primary key constraint [%s]. You might want to drop it before adding a new one.", strings.Join(cols, ", "))
		}
		if !add && ct.PrimaryKey == nil {
			return alterErr("The base table does not define any primary key constraint. You might want to add a new one.")
		}
		for _, name := range pk.Columns {
			if i := columnIndex(ct.Columns, name); i >= 0 && ct.Columns[i].Kind != parser.PhysicalColumn {
				cname := pk.ConstraintName
				if cname == "" {
					cname = "PK_" + strings.Join(pk.Columns, "_")
				}
				return alterErr("Invalid primary key '%s'. Column '%s' is not a physical column.", cname, name)
			}
		}
		ct.PrimaryKey = pk
	}
	return nil
}

// references reports whether expression e names column col.
func references(e parser.Expr, col string) bool {
	found := false
	walkExpr(e, func(n parser.Expr) {
		if id, ok := n.(*parser.Ident); ok && len(id.Parts) > 0 && id.Parts[len(id.Parts)-1] == col {
			found = true
		}
	})
	return found
}

func dropColumns(ct *parser.CreateTable, names []string) error {
	drop := map[string]bool{}
	for _, n := range names {
		if columnIndex(ct.Columns, n) < 0 {
			return alterErr("The column `%s` does not exist in the base table.", n)
		}
		drop[n] = true
	}
	for _, n := range names {
		if pk := ct.PrimaryKey; pk != nil {
			for _, k := range pk.Columns {
				if k == n {
					return alterErr("The column `%s` is used as the primary key.", n)
				}
			}
		}
		for _, c := range ct.Columns {
			if c.Kind == parser.ComputedColumn && !drop[c.Name] && references(c.Expr, n) {
				return alterErr("The column `%s` is referenced by computed column %s.", n, "`"+c.Name+"` AS "+parser.FormatExprQuoted(c.Expr))
			}
		}
		for _, w := range ct.Watermarks {
			if w.Column[0] == n || references(w.Expr, n) {
				return alterErr("The column `%s` is referenced by watermark expression %s.", n, "`"+w.Column[0]+"` AS "+parser.FormatExprQuoted(w.Expr))
			}
		}
	}
	kept := ct.Columns[:0]
	for _, c := range ct.Columns {
		if !drop[c.Name] {
			kept = append(kept, c)
		}
	}
	ct.Columns = kept
	return nil
}

func renameColumn(ct *parser.CreateTable, from, to string) error {
	i := columnIndex(ct.Columns, from)
	if i < 0 {
		return alterErr("The column `%s` does not exist in the base table.", from)
	}
	if columnIndex(ct.Columns, to) >= 0 {
		return alterErr("The column `%s` already existed in table schema.", to)
	}
	for _, c := range ct.Columns {
		if c.Kind == parser.ComputedColumn && references(c.Expr, from) {
			return alterErr("The column `%s` is referenced by computed column %s.", from, "`"+c.Name+"` AS "+parser.FormatExprQuoted(c.Expr))
		}
	}
	for _, w := range ct.Watermarks {
		if w.Column[0] == from || references(w.Expr, from) {
			return alterErr("The column `%s` is referenced by watermark expression %s.", from, "`"+w.Column[0]+"` AS "+parser.FormatExprQuoted(w.Expr))
		}
	}
	ct.Columns[i].Name = to
	if pk := ct.PrimaryKey; pk != nil {
		for j, k := range pk.Columns {
			if k == from {
				pk.Columns[j] = to
			}
		}
	}
	return nil
}

// AlterView validates ALTER VIEW and returns the changed view.
func (p *Planner) AlterView(st *parser.AlterView) (*catalog.View, error) {
	id, err := p.cat.Qualify(st.Name)
	if err != nil {
		return nil, errAt(st, "%s", err.Error())
	}
	old, ok := p.cat.PermanentView(id)
	if !ok || p.cat.IsTemporary(id) {
		if _, isTable := p.cat.PermanentTable(id); isTable && !p.cat.IsTemporary(id) {
			return nil, &ValidationError{Msg: "ALTER VIEW for a table is not allowed"}
		}
		return nil, &ValidationError{Msg: fmt.Sprintf("View `%s`.`%s`.`%s` doesn't exist or is a temporary view.", id.Catalog, id.Database, id.Object)}
	}
	if st.NewName != nil {
		newID, err := p.qualify(st, st.NewName)
		if err != nil {
			return nil, err
		}
		v := *old
		v.ID = newID
		return &v, nil
	}
	return p.CreateView(&parser.CreateView{StmtBase: st.StmtBase, Name: st.Name, Query: st.Query, QueryText: st.QueryText, Comment: old.Comment})
}

// likeStrategies resolves the LIKE clause's options into one strategy per
// feature: the default is INCLUDING ALL OVERWRITING OPTIONS; ALL sets every
// feature, a feature named after it overrides.
func likeStrategies(like *parser.TableLike) (map[string]string, error) {
	features := []string{"CONSTRAINTS", "GENERATED", "METADATA", "OPTIONS", "PARTITIONS", "WATERMARKS"}
	m := map[string]string{}
	for _, f := range features {
		m[f] = "INCLUDING"
	}
	m["OPTIONS"] = "OVERWRITING"
	seen := map[string]bool{}
	for _, o := range like.Options {
		if seen[o.Feature] {
			return nil, errAt(like, "Each like option feature can be declared only once.")
		}
		seen[o.Feature] = true
		if o.Strategy == "OVERWRITING" && (o.Feature == "ALL" || o.Feature == "PARTITIONS" || o.Feature == "CONSTRAINTS") {
			return nil, errAt(like, "Illegal merging strategy '%s' for '%s' option.", o.Strategy, o.Feature)
		}
	}
	for _, o := range like.Options {
		if o.Feature == "ALL" {
			for _, f := range features {
				m[f] = o.Strategy
			}
		}
	}
	for _, o := range like.Options {
		if o.Feature != "ALL" {
			m[o.Feature] = o.Strategy
		}
	}
	return m, nil
}

// mergeLike merges CREATE TABLE ... LIKE source into one CREATE TABLE
// statement, with Flink's merging rules: the source's columns first, then
// the new ones; a duplicate is refused under INCLUDING, replaced under
// OVERWRITING, and the source's copy left out under EXCLUDING.
func (p *Planner) mergeLike(st *parser.CreateTable) (*parser.CreateTable, error) {
	like := st.Like
	id, err := p.qualify(like, like.Name)
	if err != nil {
		return nil, err
	}
	src, ok := p.cat.Table(id)
	if !ok {
		if _, isView := p.cat.View(id); isView {
			return nil, errAt(like, "Source table '%s' of the LIKE clause can not be a VIEW, at line %d, column %d", id, like.P.Line, like.P.Col)
		}
		return nil, errAt(like, "Source table '%s' of the LIKE clause not found in the catalog, at line %d, column %d", id, like.P.Line, like.P.Col)
	}
	strat, err := likeStrategies(like)
	if err != nil {
		return nil, err
	}
	base, err := tableAST(src)
	if err != nil {
		return nil, err
	}
	out := *st
	out.Like = nil
	out.Columns = nil
	for _, c := range base.Columns {
		switch {
		case c.Kind == parser.ComputedColumn && strat["GENERATED"] == "EXCLUDING":
		case c.Kind == parser.MetadataColumn && strat["METADATA"] == "EXCLUDING":
		default:
			out.Columns = append(out.Columns, c)
		}
	}
	for _, c := range st.Columns {
		i := columnIndex(out.Columns, c.Name)
		if i < 0 {
			out.Columns = append(out.Columns, c)
			continue
		}
		prev := out.Columns[i]
		switch {
		case c.Kind == parser.PhysicalColumn || prev.Kind == parser.PhysicalColumn && c.Kind == parser.PhysicalColumn:
			return nil, errAt(c, "A column named '%s' already exists in the base table.", c.Name)
		case prev.Kind == parser.PhysicalColumn && c.Kind == parser.ComputedColumn:
			return nil, errAt(c, "A physical column named '%s' already exists in the base table. Computed columns cannot overwrite physical fields.", c.Name)
		case prev.Kind == parser.PhysicalColumn && c.Kind == parser.MetadataColumn:
			return nil, errAt(c, "A physical column named '%s' already exists in the base table. Metadata columns cannot overwrite physical fields.", c.Name)
		case c.Kind == parser.ComputedColumn && strat["GENERATED"] == "INCLUDING":
			return nil, errAt(c, "A generated column named '%s' already exists in the base table. You might want to specify EXCLUDING GENERATED or OVERWRITING GENERATED.", c.Name)
		case c.Kind == parser.MetadataColumn && strat["METADATA"] == "INCLUDING":
			return nil, errAt(c, "A metadata column named '%s' already exists in the base table. You might want to specify EXCLUDING METADATA or OVERWRITING METADATA.", c.Name)
		default:
			out.Columns[i] = c
		}
	}
	out.Watermarks = nil
	if strat["WATERMARKS"] != "EXCLUDING" {
		out.Watermarks = append(out.Watermarks, base.Watermarks...)
	}
	for _, w := range st.Watermarks {
		replaced := false
		for i, bw := range out.Watermarks {
			if strings.Join(bw.Column, ".") == strings.Join(w.Column, ".") {
				if strat["WATERMARKS"] == "INCLUDING" {
					return nil, errAt(w, "There already exists a watermark spec for column '%s' in the base table. You might want to specify EXCLUDING WATERMARKS or OVERWRITING WATERMARKS.", strings.Join(w.Column, "."))
				}
				out.Watermarks[i], replaced = w, true
			}
		}
		if !replaced {
			out.Watermarks = append(out.Watermarks, w)
		}
	}
	out.PartitionedBy = st.PartitionedBy
	if len(base.PartitionedBy) > 0 && strat["PARTITIONS"] == "INCLUDING" {
		if len(st.PartitionedBy) > 0 {
			return nil, errAt(st, "The base table already has partitions defined. You might want to specify EXCLUDING PARTITIONS.")
		}
		out.PartitionedBy = base.PartitionedBy
	}
	out.PrimaryKey = st.PrimaryKey
	if base.PrimaryKey != nil && strat["CONSTRAINTS"] == "INCLUDING" {
		if st.PrimaryKey != nil {
			return nil, errAt(st.PrimaryKey, "The base table already has a primary key. You might want to specify EXCLUDING CONSTRAINTS.")
		}
		out.PrimaryKey = base.PrimaryKey
	}
	out.Options = nil
	if strat["OPTIONS"] != "EXCLUDING" {
		for _, o := range base.Options {
			c := *o
			out.Options = append(out.Options, &c)
		}
	}
	for _, o := range st.Options {
		replaced := false
		for _, e := range out.Options {
			if e.Key == o.Key {
				if strat["OPTIONS"] == "INCLUDING" {
					return nil, errAt(st, "There already exists an option ['%s' -> '%s'] in the base table. You might want to specify EXCLUDING OPTIONS or OVERWRITING OPTIONS.", e.Key, e.Value)
				}
				e.Value, replaced = o.Value, true
			}
		}
		if !replaced {
			out.Options = append(out.Options, o)
		}
	}
	return &out, nil
}

// CreateTableAs validates CREATE TABLE ... AS SELECT with Flink 1.20's
// restrictions and returns the table, whose columns are the query's, and
// the INSERT that fills it.
func (p *Planner) CreateTableAs(st *parser.CreateTable) (*catalog.Table, *parser.Insert, error) {
	switch {
	case st.Temporary:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support to create temporary table yet.")
	case len(st.Columns) > 0:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support to specify explicit columns yet.")
	case len(st.Watermarks) > 0:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support to specify explicit watermark yet.")
	case st.PrimaryKey != nil:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support primary key constraints yet.")
	case len(st.PartitionedBy) > 0:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support to create partitioned table yet.")
	case st.Like != nil:
		return nil, nil, errAt(st, "CREATE TABLE AS SELECT syntax does not support LIKE clause yet.")
	}
	id, err := p.qualify(st, st.Name)
	if err != nil {
		return nil, nil, err
	}
	pc := p.newPlanContext()
	rel, err := pc.planQuery(st.AsQuery, nil)
	if err != nil {
		return nil, nil, err
	}
	t := &catalog.Table{ID: id, Comment: st.Comment}
	for _, c := range rel.scope.schema() {
		ct := c.Type
		ct.TimeAttr = types.NoTimeAttr // Flink's CTAS keeps no time attribute
		t.Columns = append(t.Columns, catalog.Column{Name: c.Name, Type: ct, Kind: parser.PhysicalColumn})
	}
	for _, o := range st.Options {
		t.Options = append(t.Options, catalog.Option{Key: o.Key, Value: o.Value})
	}
	ins := &parser.Insert{StmtBase: st.StmtBase, Table: st.Name, Query: st.AsQuery}
	return t, ins, nil
}
