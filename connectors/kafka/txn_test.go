package kafka

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	txnTopic      = "out"
	txnPartitions = 2
	txnPrefix     = "job"
)

// startTxnCluster starts a broker whose transaction.max.timeout.ms is
// maxTimeoutMs, with the topic "out" of two partitions.
func startTxnCluster(t testing.TB, maxTimeoutMs int) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(txnPartitions, txnTopic),
		kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": fmt.Sprint(maxTimeoutMs)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// txnSink is a CSV sink of (id, name) rows to "out" with a one-minute
// transaction timeout. The delivery guarantee option is left at its
// default: the factory rejects 'exactly-once' until it is wired to
// NewTransactionalWriter; TxnConfig does not depend on it.
func txnSink(t testing.TB, addr string, extra map[string]string) *Sink {
	opts := map[string]string{"topic": txnTopic, "format": "csv",
		"properties.transaction.timeout.ms": "60000", OptTransactionalIDPrefix: txnPrefix}
	for k, v := range extra {
		opts[k] = v
	}
	return mustSink(t, tableContext(addr, eventSchema, opts))
}

// txnLog collects the writer's log lines.
type txnLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *txnLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *txnLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func newTxnWriter(t testing.TB, s *Sink, subtask int, next exec.CheckpointID, log *txnLog) *TransactionalWriter {
	t.Helper()
	cfg := TxnConfig{Sink: s, Subtask: subtask, Parallelism: subtask + 1, NextCheckpointID: next}
	if log != nil {
		cfg.Logf = log.logf
	}
	w, err := NewTransactionalWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func openTxnWriter(t testing.TB, w *TransactionalWriter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
}

// writeNames writes rows (i, name) for the names, with ids from first.
func writeNames(t testing.TB, w exec.SinkWriter, first int, names ...string) {
	t.Helper()
	b := types.NewBatch(2, len(names))
	for i, n := range names {
		b.AppendRow(types.Insert, eventRow(first+i, n))
	}
	if err := w.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func prepare(t testing.TB, w *TransactionalWriter, id exec.CheckpointID) TxnCommittable {
	t.Helper()
	cs, err := w.PrepareCommit(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("PrepareCommit(%d) returned %d committables, want 1", id, len(cs))
	}
	c, err := DecodeTxnCommittable(cs[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func commit(t testing.TB, w *TransactionalWriter, cs ...TxnCommittable) {
	t.Helper()
	var enc []exec.Committable
	for _, c := range cs {
		enc = append(enc, c.Encode())
	}
	if err := w.Commit(enc); err != nil {
		t.Fatal(err)
	}
}

// crash drops the writer's clients without ending any transaction, as a
// killed process would.
func (w *TransactionalWriter) crash() {
	if w.cur != nil {
		w.cur.Close()
	}
	for _, p := range w.prepared {
		p.cl.Close()
	}
	if w.admin != nil {
		w.admin.Close()
	}
	w.cancel()
}

// offsets returns the sum over the partitions of "out" of the last stable
// offset (what read_committed readers may read up to) and of the high
// watermark.
func offsets(t testing.TB, addr string) (stable, high int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	lso, err := adm.ListCommittedOffsets(ctx, txnTopic)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := adm.ListEndOffsets(ctx, txnTopic)
	if err != nil {
		t.Fatal(err)
	}
	lso.Each(func(o kadm.ListedOffset) { stable += o.Offset })
	hwm.Each(func(o kadm.ListedOffset) { high += o.Offset })
	return stable, high
}

const endMarker = "~end"

// drain appends a marker record to every partition of "out" (outside any
// transaction) and reads the topic with the given isolation level up to
// the markers: the values of every record a reader with that isolation
// level sees, in partition order. A transaction left open on a partition
// holds read_committed readers before the marker, and the test times out.
func drain(t testing.TB, addr string, committed bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	// A marker of its own: an earlier drain's markers precede it and must
	// not end this one (counting any marker as a partition's end let a
	// second drain stop before it read some partition at all).
	marker := fmt.Sprintf("%s-%d", endMarker, time.Now().UnixNano())
	for p := int32(0); p < txnPartitions; p++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: txnTopic, Partition: p, Value: []byte(marker)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(txnTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	byPartition := make([][]string, txnPartitions)
	done := make([]bool, txnPartitions)
	ended := 0
	for ended < txnPartitions {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed=%v: only %d of %d partitions reached their end marker: %v", committed, ended, txnPartitions, byPartition)
		}
		for _, e := range fs.Errors() {
			t.Fatal(e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch v := string(r.Value); {
			case done[r.Partition]:
			case v == marker:
				done[r.Partition] = true
				ended++
			case !strings.HasPrefix(v, endMarker):
				byPartition[r.Partition] = append(byPartition[r.Partition], v)
			}
		})
	}
	var out []string
	for _, vs := range byPartition {
		out = append(out, vs...)
	}
	return sorted(out)
}

// consumeCommitted reads n records of "out" with read_committed.
func consumeCommitted(t testing.TB, addr string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(txnTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d committed records: %v", len(out), n, out)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return sorted(out)
}

func expectStrings(t testing.TB, what string, got []string, want ...string) {
	t.Helper()
	if !equalStrings(got, want) {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

func TestTxnCommittableRoundTrip(t *testing.T) {
	for _, c := range []TxnCommittable{
		{TransactionalID: "job-0-1", ProducerID: 1234567890123, Epoch: 7, Checkpoint: 1},
		{TransactionalID: "a-b-3-99", ProducerID: 0, Epoch: 32767, Checkpoint: 99, Empty: true},
		{TransactionalID: "job-1-4", ProducerID: 5, Epoch: 0, Checkpoint: 4, Topic: "out",
			Partitions: []TxnPartition{{Partition: 0, FirstOffset: 17}, {Partition: 3, FirstOffset: 0}}},
	} {
		got, err := DecodeTxnCommittable(c.Encode())
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip of %+v: %+v, %v", c, got, err)
		}
	}
	// Version 1 (checkpoints written before the partitions were recorded):
	// id "j-0-2", producer id 3, epoch 1, checkpoint 2.
	v1 := exec.Committable("\x01\x00\x05j-0-2\x06\x02\x04")
	if got, err := DecodeTxnCommittable(v1); err != nil || !reflect.DeepEqual(got, TxnCommittable{TransactionalID: "j-0-2", ProducerID: 3, Epoch: 1, Checkpoint: 2}) {
		t.Fatalf("decoding a version 1 committable: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "\x02\x00", "\x01\x02\x00", "\x01\x00\x05ab", "\x01\x00\x01a\x02\x02\x02\x00"} {
		if _, err := DecodeTxnCommittable(exec.Committable(bad)); err == nil {
			t.Fatalf("decoding %q: no error", bad)
		}
	}
}

func TestTxnVisibleOnlyAfterCommit(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	w := newTxnWriter(t, txnSink(t, addr, nil), 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()

	writeNames(t, w, 1, "a", "b", "c")
	c1 := prepare(t, w, 1)
	if c1.TransactionalID != "job-0-1" || c1.Empty || c1.Checkpoint != 1 || c1.ProducerID < 0 {
		t.Fatalf("committable of checkpoint 1: %+v", c1)
	}
	// Flushed, but in an open transaction: the last stable offset is
	// still 0 while the high watermark covers the three records.
	if stable, high := offsets(t, addr); stable != 0 || high != 3 {
		t.Fatalf("after pre-commit: stable offsets %d, high watermarks %d; want 0 and 3", stable, high)
	}

	writeNames(t, w, 4, "d", "e") // the transaction of checkpoint 2
	commit(t, w, c1)
	expectStrings(t, "read_committed after commit 1", consumeCommitted(t, addr, 3), "1,a", "2,b", "3,c")

	c2 := prepare(t, w, 2)
	if c2.TransactionalID != "job-0-2" || c2.Empty {
		t.Fatalf("committable of checkpoint 2: %+v", c2)
	}
	commit(t, w, c2)
	commit(t, w, c1, c2) // again, as after a restore: no-ops
	expectStrings(t, "read_committed", drain(t, addr, true), "1,a", "2,b", "3,c", "4,d", "5,e")
	expectStrings(t, "read_uncommitted", drain(t, addr, false), "1,a", "2,b", "3,c", "4,d", "5,e")
}

func TestTxnAbort(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	w := newTxnWriter(t, txnSink(t, addr, nil), 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()
	writeNames(t, w, 1, "a", "b")
	c1 := prepare(t, w, 1)
	if err := w.Abort([]exec.Committable{c1.Encode()}); err != nil {
		t.Fatal(err)
	}
	writeNames(t, w, 3, "c")
	commit(t, w, prepare(t, w, 2))
	expectStrings(t, "read_committed", drain(t, addr, true), "3,c")
	expectStrings(t, "read_uncommitted", drain(t, addr, false), "1,a", "2,b", "3,c")
}

func TestTxnEmptyTransactions(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	w := newTxnWriter(t, txnSink(t, addr, nil), 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()
	c1 := prepare(t, w, 1)
	if !c1.Empty || c1.TransactionalID != "job-0-1" {
		t.Fatalf("committable of an empty checkpoint: %+v", c1)
	}
	commit(t, w, c1)
	commit(t, w, c1)
	writeNames(t, w, 1, "a")
	c2 := prepare(t, w, 2)
	c3 := prepare(t, w, 3) // empty again
	if c2.Empty || !c3.Empty {
		t.Fatalf("committables: %+v, %+v", c2, c3)
	}
	commit(t, w, c2, c3)
	if err := w.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectStrings(t, "read_committed", drain(t, addr, true), "1,a")
}

// TestTxnRestore is a crash after checkpoint 1 completed (but before its
// commit), with checkpoint 2 pre-committed but never completed and the
// transaction of checkpoint 3 open. The restored writer commits
// checkpoint 1's transaction and aborts those of 2 and 3.
func TestTxnRestore(t *testing.T) {
	for _, viaRecover := range []bool{false, true} {
		t.Run(fmt.Sprintf("RecoverTransactions=%v", viaRecover), func(t *testing.T) {
			addr := startTxnCluster(t, 900000)
			s := txnSink(t, addr, nil)
			a := newTxnWriter(t, s, 0, 1, nil)
			openTxnWriter(t, a)
			writeNames(t, a, 1, "a", "b")
			c1 := prepare(t, a, 1)
			writeNames(t, a, 3, "c")
			c2 := prepare(t, a, 2)
			writeNames(t, a, 4, "d")
			if err := a.flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			a.crash()
			if c2.TransactionalID != "job-0-2" {
				t.Fatalf("committable of checkpoint 2: %+v", c2)
			}

			open, err := ListTransactions(context.Background(), addr, txnPrefix)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, o := range open {
				ids = append(ids, o.TransactionalID+" "+o.State)
			}
			expectStrings(t, "open transactions after the crash", ids, "job-0-1 Ongoing", "job-0-2 Ongoing", "job-0-3 Ongoing")

			log := &txnLog{}
			var b *TransactionalWriter
			if viaRecover {
				n, err := RecoverTransactions(context.Background(), TxnConfig{Sink: s, Logf: log.logf},
					[]exec.Committable{c1.Encode()}, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n != 2 {
					t.Fatalf("RecoverTransactions aborted %d lingering transactions, want 2 (job-0-2, job-0-3)", n)
				}
				b = newTxnWriter(t, s, 0, 2, log)
			} else {
				b = newTxnWriter(t, s, 0, 0, log)
				// The runtime commits the restored committables before Open.
				commit(t, b, c1)
			}
			openTxnWriter(t, b)
			defer b.Close()
			// The first transaction takes the first id the fencing probe
			// found unused, never one the crashed attempt used (job-0-2 and
			// job-0-3): a broker that lost in-flight transactions would let
			// their records resurface with the next commit of the same
			// producer. The brokers list job-0-1 … job-0-3, so the next id
			// is job-0-4, whichever path committed the restored checkpoint.
			want := exec.CheckpointID(4)
			if b.curID != want {
				t.Fatalf("restored writer's first transaction is for checkpoint %d, want %d", b.curID, want)
			}
			if !strings.Contains(log.String(), "fenced transactional id job-0-3") {
				t.Fatalf("log does not mention fencing job-0-3:\n%s", log)
			}
			// Records of the restored checkpoint are visible; those after it
			// are not, and no transaction is left open (the new attempt's
			// transaction has no records yet).
			if open, err := ListTransactions(context.Background(), addr, txnPrefix); err != nil || len(open) != 0 {
				t.Fatalf("open transactions after the restore: %+v, %v", open, err)
			}
			expectStrings(t, "read_committed after restore", consumeCommitted(t, addr, 2), "1,a", "2,b")
			writeNames(t, b, 5, "e")
			commit(t, b, prepare(t, b, 2))
			commit(t, b, prepare(t, b, 3))
			expectStrings(t, "read_committed", drain(t, addr, true), "1,a", "2,b", "5,e")
			expectStrings(t, "read_uncommitted", drain(t, addr, false), "1,a", "2,b", "3,c", "4,d", "5,e")
		})
	}
}

// TestTxnCommitAfterCrashAndCommit: the committable of a checkpoint whose
// commit happened before the crash is committed again on restore; the
// second commit is logged and not an error.
func TestTxnRecommitIsIdempotent(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	s := txnSink(t, addr, nil)
	a := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, a)
	writeNames(t, a, 1, "a")
	c1 := prepare(t, a, 1)
	commit(t, a, c1)
	a.crash()

	log := &txnLog{}
	b := newTxnWriter(t, s, 0, 0, log)
	commit(t, b, c1)
	openTxnWriter(t, b)
	defer b.Close()
	commit(t, b, prepare(t, b, 2))
	expectStrings(t, "read_committed", drain(t, addr, true), "1,a")
}

func TestTxnFinishWithoutCheckpoint(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	w := newTxnWriter(t, txnSink(t, addr, nil), 0, 1, nil)
	openTxnWriter(t, w)
	writeNames(t, w, 1, "a")
	err := w.Finish(context.Background())
	want := "kafka table default_catalog.default_database.t: 1 records written after the last checkpoint cannot be committed: the 'exactly-once' delivery guarantee needs checkpointing; set 'execution.checkpointing.interval' or use 'sink.delivery-guarantee' = 'at-least-once'"
	if err == nil || err.Error() != want {
		t.Fatalf("Finish: %v\nwant %s", err, want)
	}
	// Close aborts the open transaction: nothing is left hanging.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	expectStrings(t, "read_committed", drain(t, addr, true))
}

func TestTxnTimeoutAboveBrokerMax(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	s := txnSink(t, addr, map[string]string{"properties.transaction.timeout.ms": "3600000"})
	w := newTxnWriter(t, s, 0, 1, nil)
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err := w.Open(ctx)
	if e := errContains(err, "transaction.timeout.ms = 3600000", "lower 'properties.transaction.timeout.ms'"); e != nil {
		t.Fatal(e)
	}
}

func TestTxnConfigErrors(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	s := mustSink(t, tableContext(addr, eventSchema, map[string]string{"topic": txnTopic, "format": "csv"}))
	_, err := NewTransactionalWriter(TxnConfig{Sink: s, Parallelism: 1})
	if err == nil || err.Error() != "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE." {
		t.Fatalf("without a prefix: %v", err)
	}
	s = txnSink(t, addr, map[string]string{"properties.transaction.timeout.ms": "-5"})
	_, err = NewTransactionalWriter(TxnConfig{Sink: s, Parallelism: 1})
	if err == nil || err.Error() != "Invalid value for option 'properties.transaction.timeout.ms'. Expected a positive integer, but was: -5" {
		t.Fatalf("bad timeout: %v", err)
	}
}

func TestValidateExactlyOnce(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	for _, tc := range []struct {
		name     string
		props    map[string]string
		prefix   string
		interval time.Duration
		want     string // "" = valid
	}{
		{name: "valid", props: map[string]string{"properties.transaction.timeout.ms": "600000"}, prefix: "p", interval: 10 * time.Second},
		{name: "valid without the properties. prefix", props: map[string]string{"transaction.timeout.ms": "900000"}, prefix: "p", interval: time.Minute},
		{name: "no prefix", prefix: " ", interval: time.Second,
			want: "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE."},
		{name: "no checkpointing", prefix: "p",
			want: "'sink.delivery-guarantee' = 'exactly-once' needs checkpointing: set 'execution.checkpointing.interval' (for example SET 'execution.checkpointing.interval' = '10s') or use 'sink.delivery-guarantee' = 'at-least-once'"},
		{name: "Flink's default timeout exceeds the broker's maximum", prefix: "p", interval: 10 * time.Second,
			want: "'properties.transaction.timeout.ms' (3600000 ms) exceeds the broker's transaction.max.timeout.ms (900000 ms); lower 'properties.transaction.timeout.ms' or raise the broker setting"},
		{name: "timeout not above the interval", props: map[string]string{"properties.transaction.timeout.ms": "60000"}, prefix: "p", interval: time.Minute,
			want: "'properties.transaction.timeout.ms' (60000 ms) must be larger than the checkpoint interval (1m0s) so transactions survive until their checkpoint completes; raise 'properties.transaction.timeout.ms' or lower 'execution.checkpointing.interval'"},
		{name: "bad timeout", props: map[string]string{"properties.transaction.timeout.ms": "1h"}, prefix: "p", interval: time.Second,
			want: "Invalid value for option 'properties.transaction.timeout.ms'. Expected a positive integer, but was: 1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateExactlyOnce(context.Background(), addr, tc.props, tc.prefix, tc.interval)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v\nwant      %s", err, tc.want)
			}
		})
	}
}

func TestListAndAbortTransactions(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	// 'fixed': subtask i writes to partition i mod 2.
	s := txnSink(t, addr, map[string]string{"sink.partitioner": "fixed"})
	other := txnSink(t, addr, map[string]string{"sink.partitioner": "fixed", OptTransactionalIDPrefix: "job-x"})
	var ws []*TransactionalWriter
	for sub, sink := range []*Sink{s, s, other} {
		w := newTxnWriter(t, sink, sub, 7, nil)
		openTxnWriter(t, w)
		writeNames(t, w, sub*10, "v")
		if err := w.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	defer func() {
		for _, w := range ws {
			w.crash()
		}
	}()
	// Subtask 1's checkpoint-7 transaction is pre-committed; its
	// checkpoint-8 transaction is open but empty (no partitions).
	prepare(t, ws[1], 7)

	ctx := context.Background()
	open, err := ListTransactions(ctx, addr, txnPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range open {
		got = append(got, fmt.Sprintf("%s %s %v %d", o.TransactionalID, o.State, o.Partitions, o.Epoch))
		if o.ProducerID < 0 {
			t.Fatalf("%+v", o)
		}
	}
	// "job-x-2-7" belongs to prefix "job-x", not "job".
	// Epoch 0: recovery lists the open transactions instead of fencing ids
	// on speculation, so the producer's InitProducerID is the id's first.
	expectStrings(t, "open transactions", got, "job-0-7 Ongoing [out-0] 0", "job-1-7 Ongoing [out-1] 0")

	n, err := AbortTransactions(ctx, addr, txnPrefix)
	if err != nil || n != 2 {
		t.Fatalf("AbortTransactions: %d, %v; want 2", n, err)
	}
	if open, err := ListTransactions(ctx, addr, txnPrefix); err != nil || len(open) != 0 {
		t.Fatalf("after abort: %+v, %v", open, err)
	}
	if open, err := ListTransactions(ctx, addr, "job-x"); err != nil || len(open) != 1 || open[0].TransactionalID != "job-x-2-7" {
		t.Fatalf("other prefix: %+v, %v", open, err)
	}
	if n, err := AbortTransactions(ctx, addr, "job-x"); err != nil || n != 1 {
		t.Fatalf("AbortTransactions(job-x): %d, %v", n, err)
	}
	expectStrings(t, "read_committed", drain(t, addr, true))
	expectStrings(t, "read_uncommitted", drain(t, addr, false), "0,v", "10,v", "20,v")
}

// benchRows is one batch of ~200-byte JSON rows.
func benchRows() *types.Batch {
	batch := types.NewBatch(len(benchSchema), types.DefaultBatchSize)
	for i := 0; i < types.DefaultBatchSize; i++ {
		batch.AppendRow(types.Insert, types.Row{types.Int(int64(100000 + i)), types.Int(int64(5000000 + i)),
			types.String(fmt.Sprintf("electronics-%d", i%13)), types.String("purchase"), types.Float(float64(i%500) + 0.25),
			types.TimestampMillis(1714565000123 + int64(i)), types.String("a note long enough to make the record about two hundred bytes")})
	}
	return batch
}

// BenchmarkTxnProduce compares the exactly-once writer, committing every
// 16 batches (16 384 rows), with the at-least-once writer flushing as
// often; each iteration is one batch of 1024 ~200-byte JSON rows to a
// 4-partition kfake topic.
func BenchmarkTxnProduce(b *testing.B) {
	const batchesPerCheckpoint = 16
	for _, exactlyOnce := range []bool{false, true} {
		name := "at-least-once"
		if exactlyOnce {
			name = "exactly-once"
		}
		b.Run(name, func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(4, "out"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			s := mustSink(b, tableContext(c.ListenAddrs()[0], benchSchema, map[string]string{"topic": "out", "format": "json",
				"properties.transaction.timeout.ms": "600000", OptTransactionalIDPrefix: "bench"}))
			var w interface {
				exec.SinkWriter
				PrepareCommit(exec.CheckpointID) ([]exec.Committable, error)
				Commit([]exec.Committable) error
			}
			if exactlyOnce {
				w, err = NewTransactionalWriter(TxnConfig{Sink: s, Parallelism: 1, NextCheckpointID: 1})
			} else {
				w, err = s.NewKafkaWriter(0, 1)
			}
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := w.Open(ctx); err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			batch := benchRows()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			id := exec.CheckpointID(1)
			checkpoint := func() {
				cs, err := w.PrepareCommit(id)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Commit(cs); err != nil {
					b.Fatal(err)
				}
				id++
			}
			for i := 0; i < b.N; i++ {
				if err := w.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
				if (i+1)%batchesPerCheckpoint == 0 {
					checkpoint()
				}
			}
			checkpoint()
			b.ReportMetric(float64(b.N*batch.Len())/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// TestTxnCommitOfFencedTransaction: a restored committable whose
// transaction was aborted meanwhile (here by an operator's fence; in
// production by the broker's transaction timeout) cannot be committed; the
// commit is logged and not fatal, and the records stay invisible.
// TestTxnCommitFindsAbortedTransaction: a commit whose transaction the
// broker aborted before it (an operator's abort, the transaction timeout)
// is a loss the runtime must hear about, naming the transactional id, the
// checkpoint and the partitions of the lost records; before, it was only a
// log line that said the transaction may have been committed earlier.
func TestTxnCommitFindsAbortedTransaction(t *testing.T) {
	t.Run("fenced", func(t *testing.T) {
		addr := startTxnCluster(t, 900000)
		s := txnSink(t, addr, nil)
		a := newTxnWriter(t, s, 0, 1, nil)
		openTxnWriter(t, a)
		writeNames(t, a, 1, "a")
		c1 := prepare(t, a, 1)
		a.crash()
		if n, err := AbortTransactions(context.Background(), addr, txnPrefix); err != nil || n != 1 {
			t.Fatalf("AbortTransactions: %d, %v", n, err)
		}
		b := newTxnWriter(t, s, 0, 0, nil)
		err := b.Commit([]exec.Committable{c1.Encode()})
		var ae *exec.AbortedCommitError
		if !errors.As(err, &ae) || ae.Aborted != 1 || ae.Committed != 0 || ae.Continue {
			t.Fatalf("Commit: %v (%+v), want an AbortedCommitError for one transaction", err, ae)
		}
		if err := errContains(err, "transactional id job-0-1", "of checkpoint 1", "partitions out[", "abort marker",
			"'properties.transaction.timeout.ms' (60000 ms)", "lost its in-flight transactions", "'sink.on-aborted-transaction' = 'LOG_AND_CONTINUE'"); err != nil {
			t.Fatal(err)
		}
		openTxnWriter(t, b)
		defer b.Close()
		expectStrings(t, "read_committed", drain(t, addr, true))
	})
	t.Run("timed out, continue", func(t *testing.T) {
		addr := startTxnCluster(t, 900000)
		s := txnSink(t, addr, map[string]string{"properties.transaction.timeout.ms": "300", OptDeliveryGuarantee: DeliveryExactlyOnce, OptOnAbortedTransaction: "log_and_continue"})
		a := newTxnWriter(t, s, 0, 1, nil)
		openTxnWriter(t, a)
		defer a.Close()
		writeNames(t, a, 1, "a", "b")
		c1 := prepare(t, a, 1)
		awaitTxnEnded(t, addr, c1.TransactionalID)
		err := a.Commit([]exec.Committable{c1.Encode()})
		var ae *exec.AbortedCommitError
		if !errors.As(err, &ae) || ae.Aborted != 1 || !ae.Continue {
			t.Fatalf("Commit: %v, want an AbortedCommitError that continues", err)
		}
		if err := errContains(err, "transactional id job-0-1", "(300 ms)"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("committed before a broker restart", func(t *testing.T) {
		// kfake forgets, when it restarts, that a producer's last
		// transaction committed, and answers the repeated commit of a
		// restored checkpoint like one of an aborted transaction: the log
		// has the commit marker, so it is no loss.
		dir := t.TempDir()
		c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(txnPartitions, txnTopic), kfake.DataDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		addr := c.ListenAddrs()[0]
		a := newTxnWriter(t, txnSink(t, addr, nil), 0, 1, nil)
		openTxnWriter(t, a)
		writeNames(t, a, 1, "a")
		c1 := prepare(t, a, 1)
		commit(t, a, c1)
		a.crash()
		c.Close()
		c2, err := kfake.NewCluster(kfake.Ports(0), kfake.DataDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		log := &txnLog{}
		b := newTxnWriter(t, txnSink(t, c2.ListenAddrs()[0], nil), 0, 0, log)
		commit(t, b, c1)
		defer b.Close()
	})
	t.Run("committed, then fenced", func(t *testing.T) {
		// The id's epoch moved on after the commit, so the broker answers
		// the repeated commit PRODUCER_FENCED, as after a timeout: the log
		// has the commit marker, so it is no loss.
		addr := startTxnCluster(t, 900000)
		s := txnSink(t, addr, nil)
		a := newTxnWriter(t, s, 0, 1, nil)
		openTxnWriter(t, a)
		writeNames(t, a, 1, "a")
		c1 := prepare(t, a, 1)
		commit(t, a, c1)
		a.crash()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := fence(context.Background(), cl, c1.TransactionalID, 60000, testTimeout); err != nil {
			t.Fatal(err)
		}
		log := &txnLog{}
		b := newTxnWriter(t, s, 0, 0, log)
		commit(t, b, c1)
		defer b.Close()
		if !strings.Contains(log.String(), "transactional id job-0-1 of checkpoint 1 was committed by an earlier attempt") {
			t.Errorf("log:\n%s", log)
		}
		expectStrings(t, "read_committed", drain(t, addr, true), "1,a")
	})
}

// awaitTxnEnded waits until the broker no longer lists txnID as open.
func awaitTxnEnded(t *testing.T, addr, txnID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for {
		open, err := ListTransactions(ctx, addr, txnPrefix)
		if err != nil {
			t.Fatal(err)
		}
		still := false
		for _, o := range open {
			still = still || o.TransactionalID == txnID
		}
		if !still {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transaction %s still open", txnID)
		case <-time.After(20 * time.Millisecond): // polling the broker's state: no event to wait on
		}
	}
}

func TestCheckExactlyOnceOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string
	}{
		{opts: map[string]string{OptTransactionalIDPrefix: "p"}},
		{opts: map[string]string{}, want: "sink.transactional-id-prefix must be specified when using DeliveryGuarantee.EXACTLY_ONCE."},
		{opts: map[string]string{OptTransactionalIDPrefix: "p", "properties.transaction.timeout.ms": "0"},
			want: "Invalid value for option 'properties.transaction.timeout.ms'. Expected a positive integer, but was: 0"},
	} {
		opts := map[string]string{"topic": txnTopic, "format": "csv"}
		for k, v := range tc.opts {
			opts[k] = v
		}
		err := checkExactlyOnceOptions(mustSink(t, tableContext("localhost:9092", eventSchema, opts)).cfg)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || err.Error() != tc.want)) {
			t.Fatalf("%v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// TestRecoverFencesAfterGap: transactions of this subtask are open at ids 2
// and 4 after checkpoint 1, with 3 never used (a superseded barrier or an
// aborted attempt's ids leave such gaps). Recovery must abort both, not stop
// at the unused 3.
func TestRecoverFencesAfterGap(t *testing.T) {
	addr := startTxnCluster(t, 900000)
	s := txnSink(t, addr, nil)
	ctx := context.Background()
	for _, n := range []int{2, 4} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(TransactionalID(txnPrefix, 0, exec.CheckpointID(n))),
			kgo.DefaultProduceTopic("out"))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("lingering")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RecoverTransactions(ctx, TxnConfig{Sink: s}, nil, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("aborted %d lingering transactions, want 2 (job-0-2 and job-0-4)", n)
	}
	open, err := ListTransactions(ctx, addr, txnPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 0 {
		t.Errorf("still open after recovery: %+v", open)
	}
}

// TestOnAbortedTransactionOption: 'sink.on-aborted-transaction' takes FAIL
// or LOG_AND_CONTINUE (any case) and only on an exactly-once sink; it is
// never accepted and ignored.
func TestOnAbortedTransactionOption(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		cont bool
		want string
	}{
		{opts: map[string]string{OptDeliveryGuarantee: DeliveryExactlyOnce}},
		{opts: map[string]string{OptDeliveryGuarantee: DeliveryExactlyOnce, OptOnAbortedTransaction: "fail"}},
		{opts: map[string]string{OptDeliveryGuarantee: DeliveryExactlyOnce, OptOnAbortedTransaction: "LOG_AND_CONTINUE"}, cont: true},
		{opts: map[string]string{OptDeliveryGuarantee: DeliveryExactlyOnce, OptOnAbortedTransaction: "ignore"},
			want: "Invalid value for option 'sink.on-aborted-transaction'. Expected one of [FAIL, LOG_AND_CONTINUE], but was: ignore"},
		{opts: map[string]string{OptOnAbortedTransaction: "FAIL"},
			want: "Option 'sink.on-aborted-transaction' applies only to 'sink.delivery-guarantee' = 'exactly-once', but the sink's delivery guarantee is 'at-least-once'."},
	} {
		opts := map[string]string{"topic": txnTopic, "format": "csv", OptTransactionalIDPrefix: "p"}
		for k, v := range tc.opts {
			opts[k] = v
		}
		s, err := NewFactory().CreateSink(tableContext("localhost:9092", eventSchema, opts))
		if tc.want != "" {
			if err == nil || err.Error() != tc.want {
				t.Fatalf("%v: %v, want %q", tc.opts, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.opts, err)
		}
		w, err := NewTransactionalWriter(TxnConfig{Sink: s.(*Sink), Subtask: 0, Parallelism: 1})
		if err != nil {
			t.Fatal(err)
		}
		if w.cfg.ContinueOnAbort != tc.cont {
			t.Errorf("%v: continue %t, want %t", tc.opts, w.cfg.ContinueOnAbort, tc.cont)
		}
	}
}
