// Package catalog owns the session's tables and views: their resolved
// schemas (physical, computed and metadata columns, watermark, primary key),
// connector options, and the DDL text they came from. It stores what the
// planner validated; it does not interpret expressions itself.
package catalog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Default names of the built-in catalog and database, as in Flink.
const (
	DefaultCatalog  = "default_catalog"
	DefaultDatabase = "default_database"
)

// Identifier is a fully qualified object name.
type Identifier struct {
	Catalog, Database, Object string
}

// String formats the identifier as Flink prints it in plans and messages:
// default_catalog.default_database.orders (parts back-quoted when needed).
func (id Identifier) String() string {
	return quoteIfNeeded(id.Catalog) + "." + quoteIfNeeded(id.Database) + "." + quoteIfNeeded(id.Object)
}

// ListString formats the identifier as Flink's table scans show it:
// [default_catalog, default_database, orders].
func (id Identifier) ListString() string {
	return "[" + id.Catalog + ", " + id.Database + ", " + id.Object + "]"
}

func quoteIfNeeded(s string) string {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return types.QuoteIdent(s)
		}
	}
	return s
}

// ColumnKind is physical, computed or metadata.
type ColumnKind = parser.ColumnKind

// Column is one column of a table.
type Column struct {
	Name        string
	Type        types.Type // for computed columns, the inferred type
	Kind        ColumnKind
	Expr        parser.Expr // computed columns
	ExprText    string
	MetadataKey string // metadata columns: the key (FROM 'key' or the name)
	Virtual     bool
	Comment     string
}

// Watermark is a table's WATERMARK FOR declaration.
type Watermark struct {
	Column   string
	Expr     parser.Expr
	ExprText string
	Type     types.Type // type of the watermark expression
}

// PrimaryKey is a PRIMARY KEY … NOT ENFORCED constraint.
type PrimaryKey struct {
	Name    string
	Columns []string
}

// Option is one WITH option, in declared order.
type Option struct {
	Key, Value string
}

// Table is a table created with CREATE TABLE.
type Table struct {
	ID         Identifier
	Columns    []Column
	Watermark  *Watermark
	PrimaryKey *PrimaryKey
	Options    []Option
	Comment    string
	Temporary  bool
}

// OptionMap returns the options as a map.
func (t *Table) OptionMap() map[string]string {
	m := make(map[string]string, len(t.Options))
	for _, o := range t.Options {
		m[o.Key] = o.Value
	}
	return m
}

// Schema returns all columns of the table as a row schema.
func (t *Table) Schema() types.Schema {
	s := make(types.Schema, len(t.Columns))
	for i, c := range t.Columns {
		s[i] = types.Column{Name: c.Name, Type: c.Type}
	}
	return s
}

// View is a view created with CREATE VIEW.
type View struct {
	ID        Identifier
	Query     *parser.Query
	QueryText string
	Columns   []string // explicit column names, if any
	Schema    types.Schema
	Comment   string
	Temporary bool
}

// Catalog holds one session's tables and views.
type Catalog struct {
	currentCatalog, currentDatabase string
	tables                          map[Identifier]*Table
	views                           map[Identifier]*View
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		currentCatalog:  DefaultCatalog,
		currentDatabase: DefaultDatabase,
		tables:          map[Identifier]*Table{},
		views:           map[Identifier]*View{},
	}
}

// CurrentCatalog returns the current catalog's name.
func (c *Catalog) CurrentCatalog() string { return c.currentCatalog }

// CurrentDatabase returns the current database's name.
func (c *Catalog) CurrentDatabase() string { return c.currentDatabase }

// Qualify turns a 1-, 2- or 3-part name into an identifier.
func (c *Catalog) Qualify(name []string) (Identifier, error) {
	switch len(name) {
	case 1:
		return Identifier{c.currentCatalog, c.currentDatabase, name[0]}, nil
	case 2:
		return Identifier{c.currentCatalog, name[0], name[1]}, nil
	case 3:
		return Identifier{name[0], name[1], name[2]}, nil
	}
	return Identifier{}, fmt.Errorf("Object identifier %s is not valid: it must have 1 to 3 parts", strings.Join(name, "."))
}

// CheckKnown reports an error when the catalog or database of id does not
// exist (only the default ones do).
func (c *Catalog) CheckKnown(id Identifier) error {
	if id.Catalog != DefaultCatalog {
		return fmt.Errorf("Catalog %s does not exist", id.Catalog)
	}
	if id.Database != DefaultDatabase {
		return fmt.Errorf("Database %s does not exist in Catalog %s", id.Database, id.Catalog)
	}
	return nil
}

// Table returns the table with the given identifier.
func (c *Catalog) Table(id Identifier) (*Table, bool) { t, ok := c.tables[id]; return t, ok }

// View returns the view with the given identifier.
func (c *Catalog) View(id Identifier) (*View, bool) { v, ok := c.views[id]; return v, ok }

// Exists reports whether a table or view has that identifier.
func (c *Catalog) Exists(id Identifier) bool {
	_, t := c.tables[id]
	_, v := c.views[id]
	return t || v
}

// CreateTable adds a table. It fails if the name is taken, unless
// ifNotExists is set, in which case it does nothing.
func (c *Catalog) CreateTable(t *Table, ifNotExists bool) error {
	if c.Exists(t.ID) {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("Could not execute CreateTable in path `%s`.`%s`.`%s`: Table or view already exists", t.ID.Catalog, t.ID.Database, t.ID.Object)
	}
	c.tables[t.ID] = t
	return nil
}

// CreateView adds a view.
func (c *Catalog) CreateView(v *View, ifNotExists bool) error {
	if c.Exists(v.ID) {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("Could not execute CreateView in path `%s`.`%s`.`%s`: Table or view already exists", v.ID.Catalog, v.ID.Database, v.ID.Object)
	}
	c.views[v.ID] = v
	return nil
}

// DropTable removes a table.
func (c *Catalog) DropTable(id Identifier, ifExists bool) error {
	if _, ok := c.tables[id]; !ok {
		if _, isView := c.views[id]; isView {
			return fmt.Errorf("Table with identifier '%s' does not exist: it is a view, use DROP VIEW", id)
		}
		if ifExists {
			return nil
		}
		return fmt.Errorf("Table with identifier '%s' does not exist.", id)
	}
	delete(c.tables, id)
	return nil
}

// DropView removes a view.
func (c *Catalog) DropView(id Identifier, ifExists bool) error {
	if _, ok := c.views[id]; !ok {
		if _, isTable := c.tables[id]; isTable {
			return fmt.Errorf("View with identifier '%s' does not exist: it is a table, use DROP TABLE", id)
		}
		if ifExists {
			return nil
		}
		return fmt.Errorf("View with identifier '%s' does not exist.", id)
	}
	delete(c.views, id)
	return nil
}

// TableNames returns the names of tables and views in the current database, sorted.
func (c *Catalog) TableNames() []string {
	var names []string
	for id := range c.tables {
		names = append(names, id.Object)
	}
	for id := range c.views {
		names = append(names, id.Object)
	}
	sort.Strings(names)
	return names
}

// ViewNames returns the names of views in the current database, sorted.
func (c *Catalog) ViewNames() []string {
	var names []string
	for id := range c.views {
		names = append(names, id.Object)
	}
	sort.Strings(names)
	return names
}
