package rank

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

type discard struct{ rows int }

func (d *discard) Push(b *types.Batch) error { d.rows += b.Len(); return nil }
func (d *discard) PushWatermark(int64) error { return nil }

// benchBatches returns batches of (partition, price, payload) rows with
// pseudo-random prices over the given number of partitions.
func benchBatches(n, partitions int) []*types.Batch {
	var batches []*types.Batch
	x := uint64(88172645463325252)
	for len(batches)*types.DefaultBatchSize < n {
		b := types.NewBatch(3, types.DefaultBatchSize)
		for !b.Full() {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			r := b.Append(types.Insert)
			r[0] = types.Int(int64(x % uint64(partitions)))
			r[1] = types.Int(int64(x>>20) % 1_000_000)
			r[2] = types.String("payload")
		}
		batches = append(batches, b)
	}
	return batches
}

// benchBudget is the memory budget of the rocksdb backends of the
// benchmarks: state.backend.rocksdb.memory.managed = false's per-instance
// memory, in which the hot key sets here fit.
const benchBudget = exec.UnmanagedMemory

// openBench opens op on a fresh backend of kind, closed when b ends.
func openBench(b *testing.B, op exec.Operator, kind image.Kind) {
	b.Helper()
	openBenchBudget(b, op, kind, benchBudget)
}

func openBenchBudget(b *testing.B, op exec.Operator, kind image.Kind, budget int64) {
	b.Helper()
	cfg := kv.Config{Kind: kind, Dir: filepath.Join(b.TempDir(), "db"), MaxParallelism: 128}
	if kind == image.RocksDB {
		cfg.MemoryBudget = budget
	}
	be, err := kv.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	if err := op.(exec.KeyedOperator).OpenKeyedState(be); err != nil {
		b.Fatal(err)
	}
	if err := op.Open(&exec.OperatorContext{}); err != nil {
		b.Fatal(err)
	}
}

func benchmarkTopN(b *testing.B, spec RankSpec) { benchmarkTopNOn(b, spec, image.Hashmap) }

func benchmarkTopNOn(b *testing.B, spec RankSpec, kind image.Kind) {
	batches := benchBatches(1<<20, 1000)
	op, err := NewRank(spec)
	if err != nil {
		b.Fatal(err)
	}
	openBench(b, op, kind)
	out := &discard{}
	// Warm up so partitions hold their top rows and the steady state is
	// measured.
	for _, bt := range batches {
		if err := op.ProcessBatch(0, bt, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		bt := batches[i%len(batches)]
		if err := op.ProcessBatch(0, bt, out); err != nil {
			b.Fatal(err)
		}
		rows += bt.Len()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(types.DefaultBatchSize), "rows/op")
}

// BenchmarkAppendOnlyTop10: ROW_NUMBER() OVER (PARTITION BY p ORDER BY price
// DESC) <= 10 over 1 000 partitions, one op = one batch of 1 024 rows.
func BenchmarkAppendOnlyTop10(b *testing.B) {
	benchmarkTopN(b, RankSpec{PartitionCols: []int{0}, SortKeys: []exec.SortKey{{Col: 1, Desc: true}}, RankStart: 1, RankEnd: 10})
}

func BenchmarkAppendOnlyTop10RankNumber(b *testing.B) {
	benchmarkTopN(b, RankSpec{PartitionCols: []int{0}, SortKeys: []exec.SortKey{{Col: 1, Desc: true}}, RankStart: 1, RankEnd: 10, OutputRankNumber: true, GenerateUpdateBefore: true})
}

// BenchmarkAppendOnlyTop10Filling measures a fresh operator, where most rows
// still enter the top 10 and emit changes.
func BenchmarkAppendOnlyTop10Filling(b *testing.B) {
	batches := benchBatches(1<<14, 1000)
	spec := RankSpec{PartitionCols: []int{0}, SortKeys: []exec.SortKey{{Col: 1, Desc: true}}, RankStart: 1, RankEnd: 10, OutputRankNumber: true, GenerateUpdateBefore: true}
	out := &discard{}
	b.ReportAllocs()
	rows := 0
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		op, _ := NewRank(spec)
		be, err := kv.Open(kv.Config{Kind: image.Hashmap, Dir: filepath.Join(dir, strconv.Itoa(i)), MaxParallelism: 128})
		if err != nil {
			b.Fatal(err)
		}
		if err := op.(exec.KeyedOperator).OpenKeyedState(be); err != nil {
			b.Fatal(err)
		}
		if err := op.Open(&exec.OperatorContext{}); err != nil {
			b.Fatal(err)
		}
		for _, bt := range batches {
			if err := op.ProcessBatch(0, bt, out); err != nil {
				b.Fatal(err)
			}
			rows += bt.Len()
		}
		be.Close()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAppendOnlyTop10Backends is BenchmarkAppendOnlyTop10RankNumber on
// both backends (1 000 partitions: a hot key set).
func BenchmarkAppendOnlyTop10Backends(b *testing.B) {
	spec := RankSpec{PartitionCols: []int{0}, SortKeys: []exec.SortKey{{Col: 1, Desc: true}}, RankStart: 1, RankEnd: 10, OutputRankNumber: true, GenerateUpdateBefore: true}
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) { benchmarkTopNOn(b, spec, kind) })
	}
}

func BenchmarkDeduplicateKeepLast(b *testing.B) {
	benchmarkDedup(b, 100_000, image.Hashmap)
}

// BenchmarkDeduplicateKeepLastHot is keep-last deduplication over a hot
// key set of 10 000 keys, on both backends.
func BenchmarkDeduplicateKeepLastHot(b *testing.B) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run(string(kind), func(b *testing.B) { benchmarkDedup(b, 10_000, kind) })
	}
}

// BenchmarkDeduplicateKeepLastCold is keep-last deduplication over 100 000
// keys on rocksdb with the smallest budget (4 MB): the operator's cache
// holds about 3 000 keys, so most rows load their key from the backend
// (and the cache is written back and emptied every few batches).
func BenchmarkDeduplicateKeepLastCold(b *testing.B) {
	benchmarkDedupBudget(b, 100_000, image.RocksDB, kv.MinMemoryBudget, 1<<16)
}

func benchmarkDedup(b *testing.B, keys int, kind image.Kind) {
	benchmarkDedupBudget(b, keys, kind, benchBudget, 1<<20)
}

// benchmarkDedupBudget measures keep-last deduplication over keys keys
// on a backend of kind and budget, warmed up with (and then cycling
// through) the given number of rows.
func benchmarkDedupBudget(b *testing.B, keys int, kind image.Kind, budget int64, rows int) {
	batches := benchBatches(rows, keys)
	op, _ := NewDeduplicate(DedupSpec{KeyCols: []int{0}, RowtimeCol: -1, KeepLast: true, GenerateUpdateBefore: true})
	openBenchBudget(b, op, kind, budget)
	out := &discard{}
	for _, bt := range batches {
		if err := op.ProcessBatch(0, bt, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	done := 0
	for i := 0; i < b.N; i++ {
		bt := batches[i%len(batches)]
		if err := op.ProcessBatch(0, bt, out); err != nil {
			b.Fatal(err)
		}
		done += bt.Len()
	}
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "rows/s")
}
