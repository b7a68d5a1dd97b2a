package kv

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/state/image"
)

// exportSource snapshots b and returns its entries as an EntrySource read
// from a copy of the image files, as a restore downloads them.
func exportSource(t *testing.T, b *Backend, v variant, clk *fakeClock) EntrySource {
	t.Helper()
	im, err := b.Snapshot(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Finish(); err != nil {
		t.Fatal(err)
	}
	return func(fn func(k, v []byte) error) error {
		dir := filepath.Join(t.TempDir(), "export")
		mustMkdir(t, dir)
		for _, f := range im.Files {
			copyFile(t, filepath.Join(im.Dir, f.LocalName), filepath.Join(dir, f.LocalName))
		}
		return ExportImage(v.config(dir, clk), im.Files, fn)
	}
}

// TestImportRedistributes: the state of two instances (key groups 0…63 and
// 64…127, a value state, a map state with namespaces and a list state)
// imported into instances of other key-group ranges, on either backend,
// gives each exactly the entries of its key groups, with the same states.
func TestImportRedistributes(t *testing.T) {
	clk := &fakeClock{now: 1000}
	for _, from := range variants()[:2] {
		for _, to := range variants()[:2] {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				var sources []EntrySource
				all := map[int][]string{} // key group → dump lines
				for half := range 2 {
					cfg := from.config(filepath.Join(t.TempDir(), "be"), clk)
					cfg.KeyGroups = &KeyGroupRange{half * 64, half*64 + 63}
					b, err := Open(cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer b.Close()
					vs, _ := NewValueState(b, "v", String{}, Options{})
					ms, _ := NewMapState(b, "m", String{}, Int64{}, Options{})
					ls, _ := NewListState(b, "l", String{}, Options{})
					for i := range 400 {
						k := fmt.Sprintf("key-%d", i)
						kg := KeyGroupOf(hashOf(k), 128)
						if !cfg.KeyGroups.Contains(kg) {
							continue
						}
						setKey(t, b, k)
						must(t, vs.Put(nil, "v"+k))
						must(t, ms.Put([]byte("ns"), "uk", int64(i)))
						must(t, ls.Add(nil, "a"))
						must(t, ls.Add(nil, "b"))
						all[kg] = append(all[kg], k)
					}
					sources = append(sources, exportSource(t, b, from, clk))
				}
				for _, r := range []KeyGroupRange{{0, 31}, {32, 95}, {96, 127}, {0, 127}} {
					cfg := to.config(filepath.Join(t.TempDir(), "be"), clk)
					cfg.KeyGroups = &r
					b, err := Open(cfg)
					if err != nil {
						t.Fatal(err)
					}
					if err := b.Import(sources); err != nil {
						t.Fatal(err)
					}
					vs, err := NewValueState(b, "v", String{}, Options{})
					if err != nil {
						t.Fatal(err)
					}
					var want []string
					for kg, keys := range all {
						if r.Contains(kg) {
							want = append(want, keys...)
						}
					}
					sort.Strings(want)
					var got []string
					for _, line := range dump(t, b) {
						if strings.HasPrefix(line, "v|") {
							got = append(got, strings.Split(line, "|")[1])
						}
					}
					sort.Strings(got)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("range %v: %d keys of state v, want %d", r, len(got), len(want))
					}
					if n := int64(len(want)) * 3; to.kind == image.Hashmap && b.Size().Entries != n {
						t.Errorf("range %v: %d entries, want %d (value, map, list per key)", r, b.Size().Entries, n)
					}
					if len(want) > 0 {
						setKey(t, b, want[0])
						if v, ok, err := vs.Get(nil); err != nil || !ok || v != "v"+want[0] {
							t.Errorf("range %v: get %s = %q %v %v", r, want[0], v, ok, err)
						}
					}
					b.Close()
				}
			})
		}
	}
}

// TestImportConflictingDeclarations: instances whose registries disagree
// about a state cannot be merged; the import says which state.
func TestImportConflictingDeclarations(t *testing.T) {
	clk := &fakeClock{}
	v := variants()[0]
	var sources []EntrySource
	for i, codec := range []bool{true, false} {
		cfg := v.config(filepath.Join(t.TempDir(), fmt.Sprint(i)), clk)
		b, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if codec {
			_, err = NewValueState(b, "s", String{}, Options{})
		} else {
			_, err = NewValueState(b, "s", Int64{}, Options{})
		}
		must(t, err)
		sources = append(sources, exportSource(t, b, v, clk))
	}
	b := openVariant(t, v, clk)
	if err := b.Import(sources); err == nil || !strings.Contains(err.Error(), `the state declaration "s" differs`) {
		t.Errorf("Import = %v", err)
	}
}

// TestRewriteValues: after an import, RewriteValues converts every stored
// value of one state in the backend's key groups (a migration), keeps the
// TTL's last-write stamp (the values still expire an hour after they were
// written, not after the rewrite) and leaves other states alone.
func TestRewriteValues(t *testing.T) {
	for _, from := range variants()[:2] {
		for _, to := range variants()[:2] {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				clk := &fakeClock{now: 1000}
				src := openVariant(t, from, clk)
				vs, _ := NewValueState(src, "v", String{}, Options{TTL: time.Hour})
				ws, _ := NewValueState(src, "w", String{}, Options{})
				keys := []string{"a", "b", "c", "d", "e"}
				for _, k := range keys {
					setKey(t, src, k)
					must(t, vs.Put(nil, "v-"+k))
					must(t, ws.Put(nil, "w-"+k))
				}
				source := exportSource(t, src, from, clk)
				clk.now = 2000
				b := openVariant(t, to, clk)
				must(t, b.Import([]EntrySource{source}))
				calls := 0
				must(t, b.RewriteValues("v", func(v []byte) ([]byte, error) {
					calls++
					return append([]byte("new "), v...), nil
				}))
				must(t, b.RewriteValues("absent", func(v []byte) ([]byte, error) { return nil, errors.New("called") }))
				if calls != len(keys) {
					t.Errorf("rewrote %d values, want %d", calls, len(keys))
				}
				nv, err := NewValueState(b, "v", String{}, Options{TTL: time.Hour})
				must(t, err)
				nw, err := NewValueState(b, "w", String{}, Options{})
				must(t, err)
				for _, k := range keys {
					setKey(t, b, k)
					if v, ok, err := nv.Get(nil); err != nil || !ok || v != "new v-"+k {
						t.Errorf("v of %s = %q %v %v, want %q", k, v, ok, err, "new v-"+k)
					}
					if v, ok, err := nw.Get(nil); err != nil || !ok || v != "w-"+k {
						t.Errorf("w of %s = %q %v %v, want %q", k, v, ok, err, "w-"+k)
					}
				}
				clk.now = 1000 + time.Hour.Milliseconds() // written at 1000: expired now
				setKey(t, b, "a")
				if v, ok, err := nv.Get(nil); err != nil || ok {
					t.Errorf("v of a after its TTL = %q %v %v, want expired", v, ok, err)
				}
				if err := b.RewriteValues("w", func(v []byte) ([]byte, error) { return nil, errors.New("unreadable") }); err == nil || !strings.Contains(err.Error(), `rewriting state "w"`) {
					t.Errorf("a failed conversion: %v", err)
				}
			})
		}
	}
}

// TestRewriteValuesAppendingConversion: a conversion that appends to the
// value it is given (as the old RewriteValues let it write into the
// engine's memory behind the value, which corrupted a rocksdb backend's
// batch: "pebble: invalid batch") converts every value.
func TestRewriteValuesAppendingConversion(t *testing.T) {
	forVariants(t, func(t *testing.T, v variant) {
		clk := &fakeClock{now: 1}
		b := openVariant(t, v, clk)
		st, err := NewValueState(b, "acc", String{}, Options{})
		must(t, err)
		const n = 3000
		for i := range n {
			setKey(t, b, fmt.Sprintf("key-%05d", i))
			must(t, st.Put(nil, fmt.Sprintf("value-%05d", i)))
		}
		must(t, b.RewriteValues("acc", func(v []byte) ([]byte, error) { return append(v, '!'), nil }))
		for i := range n {
			setKey(t, b, fmt.Sprintf("key-%05d", i))
			want := fmt.Sprintf("value-%05d!", i)
			if got, ok, err := st.Get(nil); err != nil || !ok || got != want {
				t.Fatalf("key %d: %q %v %v, want %q", i, got, ok, err, want)
			}
		}
	})
}
