package kv

import (
	"encoding/binary"
	"fmt"
)

// Stamped access for operators that keep a write-back cache of decoded
// values in front of the backend: the cache writes a value back later than
// it changed (at a checkpoint, on eviction), and must not extend the
// value's TTL by doing so; and when it loads a value it needs the value's
// write time to expire it in the cache by the same rule as the backend.

// GetStamped is Get that also returns the processing time of the value's
// last write (0 when the state has no TTL).
func (s *ValueState[T]) GetStamped(ns []byte) (v T, lastWrite int64, ok bool, err error) {
	var zero T
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return zero, 0, false, err
	}
	raw, ok, err := s.b.eng.get(k)
	if err != nil || !ok {
		return zero, 0, false, err
	}
	if s.ttl > 0 {
		if expiredAt(s.ttl, raw, s.b.clock()) {
			return zero, 0, false, s.b.eng.del(k)
		}
		lastWrite, raw = int64(binary.BigEndian.Uint64(raw)), raw[ttlLen:]
	}
	t, err := s.codec.Decode(raw)
	if err != nil {
		return zero, 0, false, fmt.Errorf("kv: decoding value of key %x: %w", prefix32(k), err)
	}
	return t, lastWrite, true, nil
}

// PutStamped is Put of a value whose last write happened at processing
// time lastWrite (ignored when the state has no TTL): it expires from
// lastWrite + TTL on, as if it had been put then.
func (s *ValueState[T]) PutStamped(ns []byte, v T, lastWrite int64) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	buf := s.b.vbuf[:0]
	if s.ttl > 0 {
		s.b.now = s.b.clock() // what the incremental cleanup judges by
		buf = binary.BigEndian.AppendUint64(buf, uint64(lastWrite))
	}
	buf = s.codec.Append(buf, v)
	s.b.vbuf = buf
	if err := s.b.eng.put(k, buf); err != nil {
		return err
	}
	return s.b.afterWrite()
}
