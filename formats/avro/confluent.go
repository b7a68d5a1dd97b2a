package avro

import (
	"fmt"

	"github.com/flinksql/flinksql/formats"
)

// confluentOptions are the options Flink's 'avro-confluent' and
// 'debezium-avro-confluent' formats take. They are declared so that a table
// using them reaches the format's refusal, not a list of unknown options.
var confluentOptions = []string{
	"url", "subject", "schema", "properties",
	"basic-auth.credentials-source", "basic-auth.user-info",
	"bearer-auth.credentials-source", "bearer-auth.token",
	"ssl.keystore.location", "ssl.keystore.password",
	"ssl.truststore.location", "ssl.truststore.password",
}

// RegistryFactory stands for a format that reads its schemas from a
// Confluent Schema Registry ('avro-confluent', 'debezium-avro-confluent').
// flinksql has no Schema Registry client yet (and no registry to test one
// against), so every table in such a format is refused with a message that
// says so, rather than read with a guessed schema.
type RegistryFactory struct {
	id string
}

// NewConfluent returns the refusing 'avro-confluent' factory.
func NewConfluent() *RegistryFactory { return &RegistryFactory{id: "avro-confluent"} }

// NewDebeziumConfluent returns the refusing 'debezium-avro-confluent' factory.
func NewDebeziumConfluent() *RegistryFactory { return &RegistryFactory{id: "debezium-avro-confluent"} }

var _ formats.Factory = (*RegistryFactory)(nil)

// Identifier implements formats.Factory.
func (f *RegistryFactory) Identifier() string { return f.id }

// OptionalOptions implements formats.Factory.
func (*RegistryFactory) OptionalOptions() []string { return append([]string(nil), confluentOptions...) }

func (f *RegistryFactory) refuse(c *formats.Context) error {
	alt := "'avro' (plain Avro binary records with the schema derived from the table)"
	if f.id == "debezium-avro-confluent" {
		alt = "'debezium-json'"
	}
	return fmt.Errorf("Format '%s' is not supported yet: it reads and registers Avro schemas in a Confluent Schema Registry ('%surl'), and flinksql has no Schema Registry client. Use %s instead.",
		f.id, c.Prefix, alt)
}

// CreateDecoder implements formats.Factory: always refused.
func (f *RegistryFactory) CreateDecoder(c *formats.Context) (formats.Decoder, error) {
	return nil, f.refuse(c)
}

// CreateEncoder implements formats.Factory: always refused.
func (f *RegistryFactory) CreateEncoder(c *formats.Context) (formats.Encoder, error) {
	return nil, f.refuse(c)
}
