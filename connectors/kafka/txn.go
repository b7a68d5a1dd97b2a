package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Exactly-once delivery ('sink.delivery-guarantee' = 'exactly-once') is a
// two-phase commit tied to checkpoints (DESIGN.md §5):
//
//   - Every sink subtask writes inside a Kafka transaction whose
//     transactional id is <prefix>-<subtask>-<n>. With
//     'sink.transaction-naming-strategy' = 'INCREMENTING' (the default) the
//     transaction that holds the records written after barrier n-1 and
//     before barrier n is named after checkpoint n; with 'POOLING' n is the
//     lowest number whose transactional id no pre-committed transaction of
//     the subtask holds, so a subtask uses a few ids over and over and the
//     broker's transactional-id state stays bounded. Each transaction gets
//     its own franz-go client, whose producer id is initialised
//     (InitProducerID) as soon as the transaction opens, even if no record
//     follows.
//   - Pre-commit (PrepareCommit at barrier n): flush, and hand over the
//     committable (transactional id, producer id, epoch, n, and whether the
//     transaction is empty) without ending the transaction; then open the
//     transaction for n+1 on a new client.
//   - Commit (checkpoint n completed, and again after a restore): a raw
//     EndTxn(commit) carrying the saved producer id and epoch, sent to the
//     transaction coordinator; it does not need the producing client, so a
//     new process can commit what a crashed one prepared. A commit the
//     broker answers with PRODUCER_FENCED, INVALID_TXN_STATE or
//     INVALID_PRODUCER_ID_MAPPING ended earlier (committed by an earlier
//     attempt, or aborted by the broker's transaction timeout): the
//     checkpoint proves it was ours, so it is logged and not fatal, as
//     Flink does. Empty transactions have nothing to commit (Kafka rejects
//     an EndTxn for a transaction without partitions on older brokers).
//   - Recovery, after a restore from checkpoint r or at a fresh start: the
//     runtime commits the committables restored from r before the writer
//     opens; Open then aborts the transactions earlier runs left open, by
//     fencing their ids (InitProducerID, which aborts an ongoing
//     transaction of the id), and only then starts producing. It lists the
//     broker's open transactions (ListTransactions, Kafka 3.0+) and fences
//     those named with the current prefix or with a prefix of the restored
//     committables (a changed 'sink.transactional-id-prefix'), of old
//     subtasks j with j mod parallelism = this subtask (a run with a higher
//     parallelism left subtasks that no longer exist). Only open
//     transactions cost a request, however many ids earlier runs used.
//     Brokers without ListTransactions get Flink's probe instead, for
//     'INCREMENTING' only: fence <prefix>-<j>-<n> for n = r+1, r+2, …
//     until an id that was never used (epoch 0 after the fence), for
//     j = subtask, subtask+parallelism, … until a j without any.
//   - Abort: a raw EndTxn(abort) with the saved producer id and epoch.
//
// A reader with isolation.level=read_committed sees records only when their
// checkpoint's commit happened, so output lags by up to one checkpoint
// interval; transactions left open (a job cancelled for good) hold back such
// readers until transaction.timeout.ms or until 'flinksql kafka-transactions
// --abort' fences them.

// DefaultTransactionTimeout is the transaction timeout of an exactly-once
// sink when 'properties.transaction.timeout.ms' is not set: one hour, as
// Flink's Kafka sink sets it. Kafka brokers allow at most 15 minutes by
// default (transaction.max.timeout.ms), so most setups must lower it.
const DefaultTransactionTimeout = time.Hour

// propTransactionTimeout is the producer property of the transaction timeout.
const propTransactionTimeout = "transaction.timeout.ms"

// maxFenceProbe bounds recovery's probe for lingering transactions: more
// consecutive used transactional ids after a restored checkpoint than this
// would take as many failed checkpoints in a row.
const maxFenceProbe = 10000

// TxnConfig configures the exactly-once writer of one sink subtask.
type TxnConfig struct {
	// Sink is the table's sink: topic, formats, producer properties.
	Sink *Sink
	// Subtask and Parallelism identify the sink subtask.
	Subtask, Parallelism int
	// Prefix is 'sink.transactional-id-prefix'; empty takes it from the
	// sink's options.
	Prefix string
	// NextCheckpointID is the first checkpoint id the runtime will use.
	// Zero derives it: one past the highest restored committable's
	// checkpoint when the runtime committed restored committables before
	// Open, otherwise 1.
	NextCheckpointID exec.CheckpointID
	// Naming is 'sink.transaction-naming-strategy' (NamingIncrementing or
	// NamingPooling); empty takes it from the sink's options.
	Naming string
	// TransactionTimeout is transaction.timeout.ms; zero takes
	// 'properties.transaction.timeout.ms' or DefaultTransactionTimeout.
	TransactionTimeout time.Duration
	// Logf receives notable events (transactions found committed or fenced
	// during a commit, lingering transactions aborted); nil discards them.
	// The runtime sets it to the job's log (SetLog).
	Logf func(format string, args ...any)
	// ContinueOnAbort is OptOnAbortedTransaction = LOG_AND_CONTINUE: a
	// commit that finds its transaction aborted is reported to the runtime
	// as a loss to log and count rather than a failure.
	ContinueOnAbort bool
}

// resolve fills the defaults of cfg from the sink's options.
func (cfg *TxnConfig) resolve() error {
	if cfg.Sink == nil {
		return errors.New("kafka exactly-once writer: no sink")
	}
	c := cfg.Sink.cfg
	if cfg.Prefix == "" {
		cfg.Prefix = strings.TrimSpace(c.tc.Options[OptTransactionalIDPrefix])
	}
	if cfg.Prefix == "" {
		return errors.New(prefixRequiredMessage)
	}
	if cfg.Naming == "" {
		cfg.Naming = cfg.Sink.naming
	}
	if cfg.Naming == "" {
		cfg.Naming = NamingIncrementing
	}
	if cfg.TransactionTimeout == 0 {
		d, err := transactionTimeout(c.props)
		if err != nil {
			return err
		}
		cfg.TransactionTimeout = d
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if !cfg.ContinueOnAbort {
		cont, err := onAbortedTransaction(c.tc.Options)
		if err != nil {
			return err
		}
		cfg.ContinueOnAbort = cont
	}
	return nil
}

// TransactionalID is the transactional id of a subtask's transaction for
// checkpoint id.
func TransactionalID(prefix string, subtask int, id exec.CheckpointID) string {
	return prefix + "-" + strconv.Itoa(subtask) + "-" + strconv.FormatInt(int64(id), 10)
}

// splitTransactionalID splits <prefix>-<subtask>-<n>, the form of both
// naming strategies' ids; the prefix may itself contain dashes.
func splitTransactionalID(id string) (prefix string, subtask int, n int64, ok bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", 0, 0, false
	}
	j := strings.LastIndexByte(id[:i], '-')
	if j <= 0 {
		return "", 0, 0, false
	}
	sub, err1 := strconv.ParseUint(id[j+1:i], 10, 31)
	num, err2 := strconv.ParseUint(id[i+1:], 10, 63)
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return id[:j], int(sub), int64(num), true
}

// TxnCommittable is the committable of one pre-committed transaction. It
// carries what recovery needs: the transactional id names the prefix and
// the pool slot, Pooled the naming strategy.
type TxnCommittable struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Checkpoint      exec.CheckpointID // the barrier that sealed it
	Empty           bool              // no record was written: nothing to commit
	Pooled          bool              // named by NamingPooling: the id is reused once the transaction ended
	// Topic and Partitions say where the transaction's records are, so a
	// commit that finds the transaction ended can read from the log how
	// (outcome.go). Empty in committables of version 1.
	Topic      string
	Partitions []TxnPartition
}

// txnCommittableVersion tags the layout of an encoded TxnCommittable:
// version 2 added the topic and partitions; version 1 is still read.
const txnCommittableVersion = 2

// Encode returns the committable as stored in a checkpoint.
func (c TxnCommittable) Encode() exec.Committable {
	b := make([]byte, 0, 16+len(c.TransactionalID))
	b = append(b, txnCommittableVersion)
	var flags byte
	if c.Empty {
		flags |= 1
	}
	if c.Pooled {
		flags |= 2 // an older reader refuses the committable rather than misread it
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(c.TransactionalID)))
	b = append(b, c.TransactionalID...)
	b = binary.AppendVarint(b, c.ProducerID)
	b = binary.AppendVarint(b, int64(c.Epoch))
	b = binary.AppendVarint(b, int64(c.Checkpoint))
	b = binary.AppendUvarint(b, uint64(len(c.Topic)))
	b = append(b, c.Topic...)
	b = binary.AppendUvarint(b, uint64(len(c.Partitions)))
	for _, p := range c.Partitions {
		b = binary.AppendVarint(b, int64(p.Partition))
		b = binary.AppendVarint(b, p.FirstOffset)
	}
	return b
}

// DecodeTxnCommittable reads what Encode wrote.
func DecodeTxnCommittable(data exec.Committable) (TxnCommittable, error) {
	bad := func() (TxnCommittable, error) {
		return TxnCommittable{}, fmt.Errorf("kafka exactly-once sink: malformed committable %s", recordPrefix(data))
	}
	if len(data) < 2 || data[0] < 1 || data[0] > txnCommittableVersion || data[1] > 3 {
		return bad()
	}
	version := data[0]
	c := TxnCommittable{Empty: data[1]&1 != 0, Pooled: data[1]&2 != 0}
	rest := data[2:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return bad()
	}
	c.TransactionalID = string(rest[k : k+int(n)])
	rest = rest[k+int(n):]
	var vals [3]int64
	for i := range vals {
		v, k := binary.Varint(rest)
		if k <= 0 {
			return bad()
		}
		vals[i], rest = v, rest[k:]
	}
	if vals[1] < -1 || vals[1] > 1<<15-1 {
		return bad()
	}
	c.ProducerID, c.Epoch, c.Checkpoint = vals[0], int16(vals[1]), exec.CheckpointID(vals[2])
	if version >= 2 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return bad()
		}
		c.Topic = string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		np, k := binary.Uvarint(rest)
		if k <= 0 || np > uint64(len(rest)) {
			return bad()
		}
		rest = rest[k:]
		for range np {
			p, k := binary.Varint(rest)
			if k <= 0 || p < 0 || p > 1<<31-1 {
				return bad()
			}
			rest = rest[k:]
			off, k := binary.Varint(rest)
			if k <= 0 || off < 0 {
				return bad()
			}
			rest = rest[k:]
			c.Partitions = append(c.Partitions, TxnPartition{Partition: int32(p), FirstOffset: off})
		}
	}
	if len(rest) != 0 {
		return bad()
	}
	return c, nil
}

// TransactionalWriter is the exactly-once writer of one sink subtask; see
// the protocol above. It encodes rows as the at-least-once Writer does (it
// drives one whose client it swaps at every barrier). Like every SinkWriter
// it is used by one goroutine.
type TransactionalWriter struct {
	cfg   TxnConfig
	inner *Writer // encodes and produces into the current transaction's client

	ctx    context.Context
	cancel context.CancelFunc
	opened bool
	admin  *kgo.Client // raw EndTxn and InitProducerID requests

	cur      *kgo.Client       // the open transaction's client
	curID    exec.CheckpointID // the open transaction's checkpoint id
	curTxnID string            // the open transaction's transactional id
	produced atomic.Int64      // records acknowledged in the open transaction
	// partsMu guards parts: the partitions of the open transaction and the
	// offset of its first record in each, filled by the produce promises.
	partsMu sync.Mutex
	parts   []TxnPartition
	// prepared are the pre-committed transactions by transactional id,
	// whose clients are closed once they are committed or aborted. With
	// NamingPooling their ids are the ones not free for reuse.
	prepared map[string]preparedTxn

	// Set by Commit calls before Open: the restore.
	restoredMax   exec.CheckpointID
	restoredNames restoredNames
}

// preparedTxn is a pre-committed transaction's client and producer
// identity: a committable ends only the transaction it was made for, not a
// later one that reused its pooled id.
type preparedTxn struct {
	cl         *kgo.Client
	producerID int64
	epoch      int16
}

// restoredNames is what the committables of a restored checkpoint tell
// recovery about the ids the earlier run used.
type restoredNames struct {
	prefixes []string // the transactional-id prefixes, in order of appearance
	pooled   bool     // some transaction was named by NamingPooling
}

func (r *restoredNames) note(c TxnCommittable) {
	if c.Pooled {
		r.pooled = true
	}
	if p, _, _, ok := splitTransactionalID(c.TransactionalID); ok && !slices.Contains(r.prefixes, p) {
		r.prefixes = append(r.prefixes, p)
	}
}

var _ exec.TwoPhaseCommitWriter = (*TransactionalWriter)(nil)

// NewTransactionalWriter returns the exactly-once writer of one sink
// subtask.
func NewTransactionalWriter(cfg TxnConfig) (*TransactionalWriter, error) {
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	inner, err := cfg.Sink.NewKafkaWriter(cfg.Subtask, cfg.Parallelism)
	if err != nil {
		return nil, err
	}
	w := &TransactionalWriter{cfg: cfg, inner: inner, prepared: map[string]preparedTxn{}}
	inner.promise = w.onProduced
	return w, nil
}

// onProduced counts the records of the open transaction: PrepareCommit
// flushes before it reads the count, so every promise has run by then.
func (w *TransactionalWriter) onProduced(r *kgo.Record, err error) {
	w.produced.Add(1)
	if err == nil {
		w.partsMu.Lock()
		found := false
		for i := range w.parts {
			if w.parts[i].Partition == r.Partition {
				w.parts[i].FirstOffset = min(w.parts[i].FirstOffset, r.Offset)
				found = true
				break
			}
		}
		if !found {
			w.parts = append(w.parts, TxnPartition{Partition: r.Partition, FirstOffset: r.Offset})
		}
		w.partsMu.Unlock()
	}
	w.inner.onProduced(r, err)
}

// SetLog implements exec.LogReceiver: the sink's events go to the job's log.
func (w *TransactionalWriter) SetLog(log exec.LogFunc) {
	w.cfg.Logf = func(format string, args ...any) {
		if !strings.HasPrefix(format, "[") {
			format = "[INFO] " + format
		}
		log(format, args...)
	}
}

// HasOutput implements exec.CommittableSizer: an empty transaction has
// nothing to commit.
func (w *TransactionalWriter) HasOutput(data exec.Committable) bool {
	c, err := DecodeTxnCommittable(data)
	return err != nil || !c.Empty
}

func (w *TransactionalWriter) name() string { return w.cfg.Sink.cfg.name }

// adminClient returns the client for raw transaction requests, creating it
// on first use (Commit may come before Open after a restore).
func (w *TransactionalWriter) adminClient() (*kgo.Client, error) {
	if w.admin != nil {
		return w.admin, nil
	}
	cl, err := kgo.NewClient(w.cfg.Sink.cfg.commonClientOpts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka table %s: creating the Kafka client: %w", w.name(), err)
	}
	w.admin = cl
	return cl, nil
}

// context returns the writer's context, or a background one before Open.
func (w *TransactionalWriter) context() context.Context {
	if w.ctx != nil {
		return w.ctx
	}
	return context.Background()
}

// Open implements exec.SinkWriter: it aborts the transactions an earlier
// attempt of this subtask left open after the restored checkpoint, then
// opens the first transaction.
func (w *TransactionalWriter) Open(ctx context.Context) error {
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.inner.ctx = w.ctx
	w.opened = true
	next := w.cfg.NextCheckpointID
	if next <= 0 {
		next = w.restoredMax + 1
	}
	admin, err := w.adminClient()
	if err != nil {
		return err
	}
	_, unused, err := abortLingering(w.ctx, admin, w.cfg, next, w.restoredNames)
	if err != nil {
		return err
	}
	// Start after every id the probe found used: a broker that lost its
	// in-flight transactions (the embedded broker after kill -9) aborted
	// them without writing abort markers, and kfake, when it later replays
	// its log, takes such a transaction's records as part of the next
	// transaction of the same producer that commits — reusing the id (and
	// with it the producer id) would make the aborted records visible.
	// Pooled ids are reused by design (see the README's limits).
	if w.cfg.Naming != NamingPooling {
		next = max(next, unused)
	}
	if err := w.begin(next); err != nil {
		return err
	}
	if w.cfg.Sink.partitioner == PartitionerFixed {
		n, err := w.inner.partitionCount(w.ctx)
		if err != nil {
			return err
		}
		w.inner.partition = int32(w.cfg.Subtask % n)
	}
	return nil
}

// nextTxnID names the transaction that checkpoint id will seal.
func (w *TransactionalWriter) nextTxnID(id exec.CheckpointID) string {
	if w.cfg.Naming != NamingPooling {
		return TransactionalID(w.cfg.Prefix, w.cfg.Subtask, id)
	}
	// Reusing the id of a pre-committed transaction would abort it; any
	// other id of the subtask is free (recovery fenced what earlier runs
	// left open), so the pool grows only while commits lag behind.
	for n := exec.CheckpointID(0); ; n++ {
		txnID := TransactionalID(w.cfg.Prefix, w.cfg.Subtask, n)
		if _, busy := w.prepared[txnID]; !busy {
			return txnID
		}
	}
}

// begin opens the transaction for checkpoint id on a new client and
// initialises its producer id.
func (w *TransactionalWriter) begin(id exec.CheckpointID) error {
	txnID := w.nextTxnID(id)
	opts := append(append([]kgo.Opt(nil), w.cfg.Sink.producerOpts...),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(w.cfg.TransactionTimeout))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka table %s: creating the transactional Kafka client: %w", w.name(), err)
	}
	ctx, cancel := w.cfg.Sink.cfg.contextWithTimeout(w.ctx)
	defer cancel()
	// BeginTransaction loads the producer id; asking for it first makes a
	// failure of InitProducerID an error of its own.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return w.initError(txnID, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return w.initError(txnID, err)
	}
	w.cur, w.curID, w.curTxnID = cl, id, txnID
	w.inner.cl = cl
	w.produced.Store(0)
	w.partsMu.Lock()
	w.parts = w.parts[:0]
	w.partsMu.Unlock()
	return nil
}

func (w *TransactionalWriter) initError(txnID string, err error) error {
	if terr := timeoutError(w.cfg, txnID, err); terr != nil {
		return terr
	}
	return fmt.Errorf("kafka table %s: initialising transactional id %s: %w", w.name(), txnID, err)
}

// timeoutError explains a broker's rejection of the transaction timeout,
// or returns nil for other errors.
func timeoutError(cfg TxnConfig, txnID string, err error) error {
	if !errors.Is(err, kerr.InvalidTransactionTimeout) {
		return nil
	}
	return fmt.Errorf("kafka table %s: the broker rejected transaction.timeout.ms = %d for transactional id %s: %w; lower 'properties.%s' below the broker's transaction.max.timeout.ms",
		cfg.Sink.cfg.name, cfg.TransactionTimeout.Milliseconds(), txnID, err, propTransactionTimeout)
}

// Write implements exec.SinkWriter: the rows join the open transaction.
func (w *TransactionalWriter) Write(ctx context.Context, b *types.Batch) error {
	if w.cur == nil {
		return fmt.Errorf("kafka table %s: write to an exactly-once writer that is not open", w.name())
	}
	return w.inner.Write(ctx, b)
}

// flush produces buffered rows and waits for every record of the open
// transaction to be acknowledged.
func (w *TransactionalWriter) flush(ctx context.Context) error {
	if w.inner.pendingIdx != nil {
		w.inner.flushBuffer()
	}
	return w.inner.flushClient(ctx)
}

// PrepareCommit implements exec.TwoPhaseCommitWriter: it flushes the open
// transaction, hands it over as the committable of checkpoint id without
// ending it, and opens the next transaction.
func (w *TransactionalWriter) PrepareCommit(id exec.CheckpointID) ([]exec.Committable, error) {
	if w.cur == nil {
		return nil, fmt.Errorf("kafka table %s: pre-commit of an exactly-once writer that is not open", w.name())
	}
	if err := w.cfg.Sink.leaseErr(); err != nil {
		return nil, fmt.Errorf("kafka table %s: %w", w.name(), err)
	}
	if err := w.flush(w.ctx); err != nil {
		return nil, err
	}
	pid, epoch, err := w.cur.ProducerID(w.ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka table %s: reading the producer id of transactional id %s: %w",
			w.name(), w.curTxnID, err)
	}
	c := TxnCommittable{
		TransactionalID: w.curTxnID,
		ProducerID:      pid,
		Epoch:           epoch,
		Checkpoint:      id,
		Empty:           w.produced.Load() == 0,
		Pooled:          w.cfg.Naming == NamingPooling,
	}
	if !c.Empty {
		c.Topic = w.cfg.Sink.topic
		w.partsMu.Lock()
		c.Partitions = append([]TxnPartition(nil), w.parts...)
		w.partsMu.Unlock()
		slices.SortFunc(c.Partitions, func(a, b TxnPartition) int { return int(a.Partition) - int(b.Partition) })
	}
	if c.Empty {
		w.cur.Close() // nothing to commit or abort
	} else {
		w.prepared[c.TransactionalID] = preparedTxn{cl: w.cur, producerID: pid, epoch: epoch}
	}
	w.cur, w.inner.cl = nil, nil
	// Names only grow within an attempt, even if the runtime skipped or
	// repeated an id: reusing a prepared transaction's id would fence it.
	next := max(id, w.curID) + 1
	if err := w.begin(next); err != nil {
		return nil, err
	}
	return []exec.Committable{c.Encode()}, nil
}

// Commit implements exec.TwoPhaseCommitWriter. Commits are idempotent;
// Commit before Open is the restore of a checkpoint. Transactions the
// broker aborted are reported, after the others are committed, as an
// *exec.AbortedCommitError naming them.
func (w *TransactionalWriter) Commit(committables []exec.Committable) error {
	var lost []string
	aborted, committed := 0, 0
	for _, data := range committables {
		c, err := DecodeTxnCommittable(data)
		if err != nil {
			return fmt.Errorf("kafka table %s: %w", w.name(), err)
		}
		if !w.opened {
			w.restoredMax = max(w.restoredMax, c.Checkpoint)
			w.restoredNames.note(c)
		}
		if !c.Empty {
			admin, err := w.adminClient()
			if err != nil {
				return err
			}
			out, err := commitTxn(w.context(), admin, w.cfg, c)
			if err != nil {
				return fmt.Errorf("kafka table %s: %w", w.name(), err)
			}
			switch out.state {
			case txnCommitted:
				committed++
			case txnAborted:
				aborted++
				lost = append(lost, describeLost(c, out))
			case txnUnknown:
				// Perhaps committed: an earlier checkpoint's replay could
				// duplicate it, so it counts as committed for recovery.
				aborted++
				committed++
				lost = append(lost, describeLost(c, out))
			}
		}
		w.release(c)
	}
	if len(lost) > 0 {
		return lostError(w.cfg, lost, aborted, committed, w.cfg.ContinueOnAbort)
	}
	return nil
}

// Abort implements exec.TwoPhaseCommitWriter: the transactions are aborted.
func (w *TransactionalWriter) Abort(committables []exec.Committable) error {
	for _, data := range committables {
		c, err := DecodeTxnCommittable(data)
		if err != nil {
			return fmt.Errorf("kafka table %s: %w", w.name(), err)
		}
		if !c.Empty {
			admin, err := w.adminClient()
			if err != nil {
				return err
			}
			if err := endTxn(w.context(), admin, w.cfg, c, false); err != nil {
				return fmt.Errorf("kafka table %s: %w", w.name(), err)
			}
		}
		w.release(c)
	}
	return nil
}

// release closes the client of c's ended transaction and frees its id.
func (w *TransactionalWriter) release(c TxnCommittable) {
	if p, ok := w.prepared[c.TransactionalID]; ok && p.producerID == c.ProducerID && p.epoch == c.Epoch {
		p.cl.Close()
		delete(w.prepared, c.TransactionalID)
	}
}

// Finish implements exec.SinkWriter. The runtime calls it after the final
// checkpoint committed everything; records written since the last barrier
// would never be committed, which happens only without checkpointing.
func (w *TransactionalWriter) Finish(ctx context.Context) error {
	if w.cur == nil {
		return nil
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	if n := w.produced.Load(); n > 0 {
		return fmt.Errorf("kafka table %s: %d records written after the last checkpoint cannot be committed: the 'exactly-once' delivery guarantee needs checkpointing; set 'execution.checkpointing.interval' or use 'sink.delivery-guarantee' = 'at-least-once'",
			w.name(), n)
	}
	return nil
}

// closeTimeout bounds the abort of the open transaction in Close.
const closeTimeout = 5 * time.Second

// Close implements exec.SinkWriter. The open transaction is aborted (no
// checkpoint covers it); pre-committed transactions stay open for the
// commit of a restored attempt.
func (w *TransactionalWriter) Close() error {
	var err error
	if w.cur != nil {
		if w.produced.Load() > 0 || w.inner.asyncErr() != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			if aerr := w.cur.AbortBufferedRecords(ctx); aerr == nil {
				aerr = w.cur.EndTransaction(ctx, kgo.TryAbort)
				if aerr != nil {
					err = fmt.Errorf("kafka table %s: aborting the open transaction: %w", w.name(), aerr)
				}
			}
			cancel()
		}
		w.cur.Close()
		w.cur, w.inner.cl = nil, nil
	}
	for id, p := range w.prepared {
		p.cl.Close()
		delete(w.prepared, id)
	}
	if w.admin != nil {
		w.admin.Close()
		w.admin = nil
	}
	if w.cancel != nil {
		w.cancel()
	}
	return err
}

// String describes the writer for debugging.
func (w *TransactionalWriter) String() string {
	return fmt.Sprintf("kafka exactly-once writer %s[%d] -> %s (%s)", w.name(), w.cfg.Subtask, w.cfg.Sink.topic, w.curTxnID)
}

// RecoverTransactions is the recovery of one sink subtask from checkpoint
// restoredCheckpointID for callers that do not go through the writer's
// restore: it commits the restored committables, then aborts the
// transactions earlier runs left open (see abortLingering). It must run
// before the subtask's writer produces. It returns the number of lingering
// transactions aborted.
func RecoverTransactions(ctx context.Context, cfg TxnConfig, restored []exec.Committable, restoredCheckpointID int64, subtask int) (int, error) {
	if err := cfg.resolve(); err != nil {
		return 0, err
	}
	cfg.Subtask = subtask
	cl, err := kgo.NewClient(cfg.Sink.cfg.commonClientOpts()...)
	if err != nil {
		return 0, fmt.Errorf("kafka table %s: creating the Kafka client: %w", cfg.Sink.cfg.name, err)
	}
	defer cl.Close()
	var names restoredNames
	var lost []string
	aborted, committed := 0, 0
	for _, data := range restored {
		c, err := DecodeTxnCommittable(data)
		if err != nil {
			return 0, fmt.Errorf("kafka table %s: %w", cfg.Sink.cfg.name, err)
		}
		names.note(c)
		if c.Empty {
			continue
		}
		out, err := commitTxn(ctx, cl, cfg, c)
		if err != nil {
			return 0, fmt.Errorf("kafka table %s: %w", cfg.Sink.cfg.name, err)
		}
		if out.state != txnCommitted {
			aborted++
			lost = append(lost, describeLost(c, out))
		} else {
			committed++
		}
	}
	if len(lost) > 0 {
		err := lostError(cfg, lost, aborted, committed, cfg.ContinueOnAbort)
		if !cfg.ContinueOnAbort {
			return 0, err
		}
		cfg.Logf("[ERROR] %v (continuing: '%s' = '%s')", err, OptOnAbortedTransaction, AbortedTxnContinue)
	}
	fenced, _, err := abortLingering(ctx, cl, cfg, exec.CheckpointID(restoredCheckpointID+1), names)
	return fenced, err
}

// abortLingering aborts the transactions that earlier runs of the sink
// left open and that cfg's subtask owns: those named with cfg's prefix or
// with a prefix of the restored checkpoint, of old subtasks j with j mod
// parallelism = subtask. from is the first checkpoint id not covered by
// the restored checkpoint (1 at a fresh start). The restored committables
// must be committed before. It returns how many transactions it aborted and
// the first checkpoint id from from on that no transactional id of cfg's
// prefix and subtask has used (with NamingIncrementing).
func abortLingering(ctx context.Context, cl *kgo.Client, cfg TxnConfig, from exec.CheckpointID, restored restoredNames) (int, exec.CheckpointID, error) {
	prefixes := []string{cfg.Prefix}
	for _, p := range restored.prefixes {
		if !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
			cfg.Logf("kafka table %s: the restored checkpoint used transactional-id prefix %q, the sink now uses %q: aborting lingering transactions of both",
				cfg.Sink.cfg.name, p, cfg.Prefix)
		}
	}
	listing, err := canListTransactions(ctx, cl, cfg.Sink.cfg.requestTimeout)
	if err != nil {
		return 0, from, fmt.Errorf("kafka table %s: asking the brokers which requests they support: %w", cfg.Sink.cfg.name, err)
	}
	if listing {
		return fenceListed(ctx, cl, cfg, prefixes, from)
	}
	if cfg.Naming == NamingPooling || restored.pooled {
		return 0, from, poolingUnsupported(cfg.Sink.cfg, cfg.Naming != NamingPooling)
	}
	cfg.Logf("kafka table %s: the brokers do not support ListTransactions (Kafka before 3.0): probing transactional ids from checkpoint %d on for lingering transactions",
		cfg.Sink.cfg.name, from)
	fenced, next := 0, from
	for _, prefix := range prefixes {
		for sub := cfg.Subtask; ; sub += cfg.Parallelism {
			n, unused, err := probeLingering(ctx, cl, cfg, prefix, sub, from)
			fenced += n
			if err != nil {
				return fenced, next, err
			}
			if prefix == cfg.Prefix && sub == cfg.Subtask {
				next = max(next, unused)
			}
			// No id of old subtask sub was used after from: as in Flink,
			// no run had a subtask sub or a higher one.
			if n == 0 || cfg.Parallelism <= 0 {
				break
			}
		}
	}
	return fenced, next, nil
}

// poolingUnsupported is the error for NamingPooling (in the sink's options,
// or in the restored checkpoint when restored) on brokers without
// ListTransactions.
func poolingUnsupported(c *tableConfig, restored bool) error {
	what := fmt.Sprintf("'%s' = '%s'", OptTransactionNamingStrategy, NamingPooling)
	fix := fmt.Sprintf("use '%s' = '%s'", OptTransactionNamingStrategy, NamingIncrementing)
	if restored {
		what = "the restored checkpoint, written with " + what + ","
		fix += " and start without the checkpoint"
	}
	return fmt.Errorf("kafka table %s: %s needs brokers that support ListTransactions (Kafka 3.0 or newer) to find the transactions earlier runs left open, and the cluster at %s does not; %s",
		c.name, what, c.serversText(), fix)
}

// owns reports whether cfg's subtask recovers the transactions of (old)
// subtask sub: sub mod parallelism = subtask.
func (cfg *TxnConfig) owns(sub int) bool {
	if cfg.Parallelism <= 0 {
		return sub == cfg.Subtask
	}
	return sub%cfg.Parallelism == cfg.Subtask
}

// canListTransactions reports whether every broker supports
// ListTransactions.
func canListTransactions(ctx context.Context, cl *kgo.Client, bound time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	vs, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		return false, err
	}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return false, fmt.Errorf("broker %d: %w", v.NodeID, v.Err)
		}
		if _, ok := v.KeyMaxVersion(kmsg.ListTransactions.Int16()); !ok {
			return false, nil
		}
	}
	return len(vs) > 0, nil
}

// fenceListed fences the open transactions the brokers list whose ids have
// one of prefixes and an old subtask cfg owns. It also returns the first
// checkpoint id from from on that no listed id of cfg's prefix and subtask
// used, whatever its state: see TransactionalWriter.Open.
func fenceListed(ctx context.Context, cl *kgo.Client, cfg TxnConfig, prefixes []string, from exec.CheckpointID) (int, exec.CheckpointID, error) {
	lctx, cancel := context.WithTimeout(ctx, adminTimeout)
	listed, err := kadm.NewClient(cl).ListTransactions(lctx, nil, nil)
	cancel()
	if err != nil {
		return 0, from, fmt.Errorf("kafka table %s: listing transactions to abort those earlier runs left open: %w", cfg.Sink.cfg.name, err)
	}
	timeoutMs := int32(min(cfg.TransactionTimeout.Milliseconds(), 1<<31-1))
	fenced, next := 0, from
	for _, t := range listed.Sorted() {
		prefix, sub, n, ok := splitTransactionalID(t.TxnID)
		if !ok || !slices.Contains(prefixes, prefix) || !cfg.owns(sub) {
			continue
		}
		if prefix == cfg.Prefix && sub == cfg.Subtask && exec.CheckpointID(n) >= next {
			next = exec.CheckpointID(n) + 1
		}
		if !isOpenTxnState(t.State) {
			continue
		}
		if _, err := fence(ctx, cl, t.TxnID, timeoutMs, cfg.Sink.cfg.requestTimeout); err != nil {
			if terr := timeoutError(cfg, t.TxnID, err); terr != nil {
				return fenced, next, terr
			}
			return fenced, next, fmt.Errorf("kafka table %s: aborting lingering transaction %s: %w", cfg.Sink.cfg.name, t.TxnID, err)
		}
		fenced++
		cfg.Logf("kafka table %s: fenced transactional id %s (state %s, producer id %d): an earlier run left its transaction open; it is aborted",
			cfg.Sink.cfg.name, t.TxnID, t.State, t.ProducerID)
	}
	return fenced, next, nil
}

// probeLingering fences <prefix>-<sub>-<n> for n = from, from+1, … until an
// id that was never used, and returns how many ids held a transaction or
// producer state, and the first id it found unused. It is the recovery for
// brokers without ListTransactions; it misses transactions after a gap in
// the ids.
func probeLingering(ctx context.Context, cl *kgo.Client, cfg TxnConfig, prefix string, sub int, from exec.CheckpointID) (int, exec.CheckpointID, error) {
	timeoutMs := int32(min(cfg.TransactionTimeout.Milliseconds(), 1<<31-1))
	fenced := 0
	for n := from; n < from+maxFenceProbe; n++ {
		txnID := TransactionalID(prefix, sub, n)
		epoch, err := fence(ctx, cl, txnID, timeoutMs, cfg.Sink.cfg.requestTimeout)
		if err != nil {
			if terr := timeoutError(cfg, txnID, err); terr != nil {
				return fenced, n, terr
			}
			return fenced, n, fmt.Errorf("kafka table %s: aborting lingering transactions: %w", cfg.Sink.cfg.name, err)
		}
		if epoch == 0 {
			return fenced, n, nil // never used before
		}
		fenced++
		cfg.Logf("kafka table %s: fenced transactional id %s left by an earlier run (its transaction, if open, is aborted)",
			cfg.Sink.cfg.name, txnID)
	}
	cfg.Logf("kafka table %s: stopped probing for lingering transactions after %d transactional ids", cfg.Sink.cfg.name, maxFenceProbe)
	return fenced, from + maxFenceProbe, nil
}

// fence sends InitProducerID for txnID, which aborts its ongoing
// transaction and bumps its epoch, and returns the new epoch: 0 means the
// id had no producer state.
func fence(ctx context.Context, cl *kgo.Client, txnID string, timeoutMs int32, bound time.Duration) (int16, error) {
	var epoch int16
	err := retryTxnRequest(ctx, bound, func(ctx context.Context) (int16, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(txnID)
		req.TransactionTimeoutMillis = timeoutMs
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		epoch = resp.ProducerEpoch
		return resp.ErrorCode, nil
	})
	if err != nil {
		return 0, fmt.Errorf("fencing transactional id %s: %w", txnID, err)
	}
	return epoch, nil
}

// endTxn commits or aborts c's transaction with a raw EndTxn. A transaction
// that ended before (fenced, or already committed) is logged, not an error:
// c comes from a checkpoint, so the transaction was ours.
func endTxn(ctx context.Context, cl *kgo.Client, cfg TxnConfig, c TxnCommittable, commit bool) error {
	err := retryTxnRequest(ctx, cfg.Sink.cfg.requestTimeout, func(ctx context.Context) (int16, error) {
		return endTxnRequest(ctx, cl, c, commit)
	})
	verb := "committing"
	if !commit {
		verb = "aborting"
	}
	switch {
	case err == nil:
		return nil
	case isEndedTxnError(err):
		// Either an earlier attempt already did it, or the broker aborted
		// the transaction (transaction.timeout.ms, an operator's abort);
		// the broker cannot tell which, and retrying cannot help.
		cfg.Logf("kafka table %s: %s transactional id %s (producer id %d, epoch %d) of checkpoint %d: it ended before (%v): "+
			"either an earlier attempt %s it, or it was aborted (transaction.timeout.ms exceeded, or aborted by an operator) and its records are lost",
			cfg.Sink.cfg.name, verb, c.TransactionalID, c.ProducerID, c.Epoch, c.Checkpoint, err, pastTense(commit))
		return nil
	default:
		return fmt.Errorf("%s transactional id %s (producer id %d, epoch %d) of checkpoint %d: %w",
			verb, c.TransactionalID, c.ProducerID, c.Epoch, c.Checkpoint, err)
	}
}

func pastTense(commit bool) string {
	if commit {
		return "committed"
	}
	return "aborted"
}

// isEndedTxnError reports whether an EndTxn error says the transaction is
// not open with the given producer id and epoch any more. kfake reports a
// fenced epoch as INVALID_TXN_STATE where Kafka says PRODUCER_FENCED.
func isEndedTxnError(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// retryTxnRequest issues a transaction coordinator request until it
// succeeds, fails with a non-retriable error, or bound elapses. The request
// function returns the response's error code or a transport error.
func retryTxnRequest(ctx context.Context, bound time.Duration, request func(context.Context) (int16, error)) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		code, err := request(ctx)
		if err == nil {
			err = kerr.ErrorForCode(code)
			if err == nil {
				return nil
			}
		}
		if !isRetriableTxnError(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up after %s)", err, bound)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// isRetriableTxnError reports whether a transaction request may succeed if
// sent again: coordinator moves and loads, a concurrent transaction still
// ending, or a transport failure (the client retries those itself first).
func isRetriableTxnError(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable || errors.Is(err, kerr.ConcurrentTransactions)
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// transactionTimeout reads 'properties.transaction.timeout.ms' from props
// (keys with or without the 'properties.' prefix).
func transactionTimeout(props map[string]string) (time.Duration, error) {
	v, ok := props[propTransactionTimeout]
	if !ok {
		v, ok = props[propertiesPrefix+propTransactionTimeout]
	}
	if !ok {
		return DefaultTransactionTimeout, nil
	}
	ms, err := positiveInt(propertiesPrefix+propTransactionTimeout, v)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// kmsgEndTxn is the EndTxn request for c's transaction.
func kmsgEndTxn(c TxnCommittable, commit bool) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = c.TransactionalID
	req.ProducerID = c.ProducerID
	req.ProducerEpoch = c.Epoch
	req.Commit = commit
	return req
}
