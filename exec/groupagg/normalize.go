package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/snapshot"
	"github.com/flinksql/flinksql/sql/types"
)

// NormalizeSpec describes a ChangelogNormalize over an upsert stream keyed by
// KeyCols.
type NormalizeSpec struct {
	KeyCols              []int
	GenerateUpdateBefore bool
	StateTTL             time.Duration // table.exec.state.ttl; 0 keeps state forever
}

// changelogNormalize keeps the last full row of every key.
type changelogNormalize struct {
	keyCols      []int
	updateBefore bool
	ttl          stateTTL

	ctx   *exec.OperatorContext
	state valueState // the key's current row
	width int
	emit  emitter
	now   int64

	restored []snapshot.Entry // from RestoreState, applied at Open
	snapBuf  []byte
}

// NewChangelogNormalize returns the operator that turns an upsert stream (a
// +I/+U carries the key's new full row; a -U/-D may carry only the key, like
// a Kafka tombstone) into a proper changelog, as Flink's ChangelogNormalize:
//
//   - +I/+U of a key without a row: +I(new);
//   - +I/+U equal to the key's row: nothing (unless state TTL is on, then
//     -U/+U are emitted anyway to refresh downstream TTL);
//   - otherwise -U(previous row, when GenerateUpdateBefore) and +U(new);
//   - -U/-D of a key with a row: -D(previous full row), and the key is
//     forgotten; of a key without a row: nothing.
func NewChangelogNormalize(spec NormalizeSpec) (exec.Operator, error) {
	const name = "changelog normalize"
	if err := checkKeyCols(name, spec.KeyCols); err != nil {
		return nil, err
	}
	ttl, err := newStateTTL(spec.StateTTL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &changelogNormalize{keyCols: spec.KeyCols, updateBefore: spec.GenerateUpdateBefore, ttl: ttl}, nil
}

func (n *changelogNormalize) Open(ctx *exec.OperatorContext) error {
	if n.ttl.enabled() {
		if err := checkClock(ctx, "changelog normalize", "table.exec.state.ttl"); err != nil {
			return err
		}
	}
	n.ctx = ctx
	n.width = -1
	return n.applyRestored()
}

// init sizes the state and output for rows of width w (the first batch).
func (n *changelogNormalize) init(w int) error {
	if n.width == w {
		return nil
	}
	if n.width >= 0 {
		return fmt.Errorf("changelog normalize: input rows of %d columns, expected %d", w, n.width)
	}
	if err := checkWidth("changelog normalize", n.keyCols, w); err != nil {
		return err
	}
	n.width = w
	n.state = newHeapValueState(n.keyCols, w)
	n.emit.b = types.NewBatch(w, types.DefaultBatchSize)
	return nil
}

func (n *changelogNormalize) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := n.init(b.Width()); err != nil {
		return err
	}
	if n.ttl.enabled() {
		n.now = n.ctx.Now()
		n.ttl.arm(n.ctx, n.now)
	}
	for i, row := range b.Rows {
		h := types.HashColumns(row, n.keyCols)
		id, ok := n.state.get(row, h)
		if ok && n.ttl.expired(n.state.lastWrite(id), n.now) {
			n.state.remove(id)
			ok = false
		}
		if b.Kinds[i].IsRetract() {
			if !ok {
				continue
			}
			// The stored row, not the input: a tombstone may carry only the key.
			if err := n.emit.copyRow(types.Delete, n.state.values(id), out); err != nil {
				return err
			}
			n.state.remove(id)
			continue
		}
		if !ok {
			id = n.state.create(row, h)
			copy(n.state.values(id), row)
			n.state.written(id, n.now)
			if err := n.emit.copyRow(types.Insert, row, out); err != nil {
				return err
			}
			continue
		}
		prev := n.state.values(id)
		if !n.ttl.enabled() && types.RowsEqual(prev, row) {
			continue
		}
		if n.updateBefore {
			if err := n.emit.copyRow(types.UpdateBefore, prev, out); err != nil {
				return err
			}
		}
		if err := n.emit.copyRow(types.UpdateAfter, row, out); err != nil {
			return err
		}
		copy(prev, row)
		n.state.written(id, n.now)
	}
	return n.emit.flush(out)
}

func (n *changelogNormalize) OnProcessingTime(t int64, _ exec.Output) error {
	if !n.ttl.due(t) || n.state == nil {
		return nil
	}
	n.now = n.ctx.Now()
	n.state.scan(func(id int32) {
		if n.ttl.expired(n.state.lastWrite(id), n.now) {
			n.state.remove(id)
		}
	})
	if n.state.size() > 0 {
		n.ttl.arm(n.ctx, n.now)
	}
	return nil
}

func (n *changelogNormalize) ProcessWatermark(wm int64, out exec.Output) error {
	return out.PushWatermark(wm)
}

func (n *changelogNormalize) Finish(out exec.Output) error { return n.emit.flush(out) }

func (n *changelogNormalize) Close() error {
	n.state = nil
	return nil
}
