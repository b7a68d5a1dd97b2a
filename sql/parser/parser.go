package parser

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxDepth bounds the nesting of expressions, queries, data types and
// statements; deeper input is rejected with an error instead of exhausting
// the stack.
const MaxDepth = 1000

// MaxExprHeight bounds the height of an expression tree: the number of
// operators on its longest path from the root to a leaf. A flat chain such
// as a OR b OR c ... is parsed by a loop, not by recursion, but it becomes
// a left-deep tree that every later stage (binder, type inference,
// evaluation) walks recursively; beyond this height those walks would
// exhaust the goroutine stack, which is a fatal error and not a panic.
// 100 000-term chains are accepted.
const MaxExprHeight = 250_000

// maxLookahead bounds speculative scans over runs of '('.
const maxLookahead = MaxDepth + 16

type parser struct {
	src     string
	toks    []token
	i       int
	lastEnd int // byte offset just past the last consumed token
	depth   int
	// height is, while an expression is being parsed, the greatest
	// height of the subexpressions finished so far (see parseExpr).
	height int

	expected []string
	expAt    int // token index the expectations refer to
}

func newParser(src string, toks []token) *parser {
	return &parser{src: src, toks: toks, expAt: -1}
}

func (p *parser) cur() *token { return p.peek(0) }

func (p *parser) peek(n int) *token {
	k := p.i + n
	if k >= len(p.toks) {
		k = len(p.toks) - 1
	}
	if k < 0 {
		k = 0
	}
	return &p.toks[k]
}

func (p *parser) advance() *token {
	t := p.cur()
	if t.kind != tokEOF {
		p.lastEnd = t.end
		p.i++
	}
	return t
}

// expect records that s would have been accepted at the current token.
func (p *parser) expect(s string) {
	if p.expAt != p.i {
		p.expAt = p.i
		p.expected = p.expected[:0]
	}
	for _, e := range p.expected {
		if e == s {
			return
		}
	}
	p.expected = append(p.expected, s)
}

// errHere returns a syntax error at the current token listing the recorded
// expectations.
func (p *parser) errHere() *Error {
	t := p.cur()
	e := &Error{Pos: t.pos, Encountered: t.text}
	if p.expAt == p.i {
		e.Expected = append([]string(nil), p.expected...)
	}
	return e
}

// errExpecting records what would have been accepted and returns errHere.
func (p *parser) errExpecting(what ...string) *Error {
	for _, w := range what {
		p.expect(w)
	}
	return p.errHere()
}

func (p *parser) errAt(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf("%s at %s.", fmt.Sprintf(format, args...), pos)}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.errAt(p.cur().pos, "Nesting too deep (more than %d levels)", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// isKw reports whether the current token is the word kw (no recording).
func (p *parser) isKw(kw string) bool {
	t := p.cur()
	return t.kind == tokWord && t.val == kw
}

func (p *parser) peekIsKw(n int, kw string) bool {
	t := p.peek(n)
	return t.kind == tokWord && t.val == kw
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tokOp && t.val == op
}

func (p *parser) peekIsOp(n int, op string) bool {
	t := p.peek(n)
	return t.kind == tokOp && t.val == op
}

func quoteExp(s string) string { return `"` + s + `"` }

// acceptKw consumes kw if present, otherwise records it as expected.
func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.advance()
		return true
	}
	p.expect(quoteExp(kw))
	return false
}

func (p *parser) expectKw(kws ...string) error {
	for _, kw := range kws {
		if !p.acceptKw(kw) {
			return p.errHere()
		}
	}
	return nil
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.advance()
		return true
	}
	p.expect(quoteExp(op))
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.errHere()
	}
	return nil
}

// isIdentTok reports whether t can be used as an identifier.
func isIdentTok(t *token) bool {
	return t.kind == tokQuoted || (t.kind == tokWord && !reservedWords[t.val])
}

// identValue returns the identifier text of t (case preserved).
func identValue(t *token) string {
	if t.kind == tokQuoted {
		return t.val
	}
	return t.text
}

func (p *parser) ident() (string, error) {
	t := p.cur()
	if isIdentTok(t) {
		p.advance()
		return identValue(t), nil
	}
	return "", p.errExpecting("<IDENTIFIER>")
}

// compoundIdent parses a dotted name such as cat.db.t.
func (p *parser) compoundIdent() ([]string, error) {
	first, err := p.ident()
	if err != nil {
		return nil, err
	}
	parts := []string{first}
	for p.isOp(".") {
		p.advance()
		part, err := p.identAfterDot()
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// identAfterDot accepts any word (reserved words included) or a quoted
// identifier after a '.'.
func (p *parser) identAfterDot() (string, error) {
	t := p.cur()
	if t.kind == tokWord || t.kind == tokQuoted {
		p.advance()
		return identValue(t), nil
	}
	return "", p.errExpecting("<IDENTIFIER>")
}

// parenIdentList parses ( ident, ... ).
func (p *parser) parenIdentList() ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var out []string
	for {
		id, err := p.ident()
		if err != nil {
			return nil, err
		}
		out = append(out, id)
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

func (p *parser) stringLit() (string, Pos, error) {
	t := p.cur()
	if t.kind == tokString {
		p.advance()
		return t.val, t.pos, nil
	}
	return "", t.pos, p.errExpecting("<QUOTED_STRING>")
}

func (p *parser) intLit() (int, error) {
	t := p.cur()
	if t.kind == tokNumber && isAllDigits(t.text) {
		n, err := strconv.Atoi(t.text)
		if err != nil || n > 1<<31-1 {
			return 0, p.errAt(t.pos, "Numeric literal '%s' out of range", t.text)
		}
		p.advance()
		return n, nil
	}
	return 0, p.errExpecting("<UNSIGNED_INTEGER_LITERAL>")
}

func isAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// textFrom returns the source text from byte offset start to the end of the
// last consumed token.
func (p *parser) textFrom(start int) string {
	if p.lastEnd < start || p.lastEnd > len(p.src) {
		return ""
	}
	return p.src[start:p.lastEnd]
}

func (p *parser) base(start Pos) StmtBase {
	return StmtBase{At: At{start}, Src: p.textFrom(start.Offset)}
}

// ---------------------------------------------------------------- public API

// ParseStatement parses exactly one statement (a trailing ';' is allowed).
func ParseStatement(src string) (st Statement, err error) {
	defer recoverErr(&err)
	toks, lexErr := tokenize(src)
	if lexErr != nil {
		return nil, lexErr
	}
	p := newParser(src, toks)
	s, perr := p.parseStatement()
	if perr != nil {
		return nil, perr
	}
	p.acceptOp(";")
	if p.cur().kind != tokEOF {
		return nil, p.errExpecting("<EOF>")
	}
	return s, nil
}

// ParseExpr parses one expression.
func ParseExpr(src string) (e Expr, err error) {
	defer recoverErr(&err)
	toks, lexErr := tokenize(src)
	if lexErr != nil {
		return nil, lexErr
	}
	p := newParser(src, toks)
	x, perr := p.parseExpr(0)
	if perr != nil {
		return nil, perr
	}
	if p.cur().kind != tokEOF {
		return nil, p.errExpecting("<EOF>")
	}
	return x, nil
}

// ParseScript splits a script into statements on top-level ';' and parses
// each. Positions are relative to the whole source. The SQL-client form
// BEGIN STATEMENT SET; INSERT ...; END; is folded into one *StatementSet.
func ParseScript(src string) (stmts []Statement, err error) {
	defer recoverErr(&err)
	toks, lexErr := tokenize(src)
	if lexErr != nil {
		return nil, lexErr
	}
	p := newParser(src, toks)
	for {
		for p.isOp(";") {
			p.advance()
		}
		if p.cur().kind == tokEOF {
			return stmts, nil
		}
		s, perr := p.parseStatement()
		if perr != nil {
			return nil, perr
		}
		if b, ok := s.(*BeginStatementSet); ok {
			set, perr := p.parseClientStatementSet(b)
			if perr != nil {
				return nil, perr
			}
			s = set
		} else if e, ok := s.(*End); ok {
			return nil, p.errAt(e.Pos(), "END without BEGIN STATEMENT SET")
		}
		stmts = append(stmts, s)
		if perr := p.statementEnd(); perr != nil {
			return nil, perr
		}
	}
}

// statementEnd requires ';' or the end of input after a statement.
func (p *parser) statementEnd() error {
	if p.acceptOp(";") {
		return nil
	}
	if p.cur().kind == tokEOF {
		return nil
	}
	return p.errExpecting("<EOF>")
}

// parseClientStatementSet collects INSERT statements after BEGIN STATEMENT SET
// up to END.
func (p *parser) parseClientStatementSet(b *BeginStatementSet) (*StatementSet, error) {
	set := &StatementSet{}
	if err := p.expectOp(";"); err != nil {
		return nil, err
	}
	for {
		for p.isOp(";") {
			p.advance()
		}
		if p.isKw("END") {
			p.advance()
			set.StmtBase = p.base(b.Pos())
			return set, nil
		}
		if p.cur().kind == tokEOF {
			return nil, p.errExpecting(`"INSERT"`, `"END"`)
		}
		if !p.isKw("INSERT") && !p.isKw("EXECUTE") {
			return nil, p.errExpecting(`"INSERT"`, `"END"`)
		}
		s, err := p.parseStatement()
		if err != nil {
			return nil, err
		}
		ins, ok := s.(*Insert)
		if !ok {
			return nil, p.errAt(s.Pos(), "Only INSERT statements are allowed in a statement set")
		}
		set.Inserts = append(set.Inserts, ins)
		if err := p.expectOp(";"); err != nil {
			return nil, err
		}
	}
}

// recoverErr is a last line of defence that converts an unexpected panic
// into an error; the parser is written not to panic.
func recoverErr(err *error) {
	if r := recover(); r != nil {
		*err = &Error{Msg: fmt.Sprintf("internal parser error: %v", r)}
	}
}

// ---------------------------------------------------------------- statements

var statementStarts = []string{`"SELECT"`, `"WITH"`, `"VALUES"`, `"INSERT"`, `"CREATE"`, `"DROP"`, `"ALTER"`, `"SET"`, `"RESET"`, `"SHOW"`, `"DESCRIBE"`, `"EXPLAIN"`, `"EXECUTE"`, `"USE"`}

func (p *parser) parseStatement() (Statement, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	start := t.pos
	if t.kind == tokOp && t.val == "(" {
		return p.parseQueryStmt()
	}
	switch t.upper() {
	case "SELECT", "WITH", "VALUES":
		return p.parseQueryStmt()
	case "INSERT":
		return p.parseInsert(start)
	case "CREATE":
		return p.parseCreate()
	case "DROP":
		return p.parseDrop()
	case "ALTER":
		return p.parseAlter()
	case "ADD", "REMOVE":
		if p.peekIsKw(1, "JAR") {
			return p.parseJar()
		}
	case "SET":
		return p.parseSet()
	case "RESET":
		return p.parseReset()
	case "SHOW":
		return p.parseShow()
	case "DESCRIBE", "DESC":
		return p.parseDescribe()
	case "EXPLAIN":
		return p.parseExplain()
	case "EXECUTE":
		return p.parseExecute()
	case "BEGIN":
		p.advance()
		if err := p.expectKw("STATEMENT", "SET"); err != nil {
			return nil, err
		}
		return &BeginStatementSet{StmtBase: p.base(start)}, nil
	case "END":
		p.advance()
		return &End{StmtBase: p.base(start)}, nil
	case "STOP":
		return p.parseStopJob()
	case "USE":
		return p.parseUse()
	}
	return nil, p.errExpecting(statementStarts...)
}

func (p *parser) parseQueryStmt() (Statement, error) {
	start := p.cur().pos
	q, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	return &QueryStmt{StmtBase: p.base(start), Query: q}, nil
}

func (p *parser) parseInsert(start Pos) (*Insert, error) {
	if err := p.expectKw("INSERT"); err != nil {
		return nil, err
	}
	ins := &Insert{}
	if p.isKw("OVERWRITE") {
		p.advance()
		ins.Overwrite = true
	} else if !p.acceptKw("INTO") {
		return nil, p.errExpecting(`"OVERWRITE"`)
	}
	name, err := p.compoundIdent()
	if err != nil {
		return nil, err
	}
	ins.Table = name
	if p.isOp("/*+") {
		if ins.Hints, err = p.parseHints(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("PARTITION") {
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		for {
			col, err := p.ident()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("="); err != nil {
				return nil, err
			}
			v, err := p.parseExpr(precConcat)
			if err != nil {
				return nil, err
			}
			ins.Partition = append(ins.Partition, PartitionValue{Column: col, Value: v})
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			break
		}
	}
	if p.isOp("(") && !p.startsQueryAfterParens() {
		cols, err := p.parenIdentList()
		if err != nil {
			return nil, err
		}
		ins.Columns = cols
	}
	q, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	ins.Query = q
	ins.StmtBase = p.base(start)
	return ins, nil
}

// startsQueryAfterParens reports whether the tokens after a run of '(' at the
// current position begin a query.
func (p *parser) startsQueryAfterParens() bool {
	n := 0
	for n < maxLookahead && p.peekIsOp(n, "(") {
		n++
	}
	t := p.peek(n)
	return t.kind == tokWord && (t.val == "SELECT" || t.val == "WITH" || t.val == "VALUES")
}

func (p *parser) parseCreate() (Statement, error) {
	start := p.cur().pos
	p.advance() // CREATE
	temporary, system := false, false
	if p.isKw("TEMPORARY") {
		p.advance()
		temporary = true
		if p.isKw("SYSTEM") && p.peekIsKw(1, "FUNCTION") {
			p.advance()
			system = true
		}
	} else {
		p.expect(`"TEMPORARY"`)
	}
	switch {
	case p.acceptKw("TABLE"):
		return p.parseCreateTable(start, temporary)
	case p.acceptKw("VIEW"):
		return p.parseCreateView(start, temporary)
	case p.acceptKw("FUNCTION"):
		return p.parseCreateFunction(start, temporary, system)
	case !temporary && p.acceptKw("DATABASE"):
		return p.parseCreateDatabase(start)
	}
	return nil, p.errHere()
}

func (p *parser) ifNotExists() (bool, error) {
	if !p.acceptKw("IF") {
		return false, nil
	}
	if err := p.expectKw("NOT", "EXISTS"); err != nil {
		return false, err
	}
	return true, nil
}

func (p *parser) parseCreateTable(start Pos, temporary bool) (*CreateTable, error) {
	ct := &CreateTable{Temporary: temporary}
	var err error
	if ct.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if ct.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	if p.acceptOp("(") {
		for {
			if err := p.parseTableElement(ct); err != nil {
				return nil, err
			}
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			break
		}
	}
	if p.isKw("COMMENT") {
		p.advance()
		if ct.Comment, _, err = p.stringLit(); err != nil {
			return nil, err
		}
		ct.HasComment = true
	} else {
		p.expect(`"COMMENT"`)
	}
	if p.isKw("PARTITIONED") {
		p.advance()
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if ct.PartitionedBy, err = p.parenIdentList(); err != nil {
			return nil, err
		}
	} else {
		p.expect(`"PARTITIONED"`)
	}
	if p.acceptKw("WITH") {
		if ct.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
	}
	if p.isKw("LIKE") {
		likeStart := p.advance().pos
		like := &TableLike{At: At{likeStart}}
		if like.Name, err = p.compoundIdent(); err != nil {
			return nil, err
		}
		if p.acceptOp("(") {
			for {
				var strategy string
				for _, s := range []string{"INCLUDING", "EXCLUDING", "OVERWRITING"} {
					if p.isKw(s) {
						strategy = s
						p.advance()
						break
					}
					p.expect(quoteExp(s))
				}
				if strategy == "" {
					if len(like.Options) > 0 && p.acceptOp(")") {
						break
					}
					return nil, p.errHere()
				}
				var feature string
				for _, f := range []string{"ALL", "CONSTRAINTS", "PARTITIONS", "GENERATED", "METADATA", "OPTIONS", "WATERMARKS"} {
					if p.isKw(f) {
						feature = f
						p.advance()
						break
					}
					p.expect(quoteExp(f))
				}
				if feature == "" {
					return nil, p.errHere()
				}
				like.Options = append(like.Options, LikeOption{Strategy: strategy, Feature: feature})
				p.acceptOp(",")
			}
		}
		ct.Like = like
	} else {
		p.expect(`"LIKE"`)
	}
	if p.acceptKw("AS") {
		if ct.AsQuery, err = p.parseQuery(); err != nil {
			return nil, err
		}
	}
	ct.StmtBase = p.base(start)
	return ct, nil
}

// parseOptions parses ( 'k' = 'v', ... ) after WITH.
func (p *parser) parseOptions() ([]*Option, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var opts []*Option
	if p.acceptOp(")") {
		return opts, nil
	}
	for {
		k, kp, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, vp, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		opts = append(opts, &Option{Key: k, Value: v, KeyPos: kp, ValuePos: vp})
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return opts, nil
	}
}

func (p *parser) setPrimaryKey(ct *CreateTable, pk *PrimaryKey) error {
	if ct.PrimaryKey != nil {
		return p.errAt(pk.Pos(), "Duplicate primary key definition")
	}
	ct.PrimaryKey = pk
	return nil
}

// parsePKTail parses PRIMARY KEY [(cols)] [NOT] ENFORCED; the column list
// is parsed only when withCols is set.
func (p *parser) parsePKTail(pk *PrimaryKey, withCols bool) error {
	if err := p.expectKw("PRIMARY", "KEY"); err != nil {
		return err
	}
	if withCols {
		cols, err := p.parenIdentList()
		if err != nil {
			return err
		}
		pk.Columns = cols
	}
	if p.acceptKw("NOT") {
		if !p.isKw("ENFORCED") {
			return p.errExpecting(`"ENFORCED"`)
		}
		p.advance()
		return nil
	}
	if p.isKw("ENFORCED") {
		p.advance()
		pk.Enforced = true
		return nil
	}
	return p.errExpecting(`"ENFORCED"`)
}

func (p *parser) parseTableElement(ct *CreateTable) error {
	t := p.cur()
	start := t.pos
	// WATERMARK FOR col AS expr
	if p.isKw("WATERMARK") && p.peekIsKw(1, "FOR") {
		p.advance()
		p.advance()
		wm := &Watermark{At: At{start}}
		var err error
		if wm.Column, err = p.compoundIdent(); err != nil {
			return err
		}
		if err := p.expectKw("AS"); err != nil {
			return err
		}
		exprStart := p.cur().pos.Offset
		if wm.Expr, err = p.parseExpr(0); err != nil {
			return err
		}
		wm.ExprText = p.textFrom(exprStart)
		ct.Watermarks = append(ct.Watermarks, wm)
		return nil
	}
	p.expect(`"WATERMARK"`)
	if p.isKw("CONSTRAINT") || p.isKw("PRIMARY") {
		pk := &PrimaryKey{At: At{start}}
		if p.acceptKw("CONSTRAINT") {
			name, err := p.ident()
			if err != nil {
				return err
			}
			pk.ConstraintName = name
		}
		if err := p.parsePKTail(pk, true); err != nil {
			return err
		}
		return p.setPrimaryKey(ct, pk)
	}
	p.expect(`"CONSTRAINT"`)
	p.expect(`"PRIMARY"`)
	name, err := p.ident()
	if err != nil {
		return err
	}
	col := &ColumnDef{At: At{start}, Name: name}
	if p.acceptKw("AS") {
		col.Kind = ComputedColumn
		exprStart := p.cur().pos.Offset
		if col.Expr, err = p.parseExpr(0); err != nil {
			return err
		}
		col.ExprText = p.textFrom(exprStart)
	} else {
		if col.Type, err = p.parseDataType(); err != nil {
			return err
		}
		if p.isKw("METADATA") {
			p.advance()
			col.Kind = MetadataColumn
			if p.acceptKw("FROM") {
				if col.MetadataKey, _, err = p.stringLit(); err != nil {
					return err
				}
				col.HasFrom = true
			}
			if p.isKw("VIRTUAL") {
				p.advance()
				col.Virtual = true
			} else {
				p.expect(`"VIRTUAL"`)
			}
		} else {
			p.expect(`"METADATA"`)
			if p.isKw("CONSTRAINT") || p.isKw("PRIMARY") {
				pk := &PrimaryKey{At: At{p.cur().pos}, Columns: []string{name}}
				if p.acceptKw("CONSTRAINT") {
					cname, err := p.ident()
					if err != nil {
						return err
					}
					pk.ConstraintName = cname
				}
				if err := p.parsePKTail(pk, false); err != nil {
					return err
				}
				if err := p.setPrimaryKey(ct, pk); err != nil {
					return err
				}
				col.PrimaryKey = true
			} else {
				p.expect(`"PRIMARY"`)
			}
		}
	}
	if p.isKw("COMMENT") {
		p.advance()
		if col.Comment, _, err = p.stringLit(); err != nil {
			return err
		}
		col.HasComment = true
	} else {
		p.expect(`"COMMENT"`)
	}
	ct.Columns = append(ct.Columns, col)
	return nil
}

func (p *parser) parseCreateView(start Pos, temporary bool) (*CreateView, error) {
	cv := &CreateView{Temporary: temporary}
	var err error
	if cv.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if cv.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	if p.isOp("(") {
		if cv.Columns, err = p.parenIdentList(); err != nil {
			return nil, err
		}
	}
	if p.isKw("COMMENT") {
		p.advance()
		if cv.Comment, _, err = p.stringLit(); err != nil {
			return nil, err
		}
		cv.HasComment = true
	} else {
		p.expect(`"COMMENT"`)
	}
	if err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	qStart := p.cur().pos.Offset
	if cv.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	cv.QueryText = p.textFrom(qStart)
	cv.StmtBase = p.base(start)
	return cv, nil
}

func (p *parser) parseDrop() (Statement, error) {
	start := p.advance().pos // DROP
	d := &Drop{}
	system := false
	if p.isKw("TEMPORARY") {
		p.advance()
		d.Temporary = true
		if p.isKw("SYSTEM") && p.peekIsKw(1, "FUNCTION") {
			p.advance()
			system = true
		}
	} else {
		p.expect(`"TEMPORARY"`)
	}
	switch {
	case p.acceptKw("FUNCTION"):
		return p.parseDropFunction(start, d.Temporary, system)
	case !d.Temporary && p.acceptKw("DATABASE"):
		return p.parseDropDatabase(start)
	case p.acceptKw("TABLE"):
		d.Object = "TABLE"
	case p.acceptKw("VIEW"):
		d.Object = "VIEW"
	default:
		return nil, p.errHere()
	}
	if p.acceptKw("IF") {
		if err := p.expectKw("EXISTS"); err != nil {
			return nil, err
		}
		d.IfExists = true
	}
	var err error
	if d.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	d.StmtBase = p.base(start)
	return d, nil
}

// atStatementEnd reports whether the current token ends a statement.
func (p *parser) atStatementEnd() bool {
	return p.cur().kind == tokEOF || p.isOp(";")
}

// rawUntil consumes tokens up to (not including) the operator stop or the
// end of the statement and returns their source text.
func (p *parser) rawUntil(stop string) string {
	start := p.cur().pos.Offset
	for !p.atStatementEnd() && !(stop != "" && p.isOp(stop)) {
		p.advance()
	}
	return strings.TrimSpace(p.textFrom(start))
}

func (p *parser) parseSet() (*Set, error) {
	start := p.advance().pos // SET
	s := &Set{}
	if p.atStatementEnd() {
		s.StmtBase = p.base(start)
		return s, nil
	}
	if p.cur().kind == tokString {
		s.Key = p.advance().val
	} else {
		s.Key = p.rawUntil("=")
		if s.Key == "" {
			return nil, p.errExpecting("<QUOTED_STRING>", "<EOF>")
		}
	}
	if err := p.expectOp("="); err != nil {
		return nil, err
	}
	if p.cur().kind == tokString && (p.peek(1).kind == tokEOF || p.peekIsOp(1, ";")) {
		s.Value = p.advance().val
	} else {
		s.Value = p.rawUntil("")
		if s.Value == "" {
			return nil, p.errExpecting("<QUOTED_STRING>")
		}
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) parseReset() (*Reset, error) {
	start := p.advance().pos // RESET
	r := &Reset{}
	if p.cur().kind == tokString {
		r.Key = p.advance().val
	} else if !p.atStatementEnd() {
		r.Key = p.rawUntil("")
	}
	r.StmtBase = p.base(start)
	return r, nil
}

func (p *parser) parseShow() (Statement, error) {
	start := p.advance().pos // SHOW
	s := &Show{}
	word := p.cur().upper()
	switch word {
	case "TABLES", "VIEWS", "FUNCTIONS", "JOBS", "CATALOGS", "DATABASES", "MODULES", "JARS", "COLUMNS", "PARTITIONS":
		p.advance()
		s.What = word
	case "USER", "FULL":
		p.advance()
		next := "FUNCTIONS"
		if word == "FULL" {
			next = "MODULES"
		}
		if err := p.expectKw(next); err != nil {
			return nil, err
		}
		s.What = word + " " + next
	case "CURRENT":
		p.advance()
		switch {
		case p.acceptKw("CATALOG"):
			s.What = "CURRENT CATALOG"
		case p.acceptKw("DATABASE"):
			s.What = "CURRENT DATABASE"
		default:
			return nil, p.errHere()
		}
	case "CREATE":
		p.advance()
		sc := &ShowCreate{}
		switch {
		case p.acceptKw("TABLE"):
			sc.Object = "TABLE"
		case p.acceptKw("VIEW"):
			sc.Object = "VIEW"
		default:
			return nil, p.errHere()
		}
		var err error
		if sc.Name, err = p.compoundIdent(); err != nil {
			return nil, err
		}
		sc.StmtBase = p.base(start)
		return sc, nil
	default:
		return nil, p.errExpecting(`"TABLES"`, `"VIEWS"`, `"FUNCTIONS"`, `"USER"`, `"JOBS"`, `"CATALOGS"`, `"DATABASES"`,
			`"CURRENT"`, `"MODULES"`, `"FULL"`, `"JARS"`, `"COLUMNS"`, `"CREATE"`)
	}
	if p.isKw("FROM") || p.isKw("IN") {
		p.advance()
		var err error
		if s.From, err = p.compoundIdent(); err != nil {
			return nil, err
		}
	} else if s.What == "COLUMNS" || s.What == "PARTITIONS" {
		return nil, p.errExpecting(`"FROM"`, `"IN"`)
	}
	if p.isKw("NOT") && (p.peekIsKw(1, "LIKE") || p.peekIsKw(1, "ILIKE")) {
		p.advance()
		s.NotLike = true
	}
	if p.isKw("LIKE") || p.isKw("ILIKE") {
		s.ILike = p.advance().val == "ILIKE"
		var err error
		if s.Like, _, err = p.stringLit(); err != nil {
			return nil, err
		}
		s.HasLike = true
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) parseDescribe() (Statement, error) {
	start := p.advance().pos // DESCRIBE / DESC
	if p.isKw("JOB") && p.peek(1).kind == tokString {
		p.advance()
		id, _, _ := p.stringLit()
		return &DescribeJob{StmtBase: p.base(start), JobID: id}, nil
	}
	d := &Describe{}
	if p.isKw("EXTENDED") && (isIdentTok(p.peek(1)) || p.peek(1).kind == tokQuoted) {
		p.advance()
		d.Extended = true
	}
	var err error
	if d.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	d.StmtBase = p.base(start)
	return d, nil
}

var explainDetails = []string{"ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"}

func isExplainDetail(w string) bool {
	for _, d := range explainDetails {
		if d == w {
			return true
		}
	}
	return false
}

func (p *parser) parseExplain() (*Explain, error) {
	start := p.advance().pos // EXPLAIN
	e := &Explain{}
	if p.isKw("MIGRATION") && p.peekIsKw(1, "FROM") {
		p.advance()
		p.advance()
		path, _, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(path) == "" {
			return nil, fmt.Errorf("EXPLAIN MIGRATION FROM needs the path of a savepoint or checkpoint")
		}
		e.MigrationFrom = path
		if !p.isKw("INSERT") && !p.isKw("EXECUTE") && !p.isKw("STATEMENT") {
			return nil, p.errExpecting(`"INSERT"`, `"EXECUTE"`, `"STATEMENT"`)
		}
	} else if p.isKw("PLAN") && p.peekIsKw(1, "FOR") {
		p.advance()
		p.advance()
		e.PlanFor = true
	} else if isExplainDetail(p.cur().upper()) {
		for {
			if !isExplainDetail(p.cur().upper()) {
				for _, d := range explainDetails {
					p.expect(quoteExp(d))
				}
				return nil, p.errHere()
			}
			e.Details = append(e.Details, p.advance().val)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	var inner Statement
	var err error
	if p.isKw("STATEMENT") {
		inner, err = p.parseStatementSetBlock(p.cur().pos)
	} else {
		inner, err = p.parseStatement()
	}
	if err != nil {
		return nil, err
	}
	e.Statement = inner
	e.StmtBase = p.base(start)
	return e, nil
}

func (p *parser) parseExecute() (Statement, error) {
	start := p.advance().pos // EXECUTE
	switch {
	case p.isKw("STATEMENT"):
		return p.parseStatementSetBlock(start)
	case p.isKw("INSERT"):
		return p.parseInsert(start)
	case p.isKw("SELECT") || p.isKw("WITH") || p.isKw("VALUES"):
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		return &QueryStmt{StmtBase: p.base(start), Query: q}, nil
	}
	return nil, p.errExpecting(`"STATEMENT"`, `"INSERT"`, `"SELECT"`)
}

// parseStatementSetBlock parses STATEMENT SET BEGIN insert; ... END.
func (p *parser) parseStatementSetBlock(start Pos) (*StatementSet, error) {
	if err := p.expectKw("STATEMENT", "SET", "BEGIN"); err != nil {
		return nil, err
	}
	set := &StatementSet{}
	for {
		if p.acceptKw("END") {
			break
		}
		if !p.isKw("INSERT") {
			return nil, p.errExpecting(`"INSERT"`)
		}
		ins, err := p.parseInsert(p.cur().pos)
		if err != nil {
			return nil, err
		}
		set.Inserts = append(set.Inserts, ins)
		if p.isKw("END") {
			continue // the ';' before END is optional
		}
		if err := p.expectOp(";"); err != nil {
			return nil, err
		}
	}
	set.StmtBase = p.base(start)
	return set, nil
}

func (p *parser) parseStopJob() (*StopJob, error) {
	start := p.advance().pos // STOP
	if err := p.expectKw("JOB"); err != nil {
		return nil, err
	}
	s := &StopJob{}
	var err error
	if s.JobID, _, err = p.stringLit(); err != nil {
		return nil, err
	}
	for p.acceptKw("WITH") {
		switch {
		case p.isKw("SAVEPOINT"):
			p.advance()
			s.WithSavepoint = true
		case p.isKw("DRAIN"):
			p.advance()
			s.WithDrain = true
		default:
			return nil, p.errExpecting(`"SAVEPOINT"`, `"DRAIN"`)
		}
	}
	s.StmtBase = p.base(start)
	return s, nil
}

func (p *parser) parseUse() (*Use, error) {
	start := p.advance().pos // USE
	u := &Use{}
	if p.isKw("CATALOG") && (isIdentTok(p.peek(1))) {
		p.advance()
		u.Catalog = true
	}
	var err error
	if u.Name, err = p.compoundIdent(); err != nil {
		return nil, err
	}
	u.StmtBase = p.base(start)
	return u, nil
}
