package checkpoint

import (
	"context"
	"crypto/sha256"
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

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// runtimeStore implements exec.CheckpointStore: operator instances keep
// their state in package state stores under a local directory, and sealed
// images are uploaded to the Manager's storage.
type runtimeStore struct {
	m        *Manager
	kind     state.Kind
	localDir string
	restore  *Metadata
	// restoredParallelism is each restored operator's parallelism.
	restoredParallelism map[string]int
	restored            map[instanceKey]*Instance
	// byOp are the restored instances of each operator, by subtask.
	byOp map[string][]*Instance
	// noClaim: the restored snapshot is not this job's (NO_CLAIM), so no
	// checkpoint may reference its files.
	noClaim bool
	// mapping, when set, maps the restored snapshot's operator ids to this
	// job's (a Migration's); instances it does not map are not restored.
	mapping map[string]string
	// rewrites convert stored values of keyed states of this job's
	// operators (by operator id, then state name) from the snapshot's
	// layout.
	rewrites map[string]map[string]exec.ValueRewrite
}

// StoreOption configures NewRuntimeStore.
type StoreOption func(*runtimeStore)

// NoClaim makes every restored instance's first checkpoint a full one, so
// that no checkpoint of the job references a file of the restored snapshot
// (execution.state-recovery.claim-mode NO_CLAIM).
func NoClaim() StoreOption { return func(rs *runtimeStore) { rs.noClaim = true } }

// WithMigration restores the snapshot into a job whose operators the
// migration mapped: instances are found under the job's operator ids,
// stored values are converted where the schema changed, and state of
// operators the job no longer has is left out.
func WithMigration(mg *Migration) StoreOption {
	return func(rs *runtimeStore) { rs.mapping, rs.rewrites = mg.Mapping, mg.Rewrites }
}

type instanceKey struct {
	op      string
	subtask int
}

// ErrIncompatibleRestore marks a restore that no retry and no other
// checkpoint of the job can make succeed: the job itself differs from the
// one that took the checkpoint (another state backend, another parallelism).
// Recovery fails the job at once with the message instead of restarting it.
var ErrIncompatibleRestore = errors.New("the checkpoint cannot be restored into this job")

// errFileMismatch marks a downloaded file whose size or SHA-256 differ from
// what the checkpoint recorded.
var errFileMismatch = errors.New("the file differs from the checkpoint's record")

// NewRuntimeStore returns the exec.CheckpointStore of a job whose state
// backend is kind, whose local working files live under localDir, and which
// starts from restore (nil for a fresh start): a checkpoint or savepoint.
// An instance of a checkpoint restored with its own parallelism and state
// backend is restored from its image; a savepoint, another parallelism or
// another backend go through the state's entries (restore.go).
func NewRuntimeStore(m *Manager, kind state.Kind, localDir string, restore *Metadata, opts ...StoreOption) exec.CheckpointStore {
	rs := &runtimeStore{m: m, kind: kind, localDir: localDir, restore: restore,
		restoredParallelism: map[string]int{}, restored: map[instanceKey]*Instance{}, byOp: map[string][]*Instance{}}
	for _, o := range opts {
		o(rs)
	}
	if restore != nil {
		for i := range restore.Instances {
			in := &restore.Instances[i]
			op := in.Operator
			if rs.mapping != nil {
				var ok bool
				if op, ok = rs.mapping[op]; !ok {
					continue // not restored (ignore-unclaimed-state)
				}
			}
			rs.restored[instanceKey{op, in.Subtask}] = in
			rs.restoredParallelism[op] = in.Parallelism
			rs.byOp[op] = append(rs.byOp[op], in)
		}
		for _, ins := range rs.byOp {
			sort.Slice(ins, func(i, j int) bool { return ins[i].Subtask < ins[j].Subtask })
		}
	}
	return rs
}

func (rs *runtimeStore) OpenInstance(op exec.OperatorID, subtask, parallelism int) (exec.InstanceState, error) {
	if rs.viaEntries(op, parallelism) {
		return rs.openInstanceFromEntries(op, subtask, parallelism)
	}
	in, err := rs.restoredInstance(op, subtask, parallelism)
	if err != nil {
		return nil, err
	}
	if in != nil && in.Format != "" {
		return nil, fmt.Errorf("restoring operator %s subtask %d from checkpoint %d: the checkpoint holds its state in the format %q, this operator reads entry stores: %w",
			op, subtask, rs.restore.ID, in.Format, ErrIncompatibleRestore)
	}
	if err := os.MkdirAll(rs.localDir, 0o755); err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	dir, err := os.MkdirTemp(rs.localDir, dirElement(string(op))+"-"+strconv.Itoa(subtask)+"-")
	if err != nil {
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	is := &instanceState{rs: rs, op: op, subtask: subtask, parallelism: parallelism, dir: dir}
	if in == nil || len(in.Files) == 0 {
		is.store, err = state.Open(rs.kind, dir)
	} else {
		var files []state.File
		files, err = rs.download(context.Background(), in, dir)
		if err == nil {
			if is.store, err = state.Restore(rs.kind, dir, files); err != nil {
				err = fmt.Errorf("restoring from checkpoint %d: %w: %w", rs.restore.ID, err, exec.ErrCheckpointUnrestorable)
			}
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("opening state of %s subtask %d: %w", op, subtask, err)
	}
	if in != nil {
		is.restored = true
		is.position = in.Position
	}
	return is, nil
}

// dirElement makes an operator id safe as part of a directory name.
func dirElement(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// download copies the instance's files from where the restored checkpoint
// lies into dir under their local names, checking size and SHA-256.
func (rs *runtimeStore) download(ctx context.Context, in *Instance, dir string) ([]state.File, error) {
	return rs.downloadDeferring(ctx, in, dir, nil)
}

// deferredSum is a hard-linked file whose checksum is still to compare.
type deferredSum struct {
	path, from, sum string
	size            int64
}

// downloadDeferring is download; with deferred set, the checksums of
// hard-linked files are not read now but appended to *deferred (sizes are
// still checked), so that a restore from a local checkpoint directory does
// not wait for a read of every byte.
func (rs *runtimeStore) downloadDeferring(ctx context.Context, in *Instance, dir string, deferred *[]deferredSum) ([]state.File, error) {
	return downloadInstance(ctx, rs.restore, in, dir, deferred)
}

// downloadInstance is downloadDeferring for an instance of md.
func downloadInstance(ctx context.Context, md *Metadata, in *Instance, dir string, deferred *[]deferredSum) ([]state.File, error) {
	files := make([]state.File, 0, len(in.Files))
	for _, f := range in.Files {
		if f.LocalName == "" || f.LocalName != filepath.Base(f.LocalName) || f.LocalName == "." || f.LocalName == ".." {
			return nil, fmt.Errorf("checkpoint %d: file %s has an invalid local name %q", md.ID, f.Path, f.LocalName)
		}
		if err := fetchFile(ctx, md.src, md.base+f.Path, filepath.Join(dir, f.LocalName), f.Size, f.SHA256, f.Shared, deferred); err != nil {
			if ctx.Err() == nil && (isNotExist(err) || errors.Is(err, errFileMismatch)) {
				// The file is gone or not what the checkpoint recorded: no
				// retry will read it.
				err = fmt.Errorf("%w: %w", err, exec.ErrCheckpointUnrestorable)
			}
			return nil, fmt.Errorf("restoring from checkpoint %d: %w", md.ID, err)
		}
		files = append(files, state.File{Name: f.Name, LocalName: f.LocalName, Size: f.Size, SHA256: f.SHA256, Shared: f.Shared})
	}
	return files, nil
}

// fetchFile puts the checkpoint file from into to, checking its size and
// SHA-256. A shared file (an SST: never written again once uploaded) of a
// checkpoint on the local file system is hard-linked instead of copied,
// which makes a restore from a local checkpoint directory cost one read of
// each file (the checksum) instead of a copy: Flink's local recovery.
// Private files (MANIFEST, OPTIONS) are copied, since the restored DB
// writes to them.
func fetchFile(ctx context.Context, st Storage, from, to string, size int64, sum string, shared bool, deferred *[]deferredSum) error {
	if l, ok := st.(linker); ok && shared {
		if err := l.link(from, to); err == nil {
			if deferred != nil {
				// The stored file, the same inode as the link, stays where
				// it is (the restored checkpoint is retained until a newer
				// one completes, which waits for this comparison), while
				// the link may be moved into the DB's directory.
				stored, err := l.localPath(from)
				if err != nil {
					return err
				}
				*deferred = append(*deferred, deferredSum{path: stored, from: from, sum: sum, size: size})
				return checkFile(to, from, size, "")
			}
			return checkFile(to, from, size, sum)
		}
		// Another file system, or links not allowed: copy.
	}
	return downloadFile(ctx, st, from, to, size, sum)
}

// linker is a Storage whose files can be hard-linked into a local
// directory.
type linker interface {
	link(from, to string) error
	localPath(p string) (string, error)
}

// checkFile checks a fetched file's size and SHA-256.
func checkFile(path, from string, size int64, sum string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", from, err)
	}
	if fi.Size() != size {
		return fmt.Errorf("downloading %s: got %d bytes, the checkpoint recorded %d: %w", from, fi.Size(), size, errFileMismatch)
	}
	if sum == "" {
		return nil
	}
	got, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", from, err)
	}
	if !strings.EqualFold(got, sum) {
		return fmt.Errorf("downloading %s: SHA-256 is %s, the checkpoint recorded %s: %w", from, got, sum, errFileMismatch)
	}
	return nil
}

func downloadFile(ctx context.Context, st Storage, from, to string, size int64, sum string) error {
	r, err := st.Get(ctx, from)
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", from, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), ctxReader{ctx, r})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("downloading %s: %w", from, err)
	}
	if n != size {
		return fmt.Errorf("downloading %s: got %d bytes, the checkpoint recorded %d: %w", from, n, size, errFileMismatch)
	}
	if got := hex.EncodeToString(h.Sum(nil)); sum != "" && !strings.EqualFold(got, sum) {
		return fmt.Errorf("downloading %s: SHA-256 is %s, the checkpoint recorded %s: %w", from, got, sum, errFileMismatch)
	}
	return nil
}

func (rs *runtimeStore) Complete(ctx context.Context, id exec.CheckpointID, acks []exec.InstanceAck) error {
	md := &Metadata{
		Version:   MetadataVersion,
		Job:       rs.m.job,
		ID:        int64(id),
		Timestamp: rs.m.now().UTC(),
		Instances: make([]Instance, 0, len(acks)),
		Plan:      rs.m.plan,
		Operators: rs.m.operators,
	}
	seen := map[instanceKey]bool{}
	private := map[string]bool{}
	for _, a := range acks {
		h, ok := a.Handle.(*instanceHandle)
		if !ok || h == nil {
			return fmt.Errorf("completing checkpoint %d: acknowledgement of %s subtask %d carries %T, not this store's handle", id, a.Op, a.Subtask, a.Handle)
		}
		if h.id != int64(id) {
			return fmt.Errorf("completing checkpoint %d: acknowledgement of %s subtask %d belongs to checkpoint %d", id, a.Op, a.Subtask, h.id)
		}
		in := h.inst
		k := instanceKey{in.Operator, in.Subtask}
		if seen[k] {
			return fmt.Errorf("completing checkpoint %d: %s subtask %d acknowledged twice", id, in.Operator, in.Subtask)
		}
		seen[k] = true
		for _, f := range in.Files {
			if !f.Shared {
				if private[f.Path] {
					return fmt.Errorf("completing checkpoint %d: private file %s belongs to two instances", id, f.Path)
				}
				private[f.Path] = true
			}
		}
		in.Name, in.States = a.Name, a.States
		// The runtime may measure the phases more precisely than the store.
		in.SyncDuration, in.AsyncDuration = a.SyncDuration, a.AsyncDuration
		// The runtime measures a keyed backend's size on the task's
		// goroutine, which owns it.
		if sz := a.StateSize; sz != nil && in.Format == KeyedFormat {
			in.StateEntries, in.EntriesEstimated = sz.Entries, !sz.EntriesExact
			in.MemoryBytes, in.DiskBytes = sz.MemoryBytes, sz.DiskBytes
		}
		md.Instances = append(md.Instances, in)
		md.FullBytes += in.FullBytes
		md.UploadedBytes += in.UploadedBytes
		md.SyncDuration = max(md.SyncDuration, in.SyncDuration)
		md.AsyncDuration = max(md.AsyncDuration, in.AsyncDuration)
	}
	return rs.m.complete(ctx, md)
}

func (rs *runtimeStore) Abort(id exec.CheckpointID) { rs.m.abort(int64(id)) }

// instanceState is one operator instance's state.Store.
type instanceState struct {
	rs          *runtimeStore
	op          exec.OperatorID
	subtask     int
	parallelism int
	dir         string // the store's directory
	store       state.Store
	restored    bool
	position    []byte
	// entries, when set, replays the restored state instead of the
	// store (a restore from a savepoint or at another parallelism);
	// positions are then the restored positions assigned to the
	// instance, rescaled whether the parallelism changed.
	entries   exec.StateReader
	positions [][]byte
	rescaled  bool
	// snapshotStart is when the current snapshot's Writer was handed out:
	// the synchronous part runs from there to the end of Seal.
	snapshotStart time.Time
}

func (is *instanceState) Restored() (exec.StateReader, []byte, bool) {
	if !is.restored {
		return nil, nil, false
	}
	if is.entries != nil {
		return is.entries, is.position, true
	}
	return is.store.Reader(), is.position, true
}

func (is *instanceState) Writer() exec.StateWriter {
	is.snapshotStart = time.Now()
	return is.store.Writer()
}

func (is *instanceState) Seal(id exec.CheckpointID, position []byte) (exec.SealedState, error) {
	start := is.snapshotStart
	if start.IsZero() {
		start = time.Now()
	}
	is.snapshotStart = time.Time{}
	// state.Image.Discard removes the store directory when it is empty,
	// which a hashmap store's is between snapshots; Seal needs it back.
	if err := os.MkdirAll(is.dir, 0o755); err != nil {
		return nil, fmt.Errorf("sealing state of %s subtask %d for checkpoint %d: %w", is.op, is.subtask, id, err)
	}
	img, err := is.store.Freeze(int64(id))
	if err != nil {
		return nil, fmt.Errorf("sealing state of %s subtask %d for checkpoint %d: %w", is.op, is.subtask, id, err)
	}
	return &sealedState{
		m:           is.rs.m,
		id:          int64(id),
		op:          is.op,
		subtask:     is.subtask,
		parallelism: is.parallelism,
		img:         img,
		position:    append([]byte(nil), position...),
		sync:        time.Since(start),
	}, nil
}

func (is *instanceState) Close() error {
	if err := is.store.Close(); err != nil {
		return fmt.Errorf("closing state of %s subtask %d: %w", is.op, is.subtask, err)
	}
	return nil
}

// sealedState is one instance's image for one checkpoint.
type sealedState struct {
	m           *Manager
	id          int64
	op          exec.OperatorID
	subtask     int
	parallelism int
	img         *state.Image
	position    []byte
	sync        time.Duration
	format      string // Instance.Format
	// wait, when not nil, is closed once the restored files' deferred
	// checksums were compared; verified then gives the result. Persist
	// waits for it: a checkpoint must not complete on unverified state.
	wait     <-chan struct{}
	verified func() (bool, error)
}

// instanceHandle is the InstanceAck.Handle of this store.
type instanceHandle struct {
	id   int64
	inst Instance
}

func (s *sealedState) Persist(ctx context.Context) (exec.InstanceAck, error) {
	start := time.Now()
	ack := exec.InstanceAck{Op: s.op, Subtask: s.subtask, SyncDuration: s.sync}
	if err := s.m.checkWritable(s.id); err != nil {
		return ack, fmt.Errorf("persisting state of %s subtask %d: %w", s.op, s.subtask, err)
	}
	if s.wait != nil {
		select {
		case <-s.wait:
		case <-ctx.Done():
			return ack, ctx.Err()
		}
		if _, err := s.verified(); err != nil {
			return ack, fmt.Errorf("persisting state of %s subtask %d for checkpoint %d: %w", s.op, s.subtask, s.id, err)
		}
	}
	// A hashmap image is written here, off the task's goroutine, rather
	// than in the synchronous part.
	if err := s.img.Finish(); err != nil {
		return ack, fmt.Errorf("persisting state of %s subtask %d for checkpoint %d: %w", s.op, s.subtask, s.id, err)
	}
	in := Instance{
		Operator:    string(s.op),
		Subtask:     s.subtask,
		Parallelism: s.parallelism,
		StateKind:   string(s.img.Kind),
		Format:      s.format,
		KeyGroups:   s.img.KeyGroups,
		Position:    s.position,
		Files:       make([]FileRef, 0, len(s.img.Files)),
	}
	var shared, private []string
	var err error
	for _, f := range s.img.Files {
		if f.Name == "" || strings.ContainsAny(f.Name, "/\\") || f.Name == "." || f.Name == ".." {
			err = fmt.Errorf("state file %q has an invalid name", f.Name)
			break
		}
		local := filepath.Join(s.img.Dir, f.LocalName)
		ref := FileRef{Name: f.Name, LocalName: f.LocalName, Size: f.Size, SHA256: f.SHA256, Shared: f.Shared}
		if ref.SHA256 == "" {
			if ref.SHA256, err = fileSHA256(local); err != nil {
				break
			}
		}
		var n int64
		if f.Shared {
			ref.Path = sharedDir + "/" + f.Name
			n, err = s.m.acquireShared(ctx, ref, local)
			if err == nil {
				shared = append(shared, ref.Path)
			}
		} else {
			ref.Path = chkDir(s.id) + "/" + f.Name
			err = s.m.upload(ctx, ref.Path, local, f.Size)
			if err == nil {
				private = append(private, ref.Path)
				n = f.Size
			}
		}
		if err != nil {
			break
		}
		in.Files = append(in.Files, ref)
		in.FullBytes += f.Size
		in.UploadedBytes += n
	}
	if err = s.m.finishPersist(ctx, s.id, shared, private, err); err != nil {
		return ack, fmt.Errorf("persisting state of %s subtask %d for checkpoint %d: %w", s.op, s.subtask, s.id, err)
	}
	in.SyncDuration = s.sync
	in.AsyncDuration = time.Since(start)
	ack.Handle = &instanceHandle{id: s.id, inst: in}
	ack.FullBytes = in.FullBytes
	ack.UploadedBytes = in.UploadedBytes
	ack.AsyncDuration = in.AsyncDuration
	return ack, nil
}

func (s *sealedState) Discard() {
	// The image is local scratch space; failing to remove it loses nothing.
	_ = s.img.Discard()
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
