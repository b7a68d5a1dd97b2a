package keyed

import (
	"math/rand"
	"testing"

	"github.com/flinksql/flinksql/types"
)

// TestOpenTableAgainstMap adds and releases random keys, with a hash function
// that collides often, and compares every lookup with a Go map.
func TestOpenTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	kt := NewOpenTable([]int{0})
	ref := map[int64]int32{}
	row := make(types.Row, 1)
	hash := func(k int64) uint64 { return uint64(k % 37) } // heavy collisions
	for step := 0; step < 200_000; step++ {
		k := rng.Int63n(500)
		row[0] = types.Int(k)
		id := kt.Find(row, hash(k))
		want, ok := ref[k]
		if ok != (id >= 0) || (ok && id != want) {
			t.Fatalf("step %d: key %d: got id %d, want %d (present %v)", step, k, id, want, ok)
		}
		switch {
		case !ok:
			ref[k] = kt.Add(row, hash(k))
		case rng.Intn(2) == 0:
			kt.Release(id)
			delete(ref, k)
		}
		if kt.Size() != len(ref) {
			t.Fatalf("step %d: size %d, want %d", step, kt.Size(), len(ref))
		}
	}
	for k, id := range ref {
		if got := kt.Key(id)[0].N; got != k {
			t.Errorf("id %d holds key %d, want %d", id, got, k)
		}
	}
}
