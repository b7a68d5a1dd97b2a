package builtin

import (
	"io"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry(io.Discard, io.Discard)
	if got := strings.Join(r.Identifiers(), ","); got != "blackhole,datagen,filesystem,iceberg,jdbc,kafka,nexmark,postgres-cdc,print,upsert-kafka,values" {
		t.Fatalf("connectors: %s", got)
	}
	for _, id := range []string{"json", "csv", "raw"} {
		if _, err := r.Formats().Lookup(id); err != nil {
			t.Fatal(err)
		}
	}
}
