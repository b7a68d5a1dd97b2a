package kv

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// benchKeys returns n 8-byte keys and their exchange hashes (a BIGINT key
// column).
func benchKeys(n int) ([][]byte, []uint64) {
	keys := make([][]byte, n)
	hashes := make([]uint64, n)
	for i := range n {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i))
		hashes[i] = types.HashColumns(types.Row{types.Int(int64(i))}, []int{0})
	}
	return keys, hashes
}

// benchEntryBytes is what one counter entry costs in the rocksdb cache:
// its stored key (2+2+1+8+1 bytes) and value (8 bytes) plus the per-entry
// overhead.
const benchEntryBytes = 22 + cacheEntryOverhead

type benchCase struct {
	name   string
	kind   image.Kind
	budget int64
	keys   int
}

func benchCases() []benchCase {
	// The uniform rocksdb case: a 16 MB budget gives a 7 MB cache, about
	// 68 000 counter entries; ten times that many keys.
	const budget = 16 << 20
	cache, _, _, _ := budgetSplit(Config{MemoryBudget: budget})
	uniform := int(10 * cache / benchEntryBytes)
	return []benchCase{
		{"hashmap/hot10k", image.Hashmap, 0, 10_000},
		{"rocksdb/hot10k", image.RocksDB, budget, 10_000},
		{"hashmap/uniform", image.Hashmap, 0, uniform},
		{"rocksdb/uniform10x", image.RocksDB, budget, uniform},
	}
}

func openBench(b *testing.B, c benchCase) *Backend {
	cfg := Config{Kind: c.kind, Dir: filepath.Join(b.TempDir(), "be"), MaxParallelism: 128, MemoryBudget: c.budget}
	be, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be
}

// xorshift picks keys uniformly without the cost of math/rand per op.
type xorshift uint64

func (x *xorshift) next(n int) int {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return int(uint64(*x) % uint64(n))
}

// BenchmarkValueCounter is the per-row work of COUNT(*) per key: set the
// current key, read its counter, write it back incremented.
func BenchmarkValueCounter(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			be := openBench(b, c)
			vs, err := NewValueState(be, "count", Int64{}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			keys, hashes := benchKeys(c.keys)
			for i := range keys {
				if err := be.SetCurrentKey(hashes[i], keys[i]); err != nil {
					b.Fatal(err)
				}
				if err := vs.Put(nil, 1); err != nil {
					b.Fatal(err)
				}
			}
			rng := xorshift(88172645463325252)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				i := rng.next(len(keys))
				if err := be.SetCurrentKey(hashes[i], keys[i]); err != nil {
					b.Fatal(err)
				}
				n, ok, err := vs.Get(nil)
				if err != nil || !ok {
					b.Fatalf("key %d: %v %v", i, ok, err)
				}
				if err := vs.Put(nil, n+1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMapPutGet is the per-row work of a map state (COUNT DISTINCT):
// put a user key under the current key and read another.
func BenchmarkMapPutGet(b *testing.B) {
	for _, c := range benchCases()[:2] {
		b.Run(c.name, func(b *testing.B) {
			be := openBench(b, c)
			ms, err := NewMapState(be, "distinct", Int64{}, Int64{}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			keys, hashes := benchKeys(c.keys)
			rng := xorshift(88172645463325252)
			for i := range keys {
				be.SetCurrentKey(hashes[i], keys[i])
				for uk := range int64(8) {
					ms.Put(nil, uk, 1)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				i := rng.next(len(keys))
				if err := be.SetCurrentKey(hashes[i], keys[i]); err != nil {
					b.Fatal(err)
				}
				uk := int64(rng.next(8))
				if err := ms.Put(nil, uk, int64(i)); err != nil {
					b.Fatal(err)
				}
				if _, _, err := ms.Get(nil, (uk+1)%8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValueCounterTTL is BenchmarkValueCounter with a state TTL on
// the hashmap backend (stamping and incremental cleanup included).
func BenchmarkValueCounterTTL(b *testing.B) {
	c := benchCases()[0]
	be := openBench(b, c)
	vs, err := NewValueState(be, "count", Int64{}, Options{TTL: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	keys, hashes := benchKeys(c.keys)
	for i := range keys {
		be.SetCurrentKey(hashes[i], keys[i])
		vs.Put(nil, 1)
	}
	rng := xorshift(88172645463325252)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		i := rng.next(len(keys))
		be.SetCurrentKey(hashes[i], keys[i])
		n, _, err := vs.Get(nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := vs.Put(nil, n+1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIncrementalImages measures what the checkpoints of a rocksdb
// backend upload when 1 % of the keys change per interval: the bytes of
// SSTs each image has that the previous one lacked, as a share of the
// image (the target: ≤ 10 % on average).
func BenchmarkIncrementalImages(b *testing.B) {
	const keys, rounds = 200_000, 30
	for range b.N {
		be := openBench(b, benchCase{kind: image.RocksDB, budget: 64 << 20})
		vs, err := NewValueState(be, "v", Bytes{}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		ks, hs := benchKeys(keys)
		val := make([]byte, 64)
		for i := range ks {
			be.SetCurrentKey(hs[i], ks[i])
			binary.BigEndian.PutUint64(val, uint64(i))
			vs.Put(nil, val)
		}
		prev := map[string]bool{}
		rng := xorshift(88172645463325252)
		var sum, worst float64
		var last *image.Image
		for r := range rounds {
			for range keys / 100 {
				i := rng.next(keys)
				be.SetCurrentKey(hs[i], ks[i])
				binary.BigEndian.PutUint64(val[8:], uint64(r))
				vs.Put(nil, val)
			}
			im, err := be.Snapshot(int64(r + 1))
			if err != nil {
				b.Fatal(err)
			}
			if err := im.Finish(); err != nil {
				b.Fatal(err)
			}
			var fresh int64
			cur := map[string]bool{}
			for _, f := range im.Files {
				if f.Shared {
					cur[f.Name] = true
					if !prev[f.Name] {
						fresh += f.Size
					}
				}
			}
			if r > 0 {
				share := float64(fresh) / float64(im.Bytes)
				sum += share
				worst = max(worst, share)
			}
			prev = cur
			if last != nil {
				last.Discard()
			}
			last = im
		}
		last.Discard()
		b.ReportMetric(100*sum/(rounds-1), "mean-%uploaded")
		b.ReportMetric(100*worst, "max-%uploaded")
	}
}

// BenchmarkRewriteValues: the migration of one value state of n keys after
// an import (one op = one entry rewritten).
func BenchmarkRewriteValues(b *testing.B) {
	for _, v := range variants()[:2] {
		b.Run(v.name, func(b *testing.B) {
			clk := &fakeClock{now: 1}
			be := openVariant(b, v, clk)
			st, err := NewValueState(be, "acc", Bytes{}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			val := make([]byte, 24)
			for i := range b.N {
				setKey(b, be, fmt.Sprintf("key-%09d", i))
				if err := st.Put(nil, val); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			if err := be.RewriteValues("acc", func(v []byte) ([]byte, error) { return append(v, 0), nil }); err != nil {
				b.Fatal(err)
			}
		})
	}
}
