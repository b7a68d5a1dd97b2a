// Package kv owns the keyed state of one operator instance: the states an
// operator declares (value, list, map and sorted map state, each with a
// stable name and a codec), their addressing by key group, key and
// namespace, and everything the runtime does for them so that operators do
// not: key-group computation, dirty tracking, state TTL, snapshots and
// restore, and size reporting.
//
// # Model
//
// A Backend belongs to one operator instance and is driven by one
// goroutine. The operator sets the current key once per row
// (SetCurrentKey, with the hash the exchange routed the row by, so state
// lands in the key group the row was sent to) and then reads and writes its
// declared states for that key under a namespace (the window for window
// operators; nil for none). Map and sorted map states hold a map from user
// keys to values per (key, namespace); sorted map state iterates its user
// keys in byte order, so its key codec must preserve order (Top-N, OVER).
//
// # Backends
//
// hashmap keeps every entry in Go memory; a snapshot copies the entry
// headers (copy-on-write: value buffers are never overwritten once a
// snapshot may reference them) and writes a full image file afterwards.
// rocksdb keeps the working state in a Pebble DB behind a bounded
// write-back cache of hot entries; a snapshot flushes the dirty cache,
// flushes the memtable and hard-links a Pebble checkpoint, whose SSTs are
// shared with earlier images, so checkpoints are incremental; a restore
// opens the downloaded DB without reading its entries. Both produce the
// image.Image package checkpoint uploads.
//
// # Layout
//
// Every entry, in either backend, is stored under
//
//	[key group: 2 B BE][state id: 2 B BE][uvarint len(key)][key][uvarint len(ns)][ns][user key]
//
// (the user key only for map states), so every key-group range is
// contiguous, and the entries of one (state, key, namespace) of a map state
// form one contiguous, ordered range. State ids of map states have the top
// bit set, so a stored key says by itself whether it has a user key. The
// names, kinds, codecs and TTLs of the declared states are stored as
// entries of their own under the key group 0xFFFF (outside every key-group
// range), so a snapshot can be read without the operator that wrote it.
//
// A value is stored as the codec's bytes, preceded by the 8-byte
// processing time of its last write when the state has a TTL. A list is
// one value holding its elements, each as [8-byte time, if TTL][uvarint
// len][bytes].
//
// # Timers
//
// TimerService is Flink's InternalTimerService on top of these states:
// event- and processing-time timers per key and namespace, registered for
// the current key, kept per key group in two sorted map states of the
// operator's (name/timers/event, name/timers/processing: user key [time,
// 8 B order-preserving][uvarint len(ns)][ns][key], under the key group's
// empty key). So timers are in every snapshot, follow their key groups on
// a rescaled restore, and on rocksdb may outgrow memory: the service keeps
// only the first timer of each key group and domain in memory. Advance
// fires the due timers in (time, namespace, key) order with the timer's
// key current; for processing time the service asks the runtime for a
// wake-up at its earliest timer (Start, after a restore too), so an
// operator does not re-register stored timers. The session window
// aggregate fires its stored sessions this way.
package kv
