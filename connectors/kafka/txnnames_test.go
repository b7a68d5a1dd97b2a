package kafka

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Tests of the transactional-id naming strategies and of the fencing of
// lingering transactions (issue 9 item 7).

// startTxnClusterWith is startTxnCluster with extra broker options; it
// returns the cluster too, for request interception.
func startTxnClusterWith(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	opts = append([]kfake.Opt{kfake.Ports(0), kfake.SeedTopics(txnPartitions, txnTopic),
		kfake.BrokerConfigs(map[string]string{"transaction.max.timeout.ms": "900000"})}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, c.ListenAddrs()[0]
}

// newTxnWriterP is newTxnWriter for subtask of parallelism.
func newTxnWriterP(t testing.TB, s *Sink, subtask, parallelism int, next exec.CheckpointID, log *txnLog) *TransactionalWriter {
	t.Helper()
	cfg := TxnConfig{Sink: s, Subtask: subtask, Parallelism: parallelism, NextCheckpointID: next}
	if log != nil {
		cfg.Logf = log.logf
	}
	w, err := NewTransactionalWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// openIDs returns the transactional ids with prefix whose transaction is open.
func openIDs(t testing.TB, addr, prefix string) []string {
	t.Helper()
	open, err := ListTransactions(context.Background(), addr, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range open {
		ids = append(ids, o.TransactionalID)
	}
	return ids
}

// knownIDs returns every transactional id starting with prefix+"-" that the
// broker keeps state for, open or not: the broker memory a naming strategy
// costs.
func knownIDs(t testing.TB, addr, prefix string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range listed.Sorted() {
		if strings.HasPrefix(l.TxnID, prefix+"-") {
			ids = append(ids, l.TxnID)
		}
	}
	sort.Strings(ids)
	return ids
}

// TestTxnFreshStartFencesRemovedSubtasks: a run with sink parallelism 4
// crashes with transactions open on every subtask; a fresh start (no
// checkpoint) with parallelism 2 must abort those of subtasks 2 and 3 too,
// which no subtask of the new run is named after (Flink: subtask i owns the
// old subtasks j with j mod 2 = i). Otherwise they hold back read_committed
// readers until transaction.timeout.ms.
func TestTxnFreshStartFencesRemovedSubtasks(t *testing.T) {
	for _, probing := range []bool{false, true} {
		t.Run(fmt.Sprintf("withoutListTransactions=%v", probing), func(t *testing.T) {
			var opts []kfake.Opt
			if probing {
				// Kafka 2.8 has no ListTransactions: recovery probes.
				opts = append(opts, kfake.MaxVersions(kversion.V2_8_0()))
			}
			_, addr := startTxnClusterWith(t, opts...)
			s := txnSink(t, addr, nil)
			for sub := 0; sub < 4; sub++ {
				a := newTxnWriterP(t, s, sub, 4, 1, nil)
				openTxnWriter(t, a)
				writeNames(t, a, 10*sub, "pending")
				prepare(t, a, 1) // checkpoint 1 never completes
				writeNames(t, a, 10*sub+1, "open")
				if err := a.flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				a.crash()
			}
			if !probing {
				expectStrings(t, "open before the restart", openIDs(t, addr, txnPrefix),
					"job-0-1", "job-0-2", "job-1-1", "job-1-2", "job-2-1", "job-2-2", "job-3-1", "job-3-2")
			}
			log := &txnLog{}
			var ws []*TransactionalWriter
			for sub := 0; sub < 2; sub++ {
				b := newTxnWriterP(t, s, sub, 2, 1, log)
				openTxnWriter(t, b)
				defer b.Close()
				ws = append(ws, b)
			}
			for _, id := range []string{"job-2-1", "job-2-2", "job-3-1", "job-3-2"} {
				if !strings.Contains(log.String(), "fenced transactional id "+id) {
					t.Errorf("log does not mention fencing %s:\n%s", id, log)
				}
			}
			if !probing {
				if ids := openIDs(t, addr, txnPrefix); len(ids) != 0 {
					t.Fatalf("still open after the fresh start with parallelism 2: %v", ids)
				}
			}
			writeNames(t, ws[0], 100, "new0")
			writeNames(t, ws[1], 200, "new1")
			commit(t, ws[0], prepare(t, ws[0], 1))
			commit(t, ws[1], prepare(t, ws[1], 1))
			// drain times out if any old transaction is still open.
			expectStrings(t, "read_committed", drain(t, addr, true), "100,new0", "200,new1")
		})
	}
}

// TestTxnRestoreFencesPrefixOfCheckpoint: the job is restored from
// checkpoint 1 with a changed 'sink.transactional-id-prefix'. The
// transactions the crashed attempt opened after checkpoint 1 carry the old
// prefix (recorded in the restored committables) and must be aborted too.
func TestTxnRestoreFencesPrefixOfCheckpoint(t *testing.T) {
	for _, viaRecover := range []bool{false, true} {
		t.Run(fmt.Sprintf("RecoverTransactions=%v", viaRecover), func(t *testing.T) {
			_, addr := startTxnClusterWith(t)
			old := txnSink(t, addr, map[string]string{OptTransactionalIDPrefix: "old"})
			a := newTxnWriter(t, old, 0, 1, nil)
			openTxnWriter(t, a)
			writeNames(t, a, 1, "a", "b")
			c1 := prepare(t, a, 1)
			writeNames(t, a, 3, "c")
			prepare(t, a, 2)
			writeNames(t, a, 4, "d")
			if err := a.flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			a.crash()
			expectStrings(t, "open after the crash", openIDs(t, addr, "old"), "old-0-1", "old-0-2", "old-0-3")

			renamed := txnSink(t, addr, map[string]string{OptTransactionalIDPrefix: "new"})
			log := &txnLog{}
			var b *TransactionalWriter
			if viaRecover {
				n, err := RecoverTransactions(context.Background(), TxnConfig{Sink: renamed, Logf: log.logf},
					[]exec.Committable{c1.Encode()}, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				if n != 2 {
					t.Errorf("RecoverTransactions aborted %d lingering transactions, want 2 (old-0-2, old-0-3)", n)
				}
				b = newTxnWriter(t, renamed, 0, 2, log)
			} else {
				b = newTxnWriter(t, renamed, 0, 0, log)
				commit(t, b, c1)
			}
			openTxnWriter(t, b)
			defer b.Close()
			if ids := openIDs(t, addr, "old"); len(ids) != 0 {
				t.Fatalf("transactions of the restored checkpoint's prefix still open: %v\nlog:\n%s", ids, log)
			}
			if !strings.Contains(log.String(), "fenced transactional id old-0-3") {
				t.Errorf("log does not mention fencing old-0-3:\n%s", log)
			}
			writeNames(t, b, 5, "e")
			commit(t, b, prepare(t, b, 2))
			expectStrings(t, "read_committed", drain(t, addr, true), "1,a", "2,b", "5,e")
		})
	}
}

// initProducerIDs records the transactional ids of the InitProducerID
// requests the cluster receives (the fences and producer initialisations).
type initProducerIDs struct {
	mu  sync.Mutex
	ids []string
	on  bool
}

func (r *initProducerIDs) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r.mu.Lock()
		defer r.mu.Unlock()
		if id := req.(*kmsg.InitProducerIDRequest).TransactionalID; r.on && id != nil {
			r.ids = append(r.ids, *id)
		}
		return nil, nil, false
	})
}

func (r *initProducerIDs) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.ids = true, nil
}

func (r *initProducerIDs) distinct() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, id := range r.ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// TestTxnFreshStartDoesNotProbeEveryID: after a run that used transactional
// ids job-0-1 … job-0-30 (all committed) and crashed with job-0-31 open, a
// fresh start must not send an InitProducerID for every id the old run
// used: it fences the open job-0-31 and initialises job-0-32, the first id
// after every id the brokers list (an id the old run used is never reused:
// see TransactionalWriter.Open), nothing else.
func TestTxnFreshStartDoesNotProbeEveryID(t *testing.T) {
	c, addr := startTxnClusterWith(t)
	var rec initProducerIDs
	rec.watch(c)
	s := txnSink(t, addr, nil)
	a := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, a)
	for n := 1; n <= 30; n++ {
		writeNames(t, a, n, "x")
		commit(t, a, prepare(t, a, exec.CheckpointID(n)))
	}
	writeNames(t, a, 31, "open")
	if err := a.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.crash()

	rec.start()
	log := &txnLog{}
	b := newTxnWriter(t, s, 0, 1, log)
	openTxnWriter(t, b)
	defer b.Close()
	expectStrings(t, "InitProducerID requests of the fresh start", rec.distinct(), "job-0-31", "job-0-32")
	if ids := openIDs(t, addr, txnPrefix); len(ids) != 0 {
		t.Fatalf("still open: %v", ids)
	}
}

// TestTxnPoolingBoundsTransactionalIDs: with 'POOLING' a subtask reuses the
// transactional id of a transaction once it is committed. Commits here lag
// one checkpoint behind the pre-commit (the runtime commits checkpoint n
// after the transaction of n+1 opened), so at most three ids are in use at
// once: the one being committed, the pre-committed one and the open one.
// Over 40 checkpoints the broker knows exactly job-0-0, job-0-1 and job-0-2
// (INCREMENTING would leave 41), and the output is exactly-once.
func TestTxnPoolingBoundsTransactionalIDs(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	s := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "pooling"})
	w := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()
	var want []string
	var pending *TxnCommittable
	for n := 1; n <= 40; n++ {
		writeNames(t, w, n, fmt.Sprintf("r%d", n))
		want = append(want, fmt.Sprintf("%d,r%d", n, n))
		c := prepare(t, w, exec.CheckpointID(n))
		if !c.Pooled {
			t.Fatalf("committable of checkpoint %d is not marked pooled: %+v", n, c)
		}
		if pending != nil {
			commit(t, w, *pending)
		}
		pending = &c
	}
	commit(t, w, *pending)
	expectStrings(t, "transactional ids known to the broker", knownIDs(t, addr, txnPrefix), "job-0-0", "job-0-1", "job-0-2")
	expectStrings(t, "read_committed", drain(t, addr, true), sorted(want)...)
}

// TestTxnIncrementingUsesCheckpointIDs is the baseline for the test above:
// the default strategy names every transaction after its checkpoint.
func TestTxnIncrementingUsesCheckpointIDs(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	s := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "INCREMENTING"})
	w := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()
	for n := 1; n <= 3; n++ {
		writeNames(t, w, n, "x")
		c := prepare(t, w, exec.CheckpointID(n))
		if c.TransactionalID != fmt.Sprintf("job-0-%d", n) || c.Pooled {
			t.Fatalf("committable of checkpoint %d: %+v", n, c)
		}
		commit(t, w, c)
	}
}

// TestTxnPoolingRestore: a pooled writer crashes with checkpoint 1's
// transaction (job-0-0) pre-committed and completed but not committed,
// checkpoint 2's (job-0-1) pre-committed, and job-0-2 open. The restore from
// checkpoint 1 commits job-0-0, aborts job-0-1 and job-0-2, and the new
// attempt reuses the pool from job-0-0.
func TestTxnPoolingRestore(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	s := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "POOLING"})
	a := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, a)
	writeNames(t, a, 1, "a")
	c1 := prepare(t, a, 1)
	writeNames(t, a, 2, "b")
	c2 := prepare(t, a, 2)
	writeNames(t, a, 3, "c")
	if err := a.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.crash()
	if c1.TransactionalID != "job-0-0" || c2.TransactionalID != "job-0-1" {
		t.Fatalf("pooled committables: %+v %+v", c1, c2)
	}
	expectStrings(t, "open after the crash", openIDs(t, addr, txnPrefix), "job-0-0", "job-0-1", "job-0-2")

	log := &txnLog{}
	b := newTxnWriter(t, s, 0, 0, log)
	commit(t, b, c1)
	openTxnWriter(t, b)
	defer b.Close()
	if ids := openIDs(t, addr, txnPrefix); len(ids) != 0 {
		t.Fatalf("still open after the restore: %v\n%s", ids, log)
	}
	if b.curTxnID != "job-0-0" {
		t.Errorf("restored writer's first transactional id is %s, want job-0-0", b.curTxnID)
	}
	writeNames(t, b, 4, "d")
	commit(t, b, prepare(t, b, 2))
	expectStrings(t, "read_committed", drain(t, addr, true), "1,a", "4,d")
	expectStrings(t, "transactional ids known to the broker", knownIDs(t, addr, txnPrefix), "job-0-0", "job-0-1", "job-0-2")
}

// TestTxnPoolingRestoreAfterIDReuse: checkpoint 1's transaction (job-0-0)
// was committed and its id reused for the open transaction after
// checkpoint 2 before the crash. The restore from checkpoint 1 finds job-0-0
// under a newer epoch: its commit ended before (logged), and the reused
// id's open transaction and checkpoint 2's job-0-1 are aborted.
func TestTxnPoolingRestoreAfterIDReuse(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	s := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "POOLING"})
	a := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, a)
	writeNames(t, a, 1, "a")
	c1 := prepare(t, a, 1)
	commit(t, a, c1)
	writeNames(t, a, 2, "b")
	c2 := prepare(t, a, 2)
	writeNames(t, a, 3, "c")
	if err := a.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c1.TransactionalID != "job-0-0" || c2.TransactionalID != "job-0-1" || a.curTxnID != "job-0-0" {
		t.Fatalf("pool: c1 %+v, c2 %+v, open %s", c1, c2, a.curTxnID)
	}
	a.crash()

	log := &txnLog{}
	b := newTxnWriter(t, s, 0, 0, log)
	commit(t, b, c1)
	openTxnWriter(t, b)
	defer b.Close()
	if ids := openIDs(t, addr, txnPrefix); len(ids) != 0 {
		t.Fatalf("still open after the restore: %v\n%s", ids, log)
	}
	expectStrings(t, "read_committed", drain(t, addr, true), "1,a")
}

// TestTxnPoolingNeedsListTransactions: without ListTransactions (Kafka
// before 3.0) pooled ids cannot be recovered; the writer refuses to open.
func TestTxnPoolingNeedsListTransactions(t *testing.T) {
	_, addr := startTxnClusterWith(t, kfake.MaxVersions(kversion.V2_8_0()))
	s := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "POOLING"})
	w := newTxnWriter(t, s, 0, 1, nil)
	defer w.Close()
	err := w.Open(context.Background())
	if e := errContains(err, "'sink.transaction-naming-strategy' = 'POOLING' needs brokers that support ListTransactions", "use 'sink.transaction-naming-strategy' = 'INCREMENTING'"); e != nil {
		t.Fatal(e)
	}
	// The check before the job starts says the same.
	eo := txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: "POOLING", OptDeliveryGuarantee: DeliveryExactlyOnce})
	err = eo.ValidateStart(context.Background(), time.Second)
	if e := errContains(err, "'sink.transaction-naming-strategy' = 'POOLING' needs brokers that support ListTransactions"); e != nil {
		t.Fatal(e)
	}
	eo = txnSink(t, addr, map[string]string{OptDeliveryGuarantee: DeliveryExactlyOnce})
	if err := eo.ValidateStart(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestTxnSwitchNamingStrategyOnRestore: a checkpoint written with one
// strategy restores with the other; the restored committables commit and
// what the crashed attempt left open is aborted either way.
func TestTxnSwitchNamingStrategyOnRestore(t *testing.T) {
	for _, tc := range []struct{ from, to string }{{NamingIncrementing, NamingPooling}, {NamingPooling, NamingIncrementing}} {
		t.Run(tc.from+"-to-"+tc.to, func(t *testing.T) {
			_, addr := startTxnClusterWith(t)
			a := newTxnWriter(t, txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: tc.from}), 0, 1, nil)
			openTxnWriter(t, a)
			writeNames(t, a, 1, "a")
			c1 := prepare(t, a, 1)
			writeNames(t, a, 2, "b")
			prepare(t, a, 2)
			writeNames(t, a, 3, "c")
			if err := a.flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			a.crash()
			if n := len(openIDs(t, addr, txnPrefix)); n != 3 {
				t.Fatalf("%d open transactions after the crash, want 3", n)
			}
			log := &txnLog{}
			b := newTxnWriter(t, txnSink(t, addr, map[string]string{OptTransactionNamingStrategy: tc.to}), 0, 0, log)
			commit(t, b, c1)
			openTxnWriter(t, b)
			defer b.Close()
			if ids := openIDs(t, addr, txnPrefix); len(ids) != 0 {
				t.Fatalf("still open after the restore: %v\n%s", ids, log)
			}
			writeNames(t, b, 4, "d")
			commit(t, b, prepare(t, b, 2))
			writeNames(t, b, 5, "e")
			commit(t, b, prepare(t, b, 3))
			expectStrings(t, "read_committed", drain(t, addr, true), "1,a", "4,d", "5,e")
		})
	}
}

func TestTxnNamingStrategyOption(t *testing.T) {
	for _, tc := range []struct {
		value, want string
	}{
		{value: "POOLING", want: NamingPooling},
		{value: "incrementing", want: NamingIncrementing},
		{value: "", want: ""},
	} {
		opts := map[string]string{"topic": txnTopic, "format": "csv", OptTransactionalIDPrefix: "p"}
		if tc.value != "" {
			opts[OptTransactionNamingStrategy] = tc.value
		}
		s := mustSink(t, tableContext("localhost:9092", eventSchema, opts))
		if tc.want == "" {
			tc.want = NamingIncrementing
		}
		if s.naming != tc.want {
			t.Errorf("%q: naming %q, want %q", tc.value, s.naming, tc.want)
		}
	}
	opts := map[string]string{"topic": txnTopic, "format": "csv", OptTransactionNamingStrategy: "random"}
	_, err := NewFactory().CreateSink(tableContext("localhost:9092", eventSchema, opts))
	if e := errContains(err, "Invalid value for option 'sink.transaction-naming-strategy'. Expected one of [INCREMENTING, POOLING], but was: random"); e != nil {
		t.Fatal(e)
	}
}

// TestTxnCommittableNamingEncoding: the naming strategy travels in bit 1 of
// the flags byte. Committables of checkpoints written before (flags 0 or 1)
// decode unchanged, an INCREMENTING committable encodes as before, and
// unknown flags are refused.
func TestTxnCommittableNamingEncoding(t *testing.T) {
	// Version 1, flags 0, id "p-0-5", producer id 3, epoch 1, checkpoint 5
	// (zig-zag varints: 3 -> 6, 1 -> 2, 5 -> 10).
	old := exec.Committable("\x01\x00\x05p-0-5\x06\x02\x0a")
	c, err := DecodeTxnCommittable(old)
	if err != nil || !reflect.DeepEqual(c, TxnCommittable{TransactionalID: "p-0-5", ProducerID: 3, Epoch: 1, Checkpoint: 5}) {
		t.Fatalf("old committable: %+v, %v", c, err)
	}
	// Version 2 (topic and partitions) follows the same flags byte.
	if enc := c.Encode(); enc[0] != 2 || enc[1] != 0 {
		t.Fatalf("INCREMENTING committable encodes with version %d, flags %d; want 2 and 0", enc[0], enc[1])
	}
	c.Pooled = true
	if enc := c.Encode(); enc[1] != 2 {
		t.Fatalf("pooled flags byte %d, want 2", enc[1])
	}
	for _, p := range []TxnCommittable{c, {TransactionalID: "x-y-1-0", Pooled: true, Empty: true, Epoch: -1, ProducerID: -1, Checkpoint: 7}} {
		got, err := DecodeTxnCommittable(p.Encode())
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
	if _, err := DecodeTxnCommittable(exec.Committable("\x01\x04\x05p-0-5\x06\x02\x0a")); err == nil {
		t.Fatal("flags 4 decoded")
	}
	for _, tc := range []struct {
		id, prefix string
		sub        int
		n          int64
		ok         bool
	}{
		{"job-0-1", "job", 0, 1, true},
		{"a-b-3-99", "a-b", 3, 99, true},
		{"job-x-2-7", "job-x", 2, 7, true},
		{"job-1", "", 0, 0, false},
		{"job-a-1", "", 0, 0, false},
		{"-0-1", "", 0, 0, false},
	} {
		prefix, sub, n, ok := splitTransactionalID(tc.id)
		if prefix != tc.prefix || sub != tc.sub || n != tc.n || ok != tc.ok {
			t.Errorf("splitTransactionalID(%q) = %q %d %d %v", tc.id, prefix, sub, n, ok)
		}
	}
}
