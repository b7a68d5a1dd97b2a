package rank

import (
	"fmt"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/optest"
	"github.com/flinksql/flinksql/exec/internal/statecache"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// collector records what an operator emits; newCollector prints
// timestamps and watermarks with formatTime.
type collector = optest.Collector

func newCollector() *collector { return &collector{Time: formatTime} }

func formatRow(r types.Row) string { return newCollector().Format(r) }

// fakeRuntime is a test's OperatorContext with a settable clock.
type fakeRuntime = optest.Runtime

var expect = optest.Expect

// formatTime prints a timestamp as seconds after the Unix epoch, e.g. 9.999s.
func formatTime(ms int64) string {
	return fmt.Sprintf("%gs", float64(ms)/1000)
}

// rowSpec is a test row: its kind and its values, written as Go values
// (string → STRING, int → BIGINT, time.Duration → TIMESTAMP that many
// milliseconds after the epoch).
type rowSpec struct {
	kind types.RowKind
	vals []any
}

func ins(vals ...any) rowSpec { return rowSpec{types.Insert, vals} }
func ub(vals ...any) rowSpec  { return rowSpec{types.UpdateBefore, vals} }
func ua(vals ...any) rowSpec  { return rowSpec{types.UpdateAfter, vals} }
func del(vals ...any) rowSpec { return rowSpec{types.Delete, vals} }

func toValue(t *testing.T, x any) types.Value {
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

func batchOf(t *testing.T, rows ...rowSpec) *types.Batch {
	t.Helper()
	b := types.NewBatch(len(rows[0].vals), 0)
	for _, r := range rows {
		row := b.Append(r.kind)
		for i, x := range r.vals {
			row[i] = toValue(t, x)
		}
	}
	return b
}

// open opens op; a keyed operator first gets a hashmap backend whose
// clock is rt's (CheckRestores and the eviction tests cover rocksdb).
func open(t *testing.T, op exec.Operator, rt *fakeRuntime) {
	t.Helper()
	if ko, ok := op.(exec.KeyedOperator); ok {
		k := optest.NewKeyed(t, image.Hashmap)
		k.Clock = func() int64 { return rt.Now }
		k.Open(t, ko)
	}
	if err := op.Open(rt.Context()); err != nil {
		t.Fatal(err)
	}
}

func process(t *testing.T, op exec.Operator, c *collector, rows ...rowSpec) {
	t.Helper()
	if err := op.ProcessBatch(0, batchOf(t, rows...), c); err != nil {
		t.Fatal(err)
	}
}

// processEach feeds the rows one batch each, so a test also covers state
// carried across batches.
func processEach(t *testing.T, op exec.Operator, c *collector, rows ...rowSpec) {
	t.Helper()
	for _, r := range rows {
		process(t, op, c, r)
	}
}

func watermark(t *testing.T, op exec.Operator, c *collector, wm int64) {
	t.Helper()
	if err := op.ProcessWatermark(wm, c); err != nil {
		t.Fatal(err)
	}
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// stateSize returns the number of keys op holds: the live entries of its
// state in the backend once written back (PrepareSnapshot), which are the
// entries of its cache while the cache has evicted nothing.
func stateSize(t *testing.T, op exec.Operator) int {
	t.Helper()
	var b *kv.Backend
	var name string
	switch o := op.(type) {
	case *dedup:
		b, name = o.b, dedupState
	case *topN:
		b, name = o.b, topNState
	case *windowRank:
		b, name = o.b, rowsState
	default:
		t.Fatalf("stateSize of %T", op)
	}
	if err := op.(exec.KeyedOperator).PrepareSnapshot(0); err != nil {
		t.Fatal(err)
	}
	stored := 0
	if err := b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		if e.State == name {
			stored++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	switch o := op.(type) {
	case *dedup:
		if n := o.c.Len(); o.c.Evictions() == 0 && n != stored {
			t.Fatalf("%d keys cached, %d stored", n, stored)
		}
	case *topN:
		checkHeld(t, o.c, o.parts.p, o.width, stored)
	case *windowRank:
		checkHeld(t, o.c, o.parts.p, o.width, stored)
	}
	return stored
}

// checkHeld checks a cache of partitions: as many entries as stored while
// it evicted nothing, and its estimate of the bytes it holds counted
// afresh.
func checkHeld(t *testing.T, c *statecache.Cache[*sortedRows], parts []*sortedRows, width, stored int) {
	t.Helper()
	if n := c.Len(); c.Evictions() == 0 && n != stored {
		t.Fatalf("%d keys cached, %d stored", n, stored)
	}
	held := int64(0)
	for id, p := range parts {
		if c.Live(int32(id)) {
			held += c.EntryBytes() + int64(p.len()*width*valueBytes)
		}
	}
	if held != c.Held() {
		t.Fatalf("the cache counts %d bytes held, it holds %d", c.Held(), held)
	}
}
