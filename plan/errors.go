package plan

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/sql/parser"
)

// ValidationError is a semantic error in a statement, positioned like
// Calcite's validator reports it.
type ValidationError struct {
	From, To parser.Pos
	Msg      string
}

func (e *ValidationError) Error() string {
	if e.From.Line == 0 {
		return "SQL validation failed. " + e.Msg
	}
	return fmt.Sprintf("SQL validation failed. From line %d, column %d to line %d, column %d: %s",
		e.From.Line, e.From.Col, e.To.Line, e.To.Col, e.Msg)
}

// UnsupportedError reports a valid Flink statement that flinksql cannot run yet.
type UnsupportedError struct {
	Msg string
}

func (e *UnsupportedError) Error() string { return e.Msg }

// errAt builds a ValidationError spanning node n.
func errAt(n parser.Node, format string, args ...any) error {
	from, to := span(n)
	return &ValidationError{From: from, To: to, Msg: fmt.Sprintf(format, args...)}
}

// span returns the first and last character positions of a node. The AST
// keeps only start positions, so the end is derived from the node's canonical
// text, which matches the source for identifiers and simple expressions.
func span(n parser.Node) (parser.Pos, parser.Pos) {
	from := n.Pos()
	to := from
	var text string
	switch x := n.(type) {
	case parser.Expr:
		text = parser.FormatExpr(x)
	case *parser.TableName:
		text = strings.Join(x.Name, ".")
	}
	if l := len([]rune(text)); l > 0 {
		to.Col += l - 1
		to.Offset += len(text) - 1
	}
	return from, to
}
