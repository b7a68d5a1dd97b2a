package types

import "math"

// Hash mixes v into the running hash h. The hash is deterministic across
// processes and platforms (key groups, and so state placement, depend on it)
// and equal for values that Equal treats as equal within one kind.
func Hash(h uint64, v Value) uint64 {
	h = mix(h ^ uint64(v.K))
	switch v.K {
	case KindNull:
	case KindBool, KindInt:
		h = mix(h ^ uint64(v.N))
	case KindFloat:
		f := v.Float()
		if f == 0 { // -0.0 == 0.0
			f = 0
		}
		if math.IsNaN(f) {
			f = math.NaN()
		}
		h = mix(h ^ math.Float64bits(f))
	case KindString, KindBytes, KindSymbol:
		h = hashString(h, v.S)
	case KindTimestamp:
		h = mix(h ^ uint64(v.N))
		h = mix(h ^ uint64(v.Aux))
	case KindDecimal:
		if v.IsBigDecimal() {
			h = hashString(h, v.DecimalBig().String())
		} else {
			h = mix(h ^ uint64(v.N))
		}
		h = mix(h ^ uint64(v.Aux))
	case KindArray:
		for _, e := range v.Array() {
			h = Hash(h, e)
		}
	case KindRow:
		for _, e := range v.RowOf() {
			h = Hash(h, e)
		}
	case KindMap:
		m := v.Map()
		for i := range m.Keys {
			h = Hash(h, m.Keys[i])
			h = Hash(h, m.Values[i])
		}
	}
	return h
}

// HashColumns hashes the given columns of r.
func HashColumns(r Row, cols []int) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, c := range cols {
		h = Hash(h, r[c])
	}
	return h
}

// mix is the 64-bit finaliser of MurmurHash3: a bijection with good avalanche.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hashString is FNV-1a over the bytes followed by a final mix.
func hashString(h uint64, s string) uint64 {
	const prime = 1099511628211
	x := h ^ 14695981039346656037
	for i := 0; i < len(s); i++ {
		x ^= uint64(s[i])
		x *= prime
	}
	return mix(x ^ uint64(len(s)))
}

// KeyGroup returns the key group of a key hash for the given max parallelism.
func KeyGroup(hash uint64, maxParallelism int) int {
	return int(mix(hash) % uint64(maxParallelism))
}

// SubtaskForKeyGroup returns the subtask that owns a key group, as Flink assigns
// contiguous key-group ranges: keyGroup * parallelism / maxParallelism.
func SubtaskForKeyGroup(keyGroup, parallelism, maxParallelism int) int {
	return keyGroup * parallelism / maxParallelism
}
