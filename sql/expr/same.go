package expr

// sameExpr reports whether a and b are the same expression tree: the same
// calls on the same input columns and constants, with the same types. It is
// conservative: node kinds it does not know compare unequal.
func sameExpr(a, b Expr) bool {
	if !a.Type().Equal(b.Type()) {
		return false
	}
	switch x := a.(type) {
	case *ColumnRef:
		y, ok := b.(*ColumnRef)
		return ok && x.Index == y.Index
	case *literal:
		y, ok := b.(*literal)
		if !ok || x.v.IsNull() != y.v.IsNull() {
			return false
		}
		return x.v.IsNull() || (x.v.K == y.v.K && x.String() == y.String())
	case *callExpr:
		// Only calls whose result is fixed by their name and operands
		// (operandOnlyOps, memoFuncs): a function call may carry modes
		// outside its operands (JSON_QUERY's wrapper, ON EMPTY and ON
		// ERROR clauses).
		y, ok := b.(*callExpr)
		return ok && x.name == y.name && (operandOnlyOps[x.name] || memoFuncs[x.name]) && sameExprs(x.args, y.args)
	case *castExpr:
		y, ok := b.(*castExpr)
		return ok && x.try == y.try && x.implicit == y.implicit && sameExpr(x.e, y.e)
	case *caseExpr:
		y, ok := b.(*caseExpr)
		return ok && sameExprs(x.whens, y.whens) && sameExprs(x.thens, y.thens) && sameExpr(x.els, y.els)
	}
	return false
}

// operandOnlyOps are the calls sameExpr may equate.
var operandOnlyOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "=": true, "<>": true, "<": true, "<=": true,
	">": true, ">=": true, "AND": true, "OR": true, "NOT": true, "IS NULL": true, "IS NOT NULL": true,
	"IS TRUE": true, "IS NOT TRUE": true, "IS FALSE": true, "IS NOT FALSE": true,
	"IS DISTINCT FROM": true, "IS NOT DISTINCT FROM": true, "DOT": true,
}

func sameExprs(a, b []Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameExpr(a[i], b[i]) {
			return false
		}
	}
	return true
}

// deterministic reports whether e calls no non-deterministic function, so
// two evaluations of it on one row give the same value.
func deterministic(e Expr) bool {
	ok := true
	e.walk(func(x Expr) bool {
		if c, isCall := x.(*callExpr); isCall && !IsDeterministic(c.name) {
			ok = false
		}
		return ok
	})
	return ok
}
