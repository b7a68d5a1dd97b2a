package agg

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestCountedSetOfInts drives a counted set of integers (the DISTINCT of
// an id column) through additions in random and in ascending order,
// repeats and retractions, against a Go map: its keys must stay sorted
// and unique, with the counts of the map, and every setAdd must report
// the counts before and after.
func TestCountedSetOfInts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	m := &types.MapValue{}
	model := map[int64]int64{}
	add := func(k, delta int64) {
		before, after := setAdd(m, types.Int(k), delta)
		wantBefore := model[k]
		wantAfter := wantBefore + delta
		if wantBefore == 0 && delta == 0 {
			wantAfter = 0
		}
		if before != wantBefore || after != wantAfter {
			t.Fatalf("setAdd(%d, %d) = %d, %d, want %d, %d", k, delta, before, after, wantBefore, wantAfter)
		}
		if wantAfter == 0 {
			delete(model, k)
		} else {
			model[k] = wantAfter
		}
	}
	for i := range 3000 {
		switch {
		case i%3 == 0:
			add(int64(1000+i), 1) // ascending, above every key so far
		case i%7 == 0 && len(m.Keys) > 0:
			add(m.Keys[rng.IntN(len(m.Keys))].N, -1) // a retraction of a present key
		default:
			add(rng.Int64N(4000)-2000, rng.Int64N(3)) // random, repeats, delta 0 too
		}
	}
	add(-1<<63, 1)
	add(1<<63-1, 1)
	var want []int64
	for k := range model {
		want = append(want, k)
	}
	slices.Sort(want)
	if len(m.Keys) != len(want) || len(m.Values) != len(want) {
		t.Fatalf("set has %d keys and %d counts, want %d", len(m.Keys), len(m.Values), len(want))
	}
	for i, k := range m.Keys {
		if k.K != types.KindInt || k.N != want[i] || m.Values[i].N != model[want[i]] {
			t.Fatalf("entry %d is %v×%d, want %d×%d", i, k, m.Values[i].N, want[i], model[want[i]])
		}
		if i, found := setSearch(m, k); !found || m.Keys[i].N != k.N {
			t.Fatalf("setSearch(%d) = %d, %v", k.N, i, found)
		}
	}
	if _, found := setSearch(m, types.Int(1_000_000)); found {
		t.Fatal("setSearch found an absent key")
	}
}
