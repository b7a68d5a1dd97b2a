package shell

import (
	"strings"
	"unicode/utf8"

	"github.com/flinksql/flinksql/sql/parser"
)

// splitter cuts a script that may arrive piece by piece into statements and
// keeps track of where each one starts in the whole input, so that errors
// point at the line and column of the script rather than of the statement.
type splitter struct {
	pending   string // text not yet returned as a statement
	line, col int    // position of pending[0] in the whole input
}

func newSplitter() *splitter { return &splitter{line: 1, col: 1} }

// feed appends text and returns the statements it completed. Pieces must
// end at line boundaries (or at the end of the input): a "--" comment at the
// very end of the text is taken as finished.
func (s *splitter) feed(text string) []located {
	s.pending += text
	complete, rest := parser.SplitStatements(s.pending)
	var out []located
	cur := 0
	for _, stmt := range complete {
		start := locate(s.pending, cur, stmt)
		s.advance(s.pending[cur:start])
		out = append(out, located{text: stmt, line: s.line, col: s.col})
		end := start + len(stmt)
		if end > len(s.pending) { // never expected; keep the offsets sane
			end = len(s.pending)
		}
		s.advance(s.pending[start:end])
		cur = end
	}
	// rest, when set, is the unfinished statement at the end of pending;
	// everything before it is consumed.
	keep := len(s.pending) - len(rest)
	if keep < cur {
		keep = cur
	}
	s.advance(s.pending[cur:keep])
	s.pending = s.pending[keep:]
	return out
}

// flush returns the unfinished statement left at the end of the input, if
// there is one (a last statement without ';', or an unterminated string).
func (s *splitter) flush() (located, bool) {
	text := strings.TrimRightFunc(s.pending, isSpace)
	start := skipTrivia(text, 0)
	if start >= len(text) {
		return located{}, false
	}
	s.advance(text[:start])
	st := located{text: text[start:], line: s.line, col: s.col}
	s.advance(s.pending[start:])
	s.pending = ""
	return st, true
}

// advance moves the tracked position over text.
func (s *splitter) advance(text string) {
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		s.line += strings.Count(text, "\n")
		s.col = 1 + utf8.RuneCountInString(text[i+1:])
		return
	}
	s.col += utf8.RuneCountInString(text)
}

// locate finds stmt, a statement returned by parser.SplitStatements, in src
// at or after offset from. Only whitespace, comments and semicolons separate
// statements, so stmt normally starts right after them; searching is a
// fallback that cannot be fooled by a comment repeating the statement.
func locate(src string, from int, stmt string) int {
	i := skipTrivia(src, from)
	if strings.HasPrefix(src[i:], stmt) {
		return i
	}
	if j := strings.Index(src[from:], stmt); j >= 0 {
		return from + j
	}
	return i
}

// skipTrivia returns the offset of the first byte at or after i that is not
// whitespace, a comment or ';'.
func skipTrivia(src string, i int) int {
	for i < len(src) {
		switch {
		case src[i] == ';' || src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r' || src[i] == '\f' || src[i] == '\v':
			i++
		case strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				return len(src)
			}
			i += j + 1
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return len(src)
			}
			i += 2 + j + 2
		default:
			return i
		}
	}
	return i
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}

// parseAt parses one statement that starts at line:col of a larger input.
// The text is parsed behind blank padding so that every position the parser
// reports, in errors and in the AST, is a line and column of the input.
// (Pos.Offset then counts the padding, not the bytes of the input.)
func parseAt(text string, line, col int) (parser.Statement, error) {
	if line <= 1 && col <= 1 {
		return parser.ParseStatement(text)
	}
	var b strings.Builder
	b.Grow(line - 1 + col - 1 + len(text))
	for range line - 1 {
		b.WriteByte('\n')
	}
	for range col - 1 {
		b.WriteByte(' ')
	}
	b.WriteString(text)
	return parser.ParseStatement(b.String())
}

// clientCommand recognizes the commands the shell handles itself: HELP,
// QUIT, EXIT and CLEAR, in any case.
func clientCommand(text string) (string, bool) {
	fields := strings.Fields(text)
	if len(fields) != 1 {
		return "", false
	}
	switch cmd := strings.ToUpper(fields[0]); cmd {
	case "HELP", "QUIT", "EXIT", "CLEAR":
		return cmd, true
	}
	return "", false
}

const helpText = `Statements end with ';' and may span several lines. Keywords are case-insensitive.

Shell commands:
  HELP;                                Show this text.
  QUIT; or EXIT;                       Leave the shell (Ctrl-D on an empty line does the same).
  CLEAR;                               Clear the terminal.

Catalog:
  CREATE TABLE [IF NOT EXISTS] t (...) WITH ('connector' = '...', ...);
  CREATE [TEMPORARY] VIEW v AS SELECT ...;
  DROP TABLE | VIEW [IF EXISTS] name;
  SHOW TABLES | VIEWS | FUNCTIONS | JOBS;   SHOW CREATE TABLE | VIEW name;
  DESCRIBE name;                       List a table's columns.
  USE [CATALOG] name;

Queries and jobs:
  SELECT ...;                          Run a query; its changes are shown as they arrive (Ctrl-C stops it).
  INSERT INTO t SELECT ...;            Start a job writing into a table (the prompt returns, the job keeps running).
  BEGIN STATEMENT SET; INSERT ...; ... END;   Run several INSERTs as one job.
  EXECUTE STATEMENT SET BEGIN INSERT ...; ... END;
  EXPLAIN [CHANGELOG_MODE] SELECT ... | INSERT ...;   Show the plan.
  STOP JOB '<id>' [WITH SAVEPOINT] [WITH DRAIN];

Session options:
  SET 'key' = 'value';                 Set an option; SET; lists them.
  RESET 'key';                         Restore an option's default; RESET; restores all.
  SET 'sql-client.execution.result-mode' = 'tableau' | 'changelog' | 'table';
                                       How SELECT results are shown: every change as it arrives
                                       (tableau, the default), every change with its op column
                                       (changelog), or the materialized result (table).
`
