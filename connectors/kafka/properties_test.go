package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clientWith builds a client from the options a table's properties map to
// (consumer or producer) and returns it; nothing is dialled.
func clientWith(t *testing.T, props map[string]string, producer bool) *kgo.Client {
	t.Helper()
	opts := map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset"}
	for k, v := range props {
		opts["properties."+k] = v
	}
	c, err := newTableConfig(tableContext("127.0.0.1:1", eventSchema, opts), Identifier, false)
	if err != nil {
		t.Fatal(err)
	}
	var kopts []kgo.Opt
	if producer {
		kopts, err = c.producerOpts()
	} else {
		kopts, _, err = c.consumerOpts()
	}
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Each honoured client property sets the franz-go option that does what the
// Java client's property does (values chosen unlike the defaults).
func TestClientPropertiesMapToClientOptions(t *testing.T) {
	consumer := clientWith(t, map[string]string{
		"client.id": "reader-7", "metadata.max.age.ms": "1234", "request.timeout.ms": "4321",
		"fetch.max.bytes": "2048", "max.partition.fetch.bytes": "1024", "fetch.min.bytes": "3",
		"fetch.max.wait.ms": "77", "isolation.level": "read_uncommitted",
	}, false)
	producer := clientWith(t, map[string]string{
		"acks": "1", "linger.ms": "15", "delivery.timeout.ms": "9000", "batch.size": "4096",
		"compression.type": "zstd", "retries": "4",
	}, true)
	idem := clientWith(t, map[string]string{"enable.idempotence": "false"}, true)
	for _, c := range []struct {
		prop string
		got  any
		want any
	}{
		{"client.id", consumer.OptValue(kgo.ClientID), "reader-7"},
		{"metadata.max.age.ms", consumer.OptValue(kgo.MetadataMaxAge), 1234 * time.Millisecond},
		{"request.timeout.ms", consumer.OptValue(kgo.RetryTimeout), 4321 * time.Millisecond},
		{"fetch.max.bytes", consumer.OptValue(kgo.FetchMaxBytes), int32(2048)},
		{"max.partition.fetch.bytes", consumer.OptValue(kgo.FetchMaxPartitionBytes), int32(1024)},
		{"fetch.min.bytes", consumer.OptValue(kgo.FetchMinBytes), int32(3)},
		{"fetch.max.wait.ms", consumer.OptValue(kgo.FetchMaxWait), 77 * time.Millisecond},
		{"isolation.level", consumer.OptValue(kgo.FetchIsolationLevel), 0}, // read_uncommitted; the default here is read_committed (1)
		{"isolation.level (default)", clientWith(t, nil, false).OptValue(kgo.FetchIsolationLevel), 1},
		{"acks", fmt.Sprint(producer.OptValue(kgo.RequiredAcks)), fmt.Sprint(kgo.LeaderAck())},
		{"acks (no idempotence with acks=1)", producer.OptValue(kgo.DisableIdempotentWrite), true},
		{"enable.idempotence", idem.OptValue(kgo.DisableIdempotentWrite), true},
		{"linger.ms", producer.OptValue(kgo.ProducerLinger), 15 * time.Millisecond},
		{"delivery.timeout.ms", producer.OptValue(kgo.RecordDeliveryTimeout), 9000 * time.Millisecond},
		{"batch.size", producer.OptValue(kgo.ProducerBatchMaxBytes), int32(4096)},
		{"compression.type", fmt.Sprint(producer.OptValue(kgo.ProducerBatchCompression)), fmt.Sprint([]kgo.CompressionCodec{kgo.ZstdCompression()})},
		{"retries", fmt.Sprint(producer.OptValue(kgo.RecordRetries)), "4"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("properties.%s: client option %v, want %v", c.prop, c.got, c.want)
		}
	}
}

// A client property the connector does not act on is refused, naming it;
// the documented no-ops are accepted.
func TestUnknownClientPropertiesRefused(t *testing.T) {
	for _, key := range []string{"properties.some.unknown.thing", "properties.sasl.mechanism", "properties.max.in.flight.requests.per.connection"} {
		for _, sink := range []bool{false, true} {
			tc := tableContext("127.0.0.1:1", eventSchema, map[string]string{
				"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset", key: "1"})
			var err error
			if sink {
				_, err = NewFactory().CreateSink(tc)
			} else {
				_, err = NewFactory().CreateSource(tc)
			}
			if e := errContains(err, "Unsupported Kafka client properties found for table 'default_catalog.default_database.t'", key, "properties.isolation.level"); e != nil {
				t.Errorf("sink=%v: %v", sink, e)
			}
		}
	}
	opts := map[string]string{"topic": "a", "format": "json", "scan.startup.mode": "earliest-offset"}
	for p := range NoOpProperties() {
		opts["properties."+p] = "x"
	}
	if _, err := NewFactory().CreateSource(tableContext("127.0.0.1:1", eventSchema, opts)); err != nil {
		t.Fatal(err)
	}
}
