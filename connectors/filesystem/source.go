package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// Source is a configured filesystem table being read.
type Source struct {
	cfg            *tableConfig
	monitor        time.Duration // > 0: unbounded, re-list every interval
	pathRegex      *regexp.Regexp
	metaKeys       []string
	skipEmptyLines bool
	mode           types.ChangelogMode // the format's: inserts, or a changelog
	enum           *enumerator
	skipped        exec.Counter
}

// Bounded implements connectors.ScanSource.
func (s *Source) Bounded() bool { return s.monitor == 0 }

// ChangelogMode implements connectors.ScanSource: the format's (a full
// changelog for debezium-json, canal-json and maxwell-json).
func (s *Source) ChangelogMode() types.ChangelogMode { return s.mode }

// Parallelism implements connectors.ScanSource.
func (s *Source) Parallelism(defaultParallelism int) int { return max(defaultParallelism, 1) }

// ReadableMetadata implements connectors.ScanSource.
func (s *Source) ReadableMetadata() map[string]types.Type { return readableMetadata }

// SkippedRecords returns how many records the format dropped (with
// ignore-parse-errors) over all readers of the source.
func (s *Source) SkippedRecords() *exec.Counter { return &s.skipped }

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	if parallelism <= 0 || subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("filesystem table %s: invalid subtask %d of %d", s.cfg.name, subtask, parallelism)
	}
	dec, err := connectors.CreateDecoder(s.cfg.tc, OptFormat, s.cfg.tc.Physical)
	if err != nil {
		return nil, err
	}
	r := &reader{src: s, dec: dec, subtask: subtask, parallelism: parallelism,
		nphys: len(s.cfg.tc.Physical)}
	if cd, ok := dec.(formats.ChangelogDecoder); ok {
		r.changes = cd
		r.emit = r.appendChange
	}
	return r, nil
}

// fileInfo is one file to read.
type fileInfo struct {
	path    string
	size    int64
	modTime int64 // epoch ms
}

// enumerator lists the files of a table, once for a bounded source and
// every monitor interval for an unbounded one. It is shared by the readers
// of a source so that all agree on the order in which files were found:
// file i belongs to subtask i mod parallelism.
type enumerator struct {
	root  string
	regex *regexp.Regexp

	mu     sync.Mutex
	listed bool
	seen   map[string]bool
	files  []fileInfo
}

// discover lists the directory (again) and returns the files found so far.
func (e *enumerator) discover(relist bool) ([]fileInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.listed && !relist {
		return e.files, nil
	}
	found, err := listFiles(e.root, e.regex)
	if err != nil {
		return nil, err
	}
	e.listed = true
	for _, f := range found { // sorted by path, so a listing's new files keep a stable order
		if !e.seen[f.path] {
			e.seen[f.path] = true
			e.files = append(e.files, f)
		}
	}
	return e.files, nil
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// listFiles returns the visible files under root (or root itself when it is
// a file), sorted by path. Hidden files and directories are skipped.
func listFiles(root string, regex *regexp.Regexp) ([]fileInfo, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("listing files: %w", err)
	}
	if !st.IsDir() {
		return []fileInfo{{path: root, size: st.Size(), modTime: st.ModTime().UnixMilli()}}, nil
	}
	var out []fileInfo
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed while listing
				return nil
			}
			return err
		}
		if p == root {
			return nil
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if regex != nil && !regex.MatchString(p) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		out = append(out, fileInfo{path: p, size: info.Size(), modTime: info.ModTime().UnixMilli()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing files: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// maxLine bounds a line so that a file without newlines cannot exhaust memory.
const maxLine = 64 << 20

// reader reads the files assigned to one subtask, one after the other. Split
// i is the i-th file assigned to it.
type reader struct {
	src                  *Source
	dec                  formats.Decoder
	changes              formats.ChangelogDecoder // dec of a changelog format
	emit                 func(types.RowKind, types.Row)
	batch                *types.Batch // the batch appendChange appends to
	subtask, parallelism int
	nphys                int

	files   []fileInfo // assigned files; index = split
	scanned int        // files of the enumerator considered so far
	cur     int        // split being read; == len(files) when none
	file    *os.File
	br      *bufio.Reader
	lineNo  int
	offset  int64 // bytes of the current file consumed by the lines read
	// Restored position: files finished before the checkpoint, and where to
	// resume the file being read then.
	finished   map[string]bool
	resumePath string
	resumeAt   int64
	resumeLine int
	long       []byte    // a line longer than the bufio buffer
	meta       types.Row // metadata values of the current file
	timer      *time.Timer
	lastList   time.Time
}

// Open implements exec.SourceReader.
func (r *reader) Open(context.Context) error {
	if err := r.assign(false); err != nil {
		return err
	}
	r.lastList = time.Now()
	return nil
}

// assign takes this subtask's share of newly found files.
func (r *reader) assign(relist bool) error {
	all, err := r.src.enum.discover(relist)
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", r.src.cfg.name, err)
	}
	for ; r.scanned < len(all); r.scanned++ {
		if r.scanned%r.parallelism == r.subtask {
			r.files = append(r.files, all[r.scanned])
		}
	}
	return nil
}

// NumSplits implements exec.SourceReader.
func (r *reader) NumSplits() int { return len(r.files) }

// Read implements exec.SourceReader.
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	for {
		if r.file == nil {
			if r.cur < len(r.files) && r.finished[r.files[r.cur].path] {
				// Read completely before the restored checkpoint.
				split := r.cur
				r.cur++
				return exec.ReadResult{Split: split, SplitDone: true,
					End: r.cur == len(r.files) && r.src.monitor == 0}, nil
			}
			if r.cur < len(r.files) {
				if err := r.openFile(); err != nil {
					return exec.ReadResult{Split: -1}, err
				}
			} else if r.src.monitor == 0 {
				return exec.ReadResult{Split: -1, End: true}, nil
			} else if err := r.waitForFiles(ctx); err != nil || ctx.Err() != nil {
				return exec.ReadResult{Split: -1}, err
			} else {
				continue
			}
		}
		split := r.cur
		eof, err := r.readLines(b)
		if err != nil {
			return exec.ReadResult{Split: -1}, err
		}
		if !eof {
			return exec.ReadResult{Split: split}, nil
		}
		r.closeFile()
		r.cur++
		res := exec.ReadResult{Split: split, SplitDone: true}
		if r.cur == len(r.files) && r.src.monitor == 0 {
			res.End = true
		}
		return res, nil
	}
}

// waitForFiles re-lists the directory every monitor interval until new files
// are assigned to this subtask or ctx is done.
func (r *reader) waitForFiles(ctx context.Context) error {
	for {
		if wait := time.Until(r.lastList.Add(r.src.monitor)); wait > 0 {
			if r.timer == nil {
				r.timer = time.NewTimer(wait)
			} else {
				r.timer.Reset(wait)
			}
			select {
			case <-ctx.Done():
				r.timer.Stop()
				return nil
			case <-r.timer.C:
			}
		}
		r.lastList = time.Now()
		if err := r.assign(true); err != nil {
			return err
		}
		if r.cur < len(r.files) {
			return nil
		}
	}
}

func (r *reader) openFile() error {
	fi := r.files[r.cur]
	f, err := os.Open(fi.path)
	if err != nil {
		return fmt.Errorf("filesystem table %s: %w", r.src.cfg.name, err)
	}
	r.file = f
	if r.br == nil {
		r.br = bufio.NewReaderSize(f, 64<<10)
	} else {
		r.br.Reset(f)
	}
	r.lineNo, r.offset = 0, 0
	if fi.path == r.resumePath {
		if _, err := f.Seek(r.resumeAt, io.SeekStart); err != nil {
			f.Close()
			r.file = nil
			return fmt.Errorf("filesystem table %s: resuming %s at byte %d: %w", r.src.cfg.name, fi.path, r.resumeAt, err)
		}
		r.br.Reset(f)
		r.lineNo, r.offset = r.resumeLine, r.resumeAt
		r.resumePath = ""
	}
	r.meta = r.meta[:0]
	for _, key := range r.src.metaKeys {
		var v types.Value
		switch key {
		case MetaFilePath:
			v = types.String(r.src.cfg.uriPrefix + fi.path)
		case MetaFileName:
			v = types.String(filepath.Base(fi.path))
		case MetaFileSize:
			v = types.Int(fi.size)
		case MetaModificationTime:
			v = types.TimestampMillis(fi.modTime)
		}
		r.meta = append(r.meta, v)
	}
	return nil
}

func (r *reader) closeFile() {
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
}

// readLines decodes lines of the current file into b until b is full or the
// file ends.
func (r *reader) readLines(b *types.Batch) (eof bool, err error) {
	limit := max(b.Cap(), b.Len()+1)
	for b.Len() < limit {
		line, err := r.readLine()
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("filesystem table %s: reading %s: %w", r.src.cfg.name, r.files[r.cur].path, err)
		}
		if len(line) == 0 && r.src.skipEmptyLines {
			continue
		}
		if r.changes != nil {
			if err := r.decodeChanges(line, b); err != nil {
				return false, err
			}
			continue
		}
		row := b.Append(types.Insert)
		if err := r.dec.Decode(line, row[:r.nphys]); err != nil {
			b.Truncate(b.Len() - 1)
			if errors.Is(err, formats.ErrSkipRecord) {
				r.src.skipped.Add(1)
				continue
			}
			return false, fmt.Errorf("filesystem table %s: file %s, line %d: %w: %s",
				r.src.cfg.name, r.files[r.cur].path, r.lineNo, err, prefix(line))
		}
		copy(row[r.nphys:], r.meta)
	}
	return false, nil
}

// decodeChanges appends the rows of the change event on one line.
func (r *reader) decodeChanges(line []byte, b *types.Batch) error {
	start := b.Len()
	r.batch = b
	err := r.changes.DecodeChangelog(line, r.emit)
	r.batch = nil
	if err != nil {
		b.Truncate(start)
		if errors.Is(err, formats.ErrSkipRecord) {
			r.src.skipped.Add(1)
			return nil
		}
		return fmt.Errorf("filesystem table %s: file %s, line %d: %w", r.src.cfg.name, r.files[r.cur].path, r.lineNo, err)
	}
	return nil
}

// appendChange is the changelog decoder's emit: row holds the columns.
func (r *reader) appendChange(kind types.RowKind, row types.Row) {
	out := r.batch.Append(kind)
	copy(out[:r.nphys], row)
	copy(out[r.nphys:], r.meta)
}

// readLine returns the next line without its terminator; the slice is valid
// until the next call.
func (r *reader) readLine() ([]byte, error) {
	r.long = r.long[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.offset += int64(len(chunk))
		if err == bufio.ErrBufferFull {
			r.long = append(r.long, chunk...)
			if len(r.long) > maxLine {
				return nil, fmt.Errorf("line %d is longer than %d bytes", r.lineNo+1, maxLine)
			}
			continue
		}
		if err == io.EOF && len(chunk) == 0 && len(r.long) == 0 {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		line := chunk
		if len(r.long) > 0 {
			r.long = append(r.long, chunk...)
			line = r.long
		}
		r.lineNo++
		line = bytes.TrimSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		return line, nil
	}
}

// prefix quotes the first 100 bytes of a bad record for an error message.
func prefix(data []byte) string {
	if len(data) > 100 {
		return strconv.Quote(string(data[:100])) + "…"
	}
	return strconv.Quote(string(data))
}

// positionVersion tags the layout of SnapshotPosition.
const positionVersion = 1

// SnapshotPosition implements exec.CheckpointedReader: the paths of the
// files read to the end, and the path, byte offset and line number of the
// file being read. Files are named by path rather than by split number so
// that a restore finds them whatever order a new listing gives.
func (r *reader) SnapshotPosition() ([]byte, error) {
	pos := []byte{positionVersion}
	var done []string
	for i := 0; i < r.cur && i < len(r.files); i++ {
		done = append(done, r.files[i].path)
	}
	for p := range r.finished { // restored, and not yet passed again
		if !slicesContain(done, p) {
			done = append(done, p)
		}
	}
	sort.Strings(done)
	pos = binary.AppendUvarint(pos, uint64(len(done)))
	for _, p := range done {
		pos = appendString(pos, p)
	}
	switch {
	case r.file != nil:
		pos = append(pos, 1)
		pos = appendString(pos, r.files[r.cur].path)
		pos = binary.AppendUvarint(pos, uint64(r.offset))
		pos = binary.AppendUvarint(pos, uint64(r.lineNo))
	case r.resumePath != "": // restored but not reopened yet
		pos = append(pos, 1)
		pos = appendString(pos, r.resumePath)
		pos = binary.AppendUvarint(pos, uint64(r.resumeAt))
		pos = binary.AppendUvarint(pos, uint64(r.resumeLine))
	default:
		pos = append(pos, 0)
	}
	return pos, nil
}

// RestorePosition implements exec.CheckpointedReader: files read before the
// checkpoint are skipped (reported as finished splits), and the file being
// read resumes at the line after the last one read.
func (r *reader) RestorePosition(pos []byte) error {
	bad := func(why string) error {
		return fmt.Errorf("filesystem table %s: bad checkpointed position (%s): %s", r.src.cfg.name, why, prefix(pos))
	}
	if len(pos) == 0 || pos[0] != positionVersion {
		return bad("unknown version")
	}
	rest := pos[1:]
	n, rest, ok := readUvarint(rest)
	if !ok || n > uint64(len(rest)) {
		return bad("truncated")
	}
	finished := make(map[string]bool, n)
	for range n {
		var p string
		if p, rest, ok = readString(rest); !ok {
			return bad("truncated")
		}
		finished[p] = true
	}
	if len(rest) == 0 {
		return bad("truncated")
	}
	hasCurrent := rest[0] == 1
	rest = rest[1:]
	var path string
	var at, line uint64
	if hasCurrent {
		if path, rest, ok = readString(rest); !ok {
			return bad("truncated")
		}
		if at, rest, ok = readUvarint(rest); !ok {
			return bad("truncated")
		}
		if line, rest, ok = readUvarint(rest); !ok {
			return bad("truncated")
		}
	}
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	r.finished, r.resumePath, r.resumeAt, r.resumeLine = finished, path, int64(at), int(line)
	return nil
}

func slicesContain(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func readUvarint(src []byte) (uint64, []byte, bool) {
	x, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, false
	}
	return x, src[n:], true
}

func readString(src []byte) (string, []byte, bool) {
	n, src, ok := readUvarint(src)
	if !ok || n > uint64(len(src)) {
		return "", nil, false
	}
	return string(src[:n]), src[n:], true
}

var _ exec.CheckpointedReader = (*reader)(nil)

// Close implements exec.SourceReader.
func (r *reader) Close() error {
	r.closeFile()
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}
