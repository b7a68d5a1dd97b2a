// Package unnest owns the operator that joins each row with the rows of
// its collection columns (`CROSS JOIN UNNEST(arr) AS t(x)`, Flink's
// Correlate over $UNNEST_ROWS): one output row per element of an array or
// multiset, per entry of a map, the fields of ROW elements as columns;
// several collections are unnested side by side, the shorter ones padded
// with NULLs (as Calcite zips them), WITH ORDINALITY numbering the rows
// from 1. A LEFT join keeps a row whose collections are empty or NULL (or
// whose elements all fail the ON condition), padded with NULLs.
package unnest

import (
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// ArgKind is what one UNNEST argument is.
type ArgKind uint8

const (
	Array       ArgKind = iota // one column per element
	ArrayOfRows                // the element's fields as columns
	Map                        // key and value columns
	Multiset                   // one column, each element as often as it counts
)

// Arg is one UNNEST argument.
type Arg struct {
	Kind ArgKind
	// Width is the number of columns it contributes (1, the row's fields,
	// or 2).
	Width int
}

// Spec describes an UNNEST join.
type Spec struct {
	InWidth int
	// Args evaluates the collections from an input row, one value each.
	Args     func() (exec.Projector, error)
	ArgKinds []Arg
	// Ordinality appends the element's position (BIGINT, from 1).
	Ordinality bool
	LeftOuter  bool
	// Cond, when set, is the ON condition over the output row.
	Cond func() (exec.Predicate, error)
}

// NewJoin returns the UNNEST operator of spec.
func NewJoin(spec Spec) (exec.Operator, error) {
	if len(spec.ArgKinds) == 0 {
		return nil, fmt.Errorf("unnest: no collection to unnest")
	}
	w := 0
	for _, a := range spec.ArgKinds {
		w += a.Width
	}
	if spec.Ordinality {
		w++
	}
	return &join{spec: spec, outWidth: spec.InWidth + w}, nil
}

type join struct {
	spec     Spec
	outWidth int
	args     exec.Projector
	cond     exec.Predicate
	vals     types.Row
	elems    [][]types.Value // per argument: the elements (multisets expanded)
	out      *types.Batch
}

// Stateless implements exec.StatelessOperator: every input row is joined
// with its own collections, nothing is kept.
func (*join) Stateless() {}

func (j *join) Open(*exec.OperatorContext) error {
	var err error
	if j.args, err = j.spec.Args(); err != nil {
		return err
	}
	if j.spec.Cond != nil {
		if j.cond, err = j.spec.Cond(); err != nil {
			return err
		}
	}
	j.vals = make(types.Row, len(j.spec.ArgKinds))
	j.elems = make([][]types.Value, len(j.spec.ArgKinds))
	return nil
}

// collect sets j.elems from the argument values and returns the number of
// rows they unnest into.
func (j *join) collect() int {
	n := 0
	for i, a := range j.spec.ArgKinds {
		v := j.vals[i]
		j.elems[i] = j.elems[i][:0]
		switch {
		case v.IsNull():
		case a.Kind == Map:
			if m := v.Map(); m != nil {
				for k := range m.Keys {
					j.elems[i] = append(j.elems[i], m.Keys[k], m.Values[k])
				}
			}
			n = max(n, len(j.elems[i])/2)
			continue
		case a.Kind == Multiset:
			if m := v.Map(); m != nil {
				for k := range m.Keys {
					for c := int64(0); c < m.Values[k].Int(); c++ {
						j.elems[i] = append(j.elems[i], m.Keys[k])
					}
				}
			}
		default:
			j.elems[i] = append(j.elems[i], v.Array()...)
		}
		n = max(n, len(j.elems[i]))
	}
	return n
}

func (j *join) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if j.out == nil {
		j.out = types.NewBatch(j.outWidth, max(b.Cap(), 1))
	}
	for i, r := range b.Rows {
		if err := j.args.Project(r, j.vals); err != nil {
			return err
		}
		n := j.collect()
		matched := false
		for e := 0; e < n; e++ {
			if j.out.Full() {
				if err := j.flush(out); err != nil {
					return err
				}
			}
			o := j.out.Append(b.Kinds[i])
			copy(o, r)
			c := j.spec.InWidth
			for a, arg := range j.spec.ArgKinds {
				el := j.elems[a]
				switch arg.Kind {
				case Map:
					if 2*e+1 < len(el) {
						o[c], o[c+1] = el[2*e], el[2*e+1]
					}
				case ArrayOfRows:
					if e < len(el) {
						copy(o[c:c+arg.Width], el[e].RowOf())
					}
				default:
					if e < len(el) {
						o[c] = el[e]
					}
				}
				c += arg.Width
			}
			if j.spec.Ordinality {
				o[c] = types.Int(int64(e + 1))
			}
			if j.cond != nil {
				ok, err := j.cond.Test(o)
				if err != nil {
					return err
				}
				if !ok {
					j.out.Truncate(j.out.Len() - 1)
					continue
				}
			}
			matched = true
		}
		if !matched && j.spec.LeftOuter {
			if j.out.Full() {
				if err := j.flush(out); err != nil {
					return err
				}
			}
			copy(j.out.Append(b.Kinds[i]), r)
		}
	}
	return j.flush(out)
}

func (j *join) flush(out exec.Output) error {
	if j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

func (j *join) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }
func (j *join) Finish(exec.Output) error                         { return nil }
func (j *join) Close() error                                     { return nil }

var _ exec.StatelessOperator = (*join)(nil)
