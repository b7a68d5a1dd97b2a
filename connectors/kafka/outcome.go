package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// How a commit finds out that its transaction was aborted.
//
// A commit is a raw EndTxn(commit) with the committable's producer id and
// epoch. Success means the transaction is committed (now, or by an earlier
// attempt: brokers answer a repeated commit with success). An "ended" answer
// (INVALID_TXN_STATE, PRODUCER_FENCED, …) means the transaction is not open
// any more, but not how it ended: Kafka answers so after the transaction
// timeout aborted it, and kfake also after it committed and the broker
// restarted (it forgets how the last transaction of a producer ended). The
// log knows: a transaction's end writes a control record (commit or abort
// marker) of its producer into every partition it wrote to, after its
// records. The commit therefore reads each partition the committable
// recorded from the transaction's first offset, uncommitted (an open
// transaction of another producer must not hold the reader back), and looks
// for the producer's marker. A partition read to its end without one holds
// a transaction that ended without marker: kfake, restarted after kill -9,
// aborts every transaction open at the crash that way.

// Values of OptOnAbortedTransaction.
const (
	AbortedTxnFail     = "FAIL"
	AbortedTxnContinue = "LOG_AND_CONTINUE"
)

// OptOnAbortedTransaction is what an exactly-once sink does when a commit
// finds its transaction aborted by the broker (its records are lost): fail
// the job (default), or log the loss as an error, count it in the sink's
// LostCommits metric and go on.
const OptOnAbortedTransaction = "sink.on-aborted-transaction"

// TxnPartition is a partition a transaction wrote to, and the offset of its
// first record there.
type TxnPartition struct {
	Partition   int32
	FirstOffset int64
}

// txnState is how a transaction ended.
type txnState uint8

const (
	txnCommitted txnState = iota
	txnAborted
	txnUnknown // the log cannot tell (truncated, or not read in time)
)

// commitOutcome is what committing one committable found.
type commitOutcome struct {
	state  txnState
	detail string // for aborted and unknown: what the log showed
}

// commitTxn commits c's transaction and tells how it ended up.
func commitTxn(ctx context.Context, cl *kgo.Client, cfg TxnConfig, c TxnCommittable) (commitOutcome, error) {
	err := retryTxnRequest(ctx, cfg.Sink.cfg.requestTimeout, func(ctx context.Context) (int16, error) {
		return endTxnRequest(ctx, cl, c, true)
	})
	switch {
	case err == nil:
		return commitOutcome{state: txnCommitted}, nil
	case !isEndedTxnError(err):
		return commitOutcome{}, fmt.Errorf("committing transactional id %s (producer id %d, epoch %d) of checkpoint %d: %w",
			c.TransactionalID, c.ProducerID, c.Epoch, c.Checkpoint, err)
	}
	if c.Topic == "" || len(c.Partitions) == 0 {
		// A committable of an older version: where its records went is not
		// known, so neither is whether they were committed.
		cfg.Logf("[WARN] kafka table %s: committing transactional id %s (producer id %d, epoch %d) of checkpoint %d: it ended before (%v); "+
			"the checkpoint predates the record of its partitions, so whether an earlier attempt committed it or the broker aborted it (and its records are lost) cannot be told",
			cfg.Sink.cfg.name, c.TransactionalID, c.ProducerID, c.Epoch, c.Checkpoint, err)
		return commitOutcome{state: txnCommitted}, nil
	}
	out, lerr := txnOutcomeFromLog(ctx, cl, cfg, c)
	if lerr != nil {
		return commitOutcome{}, fmt.Errorf("committing transactional id %s of checkpoint %d: it ended before (%v), and reading how from the log failed: %w",
			c.TransactionalID, c.Checkpoint, err, lerr)
	}
	if out.state == txnCommitted {
		cfg.Logf("[INFO] kafka table %s: transactional id %s of checkpoint %d was committed by an earlier attempt",
			cfg.Sink.cfg.name, c.TransactionalID, c.Checkpoint)
	}
	return out, nil
}

// endTxnRequest sends one EndTxn for c and returns the response's error code.
func endTxnRequest(ctx context.Context, cl *kgo.Client, c TxnCommittable, commit bool) (int16, error) {
	req := kmsgEndTxn(c, commit)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	return resp.ErrorCode, nil
}

// txnOutcomeFromLog reads how c's transaction ended from its partitions.
func txnOutcomeFromLog(ctx context.Context, cl *kgo.Client, cfg TxnConfig, c TxnCommittable) (commitOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Sink.cfg.requestTimeout)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, c.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return commitOutcome{}, fmt.Errorf("end offsets of topic '%s': %w", c.Topic, err)
	}
	start := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	for _, p := range c.Partitions {
		o, ok := ends.Lookup(c.Topic, p.Partition)
		if !ok {
			return commitOutcome{}, fmt.Errorf("topic '%s' has no partition %d", c.Topic, p.Partition)
		}
		start[p.Partition] = kgo.NewOffset().At(p.FirstOffset)
		end[p.Partition] = o.Offset
	}
	rd, err := kgo.NewClient(append(cfg.Sink.cfg.commonClientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: start}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords(),
		kgo.DisableFetchSessions())...) // see consumerOpts
	if err != nil {
		return commitOutcome{}, err
	}
	defer rd.Close()
	first := map[int32]int64{}
	for _, p := range c.Partitions {
		first[p.Partition] = p.FirstOffset
	}
	verdict := map[int32]string{} // partition → "commit", "abort", "none", or why unknown
	seen := map[int32]bool{}
	for p, e := range end {
		if e <= first[p] {
			verdict[p] = fmt.Sprintf("the partition ends at offset %d, before the transaction's first record", e)
		}
	}
	for len(verdict) < len(end) {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, p int32, err error) {
			if _, done := verdict[p]; !done {
				verdict[p] = fmt.Sprintf("reading it failed: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if _, done := verdict[p]; done {
				return
			}
			if !seen[p] {
				seen[p] = true
				switch {
				case r.Offset != first[p]:
					// Retention removed the transaction's first records.
					verdict[p] = fmt.Sprintf("the log starts at offset %d, after the transaction's first record", r.Offset)
					return
				case r.ProducerID != c.ProducerID:
					verdict[p] = fmt.Sprintf("offset %d holds a record of producer id %d", r.Offset, r.ProducerID)
					return
				}
			}
			if r.Attrs.IsControl() && r.ProducerID == c.ProducerID && len(r.Key) >= 4 {
				// A control record's key: version, then type (0 abort, 1 commit).
				if binary.BigEndian.Uint16(r.Key[2:4]) == 1 {
					verdict[p] = "commit"
				} else {
					verdict[p] = "abort"
				}
				return
			}
			if r.Offset+1 >= end[p] {
				verdict[p] = "none"
			}
		})
	}
	// A transaction commits or aborts on all its partitions at once, so one
	// partition with a marker tells for all. A partition that could not be
	// read (a fetch error, or not read to its end in time) tells nothing, and
	// that is not evidence of a loss: the caller gets an error, the job fails
	// and a restart asks again, rather than a loss being reported for good.
	var aborted, unknown, unread []string
	committed := false
	for _, tp := range c.Partitions {
		v, ok := verdict[tp.Partition]
		switch {
		case !ok:
			unread = append(unread, fmt.Sprintf("%s[%d]: not read to its end within %s", c.Topic, tp.Partition, cfg.Sink.cfg.requestTimeout))
		case v == "commit":
			committed = true
		case v == "abort":
			aborted = append(aborted, fmt.Sprintf("%s[%d] (records from offset %d, abort marker)", c.Topic, tp.Partition, tp.FirstOffset))
		case v == "none":
			aborted = append(aborted, fmt.Sprintf("%s[%d] (records from offset %d, ended without marker)", c.Topic, tp.Partition, tp.FirstOffset))
		case strings.HasPrefix(v, "reading it failed"):
			unread = append(unread, fmt.Sprintf("%s[%d]: %s", c.Topic, tp.Partition, v))
		default:
			unknown = append(unknown, fmt.Sprintf("%s[%d]: %s", c.Topic, tp.Partition, v))
		}
	}
	switch {
	case committed && len(aborted) == 0:
		return commitOutcome{state: txnCommitted}, nil
	case len(aborted) > 0 && len(unknown) == 0:
		return commitOutcome{state: txnAborted, detail: strings.Join(aborted, ", ")}, nil
	case len(unread) > 0 && len(aborted) == 0 && len(unknown) == 0:
		return commitOutcome{}, fmt.Errorf("its partitions could not be read to find out: %s", strings.Join(unread, ", "))
	case len(unknown) > 0 || len(unread) > 0:
		return commitOutcome{state: txnUnknown, detail: strings.Join(append(append(aborted, unknown...), unread...), ", ")}, nil
	}
	return commitOutcome{state: txnCommitted}, nil
}

// lostError turns the aborted and unknown commits of one Commit call into
// the error the runtime reports (exec.AbortedCommitError).
func lostError(cfg TxnConfig, lost []string, aborted, committed int, cont bool) error {
	msg := fmt.Sprintf("kafka table %s: the broker aborted %s before they could be committed, so their records are lost. "+
		"Likely cause: the transaction was open longer than 'properties.%s' (%d ms), "+
		"or the broker lost its in-flight transactions when it restarted (the embedded 'flinksql broker' aborts every open transaction when it restarts after a crash or kill -9; Kafka keeps them). "+
		"To go on after such a loss, set '%s' = '%s'",
		cfg.Sink.cfg.name, strings.Join(lost, "; "), propTransactionTimeout, cfg.TransactionTimeout.Milliseconds(),
		OptOnAbortedTransaction, AbortedTxnContinue)
	return &exec.AbortedCommitError{Message: msg, Aborted: aborted, Committed: committed, Continue: cont}
}

// describeLost names a committable whose commit found it aborted.
func describeLost(c TxnCommittable, out commitOutcome) string {
	what := "transactional id"
	if out.state == txnUnknown {
		what = "(possibly) transactional id"
	}
	return fmt.Sprintf("%s %s (producer id %d, epoch %d) of checkpoint %d, partitions %s",
		what, c.TransactionalID, c.ProducerID, c.Epoch, c.Checkpoint, out.detail)
}

// onAbortedTransaction reads OptOnAbortedTransaction: true to continue.
func onAbortedTransaction(o map[string]string) (bool, error) {
	v, ok := o[OptOnAbortedTransaction]
	if !ok {
		return false, nil
	}
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case AbortedTxnFail:
		return false, nil
	case AbortedTxnContinue:
		return true, nil
	}
	return false, fmt.Errorf("Invalid value for option '%s'. Expected one of [%s, %s], but was: %s",
		OptOnAbortedTransaction, AbortedTxnFail, AbortedTxnContinue, v)
}
