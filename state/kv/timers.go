package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// TimeDomain is the clock a timer is set on.
type TimeDomain uint8

const (
	// EventTime timers fire when the watermark reaches their time.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the processing time (epoch ms)
	// reaches their time.
	ProcessingTime
)

func (d TimeDomain) String() string {
	if d == EventTime {
		return "event time"
	}
	return "processing time"
}

// Timer is a timer being fired: its time, and the key group, key and
// namespace it was registered under. Key and Namespace are valid during
// the callback only.
type Timer struct {
	Domain    TimeDomain
	Time      int64
	KeyGroup  int
	Key       []byte
	Namespace []byte
}

// TimerService holds an operator's timers in its keyed state (Flink's
// InternalTimerService): a timer belongs to a key and a namespace (the
// window, for window operators) and a time domain, and is registered for
// the backend's current key. Timers are stored, so they are in every
// snapshot, come back with a restore and follow their key group when a
// job is restored at another parallelism, and on rocksdb they live in
// Pebble, so there may be more of them than fit in memory; in memory the
// service keeps only the earliest time per key group and domain.
//
// Advance fires, in time order, every timer of a domain whose time has
// come, with the timer's key set as the backend's current key while the
// callback runs (as Flink's onTimer runs with the timer's key), so the
// callback reads and writes that key's state; timers the callback
// registers at or before the time fire in the same Advance. Timers of
// equal time fire in the order of their namespaces' bytes (namespaces of
// one length, as an operator's windows are), then of their keys' bytes,
// across key groups: a deterministic order an operator can merge with
// what it keeps in memory (Flink leaves it open). Registering a timer
// that exists (same domain, time, key, namespace) changes nothing, as in
// Flink. For processing time the service asks the runtime for a wake-up
// (the register func given to Start) at the earliest time it holds, so an
// operator need not re-register its timers after a restore.
//
// The timers of a key group are one sorted map state per domain under the
// key group's empty key, user key [time: 8 B order-preserving][namespace]
// [key], so a key group's timers are one ordered range.
type TimerService struct {
	b  *Backend
	st [2]*SortedMapState[[]byte, []byte]
	// heads, per domain and owned key group: the user key of its first
	// timer (nil: none) when known[d][i].
	heads [2][][]byte
	known [2][]bool
	// wake is the earliest processing time the runtime was asked to call
	// back at (math.MaxInt64: none pending); register asks it.
	wake     int64
	register func(int64)
	changed  [2]bool // a timer was registered or deleted during a callback
	firing   bool
	saved    []byte
	key      []byte // the current key, saved by enterGroup
	uk       []byte
	page     []firedTimer
	pageBuf  []byte
	offs     []int
}

type firedTimer struct{ uk []byte }

// NewTimerService declares the timer states of an operator, named name
// (stable: it is the state's name in every snapshot).
func NewTimerService(b *Backend, name string) (*TimerService, error) {
	ts := &TimerService{b: b, wake: math.MaxInt64}
	for d, suffix := range []string{"event", "processing"} {
		st, err := NewSortedMapState[[]byte, []byte](b, name+"/timers/"+suffix, Bytes{}, Bytes{}, Options{})
		if err != nil {
			return nil, fmt.Errorf("timers: %w", err)
		}
		ts.st[d] = st
		n := b.kgs.Last - b.kgs.First + 1
		ts.heads[d], ts.known[d] = make([][]byte, n), make([]bool, n)
	}
	return ts, nil
}

// Start gives the service the runtime's processing-time wake-up (the
// operator's exec.OperatorContext.RegisterProcessingTimer) and asks for the
// earliest stored processing-time timer, if any: after a restore, that is
// all it takes to have the restored timers fire. The operator forwards its
// OnProcessingTime to Advance(ProcessingTime, …).
func (ts *TimerService) Start(register func(int64)) error {
	ts.register = register
	t, ok, err := ts.Next(ProcessingTime)
	if ok {
		ts.askWake(t)
	}
	return err
}

// Register sets a timer at time t in domain d for the backend's current
// key and namespace ns.
func (ts *TimerService) Register(d TimeDomain, t int64, ns []byte) error {
	kg, err := ts.enterGroup()
	if err != nil {
		return err
	}
	defer ts.leaveGroup()
	uk := ts.userKey(t, ns)
	if err := ts.st[d].Put(nil, uk, nil); err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	i := kg - ts.b.kgs.First
	if h := ts.heads[d][i]; ts.known[d][i] && (h == nil || bytes.Compare(uk, h) < 0) {
		ts.heads[d][i] = append(h[:0], uk...)
	}
	ts.changed[d] = true
	if d == ProcessingTime {
		ts.askWake(t)
	}
	return nil
}

// Delete removes the timer at time t in domain d of the backend's current
// key and namespace ns; there need not be one.
func (ts *TimerService) Delete(d TimeDomain, t int64, ns []byte) error {
	kg, err := ts.enterGroup()
	if err != nil {
		return err
	}
	defer ts.leaveGroup()
	uk := ts.userKey(t, ns)
	if err := ts.st[d].Delete(nil, uk); err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	i := kg - ts.b.kgs.First
	if bytes.Equal(ts.heads[d][i], uk) {
		ts.known[d][i] = false
	}
	ts.changed[d] = true
	return nil
}

// Next returns the earliest time of a timer in domain d (ok false: none).
func (ts *TimerService) Next(d TimeDomain) (t int64, ok bool, err error) {
	kg, err := ts.min(d, -1)
	if err != nil || kg < 0 {
		return 0, false, err
	}
	return decodeTime(ts.heads[d][kg-ts.b.kgs.First]), true, nil
}

// Advance fires every timer of domain d at or before t, in time order,
// calling fire with the backend's current key set to the timer's key;
// a timer is deleted before its callback runs. An error from fire stops
// the advance and is returned. For processing time it asks the runtime
// for a wake-up at the next timer left.
func (ts *TimerService) Advance(d TimeDomain, t int64, fire func(Timer) error) error {
	if ts.firing {
		return errors.New("timers: Advance called from a timer callback")
	}
	ts.firing = true
	defer func() { ts.firing = false }()
	if d == ProcessingTime && ts.wake <= t {
		ts.wake = math.MaxInt64
	}
	for {
		kg, err := ts.min(d, -1)
		if err != nil {
			return err
		}
		if kg < 0 || decodeTime(ts.heads[d][kg-ts.b.kgs.First]) > t {
			break
		}
		// Fire kg's timers up to t and before the first timer of every
		// other key group, in pages; a callback that registers or deletes
		// a timer ends the page, as the rest of it may no longer be what
		// comes next.
		other, err := ts.min(d, kg)
		if err != nil {
			return err
		}
		var bound []byte
		if other >= 0 {
			bound = ts.heads[d][other-ts.b.kgs.First]
		}
		if err := ts.readPage(d, kg, t, bound); err != nil {
			return err
		}
		ts.known[d][kg-ts.b.kgs.First] = false
		for _, p := range ts.page {
			if err := ts.b.SetCurrentKeyInGroup(kg, nil); err != nil {
				return err
			}
			if err := ts.st[d].Delete(nil, p.uk); err != nil {
				return fmt.Errorf("timers: %w", err)
			}
			tm, err := decodeTimerKey(p.uk)
			if err != nil {
				return err
			}
			tm.Domain, tm.KeyGroup = d, kg
			if err := ts.b.SetCurrentKeyInGroup(kg, tm.Key); err != nil {
				return err
			}
			ts.changed[d] = false
			if err := fire(tm); err != nil {
				return err
			}
			if ts.changed[d] {
				break
			}
		}
	}
	if d == ProcessingTime {
		next, ok, err := ts.Next(d)
		if err != nil {
			return err
		}
		if ok {
			ts.askWake(next)
		}
	}
	return nil
}

func (ts *TimerService) askWake(t int64) {
	if ts.register != nil && t < ts.wake {
		ts.wake = t
		ts.register(t)
	}
}

// readPage reads up to 64 of kg's first timers of d at or before t and
// before bound (nil: no bound).
func (ts *TimerService) readPage(d TimeDomain, kg int, t int64, bound []byte) error {
	if err := ts.b.SetCurrentKeyInGroup(kg, nil); err != nil {
		return err
	}
	ts.page, ts.pageBuf = ts.page[:0], ts.pageBuf[:0]
	ts.offs = ts.offs[:0]
	err := ts.st[d].Ascend(nil, nil, func(uk, _ []byte) bool {
		if len(uk) < 8 || decodeTime(uk) > t || bound != nil && bytes.Compare(uk, bound) >= 0 {
			return false
		}
		ts.pageBuf = append(ts.pageBuf, uk...)
		ts.offs = append(ts.offs, len(ts.pageBuf))
		return len(ts.offs) < 64
	})
	if err != nil {
		return fmt.Errorf("timers: %w", err)
	}
	start := 0
	for _, end := range ts.offs {
		ts.page = append(ts.page, firedTimer{uk: ts.pageBuf[start:end:end]})
		start = end
	}
	return nil
}

// min returns the owned key group (other than skip) whose first timer of
// d comes first (-1 when none), reading the heads not known.
func (ts *TimerService) min(d TimeDomain, skip int) (int, error) {
	heads, known := ts.heads[d], ts.known[d]
	best := -1
	for i := range heads {
		kg := ts.b.kgs.First + i
		if !known[i] {
			if err := ts.b.SetCurrentKeyInGroup(kg, nil); err != nil {
				return 0, err
			}
			uk, _, ok, err := ts.st[d].First(nil)
			if err != nil {
				return 0, fmt.Errorf("timers: %w", err)
			}
			if ok && len(uk) < 9 {
				return 0, fmt.Errorf("timers: corrupt timer key %x in key group %d", uk, kg)
			}
			heads[i], known[i] = heads[i][:0], true
			if ok {
				heads[i] = append(heads[i], uk...)
			} else {
				heads[i] = nil
			}
		}
		if kg != skip && heads[i] != nil && (best < 0 || bytes.Compare(heads[i], heads[best-ts.b.kgs.First]) < 0) {
			best = kg
		}
	}
	return best, nil
}

// enterGroup switches the backend to the empty key of the current key's
// key group, saving the current key, and returns the key group.
func (ts *TimerService) enterGroup() (int, error) {
	b := ts.b
	if !b.hasKey {
		return 0, errNoKey
	}
	ts.saved = append(ts.saved[:0], b.cur...)
	kg := int(binary.BigEndian.Uint16(b.cur))
	n, w := binary.Uvarint(b.cur[4:])
	key := b.cur[4+w : 4+w+int(n)]
	ts.key = append(ts.key[:0], key...)
	return kg, b.SetCurrentKeyInGroup(kg, nil)
}

// leaveGroup restores the current key enterGroup saved.
func (ts *TimerService) leaveGroup() {
	ts.b.cur = append(ts.b.cur[:0], ts.saved...)
	ts.b.hasKey = true
}

// userKey builds [time][uvarint len(ns)][ns][key] of the key enterGroup
// saved. (The length prefix orders namespaces by length first: an
// operator's namespaces of one length, as window ends are, fire in their
// byte order.)
func (ts *TimerService) userKey(t int64, ns []byte) []byte {
	uk := binary.BigEndian.AppendUint64(ts.uk[:0], uint64(t)^(1<<63))
	uk = binary.AppendUvarint(uk, uint64(len(ns)))
	uk = append(uk, ns...)
	ts.uk = append(uk, ts.key...)
	return ts.uk
}

func decodeTime(uk []byte) int64 { return int64(binary.BigEndian.Uint64(uk) ^ (1 << 63)) }

func decodeTimerKey(uk []byte) (Timer, error) {
	if len(uk) < 9 {
		return Timer{}, fmt.Errorf("timers: corrupt timer key %x", uk)
	}
	t := Timer{Time: decodeTime(uk)}
	n, w := binary.Uvarint(uk[8:])
	if w <= 0 || uint64(len(uk)-8-w) < n {
		return Timer{}, fmt.Errorf("timers: corrupt timer key %x", uk)
	}
	rest := uk[8+w:]
	t.Namespace, t.Key = rest[:n:n], rest[n:]
	return t, nil
}
