package exec

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
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

// Stateless implements StatelessOperator.
func (identity) Stateless() {}

// dropUpdateBefore removes -U rows from a changelog.
type dropUpdateBefore struct {
	base
	out *types.Batch
}

// NewDropUpdateBefore returns an operator that passes every row but the -U
// rows (Flink's DropUpdateBefore): in front of a ChangelogNormalize keyed by
// a primary key, each +U carries the whole new row, so the -U is redundant.
func NewDropUpdateBefore() Operator { return &dropUpdateBefore{} }

// Stateless implements StatelessOperator.
func (*dropUpdateBefore) Stateless() {}

func (d *dropUpdateBefore) ProcessBatch(_ int, b *types.Batch, out Output) error {
	n := 0
	for _, k := range b.Kinds {
		if k == types.UpdateBefore {
			n++
		}
	}
	if n == 0 {
		return out.Push(b)
	}
	if n == b.Len() {
		return nil
	}
	if d.out == nil || d.out.Width() != b.Width() {
		d.out = types.NewBatch(b.Width(), max(b.Cap(), 1))
	}
	for i, r := range b.Rows {
		if k := b.Kinds[i]; k != types.UpdateBefore {
			d.out.AppendRow(k, r)
		}
	}
	err := out.Push(d.out)
	d.out.Reset()
	return err
}

// calc filters and projects rows.
type calc struct {
	base
	filter   Predicate
	project  Projector
	outWidth int
	out      *types.Batch
	wm       *int64 // the current watermark, when expressions read it
}

// NewCalc returns an operator that keeps the rows filter accepts (all when
// filter is nil) and maps them through project into rows of outWidth
// columns (unchanged when project is nil). Row kinds pass through;
// watermarks are forwarded.
func NewCalc(filter Predicate, project Projector, outWidth int) Operator {
	return &calc{filter: filter, project: project, outWidth: outWidth}
}

// NewWatermarkCalc is NewCalc for expressions that read the operator's
// current watermark (CURRENT_WATERMARK): *wm holds the latest watermark
// the operator received (MinWatermark before the first); the caller
// passes the same cell to the expressions' evaluation context.
func NewWatermarkCalc(filter Predicate, project Projector, outWidth int, wm *int64) Operator {
	*wm = MinWatermark
	return &calc{filter: filter, project: project, outWidth: outWidth, wm: wm}
}

func (c *calc) ProcessWatermark(wm int64, out Output) error {
	if c.wm != nil {
		*c.wm = wm
	}
	return out.PushWatermark(wm)
}

// Stateless implements StatelessOperator: the output batch is reused
// scratch space, empty between calls.
func (*calc) Stateless() {}

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

// SortKey is one ORDER BY column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// sortOp buffers its whole (bounded) input and emits it sorted at Finish.
//
// Its state is keyed state under one constant key (it runs as one subtask
// after a GLOBAL exchange, as Flink's sort-limit and limit do on a rank
// with an empty key): the rows in chunks of up to sortChunkBytes, by
// chunk number in arrival order, in a sorted map state, and the held-back
// watermark in a value state. Rows arriving are buffered decoded, as
// before, and written to the backend at each checkpoint (PrepareSnapshot).
// On hashmap, whose state is in memory anyway, the decoded rows stay (a
// restore decodes them at once, as before); on rocksdb they are dropped
// once written, and written back also whenever the buffer outgrows a
// quarter of the backend's memory budget, so that a long input waits on
// disk rather than in memory until Finish reads it back and sorts it. (Chunks rather than an entry per row: a row is
// only ever appended and read back once, at Finish, so a per-row entry
// would pay the backend's per-entry cost for nothing.)
type sortOp struct {
	keys          []SortKey
	offset, limit int

	width  int
	values []types.Value // buffered rows, width values each
	kinds  []types.RowKind
	// written counts the leading buffered rows already in the backend
	// (kept decoded on hashmap: keep).
	written int
	keep    bool
	order   []int
	wm      int64

	b        *kv.Backend
	chunks   *kv.SortedMapState[int64, []byte] // chunk number → ([kind][row])…
	heldWM   *kv.ValueState[int64]
	stored   int64 // chunks in the backend: numbers 0…stored-1
	storedWM int64 // the watermark in the backend
	bufBytes int64 // estimated memory of the buffered rows
	maxBuf   int64 // write the buffer back beyond this (0: only at checkpoints)
	enc      []byte
}

// NewSort returns an operator that sorts its bounded input by keys (stable:
// ties keep arrival order) and emits rows [offset, offset+limit) at Finish;
// limit -1 means no limit. Watermarks are held back and the last one is
// emitted after the rows, so downstream event-time operators do not see the
// rows as late. The buffered rows and the held-back watermark are keyed
// state, so a restored sort still sorts everything it was given.
func NewSort(keys []SortKey, offset, limit int) Operator {
	return &sortOp{keys: keys, offset: offset, limit: limit, wm: MinWatermark, storedWM: MinWatermark}
}

// sortChunkBytes bounds the encoded rows of one chunk of sortOp's state.
const sortChunkBytes = 256 << 10

// Keyed state names of sortOp and limitOp.
const (
	sortRowsState  = "sort/chunks"
	sortWMState    = "sort/wm"
	limitSeenState = "limit/seen"
)

// setConstantKey makes the one key of a global operator's state current:
// the first key group of the instance (all of them at parallelism 1).
func setConstantKey(b *kv.Backend) error {
	return b.SetCurrentKeyInGroup(b.KeyGroups().First, nil)
}

// OpenKeyedState implements KeyedOperator. A restored rocksdb backend's
// rows stay there until Finish; only the number of chunks and the rows'
// width are read. A hashmap backend's are decoded now.
func (s *sortOp) OpenKeyedState(b *kv.Backend) error {
	s.b = b
	var err error
	if s.chunks, err = kv.NewSortedMapState(b, sortRowsState, kv.Int64{}, kv.Bytes{}, kv.Options{}); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	if s.heldWM, err = kv.NewValueState(b, sortWMState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	s.keep = b.Kind() != image.RocksDB
	if !s.keep {
		s.maxBuf = b.MemoryBudget() / 4
	}
	if err := setConstantKey(b); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	last, v, ok, err := s.chunks.Last(nil)
	if err != nil {
		return fmt.Errorf("sort: reading the restored rows: %w", err)
	}
	if ok {
		_, row, _, err := decodeSortRow(v)
		if err != nil {
			return fmt.Errorf("sort: restored chunk %d: %w", last, err)
		}
		s.stored, s.width = last+1, len(row)
	}
	wm, ok, err := s.heldWM.Get(nil)
	if err != nil {
		return fmt.Errorf("sort: reading the restored watermark: %w", err)
	}
	if ok {
		s.wm, s.storedWM = wm, wm
	}
	if s.keep && s.stored > 0 {
		if s.values, s.kinds, err = s.decodeStored(); err != nil {
			return err
		}
		s.written = len(s.kinds)
	}
	return nil
}

// PrepareSnapshot implements KeyedOperator: the buffered rows and a
// changed watermark go to the backend.
func (s *sortOp) PrepareSnapshot(CheckpointID) error {
	if err := s.writeBack(); err != nil {
		return err
	}
	if s.wm != s.storedWM {
		if err := setConstantKey(s.b); err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		if err := s.heldWM.Put(nil, s.wm); err != nil {
			return fmt.Errorf("sort: writing the watermark: %w", err)
		}
		s.storedWM = s.wm
	}
	return nil
}

// writeBack writes the buffered rows not yet in the backend to it, in
// chunks numbered after the stored ones, and drops them from memory
// unless keep.
func (s *sortOp) writeBack() error {
	if len(s.kinds) == s.written {
		return nil
	}
	if err := setConstantKey(s.b); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	s.enc = s.enc[:0]
	for i := s.written; i < len(s.kinds); i++ {
		s.enc = types.AppendRow(append(s.enc, byte(s.kinds[i])), s.row(i))
		if len(s.enc) >= sortChunkBytes || i == len(s.kinds)-1 {
			if err := s.chunks.Put(nil, s.stored, s.enc); err != nil {
				return fmt.Errorf("sort: writing chunk %d: %w", s.stored, err)
			}
			s.stored++
			s.enc = s.enc[:0]
		}
	}
	if s.keep {
		s.written = len(s.kinds)
		return nil
	}
	clear(s.values)
	s.values, s.kinds, s.bufBytes, s.written = s.values[:0], s.kinds[:0], 0, 0
	return nil
}

// decodeSortRow decodes the first [kind][row] of v and returns the rest.
func decodeSortRow(v []byte) (types.RowKind, types.Row, []byte, error) {
	if len(v) < 1 {
		return 0, nil, nil, errors.New("empty row entry")
	}
	row, rest, err := types.DecodeRow(v[1:])
	return types.RowKind(v[0]), row, rest, err
}

func (s *sortOp) Open(*OperatorContext) error { return nil }
func (s *sortOp) Close() error                { s.values, s.kinds, s.order = nil, nil, nil; return nil }

// valueSize is the memory of one buffered value, strings' bytes aside.
const valueSize = int64(unsafe.Sizeof(types.Value{}))

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
		if s.maxBuf > 0 {
			s.bufBytes += int64(len(r)) * valueSize
			for _, v := range r {
				s.bufBytes += int64(len(v.S))
			}
		}
	}
	if s.maxBuf > 0 && s.bufBytes > s.maxBuf {
		return s.writeBack()
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

// loadStored puts the rows of a rocksdb backend, in arrival order, before
// the buffered ones (on hashmap they are in memory already).
func (s *sortOp) loadStored() error {
	if s.stored == 0 || s.keep {
		return nil
	}
	values, kinds, err := s.decodeStored()
	if err != nil {
		return err
	}
	s.values = append(values, s.values...)
	s.kinds = append(kinds, s.kinds...)
	return nil
}

// decodeStored decodes the rows of every stored chunk, in arrival order.
func (s *sortOp) decodeStored() ([]types.Value, []types.RowKind, error) {
	if err := setConstantKey(s.b); err != nil {
		return nil, nil, fmt.Errorf("sort: %w", err)
	}
	var values []types.Value
	var kinds []types.RowKind
	next := int64(0)
	var derr error
	err := s.chunks.Ascend(nil, nil, func(n int64, v []byte) bool {
		if n != next {
			derr = fmt.Errorf("sort: stored chunk %d out of sequence (have %d)", n, next)
			return false
		}
		for len(v) > 0 {
			kind, row, rest, err := decodeSortRow(v)
			if err != nil {
				derr = fmt.Errorf("sort: stored chunk %d: %w", n, err)
				return false
			}
			if len(row) != s.width {
				derr = errors.New("sort: stored rows of different widths")
				return false
			}
			values = append(values, row...)
			kinds = append(kinds, kind)
			v = rest
		}
		next++
		return true
	})
	if err == nil {
		err = derr
	}
	if err == nil && next != s.stored {
		err = fmt.Errorf("sort: the backend holds %d chunks, %d were stored", next, s.stored)
	}
	if err != nil {
		return nil, nil, err
	}
	return values, kinds, nil
}

// clearState empties the backend once Finish emitted everything: the rows
// and the watermark are no state any more.
func (s *sortOp) clearState() error {
	s.values, s.kinds, s.order, s.written = nil, nil, nil, 0
	if s.b == nil || (s.stored == 0 && s.storedWM == MinWatermark) {
		s.storedWM = s.wm
		return nil
	}
	if err := setConstantKey(s.b); err != nil {
		return fmt.Errorf("sort: %w", err)
	}
	if err := s.chunks.Clear(nil); err != nil {
		return fmt.Errorf("sort: clearing the emitted rows: %w", err)
	}
	if err := s.heldWM.Clear(nil); err != nil {
		return fmt.Errorf("sort: clearing the watermark: %w", err)
	}
	s.stored, s.storedWM, s.written = 0, s.wm, 0
	return nil
}

func (s *sortOp) Finish(out Output) error {
	if err := s.loadStored(); err != nil {
		return err
	}
	n := len(s.kinds)
	s.order = make([]int, n)
	for i := range s.order {
		s.order[i] = i
	}
	sort.SliceStable(s.order, func(i, j int) bool {
		return CompareRows(s.keys, s.row(s.order[i]), s.row(s.order[j])) < 0
	})
	from := min(max(s.offset, 0), n)
	to := n
	if s.limit >= 0 && from+s.limit < to {
		to = from + s.limit
	}
	if from < to {
		var em Emitter
		em.Init(s.width, min(to-from, types.DefaultBatchSize))
		for _, idx := range s.order[from:to] {
			if err := em.Copy(s.kinds[idx], s.row(idx), out); err != nil {
				return err
			}
		}
		if err := em.Flush(out); err != nil {
			return err
		}
	}
	// The rows are out: nothing of them is left to checkpoint.
	if err := s.clearState(); err != nil {
		return err
	}
	if s.wm != MinWatermark {
		return out.PushWatermark(s.wm)
	}
	return nil
}

// limitOp passes rows [offset, offset+limit) of an insert-only stream. How
// many rows it has seen is its keyed state, under one constant key (it runs
// as one subtask after a GLOBAL exchange), kept decoded in seen and
// written back at each checkpoint.
type limitOp struct {
	base
	offset, limit int
	seen          int
	stored        int // seen, as in the backend
	b             *kv.Backend
	seenState     *kv.ValueState[int64]
	out           *types.Batch
}

// NewLimit returns a streaming operator that skips the first offset rows,
// passes the next limit rows (all when limit is -1) and drops the rest.
// Its input must be insert-only. How many rows it has seen is keyed state,
// so after a restore it passes exactly the rows it still owes.
func NewLimit(offset, limit int) Operator {
	return &limitOp{offset: max(offset, 0), limit: limit}
}

// OpenKeyedState implements KeyedOperator.
func (l *limitOp) OpenKeyedState(b *kv.Backend) error {
	l.b = b
	var err error
	if l.seenState, err = kv.NewValueState(b, limitSeenState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	if err := setConstantKey(b); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	n, _, err := l.seenState.Get(nil)
	if err != nil {
		return fmt.Errorf("limit: reading the restored count: %w", err)
	}
	l.seen, l.stored = int(n), int(n)
	return nil
}

// PrepareSnapshot implements KeyedOperator.
func (l *limitOp) PrepareSnapshot(CheckpointID) error {
	if l.seen == l.stored {
		return nil
	}
	if err := setConstantKey(l.b); err != nil {
		return fmt.Errorf("limit: %w", err)
	}
	if err := l.seenState.Put(nil, int64(l.seen)); err != nil {
		return fmt.Errorf("limit: writing the count: %w", err)
	}
	l.stored = l.seen
	return nil
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

var (
	_ KeyedOperator     = (*sortOp)(nil)
	_ KeyedOperator     = (*limitOp)(nil)
	_ StatelessOperator = identity{}
	_ StatelessOperator = (*calc)(nil)
)
