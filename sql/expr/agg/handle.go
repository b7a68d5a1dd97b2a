package agg

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/types"
)

// Call is one aggregate call of a GROUP BY / window aggregation.
type Call struct {
	// Name is upper-case: COUNT, SUM, SUM0, AVG, MIN, MAX, FIRST_VALUE,
	// LAST_VALUE, LISTAGG, COLLECT, STDDEV_POP, STDDEV_SAMP, STDDEV, VAR_POP,
	// VAR_SAMP, VARIANCE.
	Name string
	// ArgCols are the positions of the arguments in the input row; empty for
	// COUNT(*).
	ArgCols  []int
	ArgTypes []types.Type
	// ConstArgs are constant trailing arguments (the LISTAGG separator) when
	// they are not given as columns.
	ConstArgs []types.Value
	// Distinct: COUNT(DISTINCT x), SUM(DISTINCT x), …
	Distinct bool
	// FilterCol is the position of the BOOLEAN column of FILTER (WHERE …), or
	// -1. Only TRUE lets a row through.
	FilterCol int
	// ResultType is the type returned by ResultType (or ResultTypeIn); zero
	// means "infer it". Nullability is not checked.
	ResultType types.Type
}

// Options say which operations the handle must support.
type Options struct {
	// NeedsRetraction: the input carries -U/-D rows, so Retract must work.
	// MIN/MAX/FIRST_VALUE/LAST_VALUE then keep every value they may need
	// again. When false, Retract of those functions returns an error.
	NeedsRetraction bool
	// NeedsMerge: Merge must work (sliced windows, session merging).
	// FIRST_VALUE/LAST_VALUE/LISTAGG then order values by a clock-based
	// sequence so that merging accumulators keeps arrival order.
	NeedsMerge bool
}

// numClass is how SUM/AVG keep their running sum.
type numClass uint8

const (
	numInt numClass = iota
	numFloat32
	numFloat64
	numDecimal
)

// call is a resolved Call with its accumulator layout.
type call struct {
	kind      kind
	name      string
	argCols   []int
	argCol    int // the only argument column, or -1 (COUNT(*), several arguments)
	filterCol int
	distinct  bool
	retract   bool // keeps values for retraction (MIN/MAX/FIRST/LAST)

	// off is the first accumulator slot of the call (the distinct set when
	// distinct); fn is the first slot of the function's own state.
	off, fn, width int

	argType types.Type
	resType types.Type
	num     numClass

	// LISTAGG separator: a column, or a constant.
	sepCol  int
	sep     string
	sepNull bool
}

// Handle evaluates a fixed list of aggregate calls whose accumulators live in
// one flat []types.Value of AccWidth values per group. It satisfies
// exec.AggsHandle. A Handle is used by one goroutine.
//
// Slot 0 of every accumulator is the net number of rows accumulated
// (RecordCount).
type Handle struct {
	calls     []call
	width     int
	opts      Options
	lastOrder int64
}

const recordCountSlot = 0

// NewHandle resolves the calls and lays out their accumulators.
func NewHandle(calls []Call, opts Options) (*Handle, error) {
	// Orders start at the wall clock, so values accumulated after a restore
	// order after the restored ones (a restarted handle starts later than the
	// old one ended, and no run draws more than one order per nanosecond).
	h := &Handle{calls: make([]call, len(calls)), width: 1, opts: opts, lastOrder: time.Now().UnixNano()}
	for i, c := range calls {
		rc, err := resolve(c, opts)
		if err != nil {
			return nil, fmt.Errorf("aggregate call %d (%s): %w", i, c.Name, err)
		}
		rc.off = h.width
		rc.fn = rc.off
		if rc.distinct {
			rc.fn++
		}
		h.width = rc.fn + rc.width
		h.calls[i] = rc
	}
	return h, nil
}

func resolve(c Call, opts Options) (call, error) {
	k, ok := lookup(c.Name)
	if !ok {
		return call{}, fmt.Errorf("unknown aggregate function %s", c.Name)
	}
	rt, err := ResultType(c.Name, c.ArgTypes, c.Distinct)
	if err != nil {
		return call{}, err
	}
	if c.ResultType.Root != types.RootNull && !c.ResultType.EqualIgnoringNull(rt) {
		return call{}, fmt.Errorf("result type %s does not match the inferred type %s", c.ResultType, rt)
	}
	rc := call{
		kind:      k,
		name:      c.Name,
		argCols:   c.ArgCols,
		argCol:    -1,
		filterCol: c.FilterCol,
		distinct:  c.Distinct,
		resType:   rt,
		sepCol:    -1,
		sep:       ",",
	}
	nArgs := len(c.ArgCols)
	switch {
	case k == kCount:
		if nArgs != len(c.ArgTypes) {
			return call{}, fmt.Errorf("%d argument columns for %d argument types", nArgs, len(c.ArgTypes))
		}
		if c.Distinct && nArgs == 0 {
			return call{}, fmt.Errorf("COUNT(DISTINCT) needs arguments")
		}
	case k == kListAgg:
		switch {
		case nArgs == 2:
			rc.sepCol = c.ArgCols[1]
		case nArgs == 1 && len(c.ConstArgs) > 0:
			if c.ConstArgs[0].IsNull() {
				rc.sepNull = true
			} else {
				rc.sep = c.ConstArgs[0].S
			}
		case nArgs != 1:
			return call{}, fmt.Errorf("LISTAGG takes 1 or 2 arguments, got %d argument columns", nArgs)
		}
		rc.argType = c.ArgTypes[0]
	default:
		if nArgs != 1 {
			return call{}, fmt.Errorf("%s takes 1 argument column, got %d", c.Name, nArgs)
		}
		rc.argType = c.ArgTypes[0]
	}
	if nArgs == 1 {
		rc.argCol = c.ArgCols[0]
	}
	if c.FilterCol < -1 {
		return call{}, fmt.Errorf("invalid FILTER column %d", c.FilterCol)
	}
	switch rc.argType.Root {
	case types.RootFloat:
		rc.num = numFloat32
	case types.RootDouble:
		rc.num = numFloat64
	case types.RootDecimal:
		rc.num = numDecimal
	default:
		rc.num = numInt
	}
	switch k {
	case kCount, kMin, kMax, kCollect:
		rc.width = 1
	case kSum, kSum0, kAvg, kListAgg:
		rc.width = 2
	case kFirstValue, kLastValue:
		rc.width = 2
	case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		rc.width = 3
	}
	switch k {
	case kMin, kMax, kFirstValue, kLastValue:
		if opts.NeedsRetraction {
			rc.retract = true
			rc.width = 1
		}
	}
	return rc, nil
}

// NumAggs is the number of aggregate calls.
func (h *Handle) NumAggs() int { return len(h.calls) }

// Slots returns the accumulator slots of call i: its own state is
// acc[off : off+width] (slot 0, the shared row count, is no call's).
func (h *Handle) Slots(i int) (off, width int) {
	c := &h.calls[i]
	return c.off, c.fn + c.width - c.off
}

// AccWidth is the number of values of one accumulator.
func (h *Handle) AccWidth() int { return h.width }

// RecordCount is the net number of rows accumulated into acc (accumulated
// minus retracted, FILTER ignored); a group whose count drops to 0 is empty.
func (h *Handle) RecordCount(acc []types.Value) int64 { return acc[recordCountSlot].N }

// Init resets acc to the empty accumulator.
func (h *Handle) Init(acc []types.Value) {
	clear(acc[:h.width])
	acc[recordCountSlot] = types.Int(0)
	for i := range h.calls {
		c := &h.calls[i]
		switch c.kind {
		case kCount:
			acc[c.fn] = types.Int(0)
		case kSum, kSum0, kAvg:
			acc[c.fn+1] = types.Int(0)
		case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
			varInit(c, acc)
		}
	}
}

// CloneAcc copies src into dst without sharing the nested values that
// Accumulate updates in place.
func (h *Handle) CloneAcc(dst, src []types.Value) {
	copy(dst[:h.width], src[:h.width])
	for i := range dst[:h.width] {
		if m := dst[i].Map(); m != nil {
			dst[i] = types.Value{K: types.KindMap, X: cloneMap(m)}
		}
	}
}

// nextOrder returns an increasing sequence number for arrival order. When
// accumulators may be merged it follows the wall clock, so that orders stay
// comparable across restarts and across accumulators built at different
// times.
func (h *Handle) nextOrder() int64 {
	h.lastOrder++
	if h.opts.NeedsMerge {
		if now := time.Now().UnixNano(); now > h.lastOrder {
			h.lastOrder = now
		}
	}
	return h.lastOrder
}

// passes reports whether the row passes the call's FILTER.
func (c *call) passes(in types.Row) bool {
	if c.filterCol < 0 {
		return true
	}
	f := in[c.filterCol]
	return f.K == types.KindBool && f.N != 0
}

// arg returns the value the call aggregates from the row; ok is false when
// the row does not count (a NULL argument). COUNT(*) sees Int(1); COUNT with
// several arguments skips rows with any NULL and, when distinct, aggregates
// the tuple as a ROW.
func (c *call) arg(in types.Row) (types.Value, bool) {
	switch len(c.argCols) {
	case 0:
		return types.Int(1), true
	case 1:
		v := in[c.argCols[0]]
		return v, v.K != types.KindNull
	}
	if c.kind == kListAgg {
		v := in[c.argCols[0]]
		return v, v.K != types.KindNull
	}
	for _, col := range c.argCols {
		if in[col].K == types.KindNull {
			return types.NullValue, false
		}
	}
	if !c.distinct {
		return types.Int(1), true
	}
	tuple := make(types.Row, len(c.argCols))
	for i, col := range c.argCols {
		tuple[i] = in[col]
	}
	return types.RowValue(tuple), true
}

// separator returns the LISTAGG separator of the row; ok is false when it is
// NULL (Flink then skips the row).
func (c *call) separator(in types.Row) (types.Value, bool) {
	if c.sepCol < 0 {
		return types.NullValue, !c.sepNull
	}
	s := in[c.sepCol]
	return s, s.K != types.KindNull
}

// Accumulate adds the input row to acc.
func (h *Handle) Accumulate(acc []types.Value, in types.Row) error {
	acc[recordCountSlot].N++
	for i := range h.calls {
		c := &h.calls[i]
		if !c.passes(in) {
			continue
		}
		if c.argCol >= 0 && !c.distinct && !c.sepNull {
			// The common case, kept free of copies of the argument.
			if v := &in[c.argCol]; v.K != types.KindNull {
				h.add(c, acc, v, nil)
			}
			continue
		}
		v, ok := c.arg(in)
		if !ok {
			continue
		}
		var sep *types.Value
		if c.kind == kListAgg {
			s, ok := c.separator(in)
			if !ok {
				continue
			}
			sep = &s
		}
		if c.distinct {
			if before, after := setAdd(slotMap(acc, c.off), v, 1); before > 0 || after <= 0 {
				continue
			}
		}
		h.add(c, acc, &v, sep)
	}
	return nil
}

// Retract withdraws the input row from acc.
func (h *Handle) Retract(acc []types.Value, in types.Row) error {
	acc[recordCountSlot].N--
	for i := range h.calls {
		c := &h.calls[i]
		if !c.passes(in) {
			continue
		}
		v, ok := c.arg(in)
		if !ok {
			continue
		}
		if c.kind == kListAgg {
			if _, ok = c.separator(in); !ok {
				continue
			}
		}
		if c.distinct {
			if before, after := setAdd(slotMap(acc, c.off), v, -1); before <= 0 || after > 0 {
				continue
			}
		}
		if err := h.retract(c, acc, v); err != nil {
			return err
		}
	}
	return nil
}

// add folds one (non-NULL, filtered, de-duplicated) value into the call's
// state. sep is the LISTAGG separator of the row, NULL when not a column.
func (h *Handle) add(c *call, acc []types.Value, vp, sep *types.Value) {
	s, v := &acc[c.fn], vp
	switch c.kind {
	case kCount:
		s.N++
	case kSum, kSum0:
		switch c.num {
		case numInt:
			if s.K == types.KindNull {
				*s = types.Int(wrapInt(v.N, c.argType.Root))
			} else {
				s.N = wrapInt(s.N+v.N, c.argType.Root)
			}
		case numFloat32:
			if s.K == types.KindNull {
				*s = *v
			} else {
				*s = types.Float(float64(float32(s.Float()) + float32(v.Float())))
			}
		case numFloat64:
			if s.K == types.KindNull {
				*s = *v
			} else {
				*s = types.Float(s.Float() + v.Float())
			}
		case numDecimal:
			if s.K == types.KindNull {
				*s = rescale(*v, c.resType.Scale)
			} else {
				*s = decAdd(*s, *v, c.resType.Scale, false)
			}
		}
		acc[c.fn+1].N++
	case kAvg:
		switch c.num {
		case numInt:
			if s.K == types.KindNull {
				*s = types.Int(v.N)
			} else {
				s.N += v.N
			}
		case numFloat32, numFloat64:
			if s.K == types.KindNull {
				*s = types.Float(v.Float())
			} else {
				*s = types.Float(s.Float() + v.Float())
			}
		case numDecimal:
			if s.K == types.KindNull {
				*s = rescale(*v, c.argType.Scale)
			} else {
				*s = decAdd(*s, *v, c.argType.Scale, false)
			}
		}
		acc[c.fn+1].N++
	case kMin, kMax:
		if c.retract {
			setAdd(slotMap(acc, c.fn), *v, 1)
			return
		}
		if s.K == types.KindNull || better(c.kind, *v, *s) {
			*s = *v
		}
	case kFirstValue, kLastValue:
		if c.retract {
			listAppend(slotMap(acc, c.fn), h.nextOrder(), *v)
			return
		}
		if c.kind == kFirstValue && s.K != types.KindNull {
			return
		}
		*s = *v
		if h.opts.NeedsMerge {
			acc[c.fn+1] = types.Int(h.nextOrder())
		}
	case kListAgg:
		listAppend(slotMap(acc, c.fn), h.nextOrder(), *v)
		if sep != nil && sep.K != types.KindNull {
			acc[c.fn+1] = *sep
		}
	case kCollect:
		setAdd(slotMap(acc, c.fn), *v, 1)
	case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		varAdd(c, acc, *v)
	}
}

// better reports whether v replaces the current MIN (MAX) cur.
func better(k kind, v, cur types.Value) bool {
	var c int
	if v.K == types.KindInt && cur.K == types.KindInt {
		switch {
		case v.N < cur.N:
			c = -1
		case v.N > cur.N:
			c = 1
		}
	} else {
		c = types.Compare(v, cur)
	}
	if k == kMin {
		return c < 0
	}
	return c > 0
}

// retract removes one value from the call's state.
func (h *Handle) retract(c *call, acc []types.Value, v types.Value) error {
	s := &acc[c.fn]
	switch c.kind {
	case kCount:
		s.N--
	case kSum, kSum0, kAvg:
		n := &acc[c.fn+1]
		n.N--
		if n.N == 0 {
			// Back to empty: start again from NULL so that no rounding residue
			// of floating-point sums survives.
			*s = types.NullValue
			return nil
		}
		wrapRoot := c.argType.Root
		if c.kind == kAvg {
			wrapRoot = types.RootBigInt
		}
		switch {
		case s.K == types.KindNull:
			*s = negate(c, v)
		case c.num == numInt:
			s.N = wrapInt(s.N-v.N, wrapRoot)
		case c.num == numFloat32 && c.kind != kAvg:
			*s = types.Float(float64(float32(s.Float()) - float32(v.Float())))
		case c.num == numFloat32 || c.num == numFloat64:
			*s = types.Float(s.Float() - v.Float())
		case c.num == numDecimal:
			*s = decAdd(*s, v, s.DecimalScale(), true)
		}
	case kMin, kMax, kFirstValue, kLastValue:
		if !c.retract {
			return fmt.Errorf("%s was planned without retraction and cannot retract a row", c.name)
		}
		if c.kind == kMin || c.kind == kMax {
			setAdd(slotMap(acc, c.fn), v, -1)
		} else {
			listRemove(acc[c.fn].Map(), v)
		}
	case kListAgg:
		listRemove(acc[c.fn].Map(), v)
	case kCollect:
		setAdd(slotMap(acc, c.fn), v, -1)
	case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		varRetract(c, acc, v)
	}
	return nil
}

// negate returns -v in the representation of the call's running sum (used
// when a retraction arrives before any accumulation).
func negate(c *call, v types.Value) types.Value {
	switch c.num {
	case numInt:
		if c.kind == kAvg {
			return types.Int(-v.N)
		}
		return types.Int(wrapInt(-v.N, c.argType.Root))
	case numFloat32, numFloat64:
		return types.Float(-v.Float())
	}
	scale := c.argType.Scale
	if c.kind != kAvg {
		scale = c.resType.Scale
	}
	return decAdd(types.DecimalFromUnscaled(0, scale), v, scale, true)
}

// Merge folds other into acc. other is left unchanged and shares nothing
// with acc afterwards.
func (h *Handle) Merge(acc, other []types.Value) error {
	acc[recordCountSlot].N += other[recordCountSlot].N
	for i := range h.calls {
		c := &h.calls[i]
		if c.distinct && !orderSensitive(c.kind) {
			if err := h.mergeDistinct(c, acc, other); err != nil {
				return err
			}
			continue
		}
		if c.distinct {
			// Feeding newly seen values to the aggregate would lose their
			// arrival order: merge the sets and the ordered states instead.
			mergeSets(acc, c.off, other[c.off])
		}
		if err := h.merge(c, acc, other); err != nil {
			return err
		}
	}
	return nil
}

// mergeDistinct unions the distinct sets and feeds the aggregate the values
// that became present (or absent) in acc.
func (h *Handle) mergeDistinct(c *call, acc, other []types.Value) error {
	om := other[c.off].Map()
	if om == nil || len(om.Keys) == 0 {
		return nil
	}
	m := slotMap(acc, c.off)
	var sep *types.Value
	if c.kind == kListAgg && c.sepCol >= 0 {
		sep = &other[c.fn+1]
	}
	for j, k := range om.Keys {
		before, after := setAdd(m, k, om.Values[j].N)
		switch {
		case before <= 0 && after > 0:
			h.add(c, acc, &om.Keys[j], sep)
		case before > 0 && after <= 0:
			if err := h.retract(c, acc, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *Handle) merge(c *call, acc, other []types.Value) error {
	s, o := &acc[c.fn], other[c.fn]
	switch c.kind {
	case kCount:
		s.N += o.N
	case kSum, kSum0, kAvg:
		acc[c.fn+1].N += other[c.fn+1].N
		if acc[c.fn+1].N == 0 {
			*s = types.NullValue
			return nil
		}
		if o.K == types.KindNull {
			return nil
		}
		if s.K == types.KindNull {
			*s = o
			return nil
		}
		switch c.num {
		case numInt:
			if c.kind == kAvg {
				s.N += o.N
			} else {
				s.N = wrapInt(s.N+o.N, c.argType.Root)
			}
		case numFloat32:
			if c.kind == kAvg {
				*s = types.Float(s.Float() + o.Float())
			} else {
				*s = types.Float(float64(float32(s.Float()) + float32(o.Float())))
			}
		case numFloat64:
			*s = types.Float(s.Float() + o.Float())
		case numDecimal:
			*s = decAdd(*s, o, s.DecimalScale(), false)
		}
	case kMin, kMax:
		if c.retract {
			mergeSets(acc, c.fn, o)
			return nil
		}
		if o.K != types.KindNull && (s.K == types.KindNull || better(c.kind, o, *s)) {
			*s = o
		}
	case kFirstValue, kLastValue:
		if c.retract {
			if om := o.Map(); om != nil {
				listMerge(slotMap(acc, c.fn), om)
			}
			return nil
		}
		if o.K == types.KindNull {
			return nil
		}
		so, oo := acc[c.fn+1].N, other[c.fn+1].N
		if s.K == types.KindNull ||
			(c.kind == kFirstValue && oo < so) ||
			(c.kind == kLastValue && oo >= so) {
			*s = o
			acc[c.fn+1] = other[c.fn+1]
		}
	case kListAgg:
		if om := o.Map(); om != nil {
			m := slotMap(acc, c.fn)
			listMerge(m, om)
			if c.distinct {
				listDedupe(m)
			}
		}
		if sep := other[c.fn+1]; sep.K != types.KindNull {
			acc[c.fn+1] = sep
		}
	case kCollect:
		mergeSets(acc, c.fn, o)
	case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		varMerge(c, acc, other)
	}
	return nil
}

// orderSensitive reports whether the result depends on the order in which
// values arrived.
func orderSensitive(k kind) bool {
	return k == kFirstValue || k == kLastValue || k == kListAgg
}

func mergeSets(acc []types.Value, slot int, o types.Value) {
	om := o.Map()
	if om == nil {
		return
	}
	m := slotMap(acc, slot)
	for j, k := range om.Keys {
		setAdd(m, k, om.Values[j].N)
	}
}

// Result writes NumAggs values computed from acc. Results share no mutable
// state with acc.
func (h *Handle) Result(acc []types.Value, out []types.Value) error {
	for i := range h.calls {
		v, err := h.result(&h.calls[i], acc)
		if err != nil {
			return err
		}
		out[i] = v
	}
	return nil
}

func (h *Handle) result(c *call, acc []types.Value) (types.Value, error) {
	s := acc[c.fn]
	switch c.kind {
	case kCount:
		return types.Int(s.N), nil
	case kSum, kSum0:
		if acc[c.fn+1].N == 0 || s.K == types.KindNull {
			if c.kind == kSum0 {
				return zeroOf(c.resType), nil
			}
			return types.NullValue, nil
		}
		if c.num == numDecimal && !fitsDecimal38(s) {
			return types.NullValue, nil
		}
		return s, nil
	case kAvg:
		n := acc[c.fn+1].N
		if n == 0 || s.K == types.KindNull {
			return types.NullValue, nil
		}
		switch c.num {
		case numInt:
			q := s.N / n
			if n == -1 { // avoid the MinInt64 / -1 trap; Java wraps
				q = -s.N
			}
			return types.Int(wrapInt(q, c.resType.Root)), nil
		case numFloat32:
			return types.Float(float64(float32(s.Float() / float64(n)))), nil
		case numFloat64:
			return types.Float(s.Float() / float64(n)), nil
		default:
			r := decDivCount(s, n, c.resType.Scale)
			if !fitsDecimal38(r) {
				return types.NullValue, nil
			}
			return r, nil
		}
	case kMin, kMax:
		if !c.retract {
			return s, nil
		}
		if c.kind == kMin {
			v, _ := setFirstPositive(s.Map())
			return v, nil
		}
		v, _ := setLastPositive(s.Map())
		return v, nil
	case kFirstValue, kLastValue:
		if !c.retract {
			return s, nil
		}
		m := s.Map()
		if m == nil || len(m.Values) == 0 {
			return types.NullValue, nil
		}
		if c.kind == kFirstValue {
			return m.Values[0], nil
		}
		return m.Values[len(m.Values)-1], nil
	case kListAgg:
		m := s.Map()
		if m == nil || len(m.Values) == 0 {
			return types.NullValue, nil
		}
		sep := c.sep
		if c.sepCol >= 0 && acc[c.fn+1].K != types.KindNull {
			sep = acc[c.fn+1].S
		}
		n := len(sep) * (len(m.Values) - 1)
		for _, v := range m.Values {
			n += len(v.S)
		}
		var b strings.Builder
		b.Grow(n)
		for j, v := range m.Values {
			if j > 0 {
				b.WriteString(sep)
			}
			b.WriteString(v.S)
		}
		return types.String(b.String()), nil
	case kCollect:
		var keys, counts []types.Value
		if m := s.Map(); m != nil {
			for j, k := range m.Keys {
				if m.Values[j].N > 0 {
					keys = append(keys, k)
					counts = append(counts, m.Values[j])
				}
			}
		}
		return types.MapOf(keys, counts), nil
	case kVarPop, kVarSamp, kStddevPop, kStddevSamp:
		return varResult(c, acc), nil
	}
	return types.NullValue, fmt.Errorf("aggregate function %s has no result", c.name)
}

func zeroOf(t types.Type) types.Value {
	switch t.Root {
	case types.RootFloat, types.RootDouble:
		return types.Float(0)
	case types.RootDecimal:
		return types.DecimalFromUnscaled(0, t.Scale)
	}
	return types.Int(0)
}
