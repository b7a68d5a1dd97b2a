package groupagg

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/keyed"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

var (
	_ exec.CheckpointedOperator = (*groupAggregate)(nil)
	_ exec.CheckpointedOperator = (*changelogNormalize)(nil)
	_ exec.CheckpointedOperator = (*sinkUpsertMaterializer)(nil)
)

// RestoreState implements exec.CheckpointedOperator. Entries are applied at
// Open, once the operator has its runtime context.
func (g *groupAggregate) RestoreState(r exec.StateReader) error {
	var err error
	g.restored, err = snapshot.Collect(r)
	if err != nil {
		return fmt.Errorf("group aggregate: restoring state: %w", err)
	}
	return nil
}

// SnapshotState implements exec.CheckpointedOperator: the keys' accumulators,
// previous results and write times (valueState entries), and the rows of the
// mini-batch buffer that is not flushed yet.
//
// Flink flushes the mini-batch buffer when the barrier arrives and emits
// its changes before the barrier. SnapshotState cannot emit, so the buffer
// goes into the checkpoint instead: after a restore it is flushed when it
// would have been (size, latency, watermark or end of input), which gives
// the same changes as a run without the failure, only not before the
// barrier.
func (g *groupAggregate) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	maxPar := snapshot.MaxParallelism(g.ctx)
	if err := g.state.(*heapValueState).snapshot(w, maxPar, &g.snapBuf); err != nil {
		return fmt.Errorf("group aggregate: snapshot: %w", err)
	}
	if err := g.snapshotBundle(w, maxPar); err != nil {
		return fmt.Errorf("group aggregate: snapshot: %w", err)
	}
	return nil
}

// Bundle entries: key = tagBundle, key values, 8-byte big-endian sequence
// number; value = row kind byte, then the row (types.AppendRow).

func (g *groupAggregate) appendBundleKey(dst []byte, row types.Row, seq uint64) []byte {
	dst = append(dst, tagBundle)
	for _, c := range g.keyCols {
		dst = types.AppendValue(dst, row[c])
	}
	return binary.BigEndian.AppendUint64(dst, seq)
}

func (g *groupAggregate) snapshotBundle(w exec.StateWriter, maxPar int) error {
	if err := g.bundleDels.Write(w, maxPar); err != nil {
		return err
	}
	g.bundleDels.Reset()
	bd := g.bundle
	if bd == nil {
		return nil
	}
	from := bd.written
	if w.Full() {
		from = 0
	}
	for i := from; i < bd.rows.Len(); i++ {
		row := bd.rows.Rows[i]
		buf := g.appendBundleKey(g.snapBuf[:0], row, bd.seqs[i])
		k := len(buf)
		buf = append(buf, byte(bd.rows.Kinds[i]))
		buf = types.AppendRow(buf, row)
		g.snapBuf = buf
		kg := types.KeyGroup(types.HashColumns(row, g.keyCols), maxPar)
		if err := w.Put(kg, buf[:k], buf[k:]); err != nil {
			return err
		}
	}
	bd.written = bd.rows.Len()
	return nil
}

// forgetBundle records the checkpointed entries of the bundle being
// flushed, to be deleted at the next snapshot.
func (g *groupAggregate) forgetBundle() {
	bd := g.bundle
	for i := 0; i < bd.written; i++ {
		row := bd.rows.Rows[i]
		g.bundleDels.Add(g.appendBundleKey(g.bundleDels.Buffer(), row, bd.seqs[i]), types.HashColumns(row, g.keyCols))
	}
}

type restoredRow struct {
	seq  uint64
	kind types.RowKind
	row  types.Row
}

// applyRestored puts the restored entries into the fresh state and bundle.
func (g *groupAggregate) applyRestored() error {
	if g.restored == nil {
		return nil
	}
	st := g.state.(*heapValueState)
	st.changes.Tracking = true
	var rows []restoredRow
	for _, e := range g.restored {
		if len(e.Key) == 0 {
			return fmt.Errorf("group aggregate: restoring state: empty key")
		}
		switch e.Key[0] {
		case tagValue:
			if err := st.restore(e.Key, e.Value); err != nil {
				return fmt.Errorf("group aggregate: restoring state: %w", err)
			}
		case tagBundle:
			_, rest, err := keyed.DecodeKey(e.Key, len(g.keyCols))
			if err != nil || len(rest) != 8 || len(e.Value) == 0 {
				return fmt.Errorf("group aggregate: restoring state: malformed mini-batch entry")
			}
			row, tail, err := types.DecodeRow(e.Value[1:])
			if err != nil || len(tail) != 0 {
				return fmt.Errorf("group aggregate: restoring state: malformed mini-batch row")
			}
			rows = append(rows, restoredRow{seq: binary.BigEndian.Uint64(rest), kind: types.RowKind(e.Value[0]), row: row})
		default:
			return fmt.Errorf("group aggregate: restoring state: unknown entry kind %q", e.Key[0])
		}
	}
	g.restored = nil
	if len(rows) > 0 {
		if !g.mini.Enabled {
			return fmt.Errorf("group aggregate: the checkpoint holds mini-batch rows, but table.exec.mini-batch.enabled is false")
		}
		slices.SortFunc(rows, func(a, b restoredRow) int {
			switch {
			case a.seq < b.seq:
				return -1
			case a.seq > b.seq:
				return 1
			}
			return 0
		})
		g.bundle = newBundle(g.keyCols, len(rows[0].row), g.mini.Size)
		for _, r := range rows {
			if len(r.row) != g.bundle.rows.Width() {
				return fmt.Errorf("group aggregate: restoring state: mini-batch rows of %d and %d columns", len(r.row), g.bundle.rows.Width())
			}
			g.bundle.add(r.kind, r.row, types.HashColumns(r.row, g.keyCols), r.seq)
		}
		g.bundle.written = g.bundle.len()
		g.nextSeq = rows[len(rows)-1].seq + 1
		g.now = g.ctx.Now()
		g.flushAt = g.now + g.mini.AllowLatency.Milliseconds()
		g.ctx.RegisterProcessingTimer(g.flushAt)
	}
	if g.ttl.enabled() && g.state.size() > 0 {
		g.ttl.arm(g.ctx, g.ctx.Now())
	}
	return nil
}

// RestoreState implements exec.CheckpointedOperator.
func (n *changelogNormalize) RestoreState(r exec.StateReader) error {
	var err error
	n.restored, err = snapshot.Collect(r)
	if err != nil {
		return fmt.Errorf("changelog normalize: restoring state: %w", err)
	}
	return nil
}

// SnapshotState implements exec.CheckpointedOperator: the current row and
// write time of every key (valueState entries).
func (n *changelogNormalize) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	if n.state == nil {
		return nil
	}
	if err := n.state.(*heapValueState).snapshot(w, snapshot.MaxParallelism(n.ctx), &n.snapBuf); err != nil {
		return fmt.Errorf("changelog normalize: snapshot: %w", err)
	}
	return nil
}

func (n *changelogNormalize) applyRestored() error {
	entries := n.restored
	n.restored = nil
	if len(entries) == 0 {
		return nil
	}
	w, err := valueWidth(entries[0].Value)
	if err != nil {
		return fmt.Errorf("changelog normalize: restoring state: %w", err)
	}
	if err := n.init(w); err != nil {
		return err
	}
	st := n.state.(*heapValueState)
	st.changes.Tracking = true
	for _, e := range entries {
		if len(e.Key) == 0 || e.Key[0] != tagValue {
			return fmt.Errorf("changelog normalize: restoring state: unknown entry")
		}
		if err := st.restore(e.Key, e.Value); err != nil {
			return fmt.Errorf("changelog normalize: restoring state: %w", err)
		}
	}
	if n.ttl.enabled() {
		n.ttl.arm(n.ctx, n.ctx.Now())
	}
	return nil
}

// RestoreState implements exec.CheckpointedOperator.
func (m *sinkUpsertMaterializer) RestoreState(r exec.StateReader) error {
	var err error
	m.restored, err = snapshot.Collect(r)
	if err != nil {
		return fmt.Errorf("sink upsert materializer: restoring state: %w", err)
	}
	return nil
}

// SnapshotState implements exec.CheckpointedOperator: the alive rows, in
// order, and the write time of every key (listState entries).
func (m *sinkUpsertMaterializer) SnapshotState(_ exec.CheckpointID, w exec.StateWriter) error {
	if m.state == nil {
		return nil
	}
	if err := m.state.(*heapListState).snapshot(w, snapshot.MaxParallelism(m.ctx), &m.snapBuf); err != nil {
		return fmt.Errorf("sink upsert materializer: snapshot: %w", err)
	}
	return nil
}

func (m *sinkUpsertMaterializer) applyRestored() error {
	entries := m.restored
	m.restored = nil
	first := true
	for _, e := range entries {
		if len(e.Key) == 0 || e.Key[0] != tagList {
			return fmt.Errorf("sink upsert materializer: restoring state: unknown entry")
		}
		stamp, rows, err := decodeList(e.Value)
		if err != nil {
			return fmt.Errorf("sink upsert materializer: restoring state: %w", err)
		}
		if len(rows) == 0 {
			continue
		}
		if first {
			if err := m.init(len(rows[0])); err != nil {
				return err
			}
			m.state.(*heapListState).changes.Tracking = true
			first = false
		}
		if err := m.state.(*heapListState).restore(e.Key, stamp, rows); err != nil {
			return fmt.Errorf("sink upsert materializer: restoring state: %w", err)
		}
	}
	if !first && m.ttl.enabled() {
		m.ttl.arm(m.ctx, m.ctx.Now())
	}
	return nil
}
