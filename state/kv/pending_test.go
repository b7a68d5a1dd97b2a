package kv

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestSnapshotHoldsLaterWrites: the synchronous part of a rocksdb snapshot
// only starts the memtable flush; the Pebble checkpoint is taken after it
// returned. Writes made in between (here: many megabytes, several
// memtables' worth, each evicted from a 2 KB cache into the batch) must
// not reach the image, and must all be in the live backend afterwards.
// Were they committed to the DB before the checkpoint, the flushes of
// their memtables would put them into the checkpoint's SSTs. The test
// holds the checkpoint back until the writes wait for it (or, were they
// not held, until they are all done).
func TestSnapshotHoldsLaterWrites(t *testing.T) {
	v := variant{name: "rocksdb-tiny-cache", kind: "rocksdb", cache: 2 << 10}
	clk := &fakeClock{}
	b := openVariant(t, v, clk)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	e := b.eng.(*pebbleEngine)
	e.knobs = testingKnobs{checkpointGate: gate, onAwaitPending: release}
	vs, err := NewValueState(b, "v", Bytes{}, Options{})
	must(t, err)
	value := func(round, i int) []byte {
		return append([]byte(fmt.Sprintf("r%d-%05d-", round, i)), bytes.Repeat([]byte{'x'}, 1000)...)
	}
	const before, after = 2000, 8000
	for i := range before {
		setKey(t, b, fmt.Sprint("k", i))
		must(t, vs.Put(nil, value(0, i)))
	}
	want := dump(t, b)
	im, err := b.Snapshot(1)
	must(t, err)
	for i := range after {
		setKey(t, b, fmt.Sprint("k", i)) // overwrites the first 2000, adds 6000
		must(t, vs.Put(nil, value(1, i)))
	}
	release()
	must(t, im.Finish())
	r := restoreImage(t, v, clk, im)
	if got := dump(t, r); !slices.Equal(got, want) {
		t.Errorf("image holds %d entries, want the %d at the snapshot (first diff: %s)", len(got), len(want), firstDiff(got, want))
	}
	live := dump(t, b)
	if len(live) != after {
		t.Fatalf("live backend holds %d entries, want %d", len(live), after)
	}
	for i := range after {
		setKey(t, b, fmt.Sprint("k", i))
		got, ok, err := vs.Get(nil)
		must(t, err)
		if !ok || !bytes.Equal(got, value(1, i)) {
			t.Fatalf("k%d after the snapshot: %.12q (present %v), want %.12q", i, got, ok, value(1, i))
		}
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%.40q vs %.40q", a[i], b[i])
		}
	}
	return "lengths"
}
