package iceberg

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberg "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	isql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
)

// Sink is a configured iceberg table being written: parallel writers of
// data files and one committer of snapshots (connectors.CommittingSink).
type Sink struct {
	cfg *config
	// updating: the query's changes are written as equality deletes and
	// data files (upsert), decided at planning (AcceptedChangelogMode).
	updating bool
	// insertOnly: the query appends (set at planning too).
	insertOnly bool
}

var _ connectors.CommittingSink = (*Sink)(nil)

// AcceptedChangelogMode implements connectors.Sink: a table that can take
// equality deletes (a PRIMARY KEY, format version 2) takes updating input,
// as Flink's Iceberg sink does; it then writes in upsert mode, as it does
// for any input with 'write.upsert.enabled'.
func (s *Sink) AcceptedChangelogMode(requested types.ChangelogMode) types.ChangelogMode {
	s.insertOnly = requested.IsInsertOnly()
	if requested.IsInsertOnly() || s.cfg.canDelete("updating input") != nil {
		s.updating = s.cfg.upsert
		return types.InsertOnly
	}
	s.updating = true
	return types.Retract
}

// KeyedByPrimaryKey implements connectors.KeyedWriters: an insert-only
// query in upsert mode has its rows hashed to the writers by the primary
// key. (Updating input already arrives keyed by it: the planner
// materializes it by the sink's primary key when its upsert key differs.)
func (s *Sink) KeyedByPrimaryKey() bool { return s.cfg.upsert && s.insertOnly }

// UpdatingInputHint says what an updating query would need.
func (s *Sink) UpdatingInputHint() string {
	err := s.cfg.canDelete("updating input")
	return fmt.Sprintf("The iceberg sink writes updates as equality deletes: %v.", err)
}

// Parallelism implements connectors.Sink: the writers run at the input's
// parallelism (Flink's default for 'write-parallelism'); the committer at 1.
func (s *Sink) Parallelism(int) int { return 0 }

// WritableMetadata implements connectors.Sink.
func (s *Sink) WritableMetadata() map[string]types.Type { return nil }

// NewWriter implements connectors.Sink: one subtask's writer of data files.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	w := &writer{tableRef: tableRef{cfg: s.cfg}}
	if s.updating || s.cfg.upsert {
		w.upsert = newUpsertBuffer(len(s.cfg.schema))
	}
	return w, nil
}

// CommitterName implements connectors.CommittingSink.
func (s *Sink) CommitterName() string {
	return fmt.Sprintf("IcebergFilesCommitter(table=[%s])", s.cfg.name)
}

// NewCommitter implements connectors.CommittingSink.
func (s *Sink) NewCommitter() (exec.SinkWriter, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	return &committer{tableRef: tableRef{cfg: s.cfg}, jobID: hex.EncodeToString(id[:])}, nil
}

// tableRef is the table a writer or the committer works on, loaded (or
// created from the DDL's schema) on first use.
type tableRef struct {
	cfg   *config
	log   exec.LogFunc
	cat   catalog.Catalog
	ident table.Identifier
	tbl   *table.Table
}

// SetLog implements exec.LogReceiver.
func (r *tableRef) SetLog(l exec.LogFunc) { r.log = l }

func (r *tableRef) logf(format string, args ...any) {
	if r.log != nil {
		r.log(format, args...)
	}
}

// ensureTable loads the table, creating it (and its namespace) from the
// DDL's schema when it does not exist. Parallel writers may race to create
// it: the loser loads what the winner created.
func (r *tableRef) ensureTable(ctx context.Context) error {
	if r.tbl != nil {
		return nil
	}
	c := r.cfg
	if r.cat == nil {
		cat, err := openCatalog(c)
		if err != nil {
			return fmt.Errorf("iceberg table %s: open %s catalog '%s': %w", c.name, c.catalogType, c.catalogName, err)
		}
		r.cat = cat
		r.ident = table.Identifier{c.database, c.table}
	}
	tbl, err := r.cat.LoadTable(ctx, r.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		tbl, err = r.create(ctx)
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			tbl, err = r.cat.LoadTable(ctx, r.ident)
		}
	}
	if err != nil {
		return fmt.Errorf("iceberg table %s: load %s.%s: %w", c.name, c.database, c.table, err)
	}
	r.tbl = tbl
	return nil
}

func (r *tableRef) create(ctx context.Context) (*table.Table, error) {
	c := r.cfg
	ns := table.Identifier{c.database}
	if err := r.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", c.database, err)
	}
	sc, err := icebergSchema(c.schema, c.primaryKey)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{
		table.PropertyFormatVersion: itoa(int64(c.formatVersion)),
		table.WriteFormatDefaultKey: "parquet",
	}
	if c.targetSize > 0 {
		props[table.WriteTargetFileSizeBytesKey] = itoa(c.targetSize)
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if len(c.partitionKeys) > 0 {
		spec, err := identitySpec(sc, c.schema, c.partitionKeys)
		if err != nil {
			return nil, err
		}
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl, err := r.cat.CreateTable(ctx, r.ident, sc, opts...)
	if err != nil {
		return nil, fmt.Errorf("create table: %w", err)
	}
	r.logf("[INFO] iceberg table %s: created %s.%s in %s (format-version %d)", c.name, c.database, c.table, c.warehouse, c.formatVersion)
	return tbl, nil
}

// openCatalog opens the table's catalog: a hadoop catalog on the
// warehouse directory, or a sql catalog (iceberg-go's, the tables of
// Iceberg's JdbcCatalog) whose tables live under the warehouse.
func openCatalog(c *config) (catalog.Catalog, error) {
	wh := c.warehouse
	if c.local {
		wh = "file://" + wh
	}
	if c.catalogType != CatalogSQL {
		return hadoop.NewCatalog(c.catalogName, wh, iceberg.Properties{})
	}
	db, err := sql.Open(c.sqlDriver, c.sqlDSN)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{"warehouse": wh}
	maps.Copy(props, c.fileIO)
	cat, err := isql.NewCatalog(c.catalogName, db, c.sqlDialect, props)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &sqlCatalog{Catalog: cat, db: db}, nil
}

// sqlCatalog is a sql catalog with the database handle it owns.
type sqlCatalog struct {
	*isql.Catalog
	db *sql.DB
}

func (c *sqlCatalog) Close() error { return errors.Join(c.Catalog.Close(), c.db.Close()) }

func (r *tableRef) close() error {
	if r.cat == nil {
		return nil
	}
	var err error
	if cl, ok := r.cat.(io.Closer); ok {
		err = cl.Close()
	}
	r.cat = nil
	return err
}

// writer writes one subtask's rows into Parquet data files. At each
// barrier it closes them and hands their metadata downstream to the
// committer (exec.CommittableEmitter); it keeps no state of its own.
type writer struct {
	tableRef
	ctx context.Context

	schema  *arrow.Schema // the table's current schema, in its field order
	source  []int         // source[i]: the row column of arrow field i, -1 for none
	appends []appendFunc
	rb      *array.RecordBuilder

	seg *segment // the data files being written since the last barrier

	// upsert, in upsert mode: the last change of each key since the last
	// barrier, written at the barrier as one equality delete per key and
	// the rows of the keys that were not deleted.
	upsert *upsertBuffer
	keyBuf []byte
	keyRB  *array.RecordBuilder // the equality deletes' key columns
}

// upsertBuffer is a checkpoint's changes materialized by primary key.
// Each key touched gets an equality delete (which removes its rows of
// earlier snapshots, lower sequence numbers) and at most one data row
// (of this snapshot, which the deletes do not reach), so no position
// deletes are needed. Its size is the number of keys a checkpoint touches.
//
// Entries live in flat slices that are reused from one checkpoint to the
// next, and the index is keyed by a hash of the key's encoding (chained on
// collision), so buffering a row allocates nothing once the slices have
// grown to a checkpoint's key count.
type upsertBuffer struct {
	width  int
	seed   maphash.Seed
	index  map[uint64]int32 // hash of a key's encoding → its newest entry
	next   []int32          // entry → the previous entry of the same hash, -1 for none
	enc    []byte           // the entries' key encodings, one after another
	encEnd []int            // entry i's encoding ends at encEnd[i]
	values []types.Value    // entry i's last row is values[i*width:(i+1)*width]
	live   []bool           // false when the key's last change deleted it
}

func newUpsertBuffer(width int) *upsertBuffer {
	return &upsertBuffer{width: width, seed: maphash.MakeSeed(), index: map[uint64]int32{}}
}

func (u *upsertBuffer) len() int { return len(u.live) }

// row is entry i's last row.
func (u *upsertBuffer) row(i int) types.Row {
	return u.values[i*u.width : (i+1)*u.width : (i+1)*u.width]
}

// put records row, whose key encodes as key, as the key's last change.
func (u *upsertBuffer) put(key []byte, row types.Row, live bool) {
	h := maphash.Bytes(u.seed, key)
	head, ok := u.index[h]
	if ok {
		for i := head; i >= 0; i = u.next[i] {
			start := 0
			if i > 0 {
				start = u.encEnd[i-1]
			}
			if bytes.Equal(u.enc[start:u.encEnd[i]], key) {
				copy(u.row(int(i)), row)
				u.live[i] = live
				return
			}
		}
	} else {
		head = -1
	}
	u.index[h] = int32(len(u.live))
	u.next = append(u.next, head)
	u.enc = append(u.enc, key...)
	u.encEnd = append(u.encEnd, len(u.enc))
	u.values = append(u.values, row...)
	u.live = append(u.live, live)
}

// reset empties the buffer, keeping its memory.
func (u *upsertBuffer) reset() {
	clear(u.index)
	clear(u.values) // drop the references to the rows' strings
	u.next, u.enc, u.encEnd, u.values, u.live = u.next[:0], u.enc[:0], u.encEnd[:0], u.values[:0], u.live[:0]
}

var (
	_ exec.CommittableEmitter = (*writer)(nil)
	_ exec.LogReceiver        = (*writer)(nil)
)

// Open implements exec.SinkWriter.
func (w *writer) Open(ctx context.Context) error {
	w.ctx = ctx
	if err := w.ensureTable(ctx); err != nil {
		return err
	}
	if err := w.bind(w.tbl); err != nil {
		c := w.cfg
		return fmt.Errorf("iceberg table %s (%s.%s in %s): %w", c.name, c.database, c.table, c.warehouse, err)
	}
	return nil
}

// bind maps the DDL's columns onto the table's fields by name; each must
// have the type the DDL's column maps to. A table field the DDL lacks is
// written as NULL, so it must be optional.
func (w *writer) bind(tbl *table.Table) error {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	byName := make(map[string]int, len(w.cfg.schema))
	for i, col := range w.cfg.schema {
		byName[col.Name] = i
	}
	w.source = make([]int, len(sc.Fields()))
	w.appends = make([]appendFunc, len(sc.Fields()))
	used := 0
	for i, f := range tbl.Schema().Fields() {
		src, ok := byName[f.Name]
		if !ok {
			if f.Required {
				return fmt.Errorf("the table's required column '%s' is not in the DDL", f.Name)
			}
			w.source[i] = -1
			continue
		}
		used++
		want, err := icebergType(w.cfg.schema[src].Type)
		if err != nil {
			return fmt.Errorf("column '%s': %w", f.Name, err)
		}
		if !want.Equals(f.Type) {
			return fmt.Errorf("column '%s' is %s in the table, but the DDL's %s maps to %s", f.Name, f.Type, w.cfg.schema[src].Type, want)
		}
		w.source[i] = src
		if w.appends[i], err = appender(sc.Field(i).Type); err != nil {
			return fmt.Errorf("column '%s': %w", f.Name, err)
		}
	}
	if used != len(w.cfg.schema) {
		for _, col := range w.cfg.schema {
			if _, err := tbl.Schema().FindFieldByName(col.Name); !err {
				return fmt.Errorf("the DDL's column '%s' is not in the table", col.Name)
			}
		}
	}
	if w.upsert != nil {
		// The table may exist with partitions the DDL does not name.
		spec := tbl.Spec()
		if err := w.cfg.partitionsInKey(&spec, tbl.Schema()); err != nil {
			return err
		}
	}
	w.schema = sc
	w.rb = array.NewRecordBuilder(memory.DefaultAllocator, sc)
	return nil
}

// Write implements exec.SinkWriter: the batch becomes one Arrow record
// batch handed to the open segment's Parquet writer.
func (w *writer) Write(ctx context.Context, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if w.upsert != nil {
		w.buffer(b)
		return nil
	}
	for i, row := range b.Rows {
		if b.Kinds[i] != types.Insert {
			return fmt.Errorf("iceberg table %s: got a %s row; the sink appends insert-only input", w.cfg.name, b.Kinds[i].String())
		}
		if err := w.appendRow(row); err != nil {
			return err
		}
	}
	return w.addRecord(ctx)
}

// appendRow adds row to the record being built.
func (w *writer) appendRow(row types.Row) error {
	for f, src := range w.source {
		fb := w.rb.Field(f)
		if src < 0 || row[src].IsNull() {
			fb.AppendNull()
			continue
		}
		if err := w.appends[f](fb, row[src]); err != nil {
			w.rb.NewRecordBatch().Release() // drop the partial batch
			return fmt.Errorf("iceberg table %s: column '%s': %w", w.cfg.name, w.schema.Field(f).Name, err)
		}
	}
	return nil
}

// addRecord hands the record built so far to the open segment.
func (w *writer) addRecord(ctx context.Context) error {
	rec := w.rb.NewRecordBatch()
	if w.seg == nil {
		w.seg = w.startSegment()
	}
	return w.seg.add(ctx, rec)
}

// buffer applies b's changes to the upsert buffer.
func (w *writer) buffer(b *types.Batch) {
	for i, row := range b.Rows {
		w.keyBuf = w.keyBuf[:0]
		for _, k := range w.cfg.primaryKey {
			w.keyBuf = appendKeyValue(w.keyBuf, row[k])
		}
		k := b.Kinds[i]
		w.upsert.put(w.keyBuf, row, k == types.Insert || k == types.UpdateAfter)
	}
}

// appendKeyValue appends an unambiguous encoding of v: fixed-width kind,
// aux and number, the length-prefixed string, then a flag and, for a
// non-scalar value, its length-prefixed text.
func appendKeyValue(dst []byte, v types.Value) []byte {
	dst = append(dst, byte(v.K))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(v.Aux))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(v.N))
	dst = binary.AppendUvarint(dst, uint64(len(v.S)))
	dst = append(dst, v.S...)
	if v.X == nil {
		return append(dst, 0)
	}
	// A non-scalar value's text, length-prefixed (the prefix is patched
	// once the text is written).
	dst = append(dst, 1, 0, 0, 0, 0)
	at := len(dst)
	dst = fmt.Append(dst, v.X)
	binary.LittleEndian.PutUint32(dst[at-4:at], uint32(len(dst)-at))
	return dst
}

// flushUpsert writes the buffered changes: the live rows into the data
// segment, the keys as equality delete files (partitioned like the rows:
// the partition columns are part of the key, see partitionsInKey).
func (w *writer) flushUpsert(ctx context.Context) ([]iceberg.DataFile, error) {
	u := w.upsert
	if u.len() == 0 {
		return nil, nil
	}
	defer u.reset()
	rows := 0
	for i := range u.len() {
		if !u.live[i] {
			continue
		}
		if err := w.appendRow(u.row(i)); err != nil {
			return nil, err
		}
		if rows++; rows == types.DefaultBatchSize {
			if err := w.addRecord(ctx); err != nil {
				return nil, err
			}
			rows = 0
		}
	}
	if rows > 0 {
		if err := w.addRecord(ctx); err != nil {
			return nil, err
		}
	}
	// The equality delete file holds the key columns, in the table's
	// field order (the order of iceberg-go's delete schema).
	var ids, cols []int
	var fields []arrow.Field
	for i, src := range w.source {
		if src >= 0 && slices.Contains(w.cfg.primaryKey, src) {
			ids = append(ids, w.tbl.Schema().Field(i).ID)
			fields = append(fields, w.schema.Field(i))
			cols = append(cols, i)
		}
	}
	if len(ids) != len(w.cfg.primaryKey) {
		return nil, fmt.Errorf("the table lacks a primary key column (it has %d of %d)", len(ids), len(w.cfg.primaryKey))
	}
	if w.keyRB == nil {
		w.keyRB = array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	}
	rb := w.keyRB
	for i := range u.len() {
		row := u.row(i)
		for j, c := range cols {
			if err := w.appends[c](rb.Field(j), row[w.source[c]]); err != nil {
				rb.NewRecordBatch().Release()
				return nil, fmt.Errorf("key column '%s': %w", fields[j].Name, err)
			}
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	dels, err := w.tbl.NewTransaction().WriteEqualityDeletes(ctx, ids, records)
	if err != nil {
		return nil, fmt.Errorf("write equality deletes: %w", err)
	}
	return dels, nil
}

// PrepareCommittables implements exec.CommittableEmitter: it closes the
// data files written since the previous barrier and makes them durable;
// their metadata is the committable (none when nothing was written).
func (w *writer) PrepareCommittables(id exec.CheckpointID) ([]exec.Committable, error) {
	var dels []iceberg.DataFile
	if w.upsert != nil {
		var err error
		if dels, err = w.flushUpsert(w.ctx); err != nil {
			return nil, fmt.Errorf("iceberg table %s: %w", w.cfg.name, err)
		}
	}
	files, err := w.closeSegment()
	if err != nil {
		return nil, err
	}
	files = append(files, dels...)
	if len(files) == 0 {
		return nil, nil
	}
	if w.cfg.local {
		// (An S3 object is durable once its upload completed.)
		if err := syncFiles(files); err != nil {
			return nil, fmt.Errorf("iceberg table %s: %w", w.cfg.name, err)
		}
	}
	c, err := encodeCommittable("", int64(id), files)
	if err != nil {
		return nil, err
	}
	return []exec.Committable{c}, nil
}

// syncFiles makes the data files durable before the checkpoint that
// commits them can complete: a snapshot must never reference a file a
// machine crash truncated. (iceberg-go closes them without fsync.)
func syncFiles(files []iceberg.DataFile) error {
	for _, df := range files {
		p := strings.TrimPrefix(df.FilePath(), "file://")
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("sync data file: %w", err)
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync data file %s: %w", p, err)
		}
	}
	if len(files) > 0 {
		// The directory entry too: the files were created since the last sync.
		d, err := os.Open(filepath.Dir(strings.TrimPrefix(files[0].FilePath(), "file://")))
		if err != nil {
			return fmt.Errorf("sync data directory: %w", err)
		}
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("sync data directory: %w", err)
		}
	}
	return nil
}

// Finish implements exec.SinkWriter: the sink operator takes the last data
// files with PrepareCommittables (at end of input or the final barrier).
func (w *writer) Finish(context.Context) error { return nil }

// Close implements exec.SinkWriter: an open segment is abandoned (its
// files were never handed over and are left as orphans, as Flink leaves
// them).
func (w *writer) Close() error {
	if w.seg != nil {
		w.seg.abort()
		w.seg = nil
	}
	if w.rb != nil {
		w.rb.Release()
		w.rb = nil
	}
	if w.keyRB != nil {
		w.keyRB.Release()
		w.keyRB = nil
	}
	return w.close()
}

// committer commits the writers' data files as one Iceberg snapshot per
// completed checkpoint (Flink's IcebergFilesCommitter). It is a
// TwoPhaseCommitWriter run at parallelism 1: its input rows are the
// writers' committables of the checkpoint whose barrier follows them; at
// the barrier they become one committable under this job's id, kept in
// the checkpoint until committed.
type committer struct {
	tableRef
	// jobID identifies this attempt's commits in the snapshot summaries
	// (flink.job-id); a committable carries the id it was prepared under,
	// so a restored one is checked against the right job's commits.
	jobID   string
	ctx     context.Context
	pending []dataFileMeta // received since the last barrier
}

var (
	_ exec.TwoPhaseCommitWriter = (*committer)(nil)
	_ exec.CommittableSizer     = (*committer)(nil)
	_ exec.LogReceiver          = (*committer)(nil)
)

// Open implements exec.SinkWriter.
func (c *committer) Open(ctx context.Context) error {
	c.ctx = ctx
	return nil
}

// Write implements exec.SinkWriter: b holds writers' committables.
func (c *committer) Write(_ context.Context, b *types.Batch) error {
	cs, err := exec.CommittablesOf(b)
	if err != nil {
		return err
	}
	for _, raw := range cs {
		d, err := decodeCommittable(raw)
		if err != nil {
			return fmt.Errorf("iceberg table %s: %w", c.cfg.name, err)
		}
		c.pending = append(c.pending, d.Files...)
	}
	return nil
}

// PrepareCommit implements exec.TwoPhaseCommitWriter: the data files of
// every writer received before barrier id are its one committable.
func (c *committer) PrepareCommit(id exec.CheckpointID) ([]exec.Committable, error) {
	if len(c.pending) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(committable{Version: committableVersion, JobID: c.jobID, Checkpoint: int64(id), Files: c.pending})
	if err != nil {
		return nil, err
	}
	c.pending = nil
	return []exec.Committable{b}, nil
}

// HasOutput implements exec.CommittableSizer.
func (c *committer) HasOutput(raw exec.Committable) bool {
	d, err := decodeCommittable(raw)
	return err != nil || len(d.Files) > 0
}

// Commit implements exec.TwoPhaseCommitWriter: each committable becomes one
// snapshot, unless the table already has it (a commit repeated after a
// restore).
func (c *committer) Commit(cs []exec.Committable) error {
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background() // a restore commits before Open
	}
	if len(cs) == 0 {
		return nil
	}
	if err := c.ensureTable(ctx); err != nil {
		return err
	}
	for _, raw := range cs {
		d, err := decodeCommittable(raw)
		if err != nil {
			return fmt.Errorf("iceberg table %s: %w", c.cfg.name, err)
		}
		if err := c.commitOne(ctx, d); err != nil {
			return fmt.Errorf("iceberg table %s: commit checkpoint %d: %w", c.cfg.name, d.Checkpoint, err)
		}
	}
	return nil
}

func (c *committer) commitOne(ctx context.Context, d *committable) error {
	tbl, err := c.cat.LoadTable(ctx, c.ident)
	if err != nil {
		return err
	}
	c.tbl = tbl
	if max, ok := maxCommittedCheckpoint(tbl, d.JobID); ok && max >= d.Checkpoint {
		c.logf("[INFO] iceberg table %s: checkpoint %d of job %s is already committed (snapshot up to checkpoint %d); skipping it", c.cfg.name, d.Checkpoint, d.JobID, max)
		return nil
	}
	files, err := d.dataFiles(tbl.Spec(), tbl.Schema())
	if err != nil {
		return err
	}
	props := iceberg.Properties{propJobID: d.JobID, propMaxCommittedCkp: itoa(d.Checkpoint)}
	var data, dels []iceberg.DataFile
	for _, f := range files {
		if f.ContentType() == iceberg.EntryContentData {
			data = append(data, f)
		} else {
			dels = append(dels, f)
		}
	}
	tx := tbl.NewTransaction()
	if len(dels) > 0 {
		// One snapshot with the rows and the deletes (Flink's RowDelta).
		if err := tx.NewRowDelta(props).AddRows(data...).AddDeletes(dels...).Commit(ctx); err != nil {
			return err
		}
	} else if err := tx.AddDataFiles(ctx, files, props); err != nil {
		return err
	}
	nt, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	c.tbl = nt
	return nil
}

// maxCommittedCheckpoint walks the snapshots back from the current one to
// the newest that jobID committed and returns its checkpoint id, as
// Flink's IcebergFilesCommitter does on restore.
func maxCommittedCheckpoint(tbl *table.Table, jobID string) (int64, bool) {
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[propJobID] == jobID {
			var n int64
			if _, err := fmt.Sscan(s.Summary.Properties[propMaxCommittedCkp], &n); err == nil {
				return n, true
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return 0, false
}

// Abort implements exec.TwoPhaseCommitWriter: the data files of
// committables no checkpoint will commit are deleted.
func (c *committer) Abort(cs []exec.Committable) error {
	if len(cs) == 0 {
		return nil
	}
	if err := c.ensureTable(context.Background()); err != nil {
		return err
	}
	fs, err := c.tbl.FS(context.Background())
	if err != nil {
		return err
	}
	var errs []error
	for _, raw := range cs {
		d, err := decodeCommittable(raw)
		if err != nil {
			return err
		}
		for _, f := range d.Files {
			errs = append(errs, fs.Remove(f.Path))
		}
	}
	return errors.Join(errs...)
}

// Finish implements exec.SinkWriter. Without checkpointing, what the
// writers handed over is committed as one snapshot at end of input
// (Flink's batch commit, under checkpoint id Long.MAX_VALUE); with
// checkpointing the final checkpoint committed everything already.
func (c *committer) Finish(context.Context) error {
	cs, err := c.PrepareCommit(exec.EndOfInputCheckpoint)
	if err != nil || len(cs) == 0 {
		return err
	}
	return c.Commit(cs)
}

// Close implements exec.SinkWriter.
func (c *committer) Close() error { return c.close() }

// segment is one run of iceberg-go's Parquet writer, fed record batches
// through a channel from the task and ended at the next barrier.
type segment struct {
	in      chan arrow.RecordBatch
	stopped chan struct{} // closed when the writer stopped taking batches
	done    chan struct{} // closed when the writer goroutine returned
	cancel  context.CancelFunc
	files   []iceberg.DataFile
	err     error
}

func (w *writer) startSegment() *segment {
	ctx, cancel := context.WithCancel(context.Background())
	s := &segment{in: make(chan arrow.RecordBatch, 4), stopped: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	records := func(yield func(arrow.RecordBatch, error) bool) {
		for rec := range s.in {
			if !yield(rec, nil) {
				return
			}
		}
	}
	var opts []table.WriteRecordOption
	if w.cfg.targetSize > 0 {
		opts = append(opts, table.WithTargetFileSize(w.cfg.targetSize))
	}
	tbl := w.tbl
	go func() {
		defer close(s.done)
		var out iter.Seq2[iceberg.DataFile, error] = table.WriteRecords(ctx, tbl, w.schema, records, opts...)
		for df, err := range out {
			if err != nil {
				s.err = err
				break
			}
			s.files = append(s.files, df)
		}
		close(s.stopped)
		// Release what the writer did not consume.
		for rec := range s.in {
			rec.Release()
		}
	}()
	return s
}

// add hands rec to the segment's writer.
func (s *segment) add(ctx context.Context, rec arrow.RecordBatch) error {
	select {
	case s.in <- rec:
		return nil
	case <-s.stopped:
		rec.Release()
		return fmt.Errorf("write data files: %w", s.failure())
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
}

func (s *segment) failure() error {
	if s.err != nil {
		return s.err
	}
	return errors.New("the Parquet writer stopped")
}

// closeSegment ends the open segment and returns its data files.
func (w *writer) closeSegment() ([]iceberg.DataFile, error) {
	s := w.seg
	if s == nil {
		return nil, nil
	}
	w.seg = nil
	close(s.in)
	<-s.done
	s.cancel()
	if s.err != nil {
		return nil, fmt.Errorf("iceberg table %s: write data files: %w", w.cfg.name, s.err)
	}
	return slices.Clip(s.files), nil
}

func (s *segment) abort() {
	s.cancel()
	close(s.in)
	<-s.done
}
