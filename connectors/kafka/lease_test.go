package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests of the transactional-id prefix lease (issue 9 item 8): two jobs
// with one prefix in different sessions or processes.

func leaseOpts(owner string, log *txnLog) LeaseOptions {
	return LeaseOptions{Owner: owner, Renew: 50 * time.Millisecond, Expiry: 10 * time.Second, Logf: log.logf}
}

func acquireLease(t testing.TB, addr, prefix string, opts LeaseOptions) (*PrefixLease, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return acquirePrefixLease(ctx, []kgo.Opt{kgo.SeedBrokers(addr)}, prefix, opts)
}

// writeLeaseRecord appends a lease record as another run would have left it.
func writeLeaseRecord(t testing.TB, addr, prefix string, r leaseRecord, ts time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v, _ := json.Marshal(r)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, LeaseTopic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: LeaseTopic, Key: []byte(prefix), Value: v, Timestamp: ts}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseLiveHolderRefused: a second job (here a second lease in the same
// process, as a second session would take it) is refused while the first
// renews, with an error that names the prefix and the holder.
func TestLeaseLiveHolderRefused(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	a, err := acquireLease(t, addr, "orders", leaseOpts("job 'first'", &txnLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	_, err = acquireLease(t, addr, "orders", leaseOpts("job 'second'", &txnLog{}))
	if e := errContains(err, "The 'sink.transactional-id-prefix' 'orders' is in use by another running job: job 'first'",
		"give this sink a 'sink.transactional-id-prefix' of its own"); e != nil {
		t.Fatal(e)
	}
	// Another prefix is free.
	c, err := acquireLease(t, addr, "orders-2", leaseOpts("job 'third'", &txnLog{}))
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
}

// TestLeaseReleasedIsFree: a job that ended released its prefix; the next
// one takes it without waiting for an expiry (Expiry is far beyond the
// test's timeout).
func TestLeaseReleasedIsFree(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	opts := leaseOpts("job 'first'", &txnLog{})
	opts.Expiry = time.Hour
	a, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	log := &txnLog{}
	opts = leaseOpts("job 'second'", log)
	opts.Expiry = time.Hour
	b, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if log.String() != "" {
		t.Errorf("log: %s", log)
	}
}

// TestLeaseCrashedHolderOnThisHost: the holder was killed (its process on
// this host is gone): its lease is taken over at once, so that the new run
// can fence its lingering transactions.
func TestLeaseCrashedHolderOnThisHost(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	writeLeaseRecord(t, addr, "orders", leaseRecord{Run: "crashed", Held: true, Owner: "job 'old'", Host: host, PID: dead.Process.Pid,
		PIDNS: pidNamespace(), Started: time.Now(), RenewMs: 50}, time.Now())
	log := &txnLog{}
	opts := leaseOpts("job 'new'", log)
	opts.Expiry = time.Hour
	b, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !strings.Contains(log.String(), "its holder job 'old'") || !strings.Contains(log.String(), "no longer runs") {
		t.Errorf("log: %s", log)
	}
}

// TestLeaseDeadPIDOfAnotherNamespace: a holder on this host name whose PID
// does not exist here, but in another PID namespace (a container sharing
// the host name), may be alive: it is waited for like a remote one.
func TestLeaseDeadPIDOfAnotherNamespace(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	writeLeaseRecord(t, addr, "orders", leaseRecord{Run: "contained", Held: true, Owner: "job 'old'", Host: host, PID: dead.Process.Pid,
		PIDNS: "pid:[1]", Started: time.Now(), RenewMs: 50}, time.Now())
	log := &txnLog{}
	opts := leaseOpts("job 'new'", log)
	opts.Expiry = 300 * time.Millisecond
	b, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !strings.Contains(log.String(), "did not renew its lease for 300ms") {
		t.Errorf("log: %s", log)
	}
}

// TestLeaseCrashedHolderElsewhere: the holder ran on another host and
// stopped renewing: the new run waits for one expiry, then takes over.
func TestLeaseCrashedHolderElsewhere(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	writeLeaseRecord(t, addr, "orders", leaseRecord{Run: "crashed", Held: true, Owner: "job 'old'", Host: "elsewhere", PID: 1,
		Started: time.Now(), RenewMs: 50}, time.Now())
	log := &txnLog{}
	opts := leaseOpts("job 'new'", log)
	opts.Expiry = 300 * time.Millisecond
	b, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !strings.Contains(log.String(), "did not renew its lease for 300ms; taking it over") {
		t.Errorf("log: %s", log)
	}
}

// TestLeaseStaleHolder: the holder's last renewal is older than expiry +
// the allowed clock skew by this host's clock: taken over without waiting.
// A record older than that by more than a minute is not even read.
func TestLeaseStaleHolder(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	writeLeaseRecord(t, addr, "orders", leaseRecord{Run: "ancient", Held: true, Owner: "job 'ancient'", Host: "elsewhere", PID: 1,
		Started: time.Now().Add(-5 * time.Hour), RenewMs: 50}, time.Now().Add(-3*time.Hour))
	// Expiry 1 h + skew 1 min: 30 s past stale.
	writeLeaseRecord(t, addr, "orders", leaseRecord{Run: "crashed", Held: true, Owner: "job 'old'", Host: "elsewhere", PID: 1,
		Started: time.Now().Add(-3 * time.Hour), RenewMs: 50}, time.Now().Add(-time.Hour-90*time.Second))
	log := &txnLog{}
	opts := leaseOpts("job 'new'", log)
	opts.Expiry = time.Hour
	b, err := acquireLease(t, addr, "orders", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !strings.Contains(log.String(), "its holder job 'old'") || !strings.Contains(log.String(), "last renewed at") {
		t.Errorf("log: %s", log)
	}
}

// TestLeaseConcurrentClaims: job C claims the prefix after job B read the
// lease topic but before B's claim; C's claim comes first, so B gives up
// and C keeps the prefix.
func TestLeaseConcurrentClaims(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	var c *PrefixLease
	var cerr error
	opts := leaseOpts("job 'B'", &txnLog{})
	opts.beforeClaim = func() { c, cerr = acquireLease(t, addr, "orders", leaseOpts("job 'C'", &txnLog{})) }
	_, err := acquireLease(t, addr, "orders", opts)
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer c.Release()
	if e := errContains(err, "'orders' is in use by another running job: job 'C'"); e != nil {
		t.Fatal(e)
	}
	// C ignores B's losing claim: a fourth job is refused in C's name.
	_, err = acquireLease(t, addr, "orders", leaseOpts("job 'D'", &txnLog{}))
	if e := errContains(err, "'orders' is in use by another running job: job 'C'"); e != nil {
		t.Fatal(e)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseTakeoverFailsTheSink: another job took the prefix over (this
// job had stopped renewing long enough, e.g. paused); the sink's next
// pre-commit fails with an error naming the prefix.
func TestLeaseTakeoverFailsTheSink(t *testing.T) {
	_, addr := startTxnClusterWith(t)
	s := txnSink(t, addr, nil)
	log := &txnLog{}
	release, err := s.acquirePrefixLease(context.Background(), leaseOpts("job 'mine'", log))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	w := newTxnWriter(t, s, 0, 1, nil)
	openTxnWriter(t, w)
	defer w.Close()
	commit(t, w, prepare(t, w, 1))
	l := s.lease.Load()
	writeLeaseRecord(t, addr, txnPrefix, leaseRecord{Run: "taker", Held: true, Basis: l.claim + 1, Owner: "job 'taker'",
		Host: "elsewhere", PID: 1, Started: time.Now()}, time.Now())
	select {
	case <-l.Lost():
	case <-time.After(testTimeout):
		t.Fatalf("the takeover was not noticed; log:\n%s", log)
	}
	_, err = w.PrepareCommit(2)
	if e := errContains(err, "The 'sink.transactional-id-prefix' 'job' was taken over by another job, job 'taker'"); e != nil {
		t.Fatal(e)
	}
}

// TestLeaseTopicNotYetKnown: right after the lease topic's creation a broker
// may answer UNKNOWN_TOPIC_OR_PARTITION; the claim retries instead of
// failing the job's start.
func TestLeaseTopicNotYetKnown(t *testing.T) {
	c, addr := startTxnClusterWith(t)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if refused.Load() == 2 {
			return nil, nil, false
		}
		c.KeepControl()
		refused.Add(1)
		return refusedListOffsets(req, kerr.UnknownTopicOrPartition.Code), nil, true
	})
	l, err := acquireLease(t, addr, "orders", leaseOpts("job 'new'", &txnLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if n := refused.Load(); n != 2 {
		t.Fatalf("%d ListOffsets refused, want 2", n)
	}
}

// TestLeaseStaleWhenRenewalsFail: a holder that cannot renew (here every
// ListOffsets request of the renewal fails) stops relying on the lease a
// renewal interval before others would take it over (Expiry), so its sink
// pre-commits nothing a taker would fence; once renewals work again (and
// nobody took over) it holds the lease again.
func TestLeaseStaleWhenRenewalsFail(t *testing.T) {
	c, addr := startTxnClusterWith(t)
	log := &txnLog{}
	events := make(chan string, 16)
	logf := func(format string, args ...any) {
		log.logf(format, args...)
		msg := fmt.Sprintf(format, args...)
		for _, e := range []string{"could not be renewed for", "is renewed again"} {
			if strings.Contains(msg, e) {
				events <- e
			}
		}
	}
	opts := LeaseOptions{Owner: "job 'mine'", Renew: 50 * time.Millisecond, Expiry: 500 * time.Millisecond, Logf: logf}
	l, err := acquireLease(t, addr, txnPrefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.Err() != nil {
		t.Fatalf("not held right after the claim: %v", l.Err())
	}
	var failing atomic.Bool
	failing.Store(true)
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() {
			return nil, nil, false
		}
		return refusedListOffsets(req, kerr.NotLeaderForPartition.Code), nil, true
	})
	await := func(want string) {
		t.Helper()
		select {
		case e := <-events:
			if e != want {
				t.Fatalf("event %q, want %q; log:\n%s", e, want, log)
			}
		case <-time.After(testTimeout):
			t.Fatalf("no %q; log:\n%s", want, log)
		}
	}
	await("could not be renewed for")
	if e := errContains(l.Err(), "pre-commits nothing until it is renewed"); e != nil {
		t.Fatal(e)
	}
	failing.Store(false)
	await("is renewed again")
	if err := l.Err(); err != nil {
		t.Fatalf("renewed, but: %v", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("a stale lease was given up for good")
	default:
	}
}

// refusedListOffsets answers a ListOffsets request with code for every
// partition it asks about.
func refusedListOffsets(req kmsg.Request, code int16) kmsg.Response {
	r := req.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
