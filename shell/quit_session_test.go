package shell

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/connectors/builtin"
	"github.com/flinksql/flinksql/connectors/datagen"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// readGate is datagen whose readers close reached once they handed n rows
// to the job.
type readGate struct {
	*datagen.Factory
	n       int64
	read    atomic.Int64
	reached chan struct{}
}

func (f *readGate) Identifier() string { return "gated-datagen" }

func (f *readGate) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	inner := *tc
	inner.Options = map[string]string{}
	for k, v := range tc.Options {
		inner.Options[k] = v
	}
	inner.Options["connector"] = "datagen"
	src, err := f.Factory.CreateSource(&inner)
	if err != nil {
		return nil, err
	}
	return &gatedSource{ScanSource: src, f: f}, nil
}

type gatedSource struct {
	connectors.ScanSource
	f *readGate
}

func (s *gatedSource) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r, err := s.ScanSource.NewReader(subtask, parallelism)
	if err != nil {
		return nil, err
	}
	return &gatedReader{CheckpointedReader: r.(exec.CheckpointedReader), f: s.f}, nil
}

type gatedReader struct {
	exec.CheckpointedReader
	f *readGate
}

func (r *gatedReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	before := b.Len()
	res, err := r.CheckpointedReader.Read(ctx, b)
	got := int64(b.Len() - before)
	if n := r.f.read.Add(got); n >= r.f.n && n-got < r.f.n {
		close(r.f.reached)
	}
	return res, err
}

// gatedLines answers the REPL from a list of lines; before a line it may
// wait for a channel.
type gatedLines struct {
	lines   []string
	waitFor map[int]<-chan struct{}
	i       int
	prompts []string
}

func (g *gatedLines) readLine(prompt string) (string, error) {
	g.prompts = append(g.prompts, prompt)
	if g.i >= len(g.lines) {
		return "", os.ErrClosed
	}
	if ch := g.waitFor[g.i]; ch != nil {
		<-ch
	}
	g.i++
	return g.lines[g.i-1], nil
}

func (g *gatedLines) saveHistory(string) {}

// QUIT; in the interactive shell with an INSERT into an exactly-once
// filesystem sink running: once confirmed, the job is stopped with a final
// checkpoint and the sink's committed output holds every row the job read
// (before, the job was cancelled at exit and, with no checkpoint due yet,
// none of it was committed).
// The message says what running the pipeline again does: a named job
// resumes from the final checkpoint, an unnamed one starts afresh.
func TestQuitCommitsRunningJobOutput(t *testing.T) {
	t.Run("named", func(t *testing.T) {
		quitCommits(t, "quit-repl", "running the pipeline again resumes from that checkpoint.")
	})
	t.Run("unnamed", func(t *testing.T) {
		quitCommits(t, "", "The job has no 'pipeline.name', so running it again starts afresh; to resume, set 'execution.state-recovery.path' to that checkpoint's chk-1 directory")
	})
}

func quitCommits(t *testing.T, name, then string) {
	dir := t.TempDir()
	gate := &readGate{Factory: datagen.NewFactory(), n: 400, reached: make(chan struct{})}
	reg := builtin.NewRegistry(os.Stdout, os.Stderr)
	reg.Register(gate)
	conf := map[string]string{
		"execution.checkpointing.interval": "1 h",
		"state.checkpoints.dir":            filepath.Join(dir, "checkpoints"),
	}
	if name != "" {
		conf["pipeline.name"] = name
	}
	s, err := session.New(session.Options{Registry: reg, Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(dir, "out")
	lr := &gatedLines{lines: []string{
		"CREATE TABLE src (id BIGINT) WITH ('connector' = 'gated-datagen', 'rows-per-second' = '5000',",
		"  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '1000000000');",
		"CREATE TABLE fs_out (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '" + out + "', 'format' = 'csv');",
		"INSERT INTO fs_out SELECT id FROM src;",
		"QUIT;",
		"y",
	}, waitFor: map[int]<-chan struct{}{4: gate.reached}}
	var stdout, stderr syncBuffer
	r := &runner{be: executorBackend{s}, out: &stdout, errOut: &stderr}
	r.makeInteractive(context.Background(), &stderr)
	if err := r.interactiveLoop(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	if got := lr.prompts[len(lr.prompts)-1]; got != "Stop them and quit? (y/N) " {
		t.Fatalf("last prompt %q, want the question", got)
	}
	if !strings.Contains(stdout.String(), "has been stopped with a final checkpoint (1): its committed output holds everything it read") ||
		!strings.Contains(stdout.String(), then) {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	// Every row read is committed, once: ids 0 .. read-1 in visible files.
	var ids []int
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			id, err := strconv.Atoi(sc.Text())
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		f.Close()
	}
	sort.Ints(ids)
	read := int(gate.read.Load())
	if len(ids) != read || read < 400 {
		t.Fatalf("committed %d rows, the source read %d (at least 400)", len(ids), read)
	}
	for i, id := range ids {
		if id != i {
			t.Fatalf("committed row %d is id %d: a gap or a duplicate", i, id)
		}
	}
}
