package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
)

// Manager keeps the completed checkpoints of one job in a Storage: it writes
// their metadata, counts references to shared files, applies retention and
// cleans up. It is safe for concurrent use: Persist calls of many instances
// run at once, and the coordinator completes or aborts checkpoints.
type Manager struct {
	st             Storage
	job            string
	base           string // job + "/"
	retained       int
	retainOnCancel bool
	log            io.Writer
	now            func() time.Time
	plan           string // fingerprint recorded in each checkpoint
	operators      []*exec.OperatorState
	guard          func() error
	maxParallelism int // recorded in each checkpoint; guarded by mu

	logMu sync.Mutex

	mu sync.Mutex
	// completed are the retained checkpoints, oldest first.
	completed []*Metadata
	// registry counts the references to each shared file (by path relative
	// to the job directory) from retained checkpoints and from checkpoints
	// in flight. A file is deleted when its count drops to zero.
	registry map[string]*sharedEntry
	inflight map[int64]*inflightCheckpoint
	// highest is the largest checkpoint ID this manager has seen in flight,
	// aborted ones included: a restarted attempt of the job numbers its
	// checkpoints after it, so an ID is never reused.
	highest int64
	closed  bool
	// corrupt are the checkpoints whose _metadata NewManager found corrupt.
	corrupt map[int64]error
	// pins count the savepoints being written of each retained checkpoint;
	// protected are the checkpoints this run must never delete (restored
	// in NO_CLAIM mode). A pinned or protected checkpoint beyond the
	// retention limit waits in held instead of being discarded.
	pins      map[int64]int
	protected map[int64]bool
	held      []*Metadata
	// claimed is a snapshot outside this job's directory restored in CLAIM
	// mode: deleted once this run completed a checkpoint of its own.
	claimed *Metadata
}

type sharedEntry struct {
	size   int64
	sha256 string
	refs   int
	// ready is non-nil while the first reference's upload runs; it is
	// closed when the upload ends, and err then says how.
	ready chan struct{}
	err   error
}

// inflightCheckpoint is what Persist calls uploaded for a checkpoint that is
// not complete yet.
type inflightCheckpoint struct {
	shared     []string // one entry per reference taken
	private    []string
	aborted    bool
	completing bool
	// doubtful is set when writing the _metadata failed and removing it
	// failed too: the checkpoint may exist, so aborting it keeps its files.
	doubtful bool
}

// metadataCleanupTimeout bounds the removal of a _metadata whose write
// reported an error.
const metadataCleanupTimeout = 30 * time.Second

// Option configures a Manager.
type Option func(*Manager)

// WithLog sends a line per completed checkpoint, and warnings about
// clean-up that failed, to w.
func WithLog(w io.Writer) Option { return func(m *Manager) { m.log = w } }

// WithClock sets the clock that stamps checkpoint metadata.
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithGuard makes every write and deletion of the manager first call guard
// and fail with its error: a run that lost its job's lease must not touch
// files that another run may own now.
func WithGuard(guard func() error) Option { return func(m *Manager) { m.guard = guard } }

// guardedStorage refuses writes and deletions while guard fails.
type guardedStorage struct {
	Storage
	guard func() error
}

func (g guardedStorage) Put(ctx context.Context, p string, data io.Reader, size int64) error {
	if err := g.guard(); err != nil {
		return fmt.Errorf("not writing %s: %w", p, err)
	}
	return g.Storage.Put(ctx, p, data, size)
}

func (g guardedStorage) Delete(ctx context.Context, p string) error {
	if err := g.guard(); err != nil {
		return fmt.Errorf("not deleting %s: %w", p, err)
	}
	return g.Storage.Delete(ctx, p)
}

func (g guardedStorage) location() (string, map[string]string) {
	if ls, ok := g.Storage.(locatedStorage); ok {
		return ls.location()
	}
	return "", nil
}

// WithPlan records a fingerprint of the job's plan in every checkpoint.
func WithPlan(fingerprint string) Option { return func(m *Manager) { m.plan = fingerprint } }

// WithOperators records the identities and state schemas of the job's
// stateful operators in every checkpoint (Metadata.Operators).
func WithOperators(ops []*exec.OperatorState) Option {
	return func(m *Manager) { m.operators = ops }
}

// NewManager opens the checkpoints of job in st. It reads the _metadata of
// every retained checkpoint to rebuild the shared-state registry, removes
// chk-<n> directories that have no _metadata (checkpoints that never
// completed) and shared files no retained checkpoint references. retained
// is state.checkpoints.num-retained; retainOnCancel is true for
// execution.checkpointing.externalized-checkpoint-retention =
// RETAIN_ON_CANCELLATION.
func NewManager(ctx context.Context, st Storage, job string, retained int, retainOnCancel bool, opts ...Option) (*Manager, error) {
	if err := validJobName(job); err != nil {
		return nil, err
	}
	if retained < 1 {
		return nil, fmt.Errorf("invalid value %d for option 'state.checkpoints.num-retained': must be at least 1", retained)
	}
	m := &Manager{
		st: st, job: job, base: job + "/", retained: retained, retainOnCancel: retainOnCancel,
		log: io.Discard, now: time.Now,
		registry: make(map[string]*sharedEntry),
		inflight: make(map[int64]*inflightCheckpoint),
	}
	for _, o := range opts {
		o(m)
	}
	if m.guard != nil {
		m.st = guardedStorage{Storage: st, guard: m.guard}
	}
	scan, err := scanJob(ctx, st, job)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoints of job %q: %w", job, err)
	}
	m.completed = scan.completed
	m.corrupt = scan.corrupt
	for id, err := range scan.corrupt {
		// Its number stays taken, and its files stay for inspection.
		m.highest = max(m.highest, id)
		m.warnf("checkpoint %d is skipped, it cannot be restored: %v", id, err)
	}
	for _, md := range m.completed {
		for _, in := range md.Instances {
			for _, f := range in.Files {
				if !f.Shared {
					continue
				}
				e := m.registry[f.Path]
				if e == nil {
					e = &sharedEntry{size: f.Size, sha256: f.SHA256}
					m.registry[f.Path] = e
				}
				e.refs++
			}
		}
	}
	// Leftovers of checkpoints that never completed: nothing references them.
	for _, p := range scan.incomplete {
		if err := m.st.Delete(ctx, m.base+p); err != nil {
			m.warnf("removing %s of an incomplete checkpoint: %v", m.base+p, err)
		}
	}
	for _, p := range scan.shared {
		// A corrupt _metadata may have referenced any shared file: keep them
		// all rather than delete what a readable copy might still need.
		if m.registry[p] == nil && len(scan.corrupt) == 0 {
			if err := m.st.Delete(ctx, m.base+p); err != nil {
				m.warnf("removing unreferenced shared file %s: %v", m.base+p, err)
			}
		}
	}
	return m, nil
}

// validJobName keeps a job's directory one path element.
func validJobName(job string) error {
	if job == "" || job == "." || job == ".." || strings.ContainsAny(job, "/\\") || strings.IndexFunc(job, func(r rune) bool { return r < ' ' }) >= 0 {
		return fmt.Errorf("job name %q cannot name a checkpoint directory: it must be non-empty and contain no '/', '\\' or control characters (set 'pipeline.name')", job)
	}
	return nil
}

// jobScan is what a job directory holds.
type jobScan struct {
	completed  []*Metadata // ascending id
	incomplete []string    // objects of chk-<n> directories without _metadata
	shared     []string    // shared/… objects
	// corrupt are the checkpoints whose _metadata is corrupt, by id, with
	// the reason; they are neither restored nor deleted.
	corrupt map[int64]error
}

func scanJob(ctx context.Context, st Storage, job string) (*jobScan, error) {
	base := job + "/"
	objs, err := st.List(ctx, base)
	if err != nil {
		return nil, err
	}
	byDir := map[string][]string{}
	var scan jobScan
	for _, o := range objs {
		rel := strings.TrimPrefix(o, base)
		dir, _, ok := strings.Cut(rel, "/")
		if !ok {
			continue
		}
		if dir == sharedDir {
			scan.shared = append(scan.shared, rel)
			continue
		}
		if _, ok := parseChkDir(dir); ok {
			byDir[dir] = append(byDir[dir], rel)
		}
	}
	for dir, files := range byDir {
		if !containsString(files, dir+"/"+MetadataName) {
			scan.incomplete = append(scan.incomplete, files...)
			continue
		}
		id, _ := parseChkDir(dir)
		md, err := readMetadata(ctx, st, base, dir+"/"+MetadataName)
		if err == nil && md.ID != id {
			err = fmt.Errorf("checkpoint metadata %s%s/%s names checkpoint %d: %w", base, dir, MetadataName, md.ID, errCorruptMetadata)
		}
		if errors.Is(err, errCorruptMetadata) {
			if scan.corrupt == nil {
				scan.corrupt = map[int64]error{}
			}
			scan.corrupt[id] = err
			continue
		}
		if err != nil {
			return nil, err
		}
		scan.completed = append(scan.completed, md)
	}
	sort.Slice(scan.completed, func(i, j int) bool { return scan.completed[i].ID < scan.completed[j].ID })
	sort.Strings(scan.incomplete)
	return &scan, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SetMaxParallelism sets the pipeline.max-parallelism recorded in the
// checkpoints completed from now on.
func (m *Manager) SetMaxParallelism(n int) {
	m.mu.Lock()
	m.maxParallelism = n
	m.mu.Unlock()
}

// Job is the job whose checkpoints the manager keeps.
func (m *Manager) Job() string { return m.job }

// Latest returns the newest retained checkpoint, or nil when there is none.
func (m *Manager) Latest(ctx context.Context) (*Metadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.completed) == 0 {
		return nil, nil
	}
	return m.completed[len(m.completed)-1], nil
}

// LatestRestorable returns the newest retained checkpoint with an ID of at
// least minID that can be restored: every file it references exists with
// the recorded size (the SHA-256 is checked when the file is downloaded).
// Newer checkpoints that cannot be restored, or whose _metadata is corrupt,
// are skipped with a warning that says why. It returns nil when there is no
// checkpoint from minID on, and an error wrapping
// exec.ErrCheckpointUnrestorable when there are some but none can be
// restored: starting afresh instead would silently drop the job's state.
func (m *Manager) LatestRestorable(ctx context.Context, minID int64) (*Metadata, error) {
	m.mu.Lock()
	completed := append([]*Metadata(nil), m.completed...)
	var skipped []string
	for id, err := range m.corrupt {
		if id >= minID {
			skipped = append(skipped, fmt.Sprintf("checkpoint %d: %v", id, err))
		}
	}
	m.mu.Unlock()
	sort.Strings(skipped)
	for i := len(completed) - 1; i >= 0; i-- {
		md := completed[i]
		if md.ID < minID {
			break
		}
		problem, err := checkFilesPresent(ctx, md)
		if err != nil {
			return nil, fmt.Errorf("checking checkpoint %d of job %q: %w", md.ID, m.job, err)
		}
		if problem == "" {
			if len(skipped) > 0 {
				m.warnf("restoring checkpoint %d instead of newer ones that cannot be restored (%s); output written after checkpoint %d may be written again", md.ID, strings.Join(skipped, "; "), md.ID)
			}
			return md, nil
		}
		m.warnf("checkpoint %d cannot be restored: %s; trying an older one", md.ID, problem)
		skipped = append(skipped, fmt.Sprintf("checkpoint %d: %s", md.ID, problem))
	}
	if len(skipped) == 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("no retained checkpoint of job %q can be restored (%s): %w; "+
		"delete the job's checkpoint directory to start afresh, or set 'execution.state-recovery.path' to a checkpoint that can be",
		m.job, strings.Join(skipped, "; "), exec.ErrCheckpointUnrestorable)
}

// checkFilesPresent returns what makes md unrestorable short of reading
// every byte: a missing file or one of another size ("" when none).
func checkFilesPresent(ctx context.Context, md *Metadata) (string, error) {
	if md.src == nil {
		return "", nil
	}
	for _, in := range md.Instances {
		for _, f := range in.Files {
			n, ok, err := md.src.Stat(ctx, md.base+f.Path)
			if err != nil {
				return "", err
			}
			if !ok {
				return fmt.Sprintf("its file %s%s (operator %s subtask %d) is missing", md.base, f.Path, in.Operator, in.Subtask), nil
			}
			if n != f.Size {
				return fmt.Sprintf("its file %s%s (operator %s subtask %d) has %d bytes, the checkpoint recorded %d", md.base, f.Path, in.Operator, in.Subtask, n, f.Size), nil
			}
		}
	}
	return "", nil
}

// Retained returns the retained checkpoints, oldest first.
func (m *Manager) Retained() []*Metadata {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Metadata(nil), m.completed...)
}

// NextID is the smallest checkpoint ID above every retained checkpoint and
// every checkpoint this manager saw in flight (an attempt that failed may
// have aborted some). A job restored from an older checkpoint must number its
// new checkpoints from here, not from the restored ID, so it never reuses a
// checkpoint's directory or an aborted ID.
func (m *Manager) NextID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.highest + 1
	if n := len(m.completed); n > 0 {
		next = max(next, m.completed[n-1].ID+1)
	}
	return next
}

// Load reads the checkpoint at pathOrDir (execution.state-recovery.path): a
// chk-<n> directory or its _metadata, as a file:// or s3:// URI, an absolute
// path, or a path relative to the manager's checkpoint directory
// ("<job>/chk-<n>"). Files of the checkpoint are read from where it lies;
// nothing there is changed.
func (m *Manager) Load(ctx context.Context, pathOrDir string) (*Metadata, error) {
	p := strings.TrimRight(pathOrDir, "/")
	p = strings.TrimSuffix(p, "/"+MetadataName)
	if scheme, _ := splitScheme(p); scheme == "" && !strings.HasPrefix(p, "/") {
		rel := path.Clean(p)
		jobDir, chk := path.Split(rel)
		if err := validPath(rel); err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", pathOrDir, err)
		}
		md, err := readMetadata(ctx, m.st, jobDir, chk+"/"+MetadataName)
		if err != nil {
			return nil, fmt.Errorf("loading checkpoint %q: %w", pathOrDir, err)
		}
		return md, nil
	}
	var opts map[string]string
	if ls, ok := m.st.(locatedStorage); ok {
		_, opts = ls.location()
	}
	return Load(ctx, p, opts)
}

// Load reads the checkpoint or savepoint at uri (a file:// or s3:// URI or
// an absolute path: a chk-<n> or savepoint directory, or its _metadata)
// with the storage options opts. It only reads.
func Load(ctx context.Context, uri string, opts map[string]string) (*Metadata, error) {
	p := strings.TrimSuffix(strings.TrimRight(uri, "/"), "/"+MetadataName)
	parent, dir := parentURI(p)
	if parent == "" || dir == "" {
		return nil, fmt.Errorf("checkpoint %q: expected a chk-<n> or savepoint directory or its %s", uri, MetadataName)
	}
	if scheme, _ := splitScheme(parent); scheme == "" && !strings.HasPrefix(parent, "/") {
		return nil, fmt.Errorf("checkpoint %q: expected a file:// or s3:// URI or an absolute path", uri)
	}
	st, err := OpenStorage(ctx, parent, opts)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint %q: %w", uri, err)
	}
	md, err := readMetadata(ctx, st, "", dir+"/"+MetadataName)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint %q: %w", uri, err)
	}
	return md, nil
}

// acquireShared takes a reference to the shared file ref.Path, uploading it
// from local first unless the registry has it. It returns the bytes
// uploaded.
func (m *Manager) acquireShared(ctx context.Context, ref FileRef, local string) (int64, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return 0, errors.New("checkpoint manager is closed")
	}
	if e := m.registry[ref.Path]; e != nil {
		if e.size != ref.Size || (e.sha256 != "" && ref.SHA256 != "" && e.sha256 != ref.SHA256) {
			m.mu.Unlock()
			return 0, fmt.Errorf("shared file %s%s: already registered with %d bytes and SHA-256 %s, now %d bytes and SHA-256 %s (file names must be unique)",
				m.base, ref.Path, e.size, e.sha256, ref.Size, ref.SHA256)
		}
		e.refs++
		ready := e.ready
		m.mu.Unlock()
		if ready == nil {
			return 0, nil
		}
		// Another instance or checkpoint is uploading it right now.
		select {
		case <-ready:
		case <-ctx.Done():
			m.mu.Lock()
			// Only if the entry is still the one referenced: a failed upload
			// removes it, and a later one may have replaced it.
			if m.registry[ref.Path] == e {
				m.releaseSharedLocked(context.Background(), []string{ref.Path})
			}
			m.mu.Unlock()
			return 0, ctx.Err()
		}
		if e.err != nil {
			// The failed uploader removed the entry; this reference went
			// with it.
			return 0, fmt.Errorf("uploading shared file %s%s: %w", m.base, ref.Path, e.err)
		}
		return 0, nil
	}
	e := &sharedEntry{size: ref.Size, sha256: ref.SHA256, refs: 1, ready: make(chan struct{})}
	m.registry[ref.Path] = e
	m.mu.Unlock()

	err := m.upload(ctx, ref.Path, local, ref.Size)

	m.mu.Lock()
	ready := e.ready
	e.ready = nil
	if err != nil {
		e.err = err
		if m.registry[ref.Path] == e {
			delete(m.registry, ref.Path)
		}
	}
	m.mu.Unlock()
	close(ready)
	if err != nil {
		return 0, err
	}
	return ref.Size, nil
}

// releaseSharedLocked drops one reference per path and deletes files no longer
// referenced. Deletion happens under the lock so that a concurrent upload of
// the same name cannot be deleted after it lands.
func (m *Manager) releaseSharedLocked(ctx context.Context, paths []string) {
	for _, p := range paths {
		e := m.registry[p]
		if e == nil {
			continue
		}
		e.refs--
		if e.refs > 0 {
			continue
		}
		delete(m.registry, p)
		if err := m.st.Delete(ctx, m.base+p); err != nil {
			m.warnf("deleting shared file %s: %v", m.base+p, err)
		}
	}
}

// upload copies a local file to the job directory.
func (m *Manager) upload(ctx context.Context, rel, local string, size int64) error {
	f, err := os.Open(local)
	if err != nil {
		return fmt.Errorf("uploading %s: %w", local, err)
	}
	defer f.Close()
	if err := m.st.Put(ctx, m.base+rel, f, size); err != nil {
		return fmt.Errorf("uploading %s: %w", local, err)
	}
	return nil
}

// checkWritable fails when checkpoint id cannot take new files: it was
// aborted, or a retained checkpoint already has the ID.
func (m *Manager) checkWritable(id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("checkpoint manager is closed")
	}
	if c := m.inflight[id]; c != nil && c.aborted {
		return fmt.Errorf("checkpoint %d was aborted", id)
	}
	for _, md := range m.completed {
		if md.ID == id {
			return fmt.Errorf("checkpoint %d of job %q already exists (number new checkpoints from %d)", id, m.job, m.completed[len(m.completed)-1].ID+1)
		}
	}
	return nil
}

// finishPersist records what one instance uploaded for checkpoint id, or
// undoes it when the checkpoint was aborted meanwhile or the upload failed.
func (m *Manager) finishPersist(ctx context.Context, id int64, shared, private []string, failed error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.inflight[id]
	if c == nil {
		c = &inflightCheckpoint{}
		if n := len(m.completed); n > 0 && m.completed[n-1].ID >= id && failed == nil {
			// A straggler of a checkpoint that can no longer complete.
			failed = fmt.Errorf("checkpoint %d is older than the latest completed checkpoint %d", id, m.completed[n-1].ID)
		} else {
			m.inflight[id] = c
			m.highest = max(m.highest, id)
		}
	}
	if failed == nil && c.aborted {
		failed = fmt.Errorf("checkpoint %d was aborted", id)
	}
	if failed == nil && m.closed {
		failed = errors.New("checkpoint manager is closed")
	}
	if failed != nil {
		m.releaseSharedLocked(ctx, shared)
		for _, p := range private {
			if err := m.st.Delete(ctx, m.base+p); err != nil {
				m.warnf("deleting %s of failed checkpoint %d: %v", m.base+p, id, err)
			}
		}
		return failed
	}
	c.shared = append(c.shared, shared...)
	c.private = append(c.private, private...)
	return nil
}

// complete writes the metadata of checkpoint md.ID, registers it and
// subsumes checkpoints beyond the retention limit.
func (m *Manager) complete(ctx context.Context, md *Metadata) error {
	id := md.ID
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("checkpoint manager is closed")
	}
	c := m.inflight[id]
	if c == nil {
		c = &inflightCheckpoint{}
		m.inflight[id] = c
		m.highest = max(m.highest, id)
	}
	if c.aborted {
		m.mu.Unlock()
		return fmt.Errorf("checkpoint %d was aborted", id)
	}
	if c.completing {
		m.mu.Unlock()
		return fmt.Errorf("checkpoint %d is already being completed", id)
	}
	for _, old := range m.completed {
		if old.ID >= id {
			m.mu.Unlock()
			return fmt.Errorf("checkpoint %d of job %q cannot complete: checkpoint %d is already retained", id, m.job, old.ID)
		}
	}
	// Every shared file the metadata names must be held by this checkpoint's
	// own references, or it could vanish under it.
	held := map[string]int{}
	for _, p := range c.shared {
		held[p]++
	}
	for _, in := range md.Instances {
		for _, f := range in.Files {
			if f.Shared && held[f.Path] == 0 {
				m.mu.Unlock()
				return fmt.Errorf("checkpoint %d: shared file %s was not persisted for this checkpoint", id, f.Path)
			}
		}
	}
	c.completing = true
	md.MaxParallelism = m.maxParallelism
	m.mu.Unlock()

	data, err := encodeMetadata(md)
	if err == nil {
		err = m.st.Put(ctx, m.base+md.Dir()+"/"+MetadataName, bytes.NewReader(data), int64(len(data)))
	}
	if err != nil {
		// The storage may have stored the object and still reported an
		// error (a timeout after the upload, a lost response). Left there, a
		// _metadata whose files the abort deletes would be the checkpoint
		// the next start restores, and could not. Remove it; when that fails
		// too, keep every file it references so it stays restorable.
		doubtful := false
		if data != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metadataCleanupTimeout)
			if derr := m.st.Delete(dctx, m.base+md.Dir()+"/"+MetadataName); derr != nil {
				doubtful = true
				m.warnf("writing the metadata of checkpoint %d failed (%v) and removing what may have been written failed too (%v): its files are kept, so that the checkpoint stays restorable if it was stored", id, err, derr)
			}
			cancel()
		}
		m.mu.Lock()
		c.completing = false
		c.doubtful = doubtful
		m.mu.Unlock()
		return fmt.Errorf("writing metadata of checkpoint %d: %w", id, err)
	}

	m.mu.Lock()
	md.src, md.base = m.st, m.base
	// Convert the in-flight references into the checkpoint's: take the
	// checkpoint's first so no count touches zero on the way.
	for _, in := range md.Instances {
		for _, f := range in.Files {
			if f.Shared {
				m.registry[f.Path].refs++
			}
		}
	}
	m.releaseSharedLocked(ctx, c.shared)
	delete(m.inflight, id)
	// Aborted checkpoints before this one hold nothing any more.
	for old, oc := range m.inflight {
		if old < id && oc.aborted {
			delete(m.inflight, old)
		}
	}
	m.completed = append(m.completed, md)
	for len(m.completed) > m.retained {
		if old := m.completed[0]; m.pins[old.ID] > 0 || m.protected[old.ID] {
			m.held = append(m.held, old)
		} else {
			m.discardLocked(ctx, old)
		}
		m.completed = m.completed[1:]
	}
	claimed := m.claimed
	m.claimed = nil
	m.mu.Unlock()
	if claimed != nil {
		m.deleteClaimed(ctx, claimed)
	}

	m.logf("Completed checkpoint %d for job %s (full %d bytes, uploaded %d bytes, sync %s, async %s)",
		id, m.job, md.FullBytes, md.UploadedBytes, md.SyncDuration.Round(time.Microsecond), md.AsyncDuration.Round(time.Microsecond))
	return nil
}

// discardLocked deletes a retained checkpoint: its _metadata first, so it
// stops existing at once, then its private files, then its references to
// shared files.
func (m *Manager) discardLocked(ctx context.Context, md *Metadata) {
	dir := m.base + md.Dir()
	if err := m.st.Delete(ctx, dir+"/"+MetadataName); err != nil {
		m.warnf("deleting %s/%s: %v", dir, MetadataName, err)
		// Keep its files: the checkpoint may still be visible.
		return
	}
	var shared []string
	for _, in := range md.Instances {
		for _, f := range in.Files {
			if f.Shared {
				shared = append(shared, f.Path)
			} else if err := m.st.Delete(ctx, m.base+f.Path); err != nil {
				m.warnf("deleting %s: %v", m.base+f.Path, err)
			}
		}
	}
	m.releaseSharedLocked(ctx, shared)
}

// abort forgets checkpoint id: the private files its instances uploaded are
// deleted and its references to shared files released.
func (m *Manager) abort(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.inflight[id]
	if c == nil {
		c = &inflightCheckpoint{}
		m.inflight[id] = c
		m.highest = max(m.highest, id)
	}
	if c.completing || c.aborted {
		return
	}
	c.aborted = true
	if c.doubtful {
		// Its references stay taken: the files must outlive this run.
		c.shared, c.private = nil, nil
		return
	}
	ctx := context.Background()
	for _, p := range c.private {
		if err := m.st.Delete(ctx, m.base+p); err != nil {
			m.warnf("deleting %s of aborted checkpoint %d: %v", m.base+p, id, err)
		}
	}
	m.releaseSharedLocked(ctx, c.shared)
	c.shared, c.private = nil, nil
}

// Close ends the manager. When the job was cancelled and checkpoints are not
// retained on cancellation (DELETE_ON_CANCELLATION), every checkpoint of the
// job is deleted.
func (m *Manager) Close(cancelled bool) error {
	return m.close(cancelled && !m.retainOnCancel)
}

// Discard deletes every checkpoint of the job and closes the manager: a job
// that finished leaves nothing to resume from, as in Flink.
func (m *Manager) Discard() error { return m.close(true) }

func (m *Manager) close(discard bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if !discard {
		return nil
	}
	ctx := context.Background()
	// Metadata first, oldest first, so no checkpoint is left half deleted.
	keep := map[string]bool{}
	for _, md := range append(m.held, m.completed...) {
		if m.protected[md.ID] {
			keep[m.base+md.Dir()+"/"+MetadataName] = true
			for _, in := range md.Instances {
				for _, f := range in.Files {
					keep[m.base+f.Path] = true
				}
			}
			continue
		}
		m.discardLocked(ctx, md)
	}
	m.completed, m.held = nil, nil
	objs, err := m.st.List(ctx, m.base)
	if err != nil {
		return fmt.Errorf("deleting checkpoints of job %q: %w", m.job, err)
	}
	var errs []error
	for _, o := range objs {
		if keep[o] {
			continue
		}
		if err := m.st.Delete(ctx, o); err != nil {
			errs = append(errs, err)
		}
	}
	m.registry = map[string]*sharedEntry{}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting checkpoints of job %q: %w", m.job, err)
	}
	return nil
}

func (m *Manager) warnf(format string, args ...any) {
	m.logf("checkpoint warning: job %s: "+format, append([]any{m.job}, args...)...)
}

// logf writes one line; lines from concurrent Persist and Complete calls
// must not interleave.
func (m *Manager) logf(format string, args ...any) {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	fmt.Fprintf(m.log, format+"\n", args...)
}

// Pin keeps retained checkpoint id from being deleted until release is
// called (a savepoint is being written of it). It fails when the
// checkpoint is no longer retained.
func (m *Manager) Pin(id int64) (*Metadata, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var md *Metadata
	for _, c := range m.completed {
		if c.ID == id {
			md = c
		}
	}
	if md == nil {
		return nil, nil, fmt.Errorf("checkpoint %d of job %q is no longer retained", id, m.job)
	}
	if m.pins == nil {
		m.pins = map[int64]int{}
	}
	m.pins[id]++
	var once sync.Once
	return md, func() { once.Do(func() { m.unpin(id) }) }, nil
}

func (m *Manager) unpin(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pins[id]--
	if m.pins[id] > 0 {
		return
	}
	delete(m.pins, id)
	for i, md := range m.held {
		if md.ID == id && !m.protected[id] {
			m.held = append(m.held[:i], m.held[i+1:]...)
			if !m.closed {
				m.discardLocked(context.Background(), md)
			}
			return
		}
	}
}

// Protect makes the manager never delete md, when it is one of its
// retained checkpoints (a restore in NO_CLAIM mode): it is neither
// subsumed nor removed when the job's checkpoints are discarded. It
// reports whether md is one of them.
func (m *Manager) Protect(md *Metadata) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.completed {
		if c.ID == md.ID && c.Location() == md.Location() {
			if m.protected == nil {
				m.protected = map[int64]bool{}
			}
			m.protected[c.ID] = true
			return true
		}
	}
	return false
}

// NumberAfter makes new checkpoint IDs greater than id: a job restored
// from a snapshot of another run continues its numbering, as Flink does.
func (m *Manager) NumberAfter(id int64) {
	m.mu.Lock()
	m.highest = max(m.highest, id)
	m.mu.Unlock()
}

// Owns reports whether md is one of the manager's retained checkpoints.
func (m *Manager) Owns(md *Metadata) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.completed {
		if c.ID == md.ID && c.Location() == md.Location() {
			return true
		}
	}
	return false
}

// Claim hands md, a restored snapshot outside this job's checkpoints, to
// the manager (CLAIM mode): once the run completed a checkpoint of its own,
// which subsumes it, md is deleted: its _metadata first, then its files (a
// checkpoint's shared files excepted, which other checkpoints of its job
// may reference).
func (m *Manager) Claim(md *Metadata) {
	m.mu.Lock()
	m.claimed = md
	m.mu.Unlock()
}

func (m *Manager) deleteClaimed(ctx context.Context, md *Metadata) {
	meta := md.base + md.Dir() + "/" + MetadataName
	if md.Type == TypeSavepoint {
		meta = md.base + MetadataName
	}
	if err := md.src.Delete(ctx, meta); err != nil {
		m.warnf("deleting the claimed snapshot %s: %v", meta, err)
		return
	}
	for _, in := range md.Instances {
		for _, f := range in.Files {
			if f.Shared && md.Type != TypeSavepoint {
				continue
			}
			if err := md.src.Delete(ctx, md.base+f.Path); err != nil {
				m.warnf("deleting %s of the claimed snapshot: %v", md.base+f.Path, err)
			}
		}
	}
	m.logf("Deleted the restored snapshot %s, claimed by job %s (execution.state-recovery.claim-mode CLAIM), now that checkpoints of its own subsume it", strings.TrimSuffix(meta, "/"+MetadataName), m.job)
}
