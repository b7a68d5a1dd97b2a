package kv

import (
	"encoding/binary"
	"fmt"
)

// ValueState holds one value per (key, namespace).
type ValueState[T any] struct {
	b     *Backend
	sid   uint16
	ttl   int64
	codec Codec[T]
}

// NewValueState declares a value state.
func NewValueState[T any](b *Backend, name string, c Codec[T], opts Options) (*ValueState[T], error) {
	d, err := b.declare(name, kindValue, c.ID(), opts)
	if err != nil {
		return nil, err
	}
	return &ValueState[T]{b: b, sid: d.sid, ttl: d.ttl, codec: c}, nil
}

// Get returns the value of the current key in ns.
func (s *ValueState[T]) Get(ns []byte) (T, bool, error) {
	var zero T
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return zero, false, err
	}
	v, ok, err := s.b.eng.get(k)
	if err != nil || !ok {
		return zero, false, err
	}
	if s.ttl > 0 {
		if expiredAt(s.ttl, v, s.b.clock()) {
			return zero, false, s.b.eng.del(k)
		}
		v = v[ttlLen:]
	}
	t, err := s.codec.Decode(v)
	if err != nil {
		return zero, false, fmt.Errorf("kv: decoding value of key %x: %w", prefix32(k), err)
	}
	return t, true, nil
}

// Put sets the value of the current key in ns.
func (s *ValueState[T]) Put(ns []byte, v T) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	buf := s.codec.Append(s.b.valueBuf(s.ttl), v)
	s.b.vbuf = buf
	if err := s.b.eng.put(k, buf); err != nil {
		return err
	}
	return s.b.afterWrite()
}

// Clear removes the value of the current key in ns.
func (s *ValueState[T]) Clear(ns []byte) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	return s.b.eng.del(k)
}

// ListState holds a list of values per (key, namespace). With a TTL, each
// element expires on its own, counted from when it was added.
type ListState[T any] struct {
	b     *Backend
	sid   uint16
	ttl   int64
	codec Codec[T]
	buf   []byte
}

// NewListState declares a list state.
func NewListState[T any](b *Backend, name string, c Codec[T], opts Options) (*ListState[T], error) {
	d, err := b.declare(name, kindList, c.ID(), opts)
	if err != nil {
		return nil, err
	}
	return &ListState[T]{b: b, sid: d.sid, ttl: d.ttl, codec: c}, nil
}

// appendElem appends the list encoding of v.
func (s *ListState[T]) appendElem(dst []byte, v T, now int64) []byte {
	if s.ttl > 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(now))
	}
	n := len(dst)
	dst = append(dst, 0) // length placeholder, usually one byte
	dst = s.codec.Append(dst, v)
	l := len(dst) - n - 1
	if l < 0x80 {
		dst[n] = byte(l)
		return dst
	}
	var lb [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(lb[:], uint64(l))
	dst = append(dst, lb[:w-1]...)
	copy(dst[n+w:], dst[n+1:n+1+l])
	copy(dst[n:], lb[:w])
	return dst
}

// Add appends v to the list of the current key in ns.
func (s *ListState[T]) Add(ns []byte, v T) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	var now int64
	if s.ttl > 0 {
		now = s.b.clock()
		s.b.now = now
	}
	s.buf = s.appendElem(s.buf[:0], v, now)
	if err := s.b.eng.appendValue(k, s.buf); err != nil {
		return err
	}
	return s.b.afterWrite()
}

// Update replaces the list of the current key in ns by vs (removing it
// when vs is empty).
func (s *ListState[T]) Update(ns []byte, vs []T) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return s.b.eng.del(k)
	}
	var now int64
	if s.ttl > 0 {
		now = s.b.clock()
	}
	buf := s.buf[:0]
	for _, v := range vs {
		buf = s.appendElem(buf, v, now)
	}
	s.buf = buf
	if err := s.b.eng.put(k, buf); err != nil {
		return err
	}
	return s.b.afterWrite()
}

// Iterate calls fn with the elements of the list of the current key in ns,
// in order, until fn returns false. fn must not use the backend. Expired
// elements are skipped and removed.
func (s *ListState[T]) Iterate(ns []byte, fn func(v T) bool) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	v, ok, err := s.b.eng.get(k)
	if err != nil || !ok {
		return err
	}
	var now int64
	if s.ttl > 0 {
		now = s.b.clock()
	}
	expired, stopped := false, false
	for rest := v; len(rest) > 0; {
		var ts int64
		if s.ttl > 0 {
			if len(rest) < ttlLen {
				return fmt.Errorf("kv: list of key %x: truncated element", prefix32(k))
			}
			ts, rest = int64(binary.BigEndian.Uint64(rest)), rest[ttlLen:]
		}
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return fmt.Errorf("kv: list of key %x: bad element length", prefix32(k))
		}
		elem := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		if s.ttl > 0 && ts+s.ttl <= now {
			expired = true
			continue
		}
		if stopped {
			continue
		}
		t, err := s.codec.Decode(elem)
		if err != nil {
			return fmt.Errorf("kv: list of key %x: %w", prefix32(k), err)
		}
		if !fn(t) {
			stopped = true
			if s.ttl == 0 {
				break
			}
		}
	}
	if !expired {
		return nil
	}
	return s.dropExpired(k, v, now)
}

// dropExpired rewrites list v of stored key k without its expired elements.
func (s *ListState[T]) dropExpired(k, v []byte, now int64) error {
	buf := s.buf[:0]
	for rest := v; len(rest) > 0; {
		ts := int64(binary.BigEndian.Uint64(rest))
		n, w := binary.Uvarint(rest[ttlLen:])
		l := ttlLen + w + int(n)
		if ts+s.ttl > now {
			buf = append(buf, rest[:l]...)
		}
		rest = rest[l:]
	}
	s.buf = buf
	// k is b.scratch, which Iterate did not touch since.
	if len(buf) == 0 {
		return s.b.eng.del(k)
	}
	return s.b.eng.put(k, buf)
}

// Clear removes the list of the current key in ns.
func (s *ListState[T]) Clear(ns []byte) error {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	return s.b.eng.del(k)
}

// MapState holds a map from user keys to values per (key, namespace).
// Iteration visits user keys in the byte order of their encodings. With a
// TTL, each user key expires on its own.
type MapState[K, V any] struct {
	b    *Backend
	sid  uint16
	ttl  int64
	kc   Codec[K]
	vc   Codec[V]
	dead []byte // stored keys of expired entries found during a scan
	ends []int

	// The running scan's state for visit, and visit as a func value made
	// once: a closure per scan would allocate (it escapes into the
	// engine interface), which is per row for an operator scanning a key
	// per row.
	scanFn   func(uk K, v V) bool
	scanBLen int
	scanNow  int64
	scanErr  error
	visitFn  func(k, v []byte) bool
}

// NewMapState declares a map state.
func NewMapState[K, V any](b *Backend, name string, kc Codec[K], vc Codec[V], opts Options) (*MapState[K, V], error) {
	return newMapState(b, name, kindMap, kc, vc, opts)
}

func newMapState[K, V any](b *Backend, name string, kind stateKind, kc Codec[K], vc Codec[V], opts Options) (*MapState[K, V], error) {
	d, err := b.declare(name, kind, kc.ID()+"/"+vc.ID(), opts)
	if err != nil {
		return nil, err
	}
	s := &MapState[K, V]{b: b, sid: d.sid, ttl: d.ttl, kc: kc, vc: vc}
	s.visitFn = s.visit
	return s, nil
}

func (s *MapState[K, V]) key(ns []byte, uk K) ([]byte, error) {
	k, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return nil, err
	}
	k = s.kc.Append(k, uk)
	s.b.scratch = k
	return k, nil
}

// Get returns the value of user key uk of the current key in ns.
func (s *MapState[K, V]) Get(ns []byte, uk K) (V, bool, error) {
	var zero V
	k, err := s.key(ns, uk)
	if err != nil {
		return zero, false, err
	}
	v, ok, err := s.b.eng.get(k)
	if err != nil || !ok {
		return zero, false, err
	}
	if s.ttl > 0 {
		if expiredAt(s.ttl, v, s.b.clock()) {
			return zero, false, s.b.eng.del(k)
		}
		v = v[ttlLen:]
	}
	t, err := s.vc.Decode(v)
	if err != nil {
		return zero, false, fmt.Errorf("kv: decoding value of key %x: %w", prefix32(k), err)
	}
	return t, true, nil
}

// Contains reports whether user key uk of the current key in ns is set.
func (s *MapState[K, V]) Contains(ns []byte, uk K) (bool, error) {
	_, ok, err := s.Get(ns, uk)
	return ok, err
}

// Put sets user key uk of the current key in ns to v.
func (s *MapState[K, V]) Put(ns []byte, uk K, v V) error {
	k, err := s.key(ns, uk)
	if err != nil {
		return err
	}
	buf := s.vc.Append(s.b.valueBuf(s.ttl), v)
	s.b.vbuf = buf
	if err := s.b.eng.put(k, buf); err != nil {
		return err
	}
	return s.b.afterWrite()
}

// Delete removes user key uk of the current key in ns.
func (s *MapState[K, V]) Delete(ns []byte, uk K) error {
	k, err := s.key(ns, uk)
	if err != nil {
		return err
	}
	return s.b.eng.del(k)
}

// scan visits the live entries of the current key in ns (see
// engine.scanBucket), then removes the expired ones it met.
func (s *MapState[K, V]) scan(ns []byte, from *K, reverse bool, fn func(uk K, v V) bool) error {
	bucket, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	var fromKey []byte
	if from != nil {
		// Append after the bucket in the scratch buffer, which may have to
		// grow (a from key longer than its spare capacity).
		k := s.kc.Append(bucket, *from)
		s.b.scratch = k
		bucket, fromKey = k[:len(bucket):len(bucket)], k[len(bucket):]
	}
	var now int64
	if s.ttl > 0 {
		now = s.b.clock()
	}
	s.dead, s.ends = s.dead[:0], s.ends[:0]
	s.scanFn, s.scanBLen, s.scanNow, s.scanErr = fn, len(bucket), now, nil
	err = s.b.eng.scanBucket(bucket, fromKey, reverse, s.visitFn)
	if err == nil {
		err = s.scanErr
	}
	s.scanFn, s.scanErr = nil, nil
	start := 0
	for _, end := range s.ends {
		if derr := s.b.eng.del(s.dead[start:end]); derr != nil && err == nil {
			err = derr
		}
		start = end
	}
	return err
}

// visit is scan's visit of one stored entry.
func (s *MapState[K, V]) visit(k, v []byte) bool {
	if s.ttl > 0 {
		if expiredAt(s.ttl, v, s.scanNow) {
			s.dead = append(s.dead, k...)
			s.ends = append(s.ends, len(s.dead))
			return true
		}
		v = v[ttlLen:]
	}
	uk, err := s.kc.Decode(k[s.scanBLen:])
	if err != nil {
		s.scanErr = fmt.Errorf("kv: decoding user key of %x: %w", prefix32(k), err)
		return false
	}
	val, err := s.vc.Decode(v)
	if err != nil {
		s.scanErr = fmt.Errorf("kv: decoding value of %x: %w", prefix32(k), err)
		return false
	}
	return s.scanFn(uk, val)
}

// Iterate calls fn with the entries of the current key in ns, in user-key
// byte order, until fn returns false. fn must not use the backend.
func (s *MapState[K, V]) Iterate(ns []byte, fn func(uk K, v V) bool) error {
	return s.scan(ns, nil, false, fn)
}

// IsEmpty reports whether the current key has no entries in ns.
func (s *MapState[K, V]) IsEmpty(ns []byte) (bool, error) {
	empty := true
	err := s.scan(ns, nil, false, func(K, V) bool { empty = false; return false })
	return empty, err
}

// Clear removes every entry of the current key in ns.
func (s *MapState[K, V]) Clear(ns []byte) error {
	bucket, err := s.b.bucket(s.sid, ns)
	if err != nil {
		return err
	}
	s.dead, s.ends = s.dead[:0], s.ends[:0]
	// Last key first: the hashmap engine removes each from its bucket's
	// sorted index, which costs nothing at the end and a shift of all the
	// rest at the front (clearing a large map front first is quadratic).
	if err := s.b.eng.scanBucket(bucket, nil, true, func(k, _ []byte) bool {
		s.dead = append(s.dead, k...)
		s.ends = append(s.ends, len(s.dead))
		return true
	}); err != nil {
		return err
	}
	start := 0
	for _, end := range s.ends {
		if err := s.b.eng.del(s.dead[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// SortedMapState is a MapState whose user keys are ordered by an
// order-preserving codec, with ordered iteration from either end: the state
// of Top-N and OVER aggregation.
type SortedMapState[K, V any] struct {
	MapState[K, V]
}

// NewSortedMapState declares a sorted map state.
func NewSortedMapState[K, V any](b *Backend, name string, kc OrderedCodec[K], vc Codec[V], opts Options) (*SortedMapState[K, V], error) {
	m, err := newMapState[K, V](b, name, kindSortedMap, kc, vc, opts)
	if err != nil {
		return nil, err
	}
	sm := &SortedMapState[K, V]{MapState: *m}
	sm.visitFn = sm.MapState.visit // bound to this copy, not to m
	return sm, nil
}

// Ascend calls fn with the entries in ascending order from the smallest
// user key ≥ from (or the first, when from is nil) until fn returns false.
func (s *SortedMapState[K, V]) Ascend(ns []byte, from *K, fn func(uk K, v V) bool) error {
	return s.scan(ns, from, false, fn)
}

// Descend calls fn with the entries in descending order from the largest
// user key ≤ from (or the last, when from is nil) until fn returns false.
func (s *SortedMapState[K, V]) Descend(ns []byte, from *K, fn func(uk K, v V) bool) error {
	return s.scan(ns, from, true, fn)
}

// First returns the entry with the smallest user key.
func (s *SortedMapState[K, V]) First(ns []byte) (uk K, v V, ok bool, err error) {
	err = s.scan(ns, nil, false, func(k K, val V) bool { uk, v, ok = k, val, true; return false })
	return
}

// Last returns the entry with the largest user key.
func (s *SortedMapState[K, V]) Last(ns []byte) (uk K, v V, ok bool, err error) {
	err = s.scan(ns, nil, true, func(k K, val V) bool { uk, v, ok = k, val, true; return false })
	return
}
