package plan

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/types"
)

var (
	callSum   = AggCall{Text: "SUM(v)", Call: agg.Call{Name: "SUM", ArgCols: []int{0}, ArgTypes: []types.Type{types.IntType}, FilterCol: -1}}
	callCount = AggCall{Text: "COUNT(*)", Call: agg.Call{Name: "COUNT", FilterCol: -1}}
	callMax   = AggCall{Text: "MAX(v)", Call: agg.Call{Name: "MAX", ArgCols: []int{0}, ArgTypes: []types.Type{types.IntType}, FilterCol: -1}}
)

func aggOpState(t *testing.T, window bool, calls ...AggCall) *exec.OperatorState {
	t.Helper()
	st := &exec.OperatorState{Kind: "GroupAggregate"}
	(&stateIDs{}).aggState(st, calls, agg.Options{}, "", window)
	if st.Migrate == nil {
		t.Fatal("no migration")
	}
	return st
}

func decodeRow(t *testing.T, b []byte) []types.Value {
	t.Helper()
	n, w := binary.Uvarint(b)
	vals, rest, err := decodeN(b[w:], int(n))
	if err != nil || len(rest) != 0 {
		t.Fatalf("decoding %x: %v, %d bytes left", b, err, len(rest))
	}
	return vals
}

// TestMigrateGroupAccumulator: the group aggregate's stored accumulator
// row (accumulator, then last emitted results) of SUM(v) over 3 rows
// summing 12 is converted to the layout of COUNT(*), SUM(v): the row count
// stays, COUNT(*) starts from its initial value 0 (and so does its last
// result), SUM keeps its sum and count. Layouts (agg.Handle): slot 0 is
// the row count; SUM takes 2 slots (sum, non-null count), COUNT 1.
func TestMigrateGroupAccumulator(t *testing.T) {
	old := aggOpState(t, false, callSum)
	cur := aggOpState(t, false, callCount, callSum)
	rw, err := cur.Migrate(old)
	if err != nil {
		t.Fatal(err)
	}
	stored := types.AppendRow(nil, []types.Value{types.Int(3), types.Int(12), types.Int(3), types.Int(12)})
	got, err := rw["acc"](stored)
	if err != nil {
		t.Fatal(err)
	}
	want := []types.Value{types.Int(3), types.Int(0), types.Int(12), types.Int(3), types.Int(0), types.Int(12)}
	if g := decodeRow(t, got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("migrated acc %v, want %v", g, want)
	}
	// Removing SUM again: its accumulator goes, COUNT keeps its value.
	rw, err = old.Migrate(cur)
	if err != nil {
		t.Fatal(err)
	}
	stored = types.AppendRow(nil, []types.Value{types.Int(3), types.Int(2), types.Int(12), types.Int(3), types.Int(2), types.Int(12)})
	got, err = rw["acc"](stored)
	if err != nil {
		t.Fatal(err)
	}
	want = []types.Value{types.Int(3), types.Int(12), types.Int(3), types.Int(12)}
	if g := decodeRow(t, got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("migrated acc %v, want %v", g, want)
	}
	if _, err := rw["acc"](types.AppendRow(nil, []types.Value{types.Int(1)})); err == nil {
		t.Error("a stored row of another width was converted")
	}
}

// TestMigrateWindowAccumulators: a window slice's accumulator (arrival
// sequence, values) and a key's sessions (count; start, end, sequence,
// values each) of MAX(v) are converted to MAX(v), COUNT(*): the sequence
// numbers and bounds stay, COUNT(*) starts at 0.
func TestMigrateWindowAccumulators(t *testing.T) {
	old := aggOpState(t, true, callMax)
	cur := aggOpState(t, true, callMax, callCount)
	rw, err := cur.Migrate(old)
	if err != nil {
		t.Fatal(err)
	}
	slice := binary.AppendUvarint(nil, 7)
	for _, v := range []types.Value{types.Int(2), types.Int(40)} {
		slice = types.AppendValue(slice, v)
	}
	got, err := rw["window-slice-acc"](slice)
	if err != nil {
		t.Fatal(err)
	}
	want := binary.AppendUvarint(nil, 7)
	for _, v := range []types.Value{types.Int(2), types.Int(40), types.Int(0)} {
		want = types.AppendValue(want, v)
	}
	if string(got) != string(want) {
		t.Errorf("slice accumulator %x, want %x", got, want)
	}

	sessions := binary.AppendUvarint(nil, 2)
	wantS := binary.AppendUvarint(nil, 2)
	for i, s := range [][3]int64{{1000, 5000, 1}, {9000, 12000, 4}} {
		sessions = binary.AppendVarint(sessions, s[0])
		sessions = binary.AppendVarint(sessions, s[1])
		sessions = binary.AppendUvarint(sessions, uint64(s[2]))
		sessions = types.AppendValue(types.AppendValue(sessions, types.Int(int64(i+1))), types.Int(int64(10*(i+1))))
		wantS = binary.AppendVarint(wantS, s[0])
		wantS = binary.AppendVarint(wantS, s[1])
		wantS = binary.AppendUvarint(wantS, uint64(s[2]))
		wantS = types.AppendValue(types.AppendValue(types.AppendValue(wantS, types.Int(int64(i+1))), types.Int(int64(10*(i+1)))), types.Int(0))
	}
	got, err = rw["window-sessions"](sessions)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wantS) {
		t.Errorf("sessions %x, want %x", got, wantS)
	}
	// The same layout needs no conversion.
	if rw, err := cur.Migrate(cur); err != nil || rw != nil {
		t.Errorf("same layout: rewrites %v, %v; want none", rw, err)
	}
}
