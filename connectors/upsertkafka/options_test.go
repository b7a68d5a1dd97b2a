package upsertkafka

import (
	"testing"

	"github.com/flinksql/flinksql/connectors/kafka"
)

// 'sink.delivery-guarantee' = 'exactly-once' with 'sink.transactional-id-prefix'
// makes the upsert-kafka sink write through transactions, and
// 'sink.parallelism' fixes its subtasks, as for the kafka connector.
func TestSinkDeliveryGuaranteeAndParallelism(t *testing.T) {
	s, err := NewFactory().CreateSink(tableContext("127.0.0.1:1", map[string]string{
		"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "users-job", "sink.parallelism": "3"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.(*kafka.Sink).DeliveryGuarantee(); got != kafka.DeliveryExactlyOnce {
		t.Fatalf("delivery guarantee %s", got)
	}
	if got := s.(*kafka.Sink).TransactionalIDPrefix(); got != "users-job" {
		t.Fatalf("transactional id prefix %q", got)
	}
	w, err := s.NewWriter(0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*kafka.TransactionalWriter); !ok {
		t.Fatalf("writer %T, want a transactional writer", w)
	}
	if got := s.Parallelism(8); got != 3 {
		t.Fatalf("parallelism %d with sink.parallelism 3", got)
	}
	s, _ = NewFactory().CreateSink(tableContext("127.0.0.1:1", nil, 0))
	if got := s.(*kafka.Sink).DeliveryGuarantee(); got != kafka.DeliveryAtLeastOnce {
		t.Fatalf("default delivery guarantee %s", got)
	}
}
