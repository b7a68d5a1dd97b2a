package values

import (
	"context"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec/lookup"
	"github.com/flinksql/flinksql/types"
)

var kv = types.Schema{{Name: "k", Type: types.IntType}, {Name: "v", Type: types.StringType}}

// The lookup.* options become the table's lookup cache, and 'async' its
// default lookup mode; the operator's tests (exec/lookup) show what each
// setting does.
func TestLookupCacheOptions(t *testing.T) {
	for _, c := range []struct {
		opts  map[string]string
		want  lookup.Cache
		async bool
	}{
		{map[string]string{}, lookup.Cache{}, false},
		{map[string]string{"async": "true"}, lookup.Cache{}, true},
		{map[string]string{
			"lookup.cache": "PARTIAL",
			"lookup.partial-cache.expire-after-access": "1 min",
			"lookup.partial-cache.expire-after-write":  "2 min",
			"lookup.partial-cache.max-rows":            "100",
			"lookup.partial-cache.cache-missing-key":   "false",
		}, lookup.Cache{Kind: lookup.CachePartial, ExpireAfterAccess: time.Minute, ExpireAfterWrite: 2 * time.Minute, MaxRows: 100}, false},
		{map[string]string{
			"lookup.cache":                                    "FULL",
			"lookup.full-cache.reload-strategy":               "PERIODIC",
			"lookup.full-cache.periodic-reload.interval":      "5 s",
			"lookup.full-cache.periodic-reload.schedule-mode": "FIXED_RATE",
		}, lookup.Cache{Kind: lookup.CacheFull, ReloadInterval: 5 * time.Second, FixedRate: true}, false},
		{map[string]string{
			"lookup.cache":                                    "FULL",
			"lookup.full-cache.reload-strategy":               "TIMED",
			"lookup.full-cache.timed-reload.iso-time":         "01:30:00+02:00",
			"lookup.full-cache.timed-reload.interval-in-days": "7",
		}, lookup.Cache{Kind: lookup.CacheFull, Reload: lookup.ReloadTimed, ReloadAt: time.Hour + 30*time.Minute, ReloadEveryDays: 7}, false},
	} {
		c.opts["data"] = "1,a"
		s, err := create(kv, c.opts, time.UTC)
		if err != nil {
			t.Fatalf("%v: %v", c.opts, err)
		}
		lk, err := s.Lookup([]int{0})
		if err != nil {
			t.Fatal(err)
		}
		got := lk.Cache
		if got.ReloadZone != nil {
			if _, off := time.Unix(0, 0).In(got.ReloadZone).Zone(); off != 2*3600 {
				t.Errorf("%v: reload zone offset %d, want +02:00", c.opts, off)
			}
			got.ReloadZone = nil
		}
		if got != c.want || lk.Async != c.async {
			t.Errorf("%v: cache %+v async %v, want %+v async %v", c.opts, got, lk.Async, c.want, c.async)
		}
	}
}

// Fetch finds the rows of a key, Load reads them all.
func TestLookupFetchAndLoad(t *testing.T) {
	s, err := create(kv, map[string]string{"data": "1,a\n2,b\n1,c\n,d"}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := s.Lookup([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lk.Fetcher.Fetch(context.Background(), types.Row{types.Int(1)}, nil)
	if err != nil || len(rows) != 2 || rows[0][1].Str() != "a" || rows[1][1].Str() != "c" {
		t.Fatalf("fetch 1: %v, %v", rows, err)
	}
	n := 0
	if err := lk.Loader.Load(context.Background(), func(types.Row) error { n++; return nil }); err != nil || n != 4 {
		t.Fatalf("load: %d rows, %v", n, err)
	}
}

func TestNestedValues(t *testing.T) {
	schema := types.Schema{
		{Name: "a", Type: types.ArrayType(types.IntType)},
		{Name: "m", Type: types.MapType(types.StringType, types.IntType)},
		{Name: "r", Type: types.RowType(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "s", Type: types.StringType})},
		{Name: "ar", Type: types.ArrayType(types.RowType(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "s", Type: types.StringType}))},
	}
	s, err := create(schema, map[string]string{"data": `"[1, NULL, 3]","{a=1, 'b,c'=2}","(7, 'x y')","[(1, a), (2, 'NULL'), NULL]"
[],{},"(NULL, NULL)",NULL`}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := s.Rows()
	r := rows[0]
	if a := r[0].Array(); len(a) != 3 || a[0].Int() != 1 || !a[1].IsNull() || a[2].Int() != 3 {
		t.Errorf("array: %v", a)
	}
	if m := r[1].Map(); len(m.Keys) != 2 || m.Keys[1].Str() != "b,c" || m.Values[1].Int() != 2 {
		t.Errorf("map: %+v", m)
	}
	if f := r[2].RowOf(); f[0].Int() != 7 || f[1].Str() != "x y" {
		t.Errorf("row: %v", f)
	}
	if ar := r[3].Array(); len(ar) != 3 || ar[1].RowOf()[1].Str() != "NULL" || !ar[2].IsNull() {
		t.Errorf("array of rows: %v", ar)
	}
	r = rows[1]
	if len(r[0].Array()) != 0 || r[0].IsNull() || len(r[1].Map().Keys) != 0 || !r[2].RowOf()[0].IsNull() || !r[3].IsNull() {
		t.Errorf("empty values: %v", r)
	}
	for _, bad := range []string{`"[1, x]",{},"(1, a)",[]`, `"[1",{},"(1, a)",[]`, `[],{},"(1, a, 3)",[]`} {
		if _, err := create(schema, map[string]string{"data": bad}, time.UTC); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
