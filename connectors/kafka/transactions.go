package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Checks before an exactly-once job starts, and the administration of the
// transactions exactly-once sinks leave behind.

// prefixRequiredMessage is the error for an exactly-once sink without a
// transactional id prefix: Flink's Kafka table factory's text.
const prefixRequiredMessage = OptTransactionalIDPrefix + " must be specified when using DeliveryGuarantee.EXACTLY_ONCE."

// adminTimeout bounds the broker requests of validation and administration.
const adminTimeout = 30 * time.Second

// ValidateExactlyOnce checks what an exactly-once Kafka sink needs before
// the job starts: a transactional id prefix, checkpointing, and a
// transaction timeout that outlives a checkpoint interval and that the
// broker accepts (its transaction.max.timeout.ms, read with
// DescribeConfigs). props are the Kafka client properties: the table's
// 'properties.*' options, with or without the 'properties.' prefix.
// checkpointInterval is execution.checkpointing.interval, 0 when
// checkpointing is off.
func ValidateExactlyOnce(ctx context.Context, bootstrap string, props map[string]string, prefix string, checkpointInterval time.Duration) error {
	if strings.TrimSpace(prefix) == "" {
		return errors.New(prefixRequiredMessage)
	}
	if checkpointInterval <= 0 {
		return fmt.Errorf("'%s' = '%s' needs checkpointing: set 'execution.checkpointing.interval' (for example SET 'execution.checkpointing.interval' = '10s') or use '%s' = '%s'",
			OptDeliveryGuarantee, DeliveryExactlyOnce, OptDeliveryGuarantee, DeliveryAtLeastOnce)
	}
	timeout, err := transactionTimeout(props)
	if err != nil {
		return err
	}
	if timeout <= checkpointInterval {
		return fmt.Errorf("'%s%s' (%d ms) must be larger than the checkpoint interval (%s) so transactions survive until their checkpoint completes; raise '%s%s' or lower 'execution.checkpointing.interval'",
			propertiesPrefix, propTransactionTimeout, timeout.Milliseconds(), checkpointInterval,
			propertiesPrefix, propTransactionTimeout)
	}
	maxTimeout, err := brokerTransactionMaxTimeout(ctx, bootstrap)
	if err != nil {
		return fmt.Errorf("checking '%s%s' against the Kafka cluster at %s: %w", propertiesPrefix, propTransactionTimeout, bootstrap, err)
	}
	if timeout > maxTimeout {
		return fmt.Errorf("'%s%s' (%d ms) exceeds the broker's transaction.max.timeout.ms (%d ms); lower '%s%s' or raise the broker setting",
			propertiesPrefix, propTransactionTimeout, timeout.Milliseconds(), maxTimeout.Milliseconds(),
			propertiesPrefix, propTransactionTimeout)
	}
	return nil
}

// adminClient connects to the cluster at bootstrap (host:port, comma
// separated).
func newAdminClient(bootstrap string) (*kgo.Client, error) {
	var seeds []string
	for _, s := range strings.Split(bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("no bootstrap servers in %q: expected host:port[,host:port...]", bootstrap)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(10*time.Second), kgo.RetryTimeout(adminTimeout))
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	return cl, nil
}

// brokerTransactionMaxTimeout reads transaction.max.timeout.ms, the
// smallest over the brokers (any of them may coordinate a transaction).
func brokerTransactionMaxTimeout(ctx context.Context, bootstrap string) (time.Duration, error) {
	cl, err := newAdminClient(bootstrap)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing the brokers: %w", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, meta.Brokers.NodeIDs()...)
	if err != nil {
		return 0, fmt.Errorf("describing the broker configs: %w", err)
	}
	var smallest int64 = -1
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, fmt.Errorf("describing the config of broker %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key != "transaction.max.timeout.ms" {
				continue
			}
			ms, err := strconv.ParseInt(c.MaybeValue(), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("broker %s reports transaction.max.timeout.ms = %q", rc.Name, c.MaybeValue())
			}
			if smallest < 0 || ms < smallest {
				smallest = ms
			}
		}
	}
	if smallest < 0 {
		return 0, errors.New("the brokers do not report transaction.max.timeout.ms")
	}
	return time.Duration(smallest) * time.Millisecond, nil
}

// TxnInfo describes one open transaction.
type TxnInfo struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	State           string // Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence
	Partitions      []TopicPartition
	Start           time.Time // zero when the broker does not say
	Timeout         time.Duration
}

// openTxnStates are the states of a transaction that has not ended.
var openTxnStates = []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}

// ListTransactions returns the open transactions of exactly-once sinks with
// transactional id prefix prefix (ids <prefix>-<subtask>-<checkpoint>),
// sorted by transactional id.
func ListTransactions(ctx context.Context, bootstrap, prefix string) ([]TxnInfo, error) {
	cl, err := newAdminClient(bootstrap)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return listTransactions(ctx, kadm.NewClient(cl), prefix)
}

func listTransactions(ctx context.Context, adm *kadm.Client, prefix string) ([]TxnInfo, error) {
	if prefix == "" {
		return nil, errors.New("empty transactional id prefix")
	}
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	own := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `-[0-9]+-[0-9]+$`)
	listed, err := adm.ListTransactions(ctx, nil, openTxnStates)
	if err != nil {
		return nil, fmt.Errorf("listing transactions: %w", err)
	}
	var ids []string
	for _, l := range listed.Sorted() {
		// Brokers before Kafka 3.0 ignore the state filter.
		if own.MatchString(l.TxnID) && isOpenTxnState(l.State) {
			ids = append(ids, l.TxnID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return nil, fmt.Errorf("describing transactions: %w", err)
	}
	var out []TxnInfo
	for _, d := range described.Sorted() {
		if d.Err != nil {
			return nil, fmt.Errorf("describing transactional id %s: %w", d.TxnID, d.Err)
		}
		if !isOpenTxnState(d.State) {
			continue // ended between the list and the describe
		}
		t := TxnInfo{TransactionalID: d.TxnID, ProducerID: d.ProducerID, Epoch: d.ProducerEpoch, State: d.State,
			Timeout: time.Duration(d.TimeoutMillis) * time.Millisecond}
		if d.StartTimestamp > 0 {
			t.Start = time.UnixMilli(d.StartTimestamp)
		}
		d.Topics.Each(func(topic string, partition int32) {
			t.Partitions = append(t.Partitions, TopicPartition{Topic: topic, Partition: partition})
		})
		sortTopicPartitions(t.Partitions)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, nil
}

func isOpenTxnState(s string) bool {
	for _, o := range openTxnStates {
		if s == o {
			return true
		}
	}
	return false
}

// AbortTransactions aborts the open transactions of exactly-once sinks with
// transactional id prefix prefix by fencing their transactional ids, for an
// operator cleaning up after a job that will not be restored (a restored
// job commits or aborts them itself). It returns how many it aborted.
func AbortTransactions(ctx context.Context, bootstrap, prefix string) (int, error) {
	cl, err := newAdminClient(bootstrap)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	open, err := listTransactions(ctx, kadm.NewClient(cl), prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range open {
		// Any timeout the broker accepts will do: the fence ends the
		// transaction at once and no transaction follows.
		timeoutMs := int32(min(t.Timeout.Milliseconds(), 60_000))
		if timeoutMs <= 0 {
			timeoutMs = 60_000
		}
		if _, err := fence(ctx, cl, t.TransactionalID, timeoutMs, adminTimeout); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// checkExactlyOnceOptions is the check of an exactly-once sink's options
// when the table is planned, without contacting the broker: Flink's
// factory requires the prefix; the timeout must be a positive integer.
func checkExactlyOnceOptions(c *tableConfig) error {
	if strings.TrimSpace(c.tc.Options[OptTransactionalIDPrefix]) == "" {
		return errors.New(prefixRequiredMessage)
	}
	if _, err := onAbortedTransaction(c.tc.Options); err != nil {
		return err
	}
	_, err := transactionTimeout(c.props)
	return err
}
