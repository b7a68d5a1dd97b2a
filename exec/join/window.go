package join

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/bloom"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// WindowSpec describes a window join: two insert-only streams of window
// table function rows joined per window (equal window_start and
// window_end) and key.
type WindowSpec struct {
	Type        Type
	Left, Right Side // Width and Keys (the join keys besides the window)
	NullSafe    []bool
	// LeftEndCol and RightEndCol are the window_end columns (TIMESTAMP:
	// epoch milliseconds of UTC wall-clock time, or of the local wall-clock
	// time of Loc when the windows are over a TIMESTAMP_LTZ attribute).
	LeftEndCol, RightEndCol int
	Residual                exec.Predicate
	// Loc, when not nil, is the session time zone of windows over a
	// TIMESTAMP_LTZ attribute: a window fires when the watermark reaches
	// the instant of its last local millisecond (tz.Zone.FireTime, as the
	// window aggregate does).
	Loc *time.Location
}

// NewWindow returns the window join operator (Flink's WindowJoinOperator).
// Rows are kept per key and window until the watermark reaches the
// window's end - 1 ms; then the window's rows of both sides are joined and
// forgotten: inner pairs, and on an outer join the rows of the outer
// side(s) without a match, padded with NULLs; a semi (anti) join emits
// the left rows with (without) a match. A row of a window that has
// already fired is late: it is dropped and counted. The output is
// insert-only and the watermark passes unchanged.
func NewWindow(spec WindowSpec) (exec.Operator, error) {
	if len(spec.Left.Keys) != len(spec.Right.Keys) {
		return nil, fmt.Errorf("window join: %d left key columns but %d right ones", len(spec.Left.Keys), len(spec.Right.Keys))
	}
	for i, s := range []Side{spec.Left, spec.Right} {
		end := spec.LeftEndCol
		if i == 1 {
			end = spec.RightEndCol
		}
		for _, c := range append(append([]int(nil), s.Keys...), end) {
			if c < 0 || c >= s.Width {
				return nil, fmt.Errorf("window join: column %d out of range for an input of width %d", c, s.Width)
			}
		}
	}
	j := &windowJoin{spec: spec, wm: exec.MinWatermark, nextDue: minInt64, zone: tz.New(spec.Loc)}
	j.widths = [2]int{spec.Left.Width, spec.Right.Width}
	j.keys = [2][]int{spec.Left.Keys, spec.Right.Keys}
	j.ends = [2]int{spec.LeftEndCol, spec.RightEndCol}
	return j, nil
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

// Window join state: per side, a map under the join key and the window
// (namespace: 8-byte window end) from row bytes to copies; and an index of
// the windows to fire, per key group under timerKey: [8-byte window end,
// order-preserving][join key] → nothing.
type windowJoin struct {
	spec   WindowSpec
	b      *kv.Backend
	ctx    *exec.OperatorContext
	rows   [2]*kv.MapState[[]byte, []byte]
	timers *kv.SortedMapState[[]byte, []byte]
	widths [2]int
	keys   [2][]int
	ends   [2]int

	wm      int64
	kept    keptWatermark // the watermark at the last checkpoint
	nextDue int64         // lower bound of the earliest window end in the index; minInt64: unknown
	zone    tz.Zone       // of spec.Loc: window ends to the instants they fire at

	out    *types.Batch
	joined types.Row
	keyBuf []byte
	nsBuf  []byte
	ukBuf  []byte
	tkBuf  []byte
	valBuf []byte

	// rowFilters, after a fresh start on rocksdb, hold per side and window
	// end the hashes (rowSeed) of the rows added to that window: adding a
	// row reads its count first, and for a row never stored (nearly every
	// row of a window aggregate's output) that read is a Pebble lookup of
	// a missing key. A window without a filter (one more than
	// maxRowFilters, or any after a restore) reads.
	rowFilters  [2]map[int64]*bloom.Filter
	liveFilters [2]int
	filterBytes int64
	rowSeed     maphash.Seed

	due     []dueTimer
	dueKeys []byte
	// the rows of one window of each side, decoded, with copies expanded
	sideRows [2][]types.Value
	matched  []bool
}

var _ exec.KeyedOperator = (*windowJoin)(nil)

func (j *windowJoin) OpenKeyedState(b *kv.Backend) error {
	var err error
	for i, name := range []string{"left", "right"} {
		if j.rows[i], err = kv.NewMapState[[]byte, []byte](b, name, stateCodec{"join.window.row/1"}, stateCodec{"join.window.count/1"}, kv.Options{}); err != nil {
			return fmt.Errorf("window join: %w", err)
		}
	}
	if j.timers, err = kv.NewSortedMapState[[]byte, []byte](b, "windows", orderedCodec{stateCodec{"join.window.end-key/1"}}, stateCodec{"empty"}, kv.Options{}); err != nil {
		return fmt.Errorf("window join: %w", err)
	}
	j.b = b
	if j.kept, err = openKeptWatermark(b); err != nil {
		return fmt.Errorf("window join: %w", err)
	}
	j.wm = j.kept.saved
	j.rowFilters = [2]map[int64]*bloom.Filter{}
	if b.Kind() == image.RocksDB {
		fresh, err := statecache.Empty(b)
		if err != nil {
			return fmt.Errorf("window join: %w", err)
		}
		if fresh {
			j.rowFilters = [2]map[int64]*bloom.Filter{{}, {}}
			j.filterBytes, j.rowSeed = b.MemoryBudget()/128, maphash.MakeSeed()
		}
	}
	return nil
}

// maxRowFilters bounds the windows per side with a row filter: with
// filterBytes a 128th of the budget each, all of them take at most a
// sixteenth of it.
const maxRowFilters = 4

// rowFilter returns the filter of side input's window end; nil when the
// window has none. A window gets one on its first row while the side has
// fewer than maxRowFilters; one whose first row found none keeps none
// (a nil entry), since its rows were stored unfiltered and a filter made
// later would not know them.
func (j *windowJoin) rowFilter(input int, end int64) *bloom.Filter {
	fs := j.rowFilters[input]
	if fs == nil {
		return nil
	}
	if f, ok := fs[end]; ok {
		return f
	}
	var f *bloom.Filter
	if j.liveFilters[input] < maxRowFilters {
		f = bloom.New(j.filterBytes)
		j.liveFilters[input]++
	}
	fs[end] = f
	return f
}

// dropRowFilters forgets the windows fired at wm.
func (j *windowJoin) dropRowFilters(wm int64) {
	for i, fs := range j.rowFilters {
		for end, f := range fs {
			if j.fired(end, wm) {
				if f != nil {
					j.liveFilters[i]--
				}
				delete(fs, end)
			}
		}
	}
}

// PrepareSnapshot implements exec.KeyedOperator: rows and windows are in
// the backend; the watermark is written when it moved.
func (j *windowJoin) PrepareSnapshot(exec.CheckpointID) error {
	if err := j.kept.save(j.wm); err != nil {
		return fmt.Errorf("window join: %w", err)
	}
	return nil
}

func (j *windowJoin) Open(ctx *exec.OperatorContext) error {
	if j.b == nil {
		return fmt.Errorf("window join: opened without its keyed state backend")
	}
	j.ctx = ctx
	w := j.widths[0] + j.widths[1]
	j.joined = make(types.Row, w)
	if j.spec.Type.semiAnti() {
		w = j.widths[0]
	}
	j.out = types.NewBatch(w, 0)
	return nil
}

func (j *windowJoin) Finish(exec.Output) error { return nil }
func (j *windowJoin) Close() error             { return nil }

func (j *windowJoin) flush(out exec.Output) error {
	if j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

func (j *windowJoin) emit(l, r types.Row, out exec.Output) error {
	row := j.out.Append(types.Insert)
	copy(row, l)
	if !j.spec.Type.semiAnti() {
		copy(row[j.widths[0]:], r)
	}
	if j.out.Full() {
		return j.flush(out)
	}
	return nil
}

func (j *windowJoin) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	if input != 0 && input != 1 {
		return fmt.Errorf("window join: no input %d", input)
	}
	if b.Len() > 0 && b.Width() != j.widths[input] {
		return fmt.Errorf("window join: input %d rows have %d columns, want %d", input, b.Width(), j.widths[input])
	}
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("window join: the inputs must be insert-only, got a %s row", k)
		}
		if err := j.add(input, row); err != nil {
			return err
		}
	}
	return nil
}

func (j *windowJoin) add(input int, row types.Row) error {
	endV := row[j.ends[input]]
	if endV.K == types.KindNull {
		return fmt.Errorf("window join: a row without window_end")
	}
	end := endV.N
	if j.fired(end, j.wm) {
		if j.ctx != nil && j.ctx.Metrics != nil {
			j.ctx.Metrics.LateRowsDropped.Add(1)
		}
		return nil
	}
	nullKey := hasNullKey(row, j.keys[input], j.spec.NullSafe)
	// A row of an outer side, or a left row of an anti join, shows
	// without a match.
	outerSide := (input == 0 && (j.spec.Type.leftOuter() || j.spec.Type == Anti)) || (input == 1 && j.spec.Type.rightOuter())
	if nullKey && !outerSide {
		return nil // matches nothing, shown nowhere
	}
	hash := types.HashColumns(row, j.keys[input])
	j.keyBuf = appendKey(j.keyBuf[:0], row, j.keys[input])
	if nullKey {
		// Kept apart from real keys and from the other side's NULL keys
		// (an encoded key never ends in 0xFF, 0 or 1): it never matches.
		j.keyBuf = append(j.keyBuf, 0xFF, byte(input))
	}
	if err := j.b.SetCurrentKey(hash, j.keyBuf); err != nil {
		return fmt.Errorf("window join: %w", err)
	}
	j.nsBuf = binary.BigEndian.AppendUint64(j.nsBuf[:0], uint64(end))
	j.ukBuf = types.AppendRow(j.ukBuf[:0], row)
	var v []byte
	ok := false
	f := j.rowFilter(input, end)
	h := uint64(0)
	if f != nil {
		h = maphash.Bytes(j.rowSeed, j.ukBuf)
	}
	if f == nil || f.MayContain(h) {
		var err error
		if v, ok, err = j.rows[input].Get(j.nsBuf, j.ukBuf); err != nil {
			return err
		}
	}
	if f != nil {
		f.Add(h)
	}
	var n uint64
	if ok {
		c, w := binary.Uvarint(v)
		if w <= 0 {
			return fmt.Errorf("window join: corrupt state: bad row count")
		}
		n = c
	}
	j.valBuf = binary.AppendUvarint(j.valBuf[:0], n+1)
	if err := j.rows[input].Put(j.nsBuf, j.ukBuf, j.valBuf); err != nil {
		return err
	}
	if ok {
		return nil // the window is indexed already
	}
	kg := kv.KeyGroupOf(hash, j.b.MaxParallelism())
	if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
		return err
	}
	j.tkBuf = appendTime(j.tkBuf[:0], end)
	j.tkBuf = append(j.tkBuf, j.keyBuf...)
	if err := j.timers.Put(nil, j.tkBuf, nil); err != nil {
		return err
	}
	if j.nextDue != minInt64 && end < j.nextDue {
		j.nextDue = end
	}
	return nil
}

func (j *windowJoin) ProcessWatermark(wm int64, out exec.Output) error {
	j.wm = wm
	if err := j.fire(wm, out); err != nil {
		return err
	}
	j.dropRowFilters(wm)
	if err := j.flush(out); err != nil {
		return err
	}
	return out.PushWatermark(wm)
}

// fired says whether the window ending at end has fired at watermark wm:
// wm reached its last millisecond (in the session zone's instants for a
// local window end).
func (j *windowJoin) fired(end, wm int64) bool {
	return wm != exec.MinWatermark && j.zone.FireTime(end-1) <= wm
}

// mayFire says whether the window ending at end, or one ending later, may
// have fired at wm: the index is in order of window end, which is the
// order of firing except in a zone whose transitions are not whole hours
// (tz.Zone.FireOrdered), where a later window can fire first, though never
// more than tz.MaxFireLead before its local end.
func (j *windowJoin) mayFire(end, wm int64) bool {
	if j.fired(end, wm) {
		return true
	}
	return wm != exec.MinWatermark && !j.zone.FireOrdered() && end-1-tz.MaxFireLead <= wm
}

// fire joins and clears every window whose end - 1 is at most wm.
func (j *windowJoin) fire(wm int64, out exec.Output) error {
	if j.nextDue != minInt64 && !j.mayFire(j.nextDue, wm) {
		return nil
	}
	next := int64(maxInt64)
	kgs := j.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
			return err
		}
		j.due, j.dueKeys = j.due[:0], j.dueKeys[:0]
		err := j.timers.Ascend(nil, nil, func(tk, _ []byte) bool {
			end := readTime(tk)
			if !j.fired(end, wm) {
				next = min(next, end)
				return j.mayFire(end, wm)
			}
			st := len(j.dueKeys)
			j.dueKeys = append(j.dueKeys, tk...)
			j.due = append(j.due, dueTimer{kg: kg, tk: j.dueKeys[st:len(j.dueKeys):len(j.dueKeys)], deadline: end})
			return true
		})
		if err != nil {
			return err
		}
		for i := range j.due {
			if err := j.b.SetCurrentKeyInGroup(kg, timerKey); err != nil {
				return err
			}
			if err := j.timers.Delete(nil, j.due[i].tk); err != nil {
				return err
			}
		}
		for i := range j.due {
			if err := j.fireWindow(kg, j.due[i].tk[8:], j.due[i].tk[:8], out); err != nil {
				return err
			}
		}
	}
	j.nextDue = next
	return nil
}

// fireWindow joins the rows of one key and window and clears them.
func (j *windowJoin) fireWindow(kg int, key, endBytes []byte, out exec.Output) error {
	if err := j.b.SetCurrentKeyInGroup(kg, key); err != nil {
		return err
	}
	end := readTime(endBytes)
	j.nsBuf = binary.BigEndian.AppendUint64(j.nsBuf[:0], uint64(end))
	for s := range j.rows {
		j.sideRows[s] = j.sideRows[s][:0]
		w := j.widths[s]
		var ferr error
		err := j.rows[s].Iterate(j.nsBuf, func(uk, v []byte) bool {
			n, wn := binary.Uvarint(v)
			if wn <= 0 {
				ferr = fmt.Errorf("window join: corrupt state: bad row count")
				return false
			}
			for range n {
				st := len(j.sideRows[s])
				for range w {
					j.sideRows[s] = append(j.sideRows[s], types.Value{})
				}
				if _, err := decodeRowInto(types.Row(j.sideRows[s][st:st+w:st+w]), uk); err != nil {
					ferr = fmt.Errorf("window join: %w", err)
					return false
				}
			}
			return true
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
		if err := j.rows[s].Clear(j.nsBuf); err != nil {
			return err
		}
	}
	lw, rw := j.widths[0], j.widths[1]
	nl, nr := len(j.sideRows[0])/lw, len(j.sideRows[1])/rw
	j.matched = j.matched[:0]
	for range nr {
		j.matched = append(j.matched, false)
	}
	for li := range nl {
		l := types.Row(j.sideRows[0][li*lw : (li+1)*lw])
		found := false
		for ri := range nr {
			r := types.Row(j.sideRows[1][ri*rw : (ri+1)*rw])
			if j.spec.Residual != nil {
				copy(j.joined, l)
				copy(j.joined[lw:], r)
				ok, err := j.spec.Residual.Test(j.joined)
				if err != nil {
					return fmt.Errorf("window join: %w", err)
				}
				if !ok {
					continue
				}
			}
			found = true
			j.matched[ri] = true
			if j.spec.Type.semiAnti() {
				break // one match decides
			}
			if err := j.emit(l, r, out); err != nil {
				return err
			}
		}
		if j.spec.Type.semiAnti() {
			if found == (j.spec.Type == Semi) {
				if err := j.emit(l, nil, out); err != nil {
					return err
				}
			}
			continue
		}
		if !found && j.spec.Type.leftOuter() {
			if err := j.emit(l, nil, out); err != nil {
				return err
			}
		}
	}
	if j.spec.Type.rightOuter() {
		for ri := range nr {
			if !j.matched[ri] {
				if err := j.emit(nil, types.Row(j.sideRows[1][ri*rw:(ri+1)*rw]), out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
