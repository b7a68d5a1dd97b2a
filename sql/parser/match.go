package parser

import (
	"strconv"
)

// MatchRecognize is `input MATCH_RECOGNIZE (...) [AS alias]`: Flink's row
// pattern recognition (CEP in SQL).
type MatchRecognize struct {
	At
	Input       TableRef
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Measures    []*SelectItem // every item has an alias
	// AllRows is set for ALL ROWS PER MATCH (which Flink does not run);
	// RowsPos is where the output mode was written.
	AllRows bool
	RowsPos Pos
	// Skip is the AFTER MATCH SKIP strategy: "" (not written: TO NEXT ROW),
	// SkipPastLastRow, SkipToNextRow, SkipToFirst or SkipToLast (with
	// SkipVar).
	Skip    string
	SkipVar string
	SkipPos Pos
	// SkipVarPos is where SkipVar was written.
	SkipVarPos Pos
	Pattern    []*PatternElem
	// PatternPos is the position of the PATTERN keyword.
	PatternPos    Pos
	Within        Expr // an interval literal, or nil
	Defines       []*PatternDefine
	Alias         string
	ColumnAliases []string
}

func (*MatchRecognize) tableRefNode() {}

// AFTER MATCH SKIP strategies.
const (
	SkipPastLastRow = "PAST LAST ROW"
	SkipToNextRow   = "TO NEXT ROW"
	SkipToFirst     = "TO FIRST"
	SkipToLast      = "TO LAST"
)

// PatternElem is a pattern variable with its quantifier. Max is -1 for no
// upper bound; a variable without a quantifier has Min = Max = 1.
type PatternElem struct {
	At
	Var       string
	Min, Max  int
	Reluctant bool
	// Quant is the quantifier as written ("" for none).
	Quant string
}

// PatternDefine is `var AS condition` of DEFINE.
type PatternDefine struct {
	At
	Var  string
	Cond Expr
}

// parseMatchRecognize parses MATCH_RECOGNIZE (...) after input; the
// current token is MATCH_RECOGNIZE.
func (p *parser) parseMatchRecognize(input TableRef) (TableRef, error) {
	m := &MatchRecognize{At: At{p.advance().pos}, Input: input}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var err error
	if p.isKw("PARTITION") {
		p.advance()
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if m.PartitionBy, err = p.exprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if m.OrderBy, err = p.orderItems(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("MEASURES") {
		for {
			pos := p.cur().pos
			e, err := p.parseExpr(0)
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("AS"); err != nil {
				return nil, err
			}
			alias, err := p.ident()
			if err != nil {
				return nil, err
			}
			m.Measures = append(m.Measures, &SelectItem{At: At{pos}, Expr: e, Alias: alias})
			if !p.acceptOp(",") {
				break
			}
		}
	}
	switch {
	case p.isKw("ONE"):
		m.RowsPos = p.advance().pos
		if err := p.expectKw("ROW", "PER", "MATCH"); err != nil {
			return nil, err
		}
	case p.isKw("ALL"):
		m.RowsPos = p.advance().pos
		m.AllRows = true
		if err := p.expectKw("ROWS", "PER", "MATCH"); err != nil {
			return nil, err
		}
		for _, w := range [][]string{{"SHOW", "EMPTY", "MATCHES"}, {"OMIT", "EMPTY", "MATCHES"}, {"WITH", "UNMATCHED", "ROWS"}} {
			if p.isKw(w[0]) {
				p.advance()
				if err := p.expectKw(w[1:]...); err != nil {
					return nil, err
				}
				break
			}
		}
	default:
		p.expect(`"ONE"`)
		p.expect(`"ALL"`)
	}
	if p.acceptKw("AFTER") {
		if err := p.expectKw("MATCH", "SKIP"); err != nil {
			return nil, err
		}
		m.SkipPos = p.cur().pos
		switch {
		case p.acceptKw("PAST"):
			if err := p.expectKw("LAST", "ROW"); err != nil {
				return nil, err
			}
			m.Skip = SkipPastLastRow
		case p.acceptKw("TO"):
			switch {
			case p.isKw("NEXT"):
				p.advance()
				if err := p.expectKw("ROW"); err != nil {
					return nil, err
				}
				m.Skip = SkipToNextRow
			case p.isKw("FIRST") && !p.peekIsOp(1, "("):
				p.advance()
				m.Skip = SkipToFirst
			case p.isKw("LAST") && !p.peekIsOp(1, "("):
				p.advance()
				m.Skip = SkipToLast
			default:
				p.expect(`"NEXT"`)
				p.expect(`"FIRST"`)
				p.expect(`"LAST"`)
				m.Skip = SkipToLast // SKIP TO var
			}
			if m.Skip != SkipToNextRow {
				m.SkipVarPos = p.cur().pos
				if m.SkipVar, err = p.ident(); err != nil {
					return nil, err
				}
			}
		default:
			return nil, p.errHere()
		}
	}
	m.PatternPos = p.cur().pos
	if err := p.expectKw("PATTERN"); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if m.Pattern, err = p.parsePattern(); err != nil {
		return nil, err
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.acceptKw("WITHIN") {
		if !p.isKw("INTERVAL") {
			return nil, p.errExpecting(`"INTERVAL"`)
		}
		if m.Within, err = p.parseIntervalLit(); err != nil {
			return nil, err
		}
	}
	if p.isKw("SUBSET") {
		return nil, p.errAt(p.cur().pos, "SUBSET is not supported in MATCH_RECOGNIZE (Flink does not support it)")
	}
	if err := p.expectKw("DEFINE"); err != nil {
		return nil, err
	}
	for {
		pos := p.cur().pos
		v, err := p.ident()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AS"); err != nil {
			return nil, err
		}
		cond, err := p.parseExpr(0)
		if err != nil {
			return nil, err
		}
		m.Defines = append(m.Defines, &PatternDefine{At: At{pos}, Var: v, Cond: cond})
		if !p.acceptOp(",") {
			break
		}
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if m.Alias, m.ColumnAliases, err = p.optTableAlias(); err != nil {
		return nil, err
	}
	return m, nil
}

// parsePattern parses the inside of PATTERN ( ... ): a sequence of pattern
// variables with quantifiers. Flink's CEP runs only that; groups,
// alternations, PERMUTE, exclusions and anchors are refused with Flink's
// messages.
func (p *parser) parsePattern() ([]*PatternElem, error) {
	var elems []*PatternElem
	for {
		t := p.cur()
		switch {
		case p.isOp("("):
			return nil, p.errAt(t.pos, "Currently, CEP doesn't support group patterns: a quantifier applies to one pattern variable, as in (A B+ C)")
		case p.isKw("PERMUTE"):
			return nil, p.errAt(t.pos, "Currently, CEP doesn't support PERMUTE patterns.")
		case p.isOp("{") && p.peekIsOp(1, "-"):
			return nil, p.errAt(t.pos, "Currently, CEP doesn't support '{-' '-}' patterns.")
		case p.isOp("|"):
			return nil, p.errAt(t.pos, "Currently, CEP doesn't support branching patterns.")
		}
		if !isIdentTok(t) {
			if len(elems) == 0 {
				return nil, p.errExpecting("<IDENTIFIER>")
			}
			if p.isOp("||") {
				return nil, p.errAt(t.pos, "Currently, CEP doesn't support branching patterns.")
			}
			return elems, nil
		}
		p.advance()
		e := &PatternElem{At: At{t.pos}, Var: identValue(t), Min: 1, Max: 1}
		if err := p.parseQuantifier(e); err != nil {
			return nil, err
		}
		elems = append(elems, e)
	}
}

func (p *parser) parseQuantifier(e *PatternElem) error {
	start := p.cur()
	switch {
	case p.acceptOp("*"):
		e.Min, e.Max, e.Quant = 0, -1, "*"
	case p.acceptOp("+"):
		e.Min, e.Max, e.Quant = 1, -1, "+"
	case p.acceptOp("?"):
		e.Min, e.Max, e.Quant = 0, 1, "?"
	case p.isOp("{") && !p.peekIsOp(1, "-"):
		p.advance()
		num := func() (int, bool, error) {
			t := p.cur()
			if t.kind != tokNumber {
				return 0, false, nil
			}
			n, err := strconv.Atoi(t.text)
			if err != nil || n < 0 {
				return 0, false, p.errAt(t.pos, "Invalid quantifier bound %s", t.text)
			}
			p.advance()
			return n, true, nil
		}
		lo, hasLo, err := num()
		if err != nil {
			return err
		}
		hi, hasHi := lo, hasLo
		comma := p.acceptOp(",")
		if comma {
			if hi, hasHi, err = num(); err != nil {
				return err
			}
			if !hasHi {
				hi = -1
			}
		}
		if err := p.expectOp("}"); err != nil {
			return err
		}
		if !hasLo && !comma || !hasLo && !hasHi {
			return p.errAt(start.pos, "Invalid quantifier: expected {n}, {n,}, {n,m} or {,m}")
		}
		e.Min, e.Max = lo, hi
		switch {
		case !comma && lo == 0:
			return p.errAt(start.pos, "Invalid quantifier {0}: the number of rows must be greater than 0")
		case hasHi && comma && hi == 0:
			return p.errAt(start.pos, "Invalid quantifier: the upper bound must be greater than 0")
		case hasHi && hi < lo:
			return p.errAt(start.pos, "Invalid quantifier: the lower bound %d is greater than the upper bound %d", lo, hi)
		}
		e.Quant = p.src[start.pos.Offset:p.lastEnd]
	default:
		return nil
	}
	if p.isOp("?") {
		p.advance()
		e.Reluctant = true
		e.Quant += "?"
	}
	return nil
}
