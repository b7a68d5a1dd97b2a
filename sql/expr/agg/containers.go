package agg

import (
	"cmp"
	"sort"

	"github.com/flinksql/flinksql/types"
)

// Two nested structures live in accumulator slots, both as MAP values so that
// a state backend can serialize them like any other value:
//
//   - a counted set: keys sorted by types.Compare, values Int(occurrences).
//     Used for DISTINCT, MIN/MAX with retraction and COLLECT. Counts may go
//     negative when a retraction arrives before its accumulation; entries with
//     count 0 are removed.
//   - an ordered list: keys Int(order) ascending, values the elements. Used
//     for FIRST_VALUE/LAST_VALUE with retraction and LISTAGG. Orders come from
//     Handle.nextOrder, so merging two lists by order interleaves them as they
//     arrived.
//
// A NULL slot is an empty structure; it is created on first insertion.

func slotMap(acc []types.Value, i int) *types.MapValue {
	if m := acc[i].Map(); m != nil {
		return m
	}
	m := &types.MapValue{}
	acc[i] = types.Value{K: types.KindMap, X: m}
	return m
}

func setSearch(m *types.MapValue, key types.Value) (int, bool) {
	keys := m.Keys
	n := len(keys)
	if key.K == types.KindInt {
		// The common set (COUNT(DISTINCT id), day after day): integers,
		// compared inline (types.Compare's order for two KindInt), and new
		// ones often above all the others (ids handed out in order).
		if n == 0 || keys[n-1].K == types.KindInt && keys[n-1].N < key.N {
			return n, false
		}
		lo, hi := 0, n
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			var c int
			if k := keys[h]; k.K == types.KindInt {
				c = cmp.Compare(k.N, key.N)
			} else {
				c = types.Compare(k, key)
			}
			if c < 0 {
				lo = h + 1
			} else {
				hi = h
			}
		}
		return lo, lo < n && types.Compare(keys[lo], key) == 0
	}
	i := sort.Search(n, func(i int) bool { return types.Compare(keys[i], key) >= 0 })
	return i, i < n && types.Compare(keys[i], key) == 0
}

// setAdd adds delta occurrences of key and returns the counts before and after.
func setAdd(m *types.MapValue, key types.Value, delta int64) (before, after int64) {
	i, found := setSearch(m, key)
	if found {
		before = m.Values[i].N
		after = before + delta
		if after == 0 {
			m.Keys = deleteAt(m.Keys, i)
			m.Values = deleteAt(m.Values, i)
		} else {
			m.Values[i] = types.Int(after)
		}
		return before, after
	}
	if delta == 0 {
		return 0, 0
	}
	m.Keys = insertAt(m.Keys, i, key)
	m.Values = insertAt(m.Values, i, types.Int(delta))
	return 0, delta
}

// setFirstPositive returns the smallest key with a positive count.
func setFirstPositive(m *types.MapValue) (types.Value, bool) {
	if m == nil {
		return types.NullValue, false
	}
	for i := range m.Keys {
		if m.Values[i].N > 0 {
			return m.Keys[i], true
		}
	}
	return types.NullValue, false
}

// setLastPositive returns the largest key with a positive count.
func setLastPositive(m *types.MapValue) (types.Value, bool) {
	if m == nil {
		return types.NullValue, false
	}
	for i := len(m.Keys) - 1; i >= 0; i-- {
		if m.Values[i].N > 0 {
			return m.Keys[i], true
		}
	}
	return types.NullValue, false
}

// listAppend appends v with an order after every order already in the list.
func listAppend(m *types.MapValue, order int64, v types.Value) {
	if n := len(m.Keys); n > 0 && m.Keys[n-1].N >= order {
		order = m.Keys[n-1].N + 1
	}
	m.Keys = append(m.Keys, types.Int(order))
	m.Values = append(m.Values, v)
}

// listRemove removes the earliest element equal to v and reports whether
// there was one.
func listRemove(m *types.MapValue, v types.Value) bool {
	if m == nil {
		return false
	}
	for i := range m.Values {
		if types.Equal(m.Values[i], v) {
			m.Keys = deleteAt(m.Keys, i)
			m.Values = deleteAt(m.Values, i)
			return true
		}
	}
	return false
}

// listMerge merges the ordered list src into dst by order; on equal orders
// dst's element comes first.
func listMerge(dst, src *types.MapValue) {
	if len(src.Keys) == 0 {
		return
	}
	if n := len(dst.Keys); n == 0 || dst.Keys[n-1].N <= src.Keys[0].N {
		dst.Keys = append(dst.Keys, src.Keys...)
		dst.Values = append(dst.Values, src.Values...)
		return
	}
	keys := make([]types.Value, 0, len(dst.Keys)+len(src.Keys))
	vals := make([]types.Value, 0, len(dst.Keys)+len(src.Keys))
	i, j := 0, 0
	for i < len(dst.Keys) || j < len(src.Keys) {
		if j == len(src.Keys) || (i < len(dst.Keys) && dst.Keys[i].N <= src.Keys[j].N) {
			keys, vals = append(keys, dst.Keys[i]), append(vals, dst.Values[i])
			i++
		} else {
			keys, vals = append(keys, src.Keys[j]), append(vals, src.Values[j])
			j++
		}
	}
	dst.Keys, dst.Values = keys, vals
}

// listDedupe keeps the earliest occurrence of every string in an ordered
// list (LISTAGG(DISTINCT …) after a merge).
func listDedupe(m *types.MapValue) {
	seen := make(map[string]struct{}, len(m.Values))
	n := 0
	for i, v := range m.Values {
		if _, dup := seen[v.S]; dup {
			continue
		}
		seen[v.S] = struct{}{}
		m.Keys[n], m.Values[n] = m.Keys[i], v
		n++
	}
	clear(m.Keys[n:])
	clear(m.Values[n:])
	m.Keys, m.Values = m.Keys[:n], m.Values[:n]
}

func cloneMap(m *types.MapValue) *types.MapValue {
	return &types.MapValue{
		Keys:   append([]types.Value(nil), m.Keys...),
		Values: append([]types.Value(nil), m.Values...),
	}
}

func insertAt(s []types.Value, i int, v types.Value) []types.Value {
	s = append(s, types.Value{})
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func deleteAt(s []types.Value, i int) []types.Value {
	copy(s[i:], s[i+1:])
	s[len(s)-1] = types.Value{}
	return s[:len(s)-1]
}
