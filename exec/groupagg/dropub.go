package groupagg

import (
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// dropUpdateBefore removes -U rows from a changelog.
type dropUpdateBefore struct {
	emit exec.Emitter
}

// NewDropUpdateBefore returns the operator Flink places where a retract
// stream feeds a consumer that only needs upserts (Flink's DropUpdateBefore):
// -U rows are dropped, everything else passes unchanged.
func NewDropUpdateBefore() exec.Operator { return &dropUpdateBefore{} }

func (d *dropUpdateBefore) Open(*exec.OperatorContext) error { return nil }

func (d *dropUpdateBefore) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	first := -1
	for i, k := range b.Kinds {
		if k == types.UpdateBefore {
			first = i
			break
		}
	}
	if first < 0 {
		if b.Len() == 0 {
			return nil
		}
		return out.Push(b)
	}
	if !d.emit.Ready() || d.emit.Width() != b.Width() {
		d.emit.Init(b.Width(), max(b.Cap(), 1))
	}
	for i, r := range b.Rows {
		if b.Kinds[i] == types.UpdateBefore {
			continue
		}
		if err := d.emit.Copy(b.Kinds[i], r, out); err != nil {
			return err
		}
	}
	return d.emit.Flush(out)
}

func (d *dropUpdateBefore) ProcessWatermark(wm int64, out exec.Output) error {
	return out.PushWatermark(wm)
}

func (d *dropUpdateBefore) Finish(exec.Output) error { return nil }

func (d *dropUpdateBefore) Close() error { return nil }

// Stateless implements exec.StatelessOperator: the output batch is flushed
// before every call returns.
func (*dropUpdateBefore) Stateless() {}

var _ exec.StatelessOperator = (*dropUpdateBefore)(nil)
