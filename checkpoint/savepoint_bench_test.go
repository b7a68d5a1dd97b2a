package checkpoint

import (
	"context"
	"encoding/binary"
	"flag"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/units"
)

var savepointState = flag.String("savepointstate", "64mb", "state size of BenchmarkSavepoint")

// BenchmarkSavepoint measures, for a keyed instance holding -savepointstate
// bytes of values (1 000-byte incompressible values under 16-byte keys) on
// each backend: the time to write a savepoint of its checkpoint (download,
// conversion to the canonical entries form, upload into a local savepoint
// directory), and the time from the start of a restore of that savepoint
// to the first read, into the same backend and into the other one.
//
//	go test ./checkpoint -run '^$' -bench Savepoint -benchtime 1x -savepointstate 1gb
func BenchmarkSavepoint(b *testing.B) {
	total, err := units.ParseMemorySize(*savepointState)
	if err != nil {
		b.Fatal(err)
	}
	const valueLen = 1000
	n := int(total / valueLen)
	ctx := context.Background()
	cfgOf := func(kind state.Kind) kv.Config {
		cfg := kv.Config{MaxParallelism: 128}
		if kind == state.RocksDB {
			cfg.MemoryBudget = 256 << 20
		}
		return cfg
	}
	key := make([]byte, 16)
	setKey := func(be *kv.Backend, i int) {
		binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		if err := be.SetCurrentKeyInGroup(i%128, key); err != nil {
			b.Fatal(err)
		}
	}
	for _, kind := range []state.Kind{state.Hashmap, state.RocksDB} {
		b.Run(string(kind), func(b *testing.B) {
			st, err := OpenStorage(ctx, "file://"+filepath.ToSlash(b.TempDir()), nil)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewManager(ctx, st, testJob, 1, true)
			if err != nil {
				b.Fatal(err)
			}
			rs := NewRuntimeStore(m, kind, filepath.Join(b.TempDir(), "local"), nil)
			ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfgOf(kind))
			if err != nil {
				b.Fatal(err)
			}
			be := ki.Backend()
			vs, err := kv.NewValueState(be, "v", kv.Bytes{}, kv.Options{})
			if err != nil {
				b.Fatal(err)
			}
			val := make([]byte, valueLen)
			rnd := uint64(88172645463325252)
			for i := range n {
				for j := 8; j+8 <= len(val); j += 8 {
					rnd ^= rnd << 13
					rnd ^= rnd >> 7
					rnd ^= rnd << 17
					binary.LittleEndian.PutUint64(val[j:], rnd)
				}
				val[0] = byte(i)
				setKey(be, i)
				if err := vs.Put(nil, val); err != nil {
					b.Fatal(err)
				}
			}
			ss, err := ki.Seal(1)
			if err != nil {
				b.Fatal(err)
			}
			ack, err := ss.Persist(ctx)
			ss.Discard()
			if err != nil {
				b.Fatal(err)
			}
			if err := rs.Complete(ctx, 1, []exec.InstanceAck{ack}); err != nil {
				b.Fatal(err)
			}
			ki.Close()
			md, err := m.Latest(ctx)
			if err != nil {
				b.Fatal(err)
			}
			// Baseline: the checkpoint restored into the backend that took it.
			syscall.Sync()
			t0 := time.Now()
			kiN, err := NewRuntimeStore(m, kind, filepath.Join(b.TempDir(), "native"), md).(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfgOf(kind))
			if err != nil {
				b.Fatal(err)
			}
			vsN, err := kv.NewValueState(kiN.Backend(), "v", kv.Bytes{}, kv.Options{})
			if err != nil {
				b.Fatal(err)
			}
			setKey(kiN.Backend(), n/2)
			if got, ok, err := vsN.Get(nil); err != nil || !ok || got[0] != byte(n/2) {
				b.Fatalf("first read after restore: %v %v", ok, err)
			}
			native := time.Since(t0)
			kiN.Close()
			b.Logf("%s checkpoint restored into %s (its own image) to the first read in %v", kind, kind, native.Round(time.Millisecond))
			b.ReportMetric(float64(native.Milliseconds()), "restore-checkpoint-ms")
			syscall.Sync()
			b.ResetTimer()
			sp, err := WriteSavepoint(ctx, md, "file://"+filepath.ToSlash(b.TempDir()), SavepointOptions{JobID: "bench", TempDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.Logf("%s: checkpoint of %d MB; savepoint of %d MB written in %v", kind, ack.FullBytes>>20, sp.Metadata.FullBytes>>20, sp.Duration.Round(time.Millisecond))
			b.ReportMetric(float64(sp.Duration.Milliseconds()), "savepoint-ms")
			for _, target := range []state.Kind{state.Hashmap, state.RocksDB} {
				syscall.Sync()
				t0 := time.Now()
				loaded, err := Load(ctx, sp.Path, nil)
				if err != nil {
					b.Fatal(err)
				}
				ki2, err := NewRuntimeStore(m, target, filepath.Join(b.TempDir(), "restore"), loaded).(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfgOf(target))
				if err != nil {
					b.Fatal(err)
				}
				vs2, err := kv.NewValueState(ki2.Backend(), "v", kv.Bytes{}, kv.Options{})
				if err != nil {
					b.Fatal(err)
				}
				setKey(ki2.Backend(), n/2)
				got, ok, err := vs2.Get(nil)
				restore := time.Since(t0)
				if err != nil || !ok || got[0] != byte(n/2) {
					b.Fatalf("first read after restore: %v %v", ok, err)
				}
				b.Logf("%s savepoint restored into %s to the first read in %v", kind, target, restore.Round(time.Millisecond))
				b.ReportMetric(float64(restore.Milliseconds()), "restore-"+string(target)+"-ms")
				ki2.Close()
			}
		})
	}
}
