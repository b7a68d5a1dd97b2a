package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Two jobs whose exactly-once sinks share a 'sink.transactional-id-prefix'
// fence each other's transactions: each one's recovery aborts what the other
// has open, and with equal subtask numbers their ids collide. Within one
// session the session refuses the second job; across sessions and processes
// a job holds a lease on its prefix, kept in a compacted topic of the
// cluster the sink writes to (LeaseTopic, one record per renewal, keyed by
// the prefix), and renews it every LeaseOptions.Renew.
//
// A job that finds the prefix's latest record held by another run must
// tell a live holder from a crashed one, whose lingering transactions it
// is to fence. It never trusts the holder's clock alone: it waits up to
// LeaseOptions.Expiry for the holder's next renewal, and fails with an
// error naming the prefix as soon as one arrives. It takes the prefix over
// without waiting when the holder released it (a job that ended), when the
// holder ran on this host and its process is gone (the common restart after
// a crash), or when the holder's last renewal is older than Expiry plus
// leaseClockSkew by this host's clock. Otherwise a takeover costs up to
// Expiry at start.
//
// Concurrent starts are ordered by the topic's single partition: a claim
// is won by the run whose record comes first after the records the runs
// read, and a run that finds another's claim between its read and its own
// claim gives up. A holder that later finds a claim made by a run that had
// read past the holder's own claim (it took over after the holder failed
// to renew for Expiry: a paused or partitioned process) has lost the
// prefix: its sinks fail their next checkpoint.

// LeaseTopic is the topic of the transactional-id prefix leases. The job
// creates it (one partition, cleanup.policy=compact) if it does not exist.
const LeaseTopic = "_flinksql_transactional_id_leases"

// leaseClockSkew is how far apart the clocks of two hosts may be for a
// holder's last renewal, by this host's clock, to prove it dead.
const leaseClockSkew = time.Minute

// leaseReadMargin is how much older than stale the oldest record is that a
// start reads.
const leaseReadMargin = time.Minute

// LeaseOptions tunes a prefix lease.
type LeaseOptions struct {
	// Owner describes the job for another job's error message.
	Owner string
	// Renew is the renewal interval; zero means 2 s.
	Renew time.Duration
	// Expiry is how long a job waits for a holder's renewal before it takes
	// the prefix over; zero means 5 × Renew.
	Expiry time.Duration
	// Logf receives the takeovers and renewal failures; nil discards them.
	Logf func(format string, args ...any)

	// beforeClaim, for tests, runs between the read and the claim.
	beforeClaim func()
}

// leaseRecord is the value of a lease record, JSON so that an operator can
// read it with any Kafka tool.
type leaseRecord struct {
	Run     string    `json:"run"`   // random id of the holding run
	Held    bool      `json:"held"`  // false: released
	Basis   int64     `json:"basis"` // offset up to which the claimer had read
	Owner   string    `json:"owner"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	PIDNS   string    `json:"pidns,omitempty"` // the PID namespace PID is in
	Started time.Time `json:"started"`
	RenewMs int64     `json:"renew_ms"`

	offset int64
	ts     time.Time
}

func (r *leaseRecord) describe() string {
	return fmt.Sprintf("%s (host %s, pid %d, started %s)", r.Owner, r.Host, r.PID, r.Started.UTC().Format(time.RFC3339))
}

// PrefixLease is a held lease on a transactional-id prefix.
type PrefixLease struct {
	prefix string
	opts   LeaseOptions
	cl     *kgo.Client
	self   leaseRecord
	claim  int64 // offset of the claim record

	mu     sync.Mutex
	lost   error         // set once another run took the prefix over
	stale  error         // set while renewals fail for longer than is safe
	lostCh chan struct{} // closed with lost set

	stop chan struct{}
	done chan struct{}
}

// AcquirePrefixLease claims the lease on transactional-id prefix prefix in
// the cluster at bootstrap for a job described by owner, or explains which
// running job holds it. Release ends it.
func AcquirePrefixLease(ctx context.Context, bootstrap, prefix, owner string) (*PrefixLease, error) {
	admin, err := newAdminClient(bootstrap)
	if err != nil {
		return nil, err
	}
	opts := admin.Opts()
	admin.Close()
	return acquirePrefixLease(ctx, opts, prefix, LeaseOptions{Owner: owner})
}

// acquirePrefixLease claims prefix for this run on the cluster the client
// options reach, or explains which running job holds it.
func acquirePrefixLease(ctx context.Context, clientOpts []kgo.Opt, prefix string, opts LeaseOptions) (*PrefixLease, error) {
	l, err := newPrefixLease(clientOpts, prefix, opts)
	if err != nil {
		return nil, err
	}
	if err := l.acquire(ctx); err != nil {
		l.cl.Close()
		return nil, err
	}
	go l.renew()
	return l, nil
}

// newPrefixLease returns the unclaimed lease of a new run on prefix.
func newPrefixLease(clientOpts []kgo.Opt, prefix string, opts LeaseOptions) (*PrefixLease, error) {
	if opts.Renew <= 0 {
		opts.Renew = 2 * time.Second
	}
	if opts.Expiry <= 0 {
		opts.Expiry = 5 * opts.Renew
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if prefix == "" {
		return nil, errors.New(prefixRequiredMessage)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	l := &PrefixLease{prefix: prefix, opts: opts,
		self: leaseRecord{Run: hex.EncodeToString(id[:]), Held: true, Owner: opts.Owner, Host: host, PID: os.Getpid(),
			PIDNS: pidNamespace(), Started: time.Now(), RenewMs: opts.Renew.Milliseconds()},
		stop: make(chan struct{}), done: make(chan struct{}), lostCh: make(chan struct{})}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), clientOpts...),
		kgo.DefaultProduceTopic(LeaseTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	l.cl = cl
	return l, nil
}

// LivePrefixHolder describes the running job that holds the lease on
// transactional-id prefix prefix in the cluster at bootstrap (host:port,
// comma separated), or returns "" when no job does. Like a starting job it
// may wait up to one lease expiry (10 s) for the holder's renewal.
func LivePrefixHolder(ctx context.Context, bootstrap, prefix string) (string, error) {
	admin, err := newAdminClient(bootstrap)
	if err != nil {
		return "", err
	}
	opts := admin.Opts()
	admin.Close()
	l, err := newPrefixLease(opts, prefix, LeaseOptions{})
	if err != nil {
		return "", err
	}
	defer l.cl.Close()
	ctx, cancel := context.WithTimeout(ctx, adminTimeout+l.opts.Expiry)
	defer cancel()
	end, err := l.endOffset(ctx)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return "", nil // no job ever held a lease here
	}
	if err != nil {
		return "", err
	}
	holder, _, err := l.liveHolder(ctx, end)
	if err != nil || holder == nil {
		return "", err
	}
	return holder.describe(), nil
}

func (l *PrefixLease) inUse(r *leaseRecord) error {
	return fmt.Errorf("The 'sink.transactional-id-prefix' '%s' is in use by another running job: %s renews its lease on it (topic %s). Two exactly-once sinks with the same prefix abort each other's transactions; give this sink a 'sink.transactional-id-prefix' of its own, or stop the other job first.",
		l.prefix, r.describe(), LeaseTopic)
}

func (l *PrefixLease) acquire(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout+l.opts.Expiry)
	defer cancel()
	if err := l.ensureTopic(ctx); err != nil {
		return err
	}
	end, err := l.endOffsetOfNewTopic(ctx)
	if err != nil {
		return err
	}
	holder, pos, err := l.liveHolder(ctx, end)
	if err != nil {
		return err
	}
	if holder != nil {
		return l.inUse(holder)
	}
	if l.opts.beforeClaim != nil {
		l.opts.beforeClaim()
	}
	l.self.Basis = pos
	if l.claim, err = l.write(ctx, l.self); err != nil {
		return err
	}
	var rival *leaseRecord
	err = l.read(ctx, pos, l.claim, func(r *leaseRecord) {
		if rival == nil && r.Held && r.Run != l.self.Run {
			rival = r
		}
	})
	if err != nil {
		return err
	}
	if rival != nil {
		return l.inUse(rival)
	}
	return nil
}

// liveHolder reads the lease topic up to end and returns the record of the
// live run holding the prefix, if any, and the offset up to which it read.
func (l *PrefixLease) liveHolder(ctx context.Context, end int64) (*leaseRecord, int64, error) {
	// Records older than the stale age are read only to be ignored: start
	// a margin before it, so that a start costs the same however long the
	// topic is (it is compacted, but renewals pile up until then).
	from, err := l.offsetAfter(ctx, time.Now().Add(-(l.opts.Expiry + leaseClockSkew + leaseReadMargin)), end)
	if err != nil {
		return nil, 0, err
	}
	var last *leaseRecord
	if err := l.read(ctx, from, end, func(r *leaseRecord) { last = r }); err != nil {
		return nil, 0, err
	}
	pos := end
	if last == nil || !last.Held || last.Run == l.self.Run {
		return nil, pos, nil
	}
	switch {
	case l.deadOnThisHost(last):
		l.opts.Logf("transactional-id prefix %q: its holder %s no longer runs; taking it over", l.prefix, last.describe())
		return nil, pos, nil
	case time.Since(last.ts) > l.opts.Expiry+leaseClockSkew:
		l.opts.Logf("transactional-id prefix %q: its holder %s last renewed at %s; taking it over",
			l.prefix, last.describe(), last.ts.UTC().Format(time.RFC3339))
		return nil, pos, nil
	}
	// Live holders renew within Renew; a crashed one never does.
	wctx, wcancel := context.WithTimeout(ctx, l.opts.Expiry)
	var newer *leaseRecord
	pos, err = l.watch(wctx, pos, func(r *leaseRecord) bool { newer = r; return true })
	wcancel()
	if err != nil {
		return nil, pos, err
	}
	if newer != nil && newer.Held {
		return newer, pos, nil
	}
	if newer == nil {
		l.opts.Logf("transactional-id prefix %q: its holder %s did not renew its lease for %s; taking it over",
			l.prefix, last.describe(), l.opts.Expiry)
	}
	return nil, pos, nil
}

// deadOnThisHost reports whether r's holder ran on this host in a process
// that no longer exists. Only a PID of this PID namespace proves it:
// containers may share a host name and not their processes.
func (l *PrefixLease) deadOnThisHost(r *leaseRecord) bool {
	if r.Host == "" || r.Host != l.self.Host || r.PID <= 0 || r.PID == l.self.PID ||
		r.PIDNS == "" || r.PIDNS != l.self.PIDNS {
		return false
	}
	return errors.Is(syscall.Kill(r.PID, 0), syscall.ESRCH)
}

// pidNamespace identifies this process's PID namespace ("" where unknown).
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

func (l *PrefixLease) ensureTopic(ctx context.Context) error {
	resp, err := kadm.NewClient(l.cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, LeaseTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		// A job allowed to use the topic but not to create topics finds
		// it created by an operator.
		if _, lerr := l.endOffset(ctx); lerr == nil {
			return nil
		}
		return fmt.Errorf("creating the lease topic %s for transactional-id prefix %q (create it with one partition and cleanup.policy=compact, and allow the job to read and write it): %w",
			LeaseTopic, l.prefix, err)
	}
	return nil
}

func (l *PrefixLease) endOffset(ctx context.Context) (int64, error) {
	ends, err := kadm.NewClient(l.cl).ListEndOffsets(ctx, LeaseTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("reading the end of lease topic %s: %w", LeaseTopic, err)
	}
	o, ok := ends.Lookup(LeaseTopic, 0)
	if !ok {
		return 0, fmt.Errorf("lease topic %s has no partition 0", LeaseTopic)
	}
	return o.Offset, nil
}

// endOffsetOfNewTopic is endOffset right after the topic's creation, which
// brokers may not know about yet: it retries until ctx ends.
func (l *PrefixLease) endOffsetOfNewTopic(ctx context.Context) (int64, error) {
	backoff := 20 * time.Millisecond
	for {
		end, err := l.endOffset(ctx)
		var ke *kerr.Error
		if err == nil || !errors.As(err, &ke) || !(ke.Retriable || errors.Is(err, kerr.UnknownTopicOrPartition)) {
			return end, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// offsetAfter is the offset of the first record of the lease topic written
// at t or later, or end if there is none.
func (l *PrefixLease) offsetAfter(ctx context.Context, t time.Time, end int64) (int64, error) {
	offs, err := kadm.NewClient(l.cl).ListOffsetsAfterMilli(ctx, t.UnixMilli(), LeaseTopic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("looking up recent records of lease topic %s: %w", LeaseTopic, err)
	}
	o, ok := offs.Lookup(LeaseTopic, 0)
	if !ok || o.Offset < 0 || o.Offset > end {
		return end, nil
	}
	return o.Offset, nil
}

// consumer reads partition 0 of the lease topic from offset from.
func (l *PrefixLease) consumer(from int64) (*kgo.Client, error) {
	opts := append(append([]kgo.Opt(nil), l.cl.Opts()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{LeaseTopic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.DisableFetchSessions()) // see consumerOpts
	return kgo.NewClient(opts...)
}

// read calls fn with the records of the prefix at offsets [from, until).
func (l *PrefixLease) read(ctx context.Context, from, until int64, fn func(*leaseRecord)) error {
	if from >= until {
		return nil
	}
	_, err := l.scan(ctx, from, func(r *leaseRecord) bool {
		if r.offset >= until {
			return true
		}
		if r.Run != "" {
			fn(r)
		}
		return r.offset+1 >= until
	}, until)
	return err
}

// watch calls fn with the records of the prefix from offset from on until
// fn returns true or ctx ends, and returns the offset after the last record
// seen. The end of ctx is not an error.
func (l *PrefixLease) watch(ctx context.Context, from int64, fn func(*leaseRecord) bool) (int64, error) {
	next, err := l.scan(ctx, from, func(r *leaseRecord) bool { return r.Run != "" && fn(r) }, -1)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return next, nil
	}
	return next, err
}

// scan feeds every record from offset from to fn (Run empty for records of
// other prefixes or that do not decode) until fn returns true, or until
// the offset until-1 was fed when until >= 0. It returns the offset after
// the last record fed.
func (l *PrefixLease) scan(ctx context.Context, from int64, fn func(*leaseRecord) bool, until int64) (int64, error) {
	cons, err := l.consumer(from)
	if err != nil {
		return from, err
	}
	defer cons.Close()
	next := from
	err = l.scanWith(ctx, cons, &next, fn, until)
	return next, err
}

// scanWith is scan on a consumer positioned at *next, which it advances.
func (l *PrefixLease) scanWith(ctx context.Context, cons *kgo.Client, next *int64, fn func(*leaseRecord) bool, until int64) error {
	for until < 0 || *next < until {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, e := range fs.Errors() {
			if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
				return e.Err
			}
			return fmt.Errorf("reading lease topic %s: %w", LeaseTopic, e.Err)
		}
		stop := false
		fs.EachRecord(func(rec *kgo.Record) {
			if stop {
				return
			}
			r := &leaseRecord{}
			if string(rec.Key) != l.prefix || json.Unmarshal(rec.Value, r) != nil {
				r = &leaseRecord{}
			}
			r.offset, r.ts = rec.Offset, rec.Timestamp
			*next = rec.Offset + 1
			stop = fn(r)
		})
		if stop {
			return nil
		}
	}
	return nil
}

// write appends r under the prefix and returns its offset.
func (l *PrefixLease) write(ctx context.Context, r leaseRecord) (int64, error) {
	v, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	res := l.cl.ProduceSync(ctx, &kgo.Record{Key: []byte(l.prefix), Value: v, Partition: 0})
	rec, err := res.First()
	if err != nil {
		return 0, fmt.Errorf("writing the lease of transactional-id prefix %q to topic %s: %w", l.prefix, LeaseTopic, err)
	}
	return rec.Offset, nil
}

// renew renews the lease every Renew until Release, and watches for a
// takeover.
func (l *PrefixLease) renew() {
	defer close(l.done)
	next := l.claim + 1
	cons, err := l.consumer(next)
	if err != nil {
		// Without a watcher no takeover would be seen: give the prefix up
		// rather than go on as if it were held.
		l.markLost(fmt.Errorf("The lease of 'sink.transactional-id-prefix' '%s' cannot be watched (%v), so a takeover by another job would go unseen; the sink stops.", l.prefix, err))
		l.opts.Logf("%v", l.Err())
		return
	}
	defer cons.Close()
	t := time.NewTicker(l.opts.Renew)
	defer t.Stop()
	failing := false
	renewed := time.Now() // the claim
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		// A renewal later than Expiry is worthless: others took over.
		ctx, cancel := context.WithTimeout(context.Background(), l.opts.Expiry)
		go func() {
			select {
			case <-l.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		var taker *leaseRecord
		end, err := l.endOffset(ctx)
		if err == nil {
			err = l.scanWith(ctx, cons, &next, func(r *leaseRecord) bool {
				// A claim that had read past ours took over; one that had
				// not raced ours and lost.
				if taker == nil && r.Run != "" && r.Held && r.Run != l.self.Run && r.Basis > l.claim {
					taker = r
				}
				return false
			}, end)
		}
		if err == nil && taker != nil {
			l.markLost(fmt.Errorf("The 'sink.transactional-id-prefix' '%s' was taken over by another job, %s, after this job did not renew its lease for %s; two exactly-once sinks with the same prefix abort each other's transactions: give each its own prefix.",
				l.prefix, taker.describe(), l.opts.Expiry))
			cancel()
			l.opts.Logf("%v", l.Err())
			return
		}
		if err == nil {
			_, err = l.write(ctx, l.self)
		}
		cancel()
		if err == nil {
			renewed = time.Now()
			if l.setStale(nil) {
				l.opts.Logf("the lease of transactional-id prefix %q is renewed again; the sink goes on", l.prefix)
			}
		}
		if err != nil && !failing {
			l.opts.Logf("renewing the lease of transactional-id prefix %q: %v (retrying every %s)", l.prefix, err, l.opts.Renew)
		}
		failing = err != nil
		// Another job takes the prefix over once it saw no renewal for
		// Expiry; a renewal interval before that the sink stops
		// pre-committing transactions such a job would fence, until a
		// renewal succeeds again (and its scan saw no taker).
		if failing && time.Since(renewed) > l.opts.Expiry-l.opts.Renew {
			if l.setStale(fmt.Errorf("The lease of 'sink.transactional-id-prefix' '%s' could not be renewed for %s (%v); another job may take the prefix over and abort this job's transactions, so the sink pre-commits nothing until it is renewed.",
				l.prefix, time.Since(renewed).Round(time.Millisecond), err)) {
				l.opts.Logf("%v", l.Err())
			}
		}
	}
}

// setStale records (err != nil) or clears (nil) that the lease could not be
// renewed in time, and reports whether that changed.
func (l *PrefixLease) setStale(err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := (l.stale == nil) != (err == nil)
	l.stale = err
	return changed
}

// markLost records why the lease is lost, once.
func (l *PrefixLease) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
		close(l.lostCh)
	}
}

// Err is the reason the lease was lost, or why it cannot be relied on while
// renewals fail; nil while it is held.
func (l *PrefixLease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	return l.stale
}

// Lost is closed when another run took the prefix over.
func (l *PrefixLease) Lost() <-chan struct{} { return l.lostCh }

// Release stops renewing and, if the lease is still held, records that the
// prefix is free, so that the next job takes it at once.
func (l *PrefixLease) Release() error {
	close(l.stop)
	<-l.done
	defer l.cl.Close()
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	if lost != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	r := l.self
	r.Held = false
	_, err := l.write(ctx, r)
	return err
}
