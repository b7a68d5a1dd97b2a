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
	// PartitionKeys are the PARTITIONED BY columns, in declared order; each
	// names a physical column.
	PartitionKeys []string
	Options       []Option
	Comment       string
	Temporary     bool
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
	// Scope is the catalog and database that were current when the view
	// was created: its query's one-part names resolve there (Object is
	// unused).
	Scope Identifier
}

// Database is a database of the in-memory catalog.
type Database struct {
	Name    string
	Comment string
	Options []Option
}

// Catalog holds one session's databases, tables and views. Permanent
// objects live in their database; temporary ones (CREATE TEMPORARY ...) live
// beside them and, as in Flink, shadow a permanent object of the same name
// until they are dropped.
type Catalog struct {
	currentCatalog, currentDatabase string
	databases                       map[string]*Database
	tables                          map[Identifier]*Table
	views                           map[Identifier]*View
	tempTables                      map[Identifier]*Table
	tempViews                       map[Identifier]*View
}

// New returns a catalog holding only the empty default database.
func New() *Catalog {
	return &Catalog{
		currentCatalog:  DefaultCatalog,
		currentDatabase: DefaultDatabase,
		databases:       map[string]*Database{DefaultDatabase: {Name: DefaultDatabase}},
		tables:          map[Identifier]*Table{},
		views:           map[Identifier]*View{},
		tempTables:      map[Identifier]*Table{},
		tempViews:       map[Identifier]*View{},
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
// exist.
func (c *Catalog) CheckKnown(id Identifier) error {
	if id.Catalog != DefaultCatalog {
		return fmt.Errorf("Catalog %s does not exist", id.Catalog)
	}
	if _, ok := c.databases[id.Database]; !ok {
		return fmt.Errorf("Database %s does not exist in Catalog %s", id.Database, id.Catalog)
	}
	return nil
}

// checkCatalog refuses a catalog other than the built-in one.
func checkCatalog(name string) error {
	if name != DefaultCatalog {
		return fmt.Errorf("A catalog with name [%s] does not exist.", name)
	}
	return nil
}

// DatabaseNames returns the databases of the catalog, sorted.
func (c *Catalog) DatabaseNames() []string {
	names := make([]string, 0, len(c.databases))
	for n := range c.databases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Database returns a database by name.
func (c *Catalog) Database(name string) (*Database, bool) { d, ok := c.databases[name]; return d, ok }

// CreateDatabase adds a database to the catalog catalogName.
func (c *Catalog) CreateDatabase(catalogName string, d *Database, ifNotExists bool) error {
	if err := checkCatalog(catalogName); err != nil {
		return err
	}
	if _, ok := c.databases[d.Name]; ok {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("Could not execute CREATE DATABASE: Database %s already exists in Catalog %s.", d.Name, catalogName)
	}
	c.databases[d.Name] = d
	return nil
}

// DropDatabase removes a database. Without cascade, as Flink's default
// RESTRICT, a database that holds tables or views is refused; with cascade
// its permanent objects go with it. The current database cannot be dropped.
func (c *Catalog) DropDatabase(catalogName, name string, ifExists, cascade bool) error {
	if err := checkCatalog(catalogName); err != nil {
		return err
	}
	if _, ok := c.databases[name]; !ok {
		if ifExists {
			return nil
		}
		return fmt.Errorf("Could not execute DROP DATABASE: Database %s does not exist in Catalog %s.", name, catalogName)
	}
	if name == c.currentDatabase && catalogName == c.currentCatalog {
		return fmt.Errorf("Cannot drop a database which is currently in use.")
	}
	var objs []Identifier
	for id := range c.tables {
		if id.Database == name {
			objs = append(objs, id)
		}
	}
	for id := range c.views {
		if id.Database == name {
			objs = append(objs, id)
		}
	}
	if len(objs) > 0 && !cascade {
		return fmt.Errorf("Could not execute DROP DATABASE: Database %s in catalog %s is not empty.", name, catalogName)
	}
	for _, id := range objs {
		delete(c.tables, id)
		delete(c.views, id)
	}
	delete(c.databases, name)
	return nil
}

// UseDatabase makes a database current; name has one part (database) or
// two (catalog.database).
func (c *Catalog) UseDatabase(name []string) error {
	cat, db := c.currentCatalog, ""
	switch len(name) {
	case 1:
		db = name[0]
	case 2:
		cat, db = name[0], name[1]
	default:
		return fmt.Errorf("Database identifier %s is not valid: it must have 1 or 2 parts", strings.Join(name, "."))
	}
	if err := checkCatalog(cat); err != nil {
		return err
	}
	if _, ok := c.databases[db]; !ok {
		return fmt.Errorf("A database with name [%s] does not exist in the catalog: [%s].", db, cat)
	}
	c.currentCatalog, c.currentDatabase = cat, db
	return nil
}

// Table returns the table with the given identifier: a temporary table
// shadows a permanent one.
func (c *Catalog) Table(id Identifier) (*Table, bool) {
	if t, ok := c.tempTables[id]; ok {
		return t, true
	}
	if _, ok := c.tempViews[id]; ok {
		return nil, false
	}
	t, ok := c.tables[id]
	return t, ok
}

// View returns the view with the given identifier: a temporary object
// shadows a permanent one.
func (c *Catalog) View(id Identifier) (*View, bool) {
	if v, ok := c.tempViews[id]; ok {
		return v, true
	}
	if _, ok := c.tempTables[id]; ok {
		return nil, false
	}
	v, ok := c.views[id]
	return v, ok
}

// PermanentTable returns the permanent table with the identifier, ignoring
// temporary objects (ALTER TABLE works on permanent tables only).
func (c *Catalog) PermanentTable(id Identifier) (*Table, bool) { t, ok := c.tables[id]; return t, ok }

// PermanentView returns the permanent view with the identifier.
func (c *Catalog) PermanentView(id Identifier) (*View, bool) { v, ok := c.views[id]; return v, ok }

// Exists reports whether a table or view (temporary or not) has that identifier.
func (c *Catalog) Exists(id Identifier) bool {
	return c.existsTemporary(id) || c.existsPermanent(id)
}

// IsTemporary reports whether a temporary table or view has that
// identifier (and so shadows any permanent object of the same name).
func (c *Catalog) IsTemporary(id Identifier) bool { return c.existsTemporary(id) }

func (c *Catalog) existsTemporary(id Identifier) bool {
	_, t := c.tempTables[id]
	_, v := c.tempViews[id]
	return t || v
}

func (c *Catalog) existsPermanent(id Identifier) bool {
	_, t := c.tables[id]
	_, v := c.views[id]
	return t || v
}

// CreateTable adds a table. It fails if the name is taken in its kind
// (temporary or permanent), unless ifNotExists is set, in which case it
// does nothing. A temporary and a permanent object may share a name.
func (c *Catalog) CreateTable(t *Table, ifNotExists bool) error {
	if err := c.CheckKnown(t.ID); err != nil {
		return err
	}
	if t.Temporary {
		if c.existsTemporary(t.ID) {
			if ifNotExists {
				return nil
			}
			return fmt.Errorf("Temporary table '%s' already exists", t.ID)
		}
		c.tempTables[t.ID] = t
		return nil
	}
	if c.existsPermanent(t.ID) {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("Could not execute CreateTable in path `%s`.`%s`.`%s`: Table or view already exists", t.ID.Catalog, t.ID.Database, t.ID.Object)
	}
	c.tables[t.ID] = t
	return nil
}

// CreateView adds a view (see CreateTable for names).
func (c *Catalog) CreateView(v *View, ifNotExists bool) error {
	if err := c.CheckKnown(v.ID); err != nil {
		return err
	}
	if v.Temporary {
		if c.existsTemporary(v.ID) {
			if ifNotExists {
				return nil
			}
			return fmt.Errorf("Temporary table '%s' already exists", v.ID)
		}
		c.tempViews[v.ID] = v
		return nil
	}
	if c.existsPermanent(v.ID) {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("Could not execute CreateView in path `%s`.`%s`.`%s`: Table or view already exists", v.ID.Catalog, v.ID.Database, v.ID.Object)
	}
	c.views[v.ID] = v
	return nil
}

// DropTable removes a table: the temporary one with temporary set, else the
// permanent one, which Flink refuses to drop while a temporary table of the
// same name shadows it.
func (c *Catalog) DropTable(id Identifier, temporary, ifExists bool) error {
	if temporary {
		if _, ok := c.tempTables[id]; !ok {
			if ifExists {
				return nil
			}
			return fmt.Errorf("Temporary table with identifier '%s' does not exist.", id)
		}
		delete(c.tempTables, id)
		return nil
	}
	if _, ok := c.tempTables[id]; ok {
		return fmt.Errorf("Temporary table with identifier '%s' exists. Drop it first before removing the permanent table.", id)
	}
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

// DropView removes a view (see DropTable).
func (c *Catalog) DropView(id Identifier, temporary, ifExists bool) error {
	if temporary {
		if _, ok := c.tempViews[id]; !ok {
			if ifExists {
				return nil
			}
			return fmt.Errorf("Temporary view with identifier '%s' does not exist.", id)
		}
		delete(c.tempViews, id)
		return nil
	}
	if _, ok := c.tempViews[id]; ok {
		return fmt.Errorf("Temporary view with identifier '%s' exists. Drop it first before removing the permanent view.", id)
	}
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

// ReplaceTable stores a changed permanent table (ALTER TABLE); with a new
// identifier (RENAME TO) the old one goes.
func (c *Catalog) ReplaceTable(old Identifier, t *Table) error {
	if old != t.ID {
		if err := c.CheckKnown(t.ID); err != nil {
			return err
		}
		if c.existsPermanent(t.ID) {
			return fmt.Errorf("Could not execute ALTER TABLE %s RENAME TO %s: Table or view %s already exists in Catalog %s.", old, t.ID, t.ID.Object, t.ID.Catalog)
		}
		delete(c.tables, old)
	}
	c.tables[t.ID] = t
	return nil
}

// ReplaceView stores a changed permanent view (ALTER VIEW).
func (c *Catalog) ReplaceView(old Identifier, v *View) error {
	if old != v.ID {
		if err := c.CheckKnown(v.ID); err != nil {
			return err
		}
		if c.existsPermanent(v.ID) {
			return fmt.Errorf("Could not execute ALTER VIEW %s RENAME TO %s: Table or view %s already exists in Catalog %s.", old, v.ID, v.ID.Object, v.ID.Catalog)
		}
		delete(c.views, old)
	}
	c.views[v.ID] = v
	return nil
}

// TableNames returns the names of tables and views (temporary or not) in
// the current database, sorted.
func (c *Catalog) TableNames() []string { return c.ObjectNames(c.currentDatabase, true) }

// ViewNames returns the names of views in the current database, sorted.
func (c *Catalog) ViewNames() []string { return c.ObjectNames(c.currentDatabase, false) }

// ObjectNames returns the names of the views, and with tables set also the
// tables, of a database, temporary or not, each once, sorted.
func (c *Catalog) ObjectNames(database string, tables bool) []string {
	seen := map[string]bool{}
	add := func(id Identifier) {
		if id.Catalog == c.currentCatalog && id.Database == database {
			seen[id.Object] = true
		}
	}
	for id := range c.views {
		add(id)
	}
	for id := range c.tempViews {
		add(id)
	}
	if tables {
		for id := range c.tables {
			add(id)
		}
		for id := range c.tempTables {
			add(id)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
