package values

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

func create(schema types.Schema, opts map[string]string, loc *time.Location) (*Source, error) {
	opts["connector"] = "values"
	s, err := NewFactory().CreateSource(&connectors.TableContext{
		Name: "default_catalog.default_database.t", ObjectName: "t", Options: opts, Physical: schema, Loc: loc,
	})
	if err != nil {
		return nil, err
	}
	return s.(*Source), nil
}

func TestParseScalarTypes(t *testing.T) {
	schema := types.Schema{
		{Name: "b", Type: types.BooleanType},
		{Name: "ti", Type: types.TinyIntType},
		{Name: "i", Type: types.IntType},
		{Name: "bi", Type: types.BigIntType},
		{Name: "f", Type: types.FloatType},
		{Name: "d", Type: types.DoubleType},
		{Name: "dec", Type: types.DecimalType(5, 2)},
		{Name: "s", Type: types.StringType},
		{Name: "bin", Type: types.BytesType},
		{Name: "dt", Type: types.DateType},
		{Name: "tm", Type: types.TimeType(0)},
		{Name: "ts", Type: types.TimestampType(3)},
		{Name: "ltz", Type: types.TimestampLTZType(3)},
	}
	data := `
TRUE, -128, 2147483647, -9000000000, 1.1, 2.5e3, 12.345, hello world, x'00ff', 2024-02-29, 23:59:58, 2024-01-01 00:00:01, 2024-01-01 08:00:00.5

false,1,2,3,-0.5,0,-0.005,"a,""b""",abc,1970-01-01,00:00:00,1969-12-31 23:59:59.999,1970-01-01T00:00:00
NULL,,null, NULL ,,,,"",,,,,
,,,,,,,"NULL",,,,,`
	loc := time.FixedZone("UTC+8", 8*3600)
	s, err := create(schema, map[string]string{"data": data}, loc)
	if err != nil {
		t.Fatal(err)
	}
	rows, kinds := s.Rows()
	// 2024-01-01 is day 19723 (1704067200 s after the epoch); 2024-02-29 is day 19782.
	want := []types.Row{
		{types.Bool(true), types.Int(-128), types.Int(2147483647), types.Int(-9000000000),
			types.Float(float64(float32(1.1))), types.Float(2500), types.DecimalFromUnscaled(1235, 2),
			types.String("hello world"), types.Bytes([]byte{0, 255}), types.Int(19782), types.Int(86398000),
			types.TimestampMillis(1704067201000),
			// 08:00:00.5 at UTC+8 is midnight UTC plus half a second.
			types.TimestampMillis(1704067200500)},
		{types.Bool(false), types.Int(1), types.Int(2), types.Int(3), types.Float(-0.5), types.Float(0),
			types.DecimalFromUnscaled(-1, 2), types.String(`a,"b"`), types.Bytes([]byte("abc")), types.Int(0),
			types.Int(0), types.TimestampMillis(-1), types.TimestampMillis(-8 * 3600000)},
		{{}, {}, {}, {}, {}, {}, {}, types.String(""), {}, {}, {}, {}, {}},
		{{}, {}, {}, {}, {}, {}, {}, types.String("NULL"), {}, {}, {}, {}, {}},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		if kinds[i] != types.Insert {
			t.Errorf("row %d kind %v", i, kinds[i])
		}
		for j := range want[i] {
			if got := rows[i][j]; got.K != want[i][j].K || types.Compare(got, want[i][j]) != 0 {
				t.Errorf("row %d column %s = %+v, want %+v", i, schema[j].Name, got, want[i][j])
			}
		}
	}
}

func TestRowKinds(t *testing.T) {
	schema := types.Schema{{Name: "k", Type: types.StringType}, {Name: "n", Type: types.IntType}}
	data := "+I a,1\n-U a,1\n+U a,2\n-D a,2\nb,3"
	s, err := create(schema, map[string]string{"data": data, "changelog-mode": "I,UB,UA,D"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.ChangelogMode() != types.Retract {
		t.Fatalf("mode %v", s.ChangelogMode())
	}
	_, kinds := s.Rows()
	want := []types.RowKind{types.Insert, types.UpdateBefore, types.UpdateAfter, types.Delete, types.Insert}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
	// Upsert mode has no -U.
	_, err = create(schema, map[string]string{"data": "+I a,1\n-U a,1", "changelog-mode": "I,UA,D"}, nil)
	if err == nil || err.Error() != "values table t, line 2: row kind -U is not allowed by 'changelog-mode' = 'I,UA,D' (mode [I,UA,D])" {
		t.Fatalf("unexpected error %v", err)
	}
	// The default mode is insert-only.
	_, err = create(schema, map[string]string{"data": "-D a,1"}, nil)
	if err == nil || err.Error() != "values table t, line 1: row kind -D is not allowed by 'changelog-mode' = 'I' (mode [I])" {
		t.Fatalf("unexpected error %v", err)
	}
}

func TestErrors(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.IntType}, {Name: "ts", Type: types.TimestampType(3)}}
	tests := []struct {
		name string
		opts map[string]string
		want string
	}{
		{"bad timestamp", map[string]string{"data": "1,2024-01-01 00:00:00\n\n3,x"},
			"values table t, line 3, column ts: cannot parse 'x' as TIMESTAMP(3): expected a timestamp 'yyyy-MM-dd HH:mm:ss[.fff]'"},
		{"bad int", map[string]string{"data": "1.5,"},
			"values table t, line 1, column id: cannot parse '1.5' as INT: not an integer"},
		{"int out of range", map[string]string{"data": "3000000000,"},
			"values table t, line 1, column id: cannot parse '3000000000' as INT: out of range"},
		{"no such date", map[string]string{"data": "1,2023-02-29 00:00:00"},
			"values table t, line 1, column ts: cannot parse '2023-02-29 00:00:00' as TIMESTAMP(3): expected a timestamp"},
		{"field count", map[string]string{"data": "1"},
			"values table t, line 1: expected 2 fields (id, ts), but found 1"},
		{"unterminated quote", map[string]string{"data": `"1,`},
			"values table t, line 1: unterminated quoted field"},
		{"missing data", map[string]string{},
			"One or more required options are missing.\n\nMissing required options are:\n\ndata"},
		{"bad mode", map[string]string{"data": "", "changelog-mode": "I,X"},
			"Invalid value for option 'changelog-mode'. Expected a comma-separated list of [I, UB, UA, D], but was: I,X"},
		{"unknown option", map[string]string{"data": "", "data-id": "1"},
			"Unsupported options found for 'values'.\n\nUnsupported options:\n\ndata-id\n\nSupported options:\n\nasync\nbounded\nchangelog-mode\nconnector\ndata\nlookup.cache\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := create(schema, tt.opts, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant prefix:\n%s", err, tt.want)
			}
		})
	}
	arr := types.Schema{{Name: "a", Type: types.ArrayType(types.Type{Root: types.RootIntervalDayTime, Precision: 2, Scale: 3})}}
	if _, err := create(arr, map[string]string{"data": ""}, nil); err == nil ||
		err.Error() != "values table t, column a: type "+arr[0].Type.String()+" is not supported by the values connector" {
		t.Fatalf("unexpected error %v", err)
	}
	notNull := types.Schema{{Name: "a", Type: types.IntType.WithNullable(false)}}
	if _, err := create(notNull, map[string]string{"data": "NULL"}, nil); err == nil ||
		err.Error() != "values table t, line 1, column a: NULL in a NOT NULL column of type INT NOT NULL" {
		t.Fatalf("unexpected error %v", err)
	}
}

func TestReader(t *testing.T) {
	schema := types.Schema{{Name: "n", Type: types.IntType}}
	s, err := create(schema, map[string]string{"data": "1\n2\n3\n4\n5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Bounded() || s.Parallelism(4) != 1 {
		t.Fatal("values is bounded with parallelism 1")
	}
	r, _ := s.NewReader(0, 1)
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(1, 2)
	var got []int64
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			got = append(got, row[0].Int())
		}
		if res.End {
			if !res.SplitDone || res.Split != 0 {
				t.Fatalf("last read %+v", res)
			}
			break
		}
	}
	if len(got) != 5 || got[0] != 1 || got[4] != 5 {
		t.Fatalf("got %v", got)
	}

	// Unbounded: after the rows, Read blocks until ctx is done.
	s, _ = create(schema, map[string]string{"data": "1", "bounded": "false"}, nil)
	if s.Bounded() {
		t.Fatal("bounded = false")
	}
	r, _ = s.NewReader(0, 1)
	b.Reset()
	if res, err := r.Read(ctx, b); err != nil || b.Len() != 1 || res.End || res.SplitDone {
		t.Fatalf("first read %+v %v", res, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b2 := types.NewBatch(1, 2)
		res, err := r.Read(cctx, b2)
		if err != nil || b2.Len() != 0 || res.End {
			t.Errorf("blocked read %+v %v", res, err)
		}
	}()
	cancel()
	<-done
}

// readInts reads up to n rows (all when n < 0) in batches of two.
func readInts(t *testing.T, r interface {
	Read(context.Context, *types.Batch) (exec.ReadResult, error)
}, n int) []int64 {
	t.Helper()
	var got []int64
	b := types.NewBatch(1, 2)
	for n < 0 || len(got) < n {
		b.Reset()
		res, err := r.Read(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			got = append(got, row[0].Int())
		}
		if res.End {
			break
		}
	}
	return got
}

func TestReaderPosition(t *testing.T) {
	schema := types.Schema{{Name: "n", Type: types.IntType}}
	s, err := create(schema, map[string]string{"data": "1\n2\n3\n4\n5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, 2, 4, 5} { // checkpoints after 0, 2, 4 and all 5 rows
		r, _ := s.NewReader(0, 1)
		cr := r.(exec.CheckpointedReader)
		if err := cr.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := readInts(t, cr, at)
		pos, err := cr.SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := s.NewReader(0, 1)
		cr2 := r2.(exec.CheckpointedReader)
		if err := cr2.RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
		if err := cr2.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		after := readInts(t, cr2, -1)
		got := append(before, after...)
		if len(got) != 5 || got[0] != 1 || got[4] != 5 || len(before) != at {
			t.Errorf("checkpoint after %d rows: read %v then %v", at, before, after)
		}
	}
	r, _ := s.NewReader(0, 1)
	if err := r.(exec.CheckpointedReader).RestorePosition([]byte{0x80}); err == nil {
		t.Error("a truncated position was accepted")
	}
	if err := r.(exec.CheckpointedReader).RestorePosition([]byte{9}); err == nil {
		t.Error("a position past the rows was accepted")
	}
}
