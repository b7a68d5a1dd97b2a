package values

import (
	"context"
	"fmt"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

// OptAsync makes lookups of the table asynchronous by default, as the
// 'async' option of Flink's test values connector.
const OptAsync = "async"

// Lookup implements connectors.LookupSource: the table's rows by key, with
// the lookup.* cache options (NONE by default, as in Flink). Only an
// insert-only table can be looked up: a dimension table is a set of rows,
// not a changelog.
func (s *Source) Lookup(keyCols []int) (*connectors.Lookup, error) {
	if !s.mode.IsInsertOnly() {
		return nil, fmt.Errorf("values table %s: a lookup table must be insert-only ('changelog-mode' = 'I'), but is '%s'", s.name, s.modeText)
	}
	tab := &lookupTable{rows: s.rows, keyCols: keyCols, index: map[uint64][]int32{}}
	for i, r := range s.rows {
		null := false
		for _, c := range keyCols {
			null = null || r[c].IsNull()
		}
		if !null {
			h := types.HashColumns(r, keyCols)
			tab.index[h] = append(tab.index[h], int32(i))
		}
	}
	return &connectors.Lookup{Fetcher: tab, Loader: tab, Cache: s.cache, Async: s.async}, nil
}

// lookupTable is a values table indexed by the lookup key columns. It is
// read-only once built, so concurrent Fetches are safe.
type lookupTable struct {
	rows    []types.Row
	keyCols []int
	index   map[uint64][]int32
}

// Fetch implements lookup.Fetcher. The rows are the table's own, which
// nobody modifies.
func (t *lookupTable) Fetch(_ context.Context, key types.Row, dst []types.Row) ([]types.Row, error) {
	h := uint64(0x9E3779B97F4A7C15)
	for _, v := range key {
		h = types.Hash(h, v)
	}
	for _, i := range t.index[h] {
		r := t.rows[i]
		eq := true
		for j, c := range t.keyCols {
			eq = eq && types.Equal(r[c], key[j])
		}
		if eq {
			dst = append(dst, r)
		}
	}
	return dst, nil
}

// Load implements lookup.Loader.
func (t *lookupTable) Load(_ context.Context, fn func(types.Row) error) error {
	for _, r := range t.rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Changed implements lookup.Loader: the data of a values table is fixed.
func (t *lookupTable) Changed(context.Context) (bool, error) { return false, nil }

var (
	_ connectors.LookupSource = (*Source)(nil)
	_ lookup.Fetcher          = (*lookupTable)(nil)
	_ lookup.Loader           = (*lookupTable)(nil)
)
