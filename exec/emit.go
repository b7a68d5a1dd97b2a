package exec

import "github.com/flinksql/flinksql/types"

// Emitter builds an operator's output in one reused batch: rows are
// appended in place, the batch is pushed when it is full and a row more is
// wanted, and by Flush. The operator families (group aggregate, window,
// rank, sort) share it so that each output row costs no allocation and
// every operator hands on batches of the same size.
type Emitter struct {
	b *types.Batch
}

// Init (re)makes the output batch for rows of width columns, holding up to
// capacity rows (types.DefaultBatchSize when capacity <= 0).
func (e *Emitter) Init(width, capacity int) {
	if capacity <= 0 {
		capacity = types.DefaultBatchSize
	}
	e.b = types.NewBatch(width, capacity)
}

// Ready reports whether Init was called.
func (e *Emitter) Ready() bool { return e.b != nil }

// Width is the width of the rows Init was called with.
func (e *Emitter) Width() int { return e.b.Width() }

// Row appends a row of kind for the caller to fill, pushing a full batch
// to out first. The row is valid until the next call.
func (e *Emitter) Row(kind types.RowKind, out Output) (types.Row, error) {
	if e.b.Full() {
		if err := e.Flush(out); err != nil {
			return nil, err
		}
	}
	return e.b.Append(kind), nil
}

// Copy appends a copy of r (as wide as the batch) with kind.
func (e *Emitter) Copy(kind types.RowKind, r types.Row, out Output) error {
	dst, err := e.Row(kind, out)
	if err != nil {
		return err
	}
	copy(dst, r)
	return nil
}

// Flush pushes the buffered rows, if any, to out and empties the batch,
// also when out fails.
func (e *Emitter) Flush(out Output) error {
	if e.b == nil || e.b.Len() == 0 {
		return nil
	}
	err := out.Push(e.b)
	e.b.Reset()
	return err
}

// CompareRows orders two rows by keys: -1, 0 or 1. NULLs sort first or
// last as each key's NullsFirst says, independently of Desc (Flink's
// NullsFirst/NullsLast ordering), and otherwise by types.Compare, reversed
// for Desc.
func CompareRows(keys []SortKey, a, b types.Row) int {
	for _, k := range keys {
		va, vb := a[k.Col], b[k.Col]
		an, bn := va.IsNull(), vb.IsNull()
		switch {
		case an && bn:
			continue
		case an || bn:
			if an == k.NullsFirst {
				return -1
			}
			return 1
		}
		c := types.Compare(va, vb)
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}
