package exec

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// benchReader produces n rows (key, value, name) copied from a prepared set.
type benchReader struct {
	rows []types.Row
	n    int
	done int
}

func (r *benchReader) Open(context.Context) error { return nil }
func (r *benchReader) NumSplits() int             { return 1 }
func (r *benchReader) Close() error               { return nil }
func (r *benchReader) Read(_ context.Context, b *types.Batch) (ReadResult, error) {
	for b.Len() < b.Cap() && r.done < r.n {
		b.AppendRow(types.Insert, r.rows[r.done%len(r.rows)])
		r.done++
	}
	return ReadResult{Split: 0, End: r.done >= r.n}, nil
}

func benchRows() []types.Row {
	names := []string{"alpha", "beta", "gamma", "delta"}
	rows := make([]types.Row, 4096)
	for i := range rows {
		rows[i] = types.Row{types.Int(int64(i % 1000)), types.Int(int64(i)), types.String(names[i%len(names)])}
	}
	return rows
}

// countWriter counts rows.
type countWriter struct{ rows *atomic.Int64 }

func (w countWriter) Open(context.Context) error { return nil }
func (w countWriter) Write(_ context.Context, b *types.Batch) error {
	w.rows.Add(int64(b.Len()))
	return nil
}
func (w countWriter) Finish(context.Context) error { return nil }
func (w countWriter) Close() error                 { return nil }

func benchSource(id, parallelism, total int) *Vertex {
	rows := benchRows()
	return &Vertex{ID: id, Name: "Source", Parallelism: parallelism, Source: &SourceSpec{Width: 3,
		NewReader: func(st, p int) (SourceReader, error) {
			n := total / p
			if st < total%p {
				n++
			}
			return &benchReader{rows: rows, n: n}, nil
		}}}
}

func runBench(b *testing.B, g *JobGraph, cfg Config, counted *atomic.Int64) {
	b.ReportAllocs()
	b.ResetTimer()
	j, err := Start(context.Background(), g, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := j.Wait(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := counted.Load(); got != int64(b.N) {
		b.Fatalf("sink counted %d rows, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkChainedCalc: source → Calc(filter, project) → sink in one task.
// One op is one row.
func BenchmarkChainedCalc(b *testing.B) {
	var counted atomic.Int64
	src := benchSource(1, 1, b.N)
	src.Chain = chain(
		func() (Operator, error) {
			return NewCalc(
				predicateFunc(func(in types.Row) (bool, error) { return in[1].Int() >= 0, nil }),
				projectorFunc(func(in, out types.Row) error {
					out[0] = in[2]
					out[1] = types.Int(in[0].Int() + in[1].Int())
					return nil
				}), 2), nil
		},
		func() (Operator, error) { return NewSinkOperator(countWriter{&counted}), nil },
	)
	runBench(b, &JobGraph{Vertices: []*Vertex{src}}, Config{}, &counted)
}

// BenchmarkHashExchange: source (p=2) → hash by key → sink (p=2). One op
// is one row. Sub-benchmarks send after every batch (buffer timeout 0) or
// with the default 100 ms buffer timeout.
func BenchmarkHashExchange(b *testing.B) {
	b.Run("timeout=0", func(b *testing.B) { benchHash(b, Config{}) })
	b.Run("timeout=100ms", func(b *testing.B) { benchHash(b, Config{BufferTimeout: DefaultBufferTimeout}) })
}

func benchHash(b *testing.B, cfg Config) {
	var counted atomic.Int64
	g := &JobGraph{Vertices: []*Vertex{
		benchSource(1, 2, b.N),
		{ID: 2, Name: "Sink", Parallelism: 2, Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
			Chain: chain(func() (Operator, error) { return NewSinkOperator(countWriter{&counted}), nil })},
	}}
	runBench(b, g, cfg, &counted)
}

// posBenchReader is a benchReader whose position can be checkpointed.
type posBenchReader struct{ benchReader }

func (r *posBenchReader) SnapshotPosition() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(r.done)), nil
}
func (r *posBenchReader) RestorePosition(pos []byte) error {
	r.done = int(binary.BigEndian.Uint64(pos))
	return nil
}

// sumByKey keeps a running sum per key (column 0) of column 1 and
// snapshots the keys changed since the previous snapshot.
type sumByKey struct {
	base
	sums  map[int64]int64
	dirty map[int64]struct{}
	buf   []byte
}

func newSumByKey() (Operator, error) {
	return &sumByKey{sums: map[int64]int64{}, dirty: map[int64]struct{}{}}, nil
}

func (o *sumByKey) ProcessBatch(_ int, b *types.Batch, out Output) error {
	for _, r := range b.Rows {
		k := r[0].Int()
		o.sums[k] += r[1].Int()
		o.dirty[k] = struct{}{}
	}
	return out.Push(b)
}

func (o *sumByKey) SnapshotState(_ CheckpointID, w StateWriter) error {
	if w.Full() {
		for k := range o.sums {
			o.dirty[k] = struct{}{}
		}
	}
	for k := range o.dirty {
		o.buf = binary.BigEndian.AppendUint64(o.buf[:0], uint64(k))
		kg := types.KeyGroup(uint64(k), DefaultMaxParallelism)
		if err := w.Put(kg, o.buf, binary.BigEndian.AppendUint64(nil, uint64(o.sums[k]))); err != nil {
			return err
		}
	}
	clear(o.dirty)
	return nil
}

func (o *sumByKey) RestoreState(StateReader) error { return nil }

// BenchmarkCheckpointedChain: source → Calc → SUM per key (1000 keys) →
// sink in one task, without checkpoints and with a checkpoint every 100 ms
// or 1 s (in-memory store; the snapshot copies the changed keys). One op is
// one row; run with -benchtime=5000000x or more so that several
// checkpoints happen.
func BenchmarkCheckpointedChain(b *testing.B) {
	for _, interval := range []time.Duration{0, 100 * time.Millisecond, time.Second} {
		name := "off"
		if interval > 0 {
			name = "interval=" + interval.String()
		}
		b.Run(name, func(b *testing.B) {
			var counted atomic.Int64
			rows := benchRows()
			src := &Vertex{ID: 1, Name: "Source", Parallelism: 1, Source: &SourceSpec{Width: 3,
				NewReader: func(int, int) (SourceReader, error) {
					return &posBenchReader{benchReader{rows: rows, n: b.N}}, nil
				}}}
			src.Chain = chain(
				func() (Operator, error) {
					return NewCalc(
						predicateFunc(func(in types.Row) (bool, error) { return in[1].Int() >= 0, nil }),
						projectorFunc(func(in, out types.Row) error {
							out[0] = in[0]
							out[1] = types.Int(in[1].Int() * 2)
							return nil
						}), 2), nil
				},
				newSumByKey,
				func() (Operator, error) { return NewSinkOperator(countWriter{&counted}), nil },
			)
			cfg := Config{}
			var completed atomic.Int64
			if interval > 0 {
				cfg.Checkpointing = &CheckpointConfig{Store: newMemStore(), Interval: interval,
					OnComplete: func(CheckpointID, []InstanceAck, time.Duration, time.Duration) { completed.Add(1) }}
			}
			runBench(b, &JobGraph{Vertices: []*Vertex{src}}, cfg, &counted)
			if interval > 0 {
				b.ReportMetric(float64(completed.Load()), "checkpoints")
			}
		})
	}
}

// BenchmarkCheckpointedExchange: source (p=2) → hash by key → SUM per key
// → sink (p=2), so barriers align at the two-input side of the exchange
// (EXACTLY_ONCE). One op is one row.
func BenchmarkCheckpointedExchange(b *testing.B) {
	for _, interval := range []time.Duration{0, 100 * time.Millisecond, time.Second} {
		name := "off"
		if interval > 0 {
			name = "interval=" + interval.String()
		}
		b.Run(name, func(b *testing.B) {
			var counted atomic.Int64
			rows := benchRows()
			src := &Vertex{ID: 1, Name: "Source", Parallelism: 2, Source: &SourceSpec{Width: 3,
				NewReader: func(st, p int) (SourceReader, error) {
					n := b.N / p
					if st < b.N%p {
						n++
					}
					return &posBenchReader{benchReader{rows: rows, n: n}}, nil
				}}}
			g := &JobGraph{Vertices: []*Vertex{src, {
				ID: 2, Name: "Sum", Parallelism: 2,
				Inputs: []Input{{From: 1, Partitioner: Partitioner{Kind: Hash, KeyCols: []int{0}}}},
				Chain:  chain(newSumByKey, func() (Operator, error) { return NewSinkOperator(countWriter{&counted}), nil }),
			}}}
			cfg := Config{BufferTimeout: DefaultBufferTimeout}
			var completed atomic.Int64
			if interval > 0 {
				cfg.Checkpointing = &CheckpointConfig{Store: newMemStore(), Interval: interval,
					OnComplete: func(CheckpointID, []InstanceAck, time.Duration, time.Duration) { completed.Add(1) }}
			}
			runBench(b, g, cfg, &counted)
			if interval > 0 {
				b.ReportMetric(float64(completed.Load()), "checkpoints")
			}
		})
	}
}
