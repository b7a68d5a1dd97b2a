package plan

import (
	"github.com/flinksql/flinksql/exec/join"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// planUsingJoin plans a NATURAL join or a join … USING (cols) as Calcite
// defines them: the join is an equi-join on the common columns, and its
// row starts with one merged column per common column (the left side's
// value, the right side's for a RIGHT join, COALESCE of both for a FULL
// join), followed by the other columns of the left and then of the right
// side. The sides' own common columns stay reachable qualified (l.k, and
// l.* expands to all of l's columns), not by their bare name, which now
// means the merged column. where are the WHERE conjuncts of an inner join
// handed down by planFromWhere; they are applied over the join's row.
func (pc *planContext) planUsingJoin(r *parser.Join, where []parser.Expr, env *cteEnv) (*relation, error) {
	typ, left, right, err := pc.planJoinSides(r, env)
	if err != nil {
		return nil, err
	}
	names := r.Using
	if r.Natural {
		names = naturalColumns(left.scope, right.scope)
	}
	lw := len(left.scope.cols)
	common := make([][2]int, len(names))
	conds := make([]expr.Expr, 0, len(names))
	seen := map[string]bool{}
	for i, name := range names {
		if seen[name] {
			return nil, errAt(r, "Duplicate name '%s' in column list", name)
		}
		seen[name] = true
		li, err := usingColumn(r, left.scope, name)
		if err != nil {
			return nil, err
		}
		ri, err := usingColumn(r, right.scope, name)
		if err != nil {
			return nil, err
		}
		lt, rt := left.scope.cols[li].Type, right.scope.cols[ri].Type
		eq, err := expr.Call("=", expr.Column(li, name, lt), expr.Column(lw+ri, name, rt))
		if err != nil {
			return nil, errAt(r, "Column '%s' matched using NATURAL keyword or USING clause has incompatible types: cannot compare '%s' to '%s'", name, lt, rt)
		}
		common[i] = [2]int{li, ri}
		conds = append(conds, eq)
	}
	rel, err := pc.joinRelations(r, typ, left, right, conds)
	if err != nil {
		return nil, err
	}
	rel, err = mergeCommonColumns(r, rel, typ, lw, names, common)
	if err != nil {
		return nil, err
	}
	if len(where) == 0 {
		return rel, nil
	}
	bound, err := pc.bindJoinConds(rel.scope, where, "WHERE")
	if err != nil {
		return nil, err
	}
	return filterRelation(rel, bound), nil
}

// naturalColumns lists the column names both sides can be referenced by
// unqualified, in the left side's order: a NATURAL join's common columns.
func naturalColumns(l, r *scope) []string {
	var names []string
	for _, c := range l.cols {
		if c.Hidden {
			continue
		}
		for _, d := range r.cols {
			if !d.Hidden && d.Name == c.Name {
				names = append(names, c.Name)
				break
			}
		}
	}
	return names
}

// usingColumn finds a common column on one side of the join: it must be
// there, once.
func usingColumn(r *parser.Join, sc *scope, name string) (int, error) {
	found := -1
	for i, c := range sc.cols {
		if c.Hidden || c.Name != name {
			continue
		}
		if found >= 0 {
			return 0, errAt(r, "Column name '%s' in NATURAL join or USING clause is not unique on one side of join", name)
		}
		found = i
	}
	if found < 0 {
		return 0, errAt(r, "Column '%s' not found in any table", name)
	}
	return found, nil
}

// mergeCommonColumns puts the merged common columns in front of a join's
// row and hides the sides' own copies of them.
func mergeCommonColumns(at parser.Node, rel *relation, typ join.Type, lw int, names []string, common [][2]int) (*relation, error) {
	in := rel.node.Schema()
	hidden := make(map[int]bool, 2*len(common))
	proj := make([]expr.Expr, 0, len(names)+len(in))
	out := make(types.Schema, 0, len(names)+len(in))
	sc := &scope{cols: make([]scopeColumn, 0, len(names)+len(in))}
	for i, name := range names {
		l, r := common[i][0], lw+common[i][1]
		hidden[l], hidden[r] = true, true
		lc := expr.Column(l, in[l].Name, in[l].Type)
		rc := expr.Column(r, in[r].Name, in[r].Type)
		var m expr.Expr
		switch typ {
		case join.RightOuter:
			m = rc
		case join.FullOuter:
			var err error
			if m, err = expr.Call("COALESCE", lc, rc); err != nil {
				return nil, errAt(at, "Column '%s' matched using NATURAL keyword or USING clause has incompatible types: %v", name, err)
			}
		default:
			m = lc
		}
		proj = append(proj, m)
		out = append(out, types.Column{Name: name, Type: m.Type()})
		sc.cols = append(sc.cols, scopeColumn{Name: name, Type: m.Type()})
	}
	for i, c := range in {
		proj = append(proj, expr.Column(i, c.Name, c.Type))
		out = append(out, c)
		col := rel.scope.cols[i]
		col.Hidden = col.Hidden || hidden[i]
		sc.cols = append(sc.cols, col)
	}
	// A merged column's name may repeat a kept column's: the node's own
	// schema names must be unique, as a join's are.
	_, schema := joinOutput(sc)
	for i := range out {
		out[i].Name = schema[i].Name
	}
	return &relation{node: newCalc(rel.node, proj, nil, out), scope: sc}, nil
}
