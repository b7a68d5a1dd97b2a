package options

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestDefaultsPassTheirChecks: every declared default is a valid value of
// its option, and reads back through the typed accessor.
func TestDefaultsPassTheirChecks(t *testing.T) {
	for _, s := range Session().Specs() {
		if err := s.Check(s.Default); err != nil {
			t.Errorf("%s: default %q: %v", s.Key, s.Default, err)
		}
		if s.Description == "" || s.Type == "" {
			t.Errorf("%s: no description or type", s.Key)
		}
	}
	v := Session().NewValues()
	if got := Parallelism.Get(v); got != 1 {
		t.Errorf("parallelism.default = %d, want 1", got)
	}
	if got := BufferTimeout.Get(v); got != 100*time.Millisecond {
		t.Errorf("execution.buffer-timeout = %v, want 100ms", got)
	}
	if got := ManagedMemory.Get(v); got != 512<<20 {
		t.Errorf("taskmanager.memory.managed.size = %d, want 512 MiB", got)
	}
	if got, set := CheckpointInterval.Lookup(v); got != 0 || set {
		t.Errorf("execution.checkpointing.interval = %v (set %v), want unset", got, set)
	}
	if got := ExpMultiplier.Get(v); got != 1.5 {
		t.Errorf("backoff-multiplier = %v, want 1.5", got)
	}
}

func TestSetValidatesAndReads(t *testing.T) {
	v := Session().NewValues()
	for _, tc := range []struct{ key, value, want string }{
		{"parallelism.default", "0", "Could not parse value '0' for key 'parallelism.default': expected an integer >= 1."},
		{"execution.buffer-timeout", "soon", "Could not parse value 'soon' for key 'execution.buffer-timeout'"},
		{"state.backend.type", "leveldb", "Could not parse value 'leveldb' for key 'state.backend.type': expected one of [hashmap, rocksdb, pebble]."},
		{"state.backend", "leveldb", "for key 'state.backend.type'"},
		{"taskmanager.memory.managed.size", "lots", "Could not parse value 'lots' for key 'taskmanager.memory.managed.size'"},
		{"taskmanager.memory.managed.size", "0 mb", "the memory must be more than 0 bytes"},
		{"state.backend.rocksdb.memory.fixed-per-slot", "0", "the memory must be more than 0 bytes"},
		{"table.exec.mini-batch.enabled", "yes", "expected one of [true, false]"},
		{"restart-strategy.exponential-delay.jitter-factor", "1.5", "expected a number between 0 and 1"},
		{"table.local-time-zone", "Mars/Olympus", "the supported Zone ID is"},
	} {
		if _, err := v.Set(tc.key, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SET %s = %s: %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	if len(v.set) != 0 {
		t.Fatalf("refused values were stored: %v", v.set)
	}
	mustSet := func(k, val string) {
		t.Helper()
		if w, err := v.Set(k, val); err != nil || w != "" {
			t.Fatalf("SET %s = %s: %v %q", k, val, err, w)
		}
	}
	mustSet("parallelism.default", " 4 ")
	mustSet("state.backend", "RocksDB") // deprecated key, any case
	mustSet("taskmanager.memory.managed.size", "256 mb")
	mustSet("execution.checkpointing.interval", "10 s")
	mustSet("table.exec.mini-batch.enabled", "TRUE")
	if got := Parallelism.Get(v); got != 4 {
		t.Errorf("parallelism.default = %d, want 4", got)
	}
	if got := StateBackend.Get(v); got != "rocksdb" {
		t.Errorf("state.backend.type = %q, want rocksdb (the deprecated key sets it, the allowed spelling reads back)", got)
	}
	if got := v.Get("state.backend"); got != "RocksDB" {
		t.Errorf("Get(state.backend) = %q, want the text set", got)
	}
	if got := ManagedMemory.Get(v); got != 256<<20 {
		t.Errorf("managed size = %d, want %d", got, 256<<20)
	}
	if got, set := CheckpointInterval.Lookup(v); got != 10*time.Second || !set {
		t.Errorf("interval = %v (set %v)", got, set)
	}
	if !MiniBatchEnabled.Get(v) {
		t.Error("mini-batch not enabled")
	}
	v.Reset("state.backend")
	if StateBackend.IsSet(v) || StateBackend.Get(v) != "hashmap" {
		t.Errorf("RESET of the deprecated key left %q", StateBackend.Get(v))
	}
	v.Reset("")
	if Parallelism.IsSet(v) {
		t.Error("RESET left parallelism.default set")
	}
}

// TestUnknownKeysWarn: an undeclared key is stored (Flink accepts any key)
// with a warning naming the nearest declared key when it looks like a typo.
func TestUnknownKeysWarn(t *testing.T) {
	v := Session().NewValues()
	for _, tc := range []struct{ key, near string }{
		{"paralelism.default", "parallelism.default"},
		{"state.backend.typ", "state.backend.type"},
		{"execution.checkpointing.intervall", "execution.checkpointing.interval"},
		{"my.own.setting", ""},
	} {
		w, err := v.Set(tc.key, "x")
		if err != nil {
			t.Fatalf("%s: %v", tc.key, err)
		}
		if !strings.Contains(w, "'"+tc.key+"' is not an option flinksql reads") {
			t.Errorf("%s: warning %q", tc.key, w)
		}
		if tc.near != "" && !strings.Contains(w, "Did you mean '"+tc.near+"'?") {
			t.Errorf("%s: warning %q does not name %s", tc.key, w, tc.near)
		}
		if tc.near == "" && strings.Contains(w, "Did you mean") {
			t.Errorf("%s: warning %q suggests a key far away", tc.key, w)
		}
		if got, ok := v.Raw(tc.key); !ok || got != "x" {
			t.Errorf("%s not stored", tc.key)
		}
	}
	rows := v.List()
	found := false
	for i, r := range rows {
		if i > 0 && rows[i-1][0] >= r[0] {
			t.Fatalf("SET; is not sorted at %s", r[0])
		}
		found = found || r[0] == "my.own.setting"
	}
	if !found || len(rows) != len(Session().Specs())+4 {
		t.Errorf("SET; lists %d rows, want every declared option plus the 4 set keys", len(rows))
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"same", "same", 0}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestOptionsDoc: docs/options.md is the table Markdown generates; run
// `go test ./options -run TestOptionsDoc -update` after changing an option.
func TestOptionsDoc(t *testing.T) {
	const path = "../docs/options.md"
	want := Markdown(Session())
	if updateDoc() {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with: go test ./options -run TestOptionsDoc -update)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale; regenerate it with: go test ./options -run TestOptionsDoc -update", path)
	}
}
