// Package expr owns typed, resolved scalar expressions: Flink's type
// inference and implicit casts for operators and built-in scalar functions,
// CAST / TRY_CAST, CASE, and their compiled evaluation (Projector and
// Predicate) over types.Row.
//
// The planner binds names and builds expressions with the constructors of this
// package (Column, Literal, Call, Cast, Case …); every constructor checks its
// arguments as Flink's validator does and fails with Flink's wording. An
// expression tree is immutable and may be shared; NewProjector and
// NewPredicate compile it into per-subtask evaluator nodes whose function
// implementations were resolved when the expression was built.
package expr

import (
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// Expr is a typed, resolved scalar expression.
type Expr interface {
	// Type is the result type, nullability included.
	Type() types.Type
	// String renders the expression as Flink's plans do: operator or
	// function name followed by parenthesised arguments.
	String() string

	// format appends String's text to b: one builder for the whole tree,
	// so rendering a deep expression is linear in its size.
	format(b *strings.Builder)
	compile(c *compiler) evaluator
	walk(fn func(Expr) bool) bool
}

// ColumnRef is a reference to an input column.
type ColumnRef struct {
	Index int
	Name  string
	T     types.Type
}

// Column returns a reference to input column index.
func Column(index int, name string, t types.Type) Expr {
	return &ColumnRef{Index: index, Name: name, T: t}
}

func (c *ColumnRef) Type() types.Type { return c.T }
func (c *ColumnRef) String() string {
	if c.Name == "" {
		return fmt.Sprintf("$%d", c.Index)
	}
	return c.Name
}
func (c *ColumnRef) format(b *strings.Builder)    { b.WriteString(c.String()) }
func (c *ColumnRef) walk(fn func(Expr) bool) bool { return fn(c) }

// literal is a constant value.
type literal struct {
	v types.Value
	t types.Type
}

// Literal returns a constant of type t.
func Literal(v types.Value, t types.Type) Expr {
	if v.IsNull() {
		t.NotNull = false
	}
	return &literal{v: v, t: t}
}

// NullLiteral returns a typed NULL; types.NullType gives an untyped NULL.
func NullLiteral(t types.Type) Expr {
	t.NotNull = false
	return &literal{t: t}
}

// BoolLiteral returns TRUE or FALSE.
func BoolLiteral(b bool) Expr {
	return &literal{v: types.Bool(b), t: types.BooleanType.WithNullable(false)}
}

// StringLiteral returns a character literal, typed CHAR(n) NOT NULL with n
// its length in characters, as Flink types 'abc'.
func StringLiteral(s string) Expr {
	n := len([]rune(s))
	if n == 0 {
		// Flink types '' as CHAR(0) NOT NULL as well.
		return &literal{v: types.String(s), t: types.CharType(0).WithNullable(false)}
	}
	return &literal{v: types.String(s), t: types.CharType(n).WithNullable(false)}
}

// Symbol returns a flag argument of a function (a time unit, a TRIM mode …).
func Symbol(s string) Expr {
	return &literal{v: types.SymbolValue(strings.ToUpper(s)), t: types.Type{Root: types.RootSymbol, NotNull: true}}
}

func (l *literal) Type() types.Type             { return l.t }
func (l *literal) walk(fn func(Expr) bool) bool { return fn(l) }
func (l *literal) format(b *strings.Builder)    { b.WriteString(l.String()) }
func (l *literal) String() string {
	if l.v.IsNull() {
		if l.t.Root == types.RootNull {
			return "NULL"
		}
		return "null:" + sqlTypeName(l.t)
	}
	switch l.t.Root {
	case types.RootChar, types.RootVarChar:
		return "'" + strings.ReplaceAll(l.v.S, "'", "''") + "'"
	case types.RootSymbol:
		return l.v.S
	case types.RootIntervalYearMonth, types.RootIntervalDayTime:
		return fmt.Sprintf("%d:%s", l.v.N, sqlTypeName(l.t))
	case types.RootBinary, types.RootVarBinary:
		return types.FormatSQL(l.v, l.t, nil)[1:]
	}
	return types.FormatSQL(l.v, l.t, nil)
}

// LiteralValue returns the value of a literal expression and whether e is one.
func LiteralValue(e Expr) (types.Value, bool) {
	if l, ok := e.(*literal); ok {
		return l.v, true
	}
	return types.Value{}, false
}

// callExpr is an operator or function call whose implementation was resolved
// when it was built.
type callExpr struct {
	name string
	args []Expr
	t    types.Type
	impl impl
}

func (c *callExpr) Type() types.Type { return c.t }
func (c *callExpr) String() string   { return formatExpr(c) }
func (c *callExpr) format(b *strings.Builder) {
	b.WriteString(c.name)
	b.WriteByte('(')
	for i, a := range c.args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.format(b)
	}
	b.WriteByte(')')
}
func (c *callExpr) walk(fn func(Expr) bool) bool {
	if !fn(c) {
		return false
	}
	for _, a := range c.args {
		if !a.walk(fn) {
			return false
		}
	}
	return true
}

// CallName returns the function name of a call expression, or "".
func CallName(e Expr) string {
	if c, ok := e.(*callExpr); ok {
		return c.name
	}
	return ""
}

// CallArgs returns the arguments of a call expression.
func CallArgs(e Expr) []Expr {
	if c, ok := e.(*callExpr); ok {
		return c.args
	}
	return nil
}

// castExpr converts its operand to another type.
type castExpr struct {
	e        Expr
	t        types.Type
	try      bool
	implicit bool // inserted by type inference; invisible when numeric widening
	fn       castFn
}

func (c *castExpr) Type() types.Type { return c.t }
func (c *castExpr) String() string   { return formatExpr(c) }
func (c *castExpr) format(b *strings.Builder) {
	if c.implicit && sameFamily(c.e.Type(), c.t) {
		c.e.format(b)
		return
	}
	if c.try {
		b.WriteString("TRY_CAST(")
	} else {
		b.WriteString("CAST(")
	}
	c.e.format(b)
	b.WriteString(" AS ")
	b.WriteString(c.t.WithNullable(true).SQLString())
	b.WriteByte(')')
}
func (c *castExpr) walk(fn func(Expr) bool) bool { return fn(c) && c.e.walk(fn) }

// caseExpr is a searched CASE: the first true condition picks its result.
type caseExpr struct {
	whens, thens []Expr
	els          Expr
	t            types.Type
}

func (c *caseExpr) Type() types.Type { return c.t }
func (c *caseExpr) String() string   { return formatExpr(c) }
func (c *caseExpr) format(b *strings.Builder) {
	b.WriteString("CASE(")
	for i := range c.whens {
		c.whens[i].format(b)
		b.WriteString(", ")
		c.thens[i].format(b)
		b.WriteString(", ")
	}
	c.els.format(b)
	b.WriteByte(')')
}

func formatExpr(e Expr) string {
	var b strings.Builder
	e.format(&b)
	return b.String()
}
func (c *caseExpr) walk(fn func(Expr) bool) bool {
	if !fn(c) {
		return false
	}
	for i := range c.whens {
		if !c.whens[i].walk(fn) || !c.thens[i].walk(fn) {
			return false
		}
	}
	return c.els.walk(fn)
}

// IsConstant reports whether e has no column references and is deterministic.
func IsConstant(e Expr) bool {
	ok := true
	e.walk(func(x Expr) bool {
		switch n := x.(type) {
		case *ColumnRef:
			ok = false
		case *callExpr:
			if !IsDeterministic(n.name) {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// UsesColumns returns the input column indexes that e references.
func UsesColumns(e Expr) []int {
	var idx []int
	seen := map[int]bool{}
	e.walk(func(x Expr) bool {
		if c, ok := x.(*ColumnRef); ok && !seen[c.Index] {
			seen[c.Index] = true
			idx = append(idx, c.Index)
		}
		return true
	})
	return idx
}

// Walk calls fn for e and, while fn returns true, for its operands, depth
// first.
func Walk(e Expr, fn func(Expr) bool) { e.walk(fn) }
