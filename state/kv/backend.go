package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/flinksql/flinksql/state/image"
)

// Config configures a Backend.
type Config struct {
	// Kind is the backend: image.Hashmap or image.RocksDB.
	Kind image.Kind
	// Dir is the backend's working directory, which must not exist or be
	// empty (Open), or hold the downloaded image files (Restore). Images
	// are created inside it.
	Dir string
	// MaxParallelism is the number of key groups (pipeline.max-parallelism);
	// 0 means DefaultMaxParallelism.
	MaxParallelism int
	// KeyGroups is the range of key groups this operator instance owns;
	// nil means all of them.
	KeyGroups *KeyGroupRange
	// MemoryBudget bounds the memory of a rocksdb backend: its write-back
	// cache, Pebble's block cache and memtables are sized inside it. At
	// least MinMemoryBudget; ignored (and must be 0) for hashmap, whose
	// state is bounded only by the process.
	MemoryBudget int64
	// CacheBytes, when not 0, overrides the write-back cache's share of
	// MemoryBudget (tests and tuning).
	CacheBytes int64
	// Clock returns the processing time in milliseconds, for state TTL;
	// nil means the wall clock.
	Clock func() int64
	// SumsVerified says that Restore's caller compared every file with its
	// recorded checksum while it downloaded it; Restore then checks names
	// and sizes only instead of reading every byte again.
	SumsVerified bool
	// FullFirstSnapshot makes a restored rocksdb backend's first snapshot
	// a full one: the restored SSTs get upload names of this incarnation
	// instead of keeping the image's, so no checkpoint after the restore
	// references a file of the restored one (NO_CLAIM restores).
	FullFirstSnapshot bool
	// bytewiseDB makes Open create a rocksdb DB with Pebble's bytewise
	// comparer, as versions before bucket filters did (tests of their
	// images).
	bytewiseDB bool
}

// MinMemoryBudget is the smallest MemoryBudget a rocksdb backend accepts.
const MinMemoryBudget = 4 << 20

// Options are the per-state options of a declaration.
type Options struct {
	// TTL is the state's time-to-live (table.exec.state.ttl) with Flink's
	// semantics: the timer restarts on create and on write (OnCreateAndWrite,
	// not on read), and an expired entry is never returned
	// (NeverReturnExpired); it is removed when read, by an incremental
	// cleanup, and left out of hashmap images. 0 disables it. A state
	// declared with a TTL cannot be restored without one and vice versa:
	// the stored format differs.
	TTL time.Duration
}

// stateKind is the kind of a declared state.
type stateKind uint8

const (
	kindValue stateKind = iota + 1
	kindList
	kindMap
	kindSortedMap
)

func (k stateKind) String() string {
	switch k {
	case kindValue:
		return "value"
	case kindList:
		return "list"
	case kindMap:
		return "map"
	case kindSortedMap:
		return "sorted map"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k stateKind) hasUserKey() bool { return k == kindMap || k == kindSortedMap }

// declaration is a state's registry entry.
type declaration struct {
	name  string
	kind  stateKind
	sid   uint16
	ttl   int64 // ms, 0 none
	codec string
	live  bool // declared by this incarnation
}

// registry value: [version 1][kind 1][sid 2][ttl ms 8][codec id...]
const registryVersion = 1

func (d *declaration) encode() []byte {
	v := []byte{registryVersion, byte(d.kind)}
	v = binary.BigEndian.AppendUint16(v, d.sid)
	v = binary.BigEndian.AppendUint64(v, uint64(d.ttl))
	return append(v, d.codec...)
}

func decodeDeclaration(name string, v []byte) (*declaration, error) {
	if len(v) < 12 || v[0] != registryVersion {
		return nil, fmt.Errorf("state %q: unreadable declaration %x", name, prefix32(v))
	}
	d := &declaration{name: name, kind: stateKind(v[1]), sid: binary.BigEndian.Uint16(v[2:]),
		ttl: int64(binary.BigEndian.Uint64(v[4:])), codec: string(v[12:])}
	if d.kind < kindValue || d.kind > kindSortedMap || (d.sid&mapStateBit != 0) != d.kind.hasUserKey() {
		return nil, fmt.Errorf("state %q: declaration has kind %s with state id %#x", name, d.kind, d.sid)
	}
	return d, nil
}

// Backend is the keyed state of one operator instance. It is not safe for
// concurrent use: the instance's task goroutine drives it. See the package
// comment.
type Backend struct {
	kind   image.Kind
	budget int64
	dir    string
	eng    engine
	maxPar int
	kgs    KeyGroupRange
	clock  func() int64

	byName map[string]*declaration
	// ttls is the TTL in ms by state id (map-state ids folded in with
	// ttlIndex), 0 for none; ttlAny says whether any is set.
	ttls   []int64
	kinds  []stateKind
	ttlAny bool
	next   [2]uint16 // next free state id: without, with user keys

	sweep func(k, v []byte) bool // expiredNow, bound once
	now   int64                  // the time the last write was stamped with

	cur     []byte // [key group][state id placeholder][uvarint len][key]
	hasKey  bool
	scratch []byte
	vbuf    []byte
	closed  bool
}

func ttlIndex(sid uint16) int {
	if sid&mapStateBit != 0 {
		return int(sid&^mapStateBit)*2 + 1
	}
	return int(sid) * 2
}

// Open creates an empty backend.
func Open(cfg Config) (*Backend, error) {
	b, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	if err := image.PrepareEmptyDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("kv: opening %s backend: %w", cfg.Kind, err)
	}
	switch cfg.Kind {
	case image.Hashmap:
		b.eng, err = openHeap(cfg.Dir)
	case image.RocksDB:
		b.eng, err = openPebble(cfg.Dir, cfg, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("kv: opening %s backend in %s: %w", cfg.Kind, cfg.Dir, err)
	}
	return b, nil
}

// Restore opens a backend from an image whose files were downloaded into
// cfg.Dir under their LocalName. Every file is checked against its recorded
// size and checksum first. A rocksdb backend opens the DB without reading
// its entries; a hashmap backend loads them.
func Restore(cfg Config, files []image.File) (*Backend, error) {
	b, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	if err := image.CheckFiles(cfg.Dir, files, !cfg.SumsVerified); err != nil {
		return nil, fmt.Errorf("kv: restoring %s backend: %w", cfg.Kind, err)
	}
	switch cfg.Kind {
	case image.Hashmap:
		b.eng, err = restoreHeap(cfg.Dir, files)
	case image.RocksDB:
		b.eng, err = openPebble(cfg.Dir, cfg, files)
	}
	if err == nil {
		err = b.readRegistry()
	}
	if err != nil {
		if b.eng != nil {
			_ = b.eng.close()
		}
		return nil, fmt.Errorf("kv: restoring %s backend in %s from %d files: %w", cfg.Kind, cfg.Dir, len(files), err)
	}
	return b, nil
}

func newBackend(cfg Config) (*Backend, error) {
	b := &Backend{kind: cfg.Kind, budget: cfg.MemoryBudget, dir: cfg.Dir, maxPar: cfg.MaxParallelism, clock: cfg.Clock, byName: make(map[string]*declaration)}
	if b.maxPar == 0 {
		b.maxPar = DefaultMaxParallelism
	}
	if b.maxPar < 1 || b.maxPar > MaxKeyGroups {
		return nil, fmt.Errorf("kv: max parallelism %d out of range [1, %d]", b.maxPar, MaxKeyGroups)
	}
	b.kgs = KeyGroupRange{0, b.maxPar - 1}
	if cfg.KeyGroups != nil {
		b.kgs = *cfg.KeyGroups
		if b.kgs.First < 0 || b.kgs.Last >= b.maxPar || b.kgs.First > b.kgs.Last {
			return nil, fmt.Errorf("kv: key-group range [%d, %d] is not within [0, %d]", b.kgs.First, b.kgs.Last, b.maxPar-1)
		}
	}
	if b.clock == nil {
		b.clock = func() int64 { return time.Now().UnixMilli() }
	}
	b.sweep = b.expiredNow
	switch cfg.Kind {
	case image.Hashmap:
		if cfg.MemoryBudget != 0 || cfg.CacheBytes != 0 {
			return nil, errors.New("kv: a hashmap backend takes no memory budget (its state lives on the heap)")
		}
	case image.RocksDB:
		if cfg.MemoryBudget < MinMemoryBudget {
			return nil, fmt.Errorf("kv: a rocksdb backend needs a memory budget of at least %d bytes, got %d", MinMemoryBudget, cfg.MemoryBudget)
		}
	default:
		return nil, fmt.Errorf("kv: unknown state backend %q", cfg.Kind)
	}
	return b, nil
}

// readRegistry loads the declarations of a restored backend.
func (b *Backend) readRegistry() error {
	hi := append(registryPrefix[:len(registryPrefix)-1:len(registryPrefix)-1], registryPrefix[len(registryPrefix)-1]+1)
	return b.eng.each(registryPrefix, hi, func(k, v []byte) error {
		name := string(k[len(registryPrefix):])
		d, err := decodeDeclaration(name, v)
		if err != nil {
			return err
		}
		for _, o := range b.byName {
			if o.sid == d.sid {
				return fmt.Errorf("states %q and %q share state id %#x", o.name, name, d.sid)
			}
		}
		b.byName[name] = d
		b.setTTL(d)
		slot := 0
		if d.kind.hasUserKey() {
			slot = 1
		}
		b.next[slot] = max(b.next[slot], (d.sid&^mapStateBit)+1)
		return nil
	})
}

// declare registers a state, or takes over the restored one of that name.
func (b *Backend) declare(name string, kind stateKind, codec string, opts Options) (*declaration, error) {
	if b.closed {
		return nil, errors.New("kv: backend is closed")
	}
	if name == "" {
		return nil, errors.New("kv: a state needs a name")
	}
	ttl := opts.TTL.Milliseconds()
	if opts.TTL < 0 || (opts.TTL > 0 && ttl == 0) {
		return nil, fmt.Errorf("kv: state %q: TTL %v must be 0 or at least 1 ms", name, opts.TTL)
	}
	d := b.byName[name]
	switch {
	case d != nil && d.live:
		return nil, fmt.Errorf("kv: state %q is declared twice", name)
	case d != nil:
		if d.kind != kind || d.codec != codec {
			return nil, fmt.Errorf("kv: state %q was written as %s state with codec %q and is now declared as %s state with codec %q; it cannot be read that way",
				name, d.kind, d.codec, kind, codec)
		}
		if (d.ttl > 0) != (ttl > 0) {
			return nil, fmt.Errorf("kv: state %q was written with TTL %v and is now declared with TTL %v; enabling or disabling state TTL on existing state is not supported",
				name, time.Duration(d.ttl)*time.Millisecond, opts.TTL)
		}
		d.ttl = ttl
	default:
		slot, base := 0, uint16(0)
		if kind.hasUserKey() {
			slot, base = 1, mapStateBit
		}
		if b.next[slot] >= mapStateBit {
			return nil, fmt.Errorf("kv: state %q: too many states", name)
		}
		d = &declaration{name: name, kind: kind, sid: base | b.next[slot], ttl: ttl, codec: codec}
		b.next[slot]++
		b.byName[name] = d
	}
	d.live = true
	k := append(append(b.scratch[:0], registryPrefix...), name...)
	b.scratch = k
	if err := b.eng.put(k, d.encode()); err != nil {
		return nil, fmt.Errorf("kv: declaring state %q: %w", name, err)
	}
	b.setTTL(d)
	return d, nil
}

// setTTL records d's TTL and kind by state id.
func (b *Backend) setTTL(d *declaration) {
	i := ttlIndex(d.sid)
	for len(b.ttls) <= i {
		b.ttls = append(b.ttls, 0)
		b.kinds = append(b.kinds, 0)
	}
	b.ttls[i], b.kinds[i] = d.ttl, d.kind
	b.ttlAny = b.ttlAny || d.ttl > 0
}

// Declaration describes a declared state: what a snapshot's entries of it
// are (its state schema).
type Declaration struct {
	Name  string        `json:"name"`
	Kind  string        `json:"kind"`  // value, list, map, sorted map
	Codec string        `json:"codec"` // the codec's ID
	TTL   time.Duration `json:"ttl,omitempty"`
}

// Declarations lists the states the backend holds (declared now or
// restored), by name.
func (b *Backend) Declarations() []Declaration {
	out := make([]Declaration, 0, len(b.byName))
	for _, d := range b.byName {
		out = append(out, Declaration{Name: d.name, Kind: d.kind.String(), Codec: d.codec, TTL: time.Duration(d.ttl) * time.Millisecond})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MaxParallelism is the number of key groups.
func (b *Backend) MaxParallelism() int { return b.maxPar }

// Kind is the backend's kind (image.Hashmap or image.RocksDB).
func (b *Backend) Kind() image.Kind { return b.kind }

// MemoryBudget is a rocksdb backend's memory budget (0 for hashmap, whose
// state is bounded only by the process). An operator that keeps decoded
// entries of its own in front of the backend sizes that cache from it.
func (b *Backend) MemoryBudget() int64 { return b.budget }

// KeyGroups is the key-group range the backend owns.
func (b *Backend) KeyGroups() KeyGroupRange { return b.kgs }

// SetCurrentKey makes key the key that state accesses address until the
// next call. hash is the key's types.HashColumns hash, which the key group
// follows from (KeyGroupOf). key is copied.
func (b *Backend) SetCurrentKey(hash uint64, key []byte) error {
	return b.SetCurrentKeyInGroup(KeyGroupOf(hash, b.maxPar), key)
}

// SetCurrentKeyInGroup is SetCurrentKey for a caller that knows the key
// group already (timers, replays of Entries).
func (b *Backend) SetCurrentKeyInGroup(kg int, key []byte) error {
	if !b.kgs.Contains(kg) {
		b.hasKey = false
		return fmt.Errorf("kv: key %x is in key group %d, outside this instance's key groups [%d, %d]", prefix32(key), kg, b.kgs.First, b.kgs.Last)
	}
	c := binary.BigEndian.AppendUint16(b.cur[:0], uint16(kg))
	c = append(c, 0, 0)
	b.cur = appendUvarintBytes(c, key)
	b.hasKey = true
	return nil
}

var errNoKey = errors.New("kv: state accessed with no current key (SetCurrentKey)")

// bucket returns, in b.scratch, the stored key of sid for the current key
// and namespace ns, without user key.
func (b *Backend) bucket(sid uint16, ns []byte) ([]byte, error) {
	if !b.hasKey {
		return nil, errNoKey
	}
	k := append(b.scratch[:0], b.cur...)
	binary.BigEndian.PutUint16(k[kgLen:], sid)
	k = appendUvarintBytes(k, ns)
	b.scratch = k
	return k, nil
}

// expiredAt reports whether the TTL'd value v of state index i is expired
// at now.
func expiredAt(ttl int64, v []byte, now int64) bool {
	return len(v) >= ttlLen && int64(binary.BigEndian.Uint64(v))+ttl <= now
}

// listExpired reports whether every element of the TTL'd list v is
// expired at now.
func listExpired(ttl int64, v []byte, now int64) bool {
	for rest := v; len(rest) > 0; {
		if len(rest) < ttlLen {
			return false // malformed: leave it to the reader to report
		}
		if int64(binary.BigEndian.Uint64(rest))+ttl > now {
			return false
		}
		n, w := binary.Uvarint(rest[ttlLen:])
		if w <= 0 || n > uint64(len(rest)-ttlLen-w) {
			return false
		}
		rest = rest[ttlLen+w+int(n):]
	}
	return true
}

// entryExpired reports whether the entry k, v is expired at now, given
// the TTLs and kinds by state index. A list is expired when all its
// elements are.
func entryExpired(ttls []int64, kinds []stateKind, k, v []byte, now int64) bool {
	if len(k) < kgLen+sidLen || storedKeyGroup(k) == KeyGroupNone {
		return false
	}
	i := ttlIndex(binary.BigEndian.Uint16(k[kgLen:]))
	if i >= len(ttls) || ttls[i] == 0 {
		return false
	}
	if kinds[i] == kindList {
		return listExpired(ttls[i], v, now)
	}
	return expiredAt(ttls[i], v, now)
}

// expiredFunc tells expired entries as of now, for snapshots and cleanup;
// it holds its own copy of the TTLs, so it may run on another goroutine.
func (b *Backend) expiredFunc() func(k, v []byte) bool {
	if !b.ttlAny {
		return nil
	}
	ttls, kinds, now := append([]int64(nil), b.ttls...), append([]stateKind(nil), b.kinds...), b.clock()
	return func(k, v []byte) bool { return entryExpired(ttls, kinds, k, v, now) }
}

// cleanupPerWrite is how many entries the incremental TTL cleanup examines
// per write (Flink's heap incremental cleanup examines a few per access).
const cleanupPerWrite = 2

// afterWrite runs the incremental TTL cleanup of a hashmap backend, as of
// the time the write was stamped with.
func (b *Backend) afterWrite() error {
	if !b.ttlAny || b.kind != image.Hashmap {
		return nil
	}
	return b.eng.cleanup(cleanupPerWrite, b.sweep)
}

// expiredNow is expiredFunc's test for synchronous use, without copies,
// as of b.now.
func (b *Backend) expiredNow(k, v []byte) bool {
	return entryExpired(b.ttls, b.kinds, k, v, b.now)
}

// snapshotCleanup is how many entries a rocksdb snapshot examines for
// expired ones (Pebble has no compaction filter to drop them).
const snapshotCleanup = 10_000

// Snapshot seals an image of every entry for checkpoint id, which must be
// greater than the previous snapshot's. For rocksdb it flushes the dirty
// cache and takes a Pebble checkpoint whose SSTs are shared with earlier
// images (incremental); for hashmap it copies the entry headers, and
// Image.Finish, which may run on another goroutine while the backend goes
// on, writes the full image file. Image.KeyGroups is final after Finish.
func (b *Backend) Snapshot(id int64) (*image.Image, error) {
	if b.closed {
		return nil, errors.New("kv: backend is closed")
	}
	expired := b.expiredFunc()
	if expired != nil && b.kind == image.RocksDB {
		if err := b.eng.cleanup(snapshotCleanup, expired); err != nil {
			return nil, fmt.Errorf("kv: snapshot %d: TTL cleanup: %w", id, err)
		}
	}
	im, err := b.eng.snapshot(id, expired)
	if err != nil {
		return nil, fmt.Errorf("kv: %s snapshot in %s for checkpoint %d: %w", b.kind, b.dir, id, err)
	}
	return im, nil
}

// WriteEntries writes the state to w as entries: all of them when w.Full()
// or on the first call, else the changes since the previous call. This is
// how an operator on this backend checkpoints into one of package state's
// stores, and the backend-independent form of its state.
func (b *Backend) WriteEntries(w EntryWriter) error {
	if err := b.eng.writeChanges(w); err != nil {
		return fmt.Errorf("kv: writing %s state entries: %w", b.kind, err)
	}
	return nil
}

// LoadEntries fills an empty backend from entries written by WriteEntries,
// before any state is declared.
func (b *Backend) LoadEntries(r EntryReader) error {
	for _, d := range b.byName {
		if d.live {
			return fmt.Errorf("kv: loading entries after state %q was declared", d.name)
		}
	}
	if err := b.eng.load(r); err != nil {
		return fmt.Errorf("kv: loading %s state entries: %w", b.kind, err)
	}
	return b.readRegistry()
}

// Entry is one entry of a declared state, as Entries reports it.
type Entry struct {
	KeyGroup int
	State    string
	Key      []byte
	// Namespace is the namespace; UserKey the map key (map states only).
	Namespace, UserKey []byte
	// Value is the codec's encoding (for a list: the list encoding of the
	// package comment, TTL times included when the state has a TTL).
	Value []byte
	// LastWrite is the processing time of the last write (states with a
	// TTL; 0 otherwise).
	LastWrite int64
}

// Entries visits the live entries of the key groups in r, in stored-key
// order, expired ones excepted. The slices of an Entry are valid during fn
// only; fn must not use the backend.
func (b *Backend) Entries(r KeyGroupRange, fn func(Entry) error) error {
	if r.First < 0 || r.First > r.Last || r.Last >= MaxKeyGroups {
		return fmt.Errorf("kv: invalid key-group range [%d, %d]", r.First, r.Last)
	}
	lo := binary.BigEndian.AppendUint16(nil, uint16(r.First))
	hi := binary.BigEndian.AppendUint16(nil, uint16(r.Last+1))
	expired := b.expiredFunc()
	now := b.clock()
	var listBuf []byte
	names := make(map[uint16]string, len(b.byName))
	for _, d := range b.byName {
		names[d.sid] = d.name
	}
	return b.eng.each(lo, hi, func(k, v []byte) error {
		p, err := parseKey(k)
		if err != nil {
			return err
		}
		if expired != nil && expired(k, v) {
			return nil
		}
		e := Entry{KeyGroup: p.keyGroup, State: names[p.sid], Key: p.key, Namespace: p.ns, UserKey: p.uk, Value: v}
		if e.State == "" {
			return fmt.Errorf("kv: entry %x of an undeclared state id %#x", prefix32(k), p.sid)
		}
		if i := ttlIndex(p.sid); i < len(b.ttls) && b.ttls[i] > 0 {
			if len(v) < ttlLen {
				return fmt.Errorf("kv: entry %x of state %q has no TTL time", prefix32(k), e.State)
			}
			if b.kinds[i] == kindList {
				e.Value = liveElements(listBuf[:0], b.ttls[i], v, now)
				listBuf = e.Value
			} else {
				e.LastWrite, e.Value = int64(binary.BigEndian.Uint64(v)), v[ttlLen:]
			}
		}
		return fn(e)
	})
}

// liveElements appends the elements of the TTL'd list v alive at now.
func liveElements(dst []byte, ttl int64, v []byte, now int64) []byte {
	for rest := v; len(rest) >= ttlLen; {
		n, w := binary.Uvarint(rest[ttlLen:])
		if w <= 0 || n > uint64(len(rest)-ttlLen-w) {
			break
		}
		l := ttlLen + w + int(n)
		if int64(binary.BigEndian.Uint64(rest))+ttl > now {
			dst = append(dst, rest[:l]...)
		}
		rest = rest[l:]
	}
	return dst
}

// Size reports the state's size (entries, memory, disk).
func (b *Backend) Size() Sizes {
	if b.closed {
		return Sizes{}
	}
	s := b.eng.sizes()
	s.Entries = max(0, s.Entries-int64(len(b.byName)))
	return s
}

// Close releases the backend and removes its working files; images already
// taken stay valid until discarded.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if err := b.eng.close(); err != nil {
		return fmt.Errorf("kv: closing %s backend in %s: %w", b.kind, b.dir, err)
	}
	return nil
}

// valueBuf returns b.vbuf emptied, holding the current processing time
// when ttl is set; the caller appends the encoding and stores the result
// back in b.vbuf.
func (b *Backend) valueBuf(ttl int64) []byte {
	v := b.vbuf[:0]
	if ttl > 0 {
		b.now = b.clock()
		v = binary.BigEndian.AppendUint64(v, uint64(b.now))
	}
	return v
}
