package join

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

// The interval join buffers decoded rows on hashmap and writes them back
// at a snapshot; on rocksdb it reads and writes the backend per row. The
// same script must leave the same entries (rows, counts, expiry index and
// the kept watermark) in both backends at every snapshot and emit the
// same rows, including rows stored twice, rows that expire before or
// after they were written back, late rows and NULL keys.
func TestIntervalCacheWritesUncachedState(t *testing.T) {
	// left.ts BETWEEN right.ts - 2 s AND right.ts + 1 s, as intervalBuild.
	script := [][]step{{
		left(ins("a", 5000*ms), ins("a", 5000*ms), ins("b", 5200*ms), ins(nil, 5000*ms)),
		right(ins("a", 4500*ms), ins("c", 5000*ms)),
		wm(3000),
	}, {
		right(ins("b", 6000*ms), ins("a", 6500*ms)),
		wm(5600), // right rows ≤ 4599 expire: (a, 4500), stored at snapshot 1
		left(ins("a", 3000*ms), ins("c", 7000*ms)),
	}, {
		right(ins("d", 7000*ms), ins("c", 7500*ms)),
		wm(7200), // left rows ≤ 5199: (a, 5000) x2, NULL; right ≤ 6199: (c, 5000), (b, 6000)
		left(ins("d", 7100*ms)),
		wm(9000),
	}, {
		left(ins("e", 9500*ms)),
		wm(20000), // everything expires
	}}
	for _, typ := range []Type{Inner, LeftOuter, RightOuter, FullOuter} {
		t.Run(typ.String(), func(t *testing.T) {
			dumps := checkCachedMatchesUncached(t, intervalBuild(typ), script)
			// Snapshot 1 holds rows of both sides; the last only the
			// watermark (kept per key group).
			if n := len(dumps[0]); n < 6 {
				t.Fatalf("snapshot 1 holds %d entries, want the buffered rows and their expiry entries", n)
			}
			for _, e := range dumps[3] {
				if !strings.Contains(e, " watermark ") {
					t.Fatalf("the last snapshot holds %q, want only the kept watermark", e)
				}
			}
		})
	}
}

// Without checkpoints the cache forgets the keys whose rows all expired,
// so that a stream over ever new keys does not pile them up.
func TestIntervalCacheForgetsExpiredKeys(t *testing.T) {
	op, err := intervalBuild(FullOuter)()
	if err != nil {
		t.Fatal(err)
	}
	openOn(t, image.Hashmap, op)
	rt := &optest.Runtime{}
	c := newCollector()
	const keys = 1000
	rows := make([]rowSpec, keys)
	for i := range rows {
		rows[i] = ins(fmt.Sprintf("k%d", i), 5000*ms)
	}
	j := op.(*interval)
	// Three rounds of 1000 new keys each, all expiring before the next.
	const rounds = 3
	for r := range rounds {
		base := time.Duration(r) * 10000 * ms
		for i := range rows {
			rows[i] = ins(fmt.Sprintf("k%d-%d", r, i), base+5000*ms)
		}
		left(rows...).Run(t, op, rt, c)
		if got := j.cache.live; got != keys {
			t.Fatalf("round %d: %d keys cached after %d rows of distinct keys", r, got, keys)
		}
		wm(int64(r)*10000+10000).Run(t, op, rt, c)
		if got := j.cache.live; got != 0 {
			t.Fatalf("round %d: %d keys still cached after all their rows expired", r, got)
		}
		// No checkpoint ran: the list of keys to write back names each
		// of the 1000 ids in use at most once, however often they
		// were handed out again.
		if got := len(j.cache.dirty); got > keys {
			t.Fatalf("round %d: %d entries in the dirty list, want at most %d", r, got, keys)
		}
	}
	// Each left row was emitted padded when it expired, once.
	padded := 0
	for _, e := range c.Events {
		if len(e) > 3 && e[:3] == "+I(" {
			padded++
		}
	}
	if padded != rounds*keys {
		t.Fatalf("%d padded rows, want %d", padded, rounds*keys)
	}
}

// Rows of one key and one time are kept in the order of their encoded
// bytes, as the backend orders its map keys, whether they are kept flat
// (an integer key) or not (a string key); copies of one row are counted,
// not repeated. Equal-time rows are told apart by encoding them again, so
// the backend must also end up with nothing once they expired.
func TestIntervalCacheEqualTimes(t *testing.T) {
	build := func() (exec.Operator, error) {
		return NewInterval(IntervalSpec{
			Type: Inner, EventTime: true,
			Left: Side{Width: 3, Keys: []int{0}}, Right: Side{Width: 3, Keys: []int{0}},
			LeftTimeCol: 1, RightTimeCol: 1, LowerBound: -1000, UpperBound: 1000,
		})
	}
	script := []step{
		left(ins(1, 5000*ms, 3), ins(1, 5000*ms, 1), ins(1, 5000*ms, 2), ins(1, 5000*ms, 1),
			ins("a", 5000*ms, 2), ins("a", 5000*ms, 1)),
		// Left rows in [4500, 6500] and [3500, 5500]: all of them, v
		// ascending (the varints of 1 < 2 < 3 compare so).
		right(ins(1, 5500*ms, 0), ins("a", 4500*ms, 0)),
		wm(7000), // every row is at or before 7000 - 1000 - 1
	}
	checkRestores(t, build, 0, script, 0,
		"+I(1, 5000, 1, 1, 5500, 0)",
		"+I(1, 5000, 1, 1, 5500, 0)",
		"+I(1, 5000, 2, 1, 5500, 0)",
		"+I(1, 5000, 3, 1, 5500, 0)",
		"+I(a, 5000, 1, a, 4500, 0)",
		"+I(a, 5000, 2, a, 4500, 0)",
		"WM(6000)",
	)
	dumps := checkCachedMatchesUncached(t, build, [][]step{script[:1], script[1:2], script[2:]})
	for _, e := range dumps[2] {
		if !strings.Contains(e, " watermark ") {
			t.Fatalf("after everything expired the backend holds %q, want only the kept watermark", e)
		}
	}
}

// Deadlines come out earliest first whether they went to the FIFO (in
// order) or the heap (earlier than the FIFO's last), and only those due.
func TestIntervalCacheDeadlineOrder(t *testing.T) {
	c := newIntervalCache(1, [2]int{1, 1})
	// 10, 20, 30 go to the FIFO; 15 and 5 to the heap; 40 to the FIFO.
	for i, d := range []int64{10, 20, 30, 15, 5, 40} {
		c.push(0, ivDue{deadline: d, id: int32(i)})
	}
	if c.queues[0].len() != 4 || len(c.heaps[0]) != 2 {
		t.Fatalf("FIFO %d, heap %d deadlines, want 4 and 2", c.queues[0].len(), len(c.heaps[0]))
	}
	var got []int64
	for {
		d, ok := c.popDue(0, 30)
		if !ok {
			break
		}
		got = append(got, d.deadline)
	}
	if want := []int64{5, 10, 15, 20, 30}; !slices.Equal(got, want) {
		t.Fatalf("due at 30: %v, want %v", got, want)
	}
	if _, ok := c.popDue(1, 1<<62); ok {
		t.Fatal("side 1 has no deadlines")
	}
	// Many in order: the FIFO compacts its consumed head and keeps order.
	for d := int64(100); d < 5100; d++ {
		c.push(0, ivDue{deadline: d})
	}
	next := int64(40)
	for {
		d, ok := c.popDue(0, 4000)
		if !ok {
			break
		}
		if d.deadline != next {
			t.Fatalf("popped %d, want %d", d.deadline, next)
		}
		if next == 40 {
			next = 100
		} else {
			next++
		}
	}
	if next != 4001 || c.queues[0].len() != 1099 {
		t.Fatalf("stopped before %d with %d left, want 4001 and 1099", next, c.queues[0].len())
	}
}

// The interval cache's key table finds each key among colliding ones (a
// shared home slot, equal low hash bits, equal full hashes with other
// values), and still finds the rest after some are forgotten, which
// shifts their probe runs back.
func TestIntervalCacheKeyTable(t *testing.T) {
	c := newIntervalCache(2, [2]int{2, 2})
	const n = 200
	// Keys (i, "x"): four homes; the low 32 bits repeat every 4 keys, the
	// high ones every 8, so keys i and i+8 have equal hashes.
	hash := func(i int) uint64 { return uint64(i%4) | uint64(i%8)<<40 }
	set := func(i int) {
		c.keyRow[0], c.keyRow[1] = types.Int(int64(i)), types.String("x")
	}
	ids := map[int32]int{}
	for i := range n {
		set(i)
		id := c.intern(hash(i))
		if prev, dup := ids[id]; dup {
			t.Fatalf("keys %d and %d got the same id %d", prev, i, id)
		}
		ids[id] = i
	}
	if c.live != n {
		t.Fatalf("%d keys live, want %d", c.live, n)
	}
	idOf := make([]int32, n)
	for id, i := range ids {
		idOf[i] = id
	}
	// Forget every third key (they hold no rows).
	for i := 0; i < n; i += 3 {
		c.releaseIfEmpty(idOf[i])
	}
	if want := n - (n+2)/3; c.live != want {
		t.Fatalf("%d keys live after forgetting every third, want %d", c.live, want)
	}
	for i := range n {
		set(i)
		got := c.find(hash(i))
		switch {
		case i%3 == 0 && got != -1:
			t.Fatalf("forgotten key %d found as id %d", i, got)
		case i%3 != 0 && got != idOf[i]:
			t.Fatalf("key %d found as id %d, want %d", i, got, idOf[i])
		}
		if i%3 != 0 {
			if k := c.keyOf(nil, got); len(k) != 2 || k[0].N != int64(i) || k[1].S != "x" {
				t.Fatalf("key %d reads back as %v", i, k)
			}
		}
	}
	// Added again, the forgotten keys reuse the freed ids.
	for i := 0; i < n; i += 3 {
		set(i)
		if id := c.intern(hash(i)); id >= n {
			t.Fatalf("key %d added again as id %d, want a freed one below %d", i, id, n)
		}
	}
	if c.live != n {
		t.Fatalf("%d keys live, want %d", c.live, n)
	}
}
