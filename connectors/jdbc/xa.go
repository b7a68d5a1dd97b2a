package jdbc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// XAWriter is an exactly-once jdbc sink subtask (two-phase commit over
// PostgreSQL's prepared transactions):
//
//   - the rows between two barriers go into one transaction of the
//     writer's data connection (flushed into it as the buffer options say);
//   - at barrier n the writer flushes and runs PREPARE TRANSACTION
//     '<prefix>-<subtask>-<n>': the transaction survives a crash of the
//     engine, and its name and xid are the committable kept in checkpoint n;
//   - when checkpoint n completes, COMMIT PREPARED on a second connection
//     (COMMIT PREPARED cannot run inside the next open transaction);
//   - on restore the runtime commits the restored checkpoint's committables
//     again (a name no longer prepared was committed before, which the xid's
//     status confirms, or aborted, which is reported as lost output), and
//     Open rolls back every other prepared transaction of the prefix that
//     this subtask owns: those were prepared after the restored checkpoint,
//     and their rows are written again by the replay.
//
// A session advisory lock on the prefix and subtask keeps two running jobs
// with the same prefix from rolling back each other's transactions.
type XAWriter struct {
	*Writer
	commitConn *pgx.Conn
	log        exec.LogFunc
	wrote      bool // the open transaction holds rows
}

// committable is what checkpoint n keeps of a prepared transaction.
type committable struct {
	GID string `json:"gid,omitempty"`
	XID string `json:"xid,omitempty"` // pg_current_xact_id(), to learn a vanished transaction's fate
	// Rows, in upsert mode, are the buffered changes of a checkpoint taken
	// while an earlier one was not committed yet (see Writer.pending):
	// they are written and committed in one transaction at commit time,
	// which is idempotent because each is the final upsert or delete of
	// its key as of this checkpoint.
	Rows []byte `json:"rows,omitempty"`
}

// encodeRows serializes a buffer: per row its kind, then the row.
func encodeRows(b *buffer) []byte {
	var out []byte
	for i := 0; i < b.len(); i++ {
		out = append(out, byte(b.kinds[i]))
		out = types.AppendRow(out, b.row(i))
	}
	return out
}

func decodeRows(data []byte, into *buffer) error {
	for len(data) > 0 {
		kind := types.RowKind(data[0])
		r, rest, err := types.DecodeRow(data[1:])
		if err != nil {
			return err
		}
		if len(r) != into.width {
			return fmt.Errorf("a row of %d columns for a table of %d", len(r), into.width)
		}
		into.add(kind, r)
		data = rest
	}
	return nil
}

// SetLog implements exec.LogReceiver.
func (w *XAWriter) SetLog(l exec.LogFunc) { w.log = l }

func (w *XAWriter) logf(format string, args ...any) {
	if w.log != nil {
		w.log(format, args...)
	}
}

func (w *XAWriter) gidPrefix() string { return w.cfg.prefix + "-" }

// ensureCommitConn connects the commit connection, takes the prefix lock
// and checks that the server can prepare transactions.
func (w *XAWriter) ensureCommitConn(ctx context.Context) error {
	if w.commitConn != nil && !w.commitConn.IsClosed() {
		return nil
	}
	conn, err := connect(ctx, w.cfg)
	if err != nil {
		return err
	}
	fail := func(err error) error { conn.Close(context.Background()); return err }
	var maxPrepared int
	if err := conn.QueryRow(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&maxPrepared); err != nil {
		return fail(fmt.Errorf("jdbc table %s: reading max_prepared_transactions: %w", w.cfg.name, err))
	}
	if maxPrepared == 0 {
		return fail(fmt.Errorf("jdbc table %s: 'sink.delivery-guarantee' = 'exactly-once' needs prepared transactions, but the PostgreSQL server at %s has max_prepared_transactions = 0; set max_prepared_transactions in postgresql.conf to at least the sink's parallelism (%d) and restart the server",
			w.cfg.name, w.cfg.url, w.parallelism))
	}
	// The lock is the session's: it goes with the connection, also when the
	// engine dies.
	key := w.cfg.prefix + "-" + strconv.Itoa(w.subtask)
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key).Scan(&got); err != nil {
		return fail(fmt.Errorf("jdbc table %s: locking the transaction prefix: %w", w.cfg.name, err))
	}
	if !got {
		return fail(fmt.Errorf("jdbc table %s: the '%s' '%s' is in use by another running job (subtask %d of its sink holds it in database %s); two exactly-once sinks with the same prefix roll back each other's transactions: give this sink a '%s' of its own, or stop the other job first",
			w.cfg.name, OptTransactionalIDPrefix, w.cfg.prefix, w.subtask, w.cfg.database, OptTransactionalIDPrefix))
	}
	w.commitConn = conn
	return nil
}

// Open implements exec.SinkWriter: after the restored committables were
// committed (Commit runs before Open), roll back what this subtask's
// prefix left prepared, then connect for data.
func (w *XAWriter) Open(ctx context.Context) error {
	if err := w.ensureCommitConn(ctx); err != nil {
		return err
	}
	if err := w.rollBackLeftovers(ctx); err != nil {
		return err
	}
	w.eo = true
	return w.Writer.Open(ctx)
}

// rollBackLeftovers rolls back the prepared transactions of the prefix
// whose subtask this one owns (subtask j of an earlier parallelism is owned
// by j mod the current one, as its committables are on a restore).
func (w *XAWriter) rollBackLeftovers(ctx context.Context) error {
	rows, err := w.commitConn.Query(ctx,
		"SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)", w.gidPrefix())
	if err != nil {
		return fmt.Errorf("jdbc table %s: listing prepared transactions: %w", w.cfg.name, err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("jdbc table %s: listing prepared transactions: %w", w.cfg.name, err)
	}
	for _, gid := range gids {
		sub, _, ok := parseGID(gid, w.gidPrefix())
		if !ok || sub%w.parallelism != w.subtask {
			continue
		}
		if _, err := w.commitConn.Exec(ctx, "ROLLBACK PREPARED '"+gid+"'"); err != nil && !undefinedObject(err) {
			return fmt.Errorf("jdbc table %s: rolling back prepared transaction %s: %w", w.cfg.name, gid, err)
		}
		w.logf("[INFO] jdbc table %s: rolled back prepared transaction %s, which no restored checkpoint covers (its rows are written again)", w.cfg.name, gid)
	}
	return nil
}

// parseGID reads '<prefix><subtask>-<checkpoint>'.
func parseGID(gid, prefix string) (subtask int, checkpoint int64, ok bool) {
	rest, found := strings.CutPrefix(gid, prefix)
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(a)
	c, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || s < 0 {
		return 0, 0, false
	}
	return s, c, true
}

// flushIntoTxn writes the buffer into the open transaction, beginning one
// if none is. No retry: a failed statement aborts the transaction, whose
// earlier rows only a restore can write again.
func (w *Writer) flushIntoTxn(ctx context.Context) error {
	if len(w.cfg.pk) > 0 && w.pending > 0 {
		return nil // kept until the earlier committables are committed
	}
	if !w.inTxn {
		if _, err := w.conn.Exec(ctx, "BEGIN"); err != nil {
			return fmt.Errorf("jdbc table %s: BEGIN: %w", w.cfg.name, err)
		}
		w.inTxn = true
	}
	if err := w.writeBuffer(ctx, w.conn, &w.buf); err != nil {
		return err
	}
	w.buf.reset()
	return nil
}

// PrepareCommit implements exec.TwoPhaseCommitWriter.
func (w *XAWriter) PrepareCommit(id exec.CheckpointID) ([]exec.Committable, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bgErr != nil {
		return nil, w.bgErr
	}
	ctx := w.ctx
	if len(w.cfg.pk) > 0 && w.pending > 0 {
		// An earlier transaction still holds its keys' locks: this
		// checkpoint's changes travel in the checkpoint instead.
		if w.buf.len() == 0 {
			return nil, nil
		}
		c, err := json.Marshal(committable{Rows: encodeRows(&w.buf)})
		if err != nil {
			return nil, err
		}
		w.buf.reset()
		w.pending++
		return []exec.Committable{c}, nil
	}
	if err := w.flushLocked(ctx); err != nil {
		return nil, err
	}
	if !w.inTxn {
		return nil, nil // nothing written since the last barrier
	}
	var xid string
	if err := w.conn.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid); err != nil {
		return nil, fmt.Errorf("jdbc table %s: reading the transaction id: %w", w.cfg.name, err)
	}
	gid := fmt.Sprintf("%s%d-%d", w.gidPrefix(), w.subtask, id)
	if _, err := w.conn.Exec(ctx, "PREPARE TRANSACTION '"+gid+"'"); err != nil {
		w.inTxn = false
		return nil, fmt.Errorf("jdbc table %s: PREPARE TRANSACTION '%s': %w", w.cfg.name, gid, err)
	}
	w.inTxn = false
	w.pending++
	c, err := json.Marshal(committable{GID: gid, XID: xid})
	if err != nil {
		return nil, err
	}
	return []exec.Committable{c}, nil
}

// Commit implements exec.TwoPhaseCommitWriter: COMMIT PREPARED each, which
// is idempotent through the xid's status when the name is gone.
func (w *XAWriter) Commit(cs []exec.Committable) error {
	ctx := context.Background()
	if w.ctx != nil {
		ctx = w.ctx
	}
	if err := w.ensureCommitConn(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var aborted []string
	committed := 0
	for _, raw := range cs {
		var c committable
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("jdbc table %s: bad committable %q: %w", w.cfg.name, raw, err)
		}
		if w.pending > 0 {
			w.pending--
		}
		if c.GID == "" {
			if err := w.commitRows(ctx, c.Rows); err != nil {
				return err
			}
			committed++
			continue
		}
		_, err := w.commitConn.Exec(ctx, "COMMIT PREPARED '"+c.GID+"'")
		if err == nil {
			committed++
			continue
		}
		if !undefinedObject(err) {
			return fmt.Errorf("jdbc table %s: COMMIT PREPARED '%s': %w", w.cfg.name, c.GID, err)
		}
		var status *string
		if err := w.commitConn.QueryRow(ctx, "SELECT pg_xact_status($1::xid8)", c.XID).Scan(&status); err != nil {
			return fmt.Errorf("jdbc table %s: prepared transaction %s is gone and its status cannot be read: %w", w.cfg.name, c.GID, err)
		}
		switch {
		case status != nil && *status == "aborted":
			aborted = append(aborted, c.GID)
		case status != nil && *status == "committed":
			committed++
			w.logf("[INFO] jdbc table %s: prepared transaction %s was committed before", w.cfg.name, c.GID)
		default:
			// The commit log no longer knows so old a transaction: only a
			// commit ends a prepared transaction of ours besides our own
			// rollback of later ones, so it was committed.
			committed++
			w.logf("[WARN] jdbc table %s: prepared transaction %s (xid %s) is gone and too old for its status to be known; taken as committed", w.cfg.name, c.GID, c.XID)
		}
	}
	if len(aborted) > 0 {
		return &exec.AbortedCommitError{
			Message: fmt.Sprintf("jdbc table %s: the prepared transactions %s of a completed checkpoint were rolled back before they could be committed (by ROLLBACK PREPARED from outside the job, or a sink with the same '%s'); their rows are lost from PostgreSQL table %s",
				w.cfg.name, strings.Join(aborted, ", "), OptTransactionalIDPrefix, w.cfg.table),
			Aborted:   len(aborted),
			Committed: committed,
		}
	}
	return nil
}

// commitRows writes and commits the changes a checkpoint carried.
func (w *XAWriter) commitRows(ctx context.Context, data []byte) error {
	if w.stmts == nil {
		pgCols, err := tableColumns(ctx, w.commitConn, w.cfg)
		if err != nil {
			return err
		}
		if w.stmts, err = prepareStatements(w.cfg, pgCols); err != nil {
			return err
		}
	}
	var b buffer
	b.init(w.cfg)
	if err := decodeRows(data, &b); err != nil {
		return fmt.Errorf("jdbc table %s: bad rows in a committable: %w", w.cfg.name, err)
	}
	if err := pgx.BeginFunc(ctx, w.commitConn, func(tx pgx.Tx) error { return w.writeBuffer(ctx, tx, &b) }); err != nil {
		return fmt.Errorf("jdbc table %s: committing the %d changes a checkpoint carried: %w", w.cfg.name, b.len(), err)
	}
	return nil
}

// Abort implements exec.TwoPhaseCommitWriter.
func (w *XAWriter) Abort(cs []exec.Committable) error {
	ctx := context.Background()
	if err := w.ensureCommitConn(ctx); err != nil {
		return err
	}
	for _, raw := range cs {
		var c committable
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("jdbc table %s: bad committable %q: %w", w.cfg.name, raw, err)
		}
		if c.GID == "" {
			continue // carried rows: nothing was written
		}
		if _, err := w.commitConn.Exec(ctx, "ROLLBACK PREPARED '"+c.GID+"'"); err != nil && !undefinedObject(err) {
			return fmt.Errorf("jdbc table %s: ROLLBACK PREPARED '%s': %w", w.cfg.name, c.GID, err)
		}
	}
	return nil
}

// HasOutput implements exec.CommittableSizer: a transaction is prepared
// only when it holds rows.
func (w *XAWriter) HasOutput(exec.Committable) bool { return true }

// Finish implements exec.SinkWriter. With checkpointing the runtime calls
// it after the final checkpoint committed everything; without, the open
// transaction is committed here, at the end of input.
func (w *XAWriter) Finish(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bgErr != nil {
		return w.bgErr
	}
	if err := w.flushLocked(ctx); err != nil {
		return err
	}
	if w.inTxn {
		if _, err := w.conn.Exec(ctx, "COMMIT"); err != nil {
			return fmt.Errorf("jdbc table %s: COMMIT: %w", w.cfg.name, err)
		}
		w.inTxn = false
	}
	return nil
}

// Flush is not the exactly-once writer's: rows become visible only by
// commit. (The sink operator calls PrepareCommit at barriers.)
func (w *XAWriter) Flush(context.Context) error { return nil }

// Close implements exec.SinkWriter; an open transaction is rolled back by
// the server when its connection closes.
func (w *XAWriter) Close() error {
	err := w.Writer.Close()
	if w.commitConn != nil {
		w.commitConn.Close(context.Background())
		w.commitConn = nil
	}
	return err
}

func undefinedObject(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42704"
}

var (
	_ exec.TwoPhaseCommitWriter = (*XAWriter)(nil)
	_ exec.CommittableSizer     = (*XAWriter)(nil)
	_ exec.LogReceiver          = (*XAWriter)(nil)
)
