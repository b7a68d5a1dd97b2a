package postgrescdc

// The incremental snapshot ('scan.incremental.snapshot.enabled' = 'true'),
// Flink CDC's algorithm after DBLog:
//
//   - Subtask 0 creates the main slot before anything is read (its
//     consistent point S precedes every chunk) and splits each table by the
//     chunk key column into ranges of about chunk.size rows, once per job;
//     the plan travels in every subtask's checkpointed position.
//   - Chunk i is read by subtask i mod parallelism, in a short READ
//     COMMITTED transaction through a cursor (fetch.size rows a FETCH).
//     Then the high watermark HW = pg_current_wal_insert_lsn() is taken,
//     and the changes committed before HW are read from a temporary slot
//     of the subtask's own ('<slot.name>_<subtask>', created before its
//     first chunk) with pg_logical_slot_get_binary_changes(upto HW): those
//     of the chunk's table whose commit record precedes HW and whose key
//     lies in the chunk are applied to the chunk's rows by primary key
//     (the backfill), and the rows are emitted as +I, all in one Read, so
//     that a checkpoint falls between chunks, never inside one.
//   - A subtask that emitted all its chunks has the task flush them
//     downstream (exec.ReadResult.Flush) and then tells the coordinator.
//     Subtask 0 streams the main slot from S once every subtask did, and
//     drops a change of a key whose chunk's HW is past the change's commit
//     record (the chunk already holds it); past the largest HW nothing is
//     dropped.
//
// With 'scan.incremental.snapshot.backfill.skip' = 'true' there is no
// backfill and no filtering: the stream from S repeats what a chunk read
// already holds (at-least-once during the snapshot, as Flink CDC says).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// incrementalOptions validates the incremental snapshot's options.
func (c *config) incrementalOptions(o connectors.Options) error {
	var err error
	if c.chunkSize, err = o.Int(OptChunkSize, defaultChunkSize); err != nil {
		return err
	}
	if c.chunkSize < 1 {
		return fmt.Errorf("Invalid value for option '%s': %d. The chunk size must be at least 1.", OptChunkSize, c.chunkSize)
	}
	if c.fetchSize, err = o.Int(OptFetchSize, defaultFetchSize); err != nil {
		return err
	}
	if c.fetchSize < 1 {
		return fmt.Errorf("Invalid value for option '%s': %d. The fetch size must be at least 1.", OptFetchSize, c.fetchSize)
	}
	if c.backfillSkip, err = o.Bool(OptBackfillSkip, false); err != nil {
		return err
	}
	if !c.incremental {
		for _, k := range []string{OptChunkSize, OptChunkKeyColumn, OptBackfillSkip} {
			if o.Has(k) {
				return fmt.Errorf("Option '%s' applies to the incremental snapshot only; set '%s' = 'true' or remove it.", k, OptIncrementalSnap)
			}
		}
		return nil
	}
	if len(c.pk) == 0 {
		return fmt.Errorf("Table %s: the incremental snapshot ('%s' = 'true') splits the table by its primary key and applies the changes made while a chunk is read by that key: declare PRIMARY KEY (...) NOT ENFORCED.", c.name, OptIncrementalSnap)
	}
	c.chunkKey = c.pk[0]
	if name, ok := o[OptChunkKeyColumn]; ok {
		c.chunkKey = -1
		for _, i := range c.pk {
			if c.physical[i].Name == name {
				c.chunkKey = i
			}
		}
		if c.chunkKey < 0 {
			pk := make([]string, len(c.pk))
			for j, i := range c.pk {
				pk[j] = c.physical[i].Name
			}
			return fmt.Errorf("Invalid value for option '%s': '%s'. The chunk key column must be one of the primary key columns [%s] (a change names its chunk by it, and a delete carries only the key).", OptChunkKeyColumn, name, strings.Join(pk, ", "))
		}
	}
	switch c.physical[c.chunkKey].Type.Root {
	case types.RootTinyInt, types.RootSmallInt, types.RootInt, types.RootBigInt, types.RootVarChar:
	default:
		return fmt.Errorf("Table %s: the chunk key column %s is of type %s; the incremental snapshot splits by a column of type SMALLINT, INT, BIGINT or STRING (set '%s').", c.name, c.physical[c.chunkKey].Name, c.physical[c.chunkKey].Type, OptChunkKeyColumn)
	}
	return nil
}

// snapshotsIncrementally reports whether a new job reads the snapshot in
// chunks ('latest-offset' reads none).
func (c *config) snapshotsIncrementally() bool {
	return c.incremental && c.startup == StartupInitial
}

// chunkSpec is a chunk: a table and a range [Lo, Hi) of its chunk key
// column in PostgreSQL's text form; no Lo is from the smallest value
// (NULL included), no Hi to the largest.
type chunkSpec struct {
	Table string  `json:"table"`
	Lo    *string `json:"lo,omitempty"`
	Hi    *string `json:"hi,omitempty"`
}

// incPosition is an incremental reader's checkpointed position.
type incPosition struct {
	Slot   string         `json:"slot"`
	Start  string         `json:"start,omitempty"` // the main slot's consistent point
	Chunks []chunkSpec    `json:"chunks,omitempty"`
	Done   map[int]string `json:"done,omitempty"` // finished chunks (this subtask's; all once streaming): HW
	// Stream is subtask 0's stream position once it streams.
	Stream *position `json:"stream,omitempty"`
}

// chunkRef is a resolved chunk.
type chunkRef struct {
	id     int
	table  *pgTable
	lo, hi types.Value // NullValue for none
	hasLo  bool
	hasHi  bool
	spec   chunkSpec
	hw     pglogrepl.LSN
}

// incReader is one subtask's reader of an incremental snapshot; subtask 0
// also streams afterwards. It reuses the plain reader's connections,
// table checks and pgoutput decoding.
type incReader struct {
	*reader
	coord                *coordinator
	gen                  int
	subtask, parallelism int
	backfillSlot         string

	restored *incPosition
	plan     *chunkPlan
	refs     []*chunkRef // every chunk of the plan, resolved
	mine     []int       // ids of this subtask's chunks not yet emitted
	done     map[int]pglogrepl.LSN
	reported bool // finished reported to the coordinator
	bfSlot   bool // the backfill slot exists

	bfRels  map[uint32]*relation
	bfBegin pglogrepl.BeginMessage

	// Stream filter (subtask 0): per table its chunks in key order.
	byTable map[*pgTable][]*chunkRef
	maxHW   pglogrepl.LSN

	// hook, set by tests, is called at "select" (the chunk's cursor is
	// open, its snapshot taken) and "hw" (the high watermark is taken).
	hook func(stage string, chunk int)
}

func newIncrementalReader(c *config, coord *coordinator, subtask, parallelism int) (*incReader, error) {
	bslot := fmt.Sprintf("%s_%d", c.slot, subtask)
	if !c.backfillSkip && !validSlotName(bslot) {
		return nil, fmt.Errorf("postgres-cdc table %s: the backfill slot name '%s' (the '%s' and the subtask) is longer than 63 characters; choose a shorter '%s'", c.name, bslot, OptSlotName, OptSlotName)
	}
	return &incReader{
		reader: newReader(c), coord: coord, gen: coord.join(subtask, parallelism),
		subtask: subtask, parallelism: parallelism, backfillSlot: bslot,
		done: map[int]pglogrepl.LSN{}, bfRels: map[uint32]*relation{},
	}, nil
}

var (
	_ exec.CheckpointHolder         = (*incReader)(nil)
	_ exec.CheckpointCompleteReader = (*incReader)(nil)
)

// RestorePosition implements exec.CheckpointedReader.
func (r *incReader) RestorePosition(pos []byte) error {
	var p incPosition
	if err := json.Unmarshal(pos, &p); err != nil {
		return r.errorf("restored position %q: %w", pos, err)
	}
	if p.Slot != r.cfg.slot {
		return r.errorf("the checkpoint's position belongs to replication slot '%s', but '%s' is '%s'", p.Slot, OptSlotName, r.cfg.slot)
	}
	if p.Start == "" && p.Stream == nil && r.subtask == 0 {
		return r.errorf("the checkpoint's position %s holds no incremental snapshot (was it taken with '%s' = 'false'?); start the job afresh", pos, OptIncrementalSnap)
	}
	r.restored = &p
	return nil
}

// HoldCheckpoint implements exec.CheckpointHolder: a chunk is read and
// emitted within one Read, so no checkpoint ever waits.
func (r *incReader) HoldCheckpoint() string { return "" }

// SnapshotPosition implements exec.CheckpointedReader.
func (r *incReader) SnapshotPosition() ([]byte, error) {
	p := incPosition{Slot: r.cfg.slot}
	if r.plan != nil {
		p.Start = r.plan.start.String()
		p.Chunks = make([]chunkSpec, len(r.refs))
		for i, c := range r.refs {
			p.Chunks[i] = c.spec
		}
	} else if r.restored != nil {
		p = *r.restored
	}
	if len(r.done) > 0 {
		p.Done = make(map[int]string, len(r.done))
		for id, hw := range r.done {
			p.Done[id] = hw.String()
		}
	}
	if r.phase == phaseStream {
		sp := r.streamPosition()
		p.Stream = &sp
	}
	return json.Marshal(p)
}

// NotifyPositionComplete implements exec.CheckpointCompleteReader: only
// the streaming subtask acknowledges anything to the main slot.
func (r *incReader) NotifyPositionComplete(id exec.CheckpointID, pos []byte) error {
	var p incPosition
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	if p.Stream == nil {
		return nil
	}
	sp, err := json.Marshal(p.Stream)
	if err != nil {
		return err
	}
	return r.reader.NotifyPositionComplete(id, sp)
}

// Open implements exec.SourceReader.
func (r *incReader) Open(ctx context.Context) error {
	if err := r.connect(ctx); err != nil {
		return err
	}
	for _, t := range r.tables {
		if err := r.checkChunkKey(t); err != nil {
			return err
		}
	}
	if err := r.ensurePublication(ctx); err != nil {
		return err
	}
	r.phase = phaseSnapshot
	if p := r.restored; p != nil {
		for id, s := range p.Done {
			lsn, err := pglogrepl.ParseLSN(s)
			if err != nil {
				return r.errorf("restored position: chunk %d: %w", id, err)
			}
			r.done[id] = lsn
		}
		if p.Start != "" {
			start, err := pglogrepl.ParseLSN(p.Start)
			if err != nil {
				return r.errorf("restored position: %w", err)
			}
			if err := r.coord.publishPlan(r.gen, &chunkPlan{start: start, chunks: p.Chunks}); err != nil {
				return r.errorf("%w", err)
			}
		}
	}
	if r.subtask == 0 {
		if err := r.openMainSlot(ctx); err != nil {
			return err
		}
	}
	if r.plan == nil && (r.subtask == 0 || (r.restored != nil && r.restored.Start != "")) {
		// The plan is known: this subtask made it or restored it.
		plan, err := r.coord.awaitPlan(ctx, r.gen)
		if err != nil || plan == nil {
			return r.errorf("no chunk plan: %v", err)
		}
		if err := r.usePlan(plan); err != nil {
			return err
		}
	}
	return nil
}

// openMainSlot (subtask 0) checks the restored slot, or creates it and
// the chunk plan for a new job; a restored stream starts right away.
func (r *incReader) openMainSlot(ctx context.Context) error {
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
	if p := r.restored; p != nil {
		if !slot.exists {
			return r.errorf("the replication slot '%s' of the restored checkpoint no longer exists: the changes after it cannot be read any more (drop the checkpoint and start the job afresh for a new snapshot)", c.slot)
		}
		if p.Stream == nil {
			return nil
		}
		lsn, err := pglogrepl.ParseLSN(p.Stream.LSN)
		if err != nil {
			return r.errorf("restored position: %w", err)
		}
		if slot.confirmed > lsn {
			return r.errorf("the replication slot '%s' has confirmed LSN %s, past the restored checkpoint's %s: the changes in between are no longer available (was the job restored from an older checkpoint than its latest?)", c.slot, slot.confirmed, lsn)
		}
		plan, err := r.coord.awaitPlan(ctx, r.gen)
		if err != nil || plan == nil {
			return r.errorf("restored stream without a chunk plan: %v", err)
		}
		if err := r.usePlan(plan); err != nil {
			return err
		}
		r.reported = true
		r.skip = p.Stream.Skip
		return r.beginStream(ctx, lsn)
	}
	if slot.exists {
		if err := pglogrepl.DropReplicationSlot(ctx, repl, c.slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return r.errorf("drop the replication slot '%s' left by an earlier run: %w", c.slot, err)
		}
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, repl, c.slot, pluginPgoutput, pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
	if err != nil {
		return r.errorf("create the replication slot '%s': %w", c.slot, err)
	}
	start, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return r.errorf("create the replication slot '%s': consistent point %q: %w", c.slot, res.ConsistentPoint, err)
	}
	plan := &chunkPlan{start: start}
	for _, t := range r.tables {
		specs, err := r.splitTable(ctx, t)
		if err != nil {
			return err
		}
		plan.chunks = append(plan.chunks, specs...)
	}
	if err := r.coord.publishPlan(r.gen, plan); err != nil {
		return r.errorf("%w", err)
	}
	return nil
}

// createBackfillSlot creates the subtask's temporary slot, which the
// server drops when the session ends (and Read when the subtask's chunks
// are done); a session of a crashed run that still holds it is waited for.
func (r *incReader) createBackfillSlot(ctx context.Context) error {
	if _, err := r.awaitSlotRelease(ctx, r.backfillSlot); err != nil {
		return err
	}
	if s, err := r.slotState(ctx, r.backfillSlot); err != nil {
		return err
	} else if s.exists {
		if _, err := r.conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, r.backfillSlot); err != nil {
			return r.errorf("drop the backfill slot '%s' left by an earlier run: %w", r.backfillSlot, err)
		}
	}
	if _, err := r.conn.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput', true)`, r.backfillSlot); err != nil {
		return r.errorf("create the temporary backfill slot '%s': %w", r.backfillSlot, err)
	}
	return nil
}

// checkChunkKey checks the chunk key column's PostgreSQL type.
func (r *incReader) checkChunkKey(t *pgTable) error {
	col := t.cols[pgColumnKey(t, r.cfg.physical[r.cfg.chunkKey].Name)]
	switch col.typ {
	case "int2", "int4", "int8", "text", "varchar":
		return nil
	}
	return r.errorf("the chunk key column %s of %s is a PostgreSQL %s; the incremental snapshot splits by a smallint, integer, bigint, text or varchar column ('%s')", col.name, t.qualified(), col.typ, OptChunkKeyColumn)
}

// keyExpr is the chunk key column of t as ordered and compared: strings
// byte-wise (COLLATE "C"), as Go compares them.
func (r *incReader) keyExpr(t *pgTable) (expr, typ string) {
	col := t.cols[pgColumnKey(t, r.cfg.physical[r.cfg.chunkKey].Name)]
	expr = quoteIdent(col.name)
	if col.typ == "text" || col.typ == "varchar" {
		expr += ` COLLATE "C"`
	}
	return expr, col.typ
}

// splitTable computes t's chunk boundaries: from the smallest key, each
// boundary is the key chunk.size rows further on (the next larger key
// when many rows share one).
func (r *incReader) splitTable(ctx context.Context, t *pgTable) ([]chunkSpec, error) {
	key, typ := r.keyExpr(t)
	name := t.qualified()
	var cur *string
	if err := r.conn.QueryRow(ctx, "SELECT MIN("+key+")::text FROM "+name).Scan(&cur); err != nil {
		return nil, r.errorf("split %s into chunks: %w", name, err)
	}
	var bounds []string
	for cur != nil {
		lit := quoteLiteral(*cur) + "::" + typ
		var next *string
		err := r.conn.QueryRow(ctx, fmt.Sprintf("SELECT (%s)::text AS boundary FROM %s WHERE %s >= %s ORDER BY %s LIMIT 1 OFFSET %d", key, name, key, lit, key, r.cfg.chunkSize)).Scan(&next)
		if err != nil && err != pgx.ErrNoRows {
			return nil, r.errorf("split %s into chunks: %w", name, err)
		}
		if next != nil && *next == *cur {
			next = nil
			if err := r.conn.QueryRow(ctx, fmt.Sprintf("SELECT MIN(%s)::text FROM %s WHERE %s > %s", key, name, key, lit)).Scan(&next); err != nil {
				return nil, r.errorf("split %s into chunks: %w", name, err)
			}
		}
		if next != nil {
			bounds = append(bounds, *next)
		}
		cur = next
	}
	specs := make([]chunkSpec, 0, len(bounds)+1)
	var lo *string
	for i := range bounds {
		specs = append(specs, chunkSpec{Table: t.schema + "." + t.name, Lo: lo, Hi: &bounds[i]})
		lo = &bounds[i]
	}
	return append(specs, chunkSpec{Table: t.schema + "." + t.name, Lo: lo}), nil
}

// usePlan resolves the plan's chunks against the tables found and picks
// this subtask's.
func (r *incReader) usePlan(p *chunkPlan) error {
	byName := map[string]*pgTable{}
	for _, t := range r.tables {
		byName[t.schema+"."+t.name] = t
	}
	kt := r.cfg.physical[r.cfg.chunkKey].Type
	r.plan = p
	r.refs = make([]*chunkRef, len(p.chunks))
	r.byTable = map[*pgTable][]*chunkRef{}
	for i, s := range p.chunks {
		t := byName[s.Table]
		if t == nil {
			return r.errorf("the snapshot's chunk %d is of table %s, which no longer matches '%s'/'%s' (the tables changed since the job started; start it afresh)", i, s.Table, OptSchemaName, OptTableName)
		}
		c := &chunkRef{id: i, table: t, spec: s, lo: types.NullValue, hi: types.NullValue}
		var err error
		if s.Lo != nil {
			c.hasLo = true
			if c.lo, err = parseText(kt, []byte(*s.Lo)); err != nil {
				return r.errorf("chunk %d: %w", i, err)
			}
		}
		if s.Hi != nil {
			c.hasHi = true
			if c.hi, err = parseText(kt, []byte(*s.Hi)); err != nil {
				return r.errorf("chunk %d: %w", i, err)
			}
		}
		r.refs[i] = c
		r.byTable[t] = append(r.byTable[t], c)
		if i%r.parallelism == r.subtask {
			if _, done := r.done[i]; !done {
				r.mine = append(r.mine, i)
			}
		}
	}
	for _, t := range r.tables {
		if len(r.byTable[t]) == 0 {
			return r.errorf("the snapshot's chunks do not cover %s (the tables changed since the job started; start it afresh)", t.qualified())
		}
	}
	return nil
}

// contains reports whether key v lies in chunk c; NULL lies in the first.
func (c *chunkRef) contains(v types.Value) bool {
	if v.IsNull() {
		return !c.hasLo
	}
	if c.hasLo && types.Compare(v, c.lo) < 0 {
		return false
	}
	return !c.hasHi || types.Compare(v, c.hi) < 0
}

// chunkOf returns the chunk of t that holds key v.
func (r *incReader) chunkOf(t *pgTable, v types.Value) *chunkRef {
	cs := r.byTable[t]
	if v.IsNull() {
		return cs[0]
	}
	// The first chunk whose upper bound is above v.
	i := sort.Search(len(cs), func(i int) bool { return !cs[i].hasHi || types.Compare(v, cs[i].hi) < 0 })
	return cs[i]
}

// Read implements exec.SourceReader.
func (r *incReader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	if r.phase == phaseStream {
		return r.reader.Read(ctx, b)
	}
	if r.plan == nil {
		p, err := r.coord.awaitPlan(ctx, r.gen)
		if err != nil {
			return exec.ReadResult{Split: -1}, r.errorf("%w", err)
		}
		if p == nil {
			return exec.ReadResult{Split: -1}, nil
		}
		if err := r.usePlan(p); err != nil {
			return exec.ReadResult{Split: -1}, err
		}
	}
	if len(r.mine) > 0 {
		if !r.cfg.backfillSkip && !r.bfSlot {
			// Created before the subtask's first chunk: it decodes every
			// transaction that commits after the chunk's cursor snapshot.
			if err := r.createBackfillSlot(r.ctx); err != nil {
				return exec.ReadResult{Split: -1}, err
			}
			r.bfSlot = true
		}
		id := r.mine[0]
		if err := r.readChunk(r.refs[id], b); err != nil {
			return exec.ReadResult{Split: -1}, err
		}
		r.mine = r.mine[1:]
		// The last chunk's rows must be downstream before the coordinator
		// hears of it: the task flushes them before the next Read.
		return exec.ReadResult{Split: 0, Flush: len(r.mine) == 0}, nil
	}
	if r.bfSlot {
		// An unconsumed slot would hold back the server's WAL.
		if _, err := r.conn.Exec(r.ctx, `SELECT pg_drop_replication_slot($1)`, r.backfillSlot); err != nil {
			return exec.ReadResult{Split: -1}, r.errorf("drop the backfill slot '%s': %w", r.backfillSlot, err)
		}
		r.bfSlot = false
	}
	if !r.reported {
		hws := map[int]pglogrepl.LSN{}
		for id, hw := range r.done {
			hws[id] = hw
		}
		if err := r.coord.finish(r.gen, r.subtask, hws); err != nil {
			return exec.ReadResult{Split: -1}, r.errorf("%w", err)
		}
		r.reported = true
	}
	if r.subtask != 0 {
		// Nothing more to read: subtask 0 streams. Wait for the end.
		<-ctx.Done()
		return exec.ReadResult{Split: -1}, nil
	}
	all, err := r.coord.awaitAllFinished(ctx, r.gen)
	if err != nil {
		return exec.ReadResult{Split: -1}, r.errorf("%w", err)
	}
	if all == nil {
		return exec.ReadResult{Split: -1}, nil
	}
	for id, hw := range all {
		r.done[id] = hw
	}
	if len(r.done) != len(r.refs) {
		return exec.ReadResult{Split: -1}, r.errorf("the subtasks finished %d chunks of %d", len(r.done), len(r.refs))
	}
	if err := r.beginStream(r.ctx, r.plan.start); err != nil {
		return exec.ReadResult{Split: -1}, err
	}
	return exec.ReadResult{Split: -1}, nil
}

// beginStream starts streaming the main slot with the chunk filter.
func (r *incReader) beginStream(ctx context.Context, from pglogrepl.LSN) error {
	for id, hw := range r.done {
		if id < len(r.refs) {
			r.refs[id].hw = hw
		}
		if hw > r.maxHW {
			r.maxHW = hw
		}
	}
	if !r.cfg.backfillSkip {
		r.keep = r.keepUnlessInChunk
	}
	return r.startStream(ctx, from)
}

// keepUnlessInChunk drops the rows of a change committed before its key's
// chunk's high watermark: the chunk's rows hold it already. A pair of
// rows one of which is dropped (the key moved between chunks) keeps the
// other as a plain insert or delete.
func (r *incReader) keepUnlessInChunk(t *pgTable, b *types.Batch, from int) {
	commit := r.begin.FinalLSN
	if commit >= r.maxHW {
		r.keep = nil // transactions arrive in commit order: no later one is in a chunk
		return
	}
	n := b.Len()
	w := from
	for i := from; i < n; i++ {
		c := r.chunkOf(t, b.Rows[i][r.cfg.chunkKey])
		if commit < c.hw {
			continue
		}
		if w != i {
			copy(b.Rows[w], b.Rows[i])
			b.Kinds[w] = b.Kinds[i]
		}
		w++
	}
	if w == n {
		return
	}
	if n-from == 2 && w-from == 1 {
		switch b.Kinds[from] {
		case types.UpdateBefore:
			b.Kinds[from] = types.Delete
		case types.UpdateAfter:
			if r.cfg.mode == ChangelogAll {
				b.Kinds[from] = types.Insert
			}
		}
	}
	b.Truncate(w)
}

// readChunk reads chunk c, applies the changes committed up to its high
// watermark, and appends its rows to b as +I.
func (r *incReader) readChunk(c *chunkRef, b *types.Batch) error {
	ctx := r.ctx
	t := c.table
	key, typ := r.keyExpr(t)
	var where []string
	if c.spec.Lo != nil {
		where = append(where, key+" >= "+quoteLiteral(*c.spec.Lo)+"::"+typ)
	}
	if c.spec.Hi != nil {
		lt := key + " < " + quoteLiteral(*c.spec.Hi) + "::" + typ
		if c.spec.Lo == nil {
			lt = "(" + quoteIdent(t.cols[pgColumnKey(t, r.cfg.physical[r.cfg.chunkKey].Name)].name) + " IS NULL OR " + lt + ")"
		}
		where = append(where, lt)
	}
	cols := make([]string, len(r.cfg.physical))
	for j, col := range r.cfg.physical {
		cols[j] = quoteIdent(t.cols[pgColumnKey(t, col.Name)].name)
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + t.qualified()
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + key // the key's index serves the range; the rows come out in a stable order
	n0 := b.Len()
	fail := func(err error) error {
		_, _ = r.conn.Exec(ctx, "ROLLBACK")
		b.Truncate(n0)
		return r.errorf("snapshot chunk %d of %s: %w", c.id, t.qualified(), err)
	}
	if _, err := r.conn.Exec(ctx, "BEGIN READ ONLY"); err != nil {
		return fail(err)
	}
	if _, err := r.conn.Exec(ctx, "DECLARE flinksql_cdc_chunk NO SCROLL CURSOR FOR "+q); err != nil {
		return fail(err)
	}
	if r.hook != nil {
		r.hook("select", c.id)
	}
	fetch := fmt.Sprintf("FETCH %d FROM flinksql_cdc_chunk", r.cfg.fetchSize)
	for {
		rr := r.conn.PgConn().ExecParams(ctx, fetch, nil, nil, nil, nil)
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
					return fail(fmt.Errorf("column %s: %w", r.cfg.physical[i].Name, err))
				}
				row[i] = val
			}
		}
		if _, err := rr.Close(); err != nil {
			return fail(err)
		}
		if got < r.cfg.fetchSize {
			break
		}
	}
	if _, err := r.conn.Exec(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	// Every transaction the cursor saw committed before this position
	// (its commit record was inserted before it became visible).
	var hwText string
	if err := r.conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&hwText); err != nil {
		return fail(err)
	}
	hw, err := pglogrepl.ParseLSN(hwText)
	if err != nil {
		return fail(err)
	}
	if r.hook != nil {
		r.hook("hw", c.id)
	}
	if !r.cfg.backfillSkip {
		// Decoding reads only flushed WAL: with synchronous_commit off a
		// commit the cursor saw may not be flushed yet. A synchronous
		// commit of a transaction that writes flushes everything before
		// it; its own (empty) message commits after hw and is ignored.
		if _, err := r.conn.Exec(ctx, "BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_logical_emit_message(true, 'flinksql-cdc', 'flush'); COMMIT"); err != nil {
			return fail(fmt.Errorf("flush the WAL up to the high watermark %s: %w", hw, err))
		}
		if err := r.backfill(c, hw, b, n0); err != nil {
			b.Truncate(n0)
			return err
		}
	}
	for i := n0; i < b.Len(); i++ {
		r.fillMeta(b.Rows[i], t, types.Timestamp(0, 0))
	}
	r.done[c.id] = hw
	return nil
}

// chunkRows is the backfill's view of a chunk's rows in b: by primary key,
// built on the first change that concerns the chunk.
type chunkRows struct {
	r       *incReader
	b       *types.Batch
	from    int
	index   map[string]int
	deleted map[int]bool
	sb      strings.Builder
}

func (cr *chunkRows) key(row types.Row) string {
	cr.sb.Reset()
	for _, i := range cr.r.cfg.pk {
		v := row[i]
		if v.IsNull() {
			cr.sb.WriteString("\x01")
		} else {
			cr.sb.WriteString("\x02" + types.FormatSQL(v, cr.r.cfg.physical[i].Type, nil))
		}
		cr.sb.WriteByte(0)
	}
	return cr.sb.String()
}

func (cr *chunkRows) build() {
	if cr.index != nil {
		return
	}
	cr.index = map[string]int{}
	cr.deleted = map[int]bool{}
	for i := cr.from; i < cr.b.Len(); i++ {
		cr.index[cr.key(cr.b.Rows[i])] = i
	}
}

func (cr *chunkRows) get(k string) (types.Row, bool) {
	i, ok := cr.index[k]
	if !ok {
		return nil, false
	}
	return cr.b.Rows[i], true
}

func (cr *chunkRows) upsert(row types.Row) {
	k := cr.key(row)
	if i, ok := cr.index[k]; ok {
		copy(cr.b.Rows[i], row)
		return
	}
	cr.index[k] = cr.b.Len()
	cr.b.AppendRow(types.Insert, row)
}

func (cr *chunkRows) delete(k string) {
	if i, ok := cr.index[k]; ok {
		cr.deleted[i] = true
		delete(cr.index, k)
	}
}

// compact removes the deleted rows, keeping the others' order.
func (cr *chunkRows) compact() {
	if len(cr.deleted) == 0 {
		return
	}
	b := cr.b
	w := cr.from
	for i := cr.from; i < b.Len(); i++ {
		if cr.deleted[i] {
			continue
		}
		if w != i {
			copy(b.Rows[w], b.Rows[i])
		}
		w++
	}
	b.Truncate(w)
}

// backfill reads the changes from the backfill slot up to hw and applies
// those of chunk c committed before hw to its rows b.Rows[from:].
func (r *incReader) backfill(c *chunkRef, hw pglogrepl.LSN, b *types.Batch, from int) error {
	ctx := r.ctx
	rows, err := r.conn.Query(ctx, `SELECT data FROM pg_logical_slot_get_binary_changes($1, $2::pg_lsn, NULL, 'proto_version', '1', 'publication_names', $3)`,
		r.backfillSlot, hw.String(), quoteIdent(r.cfg.pub))
	if err != nil {
		return r.errorf("backfill of chunk %d of %s from slot '%s': %w", c.id, c.table.qualified(), r.backfillSlot, err)
	}
	defer rows.Close()
	cr := &chunkRows{r: r, b: b, from: from}
	newRow := make(types.Row, len(r.cfg.physical))
	oldRow := make(types.Row, len(r.cfg.physical))
	unchanged := make([]bool, len(r.cfg.physical))
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) == 0 || len(raw[0]) == 0 {
			continue
		}
		data := raw[0]
		switch pglogrepl.MessageType(data[0]) {
		case pglogrepl.MessageTypeBegin:
			if err := r.bfBegin.Decode(data[1:]); err != nil {
				return r.errorf("pgoutput: %w", err)
			}
		case pglogrepl.MessageTypeRelation:
			var rm pglogrepl.RelationMessage
			if err := rm.Decode(data[1:]); err != nil {
				return r.errorf("pgoutput: %w", err)
			}
			if err := r.relation(r.bfRels, &rm); err != nil {
				return err
			}
		case pglogrepl.MessageTypeTruncate:
			var tm pglogrepl.TruncateMessage
			if err := tm.Decode(data[1:]); err != nil {
				return r.errorf("pgoutput: %w", err)
			}
			for _, id := range tm.RelationIDs {
				if rel := r.bfRels[id]; rel != nil && rel.table == c.table && r.bfBegin.FinalLSN < hw {
					return r.errorf("the PostgreSQL table %s was truncated while its snapshot was read: a TRUNCATE has no changelog rows; restart the job afresh for a new snapshot", c.table.qualified())
				}
			}
		case pglogrepl.MessageTypeInsert, pglogrepl.MessageTypeUpdate, pglogrepl.MessageTypeDelete:
			if r.bfBegin.FinalLSN >= hw || len(data) < 6 {
				continue // committed after the high watermark: the stream has it
			}
			rel := r.bfRels[binary.BigEndian.Uint32(data[1:5])]
			if rel == nil || rel.table != c.table {
				continue
			}
			cr.build()
			if err := r.applyChange(c, cr, rel, data, newRow, oldRow, unchanged); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return r.errorf("backfill of chunk %d of %s from slot '%s': %w", c.id, c.table.qualified(), r.backfillSlot, err)
	}
	cr.compact()
	return nil
}

// applyChange applies one change to the chunk's rows: the row's new
// version replaces the old by primary key while its chunk key lies in the
// chunk, otherwise it leaves the chunk.
func (r *incReader) applyChange(c *chunkRef, cr *chunkRows, rel *relation, data []byte, newRow, oldRow types.Row, unchanged []bool) error {
	kind, rest := data[0], data[5:]
	t := c.table
	var err error
	hasOld := false
	if kind == 'U' || kind == 'D' {
		if len(rest) > 0 && (rest[0] == 'K' || rest[0] == 'O') {
			clear(oldRow)
			if rest, err = r.tuple(rest[1:], rel, oldRow, nil); err != nil {
				return err
			}
			hasOld = true
		}
	}
	if kind == 'D' {
		if !hasOld {
			return r.errorf("a delete from %s carries no old row or key (REPLICA IDENTITY NOTHING?)", t.qualified())
		}
		cr.delete(cr.key(oldRow))
		return nil
	}
	if len(rest) == 0 || rest[0] != 'N' {
		return r.errorf("pgoutput: a change of %s without a new tuple", t.qualified())
	}
	clear(newRow)
	clear(unchanged)
	r.unchanged = unchanged
	_, err = r.tuple(rest[1:], rel, newRow, nil)
	r.unchanged = nil
	if err != nil {
		return err
	}
	nk := cr.key(newRow)
	for i, u := range unchanged {
		if !u {
			continue
		}
		prev, ok := cr.get(nk)
		if !ok && hasOld {
			prev, ok = cr.get(cr.key(oldRow))
		}
		if !ok {
			return r.errorf("an update of %s left the TOASTed value of column %s unchanged while its chunk was read, and the chunk does not hold the row; set REPLICA IDENTITY FULL on the table", t.qualified(), r.cfg.physical[i].Name)
		}
		newRow[i] = prev[i]
	}
	if hasOld {
		if ok := cr.key(oldRow); ok != nk {
			cr.delete(ok)
		}
	}
	if c.contains(newRow[r.cfg.chunkKey]) {
		cr.upsert(newRow)
	} else {
		cr.delete(nk)
	}
	return nil
}
