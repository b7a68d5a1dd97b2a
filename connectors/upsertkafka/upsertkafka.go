// Package upsertkafka owns the 'upsert-kafka' table connector: a topic read
// as a changelog keyed by the table's primary key (a record with a value is
// the key's new row, a record with a null value deletes the key), and a sink
// that writes +I/+U rows as key and value and -D rows as tombstones, with an
// optional buffer that keeps only the last change per key.
//
// The Kafka machinery (client options, partitions as splits, offsets,
// metadata columns, encoding) is the kafka package's; this package owns the
// connector's options and their validation, following Flink 1.20's
// UpsertKafkaDynamicTableFactory. As in Flink, rows read from a record with a
// value carry the value format's row kind (+I for every built-in format) and
// tombstones are -D rows holding the key columns and NULL elsewhere; the
// planner normalises the stream where a consumer needs retractions.
package upsertkafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/kafka"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "upsert-kafka"

// Factory creates upsert-kafka sources and sinks.
type Factory struct{}

// NewFactory returns the 'upsert-kafka' factory.
func NewFactory() *Factory { return &Factory{} }

var (
	_ connectors.SourceFactory = (*Factory)(nil)
	_ connectors.SinkFactory   = (*Factory)(nil)
)

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string {
	return []string{kafka.OptBootstrapServers, kafka.OptKeyFormat, kafka.OptValueFormat}
}

// OptionalOptions implements connectors.Factory. 'properties.*' keys are
// accepted besides these.
func (*Factory) OptionalOptions() []string {
	return []string{
		kafka.OptTopic, kafka.OptTopicPattern, kafka.OptKeyFieldsPrefix, kafka.OptValueFieldsInclude,
		kafka.OptSinkParallelism, kafka.OptSinkBufferFlushInterval, kafka.OptSinkBufferFlushMaxRows,
		kafka.OptBoundedMode, kafka.OptBoundedSpecificOffsets, kafka.OptBoundedTimestamp,
		kafka.OptDeliveryGuarantee, kafka.OptTransactionalIDPrefix, kafka.OptTransactionNamingStrategy,
	}
}

var errNoPrimaryKey = errors.New("'upsert-kafka' tables require to define a PRIMARY KEY constraint. " +
	"The PRIMARY KEY specifies which columns should be read from or write to the Kafka message key. " +
	"The PRIMARY KEY also defines records in the 'upsert-kafka' table should update or delete on which keys.")

func (f *Factory) validate(tc *connectors.TableContext, source bool) error {
	if err := kafka.ValidateOptionKeys(tc, Identifier, f.RequiredOptions(), f.OptionalOptions(), source); err != nil {
		return err
	}
	if len(tc.PrimaryKey) == 0 {
		return errNoPrimaryKey
	}
	return nil
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	if err := f.validate(tc, true); err != nil {
		return nil, err
	}
	return kafka.NewUpsertSource(tc, Identifier)
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	if err := f.validate(tc, false); err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	rows, err := opts.Int(kafka.OptSinkBufferFlushMaxRows, 0)
	if err != nil {
		return nil, err
	}
	interval, err := opts.Duration(kafka.OptSinkBufferFlushInterval, 0)
	if err != nil {
		return nil, err
	}
	if (rows > 0) != (interval > 0) {
		return nil, fmt.Errorf("'%s' and '%s' must be set to be greater than zero together to enable sink buffer flushing.",
			kafka.OptSinkBufferFlushMaxRows, kafka.OptSinkBufferFlushInterval)
	}
	if rows <= 0 || interval <= 0 {
		rows, interval = 0, time.Duration(0)
	}
	return kafka.NewUpsertSink(tc, Identifier, rows, interval)
}
