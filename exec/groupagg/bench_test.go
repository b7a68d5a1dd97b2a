package groupagg

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

type discard struct{ rows int }

func (d *discard) Push(b *types.Batch) error { d.rows += b.Len(); return nil }
func (d *discard) PushWatermark(int64) error { return nil }

// sumInput fills b with rows (key BIGINT, amount BIGINT) whose keys are
// spread over the given number of keys, continuing from row n.
func sumInput(b *types.Batch, keys int64, n int64) int64 {
	for _, row := range b.Rows {
		row[0] = types.Int((n * 7919) % keys)
		row[1] = types.Int(n % 13)
		n++
	}
	return n
}

func newBatch(width, rows int, kind types.RowKind) *types.Batch {
	b := types.NewBatch(width, rows)
	for range rows {
		b.Append(kind)
	}
	return b
}

// TestSteadyStateAllocations checks that rows of existing keys are processed
// without allocating.
func TestSteadyStateAllocations(t *testing.T) {
	const keys = 1000
	batch := newBatch(2, 1024, types.Insert)
	sumInput(batch, keys, 0)
	retract := newBatch(2, 1024, types.Delete)
	sumInput(retract, keys, 0)
	ops := map[string]func() (exec.Operator, error){
		"group aggregate": func() (exec.Operator, error) {
			return NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}, Aggs: handle(t, true, call("COUNT"), call("SUM", 1)), GenerateUpdateBefore: true})
		},
		"group aggregate with mini-batch and TTL": func() (exec.Operator, error) {
			return NewGroupAggregate(GroupAggSpec{
				KeyCols: []int{0}, Aggs: handle(t, true, call("COUNT"), call("SUM", 1)), GenerateUpdateBefore: true,
				StateTTL: time.Hour, MiniBatch: MiniBatch{Enabled: true, AllowLatency: time.Second, Size: 500},
			})
		},
		"distinct": func() (exec.Operator, error) {
			return NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}})
		},
		"changelog normalize": func() (exec.Operator, error) {
			return NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}, GenerateUpdateBefore: true})
		},
		"sink upsert materializer": func() (exec.Operator, error) {
			return NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{0}})
		},
	}
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		for name, build := range ops {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				op := must(t)(build())
				rt := &fakeRuntime{Now: 1}
				openOn(t, kind, 0, op, rt)
				out := &discard{}
				run := func() {
					// Insert every row twice, then retract both: keys come and go, which
					// the state must absorb by reusing its memory.
					if err := op.ProcessBatch(0, batch, out); err != nil {
						t.Fatal(err)
					}
					if err := op.ProcessBatch(0, batch, out); err != nil {
						t.Fatal(err)
					}
					if err := op.ProcessBatch(0, retract, out); err != nil {
						t.Fatal(err)
					}
					if err := op.ProcessBatch(0, retract, out); err != nil {
						t.Fatal(err)
					}
					if err := op.ProcessWatermark(5, out); err != nil {
						t.Fatal(err)
					}
				}
				run()
				run()
				if a := testing.AllocsPerRun(20, run); a > 0 {
					t.Errorf("%v allocations per run of 4096 rows, want 0", a)
				}
			})
		}
	}
}

// BenchmarkGroupAggregateSum is an unwindowed SUM per key of insert-only
// input over 100 000 keys (the benchmark) and over 1 000 keys (where
// mini-batch folds about five rows per key), with mini-batch off and on;
// every key already has state (steady state). The backend is hashmap unless
// named; the rocksdb runs have a budget whose cache holds every key (a hot
// key set).
func BenchmarkGroupAggregateSum(b *testing.B) {
	for _, keys := range []int64{100_000, 1_000} {
		for _, mb := range []struct {
			name string
			mb   MiniBatch
		}{
			{"minibatch=off", MiniBatch{}},
			{"minibatch=on", MiniBatch{Enabled: true, AllowLatency: 2 * time.Second, Size: 5000}},
		} {
			benchSum(b, keys, mb.name, mb.mb, image.Hashmap)
			benchSum(b, keys, "backend=rocksdb/"+mb.name, mb.mb, image.RocksDB)
		}
	}
}

// benchBackend opens a backend for a benchmark: rocksdb with a 256 MB
// budget.
func benchBackend(b *testing.B, kind image.Kind, op exec.Operator) *kv.Backend {
	cfg := kv.Config{Kind: kind, Dir: filepath.Join(b.TempDir(), "db"), MaxParallelism: 128, Clock: func() int64 { return 1 }}
	if kind == image.RocksDB {
		cfg.MemoryBudget = 256 << 20
	}
	be, err := kv.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	if err := op.(exec.KeyedOperator).OpenKeyedState(be); err != nil {
		b.Fatal(err)
	}
	return be
}

func benchSum(b *testing.B, keys int64, name string, mb MiniBatch, kind image.Kind) {
	b.Run(fmt.Sprintf("keys=%d/%s", keys, name), func(b *testing.B) {
		const batchSize = 1024
		op, err := NewGroupAggregate(GroupAggSpec{
			KeyCols: []int{0}, Aggs: handle(b, false, call("SUM", 1)), GenerateUpdateBefore: true, MiniBatch: mb,
		})
		if err != nil {
			b.Fatal(err)
		}
		benchBackend(b, kind, op)
		if err := op.Open((&fakeRuntime{Now: 1}).Context()); err != nil {
			b.Fatal(err)
		}
		batch := newBatch(2, batchSize, types.Insert)
		out := &discard{}
		var n int64
		for n < 2*keys {
			n = sumInput(batch, keys, n)
			if err := op.ProcessBatch(0, batch, out); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			n = sumInput(batch, keys, n)
			if err := op.ProcessBatch(0, batch, out); err != nil {
				b.Fatal(err)
			}
		}
		if err := op.Finish(out); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)*batchSize/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkPrepareSnapshot measures the write-back at a barrier of a group
// aggregate holding 100 000 keys of which 1 % changed since the previous
// checkpoint: only the changed keys are written.
func BenchmarkPrepareSnapshot(b *testing.B) {
	for _, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		b.Run("backend="+string(kind), func(b *testing.B) {
			const keys = 100_000
			op, err := NewGroupAggregate(GroupAggSpec{KeyCols: []int{0}, Aggs: handle(b, false, call("COUNT"), call("SUM", 1))})
			if err != nil {
				b.Fatal(err)
			}
			benchBackend(b, kind, op)
			if err := op.Open((&fakeRuntime{Now: 1}).Context()); err != nil {
				b.Fatal(err)
			}
			out := &discard{}
			in := newBatch(2, 1000, types.Insert)
			var n int64
			for range keys / 1000 {
				for i, row := range in.Rows {
					row[0], row[1] = types.Int(n+int64(i)), types.Int(1)
				}
				n += 1000
				if err := op.ProcessBatch(0, in, out); err != nil {
					b.Fatal(err)
				}
			}
			ko := op.(exec.KeyedOperator)
			if err := ko.PrepareSnapshot(1); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				n = sumInput(in, keys, n) // 1000 rows: 1 % of the keys
				if err := op.ProcessBatch(0, in, out); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := ko.PrepareSnapshot(exec.CheckpointID(i + 2)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
