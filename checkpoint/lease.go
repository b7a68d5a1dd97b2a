package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// A lease keeps two live runs of one named job from sharing its checkpoint
// directory on a storage without file locks (S3). It is one small object,
// .<job>.lease beside the job's directory, that records which run holds it
// and when that run last renewed it. It is only ever written with a
// conditional PUT: If-None-Match: * when there is none, If-Match: <ETag of
// what was read> otherwise, so of two runs racing for it exactly one wins.
// The holder renews it every TTL/3; a run that dies stops renewing, and
// another takes the lease over once it is older than the TTL (or at once when
// its holder is a dead process on the same host, or released it).
//
// A holder that cannot renew in time (a stalled process, a partition) stops
// writing and deleting checkpoint files (Check fails) before another run may
// consider the lease expired, so a second run never races a live one on the
// same files.

// ErrLeaseLost marks the errors of a run that no longer holds its job's
// lease: it must stop, another run may own the job's checkpoints now.
var ErrLeaseLost = errors.New("the job's checkpoint lease was lost")

// errPreconditionFailed is what a conditional write returns when the object
// is not in the state the condition names.
var errPreconditionFailed = errors.New("precondition failed")

// conditionalStorage is implemented by storages that can write an object
// only if it is absent or unchanged.
type conditionalStorage interface {
	// getETag reads an object and its ETag; exists is false for none.
	getETag(ctx context.Context, path string) (data []byte, etag string, exists bool, err error)
	// putIf writes data at path if the object's ETag is ifMatch, or, with
	// ifMatch "", if there is no object; otherwise it returns an error
	// wrapping errPreconditionFailed. It returns the new ETag.
	putIf(ctx context.Context, path string, data []byte, ifMatch string) (etag string, err error)
}

// DefaultLeaseTTL is how long a lease outlives its last renewal.
const DefaultLeaseTTL = 30 * time.Second

// LeaseOptions configure AcquireLease.
type LeaseOptions struct {
	// TTL is how long the lease stays valid after a renewal (DefaultLeaseTTL
	// when zero); it is renewed every TTL/3.
	TTL time.Duration
	// Where names the checkpoint directory in messages.
	Where string
	// Log receives warnings about failed renewals.
	Log io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// RenewEvery overrides the renewal period (tests).
	RenewEvery time.Duration
}

// Lease is a held lease. Release it when the run ends.
type Lease struct {
	cs    conditionalStorage
	path  string
	owner string
	ttl   time.Duration
	every time.Duration
	where string
	log   io.Writer
	now   func() time.Time

	mu      sync.Mutex
	etag    string
	renewed time.Time // local time of the last successful write
	lost    error

	stop chan struct{}
	done chan struct{}
}

type leaseRecord struct {
	Owner    string    `json:"owner"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	PIDNS    string    `json:"pidns,omitempty"` // the PID namespace the PID is in
	Renewed  time.Time `json:"renewed"`
	TTL      int64     `json:"ttlMillis"`
	Released bool      `json:"released,omitempty"`
}

// SupportsLease reports whether st can hold leases (S3 storages can).
func SupportsLease(st Storage) bool {
	_, ok := st.(conditionalStorage)
	return ok
}

// AcquireLease takes the lease of job in st, or fails with a message naming
// the live run that holds it. It starts renewing the lease in the
// background until Release.
func AcquireLease(ctx context.Context, st Storage, job string, opts LeaseOptions) (*Lease, error) {
	if err := validJobName(job); err != nil {
		return nil, err
	}
	cs, ok := st.(conditionalStorage)
	if !ok {
		return nil, fmt.Errorf("checkpoint storage %s cannot hold a lease (no conditional writes)", opts.Where)
	}
	l := &Lease{cs: cs, path: "." + job + ".lease", owner: newOwnerID(), ttl: opts.TTL, every: opts.RenewEvery,
		where: opts.Where, log: opts.Log, now: opts.Now, stop: make(chan struct{}), done: make(chan struct{})}
	if l.ttl <= 0 {
		l.ttl = DefaultLeaseTTL
	}
	if l.every <= 0 {
		l.every = l.ttl / 3
	}
	if l.log == nil {
		l.log = io.Discard
	}
	if l.now == nil {
		l.now = time.Now
	}
	// A few rounds: each lost race means another run wrote the lease just
	// now, and the next read shows whether it holds it.
	for range 5 {
		data, etag, exists, err := cs.getETag(ctx, l.path)
		if err != nil {
			return nil, fmt.Errorf("reading the lease of job %q: %w", job, err)
		}
		ifMatch := ""
		if exists {
			var rec leaseRecord
			if json.Unmarshal(data, &rec) == nil && rec.Owner != "" && l.live(&rec) {
				return nil, fmt.Errorf("another running job uses this name with checkpoint directory '%s' (process %d on host %s holds its lease, renewed %s; it expires %s after its last renewal if that process is gone); a named pipeline runs in one process at a time",
					opts.Where, rec.PID, rec.Host, rec.Renewed.UTC().Format(time.RFC3339), time.Duration(rec.TTL)*time.Millisecond)
			}
			// Released, expired, its owner dead, or not a lease record at
			// all: take it over, unless someone else does first.
			ifMatch = etag
		}
		err = l.write(ctx, ifMatch, false)
		if errors.Is(err, errPreconditionFailed) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("writing the lease of job %q: %w", job, err)
		}
		go l.renewLoop()
		return l, nil
	}
	return nil, fmt.Errorf("another running job uses this name with checkpoint directory '%s' (its lease keeps changing); a named pipeline runs in one process at a time", opts.Where)
}

// live reports whether rec is held by a run that may still be alive.
func (l *Lease) live(rec *leaseRecord) bool {
	if rec.Released {
		return false
	}
	if l.now().Sub(rec.Renewed) > time.Duration(rec.TTL)*time.Millisecond {
		return false
	}
	// A dead process on this host cannot renew: no need to wait out the TTL.
	// Only when its PID is one of this PID namespace (containers may share
	// a host name and not their PIDs).
	if host, _ := os.Hostname(); host != "" && rec.Host == host && rec.PIDNS != "" && rec.PIDNS == pidNamespace() &&
		rec.PID > 0 && rec.PID != os.Getpid() {
		if err := syscall.Kill(rec.PID, 0); errors.Is(err, syscall.ESRCH) {
			return false
		}
	}
	return true
}

// write stores this run's record with the condition ifMatch.
func (l *Lease) write(ctx context.Context, ifMatch string, released bool) error {
	host, _ := os.Hostname()
	now := l.now()
	rec := leaseRecord{Owner: l.owner, Host: host, PID: os.Getpid(), PIDNS: pidNamespace(), Renewed: now.UTC(), TTL: l.ttl.Milliseconds(), Released: released}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	etag, err := l.cs.putIf(ctx, l.path, data, ifMatch)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.etag, l.renewed = etag, now
	l.mu.Unlock()
	return nil
}

func (l *Lease) renewLoop() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.renew(context.Background())
		}
	}
}

// renew writes the lease again, if it is still this run's.
func (l *Lease) renew(ctx context.Context) {
	l.mu.Lock()
	etag, lost := l.etag, l.lost
	l.mu.Unlock()
	if lost != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, l.every)
	defer cancel()
	err := l.write(ctx, etag, false)
	switch {
	case err == nil:
	case errors.Is(err, errPreconditionFailed):
		l.mu.Lock()
		l.lost = fmt.Errorf("%w: another run took over the lease of %s in '%s'", ErrLeaseLost, l.path, l.where)
		l.mu.Unlock()
		fmt.Fprintf(l.log, "[ERROR] %v; this run stops writing checkpoints.\n", l.lost)
	default:
		fmt.Fprintf(l.log, "[WARN] Renewing the checkpoint lease %s in '%s' failed: %v\n", l.path, l.where, err)
	}
}

// Check returns nil while the run may write and delete the job's files: it
// renewed the lease recently enough that no other run can have taken it
// over. The margin of a third of the TTL (the renewal period) covers a
// clock that runs somewhat differently on the other run's host.
func (l *Lease) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if since := l.now().Sub(l.renewed); since > l.ttl-l.ttl/3 {
		return fmt.Errorf("%w: not renewed for %s (it expires after %s) in '%s'", ErrLeaseLost, since.Round(time.Millisecond), l.ttl, l.where)
	}
	return nil
}

// Lost returns the error of a lease another run took over, nil while this
// run may still hold it (a renewal that merely failed may succeed later).
func (l *Lease) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Release stops the renewals and marks the lease released, so the next run
// need not wait for it to expire.
func (l *Lease) Release() {
	l.stopRenewing()
	l.mu.Lock()
	etag, lost := l.etag, l.lost
	l.mu.Unlock()
	if lost != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	if err := l.write(ctx, etag, true); err != nil {
		fmt.Fprintf(l.log, "[WARN] Releasing the checkpoint lease %s in '%s' failed (it expires by itself after %s): %v\n", l.path, l.where, l.ttl, err)
	}
}

// stopRenewing ends the renewal goroutine and waits for it.
func (l *Lease) stopRenewing() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// pidNamespace identifies this process's PID namespace ("" where unknown).
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

func newOwnerID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
