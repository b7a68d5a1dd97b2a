package kv_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/flinksql/flinksql/state/image"
	"github.com/flinksql/flinksql/state/kv"
	"github.com/flinksql/flinksql/types"
)

// An operator counting rows per key: it declares its state once, then per
// row sets the current key (with the hash the exchange routed the row by)
// and reads and writes the state; the runtime snapshots and restores it.
func Example() {
	dir, _ := os.MkdirTemp("", "kv-example")
	defer os.RemoveAll(dir)
	be, err := kv.Open(kv.Config{
		Kind:           image.RocksDB, // or image.Hashmap (no budget)
		Dir:            filepath.Join(dir, "op-1"),
		MaxParallelism: 128,
		MemoryBudget:   64 << 20,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	counts, err := kv.NewValueState(be, "count", kv.Int64{}, kv.Options{TTL: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}

	keyCols := []int{0}
	for _, row := range []types.Row{{types.String("a")}, {types.String("b")}, {types.String("a")}} {
		if err := be.SetCurrentKey(types.HashColumns(row, keyCols), []byte(row[0].S)); err != nil {
			log.Fatal(err)
		}
		n, _, err := counts.Get(nil) // nil namespace: not windowed
		if err != nil {
			log.Fatal(err)
		}
		if err := counts.Put(nil, n+1); err != nil {
			log.Fatal(err)
		}
	}

	// At a barrier: the image's files are what package checkpoint uploads.
	im, err := be.Snapshot(1)
	if err != nil {
		log.Fatal(err)
	}
	if err := im.Finish(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("image files:", len(im.Files) > 0)

	be.SetCurrentKey(types.HashColumns(types.Row{types.String("a")}, keyCols), []byte("a"))
	n, _, _ := counts.Get(nil)
	fmt.Println("count(a) =", n)
	// Output:
	// image files: true
	// count(a) = 2
}
