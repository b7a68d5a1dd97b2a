package catalog

import (
	"reflect"
	"testing"
)

func id(db, obj string) Identifier { return Identifier{DefaultCatalog, db, obj} }

// TestShadowing: a temporary table hides a permanent one of the same name,
// which cannot be dropped while hidden; dropping the temporary one shows it
// again.
func TestShadowing(t *testing.T) {
	c := New()
	perm := &Table{ID: id(DefaultDatabase, "t")}
	tmp := &Table{ID: id(DefaultDatabase, "t"), Temporary: true}
	if err := c.CreateTable(perm, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTable(tmp, false); err != nil {
		t.Fatalf("a temporary table beside a permanent one: %v", err)
	}
	if got, _ := c.Table(perm.ID); got != tmp {
		t.Errorf("Table found %+v, want the temporary one", got)
	}
	if err := c.CreateTable(&Table{ID: perm.ID, Temporary: true}, false); err == nil {
		t.Error("a second temporary table of the name was created")
	}
	if err := c.DropTable(perm.ID, false, false); err == nil {
		t.Error("the shadowed permanent table was dropped")
	}
	if err := c.DropTable(perm.ID, true, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Table(perm.ID); got != perm {
		t.Errorf("after DROP TEMPORARY, Table found %+v, want the permanent one", got)
	}
	// A temporary view shadows the permanent table too.
	if err := c.CreateView(&View{ID: perm.ID, Temporary: true}, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Table(perm.ID); ok {
		t.Error("Table found the table under a temporary view")
	}
	if _, ok := c.View(perm.ID); !ok {
		t.Error("View did not find the temporary view")
	}
	if got := c.TableNames(); !reflect.DeepEqual(got, []string{"t"}) {
		t.Errorf("TableNames = %v, want [t] once", got)
	}
}

func TestDatabases(t *testing.T) {
	c := New()
	if err := c.CreateDatabase(DefaultCatalog, &Database{Name: "db1"}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(DefaultCatalog, &Database{Name: "db1"}, true); err != nil {
		t.Errorf("IF NOT EXISTS: %v", err)
	}
	if err := c.CreateDatabase("other", &Database{Name: "x"}, false); err == nil {
		t.Error("a database in an unknown catalog was created")
	}
	if err := c.CreateTable(&Table{ID: id("db1", "t")}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTable(&Table{ID: id("nope", "t")}, false); err == nil {
		t.Error("a table in an unknown database was created")
	}
	if err := c.UseDatabase([]string{"db1"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Qualify([]string{"t"}); got != id("db1", "t") {
		t.Errorf("after USE db1, t is %v", got)
	}
	if err := c.DropDatabase(DefaultCatalog, "db1", false, true); err == nil {
		t.Error("the current database was dropped")
	}
	if err := c.UseDatabase([]string{DefaultCatalog, DefaultDatabase}); err != nil {
		t.Fatal(err)
	}
	if err := c.DropDatabase(DefaultCatalog, "db1", false, false); err == nil {
		t.Error("RESTRICT dropped a database that holds a table")
	}
	if err := c.DropDatabase(DefaultCatalog, "db1", false, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Table(id("db1", "t")); ok {
		t.Error("CASCADE left the database's table")
	}
	if got := c.DatabaseNames(); !reflect.DeepEqual(got, []string{DefaultDatabase}) {
		t.Errorf("DatabaseNames = %v", got)
	}
	if err := c.DropDatabase(DefaultCatalog, "db1", true, false); err != nil {
		t.Errorf("IF EXISTS: %v", err)
	}
}

func TestReplace(t *testing.T) {
	c := New()
	a := &Table{ID: id(DefaultDatabase, "a")}
	b := &Table{ID: id(DefaultDatabase, "b")}
	for _, x := range []*Table{a, b} {
		if err := c.CreateTable(x, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ReplaceTable(a.ID, &Table{ID: b.ID}); err == nil {
		t.Error("RENAME TO an existing name succeeded")
	}
	if err := c.ReplaceTable(a.ID, &Table{ID: id(DefaultDatabase, "c")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Table(a.ID); ok {
		t.Error("the old name is still there after RENAME TO")
	}
	if _, ok := c.Table(id(DefaultDatabase, "c")); !ok {
		t.Error("the new name is missing after RENAME TO")
	}
}
