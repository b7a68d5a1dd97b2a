package values

import (
	"strings"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/types"
)

// 'sink.parallelism' fixes the number of the values sink's subtasks.
func TestSinkParallelism(t *testing.T) {
	tc := func(opts map[string]string) *connectors.TableContext {
		all := map[string]string{"connector": "values"}
		for k, v := range opts {
			all[k] = v
		}
		return &connectors.TableContext{Name: "default_catalog.default_database.v", ObjectName: "v", Options: all,
			Physical: types.Schema{{Name: "a", Type: types.IntType}}}
	}
	f := NewFactory()
	s, err := f.CreateSink(tc(map[string]string{"sink.parallelism": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Parallelism(8); got != 3 {
		t.Fatalf("parallelism %d with sink.parallelism 3", got)
	}
	s, _ = f.CreateSink(tc(nil))
	if got := s.Parallelism(8); got != 8 {
		t.Fatalf("parallelism %d without the option, want the default 8", got)
	}
	_, err = f.CreateSink(tc(map[string]string{"sink.parallelism": "0"}))
	if err == nil || !strings.Contains(err.Error(), "Invalid value for option 'sink.parallelism'") {
		t.Fatalf("error %v", err)
	}
}
