package datagen

import (
	"testing"

	"github.com/flinksql/flinksql/types"
)

// 'fields.#.var-len' draws string and bytes lengths from 1 to 'length'
// instead of always 'length'.
func TestVarLen(t *testing.T) {
	schema := types.Schema{{Name: "s", Type: types.StringType}, {Name: "b", Type: types.BytesType}, {Name: "fixed", Type: types.StringType}}
	s := newSource(t, schema, map[string]string{
		"number-of-rows": "2000", "rows-per-second": "1000000000",
		"fields.s.length": "4", "fields.s.var-len": "true",
		"fields.b.length": "4", "fields.b.var-len": "true",
		"fields.fixed.length": "4",
	})
	r, _ := s.NewReader(0, 1)
	lengths := [2]map[int]int{{}, {}}
	for _, row := range readAll(t, r, len(schema)) {
		for i := range 2 {
			n := len(row[i].Str())
			if n < 1 || n > 4 {
				t.Fatalf("column %d: length %d out of [1, 4]", i, n)
			}
			lengths[i][n]++
		}
		if n := len(row[2].Str()); n != 4 {
			t.Fatalf("fixed length %d, want 4", n)
		}
	}
	// 2000 draws from 4 lengths: each one appears.
	for i, l := range lengths {
		if len(l) != 4 {
			t.Fatalf("column %d: lengths seen %v, want all of 1..4", i, l)
		}
	}
}
