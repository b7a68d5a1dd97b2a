package window

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/kv"
)

// TestSessionTimersOutgrowTheCache: processing-time sessions of 300 keys
// behind a cache of 4 keys live in the backend with their timers (the
// timer service). A restore asks the runtime for one wake-up, at the
// earliest session's end, not one per stored session, and advancing the
// clock then fires every session once, in end order, from the backend.
//
// Key k (k = 0…299) gets one row of value k at 10·k ms of the clock, so
// its session is [10k, 10k + 5000) ms and fires at its last millisecond,
// 10k + 4999, as +I(k, 1, k, k, start, end, end - 1).
func TestSessionTimersOutgrowTheCache(t *testing.T) {
	const keys = 300
	ms := func(m int64) string { return fmt.Sprintf("00:00:%02d.%03d", m/1000, m%1000) }
	var want []string
	for k := range int64(keys) {
		start, end := 10*k, 10*k+5000
		want = append(want, fmt.Sprintf("+I(k%03d, 1, %d, %d, %s, %s, %s)", k, k, k, ms(start), ms(end), ms(end-1)))
	}
	spec := AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}}
	for _, kind := range optest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			op, _ := NewAggregate(spec)
			setCacheLimit(op, 4)
			k := optest.NewKeyed(t, kind)
			rt := &fakeRuntime{Now: sec(0)}
			k.Clock = func() int64 { return rt.Now }
			b := k.Open(t, op.(exec.KeyedOperator))
			mustOpenOnly(t, op, rt)
			c := newCollector()
			for i := range int64(keys) {
				rt.Now = sec(0) + 10*i
				process(t, op, c, in{fmt.Sprintf("k%03d", i), i, 0})
			}
			if a := op.(*sessionAggregate); a.keys.Size() > 4 {
				t.Fatalf("%d keys cached, want at most 4", a.keys.Size())
			}
			snap := k.Snapshot(t, op.(exec.KeyedOperator), b, 1)
			timers := 0
			for _, e := range snap.Entries {
				if fieldAt(e, 1) == stateSessions+"/timers/processing" {
					timers++
				}
			}
			if timers != keys {
				t.Fatalf("the snapshot holds %d session timers, want %d", timers, keys)
			}
			restored, _ := NewAggregate(spec)
			setCacheLimit(restored, 4)
			rb := k.Restore(t, restored.(exec.KeyedOperator), snap)
			rt2 := &fakeRuntime{Now: rt.Now}
			mustOpenOnly(t, restored, rt2)
			if w := []int64{sec(4.999)}; !slices.Equal(rt2.Timers, w) {
				t.Fatalf("wake-ups asked after the restore: %v, want %v", rt2.Timers, w)
			}
			rc := newCollector()
			rt2.AdvanceTo(t, sec(100), restored, rc)
			if got := rc.Take(); !slices.Equal(got, want) {
				t.Fatalf("fired after the restore (%d rows):\n%v\nwant (%d rows):\n%v", len(got), head(got), len(want), head(want))
			}
			// Every session fired: no sessions and no timers are left.
			for _, e := range k.Snapshot(t, restored.(exec.KeyedOperator), rb, 2).Entries {
				if fieldAt(e, 1) != stateProgress {
					t.Errorf("entry left after every session fired: %s", e)
				}
			}
		})
	}
}

func fieldAt(e string, i int) string {
	f := []rune(e)
	n, start := 0, 0
	for j, r := range f {
		if r == ' ' {
			if n == i {
				return string(f[start:j])
			}
			n, start = n+1, j+1
		}
	}
	return ""
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestSessionRefusesOldLayout: a checkpoint with the old session index
// (window-session-due) is refused with an error naming it, rather than
// restored with its sessions never firing.
func TestSessionRefusesOldLayout(t *testing.T) {
	for _, kind := range optest.Kinds {
		k := optest.NewKeyed(t, kind)
		old, _ := NewAggregate(AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}})
		b := k.Open(t, old.(exec.KeyedOperator))
		st, err := kv.NewSortedMapState(b, oldSessionDue, formatCodec("flinksql.window.session-due/1"), formatCodec("flinksql.window.key/1"), kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetCurrentKeyInGroup(3, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(nil, make([]byte, 24), []byte("k")); err != nil {
			t.Fatal(err)
		}
		snap := k.Snapshot(t, old.(exec.KeyedOperator), b, 1)
		op, _ := NewAggregate(AggregateSpec{Window: exec.WindowSpec{Kind: exec.Session, Gap: 5_000}, KeyCols: []int{0}, Aggs: countSumMax{col: 1}})
		err = op.(exec.KeyedOperator).OpenKeyedState(k.RestoreBackend(t, snap))
		if err == nil || !strings.Contains(err.Error(), `"window-session-due"`) {
			t.Errorf("%s: restoring the old session layout: %v, want an error naming window-session-due", kind, err)
		}
	}
}
