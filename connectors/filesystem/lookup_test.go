package filesystem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

type colProjector []int

func (p colProjector) Project(in, out types.Row) error {
	for i, c := range p {
		out[i] = in[c]
	}
	return nil
}

type collect struct{ rows []string }

func (c *collect) Push(b *types.Batch) error {
	for _, r := range b.Rows {
		c.rows = append(c.rows, fmt.Sprintf("%d:%s", r[0].Int(), r[3].Str()))
	}
	return nil
}
func (c *collect) PushWatermark(int64) error { return nil }

func lookupSource(t testing.TB, dir string, opts map[string]string) (*Source, *connectors.Lookup) {
	t.Helper()
	src, err := NewFactory().CreateSource(tableContext(dir, opts))
	if err != nil {
		t.Fatal(err)
	}
	s := src.(*Source)
	lk, err := s.Lookup([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	return s, lk
}

// joinOn opens a lookup join of (id, key) input rows against the table,
// on a clock the test moves.
func joinOn(t testing.TB, lk *connectors.Lookup, now *int64) exec.Operator {
	t.Helper()
	op, err := lookup.NewJoin(lookup.Spec{
		Table: "t", LeftWidth: 2, DimWidth: 2, KeyWidth: 1, DimKeyCols: []int{0},
		Key:     func() (exec.Projector, error) { return colProjector{1}, nil },
		Fetcher: lk.Fetcher, Loader: lk.Loader, Cache: lk.Cache, LeftOuter: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Open(&exec.OperatorContext{Ctx: context.Background(), Now: func() int64 { return *now }}); err != nil {
		t.Fatal(err)
	}
	return op
}

// reloaded waits for the reload of the full cache a probe started (it
// runs in the background while the old cache serves).
func reloaded(t *testing.T, op exec.Operator) {
	t.Helper()
	if err := op.(interface{ AwaitReload() error }).AwaitReload(); err != nil {
		t.Fatal(err)
	}
}

func probe(t *testing.T, op exec.Operator, keys ...int64) string {
	t.Helper()
	b := types.NewBatch(2, len(keys))
	for i, k := range keys {
		b.AppendRow(types.Insert, types.Row{types.Int(int64(i)), types.Int(k)})
	}
	c := &collect{}
	if err := op.ProcessBatch(0, b, c); err != nil {
		t.Fatal(err)
	}
	return strings.Join(c.rows, " ")
}

// The files are read whole when the join opens and again when they
// changed, checked every 'lookup.full-cache.periodic-reload.interval'.
func TestLookupReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "1,one\n2,two\n")
	_, lk := lookupSource(t, dir, map[string]string{"lookup.full-cache.periodic-reload.interval": "10 s"})
	if lk.Cache.Kind != lookup.CacheFull || lk.Fetcher != nil || lk.Cache.ReloadInterval != 10*time.Second || !lk.Cache.OnlyWhenChanged {
		t.Fatalf("cache %+v (fetcher %v): want a full cache checked every 10 s", lk.Cache, lk.Fetcher)
	}
	now := int64(1_000_000)
	op := joinOn(t, lk, &now)
	if got := probe(t, op, 1, 2, 3); got != "0:one 1:two 2:" {
		t.Fatalf("first load: %q", got)
	}
	// A new file and a changed one; seen at the next check only.
	writeFile(t, filepath.Join(dir, "b.csv"), "3,three\n")
	writeFile(t, filepath.Join(dir, "a.csv"), "1,uno\n2,dos\n")
	now += 9_999
	if got := probe(t, op, 1, 3); got != "0:one 1:" {
		t.Fatalf("before the check: %q", got)
	}
	now++
	// The probe at the check starts the reload, and the old cache serves
	// it; the rows after the reload are the new ones.
	if got := probe(t, op, 1); got != "0:one" {
		t.Fatalf("at the check: %q", got)
	}
	reloaded(t, op)
	if got := probe(t, op, 1, 2, 3); got != "0:uno 1:dos 2:three" {
		t.Fatalf("after the check: %q", got)
	}
	// A removed file takes its rows along.
	if err := os.Remove(filepath.Join(dir, "b.csv")); err != nil {
		t.Fatal(err)
	}
	now += 10_000
	probe(t, op, 3)
	reloaded(t, op)
	if got := probe(t, op, 3); got != "0:" {
		t.Fatalf("after removal: %q", got)
	}
}

// Without a change nothing is read again.
func TestLookupUnchangedFilesNotReloaded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "1,one\n")
	_, lk := lookupSource(t, dir, nil)
	if lk.Cache.ReloadInterval != time.Minute {
		t.Fatalf("default check interval %v, want 1 min", lk.Cache.ReloadInterval)
	}
	changed, err := lk.Loader.Changed(context.Background())
	if err != nil || !changed {
		t.Fatalf("before any load: changed %v, %v; want true", changed, err)
	}
	if err := lk.Loader.Load(context.Background(), func(types.Row) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if changed, err := lk.Loader.Changed(context.Background()); err != nil || changed {
		t.Fatalf("after a load of the same files: changed %v, %v; want false", changed, err)
	}
}

// The cache options a filesystem table takes: FULL only, with both reload
// strategies.
func TestLookupCacheOptions(t *testing.T) {
	dir := t.TempDir()
	_, lk := lookupSource(t, dir, map[string]string{
		"lookup.cache":                                    "FULL",
		"lookup.full-cache.reload-strategy":               "TIMED",
		"lookup.full-cache.timed-reload.iso-time":         "10:15:30Z",
		"lookup.full-cache.timed-reload.interval-in-days": "2",
	})
	want := lookup.Cache{Kind: lookup.CacheFull, Reload: lookup.ReloadTimed, ReloadAt: 10*time.Hour + 15*time.Minute + 30*time.Second,
		ReloadZone: time.UTC, ReloadEveryDays: 2, OnlyWhenChanged: true}
	if lk.Cache != want {
		t.Errorf("timed: %+v, want %+v", lk.Cache, want)
	}
	_, lk = lookupSource(t, dir, map[string]string{
		"lookup.full-cache.periodic-reload.interval":      "1 h",
		"lookup.full-cache.periodic-reload.schedule-mode": "FIXED_RATE",
	})
	if !lk.Cache.FixedRate || lk.Cache.ReloadInterval != time.Hour {
		t.Errorf("fixed rate: %+v", lk.Cache)
	}
	for opts, msg := range map[string]string{
		"lookup.cache=NONE": "the connector supports [FULL], but was: NONE",
		"lookup.full-cache.reload-strategy=TIMED,lookup.full-cache.periodic-reload.interval=1 h": "the periodic reload options do not apply",
		"lookup.full-cache.timed-reload.iso-time=25:00":                                          "Invalid value for option 'lookup.full-cache.timed-reload.iso-time'",
		"lookup.full-cache.periodic-reload.schedule-mode=SOON":                                   "Expected one of [FIXED_DELAY, FIXED_RATE]",
	} {
		m := map[string]string{}
		for _, kv := range strings.Split(opts, ",") {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		if m["lookup.full-cache.timed-reload.iso-time"] != "" {
			m["lookup.full-cache.reload-strategy"] = "TIMED"
		}
		_, err := NewFactory().CreateSource(tableContext(dir, m))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want %q", opts, err, msg)
		}
	}
}

// BenchmarkLookupJoinFullCache joins batches of random keys against a
// 1 M-row file held in the full cache (every key found once).
func BenchmarkLookupJoinFullCache(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "%d,name-%d\n", i, i)
	}
	writeFile(b, filepath.Join(dir, "dim.csv"), sb.String())
	_, lk := lookupSource(b, dir, nil)
	now := int64(0)
	start := time.Now()
	op := joinOn(b, lk, &now)
	b.Logf("loading %d rows into the full cache: %v", n, time.Since(start))
	const batches = 64
	in := make([]*types.Batch, batches)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range in {
		in[i] = types.NewBatch(2, types.DefaultBatchSize)
		for j := range types.DefaultBatchSize {
			in[i].AppendRow(types.Insert, types.Row{types.Int(int64(j)), types.Int(r.Int64N(n))})
		}
	}
	out := discard{}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := op.ProcessBatch(0, in[i%batches], out); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rows := float64(b.N) * types.DefaultBatchSize
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	// The machine is shared: the process's CPU time gives the rate per
	// core whatever else runs.
	b.ReportMetric(rows/(cpuTime()-cpu0).Seconds(), "rows/cpu-s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type discard struct{}

func (discard) Push(*types.Batch) error   { return nil }
func (discard) PushWatermark(int64) error { return nil }
