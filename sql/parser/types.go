package parser

const expDataType = "<data type>"

// parseDataType parses a data type including NOT NULL / NULL and postfix
// ARRAY / MULTISET.
func (p *parser) parseDataType() (*DataType, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	dt, err := p.parseBaseType()
	if err != nil {
		return nil, err
	}
	if err := p.nullability(dt); err != nil {
		return nil, err
	}
	for p.isKw("ARRAY") || p.isKw("MULTISET") {
		t := p.advance()
		dt = &DataType{At: At{t.pos}, Name: t.val, Elem: dt}
		if err := p.nullability(dt); err != nil {
			return nil, err
		}
	}
	return dt, nil
}

func (p *parser) nullability(dt *DataType) error {
	if p.isKw("NOT") && p.peekIsKw(1, "NULL") {
		p.advance()
		p.advance()
		dt.NotNull = true
	} else if p.isKw("NULL") {
		p.advance()
	} else {
		p.expect(`"NOT"`)
	}
	return nil
}

// typeParams parses ( n [, n] ) when present (at most max numbers).
func (p *parser) typeParams(dt *DataType, max int) error {
	if !p.isOp("(") {
		return nil
	}
	p.advance()
	for {
		n, err := p.intLit()
		if err != nil {
			return err
		}
		dt.Params = append(dt.Params, n)
		if len(dt.Params) < max && p.acceptOp(",") {
			continue
		}
		return p.expectOp(")")
	}
}

func (p *parser) parseBaseType() (*DataType, error) {
	t := p.cur()
	dt := &DataType{At: At{t.pos}}
	if t.kind != tokWord {
		return nil, p.errExpecting(expDataType)
	}
	name := t.val
	switch name {
	case "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "REAL", "STRING", "BYTES", "DATE":
		p.advance()
		dt.Name = map[string]string{"INTEGER": "INT", "REAL": "FLOAT"}[name]
		if dt.Name == "" {
			dt.Name = name
		}
		return dt, nil
	case "DOUBLE":
		p.advance()
		dt.Name = "DOUBLE"
		if p.isKw("PRECISION") {
			p.advance()
		}
		return dt, nil
	case "DECIMAL", "DEC", "NUMERIC":
		p.advance()
		dt.Name = "DECIMAL"
		return dt, p.typeParams(dt, 2)
	case "CHAR", "CHARACTER":
		p.advance()
		dt.Name = "CHAR"
		if p.isKw("VARYING") {
			p.advance()
			dt.Name = "VARCHAR"
		}
		return dt, p.typeParams(dt, 1)
	case "VARCHAR", "BINARY", "VARBINARY":
		p.advance()
		dt.Name = name
		return dt, p.typeParams(dt, 1)
	case "TIME", "TIMESTAMP":
		p.advance()
		dt.Name = name
		if err := p.typeParams(dt, 1); err != nil {
			return nil, err
		}
		if p.isKw("WITHOUT") {
			p.advance()
			if err := p.expectKw("TIME", "ZONE"); err != nil {
				return nil, err
			}
			dt.WithoutTimeZone = true
		} else if p.isKw("WITH") && p.peekIsKw(1, "LOCAL") {
			p.advance()
			p.advance()
			if err := p.expectKw("TIME", "ZONE"); err != nil {
				return nil, err
			}
			dt.WithLocalTimeZone = true
			if name == "TIMESTAMP" {
				dt.Name = "TIMESTAMP_LTZ"
			}
		}
		return dt, nil
	case "TIMESTAMP_LTZ":
		p.advance()
		dt.Name = name
		dt.WithLocalTimeZone = true
		return dt, p.typeParams(dt, 1)
	case "INTERVAL":
		p.advance()
		dt.Name = "INTERVAL"
		q, err := p.intervalQualifier()
		if err != nil {
			return nil, err
		}
		dt.Interval = &q
		return dt, nil
	case "ARRAY", "MULTISET":
		p.advance()
		dt.Name = name
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		elem, err := p.parseDataType()
		if err != nil {
			return nil, err
		}
		dt.Elem = elem
		return dt, p.expectOp(">")
	case "MAP":
		p.advance()
		dt.Name = name
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		var err error
		if dt.Key, err = p.parseDataType(); err != nil {
			return nil, err
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		if dt.Value, err = p.parseDataType(); err != nil {
			return nil, err
		}
		return dt, p.expectOp(">")
	case "ROW":
		p.advance()
		dt.Name = name
		closer := ""
		switch {
		case p.isOp("<>"):
			p.advance()
			dt.Fields = []*RowField{}
			return dt, nil
		case p.isOp("<"):
			closer = ">"
		case p.isOp("("):
			closer = ")"
		default:
			return nil, p.errExpecting(`"<"`, `"("`)
		}
		p.advance()
		dt.Fields = []*RowField{}
		if p.acceptOp(closer) {
			return dt, nil
		}
		for {
			f := &RowField{}
			var err error
			if f.Name, err = p.ident(); err != nil {
				return nil, err
			}
			if f.Type, err = p.parseDataType(); err != nil {
				return nil, err
			}
			if p.cur().kind == tokString {
				f.Description = p.advance().val
				f.HasDescription = true
			}
			dt.Fields = append(dt.Fields, f)
			if p.acceptOp(",") {
				continue
			}
			return dt, p.expectOp(closer)
		}
	}
	return nil, p.errExpecting(expDataType)
}
