package window

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// sessionAggregate is the SESSION window aggregate. Per key it keeps the open
// sessions sorted by start, each with its own accumulator; a row at t is the
// window [t, t+gap) and merges with every session it overlaps or touches.
//
// Lateness follows Flink's merging window rule: the row's window is first
// merged with the open sessions of its key, and the row is dropped only when
// the resulting session has already passed the watermark (end - 1 <= wm).
//
// State: the sessions of a key are one value of the backend (a session's
// window changes as it merges, so the window is not a namespace here, as
// Flink keeps a merging window set per key), and every stored session has
// a timer in the backend's timer service (kv.TimerService, in the window's
// time domain, at its fire time, namespace (end, start, seq)), so that
// firing finds the stored sessions that are due in output order without
// reading every key, and a restored processing-time aggregate is woken by
// the service at its earliest stored session. In front of the backend a
// write-back cache holds the decoded sessions of the keys seen since their
// last write-back; it is authoritative for the keys it holds. It holds
// every key on hashmap (the backend is read only after a restore) and is
// bounded on rocksdb.
type sessionAggregate struct {
	spec    exec.WindowSpec
	zone    tz.Zone
	keyCols []int
	aggs    exec.AggsHandle
	keys    *keyed.Table

	ctx      *exec.OperatorContext
	metrics  *exec.OperatorMetrics
	wm       int64
	sessions [][]session // per key id, ascending start
	flags    []uint8     // per key id: markDirty, markPersisted
	stored   [][]dueKey  // per key id: its entries in the due index
	accPool  [][]types.Value
	seq      uint64
	// minTrigger is at or below the fire time of every open session, in
	// the cache and in the backend.
	minTrigger int64

	proc int64 // processing-time progress: the latest timer handled

	b        *kv.Backend
	sessSt   *kv.ValueState[[]byte]
	timers   *kv.TimerService
	domain   kv.TimeDomain // of the timers: the window's time attribute
	prog     *progressState
	bound    int  // most keys in the cache (0: unbounded)
	kvKeys   bool // the backend may hold keys the cache does not
	kb, vb   []byte
	uk       []byte
	keyBuf   []types.Value
	keyRow   types.Row
	loaded   []session // sessions of a key read from the backend
	dueBuf   []dueKey
	restored bool
	// cacheLimit: see slicingAggregate.
	cacheLimit int

	due      []dueSession
	emptied  []int32 // keys left without sessions by the current firing
	out      exec.Emitter
	outWidth int
	results  []types.Value
	props    [3]types.Value
}

type session struct {
	start, end int64 // local millis, [start, end)
	trigger    int64 // the instant the session fires
	seq        uint64
	acc        []types.Value
}

// dueKey is a session's timer namespace: it orders the sessions due at
// one time as they are emitted.
type dueKey struct {
	end, start int64
	seq        uint64
}

func (d dueKey) compare(o dueKey) int {
	if c := cmp.Compare(d.end, o.end); c != 0 {
		return c
	}
	if c := cmp.Compare(d.start, o.start); c != 0 {
		return c
	}
	return cmp.Compare(d.seq, o.seq)
}

func (d dueKey) append(dst []byte) []byte {
	return appendOrdered(appendOrdered(appendOrdered(dst, d.end), d.start), int64(d.seq))
}

func decodeDueKey(src []byte) (dueKey, error) {
	if len(src) != 24 {
		return dueKey{}, fmt.Errorf("window aggregate: malformed session index entry %x", src)
	}
	return dueKey{end: ordered(src), start: ordered(src[8:]), seq: uint64(ordered(src[16:]))}, nil
}

type dueSession struct {
	session
	key int32
}

func (d *dueSession) dueKey() dueKey { return dueKey{end: d.end, start: d.start, seq: d.seq} }

func newSessionAggregate(spec AggregateSpec) *sessionAggregate {
	w := 0
	for _, c := range spec.KeyCols {
		w = max(w, c+1)
	}
	return &sessionAggregate{
		spec:       spec.Window,
		zone:       tz.New(spec.Window.Loc),
		keyCols:    spec.KeyCols,
		aggs:       spec.Aggs,
		wm:         exec.MinWatermark,
		proc:       exec.MinWatermark,
		minTrigger: math.MaxInt64,
		outWidth:   len(spec.KeyCols) + spec.Aggs.NumAggs() + 3,
		results:    make([]types.Value, spec.Aggs.NumAggs()),
		keyBuf:     make([]types.Value, len(spec.KeyCols)),
		keyRow:     make(types.Row, w),
	}
}

var _ exec.KeyedOperator = (*sessionAggregate)(nil)

// OpenKeyedState implements exec.KeyedOperator: it declares the states and,
// on a restore, reads the progress and the earliest stored session (not the
// sessions, which stay in the backend until rows or firings need them).
func (a *sessionAggregate) OpenKeyedState(b *kv.Backend) error {
	a.b = b
	if b.Declared(oldSessionDue) {
		return fmt.Errorf("window aggregate: the checkpoint keeps session windows in an older layout (state %q, before the timer service); this version cannot restore it: start the job without it", oldSessionDue)
	}
	var err error
	if a.sessSt, err = kv.NewValueState(b, stateSessions, formatCodec("flinksql.window.sessions/1"), kv.Options{}); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	if a.timers, err = kv.NewTimerService(b, stateSessions); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	a.domain = kv.ProcessingTime
	if a.spec.EventTime {
		a.domain = kv.EventTime
	}
	if a.prog, err = openProgress(b); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	a.bound = statecache.Bound(b, (len(a.keyCols)+a.aggs.AccWidth())*48+128, 16)
	if a.cacheLimit > 0 {
		a.bound = a.cacheLimit
	}
	a.keys = keyed.NewTable(a.keyCols)
	p, restored, err := a.prog.read()
	if err != nil {
		return fmt.Errorf("window aggregate: restoring progress: %w", err)
	}
	if !restored {
		return nil
	}
	a.wm, a.proc, a.seq, a.kvKeys, a.restored = p.wm, p.proc, p.seq, true, true
	first, ok, err := a.timers.Next(a.domain)
	if err != nil {
		return fmt.Errorf("window aggregate: restoring state: %w", err)
	}
	if ok {
		a.minTrigger = first
	}
	return nil
}

func (a *sessionAggregate) Open(ctx *exec.OperatorContext) error {
	a.ctx = ctx
	a.metrics = metricsOf(ctx)
	if !a.spec.EventTime && (ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil) {
		return fmt.Errorf("window aggregate: processing-time windows need a clock and processing timers")
	}
	if a.b == nil {
		return fmt.Errorf("window aggregate: no keyed state backend (OpenKeyedState was not called)")
	}
	a.out.Init(a.outWidth, 0)
	if a.restored && a.wm != exec.MinWatermark {
		a.metrics.CurrentWatermark.Set(a.wm)
	}
	if !a.spec.EventTime {
		// The stored sessions' timers wake the operator through the timer
		// service; the cached ones register their own (add).
		if err := a.timers.Start(a.ctx.RegisterProcessingTimer); err != nil {
			return fmt.Errorf("window aggregate: %w", err)
		}
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the sessions of the keys
// changed since the last checkpoint, and the progress, go to the backend.
func (a *sessionAggregate) PrepareSnapshot(exec.CheckpointID) error {
	if err := a.writeBackAll(false); err != nil {
		return fmt.Errorf("window aggregate: writing back state: %w", err)
	}
	if err := a.prog.write(progress{wm: a.wm, proc: a.proc, seq: a.seq}); err != nil {
		return fmt.Errorf("window aggregate: writing progress: %w", err)
	}
	return nil
}

func (a *sessionAggregate) newAcc() []types.Value {
	if n := len(a.accPool); n > 0 {
		acc := a.accPool[n-1]
		a.accPool = a.accPool[:n-1]
		return acc
	}
	return make([]types.Value, a.aggs.AccWidth())
}

func (a *sessionAggregate) freeAcc(acc []types.Value) {
	clear(acc)
	a.accPool = append(a.accPool, acc)
}

func (a *sessionAggregate) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	var procLocal int64
	if !a.spec.EventTime {
		procLocal = a.zone.ToLocal(a.ctx.Now())
	}
	var dropped int64
	for i, row := range b.Rows {
		t := procLocal
		if a.spec.EventTime {
			v := row[a.spec.TimeCol]
			if v.IsNull() {
				return fmt.Errorf("window aggregate: %s", errNullRowtime)
			}
			t = a.zone.ToLocal(v.Millis())
		}
		ok, err := a.add(row, b.Kinds[i], t)
		if err != nil {
			return err
		}
		if !ok {
			dropped++
		}
	}
	if dropped > 0 {
		a.metrics.LateRowsDropped.Add(dropped)
	}
	if a.bound > 0 && a.keys.Size() > a.bound {
		if err := a.writeBackAll(true); err != nil {
			return fmt.Errorf("window aggregate: evicting state: %w", err)
		}
	}
	return nil
}

// lookup interns the key of row in the cache, reading its sessions from
// the backend when the backend may hold it.
func (a *sessionAggregate) lookup(row types.Row, h uint64) (int32, error) {
	id, added := a.keys.Lookup(row, h)
	if !added {
		return id, nil
	}
	if int(id) == len(a.sessions) {
		a.sessions = append(a.sessions, nil)
		a.flags = append(a.flags, 0)
		a.stored = append(a.stored, nil)
	}
	a.flags[id] = 0
	if !a.kvKeys {
		return id, nil
	}
	ok, err := a.readSessions(id)
	if err != nil {
		a.keys.Release(id)
		return 0, err
	}
	if ok {
		a.sessions[id] = append(a.sessions[id][:0], a.loaded...)
		st := a.stored[id][:0]
		for _, s := range a.loaded {
			st = append(st, dueKey{end: s.end, start: s.start, seq: s.seq})
		}
		a.stored[id] = st
		a.flags[id] = markPersisted
	}
	return id, nil
}

// setKey makes key id the backend's current key, its encoding in a.kb.
func (a *sessionAggregate) setKey(id int32) error {
	a.kb = appendKeyValues(a.kb[:0], a.keys.Key(id))
	return a.b.SetCurrentKey(a.keys.Hash(id), a.kb)
}

// readSessions decodes the stored sessions of key id into a.loaded.
func (a *sessionAggregate) readSessions(id int32) (bool, error) {
	if err := a.setKey(id); err != nil {
		return false, err
	}
	return a.readCurrent()
}

// readCurrent decodes the stored sessions of the current key into
// a.loaded; false when it has none.
func (a *sessionAggregate) readCurrent() (bool, error) {
	v, ok, err := a.sessSt.Get(nil)
	if err != nil || !ok {
		return false, err
	}
	a.loaded = a.loaded[:0]
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)) {
		return false, fmt.Errorf("window aggregate: malformed stored sessions")
	}
	v = v[k:]
	for range n {
		var s session
		var k1, k2, k3 int
		s.start, k1 = binary.Varint(v)
		if k1 > 0 {
			s.end, k2 = binary.Varint(v[k1:])
		}
		if k1 > 0 && k2 > 0 {
			s.seq, k3 = binary.Uvarint(v[k1+k2:])
		}
		if k1 <= 0 || k2 <= 0 || k3 <= 0 {
			return false, fmt.Errorf("window aggregate: malformed stored sessions")
		}
		s.acc = a.newAcc()
		if v, err = decodeAccValues(s.acc, v[k1+k2+k3:]); err != nil {
			return false, fmt.Errorf("window aggregate: stored sessions: %w", err)
		}
		s.trigger = a.zone.FireTime(s.end - 1)
		a.loaded = append(a.loaded, s)
	}
	if len(v) != 0 {
		return false, fmt.Errorf("window aggregate: stored sessions have %d trailing bytes", len(v))
	}
	return true, nil
}

func (a *sessionAggregate) encodeSessions(ss []session) []byte {
	v := binary.AppendUvarint(a.vb[:0], uint64(len(ss)))
	for _, s := range ss {
		v = binary.AppendVarint(v, s.start)
		v = binary.AppendVarint(v, s.end)
		v = binary.AppendUvarint(v, s.seq)
		for _, x := range s.acc {
			v = types.AppendValue(v, x)
		}
	}
	a.vb = v
	return v
}

// writeBack writes the sessions of dirty key id and their index entries
// to the backend; a key left without sessions is cleared there and
// released.
func (a *sessionAggregate) writeBack(id int32) error {
	if a.flags[id]&markDirty == 0 {
		return nil
	}
	ss := a.sessions[id]
	if err := a.setKey(id); err != nil {
		return err
	}
	if len(ss) == 0 {
		if err := a.sessSt.Clear(nil); err != nil {
			return err
		}
	} else if err := a.sessSt.Put(nil, a.encodeSessions(ss)); err != nil {
		return err
	}
	old := a.stored[id]
	for _, d := range old {
		if !slices.ContainsFunc(ss, func(s session) bool { return s.seq == d.seq && s.start == d.start && s.end == d.end }) {
			if err := a.timers.Delete(a.domain, a.zone.FireTime(d.end-1), d.append(a.uk[:0])); err != nil {
				return err
			}
		}
	}
	cur := a.dueBuf[:0]
	for _, s := range ss {
		d := dueKey{end: s.end, start: s.start, seq: s.seq}
		if !slices.Contains(old, d) {
			if err := a.timers.Register(a.domain, s.trigger, d.append(a.uk[:0])); err != nil {
				return err
			}
		}
		cur = append(cur, d)
	}
	a.dueBuf = cur
	a.stored[id] = append(old[:0], cur...)
	a.flags[id] = markPersisted
	if len(ss) == 0 {
		a.release(id)
	}
	return nil
}

// release forgets key id in the cache.
func (a *sessionAggregate) release(id int32) {
	for _, s := range a.sessions[id] {
		a.freeAcc(s.acc)
	}
	clear(a.sessions[id])
	a.sessions[id] = a.sessions[id][:0]
	a.stored[id] = a.stored[id][:0]
	a.flags[id] = 0
	a.keys.Release(id)
}

// writeBackAll writes back every dirty key; evict also forgets every key,
// after which the backend holds keys the cache does not.
func (a *sessionAggregate) writeBackAll(evict bool) error {
	for id := range int32(a.keys.Span()) {
		if !a.keys.InUse(id) {
			continue
		}
		if err := a.writeBack(id); err != nil {
			return err
		}
		if evict && a.keys.InUse(id) {
			a.release(id)
		}
	}
	if evict {
		a.kvKeys = true
	}
	return nil
}

// add puts the row at local time t into its key's sessions; false means the
// row was late and dropped.
func (a *sessionAggregate) add(row types.Row, kind types.RowKind, t int64) (bool, error) {
	h := types.HashColumns(row, a.keyCols)
	id, err := a.lookup(row, h)
	if err != nil {
		return false, err
	}
	ss := a.sessions[id]
	start, end := t, t+a.spec.Gap
	// sessions [lo, hi) overlap or touch [start, end)
	lo, _ := slices.BinarySearchFunc(ss, start, func(s session, t int64) int { return cmp.Compare(s.end, t) })
	hi := lo
	for hi < len(ss) && ss[hi].start <= end {
		hi++
	}
	if lo < hi {
		start = min(start, ss[lo].start)
		end = max(end, ss[hi-1].end)
	}
	trigger := a.zone.FireTime(end - 1)
	if a.spec.EventTime && a.wm >= trigger {
		if len(ss) == 0 && a.flags[id] == 0 {
			a.keys.Release(id)
		}
		return false, nil
	}
	var target *session
	if lo == hi {
		ss = slices.Insert(ss, lo, session{seq: a.nextSeq(), acc: a.newAcc()})
		target = &ss[lo]
		a.aggs.Init(target.acc)
	} else {
		target = &ss[lo]
		for k := lo + 1; k < hi; k++ {
			if err := a.aggs.Merge(target.acc, ss[k].acc); err != nil {
				return false, fmt.Errorf("window aggregate: %w", err)
			}
			target.seq = min(target.seq, ss[k].seq)
			a.freeAcc(ss[k].acc)
		}
		ss = slices.Delete(ss, lo+1, hi)
		target = &ss[lo]
	}
	changed := target.end != end
	target.start, target.end, target.trigger = start, end, trigger
	a.sessions[id] = ss
	a.minTrigger = min(a.minTrigger, trigger)
	if changed && !a.spec.EventTime {
		a.ctx.RegisterProcessingTimer(trigger)
	}
	if kind.IsRetract() {
		err = a.aggs.Retract(target.acc, row)
	} else {
		err = a.aggs.Accumulate(target.acc, row)
	}
	if err != nil {
		return false, fmt.Errorf("window aggregate: %w", err)
	}
	a.flags[id] |= markDirty
	return true, nil
}

func (a *sessionAggregate) nextSeq() uint64 {
	a.seq++
	return a.seq
}

func (a *sessionAggregate) ProcessWatermark(wm int64, out exec.Output) error {
	if wm <= a.wm {
		return out.PushWatermark(wm)
	}
	a.wm = wm
	a.metrics.CurrentWatermark.Set(wm)
	if a.spec.EventTime {
		if err := a.advance(wm, out); err != nil {
			return err
		}
	}
	return out.PushWatermark(wm)
}

func (a *sessionAggregate) OnProcessingTime(t int64, out exec.Output) error {
	if a.spec.EventTime {
		return nil
	}
	a.proc = max(a.proc, t)
	return a.advance(t, out)
}

// advance fires every session whose trigger is at or before progress, in
// ascending end (then start, then first arrival) order: the due sessions
// of the cache, merged with the due sessions of the keys only the backend
// holds, which come from its due index in that order.
func (a *sessionAggregate) advance(progress int64, out exec.Output) error {
	if progress < a.minTrigger {
		return nil
	}
	a.due = a.due[:0]
	next := int64(math.MaxInt64)
	for id, ss := range a.sessions {
		if len(ss) == 0 {
			continue
		}
		j := 0
		for _, s := range ss {
			if s.trigger <= progress {
				a.due = append(a.due, dueSession{session: s, key: int32(id)})
				continue
			}
			next = min(next, s.trigger)
			ss[j] = s
			j++
		}
		clear(ss[j:])
		a.sessions[id] = ss[:j]
		if j < len(ss) {
			a.flags[id] |= markDirty
			if j == 0 {
				a.emptied = append(a.emptied, int32(id))
			}
		}
	}
	slices.SortFunc(a.due, func(x, y dueSession) int { return x.dueKey().compare(y.dueKey()) })
	i := 0
	if a.kvKeys {
		var err error
		if i, next, err = a.fireStored(progress, next, out); err != nil {
			return err
		}
	}
	for _, d := range a.due[i:] {
		if err := a.emit(a.keys.Key(d.key), &d.session, out); err != nil {
			return err
		}
	}
	a.minTrigger = next
	for _, d := range a.due {
		a.freeAcc(d.acc)
	}
	for _, id := range a.emptied {
		if a.flags[id]&markPersisted == 0 {
			a.release(id)
		}
	}
	clear(a.due)
	a.emptied = a.emptied[:0]
	return a.out.Flush(out)
}

// fireStored emits the due sessions of the keys the cache does not hold,
// fired by their timers in order, interleaved with the cache's due
// sessions a.due, of which it emits the first i. next is the earliest
// trigger not due so far; it returns it lowered to the next stored one.
// (The timers of cached keys fire too and are passed over: the cache is
// authoritative for its keys, and its write-back deletes their timers.)
func (a *sessionAggregate) fireStored(progress, next int64, out exec.Output) (i int, _ int64, err error) {
	err = a.timers.Advance(a.domain, progress, func(tm kv.Timer) error {
		d, err := decodeDueKey(tm.Namespace)
		if err != nil {
			return err
		}
		if err := decodeKeyValues(a.keyBuf, tm.Key); err != nil {
			return fmt.Errorf("window aggregate: %w", err)
		}
		h := hashValues(a.keyBuf)
		for j, c := range a.keyCols {
			a.keyRow[c] = a.keyBuf[j]
		}
		if id, added := a.keys.Lookup(a.keyRow, h); !added {
			return nil // the cache holds this key: its sessions were fired from there
		} else {
			a.keys.Release(id)
		}
		for ; i < len(a.due) && a.due[i].dueKey().compare(d) < 0; i++ {
			if err := a.emit(a.keys.Key(a.due[i].key), &a.due[i].session, out); err != nil {
				return err
			}
		}
		return a.fireStoredSession(h, tm.Key, d, out)
	})
	if err != nil {
		return i, next, err
	}
	t, ok, err := a.timers.Next(a.domain)
	if ok {
		next = min(next, t)
	}
	return i, next, err
}

// fireStoredSession emits the stored session d of the key kb (hash h,
// values in a.keyBuf) and removes it from the backend.
func (a *sessionAggregate) fireStoredSession(h uint64, kb []byte, d dueKey, out exec.Output) error {
	if err := a.b.SetCurrentKey(h, kb); err != nil {
		return err
	}
	ok, err := a.readCurrent()
	if err != nil {
		return err
	}
	k := -1
	if ok {
		k = slices.IndexFunc(a.loaded, func(s session) bool { return s.seq == d.seq && s.start == d.start && s.end == d.end })
	}
	if k < 0 {
		return fmt.Errorf("window aggregate: the session index lists session [%d, %d) of key %x, which the state does not hold", d.start, d.end, kb)
	}
	if err := a.emit(a.keyBuf, &a.loaded[k], out); err != nil {
		return err
	}
	a.freeAcc(a.loaded[k].acc)
	rest := slices.Delete(a.loaded, k, k+1)
	if len(rest) == 0 {
		err = a.sessSt.Clear(nil)
	} else {
		err = a.sessSt.Put(nil, a.encodeSessions(rest))
	}
	for _, s := range rest {
		a.freeAcc(s.acc)
	}
	if err != nil {
		return err
	}
	a.loaded = rest[:0]
	return nil
}

// emit appends the result row of session s of key.
func (a *sessionAggregate) emit(key []types.Value, s *session, out exec.Output) error {
	if a.spec.Retracting && allRetracted(a.aggs, s.acc) {
		return nil
	}
	if err := a.aggs.Result(s.acc, a.results); err != nil {
		return fmt.Errorf("window aggregate: %w", err)
	}
	windowProps(&a.zone, s.start, s.end, a.props[:])
	row, err := a.out.Row(types.Insert, out)
	if err != nil {
		return err
	}
	n := copy(row, key)
	n += copy(row[n:], a.results)
	copy(row[n:], a.props[:])
	return nil
}

// Finish does nothing: see slicingAggregate.Finish.
func (a *sessionAggregate) Finish(exec.Output) error { return nil }

func (a *sessionAggregate) Close() error {
	a.sessions = nil
	a.accPool = nil
	return nil
}
