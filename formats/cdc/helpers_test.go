package cdc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
)

// customers is the table of Debezium's MySQL tutorial (inventory.customers).
var customers = types.Schema{
	{Name: "id", Type: types.IntType},
	{Name: "first_name", Type: types.StringType},
	{Name: "last_name", Type: types.StringType},
	{Name: "email", Type: types.StringType},
}

// products is the table of Flink's format documentation.
var products = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "name", Type: types.StringType},
	{Name: "description", Type: types.StringType},
	{Name: "weight", Type: types.DecimalType(10, 2)},
}

func fctx(prefix string, schema types.Schema, opts map[string]string, meta ...string) *formats.Context {
	if opts == nil {
		opts = map[string]string{}
	}
	return &formats.Context{Options: opts, Prefix: prefix, Schema: schema, Loc: time.UTC, Metadata: meta}
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll decodes one record and renders the rows it yields as
// "+I[v1, v2, ...]" with the columns' (and then the metadata's) types.
func decodeAll(t *testing.T, d formats.Decoder, data []byte, colTypes []types.Type) ([]string, error) {
	t.Helper()
	var out []string
	err := d.(formats.ChangelogDecoder).DecodeChangelog(data, func(kind types.RowKind, row types.Row) {
		if len(row) != len(colTypes) {
			t.Fatalf("row has %d slots, want %d", len(row), len(colTypes))
		}
		parts := make([]string, len(row))
		for i, v := range row {
			parts[i] = types.FormatSQL(v, colTypes[i], time.UTC)
		}
		out = append(out, kind.String()+"["+strings.Join(parts, ", ")+"]")
	})
	return out, err
}

func typesOf(s types.Schema, meta map[string]types.Type, keys ...string) []types.Type {
	var ts []types.Type
	for _, c := range s {
		ts = append(ts, c.Type)
	}
	for _, k := range keys {
		ts = append(ts, meta[k])
	}
	return ts
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
