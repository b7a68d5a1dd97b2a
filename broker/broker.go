// Package broker owns running an embedded Kafka-protocol broker for local use
// and tests. It wraps kfake, which speaks the real Kafka wire protocol
// (produce, fetch, consumer groups, transactions, read_committed), as a
// single-node cluster listening on one TCP address, so the engine, franz-go
// and third-party clients such as kcat talk to it exactly as they would to a
// real Kafka broker.
//
// The broker creates a topic the first time a client asks for it with
// auto-creation allowed in its metadata request (as a Kafka broker with
// auto.create.topics.enable does; producers ask for it, consumers by default
// do not). With a data directory it keeps its log, topics, group offsets and
// producer state on disk and reloads them on the next Start; transactions
// still open when the process died are aborted on reload.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultListen is the address a broker listens on when Config.Listen is
// empty: Kafka's usual port on the loopback interface.
const DefaultListen = "127.0.0.1:9092"

// DefaultTransactionMaxTimeout is Kafka's default transaction.max.timeout.ms
// (15 minutes), the longest transaction timeout a producer may ask for.
const DefaultTransactionMaxTimeout = 15 * time.Minute

// Config configures a broker. The zero value is a broker on DefaultListen
// keeping everything in memory, creating topics with one partition.
type Config struct {
	// Listen is the host:port to listen on, DefaultListen if empty. Port 0
	// picks a free port; Addr reports it. Clients are told to connect back
	// to this same address, so it must be one they can reach.
	Listen string

	// Partitions is the number of partitions of a topic the broker creates
	// on first use or for a CreateTopics request asking for the default
	// (-1). Zero means 1.
	Partitions int

	// DataDir, if not empty, is the directory the broker persists its state
	// to and reloads it from on Start (created if missing). Empty keeps
	// everything in memory, gone at Close.
	DataDir string

	// TransactionMaxTimeout is the broker's transaction.max.timeout.ms,
	// DefaultTransactionMaxTimeout if zero. Producers asking for a longer
	// transaction timeout are refused, and DescribeConfigs reports it.
	TransactionMaxTimeout time.Duration

	// Logger receives the broker's own log lines; nil discards them.
	Logger *slog.Logger
}

// Broker is a running embedded broker. Close stops it.
type Broker struct {
	cluster *kfake.Cluster
	addr    string

	closeOnce sync.Once
}

// Start validates cfg, listens on its address and starts serving. An address
// already in use is reported as such, naming the address.
func Start(cfg Config) (*Broker, error) {
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(listen); err != nil {
		return nil, fmt.Errorf("broker: listen address %q: want host:port (for example %s): %w", listen, DefaultListen, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return nil, fmt.Errorf("broker: listen address %q: port must be a number from 0 to 65535", listen)
	}
	partitions := cfg.Partitions
	if partitions == 0 {
		partitions = 1
	}
	if partitions < 0 {
		return nil, fmt.Errorf("broker: partitions must be at least 1, got %d", partitions)
	}
	txnTimeout := cfg.TransactionMaxTimeout
	if txnTimeout == 0 {
		txnTimeout = DefaultTransactionMaxTimeout
	}
	if txnTimeout < time.Millisecond {
		return nil, fmt.Errorf("broker: transaction max timeout must be at least 1ms, got %v", txnTimeout)
	}

	// We listen ourselves rather than letting kfake do it: kfake always
	// binds 127.0.0.1, and listening first lets us name a busy port.
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("broker: cannot listen on %s: the address is already in use (another broker running? choose another address)", listen)
		}
		return nil, fmt.Errorf("broker: cannot listen on %s: %w", listen, err)
	}
	handedOut := false
	listenFn := func(string, string) (net.Listener, error) {
		// kfake asks once per broker node and we run one node.
		if handedOut {
			return nil, errors.New("broker: only one listener is available")
		}
		handedOut = true
		return ln, nil
	}

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(listenFn),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(partitions),
	}
	if txnTimeout != DefaultTransactionMaxTimeout {
		// Left unset, kfake reports Kafka's default as a default config.
		opts = append(opts, kfake.BrokerConfigs(map[string]string{
			"transaction.max.timeout.ms": strconv.FormatInt(txnTimeout.Milliseconds(), 10),
		}))
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if cfg.Logger != nil {
		opts = append(opts, kfake.WithLogger(slogAdapter{cfg.Logger}))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		ln.Close() // kfake closes it on most failures; a second Close is harmless
		if cfg.DataDir != "" {
			return nil, fmt.Errorf("broker: starting with data directory %s: %w", cfg.DataDir, err)
		}
		return nil, fmt.Errorf("broker: starting: %w", err)
	}
	if cfg.DataDir != "" {
		persistAutoCreatedTopics(cluster)
	}
	return &Broker{cluster: cluster, addr: ln.Addr().String()}, nil
}

// persistAutoCreatedTopics makes topics created on first use survive a
// crash. kfake creates them inside its Metadata handler without writing its
// topic list to disk (only CreateTopics does); the list is written at Close,
// so after kill -9 the topic, and with it every record in it, would be
// forgotten. We create such topics just before kfake handles the request,
// through the path that persists them.
func persistAutoCreatedTopics(cluster *kfake.Cluster) {
	cluster.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		m, ok := req.(*kmsg.MetadataRequest)
		if !ok || !m.AllowAutoTopicCreation {
			return nil, nil, false
		}
		for _, t := range m.Topics {
			if t.Topic == nil || t.TopicID != [16]byte{} {
				continue // topics named by ID are never created
			}
			// kfake runs admin calls while a control function runs.
			// An existing topic or a bad name fails here, harmlessly:
			// kfake's handler answers for it as usual.
			_ = cluster.CreateTopic(*t.Topic, -1, nil)
		}
		return nil, nil, false // observed, not handled: kfake answers
	})
}

// Addr returns the host:port the broker listens on, with the port it
// actually got when Config.Listen asked for port 0.
func (b *Broker) Addr() string { return b.addr }

// CreateTopic creates a topic with the given number of partitions (the
// broker's default if partitions <= 0), for tests and scripts that need a
// topic before any client asks for it. Creating an existing topic fails with
// Kafka's TOPIC_ALREADY_EXISTS.
func (b *Broker) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.cluster.CreateTopic(topic, int32(partitions), nil); err != nil {
		return fmt.Errorf("broker: creating topic %q: %w", topic, err)
	}
	return nil
}

// Close stops listening, closes client connections and, with a data
// directory, writes the remaining state to disk. It is safe to call more
// than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(b.cluster.Close)
	return nil
}

// slogAdapter passes kfake's log lines to a slog.Logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Logf(level kfake.LogLevel, format string, args ...any) {
	var sl slog.Level
	switch level {
	case kfake.LogLevelError:
		sl = slog.LevelError
	case kfake.LogLevelWarn:
		sl = slog.LevelWarn
	case kfake.LogLevelInfo:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelDebug
	}
	if !a.l.Enabled(context.Background(), sl) {
		return
	}
	a.l.Log(context.Background(), sl, fmt.Sprintf(format, args...))
}
