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

var largeState = flag.String("largestate", "256mb", "state size of BenchmarkLargeState")

// BenchmarkLargeState measures, for a rocksdb keyed instance holding
// -largestate bytes of values (1 000-byte values under 16-byte keys, a
// 256 MB memory budget): the longest synchronous phase of a checkpoint
// after 1 % of the keys changed, the bytes uploaded, and the time from the start
// of a restore from the local checkpoint directory to the first read. The
// first checkpoint, right after the load, is full; eight rounds of 1 %
// changes follow, and the uploaded share is their mean.
//
//	go test ./checkpoint -run '^$' -bench LargeState -benchtime 1x -largestate 10gb
func BenchmarkLargeState(b *testing.B) {
	total, err := units.ParseMemorySize(*largeState)
	if err != nil {
		b.Fatal(err)
	}
	const valueLen = 1000
	n := int(total / valueLen)
	ctx := context.Background()
	st, err := OpenStorage(ctx, "file://"+filepath.ToSlash(b.TempDir()), nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewManager(ctx, st, testJob, 1, true)
	if err != nil {
		b.Fatal(err)
	}
	rs := NewRuntimeStore(m, state.RocksDB, filepath.Join(b.TempDir(), "local"), nil)
	cfg := kv.Config{MaxParallelism: 128, MemoryBudget: 256 << 20}
	ki, err := rs.(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfg)
	if err != nil {
		b.Fatal(err)
	}
	be := ki.Backend()
	vs, err := kv.NewValueState(be, "v", kv.Bytes{}, kv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	key := make([]byte, 16)
	val := make([]byte, valueLen)
	rnd := uint64(88172645463325252)
	put := func(i int, gen byte) {
		for j := 8; j+8 <= len(val); j += 8 { // incompressible, like real values
			rnd ^= rnd << 13
			rnd ^= rnd >> 7
			rnd ^= rnd << 17
			binary.LittleEndian.PutUint64(val[j:], rnd)
		}
		binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(key[8:], uint64(i))
		val[0], val[1] = gen, byte(i)
		if err := be.SetCurrentKeyInGroup(i%128, key); err != nil {
			b.Fatal(err)
		}
		if err := vs.Put(nil, val); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	for i := range n {
		put(i, 1)
	}
	b.Logf("loaded %d entries (%d MB of values) in %v", n, total>>20, time.Since(start).Round(time.Second))
	checkpointOnce := func(id exec.CheckpointID) (time.Duration, exec.InstanceAck) {
		t0 := time.Now()
		ss, err := ki.Seal(id)
		sync := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		ack, err := ss.Persist(ctx)
		ss.Discard()
		if err != nil {
			b.Fatal(err)
		}
		if err := rs.Complete(ctx, id, []exec.InstanceAck{ack}); err != nil {
			b.Fatal(err)
		}
		return sync, ack
	}
	sync1, ack1 := checkpointOnce(1)
	b.Logf("checkpoint 1 (full): sync %v, uploaded %d MB of %d MB", sync1.Round(time.Millisecond), ack1.UploadedBytes>>20, ack1.FullBytes>>20)
	// Rounds of 1 % of the keys changed, each followed by a checkpoint.
	const rounds = 8
	var maxSync time.Duration
	var uploaded, full int64
	for r := range rounds {
		for i := r; i < n; i += 100 {
			put(i, byte(2+r))
		}
		sync, ack := checkpointOnce(exec.CheckpointID(2 + r))
		b.Logf("checkpoint %d (1 %% changed): sync %v, uploaded %d MB of %d MB (%.1f %%)", 2+r, sync.Round(time.Millisecond),
			ack.UploadedBytes>>20, ack.FullBytes>>20, 100*float64(ack.UploadedBytes)/float64(ack.FullBytes))
		maxSync = max(maxSync, sync)
		uploaded += ack.UploadedBytes
		full += ack.FullBytes
	}
	if err := ki.Close(); err != nil {
		b.Fatal(err)
	}
	md, err := m.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The restore reads from a checkpoint directory written long ago, not
	// from gigabytes of dirty pages the kernel is still writing back: the
	// fsyncs of Pebble's open would wait for that writeback.
	syscall.Sync()
	b.ResetTimer()
	t0 := time.Now()
	m2, err := NewManager(ctx, st, testJob, 1, true)
	if err != nil {
		b.Fatal(err)
	}
	tManager := time.Since(t0)
	ki2, err := NewRuntimeStore(m2, state.RocksDB, filepath.Join(b.TempDir(), "local2"), md).(exec.KeyedCheckpointStore).OpenKeyedInstance("v1-0", 0, 1, cfg)
	if err != nil {
		b.Fatal(err)
	}
	tOpen := time.Since(t0)
	be2 := ki2.Backend()
	vs2, err := kv.NewValueState(be2, "v", kv.Bytes{}, kv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	i := n / 2
	binary.BigEndian.PutUint64(key, uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint64(key[8:], uint64(i))
	if err := be2.SetCurrentKeyInGroup(i%128, key); err != nil {
		b.Fatal(err)
	}
	got, ok, err := vs2.Get(nil)
	restore := time.Since(t0)
	if err != nil || !ok || got[1] != byte(i) {
		b.Fatalf("first read after restore: %v %v", ok, err)
	}
	b.StopTimer()
	b.Logf("restore from the local checkpoint directory to the first read: %v (manager %v, instance open %v)",
		restore.Round(time.Millisecond), tManager.Round(time.Millisecond), tOpen.Round(time.Millisecond))
	b.ReportMetric(float64(maxSync.Milliseconds()), "max-sync-ms")
	b.ReportMetric(float64(restore.Milliseconds()), "restore-ms")
	b.ReportMetric(100*float64(uploaded)/float64(full), "mean-uploaded-%")
	ki2.Close()
}
