package iceberg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math"
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
	"github.com/apache/iceberg-go/table"
)

// Sink is a configured iceberg table being written.
type Sink struct {
	cfg *config
}

var _ connectors.Sink = (*Sink)(nil)

// AcceptedChangelogMode implements connectors.Sink: the sink appends.
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	return types.InsertOnly
}

// UpdatingInputHint says what an updating query would need.
func (s *Sink) UpdatingInputHint() string {
	return fmt.Sprintf("The iceberg sink appends: updating input needs upsert mode ('%s' = 'true' on a '%s' = '2' table with a PRIMARY KEY, written as equality deletes), which is not supported yet.",
		OptUpsertEnabled, OptFormatVersion)
}

// Parallelism implements connectors.Sink: one writer, which is also the
// table's single committer, so that each checkpoint is one snapshot.
func (s *Sink) Parallelism(int) int { return 1 }

// WritableMetadata implements connectors.Sink.
func (s *Sink) WritableMetadata() map[string]types.Type { return nil }

// NewWriter implements connectors.Sink.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	return &writer{cfg: s.cfg, jobID: hex.EncodeToString(id[:])}, nil
}

// writer writes one subtask's rows into Parquet data files and commits them
// as Iceberg snapshots. It is a TwoPhaseCommitWriter: a checkpoint's data
// files are its committable, committed when the checkpoint completes.
type writer struct {
	cfg *config
	// jobID identifies this writer's commits in the snapshot summaries
	// (flink.job-id); a committable carries the id it was written under.
	jobID string
	ctx   context.Context
	log   exec.LogFunc

	cat   *hadoop.Catalog
	ident table.Identifier
	tbl   *table.Table

	schema  *arrow.Schema // the table's current schema, in its field order
	source  []int         // source[i]: the row column of arrow field i, -1 for none
	appends []appendFunc
	rb      *array.RecordBuilder

	seg *segment // the data files being written since the last barrier
}

var (
	_ exec.TwoPhaseCommitWriter = (*writer)(nil)
	_ exec.CommittableSizer     = (*writer)(nil)
	_ exec.LogReceiver          = (*writer)(nil)
)

// SetLog implements exec.LogReceiver.
func (w *writer) SetLog(l exec.LogFunc) { w.log = l }

func (w *writer) logf(format string, args ...any) {
	if w.log != nil {
		w.log(format, args...)
	}
}

// Open implements exec.SinkWriter.
func (w *writer) Open(ctx context.Context) error {
	w.ctx = ctx
	return w.ensureTable(ctx)
}

// ensureTable loads the table, creating it (and its namespace) from the
// DDL's schema when it does not exist, and prepares the row conversion.
func (w *writer) ensureTable(ctx context.Context) error {
	if w.tbl != nil {
		return nil
	}
	c := w.cfg
	if w.cat == nil {
		cat, err := hadoop.NewCatalog(c.catalogName, "file://"+c.warehouse, iceberg.Properties{})
		if err != nil {
			return fmt.Errorf("iceberg table %s: open catalog '%s' at %s: %w", c.name, c.catalogName, c.warehouse, err)
		}
		w.cat = cat
		w.ident = table.Identifier{c.database, c.table}
	}
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		tbl, err = w.create(ctx)
	}
	if err != nil {
		return fmt.Errorf("iceberg table %s: load %s.%s: %w", c.name, c.database, c.table, err)
	}
	if err := w.bind(tbl); err != nil {
		return fmt.Errorf("iceberg table %s (%s.%s in %s): %w", c.name, c.database, c.table, c.warehouse, err)
	}
	w.tbl = tbl
	return nil
}

func (w *writer) create(ctx context.Context) (*table.Table, error) {
	c := w.cfg
	ns := table.Identifier{c.database}
	if err := w.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
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
	tbl, err := w.cat.CreateTable(ctx, w.ident, sc, catalog.WithProperties(props))
	if err != nil {
		return nil, fmt.Errorf("create table: %w", err)
	}
	w.logf("[INFO] iceberg table %s: created %s.%s in %s (format-version %d)", c.name, c.database, c.table, c.warehouse, c.formatVersion)
	return tbl, nil
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
	for i, row := range b.Rows {
		if b.Kinds[i] != types.Insert {
			return fmt.Errorf("iceberg table %s: got a %s row; the sink appends insert-only input", w.cfg.name, b.Kinds[i].String())
		}
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
	}
	rec := w.rb.NewRecordBatch()
	if w.seg == nil {
		w.seg = w.startSegment()
	}
	return w.seg.add(ctx, rec)
}

// PrepareCommit implements exec.TwoPhaseCommitWriter: it closes the data
// files written since the previous barrier; their metadata is the
// checkpoint's committable (none when nothing was written).
func (w *writer) PrepareCommit(id exec.CheckpointID) ([]exec.Committable, error) {
	files, err := w.closeSegment()
	if err != nil || len(files) == 0 {
		return nil, err
	}
	if err := syncFiles(files); err != nil {
		return nil, fmt.Errorf("iceberg table %s: %w", w.cfg.name, err)
	}
	c, err := encodeCommittable(w.jobID, int64(id), files)
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

// HasOutput implements exec.CommittableSizer.
func (w *writer) HasOutput(c exec.Committable) bool {
	d, err := decodeCommittable(c)
	return err != nil || len(d.Files) > 0
}

// Commit implements exec.TwoPhaseCommitWriter: each committable becomes one
// snapshot, unless the table already has it (a commit repeated after a
// restore).
func (w *writer) Commit(cs []exec.Committable) error {
	ctx := w.ctx
	if ctx == nil {
		ctx = context.Background() // a restore commits before Open
	}
	if len(cs) == 0 {
		return nil
	}
	if err := w.ensureTable(ctx); err != nil {
		return err
	}
	for _, raw := range cs {
		c, err := decodeCommittable(raw)
		if err != nil {
			return fmt.Errorf("iceberg table %s: %w", w.cfg.name, err)
		}
		if err := w.commitOne(ctx, c); err != nil {
			return fmt.Errorf("iceberg table %s: commit checkpoint %d: %w", w.cfg.name, c.Checkpoint, err)
		}
	}
	return nil
}

func (w *writer) commitOne(ctx context.Context, c *committable) error {
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		return err
	}
	w.tbl = tbl
	if max, ok := maxCommittedCheckpoint(tbl, c.JobID); ok && max >= c.Checkpoint {
		w.logf("[INFO] iceberg table %s: checkpoint %d of job %s is already committed (snapshot up to checkpoint %d); skipping it", w.cfg.name, c.Checkpoint, c.JobID, max)
		return nil
	}
	files, err := c.dataFiles(tbl.Spec())
	if err != nil {
		return err
	}
	props := iceberg.Properties{propJobID: c.JobID, propMaxCommittedCkp: itoa(c.Checkpoint)}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, files, props); err != nil {
		return err
	}
	nt, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	w.tbl = nt
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
func (w *writer) Abort(cs []exec.Committable) error {
	if len(cs) == 0 {
		return nil
	}
	if err := w.ensureTable(context.Background()); err != nil {
		return err
	}
	fs, err := w.tbl.FS(context.Background())
	if err != nil {
		return err
	}
	var errs []error
	for _, raw := range cs {
		c, err := decodeCommittable(raw)
		if err != nil {
			return err
		}
		for _, f := range c.Files {
			errs = append(errs, fs.Remove(f.Path))
		}
	}
	return errors.Join(errs...)
}

// Finish implements exec.SinkWriter. Without checkpointing, what was
// written is committed as one snapshot at end of input (Flink's batch
// commit, under the largest checkpoint id); with checkpointing the final
// checkpoint committed everything already.
func (w *writer) Finish(ctx context.Context) error {
	files, err := w.closeSegment()
	if err != nil || len(files) == 0 {
		return err
	}
	if err := syncFiles(files); err != nil {
		return fmt.Errorf("iceberg table %s: %w", w.cfg.name, err)
	}
	c, err := encodeCommittable(w.jobID, math.MaxInt64, files)
	if err != nil {
		return err
	}
	return w.Commit([]exec.Committable{c})
}

// Close implements exec.SinkWriter: an open segment is abandoned (its
// files were never committed and are left as orphans, as Flink leaves
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
	if w.cat != nil {
		err := w.cat.Close()
		w.cat = nil
		return err
	}
	return nil
}

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
