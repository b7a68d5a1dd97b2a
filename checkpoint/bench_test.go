package checkpoint

import (
	"context"
	"fmt"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/state"
)

// BenchmarkCheckpoint measures one checkpoint cycle (write the changed
// entries, seal, upload, complete with retention) of a 100 000-key state in
// which 1 % of the keys changed, on file:// storage. uploaded-B/op against
// full-B/op shows how incremental the checkpoints are.
//
//	go test -run '^$' -bench Checkpoint -benchmem ./checkpoint/
func BenchmarkCheckpoint(b *testing.B) {
	for _, kind := range []state.Kind{state.RocksDB, state.Hashmap} {
		b.Run(string(kind), func(b *testing.B) {
			ctx := context.Background()
			st, err := OpenStorage(ctx, b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			m, err := NewManager(ctx, st, "bench", 1, false)
			if err != nil {
				b.Fatal(err)
			}
			rs := NewRuntimeStore(m, kind, b.TempDir(), nil)
			is, err := rs.OpenInstance("v1-0", 0, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer is.Close()
			const keys = 100_000
			value := make([]byte, 100)
			key := make([]byte, 0, 16)
			id := exec.CheckpointID(0)
			checkpoint := func(from, n int) exec.InstanceAck {
				w := is.Writer()
				for i := from; i < from+n; i++ {
					k := i % keys
					key = fmt.Appendf(key[:0], "key-%08d", k)
					value[0] = byte(id)
					if err := w.Put(k%128, key, value); err != nil {
						b.Fatal(err)
					}
				}
				id++
				s, err := is.Seal(id, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Discard()
				ack, err := s.Persist(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := rs.Complete(ctx, id, []exec.InstanceAck{ack}); err != nil {
					b.Fatal(err)
				}
				return ack
			}
			checkpoint(0, keys)
			var uploaded, full int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ack := checkpoint(i*keys/100, keys/100)
				uploaded += ack.UploadedBytes
				full += ack.FullBytes
			}
			b.ReportMetric(float64(uploaded)/float64(b.N), "uploaded-B/op")
			b.ReportMetric(float64(full)/float64(b.N), "full-B/op")
		})
	}
}
