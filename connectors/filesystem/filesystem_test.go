package filesystem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// lineFormat is a tiny comma-separated format for INT/BIGINT and STRING
// columns, standing in for the real formats.
type lineFormat struct{}

func (lineFormat) Identifier() string        { return "line" }
func (lineFormat) OptionalOptions() []string { return []string{"ignore-parse-errors"} }

func (lineFormat) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	return &lineDecoder{schema: c.Schema, ignore: c.Options["ignore-parse-errors"] == "true"}, nil
}

func (lineFormat) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	return &lineEncoder{schema: c.Schema}, nil
}

type lineDecoder struct {
	schema types.Schema
	ignore bool
}

func (d *lineDecoder) Decode(data []byte, row types.Row) error {
	fail := func() error {
		if d.ignore {
			return formats.ErrSkipRecord
		}
		return errors.New("bad record")
	}
	fields := strings.Split(string(data), ",")
	if len(fields) != len(d.schema) {
		return fail()
	}
	for i, c := range d.schema {
		if c.Type.IsInteger() {
			n, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return fail()
			}
			row[i] = types.Int(n)
		} else {
			row[i] = types.String(fields[i])
		}
	}
	return nil
}

type lineEncoder struct{ schema types.Schema }

func (e *lineEncoder) Encode(dst []byte, row types.Row) ([]byte, error) {
	for i, c := range e.schema {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = types.AppendSQL(dst, row[i], c.Type, nil)
	}
	return dst, nil
}

var schema = types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}

func tableContext(dir string, opts map[string]string, meta ...connectors.MetadataColumn) *connectors.TableContext {
	reg := formats.NewRegistry()
	reg.Register(lineFormat{})
	all := map[string]string{"connector": "filesystem", "path": dir, "format": "line"}
	for k, v := range opts {
		all[k] = v
	}
	return &connectors.TableContext{
		Name: "default_catalog.default_database.t", ObjectName: "t", Options: all,
		Physical: schema, Metadata: meta, Formats: reg,
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// drain reads a reader to its end and returns "id,name,meta…" lines.
func drain(t *testing.T, r exec.SourceReader) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	b := types.NewBatch(len(schema)+1, 2)
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			return out, err
		}
		if b.Len() > 0 && (res.Split < 0 || res.Split >= r.NumSplits()) {
			t.Fatalf("rows from split %d of %d", res.Split, r.NumSplits())
		}
		for _, row := range b.Rows {
			var parts []string
			for i, v := range row {
				typ := types.StringType
				if i < len(schema) {
					typ = schema[i].Type
				}
				parts = append(parts, types.FormatSQL(v, typ, nil))
			}
			out = append(out, strings.Join(parts, ","))
		}
		if res.End {
			return out, nil
		}
	}
}

func TestSourceReadsDirectoryAtParallelism2(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "1,alice\n2,bob\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "3,carol\r\n\n4,dave") // CRLF, blank line, no final newline
	writeFile(t, filepath.Join(dir, ".hidden"), "9,hidden\n")
	writeFile(t, filepath.Join(dir, "_SUCCESS"), "9,marker\n")
	writeFile(t, filepath.Join(dir, ".part-x.inprogress.y"), "9,inprogress\n")

	tc := tableContext("file://"+dir, nil, connectors.MetadataColumn{Name: "fname", Key: "file.name", Type: types.StringType})
	src, err := NewFactory().CreateSource(tc)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Bounded() {
		t.Fatal("without source.monitor-interval the source is bounded")
	}
	// Files sorted by path are dealt round-robin: a.txt to subtask 0, b.txt to 1.
	want := [][]string{
		{"1,alice,a.txt", "2,bob,a.txt"},
		{"3,carol,b.txt", "4,dave,b.txt"},
	}
	for sub := range 2 {
		r, err := src.NewReader(sub, 2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := drain(t, r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(want[sub], "|") {
			t.Fatalf("subtask %d read %v, want %v", sub, got, want[sub])
		}
	}
}

func TestSourceBadLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("z", 150)
	writeFile(t, filepath.Join(dir, "bad.txt"), "1,alice\n"+long+"\n2,bob\n")
	src, err := NewFactory().CreateSource(tableContext(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := src.NewReader(0, 1)
	_, err = drain(t, r)
	want := "filesystem table t: file " + filepath.Join(dir, "bad.txt") + ", line 2: bad record: \"" + strings.Repeat("z", 100) + "\"…"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}

	// With ignore-parse-errors the line is skipped and counted.
	src, err = NewFactory().CreateSource(tableContext(dir, map[string]string{"line.ignore-parse-errors": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	r, _ = src.NewReader(0, 1)
	got, err := drain(t, r)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v, %v", got, err)
	}
	if n := src.(*Source).SkippedRecords().Load(); n != 1 {
		t.Fatalf("skipped %d, want 1", n)
	}
}

func TestSourceOptions(t *testing.T) {
	_, err := NewFactory().CreateSource(tableContext("/x", map[string]string{"line.nope": "1"}))
	if err == nil || !strings.HasPrefix(err.Error(), "Unsupported options found for 'filesystem'.\n\nUnsupported options:\n\nline.nope\n") {
		t.Fatalf("unexpected error %v", err)
	}
	_, err = NewFactory().CreateSource(tableContext("s3://bucket/x", nil))
	if err == nil || !strings.Contains(err.Error(), "unsupported file system scheme 's3'") {
		t.Fatalf("unexpected error %v", err)
	}
	_, err = NewFactory().CreateSource(tableContext("/x", nil, connectors.MetadataColumn{Name: "o", Key: "offset"}))
	if err == nil || !strings.HasPrefix(err.Error(), "Invalid metadata key 'offset' in column 'o'") {
		t.Fatalf("unexpected error %v", err)
	}
	src, err := NewFactory().CreateSource(tableContext("/x", map[string]string{"source.monitor-interval": "1 s"}))
	if err != nil || src.Bounded() {
		t.Fatalf("monitored source must be unbounded: %v", err)
	}
}

var partName = regexp.MustCompile(`^part-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0-\d+$`)

func TestSinkCommitsOnFinish(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	// Each line "n,name\n" is 8 bytes; a 20-byte roll size puts 3 lines in a file.
	snk, err := NewFactory().CreateSink(tableContext(dir, map[string]string{"sink.rolling-policy.file-size": "20b"}))
	if err != nil {
		t.Fatal(err)
	}
	if m := snk.AcceptedChangelogMode(types.Retract); m != types.InsertOnly {
		t.Fatalf("accepted mode %v", m)
	}
	w, err := snk.NewWriter(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(2, 8)
	var want []string
	for i := 1; i <= 7; i++ {
		b.AppendRow(types.Insert, types.Row{types.Int(int64(i)), types.String("namex")})
		want = append(want, strconv.Itoa(i)+",namex")
	}
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Before Finish no visible file exists: readers would see nothing.
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Fatal("expected in-progress or pending files")
	}
	for _, e := range entries {
		if !hidden(e.Name()) {
			t.Fatalf("visible file %s before Finish", e.Name())
		}
		if !strings.Contains(e.Name(), ".inprogress.") {
			t.Fatalf("unexpected file %s", e.Name())
		}
	}
	if files, err := listFiles(dir, nil); err != nil || len(files) != 0 {
		t.Fatalf("listing before Finish: %v %v", files, err)
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ = os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		if !partName.MatchString(e.Name()) {
			t.Fatalf("unexpected file %s after Finish", e.Name())
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		got = append(got, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	// 7 lines of 8 bytes, rolled after 24 bytes: files of 3, 3 and 1 lines.
	if len(entries) != 3 {
		t.Fatalf("%d part files, want 3", len(entries))
	}
	sort.Strings(got)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %v, want %v", got, want)
	}

	// Reading the directory back gives the same rows.
	src, err := NewFactory().CreateSource(tableContext(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := src.NewReader(0, 1)
	back, err := drain(t, r)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(back)
	for i := range back {
		back[i] = strings.TrimSuffix(back[i], ",NULL") // the unused metadata slot
	}
	if strings.Join(back, "|") != strings.Join(want, "|") {
		t.Fatalf("read back %v", back)
	}
}

func TestSinkTwoPhaseSteps(t *testing.T) {
	dir := t.TempDir()
	snk, err := NewFactory().CreateSink(tableContext(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	ew, _ := snk.NewWriter(2, 3)
	w := ew.(*Writer)
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(2, 1)
	b.AppendRow(types.Insert, types.Row{types.Int(1), types.String("a")})
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	committables, err := w.PrepareCommit(1)
	if err != nil || len(committables) != 1 {
		t.Fatalf("pending %v %v", committables, err)
	}
	pending, err := decodeAll(committables)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pending[0].Final, "-2-0") {
		t.Fatalf("final name %s does not carry subtask 2 and counter 0", pending[0].Final)
	}
	if _, err := os.Stat(pending[0].Final); !os.IsNotExist(err) {
		t.Fatal("pending file visible before Commit")
	}
	if err := w.Commit(committables); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(committables); err != nil { // idempotent
		t.Fatalf("second commit: %v", err)
	}
	if data, err := os.ReadFile(pending[0].Final); err != nil || string(data) != "1,a\n" {
		t.Fatalf("committed file %q %v", data, err)
	}
	b.Reset()
	b.AppendRow(types.UpdateBefore, types.Row{types.Int(1), types.String("a")})
	if err := w.Write(ctx, b); err == nil || err.Error() != "filesystem table t: the filesystem sink only accepts inserts, but got a -U row" {
		t.Fatalf("unexpected error %v", err)
	}
	w.Close()
}
