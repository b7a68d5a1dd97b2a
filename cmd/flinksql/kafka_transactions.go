package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/flinksql/flinksql/connectors/kafka"
)

const kafkaTransactionsUsage = `Usage:
  flinksql kafka-transactions --bootstrap HOST:PORT --prefix P [--abort]

Lists the open Kafka transactions of exactly-once sinks whose
'sink.transactional-id-prefix' is P (transactional ids P-<subtask>-<n>),
one line each: transactional id, producer id, epoch, state and partitions.
Records in an open transaction hold back every read_committed reader of their
partitions until the transaction ends. A job restored from a checkpoint commits
or aborts its own transactions; for a job that will never come back, --abort
aborts them (by fencing their transactional ids) and prints how many; it
refuses while a running job holds the prefix's lease, unless --force.

Flags:
`

// runKafkaTransactions is 'flinksql kafka-transactions'.
func runKafkaTransactions(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql kafka-transactions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "", "the Kafka cluster's bootstrap servers, `HOST:PORT`[,HOST:PORT...]")
	prefix := fs.String("prefix", "", "the sink's 'sink.transactional-id-prefix' `P`")
	abort := fs.Bool("abort", false, "abort the open transactions")
	force := fs.Bool("force", false, "with --abort: abort even while a running job holds the prefix")
	fs.Usage = func() {
		fmt.Fprint(stderr, kafkaTransactionsUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flinksql kafka-transactions: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if strings.TrimSpace(*bootstrap) == "" || strings.TrimSpace(*prefix) == "" {
		fmt.Fprintln(stderr, "flinksql kafka-transactions: --bootstrap and --prefix are required")
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	open, err := kafka.ListTransactions(ctx, *bootstrap, *prefix)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql kafka-transactions: %v\n", err)
		return 1
	}
	if len(open) == 0 {
		fmt.Fprintf(stdout, "No open transactions with prefix %s.\n", *prefix)
		return 0
	}
	for _, t := range open {
		parts := make([]string, len(t.Partitions))
		for i, tp := range t.Partitions {
			parts[i] = tp.String()
		}
		fmt.Fprintf(stdout, "%s producer-id=%d epoch=%d state=%s partitions=%s\n",
			t.TransactionalID, t.ProducerID, t.Epoch, t.State, strings.Join(parts, ","))
	}
	if !*abort {
		return 0
	}
	if !*force {
		// A running job's transactions are not lingering: aborting them
		// loses what its next checkpoint commits.
		holder, err := kafka.LivePrefixHolder(ctx, *bootstrap, *prefix)
		if err != nil {
			fmt.Fprintf(stderr, "flinksql kafka-transactions: checking whether a running job holds prefix %s: %v\n", *prefix, err)
			return 1
		}
		if holder != "" {
			fmt.Fprintf(stderr, "flinksql kafka-transactions: prefix %s is in use by a running job, %s; its transactions are not lingering and aborting them would lose their records: stop the job first (or pass --force)\n", *prefix, holder)
			return 1
		}
	}
	n, err := kafka.AbortTransactions(ctx, *bootstrap, *prefix)
	noun := "transactions"
	if n == 1 {
		noun = "transaction"
	}
	fmt.Fprintf(stdout, "Aborted %d %s.\n", n, noun)
	if err != nil {
		fmt.Fprintf(stderr, "flinksql kafka-transactions: %v\n", err)
		return 1
	}
	return 0
}
