package kv

import (
	"encoding/binary"
	"fmt"

	"github.com/flinksql/flinksql/types"
)

const (
	// KeyGroupNone marks entries outside every key group (the state
	// registry) in an EntryWriter/EntryReader stream; equal to
	// exec.KeyGroupNone.
	KeyGroupNone = -1
	// MaxKeyGroups bounds max parallelism, as Flink does (2^15).
	MaxKeyGroups = 1 << 15
	// DefaultMaxParallelism stands in when Config gives none
	// (pipeline.max-parallelism defaults to 128).
	DefaultMaxParallelism = 128

	keyGroupNoneCode = 0xFFFF
	kgLen            = 2
	sidLen           = 2
	// mapStateBit marks the state ids of map and sorted map states.
	mapStateBit = 0x8000
	// ttlLen is the size of the last-write time that precedes a value of a
	// state with a TTL.
	ttlLen = 8
)

// KeyGroupOf is the key group of a key hashed with types.HashColumns: the
// function the hash exchange routes rows by, so a key's state is in the key
// group, and so the subtask, its rows reach.
func KeyGroupOf(hash uint64, maxParallelism int) int {
	return types.KeyGroup(hash, maxParallelism)
}

// KeyGroupRange is an inclusive range of key groups.
type KeyGroupRange struct{ First, Last int }

// Contains reports whether kg is in the range.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.First && kg <= r.Last }

// registryPrefix starts the stored key of a state declaration:
// [0xFFFF]['R'][name].
var registryPrefix = []byte{0xFF, 0xFF, 'R'}

// storedKeyGroup is the key group of a stored key, KeyGroupNone for the
// registry.
func storedKeyGroup(k []byte) int {
	code := binary.BigEndian.Uint16(k)
	if code == keyGroupNoneCode {
		return KeyGroupNone
	}
	return int(code)
}

// parsedKey is a stored key taken apart.
type parsedKey struct {
	keyGroup    int
	sid         uint16
	key, ns, uk []byte
	// bucket is the length of the prefix shared by the user keys of one
	// (state, key, namespace): the whole key for states without user keys.
	bucket int
}

// parseKey splits a stored key of a declared state.
func parseKey(k []byte) (parsedKey, error) {
	var p parsedKey
	if len(k) < kgLen+sidLen {
		return p, fmt.Errorf("stored key of %d bytes is too short", len(k))
	}
	p.keyGroup = storedKeyGroup(k)
	p.sid = binary.BigEndian.Uint16(k[kgLen:])
	rest := k[kgLen+sidLen:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > uint64(len(rest)-w) {
		return p, fmt.Errorf("stored key %x: bad key length", prefix32(k))
	}
	p.key = rest[w : w+int(n)]
	rest = rest[w+int(n):]
	n, w = binary.Uvarint(rest)
	if w <= 0 || n > uint64(len(rest)-w) {
		return p, fmt.Errorf("stored key %x: bad namespace length", prefix32(k))
	}
	p.ns = rest[w : w+int(n)]
	rest = rest[w+int(n):]
	p.bucket = len(k) - len(rest)
	if p.sid&mapStateBit != 0 {
		p.uk = rest
	} else if len(rest) > 0 {
		return p, fmt.Errorf("stored key %x: %d trailing bytes after the namespace of a state without user keys", prefix32(k), len(rest))
	}
	return p, nil
}

// bucketLen is the length of k's prefix up to and including the namespace,
// for keys of map states, and 0 otherwise (or for malformed keys).
func bucketLen(k []byte) int {
	if len(k) < kgLen+sidLen || k[kgLen]&0x80 == 0 || storedKeyGroup(k) == KeyGroupNone {
		return 0
	}
	p, err := parseKey(k)
	if err != nil {
		return 0
	}
	return p.bucket
}

func prefix32(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// appendUvarintBytes appends len(b) as a uvarint, then b.
func appendUvarintBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}
