package parser

import "strings"

// Binding powers, lowest to highest.
const (
	precOr      = 1
	precAnd     = 2
	precNot     = 3
	precIs      = 4
	precCompare = 5
	precPred    = 6 // BETWEEN, IN, LIKE, SIMILAR TO
	precConcat  = 7
	precAdd     = 8
	precMul     = 9
	precUnary   = 10
	precAtom    = 12
)

const expExpression = "<expression>"

// infixPrec returns the binding power of the infix/postfix operator at the
// current token, or 0 when the token does not continue an expression.
func (p *parser) infixPrec() int {
	t := p.cur()
	switch t.kind {
	case tokOp:
		switch t.val {
		case "=", "<>", "!=", "<", "<=", ">", ">=":
			return precCompare
		case "||":
			return precConcat
		case "+", "-":
			return precAdd
		case "*", "/", "%":
			return precMul
		}
	case tokWord:
		switch t.val {
		case "OR":
			return precOr
		case "AND":
			return precAnd
		case "IS":
			return precIs
		case "BETWEEN", "IN", "LIKE", "ILIKE", "SIMILAR", "OVERLAPS":
			return precPred
		case "NOT":
			n := p.peek(1)
			if n.kind == tokWord {
				switch n.val {
				case "BETWEEN", "IN", "LIKE", "ILIKE", "SIMILAR":
					return precPred
				}
			}
		}
	}
	return 0
}

// parseExpr parses an expression whose operators all bind at least as
// tightly as minPrec.
func (p *parser) parseExpr(minPrec int) (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	// Heights are tracked in p.height, an upper bound computed in O(1) per
	// call: the nested parseExpr calls of an operand leave their heights in
	// it, and every operator built here stands one level above its operands.
	outer := p.height
	p.height = 0
	left, err := p.parsePrefix()
	if err != nil {
		return nil, err
	}
	h := p.height + 1
	for {
		prec := p.infixPrec()
		if prec == 0 || prec < minPrec {
			p.height = max(outer, h)
			return left, nil
		}
		at := p.cur().pos
		p.height = 0
		left, err = p.parseInfix(left, prec)
		if err != nil {
			return nil, err
		}
		h = max(h, p.height) + 1
		if h > MaxExprHeight {
			return nil, p.errAt(at, "Expression too deep (more than %d nested operators)", MaxExprHeight)
		}
	}
}

func (p *parser) parsePrefix() (Expr, error) {
	t := p.cur()
	if t.kind == tokWord && t.val == "NOT" {
		p.advance()
		x, err := p.parseExpr(precIs)
		if err != nil {
			return nil, err
		}
		return &UnaryExpr{exprBase{At{t.pos}}, "NOT", x}, nil
	}
	if t.kind == tokOp && (t.val == "-" || t.val == "+") {
		p.advance()
		x, err := p.parseExpr(precUnary)
		if err != nil {
			return nil, err
		}
		return &UnaryExpr{exprBase{At{t.pos}}, t.val, x}, nil
	}
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	return p.parsePostfix(x)
}

func (p *parser) parsePostfix(x Expr) (Expr, error) {
	for {
		switch {
		case p.isOp("["):
			pos := p.advance().pos
			idx, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &SubscriptExpr{exprBase{At{pos}}, x, idx}
			p.height++
		case p.isOp("."):
			pos := p.advance().pos
			f, err := p.identAfterDot()
			if err != nil {
				return nil, err
			}
			x = &FieldAccess{exprBase{At{pos}}, x, f}
			p.height++
		default:
			return x, nil
		}
	}
}

func (p *parser) parseInfix(left Expr, prec int) (Expr, error) {
	t := p.advance()
	at := exprBase{At{t.pos}}
	if t.kind == tokOp {
		op := t.val
		if op == "!=" {
			op = "<>"
		}
		right, err := p.parseExpr(prec + 1)
		if err != nil {
			return nil, err
		}
		return &BinaryExpr{at, op, left, right}, nil
	}
	switch t.val {
	case "OR", "AND", "OVERLAPS":
		right, err := p.parseExpr(prec + 1)
		if err != nil {
			return nil, err
		}
		return &BinaryExpr{at, t.val, left, right}, nil
	case "IS":
		not := false
		if p.isKw("NOT") {
			p.advance()
			not = true
		} else {
			p.expect(`"NOT"`)
		}
		for _, w := range []string{"NULL", "TRUE", "FALSE", "UNKNOWN"} {
			if p.isKw(w) {
				p.advance()
				return &IsExpr{at, left, not, w}, nil
			}
			p.expect(quoteExp(w))
		}
		if p.isKw("JSON") {
			p.advance()
			what := "JSON VALUE"
			for _, k := range []string{"VALUE", "SCALAR", "ARRAY", "OBJECT"} {
				if p.isKw(k) {
					p.advance()
					what = "JSON " + k
					break
				}
			}
			return &IsExpr{at, left, not, what}, nil
		}
		p.expect(`"JSON"`)
		if p.acceptKw("DISTINCT") {
			if err := p.expectKw("FROM"); err != nil {
				return nil, err
			}
			right, err := p.parseExpr(precPred)
			if err != nil {
				return nil, err
			}
			return &IsDistinctFrom{at, left, right, not}, nil
		}
		return nil, p.errHere()
	}
	// [NOT] BETWEEN / IN / LIKE / ILIKE / SIMILAR TO
	not := false
	if t.val == "NOT" {
		not = true
		t = p.advance()
	}
	switch t.val {
	case "BETWEEN":
		b := &BetweenExpr{exprBase: at, X: left, Not: not}
		if p.isKw("SYMMETRIC") {
			p.advance()
			b.Symmetric = true
		} else if p.isKw("ASYMMETRIC") {
			p.advance()
		}
		var err error
		if b.Lo, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		if b.Hi, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
		return b, nil
	case "IN":
		in := &InExpr{exprBase: at, X: left, Not: not}
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if p.startsQuery() {
			q, err := p.parseQuery()
			if err != nil {
				return nil, err
			}
			in.Query = q
		} else {
			list, err := p.exprList()
			if err != nil {
				return nil, err
			}
			in.List = list
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return in, nil
	case "LIKE", "ILIKE", "SIMILAR":
		op := t.val
		if op == "SIMILAR" {
			if err := p.expectKw("TO"); err != nil {
				return nil, err
			}
			op = "SIMILAR TO"
		}
		l := &LikeExpr{exprBase: at, X: left, Not: not, Op: op}
		var err error
		if l.Pattern, err = p.parseExpr(precConcat); err != nil {
			return nil, err
		}
		if p.isKw("ESCAPE") {
			p.advance()
			if l.Escape, err = p.parseExpr(precConcat); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	return nil, p.errAt(t.pos, "Unexpected operator %s", t.text)
}

// startsQuery reports whether the current token begins a query
// (SELECT, WITH, VALUES) – used right after an opening '('.
func (p *parser) startsQuery() bool {
	return p.isKw("SELECT") || p.isKw("WITH") || p.isKw("VALUES")
}

// exprList parses expr, expr, ...
func (p *parser) exprList() ([]Expr, error) {
	var out []Expr
	for {
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if !p.acceptOp(",") {
			return out, nil
		}
	}
}

func (p *parser) parsePrimary() (Expr, error) {
	t := p.cur()
	at := exprBase{At{t.pos}}
	switch t.kind {
	case tokNumber:
		p.advance()
		return &Literal{at, NumberLit, t.val}, nil
	case tokString:
		p.advance()
		return &Literal{at, StringLit, t.val}, nil
	case tokBinary:
		p.advance()
		return &Literal{at, BinaryLit, t.val}, nil
	case tokQuoted:
		return p.parseIdentExpr()
	case tokOp:
		switch t.val {
		case "(":
			p.advance()
			if p.startsQuery() {
				q, err := p.parseQuery()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(")"); err != nil {
					return nil, err
				}
				return &SubqueryExpr{at, q}, nil
			}
			list, err := p.exprList()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			if len(list) == 1 {
				return list[0], nil
			}
			return &RowExpr{exprBase: at, Fields: list}, nil
		}
		return nil, p.errExpecting(expExpression)
	case tokWord:
	default:
		return nil, p.errExpecting(expExpression)
	}
	next := p.peek(1)
	nextParen := next.kind == tokOp && next.val == "("
	switch t.val {
	case "TRUE", "FALSE":
		p.advance()
		return &Literal{at, BoolLit, t.val}, nil
	case "NULL":
		p.advance()
		return &Literal{at, NullLit, "NULL"}, nil
	case "UNKNOWN":
		p.advance()
		return &Literal{at, UnknownLit, "UNKNOWN"}, nil
	case "DATE", "TIME", "TIMESTAMP":
		if next.kind == tokString {
			p.advance()
			p.advance()
			kind := map[string]LiteralKind{"DATE": DateLit, "TIME": TimeLit, "TIMESTAMP": TimestampLit}[t.val]
			return &Literal{at, kind, next.val}, nil
		}
	case "INTERVAL":
		return p.parseIntervalLit()
	case "CASE":
		return p.parseCase()
	case "CAST":
		return p.parseCast(false)
	case "TRY_CAST":
		if nextParen {
			return p.parseCast(true)
		}
	case "EXTRACT":
		return p.parseExtract()
	case "FLOOR", "CEIL", "CEILING":
		if nextParen {
			return p.parseFloorCeil()
		}
	case "TRIM":
		return p.parseTrim()
	case "SUBSTRING":
		return p.parseSubstring()
	case "POSITION":
		return p.parsePosition()
	case "OVERLAY":
		return p.parseOverlay()
	case "EXISTS":
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &ExistsExpr{at, q}, nil
	case "ROW":
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		r := &RowExpr{exprBase: at, Explicit: true}
		if !p.isOp(")") {
			list, err := p.exprList()
			if err != nil {
				return nil, err
			}
			r.Fields = list
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return r, nil
	case "ARRAY", "MAP":
		if next.kind == tokOp && next.val == "[" {
			p.advance()
			p.advance()
			var elems []Expr
			if !p.isOp("]") {
				var err error
				if elems, err = p.exprList(); err != nil {
					return nil, err
				}
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			if t.val == "ARRAY" {
				return &ArrayExpr{at, elems}, nil
			}
			if len(elems)%2 != 0 {
				return nil, p.errAt(t.pos, "MAP constructor requires an even number of arguments")
			}
			return &MapExpr{at, elems}, nil
		}
		if t.val == "ARRAY" {
			return nil, p.errAt(next.pos, "Encountered %q after ARRAY; expecting \"[\"", next.text)
		}
	case "DESCRIPTOR":
		if nextParen {
			p.advance()
			cols, err := p.parenIdentList()
			if err != nil {
				return nil, err
			}
			return &Descriptor{at, cols}, nil
		}
	case "TIMESTAMPADD", "TIMESTAMPDIFF":
		if nextParen {
			return p.parseTimestampAddDiff()
		}
	case "JSON_VALUE", "JSON_QUERY", "JSON_EXISTS", "JSON_OBJECT", "JSON_ARRAY", "JSON_OBJECTAGG", "JSON_ARRAYAGG":
		if nextParen {
			return p.parseJSON()
		}
	}
	if niladicFunctions[t.val] && !nextParen {
		p.advance()
		return &FuncCall{exprBase: at, Name: []string{t.val}, NoParens: true}, nil
	}
	if reservedWords[t.val] {
		if functionKeywords[t.val] && nextParen {
			p.advance()
			return p.parseCallArgs(at, []string{t.val})
		}
		return nil, p.errExpecting(expExpression)
	}
	return p.parseIdentExpr()
}

// parseIdentExpr parses a compound identifier and, when followed by '(', a
// function call.
func (p *parser) parseIdentExpr() (Expr, error) {
	at := exprBase{At{p.cur().pos}}
	parts, err := p.compoundIdent()
	if err != nil {
		return nil, err
	}
	if p.isOp("(") {
		return p.parseCallArgs(at, parts)
	}
	return &Ident{at, parts}, nil
}

// parseCallArgs parses ( [DISTINCT|ALL] args ) and the trailing
// WITHIN GROUP, FILTER and OVER clauses.
func (p *parser) parseCallArgs(at exprBase, name []string) (Expr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	f := &FuncCall{exprBase: at, Name: name}
	if p.isKw("DISTINCT") {
		p.advance()
		f.Distinct = true
	} else if p.isKw("ALL") {
		p.advance()
		f.All = true
	}
	if p.isOp("*") {
		st := p.advance()
		f.Args = []Arg{{Value: &Star{exprBase: exprBase{At{st.pos}}}}}
	} else if !p.isOp(")") {
		for {
			a, err := p.parseArg()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, a)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.isKw("WITHIN") && p.peekIsKw(1, "GROUP") {
		p.advance()
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		if err := p.expectKw("ORDER", "BY"); err != nil {
			return nil, err
		}
		items, err := p.orderItems()
		if err != nil {
			return nil, err
		}
		f.WithinGroup = items
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if p.isKw("FILTER") && p.peekIsOp(1, "(") {
		p.advance()
		p.advance()
		if err := p.expectKw("WHERE"); err != nil {
			return nil, err
		}
		cond, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		f.Filter = cond
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if p.isKw("OVER") {
		pos := p.advance().pos
		if p.isOp("(") {
			spec, err := p.parseWindowSpec()
			if err != nil {
				return nil, err
			}
			f.Over = spec
		} else {
			name, err := p.ident()
			if err != nil {
				return nil, p.errExpecting(`"("`)
			}
			f.Over = &WindowSpec{At: At{pos}, Ref: name}
		}
	}
	return f, nil
}

// parseArg parses [name =>] (TABLE name [PARTITION BY ...] | expr).
func (p *parser) parseArg() (Arg, error) {
	var a Arg
	t := p.cur()
	if (t.kind == tokWord || t.kind == tokQuoted) && p.peekIsOp(1, "=>") {
		a.Name = strings.ToUpper(identValue(t))
		a.NamePos = t.pos
		p.advance()
		p.advance()
	}
	if p.isKw("TABLE") {
		pos := p.advance().pos
		ta := &TableArg{exprBase: exprBase{At{pos}}}
		if p.isOp("(") {
			p.advance()
			q, err := p.parseQuery()
			if err != nil {
				return a, err
			}
			if err := p.expectOp(")"); err != nil {
				return a, err
			}
			ta.Query = q
		} else {
			name, err := p.compoundIdent()
			if err != nil {
				return a, err
			}
			ta.Name = name
		}
		if p.isKw("PARTITION") {
			p.advance()
			if err := p.expectKw("BY"); err != nil {
				return a, err
			}
			if p.isOp("(") {
				p.advance()
				list, err := p.exprList()
				if err != nil {
					return a, err
				}
				if err := p.expectOp(")"); err != nil {
					return a, err
				}
				ta.PartitionBy = list
			} else {
				e, err := p.parseExpr(precConcat)
				if err != nil {
					return a, err
				}
				ta.PartitionBy = []Expr{e}
			}
		}
		a.Value = ta
		return a, nil
	}
	v, err := p.parseExpr(0)
	if err != nil {
		return a, err
	}
	a.Value = v
	return a, nil
}

func (p *parser) parseWindowSpec() (*WindowSpec, error) {
	spec := &WindowSpec{At: At{p.cur().pos}}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if isIdentTok(p.cur()) {
		spec.Ref = identValue(p.advance())
	}
	if p.acceptKw("PARTITION") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		list, err := p.exprList()
		if err != nil {
			return nil, err
		}
		spec.PartitionBy = list
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		items, err := p.orderItems()
		if err != nil {
			return nil, err
		}
		spec.OrderBy = items
	}
	if p.isKw("ROWS") || p.isKw("RANGE") {
		fr := &WindowFrame{Unit: p.advance().val}
		if p.acceptKw("BETWEEN") {
			s, err := p.frameBound()
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("AND"); err != nil {
				return nil, err
			}
			e, err := p.frameBound()
			if err != nil {
				return nil, err
			}
			fr.Start, fr.End = s, &e
		} else {
			s, err := p.frameBound()
			if err != nil {
				return nil, err
			}
			fr.Start = s
		}
		spec.Frame = fr
	} else {
		p.expect(`"ROWS"`)
		p.expect(`"RANGE"`)
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return spec, nil
}

func (p *parser) frameBound() (FrameBound, error) {
	if p.isKw("UNBOUNDED") {
		p.advance()
		if p.isKw("PRECEDING") || p.isKw("FOLLOWING") {
			return FrameBound{Kind: "UNBOUNDED " + p.advance().val}, nil
		}
		return FrameBound{}, p.errExpecting(`"PRECEDING"`, `"FOLLOWING"`)
	}
	if p.isKw("CURRENT") {
		p.advance()
		if err := p.expectKw("ROW"); err != nil {
			return FrameBound{}, err
		}
		return FrameBound{Kind: "CURRENT ROW"}, nil
	}
	p.expect(`"UNBOUNDED"`)
	p.expect(`"CURRENT"`)
	off, err := p.parseExpr(precConcat)
	if err != nil {
		return FrameBound{}, err
	}
	if p.isKw("PRECEDING") || p.isKw("FOLLOWING") {
		return FrameBound{Kind: p.advance().val, Offset: off}, nil
	}
	return FrameBound{}, p.errExpecting(`"PRECEDING"`, `"FOLLOWING"`)
}

func (p *parser) orderItems() ([]*OrderItem, error) {
	var items []*OrderItem
	for {
		pos := p.cur().pos
		e, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		it := &OrderItem{At: At{pos}, Expr: e}
		if p.isKw("ASC") {
			p.advance()
		} else if p.isKw("DESC") {
			p.advance()
			it.Desc = true
		} else {
			p.expect(`"ASC"`)
			p.expect(`"DESC"`)
		}
		if p.isKw("NULLS") {
			p.advance()
			if p.isKw("FIRST") || p.isKw("LAST") {
				it.Nulls = p.advance().val
			} else {
				return nil, p.errExpecting(`"FIRST"`, `"LAST"`)
			}
		}
		items = append(items, it)
		if !p.acceptOp(",") {
			return items, nil
		}
	}
}

// timeUnit parses a time unit word and returns its canonical name.
func (p *parser) timeUnit() (string, error) {
	t := p.cur()
	if t.kind == tokWord {
		if u, ok := timeUnits[t.val]; ok {
			p.advance()
			return u, nil
		}
	}
	return "", p.errExpecting("<time unit>")
}

func (p *parser) optPrecision() (int, error) {
	if !p.isOp("(") {
		return -1, nil
	}
	p.advance()
	n, err := p.intLit()
	if err != nil {
		return 0, err
	}
	if err := p.expectOp(")"); err != nil {
		return 0, err
	}
	return n, nil
}

// intervalQualifier parses unit [(p)] [TO unit [(p)]].
func (p *parser) intervalQualifier() (IntervalQualifier, error) {
	q := IntervalQualifier{StartPrecision: -1, FracPrecision: -1}
	t := p.cur()
	u, ok := timeUnits[t.upper()]
	if !ok || !intervalUnits[u] {
		return q, p.errExpecting(`"YEAR"`, `"MONTH"`, `"DAY"`, `"HOUR"`, `"MINUTE"`, `"SECOND"`)
	}
	p.advance()
	q.Start = u
	var err error
	if u == "SECOND" && p.isOp("(") {
		// SECOND(p [, f])
		p.advance()
		if q.StartPrecision, err = p.intLit(); err != nil {
			return q, err
		}
		if p.acceptOp(",") {
			if q.FracPrecision, err = p.intLit(); err != nil {
				return q, err
			}
		}
		if err := p.expectOp(")"); err != nil {
			return q, err
		}
	} else if q.StartPrecision, err = p.optPrecision(); err != nil {
		return q, err
	}
	if p.isKw("TO") {
		p.advance()
		t := p.cur()
		e, ok := timeUnits[t.upper()]
		if !ok || !intervalUnits[e] {
			return q, p.errExpecting(`"MONTH"`, `"HOUR"`, `"MINUTE"`, `"SECOND"`)
		}
		p.advance()
		q.End = e
		if e == "SECOND" {
			if q.FracPrecision, err = p.optPrecision(); err != nil {
				return q, err
			}
		}
	}
	return q, nil
}

func (p *parser) parseIntervalLit() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // INTERVAL
	lit := &IntervalLit{exprBase: at}
	if p.isOp("-") {
		p.advance()
		lit.Negative = true
	} else if p.isOp("+") {
		p.advance()
	}
	v, _, err := p.stringLit()
	if err != nil {
		return nil, err
	}
	lit.Value = v
	if lit.Qualifier, err = p.intervalQualifier(); err != nil {
		return nil, err
	}
	return lit, nil
}

func (p *parser) parseCase() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // CASE
	c := &CaseExpr{exprBase: at}
	var err error
	if !p.isKw("WHEN") {
		if c.Operand, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	for p.acceptKw("WHEN") {
		var w When
		if w.Cond, err = p.parseExpr(0); err != nil {
			return nil, err
		}
		for c.Operand != nil && p.acceptOp(",") {
			v, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			w.More = append(w.More, v)
		}
		if err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		if w.Result, err = p.parseExpr(0); err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		return nil, p.errHere()
	}
	if p.acceptKw("ELSE") {
		if c.Else, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("END"); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *parser) parseCast(try bool) (Expr, error) {
	at := exprBase{At{p.advance().pos}} // CAST / TRY_CAST
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	x, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	dt, err := p.parseDataType()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &CastExpr{at, x, dt, try}, nil
}

func (p *parser) parseExtract() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // EXTRACT
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	u, err := p.timeUnit()
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	x, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &ExtractExpr{at, u, x}, nil
}

func (p *parser) parseFloorCeil() (Expr, error) {
	t := p.advance() // FLOOR / CEIL / CEILING
	at := exprBase{At{t.pos}}
	name := t.val
	if name == "CEILING" {
		name = "CEIL"
	}
	p.advance() // (
	x, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	if p.isKw("TO") {
		p.advance()
		u, err := p.timeUnit()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &FloorCeilExpr{at, name == "CEIL", x, u}, nil
	}
	p.expect(`"TO"`)
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &FuncCall{exprBase: at, Name: []string{name}, Args: []Arg{{Value: x}}}, nil
}

func (p *parser) parseTrim() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // TRIM
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	tr := &TrimExpr{exprBase: at, Mode: "BOTH"}
	explicit := false
	if p.isKw("BOTH") || p.isKw("LEADING") || p.isKw("TRAILING") {
		tr.Mode = p.advance().val
		explicit = true
	}
	if explicit && p.acceptKw("FROM") {
		x, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		tr.X = x
	} else {
		first, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		if p.acceptKw("FROM") {
			tr.Chars = first
			if tr.X, err = p.parseExpr(0); err != nil {
				return nil, err
			}
		} else {
			// TRIM(BOTH ' x ') trims spaces from the string, as in Flink.
			tr.X = first
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return tr, nil
}

func (p *parser) parseSubstring() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // SUBSTRING
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	s := &SubstringExpr{exprBase: at}
	var err error
	if s.X, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	lenSep := "FOR"
	if p.isOp(",") {
		lenSep = ","
		p.advance()
	} else if !p.acceptKw("FROM") {
		return nil, p.errExpecting(`","`)
	}
	if s.Start, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	if (lenSep == "," && p.acceptOp(",")) || (lenSep == "FOR" && p.acceptKw("FOR")) {
		if s.Length, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return s, nil
}

func (p *parser) parsePosition() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // POSITION
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	pe := &PositionExpr{exprBase: at}
	var err error
	// The substring is parsed above IN so that "a IN b" is not taken as a predicate.
	if pe.Sub, err = p.parseExpr(precConcat); err != nil {
		return nil, err
	}
	if err := p.expectKw("IN"); err != nil {
		return nil, err
	}
	if pe.X, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	if p.acceptKw("FROM") {
		if pe.From, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return pe, nil
}

func (p *parser) parseOverlay() (Expr, error) {
	at := exprBase{At{p.advance().pos}} // OVERLAY
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	o := &OverlayExpr{exprBase: at}
	var err error
	if o.X, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	if err := p.expectKw("PLACING"); err != nil {
		return nil, err
	}
	if o.Placing, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	if o.Start, err = p.parseExpr(0); err != nil {
		return nil, err
	}
	if p.acceptKw("FOR") {
		if o.Length, err = p.parseExpr(0); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return o, nil
}

// sqlTSIUnits are the JDBC names of time units that TIMESTAMPADD and
// TIMESTAMPDIFF accept besides the plain ones.
var sqlTSIUnits = map[string]string{
	"SQL_TSI_YEAR": "YEAR", "SQL_TSI_QUARTER": "QUARTER", "SQL_TSI_MONTH": "MONTH", "SQL_TSI_WEEK": "WEEK",
	"SQL_TSI_DAY": "DAY", "SQL_TSI_HOUR": "HOUR", "SQL_TSI_MINUTE": "MINUTE", "SQL_TSI_SECOND": "SECOND",
	"SQL_TSI_MICROSECOND": "MICROSECOND", "SQL_TSI_FRAC_SECOND": "MICROSECOND",
}

func (p *parser) parseTimestampAddDiff() (Expr, error) {
	t := p.advance() // TIMESTAMPADD / TIMESTAMPDIFF
	at := exprBase{At{t.pos}}
	p.advance() // (
	upos := p.cur().pos
	u, ok := sqlTSIUnits[p.cur().upper()]
	var err error
	if ok {
		p.advance()
	} else if u, err = p.timeUnit(); err != nil {
		return nil, err
	}
	f := &FuncCall{exprBase: at, Name: []string{t.val}}
	f.Args = append(f.Args, Arg{Value: &TimeUnitExpr{exprBase{At{upos}}, u}})
	for i := 0; i < 2; i++ {
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		x, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, Arg{Value: x})
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return f, nil
}
