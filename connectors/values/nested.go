package values

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

// Nested values (ARRAY, MAP, ROW columns) are written as Flink prints
// them: [e1, e2] for an array, {k1=v1, k2=v2} for a map, (f1, f2) for a
// row. Inside, elements are separated by commas; NULL (any case) is NULL;
// an element may be quoted with single quotes ('a, b', with '' for a
// quote) to hold commas, brackets or blanks, or to be the string NULL. A
// field holding a nested value must be CSV-quoted ("[1, 2]") when it
// contains commas.

// parseNested parses text as a value of an ARRAY, MAP or ROW type.
func parseNested(text string, t types.Type, loc *time.Location) (types.Value, error) {
	p := &nestedParser{s: strings.TrimSpace(text), loc: loc}
	v, err := p.value(t)
	if err != nil {
		return types.NullValue, err
	}
	p.blanks()
	if p.i != len(p.s) {
		return types.NullValue, fmt.Errorf("unexpected text at character %d", p.i+1)
	}
	return v, nil
}

type nestedParser struct {
	s   string
	i   int
	loc *time.Location
}

func (p *nestedParser) blanks() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *nestedParser) expect(c byte) error {
	p.blanks()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected '%c' at character %d", c, p.i+1)
	}
	p.i++
	return nil
}

// list parses open elem (sep elem)* close, calling elem for each element.
func (p *nestedParser) list(open, close byte, elem func() error) error {
	if err := p.expect(open); err != nil {
		return err
	}
	p.blanks()
	if p.i < len(p.s) && p.s[p.i] == close {
		p.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		p.blanks()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		return p.expect(close)
	}
}

// value parses one value of type t at the current position.
func (p *nestedParser) value(t types.Type) (types.Value, error) {
	p.blanks()
	switch t.Root {
	case types.RootArray:
		if p.null() {
			return types.NullValue, nil
		}
		var elems []types.Value
		err := p.list('[', ']', func() error {
			v, err := p.value(*t.Elem)
			elems = append(elems, v)
			return err
		})
		return types.ArrayValue(elems), err
	case types.RootMap, types.RootMultiset:
		if p.null() {
			return types.NullValue, nil
		}
		var keys, vals []types.Value
		err := p.list('{', '}', func() error {
			k, err := p.value(*t.Elem)
			if err != nil {
				return err
			}
			if err := p.expect('='); err != nil {
				return err
			}
			vt := types.IntType
			if t.Value != nil {
				vt = *t.Value
			}
			v, err := p.value(vt)
			keys, vals = append(keys, k), append(vals, v)
			return err
		})
		return types.MapOf(keys, vals), err
	case types.RootRow:
		if p.null() {
			return types.NullValue, nil
		}
		fields := make(types.Row, 0, len(t.Fields))
		err := p.list('(', ')', func() error {
			if len(fields) == len(t.Fields) {
				return fmt.Errorf("more than the %d fields of %s", len(t.Fields), t)
			}
			v, err := p.value(t.Fields[len(fields)].Type)
			fields = append(fields, v)
			return err
		})
		if err == nil && len(fields) != len(t.Fields) {
			err = fmt.Errorf("%d fields for %s", len(fields), t)
		}
		return types.RowValue(fields), err
	}
	text, quoted, err := p.scalar()
	if err != nil {
		return types.NullValue, err
	}
	if !quoted && strings.EqualFold(text, "NULL") {
		return types.NullValue, nil
	}
	return parseValue(text, t, p.loc)
}

// null consumes a NULL standing for a whole nested value.
func (p *nestedParser) null() bool {
	if len(p.s)-p.i >= 4 && strings.EqualFold(p.s[p.i:p.i+4], "NULL") {
		p.i += 4
		return true
	}
	return false
}

// scalar reads a scalar element: 'quoted' or up to the next separator.
func (p *nestedParser) scalar() (string, bool, error) {
	if p.i < len(p.s) && p.s[p.i] == '\'' {
		var b strings.Builder
		p.i++
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == '\'' {
				if p.i+1 < len(p.s) && p.s[p.i+1] == '\'' {
					b.WriteByte('\'')
					p.i += 2
					continue
				}
				p.i++
				return b.String(), true, nil
			}
			b.WriteByte(c)
			p.i++
		}
		return "", false, errors.New("unterminated quoted element")
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(",=]})", rune(p.s[p.i])) {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i]), false, nil
}
