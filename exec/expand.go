package exec

import (
	"fmt"

	"github.com/flinksql/flinksql/types"
)

// ExpandSet is one grouping set of an Expand: the input columns it nulls
// (the grouping columns not in the set) and its grouping id.
type ExpandSet struct {
	Nulls []int
	ID    int64
}

// expand emits every input row once per grouping set, with the set's
// columns nulled and its id appended (Flink's Expand before the aggregate
// of GROUPING SETS, ROLLUP and CUBE). The row kind is kept, so an updating
// input expands into changes of every set's group.
type expand struct {
	base
	width int
	sets  []ExpandSet
	out   *types.Batch
}

// NewExpand returns the Expand operator over rows of width columns; its
// rows are width+1 wide, the last column the grouping id (BIGINT).
func NewExpand(width int, sets []ExpandSet) (Operator, error) {
	if len(sets) == 0 {
		return nil, fmt.Errorf("expand: no grouping set")
	}
	for _, s := range sets {
		for _, c := range s.Nulls {
			if c < 0 || c >= width {
				return nil, fmt.Errorf("expand: column %d out of range for a row of %d columns", c, width)
			}
		}
	}
	return &expand{width: width, sets: sets}, nil
}

// Stateless implements StatelessOperator: every row is expanded on its own;
// the output batch is scratch space, empty between calls.
func (*expand) Stateless() {}

func (e *expand) ProcessBatch(_ int, b *types.Batch, out Output) error {
	if e.out == nil {
		e.out = types.NewBatch(e.width+1, max(b.Cap(), len(e.sets)))
	}
	for i, r := range b.Rows {
		for _, s := range e.sets {
			if e.out.Full() {
				if err := e.flush(out); err != nil {
					return err
				}
			}
			o := e.out.Append(b.Kinds[i])
			copy(o, r)
			for _, c := range s.Nulls {
				o[c] = types.NullValue
			}
			o[e.width] = types.Int(s.ID)
		}
	}
	return e.flush(out)
}

func (e *expand) flush(out Output) error {
	if e.out.Len() == 0 {
		return nil
	}
	err := out.Push(e.out)
	e.out.Reset()
	return err
}

var _ StatelessOperator = (*expand)(nil)
