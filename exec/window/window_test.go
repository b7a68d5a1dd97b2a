package window

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

func TestTumbleEventTime(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}))
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	mustOpen(t, op, rt)
	c := newCollector()
	// Out of order within the watermark bound: 12s arrives before 8s.
	process(t, op, c, in{"a", 1, sec(1)}, in{"b", 2, sec(3)}, in{"a", 3, sec(12)}, in{"a", 4, sec(8)}, in{"b", 5, sec(9.999)})
	watermark(t, op, c, sec(9.998))
	expect(t, "window [0s, 10s) is not complete before 9.999", c.Take(), "WM(00:00:09.998)")

	process(t, op, c, in{"c", 6, sec(2)}, in{"b", 7, sec(15)})
	watermark(t, op, c, sec(9.999))
	expect(t, "first window", c.Take(),
		"+I(a, 2, 5, 4, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 2, 7, 5, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(c, 1, 6, 6, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)")

	// 5s belongs to the fired window: dropped and counted.
	process(t, op, c, in{"a", 8, sec(5)}, in{"b", 9, sec(19.999)})
	if got := rt.Metrics.LateRowsDropped.Load(); got != 1 {
		t.Errorf("late rows dropped = %d, want 1", got)
	}
	watermark(t, op, c, sec(20))
	expect(t, "second window", c.Take(),
		"+I(a, 1, 3, 3, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"+I(b, 2, 16, 9, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"WM(00:00:20.000)")
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "nothing left", c.Take(), "WM(max)")
	if n := op.(*slicingAggregate).state.numKeys(); n != 0 {
		t.Errorf("%d keys left in state after all windows fired", n)
	}
}

func TestHopEventTime(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000}))
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	mustOpen(t, op, rt)
	c := newCollector()
	// Slices: [0,5): a1 | [5,10): a2 b4 | [10,15): a8. Every row is in 2 windows.
	process(t, op, c, in{"a", 1, sec(1)}, in{"a", 2, sec(6)}, in{"b", 4, sec(7)}, in{"a", 8, sec(12)})
	watermark(t, op, c, sec(9.999))
	expect(t, "windows ending at 5s and 10s", c.Take(),
		"+I(a, 1, 1, 1, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"+I(a, 2, 3, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 1, 4, 4, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)")

	// 3s: its slice [0,5) fired and so did its last window [0,10) → dropped.
	// 7s and 8s: slice [5,10) fired but window [5,15) has not → still counted there.
	process(t, op, c, in{"a", 100, sec(3)}, in{"b", 50, sec(7)}, in{"c", 20, sec(8)})
	if got := rt.Metrics.LateRowsDropped.Load(); got != 1 {
		t.Errorf("late rows dropped = %d, want 1", got)
	}
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "windows ending at 15s and 20s", c.Take(),
		"+I(a, 2, 10, 8, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(b, 2, 54, 50, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(c, 1, 20, 20, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
		"+I(a, 1, 8, 8, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
		"WM(max)")
	if n := op.(*slicingAggregate).state.numKeys(); n != 0 {
		t.Errorf("%d keys left in state after all windows fired", n)
	}
}

// Keys are emitted in the order they first arrived in the window's slices,
// even when a later slice saw the key first.
func TestHopKeyOrderAcrossSlices(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000}))
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, op, &fakeRuntime{})
	c := newCollector()
	process(t, op, c, in{"x", 1, sec(6)}, in{"y", 2, sec(1)}, in{"x", 3, sec(2)})
	watermark(t, op, c, sec(9.999))
	expect(t, "windows [-5,5) and [0,10)", c.Take(),
		"+I(y, 1, 2, 2, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"+I(x, 1, 3, 3, 23:59:55.000, 00:00:05.000, 00:00:04.999)",
		"+I(x, 2, 4, 3, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(y, 1, 2, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"WM(00:00:09.999)")
}

func TestCumulateEventTime(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Cumulate, Step: 2_000, Size: 6_000}))
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	mustOpen(t, op, rt)
	c := newCollector()
	process(t, op, c, in{"a", 1, sec(0.5)}, in{"a", 2, sec(2.5)}, in{"b", 3, sec(3)}, in{"a", 4, sec(5.9)}, in{"a", 5, sec(6.1)})
	watermark(t, op, c, sec(3.999))
	expect(t, "windows [0,2) and [0,4)", c.Take(),
		"+I(a, 1, 1, 1, 00:00:00.000, 00:00:02.000, 00:00:01.999)",
		"+I(a, 2, 3, 2, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
		"+I(b, 1, 3, 3, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
		"WM(00:00:03.999)")
	// 1s: its slice fired, but the period's last window [0,6) has not.
	process(t, op, c, in{"c", 10, sec(1)})
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "rest", c.Take(),
		"+I(a, 3, 7, 4, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(b, 1, 3, 3, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(c, 1, 10, 10, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:08.000, 00:00:07.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:10.000, 00:00:09.999)",
		"+I(a, 1, 5, 5, 00:00:06.000, 00:00:12.000, 00:00:11.999)",
		"WM(max)")
	if got := rt.Metrics.LateRowsDropped.Load(); got != 0 {
		t.Errorf("late rows dropped = %d, want 0", got)
	}
}

func TestSessionEventTime(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Session, Gap: 5_000}))
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	mustOpen(t, op, rt)
	c := newCollector()
	// a: [0,5) and [10,15) are bridged by 5s's [5,10), which touches both.
	process(t, op, c, in{"a", 1, sec(0)}, in{"a", 2, sec(10)}, in{"b", 3, sec(1)}, in{"a", 4, sec(5)}, in{"b", 5, sec(20)})
	watermark(t, op, c, sec(10))
	expect(t, "b's first session", c.Take(),
		"+I(b, 1, 3, 3, 00:00:01.000, 00:00:06.000, 00:00:05.999)",
		"WM(00:00:10.000)")
	// b at 2s: [2,7) has passed the watermark and meets no open session → late.
	// a at 4s: [4,9) alone would be late, but it merges into the open [0,15).
	process(t, op, c, in{"b", 6, sec(2)}, in{"a", 7, sec(4)})
	if got := rt.Metrics.LateRowsDropped.Load(); got != 1 {
		t.Errorf("late rows dropped = %d, want 1", got)
	}
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "rest", c.Take(),
		"+I(a, 4, 14, 7, 00:00:00.000, 00:00:15.000, 00:00:14.999)",
		"+I(b, 1, 5, 5, 00:00:20.000, 00:00:25.000, 00:00:24.999)",
		"WM(max)")
	if n := op.(*sessionAggregate).keys.Size(); n != 0 {
		t.Errorf("%d keys left in state", n)
	}
}

func TestTumbleOffset(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000, Offset: 3_000}))
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, op, &fakeRuntime{})
	c := newCollector()
	process(t, op, c, in{"a", 1, sec(2)}, in{"a", 2, sec(3)}, in{"a", 4, sec(12.999)}, in{"a", 8, sec(13)})
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "windows aligned to 3s", c.Take(),
		"+I(a, 1, 1, 1, 23:59:53.000, 00:00:03.000, 00:00:02.999)",
		"+I(a, 2, 6, 4, 00:00:03.000, 00:00:13.000, 00:00:12.999)",
		"+I(a, 1, 8, 8, 00:00:13.000, 00:00:23.000, 00:00:22.999)",
		"WM(max)")
}

func TestTumbleDayTimestampLTZ(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 24 * 3600_000, Loc: loc}))
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, op, &fakeRuntime{})
	c := &collector{Time: dateTime}
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	// 15:30Z is 23:30 on Jan 1 in Shanghai; 16:30Z is 00:30 on Jan 2.
	process(t, op, c, in{"a", 1, at("2024-01-01T15:30:00Z")}, in{"a", 2, at("2024-01-01T16:30:00Z")})
	watermark(t, op, c, at("2024-01-01T15:59:59.998Z"))
	expect(t, "local day not over", c.Take(), "WM(2024-01-01 15:59:59.998)")
	watermark(t, op, c, at("2024-01-01T15:59:59.999Z"))
	expect(t, "local midnight", c.Take(),
		"+I(a, 1, 1, 1, 2024-01-01 00:00:00.000, 2024-01-02 00:00:00.000, 2024-01-01 15:59:59.999)",
		"WM(2024-01-01 15:59:59.999)")
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "second day", c.Take(),
		"+I(a, 1, 2, 2, 2024-01-02 00:00:00.000, 2024-01-03 00:00:00.000, 2024-01-02 15:59:59.999)",
		"WM(max)")
}

func TestTumbleProcessingTime(t *testing.T) {
	spec := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	op, err := NewAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{Now: sec(1)}
	mustOpen(t, op, rt)
	c := newCollector()
	// The time column is ignored: rows are placed by the clock.
	process(t, op, c, in{"a", 1, 0}, in{"b", 2, 0})
	rt.Now = sec(4)
	process(t, op, c, in{"a", 3, 0})
	if len(rt.Timers) != 1 || rt.Timers[0] != sec(9.999) {
		t.Fatalf("timers = %v, want [%d]", rt.Timers, sec(9.999))
	}
	handler := op.(exec.ProcessingTimeHandler)
	if err := handler.OnProcessingTime(sec(9.998), c); err != nil {
		t.Fatal(err)
	}
	expect(t, "before the window end", c.Take())
	// Watermarks pass through and fire nothing.
	watermark(t, op, c, sec(100))
	expect(t, "watermark", c.Take(), "WM(00:01:40.000)")
	rt.Now = sec(10)
	if err := handler.OnProcessingTime(sec(9.999), c); err != nil {
		t.Fatal(err)
	}
	expect(t, "fired by the timer", c.Take(),
		"+I(a, 2, 4, 3, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
		"+I(b, 1, 2, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)")
	rt.Now = sec(12)
	process(t, op, c, in{"c", 5, 0})
	if err := op.Finish(c); err != nil {
		t.Fatal(err)
	}
	expect(t, "pending processing-time window not fired at finish", c.Take())
	if got := rt.Timers[len(rt.Timers)-1]; got != sec(19.999) {
		t.Errorf("last timer = %d, want %d", got, sec(19.999))
	}
}

func TestSessionProcessingTime(t *testing.T) {
	spec := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	op, err := NewAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{Now: sec(0)}
	mustOpen(t, op, rt)
	c := newCollector()
	process(t, op, c, in{"a", 1, 0})
	rt.Now = sec(3)
	process(t, op, c, in{"a", 2, 0})
	if err := op.(exec.ProcessingTimeHandler).OnProcessingTime(sec(4.999), c); err != nil {
		t.Fatal(err)
	}
	expect(t, "extended session still open", c.Take())
	if err := op.(exec.ProcessingTimeHandler).OnProcessingTime(sec(7.999), c); err != nil {
		t.Fatal(err)
	}
	expect(t, "session [0,8)", c.Take(), "+I(a, 2, 3, 2, 00:00:00.000, 00:00:08.000, 00:00:07.999)")
}

func TestTableFunction(t *testing.T) {
	tests := []struct {
		name string
		spec exec.WindowSpec
		rows []in
		want []string
	}{
		{
			name: "tumble",
			spec: exec.WindowSpec{Kind: exec.Tumble, Size: 10_000},
			rows: []in{{"x", 1, sec(7)}, {"y", 2, sec(10)}},
			want: []string{
				"+I(x, 1, 00:00:07.000, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
				"+I(y, 2, 00:00:10.000, 00:00:10.000, 00:00:20.000, 00:00:19.999)",
			},
		},
		{
			name: "hop row in two windows, latest first",
			spec: exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 5_000},
			rows: []in{{"x", 1, sec(7)}},
			want: []string{
				"+I(x, 1, 00:00:07.000, 00:00:05.000, 00:00:15.000, 00:00:14.999)",
				"+I(x, 1, 00:00:07.000, 00:00:00.000, 00:00:10.000, 00:00:09.999)",
			},
		},
		{
			name: "cumulate",
			spec: exec.WindowSpec{Kind: exec.Cumulate, Step: 2_000, Size: 6_000},
			rows: []in{{"x", 1, sec(3)}},
			want: []string{
				"+I(x, 1, 00:00:03.000, 00:00:00.000, 00:00:04.000, 00:00:03.999)",
				"+I(x, 1, 00:00:03.000, 00:00:00.000, 00:00:06.000, 00:00:05.999)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.EventTime, tc.spec.TimeCol = true, 2
			op, err := NewTableFunction(tc.spec, 3)
			if err != nil {
				t.Fatal(err)
			}
			mustOpen(t, op, &fakeRuntime{})
			c := newCollector()
			process(t, op, c, tc.rows...)
			expect(t, "rows", c.Take(), tc.want...)
		})
	}
}

func TestTableFunctionKindsAndNullTime(t *testing.T) {
	op, err := NewTableFunction(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000, EventTime: true, TimeCol: 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, op, &fakeRuntime{})
	c := newCollector()
	b := batchOf(in{"x", 1, sec(1)}, in{"y", 2, sec(2)})
	b.Kinds[0] = types.Delete
	b.Rows[1][2] = types.Value{}
	if err := op.ProcessBatch(0, b, c); err != nil {
		t.Fatal(err)
	}
	expect(t, "rows", c.Take(), "-D(x, 1, 00:00:01.000, 00:00:00.000, 00:00:10.000, 00:00:09.999)")
	watermark(t, op, c, sec(5))
	expect(t, "watermark", c.Take(), "WM(00:00:05.000)")
}

func TestNullRowtimeFailsAggregate(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}))
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, op, &fakeRuntime{})
	b := batchOf(in{"x", 1, sec(1)})
	b.Rows[0][2] = types.Value{}
	err = op.ProcessBatch(0, b, newCollector())
	if err == nil || !strings.Contains(err.Error(), "RowTime field should not be null") {
		t.Fatalf("err = %v", err)
	}
}

func TestInvalidSpecs(t *testing.T) {
	tests := []struct {
		spec exec.WindowSpec
		want string
	}{
		{exec.WindowSpec{Kind: exec.Tumble, Size: 0}, "Tumbling Window parameters must satisfy size > 0, but got size 0ms."},
		{exec.WindowSpec{Kind: exec.Tumble, Size: 1000, Offset: -1000}, "Tumbling Window parameters must satisfy abs(offset) < size, but got size 1000ms and offset -1000ms."},
		{exec.WindowSpec{Kind: exec.Hop, Size: 10_000, Slide: 0}, "Hopping Window must satisfy slide > 0 and size > 0, but got slide 0ms and size 10000ms."},
		{exec.WindowSpec{Kind: exec.Hop, Size: 600_000, Slide: 240_000}, "HOP table function based aggregate requires size must be an integral multiple of slide, but got size 600000 ms and slide 240000 ms"},
		{exec.WindowSpec{Kind: exec.Cumulate, Size: -1, Step: 1000}, "Cumulative Window parameters must satisfy maxSize > 0 and step > 0, but got maxSize -1ms and step 1000ms."},
		{exec.WindowSpec{Kind: exec.Cumulate, Size: 10_000, Step: 3_000}, "CUMULATE table function based aggregate requires maxSize must be an integral multiple of step, but got maxSize 10000 ms and step 3000 ms"},
		{exec.WindowSpec{Kind: exec.Session, Gap: 0}, "Session Window parameters must satisfy gap > 0, but got gap 0ms."},
	}
	for _, tc := range tests {
		_, err := NewAggregate(eventTime(tc.spec))
		if err == nil || err.Error() != tc.want {
			t.Errorf("NewAggregate(%+v): err = %v, want %q", tc.spec, err, tc.want)
		}
		if tc.spec.Kind == exec.Session {
			continue
		}
		if _, err := NewTableFunction(tc.spec, 3); err == nil || err.Error() != tc.want {
			t.Errorf("NewTableFunction(%+v): err = %v, want %q", tc.spec, err, tc.want)
		}
	}
}
