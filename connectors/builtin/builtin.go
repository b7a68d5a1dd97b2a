// Package builtin assembles the registries of the connectors and formats
// that ship with flinksql.
package builtin

import (
	"io"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/blackhole"
	"github.com/flinksql/flinksql/connectors/datagen"
	"github.com/flinksql/flinksql/connectors/filesystem"
	"github.com/flinksql/flinksql/connectors/iceberg"
	"github.com/flinksql/flinksql/connectors/jdbc"
	"github.com/flinksql/flinksql/connectors/kafka"
	"github.com/flinksql/flinksql/connectors/nexmark"
	"github.com/flinksql/flinksql/connectors/postgrescdc"
	"github.com/flinksql/flinksql/connectors/print"
	"github.com/flinksql/flinksql/connectors/upsertkafka"
	"github.com/flinksql/flinksql/connectors/values"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/formats/avro"
	"github.com/flinksql/flinksql/formats/cdc"
	"github.com/flinksql/flinksql/formats/csv"
	"github.com/flinksql/flinksql/formats/json"
	"github.com/flinksql/flinksql/formats/raw"
)

// NewFormats returns a registry of the built-in formats: json, csv, raw,
// avro, the changelog formats debezium-json, canal-json and maxwell-json,
// and avro-confluent / debezium-avro-confluent, which are refused (no
// Schema Registry client).
func NewFormats() *formats.Registry {
	r := formats.NewRegistry()
	r.Register(json.NewFactory())
	r.Register(csv.NewFactory())
	r.Register(raw.NewFactory())
	r.Register(cdc.NewDebezium())
	r.Register(cdc.NewCanal())
	r.Register(cdc.NewMaxwell())
	r.Register(avro.NewFactory())
	r.Register(avro.NewConfluent())
	r.Register(avro.NewDebeziumConfluent())
	return r
}

// NewRegistry returns a registry of the built-in connectors (datagen,
// values, filesystem, kafka, upsert-kafka, iceberg, jdbc, postgres-cdc, nexmark, print, blackhole) resolving the
// built-in formats. The
// print connector writes to stdout and stderr.
func NewRegistry(stdout, stderr io.Writer) *connectors.Registry {
	r := connectors.NewRegistry(NewFormats())
	r.Register(datagen.NewFactory())
	r.Register(values.NewFactory())
	r.Register(filesystem.NewFactory())
	r.Register(print.NewFactory(stdout, stderr))
	r.Register(blackhole.NewFactory())
	r.Register(kafka.NewFactory())
	r.Register(upsertkafka.NewFactory())
	r.Register(jdbc.NewFactory())
	r.Register(nexmark.NewFactory())
	r.Register(iceberg.NewFactory())
	r.Register(postgrescdc.NewFactory())
	return r
}
