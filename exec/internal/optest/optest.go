// Package optest owns the test scaffolding the operator packages window,
// rank and groupagg share: Store, an in-memory checkpoint store that is both
// the StateWriter of snapshots and the StateReader of restores; Runtime, an
// OperatorContext with a settable clock that records processing timers;
// Collector, an Output that records what an operator emits as strings; and
// Expect, which compares those strings.
package optest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Store is a checkpointed state store for tests: it applies the Puts and
// Deletes of snapshots and replays the entries as a StateReader. Puts and
// Dels count the writes of the last Snapshot.
type Store struct {
	Entries    map[string]Stored
	full       bool
	Puts, Dels int
}

// Stored is the key group and value of an entry of a Store.
type Stored struct {
	KG    int
	Value []byte
}

// NewStore returns an empty store whose first snapshot is full.
func NewStore() *Store { return &Store{Entries: map[string]Stored{}, full: true} }

// Full implements exec.StateWriter.
func (m *Store) Full() bool { return m.full }

// Put implements exec.StateWriter; it fails on a key group out of range
// (128 key groups) or a key that moves to another key group.
func (m *Store) Put(kg int, key, value []byte) error {
	if kg != exec.KeyGroupNone && (kg < 0 || kg >= 128) {
		return fmt.Errorf("key group %d out of range", kg)
	}
	if e, ok := m.Entries[string(key)]; ok && e.KG != kg {
		return fmt.Errorf("key %x moved from key group %d to %d", key, e.KG, kg)
	}
	m.Entries[string(key)] = Stored{KG: kg, Value: slices.Clone(value)}
	m.Puts++
	return nil
}

// Delete implements exec.StateWriter.
func (m *Store) Delete(kg int, key []byte) error {
	if e, ok := m.Entries[string(key)]; ok && e.KG != kg {
		return fmt.Errorf("delete of key %x in key group %d, stored in %d", key, kg, e.KG)
	}
	delete(m.Entries, string(key))
	m.Dels++
	return nil
}

// Snapshot takes a snapshot of op into the store (full the first time).
func (m *Store) Snapshot(t testing.TB, op exec.Operator, id exec.CheckpointID) {
	t.Helper()
	m.Puts, m.Dels = 0, 0
	co, ok := Checkpointed(t, op)
	if !ok {
		return // declared stateless: nothing to snapshot
	}
	if err := co.SnapshotState(id, m); err != nil {
		t.Fatal(err)
	}
	m.full = false
}

// Checkpointed returns op as a CheckpointedOperator, or false when op
// declares that it has no state (exec.StatelessOperator); it fails t when
// op does neither, as the runtime refuses such an operator.
func Checkpointed(t testing.TB, op exec.Operator) (exec.CheckpointedOperator, bool) {
	t.Helper()
	if co, ok := op.(exec.CheckpointedOperator); ok {
		return co, true
	}
	if _, ok := op.(exec.StatelessOperator); !ok {
		t.Fatalf("operator %T neither takes part in checkpoints nor declares that it has no state", op)
	}
	return nil, false
}

// Clone copies the store as it is now (a completed checkpoint).
func (m *Store) Clone() *Store {
	c := &Store{Entries: make(map[string]Stored, len(m.Entries)), full: true}
	for k, e := range m.Entries {
		c.Entries[k] = e
	}
	return c
}

// Only keeps the entries of key groups [lo, hi) (and operator state).
func (m *Store) Only(lo, hi int) *Store {
	c := &Store{Entries: map[string]Stored{}, full: true}
	for k, e := range m.Entries {
		if e.KG == exec.KeyGroupNone || (e.KG >= lo && e.KG < hi) {
			c.Entries[k] = e
		}
	}
	return c
}

// Keyed counts the keyed entries.
func (m *Store) Keyed() int {
	n := 0
	for _, e := range m.Entries {
		if e.KG != exec.KeyGroupNone {
			n++
		}
	}
	return n
}

// Same reports whether m and o hold the same entries.
func (m *Store) Same(o *Store) bool {
	if len(m.Entries) != len(o.Entries) {
		return false
	}
	for k, e := range m.Entries {
		f, ok := o.Entries[k]
		if !ok || f.KG != e.KG || string(f.Value) != string(e.Value) {
			return false
		}
	}
	return true
}

// Each implements exec.StateReader: key-group order, then key order.
func (m *Store) Each(fn func(kg int, key, value []byte) error) error {
	keys := make([]string, 0, len(m.Entries))
	for k := range m.Entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m.Entries[keys[i]], m.Entries[keys[j]]
		if a.KG != b.KG {
			return a.KG < b.KG
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if err := fn(m.Entries[k].KG, []byte(k), m.Entries[k].Value); err != nil {
			return err
		}
	}
	return nil
}

// Runtime is the OperatorContext of a test with a settable clock; it
// records the processing timers registered.
type Runtime struct {
	Now     int64
	Timers  []int64
	Metrics exec.OperatorMetrics
}

// Context returns an OperatorContext of subtask 0 of 1 over 128 key
// groups, reading r's clock.
func (r *Runtime) Context() *exec.OperatorContext {
	return &exec.OperatorContext{
		Name:                    "test",
		Parallelism:             1,
		MaxParallelism:          128,
		Now:                     func() int64 { return r.Now },
		RegisterProcessingTimer: func(t int64) { r.Timers = append(r.Timers, t) },
		Metrics:                 &r.Metrics,
	}
}

// AdvanceTo moves the clock to now and fires the processing timers due on
// op, earliest first, emitting to out.
func (r *Runtime) AdvanceTo(t testing.TB, now int64, op exec.Operator, out exec.Output) {
	t.Helper()
	r.Now = now
	for {
		sort.Slice(r.Timers, func(i, j int) bool { return r.Timers[i] < r.Timers[j] })
		if len(r.Timers) == 0 || r.Timers[0] > r.Now {
			return
		}
		ts := r.Timers[0]
		r.Timers = r.Timers[1:]
		if err := op.(exec.ProcessingTimeHandler).OnProcessingTime(ts, out); err != nil {
			t.Fatal(err)
		}
	}
}

// Collector records what an operator emits, one string per row, "+I(a, 1)",
// or watermark. Time formats timestamps and watermarks; without it a
// timestamp prints with %v and a watermark as its number.
type Collector struct {
	Events []string
	Time   func(ms int64) string
	// Normalize, when set, rewrites the events CheckRestores compares:
	// for an operator whose order of rows within a step is not part of its
	// result.
	Normalize func([]string) []string
}

// Push implements exec.Output.
func (c *Collector) Push(b *types.Batch) error {
	for i, r := range b.Rows {
		c.Events = append(c.Events, b.Kinds[i].String()+"("+c.Format(r)+")")
	}
	return nil
}

// PushWatermark implements exec.Output.
func (c *Collector) PushWatermark(wm int64) error {
	switch {
	case c.Time == nil:
		c.Events = append(c.Events, fmt.Sprintf("WM(%d)", wm))
	case wm == exec.MaxWatermark:
		c.Events = append(c.Events, "WM(max)")
	default:
		c.Events = append(c.Events, "WM("+c.Time(wm)+")")
	}
	return nil
}

// Format prints a row's values separated by ", ".
func (c *Collector) Format(r types.Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch {
		case v.K == types.KindNull:
			parts[i] = "NULL"
		case v.K == types.KindInt:
			parts[i] = fmt.Sprint(v.N)
		case v.K == types.KindString:
			parts[i] = v.S
		case v.K == types.KindTimestamp && c.Time != nil:
			parts[i] = c.Time(v.Millis())
		default:
			parts[i] = fmt.Sprintf("%v", v)
		}
	}
	return strings.Join(parts, ", ")
}

// Take returns the events so far and forgets them.
func (c *Collector) Take() []string {
	e := c.Events
	c.Events = nil
	return e
}

// Expect fails t when got differs from want, naming what was compared.
func Expect(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Step is one step of a restore script: rows, a watermark or a clock
// advance fed to op.
type Step interface {
	Run(t *testing.T, op exec.Operator, rt *Runtime, c *Collector)
}

// CheckRestores runs script through an operator from build, started at
// clock start, with a snapshot after every step (the first full, then
// incremental), and compares what it emits with want and the late rows it
// drops with late. Then it restores a fresh operator from the checkpoint
// of every step and runs the rest of the script: the output, and the late
// rows, must be the same, and a full snapshot of the restored operator must
// equal the incremental checkpoint it came from. It returns the store of
// the uninterrupted run (nil for a KeyedOperator, which is checked on a
// backend of every kind in Kinds, comparing the restored backend's entries
// with the snapshot's instead). An operator that declares itself stateless
// (exec.StatelessOperator) is checked the same way with empty checkpoints;
// one that neither checkpoints nor declares that fails the test.
// newCollector gives the package's formatting of the output.
func CheckRestores[S Step](t *testing.T, build func() (exec.Operator, error), newCollector func() *Collector,
	start int64, script []S, late int64, want ...string) *Store {
	t.Helper()
	mk := func() exec.Operator {
		op, err := build()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	open := func(op exec.Operator, rt *Runtime) {
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := mk().(exec.KeyedOperator); ok {
		for _, kind := range Kinds {
			checkKeyedRestores(t, kind, mk, newCollector, start, script, late, want...)
		}
		return nil
	}
	op := mk()
	rt := &Runtime{Now: start}
	open(op, rt)
	store := NewStore()
	store.Snapshot(t, op, 1)
	checkpoints := []*Store{store.Clone()}
	clocks := []int64{rt.Now}
	lateAt := []int64{0}
	var outs [][]string
	for i, s := range script {
		c := newCollector()
		s.Run(t, op, rt, c)
		outs = append(outs, c.Events)
		store.Snapshot(t, op, exec.CheckpointID(i+2))
		checkpoints = append(checkpoints, store.Clone())
		clocks = append(clocks, rt.Now)
		lateAt = append(lateAt, rt.Metrics.LateRowsDropped.Load())
	}
	normalize := func(e []string) []string { return e }
	if n := newCollector().Normalize; n != nil {
		normalize = n
	}
	Expect(t, "uninterrupted run", normalize(slices.Concat(outs...)), want...)
	if n := rt.Metrics.LateRowsDropped.Load(); n != late {
		t.Errorf("uninterrupted run: %d late rows dropped, want %d", n, late)
	}
	for k := range checkpoints {
		restored := mk()
		if co, ok := Checkpointed(t, restored); ok {
			if err := co.RestoreState(checkpoints[k]); err != nil {
				t.Fatalf("restore at step %d: %v", k, err)
			}
		}
		rt := &Runtime{Now: clocks[k]}
		open(restored, rt)
		got := slices.Concat(outs[:k]...)
		c := newCollector()
		for _, s := range script[k:] {
			s.Run(t, restored, rt, c)
		}
		Expect(t, fmt.Sprintf("restored after step %d", k), normalize(append(got, c.Events...)), want...)
		if n := lateAt[k] + rt.Metrics.LateRowsDropped.Load(); n != late {
			t.Errorf("restored after step %d: %d late rows dropped, want %d", k, n, late)
		}
		// A full snapshot of a restored operator holds what the
		// incremental ones accumulated.
		again := mk()
		if co, ok := Checkpointed(t, again); ok {
			if err := co.RestoreState(checkpoints[k]); err != nil {
				t.Fatalf("restore at step %d: %v", k, err)
			}
		}
		open(again, &Runtime{Now: clocks[k]})
		full := NewStore()
		full.Snapshot(t, again, 1)
		if !full.Same(checkpoints[k]) {
			t.Errorf("step %d: a full snapshot after restore differs from the incremental checkpoint", k)
		}
	}
	return store
}
