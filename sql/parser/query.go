package parser

import "strings"

// parseQuery parses [WITH ...] body [ORDER BY ...] [LIMIT ...] [OFFSET ...] [FETCH ...].
func (p *parser) parseQuery() (*Query, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	q := &Query{At: At{p.cur().pos}}
	if p.acceptKw("WITH") {
		for {
			cte := &CTE{At: At{p.cur().pos}}
			var err error
			if cte.Name, err = p.ident(); err != nil {
				return nil, err
			}
			if p.isOp("(") {
				if cte.Columns, err = p.parenIdentList(); err != nil {
					return nil, err
				}
			}
			if err := p.expectKw("AS"); err != nil {
				return nil, err
			}
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			if cte.Query, err = p.parseQuery(); err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			q.With = append(q.With, cte)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	body, err := p.parseSetExpr(0)
	if err != nil {
		return nil, err
	}
	q.Body = body
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if q.OrderBy, err = p.orderItems(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("LIMIT") {
		if p.isKw("ALL") {
			p.advance()
		} else if q.Limit, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("OFFSET") {
		if q.Offset, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
		if p.isKw("ROW") || p.isKw("ROWS") {
			p.advance()
		}
	}
	if q.Limit == nil && p.acceptKw("FETCH") {
		if !p.isKw("FIRST") && !p.isKw("NEXT") {
			return nil, p.errExpecting(`"FIRST"`, `"NEXT"`)
		}
		p.advance()
		if p.isKw("ROW") || p.isKw("ROWS") {
			q.Limit = &Literal{exprBase{At{p.cur().pos}}, NumberLit, "1"}
		} else if q.Limit, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
		if !p.isKw("ROW") && !p.isKw("ROWS") {
			return nil, p.errExpecting(`"ROW"`, `"ROWS"`)
		}
		p.advance()
		if err := p.expectKw("ONLY"); err != nil {
			return nil, err
		}
	}
	return q, nil
}

func setOpPrec(t *token) int {
	switch t.upper() {
	case "UNION", "EXCEPT", "MINUS":
		return 1
	case "INTERSECT":
		return 2
	}
	return 0
}

// parseSetExpr parses set operations; INTERSECT binds tighter than UNION and
// EXCEPT, and all are left-associative.
func (p *parser) parseSetExpr(minPrec int) (QueryExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	left, err := p.parseQueryPrimary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		prec := setOpPrec(t)
		if prec == 0 {
			p.expect(`"UNION"`)
			p.expect(`"INTERSECT"`)
			p.expect(`"EXCEPT"`)
		}
		if prec == 0 || prec < minPrec {
			return left, nil
		}
		p.advance()
		op := t.val
		if op == "MINUS" {
			op = "EXCEPT"
		}
		so := &SetOp{At: At{t.pos}, Op: op, Left: left}
		if p.isKw("ALL") {
			p.advance()
			so.All = true
		} else if p.isKw("DISTINCT") {
			p.advance()
		}
		if so.Right, err = p.parseSetExpr(prec + 1); err != nil {
			return nil, err
		}
		left = so
	}
}

func (p *parser) parseQueryPrimary() (QueryExpr, error) {
	switch {
	case p.isKw("SELECT"):
		return p.parseSelect()
	case p.isKw("VALUES"):
		return p.parseValues()
	case p.isOp("("):
		p.advance()
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return q, nil
	}
	return nil, p.errExpecting(`"SELECT"`, `"VALUES"`, `"WITH"`, `"("`)
}

func (p *parser) parseValues() (*Values, error) {
	v := &Values{At: At{p.advance().pos}} // VALUES
	for {
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		if r, ok := e.(*RowExpr); ok {
			v.Rows = append(v.Rows, r.Fields)
		} else {
			v.Rows = append(v.Rows, []Expr{e})
		}
		if !p.acceptOp(",") {
			return v, nil
		}
	}
}

func (p *parser) parseSelect() (*Select, error) {
	s := &Select{At: At{p.advance().pos}} // SELECT
	if p.isOp("/*+") {
		// Query hints; the planner applies the ones it implements and
		// refuses the others.
		hints, err := p.parseHints()
		if err != nil {
			return nil, err
		}
		s.Hints = hints
	}
	if p.isKw("DISTINCT") {
		p.advance()
		s.Distinct = true
	} else if p.isKw("ALL") {
		p.advance()
	}
	for {
		it, err := p.parseSelectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, it)
		if !p.acceptOp(",") {
			break
		}
	}
	var err error
	if p.acceptKw("FROM") {
		if s.From, err = p.parseFrom(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("GROUP") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if s.GroupBy, err = p.groupItems(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("HAVING") {
		if s.Having, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("WINDOW") {
		for {
			nw := &NamedWindow{At: At{p.cur().pos}}
			if nw.Name, err = p.ident(); err != nil {
				return nil, err
			}
			if err := p.expectKw("AS"); err != nil {
				return nil, err
			}
			if nw.Spec, err = p.parseWindowSpec(); err != nil {
				return nil, err
			}
			s.Windows = append(s.Windows, nw)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	return s, nil
}

func (p *parser) parseSelectItem() (*SelectItem, error) {
	t := p.cur()
	it := &SelectItem{At: At{t.pos}}
	if p.isOp("*") {
		p.advance()
		it.Expr = &Star{exprBase: exprBase{At{t.pos}}}
		return it, nil
	}
	// qualifier.*
	if isIdentTok(t) {
		n := 1
		for n < maxLookahead && p.peekIsOp(n, ".") && (p.peek(n+1).kind == tokWord || p.peek(n+1).kind == tokQuoted) {
			n += 2
		}
		if p.peekIsOp(n, ".") && p.peekIsOp(n+1, "*") {
			var qual []string
			for k := 0; k < n; k += 2 {
				qual = append(qual, identValue(p.peek(k)))
			}
			for k := 0; k < n+2; k++ {
				p.advance()
			}
			it.Expr = &Star{exprBase: exprBase{At{t.pos}}, Qualifier: qual}
			return it, nil
		}
	}
	e, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	it.Expr = e
	if it.Alias, err = p.optAlias(); err != nil {
		return nil, err
	}
	return it, nil
}

// optAlias parses [AS] alias.
func (p *parser) optAlias() (string, error) {
	if p.acceptKw("AS") {
		return p.ident()
	}
	if isIdentTok(p.cur()) {
		return identValue(p.advance()), nil
	}
	p.expect("<IDENTIFIER>")
	return "", nil
}

// optTableAlias parses [AS] alias [(col, ...)].
func (p *parser) optTableAlias() (string, []string, error) {
	alias, err := p.optAlias()
	if err != nil || alias == "" {
		return alias, nil, err
	}
	if p.isOp("(") {
		cols, err := p.parenIdentList()
		if err != nil {
			return "", nil, err
		}
		return alias, cols, nil
	}
	return alias, nil, nil
}

func (p *parser) groupItems() ([]Expr, error) {
	var items []Expr
	for {
		it, err := p.groupItem()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		if !p.acceptOp(",") {
			return items, nil
		}
	}
}

func (p *parser) groupItem() (Expr, error) {
	t := p.cur()
	at := exprBase{At{t.pos}}
	if p.isOp("(") && p.peekIsOp(1, ")") {
		p.advance()
		p.advance()
		return &RowExpr{exprBase: at}, nil
	}
	kind := ""
	switch {
	case p.isKw("GROUPING") && p.peekIsKw(1, "SETS"):
		p.advance()
		kind = "GROUPING SETS"
	case (p.isKw("ROLLUP") || p.isKw("CUBE")) && p.peekIsOp(1, "("):
		kind = t.val
	}
	if kind == "" {
		return p.parseExpr(0)
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.advance()
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	gs := &GroupingSet{exprBase: at, Kind: kind}
	if kind == "GROUPING SETS" {
		items, err := p.groupItems()
		if err != nil {
			return nil, err
		}
		gs.Items = items
	} else {
		for {
			var it Expr
			var err error
			if p.isOp("(") && p.peekIsOp(1, ")") {
				it = &RowExpr{exprBase: exprBase{At{p.advance().pos}}}
				p.advance()
			} else if it, err = p.parseExpr(0); err != nil {
				return nil, err
			}
			gs.Items = append(gs.Items, it)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return gs, nil
}

// parseFrom parses a FROM clause: table references joined by commas and JOINs.
func (p *parser) parseFrom() (TableRef, error) {
	left, err := p.parseJoinChain()
	if err != nil {
		return nil, err
	}
	for p.acceptOp(",") {
		pos := p.cur().pos
		right, err := p.parseJoinChain()
		if err != nil {
			return nil, err
		}
		left = &Join{At: At{pos}, Kind: JoinComma, Left: left, Right: right}
	}
	return left, nil
}

// joinKind parses the join keywords at the current token; ok is false when
// no join follows.
func (p *parser) joinKind() (kind string, natural bool, ok bool, err error) {
	if p.isKw("NATURAL") {
		p.advance()
		natural = true
	}
	switch {
	case p.isKw("JOIN"):
		p.advance()
		return JoinInner, natural, true, nil
	case p.isKw("INNER"):
		p.advance()
		kind = JoinInner
	case p.isKw("LEFT") || p.isKw("RIGHT") || p.isKw("FULL"):
		kind = p.advance().val
		if p.isKw("OUTER") {
			p.advance()
		}
	case p.isKw("CROSS"):
		p.advance()
		kind = JoinCross
	default:
		for _, w := range []string{`"JOIN"`, `"INNER"`, `"LEFT"`, `"RIGHT"`, `"FULL"`, `"CROSS"`} {
			p.expect(w)
		}
		if natural {
			return "", false, false, p.errHere()
		}
		return "", false, false, nil
	}
	if err := p.expectKw("JOIN"); err != nil {
		return "", false, false, err
	}
	return kind, natural, true, nil
}

func (p *parser) parseJoinChain() (TableRef, error) {
	left, err := p.parseTablePrimary()
	if err != nil {
		return nil, err
	}
	if p.isKw("MATCH_RECOGNIZE") {
		if left, err = p.parseMatchRecognize(left); err != nil {
			return nil, err
		}
	}
	for {
		pos := p.cur().pos
		kind, natural, ok, err := p.joinKind()
		if err != nil {
			return nil, err
		}
		if !ok {
			return left, nil
		}
		right, err := p.parseTablePrimary()
		if err != nil {
			return nil, err
		}
		if p.isKw("MATCH_RECOGNIZE") {
			if right, err = p.parseMatchRecognize(right); err != nil {
				return nil, err
			}
		}
		j := &Join{At: At{pos}, Kind: kind, Natural: natural, Left: left, Right: right}
		if kind != JoinCross && !natural {
			switch {
			case p.acceptKw("ON"):
				if j.On, err = p.parseExpr(0); err != nil {
					return nil, err
				}
			case p.acceptKw("USING"):
				if j.Using, err = p.parenIdentList(); err != nil {
					return nil, err
				}
			default:
				return nil, p.errHere()
			}
		}
		left = j
	}
}

func (p *parser) parseTablePrimary() (TableRef, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	at := At{t.pos}
	lateral := false
	if p.isKw("LATERAL") {
		p.advance()
		lateral = true
		if !p.isKw("TABLE") && !p.isOp("(") {
			return nil, p.errExpecting(`"TABLE"`, `"("`)
		}
	}
	switch {
	case p.isKw("TABLE"):
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		fpos := p.cur().pos
		var call *FuncCall
		var name []string
		var err error
		if p.cur().kind == tokWord && functionKeywords[p.cur().val] {
			name = []string{p.advance().val}
		} else if name, err = p.compoundIdent(); err != nil {
			return nil, err
		}
		if !p.isOp("(") {
			return nil, p.errExpecting(`"("`)
		}
		e, err := p.parseCallArgs(exprBase{At{fpos}}, name)
		if err != nil {
			return nil, err
		}
		call, _ = e.(*FuncCall)
		if call == nil {
			return nil, p.errAt(fpos, "Expected a table function call")
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		tf := &TableFunc{At: at, Lateral: lateral, Call: call}
		if tf.Alias, tf.ColumnAliases, err = p.optTableAlias(); err != nil {
			return nil, err
		}
		return tf, nil
	case p.isKw("UNNEST"):
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		args, err := p.exprList()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		u := &Unnest{At: at, Args: args}
		if p.isKw("WITH") && p.peekIsKw(1, "ORDINALITY") {
			p.advance()
			p.advance()
			u.WithOrdinality = true
		}
		if u.Alias, u.ColumnAliases, err = p.optTableAlias(); err != nil {
			return nil, err
		}
		return u, nil
	case p.isOp("("):
		if lateral || p.startsQueryAfterParens() {
			p.advance()
			q, err := p.parseQuery()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			d := &DerivedTable{At: at, Lateral: lateral, Query: q}
			if d.Alias, d.ColumnAliases, err = p.optTableAlias(); err != nil {
				return nil, err
			}
			return d, nil
		}
		// parenthesized join
		p.advance()
		ref, err := p.parseFrom()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return ref, nil
	}
	for _, w := range []string{`"TABLE"`, `"LATERAL"`, `"UNNEST"`, `"("`} {
		p.expect(w)
	}
	name, err := p.compoundIdent()
	if err != nil {
		return nil, err
	}
	tn := &TableName{At: at, Name: name}
	if p.isOp("/*+") {
		if tn.Hints, err = p.parseHints(); err != nil {
			return nil, err
		}
	}
	if p.isKw("FOR") && p.peekIsKw(1, "SYSTEM_TIME") {
		p.advance()
		p.advance()
		if err := p.expectKw("AS", "OF"); err != nil {
			return nil, err
		}
		if tn.SystemTime, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
	}
	if tn.Alias, tn.ColumnAliases, err = p.optTableAlias(); err != nil {
		return nil, err
	}
	return tn, nil
}

// parseHints parses /*+ hint [, hint]* */ at the current /*+ token.
func (p *parser) parseHints() ([]*Hint, error) {
	p.advance() // /*+
	var hints []*Hint
	for {
		t := p.cur()
		if t.kind != tokWord && t.kind != tokQuoted {
			return nil, p.errExpecting("<IDENTIFIER>")
		}
		p.advance()
		h := &Hint{At: At{t.pos}, Name: strings.ToUpper(identValue(t))}
		if p.acceptOp("(") {
			for !p.acceptOp(")") {
				if len(h.Options)+len(h.Args) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
				}
				a := p.cur()
				if a.kind != tokWord && a.kind != tokQuoted && a.kind != tokString && a.kind != tokNumber {
					return nil, p.errExpecting("<IDENTIFIER>", "<STRING>")
				}
				p.advance()
				val := a.val
				if a.kind == tokWord {
					val = a.text
				}
				if !p.acceptOp("=") {
					h.Args = append(h.Args, val)
					continue
				}
				v, vp, err := p.stringLit()
				if err != nil {
					return nil, err
				}
				h.Options = append(h.Options, &Option{Key: val, Value: v, KeyPos: a.pos, ValuePos: vp})
			}
		}
		hints = append(hints, h)
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp("*/"); err != nil {
			return nil, err
		}
		return hints, nil
	}
}
