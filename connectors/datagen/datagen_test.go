package datagen

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

func newSource(t testing.TB, schema types.Schema, opts map[string]string) *Source {
	t.Helper()
	opts["connector"] = "datagen"
	s, err := NewFactory().CreateSource(&connectors.TableContext{
		Name: "default_catalog.default_database.gen", ObjectName: "gen", Options: opts, Physical: schema,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Source)
}

func createErr(schema types.Schema, opts map[string]string) error {
	opts["connector"] = "datagen"
	_, err := NewFactory().CreateSource(&connectors.TableContext{
		Name: "default_catalog.default_database.gen", ObjectName: "gen", Options: opts, Physical: schema,
	})
	return err
}

// readAll drains a bounded reader, checking the ReadResult protocol.
func readAll(t *testing.T, r exec.SourceReader, width int) []types.Row {
	t.Helper()
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []types.Row
	b := types.NewBatch(width, 7) // small batches exercise batch boundaries
	for i := 0; ; i++ {
		if i > 1e6 {
			t.Fatal("reader does not end")
		}
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() > 0 && res.Split != 0 {
			t.Fatalf("rows from split %d", res.Split)
		}
		for _, row := range b.Rows {
			out = append(out, row.Clone())
		}
		if res.End {
			return out
		}
	}
}

var seqSchema = types.Schema{{Name: "id", Type: types.BigIntType}}

func TestSequenceSplitsEvenly(t *testing.T) {
	for _, p := range []int{1, 3} {
		s := newSource(t, seqSchema, map[string]string{
			"fields.id.kind": "sequence", "fields.id.start": "5", "fields.id.end": "24", "rows-per-second": "1000000000",
		})
		if !s.Bounded() {
			t.Fatal("a sequence source must be bounded")
		}
		var got []int64
		for sub := 0; sub < p; sub++ {
			r, err := s.NewReader(sub, p)
			if err != nil {
				t.Fatal(err)
			}
			rows := readAll(t, r, 1)
			// 20 values over p subtasks: 20/p each, the first 20%p one more.
			want := 20 / p
			if sub < 20%p {
				want++
			}
			if len(rows) != want {
				t.Fatalf("p=%d subtask %d: %d rows, want %d", p, sub, len(rows), want)
			}
			for _, row := range rows {
				got = append(got, row[0].Int())
			}
		}
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		for i, v := range got {
			if v != int64(5+i) {
				t.Fatalf("p=%d: values %v are not 5..24 exactly once", p, got)
			}
		}
		if len(got) != 20 {
			t.Fatalf("p=%d: %d values", p, len(got))
		}
	}
}

func TestSequenceOfOtherTypes(t *testing.T) {
	schema := types.Schema{
		{Name: "s", Type: types.StringType},
		{Name: "d", Type: types.DecimalType(5, 2)},
		{Name: "f", Type: types.DoubleType},
		{Name: "t", Type: types.TinyIntType},
	}
	opts := map[string]string{"rows-per-second": "1000000000"}
	for _, c := range []string{"s", "d", "f", "t"} {
		opts["fields."+c+".kind"] = "sequence"
		opts["fields."+c+".start"] = "1"
		opts["fields."+c+".end"] = "3"
	}
	s := newSource(t, schema, opts)
	r, _ := s.NewReader(0, 1)
	rows := readAll(t, r, len(schema))
	want := []types.Row{
		{types.String("1"), types.DecimalFromUnscaled(100, 2), types.Float(1), types.Int(1)},
		{types.String("2"), types.DecimalFromUnscaled(200, 2), types.Float(2), types.Int(2)},
		{types.String("3"), types.DecimalFromUnscaled(300, 2), types.Float(3), types.Int(3)},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows", len(rows))
	}
	for i := range want {
		if !types.RowsEqual(rows[i], want[i]) {
			t.Fatalf("row %d = %v, want %v", i, rows[i], want[i])
		}
	}
}

func TestNumberOfRows(t *testing.T) {
	schema := types.Schema{{Name: "v", Type: types.IntType}}
	s := newSource(t, schema, map[string]string{"number-of-rows": "10", "rows-per-second": "1000000000"})
	if !s.Bounded() {
		t.Fatal("number-of-rows must make the source bounded")
	}
	total := 0
	for sub, want := range []int{4, 3, 3} {
		r, _ := s.NewReader(sub, 3)
		n := len(readAll(t, r, 1))
		if n != want {
			t.Fatalf("subtask %d: %d rows, want %d", sub, n, want)
		}
		total += n
	}
	if total != 10 {
		t.Fatalf("total %d", total)
	}
	// The shorter of number-of-rows and a sequence wins.
	s = newSource(t, seqSchema, map[string]string{"number-of-rows": "4", "fields.id.kind": "sequence",
		"fields.id.start": "1", "fields.id.end": "100", "rows-per-second": "1000000000"})
	r, _ := s.NewReader(0, 1)
	if n := len(readAll(t, r, 1)); n != 4 {
		t.Fatalf("%d rows, want 4", n)
	}
}

func TestRandomBoundsAndNulls(t *testing.T) {
	schema := types.Schema{
		{Name: "i", Type: types.IntType},
		{Name: "b", Type: types.BigIntType},
		{Name: "d", Type: types.DoubleType},
		{Name: "dec", Type: types.DecimalType(6, 2)},
		{Name: "s", Type: types.VarCharType(8)},
		{Name: "n", Type: types.IntType},
		{Name: "ts", Type: types.TimestampType(3)},
		{Name: "ltz", Type: types.TimestampLTZType(0)},
		{Name: "arr", Type: types.ArrayType(types.IntType)},
		{Name: "m", Type: types.MapType(types.TinyIntType, types.StringType)},
		{Name: "r", Type: types.RowType(types.Field{Name: "x", Type: types.SmallIntType})},
		{Name: "bool", Type: types.BooleanType},
		{Name: "bytes", Type: types.BytesType},
	}
	s := newSource(t, schema, map[string]string{
		"number-of-rows": "2000", "rows-per-second": "1000000000",
		"fields.i.min": "-3", "fields.i.max": "3",
		"fields.b.min": "1000000000000", "fields.b.max": "1000000000005",
		"fields.d.min": "0.5", "fields.d.max": "0.75",
		"fields.dec.min": "10", "fields.dec.max": "20",
		"fields.n.null-rate": "1.0",
		"fields.ts.max-past": "1 h",
		"fields.arr.length":  "2", "fields.arr.element.min": "7", "fields.arr.element.max": "7",
		"fields.m.key.min": "1", "fields.m.key.max": "1", "fields.m.value.length": "4",
		"fields.r.x.min": "-1", "fields.r.x.max": "-1",
		"fields.bytes.length": "5",
	})
	before := time.Now().UnixMilli()
	r, _ := s.NewReader(0, 1)
	rows := readAll(t, r, len(schema))
	after := time.Now().UnixMilli()
	if len(rows) != 2000 {
		t.Fatalf("%d rows", len(rows))
	}
	seen := map[int64]bool{}
	for _, row := range rows {
		if v := row[0].Int(); v < -3 || v > 3 {
			t.Fatalf("i = %d out of [-3, 3]", v)
		} else {
			seen[v] = true
		}
		if v := row[1].Int(); v < 1000000000000 || v > 1000000000005 {
			t.Fatalf("b = %d out of range", v)
		}
		if v := row[2].Float(); v < 0.5 || v > 0.75 {
			t.Fatalf("d = %v out of range", v)
		}
		if v := row[3]; v.K != types.KindDecimal || v.DecimalScale() != 2 || v.N < 1000 || v.N > 2000 {
			t.Fatalf("dec = %+v out of range", v)
		}
		if v := row[4].Str(); len(v) != 8 || strings.Trim(v, "0123456789abcdef") != "" {
			t.Fatalf("s = %q is not 8 hex digits", v)
		}
		if !row[5].IsNull() {
			t.Fatalf("null-rate 1.0 gave %v", row[5])
		}
		if v := row[6].Millis(); v < before-3600000 || v > after {
			t.Fatalf("ts = %d not within max-past", v)
		}
		if v := row[7].Millis(); v%1000 != 0 || v < before-1000 || v > after {
			t.Fatalf("ltz = %d not now at second precision", v)
		}
		if a := row[8].Array(); len(a) != 2 || a[0].Int() != 7 || a[1].Int() != 7 {
			t.Fatalf("arr = %v", a)
		}
		if m := row[9].Map(); len(m.Keys) != 1 || m.Keys[0].Int() != 1 || len(m.Values[0].Str()) != 4 {
			t.Fatalf("map = %+v (equal keys must collapse)", m)
		}
		if f := row[10].RowOf(); len(f) != 1 || f[0].Int() != -1 {
			t.Fatalf("row = %v", f)
		}
		if row[11].K != types.KindBool {
			t.Fatalf("bool = %v", row[11])
		}
		if v := row[12]; v.K != types.KindBytes || len(v.Str()) != 5 {
			t.Fatalf("bytes = %v", v)
		}
	}
	if len(seen) != 7 {
		t.Fatalf("2000 draws from [-3, 3] hit only %v", seen)
	}
}

func TestOptionErrors(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}}
	tests := []struct {
		name string
		opts map[string]string
		want string
	}{
		{"unknown column", map[string]string{"fields.nope.kind": "random"},
			"Unsupported options found for 'datagen'.\n\nUnsupported options:\n\nfields.nope.kind\n\nSupported options:\n\nconnector\n" +
				"fields.id.kind\nfields.id.max\nfields.id.min\nfields.id.null-rate\n" +
				"fields.name.kind\nfields.name.length\nfields.name.null-rate\nfields.name.var-len\n" +
				"number-of-rows\nrows-per-second\nscan.parallelism\n"},
		{"option not meaningful for the type", map[string]string{"fields.name.min": "1"},
			"Unsupported options found for 'datagen'.\n\nUnsupported options:\n\nfields.name.min\n\n"},
		{"random option on a sequence", map[string]string{"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "2", "fields.id.min": "0"},
			"Unsupported options found for 'datagen'.\n\nUnsupported options:\n\nfields.id.min\n\n"},
		{"bad kind", map[string]string{"fields.id.kind": "sequential"},
			"Invalid value for option 'fields.id.kind'. Expected one of [random, sequence], but was: sequential"},
		{"sequence without end", map[string]string{"fields.id.kind": "sequence", "fields.id.start": "1"},
			"Could not find required property 'fields.id.end' for sequence generator."},
		{"bad number", map[string]string{"rows-per-second": "fast"},
			"Invalid value for option 'rows-per-second'. Expected a long integer, but was: fast"},
		{"bad duration", map[string]string{"fields.id.kind": "random", "scan.watermark.idle-timeout": "1 s", "number-of-rows": "-1"},
			"Invalid value for option 'number-of-rows'. Expected a non-negative number, but was: -1"},
		{"min above max", map[string]string{"fields.id.min": "5", "fields.id.max": "4"},
			"option 'fields.id.min' (5) is greater than option 'fields.id.max' (4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := createErr(schema, tt.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant prefix:\n%s", err, tt.want)
			}
		})
	}
	tsSchema := types.Schema{{Name: "ts", Type: types.TimestampType(3)}}
	err := createErr(tsSchema, map[string]string{"fields.ts.max-past": "5 fortnights"})
	if err == nil || err.Error() != "Invalid value for option 'fields.ts.max-past'. Expected a duration such as '500 ms', '10 s', '1 min', '2 h' or '1 d', but was: 5 fortnights" {
		t.Fatalf("bad duration: %v", err)
	}
}

func TestThrottle(t *testing.T) {
	s := newSource(t, seqSchema, map[string]string{"rows-per-second": "200"})
	r, _ := s.NewReader(0, 1)
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	b := types.NewBatch(1, 1024)
	n := 0
	for n < 41 {
		b.Reset()
		if _, err := r.Read(ctx, b); err != nil {
			t.Fatal(err)
		}
		n += b.Len()
	}
	// Row k is due k/200 s after Open, so row 40 cannot come before 200 ms.
	if el := time.Since(start); el < 190*time.Millisecond {
		t.Fatalf("41 rows at 200 rows/s took only %v", el)
	}

	// A cancelled context ends a waiting Read without rows or error.
	slow := newSource(t, seqSchema, map[string]string{"rows-per-second": "1"})
	r, _ = slow.NewReader(0, 1)
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b.Reset()
	if _, err := r.Read(ctx, b); err != nil || b.Len() != 1 {
		t.Fatalf("first row is due at once: %d rows, %v", b.Len(), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b.Reset()
	res, err := r.Read(cctx, b)
	if err != nil || b.Len() != 0 || res.End || res.Split != -1 {
		t.Fatalf("cancelled Read: %+v, %d rows, %v", res, b.Len(), err)
	}
}

func TestParallelismOption(t *testing.T) {
	s := newSource(t, seqSchema, map[string]string{"scan.parallelism": "3"})
	if got := s.Parallelism(8); got != 3 {
		t.Fatalf("Parallelism = %d", got)
	}
	s = newSource(t, seqSchema, map[string]string{})
	if got := s.Parallelism(8); got != 8 || s.Bounded() {
		t.Fatalf("Parallelism = %d, bounded %v", got, s.Bounded())
	}
}

// BenchmarkRead generates a BIGINT sequence, a random INT and TIMESTAMP(3) now.
func BenchmarkRead(b *testing.B) {
	schema := types.Schema{
		{Name: "id", Type: types.BigIntType},
		{Name: "v", Type: types.IntType},
		{Name: "ts", Type: types.TimestampType(3)},
	}
	s := newSource(b, schema, map[string]string{
		"rows-per-second": "9000000000000000000", "fields.id.kind": "sequence",
		"fields.id.start": "0", "fields.id.end": "9000000000000000000",
		"fields.v.min": "0", "fields.v.max": "1000",
	})
	r, _ := s.NewReader(0, 1)
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	batch := types.NewBatch(3, types.DefaultBatchSize)
	b.ReportAllocs()
	b.ResetTimer()
	rows := 0
	for rows < b.N {
		batch.Reset()
		if _, err := r.Read(ctx, batch); err != nil {
			b.Fatal(err)
		}
		rows += batch.Len()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// readN reads at least n rows (or to the end) in batches of size bs.
func readN(t *testing.T, r exec.SourceReader, width, bs, n int) (rows []types.Row, end bool) {
	t.Helper()
	b := types.NewBatch(width, bs)
	for len(rows) < n {
		b.Reset()
		res, err := r.Read(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			rows = append(rows, row.Clone())
		}
		if res.End {
			return rows, true
		}
	}
	return rows, false
}

func TestPositionRestoreContinuesExactly(t *testing.T) {
	schema := types.Schema{
		{Name: "id", Type: types.BigIntType},
		{Name: "i", Type: types.IntType},
		{Name: "s", Type: types.VarCharType(6)},
		{Name: "arr", Type: types.ArrayType(types.IntType)},
		{Name: "m", Type: types.MapType(types.TinyIntType, types.StringType)},
		{Name: "d", Type: types.DoubleType},
	}
	s := newSource(t, schema, map[string]string{
		"fields.id.kind": "sequence", "fields.id.start": "100", "fields.id.end": "199",
		"fields.i.null-rate": "0.3", "fields.arr.length": "3", "fields.m.value.length": "2",
		"rows-per-second": "1000000000",
	})
	ctx := context.Background()
	for _, at := range []int{0, 7, 21, 49} { // subtask 1 of 2 emits 50 rows: 101, 103, …, 199
		orig, _ := s.NewReader(1, 2)
		if err := orig.Open(ctx); err != nil {
			t.Fatal(err)
		}
		before, _ := readN(t, orig, len(schema), 7, at)
		pos, err := orig.(exec.CheckpointedReader).SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		rest, end := readN(t, orig, len(schema), 7, 1000)
		if !end || len(before)+len(rest) != 50 {
			t.Fatalf("checkpoint after %d: %d + %d rows, end %v", at, len(before), len(rest), end)
		}
		restored, _ := s.NewReader(1, 2)
		if err := restored.(exec.CheckpointedReader).RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
		if err := restored.Open(ctx); err != nil {
			t.Fatal(err)
		}
		// Other batch boundaries after the restore must not change the values.
		again, end := readN(t, restored, len(schema), 5, 1000)
		if !end || len(again) != len(rest) {
			t.Fatalf("checkpoint after %d: restored reader gave %d rows, want %d", at, len(again), len(rest))
		}
		for i := range rest {
			if !types.RowsEqual(rest[i], again[i]) {
				t.Fatalf("checkpoint after %d: row %d after restore is %v, want %v", at, i, again[i], rest[i])
			}
		}
		if first := again[0][0].Int(); len(before) == at && first != 101+2*int64(at) {
			t.Errorf("checkpoint after %d: sequence resumes at %d, want %d", at, first, 101+2*at)
		}
		orig.Close()
		restored.Close()
	}
	r, _ := s.NewReader(0, 1)
	if err := r.(exec.CheckpointedReader).RestorePosition([]byte{1, 3, 1, 0}); err == nil {
		t.Error("a position with the wrong number of columns was accepted")
	}
}

// TestRemainingRows: a bounded reader counts down the rows it has still to
// emit (subtask 0 of 3 over a sequence 1…10 owns 4 values), reaching 0 at
// the end; an unbounded one does not know.
func TestRemainingRows(t *testing.T) {
	s := newSource(t, seqSchema, map[string]string{"fields.id.kind": "sequence",
		"fields.id.start": "1", "fields.id.end": "10", "rows-per-second": "1000000000"})
	r, _ := s.NewReader(0, 3)
	rr := r.(exec.RemainingReporter)
	if n := rr.RemainingRows(); n != 4 {
		t.Fatalf("before reading: %d rows remaining, want 4", n)
	}
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := types.NewBatch(1, 3)
	if _, err := r.Read(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := rr.RemainingRows(); n != int64(4-b.Len()) || b.Len() == 0 {
		t.Fatalf("after reading %d rows: %d remaining, want %d", b.Len(), n, 4-b.Len())
	}
	readAll(t, r, 1)
	if n := rr.RemainingRows(); n != 0 {
		t.Fatalf("at the end: %d remaining, want 0", n)
	}
	u := newSource(t, seqSchema, map[string]string{"rows-per-second": "1000000000"})
	ur, _ := u.NewReader(0, 1)
	if n := ur.(exec.RemainingReporter).RemainingRows(); n != -1 {
		t.Fatalf("unbounded: %d remaining, want -1", n)
	}
}
