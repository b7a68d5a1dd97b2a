package parser

import "fmt"

// parseJSON parses the SQL/JSON functions whose arguments carry clauses:
//
//	JSON_VALUE(json, path [RETURNING type] [{NULL|ERROR|DEFAULT e} ON EMPTY] [{NULL|ERROR|DEFAULT e} ON ERROR])
//	JSON_QUERY(json, path [RETURNING type] [{WITHOUT|WITH [CONDITIONAL|UNCONDITIONAL]} [ARRAY] WRAPPER]
//	           [{NULL|EMPTY ARRAY|EMPTY OBJECT|ERROR} ON EMPTY] [... ON ERROR])
//	JSON_EXISTS(json, path [{TRUE|FALSE|UNKNOWN|ERROR} ON ERROR])
//	JSON_OBJECT([[KEY] k VALUE v, ...] [{NULL|ABSENT} ON NULL])
//	JSON_ARRAY([v, ...] [{NULL|ABSENT} ON NULL])
func (p *parser) parseJSON() (Expr, error) {
	t := p.advance()
	j := &JsonExpr{exprBase: exprBase{At{t.pos}}, Func: t.val}
	p.advance() // (
	var err error
	switch j.Func {
	case "JSON_OBJECT", "JSON_OBJECTAGG":
		for !p.isOp(")") && !p.atOnNull() {
			if p.isKw("KEY") {
				p.advance()
			}
			k, err := p.parseExpr(precConcat)
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("VALUE"); err != nil {
				return nil, err
			}
			v, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			j.Args = append(j.Args, k, v)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.parseOnNull(j); err != nil {
			return nil, err
		}
	case "JSON_ARRAY", "JSON_ARRAYAGG":
		for !p.isOp(")") && !p.atOnNull() {
			v, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			j.Args = append(j.Args, v)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.parseOnNull(j); err != nil {
			return nil, err
		}
	default:
		x, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		path, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		j.Args = []Expr{x, path}
		if j.Func != "JSON_EXISTS" && p.acceptKw("RETURNING") {
			if j.Returning, err = p.parseDataType(); err != nil {
				return nil, err
			}
		}
		if j.Func == "JSON_QUERY" {
			if err := p.parseWrapper(j); err != nil {
				return nil, err
			}
		}
		for {
			beh, def, ok, err := p.parseBehavior(j.Func)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if err := p.expectKw("ON"); err != nil {
				return nil, err
			}
			switch {
			case j.Func != "JSON_EXISTS" && j.OnEmpty == "" && j.OnError == "" && p.isKw("EMPTY"):
				p.advance()
				j.OnEmpty, j.EmptyDefault = beh, def
			case j.OnError == "" && p.isKw("ERROR"):
				p.advance()
				j.OnError, j.ErrorDefault = beh, def
			default:
				return nil, p.errExpecting(`"EMPTY"`, `"ERROR"`)
			}
		}
	}
	if err = p.expectOp(")"); err != nil {
		return nil, err
	}
	switch j.Func {
	case "JSON_ARRAYAGG":
		return desugarArrayAgg(j)
	case "JSON_OBJECTAGG":
		return desugarObjectAgg(j)
	}
	return j, nil
}

// desugarArrayAgg turns JSON_ARRAYAGG(x [NULL|ABSENT ON NULL]) into the
// aggregate it is: the JSON text of every x (NULLs left out, or written as
// null with NULL ON NULL), in arrival order, joined by commas inside
// brackets: the CONCAT of '[', the LISTAGG of $JSON_TEXT(x) by ',' (or
// the empty string), and ']'.
// LISTAGG retracts an element when its row is retracted, as Flink's
// JSON_ARRAYAGG does.
func desugarArrayAgg(j *JsonExpr) (Expr, error) {
	if len(j.Args) != 1 {
		return nil, &Error{Pos: j.P, Msg: fmt.Sprintf("JSON_ARRAYAGG takes one value, got %d at %s.", len(j.Args), j.P)}
	}
	at := j.exprBase
	text := "$JSON_TEXT"
	if j.OnNull == "NULL" {
		text = "$JSON_TEXT_NULL"
	}
	str := func(s string) Expr { return &Literal{at, StringLit, s} }
	call := func(name string, args ...Expr) *FuncCall {
		f := &FuncCall{exprBase: at, Name: []string{name}}
		for _, a := range args {
			f.Args = append(f.Args, Arg{Value: a})
		}
		return f
	}
	elems := call("LISTAGG", call(text, j.Args[0]), str(","))
	return call("CONCAT", str("["), call("COALESCE", elems, str("")), str("]")), nil
}

func (p *parser) atOnNull() bool {
	return (p.isKw("NULL") || p.isKw("ABSENT")) && p.peekIsKw(1, "ON") && p.peekIsKw(2, "NULL")
}

func (p *parser) parseOnNull(j *JsonExpr) error {
	if p.atOnNull() {
		j.OnNull = p.advance().val
		p.advance()
		p.advance()
	}
	return nil
}

func (p *parser) parseWrapper(j *JsonExpr) error {
	switch {
	case p.isKw("WITHOUT"):
		p.advance()
		j.Wrapper = "WITHOUT"
	case p.isKw("WITH"):
		p.advance()
		j.Wrapper = "UNCONDITIONAL"
		if p.isKw("CONDITIONAL") || p.isKw("UNCONDITIONAL") {
			j.Wrapper = p.advance().val
		}
	default:
		return nil
	}
	if p.isKw("ARRAY") {
		p.advance()
	}
	return p.expectKw("WRAPPER")
}

// parseBehavior parses the behaviour before ON EMPTY / ON ERROR; ok is
// false when none follows.
func (p *parser) parseBehavior(fn string) (beh string, def Expr, ok bool, err error) {
	switch {
	case p.isKw("NULL") || p.isKw("ERROR"):
		return p.advance().val, nil, true, nil
	case fn == "JSON_VALUE" && p.isKw("DEFAULT"):
		p.advance()
		def, err := p.parseExpr(precConcat)
		if err != nil {
			return "", nil, false, err
		}
		return "DEFAULT", def, true, nil
	case fn == "JSON_QUERY" && p.isKw("EMPTY"):
		p.advance()
		switch {
		case p.isKw("ARRAY"):
			p.advance()
			return "EMPTY ARRAY", nil, true, nil
		case p.isKw("OBJECT"):
			p.advance()
			return "EMPTY OBJECT", nil, true, nil
		}
		return "", nil, false, p.errExpecting(`"ARRAY"`, `"OBJECT"`)
	case fn == "JSON_EXISTS" && (p.isKw("TRUE") || p.isKw("FALSE") || p.isKw("UNKNOWN")):
		return p.advance().val, nil, true, nil
	}
	return "", nil, false, nil
}

// desugarObjectAgg turns JSON_OBJECTAGG([KEY] k VALUE v [NULL|ABSENT ON
// NULL]) into the LISTAGG of the members' JSON text ($JSON_MEMBER, NULL for
// a NULL value with ABSENT ON NULL), made an object by $JSON_MEMBERS_OBJECT,
// which fails on a key that occurs twice. NULL ON NULL is the default.
func desugarObjectAgg(j *JsonExpr) (Expr, error) {
	if len(j.Args) != 2 {
		return nil, &Error{Pos: j.P, Msg: fmt.Sprintf("JSON_OBJECTAGG takes one KEY ... VALUE ... pair at %s.", j.P)}
	}
	at := j.exprBase
	member := "$JSON_MEMBER"
	if j.OnNull == "ABSENT" {
		member = "$JSON_MEMBER_ABSENT"
	}
	call := func(name string, args ...Expr) *FuncCall {
		f := &FuncCall{exprBase: at, Name: []string{name}}
		for _, a := range args {
			f.Args = append(f.Args, Arg{Value: a})
		}
		return f
	}
	members := call("LISTAGG", call(member, j.Args[0], j.Args[1]), &Literal{at, StringLit, ","})
	return call("$JSON_MEMBERS_OBJECT", members), nil
}

// writeJSON formats a JsonExpr back to SQL.
func writeJSON(sb *writer, j *JsonExpr) {
	sb.WriteString(j.Func + "(")
	switch j.Func {
	case "JSON_OBJECT", "JSON_OBJECTAGG":
		for i := 0; i+1 < len(j.Args); i += 2 {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("KEY ")
			writeExpr(sb, j.Args[i])
			sb.WriteString(" VALUE ")
			writeExpr(sb, j.Args[i+1])
		}
	default:
		writeExprList(sb, j.Args)
	}
	if j.Returning != nil {
		sb.WriteString(" RETURNING ")
		writeType(sb, j.Returning)
	}
	switch j.Wrapper {
	case "WITHOUT":
		sb.WriteString(" WITHOUT ARRAY WRAPPER")
	case "CONDITIONAL", "UNCONDITIONAL":
		sb.WriteString(" WITH " + j.Wrapper + " ARRAY WRAPPER")
	}
	beh := func(b string, def Expr, on string) {
		if b == "" {
			return
		}
		sb.WriteString(" " + b)
		if def != nil {
			sb.WriteByte(' ')
			writeExpr(sb, def)
		}
		sb.WriteString(" ON " + on)
	}
	beh(j.OnEmpty, j.EmptyDefault, "EMPTY")
	beh(j.OnError, j.ErrorDefault, "ERROR")
	if j.OnNull != "" {
		if len(j.Args) > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(j.OnNull + " ON NULL")
	}
	sb.WriteByte(')')
}
