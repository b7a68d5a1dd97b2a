package exec

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
)

// memStore is an in-memory CheckpointStore for tests. Instance states keep
// their live entries in a map; Seal copies them into an image, Persist
// hands the image over as the ack's handle, Complete files the images of a
// checkpoint. A store made by restoredFrom serves a completed checkpoint's
// images as the restored state.
type memStore struct {
	mu        sync.Mutex
	restore   map[instKey]*memImage
	completed map[CheckpointID]map[instKey]*memImage
	order     []CheckpointID // completed, in order
	aborted   []CheckpointID
	opened    map[instKey]int
	closed    int

	// Hooks, when set: persistHook runs in Persist (it may block on ctx),
	// completeHook in Complete.
	persistHook  func(ctx context.Context, id CheckpointID, k instKey) error
	completeHook func(id CheckpointID) error

	// Keyed instances (OpenKeyedInstance) are real kv backends of kind
	// (hashmap when empty) working under root/work; their persisted
	// images are copied under root/chk. Set by withKeyed.
	kind image.Kind
	root string
	// keyedOpen counts the keyed backends open now.
	keyedOpen int
}

type instKey struct {
	op      OperatorID
	subtask int
}

type entryKey struct {
	kg  int
	key string
}

type memImage struct {
	entries map[entryKey][]byte
	pos     []byte
	// keyed is the image of a keyed instance's backend (OpenKeyedInstance).
	keyed *memKeyedImage
}

// memKeyedImage is a persisted kv image: its files copied into dir, and
// the backend's entries when it was sealed.
type memKeyedImage struct {
	kind    image.Kind
	dir     string
	files   []image.File
	entries []string
	size    kv.Sizes
}

func newMemStore() *memStore {
	return &memStore{completed: map[CheckpointID]map[instKey]*memImage{}, opened: map[instKey]int{}}
}

// restoredFrom returns a new store that restores checkpoint id of s.
func (s *memStore) restoredFrom(id CheckpointID) *memStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := newMemStore()
	ns.kind, ns.root = s.kind, s.root
	ns.restore = s.completed[id]
	if ns.restore == nil {
		panic(fmt.Sprintf("checkpoint %d did not complete", id))
	}
	// Keep the earlier checkpoints, as a real store retains them.
	for cid, imgs := range s.completed {
		ns.completed[cid] = imgs
	}
	return ns
}

// withKeyed makes s keep keyed instances on real backends of kind under
// root (a test's temporary directory).
func (s *memStore) withKeyed(kind image.Kind, root string) *memStore {
	s.kind, s.root = kind, root
	return s
}

func (s *memStore) dir(what string) (string, error) {
	d, err := os.MkdirTemp(s.root, what+"-")
	if err != nil {
		return "", fmt.Errorf("memStore: %w", err)
	}
	return filepath.Join(d, "db"), nil
}

// OpenKeyedInstance implements KeyedCheckpointStore: a fresh backend, or
// one restored from the restored checkpoint's image of the instance (its
// files copied into a working directory, as a download would).
func (s *memStore) OpenKeyedInstance(op OperatorID, subtask, parallelism int, cfg kv.Config) (KeyedInstance, error) {
	if s.root == "" {
		return nil, fmt.Errorf("memStore: keyed instance %s/%d opened without withKeyed", op, subtask)
	}
	cfg.Kind = s.kind
	if cfg.Kind == "" {
		cfg.Kind = image.Hashmap
	}
	var err error
	if cfg.Dir, err = s.dir("work"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	img := s.restore[instKey{op, subtask}]
	s.mu.Unlock()
	in := &memKeyedInstance{store: s, key: instKey{op, subtask}}
	if img == nil {
		in.b, err = kv.Open(cfg)
	} else {
		if img.keyed == nil {
			return nil, fmt.Errorf("memStore: the restored image of %s/%d is not a keyed backend's", op, subtask)
		}
		if err := copyFiles(img.keyed.dir, cfg.Dir, img.keyed.files); err != nil {
			return nil, err
		}
		in.b, err = kv.Restore(cfg, img.keyed.files)
		in.restored = true
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.opened[in.key]++
	s.keyedOpen++
	s.mu.Unlock()
	return in, nil
}

func copyFiles(from, to string, files []image.File) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		src, err := os.Open(filepath.Join(from, f.LocalName))
		if err != nil {
			return err
		}
		dst, err := os.Create(filepath.Join(to, f.LocalName))
		if err == nil {
			_, err = io.Copy(dst, src)
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

type memKeyedInstance struct {
	store    *memStore
	key      instKey
	b        *kv.Backend
	restored bool
}

func (in *memKeyedInstance) Backend() *kv.Backend { return in.b }
func (in *memKeyedInstance) Restored() bool       { return in.restored }

func (in *memKeyedInstance) Seal(id CheckpointID) (SealedState, error) {
	entries, err := dumpBackend(in.b)
	if err != nil {
		return nil, err
	}
	im, err := in.b.Snapshot(int64(id))
	if err != nil {
		return nil, err
	}
	return &memKeyedSealed{in: in, id: id, im: im, entries: entries}, nil
}

func (in *memKeyedInstance) Close() error {
	in.store.mu.Lock()
	in.store.closed++
	in.store.keyedOpen--
	in.store.mu.Unlock()
	return in.b.Close()
}

// dumpBackend lists b's live entries as "kg state key/ns/uk=value".
func dumpBackend(b *kv.Backend) ([]string, error) {
	var out []string
	err := b.Entries(b.KeyGroups(), func(e kv.Entry) error {
		out = append(out, fmt.Sprintf("%d %s %x/%x/%x=%x", e.KeyGroup, e.State, e.Key, e.Namespace, e.UserKey, e.Value))
		return nil
	})
	return out, err
}

type memKeyedSealed struct {
	in      *memKeyedInstance
	id      CheckpointID
	im      *image.Image
	entries []string
}

func (s *memKeyedSealed) Persist(ctx context.Context) (InstanceAck, error) {
	if h := s.in.store.persistHook; h != nil {
		if err := h(ctx, s.id, s.in.key); err != nil {
			return InstanceAck{}, err
		}
	}
	if err := s.im.Finish(); err != nil {
		return InstanceAck{}, err
	}
	dir, err := s.in.store.dir("chk")
	if err != nil {
		return InstanceAck{}, err
	}
	if err := copyFiles(s.im.Dir, dir, s.im.Files); err != nil {
		return InstanceAck{}, err
	}
	img := &memImage{keyed: &memKeyedImage{kind: s.im.Kind, dir: dir, files: slices.Clone(s.im.Files), entries: s.entries}}
	return InstanceAck{Op: s.in.key.op, Subtask: s.in.key.subtask, Handle: img, FullBytes: s.im.Bytes, UploadedBytes: s.im.Bytes}, nil
}

func (s *memKeyedSealed) Discard() { _ = s.im.Discard() }

func (s *memStore) OpenInstance(op OperatorID, subtask, parallelism int) (InstanceState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := instKey{op, subtask}
	s.opened[k]++
	in := &memInstance{store: s, key: k, live: map[entryKey][]byte{}, full: true}
	if img, ok := s.restore[k]; ok {
		in.restored = img
		for ek, v := range img.entries {
			in.live[ek] = v
		}
		in.full = false
	}
	return in, nil
}

func (s *memStore) Complete(_ context.Context, id CheckpointID, acks []InstanceAck) error {
	if s.completeHook != nil {
		if err := s.completeHook(id); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	imgs := map[instKey]*memImage{}
	for _, a := range acks {
		img := a.Handle.(*memImage)
		if img.keyed != nil && a.StateSize != nil {
			img.keyed.size = *a.StateSize
		}
		imgs[instKey{a.Op, a.Subtask}] = img
	}
	s.completed[id] = imgs
	s.order = append(s.order, id)
	return nil
}

func (s *memStore) Abort(id CheckpointID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = append(s.aborted, id)
}

func (s *memStore) isCompleted(id CheckpointID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed[id] != nil
}

// completedSince reports whether a checkpoint ≥ id completed (committables
// of an aborted checkpoint are committed with the next completed one).
func (s *memStore) completedSince(id CheckpointID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for cid := range s.completed {
		if cid >= id {
			return true
		}
	}
	return false
}

func (s *memStore) completedIDs() []CheckpointID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

func (s *memStore) abortedIDs() []CheckpointID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.aborted)
}

// image returns an instance's image in completed checkpoint id.
func (s *memStore) image(id CheckpointID, op OperatorID, subtask int) *memImage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed[id][instKey{op, subtask}]
}

// instances lists the instances of completed checkpoint id.
func (s *memStore) instances(id CheckpointID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.completed[id] {
		out = append(out, fmt.Sprintf("%s/%d", k.op, k.subtask))
	}
	sort.Strings(out)
	return out
}

type memInstance struct {
	store    *memStore
	key      instKey
	live     map[entryKey][]byte
	full     bool
	restored *memImage
}

func (in *memInstance) Restored() (StateReader, []byte, bool) {
	if in.restored == nil {
		return nil, nil, false
	}
	return memReader{in.restored.entries}, in.restored.pos, true
}

func (in *memInstance) Writer() StateWriter { return memWriter{in} }

func (in *memInstance) Seal(id CheckpointID, position []byte) (SealedState, error) {
	img := &memImage{entries: make(map[entryKey][]byte, len(in.live)), pos: slices.Clone(position)}
	for k, v := range in.live {
		img.entries[k] = v
	}
	in.full = false
	return &memSealed{in: in, id: id, img: img}, nil
}

func (in *memInstance) Close() error {
	in.store.mu.Lock()
	in.store.closed++
	in.store.mu.Unlock()
	return nil
}

type memWriter struct{ in *memInstance }

func (w memWriter) Full() bool { return w.in.full }
func (w memWriter) Put(kg int, key, value []byte) error {
	w.in.live[entryKey{kg, string(key)}] = slices.Clone(value)
	return nil
}
func (w memWriter) Delete(kg int, key []byte) error {
	delete(w.in.live, entryKey{kg, string(key)})
	return nil
}

type memReader struct{ entries map[entryKey][]byte }

func (r memReader) Each(fn func(kg int, key, value []byte) error) error {
	keys := make([]entryKey, 0, len(r.entries))
	for k := range r.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kg != keys[j].kg {
			return keys[i].kg < keys[j].kg
		}
		return keys[i].key < keys[j].key
	})
	for _, k := range keys {
		if err := fn(k.kg, []byte(k.key), r.entries[k]); err != nil {
			return err
		}
	}
	return nil
}

type memSealed struct {
	in  *memInstance
	id  CheckpointID
	img *memImage
}

func (s *memSealed) Persist(ctx context.Context) (InstanceAck, error) {
	if h := s.in.store.persistHook; h != nil {
		if err := h(ctx, s.id, s.in.key); err != nil {
			return InstanceAck{}, err
		}
	}
	n := 0
	for k, v := range s.img.entries {
		n += len(k.key) + len(v)
	}
	return InstanceAck{Op: s.in.key.op, Subtask: s.in.key.subtask, Handle: s.img, FullBytes: int64(n), UploadedBytes: int64(n)}, nil
}

func (s *memSealed) Discard() {}

// entryStrings renders an image's entries as "kg:key=value", sorted.
func (img *memImage) entryStrings() []string {
	var out []string
	for k, v := range img.entries {
		out = append(out, fmt.Sprintf("%d:%s=%s", k.kg, k.key, v))
	}
	sort.Strings(out)
	return out
}

func joinIDs(ids []CheckpointID) string {
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, int64(id))
	}
	return sb.String()
}
