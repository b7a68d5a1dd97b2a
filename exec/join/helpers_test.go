package join

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/types"
)

type collector = optest.Collector

// newCollector prints timestamps and watermarks as epoch milliseconds.
func newCollector() *collector {
	return &collector{Time: func(ms int64) string { return strconv.FormatInt(ms, 10) }}
}

// rowSpec is a test row of one input: its kind and values (string →
// STRING, int → BIGINT, nil → NULL, time.Duration → TIMESTAMP that many
// ms after the epoch).
type rowSpec struct {
	kind types.RowKind
	vals []any
}

func ins(vals ...any) rowSpec { return rowSpec{types.Insert, vals} }
func ub(vals ...any) rowSpec  { return rowSpec{types.UpdateBefore, vals} }
func ua(vals ...any) rowSpec  { return rowSpec{types.UpdateAfter, vals} }
func del(vals ...any) rowSpec { return rowSpec{types.Delete, vals} }

func toValue(t testing.TB, x any) types.Value {
	switch v := x.(type) {
	case nil:
		return types.Value{}
	case string:
		return types.String(v)
	case int:
		return types.Int(int64(v))
	case time.Duration:
		return types.TimestampMillis(v.Milliseconds())
	}
	t.Fatalf("unsupported test value %T", x)
	return types.Value{}
}

func batchOf(t testing.TB, rows ...rowSpec) *types.Batch {
	b := types.NewBatch(len(rows[0].vals), 0)
	for _, r := range rows {
		row := b.Append(r.kind)
		for i, x := range r.vals {
			row[i] = toValue(t, x)
		}
	}
	return b
}

// step is one action of a script: rows of one input (one batch), a
// watermark, or the clock moving on.
type step struct {
	input int
	rows  []rowSpec
	wm    int64
	clock int64
}

func left(rows ...rowSpec) step  { return step{input: 0, rows: rows} }
func right(rows ...rowSpec) step { return step{input: 1, rows: rows} }
func wm(w int64) step            { return step{wm: w} }
func clock(c int64) step         { return step{clock: c} }

func (s step) Run(t *testing.T, op exec.Operator, rt *optest.Runtime, c *collector) {
	t.Helper()
	switch {
	case s.rows != nil:
		if err := op.ProcessBatch(s.input, batchOf(t, s.rows...), c); err != nil {
			t.Fatal(err)
		}
	case s.wm != 0:
		if err := op.ProcessWatermark(s.wm, c); err != nil {
			t.Fatal(err)
		}
	case s.clock != 0:
		if h, ok := op.(exec.ProcessingTimeHandler); ok {
			rt.AdvanceTo(t, s.clock, op, c)
		} else {
			_ = h
			rt.Now = s.clock
		}
	}
}

// run feeds script to a fresh operator on a hashmap backend and returns
// what it emitted.
func run(t *testing.T, build func() (exec.Operator, error), start int64, script ...step) []string {
	t.Helper()
	op, err := build()
	if err != nil {
		t.Fatal(err)
	}
	rt := &optest.Runtime{Now: start}
	k := optest.NewKeyed(t, image.Hashmap)
	k.Clock = func() int64 { return rt.Now }
	k.Open(t, op.(exec.KeyedOperator))
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	for _, s := range script {
		s.Run(t, op, rt, c)
	}
	return c.Events
}

// checkRestores is optest.CheckRestores (both backends, a restore after
// every step) with this package's steps.
func checkRestores(t *testing.T, build func() (exec.Operator, error), start int64, script []step, late int64, want ...string) {
	t.Helper()
	optest.CheckRestores(t, build, newCollector, start, script, late, want...)
}

// predicate is a residual condition written in Go.
type predicate func(r types.Row) bool

func (p predicate) Test(r types.Row) (bool, error) { return p(r), nil }

// checkCachedMatchesUncached runs script (phases of steps, a snapshot
// after each) on a fresh operator from build on hashmap, where the joins
// cache decoded state, and on rocksdb, where they read and write the
// backend per row; both must emit the same rows and hold the same entries
// at every snapshot, which it returns (hashmap's).
func checkCachedMatchesUncached(t *testing.T, build func() (exec.Operator, error), script [][]step) [][]string {
	t.Helper()
	var events [2][]string
	var dumps [2][][]string
	for i, kind := range []image.Kind{image.Hashmap, image.RocksDB} {
		op, err := build()
		if err != nil {
			t.Fatal(err)
		}
		k := optest.NewKeyed(t, kind)
		k.Clock = func() int64 { return 0 }
		b := k.Open(t, op.(exec.KeyedOperator))
		rt := &optest.Runtime{}
		if err := op.Open(rt.Context()); err != nil {
			t.Fatal(err)
		}
		c := newCollector()
		for p, phase := range script {
			for _, s := range phase {
				s.Run(t, op, rt, c)
			}
			snap := k.Snapshot(t, op.(exec.KeyedOperator), b, exec.CheckpointID(p+1))
			dumps[i] = append(dumps[i], snap.Entries)
		}
		events[i] = c.Events
	}
	if !slices.Equal(events[0], events[1]) {
		t.Fatalf("hashmap (cached) emitted\n%v\nrocksdb (uncached)\n%v", events[0], events[1])
	}
	for p := range dumps[0] {
		if !slices.Equal(dumps[0][p], dumps[1][p]) {
			t.Fatalf("snapshot %d: hashmap (cached) holds\n%v\nrocksdb (uncached)\n%v", p+1, dumps[0][p], dumps[1][p])
		}
	}
	return dumps[0]
}
