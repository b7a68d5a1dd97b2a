package postgrescdc

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/internal/pgtest"
	"github.com/flinksql/flinksql/types"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const testTimeout = 60 * time.Second

// tableCtx describes the Flink table (id INT, v STRING, n DECIMAL(10,2),
// ts TIMESTAMP_LTZ(6)) over db's table t, with metadata op_ts and
// table_name when meta.
func tableCtx(db *pgtest.DB, slot string, pk, meta bool, opts map[string]string) *connectors.TableContext {
	o := map[string]string{
		"connector": Identifier, "hostname": db.Host, "port": fmt.Sprint(db.Port), "username": "postgres", "password": "unused",
		"database-name": db.Name, "schema-name": "public", "table-name": "t", "slot.name": slot, "decoding.plugin.name": "pgoutput",
	}
	for k, v := range opts {
		o[k] = v
	}
	tc := &connectors.TableContext{Name: "default_catalog.default_database.t", ObjectName: "t", Options: o,
		Physical: types.Schema{
			{Name: "id", Type: types.IntType.WithNullable(false)},
			{Name: "v", Type: types.StringType},
			{Name: "n", Type: types.DecimalType(10, 2)},
			{Name: "ts", Type: types.TimestampLTZType(6)},
		}}
	if pk {
		tc.PrimaryKey = []int{0}
	}
	if meta {
		tc.Metadata = []connectors.MetadataColumn{
			{Name: "tbl", Key: MetaTableName, Type: types.StringType, Virtual: true},
			{Name: "op_ts", Key: MetaOpTS, Type: types.TimestampLTZType(3), Virtual: true},
		}
	}
	return tc
}

func openReader(t testing.TB, tc *connectors.TableContext, pos []byte) *reader {
	t.Helper()
	src, err := NewFactory().CreateSource(tc)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := src.NewReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := sr.(*reader)
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

// render prints a row as "+I(1,a,12.50,1700000000000)" (ts in epoch ms),
// with the metadata columns after a '|'.
func render(kind types.RowKind, row types.Row, width int) string {
	var parts []string
	for i, v := range row {
		s := "null"
		switch {
		case v.IsNull():
		case i == 2:
			s = types.FormatSQL(v, types.DecimalType(10, 2), nil)
		case i == 3 || i == 5:
			s = fmt.Sprint(v.Millis())
		case v.K == types.KindString:
			s = v.Str()
		default:
			s = fmt.Sprint(v.Int())
		}
		if i == width {
			s = "|" + s
		}
		parts = append(parts, s)
	}
	return kind.String() + "(" + strings.ReplaceAll(strings.Join(parts, ","), ",|", "|") + ")"
}

// readN reads until n rows arrived (at least once; failing after the timeout), with
// batches of capacity batchCap, and returns them rendered.
func readN(t *testing.T, r *reader, n, batchCap int) []string {
	t.Helper()
	return readRows(t, r, r.cfg, n, batchCap)
}

// readRows is readN for either reader, whose table is c.
func readRows(t *testing.T, r exec.SourceReader, c *config, n, batchCap int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(testTimeout)
	b := types.NewBatch(len(c.physical)+len(c.meta), batchCap)
	for first := true; first || len(got) < n; first = false {
		if time.Now().After(deadline) {
			t.Fatalf("read %d rows of %d before the timeout: %v", len(got), n, got)
		}
		b.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := r.Read(ctx, b)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range b.Rows {
			got = append(got, render(b.Kinds[i], row, len(c.physical)))
		}
	}
	if len(got) != n {
		t.Fatalf("read %d rows, want %d: %v", len(got), n, got)
	}
	return got
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// 2024-01-02 03:04:05.5+00 is 1704164645500 ms since the epoch
// (19724 days · 86 400 000 + 3 h 4 min 5.5 s = 1704153600000 + 11045500).
const ts1, ts1Millis = "2024-01-02 03:04:05.5+00", "1704164645500"

// TestSnapshotThenStream: the snapshot shows the table as it was when the
// slot was created, although the changes made right after are committed
// before it is read; the stream then carries exactly those changes as
// +I/-U/+U/-D, with the commit time in op_ts.
func TestSnapshotThenStream(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz, extra int);
ALTER TABLE t REPLICA IDENTITY FULL;
INSERT INTO t VALUES (1, 'a', 12.5, '`+ts1+`', 0), (2, 'b', NULL, NULL, 0)`)
	r := openReader(t, tableCtx(db, "snap_stream", true, true, nil), nil)
	if reason := r.HoldCheckpoint(); !strings.Contains(reason, "initial snapshot") {
		t.Errorf("HoldCheckpoint during the snapshot = %q, want the reason", reason)
	}
	if _, err := r.SnapshotPosition(); err == nil {
		t.Error("SnapshotPosition during the snapshot succeeded")
	}
	// +05:30 is 5.5 h ahead: 2024-01-02 08:34:05.5+05:30 is ts1.
	db.Exec(t, `INSERT INTO t VALUES (3, 'c', -0.01, '2024-01-02 08:34:05.5+05:30', 0)`)
	db.Exec(t, `UPDATE t SET v = 'a2', n = 99999999.99 WHERE id = 1`)
	db.Exec(t, `DELETE FROM t WHERE id = 2`)

	snap := readN(t, r, 2, 16)
	sort.Strings(snap)
	// Snapshot rows have op_ts 0, as Flink CDC's.
	equal(t, "snapshot", snap, []string{
		"+I(1,a,12.50," + ts1Millis + "|t,0)",
		"+I(2,b,null,null|t,0)",
	})
	rows := readN(t, r, 4, 16)
	if reason := r.HoldCheckpoint(); reason != "" {
		t.Errorf("HoldCheckpoint while streaming = %q", reason)
	}
	// op_ts is the commit time: check it is recent, then blank it.
	for i, row := range rows {
		j := strings.LastIndex(row, ",")
		ms := row[j+1 : len(row)-1]
		var v int64
		fmt.Sscan(ms, &v)
		if d := time.Since(time.UnixMilli(v)); d < 0 || d > 5*time.Minute {
			t.Errorf("row %s: op_ts %d is not the recent commit time", row, v)
		}
		rows[i] = row[:j] + ",T)"
	}
	equal(t, "stream", rows, []string{
		"+I(3,c,-0.01," + ts1Millis + "|t,T)",
		"-U(1,a,12.50," + ts1Millis + "|t,T)",
		"+U(1,a2,99999999.99," + ts1Millis + "|t,T)",
		"-D(2,b,null,null|t,T)",
	})
}

// TestRestoreResumesAtCheckpoint: a position taken in the middle of a
// transaction resumes after the changes already emitted; the slot's
// confirmed LSN moves only when the checkpoint completes.
func TestRestoreResumesAtCheckpoint(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz); ALTER TABLE t REPLICA IDENTITY FULL`)
	tc := tableCtx(db, "restore_slot", true, false, map[string]string{"scan.startup.mode": "latest-offset"})
	r := openReader(t, tc, nil)
	confirmed := func() string {
		return db.Query(t, `SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'restore_slot'`)[0]
	}
	start := confirmed()
	db.Exec(t, `INSERT INTO t VALUES (1, 'x', 1, NULL)`)
	equal(t, "first transaction", readN(t, r, 1, 16), []string{"+I(1,x,1.00,null)"})
	db.Exec(t, `BEGIN; INSERT INTO t VALUES (2, 'y', 2, NULL); INSERT INTO t VALUES (3, 'z', 3, NULL); UPDATE t SET v = 'x2' WHERE id = 1; COMMIT`)
	// Capacity 2 with room kept for an update's two rows: a read stops
	// after one insert, in the middle of the transaction.
	equal(t, "before the checkpoint", readN(t, r, 1, 2), []string{"+I(2,y,2.00,null)"})
	pos, err := r.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pos), `"skip":1`) {
		t.Fatalf("position %s: want 1 change of the open transaction emitted", pos)
	}
	// The rest of the transaction is read after the checkpoint's barrier;
	// nothing is acknowledged before the checkpoint completes.
	equal(t, "after the barrier", readN(t, r, 3, 16), []string{"+I(3,z,3.00,null)", "-U(1,x,1.00,null)", "+U(1,x2,1.00,null)"})
	if got := confirmed(); got != start {
		t.Fatalf("confirmed LSN moved to %s before the checkpoint completed (was %s)", got, start)
	}
	if err := r.NotifyPositionComplete(1, pos); err != nil {
		t.Fatal(err)
	}
	var p position
	if err := json.Unmarshal(pos, &p); err != nil {
		t.Fatal(err)
	}
	want := p.LSN
	for deadline := time.Now().Add(testTimeout); confirmed() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("confirmed LSN %s, want %s after the checkpoint completed", confirmed(), want)
		}
		readN(t, r, 0, 3) // the acknowledgement goes out with the next read
	}
	// A crash now: what followed the checkpoint is read again, once.
	r.Close()
	db.Exec(t, `DELETE FROM t WHERE id = 2`)
	r2 := openReader(t, tc, pos)
	// A checkpoint before the restored run reached the transaction still
	// skips what the first run emitted of it.
	pos2, err := r2.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	if string(pos2) != string(pos) {
		t.Fatalf("position right after the restore %s, want the restored %s", pos2, pos)
	}
	r2.Close()
	r3 := openReader(t, tc, pos2)
	equal(t, "after the restore", readN(t, r3, 4, 16), []string{
		"+I(3,z,3.00,null)", "-U(1,x,1.00,null)", "+U(1,x2,1.00,null)", "-D(2,y,2.00,null)",
	})
	// Inside the transaction, still skipping: the position keeps the skip.
	r3.Close()
	r4 := openReader(t, tc, pos)
	equal(t, "restored again", readN(t, r4, 1, 2), []string{"+I(3,z,3.00,null)"})
	pos4, err := r4.SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pos4), `"skip":2`) {
		t.Fatalf("position %s: want 2 changes of the transaction emitted (1 skipped, 1 read)", pos4)
	}
}

// TestUpsertMode: with REPLICA IDENTITY DEFAULT an upsert table gets +U
// for updates, -D with the key only for deletes, and -D of the old key
// when an update changes the key.
func TestUpsertMode(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz); INSERT INTO t VALUES (1, 'a', 1, NULL)`)
	r := openReader(t, tableCtx(db, "upsert_slot", true, false, map[string]string{"changelog-mode": "upsert"}), nil)
	equal(t, "snapshot", readN(t, r, 1, 16), []string{"+I(1,a,1.00,null)"})
	db.Exec(t, `UPDATE t SET v = 'b' WHERE id = 1`)
	db.Exec(t, `UPDATE t SET id = 2 WHERE id = 1`)
	db.Exec(t, `DELETE FROM t WHERE id = 2`)
	equal(t, "stream", readN(t, r, 4, 16), []string{
		"+U(1,b,1.00,null)", "-D(1,null,null,null)", "+U(2,b,1.00,null)", "-D(2,null,null,null)",
	})
}

// TestOptionAndTableErrors: bad options name the option and the allowed
// values; a table the changelog mode cannot read is refused at open.
func TestOptionAndTableErrors(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz)`)
	cases := []struct {
		opts map[string]string
		pk   bool
		want string
	}{
		{map[string]string{"decoding.plugin.name": "decoderbufs"}, true, "Invalid value for option 'decoding.plugin.name': 'decoderbufs'. The postgres-cdc connector of flinksql decodes the logical replication stream of the built-in plugin only; allowed values: [pgoutput]."},
		{map[string]string{"scan.incremental.snapshot.enabled": "yes"}, true, "'scan.incremental.snapshot.enabled'"},
		{map[string]string{"scan.startup.mode": "earliest-offset"}, true, "'scan.startup.mode'"},
		{map[string]string{"changelog-mode": "retract"}, true, "one of [all, upsert]"},
		{map[string]string{"changelog-mode": "upsert"}, false, "'changelog-mode' = 'upsert' needs a PRIMARY KEY"},
		{map[string]string{"debezium.snapshot.mode": "never"}, true, "Unsupported options found for 'postgres-cdc'.\n\nUnsupported options:\n\ndebezium.snapshot.mode"},
		{map[string]string{"debezium.publication.autocreate.mode": "some"}, true, "one of [all_tables, filtered, disabled]"},
		{map[string]string{"slot.name": "Bad-Name"}, true, "Invalid value for option 'slot.name': 'Bad-Name'"},
		{map[string]string{"table-name": "t("}, true, "Invalid value for option 'table-name': 't(' is not a regular expression"},
		{map[string]string{"port": "0"}, true, "Invalid value for option 'port'"},
	}
	for _, c := range cases {
		_, err := NewFactory().CreateSource(tableCtx(db, "errs", c.pk, false, c.opts))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("options %v: error %v, want it to contain %q", c.opts, err, c.want)
		}
	}
	openErr := func(tc *connectors.TableContext) error {
		src, err := NewFactory().CreateSource(tc)
		if err != nil {
			return err
		}
		sr, _ := src.NewReader(0, 1)
		defer sr.Close()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		return sr.Open(ctx)
	}
	for _, c := range []struct {
		tc   *connectors.TableContext
		want string
	}{
		{tableCtx(db, "errs", true, false, nil), `has REPLICA IDENTITY DEFAULT, so its updates and deletes carry no old row; 'changelog-mode' = 'all' retracts old rows and needs ALTER TABLE "public"."t" REPLICA IDENTITY FULL`},
		{tableCtx(db, "errs", true, false, map[string]string{"table-name": "nope"}), "no table of database " + db.Name + " matches 'schema-name' = 'public' and 'table-name' = 'nope'"},
		{tableCtx(db, "errs", true, false, map[string]string{"changelog-mode": "upsert", "debezium.publication.name": "nopub", "debezium.publication.autocreate.mode": "disabled"}), "the publication 'nopub' does not exist"},
	} {
		if err := openErr(c.tc); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("open: error %v, want it to contain %q", err, c.want)
		}
	}
	db.Exec(t, `CREATE TABLE parted (id int, v text, n numeric(10,2), ts timestamptz) PARTITION BY RANGE (id)`)
	if err := openErr(tableCtx(db, "errs", true, false, map[string]string{"table-name": "parted"})); err == nil || !strings.Contains(err.Error(), `"public"."parted" is a partitioned table`) {
		t.Errorf("open of a partitioned table: %v", err)
	}
	db.Exec(t, `ALTER TABLE t REPLICA IDENTITY NOTHING`)
	if err := openErr(tableCtx(db, "errs", true, false, map[string]string{"changelog-mode": "upsert"})); err == nil || !strings.Contains(err.Error(), "REPLICA IDENTITY NOTHING") {
		t.Errorf("open with REPLICA IDENTITY NOTHING: %v", err)
	}
}

// TestTableNameRegex: table-name is a regular expression over whole names:
// 't[12]' captures t1 and t2 (not t12), the table_name metadata tells
// their rows apart, snapshot and stream alike.
func TestTableNameRegex(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `CREATE TABLE t1 (id int PRIMARY KEY, v text, n numeric(10,2), ts timestamptz);
CREATE TABLE t2 (LIKE t1 INCLUDING ALL); CREATE TABLE t12 (LIKE t1 INCLUDING ALL);
ALTER TABLE t1 REPLICA IDENTITY FULL; ALTER TABLE t2 REPLICA IDENTITY FULL; ALTER TABLE t12 REPLICA IDENTITY FULL;
INSERT INTO t1 VALUES (1, 'one', NULL, NULL); INSERT INTO t2 VALUES (2, 'two', NULL, NULL); INSERT INTO t12 VALUES (12, 'twelve', NULL, NULL)`)
	r := openReader(t, tableCtx(db, "regex_slot", true, true, map[string]string{"table-name": "t[12]"}), nil)
	equal(t, "snapshot", readN(t, r, 2, 16), []string{"+I(1,one,null,null|t1,0)", "+I(2,two,null,null|t2,0)"})
	db.Exec(t, `INSERT INTO t12 VALUES (13, 'x', NULL, NULL); DELETE FROM t2; INSERT INTO t1 VALUES (3, 'three', NULL, NULL)`)
	rows := readN(t, r, 2, 16)
	for i, row := range rows {
		rows[i] = row[:strings.LastIndex(row, ",")] + ")" // drop op_ts
	}
	equal(t, "stream", rows, []string{"-D(2,two,null,null|t2)", "+I(3,three,null,null|t1)"})
}
