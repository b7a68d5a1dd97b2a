package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flinksql/flinksql/types"
)

// testClock is a settable clock for the rolling policy.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// committedFiles returns the lines of each visible part file, files sorted
// by their first line.
func committedFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, strings.ReplaceAll(strings.TrimSuffix(string(data), "\n"), "\n", " "))
	}
	sort.Strings(files)
	return files
}

// The time-based rolling options close a part file once it is older than
// 'sink.rolling-policy.rollover-interval' or was not written for
// 'sink.rolling-policy.inactivity-interval'; the next row starts a new file.
func TestSinkTimeRollingPolicy(t *testing.T) {
	for _, c := range []struct {
		opts  map[string]string
		steps []time.Duration // clock advance before each row 1, 2, 3
		want  []string
	}{
		// Opened at 0; row 2 at 40 s is inside the minute, row 3 at 70 s is not.
		{map[string]string{"sink.rolling-policy.rollover-interval": "1 min"}, []time.Duration{0, 40 * time.Second, 30 * time.Second},
			[]string{"1,a 2,b", "3,c"}},
		// Row 2 comes 5 s after row 1, row 3 11 s after row 2.
		{map[string]string{"sink.rolling-policy.inactivity-interval": "10 s"}, []time.Duration{0, 5 * time.Second, 11 * time.Second},
			[]string{"1,a 2,b", "3,c"}},
		// Neither interval reached (both default to 30 min).
		{map[string]string{}, []time.Duration{0, 5 * time.Second, 11 * time.Second}, []string{"1,a 2,b 3,c"}},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		snk, err := NewFactory().CreateSink(tableContext(dir, c.opts))
		if err != nil {
			t.Fatal(err)
		}
		clock := &testClock{}
		snk.(*Sink).now = clock.now
		w, err := snk.NewWriter(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := w.Open(ctx); err != nil {
			t.Fatal(err)
		}
		b := types.NewBatch(2, 1)
		for i, name := range []string{"a", "b", "c"} {
			clock.advance(c.steps[i])
			b.Reset()
			b.AppendRow(types.Insert, types.Row{types.Int(int64(i + 1)), types.String(name)})
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if got := committedFiles(t, dir); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%v: part files %q, want %q", c.opts, got, c.want)
		}
	}
}

func TestSinkParallelismOption(t *testing.T) {
	dir := t.TempDir()
	snk, err := NewFactory().CreateSink(tableContext(dir, map[string]string{"sink.parallelism": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := snk.Parallelism(8); got != 3 {
		t.Fatalf("parallelism %d with sink.parallelism 3", got)
	}
	snk, _ = NewFactory().CreateSink(tableContext(dir, nil))
	if got := snk.Parallelism(8); got != 8 {
		t.Fatalf("parallelism %d without the option, want the default 8", got)
	}
}

// 'auto-compaction' = 'true' would merge small files; it is not
// implemented, so it is refused instead of ignored. 'false' is the default.
func TestAutoCompactionRefused(t *testing.T) {
	_, err := NewFactory().CreateSink(tableContext(t.TempDir(), map[string]string{"auto-compaction": "true"}))
	if err == nil || !strings.Contains(err.Error(), "option 'auto-compaction' = 'true' is not supported yet") {
		t.Fatalf("error %v", err)
	}
	if _, err := NewFactory().CreateSink(tableContext(t.TempDir(), map[string]string{"auto-compaction": "false", "compaction.file-size": "1 mb"})); err != nil {
		t.Fatal(err)
	}
	_, err = NewFactory().CreateSink(tableContext(t.TempDir(), map[string]string{"compaction.file-size": "big"}))
	if err == nil || !strings.Contains(err.Error(), "'compaction.file-size'") {
		t.Fatalf("error %v", err)
	}
}

// 'source.path.regex-pattern' keeps the files whose absolute path matches.
func TestSourcePathRegexPattern(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "1,a\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "2,b\n")
	writeFile(t, filepath.Join(dir, "sub", "c.csv"), "3,c\n")
	src, err := NewFactory().CreateSource(tableContext(dir, map[string]string{"source.path.regex-pattern": ".*\\.csv"}))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := src.NewReader(0, 1)
	got, err := drain(t, r)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if want := "1,a,NULL|3,c,NULL"; strings.Join(got, "|") != want {
		t.Fatalf("read %v, want %s", got, want)
	}
}
