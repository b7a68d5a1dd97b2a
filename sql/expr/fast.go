package expr

import "github.com/flinksql/flinksql/types"

// Specialised evaluators for the hottest shapes: integer comparisons and
// integer + - *, with a column/constant fast path that skips child calls.

const (
	cmpEQ = iota
	cmpNE
	cmpLT
	cmpLE
	cmpGT
	cmpGE
)

func cmpCode(op string) int {
	switch op {
	case "=":
		return cmpEQ
	case "<>":
		return cmpNE
	case "<":
		return cmpLT
	case "<=":
		return cmpLE
	case ">":
		return cmpGT
	}
	return cmpGE
}

func intCmp(op int, x, y int64) bool {
	switch op {
	case cmpEQ:
		return x == y
	case cmpNE:
		return x != y
	case cmpLT:
		return x < y
	case cmpLE:
		return x <= y
	case cmpGT:
		return x > y
	}
	return x >= y
}

func newIntCmpEval(op string, a, b evaluator) evaluator {
	code := cmpCode(op)
	if col, ok := a.(*columnEval); ok {
		if k, ok := b.(*constEval); ok && k.v.K != types.KindNull {
			return &intCmpColConst{idx: col.idx, c: k.v.N, op: code}
		}
	}
	if dot, ok := a.(*columnDotEval); ok {
		if k, ok := b.(*constEval); ok && k.v.K != types.KindNull {
			return &intCmpDotConst{dot: *dot, c: k.v.N, op: code}
		}
	}
	return &intCmpEval{a: a, b: b, op: code}
}

// intCmpDotConst compares a field of a ROW column with a constant: views
// over a source's nested rows (Nexmark's bid.price) filter that way.
type intCmpDotConst struct {
	dot columnDotEval
	c   int64
	op  int
}

func (e *intCmpDotConst) eval(row types.Row) (types.Value, error) {
	if e.dot.col >= len(row) || row[e.dot.col].K != types.KindRow {
		return e.dot.eval(row) // the error, or the NULL of a NULL row
	}
	r := row[e.dot.col].RowOf()
	if e.dot.idx >= len(r) || r[e.dot.idx].K == types.KindNull {
		return types.Value{}, nil
	}
	return types.Bool(intCmp(e.op, r[e.dot.idx].N, e.c)), nil
}

type intCmpEval struct {
	a, b evaluator
	op   int
}

func (e *intCmpEval) eval(row types.Row) (types.Value, error) {
	x, err := e.a.eval(row)
	if err != nil || x.K == types.KindNull {
		return types.Value{}, err
	}
	y, err := e.b.eval(row)
	if err != nil || y.K == types.KindNull {
		return types.Value{}, err
	}
	return types.Bool(intCmp(e.op, x.N, y.N)), nil
}

type intCmpColConst struct {
	idx int
	c   int64
	op  int
}

func (e *intCmpColConst) eval(row types.Row) (types.Value, error) {
	if e.idx >= len(row) {
		return (&columnEval{idx: e.idx}).eval(row)
	}
	x := &row[e.idx]
	if x.K == types.KindNull {
		return types.Value{}, nil
	}
	return types.Bool(intCmp(e.op, x.N, e.c)), nil
}

type intArithEval struct {
	a, b evaluator
	op   byte
	root types.Root
}

func (e *intArithEval) eval(row types.Row) (types.Value, error) {
	x, err := e.a.eval(row)
	if err != nil || x.K == types.KindNull {
		return types.Value{}, err
	}
	y, err := e.b.eval(row)
	if err != nil || y.K == types.KindNull {
		return types.Value{}, err
	}
	var r int64
	switch e.op {
	case '+':
		r = x.N + y.N
	case '-':
		r = x.N - y.N
	default:
		r = x.N * y.N
	}
	return types.Int(wrapInt(r, e.root)), nil
}
