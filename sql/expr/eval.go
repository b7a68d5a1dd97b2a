package expr

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/flinksql/flinksql/types"
)

// Config is the session context evaluation depends on.
type Config struct {
	// Loc is table.local-time-zone, already resolved by the planner.
	Loc *time.Location
	// Now is the processing-time clock read by CURRENT_TIMESTAMP, NOW(),
	// PROCTIME(), LOCALTIMESTAMP …; Flink reads it per record in streaming mode.
	Now func() time.Time
	// Watermark is the current watermark of the operator evaluating the
	// expression (math.MinInt64 before the first), read by
	// CURRENT_WATERMARK. Only operators that track their watermark set
	// it; CURRENT_WATERMARK fails elsewhere.
	Watermark func() int64
}

// evalCtx is the per-evaluator-instance state shared by all nodes of one
// compiled tree.
type evalCtx struct {
	loc  *time.Location
	now  func() time.Time
	wm   func() int64
	rnd  *rand.Rand
	buf  []byte
	regs map[string]*regexp.Regexp // patterns that are not constants
	// rowGen counts the rows Predicate.Test evaluated: memoEval's clock.
	rowGen uint64
}

func newEvalCtx(cfg *Config) *evalCtx {
	c := &evalCtx{loc: time.Local, now: time.Now}
	if cfg != nil {
		if cfg.Loc != nil {
			c.loc = cfg.Loc
		}
		if cfg.Now != nil {
			c.now = cfg.Now
		}
		c.wm = cfg.Watermark
	}
	return c
}

func (c *evalCtx) random() *rand.Rand {
	if c.rnd == nil {
		c.rnd = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x9e3779b97f4a7c15))
	}
	return c.rnd
}

// evaluator is a compiled expression node.
type evaluator interface {
	eval(row types.Row) (types.Value, error)
}

type compiler struct {
	ctx *evalCtx
	// constant memoizes constant: every node's answer is computed once,
	// so that folding a deep tree is linear in its size rather than
	// quadratic (each level asking about its whole subtree).
	constants map[Expr]bool
	// memo holds the calls compiled once for a filter and a projection
	// (NewFilterProjector).
	memo map[Expr]*memoEval
}

// constant is IsConstant(e), memoized over the nodes of the tree.
func (c *compiler) constant(e Expr) bool {
	switch n := e.(type) {
	case *ColumnRef:
		return false
	case *literal:
		return true
	case *callExpr, *castExpr, *caseExpr:
		if v, ok := c.constants[e]; ok {
			return v
		}
		ok := true
		switch n := n.(type) {
		case *callExpr:
			ok = IsDeterministic(n.name)
			for _, a := range n.args {
				ok = ok && c.constant(a)
			}
		case *castExpr:
			ok = c.constant(n.e)
		case *caseExpr:
			for i := range n.whens {
				ok = ok && c.constant(n.whens[i]) && c.constant(n.thens[i])
			}
			ok = ok && c.constant(n.els)
		}
		if c.constants == nil {
			c.constants = map[Expr]bool{}
		}
		c.constants[e] = ok
		return ok
	default:
		return IsConstant(e)
	}
}

func (c *compiler) compileAll(es []Expr) []evaluator {
	out := make([]evaluator, len(es))
	for i, e := range es {
		out[i] = c.compileExpr(e)
	}
	return out
}

// compileExpr compiles e, folding a constant call or cast into its value
// (so that e.g. the implicit CAST of a string literal compared with a DATE
// column is parsed once, not per row). A constant that fails to evaluate
// is left to fail at run time, per record, as Flink reports it.
func (c *compiler) compileExpr(e Expr) evaluator {
	if m := c.memo[e]; m != nil && !c.constant(e) {
		if m.inner == nil {
			m.inner = e.compile(c)
		}
		return m
	}
	switch e.(type) {
	case *callExpr, *castExpr, *caseExpr:
		// The operands were folded first (compile calls compileExpr on
		// them), so evaluating a constant node here costs one step.
		if c.constant(e) {
			ev := e.compile(c)
			if v, err := ev.eval(nil); err == nil {
				return &constEval{v: v}
			}
			return ev
		}
	}
	return e.compile(c)
}

type columnEval struct{ idx int }

func (e *columnEval) eval(row types.Row) (types.Value, error) {
	if e.idx >= len(row) {
		return types.Value{}, fmt.Errorf("column index %d out of range for row of %d fields", e.idx, len(row))
	}
	return row[e.idx], nil
}

func (c *ColumnRef) compile(*compiler) evaluator { return &columnEval{idx: c.Index} }

type constEval struct{ v types.Value }

func (e *constEval) eval(types.Row) (types.Value, error) { return e.v, nil }

func (l *literal) compile(*compiler) evaluator { return &constEval{v: l.v} }

// impl is a resolved function implementation.
type impl struct {
	// fn computes the result from evaluated arguments.
	fn func(c *evalCtx, args []types.Value) (types.Value, error)
	// strict means any NULL argument makes the result NULL without calling fn.
	strict bool
	// build, when set, compiles the call itself (lazy evaluation of
	// arguments: AND, OR, COALESCE, IF …).
	build func(c *compiler, args []evaluator) evaluator
	// intCmp / intArith name an operator on two integer-represented
	// operands; compile then uses specialised nodes without argument slices.
	intCmp   string
	intArith string
	intRoot  types.Root
	// decArith names + - * of DECIMAL operands, decCmp a comparison of
	// exact numerics with a DECIMAL among them (decfast.go).
	decArith byte
	decCmp   string
}

type callEval struct {
	ctx    *evalCtx
	args   []evaluator
	vals   []types.Value
	fn     func(c *evalCtx, args []types.Value) (types.Value, error)
	strict bool
}

func (e *callEval) eval(row types.Row) (types.Value, error) {
	for i, a := range e.args {
		v, err := a.eval(row)
		if err != nil {
			return v, err
		}
		if e.strict && v.K == types.KindNull {
			return types.Value{}, nil
		}
		e.vals[i] = v
	}
	return e.fn(e.ctx, e.vals)
}

// binaryEval is callEval specialised for two strict arguments, the common
// shape of arithmetic and comparisons.
type binaryEval struct {
	ctx  *evalCtx
	a, b evaluator
	vals [2]types.Value
	fn   func(c *evalCtx, args []types.Value) (types.Value, error)
}

func (e *binaryEval) eval(row types.Row) (types.Value, error) {
	v, err := e.a.eval(row)
	if err != nil || v.K == types.KindNull {
		return types.Value{}, err
	}
	w, err := e.b.eval(row)
	if err != nil || w.K == types.KindNull {
		return types.Value{}, err
	}
	e.vals[0], e.vals[1] = v, w
	return e.fn(e.ctx, e.vals[:])
}

func (c *callExpr) compile(cc *compiler) evaluator {
	if c.impl.decArith != 0 && len(c.args) == 2 {
		return newDecArithEval(cc, c.impl.decArith, c.args[0], c.args[1], c.t)
	}
	args := cc.compileAll(c.args)
	if consumesTransient[c.name] {
		for i, a := range c.args {
			if _, folded := args[i].(*constEval); !folded {
				if ev := cc.transientCase(a); ev != nil {
					args[i] = ev
				}
			}
		}
	}
	if c.impl.build != nil {
		return c.impl.build(cc, args)
	}
	if c.impl.intCmp != "" {
		return newIntCmpEval(c.impl.intCmp, args[0], args[1])
	}
	if c.impl.intArith != "" {
		return &intArithEval{a: args[0], b: args[1], op: c.impl.intArith[0], root: c.impl.intRoot}
	}
	if c.impl.decCmp != "" && len(args) == 2 {
		return newDecCmpEval(cc, c, args)
	}
	if c.impl.strict && len(args) == 2 {
		return &binaryEval{ctx: cc.ctx, a: args[0], b: args[1], fn: c.impl.fn}
	}
	return &callEval{ctx: cc.ctx, args: args, vals: make([]types.Value, len(args)), fn: c.impl.fn, strict: c.impl.strict}
}

type castEval struct {
	ctx *evalCtx
	e   evaluator
	fn  castFn
	try bool
}

func (e *castEval) eval(row types.Row) (types.Value, error) {
	v, err := e.e.eval(row)
	if err != nil || v.K == types.KindNull {
		return types.Value{}, err
	}
	r, err := e.fn(e.ctx, v)
	if err != nil && e.try {
		return types.Value{}, nil
	}
	return r, err
}

func (c *castExpr) compile(cc *compiler) evaluator {
	e := cc.compileExpr(c.e)
	if c.t.Root == types.RootDecimal {
		if fused, ok := castDecimalResult(e, c.t); ok {
			return fused
		}
	}
	return &castEval{ctx: cc.ctx, e: e, fn: c.fn, try: c.try}
}

type caseEval struct {
	whens, thens []evaluator
	els          evaluator
}

func (e *caseEval) eval(row types.Row) (types.Value, error) {
	for i, w := range e.whens {
		v, err := w.eval(row)
		if err != nil {
			return v, err
		}
		if v.K == types.KindBool && v.N != 0 {
			return e.thens[i].eval(row)
		}
	}
	return e.els.eval(row)
}

func (c *caseExpr) compile(cc *compiler) evaluator {
	e := &caseEval{whens: cc.compileAll(c.whens), thens: cc.compileAll(c.thens), els: cc.compileExpr(c.els)}
	if s := newCaseSwitch(e); s != nil {
		return s
	}
	return e
}

// caseSwitch is a CASE whose conditions all compare one integer column
// with constants (CASE WHEN event_type = 0 THEN … WHEN event_type = 1 THEN
// … ELSE … END, the nexmark table's dateTime): the column is read once
// instead of once per condition.
type caseSwitch struct {
	idx    int
	consts []int64
	thens  []evaluator
	els    evaluator
	slow   *caseEval
}

func newCaseSwitch(e *caseEval) *caseSwitch {
	s := &caseSwitch{idx: -1, thens: e.thens, els: e.els, slow: e}
	for _, w := range e.whens {
		c, ok := w.(*intCmpColConst)
		if !ok || c.op != cmpEQ || (s.idx >= 0 && c.idx != s.idx) {
			return nil
		}
		s.idx = c.idx
		s.consts = append(s.consts, c.c)
	}
	if s.idx < 0 {
		return nil
	}
	return s
}

func (e *caseSwitch) eval(row types.Row) (types.Value, error) {
	if e.idx >= len(row) {
		return e.slow.eval(row) // reports the bad column as the conditions would
	}
	if x := &row[e.idx]; x.K != types.KindNull {
		for i, c := range e.consts {
			if x.N == c {
				return e.thens[i].eval(row)
			}
		}
	}
	return e.els.eval(row) // no condition TRUE (NULL = c is NULL)
}

// Projector computes output columns from an input row. One instance per
// subtask; not safe for concurrent use.
type Projector struct {
	evals []evaluator
	// cols[i] >= 0 when output i copies input column cols[i], which
	// Project does without a call.
	cols []int
	// dots[i] >= 0 when output i is field dots[i] of the ROW in input
	// column cols[i] (a view over a source's nested rows, as Nexmark's bid
	// is), which Project also reads without a call.
	dots []int
	// same[i] >= 0 when output i is the same deterministic expression as
	// the earlier output same[i]: planners repeat a FILTER condition once
	// per aggregate that uses it, and evaluating it once per row is enough.
	same []int
}

// NewProjector compiles exprs; out[i] of Project is exprs[i] evaluated on the input row.
func NewProjector(exprs []Expr, cfg *Config) *Projector {
	return newProjector(&compiler{ctx: newEvalCtx(cfg)}, exprs)
}

func newProjector(c *compiler, exprs []Expr) *Projector {
	p := &Projector{evals: c.compileAll(exprs), cols: make([]int, len(exprs)), dots: make([]int, len(exprs)), same: make([]int, len(exprs))}
	for i, e := range p.evals {
		p.cols[i], p.dots[i], p.same[i] = -1, -1, -1
		if col, ok := e.(*columnEval); ok {
			p.cols[i] = col.idx
			continue
		}
		if dot, ok := e.(*columnDotEval); ok {
			p.cols[i], p.dots[i] = dot.col, dot.idx
			continue
		}
		if !deterministic(exprs[i]) {
			continue
		}
		for j := 0; j < i; j++ {
			if p.cols[j] < 0 && p.same[j] < 0 && sameExpr(exprs[i], exprs[j]) {
				p.same[i] = j
				break
			}
		}
	}
	return p
}

// Project writes the projected values of in into out, which must have
// len(exprs) slots.
func (p *Projector) Project(in, out types.Row) error {
	for i, e := range p.evals {
		if c := p.cols[i]; c >= 0 && c < len(in) {
			f := p.dots[i]
			if f < 0 {
				out[i] = in[c]
				continue
			}
			// As columnDotEval: NULL unless a ROW with the field.
			out[i] = types.Value{}
			if v := &in[c]; v.K == types.KindRow {
				if r, ok := v.X.(types.Row); ok && f < len(r) {
					out[i] = r[f]
				}
			}
			continue
		}
		if j := p.same[i]; j >= 0 {
			out[i] = out[j]
			continue
		}
		v, err := e.eval(in)
		if err != nil {
			return err
		}
		out[i] = v
	}
	return nil
}

// Predicate evaluates a boolean condition; NULL counts as false.
type Predicate struct {
	e   evaluator
	ctx *evalCtx
}

// NewPredicate compiles a BOOLEAN expression.
func NewPredicate(e Expr, cfg *Config) *Predicate {
	c := &compiler{ctx: newEvalCtx(cfg)}
	return &Predicate{e: c.compileExpr(e), ctx: c.ctx}
}

// Test reports whether the condition is TRUE for in.
func (p *Predicate) Test(in types.Row) (bool, error) {
	p.ctx.rowGen++
	v, err := p.e.eval(in)
	if err != nil {
		return false, err
	}
	return v.K == types.KindBool && v.N != 0, nil
}

// EvalConstant evaluates an expression without input columns.
func EvalConstant(e Expr, cfg *Config) (types.Value, error) {
	if len(UsesColumns(e)) > 0 {
		return types.Value{}, fmt.Errorf("expression %s is not constant", e)
	}
	c := &compiler{ctx: newEvalCtx(cfg)}
	return c.compileExpr(e).eval(nil)
}

// consumesTransient are the calls that only compare their arguments and
// keep none of them, so an argument may be a string in scratch memory that
// the next row overwrites.
var consumesTransient = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true, "IN": true, "NOT IN": true}

// transientCase compiles LOWER(x) or UPPER(x) for a comparison
// (consumesTransient): q21's lower(channel) = 'apple' then converts the
// channel in a buffer of its own instead of allocating a string per row.
func (cc *compiler) transientCase(e Expr) evaluator {
	c, ok := e.(*callExpr)
	if !ok || len(c.args) != 1 || (c.name != "LOWER" && c.name != "UPPER") {
		return nil
	}
	return &caseScratchEval{x: cc.compileExpr(c.args[0]), upper: c.name == "UPPER"}
}

// caseScratchEval is LOWER or UPPER whose result is valid until its next
// evaluation. ASCII strings are converted in its buffer; others as LOWER
// and UPPER convert them (strings.ToLower, strings.ToUpper).
type caseScratchEval struct {
	x     evaluator
	upper bool
	buf   []byte
}

func (e *caseScratchEval) eval(row types.Row) (types.Value, error) {
	v, err := e.x.eval(row)
	if err != nil || v.K == types.KindNull {
		return types.Value{}, err
	}
	s := v.S
	from, to := byte('A'), byte('Z')
	if e.upper {
		from, to = 'a', 'z'
	}
	change := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			if e.upper {
				return types.String(strings.ToUpper(s)), nil
			}
			return types.String(strings.ToLower(s)), nil
		}
		change = change || (from <= c && c <= to)
	}
	if !change {
		return types.String(s), nil
	}
	b := append(e.buf[:0], s...)
	for i, c := range b {
		if from <= c && c <= to {
			b[i] = c ^ 0x20 // flips the case of an ASCII letter
		}
	}
	e.buf = b
	return types.String(unsafe.String(&b[0], len(b))), nil
}
