package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// scopeColumn is a column visible to expressions, with the name of the table
// (or alias) it came from.
type scopeColumn struct {
	Qualifier string
	Name      string
	Type      types.Type
	// Hidden marks a column of a NATURAL or USING join's input that the
	// join's merged column stands for: it is reachable qualified (a.k) and
	// by a.*, but not by its bare name nor by an unqualified *.
	Hidden bool
}

// scope is the list of columns an expression can reference, in row order.
type scope struct {
	cols []scopeColumn
}

func newScope(qualifier string, s types.Schema) *scope {
	sc := &scope{cols: make([]scopeColumn, len(s))}
	for i, c := range s {
		sc.cols[i] = scopeColumn{Qualifier: qualifier, Name: c.Name, Type: c.Type}
	}
	return sc
}

func (s *scope) schema() types.Schema {
	out := make(types.Schema, len(s.cols))
	for i, c := range s.cols {
		out[i] = types.Column{Name: c.Name, Type: c.Type}
	}
	return out
}

func (s *scope) requalify(q string) *scope {
	out := &scope{cols: make([]scopeColumn, len(s.cols))}
	for i, c := range s.cols {
		c.Qualifier = q
		out.cols[i] = c
	}
	return out
}

// resolve finds the column named by the leading parts of an identifier. It
// returns the column index and how many parts named it (the rest are field
// accesses), or a message in Calcite's words.
func (s *scope) resolve(parts []string) (idx, used int, msg string) {
	if len(parts) >= 2 {
		qualified := -1
		tableSeen := false
		for i, c := range s.cols {
			if c.Qualifier == parts[0] {
				tableSeen = true
				if c.Name == parts[1] {
					if qualified >= 0 {
						return 0, 0, fmt.Sprintf("Column '%s' is ambiguous", parts[1])
					}
					qualified = i
				}
			}
		}
		if qualified >= 0 {
			return qualified, 2, ""
		}
		if tableSeen {
			return 0, 0, fmt.Sprintf("Column '%s' not found in table '%s'", parts[1], parts[0])
		}
	}
	found := -1
	for i, c := range s.cols {
		if c.Name == parts[0] && !c.Hidden {
			if found >= 0 {
				return 0, 0, fmt.Sprintf("Column '%s' is ambiguous", parts[0])
			}
			found = i
		}
	}
	if found >= 0 {
		return found, 1, ""
	}
	if len(parts) >= 2 {
		return 0, 0, fmt.Sprintf("Table '%s' not found", parts[0])
	}
	// Calcite suggests a column that differs only in case.
	for _, c := range s.cols {
		if strings.EqualFold(c.Name, parts[0]) && !c.Hidden {
			return 0, 0, fmt.Sprintf("Column '%s' not found in any table; did you mean '%s'?", parts[0], c.Name)
		}
	}
	return 0, 0, fmt.Sprintf("Column '%s' not found in any table", parts[0])
}

// starColumns returns the indexes of the columns an unqualified * stands
// for: all but the hidden ones.
func (s *scope) starColumns() []int {
	idx := make([]int, 0, len(s.cols))
	for i, c := range s.cols {
		if !c.Hidden {
			idx = append(idx, i)
		}
	}
	return idx
}

// qualifierColumns returns the indexes of the columns of table q (for q.*).
func (s *scope) qualifierColumns(q string) []int {
	var idx []int
	for i, c := range s.cols {
		if c.Qualifier == q {
			idx = append(idx, i)
		}
	}
	return idx
}
