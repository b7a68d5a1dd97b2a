package kv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// bucketComparerName names the stored-key order of working DBs created
// since map-state buckets got prefix Bloom filters. Pebble records it in
// the DB, so an image taken under it opens only with bucketComparer; an
// image taken before (Pebble's bytewise comparer) is still opened with
// that one, and then scans without prefix filters.
const bucketComparerName = "flinksql.kv.bucket.v1"

// newBucketComparer returns the byte order of stored keys with a Split
// that makes a map-state key's bucket (key group, state, key, namespace)
// its prefix. Pebble then builds its SST Bloom filters on buckets, and a
// bucket scan by SeekPrefixGE skips every SST whose filter lacks the
// bucket: a join probe for a key with no rows, or whose rows are all in
// the memtables, costs a filter probe per level instead of an index and a
// data block seek per level.
//
// The order stays bytewise, which agrees with Split's prefix-then-suffix
// order because no bucket is a proper prefix of another (its fields are
// length-prefixed) and keys of other states have no suffix.
func newBucketComparer() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = bucketSplit
	c.ImmediateSuccessor = func(dst, a []byte) []byte {
		if n, ok := bucketEnd(a); ok && n == len(a) {
			// a + 0x00 would be a key of bucket a; the first key after
			// all of them is a's prefix end.
			return append(dst, prefixEnd(nil, a)...)
		}
		return append(append(dst, a...), 0)
	}
	c.Name = bucketComparerName
	return &c
}

// bucketSplit is the length of a map-state key's bucket, and the whole
// key's for every other key: keys of other states, the registry, and the
// truncated keys Pebble makes as block separators (a separator that holds
// only part of a bucket is a prefix of it, so its order against every key
// is the same whether it counts as a prefix or not). It reads what
// parseKey reads, without building anything: Pebble calls it for every key
// it writes and every seek.
func bucketSplit(k []byte) int {
	if n, ok := bucketEnd(k); ok {
		return n
	}
	return len(k)
}

// bucketEnd is the length of a map-state key's bucket; ok is false for
// other keys and for keys too short to hold a whole bucket.
func bucketEnd(k []byte) (n int, ok bool) {
	if len(k) <= kgLen+sidLen || k[kgLen]&0x80 == 0 || (k[0] == 0xFF && k[1] == 0xFF) {
		return 0, false
	}
	i := kgLen + sidLen
	for field := 0; field < 2; field++ {
		n, w := binary.Uvarint(k[i:])
		if w <= 0 || n > uint64(len(k)-i-w) {
			return 0, false
		}
		i += w + int(n)
	}
	return i, true
}

// dbComparer picks the comparer to open the working DB in dbDir with: the
// one its OPTIONS file names, when it was made before bucketComparer
// (Pebble refuses a DB opened with another comparer than it was made
// with), else bucketComparer. prefixFilters says whether bucket scans may
// rely on prefix Bloom filters.
func dbComparer(dbDir string, exists bool) (c *pebble.Comparer, prefixFilters bool, err error) {
	if !exists {
		return newBucketComparer(), true, nil
	}
	desc, err := pebble.Peek(dbDir, vfs.Default)
	if err != nil {
		return nil, false, fmt.Errorf("reading pebble DB %s: %w", dbDir, err)
	}
	if desc.OptionsFilename == "" {
		return nil, false, fmt.Errorf("pebble DB %s has no OPTIONS file", dbDir)
	}
	name, err := optionsComparer(filepath.Join(dbDir, filepath.Base(desc.OptionsFilename)))
	if err != nil {
		return nil, false, err
	}
	switch name {
	case bucketComparerName:
		return newBucketComparer(), true, nil
	case pebble.DefaultComparer.Name:
		return pebble.DefaultComparer, false, nil
	default:
		return nil, false, fmt.Errorf("pebble DB %s was written with comparer %q, which this version does not know (it knows %q and %q)",
			dbDir, name, bucketComparerName, pebble.DefaultComparer.Name)
	}
}

// optionsComparer reads the comparer name of a Pebble OPTIONS file (an INI
// file whose [Options] section has comparer=<name>).
func optionsComparer(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) > 1 && line[0] == '[' && line[len(line)-1] == ']' {
			section = string(line[1 : len(line)-1])
			continue
		}
		if k, v, ok := strings.Cut(string(line), "="); ok && section == "Options" && strings.TrimSpace(k) == "comparer" {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return "", fmt.Errorf("%s names no comparer", path)
}
