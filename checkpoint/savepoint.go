package checkpoint

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// Savepoints (DESIGN.md §4). A savepoint is a directory of its own,
// savepoint-<job id prefix>-<random>/ under state.savepoints.dir, holding
// _metadata (Type TypeSavepoint, SavepointFormat) and one file per operator
// instance that has state. It is self-contained: it copies every byte it
// needs and references nothing of the checkpoint it was made from, so
// that checkpoint may go, and the directory may be moved (file paths are
// relative to it). Its state is in a canonical, backend-independent form:
//
//   - keyed state (Instance.Format EntriesFormat): the instance's stored
//     entries of package state/kv (key group, state id, key, namespace, user
//     key; the state registry), in stored-key order, in the hashmap image
//     file format of package state/image (magic, version, records, count,
//     CRC-32C);
//   - entry stores (StoreEntriesFormat: sink committables): the same file
//     format with keys [key group, 2 bytes big-endian, 0xFFFF for none][key].
//
// Either backend restores it at any parallelism: a new instance loads the
// entries of its key-group range from every old instance that overlaps it.

// TypeSavepoint is Metadata.Type of a savepoint.
const TypeSavepoint = "savepoint"

// SavepointFormatVersion is the savepoint layout this build writes; it
// reads every version up to it. testdata/savepoint-v1 is a savepoint of
// version 1 that a test restores, so a later release proves it still can.
const SavepointFormatVersion = 1

// Instance formats of savepoints.
const (
	EntriesFormat      = "kv-entries/1"
	StoreEntriesFormat = "entries/1"
)

// SavepointOptions describe a savepoint to write.
type SavepointOptions struct {
	// JobID names the savepoint directory (its first 6 characters, as
	// Flink's savepoint-<job id>-<random>).
	JobID string
	// SQL is the job's statements, recorded in the metadata.
	SQL []string
	// Script is the whole job script (DDL, SET, then the INSERT or
	// statement set): what plans the job again.
	Script []string
	// TempDir is where the instances' files are converted; empty means
	// os.TempDir().
	TempDir string
	// Storage holds the options of the target storage (s3.*).
	Storage map[string]string
	// Now stamps the savepoint; nil means time.Now.
	Now func() time.Time
}

// Savepoint is a written savepoint.
type Savepoint struct {
	// Path is the savepoint's directory, as execution.state-recovery.path
	// takes it.
	Path     string
	Metadata *Metadata
	Duration time.Duration
}

// WriteSavepoint writes a savepoint of the completed checkpoint src into a
// new directory under dir (state.savepoints.dir: an absolute path, file://
// or s3:// URI). Nothing of src is changed. The _metadata is written last:
// a directory without it is not a savepoint, and a failed write removes
// what it wrote.
func WriteSavepoint(ctx context.Context, src *Metadata, dir string, opts SavepointOptions) (*Savepoint, error) {
	start := time.Now()
	if src == nil || src.src == nil {
		return nil, errors.New("writing a savepoint: no completed checkpoint to write it from")
	}
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("No savepoint directory: set 'state.savepoints.dir' or name a directory for the savepoint")
	}
	dst, err := OpenStorage(ctx, strings.TrimRight(dir, "/"), opts.Storage)
	if err != nil {
		return nil, fmt.Errorf("state.savepoints.dir: %w", err)
	}
	name, err := savepointName(opts.JobID)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(opts.TempDir, "flinksql-savepoint-")
	if err != nil {
		return nil, fmt.Errorf("writing savepoint: %w", err)
	}
	defer os.RemoveAll(tmp)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	md := &Metadata{
		Version:         MetadataVersion,
		Type:            TypeSavepoint,
		SavepointFormat: SavepointFormatVersion,
		Job:             src.Job,
		ID:              src.ID,
		Timestamp:       now().UTC(),
		Plan:            src.Plan,
		MaxParallelism:  src.MaxParallelism,
		SQL:             opts.SQL,
		Script:          opts.Script,
		Operators:       src.Operators,
		FromCheckpoint:  strings.TrimSuffix(src.base, "/") + "/" + src.Dir(),
	}
	var written []string
	fail := func(err error) (*Savepoint, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metadataCleanupTimeout)
		defer cancel()
		for _, p := range written {
			_ = dst.Delete(dctx, p)
		}
		return nil, fmt.Errorf("writing savepoint %s/%s of checkpoint %d: %w", strings.TrimRight(dir, "/"), name, src.ID, err)
	}
	for i := range src.Instances {
		in := src.Instances[i]
		if md.StateBackend == "" && in.StateKind != "" && (in.Format == KeyedFormat || len(in.Files) > 0) {
			md.StateBackend = in.StateKind
		}
		out, err := convertInstance(ctx, src, &in, filepath.Join(tmp, strconv.Itoa(i)))
		if err != nil {
			return fail(err)
		}
		if out.path != "" {
			rel := instanceFileName(in.Operator, in.Subtask)
			f, err := os.Open(out.path)
			if err != nil {
				return fail(err)
			}
			err = dst.Put(ctx, name+"/"+rel, f, out.size)
			f.Close()
			os.Remove(out.path)
			if err != nil {
				return fail(err)
			}
			written = append(written, name+"/"+rel)
			in.Files = []FileRef{{Path: rel, Name: rel, LocalName: rel, Size: out.size, SHA256: out.sum}}
		} else {
			in.Files = nil
		}
		in.Format = out.format
		in.FullBytes, in.UploadedBytes = out.size, out.size
		if out.format == EntriesFormat {
			in.StateEntries, in.EntriesEstimated = out.entries, false
		}
		md.Instances = append(md.Instances, in)
		md.FullBytes += out.size
		md.UploadedBytes += out.size
	}
	data, err := encodeMetadata(md)
	if err == nil {
		err = dst.Put(ctx, name+"/"+MetadataName, bytes.NewReader(data), int64(len(data)))
	}
	if err != nil {
		return fail(err)
	}
	md.src, md.base = dst, name+"/"
	return &Savepoint{Path: strings.TrimRight(dir, "/") + "/" + name, Metadata: md, Duration: time.Since(start)}, nil
}

func savepointName(jobID string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("naming the savepoint: %w", err)
	}
	id := unsafeName(jobID)
	if len(id) > 6 {
		id = id[:6]
	}
	if id == "" {
		id = "job"
	}
	return "savepoint-" + id + "-" + hex.EncodeToString(b[:]), nil
}

func unsafeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// instanceFileName is the name of an instance's file in a savepoint.
func instanceFileName(op string, subtask int) string {
	return unsafeName(op) + "-" + strconv.Itoa(subtask) + ".entries"
}

type convertedInstance struct {
	format  string
	path    string // "" when the instance has no state file
	size    int64
	sum     string
	entries int64
}

// convertInstance writes the canonical form of one instance of src into a
// file under dir.
func convertInstance(ctx context.Context, src *Metadata, in *Instance, dir string) (convertedInstance, error) {
	var out convertedInstance
	switch in.Format {
	case KeyedFormat, EntriesFormat:
		out.format = EntriesFormat
	case "":
		out.format = StoreEntriesFormat
	case StoreEntriesFormat:
		out.format = StoreEntriesFormat
	default:
		return out, fmt.Errorf("operator %s subtask %d: unknown state format %q", in.Operator, in.Subtask, in.Format)
	}
	if len(in.Files) == 0 {
		return out, nil
	}
	dl := filepath.Join(dir, "in")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return out, err
	}
	if in.Format == EntriesFormat || in.Format == StoreEntriesFormat || (in.Format == KeyedFormat && in.StateKind == string(image.Hashmap)) {
		// Already the canonical file (a hashmap image is the entries in
		// stored-key order, registry last): it is fetched (hard-linked from
		// a local checkpoint: it is only read), its size and SHA-256
		// compared with the checkpoint's record, and uploaded as it is.
		if len(in.Files) != 1 {
			return out, fmt.Errorf("operator %s subtask %d: %d files where one was expected", in.Operator, in.Subtask, len(in.Files))
		}
		f := in.Files[0]
		out.path = filepath.Join(dl, "canonical")
		if err := fetchFile(ctx, src.src, src.base+f.Path, out.path, f.Size, f.SHA256, true, nil); err != nil {
			return out, fmt.Errorf("operator %s subtask %d: %w", in.Operator, in.Subtask, err)
		}
		if err := checkHashmapHeader(out.path); err != nil {
			return out, fmt.Errorf("operator %s subtask %d: %w", in.Operator, in.Subtask, err)
		}
		out.size, out.sum, out.entries = f.Size, f.SHA256, in.StateEntries
		if out.entries == 0 && out.format == EntriesFormat {
			// Not recorded (the runtime measures it at checkpoints; older
			// builds did not): count the entries, the registry's excepted.
			if _, err := image.ScanHashmapFile(out.path, func(k, v []byte) error {
				if len(k) >= 2 && (k[0] != 0xFF || k[1] != 0xFF) {
					out.entries++
				}
				return nil
			}); err != nil {
				return out, fmt.Errorf("operator %s subtask %d: %w", in.Operator, in.Subtask, err)
			}
		}
		return out, nil
	}
	// SSTs hard-linked from a local checkpoint are not hashed: the
	// conversion reads every block of them, and Pebble checks each block's
	// checksum as it reads it (sizes are still compared, and copied files
	// hashed).
	var unhashed []deferredSum
	files, err := downloadInstance(ctx, src, in, dl, &unhashed)
	if err != nil {
		return out, fmt.Errorf("operator %s subtask %d: %w", in.Operator, in.Subtask, err)
	}
	out.path = filepath.Join(dir, "out.entries")
	w, err := image.CreateHashmap(out.path)
	if err != nil {
		return out, err
	}
	if in.Format == KeyedFormat {
		err = kv.ExportImage(kv.Config{Kind: image.Kind(in.StateKind), Dir: dl, MaxParallelism: max(src.MaxParallelism, 0), SumsVerified: true}, files, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := w.Add(k, v); err != nil {
				return err
			}
			if len(k) < 2 || k[0] != 0xFF || k[1] != 0xFF {
				out.entries++
			}
			return nil
		})
	} else {
		err = exportStore(state.Kind(in.StateKind), dl, files, w)
	}
	if err != nil {
		w.Abort()
		return out, fmt.Errorf("operator %s subtask %d: converting its %s state: %w", in.Operator, in.Subtask, in.StateKind, err)
	}
	out.size, out.sum, err = w.Close()
	return out, err
}

// checkHashmapHeader checks that the file at path starts as a hashmap
// image of the version the savepoint format names.
func checkHashmapHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(hdr[:8]) != "FSQLHMAP" || binary.BigEndian.Uint32(hdr[8:]) != 1 {
		return fmt.Errorf("%s is not a hashmap state image of version 1", path)
	}
	return nil
}

// exportStore writes the entries of an entry-store image, sorted, to w.
func exportStore(kind state.Kind, dir string, files []state.File, w *image.HashmapWriter) error {
	st, err := state.Restore(kind, dir, files)
	if err != nil {
		return err
	}
	defer st.Close()
	type rec struct{ k, v []byte }
	var recs []rec
	err = st.Reader().Each(func(kg int, key, value []byte) error {
		recs = append(recs, rec{append(appendKeyGroupCode(nil, kg), key...), bytes.Clone(value)})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i].k, recs[j].k) < 0 })
	for _, r := range recs {
		if err := w.Add(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

func appendKeyGroupCode(dst []byte, kg int) []byte {
	code := uint16(0xFFFF)
	if kg != state.KeyGroupNone {
		code = uint16(kg)
	}
	return binary.BigEndian.AppendUint16(dst, code)
}

func keyGroupOfCode(k []byte) int {
	if c := binary.BigEndian.Uint16(k); c != 0xFFFF {
		return int(c)
	}
	return state.KeyGroupNone
}
