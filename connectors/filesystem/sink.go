package filesystem

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/sql/types"
)

// Sink is a configured filesystem table being written.
type Sink struct {
	cfg         *tableConfig
	partPrefix  string // "part-<uuid>", shared by the subtasks of one sink
	extension   string
	parallelism int
	policy      rollingPolicy
}

// rollingPolicy says when an in-progress file is closed and becomes pending.
// Time-based conditions are checked when rows arrive.
type rollingPolicy struct {
	fileSize   int64
	rollover   time.Duration
	inactivity time.Duration
}

// AcceptedChangelogMode implements connectors.Sink: files are append-only.
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	return types.InsertOnly
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
	enc, err := connectors.CreateEncoder(s.cfg.tc, OptFormat, s.cfg.tc.Physical)
	if err != nil {
		return nil, err
	}
	return &Writer{sink: s, enc: enc, subtask: subtask, nphys: len(s.cfg.tc.Physical)}, nil
}

// PendingFile is a closed part file that is not yet visible: committing it
// renames InProgress to Final. It is what a two-phase-commit checkpoint would
// record.
type PendingFile struct {
	InProgress string
	Final      string
}

// Writer writes one subtask's part files. Rows go to a hidden in-progress
// file; when the rolling policy says so (or at the end of input) the file is
// closed and becomes pending; Commit makes pending files visible. Finish does
// both, as there are no checkpoints to wait for yet.
type Writer struct {
	sink    *Sink
	enc     formats.Encoder
	subtask int
	nphys   int

	counter  int // number of the next part file
	file     *os.File
	bw       *bufio.Writer
	current  PendingFile
	size     int64
	opened   time.Time
	lastData time.Time
	pending  []PendingFile
	buf      []byte
}

// Open implements exec.SinkWriter.
func (w *Writer) Open(context.Context) error {
	if err := os.MkdirAll(w.sink.cfg.dir, 0o755); err != nil {
		return fmt.Errorf("filesystem table %s: %w", w.sink.cfg.name, err)
	}
	return nil
}

// Write implements exec.SinkWriter.
func (w *Writer) Write(_ context.Context, b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	now := time.Now()
	if w.file != nil && w.shouldRollOnTime(now) {
		if err := w.roll(); err != nil {
			return err
		}
	}
	for i, row := range b.Rows {
		if k := b.Kinds[i]; k != types.Insert {
			return fmt.Errorf("filesystem table %s: the filesystem sink only accepts inserts, but got a %s row", w.sink.cfg.name, k)
		}
		var err error
		w.buf, err = w.enc.Encode(w.buf[:0], row[:w.nphys])
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
	name := s.partPrefix + "-" + strconv.Itoa(w.subtask) + "-" + strconv.Itoa(w.counter) + s.extension
	w.counter++
	w.current = PendingFile{
		InProgress: filepath.Join(s.cfg.dir, "."+name+".inprogress."+newUUID()),
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

// PrepareCommit closes the in-progress file and returns every pending file
// not yet committed (the pre-commit step of a two-phase commit).
func (w *Writer) PrepareCommit() ([]PendingFile, error) {
	if err := w.roll(); err != nil {
		return nil, err
	}
	out := w.pending
	w.pending = nil
	return out, nil
}

// Commit makes pending files visible under their final names. It is
// idempotent: a file already renamed is skipped, so committing again after a
// restore is safe.
func (w *Writer) Commit(files []PendingFile) error {
	return CommitFiles(files)
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

// Finish implements exec.SinkWriter: close the current file and commit all.
func (w *Writer) Finish(context.Context) error {
	files, err := w.PrepareCommit()
	if err != nil {
		return err
	}
	if err := w.Commit(files); err != nil {
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
