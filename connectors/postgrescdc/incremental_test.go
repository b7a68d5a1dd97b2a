package postgrescdc

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/types"
)

// incOpts are the options of an incremental snapshot in chunks of size.
func incOpts(size string, more ...string) map[string]string {
	o := map[string]string{"scan.incremental.snapshot.enabled": "true", "scan.incremental.snapshot.chunk.size": size}
	for i := 0; i+1 < len(more); i += 2 {
		o[more[i]] = more[i+1]
	}
	return o
}

// newIncSource creates the shared Source of one job.
func newIncSource(t testing.TB, tc *connectors.TableContext) *Source {
	t.Helper()
	src, err := NewFactory().CreateSource(tc)
	if err != nil {
		t.Fatal(err)
	}
	return src.(*Source)
}

// openInc opens subtask's reader of src; hook (may be nil) is called
// between a chunk's steps.
func openInc(t testing.TB, src *Source, subtask, parallelism int, pos []byte, hook func(stage string, chunk int)) *incReader {
	t.Helper()
	sr, err := src.NewReader(subtask, parallelism)
	if err != nil {
		t.Fatal(err)
	}
	r := sr.(*incReader)
	r.hook = hook
	if pos != nil {
		if err := r.RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// readInc reads until n rows arrived (see readN).
func readInc(t *testing.T, r *incReader, n int) []string {
	t.Helper()
	return readRows(t, r, r.cfg, n, 4)
}

// readChunks does k reads of chunks and returns their rows.
func readChunks(t *testing.T, r *incReader, k int) ([]string, exec.ReadResult) {
	t.Helper()
	var got []string
	var res exec.ReadResult
	b := types.NewBatch(len(r.cfg.physical)+len(r.cfg.meta), 4)
	for i := 0; i < k; i++ {
		b.Reset()
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		res, err = r.Read(ctx, b)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range b.Rows {
			got = append(got, render(b.Kinds[i], row, len(r.cfg.physical)))
		}
	}
	return got, res
}

const tenRows = `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz);
ALTER TABLE t REPLICA IDENTITY FULL;
INSERT INTO t SELECT i, chr(96 + i), i, NULL FROM generate_series(1, 10) i`

// TestChunkSplitting: ids 1..10 in chunks of 3 are split at 4, 7 and 10
// (each boundary the key 3 rows after the previous one, from MIN = 1):
// (-inf,4) [4,7) [7,10) [10,+inf). A string key splits byte-wise.
func TestChunkSplitting(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	src := newIncSource(t, tableCtx(db, "split_slot", true, false, map[string]string{"scan.incremental.snapshot.enabled": "true", "scan.incremental.snapshot.chunk.size": "3"}))
	r := openInc(t, src, 0, 1, nil, nil)
	pos, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	var p incPosition
	if err := json.Unmarshal(pos, &p); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p.Chunks)
	want := `[{"table":"public.t","hi":"4"},{"table":"public.t","lo":"4","hi":"7"},{"table":"public.t","lo":"7","hi":"10"},{"table":"public.t","lo":"10"}]`
	if string(got) != want {
		t.Errorf("chunks %s, want %s", got, want)
	}
	if p.Start == "" || p.Slot != "split_slot" {
		t.Errorf("position %s: want the slot and its start", pos)
	}

	// Strings: 'B' < 'a' < 'b' byte-wise (not in a linguistic collation);
	// 5 keys in chunks of 2 are split at 'a' and 'c'.
	db.Exec(t, `CREATE TABLE s (id text PRIMARY KEY, v text, n numeric(10,2), ts timestamptz); ALTER TABLE s REPLICA IDENTITY FULL;
INSERT INTO s VALUES ('b', 'x', 1, NULL), ('B', 'y', 2, NULL), ('a', 'z', 3, NULL), ('c', 'w', 4, NULL), ('ab', 'v', 5, NULL)`)
	tc := tableCtx(db, "split_s", true, false, incOpts("2", "table-name", "s"))
	tc.Physical[0].Type = types.StringType.WithNullable(false)
	r2 := openInc(t, newIncSource(t, tc), 0, 1, nil, nil)
	pos, _ = r2.SnapshotPosition()
	p = incPosition{}
	_ = json.Unmarshal(pos, &p)
	got, _ = json.Marshal(p.Chunks)
	// B a ab b c: from B, 2 rows on is 'ab'; from 'ab' 2 on is 'c'.
	want = `[{"table":"public.s","hi":"ab"},{"table":"public.s","lo":"ab","hi":"c"},{"table":"public.s","lo":"c"}]`
	if string(got) != want {
		t.Errorf("string chunks %s, want %s", got, want)
	}
	rows, _ := readChunks(t, r2, 3)
	for i, row := range rows {
		rows[i] = row[:strings.Index(row, ",")]
	}
	equal(t, "string chunk rows", rows, []string{"+I(B", "+I(a", "+I(ab", "+I(b", "+I(c"})
}

// TestIncrementalSnapshotWithChanges: changes committed while a chunk is
// read (after its cursor's snapshot, before its high watermark) appear
// once, in the chunk; changes after the high watermark, or to a chunk
// already emitted, come from the stream; nothing appears twice.
func TestIncrementalSnapshotWithChanges(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	src := newIncSource(t, tableCtx(db, "inc_changes", true, false, map[string]string{
		"scan.incremental.snapshot.enabled": "true", "scan.incremental.snapshot.chunk.size": "3", "scan.snapshot.fetch.size": "2",
	}))
	hook := func(stage string, chunk int) {
		switch {
		case stage == "select" && chunk == 1:
			// After chunk [4,7)'s snapshot: the chunk's backfill applies
			// these to it, the stream drops them; chunk 0 is emitted
			// already, so the update of 2 comes from the stream.
			db.Exec(t, `UPDATE t SET v = 'e2' WHERE id = 5`)
			db.Exec(t, `DELETE FROM t WHERE id = 6`)
			db.Exec(t, `INSERT INTO t VALUES (11, 'k', 11, NULL)`) // for chunk [10,+inf), not read yet
			db.Exec(t, `UPDATE t SET v = 'b2' WHERE id = 2`)
		case stage == "hw" && chunk == 1:
			db.Exec(t, `UPDATE t SET v = 'd2' WHERE id = 4`) // after the HW: the stream's
		}
	}
	r := openInc(t, src, 0, 1, nil, hook)
	snap, res := readChunks(t, r, 4)
	if !res.Flush {
		t.Error("the read of the last chunk did not ask for a flush")
	}
	equal(t, "snapshot", snap, []string{
		"+I(1,a,1.00,null)", "+I(2,b,2.00,null)", "+I(3,c,3.00,null)",
		"+I(4,d,4.00,null)", "+I(5,e2,5.00,null)",
		"+I(7,g,7.00,null)", "+I(8,h,8.00,null)", "+I(9,i,9.00,null)",
		"+I(10,j,10.00,null)", "+I(11,k,11.00,null)",
	})
	db.Exec(t, `UPDATE t SET v = 'j2' WHERE id = 10`)
	equal(t, "stream", readInc(t, r, 6), []string{
		"-U(2,b,2.00,null)", "+U(2,b2,2.00,null)",
		"-U(4,d,4.00,null)", "+U(4,d2,4.00,null)",
		"-U(10,j,10.00,null)", "+U(10,j2,10.00,null)",
	})
	// What the job shows equals the table.
	want := db.Query(t, `SELECT id || ',' || v FROM t ORDER BY id`)
	if strings.Join(want, " ") != "1,a 2,b2 3,c 4,d2 5,e2 7,g 8,h 9,i 10,j2 11,k" {
		t.Errorf("table %v", want)
	}
}

// TestIncrementalRestoreBetweenChunks: a checkpoint after two chunks
// records them; the restored reader reads the other two (seeing the
// changes made meanwhile) and streams only what no chunk holds.
func TestIncrementalRestoreBetweenChunks(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	tc := tableCtx(db, "inc_restore", true, false, incOpts("3"))
	r := openInc(t, newIncSource(t, tc), 0, 1, nil, nil)
	first, _ := readChunks(t, r, 2)
	equal(t, "first two chunks", first, []string{
		"+I(1,a,1.00,null)", "+I(2,b,2.00,null)", "+I(3,c,3.00,null)",
		"+I(4,d,4.00,null)", "+I(5,e,5.00,null)", "+I(6,f,6.00,null)",
	})
	pos, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	// A third chunk read after the checkpoint is lost with the crash.
	readChunks(t, r, 1)
	r.Close()
	db.Exec(t, `UPDATE t SET v = 'a2' WHERE id = 1`) // emitted chunk: the stream's
	db.Exec(t, `UPDATE t SET v = 'h2' WHERE id = 8`) // chunk not yet read: its
	db.Exec(t, `DELETE FROM t WHERE id = 10`)
	r2 := openInc(t, newIncSource(t, tc), 0, 1, pos, nil)
	rest, _ := readChunks(t, r2, 2)
	equal(t, "chunks after the restore", rest, []string{"+I(7,g,7.00,null)", "+I(8,h2,8.00,null)", "+I(9,i,9.00,null)"})
	equal(t, "stream", readInc(t, r2, 2), []string{"-U(1,a,1.00,null)", "+U(1,a2,1.00,null)"})
	// A checkpoint while streaming restores the stream directly.
	pos2, err := r2.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	db.Exec(t, `INSERT INTO t VALUES (12, 'l', 12, NULL)`)
	r3 := openInc(t, newIncSource(t, tc), 0, 1, pos2, nil)
	equal(t, "stream after the second restore", readInc(t, r3, 1), []string{"+I(12,l,12.00,null)"})
}

// TestIncrementalParallelReaders: two subtasks split the chunks (even and
// odd); subtask 0 streams only after subtask 1 reported its chunks, and
// drops a change subtask 1's chunk holds.
func TestIncrementalParallelReaders(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	src := newIncSource(t, tableCtx(db, "inc_par", true, false, incOpts("3")))
	if p := src.Parallelism(2); p != 2 {
		t.Fatalf("Parallelism(2) = %d", p)
	}
	r0 := openInc(t, src, 0, 2, nil, nil)
	r1 := openInc(t, src, 1, 2, nil, func(stage string, chunk int) {
		if stage == "select" && chunk == 3 {
			db.Exec(t, `UPDATE t SET v = 'j2' WHERE id = 10`)
		}
	})
	c0, _ := readChunks(t, r0, 2) // chunks 0 and 2
	equal(t, "subtask 0", c0, []string{"+I(1,a,1.00,null)", "+I(2,b,2.00,null)", "+I(3,c,3.00,null)", "+I(7,g,7.00,null)", "+I(8,h,8.00,null)", "+I(9,i,9.00,null)"})
	// Subtask 0 is done, subtask 1 is not: no stream yet.
	if rows, _ := readChunks(t, r0, 1); len(rows) != 0 || r0.phase == phaseStream {
		t.Fatalf("subtask 0 streams before subtask 1 finished: %v", rows)
	}
	c1, res := readChunks(t, r1, 2) // chunks 1 and 3
	equal(t, "subtask 1", c1, []string{"+I(4,d,4.00,null)", "+I(5,e,5.00,null)", "+I(6,f,6.00,null)", "+I(10,j2,10.00,null)"})
	if !res.Flush {
		t.Error("subtask 1's last chunk did not ask for a flush")
	}
	db.Exec(t, `UPDATE t SET v = 'a2' WHERE id = 1`)
	readChunks(t, r1, 1) // reports to the coordinator, then waits
	equal(t, "stream", readInc(t, r0, 2), []string{"-U(1,a,1.00,null)", "+U(1,a2,1.00,null)"})
	// The backfill slots are gone (they would hold back the WAL); the
	// main slot streams.
	equal(t, "slots", db.Query(t, `SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'inc_par%' ORDER BY 1`), []string{"inc_par"})
}

// TestIncrementalOptionErrors: the incremental snapshot's options are
// checked, naming the option.
func TestIncrementalOptionErrors(t *testing.T) {
	db := pgtest.NewDB(t)
	for _, c := range []struct {
		opts map[string]string
		pk   bool
		want string
	}{
		{incOpts("0"), true, "Invalid value for option 'scan.incremental.snapshot.chunk.size': 0."},
		{incOpts("3", "scan.snapshot.fetch.size", "-1"), true, "Invalid value for option 'scan.snapshot.fetch.size': -1."},
		{incOpts("3"), false, "declare PRIMARY KEY (...) NOT ENFORCED"},
		{incOpts("3", "scan.incremental.snapshot.chunk.key-column", "v"), true, "Invalid value for option 'scan.incremental.snapshot.chunk.key-column': 'v'. The chunk key column must be one of the primary key columns [id]"},
		{incOpts("3", "scan.incremental.snapshot.backfill.skip", "maybe"), true, "'scan.incremental.snapshot.backfill.skip'"},
		{map[string]string{"scan.incremental.snapshot.chunk.size": "3"}, true, "Option 'scan.incremental.snapshot.chunk.size' applies to the incremental snapshot only"},
	} {
		_, err := NewFactory().CreateSource(tableCtx(db, "errs", c.pk, false, c.opts))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("options %v: error %v, want it to contain %q", c.opts, err, c.want)
		}
	}
	db.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz)`)
	tc := tableCtx(db, "errs", true, false, incOpts("3", "changelog-mode", "upsert"))
	tc.PrimaryKey = []int{2, 0} // the default chunk key, the first key column, is DECIMAL
	_, err := NewFactory().CreateSource(tc)
	if err == nil || !strings.Contains(err.Error(), "the chunk key column n is of type DECIMAL(10, 2)") {
		t.Errorf("DECIMAL chunk key: %v", err)
	}
}

// TestIncrementalBackfillSkip: with the backfill skipped, a change made
// while a chunk is read may appear in the chunk and again in the stream
// (at-least-once), never be lost.
func TestIncrementalBackfillSkip(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	src := newIncSource(t, tableCtx(db, "inc_skip", true, false, incOpts("3", "scan.incremental.snapshot.backfill.skip", "true")))
	r := openInc(t, src, 0, 1, nil, func(stage string, chunk int) {
		if stage == "select" && chunk == 0 {
			db.Exec(t, `UPDATE t SET v = 'b2' WHERE id = 2`) // after the snapshot of chunk 0: not in it
			db.Exec(t, `UPDATE t SET v = 'e2' WHERE id = 5`) // before chunk 1: in it, and streamed again
		}
	})
	snap, _ := readChunks(t, r, 4)
	sort.Strings(snap)
	equal(t, "snapshot", snap, []string{
		"+I(1,a,1.00,null)", "+I(10,j,10.00,null)", "+I(2,b,2.00,null)", "+I(3,c,3.00,null)", "+I(4,d,4.00,null)",
		"+I(5,e2,5.00,null)", "+I(6,f,6.00,null)", "+I(7,g,7.00,null)", "+I(8,h,8.00,null)", "+I(9,i,9.00,null)",
	})
	equal(t, "stream", readInc(t, r, 4), []string{"-U(2,b,2.00,null)", "+U(2,b2,2.00,null)", "-U(5,e,5.00,null)", "+U(5,e2,5.00,null)"})
}

// TestChunkKeyColumn: with a composite primary key (n, id) the chunk key
// column may be its second column. In upsert mode (REPLICA IDENTITY
// DEFAULT) a delete carries the key only, and still finds its chunk.
func TestChunkKeyColumn(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t (id int, v text, n numeric(10,2), ts timestamptz, PRIMARY KEY (n, id));
INSERT INTO t VALUES (1, 'a', 1, NULL), (2, 'b', 1, NULL), (3, 'c', 1, NULL), (4, 'd', 2, NULL), (5, 'e', 3, NULL)`)
	// Chunks of 2 by id: split at 3 and 5.
	tc := tableCtx(db, "key_id", true, false, incOpts("2", "changelog-mode", "upsert", "scan.incremental.snapshot.chunk.key-column", "id"))
	tc.PrimaryKey = []int{2, 0}
	r := openInc(t, newIncSource(t, tc), 0, 1, nil, func(stage string, chunk int) {
		if stage == "select" && chunk == 1 {
			db.Exec(t, `DELETE FROM t WHERE id = 4`) // in chunk [3,5): the backfill removes it
			db.Exec(t, `DELETE FROM t WHERE id = 1`) // chunk 0 is out: the stream's
		}
	})
	pos, _ := r.SnapshotPosition()
	var p incPosition
	_ = json.Unmarshal(pos, &p)
	got, _ := json.Marshal(p.Chunks)
	if want := `[{"table":"public.t","hi":"3"},{"table":"public.t","lo":"3","hi":"5"},{"table":"public.t","lo":"5"}]`; string(got) != want {
		t.Errorf("chunks by id %s, want %s", got, want)
	}
	snap, _ := readChunks(t, r, 3)
	equal(t, "snapshot", snap, []string{"+I(1,a,1.00,null)", "+I(2,b,1.00,null)", "+I(3,c,1.00,null)", "+I(5,e,3.00,null)"})
	equal(t, "stream", readInc(t, r, 1), []string{"-D(1,null,1.00,null)"})
}

// TestIncrementalParallelRestore: two subtasks checkpoint after one chunk
// each; chunks read after the checkpoint are lost with the crash (and the
// high watermarks they published with the coordinator of the crashed
// attempt). The restored attempt reads them again, seeing the changes made
// in between, and its stream repeats nothing a chunk holds and misses
// nothing.
func TestIncrementalParallelRestore(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, tenRows)
	tc := tableCtx(db, "inc_prestore", true, false, incOpts("3"))
	src := newIncSource(t, tc)
	r0 := openInc(t, src, 0, 2, nil, nil)
	r1 := openInc(t, src, 1, 2, nil, nil)
	a0, _ := readChunks(t, r0, 1)
	a1, _ := readChunks(t, r1, 1)
	equal(t, "first chunks", append(a0, a1...), []string{
		"+I(1,a,1.00,null)", "+I(2,b,2.00,null)", "+I(3,c,3.00,null)",
		"+I(4,d,4.00,null)", "+I(5,e,5.00,null)", "+I(6,f,6.00,null)",
	})
	p0, err := r0.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	p1, err := r1.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	readChunks(t, r1, 2) // chunk 3, then the report: lost with the crash
	r0.Close()
	r1.Close()
	db.Exec(t, `UPDATE t SET v = 'j2' WHERE id = 10`) // chunk 3, read again: in it
	db.Exec(t, `UPDATE t SET v = 'e2' WHERE id = 5`)  // chunk 1, restored as emitted: the stream's
	// The same Source, as a restarted attempt of the job uses it.
	n0 := openInc(t, src, 0, 2, p0, nil)
	n1 := openInc(t, src, 1, 2, p1, nil)
	b0, _ := readChunks(t, n0, 1)
	b1, _ := readChunks(t, n1, 2)
	equal(t, "chunks after the restore", append(b0, b1...), []string{"+I(7,g,7.00,null)", "+I(8,h,8.00,null)", "+I(9,i,9.00,null)", "+I(10,j2,10.00,null)"})
	equal(t, "stream", readInc(t, n0, 2), []string{"-U(5,e,5.00,null)", "+U(5,e2,5.00,null)"})
	db.Exec(t, `DELETE FROM t WHERE id = 10`)
	equal(t, "stream after the snapshot", readInc(t, n0, 1), []string{"-D(10,j2,10.00,null)"})
	// The consistent reader refuses the incremental position.
	if err := openReaderErr(tableCtx(db, "inc_prestore", true, false, nil), p0); err == nil || !strings.Contains(err.Error(), "is of an incremental snapshot ('scan.incremental.snapshot.enabled' = 'true')") {
		t.Errorf("restore of an incremental position without the option: %v", err)
	}
}

func openReaderErr(tc *connectors.TableContext, pos []byte) error {
	src, err := NewFactory().CreateSource(tc)
	if err != nil {
		return err
	}
	sr, err := src.NewReader(0, 1)
	if err != nil {
		return err
	}
	return sr.(exec.CheckpointedReader).RestorePosition(pos)
}
