package exec

import (
	"errors"
	"fmt"

	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// finalOp turns a changelog over a bounded input into its final rows: it
// counts every distinct row (+I and +U add one, -U and -D take one away)
// and, at end of input, emits each row with a positive count that many
// times as an insert. This is batch mode's "end of input → emit final" step
// (ARCHITECTURE.md, "Batch execution"): the streaming operators below it run
// unchanged, their changelog's net effect is the batch answer, and nothing
// downstream sees a retraction.
//
// The counts are keyed state keyed by the whole row (the input is hash
// partitioned on every column), so on rocksdb the distinct rows live on disk
// until Finish walks them with kv.Backend.Entries. The watermark is held
// back and emitted after the rows, as the sort does, so an event-time
// operator downstream does not see them as late.
type finalOp struct {
	allCols []int
	b       *kv.Backend
	counts  *kv.ValueState[int64]
	heldWM  *kv.ValueState[int64]
	wm      int64
	keyBuf  []byte
}

// Keyed state names of finalOp.
const (
	finalCountState = "final/count"
	finalWMState    = "final/wm"
)

// NewFinal returns the operator that emits the final rows of its
// changelog input, of width columns, at end of input (see finalOp). Its
// input must be hash partitioned on all columns (or be at parallelism 1).
func NewFinal(width int) Operator {
	cols := make([]int, width)
	for i := range cols {
		cols[i] = i
	}
	return &finalOp{allCols: cols, wm: MinWatermark}
}

// OpenKeyedState implements KeyedOperator.
func (f *finalOp) OpenKeyedState(b *kv.Backend) error {
	f.b = b
	var err error
	if f.counts, err = kv.NewValueState(b, finalCountState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("final rows: %w", err)
	}
	if f.heldWM, err = kv.NewValueState(b, finalWMState, kv.Int64{}, kv.Options{}); err != nil {
		return fmt.Errorf("final rows: %w", err)
	}
	if err := setConstantKey(b); err != nil {
		return fmt.Errorf("final rows: %w", err)
	}
	wm, ok, err := f.heldWM.Get(nil)
	if err != nil {
		return fmt.Errorf("final rows: reading the restored watermark: %w", err)
	}
	if ok {
		f.wm = wm
	}
	return nil
}

// PrepareSnapshot implements KeyedOperator: the counts are written to the
// backend as rows arrive; only the held-back watermark is kept outside it.
func (f *finalOp) PrepareSnapshot(CheckpointID) error {
	if f.wm == MinWatermark {
		return nil
	}
	if err := setConstantKey(f.b); err != nil {
		return fmt.Errorf("final rows: %w", err)
	}
	if err := f.heldWM.Put(nil, f.wm); err != nil {
		return fmt.Errorf("final rows: writing the watermark: %w", err)
	}
	return nil
}

func (f *finalOp) Open(*OperatorContext) error { return nil }
func (f *finalOp) Close() error                { return nil }

func (f *finalOp) ProcessBatch(_ int, b *types.Batch, _ Output) error {
	if b.Width() != len(f.allCols) {
		return fmt.Errorf("final rows: input rows of width %d, want %d", b.Width(), len(f.allCols))
	}
	for i, r := range b.Rows {
		delta := int64(1)
		if k := b.Kinds[i]; k == types.UpdateBefore || k == types.Delete {
			delta = -1
		}
		f.keyBuf = types.AppendRow(f.keyBuf[:0], r)
		if err := f.b.SetCurrentKey(types.HashColumns(r, f.allCols), f.keyBuf); err != nil {
			return fmt.Errorf("final rows: %w", err)
		}
		n, _, err := f.counts.Get(nil)
		if err != nil {
			return fmt.Errorf("final rows: %w", err)
		}
		if n += delta; n == 0 {
			err = f.counts.Clear(nil)
		} else {
			err = f.counts.Put(nil, n)
		}
		if err != nil {
			return fmt.Errorf("final rows: %w", err)
		}
	}
	return nil
}

func (f *finalOp) ProcessWatermark(wm int64, _ Output) error {
	f.wm = wm
	return nil
}

// errRetractedMissing is returned when the changelog retracts more copies
// of a row than it inserted: the input is not a consistent changelog, and
// dropping the surplus silently would hide lost data.
var errRetractedMissing = errors.New("final rows: the changelog retracts a row more often than it inserted it")

func (f *finalOp) Finish(out Output) error {
	var em Emitter
	em.Init(len(f.allCols), types.DefaultBatchSize)
	err := f.b.Entries(f.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != finalCountState {
			return nil
		}
		n, err := kv.Int64{}.Decode(e.Value)
		if err != nil {
			return fmt.Errorf("final rows: stored count: %w", err)
		}
		row, _, err := types.DecodeRow(e.Key)
		if err != nil {
			return fmt.Errorf("final rows: stored row: %w", err)
		}
		if n < 0 {
			return fmt.Errorf("%w: %v (count %d)", errRetractedMissing, row, n)
		}
		for ; n > 0; n-- {
			if err := em.Copy(types.Insert, row, out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := em.Flush(out); err != nil {
		return err
	}
	if f.wm != MinWatermark {
		return out.PushWatermark(f.wm)
	}
	return nil
}
