// Package window owns the window operators of the runtime: window aggregation
// over TUMBLE, HOP, CUMULATE and SESSION windows in event time and processing
// time, and the window table-valued function that appends window_start,
// window_end and window_time to every row without aggregating.
//
// Sliding windows (HOP, CUMULATE) share slices: a row is folded into the one
// accumulator of its (key, slice), and a window is the merge of its slices at
// the moment it fires. Window boundaries are computed on local wall-clock time
// when the time attribute is a TIMESTAMP_LTZ (WindowSpec.Loc), as Flink does.
package window

import (
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/tz"
	"github.com/flinksql/flinksql/types"
)

// AggregateSpec describes a window aggregation.
type AggregateSpec struct {
	Window  exec.WindowSpec
	KeyCols []int           // grouping keys (besides the window) in the input row
	Aggs    exec.AggsHandle // one instance per operator instance
}

// NewAggregate returns the window aggregate operator. Output rows (+I only)
// are laid out as [key columns..., aggregate results..., window_start,
// window_end, window_time].
func NewAggregate(spec AggregateSpec) (exec.Operator, error) {
	if err := validate(spec.Window); err != nil {
		return nil, err
	}
	if spec.Aggs == nil {
		return nil, fmt.Errorf("window aggregate: no aggregate handle")
	}
	for _, c := range spec.KeyCols {
		if c < 0 {
			return nil, fmt.Errorf("window aggregate: invalid key column %d", c)
		}
	}
	if spec.Window.Attached && (spec.Window.EndCol < 0 || spec.Window.Kind == exec.Session) {
		return nil, fmt.Errorf("window aggregate: a window-attached aggregation needs the window_end column of a TUMBLE, HOP or CUMULATE window")
	}
	if spec.Window.EventTime && !spec.Window.Attached && spec.Window.TimeCol < 0 {
		return nil, fmt.Errorf("window aggregate: invalid time column %d", spec.Window.TimeCol)
	}
	if spec.Window.Kind == exec.Session {
		return newSessionAggregate(spec), nil
	}
	return newSlicingAggregate(spec), nil
}

// NewTableFunction returns the window TVF operator (TUMBLE/HOP/CUMULATE
// without aggregation): output = input columns followed by window_start,
// window_end, window_time; a row that belongs to several windows (HOP,
// CUMULATE) is emitted once per window. Row kinds pass through.
func NewTableFunction(w exec.WindowSpec, inWidth int) (exec.Operator, error) {
	if err := validate(w); err != nil {
		return nil, err
	}
	if w.Kind == exec.Session {
		return nil, fmt.Errorf("window table function: SESSION is only supported together with an aggregation over window_start and window_end")
	}
	if inWidth < 0 || (w.EventTime && (w.TimeCol < 0 || w.TimeCol >= inWidth)) {
		return nil, fmt.Errorf("window table function: time column %d outside of a row of %d columns", w.TimeCol, inWidth)
	}
	return newTableFunction(w, inWidth), nil
}

// validate checks the window parameters with the messages Flink gives.
func validate(w exec.WindowSpec) error {
	switch w.Kind {
	case exec.Tumble:
		if w.Size <= 0 {
			return fmt.Errorf("Tumbling Window parameters must satisfy size > 0, but got size %dms.", w.Size)
		}
		if abs(w.Offset) >= w.Size {
			return fmt.Errorf("Tumbling Window parameters must satisfy abs(offset) < size, but got size %dms and offset %dms.", w.Size, w.Offset)
		}
	case exec.Hop:
		if w.Size <= 0 || w.Slide <= 0 {
			return fmt.Errorf("Hopping Window must satisfy slide > 0 and size > 0, but got slide %dms and size %dms.", w.Slide, w.Size)
		}
		if w.Size%w.Slide != 0 && !w.Legacy {
			return fmt.Errorf("HOP table function based aggregate requires size must be an integral multiple of slide, but got size %d ms and slide %d ms", w.Size, w.Slide)
		}
	case exec.Cumulate:
		if w.Size <= 0 || w.Step <= 0 {
			return fmt.Errorf("Cumulative Window parameters must satisfy maxSize > 0 and step > 0, but got maxSize %dms and step %dms.", w.Size, w.Step)
		}
		if w.Size%w.Step != 0 {
			return fmt.Errorf("CUMULATE table function based aggregate requires maxSize must be an integral multiple of step, but got maxSize %d ms and step %d ms", w.Size, w.Step)
		}
	case exec.Session:
		if w.Gap <= 0 {
			return fmt.Errorf("Session Window parameters must satisfy gap > 0, but got gap %dms.", w.Gap)
		}
	default:
		return fmt.Errorf("unknown window kind %d", w.Kind)
	}
	return nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// windowStart aligns ts down to a multiple of size plus offset.
func windowStart(ts, offset, size int64) int64 {
	rem := (ts - offset) % size
	if rem < 0 {
		return ts - (rem + size)
	}
	return ts - rem
}

// slicer holds the slice arithmetic of TUMBLE, HOP and CUMULATE, all on local
// (shifted) millis. A slice is identified by its end.
type slicer struct {
	kind      exec.WindowKind
	size      int64
	offset    int64
	sliceSize int64 // TUMBLE: size; HOP: gcd(size, slide); CUMULATE: step
	interval  int64 // distance between the ends of consecutive windows sharing a slice
	// attached: every slice is one window, the one its rows carry (the
	// slice end is the row's window_end).
	attached bool
}

func newSlicer(w exec.WindowSpec) slicer {
	s := slicer{kind: w.Kind, size: w.Size, offset: w.Offset, attached: w.Attached}
	switch w.Kind {
	case exec.Tumble:
		s.sliceSize, s.interval = w.Size, w.Size
	case exec.Hop:
		s.sliceSize, s.interval = gcd(w.Size, w.Slide), w.Slide
	case exec.Cumulate:
		s.sliceSize, s.interval = w.Step, w.Step
	}
	return s
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (s *slicer) sliceEnd(local int64) int64 {
	return windowStart(local, s.offset, s.sliceSize) + s.sliceSize
}

// lastWindowEnd is the end of the last window that contains the slice.
func (s *slicer) lastWindowEnd(sliceEnd int64) int64 {
	if s.attached {
		return sliceEnd
	}
	switch s.kind {
	case exec.Hop:
		// Window ends lie on the slide's grid; with a size that is not a
		// multiple of the slide, the last one holding the slice is the
		// grid point at or below the latest end that still does.
		return windowStart(sliceEnd-s.sliceSize+s.size, s.offset, s.interval)
	case exec.Cumulate:
		return windowStart(sliceEnd-1, s.offset, s.size) + s.size
	}
	return sliceEnd
}

// firstWindowEnd is the end of the first window holding the slice ending
// at sliceEnd: the slice end itself, except for a HOP whose slices are
// finer than its slide (size not a multiple of the slide).
func (s *slicer) firstWindowEnd(sliceEnd int64) int64 {
	if s.kind == exec.Hop && !s.attached && s.sliceSize != s.interval {
		return windowStart(sliceEnd-1, s.offset, s.interval) + s.interval
	}
	return sliceEnd
}

// firstSliceEnd is the lower bound (exclusive) of the ends of the slices
// that make up the window [start, end).
func (s *slicer) firstSliceEnd(start, end int64) int64 {
	if s.attached {
		return end - 1
	}
	return start
}

// windowStartOf returns the start of the window ending at end.
func (s *slicer) windowStartOf(end int64) int64 {
	if s.kind == exec.Cumulate {
		return windowStart(end-1, s.offset, s.size)
	}
	return end - s.size
}

// windowProps fills window_start, window_end and window_time for the window
// [start, end) given in local millis.
func windowProps(z *tz.Zone, start, end int64, dst []types.Value) {
	dst[0] = types.TimestampMillis(start)
	dst[1] = types.TimestampMillis(end)
	dst[2] = types.TimestampMillis(z.ToUTC(end - 1))
}

// nopMetrics stands in when the runtime gives no metrics.
func metricsOf(ctx *exec.OperatorContext) *exec.OperatorMetrics {
	if ctx != nil && ctx.Metrics != nil {
		return ctx.Metrics
	}
	return &exec.OperatorMetrics{}
}

// allRetracted reports whether every row accumulated into acc was retracted
// again: over an updating input such a window emits nothing, as Flink's
// group window counts the rows it holds. Handles that do not count rows
// (no RecordCount) never say so.
func allRetracted(h exec.AggsHandle, acc []types.Value) bool {
	rc, ok := h.(interface{ RecordCount([]types.Value) int64 })
	return ok && rc.RecordCount(acc) == 0
}
