package window

import (
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/types"
)

// tableFunction is the TUMBLE / HOP / CUMULATE window table-valued function:
// it appends window_start, window_end and window_time to each row, once per
// window the row belongs to. Like Flink's operator it keeps no state and drops
// no late rows; rows with a NULL rowtime are dropped (Flink counts them in a
// metric of their own, which OperatorMetrics does not have).
type tableFunction struct {
	spec    exec.WindowSpec
	zone    tz.Zone
	inWidth int
	ctx     *exec.OperatorContext
	metrics *exec.OperatorMetrics
	out     exec.Emitter
	props   [3]types.Value
}

func newTableFunction(w exec.WindowSpec, inWidth int) *tableFunction {
	return &tableFunction{spec: w, zone: tz.New(w.Loc), inWidth: inWidth}
}

func (f *tableFunction) Open(ctx *exec.OperatorContext) error {
	f.ctx = ctx
	f.metrics = metricsOf(ctx)
	if !f.spec.EventTime && (ctx == nil || ctx.Now == nil) {
		return fmt.Errorf("window table function: processing-time windows need a clock")
	}
	f.out.Init(f.inWidth+3, 0)
	return nil
}

func (f *tableFunction) ProcessBatch(_ int, b *types.Batch, out exec.Output) error {
	if b.Len() > 0 && len(b.Rows[0]) != f.inWidth {
		return fmt.Errorf("window table function: input rows have %d columns, expected %d", len(b.Rows[0]), f.inWidth)
	}
	var procLocal int64
	if !f.spec.EventTime {
		procLocal = f.zone.ToLocal(f.ctx.Now())
	}
	w := f.spec
	for i, row := range b.Rows {
		t := procLocal
		if w.EventTime {
			v := row[w.TimeCol]
			if v.IsNull() {
				continue
			}
			t = f.zone.ToLocal(v.Millis())
		}
		kind := b.Kinds[i]
		var err error
		switch w.Kind {
		case exec.Tumble:
			start := windowStart(t, w.Offset, w.Size)
			err = f.emit(row, kind, start, start+w.Size, out)
		case exec.Hop:
			// Latest window first, as Flink's sliding assigner lists them.
			for start := windowStart(t, w.Offset, w.Slide); start > t-w.Size && err == nil; start -= w.Slide {
				err = f.emit(row, kind, start, start+w.Size, out)
			}
		case exec.Cumulate:
			start := windowStart(t, w.Offset, w.Size)
			last := start + w.Size
			for end := windowStart(t, w.Offset, w.Step) + w.Step; end <= last && err == nil; end += w.Step {
				err = f.emit(row, kind, start, end, out)
			}
		}
		if err != nil {
			return err
		}
	}
	return f.out.Flush(out)
}

func (f *tableFunction) emit(row types.Row, kind types.RowKind, start, end int64, out exec.Output) error {
	windowProps(&f.zone, start, end, f.props[:])
	r, err := f.out.Row(kind, out)
	if err != nil {
		return err
	}
	n := copy(r, row)
	copy(r[n:], f.props[:])
	return nil
}

func (f *tableFunction) ProcessWatermark(wm int64, out exec.Output) error {
	f.metrics.CurrentWatermark.Set(wm)
	return out.PushWatermark(wm)
}

func (f *tableFunction) Finish(exec.Output) error { return nil }

func (f *tableFunction) Close() error { return nil }

// Stateless implements exec.StatelessOperator: the output batch is flushed
// before every call returns.
func (*tableFunction) Stateless() {}

var _ exec.StatelessOperator = (*tableFunction)(nil)
