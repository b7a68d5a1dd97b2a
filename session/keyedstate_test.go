package session

import (
	"context"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state/image"
)

// TestKeyedStateOptions: state.backend.type and the rocksdb memory options
// reach the runtime's KeyedStateConfig; a bad value is refused on SET with
// Flink's message naming the key, and leaves the option as it was.
func TestKeyedStateOptions(t *testing.T) {
	ctx := context.Background()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Defaults: hashmap, 512 MB managed memory, managed, no fixed-per-slot.
	if got, want := s.keyedStateConfig(), (exec.KeyedStateConfig{Kind: image.Hashmap, ManagedMemory: 512 << 20}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	for _, stmt := range []string{
		"SET 'state.backend.type' = 'rocksdb';",
		"SET 'taskmanager.memory.managed.size' = '256 mb';",
		"SET 'state.backend.rocksdb.memory.managed' = 'FALSE';",
		"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '1g';",
	} {
		if _, err := s.Execute(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	want := exec.KeyedStateConfig{Kind: image.RocksDB, ManagedMemory: 256 << 20, Unmanaged: true, FixedPerSlot: 1 << 30}
	if got := s.keyedStateConfig(); got != want {
		t.Errorf("after SET: %+v, want %+v", got, want)
	}
	for _, c := range []struct{ stmt, want string }{
		{"SET 'taskmanager.memory.managed.size' = 'lots';",
			`Could not parse value 'lots' for key 'taskmanager.memory.managed.size': "lots" does not start with a number.`},
		{"SET 'taskmanager.memory.managed.size' = '12 parsecs';",
			`Could not parse value '12 parsecs' for key 'taskmanager.memory.managed.size': unknown memory unit "parsecs" in "12 parsecs".`},
		{"SET 'state.backend.rocksdb.memory.managed' = 'maybe';",
			`Could not parse value 'maybe' for key 'state.backend.rocksdb.memory.managed': expected one of [true, false].`},
		{"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '-1 mb';",
			`Could not parse value '-1 mb' for key 'state.backend.rocksdb.memory.fixed-per-slot': "-1 mb" does not start with a number.`},
	} {
		_, err := s.Execute(ctx, c.stmt)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s\n got %v\nwant %s", c.stmt, err, c.want)
		}
	}
	if got := s.keyedStateConfig(); got != want {
		t.Errorf("after refused SETs: %+v, want %+v unchanged", got, want)
	}
}
