package filesystem

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Sink is a configured filesystem table being written.
type Sink struct {
	cfg         *tableConfig
	extension   string
	parallelism int
	policy      rollingPolicy
	// tag marks this table's hidden files (a hash of its identifier), so a
	// restore removes only its own leftovers, never those of another table
	// writing to the same directory.
	tag  string
	now  func() time.Time    // the clock of the time-based rolling policy
	mode types.ChangelogMode // what the format encodes

	// overwrite (INSERT OVERWRITE): the table's visible files as they were
	// when the writer was made are deleted before it commits its own
	// files, so the committed output replaces them. The planner runs one
	// writer (SinkNode.Overwrite).
	overwrite bool
	listOld   sync.Once
	old       []string
	oldErr    error
}

// ApplyOverwrite implements connectors.Overwritable (INSERT OVERWRITE, in
// batch mode; the table is not partitioned, so all of it is replaced).
func (s *Sink) ApplyOverwrite() error {
	s.overwrite = true
	return nil
}

// listOldFiles records, once, the visible files of the table: what
// INSERT OVERWRITE replaces. Hidden files and directories (. or _) are
// skipped, as the source skips them.
func (s *Sink) listOldFiles() error {
	s.listOld.Do(func() {
		err := filepath.WalkDir(s.cfg.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && path == s.cfg.dir {
					return filepath.SkipAll
				}
				return err
			}
			if path == s.cfg.dir {
				return nil
			}
			if hidden(d.Name()) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				s.old = append(s.old, path)
			}
			return nil
		})
		if err != nil {
			s.oldErr = fmt.Errorf("filesystem table %s: listing the files INSERT OVERWRITE replaces: %w", s.cfg.name, err)
		}
	})
	return s.oldErr
}

// removeOldFiles deletes the files INSERT OVERWRITE replaces; every writer
// does so before it commits (a file already gone was deleted by another).
func (s *Sink) removeOldFiles() error {
	if !s.overwrite {
		return nil
	}
	for _, p := range s.old {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filesystem table %s: INSERT OVERWRITE: removing %s: %w", s.cfg.name, p, err)
		}
	}
	return nil
}

// sinkTag is the tag of a table's hidden files: 8 hex digits of the SHA-256
// of its identifier.
func sinkTag(table string) string {
	sum := sha256.Sum256([]byte(table))
	return hex.EncodeToString(sum[:4])
}

// rollingPolicy says when an in-progress file is closed and becomes pending.
// Time-based conditions are checked when rows arrive, before they are
// written, so no row goes into a file past its rollover or inactivity
// interval; a file waiting to roll is closed at the next checkpoint anyway.
// That is why 'sink.rolling-policy.check-interval', which in Flink bounds how
// late a timer notices such a file, has no effect here.
type rollingPolicy struct {
	fileSize   int64
	rollover   time.Duration
	inactivity time.Duration
}

// AcceptedChangelogMode implements connectors.Sink: files are append-only,
// so the sink takes what the format encodes: inserts, or a full changelog
// written as change events (debezium-json, canal-json, maxwell-json).
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	return s.mode
}

// Parallelism implements connectors.Sink.
func (s *Sink) Parallelism(defaultParallelism int) int {
	if s.parallelism > 0 {
		return s.parallelism
	}
	return defaultParallelism
}

// WritableMetadata implements connectors.Sink.
func (s *Sink) WritableMetadata() map[string]types.Type { return nil }

// NewWriter implements connectors.Sink.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	if s.overwrite {
		if err := s.listOldFiles(); err != nil {
			return nil, err
		}
	}
	enc, err := connectors.CreateEncoder(s.cfg.tc, OptFormat, s.cfg.tc.Physical)
	if err != nil {
		return nil, err
	}
	// A prefix of its own per writer: part file names never clash between
	// attempts of a job that restarts from a checkpoint.
	w := &Writer{sink: s, enc: enc, subtask: subtask, nphys: len(s.cfg.tc.Physical),
		partPrefix: "part-" + newUUID()}
	if ce, ok := enc.(formats.ChangelogEncoder); ok && !s.mode.IsInsertOnly() {
		w.changes = ce
	}
	return w, nil
}

// PendingFile is a closed part file that is not yet visible: committing it
// renames InProgress (a hidden name) to Final. It is what a checkpoint
// records as the writer's committable.
type PendingFile struct {
	InProgress string
	Final      string
}

// committableVersion tags the layout of an encoded PendingFile.
const committableVersion = 1

// Encode returns the committable of p.
func (p PendingFile) Encode() exec.Committable {
	b := []byte{committableVersion}
	b = appendString(b, p.InProgress)
	b = appendString(b, p.Final)
	return b
}

// DecodePendingFile reads a committable written by Encode.
func DecodePendingFile(c exec.Committable) (PendingFile, error) {
	var p PendingFile
	if len(c) == 0 || c[0] != committableVersion {
		return p, fmt.Errorf("filesystem sink: unknown committable %s", prefix(c))
	}
	rest := c[1:]
	var ok bool
	if p.InProgress, rest, ok = readString(rest); ok {
		p.Final, rest, ok = readString(rest)
	}
	if !ok || len(rest) != 0 || p.InProgress == "" || p.Final == "" {
		return p, fmt.Errorf("filesystem sink: malformed committable %s", prefix(c))
	}
	return p, nil
}

// Writer writes one subtask's part files with Flink's file sink protocol, a
// two-phase commit tied to checkpoints:
//
//   - rows go to a hidden in-progress file, .<final name>.inprogress.<uuid>;
//     the rolling policy closes it (it becomes pending) and opens the next;
//   - PrepareCommit (at a checkpoint barrier) closes the in-progress file and
//     hands over every pending file as a committable: hidden name and final
//     name;
//   - Commit (when the checkpoint completed, and again on restore) renames
//     pending files to their final names; a pending file that is gone while
//     its final file exists was committed before;
//   - Abort deletes pending files no checkpoint will commit.
//
// Final names are part-<uuid>-<subtask>-<n><extension>, with a uuid per
// writer, so restarts never reuse a name. After a restore (the runtime
// commits the restored committables before Open), Open deletes the hidden
// files this subtask left behind: they hold rows written after the restored
// checkpoint, which will be written again.
//
// Without checkpoints Finish commits everything itself. Once the writer
// takes part in checkpoints (PrepareCommit was called, it was restored, or
// CommitOnCheckpoint was called) Finish only closes the last file; the final
// checkpoint of the bounded job commits it.
type Writer struct {
	sink       *Sink
	enc        formats.Encoder
	changes    formats.ChangelogEncoder // enc of a changelog format
	subtask    int
	nphys      int
	partPrefix string

	counter  int // number of the next part file
	file     *os.File
	bw       *bufio.Writer
	current  PendingFile
	size     int64
	opened   time.Time
	lastData time.Time
	pending  []PendingFile
	buf      []byte

	isOpen     bool
	restored   bool // Commit or Abort came before Open: a restore
	checkpoint bool // commits are left to checkpoints
}

var _ exec.TwoPhaseCommitWriter = (*Writer)(nil)

// CommitOnCheckpoint tells the writer that the job checkpoints, so Finish
// must leave the last files to the final checkpoint instead of committing
// them. A runtime calls it before Open; without it the writer assumes so
// from the first PrepareCommit or restore.
func (w *Writer) CommitOnCheckpoint() { w.checkpoint = true }

// Open implements exec.SinkWriter.
func (w *Writer) Open(context.Context) error {
	if err := os.MkdirAll(w.sink.cfg.dir, 0o755); err != nil {
		return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
	}
	w.isOpen = true
	if w.restored {
		if err := w.removeLeftovers(); err != nil {
			return err
		}
	}
	return nil
}

// removeLeftovers deletes the hidden part files of this subtask left by
// earlier attempts. The restored committables were committed already, so
// every such file holds rows after the restored checkpoint.
func (w *Writer) removeLeftovers() error {
	entries, err := os.ReadDir(w.sink.cfg.dir)
	if err != nil {
		return fmt.Errorf("filesystem table %s: cleaning up after restore: %w", w.sink.cfg.name, err)
	}
	for _, e := range entries {
		if e.IsDir() || !w.isOwnLeftover(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(w.sink.cfg.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filesystem table %s: removing leftover part file: %w", w.sink.cfg.name, err)
		}
	}
	return nil
}

// isOwnLeftover reports whether name is an in-progress or pending file
// written by this table's sink in this subtask, by an attempt other than this
// writer's: .part-<uuid>-<subtask>-<n><ext>.inprogress.<tag>-<uuid>.
func (w *Writer) isOwnLeftover(name string) bool {
	const uuidLen = 36
	rest, ok := strings.CutPrefix(name, ".part-")
	if !ok || len(rest) < uuidLen+1 || rest[uuidLen] != '-' {
		return false
	}
	rest = rest[uuidLen+1:]
	i := strings.Index(rest, ".inprogress.")
	if i < 0 {
		return false
	}
	part := rest[:i] // <subtask>-<n><ext>
	sub, _, ok := strings.Cut(part, "-")
	return ok && sub == strconv.Itoa(w.subtask) &&
		strings.HasPrefix(rest[i+len(".inprogress."):], w.sink.tag+"-") &&
		!strings.HasPrefix(name, "."+w.partPrefix+"-")
}

// Write implements exec.SinkWriter.
func (w *Writer) Write(_ context.Context, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	now := w.sink.now()
	if w.file != nil && w.shouldRollOnTime(now) {
		if err := w.roll(); err != nil {
			return err
		}
	}
	for i, row := range b.Rows {
		k := b.Kinds[i]
		if k != types.Insert && w.changes == nil {
			return fmt.Errorf("filesystem table %s: the filesystem sink only accepts inserts, but got a %s row", w.sink.cfg.name, k)
		}
		var err error
		if w.changes != nil {
			w.buf, err = w.changes.EncodeChangelog(w.buf[:0], k, row[:w.nphys])
		} else {
			w.buf, err = w.enc.Encode(w.buf[:0], row[:w.nphys])
		}
		if err != nil {
			return fmt.Errorf("filesystem table %s: encoding row: %w", w.sink.cfg.name, err)
		}
		if n := len(w.buf); n == 0 || w.buf[n-1] != '\n' {
			w.buf = append(w.buf, '\n')
		}
		if w.file == nil {
			if err := w.openFile(now); err != nil {
				return err
			}
		}
		if _, err := w.bw.Write(w.buf); err != nil {
			return fmt.Errorf("filesystem table %s: writing %s: %w", w.sink.cfg.name, w.current.InProgress, err)
		}
		w.size += int64(len(w.buf))
		if w.size >= w.sink.policy.fileSize {
			if err := w.roll(); err != nil {
				return err
			}
		}
	}
	w.lastData = now
	return nil
}

func (w *Writer) shouldRollOnTime(now time.Time) bool {
	p := w.sink.policy
	return (p.rollover > 0 && now.Sub(w.opened) >= p.rollover) ||
		(p.inactivity > 0 && now.Sub(w.lastData) >= p.inactivity)
}

func (w *Writer) openFile(now time.Time) error {
	s := w.sink
	name := w.partPrefix + "-" + strconv.Itoa(w.subtask) + "-" + strconv.Itoa(w.counter) + s.extension
	w.counter++
	w.current = PendingFile{
		InProgress: filepath.Join(s.cfg.dir, "."+name+".inprogress."+s.tag+"-"+newUUID()),
		Final:      filepath.Join(s.cfg.dir, name),
	}
	f, err := os.OpenFile(w.current.InProgress, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", s.cfg.name, err)
	}
	w.file, w.size, w.opened, w.lastData = f, 0, now, now
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 64<<10)
	} else {
		w.bw.Reset(f)
	}
	return nil
}

// roll closes the in-progress file; it becomes pending.
func (w *Writer) roll() error {
	if w.file == nil {
		return nil
	}
	f := w.file
	w.file = nil
	if err := w.bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("filesystem table %s: writing %s: %w", w.sink.cfg.name, w.current.InProgress, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("filesystem table %s: syncing %s: %w", w.sink.cfg.name, w.current.InProgress, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("filesystem table %s: closing %s: %w", w.sink.cfg.name, w.current.InProgress, err)
	}
	w.pending = append(w.pending, w.current)
	return nil
}

// PrepareCommit implements exec.TwoPhaseCommitWriter: it closes the
// in-progress file and returns every pending file not yet handed over.
func (w *Writer) PrepareCommit(exec.CheckpointID) ([]exec.Committable, error) {
	w.checkpoint = true
	if err := w.roll(); err != nil {
		return nil, err
	}
	out := make([]exec.Committable, len(w.pending))
	for i, p := range w.pending {
		out[i] = p.Encode()
	}
	w.pending = w.pending[:0]
	return out, nil
}

// Commit implements exec.TwoPhaseCommitWriter: pending files are renamed to
// their final names. It is idempotent, so committing again after a restore
// is safe.
func (w *Writer) Commit(committables []exec.Committable) error {
	if !w.isOpen {
		w.restored, w.checkpoint = true, true
	}
	files, err := decodeAll(committables)
	if err == nil && len(files) > 0 {
		err = w.sink.removeOldFiles()
	}
	if err == nil {
		err = CommitFiles(files)
	}
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
	}
	return nil
}

// Abort implements exec.TwoPhaseCommitWriter: the pending files are deleted.
// Files already committed are left alone.
func (w *Writer) Abort(committables []exec.Committable) error {
	if !w.isOpen {
		w.restored, w.checkpoint = true, true
	}
	files, err := decodeAll(committables)
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
	}
	for _, p := range files {
		if err := os.Remove(p.InProgress); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("filesystem table %s: aborting part file: %w", w.sink.cfg.name, err)
		}
	}
	return nil
}

func decodeAll(committables []exec.Committable) ([]PendingFile, error) {
	files := make([]PendingFile, 0, len(committables))
	for _, c := range committables {
		p, err := DecodePendingFile(c)
		if err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// CommitFiles renames pending files to their final names, skipping files
// already committed.
func CommitFiles(files []PendingFile) error {
	for _, p := range files {
		if err := os.Rename(p.InProgress, p.Final); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if _, statErr := os.Stat(p.Final); statErr == nil {
					continue // committed before
				}
			}
			return fmt.Errorf("committing part file: %w", err)
		}
	}
	return nil
}

// Finish implements exec.SinkWriter: close the current file, and without
// checkpoints commit everything.
func (w *Writer) Finish(context.Context) error {
	if err := w.roll(); err != nil {
		return err
	}
	if w.checkpoint {
		return nil // the final checkpoint commits w.pending
	}
	files := w.pending
	w.pending = w.pending[:0]
	if err := w.sink.removeOldFiles(); err != nil {
		return err
	}
	if err := CommitFiles(files); err != nil {
		return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
	}
	return nil
}

// Close implements exec.SinkWriter. An unfinished in-progress file is closed
// and left hidden; readers ignore it.
func (w *Writer) Close() error {
	if w.file != nil {
		err := w.file.Close()
		w.file = nil
		if err != nil {
			return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
		}
	}
	return nil
}
