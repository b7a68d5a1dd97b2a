package join

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/flinksql/flinksql/exec"
)

// The regular join caches decoded rows on hashmap and writes them back at
// a snapshot; on rocksdb it reads and writes the backend per row. The
// same script must leave the same entries in both backends at every
// snapshot (the cache writes the uncached layout, deletes what retractions
// removed, and nothing for a key left empty) and emit the same rows,
// including after a snapshot, when the cache goes on from clean entries.
func TestRegularCacheWritesUncachedState(t *testing.T) {
	sides := map[string]Side{
		"none":   {Width: 2, Keys: []int{0}, Spec: NoUniqueKey},
		"unique": {Width: 2, Keys: []int{0}, Spec: HasUniqueKey, UniqueKey: []int{1}},
		"joinkey": {Width: 2, Keys: []int{0}, Spec: JoinKeyContainsUniqueKey,
			UniqueKey: []int{0}},
	}
	script := [][]step{{
		left(ins("a", 1), ins("a", 1), ins("b", 2)),
		right(ins("a", 10), ins("c", 30)),
		left(del("a", 1), ins("c", 3)),
	}, {
		right(del("a", 10), ins("b", 20)),
		left(ins("a", 4), del("b", 2)),
		right(ins("a", 11), del("c", 30)),
	}, {
		left(del("a", 1), del("a", 4), del("c", 3)),
		right(del("a", 11), ins("d", 40)),
	}}
	// Long string values make map keys too long to be held inline, so
	// both ways of keeping them are covered.
	long := make([][]step, len(script))
	for p, phase := range script {
		for _, st := range phase {
			st.rows = slices.Clone(st.rows)
			for i, r := range st.rows {
				vals := slices.Clone(r.vals)
				for k, v := range vals {
					if str, ok := v.(string); ok {
						vals[k] = str + strings.Repeat("-", 20)
					}
				}
				st.rows[i].vals = vals
			}
			long[p] = append(long[p], st)
		}
	}
	for _, keys := range []struct {
		name   string
		script [][]step
	}{{"short", script}, {"long", long}} {
		script := keys.script
		for _, typ := range []Type{Inner, LeftOuter, FullOuter, Semi, Anti} {
			for ln, l := range sides {
				for rn, r := range sides {
					t.Run(fmt.Sprintf("%s/%v/%s/%s", keys.name, typ, ln, rn), func(t *testing.T) {
						build := func() (exec.Operator, error) { return NewRegular(RegularSpec{Type: typ, Left: l, Right: r}) }
						dumps := checkCachedMatchesUncached(t, build, script)
						if len(dumps[len(dumps)-1]) == 0 {
							t.Fatal("the script leaves rows (d, 40 on the right) but the state is empty")
						}
					})
				}
			}
		}
	}
}

// A key's state is two whole cache lines (the lookup and the row lists
// each touch one), and a cached row 32 bytes, as their comments say.
func TestCacheLayoutSizes(t *testing.T) {
	if n := unsafe.Sizeof(keyState{}); n != 192 {
		t.Errorf("keyState is %d bytes, want 192", n)
	}
	if n := unsafe.Sizeof(cachedRow{}); n != 32 {
		t.Errorf("cachedRow is %d bytes, want 32", n)
	}
}
