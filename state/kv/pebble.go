package kv

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/flinksql/flinksql/state/image"
)

// Layout of a rocksdb backend directory:
//
//	<dir>/db/        the working Pebble DB (WAL disabled: durability comes
//	                 from checkpoints)
//	<dir>/chk-<id>/  the image of checkpoint <id>: a Pebble checkpoint, SSTs
//	                 hard-linked from db/, until Image.Discard
const pebbleDBDir = "db"

// Cache entry flags.
const (
	fUsed    = 1 << iota // the slot holds an entry
	fPresent             // the key has a value (else: known absent, or deleted)
	fDirty               // the entry differs from what Pebble holds
	fRef                 // accessed since the clock hand last passed
	fMark                // seen in this pass of compactDirty (cleared after it)
	fListed              // listed in its bucket's whole-bucket record (whole.go)
)

// cacheEntryOverhead approximates what an entry costs beyond its buffer:
// its slot and its share of the index map.
const cacheEntryOverhead = 80

// pebbleEngine holds the working state in Pebble behind a write-back cache
// of hot entries with CLOCK replacement. A hit costs a map lookup; repeated
// writes of a key fold into its cache entry and reach Pebble once, when the
// entry is evicted or at a snapshot. Evicted dirty entries go into an
// indexed batch (so reads of them see it) committed when it grows past its
// share of the budget. The cache also remembers keys known to be absent,
// so creating a key costs one Pebble lookup, not one per access.
type pebbleEngine struct {
	dir, dbDir string
	desc       *image.PebbleDescriber
	db         *pebble.DB
	batch      *pebble.Batch
	batchLimit int
	memtable   int64
	blockCache int64
	lastID     int64
	// pending is the checkpoint whose Pebble checkpoint is being taken
	// after the synchronous part returned; until it is done no write
	// reaches the DB (see snapshot).
	pending *pendingCheckpoint
	knobs   testingKnobs
	// committed counts the writes committed since the last snapshot, an
	// estimate of the entries in the memtables until they are flushed.
	committed int64

	index    map[string]uint32
	ents     []cacheEntry
	free     []uint32
	spare    []byte // buffer of the last evicted entry, for the next insert
	hand     int
	bytes    int64
	limit    int64
	dirty    []uint32 // slots made dirty since the last flush (may be stale)
	mapDirty []uint32 // the same, for keys of map states
	// dirtyBytes estimates what the dirty entries hold; past dirtyLimit
	// the oldest are written back (they stay cached, clean), so that a
	// snapshot has little left to write in its synchronous part.
	dirtyBytes, dirtyLimit int64
	dirtyHead              int   // e.dirty[:dirtyHead] were already trimmed
	trimErr                error // a write-back of trimDirty that failed

	last   uint32 // the slot lookup found last (lastOK: if any)
	lastOK bool

	tracking bool                // a writeChanges happened: record changes
	changed  map[string]struct{} // keys changed since the last writeChanges
	cursor   []byte              // where the TTL cleanup continues
	scanBuf  []byte
	loBuf    []byte
	hiBuf    []byte
	// it is an iterator over the batch kept between iterations: creating
	// one per bucket scan (a join probe) built and tore down an iterator
	// per level and reloaded their blocks. SetOptions refreshes its view of
	// the batch, but its view of the DB is fixed when it is created, so it
	// is dropped before anything reaches the DB (commit, ingest) and at a
	// snapshot. itBusy marks it in use by a scan, so that
	// a scan started from another's callback gets an iterator of its own
	// instead of moving the outer one.
	it     *pebble.Iterator
	itBusy bool
	// comparer is the DB's key order; prefixFilters says it is
	// bucketComparer, whose SST filters are on buckets, so a bucket scan
	// seeks by prefix (see newBucketComparer).
	comparer      *pebble.Comparer
	prefixFilters bool
	// filtersFit says whether the filters a prefix seek reads (every
	// level's but the last) take at most filterBudget, a quarter of the
	// block cache, as of tablesEpoch filtersSeen; Pebble's listener bumps
	// tablesEpoch whenever the tables change. A filter is read whole, so
	// once they outgrow the cache a probe would re-read megabytes of them
	// (the collapse the last level's filters caused, see iterate), where
	// a seek without them reads one data block per file.
	filtersFit   bool
	filtersSeen  uint64
	tablesEpoch  atomic.Uint64
	filterBudget int64

	// whole records the map-state buckets the cache holds entirely
	// (whole.go). collect gathers a Pebble scan's entries to make one;
	// wholeBuf holds the copy a scan of one visits. writes counts writes,
	// so that a scan whose callback wrote is not made whole.
	whole         map[string]*wholeBucket
	collect       wholeScan
	collectBucket []byte
	wholeBuf      wholeScan
	wholeBusy     bool
	writes        uint64
}

type cacheEntry struct {
	buf   []byte // key, then value
	klen  int32
	flags uint8
}

func (c *cacheEntry) key() []byte   { return c.buf[:c.klen] }
func (c *cacheEntry) value() []byte { return c.buf[c.klen:] }

// budgetSplit divides a memory budget: memtables (two of budget/8 each),
// Pebble's block cache (budget/4), the batch of evicted writes
// (budget/16), and the write-back cache (the rest, 7/16).
func budgetSplit(cfg Config) (cache, memtable, blockCache int64, batch int) {
	b := cfg.MemoryBudget
	memtable, blockCache, batch = b/8, b/4, int(b/16)
	cache = b - 2*memtable - blockCache - int64(batch)
	if cfg.CacheBytes > 0 {
		cache = cfg.CacheBytes
	}
	return cache, memtable, blockCache, batch
}

// openPebble creates the working DB in dir, or, with files, opens the
// downloaded image of files as the working DB.
func openPebble(dir string, cfg Config, files []image.File) (*pebbleEngine, error) {
	cacheBytes, memtable, blockCache, batch := budgetSplit(cfg)
	e := &pebbleEngine{
		dir: dir, dbDir: filepath.Join(dir, pebbleDBDir),
		batchLimit: batch, memtable: memtable, blockCache: blockCache, limit: cacheBytes,
		dirtyLimit: max(cacheBytes/8, 64<<10),
		index:      make(map[string]uint32),
	}
	if files != nil {
		if err := os.Mkdir(e.dbDir, 0o755); err != nil {
			return nil, err
		}
		for _, f := range files {
			if err := os.Rename(filepath.Join(dir, f.LocalName), filepath.Join(e.dbDir, f.LocalName)); err != nil {
				return nil, fmt.Errorf("file %s: %w", f.Name, err)
			}
		}
	}
	id, err := image.NewStoreID()
	if err != nil {
		return nil, err
	}
	if cfg.bytewiseDB && files == nil {
		e.comparer = pebble.DefaultComparer
	} else if e.comparer, e.prefixFilters, err = dbComparer(e.dbDir, files != nil); err != nil {
		return nil, err
	}
	opts := workingOptions(memtable, blockCache, e.comparer)
	e.filterBudget, e.filtersFit = blockCache/4, true
	tablesChanged := func() { e.tablesEpoch.Add(1) }
	opts.EventListener.FlushEnd = func(pebble.FlushInfo) { tablesChanged() }
	opts.EventListener.CompactionEnd = func(pebble.CompactionInfo) { tablesChanged() }
	opts.EventListener.TableIngested = func(pebble.TableIngestInfo) { tablesChanged() }
	opts.ErrorIfNotExists = files != nil
	opts.ErrorIfExists = files == nil
	db, err := pebble.Open(e.dbDir, opts)
	opts.Cache.Unref() // the DB holds its own reference
	if err != nil {
		return nil, fmt.Errorf("opening pebble in %s: %w", e.dbDir, err)
	}
	e.db, e.batch, e.desc = db, db.NewIndexedBatch(), image.NewPebbleDescriber(id)
	if !cfg.FullFirstSnapshot {
		e.desc.Inherit(files)
	}
	return e, nil
}

// workingOptions tunes Pebble for working state: point reads of entries
// the cache lacks (bloom filters spare the reads of SSTs without the key,
// which is every SST for a key being created), writes in batches, and
// snapshots by checkpoint. Stalls are avoided: an operator blocked on
// Pebble blocks its whole pipeline.
// workingTargetFileSize is the SST size flushes (split at twice it:
// FlushSplitBytes), compactions in every level and ingests aim at. A
// file's filter is one block, read whole into the block cache, and a block
// has to fit one of the cache's shards (8 of them on 2 cores, each its
// share of the cache less its part of the memtables' reservation: some
// 8 MB at a 256 MB budget). A 64 MB file of small entries has a ~5 MB
// filter, which no shard kept: the 20 M rows per side larger-than-memory
// join re-read filters on every probe (bloomFilterMayContain loading
// blocks was most of its CPU, 20 TB read from the page cache). An 8 MB
// file's is under 0.6 MB.
const workingTargetFileSize = 8 << 20

func workingOptions(memtable, blockCache int64, comparer *pebble.Comparer) *pebble.Options {
	o := &pebble.Options{
		Comparer:                    comparer,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{},
		DisableWAL:                  true,
		MemTableSize:                uint64(memtable),
		MemTableStopWritesThreshold: 2,
		// A join side that keeps every row (Nexmark q4, q9, q20's bids)
		// writes keys all over the key space, so each L0 file overlaps all
		// of Lbase and every L0 compaction rewrites it: compacting after 32
		// L0 sublevels rather than 6 rewrites Lbase about a fifth as often.
		// Probes pay little for the deeper L0, as each file's bucket filter
		// turns most of them away (q4, q9, q20, q7, q18, q19 measured
		// 10-35 % more events per CPU-second, BENCHMARKS "Session 13").
		L0CompactionThreshold: 32,
		L0StopWritesThreshold: 1 << 10,
		MaxManifestFileSize:   1 << 20,
		// Pebble charges its memtables to the block cache (a reservation):
		// without their share the cache would hold no block at all.
		Cache:        pebble.NewCache(blockCache + 2*memtable),
		MaxOpenFiles: 256,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// Pebble's 2 MB default made 10 GB of state some 5 000 files, and
	// opening a DB of that many (a restore) took 15 s; 8 MB makes it a
	// quarter of that. Deeper levels do not double it (Pebble's default):
	// a compaction's output file holds the 4-byte hashes of all its keys
	// on the Go heap until its full-file Bloom filter is written, and a
	// read loads the file's whole filter into the block cache, so with
	// Pebble's doubling (1–2 GB files in the last levels) both grew with
	// the state (some 200 MB of Go heap at 20 M join rows per side).
	for i := range o.TargetFileSizes {
		o.TargetFileSizes[i] = workingTargetFileSize
	}
	o.EventListener = &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		o.Logger.Errorf("%s", info)
	}}
	return o
}

// pebbleLogger keeps Pebble's informational chatter out of the engine's
// output and keeps its errors.
type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...any) {}
func (pebbleLogger) Errorf(format string, args ...any) {
	log.Printf("kv: pebble: "+format, args...)
}
func (pebbleLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

// lookup finds k's cache slot; like the heap engine it remembers the last
// one, which a write after a read of the same key then finds without a map
// lookup.
func (e *pebbleEngine) lookup(k []byte) (uint32, bool) {
	if e.lastOK {
		if c := &e.ents[e.last]; c.flags&fUsed != 0 && string(c.buf[:c.klen]) == string(k) {
			return e.last, true
		}
	}
	slot, ok := e.index[string(k)]
	if ok {
		e.last, e.lastOK = slot, true
	}
	return slot, ok
}

// fetch brings k into the cache from Pebble (through the batch).
func (e *pebbleEngine) fetch(k []byte) (uint32, error) {
	v, closer, err := e.batch.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return e.insert(k, nil, 0)
	}
	if err != nil {
		return 0, fmt.Errorf("reading key %x: %w", prefix32(k), err)
	}
	slot, err := e.insert(k, v, fPresent)
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	return slot, err
}

// insert adds an entry for the absent key k, evicting others to make room.
func (e *pebbleEngine) insert(k, v []byte, flags uint8) (uint32, error) {
	need := len(k) + len(v)
	for e.bytes+int64(need)+cacheEntryOverhead > e.limit && len(e.index) > 0 {
		if err := e.evict(); err != nil {
			return 0, err
		}
	}
	var buf []byte
	if cap(e.spare) >= need && cap(e.spare) <= 2*need+64 {
		buf, e.spare = e.spare[:need], nil
	} else {
		buf = make([]byte, need)
	}
	copy(buf, k)
	copy(buf[len(k):], v)
	var slot uint32
	if n := len(e.free); n > 0 {
		slot = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		slot = uint32(len(e.ents))
		e.ents = append(e.ents, cacheEntry{})
	}
	e.ents[slot] = cacheEntry{buf: buf, klen: int32(len(k)), flags: flags | fUsed | fRef}
	e.index[unsafe.String(unsafe.SliceData(buf), len(k))] = slot
	e.bytes += int64(cap(buf)) + cacheEntryOverhead
	if flags&fDirty != 0 {
		e.noteDirty(slot, k)
	}
	if flags&fPresent != 0 && len(e.whole) > 0 {
		e.listPresent(slot)
	}
	return slot, nil
}

func (e *pebbleEngine) noteDirty(slot uint32, k []byte) {
	e.dirtyBytes += int64(len(e.ents[slot].buf)) + cacheEntryOverhead
	if e.dirtyBytes > e.dirtyLimit {
		e.trimDirty()
	}
	if live := e.dirty[e.dirtyHead:]; len(live) >= 2*len(e.ents)+dirtySlack {
		e.dirty, e.dirtyHead = e.compactDirty(live, false), 0
	}
	e.dirty = append(e.dirty, slot)
	if k[kgLen]&0x80 != 0 {
		if len(e.mapDirty) >= 2*len(e.ents)+dirtySlack {
			e.mapDirty = e.compactDirty(e.mapDirty, true)
		}
		e.mapDirty = append(e.mapDirty, slot)
	}
}

// dirtySlack is how far a list of dirty slots may outgrow twice the
// cache's slots before compactDirty runs.
const dirtySlack = 1024

// compactDirty drops from a list of dirty slots (in place, keeping the
// order) the slots that are no longer dirty (of map-state keys, with maps),
// and repeated slots. Only trimDirty and a flush shortened the lists: an
// entry that eviction wrote back stayed listed, so while the cache evicted
// rather than trimmed, and no map state was scanned, the lists grew by a
// slot per write (24 MB at 3 M join rows per side, whose capacity stayed
// after the next flush). A slot still dirty stays, so a flush still writes
// back every dirty entry. What is left is at most the cache's slots, so
// the compactions, at twice that, cost O(1) per write amortized.
func (e *pebbleEngine) compactDirty(list []uint32, maps bool) []uint32 {
	kept := list[:0]
	for _, slot := range list {
		c := &e.ents[slot]
		if c.flags&(fUsed|fDirty|fMark) != fUsed|fDirty || (maps && c.buf[kgLen]&0x80 == 0) {
			continue
		}
		c.flags |= fMark
		kept = append(kept, slot)
	}
	for _, slot := range kept {
		e.ents[slot].flags &^= fMark
	}
	return kept
}

// trimDirty writes back the oldest dirty entries until the dirty bytes are
// half their limit. It does not evict: the entries stay cached for reads,
// and a hot key that turns dirty again is simply noted again. A write-back
// error is kept for the next commit (the batch holds what was written).
func (e *pebbleEngine) trimDirty() {
	for e.dirtyHead < len(e.dirty) && e.dirtyBytes > e.dirtyLimit/2 {
		slot := e.dirty[e.dirtyHead]
		e.dirtyHead++
		if c := &e.ents[slot]; c.flags&(fUsed|fDirty) == fUsed|fDirty {
			if err := e.writeBack(c); err != nil && e.trimErr == nil {
				e.trimErr = err
			}
		}
	}
	if e.dirtyHead == len(e.dirty) {
		e.dirty, e.dirtyHead = e.dirty[:0], 0
		e.dirtyBytes = 0
	} else if e.dirtyHead > len(e.dirty)/2 {
		n := copy(e.dirty, e.dirty[e.dirtyHead:])
		e.dirty, e.dirtyHead = e.dirty[:n], 0
	}
}

// evict removes the entry under the clock hand that was not referenced
// since the hand last passed, writing it back when dirty.
func (e *pebbleEngine) evict() error {
	for {
		if e.hand >= len(e.ents) {
			e.hand = 0
		}
		slot := uint32(e.hand)
		c := &e.ents[slot]
		e.hand++
		if c.flags&fUsed == 0 {
			continue
		}
		if c.flags&fRef != 0 {
			c.flags &^= fRef
			continue
		}
		if err := e.writeBack(c); err != nil {
			return err
		}
		if c.flags&fListed != 0 {
			e.unlist(slot, c)
		}
		delete(e.index, unsafe.String(unsafe.SliceData(c.buf), int(c.klen)))
		e.bytes -= int64(cap(c.buf)) + cacheEntryOverhead
		e.spare = c.buf
		*c = cacheEntry{}
		e.free = append(e.free, slot)
		return nil
	}
}

// writeBack puts a dirty entry into the batch.
func (e *pebbleEngine) writeBack(c *cacheEntry) error {
	if c.flags&fDirty == 0 {
		return nil
	}
	var err error
	if c.flags&fPresent != 0 {
		err = e.batch.Set(c.key(), c.value(), nil)
	} else {
		err = e.batch.Delete(c.key(), nil)
	}
	if err != nil {
		return fmt.Errorf("writing key %x: %w", prefix32(c.key()), err)
	}
	c.flags &^= fDirty
	e.dirtyBytes = max(0, e.dirtyBytes-int64(len(c.buf))-cacheEntryOverhead)
	// Not during a scan: a commit resets the batch its iterator reads. The
	// scan commits when it ends (iterate).
	if e.batch.Len() >= e.batchLimit && !e.itBusy {
		return e.commit()
	}
	return nil
}

func (e *pebbleEngine) commit() error {
	if e.batch.Empty() {
		return nil
	}
	// Writes after a barrier stay in the batch (readable through it) until
	// that barrier's Pebble checkpoint is taken.
	e.awaitPending()
	if err := e.dropIter(); err != nil {
		return err
	}
	e.committed += int64(e.batch.Count())
	if err := e.batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("committing %d writes: %w", e.batch.Count(), err)
	}
	e.batch.Reset()
	return nil
}

// flush writes every dirty entry back (of map states only, when onlyMaps).
func (e *pebbleEngine) flush(onlyMaps bool) error {
	list := &e.dirty
	if onlyMaps {
		list = &e.mapDirty
	}
	for _, slot := range *list {
		if c := &e.ents[slot]; c.flags&(fUsed|fDirty) == fUsed|fDirty {
			if err := e.writeBack(c); err != nil {
				return err
			}
		}
	}
	*list = (*list)[:0]
	if !onlyMaps {
		e.mapDirty = e.mapDirty[:0]
		e.dirtyHead, e.dirtyBytes = 0, 0
	}
	if err := e.trimErr; err != nil {
		e.trimErr = nil
		return err
	}
	return nil
}

func (e *pebbleEngine) track(k []byte) {
	if e.tracking {
		if _, ok := e.changed[string(k)]; !ok {
			e.changed[string(k)] = struct{}{}
		}
	}
}

func (e *pebbleEngine) get(k []byte) ([]byte, bool, error) {
	slot, ok := e.lookup(k)
	if !ok {
		if w, _ := e.wholeOf(k); w != nil {
			return nil, false, nil
		}
		var err error
		if slot, err = e.fetch(k); err != nil {
			return nil, false, err
		}
	}
	c := &e.ents[slot]
	c.flags |= fRef
	if c.flags&fPresent == 0 {
		return nil, false, nil
	}
	return c.value(), true, nil
}

// set makes v the value of cached slot, growing its buffer if needed.
func (e *pebbleEngine) set(slot uint32, v []byte, keep int) {
	c := &e.ents[slot]
	wasPresent := c.flags&fPresent != 0
	need := int(c.klen) + keep + len(v)
	if cap(c.buf) < need {
		nb := make([]byte, int(c.klen)+keep, need+need/4)
		copy(nb, c.buf[:int(c.klen)+keep])
		delete(e.index, unsafe.String(unsafe.SliceData(c.buf), int(c.klen)))
		e.bytes += int64(cap(nb) - cap(c.buf))
		c.buf = nb
		e.index[unsafe.String(unsafe.SliceData(nb), int(c.klen))] = slot
	}
	c.buf = append(c.buf[:int(c.klen)+keep], v...)
	if c.flags&fDirty == 0 {
		e.noteDirty(slot, c.key())
	}
	c.flags |= fPresent | fDirty | fRef
	if !wasPresent && len(e.whole) > 0 {
		e.listPresent(slot)
	}
}

func (e *pebbleEngine) put(k, v []byte) error {
	e.track(k)
	e.writes++
	if slot, ok := e.lookup(k); ok {
		e.set(slot, v, 0)
		return e.takeTrimErr()
	}
	if _, err := e.insert(k, v, fPresent|fDirty); err != nil {
		return err
	}
	return e.takeTrimErr()
}

// takeTrimErr returns, once, a write-back of trimDirty that failed, so
// the write that triggered it reports it instead of the next snapshot.
func (e *pebbleEngine) takeTrimErr() error {
	err := e.trimErr
	e.trimErr = nil
	return err
}

func (e *pebbleEngine) appendValue(k, suffix []byte) error {
	e.track(k)
	e.writes++
	slot, ok := e.lookup(k)
	if !ok {
		var err error
		if slot, err = e.fetch(k); err != nil {
			return err
		}
	}
	keep := 0
	if c := &e.ents[slot]; c.flags&fPresent != 0 {
		keep = len(c.buf) - int(c.klen)
	}
	e.set(slot, suffix, keep)
	return e.takeTrimErr()
}

func (e *pebbleEngine) del(k []byte) error {
	e.track(k)
	e.writes++
	if slot, ok := e.lookup(k); ok {
		c := &e.ents[slot]
		if c.flags&fDirty == 0 {
			e.noteDirty(slot, k)
		}
		if c.flags&(fListed|fPresent) == fListed|fPresent {
			e.unlistPresent(c)
		}
		c.buf = c.buf[:c.klen]
		c.flags = c.flags&^fPresent | fDirty | fRef
		return e.takeTrimErr()
	}
	if w, _ := e.wholeOf(k); w != nil {
		return e.takeTrimErr() // the key has no value
	}
	// A blind delete: the key may be in Pebble; remember the tombstone.
	if _, err := e.insert(k, nil, fDirty); err != nil {
		return err
	}
	return e.takeTrimErr()
}

// iterate runs fn over [lo, hi) of the DB as the batch sees it, ascending
// or descending; fn gets slices valid during the call only. With inBucket,
// lo is in a map-state bucket and hi is the bucket's end, and an ascending
// scan seeks by prefix when the DB's filters are on buckets.
func (e *pebbleEngine) iterate(lo, hi []byte, reverse, inBucket bool, fn func(k, v []byte) (bool, error)) error {
	// Not the last level's filters (Pebble's default): a file's filter is
	// read whole, and those of the last level, most of the data, did not
	// stay in the block cache of a state larger than memory, so every probe
	// read megabytes of them (the 256 MB join of
	// scripts/join-larger-than-memory.sh fell from 75 k to 6 k rows/s per
	// core, most of it in read system calls).
	opts := pebble.IterOptions{LowerBound: lo, UpperBound: hi}
	byPrefix := inBucket && !reverse && e.prefixSeeks()
	if e.itBusy {
		it, err := e.batch.NewIter(&opts)
		if err != nil {
			return err
		}
		return errors.Join(scan(it, lo, reverse, byPrefix, fn), it.Close())
	}
	if e.it == nil {
		it, err := e.batch.NewIter(&opts)
		if err != nil {
			return err
		}
		e.it = it
	} else {
		// Copies the bounds, and brings in what the batch got since.
		e.it.SetOptions(&opts)
	}
	e.itBusy = true
	err := scan(e.it, lo, reverse, byPrefix, fn)
	e.itBusy = false
	if err != nil && e.it.Error() != nil {
		// An iterator in error is not reused.
		return errors.Join(err, e.dropIter())
	}
	if err == nil && e.batch.Len() >= e.batchLimit {
		err = e.commit() // held back during the scan (writeBack)
	}
	return err
}

// prefixSeeks says whether a bucket scan seeks by prefix (consulting the
// SSTs' filters): when the DB's filters are on buckets and fit their share
// of the block cache (see filtersFit).
func (e *pebbleEngine) prefixSeeks() bool {
	if !e.prefixFilters {
		return false
	}
	if epoch := e.tablesEpoch.Load(); epoch != e.filtersSeen {
		e.filtersSeen = epoch
		e.filtersFit = e.filterBytes() <= e.filterBudget
	}
	return e.filtersFit
}

// filterBytes sums the filters of the SSTs above the last level (a prefix
// seek skips the last level's: see iterate); on an error, 0, which keeps
// the filters in use.
func (e *pebbleEngine) filterBytes() int64 {
	levels, err := e.db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0
	}
	var n int64
	for _, tables := range levels[:len(levels)-1] {
		for _, t := range tables {
			if t.Properties != nil {
				n += int64(t.Properties.FilterSize)
			}
		}
	}
	return n
}

// scan runs fn over it's range, ascending or descending. byPrefix starts
// an ascending scan with SeekPrefixGE of lo, the lower bound, which consults
// the SSTs' prefix filters (First does not) and keeps the iterator within
// the bound's prefix.
func scan(it *pebble.Iterator, lo []byte, reverse, byPrefix bool, fn func(k, v []byte) (bool, error)) error {
	var ok bool
	switch {
	case reverse:
		ok = it.Last()
	case byPrefix:
		ok = it.SeekPrefixGE(lo)
	default:
		ok = it.First()
	}
	for ; ok; ok = advance(it, reverse) {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("reading value of %x: %w", prefix32(it.Key()), err)
		}
		more, err := fn(it.Key(), v)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return it.Error()
}

// dropIter closes the kept iterator, if any.
func (e *pebbleEngine) dropIter() error {
	if e.it == nil {
		return nil
	}
	err := e.it.Close()
	e.it = nil
	if err != nil {
		return fmt.Errorf("closing iterator: %w", err)
	}
	return nil
}

func advance(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// prefixEnd is the smallest key greater than every key with prefix p, in
// dst; nil when there is none.
func prefixEnd(dst, p []byte) []byte {
	dst = append(dst[:0], p...)
	for i := len(dst) - 1; i >= 0; i-- {
		if dst[i] != 0xFF {
			dst[i]++
			return dst[:i+1]
		}
	}
	return nil
}

// scanBucket reads a bucket from the cache when it holds all of it (see
// whole.go), else from Pebble after writing back the dirty entries of map
// states, so that Pebble holds the bucket's truth; the visited key and
// value are copied, so slices decoded from the last one stay valid until
// the next engine call. A complete ascending Pebble scan of a small
// bucket, by the outermost scan and without writes from its callback,
// caches the bucket whole.
func (e *pebbleEngine) scanBucket(bucket, from []byte, reverse bool, fn func(k, v []byte) bool) error {
	if w := e.whole[string(bucket)]; w != nil {
		e.scanWhole(bucket, from, reverse, w, fn)
		return e.takeTrimErr()
	}
	if err := e.flush(true); err != nil {
		return err
	}
	lo := append(e.loBuf[:0], bucket...)
	hi := prefixEnd(e.hiBuf[:0], bucket) // never nil: key groups stay below 0xFFFF
	if from != nil {
		// A bound from the caller: ≥ from ascending, ≤ from descending.
		if reverse {
			hi = append(append(append(hi[:0], bucket...), from...), 0) // the smallest key after bucket+from
		} else {
			lo = append(lo, from...)
		}
	}
	e.loBuf, e.hiBuf = lo, hi
	collect := from == nil && !reverse && !e.itBusy && !e.wholeBusy && !e.knobs.noWholeBuckets
	if collect {
		e.collect.reset()
		// bucket may point into a buffer the callback's own state calls
		// rewrite (Backend.scratch).
		e.collectBucket = append(e.collectBucket[:0], bucket...)
	}
	complete, writes := true, e.writes
	err := e.iterate(lo, hi, reverse, true, func(k, v []byte) (bool, error) {
		e.scanBuf = append(append(e.scanBuf[:0], k...), v...)
		if collect {
			e.collect.add(k, v)
		}
		more := fn(e.scanBuf[:len(k)], e.scanBuf[len(k):])
		complete = complete && more
		return more, nil
	})
	if err == nil && collect && complete && e.writes == writes {
		err = e.makeWhole(e.collectBucket, &e.collect)
	}
	return err
}

func (e *pebbleEngine) each(lo, hi []byte, fn func(k, v []byte) error) error {
	if err := e.flush(false); err != nil {
		return err
	}
	return e.iterate(lo, hi, false, false, func(k, v []byte) (bool, error) { return true, fn(k, v) })
}

// pendingCheckpoint is the asynchronous half of a snapshot: the memtable
// flush and the Pebble checkpoint, taken by a goroutine the engine owns.
type pendingCheckpoint struct {
	done chan struct{}
	// flushing estimates the entries being flushed (sizes counts them
	// until they are in SSTs).
	flushing int64
	// Set before done is closed:
	im  *image.Image // the described checkpoint directory
	err error
}

// testingKnobs let tests order the pending checkpoint against writes.
type testingKnobs struct {
	checkpointGate <-chan struct{} // takeCheckpoint waits for it
	onAwaitPending func()          // called when a write waits for a pending checkpoint
	noWholeBuckets bool            // every bucket scan reads Pebble (tests of that path)
}

// awaitPending waits for the pending checkpoint, if any, to be taken.
func (e *pebbleEngine) awaitPending() {
	if e.pending != nil {
		if e.knobs.onAwaitPending != nil {
			e.knobs.onAwaitPending()
		}
		<-e.pending.done
		e.pending = nil
	}
}

// snapshot seals the state as of now. With the WAL off, what the memtable
// holds must be flushed into an SST before Pebble's checkpoint can link it,
// and at large states that flush took hundreds of milliseconds of the
// synchronous part. So the synchronous part only writes the dirty cache
// into the DB; a goroutine flushes and takes the checkpoint. Until it has, no write reaches the DB: later writes collect
// in the indexed batch (reads see them there), and only a batch that
// outgrows its share of the budget waits (commit). The DB therefore holds
// exactly the state at the barrier when the checkpoint is taken, however
// long the flush takes. The image's Finish waits for that goroutine and
// hashes the new files.
func (e *pebbleEngine) snapshot(id int64, _ func(k, v []byte) bool) (*image.Image, error) {
	if id <= e.lastID {
		return nil, fmt.Errorf("checkpoint %d is not after the last snapshot (%d)", id, e.lastID)
	}
	e.awaitPending() // its describer state must not be shared with this one
	if err := e.flush(false); err != nil {
		return nil, err
	}
	if err := e.commit(); err != nil {
		return nil, err
	}
	// A kept iterator would keep the memtable the checkpoint flushes, and
	// the files compactions replace, until the next commit (which an empty
	// batch does not make).
	if err := e.dropIter(); err != nil {
		return nil, err
	}
	dir := filepath.Join(e.dir, image.DirName(id))
	p := &pendingCheckpoint{done: make(chan struct{}), flushing: e.committed}
	e.pending, e.lastID, e.committed = p, id, 0
	go func() {
		defer close(p.done)
		p.im, p.err = e.takeCheckpoint(id, dir)
	}()
	im := &image.Image{Kind: image.RocksDB, Dir: dir}
	im.Settle(func() { <-p.done })
	im.Defer(func() error {
		<-p.done
		if p.err != nil {
			return p.err
		}
		if err := p.im.Finish(); err != nil {
			return err
		}
		im.Files, im.Bytes, im.KeyGroups = p.im.Files, p.im.Bytes, p.im.KeyGroups
		return nil
	})
	return im, nil
}

// takeCheckpoint is the goroutine of a pendingCheckpoint: it flushes the
// memtables, links the DB's SSTs into dir and describes them. Nothing else
// writes to the DB meanwhile.
func (e *pebbleEngine) takeCheckpoint(id int64, dir string) (*image.Image, error) {
	if err := e.db.Flush(); err != nil {
		return nil, fmt.Errorf("flushing: %w", err)
	}
	if e.knobs.checkpointGate != nil {
		<-e.knobs.checkpointGate
	}
	kgs, err := e.keyGroupRange()
	if err != nil {
		return nil, err
	}
	if err := e.db.Checkpoint(dir); err != nil {
		return nil, fmt.Errorf("pebble checkpoint into %s: %w", dir, err)
	}
	im, err := e.desc.Describe(id, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	im.KeyGroups = kgs
	return im, nil
}

// keyGroupRange returns the lowest and highest key group in the DB, the
// registry excluded.
func (e *pebbleEngine) keyGroupRange() ([2]int, error) {
	kgs := [2]int{-1, -1}
	it, err := e.db.NewIter(&pebble.IterOptions{UpperBound: []byte{0xFF, 0xFF}})
	if err != nil {
		return kgs, err
	}
	if it.First() {
		kgs[0] = storedKeyGroup(it.Key())
		if it.Last() {
			kgs[1] = storedKeyGroup(it.Key())
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return [2]int{-1, -1}, fmt.Errorf("reading key-group range: %w", err)
	}
	return kgs, nil
}

func (e *pebbleEngine) writeChanges(w EntryWriter) error {
	if w.Full() || !e.tracking {
		if err := e.each(nil, nil, func(k, v []byte) error {
			return w.Put(storedKeyGroup(k), k[kgLen:], v)
		}); err != nil {
			return err
		}
	} else {
		for ks := range e.changed {
			k := unsafe.Slice(unsafe.StringData(ks), len(ks))
			v, ok, err := e.get(k)
			switch {
			case err != nil:
				return err
			case ok:
				err = w.Put(storedKeyGroup(k), k[kgLen:], v)
			default:
				err = w.Delete(storedKeyGroup(k), k[kgLen:])
			}
			if err != nil {
				return err
			}
		}
	}
	e.tracking, e.changed = true, make(map[string]struct{})
	return nil
}

func (e *pebbleEngine) load(r EntryReader) error {
	e.dropAllWhole()
	var k []byte
	err := r.Each(func(kg int, key, value []byte) error {
		k = append(appendKeyGroup(k[:0], kg), key...)
		if _, err := validStored(k); err != nil {
			return err
		}
		if err := e.batch.Set(k, value, nil); err != nil {
			return err
		}
		if e.batch.Len() >= e.batchLimit {
			return e.commit()
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.tracking, e.changed = true, make(map[string]struct{})
	return e.commit()
}

func appendKeyGroup(dst []byte, kg int) []byte {
	code := uint16(keyGroupNoneCode)
	if kg != KeyGroupNone {
		code = uint16(kg)
	}
	return append(dst, byte(code>>8), byte(code))
}

// cleanup examines up to n entries from the cursor, after writing the
// dirty cache back so that the batch's view is the truth, and deletes the
// expired ones: through the cache when it holds them, else straight into
// the batch.
func (e *pebbleEngine) cleanup(n int, expired func(k, v []byte) bool) error {
	if err := e.flush(false); err != nil {
		return err
	}
	var dead [][]byte
	seen := 0
	var last []byte
	err := e.iterate(e.cursor, []byte{0xFF, 0xFF}, false, false, func(k, v []byte) (bool, error) {
		seen++
		last = append(last[:0], k...)
		if expired(k, v) {
			dead = append(dead, append([]byte(nil), k...))
		}
		return seen < n, nil
	})
	if err != nil {
		return err
	}
	if seen < n {
		e.cursor = nil // reached the end: start over next time
	} else {
		e.cursor = append(last, 0)
	}
	for _, k := range dead {
		if _, cached := e.lookup(k); cached {
			if err := e.del(k); err != nil {
				return err
			}
			continue
		}
		e.track(k)
		if err := e.batch.Delete(k, nil); err != nil {
			return err
		}
	}
	if e.batch.Len() >= e.batchLimit {
		return e.commit()
	}
	return nil
}

func (e *pebbleEngine) sizes() Sizes {
	m := e.db.Metrics()
	s := Sizes{
		MemoryBytes: e.bytes + int64(e.batch.Len()) + int64(m.MemTable.Size) + m.BlockCache.Size,
		DiskBytes:   int64(m.DiskSpaceUsage()),
	}
	if tables, err := e.db.SSTables(); err == nil {
		for _, level := range tables {
			for _, t := range level {
				s.Entries += int64(t.TableStats.NumEntries) - int64(t.TableStats.NumDeletions)
			}
		}
	}
	for _, c := range e.ents {
		if c.flags&(fUsed|fDirty|fPresent) == fUsed|fDirty|fPresent {
			s.Entries++
		}
	}
	if p := e.pending; p != nil {
		select {
		case <-p.done: // flushed: the SSTs count them
		default:
			s.Entries += p.flushing
		}
	}
	s.Entries = max(s.Entries, 0)
	return s
}

func (e *pebbleEngine) close() error {
	if e.db == nil {
		return nil
	}
	e.awaitPending()
	err := errors.Join(e.dropIter(), e.batch.Close(), e.db.Close())
	e.db, e.batch, e.index, e.ents = nil, nil, nil, nil
	if rmErr := os.RemoveAll(e.dbDir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	_ = os.Remove(e.dir) // only if no image is outstanding
	return err
}
