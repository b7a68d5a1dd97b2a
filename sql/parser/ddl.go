package parser

// This file holds the catalog statements beyond CREATE/DROP TABLE and VIEW:
// ALTER TABLE and ALTER VIEW in Flink 1.17+'s syntax, CREATE/ALTER/DROP
// DATABASE, and CREATE/DROP FUNCTION (parsed so that the session can refuse
// them with a message, not a syntax error).

// AlterTableAction names what an ALTER TABLE statement does.
type AlterTableAction int

// ALTER TABLE actions.
const (
	AlterRenameTable AlterTableAction = iota
	AlterSetOptions
	AlterResetOptions
	AlterAdd
	AlterModify
	AlterDropColumns
	AlterDropWatermark
	AlterDropPrimaryKey
	AlterDropConstraint
	AlterRenameColumn
	AlterCompact   // ALTER TABLE t COMPACT (managed tables; refused when planned)
	AlterPartition // ALTER TABLE t ADD|DROP [IF [NOT] EXISTS] PARTITION (...) (refused when planned)
)

// ColumnPosition is a column's [FIRST | AFTER col] of ALTER TABLE ADD/MODIFY.
type ColumnPosition struct {
	Column *ColumnDef
	First  bool
	After  string // "" when absent
}

// AlterTable is ALTER TABLE [IF EXISTS] name <action>.
type AlterTable struct {
	StmtBase
	IfExists bool
	Name     []string
	Action   AlterTableAction
	NewName  []string  // RENAME TO
	Options  []*Option // SET (...)
	Keys     []string  // RESET (...)
	// ADD / MODIFY: the schema components, in the order written.
	Columns    []*ColumnPosition
	Watermark  *Watermark
	PrimaryKey *PrimaryKey
	// DROP
	DropColumns    []string
	ConstraintName string
	// RENAME old TO new
	OldColumn, NewColumn string
}

// AlterView is ALTER VIEW name RENAME TO new | AS query.
type AlterView struct {
	StmtBase
	Name      []string
	NewName   []string // RENAME TO; nil for AS
	Query     *Query
	QueryText string
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] [catalog.]db [COMMENT '...'] [WITH (...)].
type CreateDatabase struct {
	StmtBase
	IfNotExists bool
	Name        []string
	Comment     string
	Options     []*Option
}

// AlterDatabase is ALTER DATABASE [catalog.]db SET (...).
type AlterDatabase struct {
	StmtBase
	Name    []string
	Options []*Option
}

// DropDatabase is DROP DATABASE [IF EXISTS] [catalog.]db [RESTRICT | CASCADE].
type DropDatabase struct {
	StmtBase
	IfExists bool
	Name     []string
	Cascade  bool
}

// CreateFunction is CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS]
// name AS 'identifier' [LANGUAGE JAVA|SCALA|PYTHON] [USING JAR '...', ...].
type CreateFunction struct {
	StmtBase
	Temporary, System bool
	IfNotExists       bool
	Name              []string
	Class             string
	Language          string
}

// JVMStatement is a statement about JVM code that flinksql parses only to
// refuse it: ALTER FUNCTION, ADD JAR, REMOVE JAR.
type JVMStatement struct {
	StmtBase
	What string // "ALTER FUNCTION", "ADD JAR", "REMOVE JAR"
}

// DropFunction is DROP [TEMPORARY [SYSTEM]] FUNCTION [IF EXISTS] name.
type DropFunction struct {
	StmtBase
	Temporary, System bool
	IfExists          bool
	Name              []string
}

func (p *parser) parseAlter() (Statement, error) {
	start := p.advance().pos // ALTER
	switch {
	case p.acceptKw("TABLE"):
		return p.parseAlterTable(start)
	case p.acceptKw("VIEW"):
		return p.parseAlterView(start)
	case p.isKw("FUNCTION") || p.isKw("TEMPORARY"):
		for !p.atStatementEnd() {
			p.advance()
		}
		return &JVMStatement{StmtBase: p.base(start), What: "ALTER FUNCTION"}, nil
	case p.acceptKw("DATABASE"):
		ad := &AlterDatabase{}
		var err error
		if ad.Name, err = p.compoundIdent(); err != nil {
			return nil, err
		}
		if err := p.expectKw("SET"); err != nil {
			return nil, err
		}
		if ad.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
		ad.StmtBase = p.base(start)
		return ad, nil
	}
	return nil, p.errHere()
}

func (p *parser) parseAlterTable(start Pos) (*AlterTable, error) {
	at := &AlterTable{}
	if p.isKw("IF") && p.peekIsKw(1, "EXISTS") {
		p.advance()
		p.advance()
		at.IfExists = true
	}
	var err error
	if at.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("RENAME"):
		if p.acceptKw("TO") {
			at.Action = AlterRenameTable
			if at.NewName, err = p.compoundIdent(); err != nil {
				return nil, err
			}
			break
		}
		at.Action = AlterRenameColumn
		if at.OldColumn, err = p.ident(); err != nil {
			return nil, err
		}
		if err := p.expectKw("TO"); err != nil {
			return nil, err
		}
		if at.NewColumn, err = p.ident(); err != nil {
			return nil, err
		}
	case p.acceptKw("SET"):
		at.Action = AlterSetOptions
		if at.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
	case p.acceptKw("RESET"):
		at.Action = AlterResetOptions
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if !p.acceptOp(")") {
			for {
				k, _, err := p.stringLit()
				if err != nil {
					return nil, err
				}
				at.Keys = append(at.Keys, k)
				if p.acceptOp(",") {
					continue
				}
				if err := p.expectOp(")"); err != nil {
					return nil, err
				}
				break
			}
		}
	case p.isKw("COMPACT"):
		p.advance()
		at.Action = AlterCompact
	case (p.isKw("ADD") || p.isKw("DROP")) && (p.peekIsKw(1, "PARTITION") || p.peekIsKw(1, "IF")):
		// The partition spec is not interpreted: the statement is refused.
		p.advance()
		at.Action = AlterPartition
		for !p.atStatementEnd() {
			p.advance()
		}
	case p.acceptKw("ADD"):
		at.Action = AlterAdd
		if err := p.parseSchemaComponents(at); err != nil {
			return nil, err
		}
	case p.acceptKw("MODIFY"):
		at.Action = AlterModify
		if err := p.parseSchemaComponents(at); err != nil {
			return nil, err
		}
	case p.acceptKw("DROP"):
		switch {
		case p.isKw("PRIMARY"):
			p.advance()
			if err := p.expectKw("KEY"); err != nil {
				return nil, err
			}
			at.Action = AlterDropPrimaryKey
		case p.isKw("WATERMARK"):
			p.advance()
			at.Action = AlterDropWatermark
		case p.isKw("CONSTRAINT"):
			p.advance()
			at.Action = AlterDropConstraint
			if at.ConstraintName, err = p.ident(); err != nil {
				return nil, err
			}
		case p.isOp("("):
			at.Action = AlterDropColumns
			if at.DropColumns, err = p.parenIdentList(); err != nil {
				return nil, err
			}
		default:
			p.expect(`"PRIMARY"`)
			p.expect(`"WATERMARK"`)
			p.expect(`"CONSTRAINT"`)
			p.expect(`"("`)
			at.Action = AlterDropColumns
			c, err := p.ident()
			if err != nil {
				return nil, err
			}
			at.DropColumns = []string{c}
		}
	default:
		return nil, p.errExpecting(`"RENAME"`, `"SET"`, `"RESET"`, `"ADD"`, `"MODIFY"`, `"DROP"`, `"COMPACT"`)
	}
	at.StmtBase = p.base(start)
	return at, nil
}

// parseSchemaComponents parses the ADD/MODIFY part: one component, or a
// parenthesized list of them; a column may be followed by FIRST or AFTER col.
func (p *parser) parseSchemaComponents(at *AlterTable) error {
	var ct CreateTable
	one := func() error {
		n := len(ct.Columns)
		if err := p.parseTableElement(&ct); err != nil {
			return err
		}
		if len(ct.Columns) > n {
			pos := &ColumnPosition{Column: ct.Columns[n]}
			if p.isKw("FIRST") {
				p.advance()
				pos.First = true
			} else if p.isKw("AFTER") {
				p.advance()
				a, err := p.ident()
				if err != nil {
					return err
				}
				pos.After = a
			} else {
				p.expect(`"FIRST"`)
				p.expect(`"AFTER"`)
			}
			at.Columns = append(at.Columns, pos)
		}
		return nil
	}
	if p.acceptOp("(") {
		for {
			if err := one(); err != nil {
				return err
			}
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return err
			}
			break
		}
	} else if err := one(); err != nil {
		return err
	}
	if len(ct.Watermarks) > 1 {
		return p.errAt(ct.Watermarks[1].Pos(), "Multiple WATERMARK statements is not supported yet")
	}
	if len(ct.Watermarks) == 1 {
		at.Watermark = ct.Watermarks[0]
	}
	at.PrimaryKey = ct.PrimaryKey
	return nil
}

func (p *parser) parseAlterView(start Pos) (*AlterView, error) {
	av := &AlterView{}
	var err error
	if av.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("RENAME"):
		if err := p.expectKw("TO"); err != nil {
			return nil, err
		}
		if av.NewName, err = p.compoundIdent(); err != nil {
			return nil, err
		}
	case p.acceptKw("AS"):
		qStart := p.cur().pos.Offset
		if av.Query, err = p.parseQuery(); err != nil {
			return nil, err
		}
		av.QueryText = p.textFrom(qStart)
	default:
		return nil, p.errHere()
	}
	av.StmtBase = p.base(start)
	return av, nil
}

func (p *parser) parseCreateDatabase(start Pos) (*CreateDatabase, error) {
	cd := &CreateDatabase{}
	var err error
	if cd.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if cd.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	if p.isKw("COMMENT") {
		p.advance()
		if cd.Comment, _, err = p.stringLit(); err != nil {
			return nil, err
		}
	} else {
		p.expect(`"COMMENT"`)
	}
	if p.acceptKw("WITH") {
		if cd.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
	}
	cd.StmtBase = p.base(start)
	return cd, nil
}

func (p *parser) parseDropDatabase(start Pos) (*DropDatabase, error) {
	dd := &DropDatabase{}
	if p.acceptKw("IF") {
		if err := p.expectKw("EXISTS"); err != nil {
			return nil, err
		}
		dd.IfExists = true
	}
	var err error
	if dd.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	switch {
	case p.isKw("CASCADE"):
		p.advance()
		dd.Cascade = true
	case p.isKw("RESTRICT"):
		p.advance()
	default:
		p.expect(`"RESTRICT"`)
		p.expect(`"CASCADE"`)
	}
	dd.StmtBase = p.base(start)
	return dd, nil
}

// parseCreateFunction parses the rest of CREATE [TEMPORARY [SYSTEM]] FUNCTION.
func (p *parser) parseCreateFunction(start Pos, temporary, system bool) (*CreateFunction, error) {
	cf := &CreateFunction{Temporary: temporary, System: system}
	var err error
	if cf.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if cf.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	if err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if cf.Class, _, err = p.stringLit(); err != nil {
		return nil, err
	}
	if p.acceptKw("LANGUAGE") {
		t := p.cur()
		switch t.upper() {
		case "JAVA", "SCALA", "PYTHON", "SQL":
			p.advance()
			cf.Language = t.upper()
		default:
			return nil, p.errExpecting(`"JAVA"`, `"SCALA"`, `"PYTHON"`)
		}
	}
	if p.acceptKw("USING") {
		for {
			if err := p.expectKw("JAR"); err != nil {
				return nil, err
			}
			if _, _, err := p.stringLit(); err != nil {
				return nil, err
			}
			if !p.acceptOp(",") {
				break
			}
		}
	}
	cf.StmtBase = p.base(start)
	return cf, nil
}

func (p *parser) parseDropFunction(start Pos, temporary, system bool) (*DropFunction, error) {
	df := &DropFunction{Temporary: temporary, System: system}
	if p.acceptKw("IF") {
		if err := p.expectKw("EXISTS"); err != nil {
			return nil, err
		}
		df.IfExists = true
	}
	var err error
	if df.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	df.StmtBase = p.base(start)
	return df, nil
}

// parseJar parses ADD JAR 'path' and REMOVE JAR 'path'.
func (p *parser) parseJar() (Statement, error) {
	t := p.advance() // ADD / REMOVE
	if err := p.expectKw("JAR"); err != nil {
		return nil, err
	}
	if _, _, err := p.stringLit(); err != nil {
		return nil, err
	}
	return &JVMStatement{StmtBase: p.base(t.pos), What: t.val + " JAR"}, nil
}
