package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

// Operator identities. Every plan node that may keep state gets an
// exec.OperatorState whose ID is derived from what determines that state,
// not from where the node lands in the job graph:
//
//   - its kind, and for sources and sinks the table (for a source also
//     the sink table of its statement: each INSERT of a statement set
//     scans its tables itself);
//   - the names of its key columns;
//   - what else fixes the meaning of its state (a window's definition; for
//     operators without a schema description of their own, the node's
//     whole EXPLAIN line);
//   - the identities of the nearest stateful operators and sources it
//     reads from (its position relative to the sources), except for a
//     sink, whose committables belong to its table whatever feeds it.
//
// Stateless nodes (Calc, Exchange, the window table function, Expand,
// Unnest, Union, lookup joins) have none and are transparent: changing a
// projection or a filter, adding a sink or changing a sink's options leaves
// every identity as it was. The rest of the state schema (key types, the
// accumulators of an aggregation, the stored rows' types) is recorded with
// the identity and compared by a restore, which keeps, migrates or refuses
// the state (package checkpoint, Migrate).

type stateIDs struct {
	p *Planner
	// feeds is the sink table of the statement being built: a source's
	// identity includes it, so that a scan keeps its position when another
	// INSERT of a statement set reads the same table (each INSERT scans
	// its tables itself).
	feeds  string
	byNode map[Node]*exec.OperatorState
	done   map[Node]bool
	used   map[string]int
}

func newStateIDs(p *Planner) *stateIDs {
	return &stateIDs{p: p, byNode: map[Node]*exec.OperatorState{}, done: map[Node]bool{}, used: map[string]int{}}
}

// state returns n's OperatorState, nil for a stateless node.
func (s *stateIDs) state(n Node) *exec.OperatorState {
	if s.done[n] {
		return s.byNode[n]
	}
	s.done[n] = true
	st := s.describe(n)
	if st != nil {
		st.ID = s.identity(st)
		s.byNode[n] = st
	}
	return st
}

// upstream lists the identities of the nearest stateful nodes below n.
func (s *stateIDs) upstream(n Node) []string {
	var out []string
	for _, in := range n.Inputs() {
		if st := s.state(in); st != nil {
			out = append(out, st.ID)
		} else {
			out = append(out, s.upstream(in)...)
		}
	}
	return out
}

func fields(sch types.Schema, cols []int) []exec.StateField {
	out := make([]exec.StateField, len(cols))
	for i, c := range cols {
		out[i] = exec.StateField{Name: sch[c].Name, Type: sch[c].Type.String()}
	}
	return out
}

func allFields(sch types.Schema) []exec.StateField {
	out := make([]exec.StateField, len(sch))
	for i, c := range sch {
		out[i] = exec.StateField{Name: c.Name, Type: c.Type.String()}
	}
	return out
}

func (s *stateIDs) describe(n Node) *exec.OperatorState {
	switch x := n.(type) {
	case *CalcNode, *ExchangeNode, *WindowTVFNode, *ExpandNode, *UnnestNode, *UnionNode, *LookupJoinNode:
		return nil
	case *ScanNode:
		return &exec.OperatorState{Kind: "Source", Name: x.Describe(), Table: x.Table.ID.String(), Params: "feeds=" + s.feeds}
	case *ValuesNode:
		return &exec.OperatorState{Kind: "Source", Name: "Values", Params: x.Describe() + " feeds=" + s.feeds}
	case *SinkNode:
		return &exec.OperatorState{Kind: "Sink", Name: x.Describe(), Table: x.Name, Upstream: s.upstream(n)}
	case *GroupAggNode:
		in := x.inputs[0].Schema()
		st := &exec.OperatorState{Kind: "GroupAggregate", Name: x.Describe(), Keys: fields(in, x.KeyCols), Upstream: s.upstream(n)}
		if s.p.cfg.MiniBatch.Enabled {
			// The mini-batch buffer holds input rows.
			st.Rows = allFields(in)
		}
		mode := "append"
		if x.InputRetracts {
			mode = "retract"
		}
		s.aggState(st, x.Aggs, agg.Options{NeedsRetraction: x.InputRetracts}, mode, false)
		return st
	case *WindowAggNode:
		in := x.inputs[0].Schema()
		st := &exec.OperatorState{Kind: "WindowAggregate", Name: x.Describe(), Keys: fields(in, x.KeyCols),
			Params: "window=" + x.WindowFn, Upstream: s.upstream(n)}
		s.aggState(st, x.Aggs, agg.Options{NeedsMerge: x.Window.Kind != exec.Tumble}, "", true)
		return st
	}
	// Any other operator: its whole plan node is its identity (for a join
	// without the columns it was narrowed to, see joinIdentity), and the
	// rows of its inputs are what it may store.
	kind := strings.TrimSuffix(reflect.TypeOf(n).Elem().Name(), "Node")
	params := n.Describe()
	if p, ok := joinIdentity(n); ok {
		params = p
	}
	st := &exec.OperatorState{Kind: kind, Name: n.Describe(), Params: params, Upstream: s.upstream(n)}
	for _, in := range n.Inputs() {
		st.Rows = append(st.Rows, allFields(in.Schema())...)
	}
	return st
}

// joinIdentity is the identity of a join node: its EXPLAIN line without
// the output columns and with time columns by name. Which input columns a
// join stores follows what the query reads above it (joinprune.go), so
// reading one more would otherwise change the join's identity and that of
// everything downstream; the stored columns are compared as the state's
// schema instead (exec.OperatorState.Rows), which refuses a restore whose
// join would lack a column.
func joinIdentity(n Node) (string, bool) {
	cond := func(e expr.Expr) string {
		if e == nil {
			return "true"
		}
		return e.String()
	}
	switch x := n.(type) {
	case *JoinNode:
		return "Join(joinType=[" + x.Type.String() + "], where=[" + cond(x.Cond) + "], leftInputSpec=[" + x.LeftSpec.String() +
			"], rightInputSpec=[" + x.RightSpec.String() + "])", true
	case *IntervalJoinNode:
		l, r := x.inputs[0].Schema(), x.inputs[1].Schema()
		return fmt.Sprintf("IntervalJoin(joinType=[%s], windowBounds=[isRowTime=%t, leftLowerBound=%d, leftUpperBound=%d, leftTime=%s, rightTime=%s], where=[%s])",
			x.Type, x.RowTime, x.LowerBound, x.UpperBound, l[x.LeftTimeCol].Name, r[x.RightTimeCol].Name, cond(x.Cond)), true
	case *WindowJoinNode:
		return fmt.Sprintf("WindowJoin(leftWindow=[%s], rightWindow=[%s], joinType=[%s], where=[%s])",
			x.LeftWindow, x.RightWindow, x.Type, cond(x.Cond)), true
	}
	return "", false
}

// aggState records an aggregation's accumulator layout and how to migrate
// its stored accumulators from another layout of the same calls.
func (s *stateIDs) aggState(st *exec.OperatorState, aggs []AggCall, opts agg.Options, mode string, window bool) {
	calls := make([]agg.Call, len(aggs))
	for i, a := range aggs {
		calls[i] = a.Call
	}
	if mode != "" {
		st.Params = "input=" + mode
	}
	h, err := agg.NewHandle(calls, opts)
	if err != nil {
		return // planning refuses the calls anyway
	}
	st.AccWidth = h.AccWidth()
	for i, a := range aggs {
		sa := exec.StateAgg{Call: a.Text, Result: a.Call.ResultType.String()}
		if rt, err := agg.ResultType(a.Call.Name, a.Call.ArgTypes, a.Call.Distinct); err == nil {
			sa.Result = rt.String()
		}
		for _, t := range a.Call.ArgTypes {
			sa.ArgTypes = append(sa.ArgTypes, t.String())
		}
		sa.Offset, sa.Width = h.Slots(i)
		st.Aggs = append(st.Aggs, sa)
	}
	st.Migrate = func(old *exec.OperatorState) (map[string]exec.ValueRewrite, error) {
		conv, err := accConverter(old, st, calls, opts)
		if err != nil || conv == nil {
			return nil, err
		}
		if window {
			return map[string]exec.ValueRewrite{
				"window-slice-acc": conv.sliceAcc,
				"window-sessions":  conv.sessions,
			}, nil
		}
		return map[string]exec.ValueRewrite{"acc": conv.groupAcc}, nil
	}
}

// identity hashes what identifies st (not its schema) and disambiguates
// two operators that would otherwise share one (the same aggregation
// feeding two sinks) by their order in the plan.
func (s *stateIDs) identity(st *exec.OperatorState) string {
	var b strings.Builder
	b.WriteString(st.Kind + "\x00" + st.Table + "\x00" + st.Params + "\x00")
	for _, k := range st.Keys {
		b.WriteString(k.Name + "\x01")
	}
	b.WriteString("\x00")
	// A sink's state (its committables) belongs to the table it writes,
	// whatever query feeds it.
	if st.Kind != "Sink" {
		for _, u := range st.Upstream {
			b.WriteString(u + "\x01")
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	h := hex.EncodeToString(sum[:6])
	id := st.Kind + "-" + h
	if st.Kind == "Source" {
		id = "Source-" + h + "-source"
	}
	s.used[id]++
	if n := s.used[id]; n > 1 {
		id = fmt.Sprintf("%s-%d", strings.TrimSuffix(id, "-source"), n)
		if st.Kind == "Source" {
			id += "-source"
		}
	}
	return id
}

// accConv converts stored accumulators of an old layout to the new one:
// each new call takes the slots of the old call of the same text, a call
// the old layout lacks starts from its initial value (Handle.Init), and
// the shared row count (slot 0) is kept.
type accConv struct {
	h        *agg.Handle
	oldWidth int
	oldAggs  int
	from     []int // per new call, the old call index or -1
	old      []exec.StateAgg
	cur      []exec.StateAgg
	width    int
}

// accConverter returns nil when the layouts are the same.
func accConverter(old, cur *exec.OperatorState, calls []agg.Call, opts agg.Options) (*accConv, error) {
	same := old.AccWidth == cur.AccWidth && len(old.Aggs) == len(cur.Aggs)
	for i := range cur.Aggs {
		same = same && i < len(old.Aggs) && old.Aggs[i].Call == cur.Aggs[i].Call &&
			old.Aggs[i].Offset == cur.Aggs[i].Offset && old.Aggs[i].Width == cur.Aggs[i].Width
	}
	if same {
		return nil, nil
	}
	h, err := agg.NewHandle(calls, opts)
	if err != nil {
		return nil, err
	}
	c := &accConv{h: h, oldWidth: old.AccWidth, oldAggs: len(old.Aggs), old: old.Aggs, cur: cur.Aggs, width: cur.AccWidth}
	taken := make([]bool, len(old.Aggs))
	for _, a := range cur.Aggs {
		from := -1
		for i, o := range old.Aggs {
			if !taken[i] && o.Call == a.Call {
				if o.Width != a.Width {
					return nil, fmt.Errorf("the accumulator of %s has %d values in the snapshot and %d now", a.Call, o.Width, a.Width)
				}
				from, taken[i] = i, true
				break
			}
		}
		c.from = append(c.from, from)
	}
	return c, nil
}

// convert returns the new accumulator of the old one.
func (c *accConv) convert(old []types.Value) []types.Value {
	acc := make([]types.Value, c.width)
	c.h.Init(acc)
	acc[0] = old[0]
	for j, i := range c.from {
		if i >= 0 {
			copy(acc[c.cur[j].Offset:c.cur[j].Offset+c.cur[j].Width], old[c.old[i].Offset:c.old[i].Offset+c.old[i].Width])
		}
	}
	return acc
}

func decodeN(src []byte, n int) ([]types.Value, []byte, error) {
	out := make([]types.Value, n)
	var err error
	for i := range out {
		if out[i], src, err = types.DecodeValue(src); err != nil {
			return nil, nil, err
		}
	}
	return out, src, nil
}

// groupAcc converts the group aggregate's "acc" value: a row of the
// accumulator's values followed by the last emitted results. A new call's
// last result is that of its initial accumulator.
func (c *accConv) groupAcc(src []byte) ([]byte, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || int(n) != c.oldWidth+c.oldAggs {
		return nil, fmt.Errorf("stored accumulator row of %d values, the snapshot's layout has %d", n, c.oldWidth+c.oldAggs)
	}
	vals, rest, err := decodeN(src[w:], int(n))
	if err != nil || len(rest) != 0 {
		return nil, errors.Join(err, errors.New("unreadable stored accumulator"))
	}
	acc := c.convert(vals[:c.oldWidth])
	results := make([]types.Value, len(c.cur))
	if err := c.h.Result(acc, results); err != nil {
		return nil, err
	}
	for j, i := range c.from {
		if i >= 0 {
			results[j] = vals[c.oldWidth+i]
		}
	}
	return types.AppendRow(nil, append(acc, results...)), nil
}

// sliceAcc converts a window slice's accumulator: uvarint arrival
// sequence, then the accumulator's values.
func (c *accConv) sliceAcc(src []byte) ([]byte, error) {
	seq, w := binary.Uvarint(src)
	if w <= 0 {
		return nil, errors.New("unreadable stored slice accumulator")
	}
	vals, rest, err := decodeN(src[w:], c.oldWidth)
	if err != nil || len(rest) != 0 {
		return nil, errors.Join(err, errors.New("unreadable stored slice accumulator"))
	}
	dst := binary.AppendUvarint(nil, seq)
	for _, v := range c.convert(vals) {
		dst = types.AppendValue(dst, v)
	}
	return dst, nil
}

// sessions converts a key's open sessions: uvarint count, then per session
// varint start, varint end, uvarint sequence and the accumulator.
func (c *accConv) sessions(src []byte) ([]byte, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 {
		return nil, errors.New("unreadable stored sessions")
	}
	src = src[w:]
	dst := binary.AppendUvarint(nil, n)
	for range n {
		start, w1 := binary.Varint(src)
		if w1 <= 0 {
			return nil, errors.New("unreadable stored session")
		}
		end, w2 := binary.Varint(src[w1:])
		if w2 <= 0 {
			return nil, errors.New("unreadable stored session")
		}
		seq, w3 := binary.Uvarint(src[w1+w2:])
		if w3 <= 0 {
			return nil, errors.New("unreadable stored session")
		}
		vals, rest, err := decodeN(src[w1+w2+w3:], c.oldWidth)
		if err != nil {
			return nil, fmt.Errorf("unreadable stored session: %w", err)
		}
		src = rest
		dst = binary.AppendVarint(dst, start)
		dst = binary.AppendVarint(dst, end)
		dst = binary.AppendUvarint(dst, seq)
		for _, v := range c.convert(vals) {
			dst = types.AppendValue(dst, v)
		}
	}
	if len(src) != 0 {
		return nil, errors.New("unreadable stored sessions: trailing bytes")
	}
	return dst, nil
}
