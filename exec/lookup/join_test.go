package lookup

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/types"
)

// Input rows are (id, key); dimension rows (key, name).

// colProjector copies input columns.
type colProjector []int

func (p colProjector) Project(in, out types.Row) error {
	for i, c := range p {
		out[i] = in[c]
	}
	return nil
}

// notName refuses joined rows whose dimension name is the given one.
type notName string

func (n notName) Test(r types.Row) (bool, error) { return r[3].Str() != string(n), nil }

// table is a dimension table: rows by key, with a count of fetches, an
// optional hook run by every fetch, and a version that bumps its Loader's
// Changed.
type table struct {
	mu      sync.Mutex
	rows    []types.Row
	fetches map[int64]int
	hook    func(ctx context.Context, key int64, attempt int) ([]types.Row, bool, error)
	changed bool
	loads   int
	// gate, when set, holds a Load until it is closed (or the load is
	// cancelled).
	gate chan struct{}
}

func newTable(rows ...types.Row) *table { return &table{rows: rows, fetches: map[int64]int{}} }

func (t *table) Fetch(ctx context.Context, key types.Row, dst []types.Row) ([]types.Row, error) {
	t.mu.Lock()
	k := key[0].Int()
	t.fetches[k]++
	attempt := t.fetches[k]
	hook := t.hook
	rows := t.rows
	t.mu.Unlock()
	if hook != nil {
		if r, done, err := hook(ctx, k, attempt); done || err != nil {
			return append(dst, r...), err
		}
	}
	for _, r := range rows {
		if r[0].Int() == k {
			dst = append(dst, r)
		}
	}
	return dst, nil
}

func (t *table) Load(ctx context.Context, fn func(types.Row) error) error {
	t.mu.Lock()
	rows := t.rows
	t.loads++
	t.changed = false
	gate := t.gate
	t.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (t *table) Changed(context.Context) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed, nil
}

func (t *table) set(rows ...types.Row) {
	t.mu.Lock()
	t.rows, t.changed = rows, true
	t.mu.Unlock()
}

func (t *table) count(k int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fetches[k]
}

func dimRow(k int64, name string) types.Row { return types.Row{types.Int(k), types.String(name)} }

func spec(t *table, c Cache) Spec {
	return Spec{
		Table: "dim", LeftWidth: 2, DimWidth: 2, KeyWidth: 1, DimKeyCols: []int{0},
		Key:     func() (exec.Projector, error) { return colProjector{1}, nil },
		Fetcher: t, Loader: t, Cache: c,
	}
}

// harness runs one operator instance on a settable clock.
type harness struct {
	t  *testing.T
	op exec.Operator
	rt *optest.Runtime
	c  *optest.Collector
}

func open(t *testing.T, s Spec) *harness {
	t.Helper()
	op, err := NewJoin(s)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, op: op, rt: &optest.Runtime{}, c: &optest.Collector{}}
	ctx := h.rt.Context()
	ctx.Ctx = context.Background()
	if err := op.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// rows feeds one batch of (id, key) rows (key < 0: NULL) at clock now.
func (h *harness) rows(now int64, kv ...int64) []string {
	h.t.Helper()
	h.rt.Now = now
	b := batchOf(kv...)
	if err := h.op.ProcessBatch(0, b, h.c); err != nil {
		h.t.Fatal(err)
	}
	return h.c.Take()
}

func batchOf(kv ...int64) *types.Batch {
	b := types.NewBatch(2, 16)
	for i := 0; i+1 < len(kv); i += 2 {
		key := types.Int(kv[i+1])
		if kv[i+1] < 0 {
			key = types.NullValue
		}
		b.AppendRow(types.Insert, types.Row{types.Int(kv[i]), key})
	}
	return b
}

func TestInnerAndLeftJoin(t *testing.T) {
	tab := newTable(dimRow(10, "a"), dimRow(20, "b"), dimRow(20, "bb"))
	for _, cache := range []Cache{{}, {Kind: CachePartial, MaxRows: 10, CacheMissingKey: true}, {Kind: CacheFull}} {
		t.Run(cache.Kind.String(), func(t *testing.T) {
			s := spec(tab, cache)
			h := open(t, s)
			// Key 30 has no rows, a NULL key never matches.
			optest.Expect(t, "inner", h.rows(0, 1, 10, 2, 20, 3, 30, 4, -1),
				"+I(1, 10, 10, a)", "+I(2, 20, 20, b)", "+I(2, 20, 20, bb)")
			s.LeftOuter = true
			s.Residual = func() (exec.Predicate, error) { return notName("b"), nil }
			h = open(t, s)
			optest.Expect(t, "left with residual", h.rows(0, 1, 10, 2, 20, 3, 30, 4, -1),
				"+I(1, 10, 10, a)", "+I(2, 20, 20, bb)", "+I(3, 30, NULL, NULL)", "+I(4, NULL, NULL, NULL)")
		})
	}
}

// A row's kind carries over to its joined rows (updating input).
func TestRowKindsPassThrough(t *testing.T) {
	h := open(t, spec(newTable(dimRow(10, "a")), Cache{}))
	b := types.NewBatch(2, 4)
	b.AppendRow(types.UpdateBefore, types.Row{types.Int(1), types.Int(10)})
	b.AppendRow(types.UpdateAfter, types.Row{types.Int(1), types.Int(10)})
	if err := h.op.ProcessBatch(0, b, h.c); err != nil {
		t.Fatal(err)
	}
	optest.Expect(t, "kinds", h.c.Take(), "-U(1, 10, 10, a)", "+U(1, 10, 10, a)")
}

func TestPartialCache(t *testing.T) {
	t.Run("expire-after-write", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CachePartial, ExpireAfterWrite: 10 * time.Millisecond, CacheMissingKey: true}))
		h.rows(0, 1, 10)
		h.rows(9, 2, 10) // cached
		if n := tab.count(10); n != 1 {
			t.Fatalf("fetches of 10 before expiry: %d, want 1", n)
		}
		tab.set(dimRow(10, "a2"))
		optest.Expect(t, "after expiry", h.rows(10, 3, 10), "+I(3, 10, 10, a2)")
		if n := tab.count(10); n != 2 {
			t.Fatalf("fetches of 10 after expiry: %d, want 2", n)
		}
	})
	t.Run("expire-after-access", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CachePartial, ExpireAfterAccess: 10 * time.Millisecond, CacheMissingKey: true}))
		h.rows(0, 1, 10)
		h.rows(8, 2, 10)  // read at 8: lives until 18
		h.rows(16, 3, 10) // read at 16: lives until 26
		if n := tab.count(10); n != 1 {
			t.Fatalf("fetches while accessed: %d, want 1", n)
		}
		h.rows(26, 4, 10)
		if n := tab.count(10); n != 2 {
			t.Fatalf("fetches after 10 ms without access: %d, want 2", n)
		}
	})
	t.Run("max-rows evicts the least recently used", func(t *testing.T) {
		tab := newTable(dimRow(1, "a"), dimRow(2, "b"), dimRow(3, "c"))
		h := open(t, spec(tab, Cache{Kind: CachePartial, MaxRows: 2, CacheMissingKey: true}))
		h.rows(0, 1, 1, 2, 2) // cache: 2, 1
		h.rows(0, 3, 1)       // hit: 1, 2
		h.rows(0, 4, 3)       // 3 in, 2 out: 3, 1
		h.rows(0, 5, 1, 6, 2) // 1 hit; 2 fetched again
		if got := [3]int{tab.count(1), tab.count(2), tab.count(3)}; got != [3]int{1, 2, 1} {
			t.Fatalf("fetches of keys 1, 2, 3: %v, want [1 2 1]", got)
		}
	})
	t.Run("cache-missing-key", func(t *testing.T) {
		for _, missing := range []bool{true, false} {
			tab := newTable()
			h := open(t, spec(tab, Cache{Kind: CachePartial, MaxRows: 10, CacheMissingKey: missing}))
			h.rows(0, 1, 7, 2, 7, 3, 7)
			want := 3
			if missing {
				want = 1
			}
			if n := tab.count(7); n != want {
				t.Errorf("cache-missing-key %v: %d fetches of a missing key, want %d", missing, n, want)
			}
		}
	})
}

func TestFullCacheReload(t *testing.T) {
	// reloaded waits for the background reload a batch started.
	reloaded := func(t *testing.T, h *harness) {
		t.Helper()
		if err := h.op.(*join).AwaitReload(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("periodic fixed delay", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CacheFull, ReloadInterval: 100 * time.Millisecond}))
		tab.set(dimRow(10, "b"))
		optest.Expect(t, "before the interval", h.rows(99, 1, 10), "+I(1, 10, 10, a)")
		// The batch at the interval starts the reload and is served by
		// the cache it has.
		optest.Expect(t, "at the interval", h.rows(100, 2, 10), "+I(2, 10, 10, a)")
		reloaded(t, h)
		optest.Expect(t, "after the reload", h.rows(101, 3, 10), "+I(3, 10, 10, b)")
		if tab.loads != 2 {
			t.Fatalf("%d loads, want 2", tab.loads)
		}
		// Without a change the cache is loaded again all the same, the
		// delay after the last load's end (100): at 200, not at 199.
		h.rows(199, 4, 10)
		if h.op.(*join).reload != nil {
			t.Fatal("a reload started before the delay after the last one")
		}
		h.rows(200, 5, 10)
		reloaded(t, h)
		if tab.loads != 3 {
			t.Fatalf("%d loads, want 3", tab.loads)
		}
	})
	t.Run("lookups go on while a reload runs", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CacheFull, ReloadInterval: 100 * time.Millisecond}))
		tab.mu.Lock()
		tab.gate = make(chan struct{})
		tab.mu.Unlock()
		tab.set(dimRow(10, "b"))
		optest.Expect(t, "starting the reload", h.rows(100, 1, 10), "+I(1, 10, 10, a)")
		optest.Expect(t, "while it runs", h.rows(150, 2, 10), "+I(2, 10, 10, a)")
		close(tab.gate)
		reloaded(t, h)
		optest.Expect(t, "once it is done", h.rows(160, 3, 10), "+I(3, 10, 10, b)")
	})
	t.Run("close stops a reload", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CacheFull, ReloadInterval: 100 * time.Millisecond}))
		tab.mu.Lock()
		tab.gate = make(chan struct{}) // never opened: only the cancellation ends the load
		tab.mu.Unlock()
		h.rows(100, 1, 10)
		if err := h.op.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a failed reload fails the job", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		s := spec(tab, Cache{Kind: CacheFull, ReloadInterval: 100 * time.Millisecond})
		s.Prepare = func() (exec.Projector, error) { return failAfter{tab: tab}, nil }
		h := open(t, s)
		tab.set(dimRow(10, "bad"))
		h.rows(100, 1, 10)
		err := h.op.(*join).AwaitReload()
		if err == nil || !strings.Contains(err.Error(), "loading the full lookup cache of table dim") {
			t.Fatalf("reload error %v, want the failed load named", err)
		}
	})
	t.Run("only when changed", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CacheFull, ReloadInterval: 100 * time.Millisecond, OnlyWhenChanged: true}))
		h.rows(100, 1, 10)
		reloaded(t, h)
		h.rows(200, 1, 10)
		reloaded(t, h)
		if tab.loads != 1 {
			t.Fatalf("%d loads of an unchanged table, want 1", tab.loads)
		}
		// Checked at 100, 200 and 300: a change at 250 is seen at 300,
		// once the reload it starts is done.
		tab.set(dimRow(10, "c"))
		optest.Expect(t, "changed, before the check", h.rows(250, 2, 10), "+I(2, 10, 10, a)")
		h.rows(300, 3, 10)
		reloaded(t, h)
		optest.Expect(t, "changed, after the check", h.rows(301, 4, 10), "+I(4, 10, 10, c)")
	})
	t.Run("no interval never reloads", func(t *testing.T) {
		tab := newTable(dimRow(10, "a"))
		h := open(t, spec(tab, Cache{Kind: CacheFull}))
		tab.set(dimRow(10, "b"))
		optest.Expect(t, "much later", h.rows(1e9, 1, 10), "+I(1, 10, 10, a)")
	})
}

// failAfter is a Prepare projector that fails on a dimension row named
// "bad".
type failAfter struct{ tab *table }

func (f failAfter) Project(in, out types.Row) error {
	if in[1].Str() == "bad" {
		return errors.New("bad row")
	}
	copy(out, in)
	return nil
}

func TestNextReload(t *testing.T) {
	day := int64(24 * time.Hour / time.Millisecond)
	hour := int64(time.Hour / time.Millisecond)
	cases := []struct {
		name             string
		c                Cache
		start, end, prev int64
		want             int64
	}{
		{"fixed delay counts from the end", Cache{ReloadInterval: time.Second}, 1000, 1500, 0, 2500},
		{"fixed rate counts from the start", Cache{ReloadInterval: time.Second, FixedRate: true}, 1000, 1500, 0, 2000},
		// Loaded at 12:00 UTC, reloads at 10:00 UTC: first the next day's.
		{"timed: next occurrence", Cache{Reload: ReloadTimed, ReloadAt: 10 * time.Hour, ReloadEveryDays: 3}, 12 * hour, 12 * hour, 0, day + 10*hour},
		{"timed: later today", Cache{Reload: ReloadTimed, ReloadAt: 10 * time.Hour, ReloadEveryDays: 3}, 9 * hour, 9 * hour, 0, 10 * hour},
		{"timed: then every 3 days", Cache{Reload: ReloadTimed, ReloadAt: 10 * time.Hour, ReloadEveryDays: 3}, 10 * hour, 10 * hour, 10 * hour, 3*day + 10*hour},
	}
	for _, c := range cases {
		if got := nextReload(c.c, c.start, c.end, c.prev); got != c.want {
			t.Errorf("%s: next reload %d, want %d", c.name, got, c.want)
		}
	}
}

func TestRetryOnMiss(t *testing.T) {
	for _, async := range []bool{false, true} {
		// Key 10 appears at the third attempt; key 30 never.
		tab := newTable()
		tab.hook = func(_ context.Context, k int64, attempt int) ([]types.Row, bool, error) {
			if k == 10 && attempt >= 3 {
				return []types.Row{dimRow(10, "late")}, true, nil
			}
			return nil, true, nil
		}
		s := spec(tab, Cache{})
		s.LeftOuter = true
		if async {
			s.Async = &Async{Capacity: 4, Timeout: time.Minute}
		}
		s.Retry = &Retry{Delay: time.Millisecond, MaxAttempts: 2}
		h := open(t, s)
		optest.Expect(t, "two retries find key 10", h.rows(0, 1, 10, 2, 30), "+I(1, 10, 10, late)", "+I(2, 30, NULL, NULL)")
		if a, b := tab.count(10), tab.count(30); a != 3 || b != 3 {
			t.Errorf("async %v: %d and %d lookups of 10 and 30, want 3 and 3 (1 + max-attempts)", async, a, b)
		}
		tab.fetches = map[int64]int{}
		s.Retry.MaxAttempts = 1
		h = open(t, s)
		optest.Expect(t, "one retry is not enough", h.rows(0, 1, 10), "+I(1, 10, NULL, NULL)")
	}
}

// blocking is a table whose fetches wait until released, key by key.
type blocking struct {
	*table
	started  chan int64
	release  map[int64]chan struct{}
	inflight atomic.Int32
	peak     atomic.Int32
}

func newBlocking(keys ...int64) *blocking {
	b := &blocking{table: newTable(), started: make(chan int64, len(keys)), release: map[int64]chan struct{}{}}
	for _, k := range keys {
		b.release[k] = make(chan struct{})
		b.rows = append(b.rows, dimRow(k, "d"))
	}
	b.hook = func(ctx context.Context, k int64, _ int) ([]types.Row, bool, error) {
		n := b.inflight.Add(1)
		for {
			p := b.peak.Load()
			if n <= p || b.peak.CompareAndSwap(p, n) {
				break
			}
		}
		b.started <- k
		defer b.inflight.Add(-1)
		select {
		case <-b.release[k]:
			return nil, false, nil
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
	return b
}

// run processes the batch on a goroutine of its own while the test
// releases lookups; done receives the result.
func (h *harness) runAsync(kv ...int64) chan error {
	done := make(chan error, 1)
	go func() { done <- h.op.ProcessBatch(0, batchOf(kv...), h.c) }()
	return done
}

func TestAsyncBoundedInFlight(t *testing.T) {
	b := newBlocking(1, 2, 3, 4, 5)
	s := spec(b.table, Cache{})
	s.Async = &Async{Capacity: 2, Timeout: time.Minute}
	h := open(t, s)
	done := h.runAsync(1, 1, 2, 2, 3, 3, 4, 4, 5, 5)
	// Release each lookup once it started; never more than two start
	// before one is released.
	for range 5 {
		k := <-b.started
		close(b.release[k])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := b.peak.Load(); p > 2 {
		t.Errorf("%d lookups in flight at once, capacity 2", p)
	}
	optest.Expect(t, "ordered output", h.c.Take(),
		"+I(1, 1, 1, d)", "+I(2, 2, 2, d)", "+I(3, 3, 3, d)", "+I(4, 4, 4, d)", "+I(5, 5, 5, d)")
}

func TestAsyncOutputOrder(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		b := newBlocking(1, 2, 3)
		// With a partial cache the operator reads the clock once per key
		// before the lookups start and once per lookup as it takes its
		// result: the clock tells the test that a result was taken.
		s := spec(b.table, Cache{Kind: CachePartial, MaxRows: 10})
		s.Async = &Async{Capacity: 3, Timeout: time.Minute, Unordered: unordered}
		s.LeftOuter = true
		op, err := NewJoin(s)
		if err != nil {
			t.Fatal(err)
		}
		clock := make(chan struct{}, 16)
		ctx := (&optest.Runtime{}).Context()
		ctx.Ctx = context.Background()
		ctx.Now = func() int64 { clock <- struct{}{}; return 0 }
		if err := op.Open(ctx); err != nil {
			t.Fatal(err)
		}
		c := &optest.Collector{}
		done := make(chan error, 1)
		// Row 4 has a NULL key: its result is known at once.
		go func() { done <- op.ProcessBatch(0, batchOf(1, 1, 2, 2, 3, 3, 4, -1), c) }()
		for range 3 {
			<-b.started
			<-clock
		}
		// Complete 3, then 2, then 1, each once the previous result was
		// taken.
		for _, k := range []int64{3, 2, 1} {
			close(b.release[k])
			<-clock
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !unordered {
			optest.Expect(t, "ordered", c.Take(), "+I(1, 1, 1, d)", "+I(2, 2, 2, d)", "+I(3, 3, 3, d)", "+I(4, NULL, NULL, NULL)")
			continue
		}
		optest.Expect(t, "unordered", c.Take(), "+I(4, NULL, NULL, NULL)", "+I(3, 3, 3, d)", "+I(2, 2, 2, d)", "+I(1, 1, 1, d)")
	}
}

func TestAsyncTimeout(t *testing.T) {
	b := newBlocking(1)
	s := spec(b.table, Cache{})
	s.Async = &Async{Capacity: 1, Timeout: time.Millisecond}
	h := open(t, s)
	err := h.op.ProcessBatch(0, batchOf(1, 1), h.c)
	if err == nil || !strings.Contains(err.Error(), "Async function call has timed out.") {
		t.Fatalf("got %v, want Flink's timeout message", err)
	}
}

func TestAsyncErrorWaitsForEveryLookup(t *testing.T) {
	b := newBlocking(1, 2)
	boom := errors.New("boom")
	inner := b.hook
	b.hook = func(ctx context.Context, k int64, a int) ([]types.Row, bool, error) {
		if k == 2 {
			return nil, true, boom
		}
		return inner(ctx, k, a)
	}
	s := spec(b.table, Cache{})
	s.Async = &Async{Capacity: 2, Timeout: time.Minute}
	h := open(t, s)
	// Lookup 1 blocks until the failure of 2 cancels it; ProcessBatch
	// returns only after both goroutines ended.
	err := h.op.ProcessBatch(0, batchOf(1, 1, 2, 2), h.c)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if n := b.inflight.Load(); n != 0 {
		t.Fatalf("%d lookups still running after ProcessBatch returned", n)
	}
}

// step is one batch of (id, key) rows at a clock time, or a watermark.
type step struct {
	now int64
	kv  []int64
	wm  int64
}

func (s step) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *optest.Collector) {
	t.Helper()
	rt.Now = s.now
	if s.wm != 0 {
		if err := op.ProcessWatermark(s.wm, c); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := op.ProcessBatch(0, batchOf(s.kv...), c); err != nil {
		t.Fatal(err)
	}
}

// The operator has no state: after a restore at any step, the rest of the
// input gives the same rows (the async lookups of a batch complete inside
// ProcessBatch, before any barrier).
func TestLookupRestores(t *testing.T) {
	tab := newTable(dimRow(10, "a"), dimRow(20, "b"))
	for _, c := range []Cache{{}, {Kind: CachePartial, MaxRows: 1, CacheMissingKey: true}, {Kind: CacheFull}} {
		s := spec(tab, c)
		s.LeftOuter = true
		if c.Kind != CacheFull {
			s.Async = &Async{Capacity: 2, Timeout: time.Minute}
		}
		build := func() (exec.Operator, error) { return NewJoin(s) }
		optest.CheckRestores(t, build, func() *optest.Collector { return &optest.Collector{} }, 0, []step{
			{now: 1, kv: []int64{1, 10, 2, 30}},
			{wm: 5},
			{now: 2, kv: []int64{3, 20, 4, -1, 5, 10}},
		}, 0,
			"+I(1, 10, 10, a)", "+I(2, 30, NULL, NULL)", "WM(5)",
			"+I(3, 20, 20, b)", "+I(4, NULL, NULL, NULL)", "+I(5, 10, 10, a)")
	}
}
