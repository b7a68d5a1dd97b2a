package statecache

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// counts is a minimal keyed operator over a Cache: a running sum per
// string key (column 0), kept in an int64 value state.
type counts struct {
	cfg   Config
	clock *int64
	c     *Cache[int64]
	sums  []int64
}

func (s *counts) Grow(n int) {
	for len(s.sums) < n {
		s.sums = append(s.sums, 0)
	}
}
func (s *counts) Load(id int32, v int64) error { s.sums[id] = v; return nil }
func (s *counts) Value(id int32) int64         { return s.sums[id] }
func (s *counts) Clear(id int32)               { s.sums[id] = 0 }

func (s *counts) OpenKeyedState(b *kv.Backend) error {
	st, err := kv.NewValueState[int64](b, "sum", kv.Int64{}, kv.Options{TTL: time.Duration(s.cfg.TTL) * time.Millisecond})
	if err != nil {
		return err
	}
	fresh, err := Empty(b)
	if err != nil {
		return err
	}
	s.c = New(b, st, s, s.cfg, fresh)
	return s.c.Preload("sum", kv.Int64{})
}

func (s *counts) PrepareSnapshot(exec.CheckpointID) error { return s.c.Flush() }
func (*counts) Open(*exec.OperatorContext) error          { return nil }
func (*counts) ProcessBatch(int, *types.Batch, exec.Output) error {
	return nil
}
func (*counts) ProcessWatermark(int64, exec.Output) error { return nil }
func (*counts) Finish(exec.Output) error                  { return nil }
func (*counts) Close() error                              { return nil }

func keyRow(k string) (types.Row, uint64) {
	row := types.Row{types.String(k)}
	return row, types.HashColumns(row, []int{0})
}

// add adds d to key k's sum; a sum reaching 0 removes the key.
func (s *counts) add(t *testing.T, k string, d int64) {
	t.Helper()
	s.c.SetNow(*s.clock)
	row, h := keyRow(k)
	id, ok, err := s.c.Get(row, h)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if id, err = s.c.Create(row, h); err != nil {
			t.Fatal(err)
		}
	}
	s.sums[id] += d
	if s.sums[id] == 0 {
		if err := s.c.Remove(id); err != nil {
			t.Fatal(err)
		}
		return
	}
	s.c.Written(id)
}

// get returns k's sum (ok false: no live state).
func (s *counts) get(t *testing.T, k string) (int64, bool) {
	t.Helper()
	s.c.SetNow(*s.clock)
	row, h := keyRow(k)
	id, ok, err := s.c.Get(row, h)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0, false
	}
	return s.sums[id], true
}

func key(i int) string { return fmt.Sprintf("k%03d", i) }

// TestEvictionRoundTrips: a cache of 8 entries over 100 keys evicts on
// almost every access, so every value goes through the backend (Pebble on
// rocksdb) and back; the sums must be the ones worked out by hand: key i
// gets i in each of 3 rounds, so 3i (key 0 never has state).
func TestEvictionRoundTrips(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			var now int64
			k := optest.NewKeyed(t, kind)
			op := &counts{cfg: Config{KeyCols: []int{0}, Limit: 8}, clock: &now}
			b := k.Open(t, op)
			for range 3 {
				for i := range 100 {
					op.add(t, key(i), int64(i))
				}
			}
			if op.c.Evictions() == 0 || op.c.Len() > 8 {
				t.Fatalf("%d evictions, %d cached: want evictions and at most 8 cached", op.c.Evictions(), op.c.Len())
			}
			for i := range 100 {
				got, ok := op.get(t, key(i))
				if want := int64(3 * i); got != want || ok != (i != 0) {
					t.Errorf("%s = %d (%v), want %d", key(i), got, ok, want)
				}
			}
			// After a flush the backend alone holds every sum.
			if err := op.PrepareSnapshot(1); err != nil {
				t.Fatal(err)
			}
			if n := len(optest.Dump(t, b)); n != 99 {
				t.Errorf("backend holds %d entries after the flush, want 99", n)
			}
		})
	}
}

// TestRestoreAfterEviction: a snapshot taken while most keys are only in
// the backend restores every sum, and the restored cache keeps counting.
func TestRestoreAfterEviction(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			var now int64
			k := optest.NewKeyed(t, kind)
			op := &counts{cfg: Config{KeyCols: []int{0}, Limit: 4}, clock: &now}
			b := k.Open(t, op)
			for i := 1; i <= 20; i++ {
				op.add(t, key(i), 10)
			}
			op.add(t, key(3), -10) // removed: no state, in the cache or the backend
			snap := k.Snapshot(t, op, b, 1)
			op.add(t, key(1), 1000) // after the checkpoint: lost by the restore
			restored := &counts{cfg: op.cfg, clock: &now}
			k.Restore(t, restored, snap)
			restored.add(t, key(2), 5)
			for i := 1; i <= 20; i++ {
				want, wantOK := int64(10), true
				switch i {
				case 2:
					want = 15
				case 3:
					want, wantOK = 0, false
				}
				if got, ok := restored.get(t, key(i)); got != want || ok != wantOK {
					t.Errorf("%s = %d (%v), want %d (%v)", key(i), got, ok, want, wantOK)
				}
			}
		})
	}
}

// TestPreloadMakesHashmapComplete: a restored hashmap backend is read into
// the cache at once (its state is in memory anyway), so a new key costs
// no backend read; a rocksdb one is not read.
func TestPreloadMakesHashmapComplete(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			var now int64
			k := optest.NewKeyed(t, kind)
			op := &counts{cfg: Config{KeyCols: []int{0}}, clock: &now}
			b := k.Open(t, op)
			if !op.c.Complete() {
				t.Fatal("a cache over a fresh backend must be complete")
			}
			op.add(t, "a", 1)
			op.add(t, "b", 2)
			snap := k.Snapshot(t, op, b, 1)
			restored := &counts{cfg: op.cfg, clock: &now}
			k.Restore(t, restored, snap)
			wantLen, wantComplete := 2, true
			if kind == image.RocksDB {
				wantLen, wantComplete = 0, false
			}
			if restored.c.Len() != wantLen || restored.c.Complete() != wantComplete {
				t.Errorf("restored: %d cached (complete %v), want %d (%v)", restored.c.Len(), restored.c.Complete(), wantLen, wantComplete)
			}
			if got, ok := restored.get(t, "b"); got != 2 || !ok {
				t.Errorf("b = %d (%v), want 2", got, ok)
			}
		})
	}
}

// TestTTLThroughTheCache: with a TTL of 10 ms a key written at t is
// readable until t+9 and gone at t+10 (lastWrite + ttl <= now), in the
// cache and in the backend after an eviction, and a write-back (eviction
// or flush) keeps the time of the last change, not of the write-back.
func TestTTLThroughTheCache(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			var now int64 = 1000
			k := optest.NewKeyed(t, kind)
			k.Clock = func() int64 { return now }
			op := &counts{cfg: Config{KeyCols: []int{0}, TTL: 10, Limit: 2}, clock: &now}
			b := k.Open(t, op)
			op.add(t, "a", 1) // a written at 1000
			now = 1005
			op.add(t, "b", 1) // b at 1005
			op.add(t, "c", 1) // c at 1005: evicts a (written back stamped 1000)
			now = 1009
			if got, ok := op.get(t, "a"); !ok || got != 1 {
				t.Errorf("at 1009 a = %d (%v), want 1", got, ok)
			}
			if err := op.PrepareSnapshot(1); err != nil {
				t.Fatal(err)
			}
			now = 1010
			if _, ok := op.get(t, "a"); ok {
				t.Error("at 1010 a (written at 1000, TTL 10) must be expired")
			}
			if got, ok := op.get(t, "b"); !ok || got != 1 {
				t.Errorf("at 1010 b = %d (%v), want 1", got, ok)
			}
			op.add(t, "b", 1) // b written again at 1010
			now = 1015
			if _, ok := op.get(t, "c"); ok {
				t.Error("at 1015 c (written at 1005) must be expired")
			}
			if got, ok := op.get(t, "b"); !ok || got != 2 {
				t.Errorf("at 1015 b = %d (%v), want 2", got, ok)
			}
			op.add(t, "a", 5) // a starts again from nothing
			if got, _ := op.get(t, "a"); got != 5 {
				t.Errorf("a recreated = %d, want 5", got)
			}
			now = 1030
			op.c.SetNow(now)
			op.c.Sweep()
			if op.c.Len() != 0 {
				t.Errorf("%d entries cached after the sweep at 1030, want 0", op.c.Len())
			}
			if err := op.PrepareSnapshot(2); err != nil {
				t.Fatal(err)
			}
			if got := optest.Dump(t, b); len(got) != 0 {
				t.Errorf("backend at 1030 holds live entries %v, want none", got)
			}
		})
	}
}

// TestPendingStaysBounded: keys created and removed over and over reuse
// ids; the list of entries to write back must not grow with them.
func TestPendingStaysBounded(t *testing.T) {
	var now int64
	k := optest.NewKeyed(t, image.Hashmap)
	op := &counts{cfg: Config{KeyCols: []int{0}}, clock: &now}
	k.Open(t, op)
	for range 200 {
		for i := range 50 {
			op.add(t, key(i), 1)
		}
		for i := range 50 {
			op.add(t, key(i), -1)
		}
	}
	if n := op.c.Pending(); n > 2*50+64 {
		t.Errorf("%d entries pending after 10 000 creations of 50 keys", n)
	}
}

// TestBound: no bound on hashmap; on rocksdb a quarter of the budget at
// the given entry size, at least the given minimum.
func TestBound(t *testing.T) {
	for _, kind := range optest.Kinds {
		k := optest.NewKeyed(t, kind)
		b := k.Open(t, &counts{cfg: Config{KeyCols: []int{0}}, clock: new(int64)})
		got := Bound(b, 100, 10)
		want := 0
		if kind == image.RocksDB {
			want = int(b.MemoryBudget() / 4 / 100)
		}
		if got != want {
			t.Errorf("%s: Bound(100 B) = %d, want %d", kind, got, want)
		}
		if kind == image.RocksDB {
			if got := Bound(b, 1<<40, 10); got != 10 {
				t.Errorf("rocksdb: Bound of huge entries = %d, want the minimum 10", got)
			}
		}
	}
	for _, c := range []struct {
		ttl, written, now int64
		want              bool
	}{{0, 0, 1 << 40, false}, {10, 100, 109, false}, {10, 100, 110, true}, {10, 100, 111, true}} {
		if got := Expired(c.ttl, c.written, c.now); got != c.want {
			t.Errorf("Expired(ttl %d, written %d, now %d) = %v, want %v", c.ttl, c.written, c.now, got, c.want)
		}
	}
}

// windowed is counts with a namespace: the key is (k, window end) with
// the end as the namespace, as a window operator keys its state.
func windowed(now *int64, limit int) *counts {
	return &counts{cfg: Config{KeyCols: []int{0, 1}, KeyLen: 1, Limit: limit,
		Namespace: func(dst []byte, rest []types.Value) []byte {
			return append(dst, byte(rest[0].N>>8), byte(rest[0].N))
		}}, clock: now}
}

func (s *counts) addIn(t *testing.T, k string, end, d int64) {
	t.Helper()
	row := types.Row{types.String(k), types.Int(end)}
	h := types.HashColumns(row, []int{0, 1})
	id, ok, err := s.c.Get(row, h)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if id, err = s.c.Create(row, h); err != nil {
			t.Fatal(err)
		}
	}
	s.sums[id] += d
	s.c.Written(id)
}

// TestNamespaces: entries of one key in two windows are two entries of
// the backend under the key's kv key and the windows' namespaces, they
// survive evictions apart, and DropIf forgets a window's entries in the
// cache only.
func TestNamespaces(t *testing.T) {
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			var now int64
			k := optest.NewKeyed(t, kind)
			op := windowed(&now, 2)
			b := k.Open(t, op)
			for range 2 {
				op.addIn(t, "a", 10, 1)
				op.addIn(t, "a", 20, 2)
				op.addIn(t, "b", 10, 4)
			}
			if op.c.Evictions() == 0 {
				t.Fatal("no evictions with a cache of 2 entries over 3")
			}
			if err := op.PrepareSnapshot(1); err != nil {
				t.Fatal(err)
			}
			// kv key "a" (types.AppendValue) appears under two namespaces.
			got := optest.Dump(t, b)
			if len(got) != 3 {
				t.Fatalf("backend holds %v, want 3 entries", got)
			}
			op.addIn(t, "a", 20, 0) // loads (a, 20) if evicted
			op.c.DropIf(func(id int32) bool { return op.c.Key(id)[1].N == 20 })
			for id := range op.sums {
				if op.c.Live(int32(id)) && op.c.Key(int32(id))[1].N == 20 {
					t.Fatal("DropIf left an entry of window 20")
				}
			}
			restored := windowed(&now, 2)
			k.Restore(t, restored, k.Snapshot(t, op, b, 2))
			for _, c := range []struct {
				k    string
				end  int64
				want int64
			}{{"a", 10, 2}, {"a", 20, 4}, {"b", 10, 8}} {
				restored.addIn(t, c.k, c.end, 0)
				row := types.Row{types.String(c.k), types.Int(c.end)}
				id, ok := restored.c.Find(row, types.HashColumns(row, []int{0, 1}))
				if !ok || restored.sums[id] != c.want {
					t.Errorf("(%s, %d) = %d (%v), want %d", c.k, c.end, restored.sums[id], ok, c.want)
				}
			}
		})
	}
}

// TestStoredKeysFilter: after a fresh start on rocksdb the cache knows
// which keys it wrote back, so once evictions made it incomplete a key it
// never wrote is answered absent from the filter; keys it evicted are read
// back. A restored cache cannot know what the snapshot holds and has no
// filter.
func TestStoredKeysFilter(t *testing.T) {
	var now int64
	k := optest.NewKeyed(t, image.RocksDB)
	op := &counts{cfg: Config{KeyCols: []int{0}, Limit: 4}, clock: &now}
	b := k.Open(t, op)
	for i := 1; i <= 20; i++ {
		op.add(t, key(i), int64(i))
	}
	if op.c.Complete() || op.c.stored == nil {
		t.Fatalf("after %d evictions: complete %v, filter %v; want incomplete with a filter", op.c.Evictions(), op.c.Complete(), op.c.stored != nil)
	}
	_, h := keyRow("never")
	if op.c.stored.MayContain(h) {
		// 20 keys set at most 80 of the filter's 524 288 bits.
		t.Fatal("the filter holds a key never written back")
	}
	if _, ok := op.get(t, "never"); ok {
		t.Error("a key never added has state")
	}
	for i := 1; i <= 20; i++ {
		if got, ok := op.get(t, key(i)); !ok || got != int64(i) {
			t.Errorf("%s = %d (%v), want %d", key(i), got, ok, i)
		}
	}
	restored := &counts{cfg: op.cfg, clock: &now}
	k.Restore(t, restored, k.Snapshot(t, op, b, 1))
	if restored.c.stored != nil {
		t.Error("a restored cache has a filter of stored keys")
	}
	if got, ok := restored.get(t, key(7)); !ok || got != 7 {
		t.Errorf("restored %s = %d (%v), want 7", key(7), got, ok)
	}
}
