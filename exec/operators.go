package exec

import (
	"context"
	"errors"
	"sort"

	"github.com/flinksql/flinksql/sql/types"
)

// base gives operators no-op defaults for the lifecycle calls they do not
// need.
type base struct{}

func (base) Open(*OperatorContext) error { return nil }
func (base) Finish(Output) error         { return nil }
func (base) Close() error                { return nil }

// ProcessWatermark forwards the watermark unchanged.
func (base) ProcessWatermark(wm int64, out Output) error { return out.PushWatermark(wm) }

// identity passes everything through.
type identity struct{ base }

// NewIdentity returns an operator that passes rows and watermarks through
// unchanged, for example to merge several Inputs (UNION ALL).
func NewIdentity() Operator { return identity{} }

func (identity) ProcessBatch(_ int, b *types.Batch, out Output) error { return out.Push(b) }

// calc filters and projects rows.
type calc struct {
	base
	filter   Predicate
	project  Projector
	outWidth int
	out      *types.Batch
}

// NewCalc returns an operator that keeps the rows filter accepts (all when
// filter is nil) and maps them through project into rows of outWidth
// columns (unchanged when project is nil). Row kinds pass through;
// watermarks are forwarded.
func NewCalc(filter Predicate, project Projector, outWidth int) Operator {
	return &calc{filter: filter, project: project, outWidth: outWidth}
}

func (c *calc) ProcessBatch(_ int, b *types.Batch, out Output) error {
	if c.filter == nil && c.project == nil {
		return out.Push(b)
	}
	if c.out == nil {
		w := c.outWidth
		if c.project == nil {
			w = b.Width()
		}
		c.out = types.NewBatch(w, max(b.Cap(), 1))
	}
	ob := c.out
	for i, r := range b.Rows {
		if c.filter != nil {
			ok, err := c.filter.Test(r)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		}
		if ob.Full() {
			if err := out.Push(ob); err != nil {
				return err
			}
			ob.Reset()
		}
		if c.project == nil {
			ob.AppendRow(b.Kinds[i], r)
			continue
		}
		if err := c.project.Project(r, ob.Append(b.Kinds[i])); err != nil {
			return err
		}
	}
	if ob.Len() == 0 {
		return nil
	}
	err := out.Push(ob)
	ob.Reset()
	return err
}

// sink hands rows to a SinkWriter.
type sink struct {
	w   SinkWriter
	ctx context.Context
}

// NewSinkOperator returns the operator that writes its input to w: Open,
// Write per batch, Finish at end of input, Close. Watermarks end here.
func NewSinkOperator(w SinkWriter) Operator { return &sink{w: w} }

func (s *sink) Open(ctx *OperatorContext) error {
	s.ctx = ctx.Ctx
	return s.w.Open(s.ctx)
}

func (s *sink) ProcessBatch(_ int, b *types.Batch, _ Output) error { return s.w.Write(s.ctx, b) }
func (s *sink) ProcessWatermark(int64, Output) error               { return nil }
func (s *sink) Finish(Output) error                                { return s.w.Finish(s.ctx) }
func (s *sink) Close() error                                       { return s.w.Close() }

// SortKey is one ORDER BY column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// sortOp buffers its whole (bounded) input and emits it sorted at Finish.
type sortOp struct {
	keys          []SortKey
	offset, limit int

	width  int
	values []types.Value // buffered rows, width values each
	kinds  []types.RowKind
	order  []int
	wm     int64
}

// NewSort returns an operator that sorts its bounded input by keys (stable:
// ties keep arrival order) and emits rows [offset, offset+limit) at Finish;
// limit -1 means no limit. Watermarks are held back and the last one is
// emitted after the rows, so downstream event-time operators do not see the
// rows as late.
func NewSort(keys []SortKey, offset, limit int) Operator {
	return &sortOp{keys: keys, offset: offset, limit: limit, wm: MinWatermark}
}

func (s *sortOp) Open(*OperatorContext) error { return nil }
func (s *sortOp) Close() error                { s.values, s.kinds, s.order = nil, nil, nil; return nil }

func (s *sortOp) ProcessBatch(_ int, b *types.Batch, _ Output) error {
	if b.Len() == 0 {
		return nil
	}
	if s.width == 0 {
		s.width = b.Width()
	}
	if b.Width() != s.width {
		return errors.New("sort: input rows of different widths")
	}
	for i, r := range b.Rows {
		s.values = append(s.values, r...)
		s.kinds = append(s.kinds, b.Kinds[i])
	}
	return nil
}

func (s *sortOp) ProcessWatermark(wm int64, _ Output) error {
	s.wm = wm
	return nil
}

func (s *sortOp) row(i int) types.Row {
	return types.Row(s.values[i*s.width : (i+1)*s.width : (i+1)*s.width])
}

func (s *sortOp) compare(a, b types.Row) int {
	for _, k := range s.keys {
		va, vb := a[k.Col], b[k.Col]
		an, bn := va.IsNull(), vb.IsNull()
		switch {
		case an && bn:
			continue
		case an || bn:
			// NULL placement does not flip with DESC.
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

func (s *sortOp) Finish(out Output) error {
	n := len(s.kinds)
	s.order = make([]int, n)
	for i := range s.order {
		s.order[i] = i
	}
	sort.SliceStable(s.order, func(i, j int) bool {
		return s.compare(s.row(s.order[i]), s.row(s.order[j])) < 0
	})
	from := min(max(s.offset, 0), n)
	to := n
	if s.limit >= 0 && from+s.limit < to {
		to = from + s.limit
	}
	if from < to {
		ob := types.NewBatch(s.width, min(to-from, types.DefaultBatchSize))
		for _, idx := range s.order[from:to] {
			if ob.Full() {
				if err := out.Push(ob); err != nil {
					return err
				}
				ob.Reset()
			}
			ob.AppendRow(s.kinds[idx], s.row(idx))
		}
		if err := out.Push(ob); err != nil {
			return err
		}
	}
	if s.wm != MinWatermark {
		return out.PushWatermark(s.wm)
	}
	return nil
}

// limitOp passes rows [offset, offset+limit) of an insert-only stream.
type limitOp struct {
	base
	offset, limit int
	seen          int
	out           *types.Batch
}

// NewLimit returns a streaming operator that skips the first offset rows,
// passes the next limit rows (all when limit is -1) and drops the rest.
// Its input must be insert-only.
func NewLimit(offset, limit int) Operator {
	return &limitOp{offset: max(offset, 0), limit: limit}
}

func (l *limitOp) ProcessBatch(_ int, b *types.Batch, out Output) error {
	n := b.Len()
	end := -1 // the position after the last row to pass, -1 = unbounded
	if l.limit >= 0 {
		end = l.offset + l.limit
	}
	from := max(l.offset-l.seen, 0)
	to := n
	if end >= 0 {
		to = min(n, end-l.seen)
	}
	l.seen += n
	if from >= to {
		return nil
	}
	if from == 0 && to == n {
		return out.Push(b)
	}
	if l.out == nil {
		l.out = types.NewBatch(b.Width(), max(b.Cap(), 1))
	}
	l.out.Reset()
	for i := from; i < to; i++ {
		l.out.AppendRow(b.Kinds[i], b.Rows[i])
	}
	return out.Push(l.out)
}
