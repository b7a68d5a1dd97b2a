package kv

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// fired lists the fired timers as "time key ns" with the value of the
// key's "v" state read in the callback (so it shows the callback ran
// with the timer's key current).
type firedLog struct {
	t   *testing.T
	v   *ValueState[string]
	got []string
}

func (l *firedLog) fire(tm Timer) error {
	v, _, err := l.v.Get(nil)
	if err != nil {
		return err
	}
	l.got = append(l.got, fmt.Sprintf("%d %s %s v=%s", tm.Time, tm.Key, tm.Namespace, v))
	return nil
}

func newTimers(t *testing.T, b *Backend) (*TimerService, *ValueState[string]) {
	t.Helper()
	ts, err := NewTimerService(b, "op")
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewValueState[string](b, "v", String{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ts, v
}

func register(t *testing.T, b *Backend, ts *TimerService, d TimeDomain, key string, at int64, ns string) {
	t.Helper()
	setKey(t, b, key)
	if err := ts.Register(d, at, []byte(ns)); err != nil {
		t.Fatal(err)
	}
}

// TestTimersFireInTimeOrder: event-time timers of several keys fire when
// the watermark passes them, earliest first, with their key current; a
// timer registered twice fires once, a deleted one never, and one of a
// later time waits for a later watermark.
func TestTimersFireInTimeOrder(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ts, vs := newTimers(t, b)
		for _, k := range []string{"a", "b", "c"} {
			setKey(t, b, k)
			if err := vs.Put(nil, "of-"+k); err != nil {
				t.Fatal(err)
			}
		}
		register(t, b, ts, EventTime, "b", 20, "w1")
		register(t, b, ts, EventTime, "a", 10, "w1")
		register(t, b, ts, EventTime, "c", 5, "w2")
		register(t, b, ts, EventTime, "a", 10, "w1") // again: one timer
		register(t, b, ts, EventTime, "c", 30, "w3")
		register(t, b, ts, EventTime, "b", 12, "w9")
		setKey(t, b, "b")
		if err := ts.Delete(EventTime, 12, []byte("w9")); err != nil {
			t.Fatal(err)
		}
		register(t, b, ts, ProcessingTime, "a", 1, "p") // other domain: not fired by the watermark
		if next, ok, err := ts.Next(EventTime); err != nil || !ok || next != 5 {
			t.Fatalf("Next(event time) = %d, %v, %v; want 5", next, ok, err)
		}
		log := &firedLog{t: t, v: vs}
		if err := ts.Advance(EventTime, 20, log.fire); err != nil {
			t.Fatal(err)
		}
		want := []string{"5 c w2 v=of-c", "10 a w1 v=of-a", "20 b w1 v=of-b"}
		if !slices.Equal(log.got, want) {
			t.Fatalf("fired at watermark 20:\n%s\nwant:\n%s", strings.Join(log.got, "\n"), strings.Join(want, "\n"))
		}
		log.got = nil
		if err := ts.Advance(EventTime, 29, log.fire); err != nil || len(log.got) != 0 {
			t.Fatalf("at watermark 29 fired %v (%v), want nothing", log.got, err)
		}
		if err := ts.Advance(EventTime, 30, log.fire); err != nil {
			t.Fatal(err)
		}
		if want := []string{"30 c w3 v=of-c"}; !slices.Equal(log.got, want) {
			t.Fatalf("fired at watermark 30: %v, want %v", log.got, want)
		}
		if _, ok, _ := ts.Next(EventTime); ok {
			t.Error("event-time timers left after all fired")
		}
		if next, ok, _ := ts.Next(ProcessingTime); !ok || next != 1 {
			t.Errorf("the processing-time timer: %d %v, want 1", next, ok)
		}
	})
}

// TestTimerCallbackRegisters: a timer the callback sets at or before the
// advance's time fires in the same advance, after the one that set it; a
// later one waits. The callback's key stays current for its state access.
func TestTimerCallbackRegisters(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ts, vs := newTimers(t, b)
		register(t, b, ts, EventTime, "k", 10, "n")
		var got []string
		fire := func(tm Timer) error {
			got = append(got, fmt.Sprintf("%d %s %s", tm.Time, tm.Key, tm.Namespace))
			if tm.Time < 30 {
				if err := ts.Register(EventTime, tm.Time+10, tm.Namespace); err != nil {
					return err
				}
			}
			return vs.Put(nil, fmt.Sprint(tm.Time))
		}
		if err := ts.Advance(EventTime, 25, fire); err != nil {
			t.Fatal(err)
		}
		if want := []string{"10 k n", "20 k n"}; !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
		setKey(t, b, "k")
		if s, _, _ := vs.Get(nil); s != "20" {
			t.Errorf("k's state = %q, want 20 (written by the callbacks)", s)
		}
		if next, ok, _ := ts.Next(EventTime); !ok || next != 30 {
			t.Errorf("next timer %d (%v), want 30", next, ok)
		}
	})
}

// TestProcessingTimersWakeAndRestore: the service asks the runtime to wake
// it at the earliest processing-time timer, again after each advance,
// and, restored from a snapshot, asks for the restored earliest one
// without the operator registering anything.
func TestProcessingTimersWakeAndRestore(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{}
		b := openVariant(t, v, clk)
		ts, vs := newTimers(t, b)
		var wakes []int64
		if err := ts.Start(func(t int64) { wakes = append(wakes, t) }); err != nil {
			t.Fatal(err)
		}
		register(t, b, ts, ProcessingTime, "x", 300, "")
		register(t, b, ts, ProcessingTime, "y", 100, "")
		register(t, b, ts, ProcessingTime, "z", 200, "")
		register(t, b, ts, ProcessingTime, "x", 400, "")
		if want := []int64{300, 100}; !slices.Equal(wakes, want) {
			t.Fatalf("wake-ups %v, want %v (each earlier timer asks once)", wakes, want)
		}
		log := &firedLog{t: t, v: vs}
		if err := ts.Advance(ProcessingTime, 150, log.fire); err != nil {
			t.Fatal(err)
		}
		if want := []string{"100 y  v="}; !slices.Equal(log.got, want) {
			t.Fatalf("fired %q, want %q", log.got, want)
		}
		if want := []int64{300, 100, 200}; !slices.Equal(wakes, want) {
			t.Fatalf("wake-ups %v, want %v", wakes, want)
		}
		r, _ := snapshotAndRestore(t, b, v, clk, 1)
		rts, rvs := newTimers(t, r)
		var rwakes []int64
		if err := rts.Start(func(t int64) { rwakes = append(rwakes, t) }); err != nil {
			t.Fatal(err)
		}
		if want := []int64{200}; !slices.Equal(rwakes, want) {
			t.Fatalf("restored: wake-ups %v, want %v", rwakes, want)
		}
		rlog := &firedLog{t: t, v: rvs}
		if err := rts.Advance(ProcessingTime, 1000, rlog.fire); err != nil {
			t.Fatal(err)
		}
		if want := []string{"200 z  v=", "300 x  v=", "400 x  v="}; !slices.Equal(rlog.got, want) {
			t.Fatalf("restored fired %q, want %q", rlog.got, want)
		}
	})
}

// TestManyTimersInOrder: thousands of timers over many keys and key groups
// (on rocksdb with a tiny cache, through Pebble) fire exactly once each,
// sorted by time, at the watermarks that pass them.
func TestManyTimersInOrder(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ts, _ := newTimers(t, b)
		rng := rand.New(rand.NewSource(7))
		type tmr struct {
			at  int64
			key string
		}
		set := map[tmr]bool{}
		for range 3000 {
			tm := tmr{at: rng.Int63n(1000), key: fmt.Sprintf("k%d", rng.Intn(400))}
			set[tm] = true
			register(t, b, ts, EventTime, tm.key, tm.at, "")
		}
		var got []tmr
		fire := func(x Timer) error {
			got = append(got, tmr{at: x.Time, key: string(x.Key)})
			return nil
		}
		for wm := int64(99); wm < 1100; wm += 100 {
			if err := ts.Advance(EventTime, wm, fire); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != len(set) {
			t.Fatalf("%d timers fired, %d set", len(got), len(set))
		}
		for i, x := range got {
			if !set[x] {
				t.Fatalf("fired %v, never set (or twice)", x)
			}
			delete(set, x)
			if i > 0 && x.at < got[i-1].at {
				t.Fatalf("timer %d at %d fired after one at %d", i, x.at, got[i-1].at)
			}
		}
	})
}

// TestTimerNeedsKey: registering without a current key is an error, not a
// timer of some other key.
func TestTimerNeedsKey(t *testing.T) {
	b := openVariant(t, variants()[0], &fakeClock{})
	ts, _ := newTimers(t, b)
	if err := ts.Register(EventTime, 1, nil); err == nil {
		t.Fatal("Register with no current key succeeded")
	}
}

// TestEqualTimesFireByNamespaceThenKey: timers of one time fire in the
// order of their namespaces, then keys, whatever key groups the keys are
// in.
func TestEqualTimesFireByNamespaceThenKey(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		b := openVariant(t, v, &fakeClock{})
		ts, _ := newTimers(t, b)
		register(t, b, ts, EventTime, "a", 10, "3")
		register(t, b, ts, EventTime, "b", 10, "1")
		register(t, b, ts, EventTime, "c", 10, "2")
		register(t, b, ts, EventTime, "e", 10, "2")
		register(t, b, ts, EventTime, "d", 10, "2")
		register(t, b, ts, EventTime, "z", 9, "9")
		var got []string
		if err := ts.Advance(EventTime, 10, func(tm Timer) error {
			got = append(got, fmt.Sprintf("%d/%s/%s", tm.Time, tm.Namespace, tm.Key))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := []string{"9/9/z", "10/1/b", "10/2/c", "10/2/d", "10/2/e", "10/3/a"}
		if !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
		kgs := map[int]bool{}
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			kgs[KeyGroupOf(hashOf(k), 128)] = true
		}
		if len(kgs) < 2 {
			t.Fatalf("the keys are all in one key group: the test shows nothing")
		}
	})
}

// TestDeclared: a state counts as declared once declared, and in a backend
// restored from a snapshot of one that declared it; an unknown name does
// not.
func TestDeclared(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{}
		b := openVariant(t, v, clk)
		if b.Declared("v") {
			t.Fatal(`"v" declared before NewValueState`)
		}
		newTimers(t, b)
		if !b.Declared("v") || !b.Declared("op/timers/event") || b.Declared("other") {
			t.Fatal("Declared does not follow the declarations")
		}
		r, _ := snapshotAndRestore(t, b, v, clk, 1)
		if !r.Declared("op/timers/processing") || r.Declared("other") {
			t.Error("a restored backend does not know its restored declarations")
		}
	})
}
