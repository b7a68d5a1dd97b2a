package parser

import (
	"reflect"
	"testing"
)

func TestAlterTableParse(t *testing.T) {
	at := mustParse(t, "ALTER TABLE IF EXISTS db.t RENAME TO t2").(*AlterTable)
	if !at.IfExists || at.Action != AlterRenameTable || !reflect.DeepEqual(at.Name, []string{"db", "t"}) || !reflect.DeepEqual(at.NewName, []string{"t2"}) {
		t.Errorf("RENAME TO: %+v", at)
	}
	at = mustParse(t, "ALTER TABLE t SET ('a' = '1', 'b' = '2')").(*AlterTable)
	if at.Action != AlterSetOptions || len(at.Options) != 2 || at.Options[1].Key != "b" || at.Options[1].Value != "2" {
		t.Errorf("SET: %+v", at)
	}
	at = mustParse(t, "ALTER TABLE t RESET ('a', 'b')").(*AlterTable)
	if at.Action != AlterResetOptions || !reflect.DeepEqual(at.Keys, []string{"a", "b"}) {
		t.Errorf("RESET: %+v", at)
	}
	at = mustParse(t, "ALTER TABLE t ADD (c INT COMMENT 'x' FIRST, d AS c + 1 AFTER a, WATERMARK FOR ts AS ts, PRIMARY KEY (c) NOT ENFORCED)").(*AlterTable)
	if at.Action != AlterAdd || len(at.Columns) != 2 || !at.Columns[0].First || at.Columns[0].Column.Comment != "x" ||
		at.Columns[1].After != "a" || at.Columns[1].Column.Kind != ComputedColumn || at.Watermark == nil ||
		at.PrimaryKey == nil || !reflect.DeepEqual(at.PrimaryKey.Columns, []string{"c"}) {
		t.Errorf("ADD (...): %+v", at)
	}
	at = mustParse(t, "ALTER TABLE t ADD c BIGINT").(*AlterTable)
	if at.Action != AlterAdd || len(at.Columns) != 1 || at.Columns[0].Column.Name != "c" || at.Columns[0].Column.Type.Name != "BIGINT" {
		t.Errorf("ADD c: %+v", at)
	}
	at = mustParse(t, "ALTER TABLE t MODIFY WATERMARK FOR ts AS ts - INTERVAL '1' SECOND").(*AlterTable)
	if at.Action != AlterModify || at.Watermark == nil || at.Watermark.ExprText != "ts - INTERVAL '1' SECOND" {
		t.Errorf("MODIFY WATERMARK: %+v", at)
	}
	for src, want := range map[string]AlterTableAction{
		"ALTER TABLE t DROP PRIMARY KEY":      AlterDropPrimaryKey,
		"ALTER TABLE t DROP WATERMARK":        AlterDropWatermark,
		"ALTER TABLE t DROP CONSTRAINT pk":    AlterDropConstraint,
		"ALTER TABLE t DROP (a, b)":           AlterDropColumns,
		"ALTER TABLE t DROP a":                AlterDropColumns,
		"ALTER TABLE t RENAME a TO b":         AlterRenameColumn,
		"ALTER TABLE t MODIFY (a STRING)":     AlterModify,
		"ALTER TABLE t MODIFY a INT NOT NULL": AlterModify,
	} {
		if got := mustParse(t, src).(*AlterTable).Action; got != want {
			t.Errorf("%s: action %d, want %d", src, got, want)
		}
	}
	at = mustParse(t, "ALTER TABLE t RENAME a TO b").(*AlterTable)
	if at.OldColumn != "a" || at.NewColumn != "b" {
		t.Errorf("RENAME a TO b: %+v", at)
	}
	if _, err := ParseStatement("ALTER TABLE t FROB"); err == nil {
		t.Error("ALTER TABLE t FROB parsed")
	}
}

func TestCatalogStatementsParse(t *testing.T) {
	av := mustParse(t, "ALTER VIEW v AS SELECT 1").(*AlterView)
	if av.Query == nil || av.QueryText != "SELECT 1" {
		t.Errorf("ALTER VIEW AS: %+v", av)
	}
	av = mustParse(t, "ALTER VIEW v RENAME TO w").(*AlterView)
	if !reflect.DeepEqual(av.NewName, []string{"w"}) {
		t.Errorf("ALTER VIEW RENAME: %+v", av)
	}
	cd := mustParse(t, "CREATE DATABASE IF NOT EXISTS default_catalog.db1 COMMENT 'c' WITH ('k' = 'v')").(*CreateDatabase)
	if !cd.IfNotExists || !reflect.DeepEqual(cd.Name, []string{"default_catalog", "db1"}) || cd.Comment != "c" || len(cd.Options) != 1 {
		t.Errorf("CREATE DATABASE: %+v", cd)
	}
	dd := mustParse(t, "DROP DATABASE IF EXISTS db1 CASCADE").(*DropDatabase)
	if !dd.IfExists || !dd.Cascade {
		t.Errorf("DROP DATABASE: %+v", dd)
	}
	if dd := mustParse(t, "DROP DATABASE db1 RESTRICT").(*DropDatabase); dd.Cascade {
		t.Errorf("RESTRICT: %+v", dd)
	}
	ad := mustParse(t, "ALTER DATABASE db1 SET ('k' = 'v')").(*AlterDatabase)
	if len(ad.Options) != 1 {
		t.Errorf("ALTER DATABASE: %+v", ad)
	}
	cf := mustParse(t, "CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS f AS 'com.x.F' LANGUAGE JAVA USING JAR '/a.jar'").(*CreateFunction)
	if !cf.Temporary || !cf.System || !cf.IfNotExists || cf.Class != "com.x.F" || cf.Language != "JAVA" {
		t.Errorf("CREATE FUNCTION: %+v", cf)
	}
	df := mustParse(t, "DROP TEMPORARY FUNCTION IF EXISTS f").(*DropFunction)
	if !df.Temporary || !df.IfExists {
		t.Errorf("DROP FUNCTION: %+v", df)
	}
}
