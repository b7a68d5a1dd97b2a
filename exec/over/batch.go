package over

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Batch OVER aggregation (batch runtime mode): Flink's sort-based OVER. The
// rows of each partition wait in keyed state until the end of input; then
// every partition is sorted by the ORDER BY keys and each row is emitted
// with the values of its frame, which may reach FOLLOWING rows, and of the
// ranking and offset functions. Unlike the streaming operator, the order
// may be any columns, ascending or descending, and there may be none (then
// every row of the partition is a peer of every other).

// BoundKind is the kind of a frame bound.
type BoundKind uint8

const (
	UnboundedPreceding BoundKind = iota
	Preceding
	CurrentRow
	Following
	UnboundedFollowing
)

// Bound is one end of a frame. Offset is a row count for ROWS frames and,
// for RANGE frames, a distance in the order key's units (milliseconds for
// timestamps).
type Bound struct {
	Kind   BoundKind
	Offset int64
}

// Frame is a ROWS or RANGE frame. A RANGE frame with an offset needs one
// order key, an integer or a timestamp.
type Frame struct {
	Rows       bool
	Start, End Bound
}

// Func is a ranking or offset function: ROW_NUMBER, RANK, DENSE_RANK,
// CUME_DIST, PERCENT_RANK, NTILE (Offset buckets), LAG, LEAD (ArgCol the
// value, DefCol the default or -1, Offset rows).
// Their frame is the partition, not Frame.
type Func struct {
	Name   string
	ArgCol int
	DefCol int
	Offset int
}

// BatchSpec describes a batch OVER aggregation.
type BatchSpec struct {
	KeyCols []int
	Order   []exec.SortKey
	Frame   Frame
	// Aggs are the aggregate functions over Frame; it must support Retract
	// when the frame's start is not UNBOUNDED PRECEDING.
	Aggs  exec.AggsHandle
	Funcs []Func
	// Slots orders the appended columns: Slots[i] >= 0 is that aggregate
	// of Aggs, < 0 is Funcs[-Slots[i]-1].
	Slots []int
}

// Keyed state of the batch operator: the partition's rows per PARTITION
// BY key, and the held-back watermark and the next arrival number (under
// the first key group's empty key). On rocksdb the rows are a map from
// arrival number to encoded row, one entry per row, so that buffering
// costs the same per row however large a partition grows (appending to one
// list value would rewrite it on disk); on hashmap, whose values are in
// memory and appended to in place, they are one list per key, which is
// several times cheaper there (BENCHMARKS.md). Either way Entries visits a
// key's rows consecutively and in arrival order, so ties keep it.
const (
	batchRowsState = "over.batch.rows"
	batchWMState   = "over.batch.wm"
	batchSeqState  = "over.batch.seq"
)

type batchOp struct {
	spec     BatchSpec
	b        *kv.Backend
	rows     *kv.MapState[int64, []byte] // rocksdb
	list     *kv.ListState[[]byte]       // hashmap
	useList  bool
	heldWM   *kv.ValueState[int64]
	seqState *kv.ValueState[int64]
	wm       int64
	seq      int64 // the next row's arrival number
	width    int
	curKey   []byte // Finish: the partition being collected
	curGroup int

	keyBuf []byte
	rowBuf []byte

	// Finish's per-partition scratch.
	part  []types.Row
	slab  []types.Value
	order []int
	peerS []int // first row of each row's peer group
	peerE []int // one past its last
	acc   []types.Value
	res   []types.Value
	em    exec.Emitter
}

// NewBatch returns the batch OVER operator for spec. Its input must be
// insert-only and hash partitioned by the PARTITION BY columns (or GLOBAL
// without them); its output is insert-only, at end of input.
func NewBatch(spec BatchSpec) (exec.Operator, error) {
	if spec.Aggs == nil {
		return nil, errors.New("batch over aggregate: no aggregate handle")
	}
	if len(spec.Slots) != spec.Aggs.NumAggs()+len(spec.Funcs) {
		return nil, fmt.Errorf("batch over aggregate: %d output slots for %d aggregates and %d functions", len(spec.Slots), spec.Aggs.NumAggs(), len(spec.Funcs))
	}
	fr := spec.Frame
	if !fr.Rows && (fr.Start.Kind == Preceding || fr.Start.Kind == Following || fr.End.Kind == Preceding || fr.End.Kind == Following) && len(spec.Order) != 1 {
		return nil, errors.New("batch over aggregate: a RANGE frame with an offset needs exactly one ORDER BY key")
	}
	for _, f := range spec.Funcs {
		switch f.Name {
		case "ROW_NUMBER", "RANK", "DENSE_RANK", "LAG", "LEAD", "CUME_DIST", "PERCENT_RANK":
		case "NTILE":
			if f.Offset <= 0 {
				return nil, fmt.Errorf("batch over aggregate: NTILE of %d buckets", f.Offset)
			}
		default:
			return nil, fmt.Errorf("batch over aggregate: unknown function %s", f.Name)
		}
	}
	return &batchOp{spec: spec, wm: exec.MinWatermark}, nil
}

// OpenKeyedState implements exec.KeyedOperator. The rows are written to
// the backend as they arrive, so a snapshot (batch mode takes none; the
// operator is checkpointable all the same) only adds the watermark.
func (o *batchOp) OpenKeyedState(b *kv.Backend) error {
	o.b = b
	var err error
	o.useList = b.Kind() != image.RocksDB
	if o.useList {
		o.list, err = kv.NewListState(b, batchRowsState, kv.Bytes{}, kv.Options{})
	} else {
		o.rows, err = kv.NewMapState(b, batchRowsState, kv.Int64{}, kv.Bytes{}, kv.Options{})
	}
	if err != nil {
		return fmt.Errorf("batch over aggregate: %w", err)
	}
	if o.seqState, err = kv.NewValueState(b, batchSeqState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("batch over aggregate: %w", err)
	}
	if o.heldWM, err = kv.NewValueState(b, batchWMState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("batch over aggregate: %w", err)
	}
	if err := b.SetCurrentKeyInGroup(b.KeyGroups().First, nil); err != nil {
		return fmt.Errorf("batch over aggregate: %w", err)
	}
	wm, ok, err := o.heldWM.Get(nil)
	if err != nil {
		return fmt.Errorf("batch over aggregate: reading the restored watermark: %w", err)
	}
	if ok {
		o.wm = wm
	}
	if o.seq, _, err = o.seqState.Get(nil); err != nil {
		return fmt.Errorf("batch over aggregate: reading the restored arrival number: %w", err)
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator.
func (o *batchOp) PrepareSnapshot(exec.CheckpointID) error {
	if err := o.b.SetCurrentKeyInGroup(o.b.KeyGroups().First, nil); err != nil {
		return fmt.Errorf("batch over aggregate: %w", err)
	}
	if err := o.seqState.Put(nil, o.seq); err != nil {
		return fmt.Errorf("batch over aggregate: writing the arrival number: %w", err)
	}
	if o.wm == exec.MinWatermark {
		return nil
	}
	if err := o.heldWM.Put(nil, o.wm); err != nil {
		return fmt.Errorf("batch over aggregate: writing the watermark: %w", err)
	}
	return nil
}

func (o *batchOp) Open(*exec.OperatorContext) error { return nil }
func (o *batchOp) Close() error                     { o.part, o.slab = nil, nil; return nil }

func (o *batchOp) ProcessBatch(_ int, b *types.Batch, _ exec.Output) error {
	for i, r := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("batch over aggregate: input row of kind %v; the input must be insert-only", k)
		}
		o.keyBuf = o.keyBuf[:0]
		for _, c := range o.spec.KeyCols {
			o.keyBuf = types.AppendValue(o.keyBuf, r[c])
		}
		if err := o.b.SetCurrentKey(types.HashColumns(r, o.spec.KeyCols), o.keyBuf); err != nil {
			return fmt.Errorf("batch over aggregate: %w", err)
		}
		o.rowBuf = types.AppendRow(o.rowBuf[:0], r)
		var err error
		if o.useList {
			err = o.list.Add(nil, o.rowBuf)
		} else {
			err = o.rows.Put(nil, o.seq, o.rowBuf)
		}
		if err != nil {
			return fmt.Errorf("batch over aggregate: %w", err)
		}
		o.seq++
	}
	return nil
}

func (o *batchOp) ProcessWatermark(wm int64, _ exec.Output) error {
	o.wm = wm
	return nil
}

// Finish sorts and evaluates one partition at a time, as Entries visits
// the stored keys (a key's rows are consecutive entries, in arrival
// order): only one partition's rows are decoded in memory.
func (o *batchOp) Finish(out exec.Output) error {
	clear(o.slab)
	o.part, o.slab, o.curKey, o.curGroup = o.part[:0], o.slab[:0], o.curKey[:0], -1
	err := o.b.Entries(o.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != batchRowsState {
			return nil
		}
		if e.KeyGroup != o.curGroup || !bytes.Equal(e.Key, o.curKey) {
			if err := o.flushPartition(out); err != nil {
				return err
			}
			o.curKey, o.curGroup = append(o.curKey[:0], e.Key...), e.KeyGroup
		}
		if !o.useList {
			return o.decodeRow(e.Value)
		}
		for rest := e.Value; len(rest) > 0; {
			n, w := binary.Uvarint(rest)
			if w <= 0 || n > uint64(len(rest)-w) {
				return errors.New("batch over aggregate: stored rows: bad element length")
			}
			if err := o.decodeRow(rest[w : w+int(n)]); err != nil {
				return err
			}
			rest = rest[w+int(n):]
		}
		return nil
	})
	if err == nil {
		err = o.flushPartition(out)
	}
	if err != nil {
		return err
	}
	if err := o.em.Flush(out); err != nil {
		return err
	}
	if o.wm != exec.MinWatermark {
		return out.PushWatermark(o.wm)
	}
	return nil
}

// flushPartition evaluates the collected partition and empties it.
func (o *batchOp) flushPartition(out exec.Output) error {
	if len(o.slab) == 0 {
		return nil
	}
	for i := 0; i < len(o.slab); i += o.width {
		o.part = append(o.part, types.Row(o.slab[i:i+o.width:i+o.width]))
	}
	err := o.evaluate(out)
	clear(o.slab)
	o.part, o.slab = o.part[:0], o.slab[:0]
	return err
}

// decodeRow appends a stored row (AppendRow's encoding: a count, then
// the values) to the slab: no row is allocated.
func (o *batchOp) decodeRow(elem []byte) error {
	cols, w := binary.Uvarint(elem)
	if w <= 0 {
		return errors.New("batch over aggregate: stored row: bad column count")
	}
	if o.width == 0 {
		o.width = int(cols)
	}
	if int(cols) != o.width {
		return errors.New("batch over aggregate: stored rows of different widths")
	}
	elem = elem[w:]
	for range cols {
		var v types.Value
		var err error
		if v, elem, err = types.DecodeValue(elem); err != nil {
			return fmt.Errorf("batch over aggregate: stored row: %w", err)
		}
		o.slab = append(o.slab, v)
	}
	return nil
}

func (o *batchOp) evaluate(out exec.Output) error {
	n := len(o.part)
	if n == 0 {
		return nil
	}
	keys := o.spec.Order
	o.order = o.order[:0]
	for i := range n {
		o.order = append(o.order, i)
	}
	slices.SortStableFunc(o.order, func(a, b int) int { return exec.CompareRows(keys, o.part[a], o.part[b]) })
	rows := o.part
	at := func(i int) types.Row { return rows[o.order[i]] }
	// Peer groups: rows with equal order keys.
	o.peerS, o.peerE = grow(o.peerS, n), grow(o.peerE, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && exec.CompareRows(keys, at(i), at(j)) == 0 {
			j++
		}
		for k := i; k < j; k++ {
			o.peerS[k], o.peerE[k] = i, j
		}
		i = j
	}
	h := o.spec.Aggs
	if !o.em.Ready() {
		o.em.Init(o.width+len(o.spec.Slots), 0)
		o.acc = make([]types.Value, h.AccWidth())
		o.res = make([]types.Value, h.NumAggs())
	}
	h.Init(o.acc)
	aLo, aHi := 0, 0 // the rows in acc: [aLo, aHi)
	denseRank := 0
	for i := range n {
		if o.peerS[i] == i {
			denseRank++
		}
		lo, hi, err := o.frame(i, n, at)
		if err != nil {
			return err
		}
		if h.NumAggs() > 0 {
			if lo >= aHi || lo < aLo {
				h.Init(o.acc)
				aLo, aHi = lo, lo
			}
			for ; aHi < hi; aHi++ {
				if err := h.Accumulate(o.acc, at(aHi)); err != nil {
					return fmt.Errorf("batch over aggregate: %w", err)
				}
			}
			for ; aLo < lo && aLo < aHi; aLo++ {
				if err := h.Retract(o.acc, at(aLo)); err != nil {
					return fmt.Errorf("batch over aggregate: %w", err)
				}
			}
			if err := h.Result(o.acc, o.res); err != nil {
				return fmt.Errorf("batch over aggregate: %w", err)
			}
		}
		dst, err := o.em.Row(types.Insert, out)
		if err != nil {
			return err
		}
		r := at(i)
		copy(dst, r)
		for j, s := range o.spec.Slots {
			v := &dst[o.width+j]
			if s >= 0 {
				*v = o.res[s]
				continue
			}
			f := o.spec.Funcs[-s-1]
			switch f.Name {
			case "ROW_NUMBER":
				*v = types.Int(int64(i + 1))
			case "RANK":
				*v = types.Int(int64(o.peerS[i] + 1))
			case "DENSE_RANK":
				*v = types.Int(int64(denseRank))
			case "PERCENT_RANK":
				// (rank - 1) / (rows - 1); 0 for a one-row partition.
				pr := 0.0
				if n > 1 {
					pr = float64(o.peerS[i]) / float64(n-1)
				}
				*v = types.Float(pr)
			case "CUME_DIST":
				// The rows up to the current one's last peer, of all.
				*v = types.Float(float64(o.peerE[i]) / float64(n))
			case "NTILE":
				*v = types.Int(ntile(i, n, f.Offset))
			case "LAG", "LEAD":
				k := i - f.Offset
				if f.Name == "LEAD" {
					k = i + f.Offset
				}
				switch {
				case k >= 0 && k < n:
					*v = at(k)[f.ArgCol]
				case f.DefCol >= 0:
					*v = r[f.DefCol]
				default:
					*v = types.NullValue
				}
			}
		}
	}
	return nil
}

func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// frame returns the frame of sorted row i as [lo, hi) (lo >= hi: empty).
func (o *batchOp) frame(i, n int, at func(int) types.Row) (lo, hi int, err error) {
	fr := o.spec.Frame
	if lo, err = o.bound(fr.Start, i, n, at, true); err != nil {
		return 0, 0, err
	}
	if hi, err = o.bound(fr.End, i, n, at, false); err != nil {
		return 0, 0, err
	}
	return max(lo, 0), min(hi, n), nil
}

// bound is where the frame starts (start: its first row) or ends (one
// past its last row) for sorted row i.
func (o *batchOp) bound(b Bound, i, n int, at func(int) types.Row, start bool) (int, error) {
	switch b.Kind {
	case UnboundedPreceding:
		return 0, nil
	case UnboundedFollowing:
		return n, nil
	}
	if o.spec.Frame.Rows {
		off := int(min(b.Offset, int64(n)))
		p := i
		switch b.Kind {
		case Preceding:
			p = i - off
		case Following:
			p = i + off
		}
		if start {
			return p, nil
		}
		return p + 1, nil
	}
	if b.Kind == CurrentRow || at(i)[o.spec.Order[0].Col].IsNull() {
		// A NULL key's rows are only their own peers' range.
		if start {
			return o.peerS[i], nil
		}
		return o.peerE[i], nil
	}
	// RANGE with an offset on one key. Along the sort order the key moves
	// in one direction; v(j) = dir·key(j) grows with j over the non-NULL
	// rows.
	k := o.spec.Order[0]
	dir := int64(1)
	if k.Desc {
		dir = -1
	}
	v := func(j int) (int64, bool) {
		x := at(j)[k.Col]
		if x.IsNull() {
			return 0, false
		}
		if x.K != types.KindInt && x.K != types.KindTimestamp {
			return 0, false
		}
		return dir * x.N, true
	}
	cur, ok := v(i)
	if !ok {
		return 0, fmt.Errorf("batch over aggregate: a RANGE frame with an offset needs an integer or timestamp order key, got %v", at(i)[k.Col])
	}
	target := satAdd(cur, b.Offset)
	if b.Kind == Preceding {
		target = satAdd(cur, -b.Offset)
	}
	// The non-NULL rows are one run: [nn0, nn1).
	nn0, nn1 := 0, n
	if k.NullsFirst {
		for nn0 < n && at(nn0)[k.Col].IsNull() {
			nn0++
		}
	} else {
		for nn1 > 0 && at(nn1 - 1)[k.Col].IsNull() {
			nn1--
		}
	}
	if start {
		// The first row with v >= target.
		j, _ := slices.BinarySearchFunc(o.order[nn0:nn1], target, func(idx int, t int64) int {
			x := dir * o.part[idx][k.Col].N
			switch {
			case x < t:
				return -1
			}
			return 1
		})
		return nn0 + j, nil
	}
	// One past the last row with v <= target.
	j, _ := slices.BinarySearchFunc(o.order[nn0:nn1], target, func(idx int, t int64) int {
		x := dir * o.part[idx][k.Col].N
		if x <= t {
			return -1
		}
		return 1
	})
	return nn0 + j, nil
}

func satAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

// ntile is the bucket (1…k) of sorted row i of n: k buckets whose sizes
// differ by at most one, the larger ones first.
func ntile(i, n, k int) int64 {
	if k >= n {
		return int64(i + 1)
	}
	q, r := n/k, n%k
	big := r * (q + 1) // the rows of the r buckets of q+1 rows
	if i < big {
		return int64(i/(q+1) + 1)
	}
	return int64(r + (i-big)/q + 1)
}
