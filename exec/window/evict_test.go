package window

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
)

// evictionScript is 12 batches of 400 rows over 800 keys, spread over
// 24 s of event time with up to 6 s of disorder, each batch followed by a
// watermark 2 s behind its newest row (so a few rows are late).
func evictionScript() []step {
	var script []step
	x := uint64(42)
	rnd := func(n uint64) uint64 { x = x*6364136223846793005 + 1442695040888963407; return (x >> 33) % n }
	for b := range 12 {
		var rows []in
		newest := int64(0)
		for i := range 400 {
			t := sec(float64(b*2000+i*5)/1000) + int64(rnd(6000)) - 3000
			rows = append(rows, in{fmt.Sprintf("k%d", rnd(800)), int64(rnd(100)), t})
			newest = max(newest, t)
		}
		script = append(script, rowsAt(rows...), wmAt(newest-2000))
	}
	return append(script, wmAt(exec.MaxWatermark))
}

// TestEvictionMatchesHashmap runs the window aggregates on rocksdb with a
// decoded cache of 50 entries and a 64 KB backend cache, so that state goes
// to Pebble and back all the time, restoring from a checkpoint halfway:
// the rows and the late-row count are those of an uninterrupted run on
// hashmap with every entry in memory.
func TestEvictionMatchesHashmap(t *testing.T) {
	specs := map[string]exec.WindowSpec{
		"tumble":   {Kind: exec.Tumble, Size: 10_000},
		"hop":      {Kind: exec.Hop, Size: 10_000, Slide: 2_000},
		"cumulate": {Kind: exec.Cumulate, Size: 10_000, Step: 2_000},
		"session":  {Kind: exec.Session, Gap: 3_000},
	}
	script := evictionScript()
	for name, w := range specs {
		t.Run(name, func(t *testing.T) {
			spec := eventTime(w)
			ref, err := NewAggregate(spec)
			if err != nil {
				t.Fatal(err)
			}
			rt := &fakeRuntime{}
			mustOpen(t, ref, rt)
			c := newCollector()
			for _, s := range script {
				s.Run(t, ref, rt, c)
			}
			want, wantLate := c.Take(), rt.Metrics.LateRowsDropped.Load()
			if (wantLate == 0 && w.Kind != exec.Hop) || len(want) < 1000 {
				t.Fatalf("the script should drop late rows and fire many windows: %d late, %d events", wantLate, len(want))
			}

			k := optest.NewKeyed(t, image.RocksDB)
			k.CacheBytes = 64 << 10
			build := func() exec.KeyedOperator {
				op, err := NewAggregate(spec)
				if err != nil {
					t.Fatal(err)
				}
				setCacheLimit(op, 50)
				return op.(exec.KeyedOperator)
			}
			op := build()
			b := k.Open(t, op)
			rt1 := &fakeRuntime{}
			mustOpenOnly(t, op, rt1)
			half := len(script) / 2
			var snap *optest.KeyedSnapshot
			for i, s := range script[:half] {
				s.Run(t, op, rt1, c)
				checkCached(t, op, 50+400)
				if i%4 == 3 || i == half-1 {
					snap = k.Snapshot(t, op, b, exec.CheckpointID(i+1))
				}
			}
			restored := build()
			k.Restore(t, restored, snap)
			rt2 := &fakeRuntime{}
			mustOpenOnly(t, restored, rt2)
			for _, s := range script[half:] {
				s.Run(t, restored, rt2, c)
				checkCached(t, restored, 50+400)
			}
			// Windows fired from the backend emit their keys in stored-key
			// order: the rows of each firing are compared as sets.
			expect(t, "rows on rocksdb with evictions and a restore", byWindow(c.Take()), byWindow(want)...)
			if late := rt1.Metrics.LateRowsDropped.Load() + rt2.Metrics.LateRowsDropped.Load(); late != wantLate {
				t.Errorf("%d late rows dropped, want %d", late, wantLate)
			}
		})
	}
}

// checkCached fails when op holds more than n decoded entries.
func checkCached(t *testing.T, op exec.Operator, n int) {
	t.Helper()
	var got int
	switch a := op.(type) {
	case *slicingAggregate:
		got = a.state.entries
	case *sessionAggregate:
		got = a.keys.Size()
	}
	if got > n {
		t.Fatalf("%d entries in the cache, bound %d", got, n)
	}
}

// TestCacheBoundFromBudget checks the bound the rocksdb budget sets: a
// quarter of optest's 4 MB over (1 key + 3 accumulator values) × 48 + 96 =
// 288 bytes per entry, 3 640 entries. With 12 000 keys in one TUMBLE window
// the cache stays within it plus a batch, and every key's row comes out
// (in stored-key order: the window fires from the backend).
func TestCacheBoundFromBudget(t *testing.T) {
	op, err := NewAggregate(eventTime(exec.WindowSpec{Kind: exec.Tumble, Size: 10_000}))
	if err != nil {
		t.Fatal(err)
	}
	k := optest.NewKeyed(t, image.RocksDB)
	k.Open(t, op.(exec.KeyedOperator))
	mustOpenOnly(t, op, &fakeRuntime{})
	a := op.(*slicingAggregate)
	if a.state.bound != 3640 {
		t.Fatalf("bound %d, want 3640", a.state.bound)
	}
	c := newCollector()
	var want []string
	for b := range 12 {
		var rows []in
		for i := range 1000 {
			key := fmt.Sprintf("k%05d", b*1000+i)
			rows = append(rows, in{key, 2, sec(1)})
			want = append(want, "+I("+key+", 1, 2, 2, 00:00:00.000, 00:00:10.000, 00:00:09.999)")
		}
		process(t, op, c, rows...)
		checkCached(t, op, 3640+1000)
	}
	watermark(t, op, c, exec.MaxWatermark)
	expect(t, "one row per key", byWindow(c.Take()), byWindow(append(want, "WM(max)"))...)
}
