package groupagg

import (
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/sql/expr/agg"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// collector records what an operator emits, rows as "+I(a, 1)" and
// watermarks as "WM(5)".
type collector = optest.Collector

// fakeRuntime is an OperatorContext with a settable clock that records the
// timers registered.
type fakeRuntime = optest.Runtime

var expect = optest.Expect

// pipe feeds what it receives into the next operator.
type pipe struct {
	op  exec.Operator
	out exec.Output
}

func (p pipe) Push(b *types.Batch) error    { return p.op.ProcessBatch(0, b, p.out) }
func (p pipe) PushWatermark(wm int64) error { return p.op.ProcessWatermark(wm, p.out) }

// rec is one input row written as its kind and values: strings become
// VARCHAR, ints BIGINT, nil NULL.
type rec struct {
	kind types.RowKind
	vals []any
}

func ins(v ...any) rec { return rec{types.Insert, v} }
func ub(v ...any) rec  { return rec{types.UpdateBefore, v} }
func ua(v ...any) rec  { return rec{types.UpdateAfter, v} }
func del(v ...any) rec { return rec{types.Delete, v} }

func value(x any) types.Value {
	switch x := x.(type) {
	case nil:
		return types.NullValue
	case string:
		return types.String(x)
	case int:
		return types.Int(int64(x))
	}
	panic(fmt.Sprintf("unsupported test value %T", x))
}

func batchOf(width int, recs ...rec) *types.Batch {
	b := types.NewBatch(width, 4)
	for _, r := range recs {
		row := b.Append(r.kind)
		for i, x := range r.vals {
			row[i] = value(x)
		}
	}
	return b
}

// must fails the test when building an operator failed.
func must(t *testing.T) func(exec.Operator, error) exec.Operator {
	return func(op exec.Operator, err error) exec.Operator {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
}

// open opens op as the runtime does, on a fresh hashmap backend whose
// clock is rt's.
func open(t testing.TB, op exec.Operator, rt *fakeRuntime) {
	t.Helper()
	openOn(t, image.Hashmap, 0, op, rt)
}

// openOn opens op on a fresh backend of kind (for rocksdb with the write-back
// cache of kv sized cacheBytes when not 0) and returns the backend.
func openOn(t testing.TB, kind image.Kind, cacheBytes int64, op exec.Operator, rt *fakeRuntime) *kv.Backend {
	t.Helper()
	var b *kv.Backend
	if ko, ok := op.(exec.KeyedOperator); ok {
		k := optest.NewKeyed(t, kind)
		k.CacheBytes = cacheBytes
		k.Clock = func() int64 { return rt.Now }
		b = k.Open(t, ko)
	}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// feed processes the rows in one batch of the given width.
func feed(t *testing.T, op exec.Operator, out exec.Output, width int, recs ...rec) {
	t.Helper()
	if err := op.ProcessBatch(0, batchOf(width, recs...), out); err != nil {
		t.Fatal(err)
	}
}

// call builds an aggregate call over BIGINT columns (none: COUNT(*)).
func call(name string, cols ...int) agg.Call {
	c := agg.Call{Name: name, ArgCols: cols, FilterCol: -1}
	for range cols {
		c.ArgTypes = append(c.ArgTypes, types.BigIntType)
	}
	return c
}

func handle(t testing.TB, retract bool, calls ...agg.Call) *agg.Handle {
	t.Helper()
	h, err := agg.NewHandle(calls, agg.Options{NeedsRetraction: retract})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
