package groupagg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// The operators' per-key state lives in the runtime's keyed-state backend
// (kv). In front of it each operator keeps a write-back cache of decoded
// entries: the key table hands out dense ids, and the values of an id sit
// in flat arrays, so a row of a cached key costs a hash probe and no
// decoding. An entry is loaded from the backend on a miss, marked dirty
// when it changes, and written back when it is evicted and at every
// checkpoint (PrepareSnapshot). On hashmap the cache holds every key; on
// rocksdb it is bounded by a share of the backend's memory budget, so the
// state can be larger than memory.
//
// Each cached entry keeps the processing time of its last write and is
// treated as gone once lastWrite + TTL <= now, the rule kv applies to the
// backend's copy; entries are written back with that time (PutStamped), so
// a write-back does not extend their life.

const (
	fAlive  = 1 << iota // the id holds a key
	fDirty              // changed since last written to the backend
	fStored             // the backend may hold an entry for the key
	fRef                // used since the eviction hand last passed
	fKept               // scratch bit of compactDirty
)

// cacheShare is the part of a rocksdb backend's memory budget the decoded
// cache may use.
const cacheShare = 4

// cacheCore is the key table and per-entry bookkeeping both caches share;
// the values are the embedding cache's.
type cacheCore struct {
	keys  *keyTable
	b     *kv.Backend
	stamp []int64 // per id: processing time of the last write
	flags []uint8 // per id: f* bits
	dirty []int32 // ids that turned dirty since the last flush (may repeat, see compactDirty)
	// limit is the most keys cached (0: no bound); hand is the next id the
	// eviction clock looks at.
	limit int
	hand  int
	// complete says every key with state is cached, so a miss needs no
	// backend read: true from a fresh start until the first eviction.
	complete bool
	ttl      int64 // ms; 0 for none
	// now is the processing time of the operator's current work, which
	// the operator sets (when it has a TTL) before using the cache.
	now  int64
	kbuf []byte
}

func newCacheCore(b *kv.Backend, keyCols []int, ttl int64, complete bool) cacheCore {
	return cacheCore{keys: newKeyTable(keyCols), b: b, ttl: ttl, complete: complete}
}

// boundFor sets the cache's bound for entries of about perEntry bytes (a
// rocksdb backend only; hashmap keeps every key), or to limit when not 0
// (tests forcing evictions, on either backend).
func (c *cacheCore) boundFor(perEntry, limit int) {
	if limit > 0 {
		c.limit = limit
		return
	}
	if c.b.Kind() != image.RocksDB {
		return
	}
	perEntry += len(c.keys.cols)*int(unsafe.Sizeof(types.Value{})) + 48 // key values, slot share, hash, stamp, flags
	c.limit = max(int(c.b.MemoryBudget()/cacheShare/int64(perEntry)), 64)
}

// backendEmpty reports whether b holds no entry at all (a fresh start).
func backendEmpty(b *kv.Backend) (bool, error) {
	errFound := errors.New("found")
	err := b.Entries(b.KeyGroups(), func(kv.Entry) error { return errFound })
	if errors.Is(err, errFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *cacheCore) expired(id int32) bool {
	return c.ttl > 0 && c.stamp[id]+c.ttl <= c.now
}

// add interns the absent key of row; the caller evicted first when full.
func (c *cacheCore) add(row types.Row, h uint64, flags uint8) int32 {
	id := c.keys.add(row, h)
	if int(id) == len(c.flags) {
		c.flags = append(c.flags, 0)
		c.stamp = append(c.stamp, 0)
	}
	c.flags[id] = fAlive | fRef | flags&^fDirty
	if flags&fDirty != 0 {
		c.markDirty(id)
	}
	return id
}

func (c *cacheCore) full() bool { return c.limit > 0 && c.keys.size() >= c.limit }

// written records a change of id (at c.now).
func (c *cacheCore) written(id int32) {
	c.stamp[id] = c.now
	if c.flags[id]&fDirty == 0 {
		c.markDirty(id)
	}
}

func (c *cacheCore) markDirty(id int32) {
	c.flags[id] |= fDirty
	c.dirty = append(c.dirty, id)
	if len(c.dirty) > 2*len(c.flags)+64 {
		c.compactDirty()
	}
}

// compactDirty drops the ids no longer dirty and the repeats from the
// dirty list, which grows when ids are released and handed out again.
func (c *cacheCore) compactDirty() {
	out := c.dirty[:0]
	for _, id := range c.dirty {
		if f := c.flags[id]; f&fDirty != 0 && f&fKept == 0 {
			c.flags[id] |= fKept
			out = append(out, id)
		}
	}
	for _, id := range out {
		c.flags[id] &^= fKept
	}
	c.dirty = out
}

// setKey makes id's key the backend's current key.
func (c *cacheCore) setKey(id int32) error {
	buf := c.kbuf[:0]
	for _, v := range c.keys.key(id) {
		buf = types.AppendValue(buf, v)
	}
	c.kbuf = buf
	return c.b.SetCurrentKey(c.keys.hash(id), buf)
}

// setRowKey makes the key of row (hash h) the backend's current key.
func (c *cacheCore) setRowKey(row types.Row, h uint64) error {
	buf := c.kbuf[:0]
	for _, col := range c.keys.cols {
		buf = types.AppendValue(buf, row[col])
	}
	c.kbuf = buf
	return c.b.SetCurrentKey(h, buf)
}

// keyRow decodes stored key bytes into a row holding the key values at
// the key columns, and its hash.
func (c *cacheCore) keyRow(key []byte) (types.Row, uint64, error) {
	w := 0
	for _, col := range c.keys.cols {
		w = max(w, col+1)
	}
	row := make(types.Row, w)
	for _, col := range c.keys.cols {
		var err error
		if row[col], key, err = types.DecodeValue(key); err != nil {
			return nil, 0, fmt.Errorf("stored key: %w", err)
		}
	}
	if len(key) != 0 {
		return nil, 0, fmt.Errorf("stored key has %d bytes more than %d values", len(key), len(c.keys.cols))
	}
	return row, types.HashColumns(row, c.keys.cols), nil
}

// forget drops id from the cache only.
func (c *cacheCore) forget(id int32) {
	c.flags[id] = 0
	c.keys.release(id)
}

// victim picks the entry to evict: the first one, from the clock hand on,
// not used since the hand last passed it (second chance).
func (c *cacheCore) victim() int32 {
	n := len(c.flags)
	for {
		if c.hand >= n {
			c.hand = 0
		}
		id := int32(c.hand)
		c.hand++
		f := c.flags[id]
		if f&fAlive == 0 {
			continue
		}
		if f&fRef != 0 {
			c.flags[id] = f &^ fRef
			continue
		}
		return id
	}
}

// valueCache is the state of the group aggregate and ChangelogNormalize:
// a fixed number of values per key, in a kv value state.
type valueCache struct {
	cacheCore
	st    *kv.ValueState[[]types.Value]
	width int
	vals  []types.Value
}

func newValueCache(b *kv.Backend, st *kv.ValueState[[]types.Value], keyCols []int, width int, ttl int64, complete bool, limit int) *valueCache {
	c := &valueCache{cacheCore: newCacheCore(b, keyCols, ttl, complete), st: st, width: width}
	c.boundFor(width*int(unsafe.Sizeof(types.Value{}))+32, limit) // values, string bytes
	return c
}

func (c *valueCache) values(id int32) []types.Value {
	w := c.width
	return c.vals[int(id)*w : int(id+1)*w : int(id+1)*w]
}

func (c *valueCache) key(id int32) []types.Value { return c.keys.key(id) }

func (c *valueCache) size() int { return c.keys.size() }

// get returns the id of the key of row (hash h), loading it from the
// backend on a miss.
func (c *valueCache) get(row types.Row, h uint64) (int32, bool, error) {
	if id, ok := c.find(row, h); ok || c.complete {
		return id, ok, nil
	}
	if err := c.setRowKey(row, h); err != nil {
		return -1, false, err
	}
	vals, stamp, ok, err := c.st.GetStamped(nil)
	if err != nil || !ok {
		return -1, false, err
	}
	if len(vals) != c.width {
		return -1, false, fmt.Errorf("stored state of %d values, expected %d", len(vals), c.width)
	}
	// vals is the codec's scratch, which evicting (encoding) leaves alone.
	id, err := c.insert(row, h, fStored)
	if err != nil {
		return -1, false, err
	}
	copy(c.values(id), vals)
	c.stamp[id] = stamp
	return id, true, nil
}

// create adds the absent key of row with all values NULL.
func (c *valueCache) create(row types.Row, h uint64) (int32, error) {
	return c.insert(row, h, fDirty)
}

func (c *valueCache) insert(row types.Row, h uint64, flags uint8) (int32, error) {
	if c.full() {
		if err := c.evict(); err != nil {
			return -1, err
		}
	}
	id := c.add(row, h, flags)
	if need := int(id+1) * c.width; need > len(c.vals) {
		for len(c.vals) < need {
			c.vals = append(c.vals, types.Value{})
		}
	}
	return id, nil
}

func (c *valueCache) evict() error {
	id := c.victim()
	if err := c.writeBack(id); err != nil {
		return err
	}
	c.complete = false
	clear(c.values(id))
	c.forget(id)
	return nil
}

// writeBack writes id to the backend when dirty (and not expired).
func (c *valueCache) writeBack(id int32) error {
	f := c.flags[id]
	if f&fDirty == 0 {
		return nil
	}
	c.flags[id] = f&^fDirty | fStored
	if c.expired(id) {
		return nil
	}
	if err := c.setKey(id); err != nil {
		return err
	}
	return c.st.PutStamped(nil, c.values(id), c.stamp[id])
}

// remove deletes the key's state, in the backend too.
func (c *valueCache) remove(id int32) error {
	var err error
	if c.flags[id]&fStored != 0 {
		if err = c.setKey(id); err == nil {
			err = c.st.Clear(nil)
		}
	}
	c.drop(id)
	return err
}

// drop forgets id in the cache, whose backend copy is expired.
func (c *valueCache) drop(id int32) {
	clear(c.values(id))
	c.forget(id)
}

// find returns the cached id of the key of row (hash h). An expired entry
// is dropped: the backend's copy, written with the same time or an older
// one, is expired too and never returned.
func (c *valueCache) find(row types.Row, h uint64) (int32, bool) {
	id := c.keys.find(row, h)
	if id < 0 {
		return -1, false
	}
	if c.expired(id) {
		c.drop(id)
		return -1, false
	}
	if c.limit > 0 { // only the eviction clock reads it
		c.flags[id] |= fRef
	}
	return id, true
}

// preload loads every entry of state name of a restored hashmap backend,
// whose state is in memory anyway, so that the cache is complete again and
// a key new since the checkpoint costs no backend read.
func (c *valueCache) preload(name string) error {
	if c.complete || c.limit > 0 || c.b.Kind() != image.Hashmap {
		return nil
	}
	var codec valuesCodec
	err := c.b.Entries(c.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != name {
			return nil
		}
		row, h, err := c.keyRow(e.Key)
		if err != nil {
			return err
		}
		vals, err := codec.Decode(e.Value)
		if err != nil {
			return err
		}
		if len(vals) != c.width {
			return fmt.Errorf("stored state of %d values, expected %d", len(vals), c.width)
		}
		id, err := c.insert(row, h, fStored)
		if err != nil {
			return err
		}
		copy(c.values(id), vals)
		c.stamp[id] = e.LastWrite
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading state %q: %w", name, err)
	}
	c.complete = true
	return nil
}

// flush writes every dirty entry back.
func (c *valueCache) flush() error {
	for _, id := range c.dirty {
		if err := c.writeBack(id); err != nil {
			return err
		}
	}
	c.dirty = c.dirty[:0]
	return nil
}

// sweep drops the expired entries from the cache.
func (c *valueCache) sweep() {
	for id, f := range c.flags {
		if f&fAlive != 0 && c.expired(int32(id)) {
			c.drop(int32(id))
		}
	}
}

// valuesCodec encodes a row of values (types.AppendRow). Decoding reuses
// one buffer, valid until the next decode.
type valuesCodec struct{ scratch []types.Value }

func (*valuesCodec) ID() string { return "flinksql.values/1" }

func (*valuesCodec) Append(dst []byte, v []types.Value) []byte { return types.AppendRow(dst, v) }

func (c *valuesCodec) Decode(src []byte) ([]types.Value, error) {
	var err error
	c.scratch, src, err = decodeValues(c.scratch[:0], src)
	if err == nil && len(src) != 0 {
		err = fmt.Errorf("%d bytes after the values", len(src))
	}
	return c.scratch, err
}

// decodeValues appends the values of a row written by types.AppendRow.
func decodeValues(dst []types.Value, src []byte) ([]types.Value, []byte, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || n > uint64(len(src)) {
		return dst, nil, errors.New("truncated row")
	}
	src = src[w:]
	for range n {
		v, rest, err := types.DecodeValue(src)
		if err != nil {
			return dst, nil, err
		}
		dst, src = append(dst, v), rest
	}
	return dst, src, nil
}

// listCache is the state of the sink upsert materializer: the rows of a
// key currently alive, in arrival order, in a kv value state holding the
// whole list (Flink's SinkUpsertMaterializer keeps a ValueState of a List
// too, so the TTL counts from the last change of the list as a whole).
// Rows are copied in; the rows returned by rows are owned by the cache and
// valid until the next change of the key. Buffers of removed rows are
// recycled, so a steady stream of additions and removals allocates
// nothing.
type listCache struct {
	cacheCore
	st    *kv.ValueState[[]types.Row]
	width int
	lists [][]types.Row
	spare []types.Row
	chunk []types.Value
}

func newListCache(b *kv.Backend, st *kv.ValueState[[]types.Row], keyCols []int, width int, ttl int64, complete bool, limit int) *listCache {
	c := &listCache{cacheCore: newCacheCore(b, keyCols, ttl, complete), st: st, width: width}
	c.boundFor(2*width*int(unsafe.Sizeof(types.Value{}))+64, limit) // about two rows, string bytes
	return c
}

func (c *listCache) rows(id int32) []types.Row { return c.lists[id] }

func (c *listCache) size() int { return c.keys.size() }

func (c *listCache) find(row types.Row, h uint64) (int32, bool) {
	id := c.keys.find(row, h)
	if id < 0 {
		return -1, false
	}
	if c.expired(id) {
		c.drop(id)
		return -1, false
	}
	if c.limit > 0 { // only the eviction clock reads it
		c.flags[id] |= fRef
	}
	return id, true
}

// get returns the id of the key of row (hash h), loading it from the
// backend on a miss.
func (c *listCache) get(row types.Row, h uint64) (int32, bool, error) {
	if id, ok := c.find(row, h); ok || c.complete {
		return id, ok, nil
	}
	if err := c.setRowKey(row, h); err != nil {
		return -1, false, err
	}
	rows, stamp, ok, err := c.st.GetStamped(nil)
	if err != nil || !ok {
		return -1, false, err
	}
	for _, r := range rows {
		if len(r) != c.width {
			return -1, false, fmt.Errorf("stored row of %d columns, expected %d", len(r), c.width)
		}
	}
	id, err := c.insert(row, h, fStored)
	if err != nil {
		return -1, false, err
	}
	for _, r := range rows {
		c.appendRow(id, r)
	}
	c.stamp[id] = stamp
	return id, true, nil
}

// create adds the absent key of row with no rows.
func (c *listCache) create(row types.Row, h uint64) (int32, error) {
	return c.insert(row, h, fDirty)
}

func (c *listCache) insert(row types.Row, h uint64, flags uint8) (int32, error) {
	if c.full() {
		if err := c.evict(); err != nil {
			return -1, err
		}
	}
	id := c.add(row, h, flags)
	if int(id) == len(c.lists) {
		c.lists = append(c.lists, nil)
	}
	return id, nil
}

// buffer returns a row buffer holding a copy of r.
func (c *listCache) buffer(r types.Row) types.Row {
	var b types.Row
	if n := len(c.spare); n > 0 {
		b = c.spare[n-1]
		c.spare = c.spare[:n-1]
	} else {
		if len(c.chunk) < c.width {
			c.chunk = make([]types.Value, 64*max(c.width, 1))
		}
		b = types.Row(c.chunk[:c.width:c.width])
		c.chunk = c.chunk[c.width:]
	}
	copy(b, r)
	return b
}

func (c *listCache) recycle(b types.Row) {
	clear(b)
	c.spare = append(c.spare, b)
}

func (c *listCache) appendRow(id int32, r types.Row) {
	c.lists[id] = append(c.lists[id], c.buffer(r))
}

func (c *listCache) replaceRow(id int32, i int, r types.Row) {
	copy(c.lists[id][i], r)
}

func (c *listCache) removeRow(id int32, i int) {
	l := c.lists[id]
	c.recycle(l[i])
	copy(l[i:], l[i+1:])
	l[len(l)-1] = nil
	c.lists[id] = l[:len(l)-1]
}

func (c *listCache) evict() error {
	id := c.victim()
	if err := c.writeBack(id); err != nil {
		return err
	}
	c.complete = false
	c.drop(id)
	return nil
}

func (c *listCache) writeBack(id int32) error {
	f := c.flags[id]
	if f&fDirty == 0 {
		return nil
	}
	c.flags[id] = f&^fDirty | fStored
	if c.expired(id) {
		return nil
	}
	if err := c.setKey(id); err != nil {
		return err
	}
	return c.st.PutStamped(nil, c.lists[id], c.stamp[id])
}

// remove deletes the key's state, in the backend too.
func (c *listCache) remove(id int32) error {
	var err error
	if c.flags[id]&fStored != 0 {
		if err = c.setKey(id); err == nil {
			err = c.st.Clear(nil)
		}
	}
	c.drop(id)
	return err
}

func (c *listCache) drop(id int32) {
	l := c.lists[id]
	for i, r := range l {
		c.recycle(r)
		l[i] = nil
	}
	c.lists[id] = l[:0]
	c.forget(id)
}

// preload is valueCache.preload for the lists of rows.
func (c *listCache) preload(name string) error {
	if c.complete || c.limit > 0 || c.b.Kind() != image.Hashmap {
		return nil
	}
	var codec rowsCodec
	err := c.b.Entries(c.b.KeyGroups(), func(e kv.Entry) error {
		if e.State != name {
			return nil
		}
		row, h, err := c.keyRow(e.Key)
		if err != nil {
			return err
		}
		rows, err := codec.Decode(e.Value)
		if err != nil {
			return err
		}
		id, err := c.insert(row, h, fStored)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if len(r) != c.width {
				return fmt.Errorf("stored row of %d columns, expected %d", len(r), c.width)
			}
			c.appendRow(id, r)
		}
		c.stamp[id] = e.LastWrite
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading state %q: %w", name, err)
	}
	c.complete = true
	return nil
}

func (c *listCache) flush() error {
	for _, id := range c.dirty {
		if err := c.writeBack(id); err != nil {
			return err
		}
	}
	c.dirty = c.dirty[:0]
	return nil
}

func (c *listCache) sweep() {
	for id, f := range c.flags {
		if f&fAlive != 0 && c.expired(int32(id)) {
			c.drop(int32(id))
		}
	}
}

// rowsCodec encodes a list of rows: their count, then each row
// (types.AppendRow). Decoding reuses its buffers, valid until the next
// decode.
type rowsCodec struct {
	rows []types.Row
	vals []types.Value
	ends []int
}

func (*rowsCodec) ID() string { return "flinksql.rows/1" }

func (*rowsCodec) Append(dst []byte, rows []types.Row) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(rows)))
	for _, r := range rows {
		dst = types.AppendRow(dst, r)
	}
	return dst
}

func (c *rowsCodec) Decode(src []byte) ([]types.Row, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || n > uint64(len(src)) {
		return nil, errors.New("truncated list of rows")
	}
	src = src[w:]
	c.vals, c.ends = c.vals[:0], c.ends[:0]
	var err error
	for range n {
		if c.vals, src, err = decodeValues(c.vals, src); err != nil {
			return nil, err
		}
		c.ends = append(c.ends, len(c.vals))
	}
	if len(src) != 0 {
		return nil, fmt.Errorf("%d bytes after the rows", len(src))
	}
	rows, start := c.rows[:0], 0
	for _, e := range c.ends {
		rows = append(rows, c.vals[start:e:e])
		start = e
	}
	c.rows = rows
	return rows, nil
}
