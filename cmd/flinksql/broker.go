package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flinksql/flinksql/broker"
)

// runBroker runs `flinksql broker`: an embedded Kafka-protocol broker in the
// foreground until SIGINT or SIGTERM (a clean stop, exit 0). Exit code 2 is
// for bad flags, 1 for a broker that cannot start.
func runBroker(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveBroker(ctx, args, stdout, stderr)
}

// serveBroker is runBroker stopping when ctx is done instead of on a signal.
func serveBroker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flinksql broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", broker.DefaultListen, "`host:port` to listen on; port 0 picks a free port")
	partitions := fs.Int("partitions", 1, "partitions of a topic created on first use")
	dataDir := fs.String("data-dir", "", "`directory` to keep topics, records and offsets in across restarts (default: in memory)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage:
  flinksql broker [--listen host:port] [--partitions N] [--data-dir DIR]

Runs a Kafka-protocol broker (one node) until interrupted. Kafka clients,
the kafka connectors and kcat connect to it as to any Kafka broker. A topic is
created the first time a producer uses it. Once ready it prints
"Kafka broker listening on host:port".

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "flinksql broker: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *partitions < 1 {
		fmt.Fprintf(stderr, "flinksql broker: --partitions must be at least 1, got %d\n", *partitions)
		return 2
	}

	b, err := broker.Start(broker.Config{Listen: *listen, Partitions: *partitions, DataDir: *dataDir})
	if err != nil {
		fmt.Fprintf(stderr, "flinksql %v\n", err) // "flinksql broker: …"
		return 1
	}
	// Scripts wait for this line; it is printed only once clients can connect.
	fmt.Fprintf(stdout, "Kafka broker listening on %s\n", b.Addr())
	<-ctx.Done()
	if err := b.Close(); err != nil {
		fmt.Fprintf(stderr, "flinksql broker: stopping: %v\n", err)
		return 1
	}
	return 0
}
