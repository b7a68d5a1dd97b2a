package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// resultModeKey selects how a SELECT's result is shown; the session's
// default is Flink's, 'table'.
const resultModeKey = "sql-client.execution.result-mode"

// maxTableRowsKey bounds the rows kept in 'table' mode (Flink's default
// 1000000; 0 or less is no bound).
const (
	maxTableRowsKey     = "sql-client.execution.max-table-result.rows"
	defaultMaxTableRows = 1000000
)

// maxTableRows reads 'sql-client.execution.max-table-result.rows'; the
// session has validated it.
func (r *runner) maxTableRows() int {
	v := strings.TrimSpace(r.be.get(maxTableRowsKey))
	if v == "" {
		return defaultMaxTableRows
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return defaultMaxTableRows
	}
	return n
}

type resultMode int

const (
	// modeTableau streams every change with its op column (or, in batch
	// runtime mode, prints the collected rows at the end).
	modeTableau resultMode = iota
	// modeChangelog lists every change with its op column. Non-interactive
	// runs print it exactly as tableau does.
	modeChangelog
	// modeTable shows the materialized result.
	modeTable
)

func parseResultMode(v string) (resultMode, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "tableau":
		return modeTableau, nil
	case "changelog":
		return modeChangelog, nil
	case "", "table":
		return modeTable, nil
	}
	return 0, fmt.Errorf("invalid value %q for '%s': expected one of 'table', 'changelog', 'tableau'", v, resultModeKey)
}

const (
	// errRetractMissing starts the line reported for a -U or -D that matches
	// no row of the materialized result.
	errRetractMissing = "the result changelog retracts a row that is not in the result: "
	// msgResultCancelled ends a materialized result the user stopped; the
	// SQL client prints it when the user leaves a result view.
	msgResultCancelled = "Result retrieval cancelled."

	tableViewTitle = "SQL Query Result (Table)"
	// refreshInterval is the shortest time between two redraws of the
	// interactive table view.
	refreshInterval = 200 * time.Millisecond

	enterAltScreen = "\x1b[?1049h"
	leaveAltScreen = "\x1b[?1049l"
	homeAndClear   = "\x1b[H\x1b[2J"

	defaultTermWidth, defaultTermHeight = 80, 24
	// viewChrome is the number of lines of the table view that are not
	// result rows: title, three borders, header, status line and one spare
	// line, so that drawing never scrolls the screen.
	viewChrome = 7
	// maxHeldReports bounds the retraction errors kept while the table view
	// hides the normal screen.
	maxHeldReports = 100
)

// renderTable shows a query's materialized result (result mode 'table').
//
// Non-interactive runs print nothing until the query ends or is cancelled,
// then the final table, so that a script's output is deterministic. In an
// interactive terminal the table is shown on the terminal's alternate
// screen and redrawn as changes arrive; when the query ends or the user
// presses Ctrl-C the normal screen comes back and the final table is printed
// in the same static layout. A cancelled query is followed by "[INFO] Result
// retrieval cancelled.".
func (r *runner) renderTable(ctx context.Context, q *queryHandle) (stopped bool, err error) {
	m := &materializer{
		table:  newResultTable(len(q.schema), r.maxTableRows()),
		types:  q.schema.Types(),
		loc:    q.loc,
		report: func(line string) error { _, err := io.WriteString(r.errOut, line); return err },
	}
	if m.loc == nil {
		m.loc = time.UTC
	}
	var ended bool
	if r.interactive {
		ended, err = r.watchTable(ctx, q, m)
	} else {
		ended, err = m.collect(ctx, q.stream)
	}
	if err != nil {
		return false, err
	}
	if err := r.printFinalTable(q, m.table); err != nil {
		return false, err
	}
	if notice := m.evictedNotice(); notice != "" {
		if _, err := io.WriteString(r.errOut, notice); err != nil {
			return false, err
		}
	}
	if ended {
		return false, nil
	}
	return true, r.info(msgResultCancelled)
}

// materializer applies a query's changes to its result table.
type materializer struct {
	table   *resultTable
	types   []types.Type
	loc     *time.Location
	changes int64
	missing int64
	// stale counts retractions that matched no row once rows had been
	// evicted: they are taken to be of evicted rows, not reported one by
	// one but in reportEvicted.
	stale  int64
	report func(line string) error
	line   []byte
}

func (m *materializer) apply(changes []session.Change) error {
	for _, c := range changes {
		m.changes++
		if m.table.apply(c) {
			continue
		}
		if m.table.evicted > 0 {
			m.stale++
			continue
		}
		m.missing++
		m.line = append(m.line[:0], "[ERROR] "...)
		m.line = append(m.line, errRetractMissing...)
		m.line = appendChange(m.line, c, m.types, m.loc)
		m.line = append(m.line, '\n')
		if err := m.report(string(m.line)); err != nil {
			return err
		}
	}
	return nil
}

// evictedNotice is the warning shown after the result when rows were
// dropped for 'sql-client.execution.max-table-result.rows', else "".
func (m *materializer) evictedNotice() string {
	if m.table.evicted == 0 {
		return ""
	}
	line := fmt.Sprintf("[WARNING] The result had more rows than '%s' = %d: the %d oldest %s dropped from it",
		maxTableRowsKey, m.table.maxRows, m.table.evicted, plural(m.table.evicted, "row was", "rows were"))
	if m.stale > 0 {
		line += fmt.Sprintf(", and %d later %s of rows no longer in it ignored", m.stale, plural(m.stale, "retraction", "retractions"))
	}
	return line + ".\n"
}

// collect reads the query until it ends (ended) or ctx is cancelled.
func (m *materializer) collect(ctx context.Context, s changeStream) (ended bool, err error) {
	for {
		changes, err := s.Next(ctx)
		if aerr := m.apply(changes); aerr != nil {
			return false, aerr
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return true, nil
		case ctx.Err() != nil:
			return false, nil
		default:
			return false, err
		}
	}
}

// appendChange renders a change as "-D[b, 1]".
func appendChange(dst []byte, c session.Change, ts []types.Type, loc *time.Location) []byte {
	dst = append(dst, c.Kind.String()...)
	dst = append(dst, '[')
	for i, v := range c.Row {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		t := types.StringType
		if i < len(ts) {
			t = ts[i]
		}
		dst = types.AppendSQL(dst, v, t, loc)
	}
	return append(dst, ']')
}

// printFinalTable prints the rows of the result in the static layout of the
// SQL client's batch results: widths from the data (capped at the maximum
// column width), then "N rows in set", or only "Empty set".
func (r *runner) printFinalTable(q *queryHandle, t *resultTable) error {
	p := NewTableauPrinter(r.out, q.schema, q.loc, false, r.columnWidth())
	var err error
	batch := make([]session.Change, 0, 256)
	t.each(func(row types.Row) {
		batch = append(batch, session.Change{Kind: types.Insert, Row: row})
		if len(batch) == cap(batch) {
			err = errors.Join(err, p.Print(batch))
			batch = batch[:0]
		}
	})
	if err := errors.Join(err, p.Print(batch)); err != nil {
		return err
	}
	return p.Finish()
}

// nextResult is one answer of changeStream.Next.
type nextResult struct {
	changes []session.Change
	err     error
}

// watchTable runs the interactive table view until the query ends (ended),
// fails, or ctx is cancelled. It leaves the normal screen as it found it.
func (r *runner) watchTable(ctx context.Context, q *queryHandle, m *materializer) (ended bool, err error) {
	v := newTableView(r.out, q, r.columnWidth(), r.terminalSize)
	// Retraction errors written now would be lost with the alternate screen:
	// hold them until the view is closed.
	var held []string
	m.report = func(line string) error {
		if len(held) < maxHeldReports {
			held = append(held, line)
		}
		return nil
	}
	defer func() {
		var b strings.Builder
		for _, line := range held {
			b.WriteString(line)
		}
		if n := m.missing - int64(len(held)); n > 0 {
			fmt.Fprintf(&b, "[ERROR] ... and %d more retractions of rows that are not in the result\n", n)
		}
		if b.Len() > 0 {
			_, werr := io.WriteString(r.errOut, b.String())
			err = errors.Join(err, werr)
		}
	}()

	// Next blocks; a reader goroutine lets the view redraw meanwhile.
	readCtx, stopReading := context.WithCancel(ctx)
	results := make(chan nextResult)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			changes, err := q.stream.Next(readCtx)
			select {
			case results <- nextResult{changes, err}:
			case <-readCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	defer func() {
		stopReading()
		wg.Wait()
	}()

	ticks, stopTicks := r.refreshTicks()
	defer stopTicks()

	if err := v.open(m); err != nil {
		return false, err
	}
	closeView := func() error { _, err := io.WriteString(r.out, leaveAltScreen); return err }
	dirty := false
	for {
		select {
		case res := <-results:
			if aerr := m.apply(res.changes); aerr != nil {
				return false, errors.Join(aerr, closeView())
			}
			dirty = dirty || len(res.changes) > 0
			switch {
			case res.err == nil:
				continue
			case errors.Is(res.err, io.EOF):
				return true, closeView()
			case ctx.Err() != nil:
				return false, closeView()
			default:
				return false, errors.Join(res.err, closeView())
			}
		case <-ticks:
			if dirty {
				dirty = false
				if err := v.draw(m); err != nil {
					return false, errors.Join(err, closeView())
				}
			}
		case <-ctx.Done():
			return false, closeView()
		}
	}
}

// refreshTicks returns the channel that paces the table view's redraws.
func (r *runner) refreshTicks() (<-chan time.Time, func()) {
	if r.refresh != nil {
		return r.refresh()
	}
	t := time.NewTicker(refreshInterval)
	return t.C, t.Stop
}

// tableView draws the live materialized result on the alternate screen:
// a title, the last rows that fit the terminal in a table whose column
// widths come from the column types (so they do not jump between redraws),
// and a status line with the row count.
type tableView struct {
	w        io.Writer
	names    []string
	types    []types.Type
	loc      *time.Location
	widths   []int
	termSize func() (width, height int)

	buf    []byte
	border []byte
	line   []byte
	cell   []byte
	rows   []types.Row
}

func newTableView(w io.Writer, q *queryHandle, maxWidth int, termSize func() (int, int)) *tableView {
	loc := q.loc
	if loc == nil {
		loc = time.UTC
	}
	v := &tableView{w: w, names: q.schema.Names(), types: q.schema.Types(), loc: loc, termSize: termSize}
	for _, c := range q.schema {
		v.widths = append(v.widths, max(displayWidth(c.Name), typeWidth(c.Type, maxWidth), len(nullCell)))
	}
	return v
}

func (v *tableView) open(m *materializer) error {
	if _, err := io.WriteString(v.w, enterAltScreen); err != nil {
		return err
	}
	return v.draw(m)
}

func (v *tableView) size() (width, height int) {
	width, height = defaultTermWidth, defaultTermHeight
	if v.termSize != nil {
		if w, h := v.termSize(); w > 0 && h > 0 {
			width, height = w, h
		}
	}
	return width, height
}

// draw replaces the screen with the current state of the result.
func (v *tableView) draw(m *materializer) error {
	width, height := v.size()
	fit := max(height-viewChrome, 1)
	v.rows = m.table.last(v.rows[:0], fit)

	v.border = appendBorder(v.border[:0], v.widths)
	border := v.border[:len(v.border)-1] // without its newline

	v.buf = append(v.buf[:0], homeAndClear...)
	v.buf = v.appendLine(v.buf, append(v.line[:0], tableViewTitle...), width)
	v.buf = v.appendLine(v.buf, border, width)
	v.line = append(v.line[:0], '|')
	for i, name := range v.names {
		v.line = appendCellString(v.line, name, v.widths[i])
	}
	v.buf = v.appendLine(v.buf, v.line, width)
	v.buf = v.appendLine(v.buf, border, width)
	for _, row := range v.rows {
		v.line = append(v.line[:0], '|')
		for i := range v.types {
			v.cell = v.formatValue(v.cell[:0], row, i)
			v.line = appendCell(v.line, v.cell, v.widths[i])
		}
		v.buf = v.appendLine(v.buf, v.line, width)
	}
	v.buf = v.appendLine(v.buf, border, width)

	n := int64(m.table.Len())
	v.line = fmt.Appendf(v.line[:0], "%d %s in result", n, plural(n, "row", "rows"))
	if int64(len(v.rows)) < n {
		v.line = fmt.Appendf(v.line, " (the last %d shown)", len(v.rows))
	}
	v.line = fmt.Appendf(v.line, ", %d %s received", m.changes, plural(m.changes, "change", "changes"))
	if m.missing > 0 {
		v.line = fmt.Appendf(v.line, ", %d invalid %s", m.missing, plural(m.missing, "retraction", "retractions"))
	}
	if m.table.evicted > 0 {
		v.line = fmt.Appendf(v.line, ", %d oldest dropped (max %d)", m.table.evicted, m.table.maxRows)
	}
	v.line = append(v.line, ". Press Ctrl-C to stop."...)
	v.buf = v.appendLine(v.buf, v.line, width)
	_, err := v.w.Write(v.buf)
	return err
}

func (v *tableView) formatValue(dst []byte, row types.Row, i int) []byte {
	if i >= len(row) || row[i].K == types.KindNull {
		return append(dst, nullCell...)
	}
	return types.AppendSQL(dst, row[i], v.types[i], v.loc)
}

// appendLine appends line cut to width terminal columns, so that no line
// wraps and the view keeps its shape on a narrow terminal.
func (v *tableView) appendLine(dst, line []byte, width int) []byte {
	if displayWidthBytes(line) <= width {
		dst = append(dst, line...)
	} else {
		dst = appendPrefix(dst, line, width)
	}
	return append(dst, '\n')
}

// appendPrefix appends the longest prefix of v that fits in width columns.
func appendPrefix(dst, v []byte, width int) []byte {
	end, used := 0, 0
	for end < len(v) {
		r, size := utf8.DecodeRune(v[end:])
		if used+runeWidth(r) > width {
			break
		}
		used += runeWidth(r)
		end += size
	}
	return append(dst, v[:end]...)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
