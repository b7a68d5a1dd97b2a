package plan

import "github.com/flinksql/flinksql/sql/expr"

// mergeCalcs fuses a chain of Calc nodes into one for the runtime: a view's
// projection and filter and the query's projection over it (Nexmark's bid
// view and q0–q2) then run as one operator, which evaluates the combined
// filter and the composed projection per row instead of copying every row
// into an intermediate batch. As Flink's CalcMergeRule the upper Calc's
// column references are replaced by the lower's expressions. The plan
// itself (EXPLAIN's physical plan) keeps its nodes; only the job graph
// sees the fused one.
//
// Merging is refused when it would change results or cost more than the
// copy it saves: an expression of the lower Calc that the upper reads more
// than once must be cheap (a column, a constant, or a field of a ROW
// column) and deterministic, since it would be evaluated once per read.
func mergeCalcs(top *CalcNode) *CalcNode {
	for {
		bottom, ok := top.inputs[0].(*CalcNode)
		if !ok {
			return top
		}
		merged, ok := mergeCalc(top, bottom)
		if !ok {
			return top
		}
		top = merged
	}
}

// mergeCalc returns the Calc that computes top over bottom's input.
func mergeCalc(top, bottom *CalcNode) (*CalcNode, bool) {
	if bottom.Project != nil {
		reads := make([]int, len(bottom.Project))
		count := func(e expr.Expr) {
			if e == nil {
				return
			}
			expr.Walk(e, func(x expr.Expr) bool {
				if c, ok := x.(*expr.ColumnRef); ok && c.Index >= 0 && c.Index < len(reads) {
					reads[c.Index]++
				}
				return true
			})
		}
		count(top.Filter)
		for _, e := range top.Project {
			count(e)
		}
		if top.Project == nil {
			for i := range reads {
				reads[i]++ // the identity reads every column once
			}
		}
		for i, e := range bottom.Project {
			if reads[i] > 1 && !(cheapExpr(e) && deterministicExpr(e)) {
				return nil, false
			}
			if reads[i] > 0 && !bottom.schema[i].Type.WithoutTimeAttr().EqualIgnoringNull(e.Type().WithoutTimeAttr()) {
				return nil, false
			}
		}
	}
	inline := func(e expr.Expr) expr.Expr {
		if e == nil || bottom.Project == nil {
			return e
		}
		return expr.MapColumns(e, func(c *expr.ColumnRef) expr.Expr {
			if c.Index < 0 || c.Index >= len(bottom.Project) {
				return c // cannot happen in a bound plan; leave it to fail as before
			}
			return bottom.Project[c.Index]
		})
	}
	var proj []expr.Expr
	switch {
	case top.Project != nil:
		proj = make([]expr.Expr, len(top.Project))
		for i, e := range top.Project {
			proj[i] = inline(e)
		}
	case bottom.Project != nil:
		proj = bottom.Project
	}
	// The lower filter first: AND evaluates left to right and stops at the
	// first FALSE, so the upper filter sees only the rows it saw before.
	var conds []expr.Expr
	if bottom.Filter != nil {
		conds = append(conds, bottom.Filter)
	}
	if top.Filter != nil {
		conds = append(conds, inline(top.Filter))
	}
	m := newCalc(bottom.inputs[0], proj, andExprs(conds), top.schema)
	m.mode = top.mode
	return m, true
}

// cheapExpr reports whether e costs about as much as reading a column: a
// column, a constant, or a field of a (nested) ROW column.
func cheapExpr(e expr.Expr) bool {
	switch x := e.(type) {
	case *expr.ColumnRef:
		return true
	default:
		if _, ok := expr.LiteralValue(x); ok {
			return true
		}
		if expr.CallName(x) == "DOT" {
			if args := expr.CallArgs(x); len(args) > 0 {
				return cheapExpr(args[0])
			}
		}
	}
	return false
}

// deterministicExpr reports whether e calls no non-deterministic function.
func deterministicExpr(e expr.Expr) bool {
	ok := true
	expr.Walk(e, func(x expr.Expr) bool {
		if name := expr.CallName(x); name != "" && !expr.IsDeterministic(name) {
			ok = false
		}
		return ok
	})
	return ok
}
