package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/checkpoint"
	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	iceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/hadoop"
	isql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

var testSchema = types.Schema{
	{Name: "id", Type: types.BigIntType.WithNullable(false)},
	{Name: "name", Type: types.StringType},
}

func testContext(warehouse string, opts map[string]string) *connectors.TableContext {
	all := map[string]string{
		"connector": "iceberg", OptCatalogName: "hc", OptCatalogType: "hadoop", OptWarehouse: warehouse,
	}
	for k, v := range opts {
		all[k] = v
	}
	return &connectors.TableContext{
		Name: "default_catalog.default_database.t", ObjectName: "t", Options: all, Physical: testSchema,
	}
}

// pipe is one writer and the committer, wired as the planner wires them:
// the writer's committables of a barrier reach the committer before it.
type pipe struct {
	*writer
	c     *committer
	jobID string
}

// testSink is the sink of the default test table in warehouse.
func testSink(t *testing.T, warehouse string) connectors.Sink {
	t.Helper()
	snk, err := NewFactory().CreateSink(testContext(warehouse, nil))
	if err != nil {
		t.Fatal(err)
	}
	return snk
}

func newPipe(t *testing.T, warehouse string) *pipe { return newSinkPipe(t, testSink(t, warehouse)) }

func newSinkPipe(t *testing.T, snk connectors.Sink) *pipe {
	t.Helper()
	w, err := snk.NewWriter(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := snk.(connectors.CommittingSink).NewCommitter()
	if err != nil {
		t.Fatal(err)
	}
	c := cw.(*committer)
	t.Cleanup(func() { w.Close(); c.Close() })
	return &pipe{writer: w.(*writer), c: c, jobID: c.jobID}
}

func newTestWriter(t *testing.T, warehouse string) *pipe { return openPipe(t, testSink(t, warehouse)) }

func openPipe(t *testing.T, snk connectors.Sink) *pipe {
	t.Helper()
	p := newSinkPipe(t, snk)
	if err := p.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// Commit commits the committer's committables.
func (p *pipe) Commit(cs []exec.Committable) error { return p.c.Commit(cs) }

// Finish ends the input without checkpointing.
func (p *pipe) Finish(ctx context.Context) error {
	if err := handOver(p.c, []*writer{p.writer}, exec.EndOfInputCheckpoint); err != nil {
		return err
	}
	return p.c.Finish(ctx)
}

// handOver sends the writers' committables of barrier id to c.
func handOver(c *committer, ws []*writer, id exec.CheckpointID) error {
	for _, w := range ws {
		cs, err := w.PrepareCommittables(id)
		if err != nil {
			return err
		}
		b := types.NewBatch(1, len(cs))
		for _, x := range cs {
			b.AppendRow(types.Insert, types.Row{types.Bytes(x)})
		}
		if err := c.Write(context.Background(), b); err != nil {
			return err
		}
	}
	return nil
}

func write(t *testing.T, w *writer, ids ...int64) {
	t.Helper()
	b := types.NewBatch(2, len(ids))
	for _, id := range ids {
		name := types.String(fmt.Sprintf("n%d", id))
		if id%5 == 0 {
			name = types.NullValue
		}
		b.AppendRow(types.Insert, types.Row{types.Int(id), name})
	}
	if err := w.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// prepare is barrier id at the writer and then at the committer.
func prepare(t *testing.T, p *pipe, id exec.CheckpointID) []exec.Committable {
	t.Helper()
	if err := handOver(p.c, []*writer{p.writer}, id); err != nil {
		t.Fatal(err)
	}
	cs, err := p.c.PrepareCommit(id)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// readTable scans the table with iceberg-go's own reader and returns its
// rows as "id,name" sorted.
func readTable(t *testing.T, warehouse string) (*table.Table, []string) {
	t.Helper()
	return scanRows(t, warehouse, func(rec arrow.RecordBatch, i int) string {
		name := "NULL"
		if names := rec.Column(1).(*array.String); names.IsValid(i) {
			name = names.Value(i)
		}
		return fmt.Sprintf("%d,%s", rec.Column(0).(*array.Int64).Value(i), name)
	})
}

// scanRows loads table default_database.t of the hadoop warehouse, scans
// it with iceberg-go's own reader and returns its rows, each formatted by
// row, sorted.
func scanRows(t *testing.T, warehouse string, row func(rec arrow.RecordBatch, i int) string) (*table.Table, []string) {
	t.Helper()
	cat, err := hadoop.NewCatalog("check", "file://"+warehouse, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"default_database", "t"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var rows []string
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			rows = append(rows, row(rec, i))
		}
	}
	slices.Sort(rows)
	return tbl, rows
}

func expectRows(ids ...int64) []string {
	var out []string
	for _, id := range ids {
		name := fmt.Sprintf("n%d", id)
		if id%5 == 0 {
			name = "NULL"
		}
		out = append(out, fmt.Sprintf("%d,%s", id, name))
	}
	slices.Sort(out)
	return out
}

// snapshots lists the table's snapshots from the first to the current one
// as "seq:checkpoint".
func snapshots(tbl *table.Table) []string {
	var out []string
	for s := tbl.CurrentSnapshot(); s != nil; {
		out = append(out, fmt.Sprintf("%d:%s", s.SequenceNumber, s.Summary.Properties[propMaxCommittedCkp]))
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	slices.Reverse(out)
	return out
}

// The table is created from the DDL; rows become visible only when their
// checkpoint commits, one snapshot per checkpoint, each the child of the
// previous one (sequence numbers 1, 2, ...).
func TestSinkCommitsOneSnapshotPerCheckpoint(t *testing.T) {
	wh := t.TempDir()
	w := newTestWriter(t, wh)
	tbl, rows := readTable(t, wh)
	if len(rows) != 0 || tbl.CurrentSnapshot() != nil {
		t.Fatalf("new table: rows %v, snapshot %v", rows, tbl.CurrentSnapshot())
	}
	if f, _ := tbl.Schema().FindFieldByName("id"); !f.Required || !f.Type.Equals(iceberg.PrimitiveTypes.Int64) {
		t.Fatalf("id field: %+v", f)
	}
	if v := tbl.Metadata().Version(); v != 2 {
		t.Fatalf("format version %d, want 2", v)
	}

	write(t, w.writer, 1, 2, 3)
	write(t, w.writer, 4, 5)
	c1 := prepare(t, w, 1)
	write(t, w.writer, 6) // after barrier 1: belongs to checkpoint 2
	if _, rows := readTable(t, wh); len(rows) != 0 {
		t.Fatalf("visible before the commit: %v", rows)
	}
	if err := w.Commit(c1); err != nil {
		t.Fatal(err)
	}
	if _, rows := readTable(t, wh); !slices.Equal(rows, expectRows(1, 2, 3, 4, 5)) {
		t.Fatalf("after checkpoint 1: %v", rows)
	}
	c2 := prepare(t, w, 2)
	if err := w.Commit(c2); err != nil {
		t.Fatal(err)
	}
	// Checkpoint 3 has no rows: no committable, no snapshot.
	if c3 := prepare(t, w, 3); len(c3) != 0 {
		t.Fatalf("empty checkpoint has committables: %d", len(c3))
	}
	write(t, w.writer, 7, 8)
	if err := w.Commit(prepare(t, w, 4)); err != nil {
		t.Fatal(err)
	}
	tbl, rows = readTable(t, wh)
	if want := expectRows(1, 2, 3, 4, 5, 6, 7, 8); !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	if got, want := snapshots(tbl), []string{"1:1", "2:2", "3:4"}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary.Operation != table.OpAppend || s.Summary.Properties[propJobID] != w.jobID {
			t.Fatalf("snapshot %d: %v", s.SnapshotID, s.Summary)
		}
	}
}

// A restore commits the restored checkpoint's committables again: when the
// snapshot was already committed before the crash, nothing is added; when
// it was not, it is committed once.
func TestSinkRecommitAfterRestoreIsIdempotent(t *testing.T) {
	wh := t.TempDir()
	w := newTestWriter(t, wh)
	write(t, w.writer, 1, 2)
	c1 := prepare(t, w, 1)
	if err := w.Commit(c1); err != nil {
		t.Fatal(err)
	}
	write(t, w.writer, 3)
	c2 := prepare(t, w, 2) // checkpoint 2 completes, the job dies before committing

	// The next attempt: a new writer, restored from checkpoint 2, commits
	// checkpoint 1's committable (already in the table) and checkpoint 2's.
	w2 := newPipe(t, wh)
	for range 2 { // and once more, as if that attempt also died after its commit
		if err := w2.Commit(append(slices.Clone(c1), c2...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, w2.writer, 4)
	if err := w2.Commit(prepare(t, w2, 3)); err != nil {
		t.Fatal(err)
	}
	tbl, rows := readTable(t, wh)
	if want := expectRows(1, 2, 3, 4); !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	if got, want := snapshots(tbl), []string{"1:1", "2:2", "3:3"}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	if j := tbl.CurrentSnapshot().Summary.Properties[propJobID]; j != w2.jobID || j == w.jobID {
		t.Fatalf("last snapshot's job %q; first writer %q, second %q", j, w.jobID, w2.jobID)
	}
}

// Without checkpointing, end of input commits everything as one snapshot.
func TestSinkFinishCommitsWithoutCheckpointing(t *testing.T) {
	wh := t.TempDir()
	w := newTestWriter(t, wh)
	write(t, w.writer, 1, 2, 3)
	if err := w.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	tbl, rows := readTable(t, wh)
	if want := expectRows(1, 2, 3); !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots", n)
	}
}

// An existing table is appended to; a DDL that does not fit it is refused.
func TestSinkExistingTable(t *testing.T) {
	wh := t.TempDir()
	w := newTestWriter(t, wh)
	write(t, w.writer, 1)
	if err := w.Commit(prepare(t, w, 1)); err != nil {
		t.Fatal(err)
	}
	w2 := newTestWriter(t, wh)
	write(t, w2.writer, 2)
	if err := w2.Commit(prepare(t, w2, 1)); err != nil {
		t.Fatal(err)
	}
	if _, rows := readTable(t, wh); !slices.Equal(rows, expectRows(1, 2)) {
		t.Fatalf("rows %v", rows)
	}

	tc := testContext(wh, nil)
	tc.Physical = types.Schema{{Name: "id", Type: types.IntType.WithNullable(false)}, {Name: "name", Type: types.StringType}}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := snk.NewWriter(0, 1)
	defer bad.Close()
	err = bad.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "column 'id' is long in the table, but the DDL's INT NOT NULL maps to int") {
		t.Fatalf("got %v", err)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{OptCatalogType: "glue"}, "Invalid value for option 'catalog-type'"},
		{map[string]string{OptFormatDefault: "orc"}, "Invalid value for option 'write.format.default'"},
		{map[string]string{OptFormatVersion: "3"}, "Expected one of [1, 2], but was: 3"},
		{map[string]string{OptUpsertEnabled: "true"}, "'write.upsert.enabled' = 'true' needs a PRIMARY KEY"},
		{map[string]string{"warehouse": "s3://bucket/wh"}, "a 'hadoop' catalog commits by renaming metadata files, which S3 cannot do atomically; use 'catalog-type' = 'sql' for an s3:// warehouse"},
		{map[string]string{"warehouse": "gs://bucket/wh"}, "unsupported file system scheme 'gs' in 'gs://bucket/wh' (supported: local paths, file://, and s3:// with 'catalog-type' = 'sql')"},
		{map[string]string{OptWarehouse: "relative/wh"}, "is not an absolute path"},
		{map[string]string{"write.distribution-mode": "hash"}, "write.distribution-mode"},
		{map[string]string{OptCatalogName: ""}, "'catalog-name'"},
		{map[string]string{OptCatalogImpl: "org.apache.iceberg.jdbc.JdbcCatalog"}, "option 'catalog-impl' (a Java catalog class) is not supported"},
		{map[string]string{OptURI: "thrift://localhost:9083"}, "option 'uri' is not used by a 'hadoop' catalog"},
		{map[string]string{OptPropertyVersion: "2"}, "Invalid value for option 'property-version'"},
		{map[string]string{OptCacheEnabled: "maybe"}, "'cache-enabled'"},
		{map[string]string{OptTargetFileSize: "0"}, "Invalid value for option 'write.target-file-size-bytes'"},
	} {
		_, err := NewFactory().CreateSink(testContext("/tmp/wh", tc.opts))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.opts, err, tc.want)
		}
	}
	tc := testContext("/tmp/wh", nil)
	tc.Physical = types.Schema{{Name: "a", Type: types.Type{Root: types.RootArray, Elem: &types.IntType}}}
	if _, err := NewFactory().CreateSink(tc); err == nil || !strings.Contains(err.Error(), "column 'a'") {
		t.Errorf("ARRAY column: %v", err)
	}
}

// 'catalog-database' and 'catalog-table' name the Iceberg table,
// 'format-version' is the created table's, and
// 'write.target-file-size-bytes' rolls data files within a checkpoint.
func TestSinkTableOptions(t *testing.T) {
	wh := t.TempDir()
	snk, err := NewFactory().CreateSink(testContext(wh, map[string]string{
		"catalog-database": "db1", "catalog-table": "events", "format-version": "1",
		"write.target-file-size-bytes": "1", "write.format.default": "parquet", "property-version": "1", "cache-enabled": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	w := openPipe(t, snk)
	for i := range int64(3) {
		write(t, w.writer, 2*i+1, 2*i+2)
	}
	if err := w.Commit(prepare(t, w, 1)); err != nil {
		t.Fatal(err)
	}
	cat, err := hadoop.NewCatalog("check", "file://"+wh, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db1", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if v := tbl.Metadata().Version(); v != 1 {
		t.Fatalf("format version %d", v)
	}
	s := tbl.CurrentSnapshot()
	// A 1-byte target closes the file after every record batch: 3 files.
	if got := s.Summary.Properties["added-data-files"]; got != "3" {
		t.Fatalf("added-data-files %s, summary %v", got, s.Summary)
	}
	if got := s.Summary.Properties["added-records"]; got != "6" {
		t.Fatalf("added-records %s", got)
	}
}

// Every supported Flink type is written as the Iceberg type Flink maps it
// to and reads back as the value written (expected values worked out from
// the engine's representation: DATE in days, TIME in milliseconds of the
// day, TIMESTAMP in epoch milliseconds plus nanoseconds).
func TestSinkTypes(t *testing.T) {
	wh := t.TempDir()
	tc := testContext(wh, nil)
	tc.Physical = types.Schema{
		{Name: "b", Type: types.BooleanType},
		{Name: "ti", Type: types.TinyIntType},
		{Name: "si", Type: types.SmallIntType},
		{Name: "i", Type: types.IntType},
		{Name: "f", Type: types.FloatType},
		{Name: "d", Type: types.DoubleType},
		{Name: "dec", Type: types.Type{Root: types.RootDecimal, Precision: 10, Scale: 2}},
		{Name: "c", Type: types.Type{Root: types.RootChar, Precision: 3}},
		{Name: "bin", Type: types.Type{Root: types.RootBinary, Precision: 4}},
		{Name: "vb", Type: types.Type{Root: types.RootVarBinary, Precision: types.MaxLength}},
		{Name: "dt", Type: types.Type{Root: types.RootDate}},
		{Name: "tm", Type: types.Type{Root: types.RootTime}},
		{Name: "ts", Type: types.TimestampType(6)},
		{Name: "ltz", Type: types.Type{Root: types.RootTimestampLTZ, Precision: 3}},
	}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	w := openPipe(t, snk)
	ctx := context.Background()
	b := types.NewBatch(len(tc.Physical), 2)
	b.AppendRow(types.Insert, types.Row{
		types.Bool(true), types.Int(-7), types.Int(300), types.Int(70000), types.Float(1.5), types.Float(-2.25),
		types.DecimalFromUnscaled(12345, 2), types.String("abc"), types.Bytes([]byte("ab")), types.Bytes([]byte{0, 1, 2}),
		types.Int(19723), types.Int(3723004), types.Timestamp(1704067200123, 456000), types.TimestampMillis(1704067200123),
	})
	b.AppendRow(types.Insert, make(types.Row, len(tc.Physical))) // all NULL
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(prepare(t, w, 1)); err != nil {
		t.Fatal(err)
	}
	cat, err := hadoop.NewCatalog("check", "file://"+wh, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"default_database", "t"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range tbl.Schema().Fields() {
		got = append(got, f.Name+":"+f.Type.String())
	}
	want := []string{"b:boolean", "ti:int", "si:int", "i:int", "f:float", "d:double", "dec:decimal(10, 2)", "c:string",
		"bin:fixed[4]", "vb:binary", "dt:date", "tm:time", "ts:timestamp", "ltz:timestamptz"}
	if !slices.Equal(got, want) {
		t.Fatalf("schema %v\nwant %v", got, want)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 2 {
		t.Fatalf("%d rows", at.NumRows())
	}
	var vals, nulls []string
	for i := 0; i < int(at.NumCols()); i++ {
		col := at.Column(i).Data().Chunk(0)
		vals = append(vals, col.ValueStr(0))
		if col.IsNull(1) {
			nulls = append(nulls, at.Schema().Field(i).Name)
		}
	}
	wantVals := []string{"true", "-7", "300", "70000", "1.5", "-2.25", "123.45", "abc", "YWIAAA==", "AAEC",
		"2024-01-01", "01:02:03.004000", "2024-01-01T00:00:00.123456", "2024-01-01T00:00:00.123Z"} // Arrow prints ISO 8601
	if len(nulls) != len(want) {
		t.Errorf("NULL columns of row 2: %v", nulls)
	}
	for i := range wantVals {
		if vals[i] != wantVals[i] {
			t.Errorf("column %s: %q, want %q", want[i], vals[i], wantVals[i])
		}
	}
}

// Two writers and the one committer: each checkpoint's data files of both
// writers become one snapshot (two added files), and a writer with no rows
// before a barrier contributes nothing to it.
func TestParallelWritersOneCommitter(t *testing.T) {
	wh := t.TempDir()
	snk, err := NewFactory().CreateSink(testContext(wh, nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := openPipe(t, snk), openPipe(t, snk)
	c := a.c // b's committer stays unused: the planner makes one
	ws := []*writer{a.writer, b.writer}
	barrier := func(id exec.CheckpointID) {
		t.Helper()
		if err := handOver(c, ws, id); err != nil {
			t.Fatal(err)
		}
		cs, err := c.PrepareCommit(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(cs); err != nil {
			t.Fatal(err)
		}
	}
	write(t, a.writer, 1, 3)
	write(t, b.writer, 2, 4)
	barrier(1)
	write(t, a.writer, 5)
	barrier(2)
	tbl, rows := readTable(t, wh)
	if want := expectRows(1, 2, 3, 4, 5); !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	if got, want := snapshots(tbl), []string{"1:1", "2:2"}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	var added []string
	for _, s := range tbl.Metadata().Snapshots() {
		added = append(added, s.Summary.Properties["added-data-files"]+"/"+s.Summary.Properties["added-records"])
	}
	if want := []string{"2/4", "1/1"}; !slices.Equal(added, want) {
		t.Fatalf("added files/records per snapshot %v, want %v", added, want)
	}
}

// PARTITIONED BY (name) creates an identity-partitioned table: each
// checkpoint writes one data file per distinct name (NULL is a partition
// too), every file carries its partition value through the committable,
// and the table reads back whole. A DATE key keeps its type (an Avro date
// in the manifest, an iceberg.Date when read back).
func TestSinkIdentityPartitions(t *testing.T) {
	wh := t.TempDir()
	tc := testContext(wh, nil)
	tc.Physical = types.Schema{
		{Name: "id", Type: types.BigIntType.WithNullable(false)},
		{Name: "name", Type: types.StringType},
		{Name: "d", Type: types.Type{Root: types.RootDate}},
	}
	tc.PartitionKeys = []int{1, 2}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	w := openPipe(t, snk)
	b := types.NewBatch(3, 6)
	for _, r := range []struct {
		id   int64
		name string
		day  int64
	}{{1, "a", 100}, {2, "b", 100}, {3, "a", 100}, {4, "a", 101}, {5, "", 100}} {
		name := types.String(r.name)
		if r.name == "" {
			name = types.NullValue
		}
		b.AppendRow(types.Insert, types.Row{types.Int(r.id), name, types.Int(r.day)})
	}
	if err := w.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	cs := prepare(t, w, 1)
	// The committable survives a restore: a new committer commits it.
	w2 := newSinkPipe(t, snk)
	if err := w2.Commit(cs); err != nil {
		t.Fatal(err)
	}
	tbl, rows := readTable(t, wh)
	if want := []string{"1,a", "2,b", "3,a", "4,a", "5,NULL"}; !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	spec := tbl.Spec()
	if spec.NumFields() != 2 || spec.Field(0).Name != "name" || spec.Field(1).Name != "d" {
		t.Fatalf("partition spec %s", spec.String())
	}
	if _, ok := spec.Field(0).Transform.(iceberg.IdentityTransform); !ok {
		t.Fatalf("transform %s", spec.Field(0).Transform)
	}
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, task := range tasks {
		p := task.File.Partition()
		parts = append(parts, fmt.Sprintf("%v/%v:%d", p[spec.Field(0).FieldID], p[spec.Field(1).FieldID], task.File.Count()))
		if d, ok := p[spec.Field(1).FieldID].(iceberg.Date); !ok {
			t.Fatalf("date partition value %T", d)
		}
	}
	slices.Sort(parts)
	// (a,100): ids 1,3; (a,101): 4; (b,100): 2; (NULL,100): 5.
	if want := []string{"<nil>/100:1", "a/100:2", "a/101:1", "b/100:1"}; !slices.Equal(parts, want) {
		t.Fatalf("files by partition %v, want %v", parts, want)
	}
	// Partition pruning uses the values: name = 'a' plans 2 files.
	pruned, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("name"), "a"))).PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != 2 {
		t.Fatalf("name = 'a' plans %d files, want 2", len(pruned))
	}

	tc.Physical = append(tc.Physical, types.Column{Name: "dec", Type: types.Type{Root: types.RootDecimal, Precision: 10, Scale: 2}})
	tc.PartitionKeys = []int{3}
	if _, err := NewFactory().CreateSink(tc); err == nil || !strings.Contains(err.Error(), "PARTITIONED BY column 'dec' of type DECIMAL(10, 2) is not supported") {
		t.Fatalf("DECIMAL partition key: %v", err)
	}
}

// 'catalog-type' = 'sql' keeps the table in iceberg-go's sql catalog (the
// tables of Iceberg's JdbcCatalog) on a SQLite file, its files under the
// warehouse: two writers and the committer each open the catalog, and a
// catalog opened independently on the same file finds the committed
// snapshot.
func TestSinkSQLCatalog(t *testing.T) {
	dir := t.TempDir()
	wh, dbFile := dir+"/wh", dir+"/catalog.db"
	tc := testContext(wh, map[string]string{OptCatalogType: CatalogSQL, OptURI: "jdbc:sqlite:" + dbFile, OptCatalogDatabase: "db"})
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	a, b := openPipe(t, snk), openPipe(t, snk)
	write(t, a.writer, 1, 2)
	write(t, b.writer, 3)
	if err := handOver(a.c, []*writer{a.writer, b.writer}, 1); err != nil {
		t.Fatal(err)
	}
	cs, err := a.c.PrepareCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.c.Commit(cs); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", dbFile)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := isql.NewCatalog("hc", db, isql.SQLite, iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cat.Close(); db.Close() }()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tbl.Location(), "file://"+wh+"/") {
		t.Fatalf("table location %s, want under %s", tbl.Location(), wh)
	}
	if got, want := snapshots(tbl), []string{"1:1"}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	if n := tbl.CurrentSnapshot().Summary.Properties["added-records"]; n != "3" {
		t.Fatalf("added-records %s, want 3", n)
	}
}

func TestCatalogTypesRefused(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{OptCatalogType: CatalogREST, OptURI: "http://localhost:8181"}, "'catalog-type' = 'rest' is not supported yet (no REST catalog server runs in the tests here to verify it); the supported catalog types are 'hadoop' and 'sql'"},
		{map[string]string{OptCatalogType: CatalogHive}, "'catalog-type' = 'hive' is not supported (no Hive metastore client in Go); the supported catalog types are 'hadoop' and 'sql'"},
		{map[string]string{OptCatalogType: "glue"}, "Expected one of [hive, hadoop, rest, sql], but was: glue"},
		{map[string]string{OptCatalogType: CatalogSQL}, "option 'uri' is required for a 'sql' catalog"},
		{map[string]string{OptCatalogType: CatalogSQL, OptURI: "jdbc:mysql://h/db"}, "unsupported catalog database URI 'jdbc:mysql://h/db' (supported: jdbc:sqlite:<file>, jdbc:postgresql://host:port/database)"},
	} {
		_, err := NewFactory().CreateSink(testContext("/tmp/wh", tc.opts))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// An s3:// warehouse (with a sql catalog) writes data files and metadata
// through iceberg-go's S3 file IO to an S3-compatible server over HTTP,
// configured by the session's s3.* settings as the checkpoint storage is;
// the committed snapshot's files are objects in the bucket.
func TestSinkS3Warehouse(t *testing.T) {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	fs := map[string]string{
		checkpoint.OptS3Endpoint: srv.URL, checkpoint.OptS3PathStyle: "true",
		checkpoint.OptS3AccessKey: "test-access", checkpoint.OptS3SecretKey: "test-secret",
	}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test-access", "test-secret", ""),
	})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("lake")}); err != nil {
		t.Fatal(err)
	}
	tc := testContext("s3://lake/wh", map[string]string{OptCatalogType: CatalogSQL, OptURI: "jdbc:sqlite:" + t.TempDir() + "/catalog.db"})
	tc.FileSystem = fs
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	w := openPipe(t, snk)
	write(t, w.writer, 1, 2, 3)
	if err := w.Commit(prepare(t, w, 1)); err != nil {
		t.Fatal(err)
	}
	write(t, w.writer, 4)
	if err := w.Commit(prepare(t, w, 2)); err != nil {
		t.Fatal(err)
	}
	tbl := w.c.tbl
	if !strings.HasPrefix(tbl.Location(), "s3://lake/wh/") {
		t.Fatalf("table location %s", tbl.Location())
	}
	if got, want := snapshots(tbl), []string{"1:1", "2:2"}; !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 4 {
		t.Fatalf("%d rows read back from S3, want 4", at.NumRows())
	}
	// Two data files, each an object in the bucket.
	out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lake"), Prefix: aws.String("wh/")})
	if err != nil {
		t.Fatal(err)
	}
	var parquet int
	for _, o := range out.Contents {
		if strings.HasSuffix(*o.Key, ".parquet") {
			parquet++
		}
	}
	if parquet != 2 {
		t.Fatalf("%d parquet objects in the bucket, want 2", parquet)
	}

	tc.FileSystem = map[string]string{checkpoint.OptS3AccessKey: "only-one"}
	if _, err := NewFactory().CreateSink(tc); err == nil || !strings.Contains(err.Error(), "options 's3.access-key' and 's3.secret-key' must be set together") {
		t.Fatalf("half the credentials: %v", err)
	}
}

// An updating query into a format-version 2 table with a PRIMARY KEY is
// written in upsert mode: per checkpoint one equality delete per key
// touched and the key's last row. iceberg-go's own scan applies the
// deletes by sequence number (a delete of snapshot n removes the key's rows
// of snapshots before n, not the row written with it); the table read back
// equals the materialized changelog, worked out by hand below.
func TestSinkUpsertEqualityDeletes(t *testing.T) {
	wh := t.TempDir()
	tc := testContext(wh, nil)
	tc.PrimaryKey = []int{0}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	if got := snk.AcceptedChangelogMode(types.Retract); got != types.Retract {
		t.Fatalf("accepted %v for an updating query", got)
	}
	w := openPipe(t, snk)
	change := func(kind types.RowKind, id int64, name string) {
		b := types.NewBatch(2, 1)
		b.AppendRow(kind, types.Row{types.Int(id), types.String(name)})
		if err := w.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(id exec.CheckpointID) {
		if err := w.Commit(prepare(t, w, id)); err != nil {
			t.Fatal(err)
		}
	}
	change(types.Insert, 1, "a")
	change(types.Insert, 2, "b")
	commit(1) // {1:a, 2:b}
	change(types.UpdateBefore, 1, "a")
	change(types.UpdateAfter, 1, "c")
	change(types.Delete, 2, "b")
	change(types.Insert, 3, "d")
	change(types.UpdateBefore, 3, "d")
	change(types.UpdateAfter, 3, "e") // updated within the checkpoint
	commit(2)                         // {1:c, 3:e}
	change(types.Insert, 2, "f")
	change(types.Delete, 1, "c")
	commit(3) // {2:f, 3:e}
	tbl, rows := readTable(t, wh)
	if want := []string{"2,f", "3,e"}; !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	var summary []string
	for _, s := range tbl.Metadata().Snapshots() {
		p := s.Summary.Properties
		summary = append(summary, fmt.Sprintf("%s data=%s eqdel=%s", p[propMaxCommittedCkp], p["added-data-files"], p["added-equality-deletes"]))
	}
	// Checkpoint 1 deletes keys 1 and 2 (none there yet) and writes 2 rows;
	// 2 deletes keys 1, 2, 3 and writes 1:c, 3:e; 3 deletes 2, 1 and writes 2:f.
	if want := []string{"1 data=1 eqdel=2", "2 data=1 eqdel=3", "3 data=1 eqdel=2"}; !slices.Equal(summary, want) {
		t.Fatalf("snapshots %v, want %v", summary, want)
	}

	// Without a primary key, or at format version 1, updates are refused.
	noKey, err := NewFactory().CreateSink(testContext(wh, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := noKey.AcceptedChangelogMode(types.Retract); got != types.InsertOnly {
		t.Fatalf("accepted %v without a primary key", got)
	}
	tc1 := testContext(wh, map[string]string{OptFormatVersion: "1", OptUpsertEnabled: "true"})
	tc1.PrimaryKey = []int{0}
	if _, err := NewFactory().CreateSink(tc1); err == nil || !strings.Contains(err.Error(), "'write.upsert.enabled' = 'true' needs 'format-version' = '2' (equality deletes), but it is 1") {
		t.Fatalf("upsert on v1: %v", err)
	}
}

// Upsert into a PARTITIONED BY table: the partition column is part of the
// primary key (as Flink's Iceberg sink requires), so a key's rows and its
// equality deletes are in one partition, and each checkpoint writes one
// delete file per partition it touched. The primary key is declared in an
// order other than the table's (id, region against region, id), which the
// delete files must not mind. Expected rows and file counts worked out by
// hand below.
func TestSinkUpsertPartitioned(t *testing.T) {
	wh := t.TempDir()
	tc := testContext(wh, nil)
	tc.Physical = types.Schema{
		{Name: "region", Type: types.StringType.WithNullable(false)},
		{Name: "id", Type: types.BigIntType.WithNullable(false)},
		{Name: "name", Type: types.StringType},
	}
	tc.PrimaryKey = []int{1, 0}
	tc.PartitionKeys = []int{0}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	if got := snk.AcceptedChangelogMode(types.Retract); got != types.Retract {
		t.Fatalf("accepted %v for an updating query", got)
	}
	w := openPipe(t, snk)
	change := func(kind types.RowKind, region string, id int64, name string) {
		b := types.NewBatch(3, 1)
		b.AppendRow(kind, types.Row{types.String(region), types.Int(id), types.String(name)})
		if err := w.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(id exec.CheckpointID) {
		if err := w.Commit(prepare(t, w, id)); err != nil {
			t.Fatal(err)
		}
	}
	change(types.Insert, "eu", 1, "a")
	change(types.Insert, "us", 1, "b")
	change(types.Insert, "eu", 2, "c")
	commit(1) // {eu1:a, us1:b, eu2:c}
	change(types.UpdateBefore, "eu", 1, "a")
	change(types.UpdateAfter, "eu", 1, "x")
	change(types.Delete, "us", 1, "b")
	change(types.Insert, "us", 3, "d")
	commit(2) // {eu1:x, eu2:c, us3:d}
	change(types.Delete, "eu", 2, "c")
	change(types.Insert, "us", 1, "e")
	commit(3) // {eu1:x, us1:e, us3:d}

	tbl, rows := scanRows(t, wh, func(rec arrow.RecordBatch, i int) string {
		return fmt.Sprintf("%s,%d,%s", rec.Column(0).(*array.String).Value(i), rec.Column(1).(*array.Int64).Value(i), rec.Column(2).(*array.String).Value(i))
	})
	if want := []string{"eu,1,x", "us,1,e", "us,3,d"}; !slices.Equal(rows, want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	var summary []string
	for _, s := range tbl.Metadata().Snapshots() {
		p := s.Summary.Properties
		summary = append(summary, fmt.Sprintf("%s data=%s delfiles=%s eqdel=%s", p[propMaxCommittedCkp], p["added-data-files"], p["added-equality-delete-files"], p["added-equality-deletes"]))
	}
	// 1: rows in eu (2) and us (1), deletes of eu {1,2} and us {1};
	// 2: rows eu1:x and us3:d, deletes of eu {1} and us {1,3};
	// 3: the row us1:e, deletes of eu {2} and us {1}.
	want := []string{"1 data=2 delfiles=2 eqdel=3", "2 data=2 delfiles=2 eqdel=3", "3 data=1 delfiles=2 eqdel=2"}
	if !slices.Equal(summary, want) {
		t.Fatalf("snapshots %v, want %v", summary, want)
	}
	// Every delete file is in the partition of the keys it holds.
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	fid := spec.Field(0).FieldID
	for _, task := range tasks {
		for _, d := range task.EqualityDeleteFiles {
			if got, want := d.Partition()[fid], task.File.Partition()[fid]; got != want {
				t.Errorf("data file of partition %v has a delete file of partition %v", want, got)
			}
		}
	}
}

// Upsert needs every partition column in the primary key, with Flink's
// message; the check applies to the DDL's PARTITIONED BY and to the
// partitions of an existing table the DDL does not name.
func TestSinkUpsertPartitionNotInKey(t *testing.T) {
	wh := t.TempDir()
	schema := types.Schema{
		{Name: "region", Type: types.StringType.WithNullable(false)},
		{Name: "id", Type: types.BigIntType.WithNullable(false)},
	}
	const msg = "In UPSERT mode, partition field '1000: region: identity(1)' should be included in equality fields: '[id]'"
	tc := testContext(wh, map[string]string{OptUpsertEnabled: "true"})
	tc.Physical, tc.PrimaryKey, tc.PartitionKeys = schema, []int{1}, []int{0}
	if _, err := NewFactory().CreateSink(tc); err == nil || !strings.Contains(err.Error(), msg) {
		t.Fatalf("upsert with the partition column outside the key: %v", err)
	}
	tc = testContext(wh, nil)
	tc.Physical, tc.PrimaryKey, tc.PartitionKeys = schema, []int{1}, []int{0}
	snk, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	if got := snk.AcceptedChangelogMode(types.Retract); got != types.InsertOnly {
		t.Fatalf("accepted %v for an updating query", got)
	}
	if hint := snk.(interface{ UpdatingInputHint() string }).UpdatingInputHint(); !strings.Contains(hint, msg) {
		t.Fatalf("hint %q", hint)
	}

	// The table is created partitioned by an append-mode sink; a DDL
	// without PARTITIONED BY then writes it in upsert mode.
	w := openPipe(t, snk)
	w.Close()
	tc = testContext(wh, map[string]string{OptUpsertEnabled: "true"})
	tc.Physical, tc.PrimaryKey = schema, []int{1}
	snk, err = NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	p := newSinkPipe(t, snk)
	if err := p.Open(context.Background()); err == nil || !strings.Contains(err.Error(), msg) {
		t.Fatalf("upsert into an existing table partitioned outside the key: %v", err)
	}
}
