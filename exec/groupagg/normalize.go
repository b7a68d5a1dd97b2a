package groupagg

import (
	"fmt"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
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
	state *valueCache // the key's current row; created for the first batch's width
	width int
	emit  exec.Emitter

	b     *kv.Backend
	st    *kv.ValueState[[]types.Value]
	fresh bool // the backend was empty when handed over
	// cacheLimit, when not 0, bounds the cache to that many keys (tests).
	cacheLimit int
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
	if n.ttl.Enabled() {
		if err := checkClock(ctx, "changelog normalize", "table.exec.state.ttl"); err != nil {
			return err
		}
	}
	if n.b == nil {
		return errNoBackend("changelog normalize")
	}
	n.ctx = ctx
	n.width = -1
	return nil
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
	n.state = newValueCache(n.b, n.st, n.keyCols, w, n.ttl.TTL, n.fresh, n.cacheLimit)
	if err := n.state.preload("row"); err != nil {
		return fmt.Errorf("changelog normalize: %w", err)
	}
	n.emit.Init(w, 0)
	return nil
}

func (n *changelogNormalize) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() == 0 {
		return nil
	}
	if err := n.init(b.Width()); err != nil {
		return err
	}
	if n.ttl.Enabled() {
		n.state.SetNow(n.ctx.Now())
		n.ttl.arm(n.ctx, n.state.Now())
	}
	for i, row := range b.Rows {
		h := types.HashColumns(row, n.keyCols)
		id, ok, err := n.state.Get(row, h)
		if err != nil {
			return n.stateErr(err)
		}
		if b.Kinds[i].IsRetract() {
			if !ok {
				continue
			}
			// The stored row, not the input: a tombstone may carry only the key.
			if err := n.emit.Copy(types.Delete, n.state.values(id), out); err != nil {
				return err
			}
			if err := n.state.Remove(id); err != nil {
				return n.stateErr(err)
			}
			continue
		}
		if !ok {
			if id, err = n.state.Create(row, h); err != nil {
				return n.stateErr(err)
			}
			copy(n.state.values(id), row)
			n.state.Written(id)
			if err := n.emit.Copy(types.Insert, row, out); err != nil {
				return err
			}
			continue
		}
		prev := n.state.values(id)
		if !n.ttl.Enabled() && types.RowsEqual(prev, row) {
			continue
		}
		if n.updateBefore {
			if err := n.emit.Copy(types.UpdateBefore, prev, out); err != nil {
				return err
			}
		}
		if err := n.emit.Copy(types.UpdateAfter, row, out); err != nil {
			return err
		}
		copy(prev, row)
		n.state.Written(id)
	}
	return n.emit.Flush(out)
}

func (n *changelogNormalize) stateErr(err error) error {
	return fmt.Errorf("changelog normalize: state: %w", err)
}

func (n *changelogNormalize) OnProcessingTime(t int64, _ exec.Output) error {
	if !n.ttl.Due(t) || n.state == nil {
		return nil
	}
	n.state.SetNow(n.ctx.Now())
	n.state.Sweep()
	if n.state.Len() > 0 {
		n.ttl.arm(n.ctx, n.state.Now())
	}
	return nil
}

func (n *changelogNormalize) ProcessWatermark(wm int64, out exec.Output) error {
	return out.PushWatermark(wm)
}

func (n *changelogNormalize) Finish(out exec.Output) error { return n.emit.Flush(out) }

func (n *changelogNormalize) Close() error {
	n.state = nil
	return nil
}
