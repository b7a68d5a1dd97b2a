package postgrescdc

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// statusInterval is how often the reader tells the server where it is
// even when nothing was acknowledged: well inside the server's default
// wal_sender_timeout of 60 s.
const statusInterval = 10 * time.Second

// linger is how long a Read that has rows waits for more before it
// returns them.
const linger = 5 * time.Millisecond

type phase uint8

const (
	phaseSnapshot phase = iota + 1
	phaseStream
)

// position is the reader's checkpointed position: LSN is the end of the
// last transaction emitted completely (a restart streams from there, and
// the server skips every transaction that committed before it), Skip the
// number of changes of the following transaction already emitted.
type position struct {
	Slot string `json:"slot"`
	LSN  string `json:"lsn"`
	Skip int64  `json:"skip,omitempty"`
}

// pgTable is a matched table and how its columns map to the Flink row.
type pgTable struct {
	oid      uint32
	schema   string
	name     string
	identity byte            // pg_class.relreplident: d, n, f, i
	idCols   map[string]bool // the replica identity's columns (d: primary key, i: the index)
	cols     map[string]pgCol
	meta     [3]types.Value // table_name, schema_name, database_name
}

type pgCol struct {
	name string
	typ  string // pg_type.typname of the column's (base) type
}

// relation is a table as the stream describes it (a Relation message):
// for each of its columns in stream order, the position in the Flink row
// or -1.
type relation struct {
	table *pgTable // nil: not a table of this source
	cols  []int
}

type reader struct {
	cfg *config

	ctx    context.Context // Open's: the snapshot's queries run under it
	conn   *pgx.Conn       // metadata and the snapshot transaction
	repl   *pgconn.PgConn  // replication=database
	tables []*pgTable
	dbName types.Value

	restored *position
	phase    phase

	// Snapshot.
	snapTable  int // index in tables of the table being read
	snapOpen   bool
	snapSelect []string // per table: the SELECT of its columns in Flink order
	consistent pglogrepl.LSN

	// Stream.
	rels       map[uint32]*relation
	lsn        pglogrepl.LSN // end of the last transaction emitted completely
	txEvents   int64         // changes of the current transaction seen
	skip       int64         // changes of the current transaction emitted before a restore
	inTx       bool
	opTS       types.Value // commit time of the current transaction
	received   pglogrepl.LSN
	acked      pglogrepl.LSN
	ackDue     bool
	lastStatus time.Time
	begin      pglogrepl.BeginMessage
	commit     pglogrepl.CommitMessage
	old        types.Row // the old row of an update, for unchanged TOAST values
	scratch    types.Row // the new row of an update, to compare keys

	// keep, when set, filters the rows one change appended to b from
	// index from on (the incremental snapshot drops what a chunk holds).
	keep func(t *pgTable, b *types.Batch, from int)
	// unchanged, when set, marks the columns of a tuple sent as unchanged
	// TOAST values instead of failing (the backfill fills them in).
	unchanged []bool
}

func newReader(c *config) *reader {
	return &reader{cfg: c, rels: map[uint32]*relation{}, old: make(types.Row, len(c.physical)), scratch: make(types.Row, len(c.physical))}
}

// NumSplits implements exec.SourceReader: the slot is one split.
func (r *reader) NumSplits() int { return 1 }

// RestorePosition implements exec.CheckpointedReader.
func (r *reader) RestorePosition(pos []byte) error {
	var p position
	if err := json.Unmarshal(pos, &p); err != nil {
		return fmt.Errorf("postgres-cdc table %s: restored position %q: %w", r.cfg.name, pos, err)
	}
	if p.LSN == "" && strings.Contains(string(pos), `"start"`) {
		return fmt.Errorf("postgres-cdc table %s: the checkpoint's position %s is of an incremental snapshot ('%s' = 'true'); restore it with that option, or start the job afresh", r.cfg.name, pos, OptIncrementalSnap)
	}
	if _, err := pglogrepl.ParseLSN(p.LSN); err != nil {
		return fmt.Errorf("postgres-cdc table %s: restored position %q: %w", r.cfg.name, pos, err)
	}
	if p.Slot != r.cfg.slot {
		return fmt.Errorf("postgres-cdc table %s: the checkpoint's position belongs to replication slot '%s', but '%s' is '%s'", r.cfg.name, p.Slot, OptSlotName, r.cfg.slot)
	}
	r.restored = &p
	return nil
}

// SnapshotPosition implements exec.CheckpointedReader.
func (r *reader) SnapshotPosition() ([]byte, error) {
	if r.phase != phaseStream {
		return nil, fmt.Errorf("postgres-cdc table %s is reading its initial snapshot: its position cannot be checkpointed until the snapshot ends (a savepoint or final checkpoint must wait for it)", r.cfg.name)
	}
	return json.Marshal(r.streamPosition())
}

// streamPosition is the stream's position between reads.
func (r *reader) streamPosition() position {
	// The changes of the next transaction already emitted: those of this
	// run, or, before this run got past them, those a restore told it to
	// skip (a checkpoint right after a restore must keep skipping them).
	skip := r.skip
	if r.inTx && r.txEvents > skip {
		skip = r.txEvents
	}
	return position{Slot: r.cfg.slot, LSN: r.lsn.String(), Skip: skip}
}

// HoldCheckpoint implements exec.CheckpointHolder.
func (r *reader) HoldCheckpoint() string {
	if r.phase == phaseSnapshot {
		i := min(r.snapTable, len(r.tables)-1)
		return fmt.Sprintf("postgres-cdc table %s is reading the initial snapshot of %s (table %d of %d); with 'scan.incremental.snapshot.enabled' = 'false' a checkpoint waits until the snapshot ends", r.cfg.name, r.tables[i].qualified(), i+1, len(r.tables))
	}
	return ""
}

// NotifyPositionComplete implements exec.CheckpointCompleteReader: the
// checkpoint holding pos completed, so the slot may release the WAL
// before it. The acknowledgement is sent by the next Read.
func (r *reader) NotifyPositionComplete(_ exec.CheckpointID, pos []byte) error {
	var p position
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	lsn, err := pglogrepl.ParseLSN(p.LSN)
	if err != nil {
		return err
	}
	if lsn > r.acked {
		r.acked, r.ackDue = lsn, true
	}
	return nil
}

func (t *pgTable) qualified() string { return quoteIdent(t.schema) + "." + quoteIdent(t.name) }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// connString builds a keyword/value connection string; the sessions use
// UTC and ISO dates so that the text values parse one way.
func (c *config) connString(replication bool) string {
	kv := func(k, v string) string {
		return k + "='" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
	}
	parts := []string{
		kv("host", c.host), kv("port", fmt.Sprint(c.port)), kv("user", c.user), kv("password", c.password),
		kv("dbname", c.database), kv("application_name", "flinksql-postgres-cdc"),
		kv("timezone", "UTC"), kv("datestyle", "ISO"), kv("bytea_output", "hex"), kv("extra_float_digits", "3"),
		kv("intervalstyle", "postgres"),
	}
	if replication {
		parts = append(parts, kv("replication", "database"))
	}
	return strings.Join(parts, " ")
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres-cdc table %s: "+format, append([]any{r.cfg.name}, args...)...)
}

// Open implements exec.SourceReader: it finds the tables, checks them,
// makes sure the publication and the slot exist, and either begins the
// snapshot or starts the stream.
func (r *reader) Open(ctx context.Context) error {
	if err := r.connect(ctx); err != nil {
		return err
	}
	if err := r.ensurePublication(ctx); err != nil {
		return err
	}
	c := r.cfg
	repl, err := pgconn.Connect(ctx, c.connString(true))
	if err != nil {
		return r.errorf("cannot open a replication connection to %s:%d database %s (the user needs the REPLICATION attribute): %w", c.host, c.port, c.database, err)
	}
	r.repl = repl
	slot, err := r.awaitSlotRelease(ctx, c.slot)
	if err != nil {
		return err
	}
	if r.restored != nil {
		if !slot.exists {
			return r.errorf("the replication slot '%s' of the restored checkpoint no longer exists: the changes after LSN %s cannot be read any more (drop the checkpoint and start the job afresh for a new snapshot)", c.slot, r.restored.LSN)
		}
		lsn, _ := pglogrepl.ParseLSN(r.restored.LSN)
		if slot.confirmed > lsn {
			return r.errorf("the replication slot '%s' has confirmed LSN %s, past the restored checkpoint's %s: the changes in between are no longer available (was the job restored from an older checkpoint than its latest?)", c.slot, slot.confirmed, lsn)
		}
		r.skip = r.restored.Skip
		return r.startStream(ctx, lsn)
	}
	if slot.exists {
		// A new job (nothing to resume): a slot left by an earlier run
		// holds no position this job owns, and only a new slot gives the
		// snapshot its consistent point.
		if err := pglogrepl.DropReplicationSlot(ctx, repl, c.slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return r.errorf("drop the replication slot '%s' left by an earlier run: %w", c.slot, err)
		}
	}
	action := "NOEXPORT_SNAPSHOT"
	if c.startup == StartupInitial {
		action = "EXPORT_SNAPSHOT"
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, repl, c.slot, pluginPgoutput, pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: action})
	if err != nil {
		return r.errorf("create the replication slot '%s': %w", c.slot, err)
	}
	if r.consistent, err = pglogrepl.ParseLSN(res.ConsistentPoint); err != nil {
		return r.errorf("create the replication slot '%s': consistent point %q: %w", c.slot, res.ConsistentPoint, err)
	}
	if c.startup == StartupLatestOffset {
		return r.startStream(ctx, r.consistent)
	}
	// The exported snapshot is valid while the replication connection
	// runs no other command: import it before anything else.
	// SET TRANSACTION SNAPSHOT must come before any query of the
	// transaction: both go in one simple-protocol message.
	if _, err := r.conn.PgConn().Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT "+quoteLiteral(res.SnapshotName)).ReadAll(); err != nil {
		return r.errorf("begin the snapshot transaction with the slot's exported snapshot %s: %w", res.SnapshotName, err)
	}
	r.phase = phaseSnapshot
	r.snapSelect = make([]string, len(r.tables))
	for i, t := range r.tables {
		cols := make([]string, len(c.physical))
		for j, col := range c.physical {
			cols[j] = quoteIdent(t.cols[pgColumnKey(t, col.Name)].name)
		}
		r.snapSelect[i] = "SELECT " + strings.Join(cols, ", ") + " FROM " + t.qualified()
	}
	return nil
}

// pgColumnKey is the key of Flink column name in t.cols: the exact name,
// connect opens the metadata connection and finds the matched tables:
// the first part of Open, for either snapshot.
func (r *reader) connect(ctx context.Context) error {
	r.ctx = ctx
	c := r.cfg
	conn, err := pgx.Connect(ctx, c.connString(false))
	if err != nil {
		return r.errorf("cannot connect to %s:%d database %s: %w", c.host, c.port, c.database, err)
	}
	r.conn = conn
	r.dbName = types.String(c.database)
	return r.findTables(ctx)
}

// else the one column equal to it ignoring case (findTables checked it).
func pgColumnKey(t *pgTable, name string) string {
	if _, ok := t.cols[name]; ok {
		return name
	}
	for k := range t.cols {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	return name
}

// findTables finds the tables schema-name and table-name match and checks
// their columns, types and replica identity against the Flink table.
func (r *reader) findTables(ctx context.Context) error {
	c := r.cfg
	rows, err := r.conn.Query(ctx, `
SELECT c.oid, n.nspname, c.relname, c.relreplident, c.relkind
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
ORDER BY n.nspname, c.relname`)
	if err != nil {
		return r.errorf("list the tables of database %s: %w", c.database, err)
	}
	for rows.Next() {
		var t pgTable
		var ident, kind string
		if err := rows.Scan(&t.oid, &t.schema, &t.name, &ident, &kind); err != nil {
			rows.Close()
			return err
		}
		if !c.schemaRE.MatchString(t.schema) || !c.tableRE.MatchString(t.name) {
			continue
		}
		if kind == "p" {
			// pgoutput names a partition's changes by the partition, so
			// the parent's would never match: refuse rather than miss them.
			rows.Close()
			return r.errorf("%s is a partitioned table: its changes are streamed under the names of its partitions; capture the partitions ('%s' matching them) instead", t.qualified(), OptTableName)
		}
		t.identity = ident[0]
		r.tables = append(r.tables, &t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(r.tables) == 0 {
		return r.errorf("no table of database %s matches '%s' = '%s' and '%s' = '%s'", c.database, OptSchemaName, c.schemaRE.String()[4:len(c.schemaRE.String())-2], OptTableName, c.tableRE.String()[4:len(c.tableRE.String())-2])
	}
	for _, t := range r.tables {
		if err := r.checkTable(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) checkTable(ctx context.Context, t *pgTable) error {
	c := r.cfg
	rows, err := r.conn.Query(ctx, `
SELECT a.attname, CASE WHEN ty.typtype = 'd' THEN bt.typname ELSE ty.typname END,
       COALESCE((SELECT true FROM pg_index i WHERE i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey)
                 AND ((c.relreplident = 'd' AND i.indisprimary) OR (c.relreplident = 'i' AND i.indisreplident)) LIMIT 1), false)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type ty ON ty.oid = a.atttypid
LEFT JOIN pg_type bt ON bt.oid = ty.typbasetype
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`, t.oid)
	if err != nil {
		return r.errorf("read the columns of %s: %w", t.qualified(), err)
	}
	t.cols = map[string]pgCol{}
	t.idCols = map[string]bool{}
	for rows.Next() {
		var col pgCol
		var inID bool
		if err := rows.Scan(&col.name, &col.typ, &inID); err != nil {
			rows.Close()
			return err
		}
		t.cols[col.name] = col
		if inID {
			t.idCols[col.name] = true
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, col := range c.physical {
		key := pgColumnKey(t, col.Name)
		pg, ok := t.cols[key]
		if !ok {
			return r.errorf("the PostgreSQL table %s has no column %s", t.qualified(), col.Name)
		}
		if err := checkPGType(col.Type, pg.typ); err != nil {
			return r.errorf("column %s of %s: %w", col.Name, t.qualified(), err)
		}
	}
	t.meta = [3]types.Value{types.String(t.name), types.String(t.schema), r.dbName}
	switch {
	case c.mode == ChangelogAll && t.identity != 'f':
		return r.errorf("the PostgreSQL table %s has REPLICA IDENTITY %s, so its updates and deletes carry no old row; '%s' = '%s' retracts old rows and needs ALTER TABLE %s REPLICA IDENTITY FULL (or '%s' = '%s' with a PRIMARY KEY)",
			t.qualified(), identityName(t.identity), OptChangelogMode, ChangelogAll, t.qualified(), OptChangelogMode, ChangelogUpsert)
	case c.mode == ChangelogUpsert && t.identity == 'n':
		return r.errorf("the PostgreSQL table %s has REPLICA IDENTITY NOTHING: its deletes carry no key; set REPLICA IDENTITY DEFAULT (with a primary key) or FULL", t.qualified())
	case c.mode == ChangelogUpsert && t.identity != 'f':
		for _, i := range c.pk {
			if !t.idCols[pgColumnKey(t, c.physical[i].Name)] {
				return r.errorf("the primary key column %s is not part of the replica identity (%s) of the PostgreSQL table %s, so its deletes would not name the key; make the table's primary key match or set REPLICA IDENTITY FULL", c.physical[i].Name, identityName(t.identity), t.qualified())
			}
		}
	}
	return nil
}

func identityName(b byte) string {
	switch b {
	case 'd':
		return "DEFAULT"
	case 'n':
		return "NOTHING"
	case 'f':
		return "FULL"
	case 'i':
		return "USING INDEX"
	}
	return string(b)
}

// ensurePublication checks that the publication exists and publishes the
// tables, creating or extending it as debezium.publication.autocreate.mode
// says (Debezium's modes).
func (r *reader) ensurePublication(ctx context.Context) error {
	c := r.cfg
	var exists, allTables bool
	if err := r.conn.QueryRow(ctx, `SELECT true, puballtables FROM pg_publication WHERE pubname = $1`, c.pub).Scan(&exists, &allTables); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return r.errorf("look up the publication %s: %w", c.pub, err)
	}
	names := make([]string, len(r.tables))
	for i, t := range r.tables {
		names[i] = t.qualified()
	}
	if !exists {
		var sql string
		switch c.autocreate {
		case autocreateDisabled:
			return r.errorf("the publication '%s' does not exist and '%s' is '%s': create it (CREATE PUBLICATION %s FOR TABLE %s)", c.pub, OptPublicationAutocreate, autocreateDisabled, quoteIdent(c.pub), strings.Join(names, ", "))
		case autocreateAllTables:
			sql = "CREATE PUBLICATION " + quoteIdent(c.pub) + " FOR ALL TABLES"
		default:
			sql = "CREATE PUBLICATION " + quoteIdent(c.pub) + " FOR TABLE " + strings.Join(names, ", ")
		}
		if _, err := r.conn.Exec(ctx, sql); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42710" { // duplicate_object: created concurrently
				return r.errorf("create the publication: %s: %w", sql, err)
			}
		}
		return nil
	}
	if allTables {
		return nil
	}
	var missing []string
	for i, t := range r.tables {
		var in bool
		if err := r.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)`, c.pub, t.schema, t.name).Scan(&in); err != nil {
			return r.errorf("read the tables of publication %s: %w", c.pub, err)
		}
		if !in {
			missing = append(missing, names[i])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if c.autocreate != autocreateFiltered {
		return r.errorf("the publication '%s' does not publish %s: add it (ALTER PUBLICATION %s ADD TABLE %s) or set '%s' = '%s'", c.pub, strings.Join(missing, ", "), quoteIdent(c.pub), strings.Join(missing, ", "), OptPublicationAutocreate, autocreateFiltered)
	}
	sql := "ALTER PUBLICATION " + quoteIdent(c.pub) + " ADD TABLE " + strings.Join(missing, ", ")
	if _, err := r.conn.Exec(ctx, sql); err != nil {
		return r.errorf("%s: %w", sql, err)
	}
	return nil
}

type slotState struct {
	exists, active bool
	pid            int32
	confirmed      pglogrepl.LSN
}

func (r *reader) slotState(ctx context.Context, slot string) (slotState, error) {
	c := r.cfg
	var s slotState
	var plugin, db string
	var confirmed *string
	var pid *int32
	err := r.conn.QueryRow(ctx, `SELECT plugin, database, active, active_pid, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&plugin, &db, &s.active, &pid, &confirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, r.errorf("look up the replication slot '%s': %w", slot, err)
	}
	s.exists = true
	if plugin != pluginPgoutput || db != c.database {
		return s, r.errorf("the replication slot '%s' exists for plugin %s in database %s, not for %s in %s: choose another '%s'", slot, plugin, db, pluginPgoutput, c.database, OptSlotName)
	}
	if pid != nil {
		s.pid = *pid
	}
	if confirmed != nil {
		s.confirmed, _ = pglogrepl.ParseLSN(*confirmed)
	}
	return s, nil
}

// slotRelease bounds how long Open waits for the slot to become inactive:
// after a crash the server ends the dead run's walsender only when it
// notices the connection is gone.
const slotRelease = 30 * time.Second

// awaitSlotRelease returns the slot's state once no connection uses it,
// or an error naming the connection that keeps it.
func (r *reader) awaitSlotRelease(ctx context.Context, slot string) (slotState, error) {
	deadline := time.Now().Add(slotRelease)
	for {
		s, err := r.slotState(ctx, slot)
		if err != nil || !s.exists || !s.active {
			return s, err
		}
		if time.Now().After(deadline) {
			return s, r.errorf("the replication slot '%s' is in use by another connection (pid %d) for more than %s; each postgres-cdc table needs a slot of its own ('%s')", slot, s.pid, slotRelease, OptSlotName)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(100 * time.Millisecond): // poll the server's view of the slot
		}
	}
}

func (r *reader) startStream(ctx context.Context, from pglogrepl.LSN) error {
	c := r.cfg
	err := pglogrepl.StartReplication(ctx, r.repl, c.slot, from, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(quoteIdent(c.pub))},
	})
	if err != nil {
		return r.errorf("start streaming the replication slot '%s' at %s: %w", c.slot, from, err)
	}
	r.phase = phaseStream
	r.lsn, r.received, r.acked = from, from, from
	r.lastStatus = time.Now()
	return nil
}

// Read implements exec.SourceReader.
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	var err error
	if r.phase == phaseSnapshot {
		err = r.readSnapshot(b)
	} else {
		err = r.readStream(ctx, b)
	}
	if err != nil {
		return exec.ReadResult{Split: -1}, err
	}
	if b.Len() == 0 {
		return exec.ReadResult{Split: -1}, nil
	}
	return exec.ReadResult{Split: 0}, nil
}

// readSnapshot appends up to a batch of rows of the snapshot; after the
// last table it ends the transaction and starts the stream at the slot's
// consistent point.
func (r *reader) readSnapshot(b *types.Batch) error {
	ctx := r.ctx
	for b.Len() == 0 {
		if r.snapTable == len(r.tables) {
			if _, err := r.conn.Exec(ctx, "COMMIT"); err != nil {
				return r.errorf("end the snapshot transaction: %w", err)
			}
			return r.startStream(ctx, r.consistent)
		}
		t := r.tables[r.snapTable]
		if !r.snapOpen {
			if _, err := r.conn.Exec(ctx, "DECLARE flinksql_cdc_snapshot NO SCROLL CURSOR FOR "+r.snapSelect[r.snapTable]); err != nil {
				return r.errorf("snapshot of %s: %w", t.qualified(), err)
			}
			r.snapOpen = true
		}
		n := r.cfg.fetchSize // scan.snapshot.fetch.size
		rr := r.conn.PgConn().ExecParams(ctx, fmt.Sprintf("FETCH %d FROM flinksql_cdc_snapshot", n), nil, nil, nil, nil)
		got := 0
		for rr.NextRow() {
			got++
			row := b.Append(types.Insert)
			for i, v := range rr.Values() {
				if v == nil {
					continue
				}
				val, err := parseText(r.cfg.physical[i].Type, v)
				if err != nil {
					rr.Close()
					return r.errorf("snapshot of %s, column %s: %w", t.qualified(), r.cfg.physical[i].Name, err)
				}
				row[i] = val
			}
			r.fillMeta(row, t, types.Timestamp(0, 0))
		}
		if _, err := rr.Close(); err != nil {
			return r.errorf("snapshot of %s: %w", t.qualified(), err)
		}
		if got < n {
			if _, err := r.conn.Exec(ctx, "CLOSE flinksql_cdc_snapshot"); err != nil {
				return r.errorf("snapshot of %s: %w", t.qualified(), err)
			}
			r.snapOpen = false
			r.snapTable++
		}
	}
	return nil
}

func (r *reader) fillMeta(row types.Row, t *pgTable, opTS types.Value) {
	p := len(r.cfg.physical)
	for i, key := range r.cfg.meta {
		switch key {
		case MetaTableName:
			row[p+i] = t.meta[0]
		case MetaSchemaName:
			row[p+i] = t.meta[1]
		case MetaDatabaseName:
			row[p+i] = t.meta[2]
		case MetaOpTS:
			row[p+i] = opTS
		}
	}
}

// readStream appends the changes that arrive until the batch is (nearly)
// full, ctx is done, or no more arrive for a moment. The connection's
// read deadline carries ctx (set once per Read, not per message: pgconn's
// own context watching costs allocations on every receive).
func (r *reader) readStream(ctx context.Context, b *types.Batch) error {
	nc := r.repl.Conn()
	deadline, _ := ctx.Deadline()
	if err := nc.SetReadDeadline(deadline); err != nil {
		return r.errorf("replication stream: %w", err)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = nc.SetReadDeadline(time.Now())
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
		_ = nc.SetReadDeadline(time.Time{})
	}()
	lingering := false
	for b.Cap()-b.Len() >= 2 {
		if r.ackDue || time.Since(r.lastStatus) >= statusInterval {
			if err := r.sendStatus(); err != nil {
				return err
			}
		}
		if b.Len() > 0 && !lingering {
			lingering = true
			if l := time.Now().Add(linger); deadline.IsZero() || l.Before(deadline) {
				deadline = l
				if ctx.Err() == nil {
					_ = nc.SetReadDeadline(l)
				}
			}
		}
		msg, err := r.repl.ReceiveMessage(context.Background())
		if err != nil {
			if ctx.Err() != nil || pgconn.Timeout(err) {
				return nil
			}
			return r.errorf("replication stream of slot '%s': %w", r.cfg.slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return r.errorf("replication stream: %w", err)
				}
				if ka.ReplyRequested {
					if err := r.sendStatus(); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return r.errorf("replication stream: %w", err)
				}
				if end := xld.WALStart + pglogrepl.LSN(len(xld.WALData)); end > r.received {
					r.received = end
				}
				if err := r.decode(xld.WALData, b); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return r.errorf("replication stream of slot '%s': %w", r.cfg.slot, pgconn.ErrorResponseToPgError(m))
		}
	}
	return nil
}

// sendStatus reports the flush position: the LSN of the newest completed
// checkpoint, never more, so the slot keeps what a restore needs.
func (r *reader) sendStatus() error {
	err := pglogrepl.SendStandbyStatusUpdate(r.ctx, r.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: r.received, WALFlushPosition: r.acked, WALApplyPosition: r.acked,
	})
	if err != nil {
		return r.errorf("acknowledge LSN %s to the replication slot '%s': %w", r.acked, r.cfg.slot, err)
	}
	r.ackDue = false
	r.lastStatus = time.Now()
	return nil
}

// decode handles one pgoutput message.
func (r *reader) decode(data []byte, b *types.Batch) error {
	if len(data) == 0 {
		return nil
	}
	switch pglogrepl.MessageType(data[0]) {
	case pglogrepl.MessageTypeBegin:
		if err := r.begin.Decode(data[1:]); err != nil {
			return r.errorf("pgoutput: %w", err)
		}
		r.inTx, r.txEvents = true, 0
		ms := r.begin.CommitTime.UnixMilli()
		r.opTS = types.Timestamp(ms, 0)
	case pglogrepl.MessageTypeCommit:
		if err := r.commit.Decode(data[1:]); err != nil {
			return r.errorf("pgoutput: %w", err)
		}
		r.lsn = r.commit.TransactionEndLSN
		r.inTx, r.txEvents, r.skip = false, 0, 0
	case pglogrepl.MessageTypeRelation:
		var rm pglogrepl.RelationMessage
		if err := rm.Decode(data[1:]); err != nil {
			return r.errorf("pgoutput: %w", err)
		}
		return r.relation(r.rels, &rm)
	case pglogrepl.MessageTypeInsert, pglogrepl.MessageTypeUpdate, pglogrepl.MessageTypeDelete:
		return r.change(data, b)
	case pglogrepl.MessageTypeTruncate:
		var tm pglogrepl.TruncateMessage
		if err := tm.Decode(data[1:]); err != nil {
			return r.errorf("pgoutput: %w", err)
		}
		for _, id := range tm.RelationIDs {
			if rel := r.rels[id]; rel != nil && rel.table != nil {
				return r.errorf("the PostgreSQL table %s was truncated (commit at %s): a TRUNCATE has no changelog rows; restart the job afresh for a new snapshot", rel.table.qualified(), r.begin.FinalLSN)
			}
		}
	}
	return nil
}

func (r *reader) relation(rels map[uint32]*relation, rm *pglogrepl.RelationMessage) error {
	var table *pgTable
	for _, t := range r.tables {
		if t.schema == rm.Namespace && t.name == rm.RelationName {
			table = t
		}
	}
	rel := &relation{table: table}
	rels[rm.RelationID] = rel
	if table == nil {
		return nil
	}
	rel.cols = make([]int, len(rm.Columns))
	found := make([]bool, len(r.cfg.physical))
	for i, col := range rm.Columns {
		rel.cols[i] = -1
		for j, fc := range r.cfg.physical {
			if pgColumnKey(table, fc.Name) == col.Name {
				rel.cols[i] = j
				found[j] = true
			}
		}
	}
	for j, ok := range found {
		if !ok {
			return r.errorf("the PostgreSQL table %s no longer has the column %s (its schema changed while the job ran)", table.qualified(), r.cfg.physical[j].Name)
		}
	}
	return nil
}

// change turns an Insert, Update or Delete message into rows.
func (r *reader) change(data []byte, b *types.Batch) error {
	if len(data) < 6 {
		return r.errorf("pgoutput: a change message of %d bytes", len(data))
	}
	kind := data[0]
	relID := binary.BigEndian.Uint32(data[1:5])
	rel := r.rels[relID]
	if rel == nil {
		return r.errorf("pgoutput: a change of relation %d before its Relation message", relID)
	}
	if rel.table == nil {
		return nil // published, but not a table of this source
	}
	r.txEvents++
	if r.txEvents <= r.skip {
		return nil // emitted before the restore
	}
	t := rel.table
	if r.keep != nil {
		defer r.keep(t, b, b.Len())
	}
	upsert := r.cfg.mode == ChangelogUpsert
	rest := data[5:]
	var err error
	switch kind {
	case 'I':
		if rest[0] != 'N' {
			return r.errorf("pgoutput: insert into %s without a new tuple", t.qualified())
		}
		row := b.Append(types.Insert)
		if _, err = r.tuple(rest[1:], rel, row, nil); err != nil {
			return err
		}
		r.fillMeta(row, t, r.opTS)
	case 'U':
		var old types.Row
		if rest[0] == 'K' || rest[0] == 'O' {
			hadOld := rest[0] == 'O'
			clear(r.old)
			if rest, err = r.tuple(rest[1:], rel, r.old, nil); err != nil {
				return err
			}
			if hadOld {
				old = r.old
			}
			if upsert && !hadOld {
				// The key changed (REPLICA IDENTITY DEFAULT sends the old key
				// only then): the old key's row is gone.
				row := b.Append(types.Delete)
				copy(row, r.old)
				r.fillMeta(row, t, r.opTS)
			}
		}
		if len(rest) == 0 || rest[0] != 'N' {
			return r.errorf("pgoutput: update of %s without a new tuple", t.qualified())
		}
		if !upsert {
			if old == nil {
				return r.errorf("an update of %s carries no old row (REPLICA IDENTITY changed?); '%s' = '%s' needs REPLICA IDENTITY FULL", t.qualified(), OptChangelogMode, ChangelogAll)
			}
			row := b.Append(types.UpdateBefore)
			copy(row, old)
			r.fillMeta(row, t, r.opTS)
		} else if old != nil && !r.sameKey(old, rest[1:], rel) {
			row := b.Append(types.Delete)
			copy(row, old)
			r.fillMeta(row, t, r.opTS)
		}
		row := b.Append(types.UpdateAfter)
		if _, err = r.tuple(rest[1:], rel, row, old); err != nil {
			return err
		}
		r.fillMeta(row, t, r.opTS)
	case 'D':
		if rest[0] != 'K' && rest[0] != 'O' {
			return r.errorf("a delete from %s carries no old row or key (REPLICA IDENTITY NOTHING?)", t.qualified())
		}
		if !upsert && rest[0] != 'O' {
			return r.errorf("a delete from %s carries only the key (REPLICA IDENTITY changed?); '%s' = '%s' needs REPLICA IDENTITY FULL", t.qualified(), OptChangelogMode, ChangelogAll)
		}
		row := b.Append(types.Delete)
		if _, err = r.tuple(rest[1:], rel, row, nil); err != nil {
			return err
		}
		r.fillMeta(row, t, r.opTS)
	default:
		return r.errorf("pgoutput: unknown change message %q", kind)
	}
	return nil
}

// sameKey reports whether the new tuple has old's primary key.
func (r *reader) sameKey(old types.Row, newTuple []byte, rel *relation) bool {
	row := r.scratch
	clear(row)
	if _, err := r.tuple(newTuple, rel, row, old); err != nil {
		return false
	}
	for _, i := range r.cfg.pk {
		if types.Compare(old[i], row[i]) != 0 {
			return false
		}
	}
	return true
}

// tuple parses a TupleData into the physical columns of row and returns
// what follows it. An unchanged TOAST value is taken from old.
func (r *reader) tuple(data []byte, rel *relation, row, old types.Row) ([]byte, error) {
	if len(data) < 2 {
		return nil, r.errorf("pgoutput: truncated tuple")
	}
	n := int(binary.BigEndian.Uint16(data))
	data = data[2:]
	if n != len(rel.cols) {
		return nil, r.errorf("pgoutput: a tuple of %s with %d columns, its relation has %d", rel.table.qualified(), n, len(rel.cols))
	}
	for i := 0; i < n; i++ {
		if len(data) < 1 {
			return nil, r.errorf("pgoutput: truncated tuple of %s", rel.table.qualified())
		}
		k := data[0]
		data = data[1:]
		idx := rel.cols[i]
		switch k {
		case 'n':
			if idx >= 0 {
				row[idx] = types.NullValue
			}
		case 'u':
			if idx < 0 {
				continue
			}
			if old == nil && r.unchanged != nil {
				r.unchanged[idx] = true // the backfill takes it from the chunk's row
				continue
			}
			if old == nil {
				return nil, r.errorf("an update of %s left the TOASTed value of column %s unchanged and the stream does not carry it; set REPLICA IDENTITY FULL on the table", rel.table.qualified(), r.cfg.physical[idx].Name)
			}
			row[idx] = old[idx]
		case 't', 'b':
			if len(data) < 4 {
				return nil, r.errorf("pgoutput: truncated tuple of %s", rel.table.qualified())
			}
			l := int(binary.BigEndian.Uint32(data))
			data = data[4:]
			if l > len(data) {
				return nil, r.errorf("pgoutput: truncated tuple of %s", rel.table.qualified())
			}
			v := data[:l]
			data = data[l:]
			if idx < 0 {
				continue
			}
			if k == 'b' {
				return nil, r.errorf("pgoutput: binary value of column %s of %s (text was requested)", r.cfg.physical[idx].Name, rel.table.qualified())
			}
			val, err := parseText(r.cfg.physical[idx].Type, v)
			if err != nil {
				return nil, r.errorf("%s, column %s, commit at LSN %s: %w", rel.table.qualified(), r.cfg.physical[idx].Name, r.begin.FinalLSN, err)
			}
			row[idx] = val
		default:
			return nil, r.errorf("pgoutput: unknown tuple value kind %q in %s", k, rel.table.qualified())
		}
	}
	return data, nil
}

// Close implements exec.SourceReader.
func (r *reader) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if r.repl != nil {
		err = r.repl.Close(ctx)
		r.repl = nil
	}
	if r.conn != nil {
		if cerr := r.conn.Close(ctx); err == nil {
			err = cerr
		}
		r.conn = nil
	}
	return err
}
