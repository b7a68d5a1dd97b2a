package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testTimeout bounds every client call; a broker that stops answering fails
// the test instead of hanging it.
const testTimeout = 20 * time.Second

func startBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes values to topic, one record each, and waits for all acks.
// The producer asks for topic auto-creation, as Kafka's Java producer does.
func produce(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl := newClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Key: []byte(v), Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consumeAll reads n records from the start of every partition of topic and
// returns their values sorted.
func consumeAll(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records from %s: %v", len(got), n, topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

func partitionCount(t *testing.T, addr, topic string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	adm := kadm.NewClient(newClient(t, addr))
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		t.Fatalf("topic %s not found: %v", topic, d.Err)
	}
	return len(d.Partitions)
}

func TestProduceConsumeOnPortZero(t *testing.T) {
	b := startBroker(t, Config{})
	if strings.HasSuffix(b.Addr(), ":0") || !strings.HasPrefix(b.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want 127.0.0.1 with the port chosen", b.Addr())
	}
	produce(t, b.Addr(), "events", "a", "b", "c")
	if got, want := consumeAll(t, b.Addr(), "events", 3), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("consumed %v, want %v", got, want)
	}
}

// TestAutoCreatePartitions: a producer's first use of a topic creates it with
// the configured number of partitions, and records spread over all of them.
func TestAutoCreatePartitions(t *testing.T) {
	for _, tc := range []struct {
		partitions int
		want       int
	}{
		{0, 1}, // default
		{1, 1},
		{4, 4},
	} {
		t.Run(fmt.Sprint(tc.partitions), func(t *testing.T) {
			b := startBroker(t, Config{Partitions: tc.partitions})
			values := make([]string, 40)
			for i := range values {
				values[i] = fmt.Sprintf("v%02d", i)
			}
			produce(t, b.Addr(), "auto", values...)
			if got := partitionCount(t, b.Addr(), "auto"); got != tc.want {
				t.Fatalf("auto-created topic has %d partitions, want %d", got, tc.want)
			}
			if got := consumeAll(t, b.Addr(), "auto", len(values)); !slices.Equal(got, values) {
				t.Errorf("consumed %v, want %v", got, values)
			}
		})
	}
}

// TestConsumerDoesNotCreateTopic: as with a real broker, only a client that
// asks for auto-creation creates a topic; a plain metadata request for a
// missing topic answers UNKNOWN_TOPIC_OR_PARTITION, which is how a source
// notices a misspelt topic.
func TestConsumerDoesNotCreateTopic(t *testing.T) {
	b := startBroker(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b.Addr()))
	details, err := adm.ListTopics(ctx, "missing")
	if err != nil {
		t.Fatal(err)
	}
	if d := details["missing"]; !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: err = %v, want UNKNOWN_TOPIC_OR_PARTITION", d.Err)
	}
}

func TestCreateTopic(t *testing.T) {
	b := startBroker(t, Config{Partitions: 2})
	ctx := context.Background()
	if err := b.CreateTopic(ctx, "explicit", 5); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic(ctx, "defaulted", 0); err != nil {
		t.Fatal(err)
	}
	if got := partitionCount(t, b.Addr(), "explicit"); got != 5 {
		t.Errorf("explicit: %d partitions, want 5", got)
	}
	if got := partitionCount(t, b.Addr(), "defaulted"); got != 2 {
		t.Errorf("defaulted: %d partitions, want 2", got)
	}
	if err := b.CreateTopic(ctx, "explicit", 5); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("creating an existing topic: err = %v, want TOPIC_ALREADY_EXISTS", err)
	}
}

// TestPersistence: records, topics and committed group offsets written before
// Close are there after a Start with the same data directory.
func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir, Partitions: 3})
	addr := b.Addr()
	produce(t, addr, "kept", "one", "two", "three", "four")

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	adm := kadm.NewClient(newClient(t, addr))
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "kept", Partition: 1, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offsets); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The same address: a restarted broker is found where it was.
	b2 := startBroker(t, Config{Listen: addr, DataDir: dir, Partitions: 1})
	if got := partitionCount(t, b2.Addr(), "kept"); got != 3 {
		t.Errorf("after restart the topic has %d partitions, want 3", got)
	}
	if got, want := consumeAll(t, b2.Addr(), "kept", 4), []string{"four", "one", "three", "two"}; !slices.Equal(got, want) {
		t.Errorf("after restart consumed %v, want %v", got, want)
	}
	adm2 := kadm.NewClient(newClient(t, b2.Addr()))
	fetched, err := adm2.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("kept", 1); !ok || o.At != 1 {
		t.Errorf("after restart group g's offset for kept/1 = %+v (found %v), want 1", o, ok)
	}
}

func TestInMemoryIsForgotten(t *testing.T) {
	b := startBroker(t, Config{})
	addr := b.Addr()
	produce(t, addr, "gone", "x")
	b.Close()
	b2 := startBroker(t, Config{Listen: addr})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	details, err := kadm.NewClient(newClient(t, b2.Addr())).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(details) != 0 {
		t.Errorf("a fresh in-memory broker has topics %v", details.Names())
	}
}

func TestAddressInUse(t *testing.T) {
	b := startBroker(t, Config{})
	_, err := Start(Config{Listen: b.Addr()})
	if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), b.Addr()) {
		t.Fatalf("second broker on %s: err = %v, want an 'already in use' error naming the address", b.Addr(), err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Listen: "9092"}, `listen address "9092": want host:port`},
		{Config{Listen: "127.0.0.1:http"}, "port must be a number from 0 to 65535"},
		{Config{Listen: "127.0.0.1:70000"}, "port must be a number from 0 to 65535"},
		{Config{Listen: "127.0.0.1:0", Partitions: -2}, "partitions must be at least 1, got -2"},
		{Config{Listen: "127.0.0.1:0", TransactionMaxTimeout: time.Microsecond}, "transaction max timeout must be at least 1ms"},
	} {
		_, err := Start(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v): err = %v, want it to contain %q", tc.cfg, err, tc.want)
		}
	}
}

// TestTransactionMaxTimeout: DescribeConfigs answers the broker's
// transaction.max.timeout.ms, Kafka's 15 minutes by default, and a producer
// asking for a longer transaction timeout is refused at InitProducerID.
func TestTransactionMaxTimeout(t *testing.T) {
	for _, tc := range []struct {
		set  time.Duration
		want string
	}{
		{0, "900000"},
		{time.Minute, "60000"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b := startBroker(t, Config{TransactionMaxTimeout: tc.set})
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			rcs, err := kadm.NewClient(newClient(t, b.Addr())).DescribeBrokerConfigs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got *string
			for _, rc := range rcs {
				for _, c := range rc.Configs {
					if c.Key == "transaction.max.timeout.ms" {
						got = c.Value
					}
				}
			}
			if got == nil || *got != tc.want {
				t.Fatalf("transaction.max.timeout.ms = %v, want %s", got, tc.want)
			}

			// One second over the maximum.
			maxMs, _ := time.ParseDuration(tc.want + "ms")
			cl := newClient(t, b.Addr(), kgo.TransactionalID("too-long"), kgo.TransactionTimeout(maxMs+time.Second),
				kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(0))
			// franz-go initialises the producer ID eagerly, so the refusal
			// comes from BeginTransaction or, failing that, the first produce.
			err = cl.BeginTransaction()
			if err == nil {
				err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
			}
			if !errors.Is(err, kerr.InvalidTransactionTimeout) {
				t.Errorf("transaction timeout over the maximum: err = %v, want INVALID_TRANSACTION_TIMEOUT", err)
			}
		})
	}
}

// TestReadCommitted: records of an aborted transaction are invisible to a
// read_committed consumer and visible to a read_uncommitted one.
func TestReadCommitted(t *testing.T) {
	b := startBroker(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl := newClient(t, b.Addr(), kgo.TransactionalID("txn"), kgo.DefaultProduceTopic("tx"), kgo.AllowAutoTopicCreation())
	for _, tc := range []struct {
		value  string
		commit kgo.TransactionEndTry
	}{
		{"aborted", kgo.TryAbort},
		{"committed", kgo.TryCommit},
	} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(tc.value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, tc.commit); err != nil {
			t.Fatal(err)
		}
	}
	if got := consumeAll(t, b.Addr(), "tx", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())); !slices.Equal(got, []string{"committed"}) {
		t.Errorf("read_committed saw %v, want [committed]", got)
	}
	if got := consumeAll(t, b.Addr(), "tx", 2); !slices.Equal(got, []string{"aborted", "committed"}) {
		t.Errorf("read_uncommitted saw %v, want [aborted committed]", got)
	}
}

func TestCloseTwice(t *testing.T) {
	b := startBroker(t, Config{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestPersistenceWithoutClose: what a broker killed without Close leaves on
// disk is enough to get acknowledged records back, including those of a topic
// created on first use. The data directory of a running broker is copied,
// as a crash would leave it, and a second broker starts from the copy.
func TestPersistenceWithoutClose(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{DataDir: dir, Partitions: 2})
	produce(t, b.Addr(), "crash", "p", "q", "r")

	crashed := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, Config{DataDir: crashed})
	if got := partitionCount(t, b2.Addr(), "crash"); got != 2 {
		t.Errorf("recovered topic has %d partitions, want 2", got)
	}
	if got, want := consumeAll(t, b2.Addr(), "crash", 3), []string{"p", "q", "r"}; !slices.Equal(got, want) {
		t.Errorf("recovered %v, want %v", got, want)
	}
}
