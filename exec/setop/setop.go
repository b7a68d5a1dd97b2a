// Package setop implements INTERSECT [ALL] and EXCEPT [ALL] over two
// changelog inputs as one keyed operator: the key is the whole row, and the
// state per row is how many times each input holds it. Its result is the
// row's multiplicity in the set operation (INTERSECT: both inputs hold it,
// or min(left, right) times with ALL; EXCEPT: the left holds it and the
// right does not, or max(left - right, 0) times with ALL); every change of
// that multiplicity is emitted as inserts or deletes of the row, so the
// output is a retract changelog whose materialization is the result Flink
// computes (Flink plans the same sets as semi/anti joins under a DISTINCT,
// and as counting aggregates with a row replicator for ALL).
package setop

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// Kind is the set operation.
type Kind uint8

// Set operations.
const (
	Intersect Kind = iota
	Except
)

// Spec configures a set operation over rows of Width columns; input 0 is
// the left side, input 1 the right.
type Spec struct {
	Kind  Kind
	All   bool
	Width int
	// MaxCached, when not 0, bounds the decoded entries kept in front of
	// the backend (tests force write-backs with it); otherwise the bound
	// derives from a rocksdb backend's memory budget, and a hashmap
	// backend's cache holds every key.
	MaxCached int
}

// multiplicity is how many times a row with these counts is in the result.
func (s Spec) multiplicity(c counts) int64 {
	l, r := c[0], c[1]
	switch {
	case s.Kind == Intersect && s.All:
		return min(l, r)
	case s.Kind == Intersect:
		if l > 0 && r > 0 {
			return 1
		}
	case s.All:
		return max(l-r, 0)
	default:
		if l > 0 && r == 0 {
			return 1
		}
	}
	return 0
}

// counts are the left and right multiplicities of one row.
type counts [2]int64

type countsCodec struct{}

func (countsCodec) ID() string { return "setop-counts-v1" }
func (countsCodec) Append(dst []byte, c counts) []byte {
	dst = binary.AppendVarint(dst, c[0])
	return binary.AppendVarint(dst, c[1])
}
func (countsCodec) Decode(src []byte) (counts, error) {
	l, n := binary.Varint(src)
	if n <= 0 {
		return counts{}, errors.New("setop: bad counts")
	}
	r, m := binary.Varint(src[n:])
	if m <= 0 {
		return counts{}, errors.New("setop: bad counts")
	}
	return counts{l, r}, nil
}

type setOp struct {
	spec  Spec
	cols  []int
	b     *kv.Backend
	state *kv.ValueState[counts]
	kbuf  []byte
	out   *types.Batch
	// cache holds decoded counts in front of the backend, written back at
	// every snapshot (and when it outgrows maxCached); a key whose counts
	// went to zero stays until then to clear its entry.
	cache     map[string]*cached
	maxCached int // 0: unbounded (hashmap)
}

type cached struct {
	c     counts
	hash  uint64
	dirty bool
}

// bytesPerCached estimates a cache entry's memory: map slot, key string of
// a few values, the entry.
const bytesPerCached = 128

// New returns the operator.
func New(spec Spec) (exec.Operator, error) {
	if spec.Width <= 0 {
		return nil, fmt.Errorf("setop: width %d", spec.Width)
	}
	cols := make([]int, spec.Width)
	for i := range cols {
		cols[i] = i
	}
	return &setOp{spec: spec, cols: cols, out: types.NewBatch(spec.Width, 0)}, nil
}

// OpenKeyedState implements exec.KeyedOperator: the per-row counts live in
// the backend, with a write-back cache of decoded counts in front.
func (s *setOp) OpenKeyedState(b *kv.Backend) error {
	st, err := kv.NewValueState[counts](b, "setop-counts", countsCodec{}, kv.Options{})
	if err != nil {
		return err
	}
	s.b, s.state = b, st
	s.cache = map[string]*cached{}
	if budget := b.MemoryBudget(); budget > 0 {
		// rocksdb: a quarter of the instance's budget, so that state larger
		// than memory works.
		s.maxCached = max(int(budget/4/bytesPerCached), 1024)
	}
	if s.spec.MaxCached > 0 {
		s.maxCached = s.spec.MaxCached
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the changed counts are
// written back to the backend.
func (s *setOp) PrepareSnapshot(exec.CheckpointID) error { return s.flush(false) }

// flush writes every dirty entry back; with drop it also empties the cache.
func (s *setOp) flush(drop bool) error {
	for k, e := range s.cache {
		if e.dirty {
			if err := s.b.SetCurrentKey(e.hash, []byte(k)); err != nil {
				return err
			}
			var err error
			if e.c == (counts{}) {
				err = s.state.Clear(nil)
			} else {
				err = s.state.Put(nil, e.c)
			}
			if err != nil {
				return err
			}
			e.dirty = false
		}
		if drop || e.c == (counts{}) {
			delete(s.cache, k)
		}
	}
	return nil
}

// lookup returns the cache entry of the key in kbuf (hash h), loading it
// from the backend on a miss.
func (s *setOp) lookup(h uint64) (*cached, error) {
	if e, ok := s.cache[string(s.kbuf)]; ok {
		return e, nil
	}
	if s.maxCached > 0 && len(s.cache) >= s.maxCached {
		if err := s.flush(true); err != nil {
			return nil, err
		}
	}
	if err := s.b.SetCurrentKey(h, s.kbuf); err != nil {
		return nil, err
	}
	c, _, err := s.state.Get(nil)
	if err != nil {
		return nil, err
	}
	e := &cached{c: c, hash: h}
	s.cache[string(s.kbuf)] = e
	return e, nil
}

func (s *setOp) Open(*exec.OperatorContext) error {
	if s.state == nil {
		return errors.New("setop: opened without keyed state")
	}
	return nil
}

func (s *setOp) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("setop: input %d of a two-input operator", input)
	}
	s.out.Reset()
	for i, row := range b.Rows {
		h := types.HashColumns(row, s.cols)
		buf := s.kbuf[:0]
		for _, v := range row[:s.spec.Width] {
			buf = types.AppendValue(buf, v)
		}
		s.kbuf = buf
		e, err := s.lookup(h)
		if err != nil {
			return err
		}
		before := s.spec.multiplicity(e.c)
		if b.Kinds[i].IsAccumulate() {
			e.c[input]++
			e.dirty = true
		} else if e.c[input] > 0 {
			e.c[input]--
			e.dirty = true
		} // a retraction of a row never counted leaves the counts alone
		after := s.spec.multiplicity(e.c)
		kind := types.Insert
		n := after - before
		if n < 0 {
			kind, n = types.Delete, -n
		}
		for ; n > 0; n-- {
			s.out.AppendRow(kind, row[:s.spec.Width])
			if s.out.Full() {
				if err := out.Push(s.out); err != nil {
					return err
				}
				s.out.Reset()
			}
		}
	}
	if s.out.Len() > 0 {
		return out.Push(s.out)
	}
	return nil
}

// ProcessWatermark forwards the watermark: the result carries no time
// attribute, but downstream operators still learn how far time went.
func (s *setOp) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }

func (s *setOp) Finish(exec.Output) error { return nil }
func (s *setOp) Close() error             { return nil }

var _ exec.KeyedOperator = (*setOp)(nil)
