package kafka

import (
	"testing"
)

// 'sink.semantic', the deprecated spelling of 'sink.delivery-guarantee',
// selects the delivery guarantee the same way: exactly-once makes the sink
// write through transactions.
func TestSinkSemanticSelectsDeliveryGuarantee(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
		txn  bool
	}{
		{map[string]string{}, DeliveryAtLeastOnce, false},
		{map[string]string{"sink.semantic": "none"}, DeliveryNone, false},
		{map[string]string{"sink.semantic": "exactly-once", "sink.transactional-id-prefix": "p"}, DeliveryExactlyOnce, true},
		{map[string]string{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "p"}, DeliveryExactlyOnce, true},
	} {
		c.opts["topic"], c.opts["format"] = "out", "json"
		s := mustSink(t, tableContext("127.0.0.1:1", eventSchema, c.opts))
		if got := s.DeliveryGuarantee(); got != c.want {
			t.Errorf("%v: delivery guarantee %s, want %s", c.opts, got, c.want)
		}
		w, err := s.NewWriter(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, txn := w.(*TransactionalWriter); txn != c.txn {
			t.Errorf("%v: transactional writer %v, want %v", c.opts, txn, c.txn)
		}
	}
}

// 'scan.parallelism' and 'sink.parallelism' fix the number of subtasks
// whatever the job's default.
func TestScanAndSinkParallelism(t *testing.T) {
	opts := map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset"}
	if got := mustSource(t, tableContext("127.0.0.1:1", eventSchema, opts)).Parallelism(4); got != 4 {
		t.Errorf("source parallelism %d without the option, want the default 4", got)
	}
	opts["scan.parallelism"] = "3"
	if got := mustSource(t, tableContext("127.0.0.1:1", eventSchema, opts)).Parallelism(4); got != 3 {
		t.Errorf("source parallelism %d with scan.parallelism 3", got)
	}
	sopts := map[string]string{"topic": "a", "format": "json"}
	if got := mustSink(t, tableContext("127.0.0.1:1", eventSchema, sopts)).Parallelism(4); got != 0 && got != 4 {
		t.Errorf("sink parallelism %d without the option, want the default", got)
	}
	sopts["sink.parallelism"] = "2"
	if got := mustSink(t, tableContext("127.0.0.1:1", eventSchema, sopts)).Parallelism(4); got != 2 {
		t.Errorf("sink parallelism %d with sink.parallelism 2", got)
	}
}
