package groupagg

import (
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// Rows of the ChangelogNormalize tests are (id, name, v), keyed by id.
func TestChangelogNormalize(t *testing.T) {
	input := []step{
		{[]rec{ins(1, "a", 10)}, []string{"+I(1, a, 10)"}},
		{[]rec{ua(1, "a", 10)}, nil}, // identical: nothing
		{[]rec{ua(1, "b", 10)}, []string{"-U(1, a, 10)", "+U(1, b, 10)"}},
		{[]rec{ua(2, "x", 1)}, []string{"+I(2, x, 1)"}}, // +U of an unknown key
		// A tombstone with only the key: -D carries the full previous row.
		{[]rec{del(1, nil, nil)}, []string{"-D(1, b, 10)"}},
		{[]rec{del(3, nil, nil)}, nil}, // unknown key
		{[]rec{ub(2, "x", 1)}, []string{"-D(2, x, 1)"}},
		{[]rec{ins(1, "c", 5), ua(1, "d", 6)}, []string{"+I(1, c, 5)", "-U(1, c, 5)", "+U(1, d, 6)"}},
	}
	t.Run("retract output", func(t *testing.T) {
		op := must(t)(NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}, GenerateUpdateBefore: true}))
		open(t, op, &fakeRuntime{})
		var c collector
		for i, s := range input {
			feed(t, op, &c, 3, s.in...)
			expect(t, "step "+string(rune('1'+i)), c.Take(), s.want...)
		}
		if err := op.ProcessWatermark(42, &c); err != nil {
			t.Fatal(err)
		}
		expect(t, "watermark", c.Take(), "WM(42)")
	})
	t.Run("upsert output", func(t *testing.T) {
		op := must(t)(NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}}))
		open(t, op, &fakeRuntime{})
		var c collector
		for _, s := range input {
			feed(t, op, &c, 3, s.in...)
		}
		expect(t, "no -U", c.Take(),
			"+I(1, a, 10)", "+U(1, b, 10)", "+I(2, x, 1)", "-D(1, b, 10)", "-D(2, x, 1)",
			"+I(1, c, 5)", "+U(1, d, 6)")
	})
	t.Run("state TTL", func(t *testing.T) {
		op := must(t)(NewChangelogNormalize(NormalizeSpec{KeyCols: []int{0}, GenerateUpdateBefore: true, StateTTL: time.Second}))
		rt := &fakeRuntime{Now: 5000}
		open(t, op, rt)
		var c collector
		feed(t, op, &c, 3, ins(1, "a", 10), ua(1, "a", 10))
		expect(t, "identical row re-emitted under TTL", c.Take(),
			"+I(1, a, 10)", "-U(1, a, 10)", "+U(1, a, 10)")
		rt.Now = 6000
		feed(t, op, &c, 3, del(1, nil, nil), ua(1, "b", 2))
		expect(t, "expired key", c.Take(), "+I(1, b, 2)")
	})
}

// The materializer cases are those of Flink's SinkUpsertMaterializerTest,
// re-derived by hand: rows (id BIGINT, k INT, s STRING) for sink key k, all
// with k = 1, state TTL 1 s from processing time 1.
func TestSinkUpsertMaterializer(t *testing.T) {
	t.Run("no upsert key", func(t *testing.T) {
		op := must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{1}, StateTTL: time.Second}))
		rt := &fakeRuntime{Now: 1}
		open(t, op, rt)
		var c collector
		steps := []step{
			{[]rec{ins(1, 1, "a1")}, []string{"+I(1, 1, a1)"}},
			{[]rec{ins(2, 1, "a2")}, []string{"+U(2, 1, a2)"}},
			{[]rec{ins(3, 1, "a3")}, []string{"+U(3, 1, a3)"}},
			{[]rec{del(2, 1, "a2")}, nil},
			{[]rec{del(3, 1, "a3")}, []string{"+U(1, 1, a1)"}},
			{[]rec{del(1, 1, "a1")}, []string{"-D(1, 1, a1)"}},
			{[]rec{ins(4, 1, "a4")}, []string{"+I(4, 1, a4)"}},
		}
		for i, s := range steps {
			feed(t, op, &c, 3, s.in...)
			expect(t, "step "+string(rune('1'+i)), c.Take(), s.want...)
		}
		rt.Now = 1002 // a4 was written at 1: expired
		feed(t, op, &c, 3, del(4, 1, "a4"))
		expect(t, "after expiry", c.Take())
	})
	t.Run("upsert key", func(t *testing.T) {
		op := must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{1}, UpsertKey: []int{0}, StateTTL: time.Second}))
		rt := &fakeRuntime{Now: 1}
		open(t, op, rt)
		var c collector
		steps := []step{
			{[]rec{ins(1, 1, "a1")}, []string{"+I(1, 1, a1)"}},
			{[]rec{ua(1, 1, "a11")}, []string{"+U(1, 1, a11)"}}, // replaces upsert key 1
			{[]rec{ins(3, 1, "a3")}, []string{"+U(3, 1, a3)"}},
			{[]rec{del(1, 1, "a111")}, nil},                      // matches upsert key 1, not the last row
			{[]rec{del(3, 1, "a33")}, []string{"-D(3, 1, a33)"}}, // the input row is emitted
			{[]rec{ins(4, 1, "a4")}, []string{"+I(4, 1, a4)"}},
		}
		for i, s := range steps {
			feed(t, op, &c, 3, s.in...)
			expect(t, "step "+string(rune('1'+i)), c.Take(), s.want...)
		}
		rt.Now = 1002
		feed(t, op, &c, 3, del(4, 1, "a4"))
		expect(t, "after expiry", c.Take())
	})
	// After +I a1, a2, a3 (emitting +I a1, +U a2, +U a3), retractions in
	// every order: nothing until the last alive row goes, then +U of the new
	// last row; -D when none is left.
	retractions := []struct {
		name  string
		steps []step
	}{
		{"first, middle, last", []step{
			{[]rec{del(1, 1, "a1")}, nil},
			{[]rec{del(2, 1, "a2")}, nil},
			{[]rec{del(3, 1, "a3")}, []string{"-D(3, 1, a3)"}},
		}},
		{"middle, first, last", []step{
			{[]rec{del(2, 1, "a2")}, nil},
			{[]rec{del(1, 1, "a1")}, nil},
			{[]rec{del(3, 1, "a3")}, []string{"-D(3, 1, a3)"}},
		}},
		{"last, middle, first", []step{
			{[]rec{del(3, 1, "a3")}, []string{"+U(2, 1, a2)"}},
			{[]rec{del(2, 1, "a2")}, []string{"+U(1, 1, a1)"}},
			{[]rec{del(1, 1, "a1")}, []string{"-D(1, 1, a1)"}},
		}},
		{"1, 3, 2", []step{
			{[]rec{del(1, 1, "a1")}, nil},
			{[]rec{del(3, 1, "a3")}, []string{"+U(2, 1, a2)"}},
			{[]rec{del(2, 1, "a2")}, []string{"-D(2, 1, a2)"}},
		}},
		{"2, 3, 1", []step{
			{[]rec{del(2, 1, "a2")}, nil},
			{[]rec{del(3, 1, "a3")}, []string{"+U(1, 1, a1)"}},
			{[]rec{del(1, 1, "a1")}, []string{"-D(1, 1, a1)"}},
		}},
		{"3, 1, 2", []step{
			{[]rec{del(3, 1, "a3")}, []string{"+U(2, 1, a2)"}},
			{[]rec{del(1, 1, "a1")}, nil},
			{[]rec{del(2, 1, "a2")}, []string{"-D(2, 1, a2)"}},
		}},
	}
	for _, upsertKey := range [][]int{nil, {0}} {
		for _, r := range retractions {
			name := "retract " + r.name
			if upsertKey != nil {
				name += " by upsert key"
			}
			t.Run(name, func(t *testing.T) {
				op := must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{1}, UpsertKey: upsertKey}))
				open(t, op, &fakeRuntime{})
				var c collector
				feed(t, op, &c, 3, ins(1, 1, "a1"), ins(2, 1, "a2"), ins(3, 1, "a3"))
				expect(t, "inserts", c.Take(), "+I(1, 1, a1)", "+U(2, 1, a2)", "+U(3, 1, a3)")
				for i, s := range r.steps {
					feed(t, op, &c, 3, s.in...)
					expect(t, "retraction "+string(rune('1'+i)), c.Take(), s.want...)
				}
			})
		}
	}
	t.Run("duplicate rows", func(t *testing.T) {
		// Alive [A, B, A]: retracting A removes the first A, so A stays the
		// sink's row and nothing is emitted; the second retraction of A
		// removes the last row and the sink goes back to B.
		op := must(t)(NewSinkUpsertMaterializer(MaterializerSpec{KeyCols: []int{1}}))
		open(t, op, &fakeRuntime{})
		var c collector
		feed(t, op, &c, 3, ins(1, 1, "A"), ins(2, 1, "B"), ins(1, 1, "A"), del(1, 1, "A"))
		expect(t, "first retraction", c.Take(), "+I(1, 1, A)", "+U(2, 1, B)", "+U(1, 1, A)")
		feed(t, op, &c, 3, ub(1, 1, "A"), del(9, 1, "none"), del(2, 1, "B"), del(5, 7, "x"))
		expect(t, "second retraction", c.Take(), "+U(2, 1, B)", "-D(2, 1, B)")
	})
}

func TestDropUpdateBefore(t *testing.T) {
	op := NewDropUpdateBefore()
	open(t, op, &fakeRuntime{})
	var c collector
	feed(t, op, &c, 2, ins("a", 1), ub("a", 1), ua("a", 2), del("a", 2))
	expect(t, "drops -U", c.Take(), "+I(a, 1)", "+U(a, 2)", "-D(a, 2)")

	b := batchOf(2, ins("b", 1), ua("b", 2))
	var got *types.Batch
	if err := op.ProcessBatch(0, b, outputFunc(func(x *types.Batch) error { got = x; return nil })); err != nil {
		t.Fatal(err)
	}
	if got != b {
		t.Error("a batch without -U should pass through unchanged")
	}
	if err := op.ProcessWatermark(9, &c); err != nil {
		t.Fatal(err)
	}
	expect(t, "watermark", c.Take(), "WM(9)")
}

type outputFunc func(b *types.Batch) error

func (f outputFunc) Push(b *types.Batch) error { return f(b) }
func (f outputFunc) PushWatermark(int64) error { return nil }
