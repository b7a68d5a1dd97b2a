package expr

import "github.com/flinksql/flinksql/types"

// A Calc's filter and projection often compute the same costly value:
// Nexmark q21 keeps a bid when REGEXP_EXTRACT(url, …) IS NOT NULL and then
// selects that same REGEXP_EXTRACT. Compiled together (NewFilterProjector),
// such a call is one memoEval in both trees, computed once per row.

// memoFuncs are the costly calls worth sharing between a filter and a
// projection. Each is fixed by its operands (and the session's
// configuration, which both trees share), so sameExpr may equate them.
var memoFuncs = map[string]bool{
	"REGEXP_EXTRACT": true, "REGEXP": true, "REGEXP_REPLACE": true, "SPLIT_INDEX": true,
}

// memoEval evaluates inner at most once per row: the value is kept for the
// row the predicate last tested (ctx.rowGen, which Predicate.Test advances,
// and the row's address, so that a projection of a row the predicate did
// not see recomputes).
type memoEval struct {
	ctx   *evalCtx
	inner evaluator
	gen   uint64
	row   *types.Value
	set   bool
	v     types.Value
	err   error
}

func (m *memoEval) eval(row types.Row) (types.Value, error) {
	var first *types.Value
	if len(row) > 0 {
		first = &row[0]
	}
	if m.set && m.gen == m.ctx.rowGen && m.row == first {
		return m.v, m.err
	}
	m.v, m.err = m.inner.eval(row)
	m.gen, m.row, m.set = m.ctx.rowGen, first, true
	return m.v, m.err
}

// sharedCalls maps the memoFuncs calls of filter that the projection
// repeats, and their repetitions, to one memo per value.
func sharedCalls(ctx *evalCtx, filter Expr, exprs []Expr) map[Expr]*memoEval {
	var candidates []*callExpr
	filter.walk(func(e Expr) bool {
		if c, ok := e.(*callExpr); ok && memoFuncs[c.name] && deterministic(c) {
			candidates = append(candidates, c)
		}
		return true
	})
	if len(candidates) == 0 {
		return nil
	}
	memo := make(map[Expr]*memoEval)
	for _, p := range exprs {
		p.walk(func(e Expr) bool {
			c, ok := e.(*callExpr)
			if !ok || !memoFuncs[c.name] {
				return true
			}
			for _, f := range candidates {
				if sameExpr(f, c) {
					m := memo[f]
					if m == nil {
						m = &memoEval{ctx: ctx}
						memo[f] = m
					}
					memo[c] = m
					return false
				}
			}
			return true
		})
	}
	return memo
}

// NewFilterProjector compiles a Calc's condition and projection together,
// so that costly calls they share are computed once per row. The Projector
// is meant for the rows the Predicate has just accepted, as a Calc uses
// them; on any other row it computes everything itself.
func NewFilterProjector(filter Expr, exprs []Expr, cfg *Config) (*Predicate, *Projector) {
	c := &compiler{ctx: newEvalCtx(cfg)}
	c.memo = sharedCalls(c.ctx, filter, exprs)
	pred := &Predicate{e: c.compileExpr(filter), ctx: c.ctx}
	return pred, newProjector(c, exprs)
}
