package print

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

var schema = types.Schema{
	{Name: "id", Type: types.IntType},
	{Name: "name", Type: types.StringType},
	{Name: "ts", Type: types.TimestampType(3)},
}

func newSink(t *testing.T, f *Factory, opts map[string]string) connectors.Sink {
	t.Helper()
	opts["connector"] = "print"
	s, err := f.CreateSink(&connectors.TableContext{Name: "default_catalog.default_database.p", ObjectName: "p", Options: opts, Physical: schema})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// 2024-01-01T00:00:01 is 1704067201000 ms after the epoch.
const ts = 1704067201000

func TestPrintFormats(t *testing.T) {
	tests := []struct {
		name                 string
		opts                 map[string]string
		subtask, parallelism int
		wantPrefix           string
	}{
		{"no identifier, p=1", map[string]string{}, 0, 1, ""},
		{"no identifier, p=3", map[string]string{}, 1, 3, "2> "},
		{"identifier, p=1", map[string]string{"print-identifier": "out"}, 0, 1, "out> "},
		{"identifier, p=4", map[string]string{"print-identifier": "out"}, 3, 4, "out:4> "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			s := newSink(t, NewFactory(&stdout, &stderr), tt.opts)
			w, err := s.NewWriter(tt.subtask, tt.parallelism)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := w.Open(ctx); err != nil {
				t.Fatal(err)
			}
			b := types.NewBatch(3, 4)
			b.AppendRow(types.Insert, types.Row{types.Int(1), types.String("alice"), types.TimestampMillis(ts)})
			b.AppendRow(types.UpdateBefore, types.Row{types.Int(2), types.NullValue, types.TimestampMillis(ts + 500)})
			b.AppendRow(types.UpdateAfter, types.Row{types.Int(3), types.String(""), types.NullValue})
			b.AppendRow(types.Delete, types.Row{types.NullValue, types.String("a, b"), types.TimestampMillis(ts - 1000)})
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := w.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			w.Close()
			p := tt.wantPrefix
			want := p + "+I[1, alice, 2024-01-01T00:00:01]\n" +
				p + "-U[2, null, 2024-01-01T00:00:01.500]\n" +
				p + "+U[3, , null]\n" +
				p + "-D[null, a, b, 2024-01-01T00:00]\n"
			if got := stdout.String(); got != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
			if stderr.Len() != 0 {
				t.Fatalf("stderr got %q", stderr.String())
			}
		})
	}
}

func TestStandardErrorAndModes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	s := newSink(t, NewFactory(&stdout, &stderr), map[string]string{"standard-error": "true", "sink.parallelism": "2"})
	if s.Parallelism(8) != 2 {
		t.Fatalf("parallelism %d", s.Parallelism(8))
	}
	if m := s.AcceptedChangelogMode(types.Retract); m != types.Retract {
		t.Fatalf("accepted %v", m)
	}
	w, _ := s.NewWriter(0, 1)
	b := types.NewBatch(3, 1)
	b.AppendRow(types.Insert, types.Row{types.Int(7), types.String("x"), types.NullValue})
	if err := w.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 || stderr.String() != "+I[7, x, null]\n" {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	_, err := NewFactory(&stdout, &stderr).CreateSink(&connectors.TableContext{Name: "p",
		Options: map[string]string{"connector": "print", "standard-error": "yes"}, Physical: schema})
	if err == nil || err.Error() != "Invalid value for option 'standard-error'. Expected one of [true, false], but was: yes" {
		t.Fatalf("unexpected error %v", err)
	}
}

// TestConcurrentWritersKeepLinesWhole runs several subtasks at once; with
// -race this also checks the shared writer is serialized.
func TestConcurrentWritersKeepLinesWhole(t *testing.T) {
	var stdout bytes.Buffer
	f := NewFactory(&stdout, &stdout)
	s := newSink(t, f, map[string]string{"print-identifier": "x"})
	var wg sync.WaitGroup
	for sub := range 4 {
		w, _ := s.NewWriter(sub, 4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := types.NewBatch(3, 16)
			for range 50 {
				b.Reset()
				for range 16 {
					b.AppendRow(types.Insert, types.Row{types.Int(int64(sub)), types.String("row"), types.NullValue})
				}
				if err := w.Write(context.Background(), b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 4*50*16 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		sub := l[2] - '1'
		if want := "x:" + string('1'+sub) + "> +I[" + string('0'+sub) + ", row, null]"; l != want {
			t.Fatalf("line %q, want %q", l, want)
		}
	}
}
