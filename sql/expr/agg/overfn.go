package agg

import (
	"fmt"

	"github.com/flinksql/flinksql/types"
)

// The ranking and offset functions exist only with OVER. In Flink's
// streaming OVER aggregation ROW_NUMBER, RANK, DENSE_RANK and LAG run as
// aggregates over the rows of the partition up to the current one, in time
// order (RANK and DENSE_RANK compare the ORDER BY key with the previous
// row's); LEAD, CUME_DIST, PERCENT_RANK and NTILE would need rows that have
// not arrived and are refused.
var overFunctions = map[string]bool{
	"ROW_NUMBER": true, "RANK": true, "DENSE_RANK": true, "LAG": true, "LEAD": true,
	"CUME_DIST": true, "PERCENT_RANK": true, "NTILE": true,
}

// IsOverFunction reports whether name (upper-case) is a ranking or offset
// function, callable only with OVER.
func IsOverFunction(name string) bool { return overFunctions[name] }

// OverFunctionNames lists the over functions that run (for SHOW FUNCTIONS):
// LEAD, NTILE, CUME_DIST and PERCENT_RANK in batch mode only, as in Flink.
func OverFunctionNames() []string {
	return []string{"CUME_DIST", "DENSE_RANK", "LAG", "LEAD", "NTILE", "PERCENT_RANK", "RANK", "ROW_NUMBER"}
}

// StreamOverError is Flink's message for an over function its streaming
// OVER aggregation does not run, or "".
func StreamOverError(name string) string {
	switch name {
	case "LEAD", "CUME_DIST", "PERCENT_RANK", "NTILE":
		n := name
		if n == "LEAD" {
			return "LEAD Function is not supported in stream mode."
		}
		return n + " Function is not supported in stream mode."
	}
	return ""
}

// OverResultType is the type of an over function's result: BIGINT NOT NULL
// for the ranking functions; LAG(x [, offset [, default]]) is x's type,
// nullable (the first rows have no row offset rows back).
func OverResultType(name string, args []types.Type) (types.Type, error) {
	switch name {
	case "ROW_NUMBER", "RANK", "DENSE_RANK":
		return types.BigIntType.WithNullable(false), nil
	case "LAG", "LEAD":
		if len(args) == 0 || len(args) > 3 {
			return types.Type{}, fmt.Errorf("Invalid number of arguments to function '%s'. Was expecting 1 to 3 arguments", name)
		}
		if len(args) >= 2 && !args[1].IsInteger() {
			return types.Type{}, fmt.Errorf("Cannot apply '%s' to arguments of type '%s(<%s>, <%s>)'. Supported form(s): '%s(<ANY>, <INTEGER>)'", name, name, args[0], args[1], name)
		}
		t := args[0].WithoutTimeAttr()
		if len(args) == 3 && !t.EqualIgnoringNull(args[2].WithoutTimeAttr()) && args[2].Root != types.RootNull {
			return types.Type{}, fmt.Errorf("Cannot apply '%s' to arguments of type '%s(<%s>, <%s>, <%s>)'. The default value must have the type of the value", name, name, args[0], args[1], args[2])
		}
		return t.WithNullable(true), nil
	}
	return types.Type{}, fmt.Errorf("unknown over function %s", name)
}

// overCall is one over function in an OverHandle: its accumulator slots
// start at off.
type overCall struct {
	name   string
	argCol int // RANK/DENSE_RANK: the order key; LAG: the value
	defCol int // LAG: the default value's column, or -1
	offset int // LAG
	off    int
	width  int
}

// OverHandle evaluates the calls of an OVER aggregation: aggregate functions
// (through a Handle) and the over functions ROW_NUMBER, RANK, DENSE_RANK
// and LAG, whose accumulators follow the Handle's.
type OverHandle struct {
	inner *Handle
	// slot[i] says where call i's result is: >= 0 an inner result, < 0
	// over call -slot-1.
	slot   []int
	over   []overCall
	width  int
	result []types.Value
}

// NewOverHandle resolves calls. An over function's Call carries its
// arguments as columns: RANK/DENSE_RANK the ORDER BY key, LAG the value and
// the default (if any), with the offset as ConstArgs[0] (default 1).
func NewOverHandle(calls []Call, opts Options) (*OverHandle, error) {
	h := &OverHandle{slot: make([]int, len(calls))}
	var inner []Call
	for i, c := range calls {
		if !IsOverFunction(c.Name) {
			h.slot[i] = len(inner)
			inner = append(inner, c)
			continue
		}
		if msg := StreamOverError(c.Name); msg != "" {
			return nil, fmt.Errorf("%s", msg)
		}
		oc := overCall{name: c.Name, argCol: -1, defCol: -1, offset: 1}
		switch c.Name {
		case "ROW_NUMBER":
			oc.width = 1 // rows so far
		case "RANK", "DENSE_RANK":
			if len(c.ArgCols) != 1 {
				return nil, fmt.Errorf("%s needs its ORDER BY key as its argument column", c.Name)
			}
			oc.argCol, oc.width = c.ArgCols[0], 3 // rows so far, rank, last key
		case "LAG":
			if len(c.ArgCols) < 1 || len(c.ArgCols) > 2 {
				return nil, fmt.Errorf("LAG needs its value (and default) as argument columns")
			}
			oc.argCol = c.ArgCols[0]
			if len(c.ArgCols) == 2 {
				oc.defCol = c.ArgCols[1]
			}
			if len(c.ConstArgs) > 0 {
				v := c.ConstArgs[0]
				if v.IsNull() || v.K != types.KindInt || v.Int() < 0 || v.Int() > 1<<16 {
					return nil, fmt.Errorf("The offset of LAG must be a non-negative integer literal, but was %v", v)
				}
				oc.offset = int(v.Int())
			}
			// rows so far (capped), the last offset+1 values, the default
			oc.width = 1 + oc.offset + 1 + 1
		}
		h.slot[i] = -len(h.over) - 1
		h.over = append(h.over, oc)
	}
	var err error
	if h.inner, err = NewHandle(inner, opts); err != nil {
		return nil, err
	}
	h.width = h.inner.AccWidth()
	for i := range h.over {
		h.over[i].off = h.width
		h.width += h.over[i].width
	}
	h.result = make([]types.Value, h.inner.NumAggs())
	return h, nil
}

func (h *OverHandle) NumAggs() int  { return len(h.slot) }
func (h *OverHandle) AccWidth() int { return h.width }

func (h *OverHandle) Init(acc []types.Value) {
	h.inner.Init(acc[:h.inner.AccWidth()])
	for _, c := range h.over {
		s := acc[c.off : c.off+c.width]
		for i := range s {
			s[i] = types.NullValue
		}
		s[0] = types.Int(0)
		if c.name == "RANK" || c.name == "DENSE_RANK" {
			s[1] = types.Int(0)
		}
	}
}

func (h *OverHandle) Accumulate(acc []types.Value, in types.Row) error {
	if err := h.inner.Accumulate(acc[:h.inner.AccWidth()], in); err != nil {
		return err
	}
	for _, c := range h.over {
		s := acc[c.off : c.off+c.width]
		switch c.name {
		case "ROW_NUMBER":
			s[0].N++
		case "RANK", "DENSE_RANK":
			s[0].N++
			k := in[c.argCol]
			if s[0].N == 1 || types.Compare(k, s[2]) != 0 {
				if c.name == "RANK" {
					s[1] = types.Int(s[0].N)
				} else {
					s[1].N++
				}
			}
			s[2] = k
		case "LAG":
			// s[1:n+1] holds the last offset+1 values, oldest first.
			buf := s[1 : 1+c.offset+1]
			if int(s[0].N) == len(buf) {
				copy(buf, buf[1:])
				buf[len(buf)-1] = in[c.argCol]
			} else {
				buf[s[0].N] = in[c.argCol]
				s[0].N++
			}
			if c.defCol >= 0 {
				s[len(s)-1] = in[c.defCol]
			}
		}
	}
	return nil
}

func (h *OverHandle) Retract(acc []types.Value, in types.Row) error {
	if len(h.over) > 0 {
		return fmt.Errorf("%s cannot be retracted (its frame is unbounded)", h.over[0].name)
	}
	return h.inner.Retract(acc[:h.inner.AccWidth()], in)
}

func (h *OverHandle) Merge(acc, other []types.Value) error {
	if len(h.over) > 0 {
		return fmt.Errorf("%s cannot be merged", h.over[0].name)
	}
	return h.inner.Merge(acc[:h.inner.AccWidth()], other[:h.inner.AccWidth()])
}

func (h *OverHandle) Result(acc []types.Value, out []types.Value) error {
	if err := h.inner.Result(acc[:h.inner.AccWidth()], h.result); err != nil {
		return err
	}
	for i, sl := range h.slot {
		if sl >= 0 {
			out[i] = h.result[sl]
			continue
		}
		c := h.over[-sl-1]
		s := acc[c.off : c.off+c.width]
		switch c.name {
		case "ROW_NUMBER":
			out[i] = s[0]
		case "RANK", "DENSE_RANK":
			out[i] = s[1]
		case "LAG":
			if int(s[0].N) < c.offset+1 {
				out[i] = s[len(s)-1]
			} else {
				out[i] = s[1]
			}
		}
	}
	return nil
}
