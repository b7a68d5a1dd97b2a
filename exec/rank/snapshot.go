package rank

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

// Checkpointing. Keyed entries sit under the key group of the columns the
// operator's input is hashed by, so a snapshot splits by key-group range:
//
//	'd' key values                    → varint rowtime, varint last write,
//	                                    [kept row]         (deduplication)
//	't' partition values              → varint last write, uvarint n, n rows in
//	                                    rank order         (Top-N)
//	'w' partition values, window start, window end (8 bytes each)
//	                                  → uvarint arrival order of the partition
//	                                    in its window, uvarint n, n rows (window
//	                                    rank; key group of partition columns,
//	                                    window_start, window_end)
//
// Window rank also keeps its watermark as operator state (KeyGroupNone):
// 'p' uvarint subtask → varint watermark; with several (a rescale) the
// smallest wins. Rows are written with types.AppendRow.
//
// Snapshots are incremental: keys (partitions, windows) changed since the
// previous snapshot are Put, removed ones (expired by TTL, emptied, fired)
// Deleted, Deletes first.

const (
	tagDedup      = 'd'
	tagTopN       = 't'
	tagWindowPart = 'w'
	tagProgress   = 'p'
)

var (
	_ exec.CheckpointedOperator = (*dedup)(nil)
	_ exec.CheckpointedOperator = (*topN)(nil)
	_ exec.CheckpointedOperator = (*windowRank)(nil)
)

func decodeRows(src []byte) ([]types.Row, []byte, error) {
	n, k := binary.Uvarint(src)
	if k <= 0 || n > uint64(len(src)) {
		return nil, nil, fmt.Errorf("truncated rows")
	}
	src = src[k:]
	rows := make([]types.Row, n)
	var err error
	for i := range rows {
		if rows[i], src, err = types.DecodeRow(src); err != nil {
			return nil, nil, fmt.Errorf("state rows: %w", err)
		}
	}
	return rows, src, nil
}

// Deduplication.

// RestoreState implements exec.CheckpointedOperator; entries are applied
// at Open.
func (d *dedup) RestoreState(r exec.StateReader) error {
	var err error
	if d.restored, err = snapshot.Collect(r); err != nil {
		return fmt.Errorf("deduplicate: restoring state: %w", err)
	}
	return nil
}

// SnapshotState implements exec.CheckpointedOperator.
func (d *dedup) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	st, ok := d.state.(*heapDedupStore)
	if !ok {
		return nil // no row yet
	}
	if err := st.changes.Write(w, snapshot.MaxParallelism(d.ttl.ctx), w.Full(), st.keys.InUse, st.keys.Span(), st.encode, &d.snapBuf); err != nil {
		return fmt.Errorf("deduplicate: snapshot: %w", err)
	}
	return nil
}

func (s *heapDedupStore) encode(buf []byte, id int32) ([]byte, int, uint64) {
	buf = keyed.AppendKey(buf, tagDedup, s.keys.Key(id))
	k := len(buf)
	e := s.entries[id]
	buf = binary.AppendVarint(buf, e.rowtime)
	buf = binary.AppendVarint(buf, e.written)
	if s.width > 0 {
		buf = types.AppendRow(buf, s.kept(id))
	}
	return buf, k, s.keys.Hash(id)
}

func (d *dedup) applyRestored() error {
	entries := d.restored
	d.restored = nil
	if len(entries) == 0 {
		return nil
	}
	type decoded struct {
		key              []types.Value
		rowtime, written int64
		row              types.Row
	}
	var all []decoded
	width := 0
	for _, e := range entries {
		if len(e.Key) == 0 || e.Key[0] != tagDedup {
			return fmt.Errorf("deduplicate: restoring state: unknown entry")
		}
		key, rest, err := keyed.DecodeKey(e.Key, len(d.spec.KeyCols))
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("deduplicate: restoring state: malformed key %x", e.Key)
		}
		var x decoded
		x.key = key
		v := e.Value
		var k1, k2 int
		x.rowtime, k1 = binary.Varint(v)
		if k1 > 0 {
			x.written, k2 = binary.Varint(v[k1:])
		}
		if k1 <= 0 || k2 <= 0 {
			return fmt.Errorf("deduplicate: restoring state: malformed value")
		}
		v = v[k1+k2:]
		if d.keepRow {
			if len(v) == 0 && !d.spec.KeepLast {
				// Written before event-time keep-first kept its row (it could
				// not update then): without the row it cannot be retracted.
				return fmt.Errorf("deduplicate: restoring state: the checkpoint holds no kept rows for this event-time keep-first deduplication " +
					"(written by a version that never updated its first row); start the job without this checkpoint")
			}
			if x.row, v, err = types.DecodeRow(v); err != nil {
				return fmt.Errorf("deduplicate: restoring state: %w", err)
			}
			width = len(x.row)
		}
		if len(v) != 0 {
			return fmt.Errorf("deduplicate: restoring state: %d trailing bytes", len(v))
		}
		all = append(all, x)
	}
	st := newHeapDedupStore(d.spec.KeyCols, width)
	st.changes.Tracking = true
	d.state = st
	oldest := int64(math.MaxInt64)
	for _, x := range all {
		row := keyed.Row(d.spec.KeyCols, x.key)
		id, added := st.lookup(row, types.HashColumns(row, d.spec.KeyCols))
		if !added {
			return fmt.Errorf("deduplicate: restoring state: key restored twice")
		}
		*st.entry(id) = dedupEntry{rowtime: x.rowtime, written: x.written}
		if d.keepRow {
			if len(x.row) != width {
				return fmt.Errorf("deduplicate: restoring state: rows of %d and %d columns", len(x.row), width)
			}
			copy(st.kept(id), x.row)
		}
		st.changes.Restored(id)
		oldest = min(oldest, x.written)
	}
	if d.ttl.enabled() {
		d.ttl.schedule(oldest)
	}
	return nil
}

// Top-N.

// RestoreState implements exec.CheckpointedOperator; entries are applied
// at Open.
func (t *topN) RestoreState(r exec.StateReader) error {
	var err error
	if t.restored, err = snapshot.Collect(r); err != nil {
		return fmt.Errorf("rank: restoring state: %w", err)
	}
	return nil
}

// SnapshotState implements exec.CheckpointedOperator.
func (t *topN) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	st, ok := t.state.(*heapRankStore)
	if !ok {
		return nil
	}
	if err := st.changes.Write(w, snapshot.MaxParallelism(t.ttl.ctx), w.Full(), st.keys.InUse, st.keys.Span(), st.encode, &t.snapBuf); err != nil {
		return fmt.Errorf("rank: snapshot: %w", err)
	}
	return nil
}

func (s *heapRankStore) encode(buf []byte, id int32) ([]byte, int, uint64) {
	buf = keyed.AppendKey(buf, tagTopN, s.keys.Key(id))
	k := len(buf)
	p := s.parts[id]
	buf = binary.AppendVarint(buf, p.written)
	buf = binary.AppendUvarint(buf, uint64(p.len()))
	for i := range p.len() {
		buf = types.AppendRow(buf, p.at(i))
	}
	return buf, k, s.keys.Hash(id)
}

func (t *topN) applyRestored() error {
	entries := t.restored
	t.restored = nil
	var st *heapRankStore
	oldest := int64(math.MaxInt64)
	for _, e := range entries {
		if len(e.Key) == 0 || e.Key[0] != tagTopN {
			return fmt.Errorf("rank: restoring state: unknown entry")
		}
		key, rest, err := keyed.DecodeKey(e.Key, len(t.spec.PartitionCols))
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("rank: restoring state: malformed key %x", e.Key)
		}
		written, k := binary.Varint(e.Value)
		if k <= 0 {
			return fmt.Errorf("rank: restoring state: malformed value")
		}
		rows, tail, err := decodeRows(e.Value[k:])
		if err != nil || len(tail) != 0 || len(rows) == 0 {
			return fmt.Errorf("rank: restoring state: malformed rows (%v)", err)
		}
		if st == nil {
			st = newHeapRankStore(t.spec.PartitionCols, len(rows[0]))
			st.changes.Tracking = true
		}
		row := keyed.Row(t.spec.PartitionCols, key)
		id, p := st.partition(row, types.HashColumns(row, t.spec.PartitionCols))
		if p.len() != 0 {
			return fmt.Errorf("rank: restoring state: partition restored twice")
		}
		for i, r := range rows {
			if len(r) != st.width {
				return fmt.Errorf("rank: restoring state: rows of %d and %d columns", len(r), st.width)
			}
			p.insert(i, r)
		}
		p.written = written
		st.changes.Restored(id)
		oldest = min(oldest, written)
	}
	if st != nil {
		t.state = st
		if t.ttl.enabled() {
			t.ttl.schedule(oldest)
		}
	}
	return nil
}

// Window rank.

// RestoreState implements exec.CheckpointedOperator; entries are applied
// at Open.
func (w *windowRank) RestoreState(r exec.StateReader) error {
	var err error
	if w.restored, err = snapshot.Collect(r); err != nil {
		return fmt.Errorf("window rank: restoring state: %w", err)
	}
	w.restoring = true
	return nil
}

func appendWindowPartKey(dst []byte, key []types.Value, start, end int64) []byte {
	dst = keyed.AppendKey(dst, tagWindowPart, key)
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	return binary.BigEndian.AppendUint64(dst, uint64(end))
}

// hashCols are the columns the input is hashed by: the partition columns,
// window_start, window_end.
func (w *windowRank) hashOf(p *sortedRows) uint64 {
	return types.HashColumns(p.at(0), w.hashCols)
}

// SnapshotState implements exec.CheckpointedOperator: the rows buffered per
// window and partition that changed since the last snapshot, the entries of
// fired windows as Deletes, and the watermark.
func (w *windowRank) SnapshotState(_ exec.CheckpointID, sw exec.StateWriter) error {
	maxPar := snapshot.MaxParallelism(w.ctx)
	if err := w.dels.Write(sw, maxPar); err != nil {
		return fmt.Errorf("window rank: snapshot: %w", err)
	}
	w.dels.Reset()
	full := sw.Full() || !w.tracking
	for _, win := range w.windows {
		for id, p := range win.parts {
			if p.len() == 0 || (!full && win.marks[id]&snapshot.MarkDirty == 0) {
				continue
			}
			b := appendWindowPartKey(w.snapBuf[:0], win.keys.Key(int32(id)), win.start, win.end)
			k := len(b)
			b = binary.AppendUvarint(b, uint64(id))
			b = binary.AppendUvarint(b, uint64(p.len()))
			for i := range p.len() {
				b = types.AppendRow(b, p.at(i))
			}
			w.snapBuf = b
			if err := sw.Put(types.KeyGroup(w.hashOf(p), maxPar), b[:k], b[k:]); err != nil {
				return fmt.Errorf("window rank: snapshot: %w", err)
			}
			win.marks[id] = snapshot.MarkPersisted
		}
	}
	w.tracking = true
	subtask := 0
	if w.ctx != nil {
		subtask = w.ctx.Subtask
	}
	b := append(w.snapBuf[:0], tagProgress)
	b = binary.AppendUvarint(b, uint64(subtask))
	k := len(b)
	b = binary.AppendVarint(b, w.wm)
	w.snapBuf = b
	if err := sw.Put(exec.KeyGroupNone, b[:k], b[k:]); err != nil {
		return fmt.Errorf("window rank: snapshot: %w", err)
	}
	return nil
}

// touch marks partition id of win changed.
func (w *windowRank) touch(win *rankWindow, id int32) {
	if !w.tracking {
		return
	}
	for int(id) >= len(win.marks) {
		win.marks = append(win.marks, 0)
	}
	win.marks[id] |= snapshot.MarkDirty
}

// dropped records the entries of a fired window for deletion.
func (w *windowRank) dropped(win *rankWindow) {
	if !w.tracking {
		return
	}
	for id, p := range win.parts {
		if id < len(win.marks) && win.marks[id]&snapshot.MarkPersisted != 0 && p.len() > 0 {
			w.dels.Add(appendWindowPartKey(w.dels.Buffer(), win.keys.Key(int32(id)), win.start, win.end), w.hashOf(p))
		}
	}
}

type restoredPart struct {
	key        []types.Value
	start, end int64
	order      uint64
	rows       []types.Row
}

func (w *windowRank) applyRestored() error {
	if !w.restoring {
		return nil
	}
	entries := w.restored
	w.restored, w.restoring = nil, false
	w.tracking = true
	var parts []restoredPart
	first := true
	for _, e := range entries {
		if len(e.Key) == 0 {
			return fmt.Errorf("window rank: restoring state: empty key")
		}
		switch e.Key[0] {
		case tagProgress:
			wm, k := binary.Varint(e.Value)
			if k <= 0 || k != len(e.Value) {
				return fmt.Errorf("window rank: restoring state: malformed watermark")
			}
			if first {
				w.wm, first = wm, false
			} else {
				w.wm = min(w.wm, wm)
			}
		case tagWindowPart:
			key, rest, err := keyed.DecodeKey(e.Key, len(w.spec.PartitionCols))
			if err != nil || len(rest) != 16 {
				return fmt.Errorf("window rank: restoring state: malformed key %x", e.Key)
			}
			order, k := binary.Uvarint(e.Value)
			if k <= 0 {
				return fmt.Errorf("window rank: restoring state: malformed value")
			}
			rows, tail, err := decodeRows(e.Value[k:])
			if err != nil || len(tail) != 0 || len(rows) == 0 {
				return fmt.Errorf("window rank: restoring state: malformed rows (%v)", err)
			}
			parts = append(parts, restoredPart{key: key, order: order, rows: rows,
				start: int64(binary.BigEndian.Uint64(rest[:8])), end: int64(binary.BigEndian.Uint64(rest[8:]))})
		default:
			return fmt.Errorf("window rank: restoring state: unknown entry kind %q", e.Key[0])
		}
	}
	// Partitions go back into their windows in their order of first arrival,
	// the order in which a window emits them.
	slices.SortFunc(parts, func(a, b restoredPart) int {
		if c := cmp.Compare(a.end, b.end); c != 0 {
			return c
		}
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	for _, rp := range parts {
		if w.width == 0 {
			w.width = len(rp.rows[0])
			if err := w.em.init(w.width); err != nil {
				return fmt.Errorf("window rank: %w", err)
			}
		}
		win := w.window(rp.start, rp.end)
		if win == nil {
			continue // fired at the restored watermark (a rescale brought an older one)
		}
		row := keyed.Row(w.spec.PartitionCols, rp.key)
		id, added := win.keys.Lookup(row, types.HashColumns(row, w.spec.PartitionCols))
		if !added {
			return fmt.Errorf("window rank: restoring state: partition restored twice")
		}
		if int(id) == len(win.parts) {
			win.parts = append(win.parts, w.newPart())
		}
		p := win.parts[id]
		for i, r := range rp.rows {
			if len(r) != w.width {
				return fmt.Errorf("window rank: restoring state: rows of %d and %d columns", len(r), w.width)
			}
			p.insert(i, r)
		}
		for int(id) >= len(win.marks) {
			win.marks = append(win.marks, 0)
		}
		win.marks[id] = snapshot.MarkPersisted
	}
	return nil
}
