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
	"math"
	"time"
	"unsafe"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/exec/internal/statecache"
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
	// StateTTL is table.exec.state.ttl (0: none): a row's counts not
	// changed for that long are forgotten, as Flink's idle state retention
	// forgets the state of the aggregates and joins it plans set
	// operations as.
	StateTTL time.Duration
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
	// cache holds the decoded counts in front of the backend (KEYED.md
	// rule 2); a row whose counts go back to zero is removed at once.
	cache *statecache.Cache[counts]
	slots countSlots
	em    exec.Emitter
	ttl   statecache.Sweeper
	ctx   *exec.OperatorContext
}

// countSlots holds the cached counts by id.
type countSlots []counts

func (c *countSlots) Grow(n int) {
	for len(*c) < n {
		*c = append(*c, counts{})
	}
}
func (c *countSlots) Load(id int32, v counts) error { (*c)[id] = v; return nil }
func (c *countSlots) Value(id int32) counts         { return (*c)[id] }
func (c *countSlots) Clear(id int32)                { (*c)[id] = counts{} }

// stateName is the counts' state; its codec's id versions the encoding.
const stateName = "setop-counts"

// New returns the operator.
func New(spec Spec) (exec.Operator, error) {
	if spec.Width <= 0 {
		return nil, fmt.Errorf("setop: width %d", spec.Width)
	}
	cols := make([]int, spec.Width)
	for i := range cols {
		cols[i] = i
	}
	if spec.StateTTL < 0 {
		return nil, fmt.Errorf("setop: negative state TTL %v", spec.StateTTL)
	}
	s := &setOp{spec: spec, cols: cols, ttl: statecache.NewSweeper(spec.StateTTL)}
	s.em.Init(spec.Width, 0)
	return s, nil
}

// OpenKeyedState implements exec.KeyedOperator: the per-row counts live in
// the backend, with a write-back cache of decoded counts in front.
func (s *setOp) OpenKeyedState(b *kv.Backend) error {
	st, err := kv.NewValueState[counts](b, stateName, countsCodec{}, s.ttl.Options())
	if err != nil {
		return fmt.Errorf("setop: %w", err)
	}
	fresh, err := statecache.Empty(b)
	if err != nil {
		return fmt.Errorf("setop: %w", err)
	}
	s.b, s.state = b, st
	s.cache = statecache.New(b, st, &s.slots, statecache.Config{
		KeyCols: s.cols, TTL: s.ttl.TTL, ValueBytes: int(unsafe.Sizeof(counts{})), Limit: s.spec.MaxCached,
	}, fresh)
	if err := s.cache.Preload(stateName, countsCodec{}); err != nil {
		return fmt.Errorf("setop: %w", err)
	}
	return nil
}

// PrepareSnapshot implements exec.KeyedOperator: the changed counts are
// written back to the backend.
func (s *setOp) PrepareSnapshot(exec.CheckpointID) error {
	if s.ctx != nil {
		s.cache.SetNow(s.now()) // an entry expired since is not written back
	}
	if err := s.cache.Flush(); err != nil {
		return fmt.Errorf("setop: %w", err)
	}
	return nil
}

func (s *setOp) Open(ctx *exec.OperatorContext) error {
	if s.state == nil {
		return errors.New("setop: opened without keyed state")
	}
	if s.ttl.Enabled() && (ctx == nil || ctx.Now == nil || ctx.RegisterProcessingTimer == nil) {
		return errors.New("setop: state TTL needs a clock and processing timers")
	}
	s.ctx = ctx
	if s.cache.Len() > 0 { // restored: sweep what expires
		s.schedule(s.now())
	}
	return nil
}

// now is the processing time, or 0 without TTL (nothing reads it then).
func (s *setOp) now() int64 {
	if !s.ttl.Enabled() {
		return 0
	}
	return s.ctx.Now()
}

// schedule arms the sweep for when state last written at oldest expires.
func (s *setOp) schedule(oldest int64) {
	if s.ttl.Enabled() {
		s.ttl.Schedule(s.ctx.RegisterProcessingTimer, oldest+s.ttl.TTL)
	}
}

// OnProcessingTime implements exec.ProcessingTimeHandler: the sweep drops
// the cached counts whose TTL ran out (the backend's TTL hides its own),
// so idle rows leave memory.
func (s *setOp) OnProcessingTime(t int64, _ exec.Output) error {
	if !s.ttl.Due(t) || s.cache == nil {
		return nil
	}
	s.cache.SetNow(t)
	if oldest := s.cache.Sweep(); oldest != math.MaxInt64 {
		s.schedule(oldest)
	}
	return nil
}

func (s *setOp) ProcessBatch(input int, b *types.Batch, out exec.Output) error {
	if input < 0 || input > 1 {
		return fmt.Errorf("setop: input %d of a two-input operator", input)
	}
	if b.Width() < s.spec.Width {
		return fmt.Errorf("setop: rows of %d columns for a set operation over %d", b.Width(), s.spec.Width)
	}
	now := s.now()
	s.cache.SetNow(now)
	for i, row := range b.Rows {
		h := types.HashColumns(row, s.cols)
		id, found, err := s.cache.Get(row, h)
		if err != nil {
			return fmt.Errorf("setop: %w", err)
		}
		acc := b.Kinds[i].IsAccumulate()
		if !found {
			if !acc {
				continue // a retraction of a row never counted changes nothing
			}
			if id, err = s.cache.Create(row, h); err != nil {
				return fmt.Errorf("setop: %w", err)
			}
		}
		c := &s.slots[id]
		before := s.spec.multiplicity(*c)
		if acc {
			c[input]++
		} else if c[input] > 0 {
			c[input]--
		} else {
			continue // as above, for this input
		}
		after := s.spec.multiplicity(*c)
		if *c == (counts{}) {
			if err := s.cache.Remove(id); err != nil {
				return fmt.Errorf("setop: %w", err)
			}
		} else {
			s.cache.Written(id)
		}
		kind := types.Insert
		n := after - before
		if n < 0 {
			kind, n = types.Delete, -n
		}
		for ; n > 0; n-- {
			if err := s.em.Copy(kind, row[:s.spec.Width], out); err != nil {
				return err
			}
		}
	}
	if s.cache.Len() > 0 {
		s.schedule(now)
	}
	return s.em.Flush(out)
}

// ProcessWatermark forwards the watermark: the result carries no time
// attribute, but downstream operators still learn how far time went.
func (s *setOp) ProcessWatermark(wm int64, out exec.Output) error { return out.PushWatermark(wm) }

func (s *setOp) Finish(exec.Output) error { return nil }
func (s *setOp) Close() error             { return nil }

var (
	_ exec.KeyedOperator         = (*setOp)(nil)
	_ exec.ProcessingTimeHandler = (*setOp)(nil)
)
