package jdbc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/types"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// tableCtx describes a jdbc table (id INT, v STRING) of db with opts.
func tableCtx(db *pgtest.DB, pk bool, opts map[string]string) *connectors.TableContext {
	o := map[string]string{"connector": "jdbc", "url": db.JDBCURL() + "?user=postgres", "table-name": "t"}
	for k, v := range opts {
		o[k] = v
	}
	tc := &connectors.TableContext{Name: "default_catalog.default_database.t", ObjectName: "t", Options: o,
		Physical: types.Schema{{Name: "id", Type: types.Type{Root: types.RootInt}}, {Name: "v", Type: types.VarCharType(types.MaxLength)}}}
	if pk {
		tc.PrimaryKey = []int{0}
	}
	return tc
}

func newWriter(t *testing.T, tc *connectors.TableContext, subtask, parallelism int) exec.SinkWriter {
	t.Helper()
	s, err := NewFactory().CreateSink(tc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.NewWriter(subtask, parallelism)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func batch(kind types.RowKind, rows ...types.Row) *types.Batch {
	b := types.NewBatch(2, len(rows))
	for _, r := range rows {
		b.AppendRow(kind, r)
	}
	return b
}

func row(id int64, v string) types.Row { return types.Row{types.Int(id), types.String(v)} }

func mustQuery(t *testing.T, db *pgtest.DB, sql string) string {
	t.Helper()
	return strings.Join(db.Query(t, sql), ",")
}

// TestXATwoPhaseCommit walks the exactly-once writer through the
// checkpoint protocol: nothing is visible before the commit, a restore
// commits the restored checkpoint's transactions and rolls back later
// ones, commits are idempotent, and a transaction rolled back from outside
// is reported as lost.
func TestXATwoPhaseCommit(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	ctx := context.Background()
	opts := map[string]string{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "job-a", "sink.buffer-flush.max-rows": "1"}
	tc := tableCtx(db, true, opts)
	w := newWriter(t, tc, 0, 1).(*XAWriter)
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, batch(types.Insert, row(1, "a"), row(2, "b"))); err != nil {
		t.Fatal(err)
	}
	// Flushed (max-rows 1) into the open transaction, not visible.
	if got := mustQuery(t, db, "SELECT count(*) FROM t"); got != "0" {
		t.Fatalf("rows visible before any commit: %s", got)
	}
	c1, err := w.PrepareCommit(1)
	if err != nil || len(c1) != 1 {
		t.Fatalf("PrepareCommit(1) = %d committables, %v", len(c1), err)
	}
	if got := mustQuery(t, db, "SELECT gid FROM pg_prepared_xacts"); got != "job-a-0-1" {
		t.Fatalf("prepared: %q, want job-a-0-1", got)
	}
	if got := mustQuery(t, db, "SELECT count(*) FROM t"); got != "0" {
		t.Fatalf("prepared rows visible: %s", got)
	}
	// A barrier with nothing written prepares nothing.
	if c, err := w.PrepareCommit(2); err != nil || len(c) != 0 {
		t.Fatalf("empty PrepareCommit(2) = %d committables, %v", len(c), err)
	}
	if err := w.Commit(c1); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT id, v FROM t ORDER BY id"); got != "1|a,2|b" {
		t.Fatalf("after commit: %q", got)
	}
	// Committing again (a restore of checkpoint 1) finds it committed.
	if err := w.Commit(c1); err != nil {
		t.Fatalf("second commit: %v", err)
	}

	// Checkpoint 3 completes but its commit does not happen; checkpoint
	// 4 is prepared, and the engine dies.
	if err := w.Write(ctx, batch(types.UpdateAfter, row(1, "a3"))); err != nil {
		t.Fatal(err)
	}
	c3, err := w.PrepareCommit(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, batch(types.Delete, row(2, "b"))); err != nil {
		t.Fatal(err)
	}
	// Checkpoint 3's transaction holds key 2's lock until it commits, so
	// checkpoint 4's changes travel in the checkpoint, not prepared.
	c4, err := w.PrepareCommit(4)
	if err != nil || len(c4) != 1 || !strings.Contains(string(c4[0]), `"rows"`) {
		t.Fatalf("PrepareCommit(4) with 3 uncommitted = %q, %v; want carried rows", c4, err)
	}
	if err := w.Write(ctx, batch(types.Insert, row(9, "open"))); err != nil {
		t.Fatal(err)
	}
	w.Close() // the open transaction (row 9) dies with the connection
	if got := mustQuery(t, db, "SELECT gid FROM pg_prepared_xacts ORDER BY gid"); got != "job-a-0-3" {
		t.Fatalf("prepared after the crash: %q", got)
	}

	// Restore from checkpoint 3: commit its committable, roll back 4.
	w2 := newWriter(t, tc, 0, 1).(*XAWriter)
	if err := w2.Commit(c3); err != nil {
		t.Fatal(err)
	}
	if err := w2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT count(*) FROM pg_prepared_xacts"); got != "0" {
		t.Fatalf("prepared after the restore: %s", got)
	}
	if got := mustQuery(t, db, "SELECT id, v FROM t ORDER BY id"); got != "1|a3,2|b" {
		t.Fatalf("after the restore: %q (want checkpoint 3's update, not 4's delete nor the open row)", got)
	}

	// Had checkpoint 4 been restored, its carried rows are committed after
	// 3's transaction; twice is the same as once.
	for i := 0; i < 2; i++ {
		if err := w2.Commit(c4); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustQuery(t, db, "SELECT id, v FROM t ORDER BY id"); got != "1|a3" {
		t.Fatalf("after committing checkpoint 4's rows: %q", got)
	}

	// A prepared transaction rolled back from outside is lost output.
	if err := w2.Write(ctx, batch(types.Insert, row(5, "e"))); err != nil {
		t.Fatal(err)
	}
	c5, err := w2.PrepareCommit(5)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(t, "ROLLBACK PREPARED 'job-a-0-5'")
	var ae *exec.AbortedCommitError
	if err := w2.Commit(c5); !errors.As(err, &ae) || ae.Aborted != 1 || !strings.Contains(err.Error(), "job-a-0-5") {
		t.Fatalf("commit of a rolled-back transaction: %v", err)
	}
}

// TestXALeftoversByOwner: Open rolls back only the prefix's transactions
// of the subtasks it owns (j mod parallelism), and a second writer with
// the same prefix and subtask is refused while the first runs.
func TestXALeftoversByOwner(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int, v text)")
	for _, gid := range []string{"pre-0-7", "pre-1-7", "pre-3-8", "other-0-7", "pre-x-1"} {
		db.Exec(t, "BEGIN; INSERT INTO t VALUES (1, '"+gid+"'); PREPARE TRANSACTION '"+gid+"'")
	}
	ctx := context.Background()
	tc := tableCtx(db, false, map[string]string{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "pre"})
	w1 := newWriter(t, tc, 1, 2)
	if err := w1.Open(ctx); err != nil {
		t.Fatal(err)
	}
	// Subtask 1 of 2 owns old subtasks 1 and 3.
	if got := mustQuery(t, db, "SELECT gid FROM pg_prepared_xacts ORDER BY gid"); got != "other-0-7,pre-0-7,pre-x-1" {
		t.Fatalf("after subtask 1 opened: %q", got)
	}
	dup := newWriter(t, tc, 1, 2)
	if err := dup.Open(ctx); err == nil || !strings.Contains(err.Error(), "'sink.transactional-id-prefix' 'pre' is in use by another running job") {
		t.Fatalf("second writer with the same prefix: %v", err)
	}
	w0 := newWriter(t, tc, 0, 2)
	if err := w0.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT gid FROM pg_prepared_xacts ORDER BY gid"); got != "other-0-7,pre-x-1" {
		t.Fatalf("after subtask 0 opened: %q", got)
	}
	for _, gid := range []string{"other-0-7", "pre-x-1"} {
		db.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
	}
}

// TestXANeedsPreparedTransactions: a server with max_prepared_transactions
// = 0 fails the exactly-once sink at start, naming the setting.
func TestXANeedsPreparedTransactions(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{Settings: map[string]string{"max_prepared_transactions": "0"}})
	db := srv.CreateDB(t)
	db.Exec(t, "CREATE TABLE t (id int, v text)")
	w := newWriter(t, tableCtx(db, false, map[string]string{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "p"}), 0, 2)
	err := w.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "max_prepared_transactions = 0; set max_prepared_transactions in postgresql.conf to at least the sink's parallelism (2)") {
		t.Fatalf("Open: %v", err)
	}
}

// TestBufferFlushMaxRows: the at-least-once writer writes when the buffer
// holds 'sink.buffer-flush.max-rows' rows, and the rest at Flush.
func TestBufferFlushMaxRows(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int, v text)")
	ctx := context.Background()
	w := newWriter(t, tableCtx(db, false, map[string]string{"sink.buffer-flush.max-rows": "2", "sink.buffer-flush.interval": "0"}), 0, 1)
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, batch(types.Insert, row(1, "a"), row(2, "b"), row(3, "c"))); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT id FROM t ORDER BY id"); got != "1,2" {
		t.Fatalf("after 3 rows at max-rows 2: %q", got)
	}
	if err := w.(exec.FlushingWriter).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT id FROM t ORDER BY id"); got != "1,2,3" {
		t.Fatalf("after Flush: %q", got)
	}
}

// TestSinkRetriesAfterConnectionLoss: a flush whose connection was killed
// reconnects and succeeds within 'sink.max-retries'; with 0 retries the
// error reaches the job.
func TestSinkRetriesAfterConnectionLoss(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int, v text)")
	ctx := context.Background()
	for _, retries := range []string{"1", "0"} {
		db.Exec(t, "TRUNCATE t")
		w := newWriter(t, tableCtx(db, false, map[string]string{"sink.max-retries": retries, "sink.buffer-flush.interval": "0"}), 0, 1)
		if err := w.Open(ctx); err != nil {
			t.Fatal(err)
		}
		db.Exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
		if err := w.Write(ctx, batch(types.Insert, row(1, "a"))); err != nil {
			t.Fatal(err)
		}
		err := w.(exec.FlushingWriter).Flush(ctx)
		got := mustQuery(t, db, "SELECT count(*) FROM t")
		if retries == "1" && (err != nil || got != "1") {
			t.Errorf("max-retries 1: flush %v, %s rows", err, got)
		}
		if retries == "0" && (err == nil || got != "0") {
			t.Errorf("max-retries 0: flush %v, %s rows", err, got)
		}
		w.Close()
	}
}

// TestPartitions: Flink's split of [lower, upper] into num ranges.
func TestPartitions(t *testing.T) {
	c := &config{partCol: 0, partNum: 4, lower: 1, upper: 10}
	var got []string
	for _, p := range c.partitions() {
		got = append(got, strings.TrimSpace(strings.Join([]string{itoa(p.start), itoa(p.end)}, "-")))
	}
	// 10 values in 4: sizes 3, 3, 2, 2.
	if strings.Join(got, " ") != "1-3 4-6 7-8 9-10" {
		t.Fatalf("partitions: %v", got)
	}
	c = &config{partCol: 0, partNum: 5, lower: 0, upper: 2}
	if n := len(c.partitions()); n != 3 {
		t.Fatalf("3 values in 5 partitions: %d partitions, want 3", n)
	}
}

func itoa(n int64) string {
	return types.FormatSQL(types.Int(n), types.Type{Root: types.RootBigInt}, nil)
}

// TestBufferFlushInterval: with 'sink.buffer-flush.max-rows' = '0' rows
// wait in the buffer; the interval flusher writes them without another
// Write or a barrier. Without an interval nothing is written before Flush.
func TestBufferFlushInterval(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int, v text)")
	ctx := context.Background()
	w := newWriter(t, tableCtx(db, false, map[string]string{"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "0"}), 0, 1)
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, batch(types.Insert, row(1, "a"))); err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, db, "SELECT count(*) FROM t"); got != "0" {
		t.Fatalf("written without max-rows or interval: %s rows", got)
	}
	w.Close()

	w = newWriter(t, tableCtx(db, false, map[string]string{"sink.buffer-flush.max-rows": "0", "sink.buffer-flush.interval": "20 ms"}), 0, 1)
	if err := w.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, batch(types.Insert, row(2, "b"))); err != nil {
		t.Fatal(err)
	}
	// Await the flusher: poll the table (the event is in another process).
	deadline := time.Now().Add(30 * time.Second)
	for mustQuery(t, db, "SELECT count(*) FROM t") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the interval flusher wrote nothing in 30 s")
		}
	}
}

// TestScanPositionRestore: a reader restored from a position taken
// between reads emits exactly the rows the first one had not, also in the
// middle of a partition (the query orders by the primary key and skips
// what was read).
func TestScanPositionRestore(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 20) i")
	tc := tableCtx(db, true, map[string]string{"scan.partition.column": "id", "scan.partition.num": "2",
		"scan.partition.lower-bound": "1", "scan.partition.upper-bound": "20", "scan.fetch-size": "3"})
	src, err := NewFactory().CreateSource(tc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read := func(r exec.SourceReader, batches int) (ids []int64, end bool) {
		for i := 0; batches < 0 || i < batches; i++ {
			b := types.NewBatch(2, 8)
			res, err := r.Read(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range b.Rows {
				ids = append(ids, row[0].N)
			}
			if res.End {
				return ids, true
			}
		}
		return ids, false
	}
	// One subtask reads both partitions (1-10, 11-20), 3 rows a fetch.
	r1, _ := src.NewReader(0, 1)
	if err := r1.Open(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := read(r1, 5) // 1-3, 4-6, 7-9, 10 (partition end), 11-13
	pos, err := r1.(exec.CheckpointedReader).SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	r1.Close()
	r2, _ := src.NewReader(0, 1)
	if err := r2.(exec.CheckpointedReader).RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	if err := r2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	rest, end := read(r2, -1)
	if !end {
		t.Fatal("the restored reader did not end")
	}
	got := append(append([]int64(nil), first...), rest...)
	if len(first) != 13 || len(got) != 20 {
		t.Fatalf("read %v before and %v after the restore; want 1…13 then 14…20", first, rest)
	}
	for i, id := range got {
		if id != int64(i+1) {
			t.Fatalf("read %v before and %v after the restore; want 1…13 then 14…20", first, rest)
		}
	}
}

// TestLookupRetriesAfterConnectionLoss: a lookup whose pooled connection
// was killed succeeds on a new one within 'lookup.max-retries'; with 0 the
// error reaches the join.
func TestLookupRetriesAfterConnectionLoss(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // closes the fetchers' idle connections
	for _, retries := range []string{"1", "0"} {
		src, err := NewFactory().CreateSource(tableCtx(db, true, map[string]string{"lookup.max-retries": retries}))
		if err != nil {
			t.Fatal(err)
		}
		l, err := src.(connectors.LookupSource).Lookup([]int{0})
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Fetcher.Fetch(ctx, types.Row{types.Int(1)}, nil)
		if err != nil || len(got) != 1 || got[0][1].S != "a" {
			t.Fatalf("first lookup: %v, %v", got, err)
		}
		db.Exec(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
		got, err = l.Fetcher.Fetch(ctx, types.Row{types.Int(2)}, nil)
		switch retries {
		case "1":
			if err != nil || len(got) != 1 || got[0][1].S != "b" {
				t.Errorf("max-retries 1: %v, %v", got, err)
			}
		case "0":
			if err == nil || !strings.Contains(err.Error(), "looking up key") {
				t.Errorf("max-retries 0: %v, %v", got, err)
			}
		}
	}
}
