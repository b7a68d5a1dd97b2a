package join

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
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
	left(rows...).Run(t, op, rt, c)
	j := op.(*interval)
	if got := j.cache.keys.Size(); got != keys {
		t.Fatalf("%d keys cached after %d rows of distinct keys", got, keys)
	}
	wm(10000).Run(t, op, rt, c)
	if got := j.cache.keys.Size(); got != 0 {
		t.Fatalf("%d keys still cached after all their rows expired", got)
	}
	// Each left row was emitted padded when it expired, once.
	padded := 0
	for _, e := range c.Events {
		if len(e) > 3 && e[:3] == "+I(" {
			padded++
		}
	}
	if padded != keys {
		t.Fatalf("%d padded rows, want %d", padded, keys)
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
