package plan

import (
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/parser"
	"github.com/flinksql/flinksql/types"
)

// Grouping sets (GROUPING SETS, ROLLUP, CUBE) are planned as Flink plans
// them: an Expand emits each input row once per grouping set, with the
// grouping columns outside the set nulled and the set's grouping id ($e)
// appended; one aggregate groups by the grouping columns and $e; the Calc
// after it drops $e and computes GROUPING()/GROUPING_ID() from it.
//
// A set is a bit mask over the grouping columns (bit i: column i is in the
// set). The grouping id of a set over n columns has, from the most
// significant of n bits down, a 1 for every column NOT in the set (Calcite's
// and Flink's order), so the full set is 0 and () is 2^n - 1.

// maxGroupingColumns bounds the grouping columns of a query with grouping
// sets: the grouping id is a BIGINT with one bit per column.
const maxGroupingColumns = 63

// flattenGroupBy expands GROUP BY items into grouping sets over distinct
// grouping expressions. Items are combined as a cross product (GROUP BY a,
// ROLLUP(b, c) is the sets (a, b, c), (a, b), (a)). The sets come in
// Calcite's order: a set before the sets it contains, ties broken by their
// columns in GROUP BY order.
func flattenGroupBy(items []parser.Expr) ([]parser.Expr, []uint64, error) {
	combos := [][]parser.Expr{nil}
	for _, it := range items {
		alts, err := groupItemSets(it)
		if err != nil {
			return nil, nil, err
		}
		next := make([][]parser.Expr, 0, len(combos)*len(alts))
		for _, c := range combos {
			for _, a := range alts {
				next = append(next, append(append([]parser.Expr(nil), c...), a...))
			}
		}
		combos = next
		if len(combos) > 4096 {
			return nil, nil, unsupportedAt(it, "GROUP BY expands into more than 4096 grouping sets")
		}
	}
	var keys []parser.Expr
	index := map[string]int{}
	sets := make([]uint64, 0, len(combos))
	for _, c := range combos {
		var m uint64
		for _, e := range c {
			text := parser.FormatExpr(e)
			i, ok := index[text]
			if !ok {
				if len(keys) == maxGroupingColumns {
					return nil, nil, unsupportedAt(e, "GROUP BY with grouping sets over more than %d expressions is not supported", maxGroupingColumns)
				}
				i = len(keys)
				index[text] = i
				keys = append(keys, e)
			}
			m |= 1 << uint(i)
		}
		sets = append(sets, m)
	}
	sort.SliceStable(sets, func(i, j int) bool {
		a, b := sets[i], sets[j]
		if ca, cb := bits.OnesCount64(a), bits.OnesCount64(b); ca != cb {
			return ca > cb
		}
		// Lexicographic over the members in column order: the set holding
		// the lowest column where they differ comes first.
		d := a ^ b
		return a&(d&-d) != 0
	})
	return keys, sets, nil
}

// groupingSetIDs returns the $e value of each of sets over nk grouping columns: the
// grouping id, and above its nk bits the set's GROUP_ID() (0 for the first
// of equal sets, 1 for the next …), so that a set listed twice expands
// every row twice, into groups of their own, as Calcite's union of the
// duplicates does. sets are sorted, so equal sets are adjacent.
func groupingSetIDs(n parser.Node, sets []uint64, nk int) ([]int64, []int64, error) {
	ids := make([]int64, len(sets))
	dups := make([]int64, len(sets))
	for i, s := range sets {
		if i > 0 && sets[i-1] == s {
			dups[i] = dups[i-1] + 1
		}
		if dups[i] != 0 && nk+bits.Len64(uint64(dups[i])) > maxGroupingColumns {
			return nil, nil, unsupportedAt(n, "too many grouping columns and duplicate grouping sets for a BIGINT grouping id")
		}
		ids[i] = groupingID(s, nk) | dups[i]<<uint(nk)
	}
	return ids, dups, nil
}

// groupItemSets returns the alternatives one GROUP BY item stands for,
// each the expressions of a grouping set.
func groupItemSets(it parser.Expr) ([][]parser.Expr, error) {
	switch x := it.(type) {
	case *parser.RowExpr:
		if x.Explicit {
			return [][]parser.Expr{{x}}, nil
		}
		for _, f := range x.Fields {
			if g, ok := f.(*parser.GroupingSet); ok {
				return nil, errAt(g, "%s is not allowed inside a parenthesized grouping set", g.Kind)
			}
		}
		return [][]parser.Expr{append([]parser.Expr(nil), x.Fields...)}, nil
	case *parser.GroupingSet:
		var elems [][]parser.Expr
		for _, e := range x.Items {
			if x.Kind == "GROUPING SETS" {
				alts, err := groupItemSets(e)
				if err != nil {
					return nil, err
				}
				elems = append(elems, alts...)
				continue
			}
			if g, ok := e.(*parser.GroupingSet); ok {
				return nil, errAt(g, "%s is not allowed inside %s", g.Kind, x.Kind)
			}
			if r, ok := e.(*parser.RowExpr); ok && !r.Explicit {
				elems = append(elems, r.Fields)
			} else {
				elems = append(elems, []parser.Expr{e})
			}
		}
		switch x.Kind {
		case "GROUPING SETS":
			return elems, nil
		case "ROLLUP":
			// (e1..en), (e1..en-1), ..., ().
			out := make([][]parser.Expr, 0, len(elems)+1)
			for n := len(elems); n >= 0; n-- {
				var s []parser.Expr
				for _, e := range elems[:n] {
					s = append(s, e...)
				}
				out = append(out, s)
			}
			return out, nil
		default: // CUBE
			if len(elems) > 12 {
				return nil, unsupportedAt(x, "CUBE over more than 12 elements is not supported")
			}
			out := make([][]parser.Expr, 0, 1<<len(elems))
			for m := (1 << len(elems)) - 1; m >= 0; m-- {
				var s []parser.Expr
				for i, e := range elems {
					if m&(1<<(len(elems)-1-i)) != 0 {
						s = append(s, e...)
					}
				}
				out = append(out, s)
			}
			return out, nil
		}
	}
	return [][]parser.Expr{{it}}, nil
}

func formatSet(keys []parser.Expr, m uint64) string {
	var parts []string
	for i, k := range keys {
		if m&(1<<uint(i)) != 0 {
			parts = append(parts, parser.FormatExpr(k))
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// inEverySet reports whether grouping column i is in every set.
func inEverySet(sets []uint64, i int) bool {
	for _, s := range sets {
		if s&(1<<uint(i)) == 0 {
			return false
		}
	}
	return true
}

// removeGroupingColumn drops grouping column i (in every set) from keys and
// sets, renumbering the columns after it.
func removeGroupingColumn(keys []parser.Expr, sets []uint64, i int) ([]parser.Expr, []uint64) {
	keys = append(keys[:i:i], keys[i+1:]...)
	low := uint64(1)<<uint(i) - 1
	out := make([]uint64, len(sets))
	for j, s := range sets {
		out[j] = s&low | (s>>1)&^low
	}
	return keys, out
}

// groupingID is the grouping id ($e) of set over n grouping columns.
func groupingID(set uint64, n int) int64 {
	var id int64
	for i := 0; i < n; i++ {
		id <<= 1
		if set&(1<<uint(i)) == 0 {
			id |= 1
		}
	}
	return id
}

// inEverySetColumn is what keyOf returns for an argument of GROUPING that
// is in every set without being a grouping column (a window column).
const inEverySetColumn = -2

// groupingValue is GROUPING(args)/GROUPING_ID(args) for one set, args the
// grouping column of each argument.
func groupingValue(set uint64, args []int) int64 {
	var v int64
	for _, a := range args {
		v <<= 1
		// Columns past 63 only occur without grouping sets: in the one set.
		if a >= 0 && a < 64 && set&(1<<uint(a)) == 0 {
			v |= 1
		}
	}
	return v
}

// ExpandNode emits every input row once per grouping set (Flink's Expand).
// Its rows are the input's with the set's missing grouping columns nulled,
// followed by the grouping id $e.
type ExpandNode struct {
	base
	Sets []exec.ExpandSet
}

func (n *ExpandNode) Describe() string {
	in := n.inputs[0].Schema()
	var b strings.Builder
	b.WriteString("Expand(projects=[")
	for i, s := range n.Sets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{")
		for c, col := range in {
			if c > 0 {
				b.WriteString(", ")
			}
			nulled := false
			for _, x := range s.Nulls {
				nulled = nulled || x == c
			}
			if nulled {
				b.WriteString("null AS ")
			}
			b.WriteString(col.Name)
		}
		b.WriteString(", " + strconv.FormatInt(s.ID, 10) + " AS $e}")
	}
	b.WriteString("])")
	return b.String()
}

// forwardChanges implements changeForwarder: each output row keeps its
// input row's kind.
func (n *ExpandNode) forwardChanges(m types.ChangelogMode) { n.mode = m }

// newExpand builds the Expand of sets over in, whose first nk columns are
// the grouping columns.
func newExpand(in Node, nk int, sets []uint64, ids []int64) *ExpandNode {
	n := &ExpandNode{}
	var missing uint64
	for j, s := range sets {
		es := exec.ExpandSet{ID: ids[j]}
		for i := 0; i < nk; i++ {
			if s&(1<<uint(i)) == 0 {
				es.Nulls = append(es.Nulls, i)
				missing |= 1 << uint(i)
			}
		}
		n.Sets = append(n.Sets, es)
	}
	schema := append(types.Schema(nil), in.Schema()...)
	for i := 0; i < nk; i++ {
		if missing&(1<<uint(i)) != 0 {
			schema[i].Type = schema[i].Type.WithNullable(true)
		}
	}
	schema = append(schema, types.Column{Name: "$e", Type: types.BigIntType.WithNullable(false)})
	n.inputs, n.schema, n.mode = []Node{in}, schema, in.Mode()
	return n
}

// groupingCall binds GROUPING(args), GROUPING_ID(args) or GROUP_ID() of
// a grouped query: keyOf finds the grouping column of an argument (-1: not
// grouped); ids and dups are the sets' $e values and GROUP_ID()s; ecol is
// the $e column of the aggregate's output (-1: one grouping set, no
// Expand).
func groupingCall(f *parser.FuncCall, keyOf func(parser.Expr) (int, error), sets []uint64, ids, dups []int64, ecol int) (expr.Expr, error) {
	name := strings.ToUpper(f.FuncName())
	if f.Distinct || f.Filter != nil || f.Over != nil {
		return nil, errAt(f, "DISTINCT, FILTER and OVER are not allowed with %s", name)
	}
	args := f.ArgExprs()
	t := types.BigIntType.WithNullable(false)
	lit := func(v int64) expr.Expr { return expr.Literal(types.Int(v), t) }
	// perSet builds the value of each set as a CASE over $e.
	perSet := func(val func(i int) int64) (expr.Expr, error) {
		first := val(0)
		same := true
		for i := range sets {
			same = same && val(i) == first
		}
		if same || ecol < 0 {
			return lit(first), nil
		}
		var whens, thens []expr.Expr
		for i := range sets[:len(sets)-1] {
			whens = append(whens, lit(ids[i]))
			thens = append(thens, lit(val(i)))
		}
		x, err := expr.Case(expr.Column(ecol, "$e", t), whens, thens, lit(val(len(sets)-1)))
		if err != nil {
			return nil, errAt(f, "%s", err.Error())
		}
		return x, nil
	}
	if name == "GROUP_ID" {
		if len(args) != 0 {
			return nil, errAt(f, "Invalid number of arguments to function 'GROUP_ID'. Was expecting 0 arguments")
		}
		return perSet(func(i int) int64 { return dups[i] })
	}
	if len(args) == 0 {
		return nil, errAt(f, "Invalid number of arguments to function '%s'. Was expecting at least 1 argument", name)
	}
	if len(args) > maxGroupingColumns {
		return nil, errAt(f, "%s takes at most %d arguments", name, maxGroupingColumns)
	}
	cols := make([]int, len(args))
	for i, a := range args {
		k, err := keyOf(a)
		if err != nil {
			return nil, err
		}
		if k == -1 {
			return nil, errAt(a, "Argument to %s operator must be a grouped expression", name)
		}
		cols[i] = k
	}
	return perSet(func(i int) int64 { return groupingValue(sets[i], cols) })
}

// GroupingFunctions lists GROUPING, GROUPING_ID and GROUP_ID, which a
// grouped query computes from its grouping sets (for SHOW FUNCTIONS).
func GroupingFunctions() []string { return []string{"GROUPING", "GROUPING_ID", "GROUP_ID"} }

func isGroupingFunction(name string) bool {
	return name == "GROUPING" || name == "GROUPING_ID" || name == "GROUP_ID"
}
