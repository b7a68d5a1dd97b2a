package state

// The contracts between the runtime and the entry stores: how an operator
// instance's snapshot is written and replayed. They live here, below the
// runtime (package exec aliases them), so that state never imports exec.

// KeyGroupNone marks operator (non-keyed) state entries.
const KeyGroupNone = -1

// Writer receives one operator instance's snapshot during the synchronous
// part of a checkpoint. Keys and values are copied; the caller may reuse
// its buffers.
type Writer interface {
	// Full reports whether every live entry must be written (the first
	// snapshot after a start or restore, or a backend that only keeps full
	// snapshots); otherwise only entries changed since the previous snapshot.
	Full() bool
	Put(keyGroup int, key, value []byte) error
	Delete(keyGroup int, key []byte) error
}

// Reader replays a restored snapshot into an operator instance: every
// live entry once, in key order within a key group.
type Reader interface {
	Each(fn func(keyGroup int, key, value []byte) error) error
}
