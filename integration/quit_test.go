package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/shell"
	"github.com/flinksql/flinksql/types"
)

// countingFactory is datagen whose readers count the rows they hand to the
// job and close reached once there are at least n.
type countingFactory struct {
	n       int64
	read    atomic.Int64
	reached chan struct{}
}

// connector is the 'counting-datagen' connector of f.
func (f *countingFactory) connector() *wrappedDatagen {
	return newWrappedDatagen("counting-datagen", func(r exec.CheckpointedReader) exec.SourceReader {
		return &countingReader{CheckpointedReader: r, f: f}
	})
}

type countingReader struct {
	exec.CheckpointedReader
	f *countingFactory
}

func (r *countingReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	before := b.Len()
	res, err := r.CheckpointedReader.Read(ctx, b)
	n := r.f.read.Add(int64(b.Len() - before))
	if n >= r.f.n && n-int64(b.Len()-before) < r.f.n {
		close(r.f.reached)
	}
	return res, err
}

// A script whose unbounded INSERT is running when the run ends (SIGTERM or
// Ctrl-C with -f, modelled by cancelling the run's context) stops the job
// with a final checkpoint: the exactly-once filesystem sink's committed
// output then holds every row the job read, exactly once, and the shell
// says so. The final checkpoint is kept: running the script again resumes
// after it, and the two runs together committed every row once. Before, the
// job was cancelled and, with no checkpoint due yet, nothing it read was
// ever committed.
func TestScriptEndStopsJobsWithFinalCheckpoint(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	script := fmt.Sprintf(`
CREATE TABLE src (id BIGINT) WITH ('connector' = 'counting-datagen', 'rows-per-second' = '5000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '1000000000');
CREATE TABLE fs_out (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO fs_out SELECT id FROM src;
`, out)
	// runUntilRead runs the script until its source read n rows, then
	// ends the run as SIGTERM does; it returns what the shell printed and
	// how many rows the source read.
	runUntilRead := func(n int64) (string, int) {
		f := &countingFactory{n: n, reached: make(chan struct{})}
		reg := builtin.NewRegistry(os.Stdout, os.Stderr)
		reg.Register(f.connector())
		s, err := session.New(session.Options{Registry: reg, Stderr: testWriter{t}, Config: map[string]string{
			"execution.checkpointing.interval": "1 h", // no periodic checkpoint during the test
			"state.checkpoints.dir":            filepath.Join(dir, "checkpoints"),
			"pipeline.name":                    "quit-test",
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stdout, stderr strings.Builder
		result := make(chan error, 1)
		go func() { result <- shell.RunString(ctx, s, script, &stdout, &stderr) }()
		select {
		case <-f.reached: // rows are in flight or in the sink's uncommitted part file
		case err := <-result:
			t.Fatalf("the script ended early: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		cancel() // SIGTERM
		if err := <-result; err != nil {
			t.Fatalf("RunString: %v\n%s", err, stderr.String())
		}
		read := int(f.read.Load())
		if read < int(n) {
			t.Fatalf("the source read %d rows, want at least %d", read, n)
		}
		return stdout.String(), read
	}

	shown, read1 := runUntilRead(500)
	if !strings.Contains(shown, "has been stopped with a final checkpoint (1): its committed output holds everything it read; running the pipeline again resumes from that checkpoint.") {
		t.Fatalf("the shell did not say how the job was stopped:\n%s", shown)
	}
	checkExactlyOnce(t, committedIDs(t, out), read1)

	shown, read2 := runUntilRead(300)
	if !strings.Contains(shown, "has been stopped with a final checkpoint (2)") {
		t.Fatalf("the second run did not resume and stop at checkpoint 2:\n%s", shown)
	}
	checkExactlyOnce(t, committedIDs(t, out), read1+read2)
}
