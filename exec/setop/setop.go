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
}

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
// the backend (no cache in front: a set operation's keys are whole rows,
// rarely hot).
func (s *setOp) OpenKeyedState(b *kv.Backend) error {
	st, err := kv.NewValueState[counts](b, "setop-counts", countsCodec{}, kv.Options{})
	if err != nil {
		return err
	}
	s.b, s.state = b, st
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: nothing is held outside
// the backend.
func (s *setOp) PrepareSnapshot(exec.CheckpointID) error { return nil }

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
		if err := s.b.SetCurrentKey(h, buf); err != nil {
			return err
		}
		c, _, err := s.state.Get(nil)
		if err != nil {
			return err
		}
		before := s.spec.multiplicity(c)
		if b.Kinds[i].IsAccumulate() {
			c[input]++
		} else if c[input] > 0 {
			c[input]--
		} // a retraction of a row never counted leaves the counts alone
		if c == (counts{}) {
			err = s.state.Clear(nil)
		} else {
			err = s.state.Put(nil, c)
		}
		if err != nil {
			return err
		}
		after := s.spec.multiplicity(c)
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
