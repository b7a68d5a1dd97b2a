package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/plan"
	"github.com/flinksql/flinksql/sql/catalog"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// executeCatalogStatement runs the catalog statements beyond CREATE/DROP
// TABLE and VIEW: ALTER TABLE/VIEW/DATABASE, CREATE TABLE ... AS SELECT,
// CREATE/DROP DATABASE, and the refused CREATE/DROP FUNCTION. ok is false
// when st is none of them.
func (s *Session) executeCatalogStatement(ctx context.Context, st parser.Statement) (r *Result, ok bool, err error) {
	switch x := st.(type) {
	case *parser.CreateTable:
		if x.AsQuery == nil {
			return nil, false, nil
		}
		r, err = s.createTableAs(ctx, x)
	case *parser.AlterTable:
		err = s.withPlanner(ctx, func(p *plan.Planner) error {
			t, err := p.AlterTable(x)
			if err != nil || t == nil {
				return err
			}
			old, _ := s.cat.Qualify(x.Name)
			return s.cat.ReplaceTable(old, t)
		})
		r = okResult
	case *parser.AlterView:
		err = s.withPlanner(ctx, func(p *plan.Planner) error {
			v, err := p.AlterView(x)
			if err != nil {
				return err
			}
			old, _ := s.cat.Qualify(x.Name)
			return s.cat.ReplaceView(old, v)
		})
		r = okResult
	case *parser.CreateDatabase:
		var cat, db string
		if cat, db, err = s.databaseName(x.Name); err == nil {
			d := &catalog.Database{Name: db, Comment: x.Comment}
			for _, o := range x.Options {
				d.Options = append(d.Options, catalog.Option{Key: o.Key, Value: o.Value})
			}
			err = s.cat.CreateDatabase(cat, d, x.IfNotExists)
		}
		r = okResult
	case *parser.AlterDatabase:
		var cat, db string
		if cat, db, err = s.databaseName(x.Name); err == nil {
			d, found := s.cat.Database(db)
			switch {
			case cat != catalog.DefaultCatalog:
				err = fmt.Errorf("A catalog with name [%s] does not exist.", cat)
			case !found:
				err = fmt.Errorf("Database %s does not exist in Catalog %s.", db, cat)
			default:
				for _, o := range x.Options {
					set := false
					for i := range d.Options {
						if d.Options[i].Key == o.Key {
							d.Options[i].Value, set = o.Value, true
						}
					}
					if !set {
						d.Options = append(d.Options, catalog.Option{Key: o.Key, Value: o.Value})
					}
				}
			}
		}
		r = okResult
	case *parser.DropDatabase:
		var cat, db string
		if cat, db, err = s.databaseName(x.Name); err == nil {
			err = s.cat.DropDatabase(cat, db, x.IfExists, x.Cascade)
		}
		r = okResult
	case *parser.Use:
		if x.Catalog {
			if len(x.Name) != 1 || x.Name[0] != catalog.DefaultCatalog {
				err = fmt.Errorf("A catalog with name [%s] does not exist.", strings.Join(x.Name, "."))
			} else {
				err = s.cat.UseDatabase([]string{catalog.DefaultCatalog, catalog.DefaultDatabase})
			}
		} else {
			err = s.cat.UseDatabase(x.Name)
		}
		r = okResult
	case *parser.CreateFunction:
		err = &plan.UnsupportedError{Msg: fmt.Sprintf("CREATE FUNCTION %s AS '%s' is not supported: flinksql runs no JVM or Python user-defined functions. "+
			"Use the built-in functions (SHOW FUNCTIONS lists them), or express the logic in SQL: a CASE expression, a view, or a computed column.",
			strings.Join(x.Name, "."), x.Class)}
	case *parser.JVMStatement:
		err = &plan.UnsupportedError{Msg: x.What + " is not supported: flinksql runs no JVM code (user-defined functions, connector or format jars). " +
			"Use the built-in functions (SHOW FUNCTIONS lists them) and connectors."}
	case *parser.DropFunction:
		if !x.IfExists {
			err = fmt.Errorf("Function %s does not exist: flinksql has no user-defined functions.", strings.Join(x.Name, "."))
		}
		r = okResult
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return r, true, nil
}

func (s *Session) withPlanner(ctx context.Context, fn func(*plan.Planner) error) error {
	p, err := s.planner(ctx)
	if err != nil {
		return err
	}
	return fn(p)
}

// databaseName splits [catalog.]database.
func (s *Session) databaseName(name []string) (string, string, error) {
	switch len(name) {
	case 1:
		return s.cat.CurrentCatalog(), name[0], nil
	case 2:
		return name[0], name[1], nil
	}
	return "", "", fmt.Errorf("Database identifier %s is not valid: it must have 1 or 2 parts", strings.Join(name, "."))
}

// createTableAs creates the table of CREATE TABLE ... AS SELECT from the
// query's schema and starts the INSERT that fills it. The table is created
// only when the INSERT plans; if it does not, nothing is left behind.
func (s *Session) createTableAs(ctx context.Context, x *parser.CreateTable) (*Result, error) {
	p, err := s.planner(ctx)
	if err != nil {
		return nil, err
	}
	t, ins, err := p.CreateTableAs(x)
	if err != nil {
		return nil, err
	}
	existed := s.cat.Exists(t.ID)
	if err := s.cat.CreateTable(t, x.IfNotExists); err != nil {
		return nil, err
	}
	pl, err := p.PlanInsert(ins)
	if err != nil {
		if !existed {
			_ = s.cat.DropTable(t.ID, false, true)
		}
		return nil, err
	}
	r, err := s.submit(ctx, pl, x.Text())
	if err != nil && !existed {
		_ = s.cat.DropTable(t.ID, false, true)
	}
	return r, err
}

// showCreateView renders SHOW CREATE VIEW as Flink does: the column names,
// the comment, then AS and the query (as written; Flink prints its expanded
// form, with qualified names).
func showCreateView(v *catalog.View) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if v.Temporary {
		b.WriteString("TEMPORARY ")
	}
	fmt.Fprintf(&b, "VIEW %s.%s.%s (\n", types.QuoteIdent(v.ID.Catalog), types.QuoteIdent(v.ID.Database), types.QuoteIdent(v.ID.Object))
	cols := make([]string, len(v.Schema))
	for i, c := range v.Schema {
		cols[i] = "  " + types.QuoteIdent(c.Name)
	}
	b.WriteString(strings.Join(cols, ",\n"))
	b.WriteString("\n)\n")
	if v.Comment != "" {
		b.WriteString("COMMENT '" + strings.ReplaceAll(v.Comment, "'", "''") + "'\n")
	}
	b.WriteString("AS " + v.QueryText + "\n")
	return b.String()
}

// serializable is an identifier as Flink's asSerializableString prints it:
// every part back-quoted.
func serializable(id catalog.Identifier) string {
	return types.QuoteIdent(id.Catalog) + "." + types.QuoteIdent(id.Database) + "." + types.QuoteIdent(id.Object)
}
