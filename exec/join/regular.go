package join

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/bloom"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// InputSpec says what is known about the uniqueness of one input's rows,
// which decides how the join keeps them (Flink's JoinInputSideSpec).
type InputSpec uint8

const (
	// NoUniqueKey: rows are kept per join key as a map from the whole row
	// to its number of copies.
	NoUniqueKey InputSpec = iota
	// HasUniqueKey: rows are kept per join key as a map from their unique
	// key to the row; a retraction removes the row of its unique key.
	HasUniqueKey
	// JoinKeyContainsUniqueKey: the join key determines the row, so one
	// value per join key holds it.
	JoinKeyContainsUniqueKey
)

func (s InputSpec) String() string {
	switch s {
	case HasUniqueKey:
		return "HasUniqueKey"
	case JoinKeyContainsUniqueKey:
		return "JoinKeyContainsUniqueKey"
	}
	return "NoUniqueKey"
}

// Side describes one input of a join.
type Side struct {
	Width int
	// Keys are the join key columns; the two sides' keys pair up by
	// position.
	Keys []int
	Spec InputSpec
	// UniqueKey are the columns of the unique key (HasUniqueKey).
	UniqueKey []int
	// TTL is the retention of this side's rows (table.exec.state.ttl or
	// the STATE_TTL hint); 0 keeps them forever.
	TTL time.Duration
}

// RegularSpec describes a regular join.
type RegularSpec struct {
	Type        Type
	Left, Right Side
	// NullSafe marks the key pairs compared with IS NOT DISTINCT FROM
	// (NULL matches NULL); the others never match a NULL.
	NullSafe []bool
	// Residual is the non-equi part of the condition over the joined row
	// [left..., right...]; nil when there is none.
	Residual exec.Predicate

	// collide makes the cache hash every map key alike, for tests of
	// the lookup under hash collisions.
	collide bool
}

// NewRegular returns the regular join operator. Its inputs may carry any
// change; its output follows Flink's StreamingJoinOperator:
//
//   - an accumulating row (+I, +U) joins the other side's rows of its key
//     that satisfy the residual condition and is added to its side's state;
//   - a retracting row (-U, -D) is removed from its side's state and
//     retracts what it had joined;
//   - on an inner join the output rows take the input row's kind; a row of
//     an outer side without a match is emitted padded with NULLs (+I) and
//     that padded row is retracted (-D) when the first match arrives, and
//     emitted again when the last match goes. For this the outer side's
//     state counts, per row, its matches on the other side.
//
// A row whose join key is NULL matches nothing and is not stored.
func NewRegular(spec RegularSpec) (exec.Operator, error) {
	if len(spec.Left.Keys) != len(spec.Right.Keys) {
		return nil, fmt.Errorf("join: %d left key columns but %d right ones", len(spec.Left.Keys), len(spec.Right.Keys))
	}
	for _, s := range []Side{spec.Left, spec.Right} {
		for _, c := range append(append([]int(nil), s.Keys...), s.UniqueKey...) {
			if c < 0 || c >= s.Width {
				return nil, fmt.Errorf("join: column %d out of range for an input of width %d", c, s.Width)
			}
		}
		if s.Spec == HasUniqueKey && len(s.UniqueKey) == 0 {
			return nil, fmt.Errorf("join: an input with a unique key needs its columns")
		}
		if s.TTL < 0 {
			return nil, fmt.Errorf("join: negative state TTL %s", s.TTL)
		}
	}
	j := &regular{spec: spec}
	// A semi or anti join counts each left row's matches, as an outer
	// side does.
	j.sides[0] = &sideView{spec: spec.Left, outer: spec.Type.leftOuter() || spec.Type.semiAnti(), name: "left"}
	j.sides[1] = &sideView{spec: spec.Right, outer: spec.Type.rightOuter(), name: "right", index: 1}
	return j, nil
}

type regular struct {
	spec  RegularSpec
	b     *kv.Backend
	sides [2]*sideView

	out    *types.Batch
	joined types.Row // scratch: [left..., right...] for the residual
	keyBuf []byte
	// keyVals: scratch for a cached key's values
	keyVals []types.Value

	// cache, when not nil, holds both sides' rows decoded per join key
	// (see joinCache); curID is the id of the current row's key in it.
	cache *joinCache
	curID int32
	// curHash is the hash of the current row's join key, which the sides'
	// key filters (uncached path, after a fresh start) are probed with.
	curHash uint64

	// matches of the row being processed on the other side; their rows
	// live in arena.
	matches []match
	arena   []types.Value
	ukeys   []byte

	// pfHash and pfID are prefetch's key hashes and key ids (-1: not
	// cached yet) of the rows of the current run; hint says that
	// hintHash and hintID, the current row's, are set for cached.
	pfHash   []uint64
	pfID     []int32
	hint     bool
	hintHash uint64
	hintID   int32
	// pfUK holds prefetch's map keys of the rows of the current run end to
	// end (pfUKEnd[i] ends row i's), pfUKHash their hashes; ukHint is the
	// current row's, which the side storing it uses instead of encoding
	// the row again.
	pfUK     []byte
	pfUKEnd  []int
	pfUKHash []uint32
	pfUKOn   bool
	ukHint   ukeyHint
	// sink keeps what prefetch loaded, so that the loads are not dropped.
	sink uint64

	// collect's state for collectOne
	cInput    int
	cOther    *sideView
	cErr      error
	collectFn func(rec, ukey []byte, count, assoc int) bool
}

// match is one stored row of the other side that a row joins.
type match struct {
	row   types.Row
	count int    // copies of the row (NoUniqueKey), else 1
	assoc int    // its matches, when its side is outer
	ukey  []byte // its map key: unique key or row bytes (nil for value state)
	idx   int    // its position in the other side's cached rows
}

var _ exec.KeyedOperator = (*regular)(nil)

func (j *regular) OpenKeyedState(b *kv.Backend) error {
	for _, s := range j.sides {
		if err := s.open(b); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	j.b = b
	// A restore (or a first open) starts from the backend: nothing cached.
	// On a fresh start the backend holds nothing, so a key the cache has
	// not seen has no state and is not looked up.
	j.cache = nil
	j.hint, j.ukHint, j.pfUKOn = false, ukeyHint{}, false
	if b.Kind() == image.Hashmap && j.spec.Left.TTL == 0 && j.spec.Right.TTL == 0 {
		fresh, err := statecache.Empty(b)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		j.cache = newJoinCache(len(j.spec.Left.Keys), fresh)
	}
	for _, s := range j.sides {
		s.cache, s.cur, s.curKey, s.dirty, s.curID, s.filter, s.rowFilter = nil, nil, nil, nil, &j.curID, nil, nil
		s.jc = j.cache
		if j.cache != nil {
			s.cache = newRowCache(s.spec.Width, true)
			s.cache.constHash = j.spec.collide
			s.dirty = &j.cache.dirty
		}
		s.curHash = &j.curHash
		s.ukHint = &j.ukHint
	}
	if j.cache == nil && b.Kind() == image.RocksDB {
		fresh, err := statecache.Empty(b)
		if err != nil {
			return fmt.Errorf("join: %w", err)
		}
		if fresh {
			// A sixteenth of the budget per side: 20 M keys in a 256 MB
			// budget get ~6 bits each (a few % false positives).
			for _, s := range j.sides {
				s.filter = bloom.New(b.MemoryBudget() / 16)
				if s.spec.Spec == NoUniqueKey {
					// Rows are stored with a count, which adding a row
					// reads first: for a row never stored that read is
					// a Pebble lookup of a missing key in every level.
					s.rowFilter, s.rowSeed = bloom.New(b.MemoryBudget()/16), maphash.MakeSeed()
				}
			}
		}
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: it writes the cached
// changes back to the backend.
func (j *regular) PrepareSnapshot(exec.CheckpointID) error {
	if j.cache == nil {
		return nil
	}
	return j.writeBack()
}

// setKey makes the join key of row (of side input) current: the
// backend's current key, or, with the cache, both sides' cached rows of
// it (read from the backend on a miss).
func (j *regular) setKey(input int, row types.Row) error {
	if j.cache == nil {
		me := j.sides[input]
		j.keyBuf = appendKey(j.keyBuf[:0], row, me.spec.Keys)
		j.curHash = types.HashColumns(row, me.spec.Keys)
		if err := j.b.SetCurrentKey(j.curHash, j.keyBuf); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		return nil
	}
	ks, err := j.cached(input, row)
	if err != nil {
		return err
	}
	for i, s := range j.sides {
		s.cur, s.curKey = &ks.sides[i], ks
	}
	return nil
}

func (j *regular) Open(*exec.OperatorContext) error {
	if j.b == nil {
		return fmt.Errorf("join: opened without its keyed state backend")
	}
	w := j.spec.Left.Width + j.spec.Right.Width
	j.joined = make(types.Row, w)
	if j.spec.Type.semiAnti() {
		w = j.spec.Left.Width
	}
	j.out = types.NewBatch(w, 0)
	return nil
}

func (j *regular) ProcessWatermark(wm int64, out exec.Output) error {
	return out.PushWatermark(wm)
}

func (j *regular) Finish(out exec.Output) error { return nil }
func (j *regular) Close() error                 { return nil }

func (j *regular) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	if input != 0 && input != 1 {
		return fmt.Errorf("join: no input %d", input)
	}
	if w := j.sides[input].spec.Width; b.Len() > 0 && b.Width() != w {
		return fmt.Errorf("join: %s input rows have %d columns, want %d", j.sides[input].name, b.Width(), w)
	}
	if j.cache == nil {
		for i, row := range b.Rows {
			if err := j.process(input, row, b.Kinds[i], out); err != nil {
				return err
			}
		}
		return j.flush(out)
	}
	for start := 0; start < len(b.Rows); start += prefetchRows {
		end := min(start+prefetchRows, len(b.Rows))
		j.prefetch(input, b.Rows[start:end])
		for i := start; i < end; i++ {
			k := i - start
			j.hint, j.hintHash, j.hintID = true, j.pfHash[k], j.pfID[k]
			if j.pfUKOn {
				st := 0
				if k > 0 {
					st = j.pfUKEnd[k-1]
				}
				j.ukHint = ukeyHint{ok: true, side: input, key: j.pfUK[st:j.pfUKEnd[k]:j.pfUKEnd[k]], hash: j.pfUKHash[k]}
			}
			err := j.process(input, b.Rows[i], b.Kinds[i], out)
			j.ukHint.ok = false
			if err != nil {
				j.hint = false
				return err
			}
		}
	}
	j.hint = false
	{
		for i, s := range j.sides {
			if s.cache.needsCompaction() {
				j.compactKeys(i)
			}
		}
	}
	return j.flush(out)
}

func (j *regular) flush(out exec.Output) error {
	if j.out.Len() == 0 {
		return nil
	}
	err := out.Push(j.out)
	j.out.Reset()
	return err
}

// emit appends the joined row of left and right (nil: NULLs) with kind;
// a semi or anti join emits the left row alone.
func (j *regular) emit(kind types.RowKind, left, right types.Row, out exec.Output) error {
	r := j.out.Append(kind)
	copy(r, left)
	if !j.spec.Type.semiAnti() {
		copy(r[j.spec.Left.Width:], right)
	}
	if j.out.Full() {
		return j.flush(out)
	}
	return nil
}

// emitPair emits the row of side input joined with other.
func (j *regular) emitPair(kind types.RowKind, input int, row, other types.Row, out exec.Output) error {
	if input == 0 {
		return j.emit(kind, row, other, out)
	}
	return j.emit(kind, other, row, out)
}

func (j *regular) process(input int, row types.Row, kind types.RowKind, out exec.Output) error {
	if j.spec.Type.semiAnti() {
		return j.processSemiAnti(input, row, kind, out)
	}
	me, other := j.sides[input], j.sides[1-input]
	accumulate := kind.IsAccumulate()
	if hasNullKey(row, me.spec.Keys, j.spec.NullSafe) {
		// Matches nothing, ever: only an outer side shows it.
		if !me.outer {
			return nil
		}
		if accumulate {
			return j.emitPair(types.Insert, input, row, nil, out)
		}
		return j.emitPair(types.Delete, input, row, nil, out)
	}
	if err := j.setKey(input, row); err != nil {
		return err
	}
	if err := j.collect(input, row, other); err != nil {
		return err
	}
	n := 0
	for i := range j.matches {
		n += j.matches[i].count
	}
	if accumulate {
		if other.outer {
			// The other rows' padded rows go when their first match comes.
			for i := range j.matches {
				m := &j.matches[i]
				if m.assoc == 0 {
					for range m.count {
						if err := j.emitPair(types.Delete, 1-input, m.row, nil, out); err != nil {
							return err
						}
					}
				}
				if err := other.setAssoc(m, m.assoc+1); err != nil {
					return err
				}
			}
		}
		outKind := kind
		if me.outer || other.outer {
			outKind = types.Insert
		}
		if me.outer && n == 0 {
			if err := j.emitPair(types.Insert, input, row, nil, out); err != nil {
				return err
			}
		}
		for i := range j.matches {
			for range j.matches[i].count {
				if err := j.emitPair(outKind, input, row, j.matches[i].row, out); err != nil {
					return err
				}
			}
		}
		return me.add(row, n)
	}
	if err := me.retract(row); err != nil {
		return err
	}
	if n == 0 {
		if me.outer {
			return j.emitPair(types.Delete, input, row, nil, out)
		}
		return nil
	}
	outKind := kind
	if me.outer {
		outKind = types.Delete
	}
	for i := range j.matches {
		for range j.matches[i].count {
			if err := j.emitPair(outKind, input, row, j.matches[i].row, out); err != nil {
				return err
			}
		}
	}
	if other.outer {
		// The other rows' padded rows come back when their last match goes.
		for i := range j.matches {
			m := &j.matches[i]
			if m.assoc == 1 {
				for range m.count {
					if err := j.emitPair(types.Insert, 1-input, m.row, nil, out); err != nil {
						return err
					}
				}
			}
			if err := other.setAssoc(m, m.assoc-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// collect fills j.matches with the rows of other under the current key
// that row (of side input) joins.
func (j *regular) collect(input int, row types.Row, other *sideView) error {
	j.matches, j.arena, j.ukeys = j.matches[:0], j.arena[:0], j.ukeys[:0]
	w := other.spec.Width
	if j.spec.Residual != nil {
		if input == 0 {
			copy(j.joined, row)
		} else {
			copy(j.joined[j.spec.Left.Width:], row)
		}
	}
	if other.cache != nil {
		return j.collectCached(input, other)
	}
	if !other.filter.MayContain(j.curHash) {
		return nil // the other side never stored this key
	}
	j.cInput, j.cOther, j.cErr = input, other, nil
	if j.collectFn == nil {
		// A method value made once: a closure per row would allocate.
		j.collectFn = j.collectOne
	}
	err := other.scan(j.collectFn)
	if err == nil {
		err = j.cErr
	}
	if err != nil {
		return err
	}
	// The arena may have moved while it grew: slice the rows now.
	off := 0
	for i := range j.matches {
		j.matches[i].row = types.Row(j.arena[off : off+w : off+w])
		off += w
	}
	// ukeys, likewise.
	uo := 0
	for i := range j.matches {
		if n := len(j.matches[i].ukey); n > 0 {
			j.matches[i].ukey = j.ukeys[uo : uo+n : uo+n]
			uo += n
		}
	}
	return nil
}

// collectCached is collect from the other side's cached rows, which the
// matches refer to directly, but for flat ones, rebuilt in the arena.
func (j *regular) collectCached(input int, other *sideView) error {
	lw := j.spec.Left.Width
	w := other.spec.Width
	inArena := false
	other.cur.sortRows(other.cache)
	for i := range other.cur.rows {
		cr := &other.cur.rows[i]
		var row types.Row
		if cr.row >= 0 {
			row = other.cache.row(cr.row)
		} else {
			start := len(j.arena)
			for range w {
				j.arena = append(j.arena, types.Value{})
			}
			row = other.cache.get(cr.row, j.arena[start:start+w:start+w])
			inArena = true
		}
		if j.spec.Residual != nil {
			if input == 0 {
				copy(j.joined[lw:], row)
			} else {
				copy(j.joined, row)
			}
			ok, err := j.spec.Residual.Test(j.joined)
			if err != nil {
				return fmt.Errorf("join: %w", err)
			}
			if !ok {
				if cr.row < 0 {
					j.arena = j.arena[:len(j.arena)-w]
				}
				continue
			}
		}
		j.matches = append(j.matches, match{row: row, count: int(cr.count), assoc: int(cr.assoc), idx: i})
	}
	if inArena {
		// The arena may have moved while it grew: slice its rows now.
		off := 0
		for i := range j.matches {
			m := &j.matches[i]
			if other.cur.rows[m.idx].row < 0 {
				m.row = types.Row(j.arena[off : off+w : off+w])
				off += w
			}
		}
	}
	return nil
}

// collectOne is collect's visit of one stored row of the other side.
func (j *regular) collectOne(rec []byte, ukey []byte, count, assoc int) bool {
	other, input := j.cOther, j.cInput
	w := other.spec.Width
	lw := j.spec.Left.Width
	start := len(j.arena)
	for range w {
		j.arena = append(j.arena, types.Value{})
	}
	dst := types.Row(j.arena[start : start+w : start+w])
	if _, err := decodeRowInto(dst, rec); err != nil {
		j.cErr = fmt.Errorf("join: %s state: %w", other.name, err)
		return false
	}
	if j.spec.Residual != nil {
		if input == 0 {
			copy(j.joined[lw:], dst)
		} else {
			copy(j.joined, dst)
		}
		ok, err := j.spec.Residual.Test(j.joined)
		if err != nil {
			j.cErr = fmt.Errorf("join: %w", err)
			return false
		}
		if !ok {
			j.arena = j.arena[:start]
			return true
		}
	}
	m := match{count: count, assoc: assoc}
	if ukey != nil {
		us := len(j.ukeys)
		j.ukeys = append(j.ukeys, ukey...)
		m.ukey = j.ukeys[us:len(j.ukeys):len(j.ukeys)]
	}
	j.matches = append(j.matches, m)
	return true
}

// sideView is one side's state in the layout its InputSpec asks for:
//
//   - JoinKeyContainsUniqueKey: a value per join key, [assoc][row];
//   - HasUniqueKey: a map unique key → [assoc][row];
//   - NoUniqueKey: a map row → [count][assoc];
//
// where [assoc], the row's number of matches, is there only when the side
// is outer, and rows are types.AppendRow bytes, counts uvarints.
type sideView struct {
	spec  Side
	outer bool
	name  string
	value *kv.ValueState[[]byte]
	m     *kv.MapState[[]byte, []byte]
	buf   []byte
	ukBuf []byte
	// cache, when not nil, holds the side's rows decoded (see rowCache);
	// cur is the current join key's, curKey the key's cached state.
	// filter, when not nil, holds the join keys this side stored since a
	// fresh start (uncached path); curHash points at the join's current
	// key hash.
	filter  *bloom.Filter
	curHash *uint64
	// rowFilter, when not nil, holds the hashes (rowSeed) of the rows
	// this side stored since a fresh start (uncached path, no unique key).
	rowFilter *bloom.Filter
	rowSeed   maphash.Seed
	cache     *rowCache
	cur       *keyRows
	curKey    *keyState
	curID     *int32 // the join's current key id
	ukHint    *ukeyHint
	jc        *joinCache
	index     int      // 0 left, 1 right
	dirty     *[]int32 // the join's dirty list

	// scan's state for visit
	fn     func(rec, ukey []byte, count, assoc int) bool
	err    error
	iterFn func(uk, v []byte) bool
}

func (s *sideView) open(b *kv.Backend) error {
	id := "join." + s.spec.Spec.String()
	if s.outer {
		id += ".outer"
	}
	id += "/1"
	opts := kv.Options{TTL: s.spec.TTL}
	var err error
	if s.spec.Spec == JoinKeyContainsUniqueKey {
		s.value, err = kv.NewValueState[[]byte](b, s.name, stateCodec{id}, opts)
	} else {
		s.m, err = kv.NewMapState[[]byte, []byte](b, s.name, stateCodec{"join.key/1"}, stateCodec{id}, opts)
	}
	return err
}

// scan calls fn with every row of the current key: its bytes, its map key
// (nil for value state), its copies and its matches.
func (s *sideView) scan(fn func(rec, ukey []byte, count, assoc int) bool) error {
	if s.value != nil {
		v, ok, err := s.value.Get(nil)
		if err != nil || !ok {
			return err
		}
		assoc, rec, err := s.splitAssoc(v)
		if err != nil {
			return err
		}
		fn(rec, nil, 1, assoc)
		return nil
	}
	s.fn, s.err = fn, nil
	if s.iterFn == nil {
		s.iterFn = s.visit // made once: no closure per row
	}
	err := s.m.Iterate(nil, s.iterFn)
	if err == nil {
		err = s.err
	}
	s.fn = nil
	return err
}

// visit is scan's visit of one map entry.
func (s *sideView) visit(uk, v []byte) bool {
	if s.spec.Spec == HasUniqueKey {
		assoc, rec, err := s.splitAssoc(v)
		if err != nil {
			s.err = err
			return false
		}
		return s.fn(rec, uk, 1, assoc)
	}
	count, w := uvarint(v)
	if w <= 0 {
		s.err = fmt.Errorf("join: %s state: corrupt row count", s.name)
		return false
	}
	assoc := 0
	if s.outer {
		a, w2 := uvarint(v[w:])
		if w2 <= 0 {
			s.err = fmt.Errorf("join: %s state: corrupt match count", s.name)
			return false
		}
		assoc = int(a)
	}
	return s.fn(uk, uk, int(count), assoc)
}

func (s *sideView) splitAssoc(v []byte) (int, []byte, error) {
	if !s.outer {
		return 0, v, nil
	}
	a, w := uvarint(v)
	if w <= 0 {
		return 0, nil, fmt.Errorf("join: %s state: corrupt match count", s.name)
	}
	return int(a), v[w:], nil
}

func (s *sideView) record(row types.Row, assoc int) []byte {
	s.buf = s.buf[:0]
	if s.outer {
		s.buf = binary.AppendUvarint(s.buf, uint64(assoc))
	}
	s.buf = types.AppendRow(s.buf, row)
	return s.buf
}

func (s *sideView) counts(count, assoc int) []byte {
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(count))
	if s.outer {
		s.buf = binary.AppendUvarint(s.buf, uint64(assoc))
	}
	return s.buf
}

// add stores row with assoc matches.
func (s *sideView) add(row types.Row, assoc int) error {
	if s.cache != nil {
		s.addCached(row, assoc)
		return nil
	}
	seen := s.filter.MayContain(*s.curHash)
	if s.filter != nil {
		s.filter.Add(*s.curHash)
	}
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		return s.value.Put(nil, s.record(row, assoc))
	case HasUniqueKey:
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
		return s.m.Put(nil, s.ukBuf, s.record(row, assoc))
	}
	s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	if s.rowFilter != nil {
		h := maphash.Bytes(s.rowSeed, s.ukBuf)
		seen = seen && s.rowFilter.MayContain(h)
		s.rowFilter.Add(h)
	}
	if !seen {
		return s.m.Put(nil, s.ukBuf, s.counts(1, assoc))
	}
	v, ok, err := s.m.Get(nil, s.ukBuf)
	if err != nil {
		return err
	}
	count := 0
	if ok {
		c, w := uvarint(v)
		if w <= 0 {
			return fmt.Errorf("join: %s state: corrupt row count", s.name)
		}
		count = int(c)
	}
	return s.m.Put(nil, s.ukBuf, s.counts(count+1, assoc))
}

// retract removes one copy of row.
func (s *sideView) retract(row types.Row) error {
	if s.cache != nil {
		s.retractCached(row)
		return nil
	}
	if !s.filter.MayContain(*s.curHash) {
		return nil // never stored
	}
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		return s.value.Clear(nil)
	case HasUniqueKey:
		s.ukBuf = appendKey(s.ukBuf[:0], row, s.spec.UniqueKey)
		return s.m.Delete(nil, s.ukBuf)
	}
	s.ukBuf = types.AppendRow(s.ukBuf[:0], row)
	if s.rowFilter != nil && !s.rowFilter.MayContain(maphash.Bytes(s.rowSeed, s.ukBuf)) {
		return nil // never stored
	}
	v, ok, err := s.m.Get(nil, s.ukBuf)
	if err != nil || !ok {
		return err
	}
	c, w := uvarint(v)
	if w <= 0 {
		return fmt.Errorf("join: %s state: corrupt row count", s.name)
	}
	if c <= 1 {
		return s.m.Delete(nil, s.ukBuf)
	}
	assoc := 0
	if s.outer {
		a, w2 := uvarint(v[w:])
		if w2 <= 0 {
			return fmt.Errorf("join: %s state: corrupt match count", s.name)
		}
		assoc = int(a)
	}
	return s.m.Put(nil, s.ukBuf, s.counts(int(c)-1, assoc))
}

// setAssoc stores a new number of matches for the stored row m.
func (s *sideView) setAssoc(m *match, assoc int) error {
	if assoc < 0 {
		assoc = 0
	}
	m.assoc = assoc
	if s.cache != nil {
		r := &s.cur.rows[m.idx]
		r.assoc, r.dirty = int32(assoc), true
		s.markDirty()
		return nil
	}
	switch s.spec.Spec {
	case JoinKeyContainsUniqueKey:
		return s.value.Put(nil, s.record(m.row, assoc))
	case HasUniqueKey:
		return s.m.Put(nil, m.ukey, s.record(m.row, assoc))
	}
	return s.m.Put(nil, m.ukey, s.counts(m.count, assoc))
}

func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// processSemiAnti is process for a semi or anti join (Flink's
// StreamingSemiAntiJoinOperator): a left row is shown while it has a match
// (semi) or none (anti); right rows only change which left rows are shown.
func (j *regular) processSemiAnti(input int, row types.Row, kind types.RowKind, out exec.Output) error {
	anti := j.spec.Type == Anti
	me, other := j.sides[input], j.sides[1-input]
	accumulate := kind.IsAccumulate()
	if hasNullKey(row, me.spec.Keys, j.spec.NullSafe) {
		// Matches nothing: an anti join shows such a left row, a semi join
		// never; a right row with a NULL key changes nothing.
		if input == 0 && anti {
			return j.emit(kind, row, nil, out)
		}
		return nil
	}
	if err := j.setKey(input, row); err != nil {
		return err
	}
	if err := j.collect(input, row, other); err != nil {
		return err
	}
	if input == 0 {
		n := 0
		for i := range j.matches {
			n += j.matches[i].count
		}
		if (n > 0) != anti {
			if err := j.emit(kind, row, nil, out); err != nil {
				return err
			}
		}
		if accumulate {
			return me.add(row, n)
		}
		return me.retract(row)
	}
	// A right row: the left rows it matches gain or lose a match.
	for i := range j.matches {
		m := &j.matches[i]
		var show types.RowKind
		changes := false
		// As Flink: a semi join shows or hides the left row with the right
		// row's kind (+I/+U, -D/-U); an anti join deletes or inserts it.
		if accumulate && m.assoc == 0 {
			changes, show = true, kind
			if anti {
				show = types.Delete
			}
		} else if !accumulate && m.assoc == 1 {
			changes, show = true, kind
			if anti {
				show = types.Insert
			}
		}
		if changes {
			for range m.count {
				if err := j.emit(show, m.row, nil, out); err != nil {
					return err
				}
			}
		}
		delta := 1
		if !accumulate {
			delta = -1
		}
		if err := other.setAssoc(m, m.assoc+delta); err != nil {
			return err
		}
	}
	if accumulate {
		return me.add(row, 0)
	}
	return me.retract(row)
}
