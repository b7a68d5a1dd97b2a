package jdbc

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sink is a jdbc table written by the engine.
type Sink struct {
	cfg *config
}

// AcceptedChangelogMode implements connectors.Sink: upserts and deletes by
// key with a primary key (the -U of an update is not needed), inserts only
// without one.
func (s *Sink) AcceptedChangelogMode(types.ChangelogMode) types.ChangelogMode {
	if len(s.cfg.pk) > 0 {
		return types.Upsert
	}
	return types.InsertOnly
}

// Parallelism implements connectors.Sink.
func (s *Sink) Parallelism(def int) int {
	if s.cfg.parallelism > 0 {
		return s.cfg.parallelism
	}
	return def
}

// WritableMetadata implements connectors.Sink: there is none.
func (s *Sink) WritableMetadata() map[string]types.Type { return nil }

// NewWriter implements connectors.Sink.
func (s *Sink) NewWriter(subtask, parallelism int) (exec.SinkWriter, error) {
	w := &Writer{cfg: s.cfg, subtask: subtask, parallelism: parallelism}
	w.buf.init(s.cfg)
	if s.cfg.exactlyOnce {
		return &XAWriter{Writer: w}, nil
	}
	return w, nil
}

// buffer holds the rows written since the last flush: in append mode all
// of them in order, in upsert mode the last change of each key (Flink's
// reduced buffer), so one flush never touches a key twice.
type buffer struct {
	width  int
	kinds  []types.RowKind
	arena  []types.Value // row i is arena[i*width:(i+1)*width]
	index  map[string]int
	pk     []int
	keyBuf []byte
}

func (b *buffer) init(c *config) {
	b.width = len(c.physical)
	if len(c.pk) > 0 {
		b.pk = c.pk
		b.index = map[string]int{}
	}
}

func (b *buffer) len() int { return len(b.kinds) }

func (b *buffer) row(i int) types.Row {
	return types.Row(b.arena[i*b.width : (i+1)*b.width : (i+1)*b.width])
}

// add keeps a copy of r (its values only: strings and big numbers are
// immutable, so sharing them with the batch is safe).
func (b *buffer) add(kind types.RowKind, r types.Row) {
	if b.index != nil {
		b.keyBuf = b.keyBuf[:0]
		for _, c := range b.pk {
			b.keyBuf = types.AppendValue(b.keyBuf, r[c])
		}
		if i, ok := b.index[string(b.keyBuf)]; ok {
			b.kinds[i] = kind
			copy(b.row(i), r[:b.width])
			return
		}
		b.index[string(b.keyBuf)] = len(b.kinds)
	}
	b.kinds = append(b.kinds, kind)
	b.arena = append(b.arena, r[:b.width]...)
}

func (b *buffer) reset() {
	clear(b.arena)
	b.arena, b.kinds = b.arena[:0], b.kinds[:0]
	if b.index != nil {
		clear(b.index)
	}
}

// Writer is an at-least-once jdbc sink subtask: rows are buffered and
// written in one transaction per flush, retried on connection errors; the
// sink operator flushes it at every checkpoint barrier.
type Writer struct {
	cfg                  *config
	subtask, parallelism int

	// mu guards everything below: the interval flusher runs on a goroutine
	// of its own.
	mu     sync.Mutex
	conn   *pgx.Conn
	stmts  *statements
	buf    buffer
	bgErr  error // a failed interval flush, returned by the next call
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// The exactly-once writer's: flushes go into one open transaction per
	// checkpoint instead of a transaction each.
	eo    bool
	inTxn bool // BEGIN sent, not yet prepared or committed
	// pending counts the committables handed out and not yet committed.
	// In upsert mode nothing is written while one is: a prepared
	// transaction keeps the row locks of its keys until COMMIT PREPARED,
	// which runs on the task's goroutine after the checkpoint completes,
	// so writing one of those keys again before would wait for ever.
	pending int
}

// statements are the table's resolved columns and statement texts.
type statements struct {
	table     tableName
	cols      []column // every physical column
	keys      []column // the primary key's
	colNames  []string
	upsertSQL string
	deleteSQL string
	// For multi-row upserts: the table, the column list, the ON CONFLICT
	// clause, and the statements by row count.
	tableSQL, names, conflict string
	multi                     map[int]string
}

func prepareStatements(c *config, pgCols map[string]pgColumn) (*statements, error) {
	all := make([]int, len(c.physical))
	for i := range all {
		all[i] = i
	}
	cols, err := resolveColumns(c, pgCols, all)
	if err != nil {
		return nil, err
	}
	st := &statements{table: c.table, cols: cols}
	for _, col := range cols {
		st.colNames = append(st.colNames, col.pg.name)
	}
	if len(c.pk) == 0 {
		return st, nil
	}
	if st.keys, err = resolveColumns(c, pgCols, c.pk); err != nil {
		return nil, err
	}
	var names, params, sets, where, keyNames []string
	for i, col := range cols {
		names = append(names, quoteIdent(col.pg.name))
		params = append(params, "$"+strconv.Itoa(i+1))
	}
	isKey := map[int]bool{}
	for i, k := range st.keys {
		isKey[k.idx] = true
		keyNames = append(keyNames, quoteIdent(k.pg.name))
		where = append(where, quoteIdent(k.pg.name)+" = $"+strconv.Itoa(i+1))
	}
	for _, col := range cols {
		if !isKey[col.idx] {
			sets = append(sets, quoteIdent(col.pg.name)+" = EXCLUDED."+quoteIdent(col.pg.name))
		}
	}
	action := "DO NOTHING"
	if len(sets) > 0 {
		action = "DO UPDATE SET " + strings.Join(sets, ", ")
	}
	st.tableSQL, st.names = c.table.SQL(), strings.Join(names, ", ")
	st.conflict = fmt.Sprintf(" ON CONFLICT (%s) %s", strings.Join(keyNames, ", "), action)
	st.multi = map[int]string{}
	st.upsertSQL = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) %s",
		c.table.SQL(), strings.Join(names, ", "), strings.Join(params, ", "), strings.Join(keyNames, ", "), action)
	st.deleteSQL = fmt.Sprintf("DELETE FROM %s WHERE %s", c.table.SQL(), strings.Join(where, " AND "))
	return st, nil
}

// Open implements exec.SinkWriter.
func (w *Writer) Open(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.openConn(ctx); err != nil {
		return err
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	if w.cfg.flushInterval > 0 {
		w.wg.Add(1)
		go w.flushEvery(w.cfg.flushInterval)
	}
	return nil
}

// openConn connects and resolves the table; called with mu held.
func (w *Writer) openConn(ctx context.Context) error {
	conn, err := connect(ctx, w.cfg)
	if err != nil {
		return err
	}
	pgCols, err := tableColumns(ctx, conn, w.cfg)
	if err == nil && w.stmts == nil {
		w.stmts, err = prepareStatements(w.cfg, pgCols)
	}
	if err != nil {
		conn.Close(context.Background())
		return err
	}
	w.conn = conn
	return nil
}

// flushEvery is the interval flusher (Flink's scheduled flush): a buffer
// that waits longer than the interval is written even when no row comes.
func (w *Writer) flushEvery(d time.Duration) {
	defer w.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
			w.mu.Lock()
			if w.bgErr == nil && w.buf.len() > 0 {
				w.bgErr = w.flushLocked(w.ctx)
			}
			w.mu.Unlock()
		}
	}
}

// Write implements exec.SinkWriter.
func (w *Writer) Write(ctx context.Context, b *types.Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bgErr != nil {
		return w.bgErr
	}
	upsert := len(w.cfg.pk) > 0
	for i, r := range b.Rows {
		k := b.Kinds[i]
		switch {
		case k == types.Insert:
		case upsert && k == types.UpdateAfter, upsert && k == types.Delete:
		case upsert && k == types.UpdateBefore:
			continue // the +U that follows replaces the row
		default:
			return fmt.Errorf("jdbc table %s: a table without a primary key takes inserts only, but got %s; declare PRIMARY KEY … NOT ENFORCED to write an updating query", w.cfg.name, formatRow(k, r, w.cfg.physical, w.cfg.loc))
		}
		w.buf.add(k, r)
		if w.cfg.flushRows > 0 && w.buf.len() >= w.cfg.flushRows {
			if err := w.flushLocked(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush implements exec.FlushingWriter: at every barrier.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bgErr != nil {
		return w.bgErr
	}
	return w.flushLocked(ctx)
}

// Finish implements exec.SinkWriter.
func (w *Writer) Finish(ctx context.Context) error { return w.Flush(ctx) }

// Close implements exec.SinkWriter.
func (w *Writer) Close() error {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		w.conn.Close(context.Background())
		w.conn = nil
	}
	return nil
}

// flushLocked writes the buffer in one transaction, retrying
// 'sink.max-retries' times after errors that a retry may cure (Flink
// waits 1 s × attempt between tries); errors in the data or the statement
// fail at once with the row named.
func (w *Writer) flushLocked(ctx context.Context) error {
	if w.buf.len() == 0 {
		return nil
	}
	if w.eo {
		return w.flushIntoTxn(ctx)
	}
	var err error
	for attempt := 0; ; attempt++ {
		if w.conn == nil || w.conn.IsClosed() {
			if w.conn != nil {
				w.conn.Close(context.Background())
				w.conn = nil
			}
			if err = w.openConn(ctx); err != nil {
				goto failed
			}
		}
		err = pgx.BeginFunc(ctx, w.conn, func(tx pgx.Tx) error { return w.writeBuffer(ctx, tx, &w.buf) })
		if err == nil {
			w.buf.reset()
			return nil
		}
	failed:
		if deterministic(err) || attempt >= w.cfg.maxRetries || ctx.Err() != nil {
			if attempt > 0 && !deterministic(err) {
				return fmt.Errorf("jdbc table %s: writing %d rows failed after %d retries ('%s'): %w", w.cfg.name, w.buf.len(), attempt, OptSinkMaxRetries, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
		if w.conn != nil && !w.conn.IsClosed() {
			// The connection may be broken without knowing it yet.
			if perr := w.conn.Ping(ctx); perr != nil {
				w.conn.Close(context.Background())
				w.conn = nil
			}
		}
	}
}

// querier is what writeBuffer needs of a connection or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

// writeBuffer writes the buffered rows: COPY in append mode, one pipelined
// batch of upserts and deletes in upsert mode.
func (w *Writer) writeBuffer(ctx context.Context, q querier, buf *buffer) error {
	st := w.stmts
	if len(w.cfg.pk) == 0 {
		src := &copySource{w: w, buf: buf, i: -1}
		ident := pgx.Identifier{st.table.table}
		if st.table.schema != "" {
			ident = pgx.Identifier{st.table.schema, st.table.table}
		}
		_, err := q.CopyFrom(ctx, ident, st.colNames, src)
		if src.err != nil {
			return src.err
		}
		if err != nil {
			return w.serverError(buf, err, copyLine(err))
		}
		return nil
	}
	// Check and convert every value first: a bad one fails naming its row
	// and column before anything is sent.
	args := make([][]any, buf.len())
	for i := 0; i < buf.len(); i++ {
		r := buf.row(i)
		cols := st.cols
		if buf.kinds[i] == types.Delete {
			cols = st.keys
		}
		a := make([]any, len(cols))
		for j := range cols {
			v, err := toPG(&cols[j], r[cols[j].idx])
			if err != nil {
				return w.valueErr(buf, i, &cols[j], err)
			}
			a[j] = v
		}
		args[i] = a
	}
	// The fast path: multi-row upserts (the buffer holds each key once, as
	// ON CONFLICT DO UPDATE requires) and pipelined deletes, after a
	// savepoint. A server error there does not say which row; the rows are
	// then written again one statement each, which names it.
	batch := &pgx.Batch{}
	batch.Queue("SAVEPOINT flinksql_flush")
	var upserts []int
	for i := 0; i < buf.len(); i++ {
		if buf.kinds[i] == types.Delete {
			batch.Queue(st.deleteSQL, args[i]...)
		} else {
			upserts = append(upserts, i)
		}
	}
	for len(upserts) > 0 {
		n := upsertChunk(len(upserts), len(st.cols))
		flat := make([]any, 0, n*len(st.cols))
		for _, i := range upserts[:n] {
			flat = append(flat, args[i]...)
		}
		batch.Queue(st.multiUpsertSQL(n), flat...)
		upserts = upserts[n:]
	}
	err := q.SendBatch(ctx, batch).Close()
	if err == nil {
		return nil
	}
	if !deterministic(err) {
		return w.serverError(buf, err, -1)
	}
	if _, err := q.Exec(ctx, "ROLLBACK TO SAVEPOINT flinksql_flush"); err != nil {
		return fmt.Errorf("jdbc table %s: ROLLBACK TO SAVEPOINT: %w", w.cfg.name, err)
	}
	batch = &pgx.Batch{}
	for i := 0; i < buf.len(); i++ {
		if buf.kinds[i] == types.Delete {
			batch.Queue(st.deleteSQL, args[i]...)
		} else {
			batch.Queue(st.upsertSQL, args[i]...)
		}
	}
	br := q.SendBatch(ctx, batch)
	for i := 0; i < buf.len(); i++ {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return w.serverError(buf, err, i)
		}
	}
	return br.Close()
}

// upsertChunkSizes are the row counts of one multi-row upsert: a few fixed
// sizes, so that the connection's statement cache holds a few statements.
var upsertChunkSizes = []int{1024, 256, 64, 16, 4, 1}

// upsertChunk is the rows of the next multi-row upsert of n left, within
// PostgreSQL's 65535 parameters of a statement.
func upsertChunk(n, cols int) int {
	for _, c := range upsertChunkSizes {
		if c <= n && c*cols <= 65535 {
			return c
		}
	}
	return 1
}

// multiUpsertSQL is the upsert of n rows in one statement.
func (st *statements) multiUpsertSQL(n int) string {
	if s, ok := st.multi[n]; ok {
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", st.tableSQL, st.names)
	p := 1
	for r := 0; r < n; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range st.cols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(st.conflict)
	st.multi[n] = b.String()
	return st.multi[n]
}

// copySource feeds the buffer to COPY, converting each row as it goes.
type copySource struct {
	w    *Writer
	buf  *buffer
	i    int
	vals []any
	err  error
}

func (s *copySource) Next() bool { s.i++; return s.i < s.buf.len() && s.err == nil }

func (s *copySource) Values() ([]any, error) {
	st := s.w.stmts
	if s.vals == nil {
		s.vals = make([]any, len(st.cols))
	}
	r := s.buf.row(s.i)
	for j := range st.cols {
		v, err := toPG(&st.cols[j], r[j])
		if err != nil {
			s.err = s.w.valueErr(s.buf, s.i, &st.cols[j], err)
			return nil, s.err
		}
		s.vals[j] = v
	}
	return s.vals, nil
}

func (s *copySource) Err() error { return s.err }

// valueErr names the row and the column of a value the column cannot hold.
func (w *Writer) valueErr(buf *buffer, i int, col *column, err error) error {
	return fmt.Errorf("jdbc table %s: row %s cannot be written to PostgreSQL table %s: column '%s' (%s) cannot hold the value of '%s': %w",
		w.cfg.name, formatRow(buf.kinds[i], buf.row(i), w.cfg.physical, w.cfg.loc), w.cfg.table, col.pg.name, col.pg.typ, col.name, err)
}

var copyLineRE = regexp.MustCompile(`line (\d+)`)
var copyColumnRE = regexp.MustCompile(`, column (\w+)`)

// copyLine is the row a COPY error is about (from its context line), or -1.
func copyLine(err error) int {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if m := copyLineRE.FindStringSubmatch(pe.Where); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n - 1
		}
	}
	return -1
}

// serverError names the row (i ≥ 0) and, where PostgreSQL tells it, the
// column of an error the server reported.
func (w *Writer) serverError(buf *buffer, err error, i int) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || i < 0 || i >= buf.len() {
		return fmt.Errorf("jdbc table %s: writing %d rows to PostgreSQL table %s: %w", w.cfg.name, buf.len(), w.cfg.table, err)
	}
	col := pe.ColumnName
	if col == "" {
		if m := copyColumnRE.FindStringSubmatch(pe.Where); m != nil {
			col = m[1]
		}
	}
	where := ""
	if col != "" {
		where = fmt.Sprintf(" (column '%s')", col)
	}
	return fmt.Errorf("jdbc table %s: row %s cannot be written to PostgreSQL table %s%s: %w",
		w.cfg.name, formatRow(buf.kinds[i], buf.row(i), w.cfg.physical, w.cfg.loc), w.cfg.table, where, err)
}

var (
	_ exec.FlushingWriter = (*Writer)(nil)
)
