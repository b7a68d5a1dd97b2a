package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors/kafka"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaTransactionsCommand opens a transaction the way an exactly-once
// sink does (transactional id <prefix>-<subtask>-<checkpoint>), leaves it
// open, and lists and aborts it with the command.
func TestKafkaTransactionsCommand(t *testing.T) {
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(2, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var pids []int64
	for _, id := range []string{"job-1-3", "jobs-0-3"} { // the second has another prefix
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close() // without ending the transaction
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		pid, _, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}

	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runKafkaTransactions(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	line := fmt.Sprintf("job-1-3 producer-id=%d epoch=0 state=Ongoing partitions=out-1\n", pids[0])
	for _, tc := range []struct {
		args    []string
		code    int
		stdout  string
		wantErr bool
	}{
		{args: []string{"--bootstrap", addr, "--prefix", "job"}, stdout: line},
		{args: []string{"--bootstrap", addr, "--prefix", "job", "--abort"}, stdout: line + "Aborted 1 transaction.\n"},
		{args: []string{"--bootstrap", addr, "--prefix", "job"}, stdout: "No open transactions with prefix job.\n"},
		{args: []string{"--bootstrap", addr}, code: 2, wantErr: true},
		{args: []string{"--prefix", "job", "extra"}, code: 2, wantErr: true},
	} {
		code, stdout, stderr := run(tc.args...)
		if code != tc.code || stdout != tc.stdout || (stderr != "") != tc.wantErr {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", tc.args, code, stdout, stderr, tc.code, tc.stdout)
		}
	}
	// A running job's transactions are not aborted without --force.
	lease, err := kafka.AcquirePrefixLease(ctx, addr, "jobs", "job 'live'")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("--bootstrap", addr, "--prefix", "jobs", "--abort")
	if code != 1 || !strings.Contains(stderr, "prefix jobs is in use by a running job, job 'live'") {
		t.Fatalf("--abort of a live job's prefix: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if err := lease.Release(); err != nil {
		t.Fatal(err)
	}
	// The other prefix's transaction is untouched.
	if code, stdout, _ := run("--bootstrap", addr, "--prefix", "jobs"); code != 0 ||
		stdout != fmt.Sprintf("jobs-0-3 producer-id=%d epoch=0 state=Ongoing partitions=out-1\n", pids[1]) {
		t.Fatalf("prefix jobs: exit %d, %q", code, stdout)
	}
}
