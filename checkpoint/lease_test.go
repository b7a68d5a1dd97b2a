package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// leaseOpts never renews by itself (the test calls renew), so the test
// decides every write.
func leaseOpts(clock *testClock) LeaseOptions {
	return LeaseOptions{TTL: 30 * time.Second, RenewEvery: time.Hour, Where: "s3://ckpts/base/dir", Now: clock.now}
}

// TestLeaseOverHTTP: against an S3-compatible server over HTTP, a second run
// of a job is refused while the first renews its lease; it gets the lease
// once the first releases it, or once the first stops renewing (killed) and
// the lease expired; the first then knows it lost the lease.
func TestLeaseOverHTTP(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "s3")
	if !SupportsLease(st) {
		t.Fatal("the S3 storage does not support leases")
	}
	clock := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLease(ctx, st, testJob, leaseOpts(clock)); err == nil || !strings.Contains(err.Error(), "another running job uses this name") {
		t.Fatalf("second acquire while the first is live: %v", err)
	}
	// Another job is independent.
	other, err := AcquireLease(ctx, st, "other-job", leaseOpts(clock))
	if err != nil {
		t.Fatal(err)
	}
	other.Release()

	// 25 s later, after a renewal at 20 s, the lease is still live.
	clock.advance(20 * time.Second)
	a.renew(ctx)
	clock.advance(5 * time.Second)
	if err := a.Check(); err != nil {
		t.Fatalf("Check after a renewal 5 s ago: %v", err)
	}
	if _, err := AcquireLease(ctx, st, testJob, leaseOpts(clock)); err == nil {
		t.Fatal("acquired a lease renewed 5 s ago")
	}

	// Released: the next run takes it at once.
	a.Release()
	b, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}

	// b is killed: it stops renewing without releasing. Before the TTL the
	// lease still excludes; after it, c takes it over.
	b.stopRenewing()
	clock.advance(29 * time.Second)
	if _, err := AcquireLease(ctx, st, testJob, leaseOpts(clock)); err == nil {
		t.Fatal("acquired a lease 29 s after its renewal (TTL 30 s)")
	}
	// b itself stopped trusting the lease a renewal period before expiry.
	if err := b.Check(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Check of a lease not renewed for 29 s: %v", err)
	}
	clock.advance(2 * time.Second)
	c, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	defer c.Release()
	// b comes back: its conditional renewal fails, and it knows why.
	b.renew(ctx)
	if err := b.Lost(); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "another run took over") {
		t.Fatalf("b after the takeover: %v", err)
	}
	if err := c.Check(); err != nil {
		t.Fatalf("c: %v", err)
	}
}

// TestLeaseRace: of runs acquiring at once, exactly one gets the lease.
func TestLeaseRace(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "s3")
	clock := &testClock{t: time.Now()}
	var wg sync.WaitGroup
	leases := make([]*Lease, 8)
	for i := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases[i], _ = AcquireLease(ctx, st, testJob, leaseOpts(clock))
		}()
	}
	wg.Wait()
	held := 0
	for _, l := range leases {
		if l != nil {
			held++
			defer l.Release()
		}
	}
	if held != 1 {
		t.Fatalf("%d runs hold the lease, want 1", held)
	}
}

// TestLostLeaseStopsWritesAndDeletes: a run whose lease was taken over
// neither completes a checkpoint nor deletes the job's files, which the new
// holder may be using.
func TestLostLeaseStopsWritesAndDeletes(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "s3")
	clock := &testClock{t: time.Now()}
	a, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, st, 1, WithGuard(a.Check))
	checkpointFiles(t, m, 1, sh("A"), pr("p1"))
	s := sealImage(t, m, 2, "v1-0", 0, []testFile{sh("B"), pr("p2")})
	ack, err := s.Persist(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a stalls past the TTL; b takes over; a comes back.
	clock.advance(31 * time.Second)
	b, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	a.renew(ctx)
	before := listAll(t, st)
	if err := NewRuntimeStore(m, state.RocksDB, t.TempDir(), nil).Complete(ctx, 2, []exec.InstanceAck{ack}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("completing a checkpoint after losing the lease: %v", err)
	}
	if err := m.Discard(); err == nil {
		t.Error("Discard after losing the lease reported success")
	}
	if after := listAll(t, st); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("the run without the lease changed the storage:\n before %v\n after  %v", before, after)
	}
	a.Release()
}

// TestLeaseOfDeadLocalProcess: a lease whose holder is a dead process of
// this host (and PID namespace) is taken over at once, without waiting out
// the TTL; one held by a live process is not.
func TestLeaseOfDeadLocalProcess(t *testing.T) {
	ctx := context.Background()
	st := openTestStorage(t, "s3")
	clock := &testClock{t: time.Now()}
	child := osexec.Command(os.Args[0], "-test.run=^$")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	put := func(pid int) {
		rec, _ := json.Marshal(leaseRecord{Owner: "crashed", Host: host, PID: pid, PIDNS: pidNamespace(), Renewed: clock.now(), TTL: 30000})
		if err := st.Put(ctx, "."+testJob+".lease", bytes.NewReader(rec), int64(len(rec))); err != nil {
			t.Fatal(err)
		}
	}
	put(os.Getppid()) // alive: the go test driver
	if _, err := AcquireLease(ctx, st, testJob, leaseOpts(clock)); err == nil {
		t.Fatal("took over the lease of a live process")
	}
	put(child.Process.Pid) // exited and reaped
	l, err := AcquireLease(ctx, st, testJob, leaseOpts(clock))
	if err != nil {
		t.Fatalf("the lease of a dead process of this host was not taken over: %v", err)
	}
	l.Release()
}
