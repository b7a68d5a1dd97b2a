package groupagg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Keyed state. Every operator of this package keeps its state in the
// runtime's kv backend, keyed by the operator's key columns (the key bytes
// are the key values, types.AppendValue each; the hash is
// types.HashColumns, the one the exchange routes by), with a decoded
// write-back cache in front (cache.go). The runtime snapshots and restores
// the backend; PrepareSnapshot writes the cache's dirty entries back
// first.
//
// Declared states (names and codecs are the checkpoint format):
//
//	group aggregate      "acc"        value  [accumulators..., last emitted results...]
//	                     "mini-batch" value  per key group (empty key): its unflushed rows
//	changelog normalize  "row"        value  the key's current row
//	materializer         "rows"       value  the key's alive rows, in order
//
// With table.exec.state.ttl the per-key states are declared with that TTL.

var (
	_ exec.KeyedOperator = (*groupAggregate)(nil)
	_ exec.KeyedOperator = (*changelogNormalize)(nil)
	_ exec.KeyedOperator = (*sinkUpsertMaterializer)(nil)
)

func errNoBackend(name string) error {
	return fmt.Errorf("%s: opened without a keyed-state backend (OpenKeyedState)", name)
}

// OpenKeyedState implements exec.KeyedOperator.
func (g *groupAggregate) OpenKeyedState(b *kv.Backend) error {
	st, err := kv.NewValueState[[]types.Value](b, "acc", &valuesCodec{}, g.ttl.Options())
	if err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	// No TTL: buffered rows wait for their flush, however long.
	if g.bundleSt, err = kv.NewValueState[[]byte](b, "mini-batch", kv.Bytes{}, kv.Options{}); err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	fresh, err := statecache.Empty(b)
	if err != nil {
		return fmt.Errorf("group aggregate: %w", err)
	}
	g.b = b
	g.state = newValueCache(b, st, g.keyCols, g.accWidth+g.numAggs, g.ttl.TTL, fresh, g.cacheLimit)
	if !fresh {
		if err := g.state.preload("acc"); err != nil {
			return fmt.Errorf("group aggregate: %w", err)
		}
		if err := g.loadBundle(); err != nil {
			return fmt.Errorf("group aggregate: restoring the mini-batch buffer: %w", err)
		}
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the changed accumulators
// go to the backend, and so does the mini-batch buffer.
//
// Flink flushes the mini-batch buffer when the barrier arrives and emits
// its changes before the barrier. PrepareSnapshot cannot emit (and a flush
// whose output came after the barrier would be lost by a restore from this
// checkpoint, which has the flush applied), so the buffer goes into keyed
// state instead: after a restore it is flushed when it would have been
// (size, latency, watermark or end of input), which gives the same changes
// as a run without the failure, only not before the barrier.
func (g *groupAggregate) PrepareSnapshot(exec.CheckpointID) error {
	if g.needsClock() && g.ctx != nil {
		g.setNow(g.ctx.Now())
	}
	if err := g.state.Flush(); err != nil {
		return g.stateErr(err)
	}
	if err := g.storeBundle(); err != nil {
		return fmt.Errorf("group aggregate: storing the mini-batch buffer: %w", err)
	}
	return nil
}

// The mini-batch rows of key group kg are one value under the empty key
// in kg: per row, uvarint sequence number, kind byte, types.AppendRow. So
// the rows split by key group with the rest of the state, and a restore
// finds them with one read per key group.

type restoredRow struct {
	seq  uint64
	kind types.RowKind
	row  types.Row
}

// storeBundle replaces the stored mini-batch rows by the buffered ones.
func (g *groupAggregate) storeBundle() error {
	if err := g.clearStoredBundle(); err != nil {
		return err
	}
	bd := g.bundle
	if bd == nil || bd.empty() {
		return nil
	}
	type ref struct {
		kg  int
		row int32
	}
	refs := make([]ref, 0, bd.len())
	maxPar := g.b.MaxParallelism()
	for k := range bd.keys.Capacity() {
		kg := kv.KeyGroupOf(bd.keys.Hash(int32(k)), maxPar)
		for r := bd.head[k]; r >= 0; r = bd.next[r] {
			refs = append(refs, ref{kg, r})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.kg != b.kg {
			return a.kg - b.kg
		}
		return int(a.row - b.row)
	})
	for i := 0; i < len(refs); {
		kg := refs[i].kg
		buf := g.bundleBuf[:0]
		for ; i < len(refs) && refs[i].kg == kg; i++ {
			r := refs[i].row
			buf = binary.AppendUvarint(buf, bd.seqs[r])
			buf = append(buf, byte(bd.rows.Kinds[r]))
			buf = types.AppendRow(buf, bd.rows.Rows[r])
		}
		g.bundleBuf = buf
		if err := g.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		if err := g.bundleSt.Put(nil, buf); err != nil {
			return err
		}
		g.bundleKGs = append(g.bundleKGs, kg)
	}
	return nil
}

// clearStoredBundle removes the stored mini-batch rows.
func (g *groupAggregate) clearStoredBundle() error {
	for _, kg := range g.bundleKGs {
		if err := g.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		if err := g.bundleSt.Clear(nil); err != nil {
			return err
		}
	}
	g.bundleKGs = g.bundleKGs[:0]
	return nil
}

// loadBundle reads the stored mini-batch rows of a restored backend.
func (g *groupAggregate) loadBundle() error {
	kgs := g.b.KeyGroups()
	for kg := kgs.First; kg <= kgs.Last; kg++ {
		if err := g.b.SetCurrentKeyInGroup(kg, nil); err != nil {
			return err
		}
		v, ok, err := g.bundleSt.Get(nil)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		g.bundleKGs = append(g.bundleKGs, kg)
		for len(v) > 0 {
			seq, n := binary.Uvarint(v)
			if n <= 0 || len(v) < n+1 {
				return errors.New("malformed mini-batch entry")
			}
			kind := types.RowKind(v[n])
			row, rest, err := types.DecodeRow(v[n+1:])
			if err != nil {
				return fmt.Errorf("malformed mini-batch row: %w", err)
			}
			v = rest
			g.restored = append(g.restored, restoredRow{seq: seq, kind: kind, row: row})
		}
	}
	return nil
}

// applyRestored puts the restored mini-batch rows into the bundle and
// registers its latency timer again. (The TTL sweep timer is armed by the
// next batch; until then the cache holds nothing to sweep.)
func (g *groupAggregate) applyRestored() error {
	rows := g.restored
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
		g.nextSeq = rows[len(rows)-1].seq + 1
		g.setNow(g.ctx.Now())
		g.flushAt = g.now + g.mini.AllowLatency.Milliseconds()
		g.ctx.RegisterProcessingTimer(g.flushAt)
	}
	return nil
}

// OpenKeyedState implements exec.KeyedOperator.
func (n *changelogNormalize) OpenKeyedState(b *kv.Backend) error {
	var err error
	if n.st, err = kv.NewValueState[[]types.Value](b, "row", &valuesCodec{}, n.ttl.Options()); err != nil {
		return fmt.Errorf("changelog normalize: %w", err)
	}
	if n.fresh, err = statecache.Empty(b); err != nil {
		return fmt.Errorf("changelog normalize: %w", err)
	}
	n.b = b
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator.
func (n *changelogNormalize) PrepareSnapshot(exec.CheckpointID) error {
	if n.state == nil {
		return nil
	}
	if n.ttl.Enabled() && n.ctx != nil {
		n.state.SetNow(n.ctx.Now())
	}
	if err := n.state.Flush(); err != nil {
		return fmt.Errorf("changelog normalize: state: %w", err)
	}
	return nil
}

// OpenKeyedState implements exec.KeyedOperator.
func (m *sinkUpsertMaterializer) OpenKeyedState(b *kv.Backend) error {
	var err error
	if m.st, err = kv.NewValueState[[]types.Row](b, "rows", &rowsCodec{}, m.ttl.Options()); err != nil {
		return fmt.Errorf("sink upsert materializer: %w", err)
	}
	if m.fresh, err = statecache.Empty(b); err != nil {
		return fmt.Errorf("sink upsert materializer: %w", err)
	}
	m.b = b
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator.
func (m *sinkUpsertMaterializer) PrepareSnapshot(exec.CheckpointID) error {
	if m.state == nil {
		return nil
	}
	if m.ttl.Enabled() && m.ctx != nil {
		m.state.SetNow(m.ctx.Now())
	}
	if err := m.state.Flush(); err != nil {
		return fmt.Errorf("sink upsert materializer: state: %w", err)
	}
	return nil
}
