package plan

import (
	"github.com/flinksql/flinksql/sql/expr"
)

// temporalKey is one equality of a temporal or lookup join: a column of the
// right side (an index into the right row) equal to an expression over the
// left row (or a constant).
type temporalKey struct {
	Right int
	Left  expr.Expr
}

// splitTemporalCondition splits a join condition over [left (nl columns),
// right] rows into equalities between a right column and an expression of
// the left side only, and the rest (the residual, nil when empty). A right
// column behind an implicit cast within its type family counts as the
// column.
func splitTemporalCondition(cond expr.Expr, nl int) ([]temporalKey, expr.Expr, error) {
	var keys []temporalKey
	var rest []expr.Expr
	seen := map[int]bool{}
	for _, c := range boundConjuncts(cond) {
		if k, ok := temporalEquality(c, nl); ok && !seen[k.Right] {
			seen[k.Right] = true
			keys = append(keys, k)
			continue
		}
		rest = append(rest, c)
	}
	return keys, andExprs(rest), nil
}

func temporalEquality(c expr.Expr, nl int) (temporalKey, bool) {
	if expr.CallName(c) != "=" {
		return temporalKey{}, false
	}
	args := expr.CallArgs(c)
	if len(args) != 2 {
		return temporalKey{}, false
	}
	for i := range 2 {
		r, l := args[i], args[1-i]
		col, ok := rightColumn(r, nl)
		if !ok || !leftOnly(l, nl) {
			continue
		}
		return temporalKey{Right: col - nl, Left: l}, true
	}
	return temporalKey{}, false
}

// rightColumn reports the column a right-side reference names, looking
// through an implicit widening cast (which prints as the bare column).
func rightColumn(e expr.Expr, nl int) (int, bool) {
	if ref, ok := e.(*expr.ColumnRef); ok {
		return ref.Index, ref.Index >= nl
	}
	cols := expr.UsesColumns(e)
	if len(cols) != 1 || cols[0] < nl {
		return 0, false
	}
	var name string
	expr.Walk(e, func(x expr.Expr) bool {
		if ref, ok := x.(*expr.ColumnRef); ok {
			name = ref.String()
		}
		return true
	})
	return cols[0], e.String() == name
}

// leftOnly reports whether e reads only left columns (a constant too),
// and is deterministic.
func leftOnly(e expr.Expr, nl int) bool {
	for _, c := range expr.UsesColumns(e) {
		if c >= nl {
			return false
		}
	}
	return deterministic(e)
}

func deterministic(e expr.Expr) bool {
	ok := true
	expr.Walk(e, func(x expr.Expr) bool {
		if name := expr.CallName(x); name != "" && !expr.IsDeterministic(name) {
			ok = false
		}
		return ok
	})
	return ok
}
