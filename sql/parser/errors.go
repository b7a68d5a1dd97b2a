package parser

import (
	"fmt"
	"strings"
)

// Error is a parse error. Error() formats it the way Flink/Calcite does:
//
//	SQL parse failed. Encountered "t" at line 1, column 15.
//	Was expecting one of:
//	    <EOF>
//	    "FROM" ...
//
// Msg, when set, replaces the Encountered/Expected form (lexical errors and
// semantic checks made by the parser, e.g. a duplicate primary key).
type Error struct {
	Pos         Pos
	Encountered string   // raw text of the offending token, "<EOF>" at end of input
	Expected    []string // display forms: `"FROM"`, `","`, `<IDENTIFIER>`, `<EOF>`, ...
	Msg         string
}

func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("SQL parse failed. ")
	if e.Msg != "" {
		sb.WriteString(e.Msg)
		return sb.String()
	}
	fmt.Fprintf(&sb, "Encountered \"%s\" at %s.", e.Encountered, e.Pos)
	switch len(e.Expected) {
	case 0:
	case 1:
		fmt.Fprintf(&sb, "\nWas expecting:\n    %s ...", e.Expected[0])
	default:
		sb.WriteString("\nWas expecting one of:")
		for _, x := range e.Expected {
			sb.WriteString("\n    ")
			sb.WriteString(x)
			sb.WriteString(" ...")
		}
	}
	return sb.String()
}
