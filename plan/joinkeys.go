package plan

import (
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Join-condition analysis shared by every join kind: a condition bound
// over the joined row [left columns..., right columns...] is split into its
// conjuncts, and each conjunct is classified as an equi-join key pair, a
// predicate on one input only (which the caller may push into that input),
// or a residual predicate that needs columns of both sides.

// conjuncts splits a condition (AST) at its top-level ANDs.
func conjuncts(e parser.Expr) []parser.Expr {
	if e == nil {
		return nil
	}
	if b, ok := e.(*parser.BinaryExpr); ok && strings.EqualFold(b.Op, "AND") {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []parser.Expr{e}
}

// boundConjuncts splits a bound condition at its top-level ANDs.
func boundConjuncts(e expr.Expr) []expr.Expr {
	if e == nil {
		return nil
	}
	if expr.CallName(e) == "AND" {
		var out []expr.Expr
		for _, a := range expr.CallArgs(e) {
			out = append(out, boundConjuncts(a)...)
		}
		return out
	}
	return []expr.Expr{e}
}

// andExprs joins predicates with AND (nil for none).
func andExprs(preds []expr.Expr) expr.Expr {
	if len(preds) == 0 {
		return nil
	}
	if len(preds) == 1 {
		return preds[0]
	}
	e, err := expr.Call("AND", preds...)
	if err != nil {
		// Every conjunct is a bound condition: AND of them cannot fail.
		panic("plan: AND of join conditions: " + err.Error())
	}
	return e
}

// joinCondition is a join condition split against the widths of its two
// inputs.
type joinCondition struct {
	// LeftKeys[i] = RightKeys[i] (right positions relative to the right
	// input); NullSafe[i] when the pair is IS NOT DISTINCT FROM.
	LeftKeys, RightKeys []int
	NullSafe            []bool
	// Equi are the key conjuncts, over the joined row.
	Equi []expr.Expr
	// LeftOnly, over the left input, and RightOnly, over the right input,
	// reference one side only.
	LeftOnly, RightOnly []expr.Expr
	// Residual references both sides (or none), over the joined row.
	Residual []expr.Expr
}

// splitJoinCondition classifies the conjuncts of a join condition bound
// over the joined row whose first leftWidth columns are the left input's.
// rightNames names the right input's columns (for the predicates moved
// onto it).
func splitJoinCondition(conds []expr.Expr, leftWidth int, rightNames []string) joinCondition {
	var jc joinCondition
	for _, c := range conds {
		l, r := false, false
		for _, i := range expr.UsesColumns(c) {
			if i < leftWidth {
				l = true
			} else {
				r = true
			}
		}
		switch {
		case l && r:
			if lk, rk, nullSafe, ok := equiPair(c, leftWidth); ok {
				jc.LeftKeys = append(jc.LeftKeys, lk)
				jc.RightKeys = append(jc.RightKeys, rk-leftWidth)
				jc.NullSafe = append(jc.NullSafe, nullSafe)
				jc.Equi = append(jc.Equi, c)
				continue
			}
			jc.Residual = append(jc.Residual, c)
		case l:
			jc.LeftOnly = append(jc.LeftOnly, c)
		case r:
			jc.RightOnly = append(jc.RightOnly, expr.ShiftColumns(c, -leftWidth, rightNames))
		default:
			jc.Residual = append(jc.Residual, c)
		}
	}
	return jc
}

// equiPair recognises `left column = right column` (either order, also
// IS NOT DISTINCT FROM), where both columns have one value representation,
// so that equal values hash and encode alike on both sides.
func equiPair(c expr.Expr, leftWidth int) (lk, rk int, nullSafe, ok bool) {
	name := expr.CallName(c)
	if name != "=" && name != "IS NOT DISTINCT FROM" {
		return 0, 0, false, false
	}
	args := expr.CallArgs(c)
	if len(args) != 2 {
		return 0, 0, false, false
	}
	a, at, aok := plainColumn(args[0])
	b, bt, bok := plainColumn(args[1])
	if !aok || !bok || !sameKeyRepresentation(at, bt) {
		return 0, 0, false, false
	}
	if a >= leftWidth {
		a, b = b, a
	}
	if a >= leftWidth || b < leftWidth {
		return 0, 0, false, false
	}
	return a, b, name == "IS NOT DISTINCT FROM", true
}

// plainColumn returns the column an argument is, looking through the
// implicit casts type inference adds (which print as the column itself).
func plainColumn(e expr.Expr) (int, types.Type, bool) {
	if ref, ok := e.(*expr.ColumnRef); ok {
		return ref.Index, ref.T, true
	}
	cols := expr.UsesColumns(e)
	if len(cols) != 1 {
		return 0, types.Type{}, false
	}
	var ref *expr.ColumnRef
	found := expr.MapColumns(e, func(c *expr.ColumnRef) expr.Expr { ref = c; return c })
	if ref == nil || found.String() != ref.String() {
		return 0, types.Type{}, false
	}
	return ref.Index, ref.T, true
}

// sameKeyRepresentation reports whether equal values of types a and b are
// equal types.Values (so hash and key bytes agree): integers of any width,
// character strings of any length, or the same type.
func sameKeyRepresentation(a, b types.Type) bool {
	fam := func(t types.Type) int {
		switch t.Root {
		case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt:
			return 1
		case types.RootChar, types.RootVarChar:
			return 2
		case types.RootBinary, types.RootVarBinary:
			return 3
		case types.RootTimestamp:
			return 4
		case types.RootTimestampLTZ:
			return 5
		}
		return 0
	}
	if fa := fam(a); fa != 0 {
		return fa == fam(b)
	}
	return a.WithoutTimeAttr().EqualIgnoringNull(b.WithoutTimeAttr())
}

// uniqueNames makes the column names of a joined row unique as Calcite
// does: a repeated name gets the first free numeric suffix (id, id0, id1).
func uniqueNames(names []string) []string {
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, n := range names {
		name := n
		for k := 0; used[name]; k++ {
			name = n + itoa(k)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

// computedKeys turns the residual equalities between an expression of
// each side (l.a + 1 = r.b, CAST(l.x AS STRING) = r.y, or two columns of
// different value representations, INT = DOUBLE) into join keys, as Flink
// does: both sides get the compared values, cast to their common type, as
// extra columns at the end of their rows. It returns the extended inputs,
// the condition over the extended joined row, and extra, the number of
// columns added to the left side (0 when nothing changed). The caller
// drops the extra columns after the join.
func computedKeys(jc joinCondition, residual []expr.Expr, left, right *relation) (joinCondition, []expr.Expr, *relation, *relation, int, int) {
	lw, rw := len(left.scope.cols), len(right.scope.cols)
	var lextra, rextra []expr.Expr
	var keep []expr.Expr
	type pair struct {
		l, r     int
		nullSafe bool
		cond     expr.Expr
	}
	var pairs []pair
	for _, c := range residual {
		name := expr.CallName(c)
		args := expr.CallArgs(c)
		if (name != "=" && name != "IS NOT DISTINCT FROM") || len(args) != 2 {
			keep = append(keep, c)
			continue
		}
		side := func(e expr.Expr) int { // 0 left, 1 right, -1 both or none
			l, r := false, false
			for _, i := range expr.UsesColumns(e) {
				if i < lw {
					l = true
				} else {
					r = true
				}
			}
			switch {
			case l && !r:
				return 0
			case r && !l:
				return 1
			}
			return -1
		}
		a, b := args[0], args[1]
		if side(a) == 1 && side(b) == 0 {
			a, b = b, a
		}
		if side(a) != 0 || side(b) != 1 {
			keep = append(keep, c)
			continue
		}
		t, err := expr.LeastRestrictive(a.Type().WithoutTimeAttr(), b.Type().WithoutTimeAttr())
		if err != nil {
			keep = append(keep, c)
			continue
		}
		ca, err1 := expr.CastIfNeeded(a, t.WithNullable(!a.Type().NotNull))
		cb, err2 := expr.CastIfNeeded(b, t.WithNullable(!b.Type().NotNull))
		if err1 != nil || err2 != nil {
			keep = append(keep, c)
			continue
		}
		lextra = append(lextra, ca)
		rextra = append(rextra, expr.ShiftColumns(cb, -lw, nil))
		pairs = append(pairs, pair{l: lw + len(lextra) - 1, r: rw + len(rextra) - 1, nullSafe: name == "IS NOT DISTINCT FROM", cond: c})
	}
	if len(pairs) == 0 {
		return jc, residual, left, right, 0, 0
	}
	extend := func(rel *relation, extra []expr.Expr) *relation {
		in := rel.node.Schema()
		proj := make([]expr.Expr, 0, len(in)+len(extra))
		out := append(types.Schema(nil), in...)
		sc := &scope{cols: append([]scopeColumn(nil), rel.scope.cols...)}
		for i, c := range in {
			proj = append(proj, expr.Column(i, c.Name, c.Type))
		}
		for _, x := range extra {
			name := "$f" + itoa(len(proj))
			proj = append(proj, x)
			out = append(out, types.Column{Name: name, Type: x.Type()})
			sc.cols = append(sc.cols, scopeColumn{Name: name, Type: x.Type()})
		}
		return &relation{node: newCalc(rel.node, proj, nil, out), scope: sc}
	}
	el := len(lextra)
	// Conditions over the joined row: right columns move by el.
	shift := func(e expr.Expr) expr.Expr {
		return expr.MapColumns(e, func(c *expr.ColumnRef) expr.Expr {
			if c.Index >= lw {
				return expr.Column(c.Index+el, c.Name, c.T)
			}
			return c
		})
	}
	for i := range jc.Equi {
		jc.Equi[i] = shift(jc.Equi[i])
	}
	for _, p := range pairs {
		jc.LeftKeys = append(jc.LeftKeys, p.l)
		jc.RightKeys = append(jc.RightKeys, p.r)
		jc.NullSafe = append(jc.NullSafe, p.nullSafe)
		jc.Equi = append(jc.Equi, shift(p.cond))
	}
	rest := make([]expr.Expr, len(keep))
	for i, c := range keep {
		rest[i] = shift(c)
	}
	jc.Residual = rest
	return jc, rest, extend(left, lextra), extend(right, rextra), el, len(rextra)
}

// projectOutColumns projects the columns [from, from+n) out of rel (the extra
// key columns of computedKeys).
func projectOutColumns(rel *relation, spans ...[2]int) *relation {
	in := rel.node.Schema()
	var proj []expr.Expr
	var out types.Schema
	sc := &scope{}
	for i, c := range in {
		dropped := false
		for _, s := range spans {
			if i >= s[0] && i < s[0]+s[1] {
				dropped = true
			}
		}
		if dropped {
			continue
		}
		proj = append(proj, expr.Column(i, c.Name, c.Type))
		out = append(out, c)
		sc.cols = append(sc.cols, rel.scope.cols[i])
	}
	return &relation{node: newCalc(rel.node, proj, nil, out), scope: sc}
}

// joinOutput names a join's output columns (made unique, as Calcite
// derives a join's row type) and gives its schema.
func joinOutput(sc *scope) ([]string, types.Schema) {
	names := make([]string, len(sc.cols))
	for i, c := range sc.cols {
		names[i] = c.Name
	}
	names = uniqueNames(names)
	out := make(types.Schema, len(sc.cols))
	for i, c := range sc.cols {
		out[i] = types.Column{Name: names[i], Type: c.Type}
	}
	return names, out
}

// joinPartitioners routes both inputs of a join by their keys; without
// keys (a join with a bounded side) both go to one task.
func joinPartitioners(leftKeys, rightKeys []int) (exec.Partitioner, exec.Partitioner) {
	if len(leftKeys) == 0 {
		return exec.Partitioner{Kind: exec.Global}, exec.Partitioner{Kind: exec.Global}
	}
	return exec.Partitioner{Kind: exec.Hash, KeyCols: leftKeys}, exec.Partitioner{Kind: exec.Hash, KeyCols: rightKeys}
}
