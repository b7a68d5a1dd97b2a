package bloom

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// A key filter never denies an added key, and with about 6 bits per key
// (the 20 M keys of a 256 MB budget's sixteenth) rejects most others: 4
// probes at a fill of 1 - e^(-4/6) ≈ 0.49 give ≈ 5.6 % false positives.
func TestFilter(t *testing.T) {
	f := New(64 << 10) // 524 288 bits
	const n = 524288 / 6
	row := make(types.Row, 1)
	hash := func(k int64) uint64 { row[0] = types.Int(k); return types.HashColumns(row, []int{0}) }
	for k := range int64(n) {
		f.Add(hash(k))
	}
	for k := range int64(n) {
		if !f.MayContain(hash(k)) {
			t.Fatalf("key %d was added but the filter denies it", k)
		}
	}
	fp := 0
	const probes = 100_000
	for k := range int64(probes) {
		if f.MayContain(hash(n + k)) {
			fp++
		}
	}
	if rate := float64(fp) / probes; rate > 0.08 {
		t.Fatalf("false-positive rate %.3f, want about 0.056", rate)
	}
	var none *Filter
	if !none.MayContain(1) {
		t.Fatal("no filter (after a restore) must let every lookup through")
	}
}
