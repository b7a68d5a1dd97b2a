package state

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

const benchKeys = 1_000_000

type benchEntry struct {
	kg  int
	key []byte
}

func benchKeyTable(n int) []benchEntry {
	t := make([]benchEntry, n)
	for i := range t {
		kg, k := benchKey(i)
		t[i] = benchEntry{kg, slices.Clone(k)}
	}
	return t
}

func openBench(b *testing.B, kind Kind) Store {
	b.Helper()
	st, err := Open(kind, filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkPut measures the writer: insert writes keys the store does not
// hold yet (up to 1 M, then overwrites), update overwrites keys of a store
// holding 100 000.
func BenchmarkPut(b *testing.B) {
	keys := benchKeyTable(benchKeys)
	value := benchValue(nil, 7, 0)
	for _, kind := range kinds() {
		for _, mode := range []string{"insert", "update"} {
			b.Run(string(kind)+"/"+mode, func(b *testing.B) {
				st := openBench(b, kind)
				n := benchKeys
				if mode == "update" {
					n = 100_000
					fillStore(b, st, n)
					if _, err := st.Seal(1); err != nil {
						b.Fatal(err)
					}
				}
				w := st.Writer()
				b.ReportAllocs()
				b.SetBytes(int64(len(keys[0].key) + len(value)))
				i := 0
				for b.Loop() {
					e := keys[i%n]
					if err := w.Put(e.kg, e.key, value); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkSeal measures the synchronous part of a checkpoint of a store
// holding 1 M keys, after 1 % of them changed: ns/op is Freeze alone (what
// the checkpoint runtime calls in the synchronous part); writes+seal-ms adds
// the operator writing the changes; async-ms is Image.Finish, which the
// runtime runs off the task's goroutine; first-seal-ms is the first (full)
// Seal after loading.
func BenchmarkSeal(b *testing.B) {
	for _, kind := range kinds() {
		b.Run(string(kind)+"/1M", func(b *testing.B) {
			st := openBench(b, kind)
			fillStore(b, st, benchKeys)
			start := time.Now()
			im, err := st.Seal(1)
			if err != nil {
				b.Fatal(err)
			}
			firstSeal, imageBytes := time.Since(start), im.Bytes
			im.Discard()
			rng := rand.New(rand.NewPCG(5, 6))
			id := int64(1)
			var writes, async time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				start := time.Now()
				updateFraction(b, st, rng, benchKeys, benchKeys/100, i+1)
				writes += time.Since(start)
				b.StartTimer()
				id++
				im, err := st.Freeze(id)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				start = time.Now()
				if err := im.Finish(); err != nil {
					b.Fatal(err)
				}
				async += time.Since(start)
				im.Discard()
				b.StartTimer()
			}
			b.ReportMetric((float64(b.Elapsed())+float64(writes))/float64(b.N)/1e6, "writes+seal-ms")
			b.ReportMetric(float64(async)/float64(b.N)/1e6, "async-ms")
			b.ReportMetric(float64(firstSeal.Microseconds())/1000, "first-seal-ms")
			b.ReportMetric(float64(imageBytes)/(1<<20), "image-MiB")
		})
	}
}

// BenchmarkIncremental reports what incremental checkpoints of a 1 M-key
// rocksdb store upload when 1 % of the keys change per interval: per
// interval, the bytes of SSTs the previous image lacked plus the private
// files, as a percentage of the image's full size.
func BenchmarkIncremental(b *testing.B) {
	const intervals = 100
	for b.Loop() {
		st := openBench(b, RocksDB)
		fillStore(b, st, benchKeys)
		prev, err := st.Seal(1)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 8))
		var ratios []float64
		var uploaded, full int64
		for i := range intervals {
			updateFraction(b, st, rng, benchKeys, benchKeys/100, i+1)
			im, err := st.Seal(int64(i + 2))
			if err != nil {
				b.Fatal(err)
			}
			shared, private := uploadBytes(prev, im)
			ratios = append(ratios, 100*float64(shared+private)/float64(im.Bytes))
			uploaded += shared + private
			full += im.Bytes
			prev.Discard()
			prev = im
		}
		prev.Discard()
		sorted := slices.Clone(ratios)
		slices.Sort(sorted)
		b.ReportMetric(100*float64(uploaded)/float64(full), "upload-%-mean")
		b.ReportMetric(sorted[len(sorted)/2], "upload-%-p50")
		b.ReportMetric(sorted[len(sorted)-1], "upload-%-max")
		b.ReportMetric(ratios[0], "upload-%-first")
		if testing.Verbose() {
			fmt.Printf("per-interval upload %%: %.1f\n", ratios)
		}
	}
}
