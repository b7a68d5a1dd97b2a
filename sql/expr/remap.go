package expr

// MapColumns returns e with every column reference replaced by what fn
// returns for it (a reference to another position, another name, or any
// expression of the same type). The rest of the tree is shared or copied
// with its resolved implementations: the planner moves a condition from
// one input row layout to another (a join's predicate pushed into one
// side, a join key renamed for EXPLAIN) without binding it again.
func MapColumns(e Expr, fn func(c *ColumnRef) Expr) Expr {
	switch x := e.(type) {
	case *ColumnRef:
		return fn(x)
	case *callExpr:
		c := *x
		c.args = make([]Expr, len(x.args))
		for i, a := range x.args {
			c.args[i] = MapColumns(a, fn)
		}
		return &c
	case *castExpr:
		c := *x
		c.e = MapColumns(x.e, fn)
		return &c
	case *caseExpr:
		c := *x
		c.whens = make([]Expr, len(x.whens))
		c.thens = make([]Expr, len(x.thens))
		for i := range x.whens {
			c.whens[i] = MapColumns(x.whens[i], fn)
			c.thens[i] = MapColumns(x.thens[i], fn)
		}
		c.els = MapColumns(x.els, fn)
		return &c
	}
	return e
}

// ShiftColumns returns e with every column index moved by delta and
// renamed from names (by new index) when names is long enough.
func ShiftColumns(e Expr, delta int, names []string) Expr {
	return MapColumns(e, func(c *ColumnRef) Expr {
		i := c.Index + delta
		name := c.Name
		if i >= 0 && i < len(names) {
			name = names[i]
		}
		return &ColumnRef{Index: i, Name: name, T: c.T}
	})
}
