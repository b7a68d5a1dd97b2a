package agg

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestOverHandle runs ROW_NUMBER, RANK, DENSE_RANK, LAG(x), LAG(x, 0) and
// LAG(x, 2, d) next to SUM over rows (key, x, d) accumulated one at a time,
// as a ROWS frame does, with a result after each row. Keys 1, 2, 2, 3: RANK
// 1, 2, 2, 4; DENSE_RANK 1, 2, 2, 3.
func TestOverHandle(t *testing.T) {
	it, st := types.BigIntType, types.StringType
	h, err := NewOverHandle([]Call{
		{Name: "ROW_NUMBER", FilterCol: -1},
		{Name: "RANK", ArgCols: []int{0}, ArgTypes: []types.Type{it}, FilterCol: -1},
		{Name: "SUM", ArgCols: []int{0}, ArgTypes: []types.Type{it}, FilterCol: -1},
		{Name: "DENSE_RANK", ArgCols: []int{0}, ArgTypes: []types.Type{it}, FilterCol: -1},
		{Name: "LAG", ArgCols: []int{1}, ArgTypes: []types.Type{st}, FilterCol: -1},
		{Name: "LAG", ArgCols: []int{1}, ArgTypes: []types.Type{st}, ConstArgs: []types.Value{types.Int(0)}, FilterCol: -1},
		{Name: "LAG", ArgCols: []int{1, 2}, ArgTypes: []types.Type{st, st}, ConstArgs: []types.Value{types.Int(2)}, FilterCol: -1},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acc := make([]types.Value, h.AccWidth())
	h.Init(acc)
	rows := []types.Row{
		{types.Int(1), types.String("a"), types.String("d1")},
		{types.Int(2), types.String("b"), types.String("d2")},
		{types.Int(2), types.String("c"), types.String("d3")},
		{types.Int(3), types.String("d"), types.String("d4")},
	}
	want := [][]string{
		{"1", "1", "1", "1", "NULL", "a", "d1"},
		{"2", "2", "3", "2", "a", "b", "d2"},
		{"3", "2", "5", "2", "b", "c", "a"},
		{"4", "4", "8", "3", "c", "d", "b"},
	}
	out := make([]types.Value, h.NumAggs())
	tt := t
	for i, r := range rows {
		if err := h.Accumulate(acc, r); err != nil {
			t.Fatal(err)
		}
		if err := h.Result(acc, out); err != nil {
			t.Fatal(err)
		}
		for j, v := range out {
			got := "NULL"
			if !v.IsNull() {
				t := types.BigIntType
				if v.K == types.KindString {
					t = types.StringType
				}
				got = types.FormatJava(v, t)
			}
			if got != want[i][j] {
				tt.Errorf("row %d, call %d: got %s, want %s", i, j, got, want[i][j])
			}
		}
	}
	if err := h.Retract(acc, rows[0]); err == nil {
		t.Error("Retract of ROW_NUMBER succeeded; its frame is unbounded")
	}
	if _, err := NewOverHandle([]Call{{Name: "LEAD", ArgCols: []int{0}, FilterCol: -1}}, Options{}); err == nil || err.Error() != "LEAD Function is not supported in stream mode." {
		t.Errorf("LEAD: %v", err)
	}
}
