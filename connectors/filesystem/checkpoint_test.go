package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// visibleLines returns the lines of the visible files of dir, sorted, and
// the names of the hidden files.
func visibleLines(t *testing.T, dir string) (lines, hiddenFiles []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if hidden(e.Name()) {
			hiddenFiles = append(hiddenFiles, e.Name())
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return lines, hiddenFiles
}

func newTestWriter(t *testing.T, dir string, subtask int, opts map[string]string) *Writer {
	t.Helper()
	snk, err := NewFactory().CreateSink(tableContext(dir, opts))
	if err != nil {
		t.Fatal(err)
	}
	w, err := snk.NewWriter(subtask, 2)
	if err != nil {
		t.Fatal(err)
	}
	return w.(*Writer)
}

func writeRows(t *testing.T, w *Writer, ids ...int64) {
	t.Helper()
	b := types.NewBatch(2, len(ids))
	for _, id := range ids {
		b.AppendRow(types.Insert, types.Row{types.Int(id), types.String("r")})
	}
	if err := w.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

func lines(ids ...int) []string {
	var out []string
	for _, id := range ids {
		out = append(out, types.FormatSQL(types.Int(int64(id)), types.IntType, nil)+",r")
	}
	sort.Strings(out)
	return out
}

func TestSinkFilesInvisibleUntilCommit(t *testing.T) {
	dir := t.TempDir()
	// Roll after every row: several pending files per checkpoint.
	w := newTestWriter(t, dir, 0, map[string]string{OptRollingFileSize: "1b"})
	ctx := context.Background()
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	writeRows(t, w, 1, 2, 3)
	c1, err := w.PrepareCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c1) != 3 {
		t.Fatalf("%d committables, want one per rolled file (3)", len(c1))
	}
	writeRows(t, w, 4)
	if got, _ := visibleLines(t, dir); len(got) != 0 {
		t.Fatalf("visible before commit: %v", got)
	}
	if err := w.Commit(c1); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(c1); err != nil {
		t.Fatalf("second commit of the same committables: %v", err)
	}
	got, hiddenFiles := visibleLines(t, dir)
	if strings.Join(got, "|") != strings.Join(lines(1, 2, 3), "|") {
		t.Fatalf("after commit of checkpoint 1: %v", got)
	}
	if len(hiddenFiles) != 1 { // row 4's file, pending for checkpoint 2
		t.Fatalf("hidden files %v, want row 4's", hiddenFiles)
	}
	c2, err := w.PrepareCommit(2)
	if err != nil || len(c2) != 1 {
		t.Fatalf("checkpoint 2: %v %v", c2, err)
	}
	if err := w.Abort(c2); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(c2); err != nil {
		t.Fatalf("second abort: %v", err)
	}
	got, hiddenFiles = visibleLines(t, dir)
	if len(hiddenFiles) != 0 || len(got) != 3 {
		t.Fatalf("after abort: visible %v, hidden %v", got, hiddenFiles)
	}
	// An empty interval has nothing to commit.
	if c3, err := w.PrepareCommit(3); err != nil || len(c3) != 0 {
		t.Fatalf("checkpoint without rows: %v %v", c3, err)
	}
	if err := w.Commit([]exec.Committable{[]byte("junk")}); err == nil {
		t.Fatal("a malformed committable was accepted")
	}
	w.Close()
}

// TestSinkRestoreCommitsExactlyOnce runs a subtask that fails after
// checkpoint 1 completed (with or without the notification reaching it) and
// after checkpoint 2 was prepared but not completed; the restored attempt
// recommits checkpoint 1, replays the rows after it and finishes with a final
// checkpoint. Every row must be visible exactly once.
func TestSinkRestoreCommitsExactlyOnce(t *testing.T) {
	for _, notified := range []bool{true, false} {
		dir := t.TempDir()
		ctx := context.Background()
		// A file of another subtask must survive the restore of subtask 0.
		other := newTestWriter(t, dir, 1, nil)
		if err := other.Open(ctx); err != nil {
			t.Fatal(err)
		}
		writeRows(t, other, 100)

		first := newTestWriter(t, dir, 0, nil)
		if err := first.Open(ctx); err != nil {
			t.Fatal(err)
		}
		writeRows(t, first, 1, 2, 3)
		c1, err := first.PrepareCommit(1)
		if err != nil {
			t.Fatal(err)
		}
		if notified {
			if err := first.Commit(c1); err != nil {
				t.Fatal(err)
			}
		}
		writeRows(t, first, 4, 5)
		if _, err := first.PrepareCommit(2); err != nil { // checkpoint 2 never completes
			t.Fatal(err)
		}
		writeRows(t, first, 6) // in progress at the failure
		first.Close()

		// Restore from checkpoint 1: commit its committables, then open.
		second := newTestWriter(t, dir, 0, nil)
		if err := second.Commit(c1); err != nil {
			t.Fatal(err)
		}
		if err := second.Open(ctx); err != nil {
			t.Fatal(err)
		}
		got, hiddenFiles := visibleLines(t, dir)
		if strings.Join(got, "|") != strings.Join(lines(1, 2, 3), "|") {
			t.Fatalf("notified=%v: visible after restore %v", notified, got)
		}
		if len(hiddenFiles) != 1 || !strings.Contains(hiddenFiles[0], other.partPrefix) {
			t.Fatalf("notified=%v: hidden files after restore %v, want only subtask 1's", notified, hiddenFiles)
		}
		writeRows(t, second, 4, 5, 6) // the source replays from checkpoint 1
		if err := second.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := visibleLines(t, dir); len(got) != 3 {
			t.Fatalf("notified=%v: Finish of a checkpointed writer committed on its own: %v", notified, got)
		}
		final, err := second.PrepareCommit(3) // the bounded job's final checkpoint
		if err != nil {
			t.Fatal(err)
		}
		if err := second.Commit(final); err != nil {
			t.Fatal(err)
		}
		got, _ = visibleLines(t, dir)
		if strings.Join(got, "|") != strings.Join(lines(1, 2, 3, 4, 5, 6), "|") {
			t.Fatalf("notified=%v: final output %v", notified, got)
		}
		second.Close()
		other.Close()
	}
}

func TestSourcePositionResumesAtNextLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "1,a\n2,b\n3,c\n")
	writeFile(t, filepath.Join(dir, "b.txt"), "4,d\r\n\n5,e\n6,f") // CRLF, an empty line, no final newline
	writeFile(t, filepath.Join(dir, "c.txt"), "7,g\n")
	all := []string{"1,a", "2,b", "3,c", "4,d", "5,e", "6,f", "7,g"}
	src, err := NewFactory().CreateSource(tableContext(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for stop := 0; stop <= 8; stop++ { // snapshot after the stop-th Read (batches of 2)
		r, _ := src.NewReader(0, 1)
		if err := r.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		b := types.NewBatch(2, 2)
		ended := false
		for i := 0; i < stop && !ended; i++ {
			b.Reset()
			res, err := r.Read(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range b.Rows {
				got = append(got, types.FormatSQL(row[0], types.IntType, nil)+","+row[1].S)
			}
			ended = res.End
		}
		pos, err := r.(exec.CheckpointedReader).SnapshotPosition()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if !ended {
			r2, _ := src.NewReader(0, 1)
			if err := r2.(exec.CheckpointedReader).RestorePosition(pos); err != nil {
				t.Fatal(err)
			}
			rest, err := drain(t, r2)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range rest {
				got = append(got, strings.TrimSuffix(l, ",NULL"))
			}
		}
		if strings.Join(got, "|") != strings.Join(all, "|") {
			t.Errorf("snapshot after %d reads: %v", stop, got)
		}
	}
	r, _ := src.NewReader(0, 1)
	if err := r.(exec.CheckpointedReader).RestorePosition([]byte{1, 5}); err == nil {
		t.Error("a truncated position was accepted")
	}
}

// TestRestoreKeepsOtherTablesFiles: two tables write to the same directory;
// when one restores, the other's pending file (needed by its own restored
// checkpoint) must survive the cleanup.
func TestRestoreKeepsOtherTablesFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func(table string) *Writer {
		tc := tableContext(dir, nil)
		tc.Name = "default_catalog.default_database." + table
		snk, err := NewFactory().CreateSink(tc)
		if err != nil {
			t.Fatal(err)
		}
		w, err := snk.NewWriter(0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return w.(*Writer)
	}
	a := open("out1")
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	writeRows(t, a, 1, 2)
	pendingA, err := a.PrepareCommit(1) // checkpoint 1 completed, commit not yet delivered
	if err != nil {
		t.Fatal(err)
	}
	a.Close()

	// Table out2 restores first, in the same subtask: its cleanup must not
	// touch out1's pending file.
	b := open("out2")
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	b.Close()

	a2 := open("out1")
	if err := a2.Commit(pendingA); err != nil {
		t.Fatalf("out1's restored commit after out2's restore: %v", err)
	}
	if got, _ := visibleLines(t, dir); strings.Join(got, "|") != strings.Join(lines(1, 2), "|") {
		t.Fatalf("visible = %v", got)
	}
	a2.Close()
}
