package jdbc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
	"github.com/jackc/pgx/v5"
)

// Source is a jdbc table read by the engine: a bounded scan, or by key as
// the dimension table of a lookup join.
type Source struct {
	cfg *config
}

// Bounded implements connectors.ScanSource: a scan reads the table once.
func (s *Source) Bounded() bool { return true }

// ChangelogMode implements connectors.ScanSource.
func (s *Source) ChangelogMode() types.ChangelogMode { return types.InsertOnly }

// Parallelism implements connectors.ScanSource: one subtask per partition
// at most; an unpartitioned scan is one query, read by one subtask.
func (s *Source) Parallelism(def int) int {
	if s.cfg.partCol < 0 {
		return 1
	}
	return max(1, min(def, s.cfg.partNum))
}

// ReadableMetadata implements connectors.ScanSource: there is none.
func (s *Source) ReadableMetadata() map[string]types.Type { return nil }

// partition is one query of a scan: a range of the partition column, or
// the whole table.
type partition struct {
	whole      bool
	start, end int64 // inclusive
}

// partitions splits [lower, upper] into partNum ranges the way Flink's
// JdbcNumericBetweenParametersProvider does: equal sizes, the first ones
// one larger when the range does not divide evenly.
func (c *config) partitions() []partition {
	if c.partCol < 0 {
		return []partition{{whole: true}}
	}
	count := uint64(c.upper-c.lower) + 1
	n := uint64(c.partNum)
	if n > count {
		n = count
	}
	size := count / n
	big := count % n // the first big partitions hold size+1 values
	out := make([]partition, 0, n)
	start := c.lower
	for i := uint64(0); i < n; i++ {
		l := size
		if i < big {
			l++
		}
		end := start + int64(l-1)
		out = append(out, partition{start: start, end: end})
		start = end + 1
	}
	return out
}

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	r := &reader{cfg: s.cfg}
	for i, p := range s.cfg.partitions() {
		if i%parallelism == subtask {
			r.parts = append(r.parts, p)
		}
	}
	return r, nil
}

// reader scans the partitions of one subtask, each through a cursor in a
// read-only transaction, 'scan.fetch-size' rows per round trip. Its
// position is the partition and the rows of it already read; the query
// orders by the primary key (or the row's physical position, ctid, without
// one), so a restored reader skips exactly the rows it had emitted.
type reader struct {
	cfg   *config
	parts []partition
	part  int   // the partition being read
	rows  int64 // rows of it already emitted
	conn  *pgx.Conn
	open  bool // a cursor is open
	cols  []column
}

// position is what a checkpoint keeps of a reader.
type position struct {
	Part int   `json:"part"`
	Rows int64 `json:"rows"`
	N    int   `json:"n"` // the reader's number of partitions, to detect a different split
}

// Open implements exec.SourceReader.
func (r *reader) Open(ctx context.Context) error {
	if r.part >= len(r.parts) {
		return nil
	}
	conn, err := connect(ctx, r.cfg)
	if err != nil {
		return err
	}
	pgCols, err := tableColumns(ctx, conn, r.cfg)
	if err == nil {
		all := make([]int, len(r.cfg.physical))
		for i := range all {
			all[i] = i
		}
		r.cols, err = resolveColumns(r.cfg, pgCols, all)
	}
	if err != nil {
		conn.Close(context.Background())
		return err
	}
	r.conn = conn
	return nil
}

// NumSplits implements exec.SourceReader: the reader is one split.
func (r *reader) NumSplits() int { return 1 }

func (r *reader) query(p partition) (string, []any) {
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = quoteIdent(c.pg.name)
	}
	q := "SELECT " + strings.Join(names, ", ") + " FROM " + r.cfg.table.SQL()
	var args []any
	if !p.whole {
		q += " WHERE " + quoteIdent(r.cols[r.cfg.partCol].pg.name) + " BETWEEN $1 AND $2"
		args = []any{p.start, p.end}
	}
	order := "ctid"
	if len(r.cfg.pk) > 0 {
		var keys []string
		for _, k := range r.cfg.pk {
			keys = append(keys, quoteIdent(r.cols[k].pg.name))
		}
		order = strings.Join(keys, ", ")
	}
	q += " ORDER BY " + order
	if r.rows > 0 {
		q += " OFFSET " + strconv.FormatInt(r.rows, 10)
	}
	return q, args
}

// Read implements exec.SourceReader.
func (r *reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	for r.part < len(r.parts) {
		if !r.open {
			q, args := r.query(r.parts[r.part])
			if _, err := r.conn.Exec(ctx, "BEGIN READ ONLY"); err != nil {
				return exec.ReadResult{Split: -1}, r.err(err)
			}
			if _, err := r.conn.Exec(ctx, "DECLARE flinksql_scan NO SCROLL CURSOR FOR "+q, args...); err != nil {
				return exec.ReadResult{Split: -1}, r.err(err)
			}
			r.open = true
		}
		n := r.cfg.fetchSize
		if room := b.Cap() - b.Len(); n <= 0 || n > room {
			n = max(room, 1)
		}
		rows, err := r.conn.Query(ctx, "FETCH "+strconv.Itoa(n)+" FROM flinksql_scan")
		if err != nil {
			return exec.ReadResult{Split: -1}, r.err(err)
		}
		got := 0
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return exec.ReadResult{Split: -1}, r.err(err)
			}
			row := b.Append(types.Insert)
			for i, c := range r.cols {
				v, err := fromPG(c.typ, vals[i])
				if err != nil {
					rows.Close()
					return exec.ReadResult{Split: -1}, fmt.Errorf("jdbc table %s: column '%s' (%s): %w", r.cfg.name, c.pg.name, c.pg.typ, err)
				}
				row[c.idx] = v
			}
			got++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return exec.ReadResult{Split: -1}, r.err(err)
		}
		r.rows += int64(got)
		if got < n {
			// The partition is exhausted.
			if _, err := r.conn.Exec(ctx, "COMMIT"); err != nil {
				return exec.ReadResult{Split: -1}, r.err(err)
			}
			r.open = false
			r.part++
			r.rows = 0
		}
		if got > 0 {
			return exec.ReadResult{Split: 0, SplitDone: r.part >= len(r.parts), End: r.part >= len(r.parts)}, nil
		}
	}
	return exec.ReadResult{Split: -1, SplitDone: true, End: true}, nil
}

func (r *reader) err(err error) error {
	return fmt.Errorf("jdbc table %s: scanning PostgreSQL table %s: %w", r.cfg.name, r.cfg.table, err)
}

// Close implements exec.SourceReader.
func (r *reader) Close() error {
	if r.conn != nil {
		r.conn.Close(context.Background())
		r.conn = nil
	}
	return nil
}

// SnapshotPosition implements exec.CheckpointedReader.
func (r *reader) SnapshotPosition() ([]byte, error) {
	return json.Marshal(position{Part: r.part, Rows: r.rows, N: len(r.parts)})
}

// RestorePosition implements exec.CheckpointedReader.
func (r *reader) RestorePosition(b []byte) error {
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("jdbc table %s: bad scan position %q: %w", r.cfg.name, b, err)
	}
	if p.N != len(r.parts) || p.Part < 0 || p.Part > len(r.parts) || p.Rows < 0 {
		return fmt.Errorf("jdbc table %s: the restored scan position (partition %d of %d) does not fit the scan's %d partitions of this subtask; the 'scan.partition.*' options or the parallelism changed", r.cfg.name, p.Part, p.N, len(r.parts))
	}
	r.part, r.rows = p.Part, p.Rows
	return nil
}

// Lookup implements connectors.LookupSource.
func (s *Source) Lookup(keyCols []int) (*connectors.Lookup, error) {
	return &connectors.Lookup{Fetcher: &fetcher{cfg: s.cfg, keyCols: keyCols}, Loader: &loader{cfg: s.cfg}, Cache: s.cfg.cache}, nil
}

// loader reads the whole table for 'lookup.cache' = 'FULL'.
type loader struct{ cfg *config }

// Load implements lookup.Loader.
func (l *loader) Load(ctx context.Context, fn func(types.Row) error) error {
	r := &reader{cfg: l.cfg, parts: []partition{{whole: true}}}
	if err := r.Open(ctx); err != nil {
		return err
	}
	defer r.Close()
	b := types.NewBatch(len(l.cfg.physical), types.DefaultBatchSize)
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			return err
		}
		for _, row := range b.Rows {
			if err := fn(row.Clone()); err != nil {
				return err
			}
		}
		if res.End {
			return nil
		}
	}
}

// Changed implements lookup.Loader: a database table cannot tell cheaply,
// so every scheduled reload happens.
func (l *loader) Changed(context.Context) (bool, error) { return true, nil }

// fetcher looks rows up by key, over a small pool of connections (Fetch
// runs on several goroutines with async lookups). Idle connections are
// closed when the job's context ends.
type fetcher struct {
	cfg     *config
	keyCols []int

	mu      sync.Mutex
	idle    []*pgx.Conn
	cols    []column // every physical column, resolved once
	keys    []column
	sql     string
	watched map[<-chan struct{}]bool
}

func (f *fetcher) get(ctx context.Context) (*pgx.Conn, error) {
	f.mu.Lock()
	if f.watched == nil {
		f.watched = map[<-chan struct{}]bool{}
	}
	if d := ctx.Done(); d != nil && !f.watched[d] {
		f.watched[d] = true
		context.AfterFunc(ctx, f.closeIdle)
	}
	if n := len(f.idle); n > 0 {
		c := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return c, nil
	}
	resolved := f.cols != nil
	f.mu.Unlock()
	conn, err := connect(ctx, f.cfg)
	if err != nil {
		return nil, err
	}
	if !resolved {
		pgCols, err := tableColumns(ctx, conn, f.cfg)
		if err != nil {
			conn.Close(context.Background())
			return nil, err
		}
		all := make([]int, len(f.cfg.physical))
		for i := range all {
			all[i] = i
		}
		cols, err := resolveColumns(f.cfg, pgCols, all)
		if err != nil {
			conn.Close(context.Background())
			return nil, err
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = quoteIdent(c.pg.name)
		}
		var keys []column
		var where []string
		for j, k := range f.keyCols {
			keys = append(keys, cols[k])
			where = append(where, quoteIdent(cols[k].pg.name)+" = $"+strconv.Itoa(j+1))
		}
		f.mu.Lock()
		f.cols, f.keys = cols, keys
		f.sql = "SELECT " + strings.Join(names, ", ") + " FROM " + f.cfg.table.SQL() + " WHERE " + strings.Join(where, " AND ")
		f.mu.Unlock()
	}
	return conn, nil
}

func (f *fetcher) put(c *pgx.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.idle) >= 16 {
		c.Close(context.Background())
		return
	}
	f.idle = append(f.idle, c)
}

func (f *fetcher) closeIdle() {
	f.mu.Lock()
	idle := f.idle
	f.idle = nil
	f.mu.Unlock()
	for _, c := range idle {
		c.Close(context.Background())
	}
}

// Fetch implements lookup.Fetcher, retrying 'lookup.max-retries' times
// (Flink waits 1 s × attempt between tries).
func (f *fetcher) Fetch(ctx context.Context, key types.Row, dst []types.Row) ([]types.Row, error) {
	var err error
	for attempt := 0; ; attempt++ {
		var out []types.Row
		out, err = f.fetchOnce(ctx, key, dst)
		if err == nil {
			return out, nil
		}
		if deterministic(err) || attempt >= f.cfg.lookupMaxRetries || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
			return dst, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
	}
	return dst, fmt.Errorf("jdbc table %s: looking up key %v in PostgreSQL table %s: %w", f.cfg.name, key, f.cfg.table, err)
}

func (f *fetcher) fetchOnce(ctx context.Context, key types.Row, dst []types.Row) ([]types.Row, error) {
	conn, err := f.get(ctx)
	if err != nil {
		return dst, err
	}
	args := make([]any, len(key))
	for j := range key {
		v, err := toPG(&f.keys[j], key[j])
		if err != nil {
			// A key the column cannot hold matches no row.
			f.put(conn)
			return dst, nil
		}
		args[j] = v
	}
	rows, err := conn.Query(ctx, f.sql, args...)
	if err != nil {
		conn.Close(context.Background())
		return dst, err
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			conn.Close(context.Background())
			return dst, err
		}
		row := make(types.Row, len(f.cols))
		for i, c := range f.cols {
			if row[c.idx], err = fromPG(c.typ, vals[i]); err != nil {
				rows.Close()
				conn.Close(context.Background())
				return dst, fmt.Errorf("column '%s' (%s): %w", c.pg.name, c.pg.typ, err)
			}
		}
		dst = append(dst, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		conn.Close(context.Background())
		return dst, err
	}
	f.put(conn)
	return dst, nil
}

var (
	_ connectors.LookupSource = (*Source)(nil)
	_ exec.CheckpointedReader = (*reader)(nil)
)
