package blackhole

import (
	"context"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

func TestBlackhole(t *testing.T) {
	tc := &connectors.TableContext{Name: "b", Options: map[string]string{"connector": "blackhole"},
		Physical: types.Schema{{Name: "a", Type: types.IntType}}}
	s, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.AcceptedChangelogMode(types.Upsert); m != types.Upsert {
		t.Fatalf("accepted %v", m)
	}
	w, _ := s.NewWriter(0, 1)
	ctx := context.Background()
	b := types.NewBatch(1, 1)
	b.AppendRow(types.Delete, types.Row{types.Int(1)})
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	tc.Options["x"] = "1"
	if _, err := NewFactory().CreateSink(tc); err == nil || !strings.HasPrefix(err.Error(), "Unsupported options found for 'blackhole'.") {
		t.Fatalf("unexpected error %v", err)
	}
}
