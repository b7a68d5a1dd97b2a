package exec

import (
	"context"
	"time"

	"github.com/flinksql/flinksql/types"
)

// elementKind tags what travels over an exchange channel.
type elementKind uint8

const (
	elemBatch elementKind = iota
	elemWatermark
	elemIdle   // the sending subtask's watermark status became idle
	elemActive // … and active again
	elemEnd    // end of input on this channel
	elemBarrier
)

// element is one item on a receiving task's inbound queue. Every sender
// writes its elements in order, so the order per channel is preserved.
type element struct {
	kind    elementKind
	final   bool  // elemBarrier: the final checkpoint's barrier
	channel int32 // index of the channel among the receiver's inputs
	wm      int64
	batch   *types.Batch
	ckpt    CheckpointID // elemBarrier
}

// channel connects one producer subtask to one consumer subtask. Its batches
// circulate: the sender fills one, sends it, the receiver consumes it and
// hands it back through free. The number of batches a channel ever allocates
// (credits) bounds what is in flight, which is how a slow consumer slows its
// producers down.
type channel struct {
	id      int32
	inbound chan element      // the receiver's queue, shared by all its channels
	free    chan *types.Batch // consumed batches coming back to the sender
	credits int

	// Sender side, owned by the producer's goroutine.
	allocated int
	cur       *types.Batch
	// backPressured accumulates the nanoseconds the producer waited for
	// this channel (no free batch, or the receiver's queue full): Flink's
	// backPressuredTimeMsPerSecond is its rate. Nil in tests that wire
	// channels by hand.
	backPressured *Counter
}

func newChannel(id int32, credits int) *channel {
	return &channel{id: id, free: make(chan *types.Batch, credits), credits: credits}
}

// acquire returns an empty batch to fill, blocking while all of the
// channel's batches are in flight.
func (c *channel) acquire(ctx context.Context, width, batchSize int) (*types.Batch, error) {
	select {
	case b := <-c.free:
		return b, nil
	default:
	}
	if c.allocated < c.credits {
		c.allocated++
		return types.NewBatch(width, batchSize), nil
	}
	// Only a wait reads the clock: the hot path stays as it was.
	start := time.Now()
	defer c.waited(start)
	select {
	case b := <-c.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *channel) send(ctx context.Context, e element) error {
	e.channel = c.id
	select {
	case c.inbound <- e:
		return nil
	default:
	}
	start := time.Now()
	defer c.waited(start)
	select {
	case c.inbound <- e:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waited counts a wait of the producer that began at start.
func (c *channel) waited(start time.Time) {
	if c.backPressured != nil {
		c.backPressured.Add(int64(time.Since(start)))
	}
}

// sendCurrent sends the batch being filled, if it holds rows.
func (c *channel) sendCurrent(ctx context.Context) error {
	b := c.cur
	if b == nil || b.Len() == 0 {
		return nil
	}
	c.cur = nil
	return c.send(ctx, element{kind: elemBatch, batch: b})
}

// sender is the state a task's outgoing exchanges share: cancellation, batch
// size and the buffer-timeout deadline.
type sender struct {
	ctx       context.Context
	batchSize int
	timeout   time.Duration
	// flushAt is when buffered rows must be sent at the latest; zero when
	// no deadline is pending.
	flushAt time.Time
	outs    []*exchangeOut
}

// rowBuffered notes that a channel started buffering rows.
func (s *sender) rowBuffered() {
	if s.flushAt.IsZero() && s.timeout > 0 {
		s.flushAt = time.Now().Add(s.timeout)
	}
}

// flush sends every partially filled batch.
func (s *sender) flush() error {
	s.flushAt = time.Time{}
	for _, o := range s.outs {
		if err := o.flush(); err != nil {
			return err
		}
	}
	return nil
}

// broadcast flushes, then sends a control element on every channel.
func (s *sender) broadcast(e element) error {
	if err := s.flush(); err != nil {
		return err
	}
	for _, o := range s.outs {
		for _, c := range o.targets {
			if err := c.send(s.ctx, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// exchangeOut routes one producer subtask's rows to the channels of one
// consuming edge.
type exchangeOut struct {
	s       *sender
	kind    PartitionKind
	keyCols []int
	maxPar  int
	// route maps a key group to an index into targets (Hash).
	route   []int
	targets []*channel
	next    int // Rebalance: the target of the next row
}

func (o *exchangeOut) push(b *types.Batch) error {
	switch o.kind {
	case Forward, Global:
		c := o.targets[0]
		for i, r := range b.Rows {
			if err := o.append(c, b, i, r); err != nil {
				return err
			}
		}
	case Hash:
		for i, r := range b.Rows {
			kg := types.KeyGroup(types.HashColumns(r, o.keyCols), o.maxPar)
			if err := o.append(o.targets[o.route[kg]], b, i, r); err != nil {
				return err
			}
		}
	case Rebalance:
		n := len(o.targets)
		for i, r := range b.Rows {
			c := o.targets[o.next]
			if o.next++; o.next == n {
				o.next = 0
			}
			if err := o.append(c, b, i, r); err != nil {
				return err
			}
		}
	case Broadcast:
		for _, c := range o.targets {
			for i, r := range b.Rows {
				if err := o.append(c, b, i, r); err != nil {
					return err
				}
			}
		}
	}
	if o.s.timeout == 0 {
		return o.flush()
	}
	return nil
}

// append copies row i of b into the channel's current batch, sending the
// batch when it is full.
func (o *exchangeOut) append(c *channel, b *types.Batch, i int, r types.Row) error {
	if c.cur == nil {
		nb, err := c.acquire(o.s.ctx, b.Width(), o.s.batchSize)
		if err != nil {
			return err
		}
		c.cur = nb
		o.s.rowBuffered()
	}
	copy(c.cur.Append(b.Kinds[i]), r)
	if c.cur.Len() >= o.s.batchSize {
		return c.sendCurrent(o.s.ctx)
	}
	return nil
}

func (o *exchangeOut) flush() error {
	for _, c := range o.targets {
		if err := c.sendCurrent(o.s.ctx); err != nil {
			return err
		}
	}
	return nil
}

// fanOut is the Output of a task's last operator: it hands rows to every
// consuming edge and counts them as the operator's output.
type fanOut struct {
	s    *sender
	from *OperatorMetrics // nil when the chain is empty
	wm   int64
}

func (f *fanOut) Push(b *types.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if f.from != nil {
		f.from.RowsOut.Add(int64(b.Len()))
	}
	for _, o := range f.s.outs {
		if err := o.push(b); err != nil {
			return err
		}
	}
	return nil
}

func (f *fanOut) PushWatermark(wm int64) error {
	if wm <= f.wm {
		return nil
	}
	f.wm = wm
	return f.s.broadcast(element{kind: elemWatermark, wm: wm})
}
