package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sink is a configured kafka or upsert-kafka table being written.
type Sink struct {
	cfg          *tableConfig
	topic        string
	metaKeys     []string // the writable metadata columns in row order
	partitioner  string
	delivery     string
	naming       string // 'sink.transaction-naming-strategy'
	parallelism  int
	producerOpts []kgo.Opt

	// lease is the running job's lease on the transactional-id prefix of
	// an exactly-once sink; its writers fail once another job took it.
	lease atomic.Pointer[PrefixLease]
	// jobLogf is the job's log, set with the lease before the job starts:
	// the writers report there what recovery fenced.
	jobLogf func(format string, args ...any)

	// upsert-kafka's 'sink.buffer-flush.*': both > 0 enables the buffer.
	flushRows     int
	flushInterval time.Duration
}

var _ connectors.Sink = (*Sink)(nil)

func newSink(c *tableConfig) (*Sink, error) {
	opts := connectors.Options(c.tc.Options)
	if c.pattern != nil || len(c.topics) != 1 {
		return nil, fmt.Errorf("kafka table %s: the sink writes to exactly one topic: set option '%s' to a single topic name (without '%s')",
			c.name, OptTopic, OptTopicPattern)
	}
	s := &Sink{cfg: c, topic: c.topics[0]}
	var err error
	if s.metaKeys, err = c.resolveMetadata(false); err != nil {
		return nil, err
	}
	s.partitioner = opts.String(OptSinkPartitioner, PartitionerDefault)
	switch s.partitioner {
	case PartitionerDefault, PartitionerFixed:
	case PartitionerRoundRobin:
		if opts.Has(OptKeyFields) {
			return nil, errors.New("Currently 'round-robin' partitioner only works when option 'key.fields' is not specified.")
		}
	case "":
		return nil, fmt.Errorf("Option '%s' should be a non-empty string.", OptSinkPartitioner)
	default:
		return nil, fmt.Errorf("Could not find and instantiate partitioner class '%s': custom partitioner classes are not supported; use one of [%s, %s, %s] for option '%s'.",
			s.partitioner, PartitionerDefault, PartitionerFixed, PartitionerRoundRobin, OptSinkPartitioner)
	}
	guarantees := []string{DeliveryAtLeastOnce, DeliveryExactlyOnce, DeliveryNone}
	if opts.Has(OptSinkSemantic) {
		s.delivery, err = opts.Enum(OptSinkSemantic, guarantees, DeliveryAtLeastOnce)
	} else {
		s.delivery, err = opts.Enum(OptDeliveryGuarantee, guarantees, DeliveryAtLeastOnce)
	}
	if err != nil {
		return nil, err
	}
	if s.naming, err = opts.Enum(OptTransactionNamingStrategy, []string{NamingIncrementing, NamingPooling}, NamingIncrementing); err != nil {
		return nil, err
	}
	if s.delivery == DeliveryExactlyOnce {
		if err := checkExactlyOnceOptions(c); err != nil {
			return nil, err
		}
	} else if opts.Has(OptOnAbortedTransaction) {
		return nil, fmt.Errorf("Option '%s' applies only to '%s' = '%s', but the sink's delivery guarantee is '%s'.",
			OptOnAbortedTransaction, OptDeliveryGuarantee, DeliveryExactlyOnce, s.delivery)
	}
	if s.parallelism, err = opts.Int(OptSinkParallelism, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptSinkParallelism) && s.parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptSinkParallelism, s.parallelism)
	}
	if s.producerOpts, err = c.producerOpts(); err != nil {
		return nil, err
	}
	switch s.partitioner {
	case PartitionerFixed:
		s.producerOpts = append(s.producerOpts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	case PartitionerRoundRobin:
		s.producerOpts = append(s.producerOpts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	default:
		// Kafka's default partitioner: murmur2 of the key, sticky without one.
		s.producerOpts = append(s.producerOpts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	// As the Java producer, let a broker that auto-creates topics do so.
	s.producerOpts = append(s.producerOpts, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(s.topic))
	if _, _, err := s.encoders(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sink) encoders() (key, value formats.Encoder, err error) {
	c := s.cfg
	if c.keyFormatKey != "" {
		if key, err = connectors.CreateEncoder(c.tc, c.keyFormatKey, c.keySchema); err != nil {
			return nil, nil, err
		}
	}
	if value, err = connectors.CreateEncoder(c.tc, c.valueFormatKey, c.valueSchema); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// AcceptedChangelogMode implements connectors.Sink: kafka takes what its
// value format encodes (inserts, or a full changelog for debezium-json,
// canal-json and maxwell-json), upsert-kafka an upsert stream (-U rows are
// dropped).
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	if s.cfg.upsert {
		return types.Upsert
	}
	return s.cfg.valueEncodeMode
}

// Parallelism implements connectors.Sink.
func (s *Sink) Parallelism(defaultParallelism int) int {
	if s.parallelism > 0 {
		return s.parallelism
	}
	return defaultParallelism
}

// WritableMetadata implements connectors.Sink.
func (s *Sink) WritableMetadata() map[string]types.Type { return writableMetadata }

// DeliveryGuarantee returns the sink's 'sink.delivery-guarantee'.
func (s *Sink) DeliveryGuarantee() string { return s.delivery }

// NewWriter implements connectors.Sink.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	if s.delivery == DeliveryExactlyOnce {
		w, err := NewTransactionalWriter(TxnConfig{Sink: s, Subtask: subtask, Parallelism: parallelism, Logf: s.jobLogf})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return w, nil
	}
	return s.NewKafkaWriter(subtask, parallelism)
}

// ValidateStart checks, before a job starts, what an exactly-once sink needs
// from the broker and the job: a transactional-id prefix, checkpointing, and a
// transaction timeout that the broker allows and that outlives a checkpoint
// interval. It does nothing for the other delivery guarantees.
func (s *Sink) ValidateStart(ctx context.Context, checkpointInterval time.Duration) error {
	if s.delivery != DeliveryExactlyOnce {
		return nil
	}
	o := s.cfg.tc.Options
	if err := ValidateExactlyOnce(ctx, o["properties.bootstrap.servers"], o, o[OptTransactionalIDPrefix], checkpointInterval); err != nil {
		return err
	}
	if s.naming != NamingPooling {
		return nil
	}
	cl, err := kgo.NewClient(s.cfg.commonClientOpts()...)
	if err != nil {
		return fmt.Errorf("kafka table %s: creating the Kafka client: %w", s.cfg.name, err)
	}
	defer cl.Close()
	ok, err := canListTransactions(ctx, cl, s.cfg.requestTimeout)
	if err != nil {
		return fmt.Errorf("kafka table %s: asking the brokers which requests they support: %w", s.cfg.name, err)
	}
	if !ok {
		return poolingUnsupported(s.cfg, false)
	}
	return nil
}

// AcquirePrefixLease takes, for a job about to start, the lease on an
// exactly-once sink's transactional-id prefix in the cluster it writes to
// (see LeaseTopic), or says which running job holds it. owner describes the
// job to others; logf receives takeovers. release ends the lease when the
// job has ended. Sinks of the other guarantees hold none.
func (s *Sink) AcquirePrefixLease(ctx context.Context, owner string, logf func(format string, args ...any)) (release func(), err error) {
	if s.delivery != DeliveryExactlyOnce {
		return func() {}, nil
	}
	s.jobLogf = logf
	return s.acquirePrefixLease(ctx, LeaseOptions{Owner: owner, Logf: logf})
}

func (s *Sink) acquirePrefixLease(ctx context.Context, opts LeaseOptions) (release func(), err error) {
	l, err := acquirePrefixLease(ctx, s.cfg.commonClientOpts(), strings.TrimSpace(s.cfg.tc.Options[OptTransactionalIDPrefix]), opts)
	if err != nil {
		return nil, fmt.Errorf("kafka table %s: %w", s.cfg.name, err)
	}
	s.lease.Store(l)
	return func() {
		s.lease.CompareAndSwap(l, nil)
		if err := l.Release(); err != nil && opts.Logf != nil {
			opts.Logf("kafka table %s: releasing the lease of transactional-id prefix %q: %v", s.cfg.name, l.prefix, err)
		}
	}, nil
}

// leaseErr is the reason the job lost its prefix lease, or nil.
func (s *Sink) leaseErr() error {
	if l := s.lease.Load(); l != nil {
		return l.Err()
	}
	return nil
}

// ValidateTransactionTimeout checks, for an exactly-once sink, that
// 'properties.transaction.timeout.ms' outlives need: how long a
// transaction may stay open before its checkpoint commits it (what spells
// out the job options it comes from). A transaction the broker aborts for
// timing out loses its records.
func (s *Sink) ValidateTransactionTimeout(need time.Duration, what string) error {
	if s.delivery != DeliveryExactlyOnce {
		return nil
	}
	timeout, err := transactionTimeout(s.cfg.props)
	if err != nil {
		return err
	}
	if timeout >= need {
		return nil
	}
	ms := (need + time.Millisecond - 1) / time.Millisecond
	return fmt.Errorf("kafka table %s: 'properties.%s' (%d ms) is shorter than a transaction may have to stay open before its checkpoint commits it: %s = %d ms; "+
		"the broker would abort such a transaction and its records would be lost. Set 'properties.%s' to at least '%d' (within the broker's transaction.max.timeout.ms), or lower those options",
		s.cfg.name, propTransactionTimeout, timeout.Milliseconds(), what, ms, propTransactionTimeout, ms)
}

// TransactionalIDPrefix is the prefix of an exactly-once sink's transactional
// ids ("" for the other guarantees); it must be unique among running jobs.
func (s *Sink) TransactionalIDPrefix() string {
	if s.delivery != DeliveryExactlyOnce {
		return ""
	}
	return s.cfg.tc.Options[OptTransactionalIDPrefix]
}

// NewKafkaWriter is NewWriter with the concrete type, for callers that use Flush.
func (s *Sink) NewKafkaWriter(subtask, parallelism int) (*Writer, error) {
	if parallelism <= 0 || subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("kafka table %s: invalid subtask %d of %d", s.cfg.name, subtask, parallelism)
	}
	keyEnc, valueEnc, err := s.encoders()
	if err != nil {
		return nil, err
	}
	c := s.cfg
	w := &Writer{sink: s, subtask: subtask, keyEnc: keyEnc, valueEnc: valueEnc,
		nphys: len(c.tc.Physical), tsCol: -1, hdrCol: -1, partition: -1}
	w.valueDirect = len(c.valueIdx) == w.nphys
	if ce, ok := valueEnc.(formats.ChangelogEncoder); ok && !c.upsert && !c.valueEncodeMode.IsInsertOnly() {
		w.changes = ce
	}
	if keyEnc != nil {
		w.keyRow = make(types.Row, len(c.keyIdx))
	}
	if !w.valueDirect {
		w.valueRow = make(types.Row, len(c.valueIdx))
	}
	for j, key := range s.metaKeys {
		switch key {
		case MetaTimestamp:
			w.tsCol = w.nphys + j
		case MetaHeaders:
			w.hdrCol = w.nphys + j
		}
	}
	if s.flushRows > 0 && s.flushInterval > 0 {
		w.pendingIdx = map[string]int{}
	}
	w.promise = w.onProduced
	return w, nil
}

// Writer produces one sink subtask's rows. Records are produced
// asynchronously and batched by the client; a produce error fails the next
// Write, Flush or Finish.
type Writer struct {
	sink             *Sink
	subtask          int
	keyEnc, valueEnc formats.Encoder
	// changes is valueEnc of a changelog format; kind is the kind of the
	// row being encoded.
	changes          formats.ChangelogEncoder
	kind             types.RowKind
	nphys            int
	valueDirect      bool
	keyRow, valueRow types.Row
	tsCol, hdrCol    int
	partition        int32 // the 'fixed' partitioner's partition

	ctx     context.Context
	cancel  context.CancelFunc
	cl      *kgo.Client
	arena   []byte // encoded keys and values of records in flight
	records sync.Pool
	promise func(*kgo.Record, error)

	errMu sync.Mutex
	err   error

	// upsert-kafka's reduce buffer: the last record per key, in first-seen order.
	pending    []*kgo.Record
	pendingIdx map[string]int
	lastFlush  time.Time
}

var _ exec.SinkWriter = (*Writer)(nil)

// Open implements exec.SinkWriter.
func (w *Writer) Open(ctx context.Context) error {
	s := w.sink
	cl, err := kgo.NewClient(s.producerOpts...)
	if err != nil {
		return fmt.Errorf("kafka table %s: creating the Kafka client: %w", s.cfg.name, err)
	}
	w.cl = cl
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.lastFlush = time.Now()
	if s.partitioner == PartitionerFixed {
		n, err := w.partitionCount(ctx)
		if err != nil {
			return err
		}
		// Flink's FlinkFixedPartitioner: subtask i writes to partition i mod n.
		w.partition = int32(w.subtask % n)
	}
	return nil
}

// partitionCount asks for the topic's partitions, letting the broker create
// the topic as it does for a producer, within the request timeout.
func (w *Writer) partitionCount(ctx context.Context) (int, error) {
	c := w.sink.cfg
	mctx, cancel := c.contextWithTimeout(ctx)
	defer cancel()
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(w.sink.topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(mctx, w.cl)
		var lastErr error
		switch {
		case err != nil:
			lastErr = err
		case len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 && len(resp.Topics[0].Partitions) > 0:
			return len(resp.Topics[0].Partitions), nil
		case len(resp.Topics) == 1:
			lastErr = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			if lastErr == nil {
				lastErr = errors.New("the topic has no partitions yet")
			}
		}
		select {
		case <-mctx.Done():
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("kafka table %s: Topic '%s' not present in the metadata of the Kafka cluster at %s after %s: %v",
				c.name, w.sink.topic, c.serversText(), c.requestTimeout, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// onProduced is the produce promise: it keeps the first error and recycles
// the record.
func (w *Writer) onProduced(r *kgo.Record, err error) {
	if err != nil {
		w.errMu.Lock()
		if w.err == nil {
			c := w.sink.cfg
			w.err = fmt.Errorf("kafka table %s: producing to topic '%s' at the Kafka cluster at %s failed: %w",
				c.name, w.sink.topic, c.serversText(), err)
		}
		w.errMu.Unlock()
	}
	*r = kgo.Record{}
	w.records.Put(r)
}

func (w *Writer) asyncErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Write implements exec.SinkWriter.
func (w *Writer) Write(_ context.Context, b *types.Batch) error {
	if err := w.asyncErr(); err != nil {
		return err
	}
	upsert := w.sink.cfg.upsert
	if upsert {
		if err := w.checkKeys(b); err != nil {
			return err
		}
	}
	for i, row := range b.Rows {
		tombstone := false
		w.kind = b.Kinds[i]
		switch k := b.Kinds[i]; {
		case k == types.Insert:
		case w.changes != nil:
			// A changelog format writes the row's kind into the record.
		case upsert && k == types.UpdateAfter:
		case upsert && k == types.UpdateBefore:
			continue // the following +U replaces the key's value
		case upsert && k == types.Delete:
			tombstone = true
		default:
			return fmt.Errorf("kafka table %s: the %s sink only accepts inserts, but got a %s row", w.sink.cfg.name, w.sink.cfg.identifier, k)
		}
		rec, err := w.record(row, tombstone)
		if err != nil {
			return err
		}
		if w.pendingIdx != nil {
			w.buffer(rec)
			continue
		}
		w.cl.Produce(w.ctx, rec, w.promise)
	}
	if w.pendingIdx != nil && time.Since(w.lastFlush) >= w.sink.flushInterval {
		w.flushBuffer()
	}
	return nil
}

// buffer keeps rec as its key's latest change.
func (w *Writer) buffer(rec *kgo.Record) {
	if i, ok := w.pendingIdx[string(rec.Key)]; ok {
		old := w.pending[i]
		w.pending[i] = rec
		*old = kgo.Record{}
		w.records.Put(old)
	} else {
		w.pendingIdx[string(rec.Key)] = len(w.pending)
		w.pending = append(w.pending, rec)
	}
	if len(w.pending) >= w.sink.flushRows {
		w.flushBuffer()
	}
}

// flushBuffer produces the buffered records.
func (w *Writer) flushBuffer() {
	for _, rec := range w.pending {
		w.cl.Produce(w.ctx, rec, w.promise)
	}
	clear(w.pending)
	w.pending = w.pending[:0]
	clear(w.pendingIdx)
	w.lastFlush = time.Now()
}

// record encodes one row into a record.
// checkKeys refuses a batch of an upsert-kafka sink with a NULL in a key
// (primary key) column, before any of it is produced: such a record would
// update or delete no row for any reader. The sink's not-null enforcer
// stops these rows first (primary key columns are NOT NULL); this keeps
// the guarantee for any other writer of the sink.
func (w *Writer) checkKeys(b *types.Batch) error {
	c := w.sink.cfg
	for i, row := range b.Rows {
		for _, pos := range c.keyIdx {
			if row[pos].IsNull() {
				return fmt.Errorf("%s table %s: a %s row has a NULL in primary key column '%s'; upsert-kafka never writes a record without a key",
					c.identifier, c.name, b.Kinds[i], c.tc.Physical[pos].Name)
			}
		}
	}
	return nil
}

func (w *Writer) record(row types.Row, tombstone bool) (*kgo.Record, error) {
	c := w.sink.cfg
	rec, _ := w.records.Get().(*kgo.Record)
	if rec == nil {
		rec = &kgo.Record{}
	}
	rec.Topic = w.sink.topic
	if w.partition >= 0 {
		rec.Partition = w.partition
	}
	var err error
	if w.keyEnc != nil {
		for i, pos := range c.keyIdx {
			w.keyRow[i] = row[pos]
		}
		if rec.Key, err = w.encode(w.keyEnc, w.keyRow); err != nil {
			return nil, fmt.Errorf("kafka table %s: encoding the key: %w", c.name, err)
		}
	}
	if !tombstone {
		vrow := row[:w.nphys]
		if !w.valueDirect {
			for i, pos := range c.valueIdx {
				w.valueRow[i] = row[pos]
			}
			vrow = w.valueRow
		}
		if w.changes != nil {
			rec.Value, err = w.encodeChange(vrow)
		} else {
			rec.Value, err = w.encode(w.valueEnc, vrow)
		}
		if err != nil {
			return nil, fmt.Errorf("kafka table %s: encoding the value: %w", c.name, err)
		}
	}
	if w.tsCol >= 0 {
		if v := row[w.tsCol]; !v.IsNull() {
			rec.Timestamp = time.UnixMilli(v.Millis())
		}
	}
	if w.hdrCol >= 0 {
		if m := row[w.hdrCol].Map(); m != nil {
			rec.Headers = make([]kgo.RecordHeader, 0, len(m.Keys))
			for i, k := range m.Keys {
				h := kgo.RecordHeader{Key: k.S}
				if v := m.Values[i]; !v.IsNull() {
					h.Value = []byte(v.S)
				}
				rec.Headers = append(rec.Headers, h)
			}
		}
	}
	return rec, nil
}

// arenaChunk is the size of the blocks encoded records are carved from, so
// that encoding allocates once per block rather than once per record. A
// block is freed when the last record carved from it has been acknowledged.
const arenaChunk = 64 << 10

// encode appends the encoding of row to the arena and returns it. A nil
// result (the raw format's NULL) is a null key or value.
func (w *Writer) encode(enc formats.Encoder, row types.Row) ([]byte, error) {
	if cap(w.arena)-len(w.arena) < 1024 {
		w.arena = make([]byte, 0, arenaChunk)
	}
	start := len(w.arena)
	room := cap(w.arena) - start
	out, err := enc.Encode(w.arena[start:start:cap(w.arena)], row)
	if err != nil || out == nil {
		return nil, err
	}
	if cap(out) == room { // encoded in place
		w.arena = w.arena[:start+len(out)]
		return out[:len(out):len(out)], nil
	}
	return out, nil // outgrew the block: out has its own memory
}

// encodeChange is encode for a changelog value format, with the kind of
// the row being written.
func (w *Writer) encodeChange(row types.Row) ([]byte, error) {
	if cap(w.arena)-len(w.arena) < 1024 {
		w.arena = make([]byte, 0, arenaChunk)
	}
	start := len(w.arena)
	room := cap(w.arena) - start
	out, err := w.changes.EncodeChangelog(w.arena[start:start:cap(w.arena)], w.kind, row)
	if err != nil || out == nil {
		return nil, err
	}
	if cap(out) == room {
		w.arena = w.arena[:start+len(out)]
		return out[:len(out):len(out)], nil
	}
	return out, nil
}

// Flush makes every row written so far durable in Kafka (for at-least-once;
// it returns at once for 'none'), for a checkpoint barrier.
func (w *Writer) Flush(ctx context.Context) error {
	if w.pendingIdx != nil {
		w.flushBuffer()
	}
	if w.sink.delivery == DeliveryNone {
		return w.asyncErr()
	}
	return w.flushClient(ctx)
}

func (w *Writer) flushClient(ctx context.Context) error {
	if err := w.cl.Flush(ctx); err != nil {
		if aerr := w.asyncErr(); aerr != nil {
			return aerr
		}
		return fmt.Errorf("kafka table %s: flushing records to topic '%s': %w", w.sink.cfg.name, w.sink.topic, err)
	}
	return w.asyncErr()
}

// Finish implements exec.SinkWriter: every record is produced and
// acknowledged (Flink flushes at the end of input for every guarantee).
func (w *Writer) Finish(ctx context.Context) error {
	if w.pendingIdx != nil {
		w.flushBuffer()
	}
	return w.flushClient(ctx)
}

// Close implements exec.SinkWriter. Records not yet acknowledged are
// abandoned.
func (w *Writer) Close() error {
	if w.cancel != nil {
		w.cancel()
	}
	if w.cl != nil {
		w.cl.Close()
		w.cl = nil
	}
	return nil
}

// String describes the writer for debugging.
func (w *Writer) String() string {
	return fmt.Sprintf("kafka writer %s[%d] -> %s (%s, %s)", w.sink.cfg.name, w.subtask, w.sink.topic,
		w.sink.partitioner, strings.ToLower(w.sink.delivery))
}
