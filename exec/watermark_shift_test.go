package exec

import (
	"math"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestWatermarkShift: a source's watermark of a column minus a constant,
// taken from the rows directly, is the one the watermark expression gives
// (largest candidate, NULLs skipped, the earlier watermark kept when it is
// larger, Go's wrapping arithmetic as TIMESTAMP - INTERVAL's), and a value
// that is not a TIMESTAMP fails as the expression does.
func TestWatermarkShift(t *testing.T) {
	const col, delay = 1, 4000
	expr := projectorFunc(func(in, out types.Row) error {
		v := in[col]
		if v.K != types.KindTimestamp {
			out[0] = v // NULL stays NULL; anything else is the bad kind
			return nil
		}
		out[0] = types.TimestampMillis(v.N - delay)
		return nil
	})
	row := func(v types.Value) types.Row { return types.Row{types.Int(0), v} }
	ts := types.TimestampMillis
	early := int64(math.MinInt64 + 1)
	for _, c := range []struct {
		name  string
		start int64
		rows  []types.Row
		want  int64
	}{
		{"largest", MinWatermark, []types.Row{row(ts(10_000)), row(ts(30_000)), row(ts(20_000))}, 26_000},
		{"NULLs skipped", MinWatermark, []types.Row{row(types.Value{}), row(ts(5_000)), row(types.Value{})}, 1_000},
		{"only NULLs", MinWatermark, []types.Row{row(types.Value{})}, MinWatermark},
		{"earlier watermark larger", 50_000, []types.Row{row(ts(30_000))}, 50_000},
		{"wraps as the expression", MinWatermark, []types.Row{row(ts(early))}, early - delay},
	} {
		for _, fast := range []bool{false, true} {
			s := &sourceRun{wmExpr: expr, wmOut: make(types.Row, 1)}
			sp := &splitState{wm: c.start}
			var err error
			if fast {
				err = s.shiftCandidates(sp, &WatermarkShift{Col: col, Millis: -delay}, c.rows)
			} else {
				for _, r := range c.rows {
					if err = s.candidate(sp, r); err != nil {
						break
					}
				}
			}
			if err != nil || sp.wm != c.want {
				t.Errorf("%s (shift %v): watermark %d, %v; want %d", c.name, fast, sp.wm, err, c.want)
			}
		}
	}
	s := &sourceRun{wmExpr: expr, wmOut: make(types.Row, 1)}
	sp := &splitState{wm: MinWatermark}
	err := s.shiftCandidates(sp, &WatermarkShift{Col: col, Millis: -delay}, []types.Row{row(ts(9_000)), row(types.String("x"))})
	if err == nil {
		t.Fatal("a STRING watermark column was accepted")
	}
	if sp.wm != 5_000 {
		t.Errorf("watermark %d after the good row, want 5000", sp.wm)
	}
}
