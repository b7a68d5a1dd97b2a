package values

import (
	"context"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

func sinkFor(t *testing.T, f *Factory, pk []int) *writer {
	t.Helper()
	tc := &connectors.TableContext{
		Name:       "default_catalog.default_database.out",
		ObjectName: "out",
		Options:    map[string]string{"connector": "values"},
		Physical:   types.Schema{{Name: "k", Type: types.StringType}, {Name: "n", Type: types.BigIntType}},
		PrimaryKey: pk,
	}
	s, err := f.CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return w.(*writer)
}

type change struct {
	kind types.RowKind
	k    string
	n    int64
}

func write(w *writer, cs ...change) error {
	b := types.NewBatch(2, len(cs))
	for _, c := range cs {
		r := b.Append(c.kind)
		r[0], r[1] = types.String(c.k), types.Int(c.n)
	}
	return w.Write(context.Background(), b)
}

func rows(t *testing.T, f *Factory) string {
	t.Helper()
	rs, ok := f.Results("default_catalog.default_database.out")
	if !ok {
		t.Fatal("no results")
	}
	var parts []string
	for _, r := range rs {
		parts = append(parts, r[0].Str()+"="+types.FormatSQL(r[1], types.BigIntType, nil))
	}
	return strings.Join(parts, " ")
}

func TestRetractTableMaterializes(t *testing.T) {
	f := NewFactory()
	w := sinkFor(t, f, nil)
	// a=1, b=1, then a updates to 2 and b is deleted: a=2 remains.
	err := write(w,
		change{types.Insert, "a", 1}, change{types.Insert, "b", 1},
		change{types.UpdateBefore, "a", 1}, change{types.UpdateAfter, "a", 2},
		change{types.Delete, "b", 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, f); got != "a=2" {
		t.Errorf("table = %q, want a=2", got)
	}
	// Retracting a row that is not there fails loudly.
	err = write(w, change{types.UpdateBefore, "a", 7})
	if err == nil || !strings.Contains(err.Error(), `-U["a", 7] retracts a row that is not in the table`) {
		t.Errorf("err = %v", err)
	}
}

func TestUpsertTableMaterializes(t *testing.T) {
	f := NewFactory()
	w := sinkFor(t, f, []int{0})
	err := write(w,
		change{types.Insert, "a", 1}, change{types.Insert, "b", 5},
		change{types.UpdateAfter, "a", 3}, change{types.Delete, "b", 5},
		change{types.UpdateAfter, "c", 9})
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, f); got != "a=3 c=9" {
		t.Errorf("table = %q, want a=3 c=9", got)
	}
	err = write(w, change{types.Delete, "zz", 0})
	if err == nil || !strings.Contains(err.Error(), `deletes key ["zz"], which is not in the table`) {
		t.Errorf("err = %v", err)
	}
}
