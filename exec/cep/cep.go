// Package cep implements MATCH_RECOGNIZE, Flink's complex event processing
// in SQL: per partition key, rows in time order run through a
// nondeterministic automaton built from a pattern of variables with
// quantifiers, and every complete match emits one row (ONE ROW PER MATCH).
//
// Semantics follow Flink's NFA (flink-cep) as the SQL planner configures it:
// contiguity is strict (a partial match that cannot take a row dies); a
// greedy quantifier does not let its successor take a row it can take
// itself; reluctant ones branch (both), and the AFTER MATCH SKIP strategy
// prunes what the emitted match makes redundant. A complete match waits while
// a partial match that started earlier is alive, so matches leave in the
// order of their first rows. WITHIN drops partial matches whose first row is
// at least the interval older than the time reached.
//
// On event time rows wait in keyed state until the watermark passes them and
// are then processed in (time, secondary order, arrival) order; a row at or
// below the watermark at arrival is late and dropped (LateRowsDropped). On
// processing time rows are processed on arrival.
//
// State, per key, in the runtime's keyed backend (exec.KeyedOperator): the
// buffered rows by time, and one value holding the automaton: the rows that
// partial or held-back complete matches refer to (only the values the
// pattern's expressions read), the partial matches and the complete matches
// waiting to be emitted. Event-time timers in a kv.TimerService find the keys
// a watermark is due for, also after a restore.
package cep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Unbounded is Element.Max for a quantifier without an upper bound.
const Unbounded = -1

// Element is one pattern variable with its quantifier.
type Element struct {
	Var      int // index into Spec.Defines
	Min, Max int // Max: Unbounded for *, +, {n,}
	// Greedy: a row this element can take is not offered to the next one.
	Greedy bool
}

// SkipKind is an AFTER MATCH SKIP strategy.
type SkipKind int

const (
	SkipToNextRow SkipKind = iota
	SkipPastLastRow
	SkipToFirst
	SkipToLast
)

// NavKind is how a navigation slot picks its value from a match.
type NavKind int

const (
	// NavLast is the Offset-th last row (0: the last) of the variable.
	NavLast NavKind = iota
	// NavFirst is the Offset-th row (0: the first) of the variable.
	NavFirst
	// NavAgg aggregates over the rows of the variable (Agg).
	NavAgg
	// NavProctime is the processing time (MATCH_PROCTIME()).
	NavProctime
)

// Nav is one value an expression of DEFINE or MEASURES reads from the
// (partial) match: a column of the row arguments (Arg) of one row of
// variable Var (-1: of every variable), or an aggregate over those rows.
type Nav struct {
	Kind   NavKind
	Var    int
	Offset int
	Arg    int
	// Agg evaluates the aggregate of NavAgg over the arguments row of each
	// row of the variable (one call; built per instance).
	Agg func() (exec.AggsHandle, error)
}

// Define is the condition of one pattern variable: a predicate over the
// slot row (the values of Spec.Navs at their indices) of the navigations
// it lists. Cond nil: always true.
type Define struct {
	Name string
	Navs []int
	Cond func() (exec.Predicate, error)
}

// Spec describes a MATCH_RECOGNIZE.
type Spec struct {
	KeyCols []int // PARTITION BY columns of the input
	// TimeCol is the ORDER BY rowtime column; -1 orders by processing time.
	TimeCol int
	// SortCols orders rows of one timestamp (secondary ORDER BY keys).
	SortCols []SortKey
	// Args projects an input row to what the pattern reads of it: first
	// the key columns, then the arguments of the navigations.
	Args     func() (exec.Projector, error)
	ArgWidth int
	Pattern  []Element
	Defines  []Define
	Navs     []Nav
	// Measures computes the output columns after the keys from the slot
	// row of MeasureNavs.
	Measures     func() (exec.Projector, error)
	MeasureWidth int
	MeasureNavs  []int
	Skip         SkipKind
	SkipVar      int   // for SkipToFirst / SkipToLast
	Within       int64 // ms; 0: none
}

// SortKey is a secondary ORDER BY column.
type SortKey struct {
	Col  int
	Desc bool
}

// New returns the MATCH_RECOGNIZE operator of spec. Input and output are
// insert-only.
func New(spec Spec) (exec.Operator, error) {
	if len(spec.Pattern) == 0 {
		return nil, errors.New("match recognize: empty pattern")
	}
	for _, e := range spec.Pattern {
		if e.Var < 0 || e.Var >= len(spec.Defines) || e.Min < 0 || (e.Max != Unbounded && e.Max < max(e.Min, 1)) {
			return nil, fmt.Errorf("match recognize: invalid pattern element %+v", e)
		}
	}
	if spec.Args == nil || spec.Measures == nil {
		return nil, errors.New("match recognize: no argument or measure projection")
	}
	return &operator{spec: spec, wm: exec.MinWatermark}, nil
}

const (
	bufferState = "cep.buffer"
	nfaState    = "cep.nfa"
	timerState  = "cep"
)

// event is a row of a match: its sequence number in its key (processing
// order), its time and its arguments row.
type event struct {
	seq  int64
	ts   int64
	args types.Row
}

// step is a row taken by a variable.
type step struct {
	v   int
	seq int64
}

// partial is a (partial or complete) match: the element it is at, how many
// rows that element took, and the rows taken in order.
type partial struct {
	elem, count int
	steps       []step
}

func (p *partial) start() int64 { return p.steps[0].seq }

// keyState is the decoded automaton of one key.
type keyState struct {
	nextSeq  int64
	events   map[int64]*event
	partials []*partial // by start
	complete []*partial // by start
}

type operator struct {
	spec   Spec
	ctx    *exec.OperatorContext
	b      *kv.Backend
	buffer *kv.SortedMapState[int64, []byte]
	nfa    *kv.ValueState[[]byte]
	timers *kv.TimerService
	wm     int64

	args     exec.Projector
	conds    []exec.Predicate
	measures exec.Projector
	aggs     []exec.AggsHandle // by nav (nil for others)
	accs     [][]types.Value
	slot     types.Row
	aggOut   []types.Value
	nkeys    int

	out    *types.Batch
	keyBuf []byte
	buf    []byte
}

// OpenKeyedState implements exec.KeyedOperator.
func (o *operator) OpenKeyedState(b *kv.Backend) error {
	o.b = b
	var err error
	if o.spec.TimeCol >= 0 {
		if o.buffer, err = kv.NewSortedMapState[int64, []byte](b, bufferState, kv.Int64{}, kv.Bytes{}, kv.Options{}); err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
	}
	if o.nfa, err = kv.NewValueState[[]byte](b, nfaState, kv.Bytes{}, kv.Options{}); err != nil {
		return fmt.Errorf("match recognize: %w", err)
	}
	if o.timers, err = kv.NewTimerService(b, timerState); err != nil {
		return fmt.Errorf("match recognize: %w", err)
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: all state is in the
// backend already.
func (o *operator) PrepareSnapshot(exec.CheckpointID) error { return nil }

func (o *operator) Open(ctx *exec.OperatorContext) error {
	o.ctx = ctx
	var err error
	if o.args, err = o.spec.Args(); err != nil {
		return err
	}
	if o.measures, err = o.spec.Measures(); err != nil {
		return err
	}
	o.conds = make([]exec.Predicate, len(o.spec.Defines))
	for i, d := range o.spec.Defines {
		if d.Cond != nil {
			if o.conds[i], err = d.Cond(); err != nil {
				return err
			}
		}
	}
	o.aggs = make([]exec.AggsHandle, len(o.spec.Navs))
	o.accs = make([][]types.Value, len(o.spec.Navs))
	for i, n := range o.spec.Navs {
		if n.Kind == NavAgg {
			if o.aggs[i], err = n.Agg(); err != nil {
				return err
			}
			o.accs[i] = make([]types.Value, o.aggs[i].AccWidth())
		}
	}
	o.slot = make(types.Row, len(o.spec.Navs))
	o.aggOut = make([]types.Value, 1)
	o.nkeys = len(o.spec.KeyCols)
	o.out = types.NewBatch(o.nkeys+o.spec.MeasureWidth, types.DefaultBatchSize)
	return nil
}

func (o *operator) setKey(r types.Row) ([]byte, uint64, error) {
	o.keyBuf = o.keyBuf[:0]
	for _, c := range o.spec.KeyCols {
		o.keyBuf = types.AppendValue(o.keyBuf, r[c])
	}
	h := types.HashColumns(r, o.spec.KeyCols)
	if err := o.b.SetCurrentKey(h, o.keyBuf); err != nil {
		return nil, 0, fmt.Errorf("match recognize: %w", err)
	}
	return o.keyBuf, h, nil
}

func (o *operator) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	for i, r := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("match recognize: the input must be insert-only, got a %s row", k)
		}
		if _, _, err := o.setKey(r); err != nil {
			return err
		}
		if o.spec.TimeCol < 0 {
			now := o.ctx.Now()
			ks, err := o.load()
			if err != nil {
				return err
			}
			if err := o.advanceTime(ks, now, out); err != nil {
				return err
			}
			if err := o.process(ks, r, now, out); err != nil {
				return err
			}
			if err := o.store(ks); err != nil {
				return err
			}
			continue
		}
		v := r[o.spec.TimeCol]
		if v.IsNull() {
			return fmt.Errorf("match recognize: a row has a NULL row time: %v", r)
		}
		ts := v.Millis()
		if ts <= o.wm {
			o.ctx.Metrics.LateRowsDropped.Add(1)
			continue
		}
		prev, ok, err := o.buffer.Get(nil, ts)
		if err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
		o.buf = types.AppendRow(append(o.buf[:0], prev...), r)
		if err := o.buffer.Put(nil, ts, o.buf); err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
		if !ok {
			if err := o.timers.Register(kv.EventTime, ts, nil); err != nil {
				return fmt.Errorf("match recognize: %w", err)
			}
		}
	}
	return o.flush(out)
}

// ProcessWatermark processes, per due key, the buffered rows the watermark
// passed, in time order.
func (o *operator) ProcessWatermark(wm int64, out exec.Output) error {
	if o.spec.TimeCol >= 0 {
		o.wm = wm
		err := o.timers.Advance(kv.EventTime, wm, func(tm kv.Timer) error { return o.fire(tm.Time, wm, out) })
		if err != nil {
			return err
		}
	}
	if err := o.flush(out); err != nil {
		return err
	}
	return out.PushWatermark(wm)
}

// fire handles the current key at watermark wm, for its timer at time at.
func (o *operator) fire(at, wm int64, out exec.Output) error {
	var times []int64
	var groups [][]types.Row
	var derr error
	// next: the first buffered time after wm, if any.
	next := int64(math.MinInt64)
	err := o.buffer.Ascend(nil, nil, func(ts int64, v []byte) bool {
		if ts > wm {
			next = ts
			return false
		}
		var rows []types.Row
		for len(v) > 0 {
			var r types.Row
			if r, v, derr = types.DecodeRow(v); derr != nil {
				return false
			}
			rows = append(rows, r)
		}
		times = append(times, ts)
		groups = append(groups, rows)
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("match recognize: buffered rows: %w", err)
	}
	ks, err := o.load()
	if err != nil {
		return err
	}
	for i, ts := range times {
		if err := o.buffer.Delete(nil, ts); err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
		// Every buffered time has a timer; those passed here need not fire.
		if ts != at {
			if err := o.timers.Delete(kv.EventTime, ts, nil); err != nil {
				return fmt.Errorf("match recognize: %w", err)
			}
		}
		rows := groups[i]
		if len(o.spec.SortCols) > 0 {
			sort.SliceStable(rows, func(a, b int) bool { return o.less(rows[a], rows[b]) })
		}
		if err := o.advanceTime(ks, ts, out); err != nil {
			return err
		}
		for _, r := range rows {
			if err := o.process(ks, r, ts, out); err != nil {
				return err
			}
		}
	}
	if err := o.advanceTime(ks, wm, out); err != nil {
		return err
	}
	if err := o.store(ks); err != nil {
		return err
	}
	// A timer at the next buffered row's time (there is one already,
	// registered with the row), or, with WITHIN, at the next watermark
	// while partial matches may time out.
	if next == math.MinInt64 && o.spec.Within > 0 && len(ks.partials) > 0 && wm < math.MaxInt64 {
		if err := o.timers.Register(kv.EventTime, wm+1, nil); err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
	}
	return nil
}

func (o *operator) less(a, b types.Row) bool {
	for _, k := range o.spec.SortCols {
		c := types.Compare(a[k.Col], b[k.Col])
		if c == 0 {
			continue
		}
		if k.Desc {
			return c > 0
		}
		return c < 0
	}
	return false
}

// advanceTime drops the partial matches WITHIN times out at t, and emits
// the complete matches they held back.
func (o *operator) advanceTime(ks *keyState, t int64, out exec.Output) error {
	if o.spec.Within <= 0 || len(ks.partials) == 0 {
		return nil
	}
	kept := ks.partials[:0]
	for _, p := range ks.partials {
		if t-ks.events[p.start()].ts >= o.spec.Within {
			continue
		}
		kept = append(kept, p)
	}
	ks.partials = kept
	return o.emit(ks, out)
}

// process runs one row through the automaton of the current key.
func (o *operator) process(ks *keyState, r types.Row, ts int64, out exec.Output) error {
	ev := &event{seq: ks.nextSeq, ts: ts, args: make(types.Row, o.spec.ArgWidth)}
	ks.nextSeq++
	if err := o.args.Project(r, ev.args); err != nil {
		return err
	}
	ks.events[ev.seq] = ev
	var next []*partial
	fresh := &partial{}
	for _, p := range append(ks.partials, fresh) {
		var err error
		next, err = o.advance(ks, p, p.elem, p.count, ev, next)
		if err != nil {
			return err
		}
	}
	ks.partials = ks.partials[:0]
	for _, p := range next {
		if o.done(p) {
			ks.complete = append(ks.complete, p)
		}
		if o.canContinue(p) {
			ks.partials = append(ks.partials, p)
		}
	}
	// Sorted by start (stable: creation order within one start).
	sort.SliceStable(ks.partials, func(a, b int) bool { return ks.partials[a].start() < ks.partials[b].start() })
	sort.SliceStable(ks.complete, func(a, b int) bool { return ks.complete[a].start() < ks.complete[b].start() })
	return o.emit(ks, out)
}

// advance offers ev to p at element i (having taken c rows there) and
// appends the matches it becomes.
func (o *operator) advance(ks *keyState, p *partial, i, c int, ev *event, next []*partial) ([]*partial, error) {
	if i >= len(o.spec.Pattern) {
		return next, nil
	}
	e := o.spec.Pattern[i]
	took := false
	if e.Max == Unbounded || c < e.Max {
		ok, err := o.test(ks, p, e.Var, ev)
		if err != nil {
			return nil, err
		}
		if ok {
			took = true
			np := &partial{elem: i, count: c + 1, steps: make([]step, len(p.steps), len(p.steps)+1)}
			copy(np.steps, p.steps)
			np.steps = append(np.steps, step{v: e.Var, seq: ev.seq})
			next = append(next, np)
		}
	}
	if c >= e.Min && !(took && e.Greedy) {
		return o.advance(ks, p, i+1, 0, ev, next)
	}
	return next, nil
}

// done reports whether p is a complete match: every element after the one
// it is at may take no rows.
func (o *operator) done(p *partial) bool {
	if p.count < o.spec.Pattern[p.elem].Min {
		return false
	}
	for _, e := range o.spec.Pattern[p.elem+1:] {
		if e.Min > 0 {
			return false
		}
	}
	return true
}

// canContinue reports whether p may take another row.
func (o *operator) canContinue(p *partial) bool {
	e := o.spec.Pattern[p.elem]
	return e.Max == Unbounded || p.count < e.Max || p.elem+1 < len(o.spec.Pattern)
}

// test evaluates the DEFINE condition of variable v for ev taken by p.
func (o *operator) test(ks *keyState, p *partial, v int, ev *event) (bool, error) {
	d := o.spec.Defines[v]
	if o.conds[v] == nil {
		return true, nil
	}
	if err := o.fill(ks, p.steps, step{v: v, seq: ev.seq}, true, d.Navs); err != nil {
		return false, err
	}
	return o.conds[v].Test(o.slot)
}

// fill computes the navigations navs over steps (plus cur when withCur).
func (o *operator) fill(ks *keyState, steps []step, cur step, withCur bool, navs []int) error {
	n := len(steps)
	if withCur {
		n++
	}
	at := func(i int) step {
		if i < len(steps) {
			return steps[i]
		}
		return cur
	}
	for _, ni := range navs {
		nav := o.spec.Navs[ni]
		switch nav.Kind {
		case NavProctime:
			o.slot[ni] = types.TimestampMillis(o.ctx.Now())
		case NavLast, NavFirst:
			o.slot[ni] = types.NullValue
			k := nav.Offset
			for j := 0; j < n; j++ {
				idx := j
				if nav.Kind == NavLast {
					idx = n - 1 - j
				}
				s := at(idx)
				if nav.Var >= 0 && s.v != nav.Var {
					continue
				}
				if k == 0 {
					o.slot[ni] = ks.events[s.seq].args[nav.Arg]
					break
				}
				k--
			}
		case NavAgg:
			h, acc := o.aggs[ni], o.accs[ni]
			h.Init(acc)
			for j := 0; j < n; j++ {
				s := at(j)
				if nav.Var >= 0 && s.v != nav.Var {
					continue
				}
				if err := h.Accumulate(acc, ks.events[s.seq].args); err != nil {
					return err
				}
			}
			if err := h.Result(acc, o.aggOut); err != nil {
				return err
			}
			o.slot[ni] = o.aggOut[0]
		}
	}
	return nil
}

// emit emits the complete matches no earlier partial match holds back, in
// order, pruning after each what the skip strategy says.
func (o *operator) emit(ks *keyState, out exec.Output) error {
	for len(ks.complete) > 0 {
		m := ks.complete[0]
		if len(ks.partials) > 0 && ks.partials[0].start() < m.start() {
			return nil
		}
		ks.complete = ks.complete[1:]
		if err := o.output(ks, m, out); err != nil {
			return err
		}
		prune, err := o.pruneBefore(ks, m)
		if err != nil {
			return err
		}
		ks.partials = pruned(ks.partials, prune)
		ks.complete = pruned(ks.complete, prune)
	}
	return nil
}

// pruneBefore returns the predicate of the matches the skip strategy
// discards after m.
func (o *operator) pruneBefore(ks *keyState, m *partial) (func(start int64) bool, error) {
	switch o.spec.Skip {
	case SkipPastLastRow:
		last := m.steps[len(m.steps)-1].seq
		return func(s int64) bool { return s <= last }, nil
	case SkipToNextRow:
		first := m.start()
		return func(s int64) bool { return s <= first }, nil
	}
	target := int64(-1)
	for _, s := range m.steps {
		if s.v == o.spec.SkipVar {
			target = s.seq
			if o.spec.Skip == SkipToFirst {
				break
			}
		}
	}
	name := o.spec.Defines[o.spec.SkipVar].Name
	if target < 0 {
		return nil, fmt.Errorf("match recognize: Could not skip to %s. No such element in the found match", name)
	}
	if o.spec.Skip == SkipToFirst && target == m.start() {
		return nil, fmt.Errorf("match recognize: Could not skip to first element of a match (AFTER MATCH SKIP TO FIRST %s)", name)
	}
	return func(s int64) bool { return s < target }, nil
}

func pruned(ps []*partial, prune func(int64) bool) []*partial {
	kept := ps[:0]
	for _, p := range ps {
		if !prune(p.start()) {
			kept = append(kept, p)
		}
	}
	return kept
}

// output emits the row of match m: the key, then the measures.
func (o *operator) output(ks *keyState, m *partial, out exec.Output) error {
	if err := o.fill(ks, m.steps, step{}, false, o.spec.MeasureNavs); err != nil {
		return err
	}
	if o.out.Full() {
		if err := o.flush(out); err != nil {
			return err
		}
	}
	row := o.out.Append(types.Insert)
	first := ks.events[m.start()].args
	copy(row, first[:o.nkeys])
	return o.measures.Project(o.slot, row[o.nkeys:])
}

func (o *operator) flush(out exec.Output) error {
	if o.out == nil || o.out.Len() == 0 {
		return nil
	}
	err := out.Push(o.out)
	o.out.Reset()
	return err
}

func (o *operator) Finish(out exec.Output) error { return o.flush(out) }
func (o *operator) Close() error                 { return nil }

// load decodes the current key's automaton.
func (o *operator) load() (*keyState, error) {
	ks := &keyState{events: map[int64]*event{}}
	v, ok, err := o.nfa.Get(nil)
	if err != nil {
		return nil, fmt.Errorf("match recognize: %w", err)
	}
	if !ok {
		return ks, nil
	}
	if err := ks.decode(v); err != nil {
		return nil, fmt.Errorf("match recognize: corrupt state: %w", err)
	}
	return ks, nil
}

// store writes the current key's automaton back, with only the rows its
// matches refer to.
func (o *operator) store(ks *keyState) error {
	if len(ks.partials) == 0 && len(ks.complete) == 0 {
		if err := o.nfa.Clear(nil); err != nil {
			return fmt.Errorf("match recognize: %w", err)
		}
		// The sequence restarts: no match refers to an earlier row.
		return nil
	}
	o.buf = ks.encode(o.buf[:0])
	if err := o.nfa.Put(nil, o.buf); err != nil {
		return fmt.Errorf("match recognize: %w", err)
	}
	return nil
}

func (ks *keyState) encode(dst []byte) []byte {
	used := map[int64]bool{}
	for _, ps := range [][]*partial{ks.partials, ks.complete} {
		for _, p := range ps {
			for _, s := range p.steps {
				used[s.seq] = true
			}
		}
	}
	seqs := make([]int64, 0, len(used))
	for s := range used {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(a, b int) bool { return seqs[a] < seqs[b] })
	dst = binary.AppendVarint(dst, ks.nextSeq)
	dst = binary.AppendUvarint(dst, uint64(len(seqs)))
	for _, s := range seqs {
		e := ks.events[s]
		dst = binary.AppendVarint(dst, e.seq)
		dst = binary.AppendVarint(dst, e.ts)
		dst = types.AppendRow(dst, e.args)
	}
	for _, ps := range [][]*partial{ks.partials, ks.complete} {
		dst = binary.AppendUvarint(dst, uint64(len(ps)))
		for _, p := range ps {
			dst = binary.AppendUvarint(dst, uint64(p.elem))
			dst = binary.AppendUvarint(dst, uint64(p.count))
			dst = binary.AppendUvarint(dst, uint64(len(p.steps)))
			for _, s := range p.steps {
				dst = binary.AppendUvarint(dst, uint64(s.v))
				dst = binary.AppendVarint(dst, s.seq)
			}
		}
	}
	return dst
}

var errCorrupt = errors.New("truncated")

func (ks *keyState) decode(src []byte) error {
	var err error
	vint := func() int64 {
		v, n := binary.Varint(src)
		if n <= 0 {
			err = errCorrupt
			return 0
		}
		src = src[n:]
		return v
	}
	uint := func() int {
		v, n := binary.Uvarint(src)
		if n <= 0 || v > math.MaxInt32 {
			err = errCorrupt
			return 0
		}
		src = src[n:]
		return int(v)
	}
	ks.nextSeq = vint()
	n := uint()
	for i := 0; i < n && err == nil; i++ {
		e := &event{seq: vint(), ts: vint()}
		if err != nil {
			break
		}
		if e.args, src, err = types.DecodeRow(src); err != nil {
			return err
		}
		ks.events[e.seq] = e
	}
	lists := [2][]*partial{}
	for l := range lists {
		n := uint()
		for i := 0; i < n && err == nil; i++ {
			p := &partial{elem: uint(), count: uint()}
			m := uint()
			for j := 0; j < m && err == nil; j++ {
				s := step{v: uint(), seq: vint()}
				if ks.events[s.seq] == nil && err == nil {
					err = fmt.Errorf("row %d of a match missing", s.seq)
				}
				p.steps = append(p.steps, s)
			}
			if len(p.steps) == 0 && err == nil {
				err = errors.New("empty match")
			}
			lists[l] = append(lists[l], p)
		}
	}
	ks.partials, ks.complete = lists[0], lists[1]
	return err
}

var _ exec.KeyedOperator = (*operator)(nil)
