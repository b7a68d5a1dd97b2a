package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// The window aggregates keep their state in the keyed-state backend the
// runtime owns (exec.KeyedOperator), in front of which each keeps a
// write-back cache of decoded accumulators: the backend is written at
// checkpoints (PrepareSnapshot) and when the cache, bounded on rocksdb,
// evicts. What is stored, per state name:
//
//	window-slice-acc    value, key = grouping key, ns = slice end:
//	                    uvarint arrival seq, accumulator values
//	window-slice-keys   sorted map, key = none (one per key group),
//	                    ns = slice end: first seq (8 B) → a chunk of up to
//	                    sliceChunk × (uvarint seq, uvarint len, grouping key),
//	                    the keys that slice got in that key group, in
//	                    arrival order (chunks of one write-back; later ones
//	                    hold later arrivals)
//	window-sessions     value, key = grouping key, ns = none: the open
//	                    sessions of the key (n × start, end, seq, acc)
//	window-sessions/timers/{event,processing}
//	                    the timer service (kv.TimerService) of the
//	                    sessions: per stored session a timer at its fire
//	                    time in the window's time domain, under its key,
//	                    namespace end, start, seq (3 × 8 B)
//	window-progress     value, key = none (one per key group): watermark,
//	                    processing-time progress, the next seq, and (slices)
//	                    the live slice ends
//
// The grouping key is stored as its values (types.AppendValue each). The
// per-key-group entries (the empty key in each key group the instance owns)
// are the indexes that firing reads when the cache does not hold everything,
// and the progress that a restore resumes from; being per key group, they
// follow their key groups when a job is restored at another parallelism,
// and a restored instance takes the least advanced progress of the key
// groups it owns (as Flink restores the window operator's watermark as the
// minimum of the union list state).

const (
	stateSliceAcc  = "window-slice-acc"
	stateSliceKeys = "window-slice-keys"
	stateSessions  = "window-sessions"
	stateProgress  = "window-progress"
	// oldSessionDue is the session index of the layout before the timer
	// service, refused on restore.
	oldSessionDue = "window-session-due"
)

// formatCodec is the identity codec under the ID of a format of this
// package, so that a snapshot names what its bytes hold.
type formatCodec string

func (c formatCodec) ID() string                       { return string(c) }
func (formatCodec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (formatCodec) Decode(src []byte) ([]byte, error)  { return src, nil }
func (formatCodec) OrderPreserving()                   {}

// appendOrdered appends n in 8 bytes that sort like the numbers (kv.Int64's
// encoding).
func appendOrdered(dst []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(n)^(1<<63))
}

func ordered(src []byte) int64 { return int64(binary.BigEndian.Uint64(src) ^ (1 << 63)) }

// nsOf is the namespace of the slice ending at end, in dst's memory.
func nsOf(dst []byte, end int64) []byte { return appendOrdered(dst[:0], end) }

func appendKeyValues(dst []byte, key []types.Value) []byte {
	for _, v := range key {
		dst = types.AppendValue(dst, v)
	}
	return dst
}

// hashValues is types.HashColumns over the key values in key-column order.
func hashValues(key []types.Value) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, v := range key {
		h = types.Hash(h, v)
	}
	return h
}

// decodeKeyValues decodes the n values of a stored grouping key into dst.
func decodeKeyValues(dst []types.Value, src []byte) error {
	var err error
	for i := range dst {
		if dst[i], src, err = types.DecodeValue(src); err != nil {
			return fmt.Errorf("stored key: %w", err)
		}
	}
	if len(src) != 0 {
		return fmt.Errorf("stored key: %d trailing bytes", len(src))
	}
	return nil
}

// decodeAccValues decodes an accumulator into dst and returns the rest.
func decodeAccValues(dst []types.Value, src []byte) ([]byte, error) {
	var err error
	for i := range dst {
		if dst[i], src, err = types.DecodeValue(src); err != nil {
			return nil, fmt.Errorf("stored accumulator: %w", err)
		}
	}
	return src, nil
}

// progressState is the per-key-group progress of a window aggregate.
type progressState struct {
	b   *kv.Backend
	st  *kv.ValueState[[]byte]
	buf []byte
}

type progress struct {
	wm, proc int64
	seq      uint64
	ends     []int64 // live slice ends (slicing only)
}

func openProgress(b *kv.Backend) (*progressState, error) {
	st, err := kv.NewValueState(b, stateProgress, formatCodec("flinksql.window.progress/1"), kv.Options{})
	if err != nil {
		return nil, err
	}
	return &progressState{b: b, st: st}, nil
}

// write stores p under every key group the instance owns.
func (ps *progressState) write(p progress) error {
	v := binary.AppendVarint(ps.buf[:0], p.wm)
	v = binary.AppendVarint(v, p.proc)
	v = binary.AppendUvarint(v, p.seq)
	v = binary.AppendUvarint(v, uint64(len(p.ends)))
	for _, e := range p.ends {
		v = binary.AppendVarint(v, e)
	}
	ps.buf = v
	r := ps.b.KeyGroups()
	for kg := r.First; kg <= r.Last; kg++ {
		if err := ps.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		if err := ps.st.Put(nil, v); err != nil {
			return err
		}
	}
	return nil
}

// read folds the progress of every owned key group: the least advanced
// watermark and processing time, the largest seq, every live slice end.
// ok is false when no key group has any (a fresh start).
func (ps *progressState) read() (p progress, ok bool, err error) {
	p = progress{wm: math.MaxInt64, proc: math.MaxInt64}
	seen := map[int64]bool{}
	r := ps.b.KeyGroups()
	for kg := r.First; kg <= r.Last; kg++ {
		if err := ps.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return p, false, err
		}
		v, found, err := ps.st.Get(nil)
		if err != nil {
			return p, false, err
		}
		if !found {
			continue
		}
		ok = true
		wm, n1 := binary.Varint(v)
		if n1 <= 0 {
			return p, false, fmt.Errorf("key group %d: malformed progress", kg)
		}
		proc, n2 := binary.Varint(v[n1:])
		if n2 <= 0 {
			return p, false, fmt.Errorf("key group %d: malformed progress", kg)
		}
		v = v[n1+n2:]
		seq, n3 := binary.Uvarint(v)
		if n3 <= 0 {
			return p, false, fmt.Errorf("key group %d: malformed progress", kg)
		}
		v = v[n3:]
		cnt, n4 := binary.Uvarint(v)
		if n4 <= 0 || cnt > uint64(len(v)) {
			return p, false, fmt.Errorf("key group %d: malformed progress", kg)
		}
		v = v[n4:]
		for range cnt {
			e, n := binary.Varint(v)
			if n <= 0 {
				return p, false, fmt.Errorf("key group %d: malformed progress", kg)
			}
			v = v[n:]
			if !seen[e] {
				seen[e] = true
				p.ends = append(p.ends, e)
			}
		}
		if len(v) != 0 {
			return p, false, fmt.Errorf("key group %d: progress has %d trailing bytes", kg, len(v))
		}
		p.wm, p.proc, p.seq = min(p.wm, wm), min(p.proc, proc), max(p.seq, seq)
	}
	if !ok {
		return progress{wm: exec.MinWatermark, proc: exec.MinWatermark}, false, nil
	}
	return p, true, nil
}

// kgMerge yields, in user-key byte order, the entries of a sorted map state
// under the per-key-group (empty) key of every owned key group and of
// several namespaces, paging so that only a few entries of each list are in
// memory at once: how the operators walk an index without holding it.
type kgMerge struct {
	b    *kv.Backend
	st   *kv.SortedMapState[[]byte, []byte]
	page int
	curs []kgCursor
	heap []int // indexes into curs, a min-heap on the current user key
	// the entry returned by the last next
	uk, val []byte
	src     int
	// split, when set, expands a stored entry into the items the merge
	// yields (their user keys ascending, and above those of the entries
	// before): for indexes that store a chunk of items per entry.
	split func(uk, v []byte, item func(uk, v []byte)) error
}

type kgCursor struct {
	kg, src int
	ns      []byte
	ents    [][2][]byte
	buf     []byte
	pos     int
	from    []byte
	last    []byte
	done    bool
}

// reset starts a merge over namespaces nss (src = index in nss) in every
// owned key group.
func (m *kgMerge) reset(nss [][]byte) error { return m.resetIn(nss, nil) }

// resetIn starts a merge over namespaces nss in key groups kgs (sorted,
// distinct), or in every owned one when kgs is nil.
func (m *kgMerge) resetIn(nss [][]byte, kgs []int32) error {
	if m.page == 0 {
		m.page = 64
	}
	m.curs, m.heap = m.curs[:0], m.heap[:0]
	add := func(kg int) {
		for src, ns := range nss {
			m.curs = append(m.curs, kgCursor{kg: kg, src: src, ns: ns})
		}
	}
	if kgs != nil {
		for _, kg := range kgs {
			add(int(kg))
		}
	} else {
		r := m.b.KeyGroups()
		for kg := r.First; kg <= r.Last; kg++ {
			add(kg)
		}
	}
	for i := range m.curs {
		if err := m.fill(i); err != nil {
			return err
		}
		if len(m.curs[i].ents) > 0 {
			m.push(i)
		}
	}
	return nil
}

func (m *kgMerge) fill(i int) error {
	c := &m.curs[i]
	c.ents, c.buf, c.pos = c.ents[:0], c.buf[:0], 0
	if c.done {
		return nil
	}
	if err := m.b.SetCurrentKeyInGroup(c.kg, nil); err != nil {
		return err
	}
	var from *[]byte
	if c.from != nil {
		from = &c.from
	}
	var offs [][3]int
	add := func(uk, v []byte) {
		s := len(c.buf)
		c.buf = append(append(c.buf, uk...), v...)
		offs = append(offs, [3]int{s, s + len(uk), s + len(uk) + len(v)})
	}
	stored := 0
	var ferr error
	err := m.st.Ascend(c.ns, from, func(uk, v []byte) bool {
		stored++
		c.last = append(c.last[:0], uk...)
		if m.split == nil {
			add(uk, v)
		} else if ferr = m.split(uk, v, add); ferr != nil {
			return false
		}
		return stored < m.page
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	for _, o := range offs {
		c.ents = append(c.ents, [2][]byte{c.buf[o[0]:o[1]:o[1]], c.buf[o[1]:o[2]:o[2]]})
	}
	if stored < m.page {
		c.done = true
	} else {
		c.from = append(append(c.from[:0], c.last...), 0) // the smallest key after the last
	}
	if len(c.ents) == 0 && !c.done {
		return m.fill(i) // only empty chunks in this page
	}
	return nil
}

// next moves to the next entry (m.uk, m.val, m.src, valid until the next
// call); false at the end. It changes the backend's current key.
func (m *kgMerge) next() (bool, error) {
	if len(m.heap) == 0 {
		return false, nil
	}
	i := m.heap[0]
	c := &m.curs[i]
	e := c.ents[c.pos]
	m.uk = append(m.uk[:0], e[0]...)
	m.val = append(m.val[:0], e[1]...)
	m.src = c.src
	c.pos++
	if c.pos == len(c.ents) {
		if err := m.fill(i); err != nil {
			return false, err
		}
	}
	if c.pos == len(c.ents) {
		m.pop()
	} else {
		m.down(0)
	}
	return true, nil
}

func (m *kgMerge) less(a, b int) bool {
	ca, cb := &m.curs[m.heap[a]], &m.curs[m.heap[b]]
	return bytes.Compare(ca.ents[ca.pos][0], cb.ents[cb.pos][0]) < 0
}

func (m *kgMerge) push(i int) {
	m.heap = append(m.heap, i)
	j := len(m.heap) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !m.less(j, p) {
			break
		}
		m.heap[j], m.heap[p] = m.heap[p], m.heap[j]
		j = p
	}
}

func (m *kgMerge) pop() {
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap = m.heap[:n]
	m.down(0)
}

func (m *kgMerge) down(j int) {
	n := len(m.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		s := l
		if r := l + 1; r < n && m.less(r, l) {
			s = r
		}
		if !m.less(s, j) {
			return
		}
		m.heap[j], m.heap[s] = m.heap[s], m.heap[j]
		j = s
	}
}
