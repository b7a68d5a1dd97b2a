package kafka

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

// Factory creates kafka sources and sinks.
type Factory struct{}

// NewFactory returns the 'kafka' factory.
func NewFactory() *Factory { return &Factory{} }

var (
	_ connectors.SourceFactory = (*Factory)(nil)
	_ connectors.SinkFactory   = (*Factory)(nil)
)

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return []string{OptBootstrapServers} }

// OptionalOptions implements connectors.Factory. 'properties.*' keys are
// accepted besides these (see validate).
func (*Factory) OptionalOptions() []string {
	return []string{
		OptFormat, OptKeyFormat, OptKeyFields, OptKeyFieldsPrefix, OptValueFormat, OptValueFieldsInclude,
		OptTopic, OptTopicPattern, OptGroupID,
		OptStartupMode, OptStartupSpecificOffsets, OptStartupTimestamp, OptPartitionDiscovery,
		OptBoundedMode, OptBoundedSpecificOffsets, OptBoundedTimestamp, OptScanParallelism,
		OptSinkPartitioner, OptSinkParallelism, OptDeliveryGuarantee, OptTransactionalIDPrefix, OptTransactionNamingStrategy, OptSinkSemantic, OptOnAbortedTransaction,
	}
}

// ValidateOptionKeys checks a table's option keys as Flink's
// validateExcept("properties.") does: besides required and optional (and the
// options of the table's key and value formats, and for a source the
// watermark options), 'properties.*' keys are accepted, except that a client
// property that is neither in HonouredProperties nor in NoOpProperties is
// refused rather than ignored.
func ValidateOptionKeys(tc *connectors.TableContext, identifier string, required, optional []string, source bool) error {
	var props []string
	for k := range tc.Options {
		if strings.HasPrefix(k, propertiesPrefix) {
			props = append(props, k)
		}
	}
	opt := append(append([]string(nil), optional...), props...)
	if source {
		opt = append(opt, connectors.WatermarkOptions...)
	}
	if err := connectors.ValidateOptionKeys(tc, identifier, required, opt, OptFormat, OptKeyFormat, OptValueFormat); err != nil {
		return err
	}
	return validateProperties(tc)
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	if err := ValidateOptionKeys(tc, Identifier, f.RequiredOptions(), f.OptionalOptions(), true); err != nil {
		return nil, err
	}
	c, err := newTableConfig(tc, Identifier, false)
	if err != nil {
		return nil, err
	}
	if err := c.rejectPrimaryKey(); err != nil {
		return nil, err
	}
	return newSource(c)
}

// CreateSink implements connectors.SinkFactory.
func (f *Factory) CreateSink(tc *connectors.TableContext) (connectors.Sink, error) {
	if err := ValidateOptionKeys(tc, Identifier, f.RequiredOptions(), f.OptionalOptions(), false); err != nil {
		return nil, err
	}
	c, err := newTableConfig(tc, Identifier, false)
	if err != nil {
		return nil, err
	}
	if err := c.rejectPrimaryKey(); err != nil {
		return nil, err
	}
	return newSink(c)
}

// rejectPrimaryKey is Flink's check that an insert-only format cannot
// guarantee a primary key; a changelog format (debezium-json, ...) can.
func (c *tableConfig) rejectPrimaryKey() error {
	if len(c.tc.PrimaryKey) == 0 || !c.valueMode.IsInsertOnly() {
		return nil
	}
	return fmt.Errorf("The Kafka table '%s' with '%s' format doesn't support defining PRIMARY KEY constraint on the table, because it can't guarantee the semantic of primary key.",
		c.name, c.tc.Options[c.valueFormatKey])
}

// NewUpsertSource creates the source of an 'upsert-kafka' table whose
// options the caller has validated: the whole topic from the earliest
// offset, read as a changelog keyed by the primary key.
func NewUpsertSource(tc *connectors.TableContext, identifier string) (*Source, error) {
	c, err := newTableConfig(tc, identifier, true)
	if err != nil {
		return nil, err
	}
	return newSource(c)
}

// NewUpsertSink creates the sink of an 'upsert-kafka' table whose options the
// caller has validated. flushRows > 0 with flushInterval > 0 buffers rows
// and writes only the last change per key.
func NewUpsertSink(tc *connectors.TableContext, identifier string, flushRows int, flushInterval time.Duration) (*Sink, error) {
	c, err := newTableConfig(tc, identifier, true)
	if err != nil {
		return nil, err
	}
	s, err := newSink(c)
	if err != nil {
		return nil, err
	}
	s.flushRows, s.flushInterval = flushRows, flushInterval
	return s, nil
}

// ReadableMetadataKeys returns the metadata keys a source reads with their types.
func ReadableMetadataKeys() map[string]types.Type { return readableMetadata }
